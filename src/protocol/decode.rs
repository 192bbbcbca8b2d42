//! The one way protocol types are decoded: from JSON text, through serde_json's text
//! deserializer. Every generated type gets a deserializer instance per deserializer type it is
//! read through, and the text one is needed anyway (lines arrive as text); reading the same
//! types from a `serde_json::Value` too would compile every struct's visitor a second time (over
//! a megabyte of the release binary). So a `Value` in hand is written back to text and read from
//! there ([`from_value`]): its keys are unique, so the result is what `serde_json::from_value`
//! gives, and so is the error text ([`from_str`] leaves out the position a text parse adds,
//! which a `Value` has none of).

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Error, Value};

/// `T` from a JSON value, as `serde_json::from_value` reads it, error texts included.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    from_str(&text_of(&value))
}

/// `T` from a JSON value borrowed, as [`from_value`].
pub fn from_ref<T: DeserializeOwned>(value: &Value) -> Result<T, Error> {
    from_str(&text_of(value))
}

/// A value's compact text. Not inlined: the generic readers above are compiled once per type
/// read (about 275 of them), and only the typed parse needs to be.
#[inline(never)]
fn text_of(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `T` from JSON text; the error's text without the position serde_json appends to it, as
/// `serde_json::from_value` words it.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(without_position)
}

/// The text of the value `d` holds, for an internally tagged union to read its tag and then
/// its variant from (`src/codegen/tagged_enums.rs`). serde_json hands its text over as it is (a
/// `RawValue`, from a text or from a `Value`); serde's own buffers (`buffered`: the union sits
/// inside an untagged union or a flattened field) have no text, so the value is read whole and
/// written back.
pub fn object_text<'de, D: Deserializer<'de>>(d: D, buffered: bool) -> Result<Box<str>, D::Error> {
    if buffered {
        let value = <Value as serde::Deserialize>::deserialize(d)?;
        Ok(text_of(&value).into_boxed_str())
    } else {
        Ok(<Box<RawValue> as serde::Deserialize>::deserialize(d)?.into())
    }
}

/// The string value of the member `name` of the object `text` (`None` when it has none), read
/// without reading the other members into anything.
pub fn tag_in<'a>(text: &'a str, name: &str) -> Result<Option<Cow<'a, str>>, Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    TagOf(name).deserialize(&mut de)
}

struct TagOf<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for TagOf<'_> {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TagOf<'_> {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is_tag) = map.next_key_seed(KeyIs(self.0))? {
            if is_tag && found.is_none() {
                found = Some(map.next_value_seed(super::doc::BorrowedStr)?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A key, compared with the name sought without allocating.
struct KeyIs<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

/// `e` without the ` at line L column C` a text parse appends (a `Value` has no position).
pub fn without_position(e: Error) -> Error {
    if e.line() == 0 {
        return e;
    }
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&suffix) {
        Some(bare) => <Error as serde::de::Error>::custom(bare),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct S {
        a: u8,
        #[serde(default)]
        b: Option<String>,
    }

    #[test]
    fn answers_and_error_texts_are_from_values() {
        let cases = [json!({"a": 1, "b": "x"}), json!({"a": 300}), json!({"b": "x"}), json!({"a": 1, "c": 2}), json!({"a": "1"}), json!([1]), json!(null), json!({"a": 1.5})];
        for v in cases {
            let ours = from_value::<S>(v.clone()).map_err(|e| e.to_string());
            let theirs = serde_json::from_value::<S>(v.clone()).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{v}");
        }
    }
}
