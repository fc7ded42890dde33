#!/usr/bin/env bash
# Runs every test of Agent Zero Edge, from a fresh clone:
#   1. installs the tools it needs (tests/scripts/install-tools.sh)
#   2. the format and lint gates (cargo fmt --check; cargo clippy -D warnings
#      over the workspace, the worker and the Spin component on their wasm
#      targets included, each also with only some provider adapters), the
#      advisory check of the shipped graphs (tests/scripts/advisories.sh),
#      the host unit and integration tests (cargo test: default members) and
#      the refusals of a build without some providers (AGENT_ZERO_PROVIDERS)
#   3. builds the two workers (worker-build) and the two Spin components
#      (wasip2) once, one per role, prints their gzip sizes and fails if one
#      is over its budget; runs README's `wrangler deploy --dry-run` of both
#      workers and what `spin deploy --build` runs (tests/scripts/spin_build.py),
#      offline, on what was just built
#   4. checks the Spin components against their WIT contract (wit/world.wit),
#      and the build's optimize step on a fixture module (optimize_test.py)
#   5. builds the Spin host and the reference sandbox server, and runs the
#      Spin host's own tests
#   6. the end-to-end suite on workerd (wrangler dev) and on the Spin host,
#      then Schemathesis, then a build with only some providers
#      (AGENT_ZERO_PROVIDERS) through a whole run on both hosts
# Prints a summary of test counts; exits non-zero when anything fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$root/tests/node/node_modules/.bin:$PATH"
export CARGO_TERM_COLOR=never
# One build from a clean clone: incremental caches would only take disk.
export CARGO_INCREMENTAL=0
# The budgets and the suite hold the default build, every provider in; a
# list left in the caller's environment would build and measure another.
unset AGENT_ZERO_PROVIDERS
# gzip -9 budgets of the default build (every provider adapter). Size is a
# budget, not a goal (issue 44): each budget leaves room for a year of
# features and stays far inside its platform's limit, 3 MB compressed per
# Worker on Cloudflare's free plan (10 MB paid), 100 MB per application on
# Fermyon Cloud, 50 MiB on Fermyon Wasm Functions (docs/size.md, with the
# sources). What a byte costs a user is measured in docs/cost.md ("Cold
# start"). The history of every figure is in docs/size.md.
# 2026-12-06 (issue 44): the function layout step (tests/scripts/layout.py,
# Python on every deploy) left the build: measured 518,138 B (front worker),
# 553,534 B (tick worker), 531,109 B (HTTP component), 606,380 B (tick
# component), 4-6% larger than with it; budgets set 40-52% above those,
# about a quarter of the free plan's 3 MB Worker limit. Raise one with
# the measurement and its reason; a jump of tens of KB inside it is still
# worth a look (twiggy, docs/size.md).
# 2026-12-06 (issue 47): signed evidence receipts add about 22 KB to the
# HTTP component (ed25519-dalek 3, without its precomputed tables) and
# 13 KB to the front worker (WebCrypto signs; the routes and key parsing).
# 2026-12-07 (issue 45): GitLab and Gitea/Forgejo intake add about 16 KB to
# the HTTP component and 15 KB to the front worker (docs/size.md); budgets
# unchanged, each still ~200 KiB above its artefact.
# 2026-12-07 (issue 45): GitLab merge request review adds about 18 KB to
# each tick artefact (gzip -9 against main's build of the same morning:
# tick worker 659,870 -> 678,311 B, tick component 721,381 -> 739,621 B;
# the front ones within 200 B); with Gitea's review feedback merged too,
# 695,966 B and 756,290 B; budgets unchanged.
# 2026-12-07 (issue 45, the stop after 56): Gitea/Forgejo pull request
# reviews, the review-feedback side branch, the issue timeline read,
# GitLab suggestion blocks and the forges' intake gate add about 18 KB to
# the tick worker (699,023 -> 717,176 B) and 16 KB to the Spin tick
# component (759,339 -> 775,482 B); the front ones within 2 KB. The tick
# artefacts then used 91% of their budgets after two days of forge work
# (557 -> 717 KB and 613 -> 775 KB): both tick budgets raised to 1 MiB,
# about a third of the free plan's 3 MB Worker limit (docs/size.md).
WORKER_GZIP_BUDGET=$((768 * 1024))
WORKER_TICKS_GZIP_BUDGET=$((1024 * 1024))
SPIN_GZIP_BUDGET=$((768 * 1024))
SPIN_TICKS_GZIP_BUDGET=$((1024 * 1024))

bash tests/scripts/install-tools.sh all

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
step() { echo; echo "==> $*  [disk free: $(df -h --output=avail . | tail -1 | tr -d ' ')]"; }

step "format (cargo fmt --check)"
cargo fmt --all --check
step "lints (cargo clippy -D warnings: host, worker wasm32-unknown-unknown, Spin wasm32-wasip2)"
cargo clippy --workspace --exclude agent-zero-cloudflare --exclude agent-zero-spin --all-targets -- -D warnings
# The worker with both roles; the Spin component's default role is `front`.
cargo clippy -p agent-zero-cloudflare --target wasm32-unknown-unknown -- -D warnings
cargo clippy -p agent-zero-spin --target wasm32-wasip2 -- -D warnings
# Each role alone, built with only some provider adapters
# (AGENT_ZERO_PROVIDERS): the cfg paths of a role and of a reduced build.
cargo clippy -p agent-zero-cloudflare --target wasm32-unknown-unknown --no-default-features \
  --features front,sandbox-e2b,model-anthropic -- -D warnings
cargo clippy -p agent-zero-cloudflare --target wasm32-unknown-unknown --no-default-features \
  --features ticks,sandbox-e2b,model-anthropic -- -D warnings
cargo clippy -p agent-zero-spin --target wasm32-wasip2 --no-default-features \
  --features ticks,sandbox-custom,model-google -- -D warnings
cargo clippy -p agent-zero-models --no-default-features --features anthropic --lib --tests -- -D warnings

step "advisories (cargo deny, offline, vendored RustSec snapshot)"
bash tests/scripts/advisories.sh

step "host tests (cargo test)"
cargo test 2>&1 | tee -a "$log"
step "host tests of a build with only some providers (AGENT_ZERO_PROVIDERS=\"e2b anthropic\")"
cargo test -p agent-zero-app --no-default-features --features sandbox-e2b,model-anthropic --lib left_out 2>&1 |
  tee -a "$log"
cargo test -p agent-zero-models --no-default-features --features anthropic --lib 2>&1 | tee -a "$log"
step "the host crates' own tests (native)"
cargo test -p agent-zero-cloudflare --lib 2>&1 | tee -a "$log"
cargo test -p agent-zero-spin --lib 2>&1 | tee -a "$log"
bash tests/scripts/providers_test.sh 2>&1 | tee -a "$log"

step "build: Cloudflare workers (front, ticks)"
bash tests/scripts/build-worker.sh
step "deploy dry run: README's \`wrangler deploy --dry-run\` of both workers (no account, no network)"
# The commands README's "Deploy" section documents, word for word
# (tools/cli/src/deploy_tests.rs checks they are the same), each writing
# its upload to a scratch directory. Their `[build]` command is
# build-worker.sh, which finds the workers just built up to date and
# writes nothing: the artefacts must come out byte for byte the same.
dry="$(mktemp -d)"
built_digest() { cat functions/cloudflare/build{,-ticks}/{index.js,glue.js,index_bg.wasm} | sha256sum; }
before="$(built_digest)"
WRANGLER_SEND_METRICS=false npx --prefix tests/node wrangler deploy --dry-run --outdir "$dry/front"
WRANGLER_SEND_METRICS=false npx --prefix tests/node wrangler deploy --dry-run -c wrangler.ticks.toml --outdir "$dry/ticks"
for role in front ticks; do
  if [ ! -s "$dry/$role/index.js" ] || ! ls "$dry/$role/"*index_bg.wasm >/dev/null 2>&1; then
    echo "FAIL: wrangler deploy --dry-run ($role) wrote no index.js and wasm to $dry/$role" >&2
    exit 1
  fi
done
if [ "$(built_digest)" != "$before" ]; then
  echo "FAIL: wrangler deploy --dry-run rebuilt the workers (build-worker.sh's up-to-date check missed)" >&2
  exit 1
fi
rm -rf "$dry"

step "build: Spin components (front, ticks)"
bash tests/scripts/build-spin.sh
step "Spin deploy's build, offline: spin.toml's build commands and sources (what \`spin deploy --build\` uploads)"
python3 tests/scripts/spin_build.py

worker_wasm=functions/cloudflare/build/index_bg.wasm
worker_ticks_wasm=functions/cloudflare/build-ticks/index_bg.wasm
spin_wasm=target/wasm32-wasip2/release/agent_zero_spin.wasm
spin_ticks_wasm=target/wasm32-wasip2/release/agent_zero_spin_ticks.wasm
step "sizes (gzip -9)"
over=0
# size LABEL FILE BUDGET
size() {
  local gz
  gz=$(gzip -9 -c "$2" | wc -c)
  printf '  %-24s %8d bytes (%d KiB; budget %d KiB)\n' "$1" "$gz" $((gz / 1024)) $(($3 / 1024))
  if [ "$gz" -gt "$3" ]; then
    echo "FAIL: $1 ($2) is over its gzip budget" >&2
    over=1
  fi
}
size "front worker wasm" "$worker_wasm" "$WORKER_GZIP_BUDGET"
size "tick worker wasm" "$worker_ticks_wasm" "$WORKER_TICKS_GZIP_BUDGET"
size "Spin HTTP component" "$spin_wasm" "$SPIN_GZIP_BUDGET"
size "Spin tick component" "$spin_ticks_wasm" "$SPIN_TICKS_GZIP_BUDGET"
printf '  front worker JS (entry + glue) %d bytes\n' \
  "$(cat functions/cloudflare/build/index.js functions/cloudflare/build/glue.js | gzip -9 -c | wc -c)"
[ "$over" = 0 ] || exit 1

step "WIT contract of the Spin components"
python3 tests/scripts/check-wit.py "$spin_wasm" spin-http-component
python3 tests/scripts/check-wit.py "$spin_ticks_wasm" spin-http-component

step "the build's last step (tests/scripts/optimize.sh) on a fixture module"
python3 tests/scripts/optimize_test.py 2>&1 | tee -a "$log"

step "build: Spin host and reference sandbox server (profile tools)"
cargo build --profile tools -p agent-zero-spin-host -p agent-zero-sandbox
step "Spin host's own tests (its stores' semantics, wall clock, outbound budget, routes)"
cargo test --profile tools -p agent-zero-spin-host 2>&1 | tee -a "$log"

step "cold start of each artefact (benchmark, one round: tests/bench/cost.sh cold; docs/cost.md#cold-start)"
# Reported, and each worker's first request in a fresh isolate held under
# Cloudflare's Worker startup time limit, 1 s
# (developers.cloudflare.com/workers/platform/limits/#worker-startup-time).
cold="$(mktemp -d)"
BENCH_COST_STEPS=cold BENCH_COST_ROUNDS=1 BENCH_OUT="$cold/cold.md" BENCH_COLD_LIMIT_MS=1000 bash tests/bench/cost.sh
rm -rf "$cold"

step "end-to-end on workerd and the Spin host"
AGENT_ZERO_E2E=1 cargo test -p agent-zero-e2e --test e2e 2>&1 | tee -a "$log"

step "schemathesis against the OpenAPI document (workerd)"
bash tests/scripts/schemathesis.sh

# Last, as it replaces the artefacts: a build with only the providers the
# end-to-end world uses runs a labelled issue to a verified pull request on
# both hosts, and names the providers it left out.
step "end-to-end on a build of AGENT_ZERO_PROVIDERS=\"custom openai\""
export AGENT_ZERO_PROVIDERS="custom openai"
bash tests/scripts/build-worker.sh
bash tests/scripts/build-spin.sh
for built in "$worker_wasm" "$worker_ticks_wasm" "$spin_wasm" "$spin_ticks_wasm"; do
  printf '  %-55s %8d bytes\n' "$built" "$(gzip -9 -c "$built" | wc -c)"
done
AGENT_ZERO_E2E=1 cargo test -p agent-zero-e2e --test e2e -- issue_fix_runs_to_verified_completion providers_ 2>&1 |
  tee -a "$log"
unset AGENT_ZERO_PROVIDERS

step "summary"
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "  tests: %d passed, %d failed, %d ignored\n", p, f, i; exit (f > 0) }' "$log"
