#!/usr/bin/env bash
# Runs one node end-to-end test file (default openai_client.test.mjs) against LEMMA_BIN. Without
# the npm packages (scripts/setup installs them), or for the web chat test without Chromium, the
# test is skipped (exit 77) locally and fails under CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
test_file="${1:-openai_client.test.mjs}"
missing() {
  echo "$1" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
}
packages=(openai)
[ "$test_file" = webui.test.mjs ] && packages+=(puppeteer-core)
for package in "${packages[@]}"; do
  [ -d "$here/node_modules/$package" ] || missing "tests/e2e/node_modules/$package is missing: run scripts/setup (npm ci --prefix tests/e2e)"
done
if [ "$test_file" = webui.test.mjs ]; then
  chromium="${CHROMIUM:-/usr/bin/chromium}"
  [ -x "$chromium" ] || missing "$chromium is missing: run scripts/setup (Debian's chromium) or set CHROMIUM"
fi
exec node --test --test-concurrency=1 "$here/$test_file"
