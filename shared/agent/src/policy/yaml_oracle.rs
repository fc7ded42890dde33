//! The differential oracle of `yaml.rs` (tests only): the loader the
//! policy used before it had its own parser, reading the events of
//! `saphyr-parser`, a full YAML 1.2 parser, into the same tree. Our
//! parser must give the same tree for every document it accepts, and
//! refuse every document this one refuses.

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use super::PolicyError;
use super::yaml::{Node, Value};

/// Deepest nesting accepted, as in `yaml.rs`.
const MAX_DEPTH: usize = 32;

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
