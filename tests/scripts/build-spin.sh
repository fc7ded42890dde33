#!/usr/bin/env bash
# Builds the two Spin components, one per role (docs/architecture.md):
# target/wasm32-wasip2/release/agent_zero_spin.wasm (`front`, the HTTP
# component `agent-zero`) and agent_zero_spin_ticks.wasm (`ticks`, the
# private tick component `agent-zero-ticks`). For each, rustc links the core module only (`--skip-wit-component`);
# tests/scripts/optimize.sh runs binaryen's wasm-opt on it (-O2, tests/node,
# pinned in package-lock.json) and strips its names (docs/size.md); wasm-tools then makes the component
# from the component type wit-bindgen embedded in the module. wasm-opt
# cannot read a component, hence the two steps. -O2 rather than -Oz (2 KB
# smaller): -O2 optimizes for speed (shrink level 0), so the intake's
# SHA-256 (opt-level 3 in Cargo.toml) is not shrunk at its cost.
# A component is reused while its core module and the optimize step are
# unchanged.
# AGENT_ZERO_PROVIDERS (`e2b anthropic`) builds only the provider adapters it
# names (tests/scripts/providers.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
. "$root/tests/scripts/providers.sh"
out="${CARGO_TARGET_DIR:-$root/target}/wasm32-wasip2/release"
wasm_opt="$root/tests/node/node_modules/.bin/wasm-opt"
names=()
for role in front ticks; do
  name=agent_zero_spin
  [ "$role" = ticks ] && name=agent_zero_spin_ticks
  names+=("$name")
  features="$(provider_features "$role")"
  # shellcheck disable=SC2086 # one cargo argument per line
  cargo rustc --release --target wasm32-wasip2 -p agent-zero-spin $features "$@" -- -C link-arg=--skip-wit-component >&2
  # Both roles link to this one path, so each is taken from it at once.
  core="$out/deps/agent_zero_spin.wasm"
  # The optimized component is kept with the digest of its input and of the
  # optimize step.
  optimized="$out/$name.optimized.wasm"
  stamp="$out/$name.optimized.sha256"
  digest="$(cat "$core" "$root/tests/scripts/optimize.sh" | sha256sum | cut -d' ' -f1)"
  if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && [ -f "$optimized" ]; }; then
    for tool in "$wasm_opt" wasm-tools; do
      if ! command -v "$tool" >/dev/null; then
        echo "build-spin.sh: $tool is missing; install it with: bash tests/scripts/install-tools.sh all" >&2
        exit 1
      fi
    done
    cp "$core" "$out/$name.core-opt.wasm"
    bash "$root/tests/scripts/optimize.sh" "$out/$name.core-opt.wasm"
    wasm-tools component new "$out/$name.core-opt.wasm" -o "$optimized" >&2
    echo "$digest" >"$stamp"
  fi
done
# Last, as each cargo build links the front's path again: new files, not
# writes through cargo's hard link to the core module.
for name in "${names[@]}"; do
  cp "$out/$name.optimized.wasm" "$out/$name.wasm.tmp"
  mv "$out/$name.wasm.tmp" "$out/$name.wasm"
done
