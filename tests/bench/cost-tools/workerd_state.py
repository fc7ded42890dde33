"""The tick benchmark's log, put into `wrangler dev`'s local state
(tests/bench/cost.sh, step `workerd`):

    workerd_state.py deliver URL SECRET FIXTURE   (the two tasks' deliveries)
    workerd_state.py prepare STATE SNAPSHOT.json
    workerd_state.py round STATE warm|cold|due DUE_MS
    workerd_state.py committed STATE SEQ

`prepare`: STATE is a `--persist-to` directory in which intake created two
tasks, `gh-bench-tick-log-1` (the warm-up) and `gh-bench-tick-log-2` (the
one measured). Each task's Durable Object (`TaskStore`: one SQLite table
`entries(key, value)`, functions/cloudflare/src/task_store/object.rs) gets
the task keys of SNAPSHOT.json (written by `tick-log` for task 1; task 2's
are the same with its id), and Workers KV (Miniflare's `_mf_entries` table
and blob files) keeps one pending marker per task, for seq N: the warm-up's
due at once.

`round`: before a round, on a copy of the prepared state: `cold` removes
the measured task's checkpoint (`task/{id}/meta`); its pending marker
becomes due at DUE_MS (far ahead), so the first sweep runs the warm-up's
tick only (loading the tick worker's isolate and the Durable Object's);
then `due 0` while the worker runs (Miniflare reads a KV value's blob file
on each read) makes the next sweep run the measured tick.
"""

import datetime
import glob
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import urllib.request

WARM_UP, MEASURED = "gh-bench-tick-log-1", "gh-bench-tick-log-2"


def task_objects(state):
    found = {}
    for path in glob.glob(os.path.join(state, "v3/do/*-TaskStore/*.sqlite")):
        if os.path.basename(path) == "metadata.sqlite":
            continue
        db = sqlite3.connect(path)
        (name,) = db.execute("SELECT name FROM __miniflare_do_name").fetchone()
        found[name] = path
        db.close()
    missing = {WARM_UP, MEASURED} - set(found)
    if missing:
        raise SystemExit(f"no Durable Object for {sorted(missing)} in {state}")
    return found


def kv_db(state):
    paths = [p for p in glob.glob(os.path.join(state, "v3/kv/miniflare-KVNamespaceObject/*.sqlite"))
             if os.path.basename(p) != "metadata.sqlite"]
    if len(paths) != 1:
        raise SystemExit(f"expected one local KV namespace in {state}, found {paths}")
    return sqlite3.connect(paths[0])


def blob_path(state, blob_id):
    paths = glob.glob(os.path.join(state, "v3/kv/*/blobs", blob_id))
    if len(paths) != 1:
        raise SystemExit(f"KV blob {blob_id} not found")
    return paths[0]


def deliver(url, secret, fixture):
    """The labelled issue of tick-log (tests/bench/cost-tools/src/main.rs),
    dated now, as deliveries `bench-tick-log-1` and `-2`: the two tasks."""
    for n in (1, 2):
        payload = json.load(open(fixture))
        payload["repository"].update({"name": "demo", "full_name": "acme/demo"})
        payload["repository"]["owner"]["login"] = "acme"
        payload["label"]["name"] = "agent-zero"
        payload["issue"].update({
            "labels": [{"name": "agent-zero"}],
            "title": "average() is wrong for every input",
            "body": f"`average([2, 4])` returns 2, not 3. ({n})",
            "updated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        })
        body = json.dumps(payload).encode()
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(f"{url}/webhooks/github", data=body, method="POST", headers={
            "content-type": "application/json", "x-github-event": "issues",
            "x-github-delivery": f"bench-tick-log-{n}", "x-hub-signature-256": signature})
        with urllib.request.urlopen(request) as answer:
            reply = json.load(answer)
        if reply.get("taskId") != f"gh-bench-tick-log-{n}":
            raise SystemExit(f"intake answered {reply}")


def prepare(state, snapshot_path):
    snapshot = json.load(open(snapshot_path))
    source, entries = snapshot["taskId"], snapshot["entries"]
    if source != WARM_UP:
        raise SystemExit(f"the snapshot is of {source}, not {WARM_UP}")
    for task, path in task_objects(state).items():
        db = sqlite3.connect(path)
        db.execute("DELETE FROM entries")
        for key, value in snapshot["store"].items():
            if key.startswith(f"task/{source}/"):
                db.execute("INSERT INTO entries (key, value) VALUES (?, ?)",
                           (key.replace(source, task), value.replace(source, task).encode()))
        db.commit()
        db.close()
    kv = kv_db(state)
    for task in (WARM_UP, MEASURED):
        rows = kv.execute("SELECT key, blob_id FROM _mf_entries WHERE key LIKE ?", (f"pending/{task}/%",)).fetchall()
        if not rows:
            raise SystemExit(f"no pending marker of {task} in KV")
        for key, _ in rows[1:]:
            kv.execute("DELETE FROM _mf_entries WHERE key = ?", (key,))
        key, blob_id = rows[0]
        kv.execute("UPDATE _mf_entries SET key = ? WHERE key = ?", (f"pending/{task}/{entries:010d}", key))
        with open(blob_path(state, blob_id), "w") as f:
            f.write('{"dueMs":0}')
    kv.commit()


def round_(state, mode, due_ms):
    """`mode` warm or cold before a round; `due` only sets the due time."""
    if mode not in ("warm", "cold", "due"):
        raise SystemExit(f"round: `{mode}` is not warm, cold or due")
    if mode == "cold":
        db = sqlite3.connect(task_objects(state)[MEASURED])
        db.execute("DELETE FROM entries WHERE key = ?", (f"task/{MEASURED}/meta",))
        db.commit()
    kv = kv_db(state)
    (blob_id,) = kv.execute("SELECT blob_id FROM _mf_entries WHERE key LIKE ?", (f"pending/{MEASURED}/%",)).fetchone()
    with open(blob_path(state, blob_id), "w") as f:
        f.write(json.dumps({"dueMs": int(due_ms)}))


def committed(state, seq):
    """Whether each task committed entry `seq`: prints `warm-up measured` as 0/1."""
    objects = task_objects(state)
    out = []
    for task in (WARM_UP, MEASURED):
        db = sqlite3.connect(objects[task])
        (n,) = db.execute("SELECT count(*) FROM entries WHERE key = ?", (f"task/{task}/log/{int(seq):010d}",)).fetchone()
        out.append(str(n))
    print(" ".join(out))


if __name__ == "__main__":
    if sys.argv[1] == "deliver":
        deliver(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "round":
        round_(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "committed":
        committed(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
