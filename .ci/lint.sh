#!/bin/sh
# `npm run lint`, and the CI step of that name: Biome's linter, formatter check and import order
# with no diagnostic of any level (warnings and suggestions fail too), then the long-line check
# for what a formatter leaves alone (strings, comments, template literals).
set -e
cd "$(dirname "$0")/.."
if ! out=$(npx biome ci --error-on-warnings --reporter=github --max-diagnostics=none . 2>&1) || [ -n "$out" ]; then
  printf '%s\n' "$out"
  echo "biome: fix the diagnostics above ('npm run format' fixes formatting, import order and the safe cases)" >&2
  exit 1
fi
echo "biome: no diagnostic (linter, formatter, import order)"
node .ci/long-lines.mjs
