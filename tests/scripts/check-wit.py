#!/usr/bin/env python3
"""Checks a built component against a world of wit/world.wit.

Usage: check-wit.py <component.wasm> <world-name>

Lists the component's imports and exports with `wasm-tools component wit`
and compares them with the world's. WASI 0.2.x interfaces are compared by
package, interface and major.minor (0.2), the way hosts link them
semver-compatibly; a pre-release such as `wasi:keyvalue/atomics@0.2.0-draft2`
and everything else must match exactly. Fails, naming each
difference, when the component imports anything the world does not allow or
exports something else.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
ITEM = re.compile(r"^\s*(import|export)\s+([a-z0-9-]+:[a-z0-9-]+/[a-z0-9-]+)(?:@([0-9A-Za-z.+-]+))?\s*;")


def compat(version):
    """The part of `version` a host links by: 0.2 for any 0.2.x, the whole
    version for a pre-release (`0.2.0-draft2` links to nothing else)."""
    if version is None:
        return None
    if "-" in version:
        return version
    parts = version.split(".")
    return ".".join(parts[:2]) if parts[0] == "0" else parts[0]


def items(lines):
    found = set()
    for line in lines:
        m = ITEM.match(line)
        if m:
            kind, name, version = m.groups()
            found.add((kind, name, compat(version)))
    return found


def world_items(name):
    text = (ROOT / "wit" / "world.wit").read_text()
    m = re.search(r"world\s+" + re.escape(name) + r"\s*\{(.*?)\n\}", text, re.S)
    if not m:
        sys.exit(f"check-wit: world `{name}` not found in wit/world.wit")
    return items(m.group(1).splitlines())


def component_items(path):
    out = subprocess.run(
        ["wasm-tools", "component", "wit", str(path)], check=True, capture_output=True, text=True
    ).stdout
    # Only the component's own world (the first `world` block), not the
    # packages printed after it.
    m = re.search(r"world\s+[a-z0-9-]+\s*\{(.*?)\n\}", out, re.S)
    return items(m.group(1).splitlines()) if m else set()


def main():
    component, world = sys.argv[1], sys.argv[2]
    allowed = world_items(world)
    actual = component_items(component)
    fmt = lambda i: f"{i[0]} {i[1]}@{i[2]}"
    extra = sorted(actual - allowed)
    missing_exports = sorted(i for i in allowed - actual if i[0] == "export")
    for item in extra:
        print(f"check-wit: {component} has `{fmt(item)}`, which world `{world}` does not allow", file=sys.stderr)
    for item in missing_exports:
        print(f"check-wit: {component} lacks `{fmt(item)}`, which world `{world}` requires", file=sys.stderr)
    if extra or missing_exports:
        sys.exit(1)
    unused = sorted(i for i in allowed - actual if i[0] == "import")
    print(f"check-wit: {pathlib.Path(component).name} targets `{world}`: "
          f"{len(actual)} imports/exports allowed" + (f", {len(unused)} allowed imports unused" if unused else ""))


if __name__ == "__main__":
    main()
