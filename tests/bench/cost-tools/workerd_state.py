"""The tick benchmark's log, put into `wrangler dev`'s local state
(tests/bench/cost.sh, step `workerd`):

    workerd_state.py deliver URL SECRET FIXTURE   (the two tasks' deliveries)
    workerd_state.py prepare STATE SNAPSHOT.json
    workerd_state.py round STATE warm|cold
    workerd_state.py committed STATE SEQ

`prepare`: STATE is a `--persist-to` directory in which intake created two
tasks, `gh-bench-tick-log-1` (the warm-up) and `gh-bench-tick-log-2` (the
one measured), each named in Workers KV by its `active/{id}` key. Each
task's Durable Object (`TaskStore`: one SQLite table `entries(key,
value)`, functions/cloudflare/src/front/task_object.rs) gets the task keys
of SNAPSHOT.json (written by `tick-log` for task 1; task 2's are the same
with its id). Each checkpoint (`task/{id}/meta`) carries its task's due
time (`dueMs`, which the sweep reads): the warm-up's is 0, the measured
task's the time of `prepare`. So a sweep with a grace of 10^12 ms re-drives
the warm-up's tick only (loading the tick worker's isolate and the Durable
Object's), and the next with a grace of 0 the measured one.

`round`: before a round, on a copy of the prepared state: `cold` leaves the
measured task's checkpoint without its folded state (`resident.seq`
unset, so it does not match the checkpoint's `seq`): the sweep still reads
its due time, and the tick reads, decodes and folds all N entries, as it
does when the checkpoint is missing.
"""

import datetime
import glob
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import time
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


def checkpoint(db, task, change):
    """Rewrites task `task`'s checkpoint in its object's table `db` with `change`."""
    key = f"task/{task}/meta"
    row = db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
    if row is None:
        raise SystemExit(f"no checkpoint {key}")
    meta = json.loads(bytes(row[0]))
    change(meta)
    db.execute("UPDATE entries SET value = ? WHERE key = ?", (json.dumps(meta).encode(), key))


def prepare(state, snapshot_path):
    snapshot = json.load(open(snapshot_path))
    source = snapshot["taskId"]
    if source != WARM_UP:
        raise SystemExit(f"the snapshot is of {source}, not {WARM_UP}")
    prepared_ms = int(time.time() * 1000)
    for task, path in task_objects(state).items():
        db = sqlite3.connect(path)
        db.execute("DELETE FROM entries")
        for key, value in snapshot["store"].items():
            if key.startswith(f"task/{source}/"):
                db.execute("INSERT INTO entries (key, value) VALUES (?, ?)",
                           (key.replace(source, task), value.replace(source, task).encode()))
        due_ms = 0 if task == WARM_UP else prepared_ms
        checkpoint(db, task, lambda meta: meta.update(dueMs=due_ms, quiet=False))
        db.commit()
        db.close()
    kv = kv_db(state)
    for task in (WARM_UP, MEASURED):
        if kv.execute("SELECT 1 FROM _mf_entries WHERE key = ?", (f"active/{task}",)).fetchone() is None:
            raise SystemExit(f"intake left no active/{task} in KV")


def round_(state, mode):
    """`mode` warm or cold before a round."""
    if mode not in ("warm", "cold"):
        raise SystemExit(f"round: `{mode}` is not warm or cold")
    if mode == "cold":
        db = sqlite3.connect(task_objects(state)[MEASURED])
        checkpoint(db, MEASURED, lambda meta: meta["resident"].update(seq=None))
        db.commit()
        db.close()


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
        round_(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "committed":
        committed(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
