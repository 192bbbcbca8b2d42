//! What the schema interpreter (`super::program`) reports with: where a value sits in the
//! frame, where violations go, and the comparisons and messages of the keywords.
//!
//! The checked document is a [`Doc`]: the rpc decoder's parse of the line (strings borrowed
//! from it, objects as member lists), or a `Value` borrowed as one ([`Doc::from_value`]).
//!
//! A valid frame costs no allocation: the location of a value is a chain of borrowed segments
//! on the stack, turned into a JSON pointer only when a violation is reported, and messages are
//! built by closures that a quiet check (the members of a `oneOf` / `anyOf`, `not`) never calls.

use std::fmt::Write as _;

use serde_json::Number;

use super::doc::Doc;

/// Where a value sits inside the checked document.
#[derive(Debug, Clone, Copy)]
pub struct Loc<'a> {
    up: Option<&'a Loc<'a>>,
    seg: Seg<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Seg<'a> {
    /// A JSON pointer the whole check starts at (`/params`, or empty).
    Base(&'a str),
    /// An object member.
    Key(&'a str),
    /// An array item.
    Index(usize),
}

impl<'a> Loc<'a> {
    /// The top of a check; `base` is the pointer of the checked value inside its frame.
    pub fn root(base: &'a str) -> Self {
        Self { up: None, seg: Seg::Base(base) }
    }

    /// The member `key` of the object here.
    pub fn key<'b>(&'b self, key: &'b str) -> Loc<'b> {
        Loc { up: Some(self), seg: Seg::Key(key) }
    }

    /// The item `index` of the array here.
    pub fn index(&self, index: usize) -> Loc<'_> {
        Loc { up: Some(self), seg: Seg::Index(index) }
    }

    /// The JSON pointer (RFC 6901: `~` and `/` escaped).
    pub fn pointer(&self) -> String {
        // Sized for the usual few segments, so the pushes below do not grow it step by step.
        let mut out = String::with_capacity(32);
        self.write_pointer(&mut out);
        out
    }

    /// Writes the pointer of the enclosing values, then this segment (no list of the chain
    /// is built: the depth is the document's, which the parser bounds).
    fn write_pointer(&self, out: &mut String) {
        if let Some(up) = self.up {
            up.write_pointer(out);
        }
        match self.seg {
            Seg::Base(base) => out.push_str(base),
            Seg::Key(key) => {
                out.push('/');
                if key.contains(['~', '/']) {
                    for c in key.chars() {
                        match c {
                            '~' => out.push_str("~0"),
                            '/' => out.push_str("~1"),
                            c => out.push(c),
                        }
                    }
                } else {
                    out.push_str(key);
                }
            }
            Seg::Index(i) => {
                let _ = write!(out, "/{i}");
            }
        }
    }
}

/// One violation: the JSON pointer of the offending value and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the frame.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Where a check reports to. A quiet sink only remembers that something failed (and makes
/// the check stop at the first failure); a loud one collects up to `limit` violations.
#[derive(Debug)]
pub struct Sink {
    quiet: bool,
    limit: usize,
    failed: bool,
    /// How many violations are kept.
    kept: usize,
    /// The first one, held inline: a frame with one wrong field (the usual invalid frame)
    /// allocates no list.
    first: Option<Violation>,
    /// The ones after it.
    more: Vec<Violation>,
}

impl Sink {
    /// A sink that collects up to `limit` violations.
    pub fn collecting(limit: usize) -> Self {
        Self { quiet: false, limit: limit.max(1), failed: false, kept: 0, first: None, more: Vec::new() }
    }

    /// A sink that only answers "valid or not", stopping at the first failure.
    pub fn quiet() -> Self {
        Self { quiet: true, limit: 1, failed: false, kept: 0, first: None, more: Vec::new() }
    }

    /// Whether nothing failed.
    pub fn ok(&self) -> bool {
        !self.failed
    }

    /// Whether the check can stop: quiet and failed, or the limit reached.
    #[inline]
    pub fn done(&self) -> bool {
        self.failed && (self.quiet || self.kept >= self.limit)
    }

    /// Records a violation at `at`; `message` runs only when the violation is kept.
    ///
    /// Only building the message is generic (inlined where it is reported, on the failing
    /// branch); the rest is two non-generic functions.
    #[inline(always)]
    pub fn fail(&mut self, at: &Loc<'_>, message: impl FnOnce() -> String) {
        if self.failing() {
            self.keep(at, message());
        }
    }

    /// Marks the check failed; whether the violation is to be kept.
    #[cold]
    #[inline(never)]
    fn failing(&mut self) -> bool {
        self.failed = true;
        !self.quiet && self.kept < self.limit
    }

    #[cold]
    #[inline(never)]
    fn keep(&mut self, at: &Loc<'_>, message: String) {
        let found = Violation { path: at.pointer(), message };
        self.kept += 1;
        match self.first {
            None => self.first = Some(found),
            Some(_) => self.more.push(found),
        }
    }

    /// The violations found, in the order they were found: the first and the others.
    pub fn into_violations(self) -> Option<(Violation, Vec<Violation>)> {
        self.first.map(|first| (first, self.more))
    }
}

/// JSON types as bits, for `type` keywords (`INTEGER` is also a `NUMBER`).
pub mod types {
    /// `null`
    pub const NULL: u8 = 1;
    /// `boolean`
    pub const BOOLEAN: u8 = 2;
    /// `integer`
    pub const INTEGER: u8 = 4;
    /// `number`
    pub const NUMBER: u8 = 8;
    /// `string`
    pub const STRING: u8 = 16;
    /// `array`
    pub const ARRAY: u8 = 32;
    /// `object`
    pub const OBJECT: u8 = 64;
}

/// The JSON type bits of `v` (an integral number is both `integer` and `number`, as in
/// JSON Schema 2020-12, where `1.0` is an integer).
#[inline]
pub fn type_bits(v: &Doc<'_>) -> u8 {
    match v {
        Doc::Null => types::NULL,
        Doc::Bool(_) => types::BOOLEAN,
        Doc::Number(n) if is_integral(n) => types::INTEGER | types::NUMBER,
        Doc::Number(_) => types::NUMBER,
        Doc::String(_) => types::STRING,
        Doc::Array(_) => types::ARRAY,
        Doc::Object(_) => types::OBJECT,
    }
}

fn is_integral(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// `n < limit`, exactly for integers.
pub fn below(n: &Number, limit: f64) -> bool {
    match exact(n) {
        Some(i) if limit.fract() == 0.0 => i < limit as i128,
        _ => n.as_f64().is_some_and(|f| f < limit),
    }
}

/// `n > limit`, exactly for integers.
pub fn above(n: &Number, limit: f64) -> bool {
    match exact(n) {
        Some(i) if limit.fract() == 0.0 => i > limit as i128,
        _ => n.as_f64().is_some_and(|f| f > limit),
    }
}

fn exact(n: &Number) -> Option<i128> {
    n.as_u64().map(i128::from).or_else(|| n.as_i64().map(i128::from))
}

/// Whether an integral `n` fits `lo..=hi` (an integer `format` such as `uint32`); a
/// non-integral number is left to the `type` keyword.
pub fn fits(n: &Number, lo: i128, hi: i128) -> bool {
    let value = match exact(n) {
        Some(i) => i,
        None => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() != 0.0 {
                return true;
            }
            return f >= lo as f64 && f <= hi as f64;
        }
    };
    (lo..=hi).contains(&value)
}

/// The message of a failed `type` keyword, in jsonschema's words.
#[cold]
pub fn type_message(v: &Doc<'_>, names: &[&str]) -> String {
    match names {
        [one] => format!("{v} is not of type \"{one}\""),
        many => format!("{v} is not of types {}", many.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ")),
    }
}

/// The message of a failed `enum` keyword, in jsonschema's words; `candidates` is written by
/// the compiler (`src/codegen/validators.rs`), so a wrong value costs one `format!`.
#[cold]
pub fn enum_message(v: &Doc<'_>, candidates: &str) -> String {
    // `{v}` writes the compact text `to_string` gives; built in place, sized once.
    let mut message = serde_json::to_string(v).unwrap_or_default();
    message.reserve(" is not one of ".len() + candidates.len());
    message.push_str(" is not one of ");
    message.push_str(candidates);
    message
}

/// The message for a member of a closed object the schema does not declare, with the closest
/// declared name when one is near.
#[cold]
pub fn unknown_field_message(name: &str, known: &[&str]) -> String {
    let hint = super::validate::closest(name, known.iter().copied()).map(|k| format!(" (did you mean \"{k}\"?)")).unwrap_or_default();
    format!("unknown field \"{name}\"{hint}")
}

/// The message of a missing `required` member, in jsonschema's words.
#[cold]
pub fn required_message(name: &str) -> String {
    format!("{} is a required property", serde_json::Value::from(name))
}

/// The message for a tag no member of a discriminated union has.
#[cold]
pub fn unknown_tag_message(property: &str, tag: &str, expected: &[&str]) -> String {
    format!("unknown {property} \"{tag}\", expected one of {expected:?}")
}

/// `s` matches the schema's `pattern`, compiled once per process on first use.
pub fn matches(cell: &std::sync::OnceLock<Option<regex::Regex>>, pattern: &str, s: &str) -> bool {
    // The compiler admits only patterns that mean the same in ECMA-262, which JSON Schema
    // specifies, and in the regex crate. One that does not compile cannot be satisfied: the
    // schema is wrong, not the frame, but accepting would be laxer than it.
    cell.get_or_init(|| regex::Regex::new(pattern).ok()).as_ref().is_some_and(|re| re.is_match(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn pointers_escape_and_nest() {
        let root = Loc::root("/params");
        let a = root.key("a/b~c");
        let b = a.index(3);
        assert_eq!(b.pointer(), "/params/a~1b~0c/3");
        assert_eq!(Loc::root("").pointer(), "");
    }

    #[test]
    fn limits_are_exact_for_integers() {
        let n = |v: Value| v.as_number().cloned().unwrap();
        assert!(below(&n(json!(-1)), 0.0));
        assert!(!below(&n(json!(0)), 0.0));
        assert!(below(&n(json!(0)), 1.0));
        assert!(!below(&n(json!(u64::MAX)), 0.0));
        assert!(below(&n(json!(0.5)), 1.0));
        assert!(above(&n(json!(2)), 1.0));
        assert!(!above(&n(json!(1)), 1.0));
        assert!(above(&n(json!(1.5)), 1.0));
        assert!(!above(&n(json!(-3)), 1.0));
        assert!(fits(&n(json!(4_294_967_295u64)), 0, i128::from(u32::MAX)));
        assert!(!fits(&n(json!(4_294_967_296u64)), 0, i128::from(u32::MAX)));
        assert!(!fits(&n(json!(-1)), 0, i128::from(u32::MAX)));
    }
}
