//! The frame encoder (`transport::json`, with its word-at-a-time string escaping) writes what
//! serde_json writes, byte for byte, with U+2028 / U+2029 escaped: checked on arbitrary strings
//! (every character class the escaper treats apart, at every offset within a word) and on
//! arbitrary JSON values, through `write_json` and through the frame encoder the writer uses.

use agentwire::transport::encode_frame;
use agentwire::transport::json::{write_json, write_str};
use proptest::prelude::*;
use serde_json::Value;

/// serde_json's compact text with the two line separators escaped.
fn reference<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap().replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")
}

/// Strings dense in what the escaper looks at: quotes, backslashes, every control byte, DEL,
/// the separators, other characters sharing their lead byte 0xE2 (U+2027, U+202A, U+20AC, U+2713)
/// and multi-byte characters, mixed with clean ASCII runs of every length.
fn tricky_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9 ]{0,17}",
        1 => Just("\"".to_owned()),
        1 => Just("\\".to_owned()),
        2 => (0u8..0x20).prop_map(|b| char::from(b).to_string()),
        1 => Just("\u{7f}".to_owned()),
        2 => prop::sample::select(vec!['\u{2028}', '\u{2029}', '\u{2027}', '\u{202A}', '\u{20AC}', '\u{2713}', 'é', '中', '😀']).prop_map(|c| c.to_string()),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

/// Arbitrary JSON values (strings from [`tricky_string`] and from any characters, keys too).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(Value::from),
        tricky_string().prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop_oneof![tricky_string(), any::<String>()], inner), 0..6).prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn strings_are_escaped_exactly_as_serde_json_plus_the_separators(s in prop_oneof![tricky_string(), any::<String>()]) {
        let mut out = Vec::new();
        write_str(&mut out, &s);
        prop_assert_eq!(String::from_utf8(out).unwrap(), reference(&s));
    }

    #[test]
    fn values_are_written_exactly_as_serde_json_plus_the_separators(v in json_value()) {
        let mut out = b"earlier frame\n".to_vec();
        write_json(&mut out, &v).unwrap();
        prop_assert_eq!(String::from_utf8(out).unwrap(), format!("earlier frame\n{}", reference(&v)));
        let frame = encode_frame(&v).unwrap();
        prop_assert_eq!(String::from_utf8(frame).unwrap(), format!("{}\n", reference(&v)));
    }
}
