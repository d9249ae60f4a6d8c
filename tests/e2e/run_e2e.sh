#!/usr/bin/env bash
# Runs the node end-to-end tests against LEMMA_BIN. Without the npm packages (scripts/setup installs
# them) the test is skipped (exit 77) locally and fails under CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -d "$here/node_modules/openai" ] || [ ! -d "$here/node_modules/@anthropic-ai/sdk" ]; then
  echo "tests/e2e/node_modules is missing: run scripts/setup (npm ci --prefix tests/e2e)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi
exec node --test --test-concurrency=1 "$here/openai_client.test.mjs" "$here/responses_messages.test.mjs"
