#!/usr/bin/env bash
# Builds the Spin component (target/wasm32-wasip2/release/agent_zero_spin.wasm).
# rustc links the core module only (`--skip-wit-component`); binaryen's
# wasm-opt (tests/node, pinned in package-lock.json) optimizes it at -O2,
# about 40 KB gzip smaller (README, "Size"); wasm-tools then makes the
# component from the component type wit-bindgen embedded in the module,
# after tests/scripts/layout.sh has laid its functions out for compression
# and stripped its names.
# wasm-opt cannot read a component, hence the two steps. -O2 rather than
# -Oz (2 KB smaller): -O2 optimizes for speed (shrink level 0), so the
# intake's SHA-256 (opt-level 3 in Cargo.toml) is not shrunk at its cost.
# The component is reused while the core module is unchanged.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cargo rustc --release --target wasm32-wasip2 -p agent-zero-spin "$@" -- -C link-arg=--skip-wit-component >&2
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
  # The features rustc enables by default for wasm32-wasip2, and no others.
  # -g keeps the function names for the layout that follows.
  "$wasm_opt" -O2 -g --enable-bulk-memory --enable-mutable-globals \
    --enable-multivalue --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext \
    "$core" -o "$out/agent_zero_spin.core-opt.wasm" >&2
  bash "$root/tests/scripts/layout.sh" "$out/agent_zero_spin.core-opt.wasm"
  wasm-tools component new "$out/agent_zero_spin.core-opt.wasm" -o "$optimized" >&2
  echo "$digest" >"$stamp"
fi
# A new file, not a write through cargo's hard link to the core module.
cp "$optimized" "$out/agent_zero_spin.wasm.tmp"
mv "$out/agent_zero_spin.wasm.tmp" "$out/agent_zero_spin.wasm"
