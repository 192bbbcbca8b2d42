//! A JSON document read once, borrowing from its text: what the generated validators check.
//!
//! `serde_json::Value` builds a tree of owned strings and, with `preserve_order`, an `IndexMap`
//! (SipHash) per object: most of what an inbound rpc line cost before the typed parse. [`Doc`]
//! is the same tree with strings borrowed from the line when they have no escapes and objects
//! as a list of members in order, parsed by serde_json's own parser (so the same numbers, the
//! same depth limit, the same rejections and error texts).
//!
//! It means exactly what the `Value` would: a repeated key keeps its first position and takes
//! the last value (what `IndexMap::insert` does). Two inputs read differently from a `Value`
//! and are reported by [`Parsed::same_as_value`] being `false`: a repeated key (the typed
//! parse from text would refuse it where the `Value` path takes the last value) and an object
//! whose first key is serde_json's private raw-value token (which the `Value` parse turns into
//! the document inside the string). Callers holding a `Value` borrow it with
//! [`Doc::from_value`].

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};

/// The key serde_json's `Value` parse treats as "the string holds a raw JSON document".
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Above this many members an object being parsed finds repeated keys through a hash map
/// instead of a scan (a line of 100k distinct keys must not cost 10^10 comparisons).
const SCAN_LIMIT: usize = 16;

/// One JSON value, its strings borrowed from the text they were read from when possible.
#[derive(Debug, Clone, PartialEq)]
pub enum Doc<'a> {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(Number),
    /// A string: borrowed when its text had no escapes.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Doc<'a>>),
    /// An object.
    Object(Members<'a>),
}

/// An object's members in document order, each key once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Members<'a> {
    list: Vec<(Cow<'a, str>, Doc<'a>)>,
}

/// A document parsed from text.
#[derive(Debug)]
pub struct Parsed<'a> {
    /// The document.
    pub doc: Doc<'a>,
    /// Whether the text had neither a repeated key nor serde_json's raw-value token (see the
    /// module docs): then typed parses from the text agree with parses from the `Value`.
    pub same_as_value: bool,
}

impl<'a> Doc<'a> {
    /// Parses `text` (one JSON document, surrounding whitespace allowed) with serde_json's parser.
    pub fn parse(text: &'a str) -> Result<Parsed<'a>, serde_json::Error> {
        let odd = Cell::new(false);
        let mut de = serde_json::Deserializer::from_str(text);
        let doc = Seed { odd: &odd }.deserialize(&mut de)?;
        de.end()?;
        Ok(Parsed { doc, same_as_value: !odd.get() })
    }

    /// The document a `Value` holds, its strings borrowed from it.
    pub fn from_value(value: &'a Value) -> Self {
        match value {
            Value::Null => Doc::Null,
            Value::Bool(b) => Doc::Bool(*b),
            Value::Number(n) => Doc::Number(n.clone()),
            Value::String(s) => Doc::String(Cow::Borrowed(s)),
            Value::Array(items) => Doc::Array(items.iter().map(Doc::from_value).collect()),
            Value::Object(map) => Doc::Object(Members { list: map.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), Doc::from_value(v))).collect() }),
        }
    }

    /// The same document as an owned `Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Doc::Null => Value::Null,
            Doc::Bool(b) => Value::Bool(*b),
            Doc::Number(n) => Value::Number(n.clone()),
            Doc::String(s) => Value::String(s.as_ref().to_owned()),
            Doc::Array(items) => Value::Array(items.iter().map(Doc::to_value).collect()),
            Doc::Object(members) => Value::Object(members.iter().map(|(k, v)| (k.to_owned(), v.to_value())).collect::<Map<_, _>>()),
        }
    }

    /// The members, when this is an object.
    #[inline]
    pub fn as_object(&self) -> Option<&Members<'a>> {
        match self {
            Doc::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The items, when this is an array.
    #[inline]
    pub fn as_array(&self) -> Option<&[Doc<'a>]> {
        match self {
            Doc::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The text, when this is a string.
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Doc::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value, when this is a boolean.
    #[inline]
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Doc::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Whether this is `null`.
    #[inline]
    pub fn is_null(&self) -> bool {
        matches!(self, Doc::Null)
    }

    /// The number, when this is one.
    #[inline]
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Doc::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The number as `f64`, when this is one.
    #[inline]
    pub fn as_f64(&self) -> Option<f64> {
        self.as_number().and_then(Number::as_f64)
    }

    /// The member `key`, when this is an object that has it.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Doc<'a>> {
        self.as_object()?.get(key)
    }
}

impl<'a> Members<'a> {
    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Doc<'a>> {
        self.list.iter().find(|(k, _)| k.as_ref() == key).map(|(_, v)| v)
    }

    /// Whether `key` is a member.
    #[inline]
    pub fn contains_key(&self, key: &str) -> bool {
        self.list.iter().any(|(k, _)| k.as_ref() == key)
    }

    /// How many members there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The members in document order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Doc<'a>)> {
        self.list.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

impl<'m, 'a> IntoIterator for &'m Members<'a> {
    type Item = (&'m str, &'m Doc<'a>);
    type IntoIter = std::iter::Map<std::slice::Iter<'m, (Cow<'a, str>, Doc<'a>)>, fn(&'m (Cow<'a, str>, Doc<'a>)) -> (&'m str, &'m Doc<'a>)>;

    fn into_iter(self) -> Self::IntoIter {
        self.list.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

/// The compact JSON text, as `Value`'s `Display` writes it (the validators' messages quote
/// values this way).
impl fmt::Display for Doc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl serde::Serialize for Doc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Doc::Null => s.serialize_unit(),
            Doc::Bool(b) => s.serialize_bool(*b),
            Doc::Number(n) => n.serialize(s),
            Doc::String(text) => s.serialize_str(text),
            Doc::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Doc::Object(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (k, v) in members {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// The parse of one value; `odd` is set when something is read differently from a `Value`.
struct Seed<'s> {
    odd: &'s Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Doc<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Doc<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Doc<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Doc<'de>, E> {
        Ok(Doc::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Doc<'de>, E> {
        Ok(Doc::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Doc<'de>, E> {
        Ok(Doc::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Doc<'de>, E> {
        // As `Value`: a non-finite float (which the parser never yields) is `null`.
        Ok(Number::from_f64(n).map_or(Doc::Null, Doc::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Doc<'de>, E> {
        Ok(Doc::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Doc<'de>, E> {
        Ok(Doc::String(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E>(self, s: String) -> Result<Doc<'de>, E> {
        Ok(Doc::String(Cow::Owned(s)))
    }

    fn visit_unit<E>(self) -> Result<Doc<'de>, E> {
        Ok(Doc::Null)
    }

    fn visit_none<E>(self) -> Result<Doc<'de>, E> {
        Ok(Doc::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(Seed { odd: self.odd })? {
            items.push(item);
        }
        Ok(Doc::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc<'de>, A::Error> {
        let mut list: Vec<(Cow<'de, str>, Doc<'de>)> = Vec::new();
        // Built once an object outgrows a scan: key → position.
        let mut index: Option<HashMap<Cow<'de, str>, usize>> = None;
        while let Some(key) = map.next_key_seed(BorrowedStr)? {
            if list.is_empty() && key == RAW_VALUE_TOKEN {
                self.odd.set(true);
            }
            let value = map.next_value_seed(Seed { odd: self.odd })?;
            let at = match &index {
                Some(index) => index.get(key.as_ref()).copied(),
                None => list.iter().position(|(k, _)| *k == key),
            };
            match at {
                // `IndexMap::insert`: the first position, the last value.
                Some(at) => {
                    self.odd.set(true);
                    list[at].1 = value;
                }
                None => {
                    if let Some(index) = &mut index {
                        index.insert(key.clone(), list.len());
                    } else if list.len() == SCAN_LIMIT {
                        let mut built: HashMap<Cow<'de, str>, usize> = list.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
                        built.insert(key.clone(), list.len());
                        index = Some(built);
                    }
                    list.push((key, value));
                }
            }
        }
        Ok(Doc::Object(Members { list }))
    }
}

/// A string (an object key, a tag), borrowed from the text when it has no escapes.
pub(crate) struct BorrowedStr;

impl<'de> DeserializeSeed<'de> for BorrowedStr {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for BorrowedStr {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Value` parse and the `Doc` parse of `text` agree: both fail with the same message,
    /// or the document is the value (order included) and prints the same.
    fn agrees(text: &str) -> Option<Parsed<'_>> {
        let value = serde_json::from_str::<Value>(text);
        let doc = Doc::parse(text);
        match (value, doc) {
            (Ok(v), Ok(parsed)) => {
                if parsed.same_as_value {
                    assert_eq!(parsed.doc.to_value(), v, "{text}");
                    let keys = |v: &Value| v.as_object().map(|m| m.keys().cloned().collect::<Vec<_>>());
                    assert_eq!(keys(&parsed.doc.to_value()), keys(&v), "{text}");
                    assert_eq!(parsed.doc.to_string(), v.to_string(), "{text}");
                }
                assert_eq!(Doc::from_value(&v).to_value(), v);
                Some(parsed)
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "{text}");
                None
            }
            (a, b) => panic!("{text}: value {a:?}, doc {:?}", b.map(|p| p.doc)),
        }
    }

    #[test]
    fn repeated_keys_keep_the_first_position_and_the_last_value() {
        let parsed = agrees(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert!(!parsed.same_as_value);
        let value: Value = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(parsed.doc.to_value(), value);
        assert_eq!(parsed.doc.to_string(), r#"{"a":3,"b":2}"#);
        // Past the scan limit the index finds them as well.
        let mut text = String::from("{");
        for i in 0..40 {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        text.push_str("\"k3\":\"again\",\"k39\":null}");
        let parsed = agrees(&text).unwrap();
        assert!(!parsed.same_as_value);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed.doc.to_value(), value);
        assert_eq!(parsed.doc.to_string(), value.to_string());
        assert_eq!(parsed.doc.as_object().unwrap().len(), 40);
        // Nested, and distinct keys are not "repeated".
        assert!(!agrees(r#"{"x":{"y":1,"y":2}}"#).unwrap().same_as_value);
        assert!(agrees(r#"{"x":{"y":1},"y":{"x":2}}"#).unwrap().same_as_value);
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let parsed = agrees(r#"{"plain":"text","esc\u0041":"a\nb\u00e9\ud83d\ude00"}"#).unwrap();
        let members: Vec<_> = parsed.doc.as_object().unwrap().iter().collect();
        assert_eq!(members[0].0, "plain");
        assert!(matches!(members[0].1, Doc::String(Cow::Borrowed("text"))));
        assert_eq!(members[1].0, "escA");
        assert!(matches!(members[1].1, Doc::String(Cow::Owned(s)) if s == "a\nbé😀"));
        agrees(r#""\u2028 \"q\" \\ \/""#);
    }

    #[test]
    fn numbers_read_as_value_reads_them() {
        for text in [
            "0", "-0", "1", "-1", "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809", "1.0", "1e2",
            "1.5e-7", "-0.0", "123456789012345678901234567890", "1e308", "[1,2.5,-3]",
        ] {
            agrees(text).unwrap();
        }
    }

    #[test]
    fn rejections_match_value() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let deep_objects = format!("{}1{}", "{\"a\":".repeat(130), "}".repeat(130));
        for text in ["1e400", "-1e400", r#""\ud800""#, r#"{"a":"\udc00x"}"#, "{", "[1,]", "{\"a\" 1}", "{} x", "", "nul", "01", &deep, &deep_objects] {
            assert!(agrees(text).is_none(), "{text}");
        }
        // Just under the limit both accept.
        let ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        agrees(&ok).unwrap();
    }

    #[test]
    fn the_raw_value_token_is_flagged() {
        let text = r#"{"$serde_json::private::RawValue":"[1,2]"}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(value, serde_json::json!([1, 2]));
        let parsed = Doc::parse(text).unwrap();
        assert!(!parsed.same_as_value);
        // Not first: an ordinary member for both.
        assert!(agrees(r#"{"a":1,"$serde_json::private::RawValue":"[1,2]"}"#).unwrap().same_as_value);
    }

    #[test]
    fn accessors() {
        let parsed = Doc::parse(r#" {"s":"x","n":2.5,"b":true,"z":null,"a":[1]} "#).unwrap();
        let d = &parsed.doc;
        assert_eq!(d.get("s").and_then(Doc::as_str), Some("x"));
        assert_eq!(d.get("n").and_then(Doc::as_f64), Some(2.5));
        assert_eq!(d.get("b").and_then(Doc::as_bool), Some(true));
        assert!(d.get("z").is_some_and(Doc::is_null));
        assert_eq!(d.get("a").and_then(Doc::as_array).map(<[_]>::len), Some(1));
        assert!(d.as_object().unwrap().contains_key("a") && !d.as_object().unwrap().contains_key("q"));
        assert_eq!(d.get("missing"), None);
    }
}
