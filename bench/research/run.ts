/**
 * `npm run research`: the signal-quality study. Selects MS-2 on the design data with walk-forward
 * validation, measures the confidence of every configuration tried and the principled candidates
 * on the design data, runs the hold-out (MS-1 and MS-2 only) and writes docs/signal-quality.md.
 *
 * `npm run research -- --check` compares the generated text with the file instead of writing it
 * (exit 1 on a difference); `--design-only` prints the design selection and never touches the hold-out.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MS2_PARAMS } from "../../src/engine/index.ts";
import { CONCLUSIONS, CONFIDENCE_CONCLUSIONS } from "./conclusions.ts";
import { runConfidence } from "./confidence.ts";
import { runHoldOut } from "./hold-out.ts";
import { renderReport } from "./report.ts";
import { STUDY_TIMEFRAMES } from "./series.ts";
import { ms2ParamsOf, runDesignStudy } from "./study.ts";
import { nameOf } from "./walk-forward.ts";

const DOC = fileURLToPath(new URL("../../docs/signal-quality.md", import.meta.url));

function main(args: readonly string[]): number {
  const study = runDesignStudy();
  const selected = ms2ParamsOf(study);
  for (const tf of STUDY_TIMEFRAMES) console.error(`design selection ${tf}: ${nameOf(study.ms2[tf])}`);
  if (args.includes("--design-only")) return 0;
  // The engine constant is what the property tests check; it must be what the data selected.
  if (JSON.stringify(selected) !== JSON.stringify(MS2_PARAMS)) {
    console.error(`MS2_PARAMS in src/engine/variants.ts differ from the selection: ${JSON.stringify(selected)}`);
    return 1;
  }
  // The confidence figures and the principled candidates see the design data only.
  const confidence = runConfidence(study);
  const text = renderReport(study, runHoldOut(selected), CONCLUSIONS, confidence, CONFIDENCE_CONCLUSIONS);
  if (args.includes("--check")) {
    const same = readFileSync(DOC, "utf8") === text;
    console.error(
      same ? "docs/signal-quality.md is up to date" : "docs/signal-quality.md differs from the generated text",
    );
    return same ? 0 : 1;
  }
  writeFileSync(DOC, text);
  console.error("wrote docs/signal-quality.md");
  return 0;
}

process.exitCode = main(process.argv.slice(2));
