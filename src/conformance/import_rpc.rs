//! `agentwire conformance import --from pi|omp`: turns a recording of pi or oh-my-pi in RPC
//! mode (`shared/reference-transcripts/{pi,omp}/<scenario>.jsonl`, the fake model's script in
//! `scripts.json` beside it) into a transcript for agentwire's rpc dialect.
//!
//! The transcript runs through an adapter (`tests/conformance/adapters/agentwire-as-pi.json`,
//! `agentwire-as-omp.json`) that gives agentwire the recorded agent's configuration: the same
//! provider `fake` and models (`fake-model`, `fake-reasoner`) served by the fake
//! OpenAI-compatible server. What varied per scenario becomes header `args`: the default model
//! and thinking level (`--model`, `--thinking`), retry settings, `--no-session`,
//! `--session-dir`. The conversion keeps what the protocol fixes and loosens what belongs to the
//! implementation:
//! - the fake model's script becomes `model` lines with the deltas the recording shows (each
//!   assistant message's `text_delta`, `thinking_delta` and `toolcall_delta`s, in order); an
//!   aborted message keeps the rest of its scripted text so the stream is still going when the
//!   abort arrives; HTTP errors become `error` replies (`retryable` for 408, 429 and 5xx);
//! - times, session and entry ids, dialog ids and paths become placeholders and captures (the
//!   recorder's [`Normalizer`]); the run directory of the recording is the run's `{{tmp}}`; a
//!   `sessionFile` is a capture, so switching back to it names agentwire's file;
//! - values of the fake environment: `baseUrl` (the fake server's port), `usage`, `cost`,
//!   token counts and `contextUsage` (the fakes report different numbers, costs are floats),
//!   `responseId`, omp's page cursors (base64 of its session ids), an error response's `error` text, an assistant's `errorMessage` (the
//!   provider's wording), omp's model `compat`, `thinking`, `identity`, `requiresGlyphTokenization` and
//!   `supportsComputerUse` (its provider layer, which agentwire does not have);
//! - every expected frame is a subset match: agentwire speaks the union of pi's and omp's
//!   fields (a host of either finds what it reads), so each key the peer wrote is checked
//!   and the other peer's additions are allowed;
//! - omp's unprompted noise (`setWidget autoresearch`, `advisor_cost_changed`,
//!   `available_commands_update`; reference-transcripts README §6) is dropped;
//! - stdin closing and the exit code become `close_stdin` and `exit`.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::error::InputError;
use super::import::{read_recording, Recorded, REDACTED_TMP};
use crate::recording::Normalizer;
use super::runner::in_line;
use crate::protocol::TranscriptHeaderDialect;

/// The requirement every imported pi transcript covers (listed in docs/conformance.md).
pub const PI_REQUIREMENT: &str = "REF-PI-1";
/// The requirement every imported oh-my-pi transcript covers.
pub const OMP_REQUIREMENT: &str = "REF-OMP-1";

/// Which peer recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// pi 0.73.1 (`pi --mode rpc`).
    Pi,
    /// oh-my-pi 18.2.3 (`omp --mode rpc`).
    Omp,
}

impl Peer {
    /// The transcript name prefix and the directory name in `shared/reference-transcripts/`.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Pi => "pi",
            Peer::Omp => "omp",
        }
    }

    fn described(self) -> &'static str {
        match self {
            Peer::Pi => "pi 0.73.1",
            Peer::Omp => "oh-my-pi 18.2.3",
        }
    }

    fn requirement(self) -> &'static str {
        match self {
            Peer::Pi => PI_REQUIREMENT,
            Peer::Omp => OMP_REQUIREMENT,
        }
    }
}

/// Keys whose values belong to the fake environment or the implementation (see the module docs).
const LOOSE_KEYS: &[&str] = &["baseUrl", "usage", "cost", "tokens", "contextUsage", "responseId", "errorMessage", "nextCursor", "prevCursor"];
/// omp keys of its provider layer with no protocol meaning (and its timings, which agentwire
/// reports only for completed responses), left out of the patterns.
const OMP_DROPPED_KEYS: &[&str] = &["compat", "thinking", "identity", "requiresGlyphTokenization", "supportsComputerUse", "errorId", "contextSnapshot", "duration", "ttft", "premiumRequests"];

/// omp fields agentwire deliberately leaves out (docs/rpc-mode.md, "Where we differ"): on user
/// messages `attribution` and `steering` (pi's message shape); in `get_state` the system prompt
/// and tool dump (agentwire sends them only on request, `get_state` with `systemPrompt` /
/// `dumpTools`, which omp's hosts never send, to keep the frequent answer short), fast mode and
/// `tokensPerSecond`.
const OMP_USER_MESSAGE_KEYS: &[&str] = &["attribution", "steering"];
const OMP_STATE_KEYS: &[&str] = &["systemPrompt", "dumpTools", "fastModeEnabled", "fastModeActive", "tokensPerSecond"];

/// One frame as agentwire's documented decisions shape it: omp-only parts left out (see
/// [`OMP_USER_MESSAGE_KEYS`]); the thinking level omp reports for a model without reasoning
/// (its configured default, `high`) replaced by the effective one, `off` (agentwire
/// reports the level clamped to what the model supports, the one that takes effect); the
/// `sessionFile` of a session without messages (state, stats) left out (both peers name the
/// path up front; agentwire's is absent until the file exists, docs/rpc-mode.md "Where we
/// differ").
fn as_we_decided(v: &Value, peer: Peer) -> Value {
    match v {
        Value::Object(o) if peer == Peer::Omp && BUILTIN_TOOLS.contains(&o.get("toolName").and_then(Value::as_str).unwrap_or_default()) => {
            // omp's built-in tools word their results their own way (bash appends the wall
            // time, todo renders its list): the text is `{{string}}`, `details` left out.
            let mut out = o.clone();
            let result = if o.get("role") == Some(&json!("toolResult")) { Some(&mut out) } else { out.get_mut("result").and_then(Value::as_object_mut) };
            if let Some(result) = result {
                result.remove("details");
                for block in result.get_mut("content").and_then(Value::as_array_mut).into_iter().flatten() {
                    if block.get("text").is_some() {
                        block["text"] = json!("{{string}}");
                    }
                }
            }
            Value::Object(out)
        }
        Value::Object(o) => {
            let user = peer == Peer::Omp && o.get("role") == Some(&json!("user"));
            let state = o.get("model").is_some() && o.get("isStreaming").is_some();
            let omp_state = peer == Peer::Omp && state;
            let mut out = Map::new();
            for (k, child) in o {
                if (user && OMP_USER_MESSAGE_KEYS.contains(&k.as_str())) || (omp_state && OMP_STATE_KEYS.contains(&k.as_str())) {
                    continue;
                }
                let off = state && k == "thinkingLevel" && o["model"]["reasoning"] == false;
                let empty = o.get("messageCount") == Some(&json!(0)) || o.get("totalMessages") == Some(&json!(0));
                if k == "sessionFile" && empty {
                    continue;
                }
                out.insert(k.clone(), if off { json!("off") } else { as_we_decided(child, peer) });
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| as_we_decided(x, peer)).collect()),
        other => other.clone(),
    }
}

/// omp's unprompted frames that no host relies on (reference-transcripts README §6).
fn is_omp_noise(frame: &Value) -> bool {
    matches!(frame["type"].as_str(), Some("advisor_cost_changed" | "available_commands_update"))
        || (frame["type"] == "extension_ui_request" && frame["method"] == "setWidget" && frame["widgetKey"] == "autoresearch")
}

/// What one recorded assistant message streamed.
#[derive(Debug, Default, Clone, PartialEq)]
struct StreamedMessage {
    text: Vec<String>,
    thinking: Vec<String>,
    /// Per tool call, its argument deltas.
    tool_arguments: Vec<Vec<String>>,
    stop_reason: String,
}

/// The assistant messages the recording shows, in order, with their deltas.
fn streamed_messages(lines: &[Recorded]) -> Vec<StreamedMessage> {
    let mut out = Vec::new();
    let mut current: Option<StreamedMessage> = None;
    for line in lines {
        let Recorded::Out(frame) = line else { continue };
        let assistant = frame["message"]["role"] == "assistant";
        match frame["type"].as_str() {
            Some("message_start") if assistant => current = Some(StreamedMessage::default()),
            Some("message_update") => {
                let Some(message) = current.as_mut() else { continue };
                let event = &frame["assistantMessageEvent"];
                let delta = event["delta"].as_str().unwrap_or_default().to_owned();
                match event["type"].as_str() {
                    Some("text_delta") => message.text.push(delta),
                    Some("thinking_delta") => message.thinking.push(delta),
                    Some("toolcall_start") => message.tool_arguments.push(Vec::new()),
                    Some("toolcall_delta") => {
                        if let Some(last) = message.tool_arguments.last_mut() {
                            last.push(delta);
                        }
                    }
                    _ => {}
                }
            }
            Some("message_end") if assistant => {
                if let Some(mut message) = current.take() {
                    message.stop_reason = frame["message"]["stopReason"].as_str().unwrap_or_default().to_owned();
                    out.push(message);
                }
            }
            _ => {}
        }
    }
    out
}

/// One scripted reply of either fake, in the shape both describe (README §4.1, §4.2).
struct ScriptedReply {
    thinking: String,
    text: String,
    /// The fake's own split of `text` (pi lists its chunks; omp cuts by `chunk` characters).
    text_chunks: Vec<String>,
    thinking_chunks: Vec<String>,
    /// `(id, name, arguments)`.
    calls: Vec<(String, String, Value)>,
    delay_ms: Option<u64>,
    /// `Some(status, message)` for an HTTP error.
    error: Option<(u64, String)>,
}

fn cut(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size.max(1)).map(|c| c.iter().collect()).collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

/// How many error replies a pi `repeat` stands for: `-1` (forever) is more than any recorded
/// run asked for.
const PI_FOREVER: usize = 12;

/// pi's fake script (`{"kind":"text"|"tool_call"|"error",…}`) as replies, errors repeated.
fn pi_replies(script: &[Value]) -> Vec<ScriptedReply> {
    let mut out = Vec::new();
    for entry in script {
        let chunks = strings(&entry["chunks"]);
        let mut reply = ScriptedReply {
            thinking: strings(&entry["reasoning"]).concat(),
            thinking_chunks: strings(&entry["reasoning"]),
            text: chunks.concat(),
            text_chunks: chunks,
            calls: Vec::new(),
            delay_ms: entry["delay_ms"].as_u64(),
            error: None,
        };
        match entry["kind"].as_str() {
            Some("tool_call") => {
                if let Some(before) = entry["text_before"].as_str() {
                    reply.text = before.to_owned();
                    reply.text_chunks = vec![before.to_owned()];
                }
                for call in entry["calls"].as_array().into_iter().flatten() {
                    let arguments = call["arguments"].as_str().and_then(|a| serde_json::from_str(a).ok()).unwrap_or_else(|| json!({}));
                    reply.calls.push((call["id"].as_str().unwrap_or_default().to_owned(), call["name"].as_str().unwrap_or_default().to_owned(), arguments));
                }
            }
            Some("error") => {
                let status = entry["status"].as_u64().unwrap_or(500);
                let message = entry["body"]["error"]["message"].as_str().unwrap_or("error").to_owned();
                let times = match entry["repeat"].as_i64() {
                    Some(n) if n < 0 => PI_FOREVER,
                    Some(n) => usize::try_from(n).unwrap_or(1).max(1),
                    None => 1,
                };
                for _ in 1..times {
                    out.push(ScriptedReply { error: Some((status, message.clone())), ..ScriptedReply::empty() });
                }
                reply.error = Some((status, message));
            }
            _ => {}
        }
        out.push(reply);
    }
    out
}

/// omp's fake script (`{"type":"text"|"reasoning"|"tool"|"slow"|"http_error",…}`) as replies.
fn omp_replies(script: &[Value]) -> Vec<ScriptedReply> {
    script
        .iter()
        .map(|entry| {
            let size = entry["chunk"].as_u64().map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
            let text = entry["text"].as_str().unwrap_or_default().to_owned();
            let thinking = entry["thinking"].as_str().unwrap_or_default().to_owned();
            let mut reply = ScriptedReply {
                text_chunks: if text.is_empty() { Vec::new() } else { cut(&text, size) },
                thinking_chunks: if thinking.is_empty() { Vec::new() } else { cut(&thinking, size) },
                text,
                thinking,
                calls: Vec::new(),
                // omp's fake waits `delay` seconds between chunks.
                delay_ms: entry["delay"].as_f64().map(|s| (s * 1000.0).round() as u64),
                error: None,
            };
            if entry["type"] == "http_error" {
                reply.error = Some((entry["status"].as_u64().unwrap_or(500), entry["body"]["error"]["message"].as_str().unwrap_or("error").to_owned()));
            }
            for call in entry["calls"].as_array().into_iter().flatten() {
                reply.calls.push((call["id"].as_str().unwrap_or_default().to_owned(), call["name"].as_str().unwrap_or_default().to_owned(), call["args"].clone()));
            }
            reply
        })
        .collect()
}

impl ScriptedReply {
    fn empty() -> Self {
        ScriptedReply { thinking: String::new(), text: String::new(), text_chunks: Vec::new(), thinking_chunks: Vec::new(), calls: Vec::new(), delay_ms: None, error: None }
    }
}

/// The recorded deltas of a block, completed by the rest of the scripted text when the
/// message was cut short (aborted): the recording only shows what was streamed before.
fn deltas(recorded: &[String], scripted_text: &str, scripted: &[String]) -> Vec<String> {
    if recorded.is_empty() {
        return scripted.to_vec();
    }
    let seen: String = recorded.concat();
    let mut out = recorded.to_vec();
    if let Some(rest) = scripted_text.strip_prefix(seen.as_str()).filter(|r| !r.is_empty()) {
        // The scripted chunks after the part already streamed, where the split lines up.
        let mut at = 0;
        let mut tail = Vec::new();
        for chunk in scripted {
            if at >= seen.len() {
                tail.push(chunk.clone());
            }
            at += chunk.len();
        }
        if tail.concat() == rest {
            out.extend(tail);
        } else {
            out.push(rest.to_owned());
        }
    }
    out
}

/// A scripted reply as a model-script entry, with the deltas `streamed` shows.
fn model_reply(reply: &ScriptedReply, streamed: Option<&StreamedMessage>) -> Value {
    let mut out = Map::new();
    if let Some((status, message)) = &reply.error {
        out.insert("error".into(), json!(format!("{status} {message}")));
        out.insert("retryable".into(), json!(*status == 408 || *status == 429 || *status >= 500));
        return Value::Object(out);
    }
    let empty = StreamedMessage::default();
    let streamed = streamed.unwrap_or(&empty);
    let thinking = deltas(&streamed.thinking, &reply.thinking, &reply.thinking_chunks);
    if !thinking.is_empty() {
        out.insert("thinkingChunks".into(), json!(thinking));
    }
    let text = deltas(&streamed.text, &reply.text, &reply.text_chunks);
    if !text.is_empty() {
        out.insert("textChunks".into(), json!(text));
    }
    if !reply.calls.is_empty() {
        let calls: Vec<Value> = reply
            .calls
            .iter()
            .enumerate()
            .map(|(i, (id, name, arguments))| {
                let mut call = json!({"id": id, "name": name, "arguments": arguments});
                // The recorded deltas, when they add up to these arguments.
                let chunks: Option<Vec<&String>> = streamed.tool_arguments.get(i).map(|c| c.iter().filter(|d| !d.is_empty()).collect());
                if let Some(chunks) = chunks.filter(|c| !c.is_empty()) {
                    let text: String = chunks.iter().map(|c| c.as_str()).collect();
                    if serde_json::from_str::<Value>(&text).ok().as_ref() == Some(arguments) {
                        call["argumentChunks"] = json!(chunks);
                    }
                }
                call
            })
            .collect();
        out.insert("toolCalls".into(), Value::Array(calls));
    }
    if let Some(ms) = reply.delay_ms.filter(|ms| *ms > 0) {
        out.insert("delayMs".into(), json!(ms));
    }
    Value::Object(out)
}

/// The model lines: each scripted reply that is not an error goes with the next recorded
/// assistant message that did not end in an error; messages the recording has beyond the
/// script got the fake's reply for an exhausted script, `exhausted`.
fn model_lines(replies: &[ScriptedReply], exhausted: &ScriptedReply, streamed: &[StreamedMessage]) -> Vec<Value> {
    let mut messages = streamed.iter().filter(|m| m.stop_reason != "error");
    let mut lines: Vec<Value> = replies.iter().map(|r| json!({"kind": "model", "reply": model_reply(r, if r.error.is_some() { None } else { messages.next() })})).collect();
    lines.extend(messages.map(|m| json!({"kind": "model", "reply": model_reply(exhausted, Some(m))})));
    lines
}

/// omp writes `host_tool_call` before the call's `tool_execution_start` (sometimes after the
/// host already answered); agentwire writes the start first, so the host knows the call
/// before it is asked to run it: the start moves up to right before the call.
fn start_before_host_call(lines: &mut Vec<Recorded>) {
    let mut i = 0;
    while i < lines.len() {
        if let Recorded::Out(call) = &lines[i] {
            if call["type"] == "host_tool_call" {
                let id = call["toolCallId"].clone();
                let start = lines[i + 1..].iter().position(|l| matches!(l, Recorded::Out(f) if f["type"] == "tool_execution_start" && f["toolCallId"] == id));
                if let Some(offset) = start {
                    let start = lines.remove(i + 1 + offset);
                    lines.insert(i, start);
                    i += 1;
                }
            }
        }
        i += 1;
    }
}

/// Tools of the agent itself: how often and with what partial output they report progress is
/// their implementation's timing (a host tool's updates are the host's and stay exact).
const BUILTIN_TOOLS: &[&str] = &["bash", "read", "write", "edit", "grep", "find", "ls", "todo"];

/// Drops the built-in tools' `tool_execution_update` lines; the call's `tool_execution_end`
/// becomes a `wait`, which reads past however many updates agentwire sends.
fn tolerate_builtin_updates(lines: Vec<Value>) -> Vec<Value> {
    let builtin = |frame: &Value| BUILTIN_TOOLS.contains(&frame["toolName"].as_str().unwrap_or_default());
    lines
        .into_iter()
        .filter(|l| !(l["kind"] == "out" && l["frame"]["type"] == "tool_execution_update" && builtin(&l["frame"])))
        .map(|l| {
            if l["kind"] == "out" && l["frame"]["type"] == "tool_execution_end" && builtin(&l["frame"]) {
                json!({"kind": "wait", "frame": l["frame"], "subset": true})
            } else {
                l
            }
        })
        .collect()
}

/// A host frame answering something the agent asked (its `id` is the agent's).
fn is_answer(frame: &Value) -> bool {
    matches!(frame["type"].as_str(), Some("extension_ui_response" | "host_tool_update" | "host_tool_result" | "host_uri_result" | "host_uri_error"))
}

/// Session files the agent named, by path, as captures: a later `switch_session` to one of them
/// names agentwire's file, not the recording machine's.
#[derive(Default)]
struct SessionFiles(Vec<String>);

impl SessionFiles {
    /// `frame` with each `sessionFile` path a capture (remembered for [`SessionFiles::inbound`]).
    fn outbound(&mut self, frame: &Value) -> Value {
        match frame {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| match v.as_str().filter(|p| k == "sessionFile" && !p.starts_with("{{")) {
                        Some(path) => {
                            let n = match self.0.iter().position(|p| p == path) {
                                Some(i) => i + 1,
                                None => {
                                    self.0.push(path.to_owned());
                                    self.0.len()
                                }
                            };
                            (k.clone(), json!(format!("{{{{capture:sessionFile{n}}}}}")))
                        }
                        None => (k.clone(), self.outbound(v)),
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.outbound(x)).collect()),
            other => other.clone(),
        }
    }

    /// A host frame with each path seen as a `sessionFile` before replaced by its capture.
    fn inbound(&self, frame: &Value) -> Value {
        match frame {
            Value::String(s) => match self.0.iter().position(|p| p == s) {
                Some(i) => json!(format!("{{{{capture:sessionFile{}}}}}", i + 1)),
                None => frame.clone(),
            },
            Value::Array(a) => Value::Array(a.iter().map(|x| self.inbound(x)).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), self.inbound(v))).collect()),
            other => other.clone(),
        }
    }
}

/// Replaces `from` by `to` in every string of `v`.
fn replace_strings(v: &Value, from: &str, to: &str) -> Value {
    match v {
        Value::String(s) if s.contains(from) => Value::String(s.replace(from, to)),
        Value::Array(a) => Value::Array(a.iter().map(|x| replace_strings(x, from, to)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), replace_strings(x, from, to))).collect()),
        other => other.clone(),
    }
}

/// Loosens the implementation values of one agent frame (see the module docs).
fn loosen(v: &Value, peer: Peer) -> Value {
    match v {
        Value::Object(o) => {
            let mut out = Map::new();
            let failed_response = o.get("type") == Some(&json!("response")) && o.get("success") == Some(&json!(false));
            for (k, child) in o {
                if (peer == Peer::Omp && OMP_DROPPED_KEYS.contains(&k.as_str()) && !child.is_string())
                    || STREAMING_TOOL_CALL_KEYS.contains(&k.as_str())
                    // omp fills in `details: {}` for a tool result that had none.
                    || (k == "details" && child.as_object().is_some_and(Map::is_empty))
                {
                    continue;
                }
                let loose = LOOSE_KEYS.contains(&k.as_str()) || (failed_response && k == "error");
                out.insert(k.clone(), if loose { json!("{{any}}") } else { loosen(child, peer) });
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| loosen(x, peer)).collect()),
        other => other.clone(),
    }
}

/// Keys of a streaming tool call: pi drops them at `toolcall_end`, omp keeps them to the end;
/// agentwire drops them at `toolcall_end` (pi) — left out of the patterns.
const STREAMING_TOOL_CALL_KEYS: &[&str] = &["partialArgs", "streamIndex"];

/// pi's and omp's snapshots run ahead of their events: omp's
/// `message_start` and both peers' update snapshots already hold text not yet sent as a delta,
/// and the response id of the first chunk. agentwire's snapshots are the state right after the
/// event (a host that applies the events in order gets the snapshot), the response id applied when
/// the response is complete. So each
/// assistant message's snapshots are rebuilt from the recorded events: a text or thinking block
/// holds the deltas so far, a tool call still streaming has `{{any}}` arguments (agentwire
/// shows them once they parse), `responseId` is left out of `message_start` and the updates
/// (it is still checked from `message_end` on).
///
/// omp emits no `*_end` for the block an abort cut; agentwire closes every open block before
/// `message_end`, abort included, so a host never
/// holds a block that did not end: [`Snapshots::closing`] gives the `*_end`
/// events to expect first.
#[derive(Default)]
struct Snapshots {
    blocks: Vec<Value>,
    /// Blocks started and not ended, by content index.
    open: Vec<usize>,
}

impl Snapshots {
    /// Before an assistant `message_end`: the end events of blocks still open (subset patterns).
    fn closing(&mut self, frame: &Value) -> Vec<Value> {
        if frame["type"] != "message_end" || frame["message"]["role"] != "assistant" {
            return Vec::new();
        }
        let mut out = Vec::new();
        for index in std::mem::take(&mut self.open) {
            let block = &self.blocks[index];
            let event = match block["type"].as_str() {
                Some("text") => json!({"type": "text_end", "contentIndex": index, "content": block["text"]}),
                Some("thinking") => json!({"type": "thinking_end", "contentIndex": index, "content": block["thinking"]}),
                _ => continue,
            };
            out.push(json!({"type": "message_update", "assistantMessageEvent": event}));
        }
        out
    }

    fn apply(&mut self, frame: &Value) -> Value {
        let mut f = frame.clone();
        match frame["type"].as_str() {
            Some("message_start") if frame["message"]["role"] == "assistant" => {
                self.blocks.clear();
                self.open.clear();
                if frame["message"]["stopReason"] != "error" {
                    f["message"]["content"] = json!([]);
                    if let Some(m) = f["message"].as_object_mut() {
                        m.remove("responseId");
                    }
                }
            }
            Some("message_update") => {
                let event = &frame["assistantMessageEvent"];
                let Some(index) = event["contentIndex"].as_u64().and_then(|i| usize::try_from(i).ok()) else { return f };
                if self.blocks.len() <= index {
                    self.blocks.resize(index + 1, Value::Null);
                }
                let recorded = &event["partial"]["content"][index];
                let block = &mut self.blocks[index];
                let delta = event["delta"].as_str().unwrap_or_default();
                let kind = event["type"].as_str().unwrap_or_default();
                if kind.ends_with("_start") {
                    self.open.push(index);
                } else if kind.ends_with("_end") {
                    self.open.retain(|i| *i != index);
                }
                match event["type"].as_str() {
                    Some("text_start") => *block = json!({"type": "text", "text": ""}),
                    Some("thinking_start") => {
                        *block = json!({"type": "thinking", "thinking": ""});
                        if let Some(signature) = recorded.get("thinkingSignature") {
                            block["thinkingSignature"] = signature.clone();
                        }
                    }
                    Some("text_delta") => block["text"] = json!(format!("{}{delta}", block["text"].as_str().unwrap_or_default())),
                    Some("thinking_delta") => block["thinking"] = json!(format!("{}{delta}", block["thinking"].as_str().unwrap_or_default())),
                    Some("text_end") => block["text"] = event["content"].clone(),
                    Some("thinking_end") => block["thinking"] = event["content"].clone(),
                    Some("toolcall_start" | "toolcall_delta") => {
                        *block = recorded.clone();
                        block["arguments"] = json!("{{any}}");
                    }
                    Some("toolcall_end") => *block = event["toolCall"].clone(),
                    _ => {}
                }
                for pointer in ["/message", "/assistantMessageEvent/partial"] {
                    if let Some(snapshot) = f.pointer_mut(pointer).and_then(Value::as_object_mut) {
                        snapshot.remove("responseId");
                        snapshot.insert("content".into(), Value::Array(self.blocks.clone()));
                    }
                }
            }
            _ => {}
        }
        f
    }
}

/// The recording's run directory (the recorded agent's HOME and work dir are below it), after
/// `<tmp>` was read as `/tmp`, and the name of its work dir.
fn run_dir(peer: Peer, scenario: &str, text: &str) -> (String, &'static str) {
    match peer {
        Peer::Pi => (format!("/tmp/peers/pi/run/{scenario}"), "ws"),
        Peer::Omp => {
            // `<tmp>/peers/omp/runs/omp-<scenario>-<random>`.
            let marker = format!("{REDACTED_TMP}/peers/omp/runs/omp-{scenario}-");
            let dir = text.find(&marker).map(|at| {
                let random: String = text[at + marker.len()..].chars().take_while(char::is_ascii_alphanumeric).collect();
                format!("{}{random}", marker.replacen(REDACTED_TMP, "/tmp", 1))
            });
            (dir.unwrap_or_else(|| format!("/tmp/peers/omp/runs/omp-{scenario}")), "work")
        }
    }
}

/// agentwire arguments for what the recorded agent was configured with.
fn header_args(peer: Peer, script: &Value) -> Vec<String> {
    let mut args = Vec::new();
    let argv: Vec<&str> = script["argv"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if argv.contains(&"--no-session") {
        args.push("--no-session".to_owned());
    }
    if argv.contains(&"--session-dir") {
        // The recording's directory is outside its run; ours is inside the run's tmp.
        args.extend(["--session-dir".to_owned(), "{{tmp}}/sessions".to_owned()]);
    }
    for pair in argv.windows(2) {
        if pair[0] == "--model" {
            args.extend(["--model".to_owned(), pair[1].to_owned()]);
        }
    }
    let settings = &script["settings_json"];
    if let Some(model) = settings["defaultModel"].as_str().filter(|m| *m != "fake-model") {
        args.extend(["--model".to_owned(), model.to_owned()]);
    }
    if let Some(level) = settings["defaultThinkingLevel"].as_str() {
        args.extend(["--thinking".to_owned(), level.to_owned()]);
    }
    let retry = &settings["retry"];
    if retry.is_object() {
        if retry["enabled"] == false {
            args.extend(["--retry-max-attempts".to_owned(), "0".to_owned()]);
        } else if let Some(n) = retry["maxRetries"].as_u64() {
            args.extend(["--retry-max-attempts".to_owned(), n.to_string()]);
        }
        if let Some(ms) = retry["baseDelayMs"].as_u64() {
            args.extend(["--retry-base-delay-ms".to_owned(), ms.to_string()]);
        }
    }
    if peer == Peer::Omp {
        if let Some(keep) = script["config_yml"].as_str().and_then(|c| c.lines().find_map(|l| l.trim().strip_prefix("keepRecentTokens:"))) {
            args.extend(["--compaction-keep-tokens".to_owned(), keep.trim().to_owned()]);
        }
    }
    args
}

/// Converts one pi or oh-my-pi recording (`<scenario>.jsonl`, with `scripts.json` beside it)
/// into a transcript for agentwire's rpc dialect, run through the peer's `agentwire-as-*` adapter.
pub fn import_rpc(peer: Peer, path: &Path, scripts: &Value) -> Result<String, InputError> {
    let scenario = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl")).ok_or_else(|| InputError::Content { at: path.display().to_string(), reason: "not a .jsonl file".into() })?;
    let script = scripts.get(scenario).ok_or_else(|| InputError::Content { at: path.display().to_string(), reason: format!("no entry {scenario:?} in scripts.json") })?;
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Io { path: path.to_owned(), source })?;
    let (dir, work) = run_dir(peer, scenario, &text);
    let mut lines = read_recording(path)?;
    start_before_host_call(&mut lines);
    let fake_script: Vec<Value> = script["fake_script"].as_array().cloned().unwrap_or_default();
    let replies = match peer {
        Peer::Pi => pi_replies(&fake_script),
        Peer::Omp => omp_replies(&fake_script),
    };

    let mut out = vec![json!({
        "kind": "header",
        "name": format!("{}-{}", peer.name(), scenario.replace(['.', '_'], "-")),
        "dialect": "rpc",
        "description": format!("Imported from {}'s recording `{scenario}` (shared/reference-transcripts/{}) by `agentwire conformance import`; runs through adapters/agentwire-as-{}.json.", peer.described(), peer.name(), peer.name()),
        "requirements": [peer.requirement()],
        "args": header_args(peer, script),
    })];
    let exhausted = match peer {
        Peer::Pi => pi_replies(std::slice::from_ref(&script["default_reply_when_exhausted"])),
        Peer::Omp => omp_replies(std::slice::from_ref(&script["default_reply_when_exhausted"])),
    };
    let exhausted = exhausted.into_iter().next().unwrap_or_else(ScriptedReply::empty);
    out.extend(model_lines(&replies, &exhausted, &streamed_messages(&lines)));

    // The recording's work dir is the run's `work`, its run dir the run's tmp.
    let (recorded_work, our_work) = (format!("{dir}/{work}"), format!("{dir}/work"));
    let mut normalizer = Normalizer::new(Path::new(&dir));
    // The ids of the host's own commands stay literal; ids the agent chose (dialogs, host tool
    // and URI calls, which the host's answers repeat) become captures.
    let host_ids: Vec<Value> = lines.iter().filter_map(|l| if let Recorded::In(f) = l { f.get("id").filter(|_| !is_answer(f)).cloned() } else { None }).collect();
    let mut closed = false;
    let mut snapshots = Snapshots::default();
    let mut session_files = SessionFiles::default();
    for line in &lines {
        // Lines that go before this one's own (synthesised `*_end` events).
        let mut before = Vec::new();
        let next = match line {
            Recorded::In(frame) => in_line(TranscriptHeaderDialect::Rpc, session_files.inbound(&normalizer.inbound(&replace_strings(frame, &recorded_work, &our_work)))),
            Recorded::InRaw(raw) => json!({"kind": "in", "raw": raw}),
            Recorded::CloseStdin if closed => continue,
            Recorded::CloseStdin => {
                closed = true;
                json!({"kind": "close_stdin"})
            }
            Recorded::Exit(code) => json!({"kind": "exit", "code": code}),
            Recorded::Out(frame) if peer == Peer::Omp && is_omp_noise(frame) => continue,
            // The provider's first tool-call chunk carries no argument text; the peers relay
            // it as an empty `toolcall_delta`, agentwire relays no empty delta.
            Recorded::Out(frame) if frame["assistantMessageEvent"]["type"] == "toolcall_delta" && frame["assistantMessageEvent"]["delta"] == "" => continue,
            Recorded::Out(frame) => {
                for end in snapshots.closing(frame) {
                    before.push(json!({"kind": "out", "frame": end, "subset": true}));
                }
                let frame = session_files.outbound(&as_we_decided(&snapshots.apply(&replace_strings(frame, &recorded_work, &our_work)), peer));
                let line = json!({"kind": "out", "frame": normalizer.outbound(&loosen(&frame, peer), &host_ids), "subset": true});
                if peer == Peer::Omp && frame["type"] == "agent_end" {
                    // agentwire ends every prompt with `prompt_result`, so a host knows
                    // when it is over whatever the prompt was; omp
                    // 18.2.3 sends one only for extension commands.
                    before.push(line);
                    json!({"kind": "out", "frame": {"type": "prompt_result"}, "subset": true, "optional": true})
                } else {
                    line
                }
            }
        };
        out.append(&mut before);
        out.push(next);
    }
    // pi's exit code is in scripts.json, not in the transcript.
    if peer == Peer::Pi && closed {
        if let Some(code) = script["exit_code"].as_i64() {
            out.push(json!({"kind": "exit", "code": code}));
        }
    }
    Ok(tolerate_builtin_updates(out).iter().map(|l| format!("{l}\n")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_errors_repeat_and_tool_calls_take_the_recorded_argument_deltas() {
        let script = vec![
            json!({"kind": "error", "status": 500, "body": {"error": {"message": "boom"}}, "repeat": 2}),
            json!({"kind": "tool_call", "text_before": "Let me run that.", "calls": [{"id": "c1", "name": "bash", "arguments": "{\"command\": \"echo hi\"}"}], "arg_chunks": 2}),
            json!({"kind": "text", "chunks": ["Do", "ne"], "delay_ms": 20, "reasoning": ["hm"]}),
        ];
        let streamed = vec![
            StreamedMessage { stop_reason: "error".into(), ..StreamedMessage::default() },
            StreamedMessage { text: vec!["Let me run that.".into()], tool_arguments: vec![vec!["{\"command\"".into(), ": \"echo hi\"}".into()]], stop_reason: "toolUse".into(), ..StreamedMessage::default() },
        ];
        let lines = model_lines(&pi_replies(&script), &ScriptedReply::empty(), &streamed);
        let replies: Vec<&Value> = lines.iter().map(|l| &l["reply"]).collect();
        assert_eq!(replies[0], &json!({"error": "500 boom", "retryable": true}));
        assert_eq!(replies[1], replies[0], "repeat 2 is two error replies");
        assert_eq!(
            replies[2],
            &json!({"textChunks": ["Let me run that."], "toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": "echo hi"}, "argumentChunks": ["{\"command\"", ": \"echo hi\"}"]}]})
        );
        // Not streamed in the recording: the script's own chunks.
        assert_eq!(replies[3], &json!({"thinkingChunks": ["hm"], "textChunks": ["Do", "ne"], "delayMs": 20}));
        assert_eq!(pi_replies(&[json!({"kind": "error", "status": 400, "repeat": -1})]).len(), PI_FOREVER);
    }

    #[test]
    fn an_aborted_message_keeps_the_rest_of_its_script_and_omp_cuts_by_chunk_size() {
        let replies = omp_replies(&[json!({"type": "slow", "text": "abcdefghij", "chunk": 4, "delay": 0.15})]);
        assert_eq!(replies[0].text_chunks, ["abcd", "efgh", "ij"]);
        let streamed = StreamedMessage { text: vec!["abcd".into()], stop_reason: "aborted".into(), ..StreamedMessage::default() };
        assert_eq!(model_reply(&replies[0], Some(&streamed)), json!({"textChunks": ["abcd", "efgh", "ij"], "delayMs": 150}));
        // omp merged two chunks into one delta: the recorded deltas win, the rest follows whole.
        let streamed = StreamedMessage { text: vec!["abcdef".into()], stop_reason: "aborted".into(), ..StreamedMessage::default() };
        assert_eq!(model_reply(&replies[0], Some(&streamed))["textChunks"], json!(["abcdef", "ghij"]));
        let error = omp_replies(&[json!({"type": "http_error", "status": 400})]);
        assert_eq!(model_reply(&error[0], None), json!({"error": "400 error", "retryable": false}));
    }

    #[test]
    fn loosening_keeps_protocol_values_and_drops_the_fake_environment() {
        let frame = json!({"type": "response", "command": "get_state", "success": true, "data": {
            "model": {"id": "fake-model", "baseUrl": "http://127.0.0.1:4/v1", "compat": {"x": 1}, "cost": {"input": 1}},
            "thinkingLevel": "off", "contextUsage": {"tokens": 5}}});
        assert_eq!(
            loosen(&frame, Peer::Omp),
            json!({"type": "response", "command": "get_state", "success": true, "data": {
                "model": {"id": "fake-model", "baseUrl": "{{any}}", "cost": "{{any}}"}, "thinkingLevel": "off", "contextUsage": "{{any}}"}})
        );
        assert_eq!(loosen(&frame, Peer::Pi)["data"]["model"]["compat"], json!({"x": 1}), "pi has no compat block to drop");
        let failed = json!({"id": "x", "type": "response", "command": "nope", "success": false, "error": "Unknown command: nope"});
        assert_eq!(loosen(&failed, Peer::Pi)["error"], "{{any}}");
        let ok = json!({"type": "response", "success": true, "data": {"error": "kept"}});
        assert_eq!(loosen(&ok, Peer::Pi), ok);
        // omp's `ready` is protocol: the versions offered and the v2 frame limits are checked as recorded.
        let ready = json!({"type": "ready", "protocolVersion": 1, "supportedProtocolVersions": [1, 2], "maxFrameBytes": 1048576, "maxReassembledFrameBytes": 67108864});
        assert_eq!(loosen(&ready, Peer::Omp), ready);
    }

    #[test]
    fn configuration_becomes_agentwire_arguments() {
        let script = json!({"argv": ["pi", "--mode", "rpc", "--no-session"],
            "settings_json": {"defaultProvider": "fake", "defaultModel": "fake-reasoner", "defaultThinkingLevel": "high",
                              "retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 100}}});
        assert_eq!(header_args(Peer::Pi, &script), ["--no-session", "--model", "fake-reasoner", "--thinking", "high", "--retry-max-attempts", "3", "--retry-base-delay-ms", "100"]);
        let script = json!({"argv": ["pi", "--mode", "rpc", "--session-dir", "<tmp>/x"], "settings_json": {"defaultModel": "fake-model"}});
        assert_eq!(header_args(Peer::Pi, &script), ["--session-dir", "{{tmp}}/sessions"]);
        let script = json!({"argv": ["omp", "--mode", "rpc"], "config_yml": "compaction:\n  keepRecentTokens: 10\n"});
        assert_eq!(header_args(Peer::Omp, &script), ["--compaction-keep-tokens", "10"]);
    }

    #[test]
    fn snapshots_are_rebuilt_from_the_events_and_an_abort_closes_the_open_block() {
        let mut snapshots = Snapshots::default();
        let start = snapshots.apply(&json!({"type": "message_start", "message": {"role": "assistant", "content": [{"type": "text", "text": "Hel"}], "responseId": "r", "stopReason": "stop"}}));
        assert_eq!(start["message"], json!({"role": "assistant", "content": [], "stopReason": "stop"}), "omp's message_start runs ahead");
        let update = |kind: &str, delta: &str, ahead: &str| {
            json!({"type": "message_update", "assistantMessageEvent": {"type": kind, "contentIndex": 0, "delta": delta,
                   "partial": {"content": [{"type": "text", "text": ahead}], "responseId": "r"}}})
        };
        assert_eq!(snapshots.apply(&update("text_start", "", "Hel"))["assistantMessageEvent"]["partial"], json!({"content": [{"type": "text", "text": ""}]}));
        let delta = snapshots.apply(&update("text_delta", "Hel", "Hello w"));
        assert_eq!(delta["assistantMessageEvent"]["partial"]["content"], json!([{"type": "text", "text": "Hel"}]), "the snapshot holds the deltas so far");
        let end = json!({"type": "message_end", "message": {"role": "assistant", "stopReason": "aborted"}});
        assert_eq!(snapshots.closing(&end), [json!({"type": "message_update", "assistantMessageEvent": {"type": "text_end", "contentIndex": 0, "content": "Hel"}})]);
        assert!(snapshots.closing(&end).is_empty(), "closed once");
    }

    #[test]
    fn host_tool_calls_follow_their_start_and_builtin_tool_updates_are_waited_past() {
        let mut lines = vec![
            Recorded::Out(json!({"type": "host_tool_call", "toolCallId": "c"})),
            Recorded::In(json!({"type": "host_tool_result", "id": "h"})),
            Recorded::Out(json!({"type": "tool_execution_start", "toolCallId": "c"})),
        ];
        start_before_host_call(&mut lines);
        let kinds: Vec<String> = lines.iter().map(|l| if let Recorded::Out(f) | Recorded::In(f) = l { f["type"].as_str().unwrap_or_default().to_owned() } else { String::new() }).collect();
        assert_eq!(kinds, ["tool_execution_start", "host_tool_call", "host_tool_result"]);
        let out = tolerate_builtin_updates(vec![
            json!({"kind": "out", "frame": {"type": "tool_execution_update", "toolName": "bash"}}),
            json!({"kind": "out", "frame": {"type": "tool_execution_update", "toolName": "echo_host"}}),
            json!({"kind": "out", "frame": {"type": "tool_execution_end", "toolName": "bash"}, "subset": true}),
        ]);
        assert_eq!(out.iter().map(|l| l["kind"].as_str().unwrap()).collect::<Vec<_>>(), ["out", "wait"], "a host tool's update stays exact");
    }

    #[test]
    fn omp_extras_and_our_decisions_shape_the_expected_frames() {
        let state = json!({"model": {"reasoning": false}, "isStreaming": false, "thinkingLevel": "high", "messageCount": 0,
                           "sessionFile": "/x", "systemPrompt": ["…"], "fastModeEnabled": false});
        assert_eq!(as_we_decided(&state, Peer::Omp), json!({"model": {"reasoning": false}, "isStreaming": false, "thinkingLevel": "off", "messageCount": 0}));
        let user = json!({"role": "user", "content": [], "attribution": "user"});
        assert_eq!(as_we_decided(&user, Peer::Omp), json!({"role": "user", "content": []}));
        assert_eq!(as_we_decided(&user, Peer::Pi), user, "pi's frames keep what pi wrote");
        let end = json!({"type": "tool_execution_end", "toolName": "bash", "result": {"content": [{"type": "text", "text": "hi\n\nWall time: 0.1 seconds"}], "details": {"x": 1}}});
        assert_eq!(as_we_decided(&end, Peer::Omp)["result"], json!({"content": [{"type": "text", "text": "{{string}}"}]}));
    }

    #[test]
    fn a_session_file_the_agent_named_is_a_capture_the_host_can_switch_back_to() {
        let mut files = SessionFiles::default();
        let state = json!({"data": {"sessionFile": "/tmp/peers/x/a.jsonl", "sessionId": "s"}});
        assert_eq!(files.outbound(&state), json!({"data": {"sessionFile": "{{capture:sessionFile1}}", "sessionId": "s"}}));
        let switch = json!({"type": "switch_session", "sessionPath": "/tmp/peers/x/a.jsonl"});
        assert_eq!(files.inbound(&switch)["sessionPath"], "{{capture:sessionFile1}}");
        assert_eq!(files.inbound(&json!({"sessionPath": "/tmp/other.jsonl"}))["sessionPath"], "/tmp/other.jsonl", "a path never named stays");
    }

    #[test]
    fn the_omp_run_directory_is_found_in_the_recording() {
        let text = r#"{"cwd":"<tmp>/peers/omp/runs/omp-bash-x1y2/work/a"}"#;
        assert_eq!(run_dir(Peer::Omp, "bash", text), ("/tmp/peers/omp/runs/omp-bash-x1y2".to_owned(), "work"));
        assert_eq!(run_dir(Peer::Pi, "bash", ""), ("/tmp/peers/pi/run/bash".to_owned(), "ws"));
    }
}
