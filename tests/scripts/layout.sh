#!/usr/bin/env bash
# Lays out a wasm module's functions for compression and strips its names,
# in place: tests/scripts/layout.py names each function by its rank (module
# path, then body bytes), binaryen's wasm-opt (tests/node, pinned in
# package-lock.json) sorts the functions by those names, renumbering every
# call, table entry and export, and drops the names and other debug
# sections. No optimization pass runs here: the code is unchanged.
# Usage: tests/scripts/layout.sh MODULE.wasm
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
module="$1"
wasm_opt="$root/tests/node/node_modules/.bin/wasm-opt"
if [ ! -x "$wasm_opt" ]; then
  echo "layout.sh: $wasm_opt is missing; install it with: bash tests/scripts/install-tools.sh" >&2
  exit 1
fi
named="$module.named.wasm"
trap 'rm -f "$named" "$module.tmp"' EXIT
python3 "$root/tests/scripts/layout.py" "$module" "$named"
# The features rustc enables by default for wasm32, and exception handling
# (wasm-bindgen's `catch` imports a tag and uses `try_table`): binaryen picks
# its binary encodings by feature, so nothing newer may be enabled (with
# `--all-features` it writes the compact import section, which no runtime
# we ship to reads). No optimization pass runs, so no feature is introduced.
"$wasm_opt" "$named" --reorder-functions-by-name --strip-debug --strip-producers \
  --enable-bulk-memory --enable-mutable-globals --enable-multivalue \
  --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext \
  --enable-exception-handling \
  -o "$module.tmp" >&2
mv "$module.tmp" "$module"
