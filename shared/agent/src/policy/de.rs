//! A serde deserializer over the YAML tree of `yaml.rs`. Every error names
//! the field path (`agent.maxAttempts`, `checks[0][1]`) and the line and
//! column of the node, never the source line (a value may be a secret).
//!
//! Scalars follow YAML 1.2's core schema as `serde_yaml` read them: a
//! plain scalar is null, a boolean, an integer, a float or a string; a
//! quoted or block scalar is always a string; a field typed as a string
//! takes any scalar's text (`requireLabel: 2024`).

use std::fmt;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

use super::yaml::{Node, Value, is_null};

/// `T` from the tree; the error message is ready for `PolicyError::Syntax`.
pub(super) fn from_node<T: DeserializeOwned>(node: &Node) -> Result<T, String> {
    T::deserialize(NodeDeserializer { node, path: Path::Root }).map_err(|error| error.message)
}

/// Where a node sits in the document.
#[derive(Clone, Copy)]
enum Path<'a> {
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

/// A deserialization error; `located` once the path and position of the
/// innermost node it concerns are in the message.
#[derive(Debug)]
struct Error {
    message: String,
    located: bool,
}

impl Error {
    /// Prefixes the path and appends the position, unless a deeper node did.
    fn locate(self, path: Path<'_>, line: usize, column: usize) -> Self {
        if self.located {
            return self;
        }
        let message = match path {
            Path::Root => format!("{} at line {line} column {column}", self.message),
            _ => format!("{path}: {} at line {line} column {column}", self.message),
        };
        Self { message, located: true }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self { message: message.to_string(), located: false }
    }
}

struct NodeDeserializer<'a> {
    node: &'a Node,
    path: Path<'a>,
}

impl NodeDeserializer<'_> {
    fn locate<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        result.map_err(|error| error.locate(self.path, self.node.line, self.node.column))
    }
}

impl<'de> de::Deserializer<'de> for NodeDeserializer<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match &self.node.value {
            Value::Scalar { text, plain: true } => visit_plain(text, visitor),
            Value::Scalar { text, plain: false } => visitor.visit_str(text),
            Value::Sequence(items) => visitor.visit_seq(Items { items: items.iter(), path: &self.path, index: 0 }),
            Value::Mapping(entries) => {
                visitor.visit_map(Entries { entries: entries.iter(), path: &self.path, value: None })
            }
        };
        self.locate(result)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Scalar { text, .. } => self.locate(visitor.visit_str(text)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.node.is_null() { visitor.visit_none() } else { visitor.visit_some(self) }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Scalar { text, .. } => {
                let variant: StrDeserializer<'_, Error> = text.as_str().into_deserializer();
                self.locate(visitor.visit_enum(variant))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct
    }
}

/// A plain scalar by the core schema: null, boolean, integer, float, else
/// the string itself. The one part of [`NodeDeserializer`] generic over the
/// visitor is this dispatch; [`Plain::of`] reads the text once for all.
fn visit_plain<'de, V: Visitor<'de>>(text: &str, visitor: V) -> Result<V::Value, Error> {
    match Plain::of(text) {
        Plain::Null => visitor.visit_unit(),
        Plain::Bool(value) => visitor.visit_bool(value),
        Plain::Unsigned(value) => visitor.visit_u64(value),
        Plain::Negative(value) => visitor.visit_i64(value),
        Plain::Float(value) => visitor.visit_f64(value),
        Plain::Text => visitor.visit_str(text),
    }
}

/// What a plain scalar's text is under the core schema.
enum Plain {
    Null,
    Bool(bool),
    Unsigned(u64),
    Negative(i64),
    Float(f64),
    Text,
}

impl Plain {
    /// Not inlined: one copy, not one per visitor.
    #[inline(never)]
    fn of(text: &str) -> Self {
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
            return Self::Float(agent_zero_contracts::decimal::parse(text).unwrap_or(infinity));
        }
        Self::Text
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

struct Items<'a, 'p> {
    items: std::slice::Iter<'a, Node>,
    path: &'p Path<'p>,
    index: usize,
}

impl<'de> SeqAccess<'de> for Items<'_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        let Some(node) = self.items.next() else { return Ok(None) };
        let path = Path::Index(self.path, self.index);
        self.index += 1;
        seed.deserialize(NodeDeserializer { node, path }).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Entries<'a, 'p> {
    entries: std::slice::Iter<'a, (Node, Node)>,
    path: &'p Path<'p>,
    value: Option<&'a (Node, Node)>,
}

impl<'de> MapAccess<'de> for Entries<'_, '_> {
    type Error = Error;

    /// A key error (an unknown field, a duplicate) names the mapping and
    /// the key's position.
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.entries.next() else { return Ok(None) };
        self.value = Some(entry);
        let key = &entry.0;
        let Value::Scalar { text, .. } = &key.value else {
            return Err(de::Error::custom("a mapping key must be a scalar"));
        };
        let deserializer: StrDeserializer<'_, Error> = text.as_str().into_deserializer();
        seed.deserialize(deserializer).map(Some).map_err(|error| error.locate(*self.path, key.line, key.column))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (key, node) = self.value.take().ok_or_else(|| de::Error::custom("a value was read before its key"))?;
        let name = match &key.value {
            Value::Scalar { text, .. } => text.as_str(),
            _ => "?",
        };
        seed.deserialize(NodeDeserializer { node, path: Path::Field(self.path, name) })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}
