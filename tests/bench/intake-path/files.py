#!/usr/bin/env python3
"""The source files a callgrind profile ran code of, and who entered each.

`files.py PROFILE ROOT` reads a callgrind profile written with
`--compress-strings=no --compress-pos=no` and prints, for every file under
ROOT's `shared/` and `functions/` (test code left out: `::tests::`
functions and `test_host.rs`), the instructions it executed itself and the
other files that called into it. A file entered from more than one other
file is marked: the reader of the path comes back to it.
"""
import collections
import sys

path, root = sys.argv[1], sys.argv[2].rstrip('/') + '/'
# Neither the product's path nor a place a reader looks: the test's
# executor and store stand in for a host's.
STAND_INS = ('shared/ports/src/ready.rs', 'shared/ports/src/memory.rs')


def ours(name):
    if not name or not name.startswith(root) or '/target/' in name:
        return False
    rel = name[len(root):]
    return rel.startswith(('shared/', 'functions/')) and rel not in STAND_INS and not rel.endswith('test_host.rs')


def test_code(function):
    return function is None or '::tests::' in function or 'test_host' in function


def our_function(function):
    # Generic code of std and serde inlined into one of our files carries
    # that file's name in the debug info (a `lib.rs` "runs" serde_json's
    # whitespace parser): only our own functions and impls count.
    return function is not None and 'agent_zero_' in function


file_of_fn, fn, current = None, None, None
callee_file = None
after_call = False
executed = collections.Counter()
callers = collections.defaultdict(set)
for line in open(path, errors='replace'):
    line = line.rstrip('\n')
    if line.startswith('fl='):
        file_of_fn = current = line[3:]
    elif line.startswith(('fi=', 'fe=')):
        current = line[3:]
    elif line.startswith('fn='):
        fn, current = line[3:], file_of_fn
    elif line.startswith(('cfl=', 'cfi=')):
        callee_file = line[4:]
    elif line.startswith('cfn='):
        pass
    elif line.startswith('calls='):
        after_call = True
        if (ours(file_of_fn) and not test_code(fn) and our_function(fn) and ours(callee_file)
                and callee_file != file_of_fn):
            callers[callee_file].add(file_of_fn)
    elif line[:1].isdigit():
        if after_call:  # the inclusive cost of the call above, not this function's own
            after_call = False
            continue
        parts = line.split()
        if len(parts) > 1 and ours(current) and not test_code(fn) and our_function(fn):
            executed[current] += int(parts[1])

rel = lambda name: name[len(root):]
crates = sorted({rel(f).split('/src/')[0] for f in executed})
entered_twice = [f for f in executed if len(callers[f]) > 1]
print(f'{len(executed)} files in {len(crates)} crates ({", ".join(crates)}); '
      f'{len(entered_twice)} entered from more than one file')
for f in sorted(executed, key=rel):
    mark = '  <- entered from more than one file' if f in entered_twice else ''
    print(f'{rel(f)}\t{executed[f]} instructions\tfrom: {", ".join(sorted(map(rel, callers[f]))) or "-"}{mark}')
