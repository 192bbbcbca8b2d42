//! The one way protocol types are decoded: from JSON text, through serde_json's text
//! deserializer. Every generated type gets a deserializer instance per deserializer type it is
//! read through, and the text one is needed anyway (lines arrive as text); reading the same
//! types from a `serde_json::Value` too would compile every struct's visitor a second time (over
//! a megabyte of the release binary). So a `Value` in hand is written back to text and read from
//! there ([`from_value`]): its keys are unique, so the result is what `serde_json::from_value`
//! gives, and so is the error text ([`from_str`] leaves out the position a text parse adds,
//! which a `Value` has none of).

use serde::de::DeserializeOwned;
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
