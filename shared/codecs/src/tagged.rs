//! Internally tagged enums (`{"fact": "leased", "lease": {…}}`) read
//! without buffering.
//!
//! serde's `#[serde(tag = "…")]` reads the whole object into its private
//! `Content` tree first (the tag may come last), then deserializes every
//! variant's fields a second time from that tree: one more copy of each
//! field type's deserializer in the wasm. Our own serializer always writes
//! the tag first, so the readers of our own records ([`TagFirst`]) take the
//! tag from the first key and hand the rest of the same map, unbuffered, to
//! the variant: the fields are read by the one JSON deserializer every
//! other type uses. An object whose tag is not first (a log edited by a
//! tool that sorts keys) is still read: its entries are collected as JSON
//! values, written again with the tag first and read from those bytes, by
//! the same deserializer.
//!
//! Use: keep `#[derive(Serialize)]` with `#[serde(tag = "…")]` on the
//! enum, derive `Deserialize` on an externally tagged mirror with
//! `#[serde(remote = "TheEnum")]` (serde checks it names every variant and
//! field), and implement `Deserialize` for the enum as
//!
//! ```ignore
//! read_tag_first(deserializer, "tag", PLACEHOLDER, |d| Mirror::deserialize(d))
//! ```
//!
//! `PLACEHOLDER` is a small valid object of the enum, tag first: what the
//! mirror reads while the reordered value is kept aside (the mirror's own
//! visitor can only return what it reads from the deserializer it is given).

use std::cell::Cell;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, VariantAccess, Visitor,
};
use serde_json::{Map, Value};

/// Where an object read out of order is kept (see the module docs).
pub struct Reordered<T>(Cell<Option<T>>);

impl<T> fmt::Debug for Reordered<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reordered")
    }
}

impl<T> Default for Reordered<T> {
    fn default() -> Self {
        Self(Cell::new(None))
    }
}

impl<T> Reordered<T> {
    /// The value read out of order, if there was one; otherwise `read`.
    pub fn or(self, read: T) -> T {
        self.0.into_inner().unwrap_or(read)
    }
}

/// A deserializer that reads an externally tagged enum from an object
/// whose first key is `tag` and whose other keys are the variant's fields.
#[allow(missing_debug_implementations)]
pub struct TagFirst<'r, D, T> {
    inner: D,
    how: How<'r, T>,
}

struct How<'r, T> {
    tag: &'static str,
    placeholder: &'static str,
    reordered: &'r Reordered<T>,
}

impl<'r, D, T> TagFirst<'r, D, T> {
    pub fn new(inner: D, tag: &'static str, placeholder: &'static str, reordered: &'r Reordered<T>) -> Self {
        Self { inner, how: How { tag, placeholder, reordered } }
    }
}

impl<'de, D: Deserializer<'de>, T: DeserializeOwned> Deserializer<'de> for TagFirst<'_, D, T> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(Tagged { how: self.how, visitor })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

struct Tagged<'r, V, T> {
    how: How<'r, T>,
    visitor: V,
}

impl<'de, V: Visitor<'de>, T: DeserializeOwned> Visitor<'de> for Tagged<'_, V, T> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with a `{}` field", self.how.tag)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<V::Value, A::Error> {
        match map.next_key::<String>()? {
            Some(key) if key == self.how.tag => {
                let variant: String = map.next_value()?;
                self.visitor.visit_enum(Variant { name: variant, rest: map })
            }
            Some(key) => {
                let value = reorder(self.how.tag, key, map)?;
                self.how.reordered.0.set(Some(value));
                // The same deserializer type as every record's: no new copy.
                let mut placeholder = serde_json::Deserializer::from_slice(self.how.placeholder.as_bytes());
                crate::json::Objects(&mut placeholder).deserialize_map(self).map_err(de::Error::custom)
            }
            None => Err(de::Error::missing_field(self.how.tag)),
        }
    }
}

/// Reads an object whose first key `first` is not the tag: collects its
/// entries, writes them again with the tag first, and reads `T` from that.
fn reorder<'de, T: DeserializeOwned, A: MapAccess<'de>>(
    tag: &'static str,
    first: String,
    mut map: A,
) -> Result<T, A::Error> {
    let mut entries = vec![(first, map.next_value::<Value>()?)];
    while let Some(entry) = map.next_entry::<String, Value>()? {
        entries.push(entry);
    }
    let Some(at) = entries.iter().position(|(key, _)| key == tag) else {
        return Err(de::Error::missing_field(tag));
    };
    let tagged = entries.remove(at);
    let mut bytes = b"{".to_vec();
    let mut object = Map::new();
    for (key, value) in std::iter::once(tagged).chain(entries) {
        if bytes.len() > 1 {
            bytes.push(b',');
        }
        object.clear();
        object.insert(key, value);
        let entry = serde_json::to_vec(&object).map_err(de::Error::custom)?;
        bytes.extend_from_slice(&entry[1..entry.len() - 1]);
    }
    bytes.push(b'}');
    crate::json::from_slice(&bytes).map_err(de::Error::custom)
}

/// The variant's name and the rest of its object.
struct Variant<A> {
    name: String,
    rest: A,
}

impl<'de, A: MapAccess<'de>> EnumAccess<'de> for Variant<A> {
    type Error = A::Error;
    type Variant = Rest<A>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Rest<A>), A::Error> {
        let name: StringDeserializer<A::Error> = de::IntoDeserializer::into_deserializer(self.name);
        Ok((seed.deserialize(name)?, Rest(self.rest)))
    }
}

/// The fields after the tag.
struct Rest<A>(A);

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for Rest<A> {
    type Error = A::Error;

    /// A unit variant ignores any other field, as serde's tagged enums do.
    fn unit_variant(mut self) -> Result<(), A::Error> {
        while self.0.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        seed.deserialize(MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("a tagged object cannot hold a tuple variant"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }
}

/// Reads `T` through its mirror's `read` (`|d| Mirror::deserialize(d)`)
/// from an object tagged by `tag`, tag first (see the module docs).
///
/// # Errors
/// What the mirror reports, or a missing tag.
pub fn read_tag_first<'de, D, T>(
    deserializer: D,
    tag: &'static str,
    placeholder: &'static str,
    read: impl for<'r> FnOnce(TagFirst<'r, D, T>) -> Result<T, D::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let reordered = Reordered::default();
    let value = read(TagFirst::new(deserializer, tag, placeholder, &reordered))?;
    Ok(reordered.or(value))
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::read_tag_first;

    #[derive(Debug, PartialEq, Serialize)]
    #[serde(tag = "kind", rename_all = "kebab-case")]
    enum Shape {
        Dot,
        Circle {
            radius: u32,
            #[serde(default)]
            label: Option<String>,
        },
        Named(Inner),
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Inner {
        name: String,
    }

    #[derive(Deserialize)]
    #[serde(remote = "Shape", rename_all = "kebab-case")]
    #[allow(dead_code)]
    enum ShapeDe {
        Dot,
        Circle {
            radius: u32,
            #[serde(default)]
            label: Option<String>,
        },
        Named(Inner),
    }

    impl<'de> Deserialize<'de> for Shape {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            read_tag_first(deserializer, "kind", r#"{"kind":"dot"}"#, |d| ShapeDe::deserialize(d))
        }
    }

    #[test]
    fn reads_what_the_tagged_serializer_writes() {
        let shapes = vec![
            Shape::Dot,
            Shape::Circle { radius: 3, label: Some("c".into()) },
            Shape::Circle { radius: 4, label: None },
            Shape::Named(Inner { name: "n".into() }),
        ];
        let json = serde_json::to_vec(&shapes).unwrap();
        assert_eq!(serde_json::from_slice::<Vec<Shape>>(&json).unwrap(), shapes);
        assert_eq!(serde_json::from_str::<Shape>(r#"{"kind":"dot","extra":[1,{"a":2}]}"#).unwrap(), Shape::Dot);
        assert_eq!(
            serde_json::from_str::<Shape>(r#"{"kind":"circle","radius":5}"#).unwrap(),
            Shape::Circle { radius: 5, label: None }
        );
    }

    #[test]
    fn reads_an_object_whose_tag_is_not_first() {
        // What a tool that sorts keys writes; the nested object too.
        let sorted = r#"[{"label":"l","radius":5,"kind":"circle"},{"a":1,"kind":"dot"},{"name":"n","kind":"named"},
                         {"kind":"dot"}]"#;
        assert_eq!(
            serde_json::from_str::<Vec<Shape>>(sorted).unwrap(),
            vec![
                Shape::Circle { radius: 5, label: Some("l".into()) },
                Shape::Dot,
                Shape::Named(Inner { name: "n".into() }),
                Shape::Dot,
            ]
        );
        let value = serde_json::to_value(Shape::Circle { radius: 1, label: None }).unwrap();
        assert_eq!(
            serde_json::from_slice::<Shape>(value.to_string().as_bytes()).unwrap(),
            Shape::Circle { radius: 1, label: None }
        );
    }

    #[test]
    fn names_what_is_wrong() {
        let error = |json: &str| serde_json::from_str::<Shape>(json).unwrap_err().to_string();
        assert!(error("{}").starts_with("missing field `kind`"));
        assert!(error(r#"{"kind":"square"}"#).starts_with("unknown variant `square`"));
        assert!(error(r#"{"kind":"circle"}"#).starts_with("missing field `radius`"));
        assert!(error(r#"{"kind":"circle","radius":"x"}"#).starts_with("invalid type: string \"x\""));
        assert!(error("[]").starts_with("invalid type: sequence, expected an object with a `kind` field"));
        assert!(error(r#"{"radius":5}"#).starts_with("missing field `kind`"));
        assert!(error(r#"{"radius":"x","kind":"circle"}"#).contains("invalid type: string \"x\""));
    }

    /// A strict message (the worker's task-store operations): the mirror's
    /// `deny_unknown_fields` refuses a field it does not know, in either
    /// key order.
    #[derive(Debug, PartialEq, Serialize)]
    #[serde(tag = "op", rename_all = "camelCase")]
    enum Strict {
        Get { key: String },
    }

    #[derive(Deserialize)]
    #[serde(remote = "Strict", rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    enum StrictDe {
        Get { key: String },
    }

    impl<'de> Deserialize<'de> for Strict {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            read_tag_first(deserializer, "op", r#"{"op":"get","key":""}"#, |d| StrictDe::deserialize(d))
        }
    }

    #[test]
    fn a_strict_mirror_refuses_unknown_fields() {
        let read = |json: &str| serde_json::from_str::<Strict>(json).map_err(|e| e.to_string());
        assert_eq!(read(r#"{"op":"get","key":"k"}"#), Ok(Strict::Get { key: "k".into() }));
        assert_eq!(read(r#"{"key":"k","op":"get"}"#), Ok(Strict::Get { key: "k".into() }));
        for json in [r#"{"op":"get","key":"k","value":"v"}"#, r#"{"key":"k","value":"v","op":"get"}"#] {
            let error = read(json).unwrap_err();
            assert!(error.starts_with("unknown field `value`"), "{json}: {error}");
        }
    }
}
