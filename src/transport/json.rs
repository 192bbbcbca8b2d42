//! Compact JSON text written straight into a byte buffer: the encoder of every outbound frame.
//!
//! The text is serde_json's compact output byte for byte, with one addition: U+2028 and U+2029
//! are written `\u2028` / `\u2029` (hosts that split lines with `readline` or `splitlines` would
//! cut a frame there; inside a JSON string the escape means the same character, and the two
//! cannot occur outside strings). What differs is the cost of strings, most of a frame's bytes:
//! serde_json looks every byte up in a table and hands each clean run to its formatter, so a
//! 730-byte `get_state` answer spent more on escaping than on everything else. Here a string is
//! scanned eight bytes at a time for the bytes that need anything (`"`, `\`, control bytes below
//! 0x20 and 0xE2, the lead byte of the two separators) and every clean run is copied with one
//! `extend_from_slice`. Numbers go through serde_json's own formatter (the same digits), and
//! `RawValue`s (pre-serialized text) are copied with only the separators escaped, as before.
//!
//! `tests` below and the proptest in `tests/json_encoder.rs` hold it to serde_json's output.

use serde::ser::{self, Impossible, Serialize};
use serde_json::ser::Formatter as _;

type Error = serde_json::Error;
type Result<T> = std::result::Result<T, Error>;

/// The struct name serde_json gives a `RawValue` (its text goes out as it is).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";
/// The struct name serde_json gives a `Number` when `arbitrary_precision` is on anywhere in the
/// build (its digits go out as they are).
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Appends `value` as compact JSON to `out` (see the module docs). On error `out` may hold part
/// of the value; the caller truncates.
pub fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<()> {
    value.serialize(Encoder { out })
}

/// Appends `s` as a JSON string (quotes included), escaped as serde_json escapes it plus
/// U+2028 / U+2029.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    write_str_contents(out, s.as_bytes());
    out.push(b'"');
}

/// Bytes that may need an escape: `1` for `"`, `\`, bytes below 0x20 and 0xE2.
static SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table[0xE2] = true;
    table
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The special bytes (see [`SPECIAL`]) of the eight in `word`, each as its high bit. The
/// lowest bit set is exact: the zero-byte test `(x - 1) & !x & 0x80` can mark a byte above a
/// zero byte (the borrow runs upwards), never one below the first, and the below-0x20 test
/// likewise. So `trailing_zeros / 8` is the place of the first special byte, and the mask is
/// zero only when the word has none.
#[inline(always)]
fn special_mask(word: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let below_0x20 = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    below_0x20 | zero(word ^ (ONES * u64::from(b'"'))) | zero(word ^ (ONES * u64::from(b'\\'))) | zero(word ^ (ONES * 0xE2))
}

/// Whether any byte of the eight in `word` is special.
#[inline(always)]
fn has_special(word: u64) -> bool {
    special_mask(word) != 0
}

/// The eight bytes of `bytes` from `at` (which has eight bytes from there).
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// Whether no byte of `bytes` needs a look (see [`SPECIAL`]), the common case: whole words,
/// the last one overlapping the one before; four to seven bytes as two overlapping halves; the
/// shortest byte by byte.
#[inline]
fn is_clean(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n >= 8 {
        let mut at = 0;
        while at + 8 <= n {
            if has_special(word_at(bytes, at)) {
                return false;
            }
            at += 8;
        }
        at == n || !has_special(word_at(bytes, n - 8))
    } else if n >= 4 {
        let half = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes")));
        !has_special(half(0) | half(n - 4) << 32)
    } else {
        !bytes.iter().any(|&b| SPECIAL[usize::from(b)])
    }
}

/// Escapes `bytes` (valid UTF-8) into `out`: a clean string is copied whole; otherwise each
/// special byte is found a word at a time (its place read off the word's mask, not by walking
/// the word), and the clean run before it is copied whole.
fn write_str_contents(out: &mut Vec<u8>, bytes: &[u8]) {
    if is_clean(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    let mut start = 0; // the clean run not yet copied begins here
    let mut i = 0;
    while i < bytes.len() {
        // The next special byte at or after `i`.
        let at = if i + 8 <= bytes.len() {
            let mask = special_mask(word_at(bytes, i));
            if mask == 0 {
                i += 8;
                continue;
            }
            i + (mask.trailing_zeros() / 8) as usize
        } else {
            match bytes[i..].iter().position(|&b| SPECIAL[usize::from(b)]) {
                Some(offset) => i + offset,
                None => break,
            }
        };
        // The escapes are written as arrays of known length (a store, not a `memcpy` call per
        // escape: a message quoting a few values has several).
        let letter = |letter: u8| ([b'\\', letter, 0, 0, 0, 0], 2usize);
        let (escape, length) = match bytes[at] {
            b'"' => letter(b'"'),
            b'\\' => letter(b'\\'),
            0x08 => letter(b'b'),
            0x09 => letter(b't'),
            0x0A => letter(b'n'),
            0x0C => letter(b'f'),
            0x0D => letter(b'r'),
            0xE2 => match bytes.get(at + 1..at + 3) {
                Some([0x80, 0xA8]) => (*b"\\u2028", 6),
                Some([0x80, 0xA9]) => (*b"\\u2029", 6),
                // Another character with the same lead byte: nothing to do.
                _ => {
                    i = at + 1;
                    continue;
                }
            },
            control => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                ([b'\\', b'u', b'0', b'0', HEX[usize::from(control >> 4)], HEX[usize::from(control & 0xF)]], 6)
            }
        };
        out.extend_from_slice(&bytes[start..at]);
        // Two fixed lengths, so each is a store, not a copy of a computed length.
        if length == 2 {
            out.extend_from_slice(&escape[..2]);
        } else {
            out.extend_from_slice(&escape);
        }
        // A separator is three bytes long.
        i = at + if bytes[at] == 0xE2 { 3 } else { 1 };
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Appends pre-serialized JSON text with only U+2028 / U+2029 escaped (JSON text has them only
/// inside strings, where the escape means the same character).
fn write_raw(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    // Raw text is usually long (a whole answer): memchr's vector scan is the cheap one.
    if memchr::memchr(0xE2, bytes).is_none() {
        out.extend_from_slice(bytes);
        return;
    }
    let mut from = 0;
    for at in memchr::memchr_iter(0xE2, bytes) {
        let escape: &[u8] = match bytes.get(at + 1..at + 3) {
            Some([0x80, 0xA8]) => b"\\u2028",
            Some([0x80, 0xA9]) => b"\\u2029",
            _ => continue,
        };
        out.extend_from_slice(&bytes[from..at]);
        out.extend_from_slice(escape);
        from = at + 3;
    }
    out.extend_from_slice(&bytes[from..]);
}

/// Invokes `$methods!` with every integer method of a serializer and its formatter method.
macro_rules! integers {
    ($methods:ident) => {
        $methods! {
            serialize_i8: i8 => write_i8,
            serialize_i16: i16 => write_i16,
            serialize_i32: i32 => write_i32,
            serialize_i64: i64 => write_i64,
            serialize_i128: i128 => write_i128,
            serialize_u8: u8 => write_u8,
            serialize_u16: u16 => write_u16,
            serialize_u32: u32 => write_u32,
            serialize_u64: u64 => write_u64,
            serialize_u128: u128 => write_u128,
        }
    };
}

/// Number methods: the digits are serde_json's (its formatter: itoa and its float printer).
/// Writing into a `Vec` cannot fail.
macro_rules! numbers {
    ($($method:ident: $ty:ty => $write:ident,)*) => {$(
        fn $method(self, v: $ty) -> Result<()> {
            let _ = serde_json::ser::CompactFormatter.$write(self.out, v);
            Ok(())
        }
    )*};
}

/// `serialize_char` and `serialize_str`: a JSON string (values and keys alike).
macro_rules! strings {
    () => {
        fn serialize_char(self, v: char) -> Result<()> {
            write_str(self.out, v.encode_utf8(&mut [0; 4]));
            Ok(())
        }
        fn serialize_str(self, v: &str) -> Result<()> {
            write_str(self.out, v);
            Ok(())
        }
    };
}

/// The serializer: compact JSON into `out`.
struct Encoder<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Encoder<'a> {
    /// Opens `{"variant":` for an externally tagged enum variant with content.
    fn open_variant(&mut self, variant: &str) {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
    }
}

impl<'a> ser::Serializer for Encoder<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    integers!(numbers);
    // NaN and the infinities have no JSON form: serde_json writes `null`.
    fn serialize_f32(self, v: f32) -> Result<()> {
        if !v.is_finite() {
            return self.serialize_unit();
        }
        let _ = serde_json::ser::CompactFormatter.write_f32(self.out, v);
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        if !v.is_finite() {
            return self.serialize_unit();
        }
        let _ = serde_json::ser::CompactFormatter.write_f64(self.out, v);
        Ok(())
    }
    strings!();
    // serde_json writes bytes as an array of numbers.
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for byte in v {
            ser::SerializeSeq::serialize_element(&mut seq, byte)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<()> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(mut self, _name: &'static str, _index: u32, variant: &'static str, value: &T) -> Result<()> {
        self.open_variant(variant);
        value.serialize(Encoder { out: &mut *self.out })?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a>> {
        self.out.push(b'[');
        Ok(Compound::open(self.out, len == Some(0), b']'))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(mut self, _name: &'static str, _index: u32, variant: &'static str, len: usize) -> Result<Compound<'a>> {
        self.open_variant(variant);
        self.serialize_seq(Some(len)).map(Compound::in_variant)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'a>> {
        self.out.push(b'{');
        Ok(Compound::open(self.out, len == Some(0), b'}'))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a>> {
        match name {
            RAW_VALUE_TOKEN | NUMBER_TOKEN => Ok(Compound { out: self.out, state: State::Raw, close: b'}', in_variant: false }),
            _ => self.serialize_map(Some(len)),
        }
    }
    fn serialize_struct_variant(mut self, _name: &'static str, _index: u32, variant: &'static str, len: usize) -> Result<Compound<'a>> {
        self.open_variant(variant);
        self.serialize_map(Some(len)).map(Compound::in_variant)
    }
}

/// Where an array or object stands, as serde_json's `State` (plus the raw-text struct).
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Opened and already closed (a length of zero was announced).
    Empty,
    /// Nothing written inside yet.
    First,
    /// At least one element or entry written.
    Rest,
    /// A `RawValue` / `Number` struct: its one field is text to copy.
    Raw,
}

/// An open array or object.
struct Compound<'a> {
    out: &'a mut Vec<u8>,
    state: State,
    /// `]` or `}`.
    close: u8,
    /// Inside `{"variant":…}`: one more `}` at the end.
    in_variant: bool,
}

impl<'a> Compound<'a> {
    fn open(out: &'a mut Vec<u8>, empty: bool, close: u8) -> Self {
        if empty {
            out.push(close);
        }
        Self { out, state: if empty { State::Empty } else { State::First }, close, in_variant: false }
    }

    fn in_variant(self) -> Self {
        Self { in_variant: true, ..self }
    }

    /// The separator before an element or entry.
    fn next(&mut self) {
        if self.state == State::First {
            self.state = State::Rest;
        } else {
            self.out.push(b',');
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.next();
        value.serialize(Encoder { out: &mut *self.out })
    }

    fn finish(self) -> Result<()> {
        if self.state != State::Empty {
            self.out.push(self.close);
        }
        if self.in_variant {
            self.out.push(b'}');
        }
        Ok(())
    }
}

/// The four array-like compounds: every element or field is one more item of the array.
macro_rules! array_compounds {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                self.element(value)
            }
            fn end(self) -> Result<()> {
                self.finish()
            }
        }
    )*};
}

array_compounds!(SerializeSeq::serialize_element, SerializeTuple::serialize_element, SerializeTupleStruct::serialize_field, SerializeTupleVariant::serialize_field);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.next();
        key.serialize(MapKey { out: &mut *self.out })
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.out.push(b':');
        value.serialize(Encoder { out: &mut *self.out })
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<()> {
        if self.state == State::Raw {
            return value.serialize(RawText { out: &mut *self.out });
        }
        self.next();
        write_str(self.out, key);
        self.out.push(b':');
        value.serialize(Encoder { out: &mut *self.out })
    }
    fn end(self) -> Result<()> {
        if self.state == State::Raw {
            return Ok(());
        }
        self.finish()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<()> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

/// The associated types of a serializer that takes no compound value (a key, raw text).
macro_rules! scalar_only {
    () => {
        type Ok = ();
        type Error = Error;
        type SerializeSeq = Impossible<(), Error>;
        type SerializeTuple = Impossible<(), Error>;
        type SerializeTupleStruct = Impossible<(), Error>;
        type SerializeTupleVariant = Impossible<(), Error>;
        type SerializeMap = Impossible<(), Error>;
        type SerializeStruct = Impossible<(), Error>;
        type SerializeStructVariant = Impossible<(), Error>;
    };
}

/// Serializer methods that refuse their value with `$error()` (the kinds of value a
/// serializer cannot take: JSON has no form for them there).
macro_rules! refuse {
    ($error:ident; $($method:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {$(
        fn $method(self, $($arg: $ty),*) -> Result<$ret> {
            $(let _ = $arg;)*
            Err($error())
        }
    )*};
}

/// [`refuse`] for every compound value (arrays, objects and their variants).
macro_rules! refuse_compounds {
    ($error:ident) => {
        refuse! { $error;
            serialize_seq(len: Option<usize>) -> Self::SerializeSeq;
            serialize_tuple(len: usize) -> Self::SerializeTuple;
            serialize_tuple_struct(name: &'static str, len: usize) -> Self::SerializeTupleStruct;
            serialize_tuple_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> Self::SerializeTupleVariant;
            serialize_map(len: Option<usize>) -> Self::SerializeMap;
            serialize_struct(name: &'static str, len: usize) -> Self::SerializeStruct;
            serialize_struct_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> Self::SerializeStructVariant;
        }
    };
}

fn key_must_be_a_string() -> Error {
    ser::Error::custom("key must be a string")
}

fn float_key_must_be_finite() -> Error {
    ser::Error::custom("float key must be finite (got NaN or +/-inf)")
}

/// An object key: a string, or what serde_json turns into one (numbers, booleans, chars, unit
/// variants, newtypes of those); anything else is the error serde_json gives.
struct MapKey<'a> {
    out: &'a mut Vec<u8>,
}

impl MapKey<'_> {
    /// A key written as the quoted form of a number or boolean.
    fn quoted(self, write: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        self.out.push(b'"');
        write(self.out);
        self.out.push(b'"');
        Ok(())
    }
}

macro_rules! quoted_number_key {
    ($($method:ident: $ty:ty => $write:ident,)*) => {$(
        fn $method(self, v: $ty) -> Result<()> {
            self.quoted(|out| {
                let _ = serde_json::ser::CompactFormatter.$write(out, v);
            })
        }
    )*};
}

impl ser::Serializer for MapKey<'_> {
    scalar_only!();

    integers!(quoted_number_key);

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.quoted(|out| out.extend_from_slice(if v { b"true" } else { b"false" }))
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        if !v.is_finite() {
            return Err(float_key_must_be_finite());
        }
        self.quoted(|out| {
            let _ = serde_json::ser::CompactFormatter.write_f32(out, v);
        })
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        if !v.is_finite() {
            return Err(float_key_must_be_finite());
        }
        self.quoted(|out| {
            let _ = serde_json::ser::CompactFormatter.write_f64(out, v);
        })
    }
    strings!();
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<()> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _name: &'static str, _index: u32, _variant: &'static str, _value: &T) -> Result<()> {
        Err(key_must_be_a_string())
    }
    refuse_compounds!(key_must_be_a_string);
    refuse! { key_must_be_a_string;
        serialize_bytes(v: &[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(name: &'static str) -> ();
    }
}

/// The one field of a `RawValue` (or arbitrary-precision `Number`): a string of JSON text,
/// copied as it is.
struct RawText<'a> {
    out: &'a mut Vec<u8>,
}

fn expected_raw_text() -> Error {
    ser::Error::custom("expected pre-serialized JSON text")
}

impl ser::Serializer for RawText<'_> {
    scalar_only!();

    fn serialize_str(self, v: &str) -> Result<()> {
        write_raw(self.out, v);
        Ok(())
    }
    refuse_compounds!(expected_raw_text);
    refuse! { expected_raw_text;
        serialize_bool(v: bool) -> ();
        serialize_i8(v: i8) -> ();
        serialize_i16(v: i16) -> ();
        serialize_i32(v: i32) -> ();
        serialize_i64(v: i64) -> ();
        serialize_u8(v: u8) -> ();
        serialize_u16(v: u16) -> ();
        serialize_u32(v: u32) -> ();
        serialize_u64(v: u64) -> ();
        serialize_f32(v: f32) -> ();
        serialize_f64(v: f64) -> ();
        serialize_char(v: char) -> ();
        serialize_bytes(v: &[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(name: &'static str) -> ();
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str) -> ();
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<()> {
        Err(expected_raw_text())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, _value: &T) -> Result<()> {
        Err(expected_raw_text())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _name: &'static str, _index: u32, _variant: &'static str, _value: &T) -> Result<()> {
        Err(expected_raw_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// serde_json's compact text with the two separators escaped: what the encoder must write.
    fn reference<T: Serialize + ?Sized>(value: &T) -> String {
        serde_json::to_string(value).unwrap().replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")
    }

    fn ours<T: Serialize + ?Sized>(value: &T) -> String {
        let mut out = Vec::new();
        write_json(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them_plus_the_separators() {
        let cases = [
            "",
            "plain",
            "exactly8",
            "sixteen bytes!!!",
            "\"",
            "\\",
            "a\"b\\c",
            "\u{0}\u{1}\u{7}\u{8}\u{9}\u{a}\u{b}\u{c}\u{d}\u{e}\u{1f}\u{7f}",
            "line one\nline two\r\n\ttabbed",
            "\u{2028}",
            "x\u{2029}",
            "a\u{2028}b\u{2029}c é \u{2027}\u{202A}\u{20AC}€ ✓",
            "long clean run then at the end of the word a quote\"",
            "𝄞 and ü and 中文 mixed with \"quotes\" and \\backslashes\\ across word edges......",
            "\u{2028}\u{2028}\u{2029}1234567\u{2029}",
        ];
        for s in cases {
            assert_eq!(ours(s), reference(s), "{s:?}");
        }
    }

    #[test]
    fn values_of_every_shape_match_serde_json() {
        let value = json!({
            "null": null, "t": true, "f": false, "i": -12, "u": 18446744073709551615u64, "x": 1.5, "e": 1e300, "small": 1e-7,
            "zero": 0.0, "neg": -0.0, "arr": [], "obj": {}, "nested": [{"a": [1, [2, {"b": "c\u{2028}"}]]}], "k\u{2029}ey": "v",
        });
        assert_eq!(ours(&value), reference(&value));
        assert_eq!(ours(&f64::NAN), "null");
        assert_eq!(ours(&f32::INFINITY), "null");
        assert_eq!(ours(&1.25f32), reference(&1.25f32));
        assert_eq!(ours(&b"ab"[..]), reference(&b"ab"[..]));
        assert_eq!(ours(&serde_bytes_like(b"ab")), "[97,98]");
        assert_eq!(ours(&'"'), reference(&'"'));
        assert_eq!(ours(&(1, "two", [3u8])), reference(&(1, "two", [3u8])));
    }

    /// A type that serializes through `serialize_bytes`.
    fn serde_bytes_like(bytes: &'static [u8]) -> impl Serialize {
        struct Bytes(&'static [u8]);
        impl Serialize for Bytes {
            fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        Bytes(bytes)
    }

    #[test]
    fn enums_maps_with_odd_keys_and_raw_values_match_serde_json() {
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            New(u8),
            Tuple(u8, String),
            EmptyTuple(),
            Struct { a: u8, b: Option<String> },
            EmptyStruct {},
        }
        #[derive(serde::Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged {
            One { x: u8 },
            Two(std::collections::BTreeMap<String, u8>),
        }
        #[derive(serde::Serialize)]
        struct Unit;
        #[derive(serde::Serialize)]
        struct Wrap(String);
        #[derive(serde::Serialize)]
        struct Frame<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u8>,
            raw: &'a serde_json::value::RawValue,
            list: Vec<E>,
            tagged: Vec<Tagged>,
            unit: Unit,
            wrap: Wrap,
        }
        let raw = serde_json::value::RawValue::from_string("{\"text\" : \"a\u{2028}b\"}".to_owned()).unwrap();
        let frame = Frame {
            skipped: None,
            raw: &raw,
            list: vec![E::Unit, E::New(1), E::Tuple(2, "t".into()), E::EmptyTuple(), E::Struct { a: 3, b: None }, E::EmptyStruct {}],
            tagged: vec![Tagged::One { x: 1 }, Tagged::Two([("k".to_owned(), 2)].into())],
            unit: Unit,
            wrap: Wrap("w\"".into()),
        };
        assert_eq!(ours(&frame), reference(&frame));
        let keys: std::collections::BTreeMap<i64, bool> = [(-1, true), (7, false)].into();
        assert_eq!(ours(&keys), reference(&keys));
        let keys: std::collections::BTreeMap<bool, u8> = [(true, 1)].into();
        assert_eq!(ours(&keys), reference(&keys));
        let keys: std::collections::BTreeMap<char, u8> = [('\n', 1)].into();
        assert_eq!(ours(&keys), reference(&keys));
        let mut out = Vec::new();
        let bad: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        assert_eq!(write_json(&mut out, &bad).unwrap_err().to_string(), serde_json::to_string(&bad).unwrap_err().to_string());
    }

    #[test]
    fn the_clean_test_sees_a_special_byte_at_every_length_and_position() {
        for len in 0..40 {
            let clean = vec![b'a'; len];
            assert!(is_clean(&clean), "{len}");
            for at in 0..len {
                for special in [0u8, 0x1F, b'"', b'\\', 0xE2] {
                    let mut bytes = clean.clone();
                    bytes[at] = special;
                    assert!(!is_clean(&bytes), "{special:#x} at {at} of {len}");
                }
            }
        }
    }

    #[test]
    fn the_word_test_finds_every_special_byte_in_every_position() {
        for special in (0u8..0x20).chain([b'"', b'\\', 0xE2]) {
            for at in 0..8 {
                let mut word = [b'a'; 8];
                word[at] = special;
                assert!(has_special(u64::from_le_bytes(word)), "{special:#x} at {at}");
            }
        }
        for clean in (0x20u8..=0xFF).filter(|b| !SPECIAL[usize::from(*b)]) {
            assert!(!has_special(u64::from_le_bytes([clean; 8])), "{clean:#x}");
        }
    }
}
