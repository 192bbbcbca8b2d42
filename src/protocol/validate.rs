//! Frame validation against the embedded schema, with errors that name the field.
//!
//! The schema is compiled by `build.rs` from the same bundle as the types
//! (`src/codegen/validators.rs`, into the static data `super::program` interprets): nothing is
//! compiled or parsed at run time, and a valid frame is checked without allocating. The checks
//! read a [`Doc`]: the `validate_*` functions taking a `Value` borrow it as one
//! ([`Doc::from_value`]), the rpc decoder passes the one it parsed the line into. Tagged
//! unions are resolved by their discriminator, so errors read
//! `set_model: /modelId: "modelId" is a required property` rather than "not valid under any of
//! the schemas listed in oneOf", also for a union nested in a member (an `AgentMessage` inside
//! `message_end`). Response frames are also checked against the command's `x-response` (JSONL)
//! or the method's `x-result` (wire) when the method is known.
//!
//! The jsonschema crate stays the oracle: `tests/validator_differential.rs` runs both over the
//! schema examples, the recorded frames, the conformance corpus and generated frames.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use serde_json::Value;

use super::check::{Loc, Sink};
use super::doc::Doc;
use super::program::Check;
use super::embedded::{bundle_json, defs_tsv};
use super::generated::{RPC_COMMANDS, WIRE_AGENT_REQUESTS, WIRE_METHODS};
use super::UnionInfo;

/// A dialect whose frames our schema (`schema/*.schema.json`) describes, so this validator checks
/// them. ACP's frames are checked against the vendored official schema ([`super::acp`]); the
/// three dialects a process speaks are [`super::Dialect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaDialect {
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
    /// Command name, event type or method; empty when none could be read. Borrowed when it is
    /// one of the schema's own names (the rpc decoder's tags), so an invalid frame's answer
    /// does not copy it.
    pub context: Cow<'static, str>,
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
        f.write_str(&self.text())
    }
}

impl FrameError {
    /// The error as one line (what `Display` writes): `context: path: message; more…`, built
    /// in a string sized once (an invalid frame's answer is made of it).
    pub fn text(&self) -> String {
        let more: usize = self.also.iter().map(|m| m.len() + 2).sum();
        let mut text = String::with_capacity(self.context.len() + self.path.len() + self.message.len() + more + 4);
        for part in [self.context.as_ref(), self.path.as_str()] {
            if !part.is_empty() {
                text.push_str(part);
                text.push_str(": ");
            }
        }
        text.push_str(&self.message);
        for m in &self.also {
            text.push_str("; ");
            text.push_str(m);
        }
        text
    }
}

impl FrameError {
    fn new(context: impl Into<Cow<'static, str>>, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { context: context.into(), path: path.into(), message: message.into(), also: Vec::new() }
    }
}

impl std::error::Error for FrameError {}

/// The schema's validators: frames of either dialect and any def by name.
pub struct SchemaValidator {
    /// The whole bundle, parsed only when asked for ([`Self::bundle`]).
    bundle: OnceLock<Value>,
    /// Every def's JSON text, split and parsed only when asked for ([`Self::def`]); validation
    /// never reads them.
    defs: OnceLock<HashMap<&'static str, (&'static str, OnceLock<Value>)>>,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

/// The process-wide validator for the embedded schema.
pub fn validator() -> &'static SchemaValidator {
    static GLOBAL: SchemaValidator = SchemaValidator { bundle: OnceLock::new(), defs: OnceLock::new() };
    &GLOBAL
}

/// Runs a compiled check over `value` (which sits at pointer `at` in its frame) and turns what
/// it found into one error: the first violation, and the next ones in `also`.
pub(crate) fn run_check(check: Check, value: &Doc<'_>, at: &str, context: impl FnOnce() -> Cow<'static, str>) -> Result<(), FrameError> {
    let mut sink = Sink::collecting(MAX_REPORTED_VIOLATIONS);
    check.run(value, &Loc::root(at), &mut sink);
    if sink.ok() {
        return Ok(());
    }
    let (first, more) = sink.into_violations().unwrap_or_else(|| (super::check::Violation { path: at.to_owned(), message: "invalid".into() }, Vec::new()));
    let also = more.into_iter().map(|v| if v.path.is_empty() { v.message } else { format!("{}: {}", v.path, v.message) }).collect();
    Err(FrameError { context: context(), path: first.path, message: first.message, also })
}

impl SchemaValidator {
    /// The bundled schema document.
    pub fn bundle(&self) -> &Value {
        self.bundle.get_or_init(|| serde_json::from_str(bundle_json()).expect("the embedded bundle is JSON"))
    }

    /// A def of the bundle, or a node below one (`UserContent/oneOf/1`).
    pub fn def(&self, key: &str) -> Option<&Value> {
        let (name, below) = key.split_once('/').map_or((key, None), |(n, rest)| (n, Some(rest)));
        let defs = self.defs.get_or_init(|| defs_tsv().lines().filter_map(|line| line.split_once('\t')).map(|(name, text)| (name, (text, OnceLock::new()))).collect());
        let (text, parsed) = defs.get(name)?;
        let def = parsed.get_or_init(|| serde_json::from_str(text).expect("the embedded defs are JSON"));
        match below {
            None => Some(def),
            Some(rest) => def.pointer(&format!("/{rest}")),
        }
    }

    /// Validates `value` against the def `name` (a union is resolved by its discriminator).
    pub fn validate_def(&self, name: &str, value: &Value) -> Result<(), FrameError> {
        self.check(name, value, "", "")
    }

    /// [`Self::validate_def`] of a document read with [`Doc::parse`] (no `Value` tree; the rpc
    /// decoder does the same with the check kept, [`Self::validate_doc_with`]). `context` is the
    /// error's context when the caller already read the frame's tag (empty: found as
    /// `validate_def` finds it).
    pub fn validate_def_doc(&self, name: &str, value: &Doc<'_>, context: &str) -> Result<(), FrameError> {
        self.check_doc(name, value, "", context)
    }

    /// The compiled check of the def `name`, for a caller that checks every frame against the
    /// same def: found once and kept, it spares each frame the search by name.
    pub fn def_check(&self, name: &str) -> Option<Check> {
        super::bundle_checks::check_fn(name)
    }

    /// [`Self::validate_def_doc`] with the def's check in hand ([`Self::def_check`]); `context`
    /// is the error's context.
    pub fn validate_doc_with(&self, check: Check, value: &Doc<'_>, context: &'static str) -> Result<(), FrameError> {
        run_check(check, value, "", || Cow::Borrowed(context))
    }

    /// Validates one frame of a dialect and direction, the way the server and harness do.
    /// `request_method` names the method a wire response answers, when the caller tracks it.
    pub fn validate_frame(
        &self,
        dialect: SchemaDialect,
        direction: Direction,
        frame: &Value,
        request_method: Option<&str>,
    ) -> Result<(), FrameError> {
        match (dialect, direction) {
            (SchemaDialect::Rpc, Direction::Inbound) => self.validate_def("RpcInboundFrame", frame),
            (SchemaDialect::Rpc, Direction::Outbound) => {
                self.validate_def("RpcOutboundFrame", frame)?;
                if frame.get("type").and_then(Value::as_str) == Some("response") {
                    self.check_rpc_response_data(frame)?;
                }
                Ok(())
            }
            (SchemaDialect::Wire, Direction::Inbound) => {
                if frame.get("method").is_some() {
                    self.validate_def("WireRequest", frame)
                } else {
                    let result = request_method.and_then(|m| WIRE_AGENT_REQUESTS.iter().find(|r| r.name == m)).map(|r| r.result);
                    self.check_wire_response(frame, request_method, result)
                }
            }
            (SchemaDialect::Wire, Direction::Outbound) => {
                if frame.get("method").is_some() {
                    self.validate_def("WireAgentMessage", frame)?;
                    self.check_subagent_event(frame.get("params"), "/params")
                } else {
                    let result = request_method.and_then(|m| WIRE_METHODS.iter().find(|r| r.name == m)).map(|r| r.result);
                    self.check_wire_response(frame, request_method, result)
                }
            }
        }
    }

    fn check_rpc_response_data(&self, frame: &Value) -> Result<(), FrameError> {
        let command = frame.get("command").and_then(Value::as_str).unwrap_or_default();
        let fail = |path: &str, message: String| FrameError::new(command.to_owned(), path, message);
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
        let Some(info) = RPC_COMMANDS.iter().find(|c| c.command == command) else { return Ok(()) };
        match (info.response, frame.get("data")) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err(fail("/data", format!("`{command}` answers without data"))),
            (Some(_), None) if info.optional => Ok(()),
            (Some(_), None) => Err(fail("", format!("`{command}` answers with data"))),
            (Some(_), Some(Value::Null)) if info.nullable => Ok(()),
            (Some(target), Some(data)) => self.check(target, data, "/data", command),
        }
    }

    /// A wire response; `result` is the def its `result` must fit, when the method is known.
    fn check_wire_response(&self, frame: &Value, method: Option<&str>, result: Option<&str>) -> Result<(), FrameError> {
        let context = method.unwrap_or_default();
        if frame.get("error").is_some() {
            if frame.get("result").is_some() {
                return Err(FrameError::new(context.to_owned(), "", "a response has either `result` or `error`, not both"));
            }
            return self.check("WireErrorResponse", frame, "", context);
        }
        self.check("WireSuccessResponse", frame, "", context)?;
        match result {
            Some(def) => self.check(def, &frame["result"], "/result", context),
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

    /// Checks `value` against the def `key`; `at` is the pointer of `value` inside the frame
    /// and `context` the frame's tag when already known.
    fn check(&self, key: &str, value: &Value, at: &str, context: &str) -> Result<(), FrameError> {
        self.check_doc(key, &Doc::from_value(value), at, context)
    }

    /// [`Self::check`] of a document.
    fn check_doc(&self, key: &str, value: &Doc<'_>, at: &str, context: &str) -> Result<(), FrameError> {
        let check = super::bundle_checks::check_fn(key).ok_or_else(|| FrameError::new("", "", format!("the schema has no definition `{key}`")))?;
        run_check(check, value, at, || Cow::Owned(if context.is_empty() { context_of(key, value) } else { context.to_owned() }))
    }
}

/// The error context of a value of def `key` when the caller knows none: the tag of a union
/// member (nothing when the tag is not one of the union's), else the value's `type` or
/// `method`, else the def's name.
fn context_of(key: &str, value: &Doc<'_>) -> String {
    match UnionInfo::get(key) {
        Some(info) => value.get(info.tag_property).and_then(Doc::as_str).filter(|t| info.member(t).is_some()).unwrap_or_default().to_owned(),
        None => def_context(key, value),
    }
}

/// The tag of a frame, for error context, when the def is a tagged member.
fn def_context(def: &str, value: &Doc<'_>) -> String {
    ["type", "method"]
        .iter()
        .find_map(|k| value.get(k).and_then(Doc::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| def.to_owned())
}

/// Whether the schema def `def` is a void result: an object that carries nothing but `_meta`
/// (ACP's `WriteTextFileResponse`, `KillTerminalResponse`, …). A `null` in its place can only mean
/// "done, nothing to say"; a def with any other property (even an optional one, as a terminal's
/// exit status) is not void, for `null` there could mean something else.
pub fn is_void_def(def: &Value) -> bool {
    def.get("type").and_then(Value::as_str) == Some("object")
        && ["oneOf", "anyOf", "allOf", "$ref"].iter().all(|k| def.get(k).is_none())
        && def.get("required").and_then(Value::as_array).is_none_or(Vec::is_empty)
        && def.get("properties").and_then(Value::as_object).is_none_or(|p| p.keys().all(|k| k == "_meta"))
}

/// A peer's `result` for `method`, whose result def is `def`, as it is then validated: `null`
/// where the def is void ([`is_void_def`]) is read as `{}` and logged as a warning (Toad answers
/// `fs/write_text_file` so); any other value is returned as it is, for validation to judge (a
/// `null` for a result with content still fails).
pub fn null_as_void(method: &str, def: &Value, result: Value) -> Value {
    if result.is_null() && is_void_def(def) {
        tracing::warn!(method, "the peer answered {method} with a null result where the schema asks for an empty object; read as {{}}");
        return Value::Object(serde_json::Map::new());
    }
    result
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
/// version mismatch, a typo in a loop) should not pay for it on every frame. The last name
/// asked on each thread is compared first, with no lock taken; the names asked per process are
/// kept in a shared memo of at most `MEMO_NAMES` names, which starts over when full.
pub fn closest_tag(union: &'static super::UnionInfo, name: &str) -> Option<&'static str> {
    const MEMO_NAMES: usize = 1024;
    type Last = Option<(&'static str, Box<str>, Option<&'static str>)>;
    thread_local! {
        static LAST: std::cell::RefCell<Last> = const { std::cell::RefCell::new(None) };
    }
    let last = LAST.with(|last| last.borrow().as_ref().filter(|(u, n, _)| *u == union.name && **n == *name).map(|(_, _, found)| *found));
    if let Some(found) = last {
        return found;
    }
    type Names = std::collections::HashMap<&'static str, std::collections::HashMap<Box<str>, Option<&'static str>>>;
    static MEMO: std::sync::OnceLock<std::sync::Mutex<Names>> = std::sync::OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    let known = memo.lock().ok().and_then(|m| m.get(union.name).and_then(|names| names.get(name).copied()));
    let found = known.unwrap_or_else(|| {
        let found = closest(name, union.members.iter().map(|(tag, _)| *tag));
        if let Ok(mut m) = memo.lock() {
            let names = m.entry(union.name).or_default();
            if names.len() >= MEMO_NAMES {
                names.clear();
            }
            names.insert(name.into(), found);
        }
        found
    });
    LAST.with(|last| *last.borrow_mut() = Some((union.name, name.into(), found)));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// String constants read without a copy say what a `String` parse said, from text and
    /// from a `Value` alike.
    #[test]
    fn string_constants_keep_their_errors() {
        use crate::protocol::generated::lit::LitGetState;
        assert!(serde_json::from_str::<LitGetState>(r#""get_state""#).is_ok());
        assert!(serde_json::from_str::<LitGetState>(r#""get_st\u0061te""#).is_ok());
        assert!(serde_json::from_value::<LitGetState>(serde_json::json!("get_state")).is_ok());
        let e = serde_json::from_str::<LitGetState>(r#""nope""#).unwrap_err();
        assert_eq!(e.to_string(), r#"invalid value: string "nope", expected the string "get_state" at line 1 column 6"#);
        let e = serde_json::from_value::<LitGetState>(serde_json::json!(5)).unwrap_err();
        assert_eq!(e.to_string(), "invalid type: integer `5`, expected a string");
        let e = serde_json::from_value::<LitGetState>(serde_json::json!("x")).unwrap_err();
        assert_eq!(e.to_string(), r#"invalid value: string "x", expected the string "get_state""#);
    }

    fn rpc_in(v: Value) -> String {
        validator().validate_frame(SchemaDialect::Rpc, Direction::Inbound, &v, None).unwrap_err().to_string()
    }

    #[test]
    fn only_a_null_for_a_void_def_is_read_as_empty() {
        let void = json!({"type": "object", "properties": {"_meta": {"type": ["object", "null"]}}});
        assert!(is_void_def(&void) && is_void_def(&json!({"type": "object"})));
        assert_eq!(null_as_void("fs/write_text_file", &void, Value::Null), json!({}));
        assert_eq!(null_as_void("fs/write_text_file", &void, json!(5)), json!(5), "a wrong shape is left for validation to refuse");
        for not_void in [
            json!({"type": "object", "properties": {"exitCode": {"type": "integer"}, "_meta": {}}}),
            json!({"type": "object", "properties": {"outcome": {}}, "required": ["outcome"]}),
            json!({"oneOf": [{"type": "object"}]}),
            json!({"type": "string"}),
        ] {
            assert!(!is_void_def(&not_void), "{not_void}");
            assert_eq!(null_as_void("m", &not_void, Value::Null), Value::Null, "{not_void}");
        }
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
        let check = |frame: Value| validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &frame, None).unwrap_err().to_string();
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
        validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &ok, None).unwrap();
        let bad = json!({"type":"response","command":"get_last_assistant_text","success":true,"data":{}});
        let e = validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &bad, None).unwrap_err().to_string();
        assert_eq!(e, r#"get_last_assistant_text: /data/text: "text" is a required property"#);
        let extra = json!({"type":"response","command":"abort","success":true,"data":{}});
        assert!(validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &extra, None).is_err());
    }
}

