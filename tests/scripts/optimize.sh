#!/usr/bin/env bash
# Optimizes a core wasm module in place with binaryen's wasm-opt (tests/node,
# pinned in package-lock.json): `-O2` (speed; shrink level 0, so the
# intake's SHA-256 keeps its opt-level 3 shape), with a function that has
# one caller inlined into it only when it is small
# (`--one-caller-inline-max-function-size=20`, binaryen's own
# flexible-inlining size: by default any single-caller function is inlined,
# which folds the async state machines of a whole request into one
# function), and the names and other debug sections stripped. Sizes per
# step: docs/size.md.
# Usage: tests/scripts/optimize.sh MODULE.wasm [--enable-FEATURE...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
module="$1"
shift
wasm_opt="$root/tests/node/node_modules/.bin/wasm-opt"
if [ ! -x "$wasm_opt" ]; then
  echo "optimize.sh: $wasm_opt is missing; install it with: bash tests/scripts/install-tools.sh" >&2
  exit 1
fi
# The features rustc enables by default for wasm32, and those the caller
# names (the worker: exception handling, as wasm-bindgen's `catch` imports a
# tag and uses `try_table`). No more: binaryen picks its binary encodings by
# feature (with `--all-features` it writes imports in the compact form of a
# proposal, not the standard one), and some passes act differently with a
# feature on (exception handling on makes the Spin component 0.5 KB larger).
features=(--enable-bulk-memory --enable-mutable-globals --enable-multivalue
  --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext "$@")
trap 'rm -f "$module.tmp"' EXIT
"$wasm_opt" -O2 --one-caller-inline-max-function-size=20 --strip-debug --strip-producers "${features[@]}" \
  "$module" -o "$module.tmp" >&2
mv "$module.tmp" "$module"
