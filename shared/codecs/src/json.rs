//! Reading JSON into our types: serde_json's parser, with structs read from
//! objects only.
//!
//! serde_json also reads a struct from an array of its fields in order
//! (`[1, "a"]` for `{ "id": 1, "name": "a" }`). No writer of ours, GitHub
//! or any vendor we call writes that form, and reading it costs every
//! struct a second decoder (its derived `visit_seq`): 134 KB raw, 34 KB
//! gzip, of the worker, and as much of the Spin component. [`Objects`]
//! wraps a deserializer and asks for a struct as a map, so that decoder is
//! never referenced and the linker drops it; an array where a struct
//! belongs is refused with serde_json's own message (`invalid type:
//! sequence, expected struct …`) and position. Everything else passes
//! through unchanged, so errors, field paths and borrowing are
//! serde_json's.
//!
//! Shipped code reads JSON with [`from_slice`] and [`from_str`], or wraps a
//! `serde_json::Deserializer` it drives itself in [`Objects`].

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

/// `serde_json::from_slice`, structs read from objects only.
pub fn from_slice<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(Objects(&mut deserializer))?;
    deserializer.end()?;
    Ok(value)
}

/// `serde_json::from_str`, structs read from objects only. It reads the
/// text's bytes with [`from_slice`]'s reader, so every type keeps one
/// deserializer instantiation (serde_json's `StrRead` would be a second).
pub fn from_str<'de, T: de::Deserialize<'de>>(text: &'de str) -> serde_json::Result<T> {
    from_slice(text.as_bytes())
}

/// A deserializer that reads every struct (and struct variant) through
/// `deserialize_map`, at every depth; see the module's documentation.
#[derive(Debug)]
pub struct Objects<D>(pub D);

/// A visitor whose accesses hand out [`Objects`] deserializers.
struct Wrap<V>(V);

/// A seed that deserializes from [`Objects`].
struct Seed<S>(S);

/// A struct variant's fields, read as a map.
struct StructSeed<V>(V);

struct Seq<A>(A);
struct Map<A>(A);
struct Enum<A>(A);
struct Variant<A>(A);

macro_rules! forward {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Objects<D> {
    type Error = D::Error;

    forward! {
        deserialize_any deserialize_bool
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64 deserialize_char deserialize_str deserialize_string
        deserialize_bytes deserialize_byte_buf deserialize_option deserialize_unit
        deserialize_seq deserialize_map deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    /// The one change: a struct is a map.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident: $ty:ty)*) => {
        $(
            fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
                self.0.$method(value)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    visit! {
        visit_bool: bool
        visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64 visit_i128: i128
        visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64 visit_u128: u128
        visit_f32: f32 visit_f64: f64 visit_char: char
        visit_str: &str visit_borrowed_str: &'de str visit_string: String
        visit_bytes: &[u8] visit_borrowed_bytes: &'de [u8] visit_byte_buf: Vec<u8>
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Objects(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Objects(deserializer))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Seq(seq))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Map(map))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Enum(data))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Objects(deserializer))
    }
}

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for StructSeed<V> {
    type Value = V::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        deserializer.deserialize_map(Wrap(self.0))
    }
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0.variant_seed(Seed(seed)).map(|(value, variant)| (value, Variant(variant)))
    }
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    /// A struct variant's content is read as a map, as a struct is: the
    /// variant's value is deserialized as a newtype's would be, then asked
    /// for a map.
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.newtype_variant_seed(StructSeed(visitor))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Inner {
        line: u32,
        path: String,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Outer<'a> {
        name: &'a str,
        inner: Inner,
        #[serde(default)]
        list: Vec<Inner>,
        maybe: Option<Inner>,
        pair: (u8, String),
        map: BTreeMap<String, Inner>,
        shape: Shape,
        #[serde(default)]
        wrapped: Option<Newtype>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Newtype(Inner);

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Shape {
        Dot,
        Circle(u32),
        Segment(u32, u32),
        Box { width: u32, height: u32 },
    }

    const WHOLE: &str = r#"{
        "name": "a",
        "inner": { "line": 1, "path": "x" },
        "list": [{ "path": "y", "line": 2 }],
        "maybe": { "line": 3, "path": "z", "unknown": [1, { "a": null }] },
        "pair": [7, "seven"],
        "map": { "k": { "line": 4, "path": "w" } },
        "shape": { "box": { "width": 2, "height": 3 } },
        "wrapped": { "line": 5, "path": "v" }
    }"#;

    #[test]
    fn reads_what_serde_json_reads_from_objects() {
        let ours: Outer<'_> = from_str(WHOLE).unwrap();
        let theirs: Outer<'_> = serde_json::from_str(WHOLE).unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(ours.shape, Shape::Box { width: 2, height: 3 });
        assert_eq!(ours.wrapped, Some(Newtype(Inner { line: 5, path: "v".into() })));
        for shape in [r#""dot""#, r#"{"circle":4}"#, r#"{"segment":[1,2]}"#, r#"{"box":{"height":1,"width":9}}"#] {
            assert_eq!(from_str::<Shape>(shape).unwrap(), serde_json::from_str::<Shape>(shape).unwrap(), "{shape}");
        }
    }

    #[test]
    fn refuses_a_struct_written_as_an_array_where_serde_json_would_read_it() {
        let array = r#"[1, "x"]"#;
        assert_eq!(serde_json::from_str::<Inner>(array).unwrap(), Inner { line: 1, path: "x".into() });
        let error = from_str::<Inner>(array).unwrap_err();
        assert!(error.to_string().starts_with("invalid type: sequence, expected struct Inner at line 1 "), "{error}");

        let nested = WHOLE.replace(r#"{ "line": 3, "path": "z", "unknown": [1, { "a": null }] }"#, r#"[3, "z"]"#);
        assert!(serde_json::from_str::<Outer<'_>>(&nested).is_ok());
        let error = from_str::<Outer<'_>>(&nested).unwrap_err();
        assert!(error.to_string().starts_with("invalid type: sequence, expected struct Inner at line 5"), "{error}");

        let variant = r#"{"box":[2,3]}"#;
        assert!(serde_json::from_str::<Shape>(variant).is_ok());
        let error = from_str::<Shape>(variant).unwrap_err();
        assert!(error.to_string().starts_with("invalid type: sequence, expected struct variant"), "{error}");
    }

    #[test]
    fn errors_and_their_positions_are_serde_json_own() {
        for broken in [
            r#"{"line": "one", "path": "x"}"#,
            r#"{"line": 1}"#,
            r#"{"line": 1, "path": "x"} trailing"#,
            r#"{"line": 1, "path": "x""#,
            r#"{"line": 1, "path": "x", "line": 2}"#,
            "",
        ] {
            let ours = from_str::<Inner>(broken).unwrap_err();
            let theirs = serde_json::from_str::<Inner>(broken).unwrap_err();
            assert_eq!(ours.to_string(), theirs.to_string(), "{broken}");
            assert_eq!((ours.line(), ours.column()), (theirs.line(), theirs.column()), "{broken}");
        }
    }
}
