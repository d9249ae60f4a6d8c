#!/usr/bin/env bash
# Runs node end-to-end test files (default: openai_client.test.mjs and responses_messages.test.mjs) against LEMMA_BIN. Without
# the npm packages (scripts/setup installs them), or for the web chat test without Chromium, the
# test is skipped (exit 77) locally and fails under CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -gt 0 ]; then test_files=("$@"); else test_files=(openai_client.test.mjs responses_messages.test.mjs); fi
missing() {
  echo "$1" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
}
packages=(openai)
webui=false
for test_file in "${test_files[@]}"; do
  [ "$test_file" = webui.test.mjs ] && packages+=(puppeteer-core) && webui=true
  [ "$test_file" = responses_messages.test.mjs ] && packages+=(@anthropic-ai/sdk)
done
for package in "${packages[@]}"; do
  [ -d "$here/node_modules/$package" ] || missing "tests/e2e/node_modules/$package is missing: run scripts/setup (npm ci --prefix tests/e2e)"
done
if [ "$webui" = true ]; then
  chromium="${CHROMIUM:-/usr/bin/chromium}"
  [ -x "$chromium" ] || missing "$chromium is missing: run scripts/setup (Debian's chromium) or set CHROMIUM"
fi
exec node --test --test-concurrency=1 "${test_files[@]/#/$here/}"
