//! `.agent-zero.yml` text to a tree of YAML nodes, each with its position.
//!
//! The events come from `saphyr-parser` (pure Rust, no `unsafe`); this
//! module keeps what a policy needs: scalars (with whether they were plain,
//! since only plain scalars resolve to null, booleans and numbers),
//! sequences and mappings with scalar keys. Aliases, tags and more than one
//! document are refused with their line: a policy has no use for them, and
//! an alias is the one YAML feature that lets a small file expand into a
//! large value.

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use super::PolicyError;

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
    let mut loader = Loader { parser: Parser::new_from_str(text) };
    let mut document = None;
    loop {
        let (event, span) = loader.next()?;
        match event {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => return Ok(document),
            Event::DocumentStart(_) if document.is_some() => {
                return Err(at(span, "a policy file holds one YAML document; found a second"));
            }
            Event::DocumentStart(_) => document = Some(loader.node(0)?),
            _ => return Err(at(span, "unexpected YAML event outside a document")),
        }
    }
}

struct Loader<'input> {
    parser: Parser<'input, saphyr_parser::StrInput<'input>>,
}

impl<'input> Loader<'input> {
    fn next(&mut self) -> Result<(Event<'input>, Span), PolicyError> {
        match self.parser.next_event() {
            Some(Ok(event)) => Ok(event),
            Some(Err(error)) => Err(scan_error(&error)),
            None => Err(PolicyError::Syntax { message: "unexpected end of the YAML stream".into() }),
        }
    }

    /// The node that starts with the next event.
    fn node(&mut self, depth: usize) -> Result<Node, PolicyError> {
        let (event, span) = self.next()?;
        self.node_from(event, span, depth)
    }

    fn node_from(&mut self, event: Event<'input>, span: Span, depth: usize) -> Result<Node, PolicyError> {
        if depth > MAX_DEPTH {
            return Err(at(span, &format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let value = match event {
            Event::Scalar(text, style, _, tag) => {
                refuse_tag(tag.is_some(), span)?;
                Value::Scalar { text: text.into_owned(), plain: style == ScalarStyle::Plain }
            }
            Event::SequenceStart(_, tag) => {
                refuse_tag(tag.is_some(), span)?;
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if event == Event::SequenceEnd {
                        break;
                    }
                    items.push(self.node_from(event, span, depth + 1)?);
                }
                Value::Sequence(items)
            }
            Event::MappingStart(_, tag) => {
                refuse_tag(tag.is_some(), span)?;
                let mut entries = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if event == Event::MappingEnd {
                        break;
                    }
                    let key = self.node_from(event, span, depth + 1)?;
                    if !matches!(key.value, Value::Scalar { .. }) {
                        return Err(at(span, "a mapping key must be a scalar"));
                    }
                    let value = self.node(depth + 1)?;
                    entries.push((key, value));
                }
                Value::Mapping(entries)
            }
            Event::Alias(_) => return Err(at(span, "aliases (`*name`) are not supported in a policy file")),
            _ => return Err(at(span, "unexpected YAML event where a value belongs")),
        };
        Ok(Node { value, line: span.start.line(), column: span.start.col() + 1 })
    }
}

fn refuse_tag(tagged: bool, span: Span) -> Result<(), PolicyError> {
    if tagged { Err(at(span, "tags (`!name`) are not supported in a policy file")) } else { Ok(()) }
}

fn at(span: Span, message: &str) -> PolicyError {
    PolicyError::Syntax { message: format!("{message} at line {} column {}", span.start.line(), span.start.col() + 1) }
}

/// The scanner's reason and position; never the source text.
fn scan_error(error: &ScanError) -> PolicyError {
    let marker = error.marker();
    PolicyError::Syntax { message: format!("{} at line {} column {}", error.info(), marker.line(), marker.col() + 1) }
}
