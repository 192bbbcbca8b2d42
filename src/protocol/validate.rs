//! Frame validation against the embedded schema, with errors that name the field.
//!
//! A plain `oneOf` validator can only say "not valid under any of the schemas listed in
//! oneOf". Here every tagged union is resolved by its discriminator first, then the chosen
//! member's compiled validator runs, so errors read
//! `set_model: /modelId: "modelId" is a required property`. When a member holds a nested
//! union (an `AgentMessage` inside `message_end`), a `oneOf` failure is re-checked the same way
//! at that spot. Response frames are also checked against the command's `x-response` (JSONL)
//! or the method's `x-result` (wire) when the method is known.
//!
//! Validators are compiled lazily, once per def, each from a document holding just the defs
//! it reaches (jsonschema with default features off: no HTTP retriever; every ref is local).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};

use serde_json::Value;

use super::generated::{BUNDLE_JSON, DEFS_TSV};
use super::UnionInfo;
use crate::codegen::bundle::{reachable_by, BUNDLE_ID};

/// Which protocol a frame belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// The pi / omp JSONL RPC dialect.
    Rpc,
    /// The kimi-cli JSON-RPC 2.0 wire dialect.
    Wire,
}

/// Which way a frame travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host/client → agent (stdin).
    Inbound,
    /// Agent → host/client (stdout).
    Outbound,
}

/// Why a frame is invalid: the frame's tag (command, event or method) when one was read, the
/// JSON pointer of the offending value, and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    /// Command name, event type or method; empty when none could be read.
    pub context: String,
    /// JSON pointer into the frame (`/modelId`), empty for the frame itself.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// Further violations of the same frame, each `path: reason` (at most
    /// [`MAX_REPORTED_VIOLATIONS`] in all), so one reply names every problem.
    pub also: Vec<String>,
}

/// How many violations of one frame an error reports.
pub const MAX_REPORTED_VIOLATIONS: usize = 8;

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.context.is_empty() {
            write!(f, "{}: ", self.context)?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        for more in &self.also {
            write!(f, "; {more}")?;
        }
        Ok(())
    }
}

impl FrameError {
    fn new(context: impl Into<String>, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { context: context.into(), path: path.into(), message: message.into(), also: Vec::new() }
    }
}

impl std::error::Error for FrameError {}

/// The schema, compiled: validates frames and arbitrary defs.
pub struct SchemaValidator {
    /// The whole bundle, parsed only when asked for ([`Self::bundle`]).
    bundle: OnceLock<Value>,
    /// Every def's JSON text, parsed on first use: the first frame of a process parses the few
    /// defs it reaches, not the whole ~170 KB bundle.
    defs: HashMap<&'static str, (&'static str, OnceLock<Value>)>,
    compiled: RwLock<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

/// The process-wide validator for the embedded schema.
pub fn validator() -> &'static SchemaValidator {
    static GLOBAL: OnceLock<SchemaValidator> = OnceLock::new();
    GLOBAL.get_or_init(SchemaValidator::embedded)
}

/// Starts building, on a thread of its own, what the first frame's validation needs before it
/// can compile anything: jsonschema checks every schema it compiles against the draft 2020-12
/// meta-schema, whose validator is built once per process — measured with callgrind, 6.7M of
/// the 11M instructions a process executes up to its first `get_state` answer. Built here, it
/// overlaps the runtime's start and the host's first write instead of delaying the first
/// answer (the first compile waits for it if it is not done yet).
pub fn prewarm_in_background() {
    let warm = || {
        validator();
        let _ = jsonschema::meta::is_valid(&serde_json::json!({"$schema": "https://json-schema.org/draft/2020-12/schema"}));
    };
    // Without a thread the first compile simply does the work itself.
    let _ = std::thread::Builder::new().name("schema-warmup".into()).spawn(warm);
}

impl SchemaValidator {
    /// The validator for the schema embedded at build time.
    fn embedded() -> Self {
        let defs = DEFS_TSV.lines().filter_map(|line| line.split_once('\t')).map(|(name, text)| (name, (text, OnceLock::new()))).collect();
        Self { bundle: OnceLock::new(), defs, compiled: RwLock::new(HashMap::new()) }
    }

    /// The bundled schema document.
    pub fn bundle(&self) -> &Value {
        self.bundle.get_or_init(|| serde_json::from_str(BUNDLE_JSON).expect("the embedded bundle is JSON"))
    }

    /// A def of the bundle, or a node below one (`UserContent/oneOf/1`).
    pub fn def(&self, key: &str) -> Option<&Value> {
        let (name, below) = key.split_once('/').map_or((key, None), |(n, rest)| (n, Some(rest)));
        let (text, parsed) = self.defs.get(name)?;
        let def = parsed.get_or_init(|| serde_json::from_str(text).expect("the embedded defs are JSON"));
        match below {
            None => Some(def),
            Some(rest) => def.pointer(&format!("/{rest}")),
        }
    }

    fn compiled(&self, def: &str) -> Result<Arc<jsonschema::Validator>, FrameError> {
        if let Some(v) = self.compiled.read().unwrap_or_else(|e| e.into_inner()).get(def) {
            return Ok(v.clone());
        }
        if self.def(def).is_none() {
            return Err(FrameError::new("", "", format!("the schema has no definition `{def}`")));
        }
        // Compile from a document holding only the defs this one reaches: indexing the whole
        // bundle for every validator made the first frame of a process cost ~13 ms.
        let root = def.split('/').next().unwrap_or(def);
        let subset: serde_json::Map<String, Value> =
            reachable_by(|name| self.def(name), &[root]).into_iter().filter_map(|n| self.def(&n).cloned().map(|d| (n, d))).collect();
        let schema = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": BUNDLE_ID,
            "$defs": subset,
            "$ref": format!("#/$defs/{def}"),
        });
        let compiled = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .map_err(|e| FrameError::new("", "", format!("schema `{def}` does not compile: {e}")))?;
        let compiled = Arc::new(compiled);
        self.compiled.write().unwrap_or_else(|e| e.into_inner()).insert(def.to_owned(), compiled.clone());
        Ok(compiled)
    }

    /// Validates `value` against the def `name` (a union is resolved by its discriminator).
    pub fn validate_def(&self, name: &str, value: &Value) -> Result<(), FrameError> {
        self.check(name, value, "", "")
    }

    /// Validates one frame of a dialect and direction, the way the server and harness do.
    /// `request_method` names the method a wire response answers, when the caller tracks it.
    pub fn validate_frame(
        &self,
        dialect: Dialect,
        direction: Direction,
        frame: &Value,
        request_method: Option<&str>,
    ) -> Result<(), FrameError> {
        match (dialect, direction) {
            (Dialect::Rpc, Direction::Inbound) => self.validate_def("RpcInboundFrame", frame),
            (Dialect::Rpc, Direction::Outbound) => {
                self.validate_def("RpcOutboundFrame", frame)?;
                if frame.get("type").and_then(Value::as_str) == Some("response") {
                    self.check_rpc_response_data(frame)?;
                }
                Ok(())
            }
            (Dialect::Wire, Direction::Inbound) => {
                if frame.get("method").is_some() {
                    self.validate_def("WireRequest", frame)
                } else {
                    self.check_wire_response(frame, request_method, "x-result", "WireAgentRequestParams")
                }
            }
            (Dialect::Wire, Direction::Outbound) => {
                if frame.get("method").is_some() {
                    self.validate_def("WireAgentMessage", frame)?;
                    self.check_subagent_event(frame.get("params"), "/params")
                } else {
                    self.check_wire_response(frame, request_method, "x-result", "WireRequest")
                }
            }
        }
    }

    /// The def of the command (JSONL) or method (wire) `tag` within a union.
    fn member_def(&self, union: &str, tag: &str) -> Option<&Value> {
        let info = UnionInfo::get(union)?;
        let member = info.member(tag)?;
        match UnionInfo::get(member) {
            Some(_) => self.member_def(member, tag),
            None => self.def(member),
        }
    }

    fn check_rpc_response_data(&self, frame: &Value) -> Result<(), FrameError> {
        let command = frame.get("command").and_then(Value::as_str).unwrap_or_default();
        let fail = |path: &str, message: String| FrameError::new(command, path, message);
        match frame.get("success") {
            Some(Value::Bool(false)) => {
                return match frame.get("error") {
                    Some(Value::String(_)) => Ok(()),
                    _ => Err(fail("", "a failed response needs an `error` string".into())),
                };
            }
            Some(Value::Bool(true)) if frame.get("error").is_some() => {
                return Err(fail("/error", "a successful response has no `error`".into()));
            }
            _ => {}
        }
        // Responses to commands we do not know (e.g. `parse`) carry no data to check.
        let Some(def) = self.member_def("RpcCommand", command) else { return Ok(()) };
        let data = frame.get("data");
        match (def.get("x-response").and_then(|r| r.get("$ref")).and_then(Value::as_str), data) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err(fail("/data", format!("`{command}` answers without data"))),
            (Some(_), None) if def.get("x-response-optional") == Some(&Value::Bool(true)) => Ok(()),
            (Some(_), None) => Err(fail("", format!("`{command}` answers with data"))),
            (Some(_), Some(Value::Null)) if def.get("x-response-nullable") == Some(&Value::Bool(true)) => Ok(()),
            (Some(r), Some(data)) => {
                let target = r.trim_start_matches("#/$defs/");
                self.check(target, data, "/data", command)
            }
        }
    }

    fn check_wire_response(&self, frame: &Value, method: Option<&str>, link: &str, union: &str) -> Result<(), FrameError> {
        let context = method.unwrap_or_default();
        if frame.get("error").is_some() {
            if frame.get("result").is_some() {
                return Err(FrameError::new(context, "", "a response has either `result` or `error`, not both"));
            }
            return self.check("WireErrorResponse", frame, "", context);
        }
        self.check("WireSuccessResponse", frame, "", context)?;
        let Some(method) = method else { return Ok(()) };
        let Some(def) = self.member_def(union, method) else { return Ok(()) };
        match def.get(link).and_then(|r| r.get("$ref")).and_then(Value::as_str) {
            Some(r) => self.check(r.trim_start_matches("#/$defs/"), &frame["result"], "/result", method),
            None => Ok(()),
        }
    }

    /// `SubagentEvent.event` is open in the schema (the union would be recursive); check it here.
    fn check_subagent_event(&self, params: Option<&Value>, at: &str) -> Result<(), FrameError> {
        let Some(params) = params else { return Ok(()) };
        if params.get("type").and_then(Value::as_str) != Some("SubagentEvent") {
            return Ok(());
        }
        let Some(inner) = params.pointer("/payload/event") else { return Ok(()) };
        let at = format!("{at}/payload/event");
        self.check("WireEvent", inner, &at, "SubagentEvent")?;
        self.check_subagent_event(Some(inner), &at)
    }

    /// Checks `value` against `key` (a def name, or a pointer below `$defs` such as
    /// `UserContent/oneOf/1`); `at` is the pointer of `value` inside the frame and `context`
    /// the frame's tag when already known.
    fn check(&self, key: &str, value: &Value, at: &str, context: &str) -> Result<(), FrameError> {
        if let Some(info) = UnionInfo::get(key) {
            let prop = info.tag_property;
            let fail = |path: String, message: String| FrameError::new(context, path, message);
            if !value.is_object() {
                return Err(fail(at.to_owned(), format!("{value} is not of type \"object\"")));
            }
            let tag = match value.get(prop) {
                Some(Value::String(tag)) => tag,
                Some(other) => return Err(fail(format!("{at}/{prop}"), format!("{other} is not of type \"string\""))),
                None => return Err(fail(format!("{at}/{prop}"), format!("\"{prop}\" is a required property"))),
            };
            let Some(member) = info.member(tag) else {
                let expected: Vec<&str> = info.members.iter().map(|(t, _)| *t).collect();
                return Err(fail(format!("{at}/{prop}"), format!("unknown {prop} \"{tag}\", expected one of {expected:?}")));
            };
            let context = if context.is_empty() { tag.as_str() } else { context };
            return self.check(member, value, at, context);
        }
        match self.untagged_member(key, value) {
            Some(Ok(member)) => return self.check(&member, value, at, context),
            Some(Err(expected)) => {
                let context = if context.is_empty() { def_context(key, value) } else { context.to_owned() };
                return Err(FrameError::new(context, at, format!("{value} is not {expected}")));
            }
            None => {}
        }
        let compiled = self.compiled(key)?;
        // Valid frames (nearly all of them) take the check that collects no errors.
        if compiled.is_valid(value) {
            return Ok(());
        }
        let mut errors = compiled.iter_errors(value);
        let Some(error) = errors.next() else { return Ok(()) };
        let context = if context.is_empty() { def_context(key, value) } else { context.to_owned() };
        // A nested union failed as a whole: resolve it by its tag (or JSON type) to name the
        // real field.
        if matches!(error.kind(), jsonschema::error::ValidationErrorKind::OneOfNotValid { .. }) {
            if let Some(union_key) = self.union_at(key, error.schema_path().as_str()) {
                let inner_path = error.instance_path().as_str().to_owned();
                let same_spot = union_key == key && inner_path.is_empty();
                if let Some(inner) = value.pointer(&inner_path).filter(|_| !same_spot) {
                    return self.check(&union_key, inner, &format!("{at}{inner_path}"), &context);
                }
            }
        }
        let mut found = self.describe(key, at, &error);
        for more in errors {
            if found.len() >= MAX_REPORTED_VIOLATIONS {
                break;
            }
            found.extend(self.describe(key, at, &more));
        }
        found.truncate(MAX_REPORTED_VIOLATIONS);
        let mut found = found.into_iter();
        let (path, message) = found.next().unwrap_or_default();
        let also = found.map(|(p, m)| if p.is_empty() { m } else { format!("{p}: {m}") }).collect();
        Err(FrameError { context, path, message, also })
    }

    /// One jsonschema error as `(path, reason)` pairs: a missing property names itself, and an
    /// unknown field is named with the closest known field when one is near ("did you mean").
    fn describe(&self, key: &str, at: &str, error: &jsonschema::ValidationError<'_>) -> Vec<(String, String)> {
        use jsonschema::error::ValidationErrorKind;
        let path = format!("{at}{}", error.instance_path());
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                vec![(format!("{path}/{name}"), error.to_string())]
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let known = self.properties_at(key, error.instance_path().as_str());
                unexpected
                    .iter()
                    .map(|name| {
                        let hint = closest(name, known.iter().map(String::as_str)).map(|k| format!(" (did you mean \"{k}\"?)")).unwrap_or_default();
                        (format!("{path}/{name}"), format!("unknown field \"{name}\"{hint}"))
                    })
                    .collect()
            }
            _ => vec![(path, error.to_string())],
        }
    }

    /// The property names the schema declares for the object at `pointer` inside a value of
    /// def `key` (following `$ref`s and `properties`; empty where that cannot be resolved).
    fn properties_at(&self, key: &str, pointer: &str) -> Vec<String> {
        let mut node = self.def(key);
        for segment in pointer.split('/').filter(|s| !s.is_empty()) {
            node = node.map(|n| self.resolve(n)).and_then(|n| n.get("properties")).and_then(|p| p.get(segment));
        }
        node.map(|n| self.resolve(n))
            .and_then(|n| n.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn resolve<'a>(&'a self, node: &'a Value) -> &'a Value {
        match node.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")).and_then(|d| self.def(d)) {
            Some(target) => self.resolve(target),
            None => node,
        }
    }

    /// For an `x-untagged` union (members of different JSON types), the member matching the
    /// value's JSON type, or (`Err`) a description of the accepted types when none matches.
    fn untagged_member(&self, key: &str, value: &Value) -> Option<Result<String, String>> {
        let node = self.def(key)?;
        if node.get("x-untagged") != Some(&Value::Bool(true)) {
            return None;
        }
        let json_type = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let members = node.get("oneOf")?.as_array()?;
        let mut accepted: Vec<String> = Vec::new();
        let matching: Vec<String> = members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let (member_key, schema) = match m.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
                    Some(target) => (target.to_owned(), self.def(target)?),
                    None => (format!("{key}/oneOf/{i}"), m),
                };
                let declared = schema.get("type").or_else(|| schema.get("oneOf").map(|_| &Value::Null))?;
                let fits = match declared {
                    Value::String(t) => {
                        accepted.push(format!("a JSON {t}"));
                        t == json_type || (t == "number" && json_type == "integer")
                    }
                    Value::Array(ts) => {
                        accepted.extend(ts.iter().filter_map(Value::as_str).map(|t| format!("a JSON {t}")));
                        ts.iter().any(|t| t == json_type)
                    }
                    _ => {
                        accepted.push("an object".into());
                        json_type == "object"
                    }
                };
                fits.then_some(member_key)
            })
            .collect();
        match matching.len() {
            1 => matching.into_iter().next().map(Ok),
            0 => Some(Err(accepted.join(" or "))),
            _ => None,
        }
    }

    /// Follows a schema path (`/$ref/properties/message/$ref/oneOf`) from `key` and returns the
    /// key of the node whose `oneOf` failed.
    fn union_at(&self, key: &str, schema_path: &str) -> Option<String> {
        // After a `$ref` hop jsonschema reports the location inside the bundle itself.
        if let Some(inner) = schema_path.strip_prefix("/$defs/").and_then(|p| p.strip_suffix("/oneOf")) {
            return self.def(inner).filter(|n| n.get("oneOf").is_some()).map(|_| inner.to_owned());
        }
        let mut key = key.to_owned();
        let mut node = self.def(&key)?;
        let mut segments = schema_path.trim_start_matches('/').split('/').peekable();
        // The compiled root is `{"$ref": bundle#/$defs/<key>}`: skip that first hop.
        if segments.peek() == Some(&"$ref") {
            segments.next();
        }
        for raw in segments {
            if raw == "oneOf" {
                return node.get("oneOf").map(|_| key);
            }
            if raw == "$ref" {
                let target = node.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?;
                key = target.to_owned();
                node = self.def(target)?;
                continue;
            }
            let seg = raw.replace("~1", "/").replace("~0", "~");
            node = match node {
                Value::Object(m) => m.get(&seg)?,
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
            key = format!("{key}/{raw}");
        }
        None
    }
}

/// The tag of a frame, for error context, when the def is a tagged member.
fn def_context(def: &str, value: &Value) -> String {
    ["type", "method"]
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| def.to_owned())
}

/// The candidate closest to `name` when it is a plausible typo of it (for "did you mean").
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, c)| *score >= 0.85 && *c != name)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// [`closest`] among the tags of `union` (a dialect's command or method names), remembered: the
/// search is an edit distance against every tag, and a host that repeats one wrong name (a
/// version mismatch, a typo in a loop) should not pay for it on every frame. At most
/// `MEMO_NAMES` names are kept per process; past that the memo starts over.
pub fn closest_tag(union: &'static super::UnionInfo, name: &str) -> Option<&'static str> {
    const MEMO_NAMES: usize = 1024;
    type Memo = std::collections::HashMap<&'static str, std::collections::HashMap<Box<str>, Option<&'static str>>>;
    static MEMO: std::sync::OnceLock<std::sync::Mutex<Memo>> = std::sync::OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    if let Some(known) = memo.lock().ok().and_then(|m| m.get(union.name).and_then(|names| names.get(name).copied())) {
        return known;
    }
    let found = closest(name, union.members.iter().map(|(tag, _)| *tag));
    if let Ok(mut m) = memo.lock() {
        let names = m.entry(union.name).or_default();
        if names.len() >= MEMO_NAMES {
            names.clear();
        }
        names.insert(name.into(), found);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rpc_in(v: Value) -> String {
        validator().validate_frame(Dialect::Rpc, Direction::Inbound, &v, None).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_command_and_field() {
        assert_eq!(rpc_in(json!({"type":"set_model","provider":"p"})), r#"set_model: /modelId: "modelId" is a required property"#);
        let e = rpc_in(json!({"type":"set_thinking_level","level":"hgh"}));
        assert!(e.starts_with(r#"set_thinking_level: /level: "hgh" is not one of"#), "{e}");
        let e = rpc_in(json!({"type":"set_modle"}));
        assert!(e.starts_with(r#"/type: unknown type "set_modle", expected one of ["prompt""#), "{e}");
        assert_eq!(rpc_in(json!({"id":1})), r#"/type: "type" is a required property"#);
    }

    #[test]
    fn nested_unions_are_resolved_by_tag() {
        let check = |frame: Value| validator().validate_frame(Dialect::Rpc, Direction::Outbound, &frame, None).unwrap_err().to_string();
        let e = check(json!({"type":"message_end","message":{"role":"user","content":[{"type":"text"}],"timestamp":1}}));
        assert_eq!(e, r#"message_end: /message/content/0/text: "text" is a required property"#);
        let e = check(json!({"type":"message_end","message":{"role":"robot"}}));
        assert!(e.starts_with(r#"message_end: /message/role: unknown role "robot""#), "{e}");
        let e = check(json!({"type":"extension_ui_request","id":"u1","method":"confirm","title":"t"}));
        assert_eq!(e, r#"extension_ui_request: /message: "message" is a required property"#);
    }

    #[test]
    fn response_data_is_checked_against_x_response() {
        let ok = json!({"id":"a","type":"response","command":"get_last_assistant_text","success":true,"data":{"text":null}});
        validator().validate_frame(Dialect::Rpc, Direction::Outbound, &ok, None).unwrap();
        let bad = json!({"type":"response","command":"get_last_assistant_text","success":true,"data":{}});
        let e = validator().validate_frame(Dialect::Rpc, Direction::Outbound, &bad, None).unwrap_err().to_string();
        assert_eq!(e, r#"get_last_assistant_text: /data/text: "text" is a required property"#);
        let extra = json!({"type":"response","command":"abort","success":true,"data":{}});
        assert!(validator().validate_frame(Dialect::Rpc, Direction::Outbound, &extra, None).is_err());
    }
}

