//! The serde path the policy was read with before `read.rs` (tests
//! only): serde's derived `Deserialize` of the policy types (derived
//! under `cfg(test)`) over a deserializer of the YAML tree that names
//! field paths and positions. `read_differential_tests.rs` holds the
//! hand-written reader to it: the same policy or the same message for
//! every tree.

use std::fmt;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

use super::checks::CheckCommand;
use super::de::{Kind, Path};
use super::yaml::{Node, Value};

/// `T` from the tree; the error message is ready for `PolicyError::Syntax`.
pub(super) fn from_node<T: DeserializeOwned>(node: &Node) -> Result<T, String> {
    T::deserialize(NodeDeserializer { node, path: Path::Root }).map_err(|error| error.message)
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
            Value::Scalar { text, plain: true } => visit_plain(self.node, text, visitor),
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

/// A plain scalar by the core schema (`Kind::of`, shared with the
/// reader: the core schema is not what is compared).
fn visit_plain<'de, V: Visitor<'de>>(node: &Node, text: &str, visitor: V) -> Result<V::Value, Error> {
    match Kind::of(node) {
        Kind::Null => visitor.visit_unit(),
        Kind::Bool(value) => visitor.visit_bool(value),
        Kind::Unsigned(value) => visitor.visit_u64(value),
        Kind::Negative(value) => visitor.visit_i64(value),
        Kind::Float(value) => visitor.visit_f64(value),
        _ => visitor.visit_str(text),
    }
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

/// `RunnerPolicy::cpus` and `memory`: a string, or a number kept as its text.
pub(super) fn verbatim<'de, D: de::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    deserializer.deserialize_any(VerbatimVisitor).map(Some)
}

struct VerbatimVisitor;

impl Visitor<'_> for VerbatimVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or a number")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(text.to_owned())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(value.to_string())
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(value.to_string())
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Ok(value.to_string())
    }
}

impl<'de> de::Deserialize<'de> for CheckCommand {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CommandVisitor)
    }
}

struct CommandVisitor;

impl<'de> Visitor<'de> for CommandVisitor {
    type Value = CheckCommand;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a command as a list of arguments, or one string split on whitespace")
    }

    fn visit_str<E: de::Error>(self, line: &str) -> Result<Self::Value, E> {
        if line.contains(['"', '\'']) {
            return Err(E::custom("quotes are not interpreted in a one-string check; write it as a list of arguments"));
        }
        Ok(CheckCommand::new(line.split_whitespace()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut argv = Vec::new();
        while let Some(argument) = seq.next_element::<String>()? {
            argv.push(argument);
        }
        Ok(CheckCommand { argv })
    }
}
