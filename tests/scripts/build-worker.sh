#!/usr/bin/env bash
# Builds the Cloudflare worker (functions/cloudflare/build/) with worker-build,
# offline: wasm-bindgen comes from WASM_BINDGEN_BIN (installed by
# tests/scripts/install-tools.sh at the version in Cargo.lock); worker-build's
# own wasm-opt step (which would download binaryen) is disabled in
# functions/cloudflare/Cargo.toml. The entry module is ours:
# worker-build's bundle (wasm-bindgen glue + its shim) becomes build/glue.js
# and functions/cloudflare/entry.mjs becomes build/index.js (wrangler.toml's
# `main`), importing it. The wasm is then optimized with the pinned
# binaryen, its functions laid out for compression and its names stripped
# (tests/scripts/optimize.sh). AGENT_ZERO_PROVIDERS (`e2b anthropic`)
# builds only the provider adapters it names (tests/scripts/providers.sh).
set -euo pipefail
# The test harness builds once and then starts `wrangler dev` many times.
if [ "${AGENT_ZERO_PREBUILT:-}" = 1 ] && [ -f "$(dirname "$0")/../../functions/cloudflare/build/index.js" ]; then
  exit 0
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
export PATH="$HOME/.cargo/bin:$root/tests/node/node_modules/.bin:$PATH"
# Symbol names kept for optimize.sh's layout, which strips them (Cargo.toml).
export CARGO_PROFILE_RELEASE_STRIP=debuginfo
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$HOME/.cargo/bin/wasm-bindgen}"
. "$root/tests/scripts/providers.sh"
features="$(provider_features)"
cd "$root/functions/cloudflare"
# shellcheck disable=SC2086 # one cargo argument per line
worker-build --release $features "$@" >&2
mv build/index.js build/glue.js
cp entry.mjs build/index.js
# wasm-opt -O2, the functions laid out for gzip, the names stripped.
bash "$root/tests/scripts/optimize.sh" build/index_bg.wasm --enable-exception-handling
