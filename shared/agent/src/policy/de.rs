//! The vocabulary of the policy reader (`read.rs`): where a node sits,
//! what it is under the core schema, the one error builder, the struct
//! walker and the converters of the field types. Every error names the
//! field path (`agent.maxAttempts`, `checks[0][1]`) and the line and
//! column of the node, never the source line (a value may be a secret),
//! and says what serde's derived visitors said (`invalid type: string
//! "many", expected u32`), which the policy was read with before: the
//! reader is small, non-generic code instead (`de_oracle.rs`, tests only,
//! keeps the serde path to hold it to).
//!
//! Scalars follow YAML 1.2's core schema as `serde_yaml` read them: a
//! plain scalar is null, a boolean, an integer, a float or a string; a
//! quoted or block scalar is always a string; a field typed as a string
//! takes any scalar's text (`requireLabel: 2024`).

use std::fmt;

use super::yaml::{Node, Value, is_null};

/// What the reader returns: the error is the whole message, ready for
/// `PolicyError::Syntax`.
pub(super) type Read<T> = Result<T, String>;

/// Where a node sits in the document.
#[derive(Clone, Copy)]
pub(super) enum Path<'a> {
    Root,
    Field(&'a Self, &'a str),
    Index(&'a Self, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Root => Ok(()),
            Self::Field(Self::Root, name) => f.write_str(name),
            Self::Field(parent, name) => write!(f, "{parent}.{name}"),
            Self::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// A node and its path: what every converter reads.
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    pub(super) path: &'a Path<'a>,
    pub(super) node: &'a Node,
}

/// The one error builder: the path, the message, the node's position.
#[cold]
#[inline(never)]
pub(super) fn error(at: At<'_>, message: fmt::Arguments<'_>) -> String {
    let (line, column) = (at.node.line, at.node.column);
    match at.path {
        Path::Root => format!("{message} at line {line} column {column}"),
        path => format!("{path}: {message} at line {line} column {column}"),
    }
}

/// serde's `invalid type` (`what` = "type") or `invalid value` (an
/// integer out of range) for the node at `at`.
#[cold]
#[inline(never)]
pub(super) fn invalid(at: At<'_>, what: &str, expected: &str) -> String {
    error(at, format_args!("invalid {what}: {}, expected {expected}", Kind::of(at.node)))
}

/// What a node is under the core schema.
#[derive(Clone, Copy)]
pub(super) enum Kind<'a> {
    Null,
    Bool(bool),
    Unsigned(u64),
    Negative(i64),
    Float(f64),
    /// A quoted or block scalar, or a plain one that is nothing else.
    Text(&'a str),
    Sequence(&'a [Node]),
    Mapping(&'a [(Node, Node)]),
}

impl<'a> Kind<'a> {
    pub(super) fn of(node: &'a Node) -> Self {
        match &node.value {
            Value::Scalar { text, plain: true } => Self::plain(text),
            Value::Scalar { text, plain: false } => Self::Text(text),
            Value::Sequence(items) => Self::Sequence(items),
            Value::Mapping(entries) => Self::Mapping(entries),
        }
    }

    /// A plain scalar by the core schema: null, boolean, integer, float,
    /// else the text itself. Not inlined: one copy for every converter.
    #[inline(never)]
    fn plain(text: &'a str) -> Self {
        if is_null(text) {
            return Self::Null;
        }
        match text {
            "true" | "True" | "TRUE" => return Self::Bool(true),
            "false" | "False" | "FALSE" => return Self::Bool(false),
            ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Self::Float(f64::INFINITY),
            "-.inf" | "-.Inf" | "-.INF" => return Self::Float(f64::NEG_INFINITY),
            ".nan" | ".NaN" | ".NAN" => return Self::Float(f64::NAN),
            _ => {}
        }
        let (negative, digits) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let radix = match digits.get(..2) {
            Some("0x") => Some(16),
            Some("0o") => Some(8),
            _ => None,
        };
        let integer = match radix {
            Some(radix) if !text.starts_with(['-', '+']) => u64::from_str_radix(&digits[2..], radix).ok(),
            Some(_) => None,
            None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => digits.parse::<u64>().ok(),
            None => None,
        };
        match integer {
            Some(value) if !negative => return Self::Unsigned(value),
            Some(value) if value <= i64::MAX as u64 + 1 => return Self::Negative((value as i64).wrapping_neg()),
            _ => {}
        }
        if is_float(digits) {
            // The grammar matched, so the only refusal is a magnitude past
            // `f64`'s range, which the core schema reads as infinity.
            let infinity = if negative { f64::NEG_INFINITY } else { f64::INFINITY };
            return Self::Float(agent_zero_codecs::decimal::parse(text).unwrap_or(infinity));
        }
        Self::Text(text)
    }
}

/// serde's `Unexpected`: what an `invalid type` message says was found.
impl fmt::Display for Kind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("unit value"),
            Self::Bool(value) => write!(f, "boolean `{value}`"),
            Self::Unsigned(value) => write!(f, "integer `{value}`"),
            Self::Negative(value) => write!(f, "integer `{value}`"),
            Self::Float(value) => {
                // serde writes a finite float with a decimal point.
                let text = value.to_string();
                let point = if value.is_finite() && !text.contains('.') { ".0" } else { "" };
                write!(f, "floating point `{text}{point}`")
            }
            Self::Text(text) => write!(f, "string {text:?}"),
            Self::Sequence(_) => f.write_str("sequence"),
            Self::Mapping(_) => f.write_str("map"),
        }
    }
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, the core schema's
/// float without its sign.
fn is_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (whole.is_empty() && digits(fraction)) || (digits(whole) && (fraction.is_empty() || digits(fraction)))
        }
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// serde's list of the accepted names in an `unknown field` or `unknown
/// variant` message.
struct OneOf<'a>(&'a [&'a str]);

impl fmt::Display for OneOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [name] => write!(f, "`{name}`"),
            [first, second] => write!(f, "`{first}` or `{second}`"),
            names => {
                f.write_str("one of ")?;
                for (index, name) in names.iter().enumerate() {
                    let comma = if index == 0 { "" } else { ", " };
                    write!(f, "{comma}`{name}`")?;
                }
                Ok(())
            }
        }
    }
}

/// Reads a struct's node, handing each field's node to `field` (by its
/// index in `names`) in document order, as serde's derived visitor with
/// `deny_unknown_fields` and `default` did: a mapping by key, refusing an
/// unknown key (at the key) and a repeated one (at the mapping); or a
/// sequence by position, elements past the last field unread; any scalar
/// is the wrong type. Fields not handed over keep their default.
pub(super) fn fields(
    at: At<'_>,
    names: &[&str],
    expecting: &str,
    field: &mut dyn FnMut(usize, At<'_>) -> Read<()>,
) -> Read<()> {
    match Kind::of(at.node) {
        Kind::Mapping(entries) => {
            let mut seen = 0u64;
            for (key, value) in entries {
                let Value::Scalar { text, .. } = &key.value else {
                    return Err(error(at, format_args!("a mapping key must be a scalar")));
                };
                let Some(index) = names.iter().position(|name| name == text) else {
                    let at = At { path: at.path, node: key };
                    return Err(error(at, format_args!("unknown field `{text}`, expected {}", OneOf(names))));
                };
                if seen & 1 << index != 0 {
                    return Err(error(at, format_args!("duplicate field `{text}`")));
                }
                seen |= 1 << index;
                field(index, At { path: &Path::Field(at.path, text), node: value })?;
            }
            Ok(())
        }
        Kind::Sequence(items) => {
            for (index, node) in items.iter().take(names.len()).enumerate() {
                field(index, At { path: &Path::Index(at.path, index), node })?;
            }
            Ok(())
        }
        _ => Err(invalid(at, "type", expecting)),
    }
}

pub(super) fn boolean(at: At<'_>) -> Read<bool> {
    match Kind::of(at.node) {
        Kind::Bool(value) => Ok(value),
        _ => Err(invalid(at, "type", "a boolean")),
    }
}

/// An integer in `0..=max`; `expected` is the Rust type's name (`u32`).
pub(super) fn unsigned(at: At<'_>, max: u64, expected: &str) -> Read<u64> {
    match Kind::of(at.node) {
        Kind::Unsigned(value) if value <= max => Ok(value),
        // serde reads `-0` as the integer 0.
        Kind::Negative(0) => Ok(0),
        Kind::Unsigned(_) | Kind::Negative(_) => Err(invalid(at, "value", expected)),
        _ => Err(invalid(at, "type", expected)),
    }
}

pub(super) fn unsigned32(at: At<'_>) -> Read<u32> {
    unsigned(at, u32::MAX.into(), "u32").map(|value| value as u32)
}

pub(super) fn unsigned64(at: At<'_>) -> Read<u64> {
    unsigned(at, u64::MAX, "u64")
}

/// Any number, an integer converted as serde converts it.
pub(super) fn float(at: At<'_>) -> Read<f64> {
    match Kind::of(at.node) {
        Kind::Float(value) => Ok(value),
        Kind::Unsigned(value) => Ok(value as f64),
        Kind::Negative(value) => Ok(value as f64),
        _ => Err(invalid(at, "type", "f64")),
    }
}

/// `None` for null, else a number.
pub(super) fn optional_float(at: At<'_>) -> Read<Option<f64>> {
    if at.node.is_null() { Ok(None) } else { float(at).map(Some) }
}

/// Any scalar's text; a collection is the wrong type.
pub(super) fn text<'a>(at: At<'a>, expected: &str) -> Read<&'a str> {
    match &at.node.value {
        Value::Scalar { text, .. } => Ok(text),
        _ => Err(invalid(at, "type", expected)),
    }
}

/// Any scalar's text.
pub(super) fn string(at: At<'_>) -> Read<String> {
    text(at, "a string").map(str::to_owned)
}

/// `None` for null, else any scalar's text.
pub(super) fn optional_string(at: At<'_>) -> Read<Option<String>> {
    if at.node.is_null() { Ok(None) } else { string(at).map(Some) }
}

/// A sequence of any scalars' texts.
pub(super) fn strings(at: At<'_>) -> Read<Vec<String>> {
    let Kind::Sequence(items) = Kind::of(at.node) else { return Err(invalid(at, "type", "a sequence")) };
    let mut texts = Vec::with_capacity(items.len());
    for (index, node) in items.iter().enumerate() {
        texts.push(string(At { path: &Path::Index(at.path, index), node })?);
    }
    Ok(texts)
}

/// The index in `names` of a scalar's text (a unit variant's name);
/// `expecting` is serde's `enum Name`.
pub(super) fn variant(at: At<'_>, names: &[&str], expecting: &str) -> Read<usize> {
    let text = text(at, expecting)?;
    match names.iter().position(|name| *name == text) {
        Some(index) => Ok(index),
        None => Err(error(at, format_args!("unknown variant `{text}`, expected {}", OneOf(names)))),
    }
}

/// The wire names of a contracts vocabulary (`RunMode::ALL`), in order,
/// as a constant: what [`variant`] matches and lists.
macro_rules! names {
    ($vocabulary:ty) => {{
        const COUNT: usize = <$vocabulary>::ALL.len();
        const NAMES: [&str; COUNT] = {
            let mut names = [""; COUNT];
            let mut index = 0;
            while index < COUNT {
                names[index] = <$vocabulary>::ALL[index].as_str();
                index += 1;
            }
            names
        };
        &NAMES
    }};
}
pub(super) use names;
