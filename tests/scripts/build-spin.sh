#!/usr/bin/env bash
# Builds the Spin component (target/wasm32-wasip2/release/agent_zero_spin.wasm).
# rustc links the core module only (`--skip-wit-component`);
# tests/scripts/optimize.sh runs binaryen's wasm-opt on it (-O2, tests/node,
# pinned in package-lock.json), lays its functions out for compression and
# strips its names (README, "Size"); wasm-tools then makes the component
# from the component type wit-bindgen embedded in the module. wasm-opt
# cannot read a component, hence the two steps. -O2 rather than -Oz (2 KB
# smaller): -O2 optimizes for speed (shrink level 0), so the intake's
# SHA-256 (opt-level 3 in Cargo.toml) is not shrunk at its cost.
# The component is reused while the core module is unchanged.
# AGENT_ZERO_PROVIDERS (`e2b anthropic`) builds only the provider adapters it
# names (tests/scripts/providers.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
# Symbol names kept for optimize.sh's layout, which strips them (Cargo.toml).
export CARGO_PROFILE_RELEASE_STRIP=debuginfo
. "$root/tests/scripts/providers.sh"
features="$(provider_features)"
# shellcheck disable=SC2086 # one cargo argument per line
cargo rustc --release --target wasm32-wasip2 -p agent-zero-spin $features "$@" -- -C link-arg=--skip-wit-component >&2
out="${CARGO_TARGET_DIR:-$root/target}/wasm32-wasip2/release"
core="$out/deps/agent_zero_spin.wasm"
# Cargo puts the core module back at the component's path on every build,
# so the optimized component is kept beside it with the digest of its input.
optimized="$out/agent_zero_spin.optimized.wasm"
stamp="$out/agent_zero_spin.optimized.sha256"
digest="$(sha256sum "$core" | cut -d' ' -f1)"
wasm_opt="$root/tests/node/node_modules/.bin/wasm-opt"
if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && [ -f "$optimized" ]; }; then
  for tool in "$wasm_opt" wasm-tools; do
    if ! command -v "$tool" >/dev/null; then
      echo "build-spin.sh: $tool is missing; install it with: bash tests/scripts/install-tools.sh all" >&2
      exit 1
    fi
  done
  cp "$core" "$out/agent_zero_spin.core-opt.wasm"
  bash "$root/tests/scripts/optimize.sh" "$out/agent_zero_spin.core-opt.wasm"
  wasm-tools component new "$out/agent_zero_spin.core-opt.wasm" -o "$optimized" >&2
  echo "$digest" >"$stamp"
fi
# A new file, not a write through cargo's hard link to the core module.
cp "$optimized" "$out/agent_zero_spin.wasm.tmp"
mv "$out/agent_zero_spin.wasm.tmp" "$out/agent_zero_spin.wasm"
