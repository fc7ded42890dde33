#!/usr/bin/env bash
# What a user pays for (issue 42), in one command: `bash tests/bench/cost.sh`.
# Prints markdown tables and writes them to $BENCH_OUT (default
# /tmp/cost-results.md), the raw measurements beside it (-ticks.tsv,
# -fold.jsonl, -cold.tsv); docs/cost.md records a run and explains each figure.
#
# 1. Per run shape (`shapes`): ticks, storage operations by kind and by the
#    store they land in on Cloudflare, subrequests and the ratio to the
#    floor, from the engine's harness (`cargo bench -p agent-zero-engine
#    --bench run_cost`); and what the sweep of an idle deployment costs a
#    day, through the app's own sweep (tests/bench/cost-tools, `idle-day`,
#    at the cron cadence of wrangler.toml).
# 2. One tick's CPU in the wasm build (`tick`): for each log length N in
#    BENCH_COST_ENTRIES, `tick-log` (tests/bench/cost-tools) writes a task
#    whose log has N entries, produced by the app's own code, as the Spin
#    host's key-value directory; the Spin host (tests/spin-host,
#    `--report-cpu`) serves the real HTTP and tick components over it, with
#    GitHub a loopback stub answering 503; `POST /api/v1/sweep` re-drives
#    the task's overdue tick, and the tick component's invocation reports
#    its thread CPU time (instantiation apart). Warm: the checkpoint
#    (`task/{id}/meta`) present, as after any tick; cold: removed, so the
#    tick decodes and folds all N entries. Medians of BENCH_COST_ROUNDS.
#    Then the sync alone, split into decode and fold, in wasmtime (the
#    `wasmtime` Python package at the Spin host's major version) and in
#    node's V8 (workerd's engine): tests/bench/fold-wasm. And what intake
#    and that tick cost at the app's key-value port, by store (`tick-log`
#    counts them while it writes the log).
# 3. One tick on workerd (`workerd`), for each log length in
#    BENCH_COST_WORKERD_ENTRIES ("10 1000"): both workers under one
#    `wrangler dev` (as the end-to-end harness runs them); intake creates two
#    tasks (their `active/` keys in Miniflare's local KV), whose Durable
#    Objects (SQLite) then get the same N-entry log, with checkpoints that
#    make the warm-up's tick due first (tests/bench/cost-tools/
#    workerd_state.py); a first sweep runs the warm-up task's tick (loading
#    the isolates), a second the measured one. workerd reports no CPU per
#    isolate locally (and its inspector does not answer the profiler), so
#    the figure is the CPU of the workerd process running the workers
#    (/proc/PID/task/*/schedstat) across the measured sweep and tick, less
#    that of a sweep alone: the tick worker, the task's Durable Object and
#    Miniflare's KV and queue simulation together, an upper bound on the
#    tick worker's own.
# 4. Cold start (`cold`): the Spin host's compile of each component and its
#    start to first answer, and a fresh instance per request
#    (instantiation); `wrangler dev` started afresh to its first answer for
#    the front worker, the tick worker and a trivial TypeScript worker
#    (tests/bench/ts-worker), whose difference is what our artefacts add to
#    wrangler's own start, and wrangler's own timing of the first request
#    (the script loaded into a fresh isolate) and of the next ones. (Node
#    20's V8 cannot compile the worker wasm, which uses the exception
#    handling proposal's `try_table`; workerd's V8 can, so the worker's
#    compile is measured inside workerd, in its first request.)
#
# Knobs: BENCH_COST_STEPS ("shapes tick workerd cold"), BENCH_COLD_LIMIT_MS
# (fail when a worker's first request in a fresh isolate takes longer; CI
# sets Cloudflare's startup limit), BENCH_COST_ROUNDS
# (3), BENCH_COST_ENTRIES ("10 100 1000"), BENCH_COST_WORKERD_ENTRIES
# ("10 1000"), BENCH_OUT, BENCH_WORKER_BUILD (the
# front worker's build directory; the tick worker's is its `-ticks`
# sibling), SPIN_WASM_DIR (the directory of the two Spin components),
# SPIN_HOST (the host binary). Missing artefacts are built with
# tests/scripts/build-{worker,spin}.sh and the host with `cargo build
# --profile tools -p agent-zero-spin-host`. Keep the rounds few on a shared
# machine: figures are CPU time where they can be, but a loaded machine
# still moves them.
# Needs: cargo (wasm32-unknown-unknown), node + tests/node (wrangler),
# python3 (pip's `wasmtime`), curl.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="$root/tests/bench"
read -r -a steps <<<"${BENCH_COST_STEPS:-shapes tick workerd cold}"
rounds="${BENCH_COST_ROUNDS:-3}"
read -r -a lengths <<<"${BENCH_COST_ENTRIES:-10 100 1000}"
read -r -a workerd_lengths <<<"${BENCH_COST_WORKERD_ENTRIES:-10 1000}"
out="${BENCH_OUT:-/tmp/cost-results.md}"
target="${CARGO_TARGET_DIR:-$root/target}"
worker_build="${BENCH_WORKER_BUILD:-$root/functions/cloudflare/build}"
ticks_build="${worker_build%/}-ticks"
spin_dir="${SPIN_WASM_DIR:-$target/wasm32-wasip2/release}"
spin_host="${SPIN_HOST:-$target/tools/agent-zero-spin-host}"
wrangler="$root/tests/node/node_modules/.bin/wrangler"
export PATH="$HOME/.cargo/bin:$root/tests/node/node_modules/.bin:$PATH"

say() { printf '[cost] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
has_step() { [[ " ${steps[*]} " == *" $1 "* ]]; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "BENCH_COST_ROUNDS: \`$rounds\` is not a positive count"

work="$(mktemp -d /tmp/agent-zero-cost.XXXXXX)"
pids=()
cleanup() {
  # Hosts started in a subshell ($(...)) are known by their pid files only.
  for file in "$work"/*/pid; do [ -f "$file" ] && pids+=("$(cat "$file")"); done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
: >"$out"
emit() { tee -a "$out"; }

free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
now_ns() { date +%s%N; }
# A key as the Spin host names its file (tests/spin-host/src/kv.rs).
hex() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }

# --- tools and artefacts ---------------------------------------------------
# The native tools (tests/bench/cost-tools), kept in the target directory.
cost_tools() {
  [ -x "$target/bench-cost-tools/release/tick-log" ] || say "building tests/bench/cost-tools (tick-log, idle-day)"
  (cd "$bench/cost-tools" && CARGO_TARGET_DIR="$target/bench-cost-tools" cargo build -q --release) >&2
  mkdir -p "$work/tools"
  ln -sfn "$target/bench-cost-tools/release" "$work/tools/release"
}

spin_artefacts() {
  if [ ! -f "$spin_dir/agent_zero_spin.wasm" ] || [ ! -f "$spin_dir/agent_zero_spin_ticks.wasm" ]; then
    say "building the Spin components (tests/scripts/build-spin.sh)"
    bash "$root/tests/scripts/build-spin.sh" >&2
  fi
  if [ ! -x "$spin_host" ] || [[ "$("$spin_host" --help)" != *--report-cpu* ]]; then
    say "building the Spin host (cargo build --profile tools -p agent-zero-spin-host)"
    (cd "$root" && cargo build -q --profile tools -p agent-zero-spin-host) >&2
  fi
}

worker_artefacts() {
  if [ ! -f "$worker_build/index_bg.wasm" ] || [ ! -f "$ticks_build/index_bg.wasm" ]; then
    [ -n "${BENCH_WORKER_BUILD:-}" ] && die "BENCH_WORKER_BUILD: no worker build in \`$worker_build\` and \`$ticks_build\`"
    say "building the workers (tests/scripts/build-worker.sh)"
    bash "$root/tests/scripts/build-worker.sh" >&2
  fi
}

# --- 1. per run shape --------------------------------------------------------
if has_step shapes; then
  say "run shapes: cargo bench -p agent-zero-engine --bench run_cost"
  (cd "$root" && cargo bench -q -p agent-zero-engine --bench run_cost) >"$work/shapes.md" 2>"$work/shapes.log" \
    || { cat "$work/shapes.log" >&2; die "the run_cost bench failed"; }
  cost_tools
  cron="$(grep -E '^crons = ' "$root/wrangler.toml" | sed -E 's/.*"([^"]*)".*/\1/')"
  case "$cron" in
    "* * * * *") per_day=1440 ;;
    "*/"[0-9]*" * * * *") per_day=$((1440 / $(echo "$cron" | sed -E 's|^\*/([0-9]+) .*|\1|'))) ;;
    *) die "wrangler.toml: cron \`$cron\` is not a minute cadence this script counts" ;;
  esac
  "$work/tools/release/idle-day" --sweeps-per-day "$per_day" >"$work/idle.md"
  {
    printf '## Per run shape (engine harness, storage counted at the port)\n\n'
    cat "$work/shapes.md"
    printf '\n## An idle day (the app'"'"'s sweep on an empty deployment; cron `%s` in wrangler.toml)\n\n' "$cron"
    cat "$work/idle.md"
    echo
  } | emit
fi

# GitHub down: every request answers 503 (as tick-log's own HTTP port).
start_stub() {
  [ -n "${stub_port:-}" ] && return 0
  stub_port="$(free_port)"
  (
    setsid node -e '
      require("http").createServer((q, r) => { q.resume(); q.on("end", () => {
        r.writeHead(503, {"content-type": "application/json"}); r.end("{\"message\":\"Service Unavailable\"}"); }); })
        .listen(Number(process.argv[1]), "127.0.0.1");' "$stub_port" </dev/null >"$work/stub.log" 2>&1 &
    echo $! >"$work/stub.pid"
  )
  pids+=("$(cat "$work/stub.pid")")
}

# --- the Spin host -------------------------------------------------------------
# start_spin DIR KV_DIR GITHUB_URL: the host over both components, logging to DIR/host.log.
start_spin() {
  local dir="$1" kv="$2" github="$3" port manifest
  port="$(free_port)"
  manifest="$(sed -e "s|^source = \"target/wasm32-wasip2/release/agent_zero_spin.wasm\"|source = \"$spin_dir/agent_zero_spin.wasm\"|" \
    -e "s|^source = \"target/wasm32-wasip2/release/agent_zero_spin_ticks.wasm\"|source = \"$spin_dir/agent_zero_spin_ticks.wasm\"|" \
    "$root/spin.toml")"
  grep -q "^source = \"$spin_dir/agent_zero_spin_ticks.wasm\"" <<<"$manifest" || die "spin.toml: unexpected source lines"
  printf '%s\n' "$manifest" >"$dir/spin.toml"
  (
    export SPIN_VARIABLE_GITHUB_WEBHOOK_SECRET=bench-webhook-secret
    export SPIN_VARIABLE_GITHUB_TOKEN=ghp_bench_0123456789
    export SPIN_VARIABLE_GITHUB_API_URL="$github" SPIN_VARIABLE_AGENT_ZERO_FORGE_ORIGIN="$github"
    export SPIN_VARIABLE_AGENT_ZERO_CONTROL_PLANE_TOKENS=bench:tok-bench-0123456789ab
    # A 30 s platform: a tick's successor (minutes away) is left to the sweep.
    export SPIN_VARIABLE_AGENT_ZERO_PLATFORM=fermyon-cloud
    echo "$(now_ns)" >"$dir/started"
    setsid "$spin_host" --manifest "$dir/spin.toml" --listen "127.0.0.1:$port" --kv-dir "$kv" --report-cpu \
      </dev/null >"$dir/host.log" 2>&1 &
    echo $! >"$dir/pid"
  )
  pids+=("$(cat "$dir/pid")")
  echo "$port" >"$dir/port"
  for _ in $(seq 1 3000); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/v1/health")" != 000 ]; then
      echo "$(now_ns)" >"$dir/answered"
      return 0
    fi
    sleep 0.01
  done
  cat "$dir/host.log" >&2
  die "the Spin host did not answer within 30 s"
}

stop() { kill -KILL -- "-$(cat "$1/pid")" 2>/dev/null || true; }

# --- 2. one tick's CPU in wasm -------------------------------------------------
if has_step tick; then
  spin_artefacts
  cost_tools
  start_stub
  # tick-log writes the log as the host's key-value directory, so these
  # ticks run on Spin's key-value store (`agent_zero_store = key-value`),
  # whose cold tick reads more than the SQLite store's (docs/cost.md).
  export SPIN_VARIABLE_AGENT_ZERO_STORE=key-value
  github="http://127.0.0.1:$stub_port"
  : >"$work/ticks.tsv"
  for n in "${lengths[@]}"; do
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] || die "BENCH_COST_ENTRIES: \`$n\` is not a log length of at least 2"
    dir="$work/tick-$n"
    mkdir -p "$dir"
    read -r id entries log_bytes < <("$work/tools/release/tick-log" --entries "$n" --github-api-url "$github" \
      --fixture "$root/tests/fixtures/github-webhooks/issues/labeled.payload.json" --out "$dir/pristine")
    [ -n "${id:-}" ] && [ "${entries:-}" = "$n" ] || die "tick-log did not write a $n-entry log"
    meta="$(hex "task/$id/meta")"
    next="$(hex "$(printf 'task/%s/log/%010d' "$id" "$n")")"
    [ -f "$dir/pristine/default/$meta" ] || die "tick-log wrote no checkpoint for $id"
    printf 'log\t%s\t%s\n' "$n" "$log_bytes" >>"$work/ticks.tsv"
    say "tick on a $n-entry log ($log_bytes bytes of entries): $rounds round(s), warm and cold"
    mkdir -p "$dir/kv"
    start_spin "$dir" "$dir/kv" "$github"
    port="$(cat "$dir/port")"
    printf 'start\t%s\t%s\n' "$n" "$(( ($(cat "$dir/answered") - $(cat "$dir/started")) / 1000 ))" >>"$work/ticks.tsv"
    for round in $(seq 1 "$rounds"); do
      for mode in warm cold; do
        rm -rf "$dir/kv/default" && cp -r "$dir/pristine/default" "$dir/kv/default"
        [ "$mode" = cold ] && rm "$dir/kv/default/$meta"
        before="$(grep -c '"agentZero":"spin-invocation-cpu","component":"agent-zero-ticks"' "$dir/host.log" || true)"
        answer="$(curl -sS -X POST "http://127.0.0.1:$port/api/v1/sweep?graceMs=0" \
          -H 'Authorization: Bearer tok-bench-0123456789ab')"
        grep -q '"ticksEnqueued":1' <<<"$answer" || die "the sweep re-drove no tick: $answer"
        # A cold tick on a long log rebuilds its checkpoint a chunk per
        # invocation (MAX_FOLD_PER_TICK, each handed to a fresh one) before
        # it commits: every tick-component invocation until entry N is
        # committed and no more follow is recorded, one row each.
        seen=-1 quiet=0
        for _ in $(seq 1 3000); do
          count="$(grep -c '"agentZero":"spin-invocation-cpu","component":"agent-zero-ticks"' "$dir/host.log" || true)"
          if [ -f "$dir/kv/default/$next" ] && [ "$count" -gt "$before" ]; then
            if [ "$count" = "$seen" ]; then quiet=$((quiet + 1)); else quiet=0; fi
            [ "$quiet" -ge 20 ] && break
          fi
          seen="$count"
          sleep 0.01
        done
        [ -f "$dir/kv/default/$next" ] || { tail -20 "$dir/host.log" >&2; die "the tick did not commit entry $n"; }
        grep '"agentZero":"spin-invocation-cpu","component":"agent-zero-ticks"' "$dir/host.log" | tail -n +"$((before + 1))" |
          while IFS= read -r line; do
            printf 'tick\t%s\t%s\t%s\t%s\n' "$n" "$mode" "$round" "$line" >>"$work/ticks.tsv"
          done
      done
    done
    grep '"component":"agent-zero","compileMs"\|"component":"agent-zero-ticks","compileMs"' "$dir/host.log" |
      sed "s/^/compile\t$n\t/" >>"$work/ticks.tsv" || true
    grep '"agentZero":"spin-invocation-cpu","component":"agent-zero"' "$dir/host.log" |
      sed "s/^/front\t$n\t/" >>"$work/ticks.tsv" || true
    stop "$dir"
    cp "$dir/pristine/snapshot.json" "$work/snapshot-$n.json"
    cp "$dir/pristine/ops.json" "$work/ops.json"
  done

  say "the sync alone, in wasm: tests/bench/fold-wasm in wasmtime and V8"
  (cd "$bench/fold-wasm" && CARGO_TARGET_DIR="$target/bench-fold-wasm" cargo build -q --release \
    --target wasm32-unknown-unknown) >&2
  fold_wasm="$target/bench-fold-wasm/wasm32-unknown-unknown/release/agent_zero_bench_fold_wasm.wasm"
  python3 -c 'import wasmtime' 2>/dev/null || pip install -q 'wasmtime==48.0.0' >&2
  : >"$work/fold.jsonl"
  for n in "${lengths[@]}"; do
    python3 "$bench/fold-wasm/fold.py" "$fold_wasm" "$work/snapshot-$n.json" 30 >>"$work/fold.jsonl"
    node "$bench/fold-wasm/fold.mjs" "$fold_wasm" "$work/snapshot-$n.json" 30 >>"$work/fold.jsonl"
  done
  python3 "$bench/cost-tools/report.py" tick "$work/ticks.tsv" "$work/fold.jsonl" "$work/ops.json" | emit
  cp "$work/ticks.tsv" "${out%.md}-ticks.tsv" && cp "$work/fold.jsonl" "${out%.md}-fold.jsonl"
  unset SPIN_VARIABLE_AGENT_ZERO_STORE
fi

# --- 3. one tick on workerd ------------------------------------------------------
# start_workers DIR GITHUB_URL: both workers under one `wrangler dev` over
# DIR/state, as the end-to-end harness runs them; prints its port.
start_workers() {
  local dir="$1" github="$2" port
  port="$(free_port)"
  mkdir -p "$dir/front" "$dir/ticks"
  sed -e "s|^main = \"functions/cloudflare/build/index.js\"|main = \"$worker_build/index.js\"|" \
    -e 's|^\[build\]$|[build_disabled]|' -e "s|^GITHUB_API_URL = .*|GITHUB_API_URL = \"$github\"|" \
    "$root/wrangler.toml" >"$dir/front/wrangler.toml"
  sed -e "s|^main = \"functions/cloudflare/build-ticks/index.js\"|main = \"$ticks_build/index.js\"|" \
    -e 's|^\[build\]$|[build_disabled]|' -e "s|^GITHUB_API_URL = .*|GITHUB_API_URL = \"$github\"|" \
    "$root/wrangler.ticks.toml" >"$dir/ticks/wrangler.toml"
  grep -q "^main = \"$ticks_build/index.js\"" "$dir/ticks/wrangler.toml" || die "wrangler.ticks.toml: unexpected main line"
  printf "GITHUB_WEBHOOK_SECRET='bench-webhook-secret'\nGITHUB_TOKEN='ghp_bench_0123456789'\nAGENT_ZERO_CONTROL_PLANE_TOKENS='bench:tok-bench-0123456789ab'\n" \
    >"$dir/front/.dev.vars"
  printf "GITHUB_TOKEN='ghp_bench_0123456789'\n" >"$dir/ticks/.dev.vars"
  (
    cd "$dir"
    WRANGLER_SEND_METRICS=false AGENT_ZERO_PREBUILT=1 setsid "$wrangler" dev --local --ip 127.0.0.1 --port "$port" \
      --config "$dir/front/wrangler.toml" --config "$dir/ticks/wrangler.toml" --persist-to "$dir/state" \
      --inspector-port "$(free_port)" </dev/null >"$dir/wrangler.log" 2>&1 &
    echo $! >"$dir/pid"
  )
  pids+=("$(cat "$dir/pid")")
  for _ in $(seq 1 3000); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/v1/health")" = 200 ] && { echo "$port"; return 0; }
    sleep 0.02
  done
  cat "$dir/wrangler.log" >&2
  die "wrangler dev ($dir) never answered"
}

# workerd_cpu DIR: ns of CPU of the workerd process running the workers (the
# one with an inspector; the other proxies).
workerd_cpu() {
  local total=0 pid stat
  for pid in $(pgrep -g "$(cat "$1/pid")"); do
    grep -q -- '--inspector-addr' "/proc/$pid/cmdline" 2>/dev/null || continue
    for stat in /proc/"$pid"/task/*/schedstat; do total=$((total + $(cut -d' ' -f1 "$stat" 2>/dev/null || echo 0))); done
  done
  echo "$total"
}

# sweep_tick DIR PORT GRACE_MS: a sweep that re-drives exactly one tick,
# then waits for the tick worker's invocation.
sweep_tick() {
  local before answer
  before="$(grep -c '"agentZero":"queue-invocation"' "$1/wrangler.log" || true)"
  answer="$(curl -sS -X POST "http://127.0.0.1:$2/api/v1/sweep?graceMs=$3" -H 'Authorization: Bearer tok-bench-0123456789ab')"
  grep -q '"ticksEnqueued":1' <<<"$answer" || die "the sweep re-drove no tick: $answer"
  for _ in $(seq 1 1500); do
    [ "$(grep -c '"agentZero":"queue-invocation"' "$1/wrangler.log" || true)" -gt "$before" ] && { sleep 0.3; return 0; }
    sleep 0.02
  done
  die "the tick worker ran no tick"
}

if has_step workerd; then
  worker_artefacts
  cost_tools
  start_stub
  github="http://127.0.0.1:$stub_port"
  state_py="$bench/cost-tools/workerd_state.py"
  : >"$work/workerd.tsv"
  for n in "${workerd_lengths[@]}"; do
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] || die "BENCH_COST_WORKERD_ENTRIES: \`$n\` is not a log length of at least 2"
    dir="$work/workerd-$n"
    mkdir -p "$dir"
    "$work/tools/release/tick-log" --entries "$n" --github-api-url "$github" \
      --fixture "$root/tests/fixtures/github-webhooks/issues/labeled.payload.json" --out "$dir/log" >/dev/null
    say "a tick on workerd, $n-entry log: $rounds round(s), warm and cold"
    # Intake creates the two tasks (their objects and `active/` keys); then
    # the log goes in while wrangler is stopped.
    port="$(start_workers "$dir" "$github")"
    python3 "$state_py" deliver "http://127.0.0.1:$port" bench-webhook-secret \
      "$root/tests/fixtures/github-webhooks/issues/labeled.payload.json"
    sleep 2
    stop "$dir"
    python3 "$state_py" prepare "$dir/state" "$dir/log/snapshot.json"
    mv "$dir/state" "$dir/pristine"
    for round in $(seq 1 "$rounds"); do
      for mode in warm cold; do
        rm -rf "$dir/state" && cp -r "$dir/pristine" "$dir/state"
        python3 "$state_py" round "$dir/state" "$mode"
        port="$(start_workers "$dir" "$github")"
        # The warm-up's tick (due at 0); the measured task is due at
        # `prepare`'s time, inside this grace (workerd_state.py).
        sweep_tick "$dir" "$port" 1000000000000
        before="$(workerd_cpu "$dir")"
        curl -sS -o /dev/null -X POST "http://127.0.0.1:$port/api/v1/sweep?graceMs=1000000000000" \
          -H 'Authorization: Bearer tok-bench-0123456789ab'
        sleep 1.3
        swept="$(workerd_cpu "$dir")"
        sweep_tick "$dir" "$port" 0
        ticked="$(workerd_cpu "$dir")"
        stop "$dir"
        sleep 0.3
        [ "$(python3 "$state_py" committed "$dir/state" "$n")" = "1 1" ] || die "workerd: a tick on the $n-entry log did not commit"
        printf 'workerd\t%s\t%s\t%s\t%s\t%s\n' "$n" "$mode" "$round" "$(( (swept - before) / 1000 ))" \
          "$(( (ticked - swept) / 1000 ))" >>"$work/workerd.tsv"
      done
    done
  done
  python3 "$bench/cost-tools/report.py" workerd "$work/workerd.tsv" | emit
  cp "$work/workerd.tsv" "${out%.md}-workerd.tsv"
fi

# --- 4. cold start -----------------------------------------------------------------
# first_answer CONFIG_DIR: ms from `wrangler dev` spawned to its first HTTP
# answer, then wrangler's timing of that request and of two more.
first_answer() {
  local dir="$1" port inspector started answered=""
  port="$(free_port)"
  inspector="$(free_port)"
  rm -rf "$dir/state" && mkdir -p "$dir/state"
  started="$(now_ns)"
  (
    cd "$dir"
    WRANGLER_SEND_METRICS=false AGENT_ZERO_PREBUILT=1 setsid "$wrangler" dev --local --ip 127.0.0.1 --port "$port" \
      --config "$dir/wrangler.toml" --persist-to "$dir/state" --inspector-port "$inspector" \
      </dev/null >"$dir/wrangler.log" 2>&1 &
    echo $! >"$dir/pid"
  )
  pids+=("$(cat "$dir/pid")")
  for _ in $(seq 1 6000); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/v1/health")" != 000 ]; then
      answered="$(now_ns)"
      break
    fi
    sleep 0.01
  done
  [ -n "$answered" ] || { stop "$dir"; cat "$dir/wrangler.log" >&2; die "wrangler dev ($dir) never answered"; }
  # Two more requests to the same isolate, then wrangler's own timing of
  # each (its "GET /api/v1/health 200 OK (N ms)" lines): the first request
  # loads the worker's script into a fresh isolate.
  curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/health"
  curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/health"
  sleep 0.5
  stop "$dir"
  local requests
  # (Only wrangler's lines: the worker's own JSON line names the route too.)
  requests="$(grep -aE 'GET /api/v1/health [0-9]{3} .*\([0-9]+ms\)' "$dir/wrangler.log" | sed -E 's/.*\(([0-9]+)ms\).*/\1/' | head -3 | tr '\n' ' ')"
  read -r first second third <<<"$requests"
  echo "$(( (answered - started) / 1000000 )) ${first:-0} ${second:-0} ${third:-0}"
}

if has_step cold; then
  worker_artefacts
  spin_artefacts
  [ -x "$wrangler" ] || die "$wrangler is missing: run tests/scripts/install-tools.sh"
  for name in front ticks ts; do
    mkdir -p "$work/wrangler-$name"
    case "$name" in
      front)
        sed -e "s|^main = \"functions/cloudflare/build/index.js\"|main = \"$worker_build/index.js\"|" \
          -e 's|^\[build\]$|[build_disabled]|' "$root/wrangler.toml" >"$work/wrangler-$name/wrangler.toml" ;;
      ticks)
        sed -e "s|^main = \"functions/cloudflare/build-ticks/index.js\"|main = \"$ticks_build/index.js\"|" \
          -e 's|^\[build\]$|[build_disabled]|' "$root/wrangler.ticks.toml" >"$work/wrangler-$name/wrangler.toml" ;;
      ts) cp "$bench/ts-worker/index.ts" "$bench/ts-worker/wrangler.toml" "$work/wrangler-$name/" ;;
    esac
  done
  grep -q "^main = \"$worker_build/index.js\"" "$work/wrangler-front/wrangler.toml" || die "wrangler.toml: unexpected main line"
  grep -q "^main = \"$ticks_build/index.js\"" "$work/wrangler-ticks/wrangler.toml" || die "wrangler.ticks.toml: unexpected main line"
  : >"$work/cold.tsv"
  for round in $(seq 1 "$rounds"); do
    # Alternating, so no artefact always follows the same one.
    for name in ts front ticks; do
      read -r answered first second third < <(first_answer "$work/wrangler-$name")
      say "wrangler dev, round $round, $name: first answer after $answered ms; requests $first, $second, $third ms"
      printf 'wrangler\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$answered" "$first" "$second" "$third" >>"$work/cold.tsv"
    done
    # The Spin host, started afresh over an empty store.
    dir="$work/spin-cold-$round"
    mkdir -p "$dir/kv"
    start_spin "$dir" "$dir/kv" "http://127.0.0.1:9"
    port="$(cat "$dir/port")"
    for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/health"; done
    sleep 0.2
    stop "$dir"
    printf 'spin-start\t%s\t%s\n' "$round" "$(( ($(cat "$dir/answered") - $(cat "$dir/started")) / 1000 ))" >>"$work/cold.tsv"
    grep '"compileMs"' "$dir/host.log" | sed "s/^/spin-compile\t$round\t/" >>"$work/cold.tsv" || true
    grep '"spin-invocation-cpu"' "$dir/host.log" | sed "s/^/spin-request\t$round\t/" >>"$work/cold.tsv" || true
  done
  python3 "$bench/cost-tools/report.py" cold "$work/cold.tsv" "$worker_build" "$ticks_build" "$spin_dir" | emit
  cp "$work/cold.tsv" "${out%.md}-cold.tsv"
  # BENCH_COLD_LIMIT_MS (test.sh: Cloudflare's Worker startup time limit):
  # each worker's first request in a fresh isolate, which loads its script
  # (the wasm compiled and instantiated, the global scope run) and then
  # serves it, stays under it. That request is more than the startup the
  # platform limits, so this bound is on the safe side.
  if [ -n "${BENCH_COLD_LIMIT_MS:-}" ]; then
    awk -F'\t' -v limit="$BENCH_COLD_LIMIT_MS" '
      $1 == "wrangler" && ($2 == "front" || $2 == "ticks") && $5 + 0 > limit {
        printf "FAIL: the %s worker'"'"'s first request took %d ms, over the %d ms startup limit\n", $2, $5, limit > "/dev/stderr"; bad = 1
      }
      $1 == "wrangler" && ($2 == "front" || $2 == "ticks") && $5 + 0 == 0 {
        printf "FAIL: no timing of the %s worker'"'"'s first request in wrangler'"'"'s log\n", $2 > "/dev/stderr"; bad = 1
      }
      END { exit bad }' "$work/cold.tsv" || die "cold start over BENCH_COLD_LIMIT_MS"
    say "each worker's first request within ${BENCH_COLD_LIMIT_MS} ms"
  fi
fi

{
  printf '\nMachine: %s, %s cores, load average at the end %s; %s; node %s; %s.\n' \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$(rustc --version)" "$(node --version)" "$("$wrangler" --version 2>/dev/null | tail -1 | sed 's/^/wrangler /')"
} | emit
say "written to $out"
