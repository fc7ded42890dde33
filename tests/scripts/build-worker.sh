#!/usr/bin/env bash
# Builds the two Cloudflare workers, one per role (docs/architecture.md):
# `front` (functions/cloudflare/build/, wrangler.toml: the routes, the cron
# sweep and the Durable Object classes) and `ticks`
# (functions/cloudflare/build-ticks/, wrangler.ticks.toml: the tick queue's
# consumer), each with worker-build, offline: wasm-bindgen comes from WASM_BINDGEN_BIN (installed by
# tests/scripts/install-tools.sh at the version in Cargo.lock); worker-build's
# own wasm-opt step (which would download binaryen) is disabled in
# functions/cloudflare/Cargo.toml. The entry module is ours:
# worker-build's bundle (wasm-bindgen glue + its shim) becomes glue.js and
# functions/cloudflare/entry.mjs (entry-ticks.mjs) becomes index.js (the
# config's `main`), importing it. The wasm is then optimized with the pinned
# binaryen and its names stripped (tests/scripts/optimize.sh). AGENT_ZERO_PROVIDERS (`e2b anthropic`)
# builds only the provider adapters it names (tests/scripts/providers.sh).
set -euo pipefail
# The test harness builds once and then starts `wrangler dev` many times.
if [ "${AGENT_ZERO_PREBUILT:-}" = 1 ] && [ -f "$(dirname "$0")/../../functions/cloudflare/build/index.js" ] &&
  [ -f "$(dirname "$0")/../../functions/cloudflare/build-ticks/index.js" ]; then
  exit 0
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
export PATH="$HOME/.cargo/bin:$root/tests/node/node_modules/.bin:$PATH"
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$HOME/.cargo/bin/wasm-bindgen}"
# Fail at once, naming the one command that installs what is missing,
# rather than minutes into a build.
missing=""
command -v worker-build >/dev/null 2>&1 || missing="$missing worker-build"
[ -x "$WASM_BINDGEN_BIN" ] || missing="$missing wasm-bindgen"
[ -x "$root/tests/node/node_modules/.bin/wasm-opt" ] || missing="$missing wasm-opt"
[ -x "$root/tests/node/node_modules/.bin/esbuild" ] || missing="$missing esbuild"
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown || missing="$missing wasm32-unknown-unknown"
if [ -n "$missing" ]; then
  echo "build-worker: missing${missing}; install them with: bash tests/scripts/install-tools.sh worker" >&2
  exit 1
fi
for tool in flock sha256sum; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build-worker: missing $tool; install it with: sudo apt-get install -y util-linux coreutils" >&2
    exit 1
  fi
done
. "$root/tests/scripts/providers.sh"
cd "$root/functions/cloudflare"
# Both configs name this script as their build command, and `wrangler dev`
# with both may run them at once: one build at a time.
mkdir -p "$root/target"
exec 9>"$root/target/.build-worker.lock"
flock 9
# Up to date: nothing is written and the script ends at once when neither
# an input nor an output changed since the last build. `wrangler dev` runs
# this command again as soon as its `[build] watch_dir` watcher is ready
# (wrangler 4.86 logs "The file <every watch_dir entry> changed, restarting
# build..." although nothing changed: workers-sdk#7934), once per config,
# and reloads the local runtime when it returns: two more full builds at
# every start, each ending in a reload (a request in flight then gets
# wrangler's 503 "Your worker restarted mid-request"). Returning at once,
# the reload is over before the first request is served (docs/testing.md).
inputs_digest() {
  {
    find "$root/functions/cloudflare/src" "$root/shared" -type f -print0 | sort -z | xargs -0 sha256sum
    sha256sum entry.mjs entry-ticks.mjs Cargo.toml "$root/Cargo.toml" "$root/Cargo.lock" \
      "$root/tests/scripts/build-worker.sh" "$root/tests/scripts/optimize.sh" "$root/tests/scripts/providers.sh"
    rustc -V
    printf '%s\n' "providers=${AGENT_ZERO_PROVIDERS:-}" "bindgen=$WASM_BINDGEN_BIN" "args=$*"
    env | grep -E '^(CARGO_TARGET_DIR|CARGO_PROFILE_|CARGO_BUILD_|RUSTFLAGS|CARGO_ENCODED_RUSTFLAGS)' | sort || true
  } | sha256sum | cut -d' ' -f1
}
outputs_digest() {
  cat build/index.js build/glue.js build/index_bg.wasm build-ticks/index.js build-ticks/glue.js \
    build-ticks/index_bg.wasm 2>/dev/null | sha256sum | cut -d' ' -f1
}
stamp="$root/target/worker-build.stamp"
inputs="$(cd "$root/functions/cloudflare" && inputs_digest "$@")"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs $(outputs_digest)" ]; then
  echo "build-worker: up to date (functions/cloudflare/build, build-ticks)" >&2
  exit 0
fi
for role in front ticks; do
  features="$(provider_features "$role")"
  out=build
  entry=entry.mjs
  if [ "$role" = ticks ]; then
    out=build-ticks
    entry=entry-ticks.mjs
  fi
  # shellcheck disable=SC2086 # one cargo argument per line
  worker-build --release --out-dir "$out" $features "$@" >&2
  mv "$out/index.js" "$out/glue.js"
  cp "$entry" "$out/index.js"
  # wasm-opt -O2, the names stripped;
  # reused while wasm-bindgen's module and that step are unchanged (both
  # configs' build commands run this script: a deploy of each builds twice).
  digest="$(cat "$out/index_bg.wasm" "$root/tests/scripts/optimize.sh" | sha256sum | cut -d' ' -f1)"
  cached="$root/target/worker-$role.optimized.wasm"
  if [ -f "$cached" ] && [ "$(cat "$cached.sha256" 2>/dev/null)" = "$digest" ]; then
    cp "$cached" "$out/index_bg.wasm"
  else
    bash "$root/tests/scripts/optimize.sh" "$out/index_bg.wasm" --enable-exception-handling
    cp "$out/index_bg.wasm" "$cached"
    echo "$digest" >"$cached.sha256"
  fi
done
echo "$inputs $(outputs_digest)" >"$stamp"
