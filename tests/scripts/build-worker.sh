#!/usr/bin/env bash
# Builds the Cloudflare worker (functions/cloudflare/build/) with worker-build,
# offline: wasm-bindgen comes from WASM_BINDGEN_BIN (installed by
# tests/scripts/install-tools.sh at the version in Cargo.lock); wasm-opt is
# disabled in functions/cloudflare/Cargo.toml. The entry module is ours:
# worker-build's bundle (wasm-bindgen glue + its shim) becomes build/glue.js
# and functions/cloudflare/entry.mjs becomes build/index.js (wrangler.toml's
# `main`), importing it. The wasm's functions are then laid out for
# compression and its names stripped (tests/scripts/layout.sh).
set -euo pipefail
# The test harness builds once and then starts `wrangler dev` many times.
if [ "${AGENT_ZERO_PREBUILT:-}" = 1 ] && [ -f "$(dirname "$0")/../../functions/cloudflare/build/index.js" ]; then
  exit 0
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
export PATH="$HOME/.cargo/bin:$root/tests/node/node_modules/.bin:$PATH"
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$HOME/.cargo/bin/wasm-bindgen}"
cd "$root/functions/cloudflare"
worker-build --release "$@" >&2
mv build/index.js build/glue.js
cp entry.mjs build/index.js
# The functions laid out for gzip, then the names stripped (see layout.py).
bash "$root/tests/scripts/layout.sh" build/index_bg.wasm
