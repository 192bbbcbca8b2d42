//! Live frames as transcript patterns: volatile values (times, durations, the session's
//! directory) become placeholders, ids the agent made up become captures that later host frames
//! refer to.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::TMP_PLACEHOLDER;

/// Keys whose values are timestamps (numbers or RFC 3339 strings).
const TIME_KEYS: &[&str] = &["timestamp", "created", "modified", "startedAt", "completedAt", "updatedAt"];
/// Keys whose values vary from run to run without meaning (durations).
const VOLATILE_NUMBER_KEYS: &[&str] = &["durationMs", "duration", "ttft", "wait_s", "duration_ms", "delayMs"];
/// Keys holding ids the agent chose: captured the first time, required equal afterwards.
const ID_KEYS: &[&str] = &["id", "entryId", "parentId", "sessionId", "targetId", "firstKeptEntryId", "leafId", "request_id", "toolCallId", "tool_call_id"];

/// Turns live frames into patterns: placeholders for volatile values, captures for ids.
#[derive(Debug, Default)]
pub struct Normalizer {
    /// The live session's directory…
    tmp: String,
    /// …and what it becomes inside a string (`{{tmp}}`, or `{{tmp}}/work` for a working
    /// directory).
    tmp_as: String,
    /// A mapped directory ([`Normalizer::mapping`]): replaced in host frames too, and only
    /// where its name ends (`/w/work` is not in `/w/work2`).
    mapped: bool,
    /// Agent-chosen id value → capture name.
    captures: HashMap<String, String>,
    counters: HashMap<String, usize>,
}

impl Normalizer {
    /// A normalizer for a run whose temporary directory is `tmp`.
    pub fn new(tmp: &Path) -> Self {
        Self { mapped: false, ..Self::mapping(tmp, TMP_PLACEHOLDER) }
    }

    /// A normalizer for a session in directory `dir`, which the replay's `placeholder` stands
    /// for inside strings (`{{tmp}}/work`: the working directory a replayed agent runs in).
    pub fn mapping(dir: &Path, placeholder: &str) -> Self {
        Self { tmp: dir.display().to_string(), tmp_as: placeholder.to_owned(), mapped: true, ..Self::default() }
    }

    /// `s` with the session's directory replaced by its placeholder, when it names it.
    fn replace_dir(&self, s: &str) -> Option<String> {
        if self.tmp.is_empty() || !s.contains(&self.tmp) {
            return None;
        }
        if !self.mapped {
            return Some(s.replace(&self.tmp, &self.tmp_as));
        }
        let (mut out, mut rest, mut hit) = (String::new(), s, false);
        while let Some(i) = rest.find(&self.tmp) {
            let end = i + self.tmp.len();
            let whole = rest[end..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
            out.push_str(&rest[..i]);
            out.push_str(if whole { &self.tmp_as } else { &self.tmp });
            hit |= whole;
            rest = &rest[end..];
        }
        out.push_str(rest);
        hit.then_some(out)
    }

    fn capture_name(&mut self, key: &str, value: &str) -> String {
        if let Some(name) = self.captures.get(value) {
            return name.clone();
        }
        let base = match key {
            "toolCallId" | "tool_call_id" => "toolCall",
            "entryId" | "parentId" | "firstKeptEntryId" | "leafId" => "entry",
            "sessionId" => "session",
            _ => "id",
        };
        let n = self.counters.entry(base.to_owned()).and_modify(|n| *n += 1).or_insert(1);
        let name = format!("{base}{n}");
        self.captures.insert(value.to_owned(), name.clone());
        name
    }

    /// An agent frame as a pattern. Ids the agent made up (UUIDs, hex entry ids) are captured
    /// the first time; a request's own `id` (chosen by the host) stays literal.
    pub fn outbound(&mut self, frame: &Value, host_ids: &[Value]) -> Value {
        self.walk(frame, None, host_ids)
    }

    /// A host frame with every value the agent chose replaced by its capture.
    pub fn inbound(&self, frame: &Value) -> Value {
        match frame {
            Value::String(s) => match self.captures.get(s) {
                Some(name) => Value::String(format!("{{{{capture:{name}}}}}")),
                None if self.mapped => self.replace_dir(s).map_or_else(|| frame.clone(), Value::String),
                None => frame.clone(),
            },
            Value::Array(a) => Value::Array(a.iter().map(|v| self.inbound(v)).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), self.inbound(v))).collect()),
            other => other.clone(),
        }
    }

    fn walk(&mut self, v: &Value, key: Option<&str>, host_ids: &[Value]) -> Value {
        match v {
            Value::Object(o) => {
                let mut out = Map::new();
                for (k, child) in o {
                    out.insert(k.clone(), self.walk(child, Some(k), host_ids));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(|c| self.walk(c, key, host_ids)).collect()),
            Value::Number(_) if key.is_some_and(|k| TIME_KEYS.contains(&k)) => json!("{{timestamp}}"),
            Value::Number(_) if key.is_some_and(|k| VOLATILE_NUMBER_KEYS.contains(&k)) => json!("{{number}}"),
            Value::String(s) if key.is_some_and(|k| TIME_KEYS.contains(&k)) => {
                if humantime::parse_rfc3339_weak(s).is_ok() {
                    json!("{{timestamp}}")
                } else {
                    v.clone()
                }
            }
            Value::String(s) if key.is_some_and(|k| ID_KEYS.contains(&k)) && !host_ids.contains(v) && looks_generated(s) => {
                let name = self.capture_name(key.unwrap_or("id"), s);
                Value::String(format!("{{{{capture:{name}}}}}"))
            }
            Value::String(s) => match (self.replace_dir(s), self.captures.get(s)) {
                (Some(r), _) if r.starts_with(&self.tmp_as) && !s.contains(char::is_whitespace) => json!("{{path}}"),
                (Some(r), _) => Value::String(r),
                // An id seen before, now under another key (a session id inside a file name…).
                (None, Some(name)) if looks_generated(s) => Value::String(format!("{{{{capture:{name}}}}}")),
                _ => v.clone(),
            },
            other => other.clone(),
        }
    }
}

/// UUIDs, hex entry ids and other opaque tokens an agent generates.
pub(crate) fn looks_generated(s: &str) -> bool {
    let hex = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_hexdigit());
    let uuid = s.len() == 36 && s.split('-').map(str::len).eq([8, 4, 4, 4, 12]) && s.split('-').all(hex);
    uuid || (s.len() >= 8 && hex(s)) || s.starts_with("chatcmpl-") || (s.len() >= 16 && s.chars().all(|c| c.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_times_paths_and_agent_ids_and_reuses_captures_in_host_frames() {
        let mut n = Normalizer::new(Path::new("/tmp/rec"));
        let frame = json!({"type": "extension_ui_request", "id": "0192f3a4-7b1c-7d2e-9f00-1234567890ab", "method": "confirm",
                           "message": "Run in /tmp/rec/work?", "timestamp": 1795326502573u64, "path": "/tmp/rec/work/a.txt"});
        let p = n.outbound(&frame, &[]);
        assert_eq!(p["id"], "{{capture:id1}}");
        assert_eq!(p["timestamp"], "{{timestamp}}");
        assert_eq!(p["path"], "{{path}}");
        assert_eq!(p["message"], "Run in {{tmp}}/work?");
        let answer = n.inbound(&json!({"type": "extension_ui_response", "id": "0192f3a4-7b1c-7d2e-9f00-1234567890ab", "confirmed": true}));
        assert_eq!(answer["id"], "{{capture:id1}}");
        // The host's own request ids stay literal.
        let r = n.outbound(&json!({"id": "req-1", "type": "response"}), &[json!("req-1")]);
        assert_eq!(r["id"], "req-1");
    }
}
