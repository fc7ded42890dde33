//! `.agent-zero.yml` text to a tree of YAML nodes, each with its position.
//!
//! A strict subset of YAML, read line by line: block mappings and
//! sequences (a sequence may sit at its key's indentation), flow `[]` and
//! `{}`, plain, quoted and block scalars with YAML's folding, comments,
//! one document with optional `---`/`...`. Scalars keep whether they were
//! plain, since only plain scalars resolve to null, booleans and numbers.
//! Aliases, tags, complex keys, directives, tab indentation and a second
//! document are refused with their line: a policy has no use for them,
//! and an alias is the one YAML feature that lets a small file expand
//! into a large value. Anything outside the subset is refused, never read
//! differently than YAML reads it; `yaml_oracle.rs` (tests only) checks
//! that against a full YAML parser. Characters and scalars are in
//! `yaml_scan.rs`.

use super::PolicyError;
use super::yaml_scan::{Mark, Scanner, error, is_blank_or_end};

/// Deepest nesting accepted; a policy nests three levels.
const MAX_DEPTH: usize = 32;

/// One YAML node and where it starts (1-based line and column).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Node {
    pub(super) value: Value,
    pub(super) line: usize,
    pub(super) column: usize,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// A scalar's text; `plain` when it was written without quotes or a
    /// block indicator.
    Scalar {
        text: String,
        plain: bool,
    },
    Sequence(Vec<Node>),
    /// Entries in file order; keys are scalars.
    Mapping(Vec<(Node, Node)>),
}

impl Node {
    /// A plain scalar that YAML's core schema reads as null (`~`, `null`,
    /// or nothing at all).
    pub(super) fn is_null(&self) -> bool {
        matches!(&self.value, Value::Scalar { text, plain: true } if is_null(text))
    }

    /// The value of `key` in a mapping.
    pub(super) fn get(&self, key: &str) -> Option<&Self> {
        let Value::Mapping(entries) = &self.value else { return None };
        entries.iter().find(|(k, _)| matches!(&k.value, Value::Scalar { text, .. } if text == key)).map(|(_, v)| v)
    }

    /// The tree of a JSON value, as a policy file would spell it: strings
    /// quoted, everything else plain (serde_json writes each number in a
    /// form the core schema reads as one). No position: a record has no
    /// lines.
    pub(super) fn from_json(value: &serde_json::Value) -> Self {
        use serde_json::Value as Json;
        let scalar = |text: String, plain| Value::Scalar { text, plain };
        let value = match value {
            Json::Null => scalar("null".into(), true),
            Json::Bool(value) => scalar(value.to_string(), true),
            Json::Number(number) => scalar(number.to_string(), true),
            Json::String(text) => scalar(text.clone(), false),
            Json::Array(items) => Value::Sequence(items.iter().map(Self::from_json).collect()),
            Json::Object(entries) => Value::Mapping(
                entries
                    .iter()
                    .map(|(key, value)| {
                        (Self { value: scalar(key.clone(), false), line: 0, column: 0 }, Self::from_json(value))
                    })
                    .collect(),
            ),
        };
        Self { value, line: 0, column: 0 }
    }
}

/// The core schema's null spellings of a plain scalar.
pub(super) fn is_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// The document of `text`, or `None` for a stream without one (empty, or
/// only comments).
pub(super) fn load(text: &str) -> Result<Option<Node>, PolicyError> {
    let mut s = Scanner::new(text)?;
    s.skip_lines()?;
    skip_document_ends(&mut s)?;
    if s.at_end() {
        return Ok(None);
    }
    if s.col == 0 && s.peek() == '%' {
        return Err(s.error("directives (`%`) are not supported in a policy file"));
    }
    let document = if s.at_marker("---") {
        for _ in 0..3 {
            s.bump();
        }
        value(&mut s, -1, 0, Opener::Document)?
    } else {
        node_here(&mut s, -1, 0)?
    };
    let ended = skip_document_ends(&mut s)?;
    if s.at_end() {
        Ok(Some(document))
    } else if ended || s.at_marker("---") {
        Err(s.error("a policy file holds one YAML document; found a second"))
    } else {
        Err(s.found("unexpected", "after the document"))
    }
}

/// Moves over `...` lines; whether there was one.
fn skip_document_ends(s: &mut Scanner) -> Result<bool, PolicyError> {
    let mut found = false;
    while s.at_marker("...") {
        for _ in 0..3 {
            s.bump();
        }
        s.finish()?;
        found = true;
    }
    Ok(found)
}

/// What a value follows, for where YAML places it when it is empty.
#[derive(Clone, Copy, PartialEq)]
enum Opener {
    /// `key:`, at the `:`.
    Key(Mark),
    /// `-`, after it and the blanks and comment on its line.
    Item(Mark),
    /// `---`, at whatever comes next.
    Document,
}

fn leaf(text: String, plain: bool, (line, col): Mark, depth: usize) -> Result<Node, PolicyError> {
    if depth > MAX_DEPTH {
        return Err(error((line, col), "nested deeper than 32 levels"));
    }
    Ok(Node { value: Value::Scalar { text, plain }, line, column: col + 1 })
}

fn branch(value: Value, (line, col): Mark) -> Node {
    Node { value, line, column: col + 1 }
}

/// The value after an indicator (`key:`, `-`, `---`) inside a block
/// collection indented at `parent`: on the same line, on the lines below
/// indented deeper, a sequence at a key's own indentation, or empty.
fn value(s: &mut Scanner, parent: isize, depth: usize, opener: Opener) -> Result<Node, PolicyError> {
    if s.skip_blanks() && !matches!(s.peek(), '#' | '\n' | '\r' | '\0') {
        return Err(s.error("a tab before a value; YAML separates with spaces"));
    }
    if !matches!(s.peek(), '#' | '\n' | '\r' | '\0') {
        return match opener {
            Opener::Item(_) => node_here(s, parent, depth),
            _ if s.peek() == '-' && is_blank_or_end(s.peek_at(1)) => {
                Err(s.error("a block sequence may not start on the line of its key or `---`"))
            }
            _ => {
                let node = inline_or_block_scalar(s, parent, depth)?;
                s.finish()?;
                Ok(node)
            }
        };
    }
    s.skip_lines()?;
    let indent = s.indent();
    if indent > parent {
        return node_here(s, parent, depth);
    }
    if matches!(opener, Opener::Key(_)) && indent == parent && at_item(s) {
        return sequence(s, parent as usize, depth, true);
    }
    let mark = match opener {
        Opener::Key(mark) | Opener::Item(mark) => mark,
        Opener::Document => s.end_mark(),
    };
    leaf(String::new(), true, mark, depth)
}

/// `-` before a blank: a block sequence entry.
fn at_item(s: &Scanner) -> bool {
    s.peek() == '-' && is_blank_or_end(s.peek_at(1))
}

/// The block node at the cursor, the first content of its line or after
/// `- `: a sequence, a mapping (a scalar followed by `:`), or a scalar or
/// flow collection.
fn node_here(s: &mut Scanner, parent: isize, depth: usize) -> Result<Node, PolicyError> {
    let start = s.mark();
    if at_item(s) {
        return sequence(s, start.1, depth, false);
    }
    if matches!(s.peek(), '|' | '>') {
        let node = inline_or_block_scalar(s, parent, depth)?;
        s.finish()?;
        return Ok(node);
    }
    let node = inline(s, parent, depth, false)?;
    let scalar = matches!(node.value, Value::Scalar { .. });
    s.skip_blanks();
    if s.peek() == ':' && is_blank_or_end(s.peek_at(1)) && (node.line == s.line || !scalar) {
        return mapping(s, start, depth, node);
    }
    s.finish()?;
    Ok(node)
}

/// A block scalar, or the node `inline` reads.
fn inline_or_block_scalar(s: &mut Scanner, parent: isize, depth: usize) -> Result<Node, PolicyError> {
    if matches!(s.peek(), '|' | '>') {
        let (text, mark) = s.block_scalar(parent)?;
        return leaf(text, false, mark, depth);
    }
    inline(s, parent, depth, false)
}

/// A block mapping whose first key (already read) starts at `start`; the
/// cursor is at that key's `:`.
fn mapping(s: &mut Scanner, start: Mark, depth: usize, first: Node) -> Result<Node, PolicyError> {
    let indent = start.1;
    let mut entries = Vec::new();
    let mut key = first;
    loop {
        check_key(s, &key, depth)?;
        let colon = s.mark();
        s.bump();
        let value = value(s, indent as isize, depth + 1, Opener::Key(colon))?;
        entries.push((key, value));
        let next = s.indent();
        if next < indent as isize {
            return Ok(branch(Value::Mapping(entries), start));
        }
        if next > indent as isize {
            return Err(s.error("this line is indented deeper than the mapping it belongs to"));
        }
        if at_item(s) {
            return Err(s.error("a sequence entry where a mapping key belongs"));
        }
        let key_start = s.mark();
        key = inline(s, indent as isize, depth + 1, false)?;
        s.skip_blanks();
        if key.line != s.line || s.peek() != ':' || !is_blank_or_end(s.peek_at(1)) {
            return Err(error(key_start, "a mapping key must be followed by `: ` on its line"));
        }
    }
}

/// A block mapping key: a scalar, on one line, at most 1024 characters
/// before its `:`, as YAML limits an implicit key.
fn check_key(s: &Scanner, key: &Node, depth: usize) -> Result<(), PolicyError> {
    let at = (key.line, key.column - 1);
    if !matches!(key.value, Value::Scalar { .. }) {
        return Err(error(at, "a mapping key must be a scalar"));
    }
    if depth + 1 > MAX_DEPTH {
        return Err(error(at, "nested deeper than 32 levels"));
    }
    if key.line != s.line || s.col > at.1 + 1024 {
        return Err(error(at, "a mapping key must be on one line and at most 1024 characters"));
    }
    Ok(())
}

/// A block sequence whose first `-` is at the cursor, in column `indent`;
/// `same_indent` when it sits at its key's indentation, where YAML
/// places it after the first `- `.
fn sequence(s: &mut Scanner, indent: usize, depth: usize, same_indent: bool) -> Result<Node, PolicyError> {
    let mut start = s.mark();
    let mut items = Vec::new();
    loop {
        s.bump();
        if s.skip_blanks() && !matches!(s.peek(), '#' | '\n' | '\r' | '\0') {
            return Err(s.error("a tab after `-`; YAML separates with spaces"));
        }
        s.skip_to_line_end()?;
        let entry = s.mark();
        if same_indent && items.is_empty() {
            start = entry;
        }
        items.push(value(s, indent as isize, depth + 1, Opener::Item(entry))?);
        let next = s.indent();
        if next == indent as isize && at_item(s) {
            continue;
        }
        if next < indent as isize || (next == indent as isize && same_indent) {
            return Ok(branch(Value::Sequence(items), start));
        }
        return Err(s.error("expected `- ` or less indentation after a sequence entry"));
    }
}

/// A scalar or flow collection (with an optional anchor) at the cursor;
/// `in_flow` inside `[]`/`{}`. Aliases, tags and other indicators are
/// refused here.
fn inline(s: &mut Scanner, parent: isize, depth: usize, in_flow: bool) -> Result<Node, PolicyError> {
    let start = s.mark();
    if depth > MAX_DEPTH {
        return Err(s.error("nested deeper than 32 levels"));
    }
    if s.peek() == '&' {
        s.skip_anchor()?;
        let mut node = inline(s, parent, depth, in_flow)?;
        (node.line, node.column) = (start.0, start.1 + 1);
        return Ok(node);
    }
    let value = match s.peek() {
        '[' | '{' => flow(s, parent, depth)?,
        '\'' | '"' => Value::Scalar { text: s.quoted(parent)?, plain: false },
        '*' => return Err(s.error("aliases (`*name`) are not supported in a policy file")),
        '!' => return Err(s.error("tags (`!name`) are not supported in a policy file")),
        '?' if is_blank_or_end(s.peek_at(1)) => {
            return Err(s.error("complex keys (`? `) are not supported: a mapping key must be a scalar"));
        }
        _ if s.at_plain_start(in_flow) => Value::Scalar { text: s.plain(parent, in_flow)?, plain: true },
        _ => return Err(s.found("unexpected", "where a value belongs")),
    };
    Ok(branch(value, start))
}

/// A flow sequence or mapping at its `[` or `{`, inside a block
/// collection indented at `parent`.
fn flow(s: &mut Scanner, parent: isize, depth: usize) -> Result<Value, PolicyError> {
    let mapping = s.peek() == '{';
    s.bump();
    let close = if mapping { '}' } else { ']' };
    let mut items = Vec::new();
    let mut entries = Vec::new();
    loop {
        flow_space(s, parent)?;
        if s.peek() == close {
            s.bump();
            break;
        }
        let node = inline(s, parent, depth + 1, true)?;
        let same_line = node.line == s.line;
        s.skip_blanks();
        if mapping {
            if !matches!(node.value, Value::Scalar { .. }) {
                return Err(error((node.line, node.column - 1), "a mapping key must be a scalar"));
            }
            if s.peek() != ':' || !same_line {
                return Err(s.error("a key in `{}` must be followed by `:` on its line"));
            }
            let colon = s.mark();
            s.bump();
            flow_space(s, parent)?;
            let value = if matches!(s.peek(), ',' | '}') {
                leaf(String::new(), true, colon, depth + 1)?
            } else {
                inline(s, parent, depth + 1, true)?
            };
            entries.push((node, value));
        } else {
            if s.peek() == ':' {
                return Err(s.error("a `key: value` pair inside `[]` is not supported"));
            }
            items.push(node);
        }
        flow_space(s, parent)?;
        match s.peek() {
            ',' => s.bump(),
            c if c == close => {}
            _ => return Err(s.found("expected `,` or the closing bracket, found", "")),
        }
    }
    Ok(if mapping { Value::Mapping(entries) } else { Value::Sequence(items) })
}

/// Blanks, comments and line breaks inside `[]`/`{}`; each line's
/// content, the closing bracket too, is indented past `parent`.
fn flow_space(s: &mut Scanner, parent: isize) -> Result<(), PolicyError> {
    s.skip_lines()?;
    if s.at_end() {
        return Err(s.error("the file ends inside `[]` or `{}`"));
    }
    if s.at_line_start() && s.indent() <= parent {
        return Err(s.error("a line inside `[]` or `{}` must be indented past its parent"));
    }
    Ok(())
}
