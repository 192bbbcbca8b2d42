//! `agentwire conformance record`: runs an agent in an isolated directory like the runner does,
//! forwards the host's frames from stdin to it and its frames to stdout, and writes the session
//! as a transcript that replays against it: volatile values become placeholders, ids the agent
//! chose become captures (and the host's later frames refer to them), the model's replies become
//! `model` lines.
//!
//! Input lines are forwarded one at a time once the agent has been quiet for `settle` and, unless
//! the line only makes sense during a run (steer, follow-up, abort, a UI or host-tool answer, a
//! wire `steer` / `cancel` / response), no run is in progress. So a piped script records the
//! same interleaving the runner reproduces, where each `in` line waits for the frames before it.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::TMP_PLACEHOLDER;
use crate::client::process::{isolate, GroupGuard};
use crate::protocol::validate::SchemaDialect;

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Transcript name.
    pub name: String,
    /// What the transcript pins down.
    pub description: String,
    /// Requirement ids it covers.
    pub requirements: Vec<String>,
    /// The dialect spoken.
    pub dialect: SchemaDialect,
    /// The agentwire binary to run.
    pub agentwire: PathBuf,
    /// Extra agentwire arguments (kept in the header); `--model-script FILE` becomes `model` lines.
    pub args: Vec<String>,
    /// Quiet time before the next input line is forwarded.
    pub settle: Duration,
}

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

/// A session turned into transcript lines as its frames pass, in that order: host frames become
/// `in` lines (ids the agent chose replaced by their captures), agent frames `out` patterns; the
/// assistant messages of the rpc dialect are kept as the model replies that replay them.
#[derive(Debug)]
pub struct Recording {
    normalizer: Normalizer,
    lines: Vec<Value>,
    /// Request ids the host chose: literal in the agent's answers, never captures.
    host_ids: Vec<Value>,
    /// Model replies rebuilt from the assistant messages (rpc `message_end`).
    replies: Vec<Value>,
    /// Streamed chunks are `optional` and the frame after them a `wait` (see [`Self::loose_streams`]).
    loose_streams: bool,
    /// The last agent frame recorded was such a chunk.
    in_stream: bool,
}

impl Recording {
    /// An empty recording normalizing frames with `normalizer`.
    pub fn new(normalizer: Normalizer) -> Self {
        Self { normalizer, lines: Vec::new(), host_ids: Vec::new(), replies: Vec::new(), loose_streams: false, in_stream: false }
    }

    /// Streamed chunks (ACP message and thought chunks, rpc `message_update` and
    /// `tool_execution_update`, wire `ContentPart` and `ToolCallPart`) become `optional` lines
    /// and the agent frame after them a `wait`: how a reply is cut into chunks, and where a host
    /// frame falls among them, is timing, not protocol, so the replay tolerates other cuts.
    pub fn loose_streams(mut self) -> Self {
        self.loose_streams = true;
        self
    }

    /// A line the host sent: an `in` line (`raw` when it is not a JSON object); returns the
    /// frame when it is one.
    pub fn host(&mut self, line: &str) -> Option<Value> {
        let frame: Option<Value> = serde_json::from_str(line).ok().filter(Value::is_object);
        match &frame {
            Some(frame) => {
                if let Some(id) = frame.get("id") {
                    self.host_ids.push(id.clone());
                }
                self.lines.push(json!({"kind": "in", "frame": self.normalizer.inbound(frame)}));
            }
            None => self.lines.push(json!({"kind": "in", "raw": line})),
        }
        frame
    }

    /// A frame the agent sent.
    pub fn agent(&mut self, frame: &Value) {
        if frame["type"] == "message_end" && frame["message"]["role"] == "assistant" {
            self.replies.push(reply_from_message(&frame["message"]));
        }
        let pattern = self.normalizer.outbound(frame, &self.host_ids);
        let chunk = self.loose_streams && is_stream_chunk(frame);
        let line = if chunk {
            json!({"kind": "out", "frame": pattern, "optional": true})
        } else if self.in_stream {
            json!({"kind": "wait", "frame": pattern})
        } else {
            json!({"kind": "out", "frame": pattern})
        };
        self.in_stream = chunk;
        self.lines.push(line);
    }

    /// The host's input ended: a `close_stdin` line.
    pub fn close_stdin(&mut self) {
        self.lines.push(json!({"kind": "close_stdin"}));
    }

    /// The agent exited with `code`: an `exit` line.
    pub fn exit(&mut self, code: i32) {
        self.lines.push(json!({"kind": "exit", "code": code}));
    }

    /// The transcript: `header`, a `model` line per reply (`scripted`, or when there is none the
    /// replies rebuilt from the assistant messages), then the recorded lines.
    pub fn transcript(&self, header: &Value, scripted: &[Value]) -> String {
        let models = if scripted.is_empty() { &self.replies } else { scripted };
        let mut out = format!("{header}\n");
        for reply in models {
            out.push_str(&format!("{}\n", json!({"kind": "model", "reply": reply})));
        }
        for line in &self.lines {
            out.push_str(&format!("{line}\n"));
        }
        out
    }
}

/// Whether an agent frame is one chunk of a stream whose cut is timing (see
/// [`Recording::loose_streams`]).
fn is_stream_chunk(frame: &Value) -> bool {
    let acp = frame["method"] == "session/update" && matches!(frame["params"]["update"]["sessionUpdate"].as_str(), Some("agent_message_chunk" | "agent_thought_chunk"));
    let rpc = matches!(frame["type"].as_str(), Some("message_update" | "tool_execution_update"));
    let wire = frame["method"] == "event" && matches!(frame["params"]["type"].as_str(), Some("ContentPart" | "ToolCallPart"));
    acp || rpc || wire
}

/// UUIDs, hex entry ids and other opaque tokens an agent generates.
fn looks_generated(s: &str) -> bool {
    let hex = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_hexdigit());
    let uuid = s.len() == 36 && s.split('-').map(str::len).eq([8, 4, 4, 4, 12]) && s.split('-').all(hex);
    uuid || (s.len() >= 8 && hex(s)) || s.starts_with("chatcmpl-") || (s.len() >= 16 && s.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// The model script named by `--model-script` in `args`, as `model` reply values, and the args
/// without it (the runner supplies the script).
fn split_model_script(args: &[String]) -> Result<(Vec<Value>, Vec<String>), String> {
    let mut rest = Vec::new();
    let mut replies = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let file = if a == "--model-script" { it.next().cloned() } else { a.strip_prefix("--model-script=").map(str::to_owned) };
        match file {
            Some(f) => {
                let text = std::fs::read_to_string(&f).map_err(|e| format!("{f}: {e}"))?;
                for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                    replies.push(serde_json::from_str(line).map_err(|e| format!("{f}:{}: {e}", i + 1))?);
                }
            }
            None => rest.push(a.clone()),
        }
    }
    Ok((replies, rest))
}

/// A scripted reply that makes the offline model say what an assistant message said.
fn reply_from_message(message: &Value) -> Value {
    let mut reply = Map::new();
    let (mut text, mut thinking, mut calls) = (String::new(), String::new(), Vec::new());
    for block in message["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("thinking") => thinking.push_str(block["thinking"].as_str().unwrap_or_default()),
            Some("toolCall") => calls.push(json!({"id": block["id"], "name": block["name"], "arguments": block["arguments"]})),
            _ => {}
        }
    }
    if !thinking.is_empty() {
        reply.insert("thinking".into(), json!(thinking));
    }
    if !text.is_empty() {
        reply.insert("text".into(), json!(text));
    }
    if !calls.is_empty() {
        reply.insert("toolCalls".into(), json!(calls));
    }
    if message["stopReason"] == "error" {
        reply.insert("error".into(), message["errorMessage"].clone());
    }
    Value::Object(reply)
}

/// Whether a host line is meant to arrive while a run is in progress.
fn belongs_mid_run(line: &str) -> bool {
    let Ok(frame) = serde_json::from_str::<Value>(line) else { return false };
    if frame.get("jsonrpc").is_some() {
        return frame.get("method").is_none() || matches!(frame["method"].as_str(), Some("steer" | "cancel"));
    }
    matches!(
        frame["type"].as_str(),
        Some("steer" | "follow_up" | "abort" | "abort_and_prompt" | "abort_retry" | "abort_bash" | "extension_ui_response" | "host_tool_update" | "host_tool_result")
    ) || frame.get("streamingBehavior").is_some()
}

/// A host line that starts a prompt whose end the recorder waits for (see [`ends_prompt`]).
fn starts_prompt(frame: &Value) -> bool {
    if frame.get("jsonrpc").is_some() {
        return frame["method"] == "prompt";
    }
    (frame["type"] == "prompt" && frame.get("streamingBehavior").is_none()) || frame["type"] == "abort_and_prompt"
}

/// Whether `frame` ends the prompt with request id `id`: its `prompt_result`, its failure
/// response (rpc), or its response (wire).
fn ends_prompt(frame: &Value, id: &Value) -> bool {
    if frame.get("id") != Some(id) {
        return false;
    }
    if frame.get("jsonrpc").is_some() {
        return frame.get("method").is_none();
    }
    frame["type"] == "prompt_result" || (frame["type"] == "response" && frame["success"] == false)
}

/// Tracks whether a run (rpc: `agent_start`…`agent_end`; wire: `TurnBegin`…`TurnEnd`) is on.
fn run_delta(frame: &Value) -> i32 {
    match (frame["type"].as_str(), frame["params"]["type"].as_str()) {
        (Some("agent_start"), _) | (_, Some("TurnBegin")) => 1,
        (Some("agent_end"), _) | (_, Some("TurnEnd")) => -1,
        _ => 0,
    }
}

enum Event {
    Host(String),
    HostEof,
    Agent(Value),
    AgentRaw(String),
    AgentEof,
}

/// Records a session: host frames from `input`, agent frames echoed to `echo`; returns the
/// transcript text.
pub fn record(options: &RecordOptions, input: impl BufRead + Send + 'static, echo: &mut dyn Write) -> Result<String, String> {
    let (scripted, args) = split_model_script(&options.args)?;
    let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (home, config, work) = (temp.path().join("home"), temp.path().join("config"), temp.path().join("work"));
    for d in [&home, &config, &work] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let mode = if options.dialect == SchemaDialect::Rpc { "rpc" } else { "wire" };
    let mut command = Command::new(&options.agentwire);
    command.arg("--mode").arg(mode).arg("--cwd").arg(&work).arg("--config-dir").arg(&config);
    if !scripted.is_empty() {
        let script = temp.path().join("model-script.jsonl");
        std::fs::write(&script, scripted.iter().map(|r| format!("{r}\n")).collect::<String>()).map_err(|e| e.to_string())?;
        command.arg("--model-script").arg(script);
    }
    command.args(&args).env("HOME", &home).current_dir(&work);
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
        command.env_remove(var);
    }
    isolate(&mut command);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().map_err(|e| format!("could not start the agent: {e}"))?;
    // Whatever ends the recording (an early error return included), nothing the agent started
    // stays behind.
    let _group = GroupGuard(child.id());
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("piped");
    let agent_tx = tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let event = serde_json::from_str(&line).map_or(Event::AgentRaw(line), Event::Agent);
            if agent_tx.send(event).is_err() {
                return;
            }
        }
        let _ = agent_tx.send(Event::AgentEof);
    });
    std::thread::spawn(move || {
        for line in input.lines().map_while(Result::ok) {
            if tx.send(Event::Host(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(Event::HostEof);
    });

    let mut recording = Recording::new(Normalizer::new(temp.path()));
    let mut queued: std::collections::VecDeque<Option<String>> = Default::default();
    let mut stdin = child.stdin.take();
    let mut last_frame = Instant::now();
    let mut agent_done = false;
    let mut runs = 0i32;
    // Prompts forwarded whose end has not been seen: between a prompt's response and its run's
    // first event the agent is quiet but not idle (a loaded machine makes that gap longer than
    // `settle`).
    let mut prompts: Vec<Value> = Vec::new();
    loop {
        // Forward the next host line once the agent has been quiet long enough (and idle, for
        // lines that do not belong in a run).
        let ready = match queued.front() {
            None => false,
            Some(next) => last_frame.elapsed() >= options.settle && ((runs <= 0 && prompts.is_empty()) || next.as_deref().is_some_and(belongs_mid_run)),
        };
        if ready {
            match queued.pop_front().flatten() {
                Some(line) => {
                    if let Some(frame) = recording.host(&line).filter(starts_prompt) {
                        if let Some(id) = frame.get("id") {
                            prompts.push(id.clone());
                        }
                    }
                    if let Some(s) = stdin.as_mut() {
                        let _ = s.write_all(format!("{line}\n").as_bytes()).and_then(|()| s.flush());
                    }
                }
                None => {
                    recording.close_stdin();
                    stdin.take();
                }
            }
            last_frame = Instant::now();
        }
        if agent_done {
            break;
        }
        match rx.recv_timeout(Duration::from_millis(10)) {
            Ok(Event::Host(line)) => queued.push_back(Some(line)),
            Ok(Event::HostEof) => queued.push_back(None),
            Ok(Event::Agent(frame)) => {
                let _ = writeln!(echo, "{frame}").and_then(|()| echo.flush());
                runs += run_delta(&frame);
                prompts.retain(|id| !ends_prompt(&frame, id));
                recording.agent(&frame);
                last_frame = Instant::now();
            }
            Ok(Event::AgentRaw(line)) => return Err(format!("the agent wrote a line that is not JSON: {line}")),
            Ok(Event::AgentEof) => agent_done = true,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => agent_done = true,
        }
    }
    let code = child.wait().map_err(|e| e.to_string())?.code();
    if let Some(code) = code {
        recording.exit(code);
    }

    let mut header = json!({"kind": "header", "name": options.name, "dialect": mode, "description": options.description, "requirements": options.requirements});
    if !args.is_empty() {
        header["args"] = json!(args);
    }
    Ok(recording.transcript(&header, &scripted))
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

    #[test]
    fn assistant_messages_become_model_replies() {
        let m = json!({"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Listing."},
            {"type": "toolCall", "id": "c1", "name": "ls", "arguments": {"path": "."}}]});
        assert_eq!(reply_from_message(&m), json!({"thinking": "hm", "text": "Listing.", "toolCalls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]}));
    }
}
