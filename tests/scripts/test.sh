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
# The budgets and the suite hold the default build, every provider in; a
# list left in the caller's environment would build and measure another.
unset AGENT_ZERO_PROVIDERS
# gzip -9 budgets of the default build (every provider adapter; a build
# with AGENT_ZERO_PROVIDERS is 43-54 KB smaller): set on 2026-12-04 at the
# measured sizes rounded up to the next KiB plus 1 KiB (worker 658,687 B,
# Spin 631,365 B, after decimals read without core's float parser, a
# record's policy read through the policy tree and, on Spin, RS256 of our
# own; lowered from 663/655 KiB); 660,241 B and 632,642 B on 2026-12-05,
# then 659,090 B and 631,562 B with the OpenAPI document served without its
# indentation (lowered to 644/617 KiB); then 641,997 B and 597,979 B with
# base64 of our own, Spin's outbound requests built without spin-sdk's
# anyhow conversion, and the policy's YAML subset parser (lowered to
# 627/584 KiB); then 632,637 B and 588,136 B with the policy's own reader
# (lowered to 618/575 KiB); the worker 627,568 B with its requests built
# with the platform's RequestInit (lowered to 613 KiB); then 612,025 B and
# 576,094 B from a fresh clone with the functions laid out in a chain by
# likeness (tests/scripts/layout.py; lowered to 599/564 KiB; the worker's
# figure moves by up to 0.7 KB with where the target directory is); then,
# split by role (docs/architecture.md), from a fresh clone: the front
# worker 410,033 B, the tick worker 452,261 B, the HTTP component 377,222 B
# and the tick component 451,896 B, each under issue 20's 450 KiB (budgets
# below, one per artefact). Raised on 2026-12-06 for issue 40 (checks as a
# polled background job on every provider: its scripts and their parsing;
# the platform profiles with their cited figures; the value cap; the store
# probe, the Spin allow-list check): measured 415,260 B, 465,505 B,
# 386,175 B and 470,159 B, budgets at
# those rounded up plus 2 KiB, as a 1 KiB margin was inside the build's
# jitter (issue 44). The tick artefacts are now ~5 KiB over issue 20's
# 450 KiB: size is a budget here, not a goal.
# History: raised once from 768/792 KiB with a reason (the dashboard
# sign-in, typed settings and run metering of one round grew both by more
# than the YAML parser's replacement saved). Issue 20's target is 450 KiB
# per artefact: lower them as the wasm shrinks, never raise them without a
# reason.
# Issue 41 (the trust boundary's second pass: path rules over every
# ecosystem, the documentation a repository runs, fence look-alike tables,
# credential shapes, approval digests, the intake gate, audit lifetimes)
# grew them to 423,445 B, 481,385 B, 395,130 B and 484,746 B: budgets at
# those rounded up plus 2 KiB.
# Issue 41's dashboard pass (grants scoped per repository, the membership
# re-check with its return path, revocable sessions, their API route and
# retention kind) grew them by 7,721 B, 323 B, 7,320 B and 674 B, built from
# clean archives of the commit before it and of it (in-checkout target
# directory; 424,946 -> 432,667 B, 484,498 -> 484,821 B, 397,096 ->
# 404,416 B, 487,888 -> 488,562 B): each budget raised by that, rounded up
# to the KiB. (The two tick artefacts were already 146 B and 464 B over
# their budgets before it.)
# Then, from 2026-12-06, size is a budget and not a goal (issue 44): the
# rest of issue 41 (per-file scope, the replay and hourly-run records, the
# opt-in label, the head check, the blocking check run) measured 445,879 B,
# 486,510 B, 417,488 B and 493,602 B, and the budgets below leave about 8%
# for what comes next instead of 1-2 KiB of jitter. What a byte costs a user
# is measured in docs/cost.md ("Cold start"): loading the front worker into
# a fresh isolate is 0.25-1.0 s on this machine, against 3 MB (free plan) or
# 10 MB (paid) of allowed compressed size; on Spin each component is
# compiled once and cached, then instantiated in 0.1-0.15 ms. Raise a budget
# with the measurement and its reason; lower it when the wasm shrinks.
# Issue 44, RS256 with RustCrypto (docs/size.md): Spin signs with the `rsa`
# crate 0.10 (crypto-bigint, der/pkcs1/pkcs8, a second sha2) instead of
# our own RSA, and both hosts read the App key with the pkcs1/pkcs8
# decoders. Built from a clean archive of the commit before it and from
# the checkout (one target directory): 447,778 -> 457,987 B, 486,510 ->
# 498,008 B, 419,350 -> 467,271 B, 493,603 -> 543,350 B; each budget
# raised by that growth, rounded up to the KiB (10, 12, 47, 49 KiB).
# Issues 42, 43 and 46 of 2026-12-06 (the CLI's runs: issue tasks, the
# overview route; each needs-human stop with what approving does; the run
# bounds and their settings; Spin's batch reads) grew the front worker to
# 497,442 B (over 482 KiB), the others inside theirs (529,217 B, 502,861 B,
# 572,403 B): the front worker's budget raised to 512 KiB, about 5% above.
# Issue 47 of 2026-12-06, signed evidence receipts (docs/receipts.md): the
# HTTP component signs them with ed25519-dalek 3 (Spin has no WebCrypto;
# without its precomputed tables), beside the receipt and key routes.
# Built from a clean archive of main and from the checkout (one target
# directory outside the checkout): 501,033 -> 523,127 B, over its 495 KiB;
# the budget raised to 514 KiB (the measurement rounded up plus 3 KiB).
# The others stay inside theirs: front worker 496,609 -> 509,612 B (it
# signs with WebCrypto, no curve code), tick worker 525,258 -> 530,834 B,
# tick component 568,781 -> 574,200 B.
WORKER_GZIP_BUDGET=$((512 * 1024))
WORKER_TICKS_GZIP_BUDGET=$((524 * 1024))
SPIN_GZIP_BUDGET=$((514 * 1024))
SPIN_TICKS_GZIP_BUDGET=$((569 * 1024))

bash tests/scripts/install-tools.sh all

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
step() { echo; echo "==> $*"; }

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
