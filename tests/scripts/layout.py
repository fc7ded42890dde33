#!/usr/bin/env python3
"""Names a wasm module's functions for a layout that compresses better.

Usage: layout.py IN.wasm OUT.wasm

gzip finds repeats only within its last 32 KiB, so the order of a module's
functions decides how many of its similar bodies compress against each
other. rustc and wasm-bindgen leave them in link order. This script rewrites the module's `name` section so that sorting by
name (binaryen's `wasm-opt --reorder-functions-by-name`, which renumbers
every call, table and export itself) groups the functions by the crate
their symbol name starts with (for an impl, the `Self` type's crate) and,
within a crate, by their body bytes, so bodies that start alike sit side by side:
monomorphs of one generic, the serde visitors of one crate, async state
machines with the same prologue. Nothing but the names changes;
the build strips the names afterwards (`--strip-debug`).

Measured (gzip -9, 2026-12-04), worker after wasm-bindgen: as emitted
701,919 B, by name 688,549 B, by `crate::module` and body 685,771 B, by
crate and body 684,409 B; Spin component: 705,654 B, by name 681,994 B, by
crate and body 677,782 B (README, "Size").
"""

import re
import sys


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


def legacy_demangle(name):
    """`crate::module::...` of a legacy-mangled (`_ZN...E`) symbol."""
    if not name.startswith("_ZN"):
        return name
    parts, at = [], 3
    while at < len(name) and name[at].isdigit():
        digits = at
        while name[at].isdigit():
            at += 1
        length = int(name[digits:at])
        parts.append(name[at : at + length])
        at += length
    text = "::".join(parts)
    for escape, char in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("..", "::")):
        text = text.replace(escape, char)
    return text


def group(name):
    """The crate: the first path segment, past any `<`, `&`, `mut ` or `dyn `."""
    path = re.sub(r"^(?:[<&_ ]|mut |dyn )+", "", legacy_demangle(name))
    match = re.match(r"[A-Za-z0-9_]+", path)
    return match.group(0) if match else ""


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
    order = sorted(entries, key=lambda entry: (group(entry[1]), bodies.get(entry[0], b""), entry[0]))
    rank = {index: position for position, (index, _) in enumerate(order)}
    payload = bytearray(uleb(len(entries)))
    for index, _ in entries:
        name = b"%08d" % rank[index]
        payload += uleb(index) + uleb(len(name)) + name
    return b"\x01" + uleb(len(payload)) + bytes(payload)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: layout.py IN.wasm OUT.wasm")
    main(sys.argv[1], sys.argv[2])
