#!/usr/bin/env python3
"""Checks tests/scripts/optimize.sh on a small module with Rust-style symbol
names: after it the names are gone, and every export and table entry
answers as before (run in node's V8). tests/scripts/test.sh runs it beside
the builds.

Usage: optimize_test.py   (needs wasm-tools, node and optimize.sh's tools)
"""

import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Two pairs of alike functions, each pair split across two crates: each
# pair runs one arithmetic chain over a load from memory (which -O2 cannot
# fold), the pairs different chains. Each is exported (so -O2 keeps it) and
# two are in the table; `run` calls three of them, one through the table.
WAT = """
(module
  (type $i (func (result i32)))
  (memory 1)
  (table (export "table") 2 funcref)
  (elem (i32.const 0) $_ZN5alpha3two17h0000000000000002E $_ZN4beta3one17h0000000000000003E)
  (func $_ZN5alpha3one17h0000000000000001E (export "x_one") (result i32)
    (i32.add (i32.mul (i32.add (i32.mul (i32.load (i32.const 0)) (i32.const 3)) (i32.const 5)) (i32.const 7))
      (i32.const 1)))
  (func $_ZN5alpha3two17h0000000000000002E (export "y_one") (result i32)
    (i32.sub (i32.xor (i32.shl (i32.xor (i32.load (i32.const 8)) (i32.const 9)) (i32.const 2)) (i32.const 11))
      (i32.const 30)))
  (func $_ZN4beta3one17h0000000000000003E (export "x_two") (result i32)
    (i32.add (i32.mul (i32.add (i32.mul (i32.load (i32.const 0)) (i32.const 3)) (i32.const 5)) (i32.const 7))
      (i32.const 2)))
  (func $_ZN4beta3two17h0000000000000004E (export "y_two") (result i32)
    (i32.sub (i32.xor (i32.shl (i32.xor (i32.load (i32.const 8)) (i32.const 9)) (i32.const 2)) (i32.const 11))
      (i32.const 40)))
  (func $_ZN3run3run17h0000000000000005E (export "run") (result i32)
    call $_ZN5alpha3one17h0000000000000001E
    call $_ZN4beta3two17h0000000000000004E
    i32.const 100 i32.mul i32.add
    (call_indirect (type $i) (i32.const 1)) i32.const 10000 i32.mul i32.add)
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


def read_uleb(data, at):
    """An unsigned LEB128 at `at`: (value, the offset after it)."""
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def custom_section_names(data):
    """The names of the module's custom sections."""
    names = []
    at = 8  # after the magic number and the version
    while at < len(data):
        kind = data[at]
        size, start = read_uleb(data, at + 1)
        if kind == 0:
            length, name_at = read_uleb(data, start)
            names.append(data[name_at : name_at + length].decode())
        at = start + size
    return names


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
            "x_one": 36,
            "x_two": 37,
            "y_one": 17,
            "y_two": 7,
            "run": 370_736,
            "table[0]": 17,
            "table[1]": 37,
        }
        answered_before, answered_after = answers(before), answers(after)
        if answered_before != expected:
            failures.append(f"the fixture itself answers {answered_before}, not {expected}")
        if answered_after != expected:
            failures.append(f"after optimize.sh the module answers {answered_after}, not {expected}")
        if "name" in custom_section_names(data):
            failures.append("the name section is still there")
        for failure in failures:
            print(f"optimize_test: FAIL: {failure}", file=sys.stderr)
        # In libtest's form, so test.sh's summary counts it.
        if failures:
            print("test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out")
            sys.exit(1)
        print("optimize_test: names stripped, answers unchanged")
        print("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out")


if __name__ == "__main__":
    main()
