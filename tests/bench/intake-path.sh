#!/usr/bin/env bash
# The files the intake of a labelled issue runs code of (issue 44: "the
# intake of a labelled issue touches at most half the files it does
# today, with no file entered twice"), measured, not read.
#
#   bash tests/bench/intake-path.sh
#
# Runs the app's unit tests that take a labelled `issues` delivery (the
# octokit fixture, its label set to `agent-zero`) under valgrind's
# callgrind, collecting only inside the path:
#
# - worker: the synchronous check and parse the worker's entry drives,
#   then `act_on` (`a_labelled_issue_is_recorded_once_as_a_queued_task`:
#   `answered_sync` and `act_on`);
# - handler: the whole handler, Spin's path
#   (`a_labelled_issue_through_the_handler_is_queued`: `TestHost::send`).
#
# and prints, for each, every file of shared/ and functions/ that executed
# code (the test's executor and in-memory store left out) and the files
# that called into it (tests/bench/intake-path/files.py). Not counted: the
# host's own files (on Cloudflare entry.mjs, src/front/intake.rs, lib.rs,
# hmac.rs, kv.rs, task_store.rs and the TaskStore object; on Spin lib.rs,
# front.rs and kv.rs), which stand in for the test host here.
# Needs valgrind (Debian `valgrind`). Figures: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
binary="$(cargo test -p agent-zero-app --lib --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "agent_zero_app":
        print(m["executable"])')"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
run() {
  local name="$1" test="$2"; shift 2
  valgrind --tool=callgrind --callgrind-out-file="$out/$name.cg" --compress-strings=no --compress-pos=no "$@" \
    "$binary" --exact "routes::webhooks::tests::$test" --test-threads=1 >"$out/$name.log" 2>&1 \
    || { cat "$out/$name.log" >&2; exit 1; }
  grep -q "test result: ok. 1 passed" "$out/$name.log" || { cat "$out/$name.log" >&2; exit 1; }
  echo "## $name ($test)"
  python3 tests/bench/intake-path/files.py "$out/$name.cg" "$root"
  echo
}
run worker a_labelled_issue_is_recorded_once_as_a_queued_task --toggle-collect='*answered_sync*' --toggle-collect='*act_on*'
run handler a_labelled_issue_through_the_handler_is_queued --toggle-collect='*TestHost*send*'
