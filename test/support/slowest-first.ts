/**
 * The suite's file order: each project's files longest first, so that the workers finish
 * together (longest-processing-time-first scheduling). Vitest's own order does that only from its
 * duration cache, which lives under node_modules: in a fresh clone (CI) it sorts by file size,
 * which started the longest file (the README's commands, over a minute) among the last and left
 * the other worker idle while it ran. The projects keep vitest's order (one after the other), so
 * a worker does not switch between isolated and shared processes more often than before.
 *
 * A file's expected duration is the one vitest recorded in its cache when there is one, else the
 * figure below (seconds of a quiet run on the 2-core machine, bench/README.md "Test suite wall
 * time"). A stale figure costs only order, never correctness; files with neither go after, in
 * vitest's order.
 */
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const EXPECTED_SECONDS: Record<string, number> = {
  "test/web/every-page.test.ts": 62,
  "test/e2e/readme-commands.test.ts": 42,
  "test/reliability/sign-in-bursts.test.ts": 31,
  "test/web/product-pages.test.ts": 30,
  "test/reliability/fuzz.test.ts": 24,
  "test/e2e/feeder.test.ts": 23,
  "test/web/browser.test.ts": 21,
  "test/e2e/alert-crash.test.ts": 18,
  "test/web/password-cli.test.ts": 16,
  "test/e2e/data-dir-modes.test.ts": 16,
  "test/e2e/openapi-examples.test.ts": 15,
  "test/reliability/key-security.test.ts": 15,
  "test/e2e/alerts-backfill.test.ts": 14,
  "test/e2e/data-ingest.test.ts": 13,
  "test/e2e/openapi.test.ts": 13,
  "test/e2e/alert-delivery.test.ts": 13,
};

export class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const vitestOrder = await super.sort(files);
    const position = new Map(vitestOrder.map((spec, index) => [spec, index]));
    const expected = (spec: TestSpecification): number | undefined => {
      const cached = this.ctx.cache.getTestSpecificationResult(spec)?.duration;
      if (cached !== undefined) return cached;
      const hint = EXPECTED_SECONDS[path.relative(spec.project.config.root, spec.moduleId)];
      return hint === undefined ? undefined : hint * 1000;
    };
    const projectRank = new Map<string, number>();
    for (const spec of vitestOrder)
      if (!projectRank.has(spec.project.name)) projectRank.set(spec.project.name, projectRank.size);
    return [...vitestOrder].sort((a, b) => {
      const byProject = projectRank.get(a.project.name)! - projectRank.get(b.project.name)!;
      if (byProject !== 0) return byProject;
      const [ea, eb] = [expected(a), expected(b)];
      if (ea !== undefined && eb !== undefined) return eb - ea;
      if (ea !== undefined) return -1;
      if (eb !== undefined) return 1;
      return position.get(a)! - position.get(b)!;
    });
  }
}
