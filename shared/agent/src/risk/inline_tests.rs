//! Tests that live inside source files: a path is not a test file, yet
//! part of it is a test the change must not rewrite.
//!
//! | language | what is a test |
//! |---|---|
//! | Rust | an item under an attribute that mentions `test` (`#[cfg(test)] mod tests`, `#[test]`, `#[tokio::test]`); the whole file under `#![cfg(test)]`; a fenced block in a `///` or `//!` comment (a doctest) unless it is `text` |
//! | Python | a `>>>` example and its expected output (a doctest) |
//! | Haskell | a `-- >>>` example (doctest) |
//! | Elixir | an `iex>` example (ExUnit `doctest`) |
//! | Julia | a `` ```jldoctest `` block |
//! | Zig, D | a `test` / `unittest` block |
//! | JavaScript, TypeScript | an `if (import.meta.vitest)` block (Vitest in-source tests) |
//!
//! The caller raises a change to `HighImpact(Test)` when it touches one of
//! these lines: [`touches_inline_tests`] with the new content and the
//! added lines, and again with the old content and the removed lines. The
//! scan is textual: a block whose braces never balance runs to the end of
//! the file, so a confused scan claims more lines, not fewer.

use std::ops::RangeInclusive;

/// Whether the file at `path` holds inline tests.
pub fn has_inline_tests(path: &str, content: &str) -> bool {
    !inline_test_lines(path, content).is_empty()
}

/// Whether any of `changed` (1-based line numbers of `content`) lies in an
/// inline test of the file at `path`.
pub fn touches_inline_tests(path: &str, content: &str, changed: &[usize]) -> bool {
    let tests = inline_test_lines(path, content);
    changed.iter().any(|line| tests.iter().any(|range| range.contains(line)))
}

/// The inline tests of the file at `path`, as sorted, disjoint 1-based
/// line ranges of `content`.
pub fn inline_test_lines(path: &str, content: &str) -> Vec<RangeInclusive<usize>> {
    let lower = path.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map_or("", |(_, ext)| ext);
    let lines: Vec<&str> = content.lines().collect();
    let starts = |test: &dyn Fn(&str) -> bool| -> Vec<usize> {
        lines.iter().enumerate().filter(|(_, l)| test(l.trim_start())).map(|(i, _)| i).collect()
    };
    let mut found: Vec<RangeInclusive<usize>> = match ext {
        "rs" => {
            if !starts(&|l| l.starts_with("#![") && attribute(l).contains("cfg(test")).is_empty() {
                // `#![cfg(test)]`: the whole file is a test module.
                return vec![1..=lines.len().max(1)];
            }
            let attributes = starts(&|l| l.starts_with("#[") && attribute(l).contains("test"));
            let mut found: Vec<_> = attributes.into_iter().map(|i| block(content, &lines, i, true)).collect();
            found.extend(fences(&lines, |l| doc_comment(l).map(str::trim_start), |tag| tag != "text"));
            found
        }
        "py" | "pyi" => prompts(&lines, |l| l.starts_with(">>>"), |_| true),
        "hs" | "lhs" => prompts(&lines, |l| l.starts_with("-- >>>"), |l| l.starts_with("--") && l != "--"),
        "ex" | "exs" => prompts(&lines, |l| l.starts_with("iex>") || l.starts_with("iex("), |_| true),
        "jl" => fences(&lines, |l| Some(l.trim_start()), |tag| tag.starts_with("jldoctest")),
        "zig" => brace_blocks(content, &lines, &starts(&|l| l.starts_with("test \"") || l.starts_with("test {"))),
        "d" => brace_blocks(content, &lines, &starts(&|l| l.starts_with("unittest"))),
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => {
            brace_blocks(content, &lines, &starts(&|l| l.contains("import.meta.vitest")))
        }
        _ => vec![],
    };
    found.sort_by_key(|r| *r.start());
    let mut merged: Vec<RangeInclusive<usize>> = vec![];
    for range in found {
        match merged.last_mut() {
            Some(last) if *range.start() <= last.end() + 1 => {
                *last = *last.start()..=(*last.end()).max(*range.end());
            }
            _ => merged.push(range),
        }
    }
    merged
}

/// The text of a Rust attribute line up to its closing `]`.
fn attribute(line: &str) -> &str {
    line.find(']').map_or(line, |end| &line[..end])
}

/// The text of a `///` or `//!` doc-comment line after its marker.
fn doc_comment(line: &str) -> Option<&str> {
    let line = line.trim_start();
    line.strip_prefix("///").or_else(|| line.strip_prefix("//!"))
}

/// Every fenced block (`` ``` `` to `` ``` ``) in the lines `text` accepts,
/// whose opening tag `tested` accepts; inclusive of both fences.
fn fences(
    lines: &[&str],
    text: impl Fn(&str) -> Option<&str>,
    tested: impl Fn(&str) -> bool,
) -> Vec<RangeInclusive<usize>> {
    let mut found = vec![];
    let mut open: Option<(usize, bool)> = None;
    for (i, line) in lines.iter().enumerate() {
        let Some(fence) = text(line).and_then(|t| t.strip_prefix("```")) else {
            // A doc comment that ends closes its block.
            if text(line).is_none()
                && let Some((start, true)) = open.take()
            {
                found.push(start + 1..=i);
            }
            continue;
        };
        match open.take() {
            Some((start, true)) => found.push(start + 1..=i + 1),
            Some((_, false)) => {}
            None => {
                let tag = fence.trim().split([',', ' ']).next().unwrap_or_default();
                open = Some((i, tested(tag)));
            }
        }
    }
    if let Some((start, true)) = open {
        found.push(start + 1..=lines.len());
    }
    found
}

/// Every doctest example: the prompt line `is_prompt` accepts, and the
/// lines `continues` accepts after it (continuation and expected output),
/// up to a blank line or the end of the docstring.
fn prompts(
    lines: &[&str],
    is_prompt: impl Fn(&str) -> bool,
    continues: impl Fn(&str) -> bool,
) -> Vec<RangeInclusive<usize>> {
    let mut found = vec![];
    for (i, line) in lines.iter().enumerate() {
        if !is_prompt(line.trim_start()) {
            continue;
        }
        let mut end = i;
        while let Some(next) = lines.get(end + 1).map(|l| l.trim()) {
            if next.is_empty() || next.starts_with("\"\"\"") || next.starts_with("'''") || !continues(next) {
                break;
            }
            end += 1;
        }
        found.push(i + 1..=end + 1);
    }
    found
}

fn brace_blocks(content: &str, lines: &[&str], starts: &[usize]) -> Vec<RangeInclusive<usize>> {
    starts.iter().map(|&i| block(content, lines, i, false)).collect()
}

/// The item that begins on line `first` (0-based): up to the `}` matching
/// its first `{`, or (for Rust, `semicolon`) a `;` before any `{`.
fn block(content: &str, lines: &[&str], first: usize, semicolon: bool) -> RangeInclusive<usize> {
    let offset = match first {
        0 => 0,
        _ => content.match_indices('\n').nth(first - 1).map_or(content.len(), |(at, _)| at + 1),
    };
    let end = block_end(&content[offset..], semicolon).map_or(content.len(), |end| offset + end);
    let last_line = content[..end].matches('\n').count();
    first + 1..=(last_line + 1).min(lines.len()).max(first + 1)
}

/// The byte offset in `text` where the first item ends, skipping strings,
/// character literals and comments; `None` when it never does.
fn block_end(text: &str, semicolon: bool) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = text[i..].find('\n').map_or(bytes.len(), |n| i + n),
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + n + 3),
            b'"' => i = skip_string(bytes, i + 1),
            // `'x'` and `'\n'` are characters; `'a` is a lifetime.
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i = text[i + 3..].find('\'').map_or(bytes.len(), |n| i + 3 + n)
            }
            b'{' => depth += 1,
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b';' if semicolon && depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the `"` that closes a string opened before `i`.
fn skip_string(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i] != b'"' {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    i
}

#[cfg(test)]
#[path = "inline_tests_tests.rs"]
mod tests;
