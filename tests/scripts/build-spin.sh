#!/usr/bin/env bash
# Builds the Spin component (target/wasm32-wasip2/release/agent_zero_spin.wasm).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cargo build --release --target wasm32-wasip2 -p agent-zero-spin "$@" >&2
