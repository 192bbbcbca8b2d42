//! The conformance harness: replays JSONL transcripts (`schema/transcript.schema.json`) against
//! an agent binary and says exactly which frame differed.
//!
//! Expected frames are patterns compared as JSON values, never bytes. Placeholder strings match
//! volatile values: `{{any}}`, `{{string}}`, `{{number}}`, `{{timestamp}}` (a number or an
//! RFC 3339 string), `{{path}}` (a string under the run's temporary directory) and
//! `{{capture:NAME}}` (anything the first time, then equal to that value); `{{tmp}}` inside a
//! longer string stands for the run's temporary directory, in patterns and in `in` frames.
//! `{{nonempty}}` is any non-empty string. Two object forms match values an agent chooses:
//! `{"$superset": [p, …]}` an array holding a distinct item for each pattern (in any order, other
//! items allowed: "the options include one of kind `allow_once`", capturing its id), and
//! `{"$anyOf": [p, …]}` a value matching one of the patterns, and `{"$contains": "text"}` a string
//! holding that text (wording a document leaves open, such as an HTTP status before a provider's
//! error message). `subset` lets a
//! pattern object omit keys; `optional` lines are skipped when the frame does not match (for
//! agentwire's own additions such as `ready`); `unordered` groups match in any order.

pub mod client;
pub mod error;
pub mod fake_llm;
pub mod import;
pub mod import_rpc;
pub mod matrix;
pub mod record;
pub mod requirements;
pub mod runner;
pub mod suite;

use std::collections::HashMap;

use serde_json::Value;

pub use error::{Mismatch, NotCaptured};

/// Inside a pattern string, stands for the run's temporary directory.
pub use crate::recording::TMP_PLACEHOLDER;

/// Matches patterns against frames, remembering captures across a transcript.
#[derive(Debug, Default, Clone)]
pub struct Matcher {
    captures: HashMap<String, Value>,
    /// Paths under this prefix match `{{path}}`.
    pub path_prefix: String,
}

impl Matcher {
    /// A matcher for a run whose temporary directory is `path_prefix`.
    pub fn new(path_prefix: impl Into<String>) -> Self {
        Self { captures: HashMap::new(), path_prefix: path_prefix.into() }
    }

    /// Whether `actual` matches `pattern`; `Err` says where and why not. Captures made by a
    /// failed match are rolled back.
    pub fn check(&mut self, pattern: &Value, actual: &Value, subset: bool) -> Result<(), Mismatch> {
        let saved = self.captures.clone();
        let result = self.walk(pattern, actual, subset, "");
        if result.is_err() {
            self.captures = saved;
        }
        result
    }

    /// `frame` with every `{{capture:NAME}}` string replaced by the captured value (for `in`
    /// frames that answer something the agent chose, such as a host tool call id) and `{{tmp}}`
    /// inside strings by the run's temporary directory (ACP's `session/new` needs an absolute
    /// `cwd`: `{{tmp}}/work`).
    pub fn substitute(&self, frame: &Value) -> Result<Value, NotCaptured> {
        match frame {
            Value::String(s) => match s.strip_prefix("{{capture:").and_then(|r| r.strip_suffix("}}")) {
                Some(name) => self.captures.get(name).cloned().ok_or_else(|| NotCaptured(name.to_owned())),
                None if s.contains(TMP_PLACEHOLDER) => Ok(Value::String(s.replace(TMP_PLACEHOLDER, &self.path_prefix))),
                None => Ok(frame.clone()),
            },
            Value::Array(items) => items.iter().map(|i| self.substitute(i)).collect::<Result<Vec<_>, _>>().map(Value::Array),
            Value::Object(map) => map.iter().map(|(k, v)| self.substitute(v).map(|v| (k.clone(), v))).collect::<Result<serde_json::Map<_, _>, _>>().map(Value::Object),
            other => Ok(other.clone()),
        }
    }

    fn walk(&mut self, pattern: &Value, actual: &Value, subset: bool, at: &str) -> Result<(), Mismatch> {
        let here = || if at.is_empty() { "/".to_owned() } else { at.to_owned() };
        let differs = |at: String, reason: String| Err(Mismatch { at, reason });
        if let Some(placeholder) = pattern.as_str().and_then(|s| s.strip_prefix("{{")).and_then(|s| s.strip_suffix("}}")) {
            let ok = match placeholder {
                "any" => true,
                "string" => actual.is_string(),
                "nonempty" => actual.as_str().is_some_and(|s| !s.is_empty()),
                "number" => actual.is_number(),
                "timestamp" => actual.is_number() || actual.as_str().is_some_and(|s| humantime::parse_rfc3339_weak(s).is_ok()),
                "path" => actual.as_str().is_some_and(|s| s.starts_with(&self.path_prefix)),
                other => match other.strip_prefix("capture:") {
                    Some(name) => match self.captures.get(name) {
                        Some(v) if v == actual => true,
                        Some(v) => return differs(here(), format!("expected the captured {name} = {v}, got {actual}")),
                        None => {
                            self.captures.insert(name.to_owned(), actual.clone());
                            true
                        }
                    },
                    None => return differs(here(), format!("unknown placeholder {{{{{other}}}}}")),
                },
            };
            return if ok { Ok(()) } else { differs(here(), format!("{actual} does not match {{{{{placeholder}}}}}")) };
        }
        if let Some(p) = pattern.as_str().filter(|p| p.contains(TMP_PLACEHOLDER)) {
            // A path inside a longer string (`Wrote 5 bytes to {{tmp}}/work/a.txt`).
            let expected = p.replace(TMP_PLACEHOLDER, &self.path_prefix);
            return if actual.as_str() == Some(expected.as_str()) { Ok(()) } else { differs(here(), format!("expected {expected:?}, got {actual}")) };
        }
        if let Some(needle) = contains(pattern) {
            return match actual.as_str() {
                Some(text) if text.contains(needle) => Ok(()),
                _ => differs(here(), format!("{actual} does not contain {needle:?}")),
            };
        }
        if let Some((form, alternatives)) = compound(pattern) {
            return self.compound(form, alternatives, actual, subset, at);
        }
        match (pattern, actual) {
            (Value::Object(p), Value::Object(a)) => {
                for (k, pv) in p {
                    let child = format!("{at}/{k}");
                    match a.get(k) {
                        Some(av) => self.walk(pv, av, subset, &child)?,
                        None => return differs(child, "missing".into()),
                    }
                }
                if !subset {
                    if let Some(extra) = a.keys().find(|k| !p.contains_key(*k)) {
                        return differs(format!("{at}/{extra}"), "unexpected key".into());
                    }
                }
                Ok(())
            }
            (Value::Array(p), Value::Array(a)) => {
                if p.len() != a.len() {
                    return differs(here(), format!("expected {} items, got {}", p.len(), a.len()));
                }
                for (i, (pv, av)) in p.iter().zip(a).enumerate() {
                    self.walk(pv, av, subset, &format!("{at}/{i}"))?;
                }
                Ok(())
            }
            (Value::Number(p), Value::Number(a)) if p.as_f64() == a.as_f64() => Ok(()),
            (p, a) if p == a => Ok(()),
            (p, a) => differs(here(), format!("expected {p}, got {a}")),
        }
    }
}

/// The compound pattern forms, `{"$superset": [..]}` and `{"$anyOf": [..]}`.
#[derive(Debug, Clone, Copy)]
enum Compound {
    Superset,
    AnyOf,
}

/// The text of a `{"$contains": "text"}` pattern.
fn contains(pattern: &Value) -> Option<&str> {
    let map = pattern.as_object().filter(|m| m.len() == 1)?;
    map.get("$contains")?.as_str()
}

/// The compound form a pattern is, with its patterns: an object of exactly one such key whose
/// value is an array.
fn compound(pattern: &Value) -> Option<(Compound, &[Value])> {
    let map = pattern.as_object().filter(|m| m.len() == 1)?;
    let (key, value) = map.iter().next()?;
    let form = match key.as_str() {
        "$superset" => Compound::Superset,
        "$anyOf" => Compound::AnyOf,
        _ => return None,
    };
    value.as_array().map(|items| (form, items.as_slice()))
}

impl Matcher {
    /// Matches a compound form; every attempt that fails rolls its captures back, so a later
    /// alternative starts clean.
    fn compound(&mut self, form: Compound, patterns: &[Value], actual: &Value, subset: bool, at: &str) -> Result<(), Mismatch> {
        let here = if at.is_empty() { "/" } else { at };
        let differs = |reason: String| Err(Mismatch { at: here.to_owned(), reason });
        match form {
            Compound::AnyOf => {
                for p in patterns {
                    let saved = self.captures.clone();
                    if self.walk(p, actual, subset, at).is_ok() {
                        return Ok(());
                    }
                    self.captures = saved;
                }
                differs(format!("{actual} matches none of the {} alternatives", patterns.len()))
            }
            Compound::Superset => {
                let Some(items) = actual.as_array() else { return differs(format!("expected an array, got {actual}")) };
                let mut used = vec![false; items.len()];
                for (k, p) in patterns.iter().enumerate() {
                    let found = items.iter().enumerate().filter(|(i, _)| !used[*i]).find_map(|(i, item)| {
                        let saved = self.captures.clone();
                        if self.walk(p, item, subset, &format!("{at}/{i}")).is_ok() {
                            Some(i)
                        } else {
                            self.captures = saved;
                            None
                        }
                    });
                    match found {
                        Some(i) => used[i] = true,
                        None => return differs(format!("no item (of {}) matches the superset's pattern {k}: {p}", items.len())),
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn supersets_alternatives_and_nonempty_strings() {
        let mut m = Matcher::new("/tmp/run");
        let options = json!([{"optionId": "proceed", "kind": "allow_once"}, {"optionId": "always", "kind": "allow_always"}, {"optionId": "no", "kind": "reject_once"}]);
        let pattern = json!({"$superset": [{"kind": "reject_once", "optionId": "{{capture:reject}}"}, {"kind": "allow_once", "optionId": "{{capture:allow}}"}]});
        m.check(&pattern, &options, true).unwrap();
        assert_eq!(m.substitute(&json!(["{{capture:allow}}", "{{capture:reject}}"])).unwrap(), json!(["proceed", "no"]));
        let e = m.check(&json!({"$superset": [{"kind": "reject_always"}]}), &options, true).unwrap_err();
        assert!(e.to_string().starts_with("/: no item (of 3) matches"), "{e}");
        // Distinct items: two patterns cannot both take the one allow_once option.
        assert!(m.check(&json!({"$superset": [{"kind": "allow_once"}, {"kind": "allow_once"}]}), &options, true).is_err());
        // A failed attempt leaves no capture behind: `mode` is captured from the item that matched.
        let modes = json!([{"id": "ask", "x": 1}, {"id": "code", "x": 2}]);
        m.check(&json!({"$superset": [{"id": "{{capture:mode}}", "x": 2}]}), &modes, true).unwrap();
        assert_eq!(m.substitute(&json!("{{capture:mode}}")).unwrap(), json!("code"));
        m.check(&json!({"$anyOf": ["edit", "other"]}), &json!("other"), false).unwrap();
        assert!(m.check(&json!({"$anyOf": ["edit", "other"]}), &json!("execute"), false).is_err());
        m.check(&json!("{{nonempty}}"), &json!("x"), false).unwrap();
        assert!(m.check(&json!("{{nonempty}}"), &json!(""), false).is_err());
        assert!(m.check(&json!("{{nonempty}}"), &json!(3), false).is_err());
        m.check(&json!({"errorMessage": {"$contains": "no such model"}}), &json!({"errorMessage": "400 bad request: no such model"}), false).unwrap();
        let e = m.check(&json!({"$contains": "overloaded"}), &json!("busy"), false).unwrap_err();
        assert_eq!(e.to_string(), r#"/: "busy" does not contain "overloaded""#);
    }

    #[test]
    fn placeholders_subsets_and_captures() {
        let mut m = Matcher::new("/tmp/run");
        let p = json!({"id": "{{capture:sid}}", "n": 1, "t": "{{timestamp}}", "path": "{{path}}", "any": "{{any}}"});
        m.check(&p, &json!({"id": "abc", "n": 1.0, "t": "2026-11-22T06:00:00.000Z", "path": "/tmp/run/x", "any": [1]}), false).unwrap();
        let e = m.check(&json!({"again": "{{capture:sid}}"}), &json!({"again": "xyz"}), false).unwrap_err();
        assert_eq!(e.to_string(), r#"/again: expected the captured sid = "abc", got "xyz""#);
        assert_eq!(m.check(&json!({"a": 1}), &json!({"a": 1, "b": 2}), false).unwrap_err().to_string(), "/b: unexpected key");
        m.check(&json!({"a": 1}), &json!({"a": 1, "b": 2}), true).unwrap();
        assert_eq!(m.check(&json!({"a": [1, 2]}), &json!({"a": [1]}), true).unwrap_err().to_string(), "/a: expected 2 items, got 1");
        assert_eq!(m.check(&json!("{{path}}"), &json!("/etc/passwd"), false).unwrap_err().to_string(), r#"/: "/etc/passwd" does not match {{path}}"#);
        // A failed match does not leave captures behind.
        assert!(m.check(&json!([{"x": "{{capture:late}}"}, 2]), &json!([{"x": 1}, 3]), false).is_err());
        m.check(&json!("{{capture:late}}"), &json!("fresh"), false).unwrap();
        assert_eq!(m.substitute(&json!({"id": "{{capture:sid}}", "n": ["{{capture:late}}"]})).unwrap(), json!({"id": "abc", "n": ["fresh"]}));
        assert!(m.substitute(&json!("{{capture:never}}")).is_err());
        assert_eq!(m.substitute(&json!({"cwd": "{{tmp}}/work"})).unwrap(), json!({"cwd": "/tmp/run/work"}));
        m.check(&json!("Wrote 3 bytes to {{tmp}}/work/a.txt"), &json!("Wrote 3 bytes to /tmp/run/work/a.txt"), false).unwrap();
        assert!(m.check(&json!("in {{tmp}}/x"), &json!("in /elsewhere/x"), false).is_err());
    }
}
