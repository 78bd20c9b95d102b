// Lines of hand-written code are at most 120 characters. The formatter wraps code at that width
// but leaves strings, comments and template literals as they are, so this check covers what it
// cannot. Generated code (gen/, the drizzle migrations) is out of scope; so are the SQL function
// sources, whose text is what the database stores and a test compares with the migrations.
// Prints each long line and exits 1 when there is one.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const MAX = 120;
const SCOPE = ["src", "test", "bench", "docs/*.ts", ".ci/*.mjs"];
const CODE = /\.(ts|js|mjs|css)$/;
const GENERATED = /^(gen\/|src\/db\/migrations\/)/;

const files = execFileSync("git", ["ls-files", "-z", "--", ...SCOPE], { encoding: "utf8" })
  .split("\0")
  .filter((file) => CODE.test(file) && !GENERATED.test(file));

let long = 0;
for (const file of files) {
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, index) => {
      const width = [...line].length;
      if (width <= MAX) return;
      long++;
      console.log(`${file}:${index + 1}: ${width} characters`);
    });
}
console.log(`${long} line${long === 1 ? "" : "s"} over ${MAX} characters in ${files.length} files`);
process.exit(long === 0 ? 0 : 1);
