#!/usr/bin/env bash
# The intake benchmark (issues 10 and 20), in one command: `bash tests/bench/run.sh`.
#
# 1. Intake: signed `pull_request` `closed` deliveries (the real fixture,
#    body padded) at 28 KiB, 259 KiB and 2.5 MiB against the Rust worker and
#    the equivalent TypeScript worker (tests/bench/ts-worker), both in
#    `wrangler dev --local`, in alternating rounds; wrk (Debian `wrk`) drives
#    the load with a distinct X-GitHub-Delivery per request
#    (load/intake.lua). The TS worker does issue 20's job (verify, parse,
#    field checks, ONE KV put: the headline ratio); in the same rounds it
#    runs the same job without the put (`nokv`: what the Rust worker does for
#    a delivery it does not act on, which it answers without storage: the
#    equal-storage ratio), and a floor doing nothing but read the body (the
#    dev stack alone); and the 401 path (a wrong signature: verify only) of
#    both workers.
# 2. CPU per request: utime+stime of the workerd process running the worker
#    (/proc/PID/stat) across a round, over the requests served. An estimate:
#    it includes workerd's local KV simulation and HTTP handling.
# 3. The native floor at each size: `cargo bench -p agent-zero-github --bench intake`;
#    and HMAC-SHA256 verify in wasm (`hmac` + `sha2`, as the worker had it)
#    against `crypto.subtle` (what the worker uses), in node's V8
#    (tests/bench/hmac/bench.mjs), appended to the report.
# 4. Sizes (gzip -9) of the worker wasm, its JS glue, the Spin component and
#    the TS bundle.
# 5. KV operations and subrequests per task run (runtime harness test).
#    Per run shape by store, a tick's CPU in wasm and the cold starts:
#    tests/bench/cost.sh (docs/cost.md).
#
# Prints markdown tables of medians and ratios per payload size, and the cost
# against size for both workers, and writes them to $BENCH_OUT (default
# /tmp/bench-results.md). Knobs: BENCH_RUNS (1: how many times the workers
# are started afresh and the rounds run; docs/benchmarks.md's tables are BENCH_RUNS=3,
# medians of the runs' medians), BENCH_ROUNDS (3), BENCH_DURATION (seconds
# per case and round, 10), BENCH_CONNECTIONS (8), BENCH_SIZES (body bytes,
# "28672 265216 2621440"), BENCH_WORKER_BUILD (the worker's build directory,
# default functions/cloudflare/build), BENCH_INTAKE_ONLY=1 (the intake rounds
# and their tables only: steps 3-5 skipped, for A/B runs while iterating). A
# full run is runs x sizes x 6 cases x rounds x duration (9 minutes a run by
# default) plus the starts.
# Needs: node + tests/node (wrangler), wrk, gzip, cargo.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="$root/tests/bench"
runs="${BENCH_RUNS:-1}"
rounds="${BENCH_ROUNDS:-3}"
duration="${BENCH_DURATION:-10}"
connections="${BENCH_CONNECTIONS:-8}"
read -r -a sizes <<<"${BENCH_SIZES:-28672 265216 2621440}"
out="${BENCH_OUT:-/tmp/bench-results.md}"
wrangler="$root/tests/node/node_modules/.bin/wrangler"
# The built worker to measure (a copy lets one build be measured while the next compiles).
worker_build="${BENCH_WORKER_BUILD:-$root/functions/cloudflare/build}"
secret="bench-webhook-secret-$RANDOM$RANDOM"
workers=(rust ts ts-nokv ts-noop)
# What each round measures: the four workers, and the Rust and TS workers
# answering a wrong signature (401 after verifying: no KV, no parse).
cases=(rust ts ts-nokv ts-noop rust-401 ts-401)
bad_signature="sha256=$(printf '0%.0s' $(seq 64))"
load_at_start="$(cut -d' ' -f1-3 /proc/loadavg)"

say() { printf '[bench] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS: \`$runs\` is not a positive count"
command -v wrk >/dev/null || die "wrk is missing: apt-get install -y wrk"
command -v node >/dev/null || die "node is missing"
[ -x "$wrangler" ] || die "$wrangler is missing: run tests/scripts/install-tools.sh"

work="$(mktemp -d /tmp/agent-zero-bench.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- artefacts ------------------------------------------------------------
if [ -n "${BENCH_WORKER_BUILD:-}" ]; then
  [ -f "$worker_build/index.js" ] || die "BENCH_WORKER_BUILD: no index.js in \`$worker_build\`"
elif [ ! -f "$worker_build/index.js" ]; then
  say "building the worker (tests/scripts/build-worker.sh)"
  bash "$root/tests/scripts/build-worker.sh"
fi
spin_wasm=""
for candidate in "$root/target/wasm32-wasip2/release/agent_zero_spin.wasm" \
  "${CARGO_TARGET_DIR:-$root/target}/wasm32-wasip2/release/agent_zero_spin.wasm"; do
  [ -f "$candidate" ] && { spin_wasm="$candidate"; break; }
done
if [ -z "$spin_wasm" ]; then
  say "building the Spin component (tests/scripts/build-spin.sh)"
  bash "$root/tests/scripts/build-spin.sh"
  spin_wasm="${CARGO_TARGET_DIR:-$root/target}/wasm32-wasip2/release/agent_zero_spin.wasm"
fi

# payload-SIZE.json and its signature in signature-SIZE, one per size.
for size in "${sizes[@]}"; do
  [[ "$size" =~ ^[0-9]+$ ]] || die "BENCH_SIZES: \`$size\` is not a byte count"
  node "$bench/load/payload.mjs" "$root/tests/fixtures/github-webhooks/pull_request/closed.payload.json" \
    "$work/payload-$size.json" "$secret" "$size" >"$work/signature-$size"
done

# --- workers --------------------------------------------------------------
free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# prepare NAME: a directory with the worker's wrangler.toml; prints the extra args.
prepare() {
  local name="$1" dir="$work/$1"
  mkdir -p "$dir/state"
  case "$name" in
    rust)
      # As tests/src/server.rs: the prebuilt bundle, [build] disabled.
      sed -e "s|^main = \"functions/cloudflare/build/index.js\"|main = \"$worker_build/index.js\"|" \
        -e 's|^\[build\]$|[build_disabled]|' "$root/wrangler.toml" > "$dir/wrangler.toml"
      grep -q "^main = \"$worker_build/" "$dir/wrangler.toml" || die "wrangler.toml: unexpected main line"
      ;;
    ts | ts-nokv | ts-noop)
      cp "$bench/ts-worker/index.ts" "$bench/ts-worker/wrangler.toml" "$dir/"
      ;;
  esac
}

start() {
  local name="$1" dir="$work/$1" port inspector mode=""
  port="$(free_port)"
  inspector="$(free_port)"
  case "$name" in ts-nokv) mode=nokv ;; ts-noop) mode=noop ;; esac
  (
    cd "$dir"
    WRANGLER_SEND_METRICS=false AGENT_ZERO_PREBUILT=1 setsid "$wrangler" dev --local \
      --ip 127.0.0.1 --port "$port" --config "$dir/wrangler.toml" --persist-to "$dir/state" \
      --inspector-port "$inspector" --log-level warn \
      --var "GITHUB_WEBHOOK_SECRET:$secret" ${mode:+--var "BENCH_MODE:$mode"} \
      </dev/null >"$dir/wrangler.log" 2>&1 &
    echo $! >"$dir/pid"
  )
  pids+=("$(cat "$dir/pid")")
  echo "$port" >"$dir/port"
}

wait_ready() {
  local name="$1" dir="$work/$1" port
  port="$(cat "$dir/port")"
  for _ in $(seq 1 450); do
    curl -fsS -o /dev/null "http://127.0.0.1:$port/api/v1/health" 2>/dev/null && return 0
    sleep 0.2
  done
  cat "$dir/wrangler.log" >&2
  die "$name did not answer on port $port within 90 s"
}

# post NAME SIZE DELIVERY [SIGNATURE]: prints "STATUS BODY".
post() {
  local port
  port="$(cat "$work/$1/port")"
  curl -sS -X POST "http://127.0.0.1:$port/webhooks/github" -w ' %{http_code}' \
    -H 'Content-Type: application/json' -H 'X-GitHub-Event: pull_request' \
    -H "X-Hub-Signature-256: ${4:-$(cat "$work/signature-$2")}" -H "X-GitHub-Delivery: $3" \
    --data-binary "@$work/payload-$2.json" | awk '{status=$NF; $NF=""; print status, $0}'
}

# The workers do the work compared: verify (a bad signature is refused) and
# ignore the `closed` delivery with 202, and a redelivery the same (the TS
# worker writes its record but never reads one back; the Rust worker keeps
# none for a delivery it does not act on).
# check NAME SIZE
check() {
  local name="$1" size="$2" first second bad
  first="$(post "$name" "$size" "check-$name-$size-1")"
  second="$(post "$name" "$size" "check-$name-$size-1")"
  bad="$(post "$name" "$size" "check-$name-$size-2" "$bad_signature")"
  case "$first" in "202 "*ignored*) ;; *) die "$name ($size bytes): first delivery answered: $first" ;; esac
  case "$name" in ts-noop) return 0 ;; esac
  [ "$second" = "$first" ] || die "$name ($size bytes): a redelivery answered \`$second\`, the delivery \`$first\`"
  case "$bad" in "401 "*) ;; *) die "$name ($size bytes): bad signature answered: $bad" ;; esac
}

# cpu NAME: "worker_ticks stack_ticks": the workerd that runs the worker (the
# one with an inspector; the other proxies) and every process of the group.
cpu() {
  local group worker=0 stack=0 pid ticks
  group="$(cat "$work/${1%-401}/pid")"
  for pid in $(pgrep -g "$group"); do
    ticks="$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)"
    stack=$((stack + ticks))
    if grep -q -- '--inspector-addr' "/proc/$pid/cmdline" 2>/dev/null; then worker=$((worker + ticks)); fi
  done
  echo "$worker $stack"
}

# load CASE SIZE SECONDS PREFIX: runs wrk; prints its BENCH line.
load() {
  local port sig expect=202
  sig="$(cat "$work/signature-$2")"
  port="$(cat "$work/${1%-401}/port")"
  case "$1" in *-401) sig="$bad_signature" expect=401 ;; esac
  wrk -t1 -c"$connections" -d"${3}s" --timeout 10s -s "$bench/load/intake.lua" \
    "http://127.0.0.1:$port/webhooks/github" -- "$work/payload-$2.json" "$sig" "$4" "$expect" | grep '^BENCH ' \
    || die "$1 ($2 bytes): wrk printed no result"
}

say "starting ${workers[*]} in wrangler dev (sizes: ${sizes[*]} bytes; $runs run(s) of $rounds rounds x ${duration}s; $connections connections)"
for name in "${workers[@]}"; do prepare "$name"; done
results="$work/rounds.tsv"
: >"$results"
for run in $(seq 1 "$runs"); do
  # Each run starts the workers afresh, with empty local storage: one at a
  # time, since four wrangler starts at once swamp 2 cores.
  for name in "${workers[@]}"; do
    rm -rf "$work/$name/state" && mkdir -p "$work/$name/state"
    start "$name"
    wait_ready "$name"
    for size in "${sizes[@]}"; do check "$name" "$size"; done
  done

  say "run $run: warming up"
  for name in "${workers[@]}"; do load "$name" "${sizes[0]}" 3 "warm-$run-$name-$RANDOM" >/dev/null; done

  for round in $(seq 1 "$rounds"); do
    for size in "${sizes[@]}"; do
      # Rotate the order each round so no worker always follows the same one.
      shift_by=$(((round - 1) % ${#cases[@]}))
      order=("${cases[@]:$shift_by}" "${cases[@]:0:$shift_by}")
      for name in "${order[@]}"; do
        read -r worker_before stack_before <<<"$(cpu "$name")"
        # The prefix becomes X-GitHub-Delivery: letters, digits and `-` only,
        # or both workers refuse every request with 400.
        line="$(load "$name" "$size" "$duration" "r$run-$round-$size-$name-$RANDOM$RANDOM")"
        read -r worker_after stack_after <<<"$(cpu "$name")"
        printf '%s\t%s\t%s\t%s\t%s\tworker_ticks=%s\tstack_ticks=%s\n' "$run" "$round" "$size" "$name" "$line" \
          "$((worker_after - worker_before))" "$((stack_after - stack_before))" >>"$results"
        say "run $run, round $round, $size bytes, $name: ${line#BENCH }"
      done
    done
  done

  for name in "${workers[@]}"; do kill -KILL -- "-$(cat "$work/$name/pid")" 2>/dev/null || true; done
  pids=()
done

if [ "${BENCH_INTAKE_ONLY:-}" = 1 ]; then
  node "$bench/load/report.mjs" --rounds "$results" --duration "$duration" --connections "$connections" --out "$out" \
    --clk "$(getconf CLK_TCK)" --load "$load_at_start" --wrangler "$("$wrangler" --version 2>/dev/null | tail -1)"
  say "written to $out (intake only)"
  exit 0
fi

# --- native floor ---------------------------------------------------------
say "native floor: cargo bench -p agent-zero-github --bench intake (each size)"
native="$work/native.txt"
: >"$native"
for size in "${sizes[@]}"; do
  (cd "$root" && AGENT_ZERO_BENCH_PAYLOAD="$work/payload-$size.json" cargo bench -q -p agent-zero-github --bench intake) \
    >>"$native" 2>"$work/native.log" || { cat "$work/native.log" >&2; die "cargo bench failed"; }
done

# --- HMAC: wasm sha2 against crypto.subtle (tests/bench/hmac) ---------------
say "HMAC-SHA256 verify: the wasm hmac+sha2 against crypto.subtle, in node's V8 (tests/bench/hmac)"
hmac_table="$work/hmac.md"
(cd "$bench/hmac" && CARGO_TARGET_DIR="$root/target/bench-hmac" cargo build -q --release --target wasm32-unknown-unknown \
  && node bench.mjs "$root/target/bench-hmac/wasm32-unknown-unknown/release/agent_zero_bench_hmac.wasm" "${sizes[@]}") \
  >"$hmac_table" 2>"$work/hmac.log" || { cat "$work/hmac.log" >&2; die "the HMAC bench failed"; }

# --- sizes ----------------------------------------------------------------
say "sizes"
ts_bundle="$work/ts-bundle"
(cd "$work/ts" && WRANGLER_SEND_METRICS=false "$wrangler" deploy --dry-run --outdir "$ts_bundle" >"$work/ts-bundle.log" 2>&1) \
  || { cat "$work/ts-bundle.log" >&2; die "bundling the TS worker failed"; }
sizes="$work/sizes.tsv"
size_row() { printf '%s\t%s\t%s\t%s\n' "$1" "${3:-${2#"$root"/}}" "$(wc -c <"$2")" "$(gzip -9 -c "$2" | wc -c)" >>"$sizes"; }
: >"$sizes"
size_row "Worker wasm (front: intake, API, pages, cron)" "$worker_build/index_bg.wasm"
size_row "Worker entry module" "$worker_build/index.js"
[ -f "$worker_build/glue.js" ] && size_row "Worker JS glue (worker-build's bundle)" "$worker_build/glue.js"
# The tick worker beside a default build (BENCH_WORKER_BUILD names the front's).
ticks_build="$(dirname "$worker_build")/build-ticks"
[ -f "$ticks_build/index_bg.wasm" ] && size_row "Tick worker wasm" "$ticks_build/index_bg.wasm"
size_row "Spin HTTP component" "$spin_wasm"
spin_ticks="$(dirname "$spin_wasm")/agent_zero_spin_ticks.wasm"
[ -f "$spin_ticks" ] && size_row "Spin tick component" "$spin_ticks"
size_row "TS worker bundle" "$ts_bundle/index.js" "tests/bench/ts-worker (wrangler deploy --dry-run)"

# --- KV operations and subrequests per task run ---------------------------
say "task-run costs: cargo test -p agent-zero-engine --test lifecycle per_tick_cost_is_bounded"
costs="$work/costs.txt"
(cd "$root" && cargo test -q -p agent-zero-engine --test lifecycle -- --nocapture --exact per_tick_cost_is_bounded) >"$costs" 2>&1 \
  || { cat "$costs" >&2; say "the runtime cost test failed; the documented model is printed instead"; }

# --- report ---------------------------------------------------------------
node "$bench/load/report.mjs" --rounds "$results" --native "$native" --sizes "$sizes" --costs "$costs" \
  --duration "$duration" --connections "$connections" --out "$out" \
  --clk "$(getconf CLK_TCK)" --load "$load_at_start" --wrangler "$("$wrangler" --version 2>/dev/null | tail -1)"
{ printf '\n### HMAC-SHA256 verify, wasm `sha2` against `crypto.subtle` (node %s, medians)\n\n' "$(node --version)"; cat "$hmac_table"; } >>"$out"
say "written to $out"
