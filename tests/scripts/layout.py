#!/usr/bin/env python3
"""Names a wasm module's functions for a layout that compresses better.

Usage: layout.py IN.wasm OUT.wasm

gzip finds repeats only within its last 32 KiB, so the order of a module's
functions decides how many of its similar bodies compress against each
other. rustc and wasm-bindgen leave them in link order. This script
rewrites the module's `name` section so that sorting by name (binaryen's
`wasm-opt --reorder-functions-by-name`, which renumbers every call, table
and export itself) chains the functions by likeness: after each function
comes the one, of those not yet placed, whose body shares the most 4-byte
sequences with it, measured against both bodies' sizes. Monomorphs of one
generic, serde visitors, async state machines and drop glue end up beside
their kin whichever crate they came from. Nothing but the names changes;
the build strips the names afterwards (`--strip-debug`).

Measured (gzip -9, 2026-12-05), the worker after wasm-bindgen and the
Spin component: by crate and body 628,517 B and 588,325 B, chained by
likeness 612,652 B (-15.9 KB) and 576,082 B (-12.2 KB). Earlier
(2026-12-04): as emitted 701,919 B, by name 688,549 B, by crate and body
684,409 B on the worker (docs/size.md).
"""

import sys
import zlib


def uleb(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_uleb(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def sections(data):
    """(id, start of the section, start of its payload, end) in order."""
    if data[:4] != b"\0asm" or data[4:8] != b"\x01\0\0\0":
        raise SystemExit("layout.py: not a core wasm module (version 1)")
    at = 8
    while at < len(data):
        start = at
        kind = data[at]
        size, at = read_uleb(data, at + 1)
        yield kind, start, at, at + size
        at += size


def imported_functions(data, start):
    count, at = read_uleb(data, start)
    functions = 0
    for _ in range(count):
        for _ in range(2):  # module and field names
            length, at = read_uleb(data, at)
            at += length
        kind = data[at]
        at += 1
        if kind == 0:  # function: type index
            _, at = read_uleb(data, at)
            functions += 1
        elif kind == 1:  # table: reftype, limits
            at += 1
            flags, at = read_uleb(data, at)
            _, at = read_uleb(data, at)
            if flags & 1:
                _, at = read_uleb(data, at)
        elif kind == 2:  # memory: limits
            flags, at = read_uleb(data, at)
            _, at = read_uleb(data, at)
            if flags & 1:
                _, at = read_uleb(data, at)
        elif kind == 3:  # global: valtype, mutability
            at += 2
        elif kind == 4:  # tag: attribute, type index
            at += 1
            _, at = read_uleb(data, at)
        else:
            raise SystemExit(f"layout.py: unknown import kind {kind}")
    return functions


def function_bodies(data, start, first_index):
    count, at = read_uleb(data, start)
    bodies = {}
    for index in range(first_index, first_index + count):
        size, at = read_uleb(data, at)
        bodies[index] = data[at : at + size]
        at += size
    return bodies


def main(source, target):
    data = open(source, "rb").read()
    imports, bodies, names = 0, {}, None
    for kind, _, start, end in sections(data):
        if kind == 2:
            imports = imported_functions(data, start)
        elif kind == 10:
            bodies = function_bodies(data, start, imports)
    out = bytearray(data[:8])
    for kind, section_start, start, end in sections(data):
        if kind == 0:
            length, at = read_uleb(data, start)
            if data[at : at + length] == b"name":
                names = rewrite_names(data, at + length, end, bodies)
                payload = uleb(4) + b"name" + names
                out += b"\0" + uleb(len(payload)) + payload
                continue
        out += data[section_start:end]
    if names is None:
        raise SystemExit(f"layout.py: {source} has no name section (build it without stripping symbols)")
    open(target, "wb").write(out)


def rewrite_names(data, at, end, bodies):
    """The `name` section's payload with the function names replaced by
    their rank in the layout (zero-padded, so sorting by name is by rank);
    other subsections are dropped (the build strips them anyway)."""
    entries = None
    while at < end:
        subsection = data[at]
        size, at = read_uleb(data, at + 1)
        if subsection == 1:
            count, cursor = read_uleb(data, at)
            entries = []
            for _ in range(count):
                index, cursor = read_uleb(data, cursor)
                length, cursor = read_uleb(data, cursor)
                entries.append((index, data[cursor : cursor + length].decode("utf-8", "replace")))
                cursor += length
        at += size
    if not entries:
        raise SystemExit("layout.py: the name section names no functions")
    order = chained_by_likeness([index for index, _ in entries], bodies)
    rank = {index: position for position, index in enumerate(order)}
    payload = bytearray(uleb(len(entries)))
    for index, _ in entries:
        name = b"%08d" % rank[index]
        payload += uleb(index) + uleb(len(name)) + name
    return b"\x01" + uleb(len(payload)) + bytes(payload)


# A sequence found in more functions than this says nothing about which
# are alike (prologues, common epilogues); skipping it keeps each step short.
COMMON = 2000


def sequences(body):
    """The distinct 4-byte sequences of `body`, each hashed to 20 bits (as
    measured, the collisions cost nothing: 0.2 KB and 1.2 KB smaller than
    exact sequences, which is noise of the greedy choice)."""
    return {zlib.crc32(body[at : at + 4]) & 0xFFFFF for at in range(len(body) - 3)}


def chained_by_likeness(indices, bodies):
    """`indices` in layout order. It starts from the function whose body
    sorts first; each next one is the unplaced function whose body shares
    the most 4-byte sequences with the one just placed, relative to both
    sizes (shared / (|a| + |b| + 1)), ties to the lower index; when none
    shares any, the next unplaced one in body order."""
    by_body = sorted(indices, key=lambda index: (bodies.get(index, b""), index))
    shingles = {index: sequences(bodies.get(index, b"")) for index in by_body}
    holders = {}
    for index in by_body:
        for sequence in shingles[index]:
            holders.setdefault(sequence, []).append(index)
    placed, order, fallback = set(), [], 0
    current = by_body[0] if by_body else None
    while current is not None:
        placed.add(current)
        order.append(current)
        mine = shingles[current]
        shared = {}
        for sequence in mine:
            holding = holders[sequence]
            if len(holding) <= COMMON:
                for other in holding:
                    if other not in placed:
                        shared[other] = shared.get(other, 0) + 1
        if shared:
            current = max(shared, key=lambda other: (shared[other] / (len(shingles[other]) + len(mine) + 1), -other))
            continue
        while fallback < len(by_body) and by_body[fallback] in placed:
            fallback += 1
        current = by_body[fallback] if fallback < len(by_body) else None
    return order


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: layout.py IN.wasm OUT.wasm")
    main(sys.argv[1], sys.argv[2])
