use super::*;

const RUST: &str = r#"//! Arithmetic.
//!
//! ```
//! assert_eq!(calc::add(1, 2), 3);
//! ```

/// Adds.
pub fn add(a: i32, b: i32) -> i32 {
    let braces = "}}}";
    let c = '}';
    a + b
}

/// ```text
/// not a test
/// ```
pub fn sub(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3); // }
    }
}

pub fn after() {}
"#;

#[test]
fn rust_test_modules_and_doctests() {
    assert_eq!(inline_test_lines("src/calc.rs", RUST), [3..=5, 21..=29]);
    assert!(has_inline_tests("src/calc.rs", RUST));
    assert!(touches_inline_tests("src/calc.rs", RUST, &[27]));
    assert!(!touches_inline_tests("src/calc.rs", RUST, &[9, 12, 15, 31]));
    // An out-of-line module ends at its `;`.
    let decl = "pub fn f() {}\n\n#[cfg(test)]\n#[path = \"f_tests.rs\"]\nmod tests;\n\npub fn g() {}\n";
    assert_eq!(inline_test_lines("src/f.rs", decl), [3..=5]);
    // `#![cfg(test)]` makes the whole file a test.
    assert_eq!(inline_test_lines("src/support.rs", "#![cfg(test)]\n\npub fn helper() {}\n"), [1..=3]);
    // Braces that never balance claim the rest of the file.
    assert_eq!(inline_test_lines("src/x.rs", "fn a() {}\n#[test]\nfn b() {\n  {\n"), [2..=4]);
    assert!(!has_inline_tests("src/lib.rs", "pub fn f() {}\n// #[test] in a comment is not an attribute\n"));
}

#[test]
fn doctest_prompts_of_python_elixir_and_haskell() {
    let python = "def add(a, b):\n    \"\"\"Add.\n\n    >>> add(1, 2)\n    3\n    \"\"\"\n    return a + b\n";
    assert_eq!(inline_test_lines("calc.py", python), [4..=5]);
    assert!(touches_inline_tests("calc.py", python, &[5]) && !touches_inline_tests("calc.py", python, &[7]));
    let elixir = "  @doc \"\"\"\n  iex> Calc.add(1, 2)\n  3\n\n  \"\"\"\n  def add(a, b), do: a + b\n";
    assert_eq!(inline_test_lines("lib/calc.ex", elixir), [2..=3]);
    assert_eq!(inline_test_lines("src/Calc.hs", "-- | Add.\n-- >>> add 1 2\n-- 3\nadd a b = a + b\n"), [2..=3]);
    assert!(!has_inline_tests("calc.py", "def add(a, b):\n    return a + b  # >>> not at the start\n"));
}

#[test]
fn test_blocks_of_zig_d_julia_and_vitest() {
    let zig = "pub fn add(a: i32, b: i32) i32 {\n    return a + b;\n}\n\ntest \"add\" {\n    try expect(add(1, 2) == 3);\n}\n";
    assert_eq!(inline_test_lines("src/calc.zig", zig), [5..=7]);
    assert_eq!(
        inline_test_lines(
            "calc.d",
            "int add(int a, int b) { return a + b; }\nunittest {\n  assert(add(1, 2) == 3);\n}\n"
        ),
        [2..=4]
    );
    let julia = "\"\"\"\n```jldoctest\njulia> add(1, 2)\n3\n```\n\"\"\"\nadd(a, b) = a + b\n";
    assert_eq!(inline_test_lines("src/Calc.jl", julia), [2..=5]);
    let vitest = "export const add = (a, b) => a + b;\n\nif (import.meta.vitest) {\n  const { it } = import.meta.vitest;\n  it('adds', () => {});\n}\n";
    assert_eq!(inline_test_lines("src/calc.ts", vitest), [3..=6]);
    assert!(!has_inline_tests("src/calc.go", "func Add(a, b int) int { return a + b }\n"));
}
