#!/usr/bin/env python3
"""What `spin deploy --build` does before it uploads, offline (no spin CLI,
no account, no network): the README's Spin deploy runs it.

Spin's `spin build` runs each component's `[component.<id>.build]` command
through the shell, in the build's `workdir` (relative to the manifest) or
else the manifest's directory; `spin deploy` then uploads each component's
`source`. This runs those commands and checks each source is a file, after
checking the manifest as Spin reads it: against Spin's published JSON
schema of manifest v2 (tests/fixtures/spin-manifest/, with its source and
licence), then what the schema cannot say and Spin refuses too: a version
other than 2, a trigger naming a component that does not exist, a
component variable whose `{{ name }}` is not an application variable
(https://spinframework.dev/v3/manifest-reference).

Usage: tests/scripts/spin_build.py [spin.toml]; exits non-zero naming what
failed.
"""

import json
import pathlib
import re
import subprocess
import sys
import tomllib


SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "fixtures/spin-manifest/manifest-v2.schema.json"


def problems(manifest: dict) -> list[str]:
    """What Spin would refuse in `manifest` before building it."""
    try:
        import jsonschema
    except ImportError:
        return ["python's jsonschema is missing; install it with: bash tests/scripts/install-tools.sh all"]
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))
    found = [
        f"{'.'.join(str(p) for p in error.absolute_path) or 'the manifest'}: {error.message}"
        for error in sorted(validator.iter_errors(manifest), key=lambda e: list(map(str, e.absolute_path)))
    ]
    if manifest.get("spin_manifest_version") != 2:
        found.append("spin_manifest_version is not 2")
    if not manifest.get("application", {}).get("name"):
        found.append("[application] has no name")
    components = manifest.get("component", {})
    if not components:
        found.append("no [component.<id>]")
    for kind, triggers in manifest.get("trigger", {}).items():
        for trigger in triggers:
            if trigger.get("component") not in components:
                found.append(f"a [[trigger.{kind}]] names component {trigger.get('component')!r}, which is not defined")
    variables = manifest.get("variables", {})
    for name, component in components.items():
        if not isinstance(component.get("source"), (str, dict)):
            found.append(f"component {name} has no source")
        for key, template in component.get("variables", {}).items():
            for used in re.findall(r"\{\{\s*([a-z0-9_]+)\s*\}\}", template):
                if used not in variables:
                    found.append(f"component {name}: variable {key} uses {{{{ {used} }}}}, not an application variable")
    return found


def main() -> int:
    path = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "spin.toml").resolve()
    manifest = tomllib.loads(path.read_text())
    wrong = problems(manifest)
    for problem in wrong:
        print(f"spin_build: {path.name}: {problem}", file=sys.stderr)
    if wrong:
        return 1
    for name, component in manifest["component"].items():
        build = component.get("build")
        if build is None:
            continue
        commands = build["command"] if isinstance(build["command"], list) else [build["command"]]
        workdir = path.parent / build.get("workdir", ".")
        for command in commands:
            print(f"spin_build: {name}: {command} (in {workdir})", file=sys.stderr)
            if subprocess.run(command, shell=True, cwd=workdir, check=False).returncode != 0:
                print(f"spin_build: {name}: `{command}` failed", file=sys.stderr)
                return 1
    for name, component in manifest["component"].items():
        source = component["source"]
        # A table is a registry or URL source: Spin fetches it, nothing to build.
        if isinstance(source, str) and not (path.parent / source).is_file():
            print(f"spin_build: {name}: its source {source} is not a file after the build", file=sys.stderr)
            return 1
    print(f"spin_build: {path.name}: built; every component's source is there", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
