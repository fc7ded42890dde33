#!/usr/bin/env python3
"""Checks tests/scripts/optimize.sh on a small module with Rust-style symbol
names: after it, the functions stand in layout order (by crate, then by
body), the names are gone, and every export and table entry answers as
before (run in node's V8). tests/scripts/test.sh runs it beside the builds.

Usage: optimize_test.py   (needs wasm-tools, node and optimize.sh's tools)
"""

import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import layout  # noqa: E402  (the same parser optimize.sh's layout step uses)

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Four functions of two crates in an order the layout must change, each
# exported (so -O2 keeps it) and two of them in the table; `run` calls all
# of them, one through the table.
WAT = """
(module
  (type $i (func (result i32)))
  (table (export "table") 2 funcref)
  (elem (i32.const 0) $_ZN4beta3two17h0000000000000002E $_ZN5alpha3one17h0000000000000001E)
  (func $_ZN4beta3two17h0000000000000002E (export "beta_two") (result i32) i32.const 20)
  (func $_ZN5alpha3one17h0000000000000001E (export "alpha_one") (result i32) i32.const 1)
  (func $_ZN4beta3one17h0000000000000003E (export "beta_one") (result i32) i32.const 10)
  (func $_ZN5alpha3two17h0000000000000004E (export "alpha_two") (result i32) i32.const 2)
  (func $_ZN3run3run17h0000000000000005E (export "run") (result i32)
    call $_ZN4beta3two17h0000000000000002E
    call $_ZN5alpha3one17h0000000000000001E
    i32.const 100 i32.mul i32.add
    (call_indirect (type $i) (i32.const 1)) i32.const 1000 i32.mul i32.add
    call $_ZN5alpha3two17h0000000000000004E i32.const 10000 i32.mul i32.add
    call $_ZN4beta3one17h0000000000000003E i32.const 100000 i32.mul i32.add)
)
"""

# Every export's answer and each table entry's, as JSON.
ANSWERS = """
const bytes = require("fs").readFileSync(process.argv[1]);
WebAssembly.instantiate(bytes).then(({ instance }) => {
  const out = {};
  for (const [name, value] of Object.entries(instance.exports)) {
    if (typeof value === "function") out[name] = value();
  }
  const table = instance.exports.table;
  for (let i = 0; i < table.length; i++) out[`table[${i}]`] = table.get(i)();
  console.log(JSON.stringify(out));
});
"""


def answers(module):
    result = subprocess.run(["node", "-e", ANSWERS, str(module)], check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


def custom_section_names(data):
    names = []
    for kind, _, start, _ in layout.sections(data):
        if kind == 0:
            length, at = layout.read_uleb(data, start)
            names.append(data[at : at + length].decode())
    return names


def export_indices(data):
    """{export name: function index} of the module's function exports."""
    exports = {}
    for kind, _, start, _ in layout.sections(data):
        if kind == 7:
            count, at = layout.read_uleb(data, start)
            for _ in range(count):
                length, at = layout.read_uleb(data, at)
                name = data[at : at + length].decode()
                at += length
                what = data[at]
                index, at = layout.read_uleb(data, at + 1)
                if what == 0:
                    exports[name] = index
    return exports


def main():
    with tempfile.TemporaryDirectory() as work:
        source = pathlib.Path(work, "module.wat")
        source.write_text(WAT)
        before = pathlib.Path(work, "before.wasm")
        subprocess.run(["wasm-tools", "parse", str(source), "-o", str(before)], check=True)
        after = pathlib.Path(work, "after.wasm")
        after.write_bytes(before.read_bytes())
        subprocess.run(["bash", str(ROOT / "tests/scripts/optimize.sh"), str(after)], check=True)
        data = after.read_bytes()

        failures = []
        expected = {
            "alpha_one": 1,
            "alpha_two": 2,
            "beta_one": 10,
            "beta_two": 20,
            "run": 1_021_120,
            "table[0]": 20,
            "table[1]": 1,
        }
        answered_before, answered_after = answers(before), answers(after)
        if answered_before != expected:
            failures.append(f"the fixture itself answers {answered_before}, not {expected}")
        if answered_after != expected:
            failures.append(f"after optimize.sh the module answers {answered_after}, not {expected}")
        if "name" in custom_section_names(data):
            failures.append("the name section is still there")
        order = sorted(export_indices(data).items(), key=lambda item: item[1])
        laid_out = [name for name, _ in order]
        if laid_out != ["alpha_one", "alpha_two", "beta_one", "beta_two", "run"]:
            failures.append(f"functions in the order {laid_out}, not by crate and then body")
        for failure in failures:
            print(f"optimize_test: FAIL: {failure}", file=sys.stderr)
        # In libtest's form, so test.sh's summary counts it.
        if failures:
            print("test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out")
            sys.exit(1)
        print("optimize_test: layout by crate and body, names stripped, answers unchanged")
        print("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out")


if __name__ == "__main__":
    main()
