//! Runs one transcript against an agent binary: a fresh process with its own temporary HOME,
//! config dir and work dir; `in` frames are written when every earlier line is satisfied; each
//! frame the agent writes is validated against the schema and matched against the next
//! expectation; at the end stdin is closed, then SIGTERM, then SIGKILL.
//!
//! agentwire itself gets the transcript's `model` replies as `--model-script`; any other agent
//! is started through an adapter (`schema/transcript.schema.json#/$defs/ConformanceAdapter`)
//! and pointed at a [`FakeLlm`] serving them over HTTP.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::error::{InputError, RunError};
use super::fake_llm::{FakeLlm, FAKE_MODEL};
use super::Matcher;
use crate::client::process::{isolate, signal_group};
use crate::protocol::acp::{acp_validator, AcpValidator};
use crate::protocol::acp_v2::acp_v2_validator;
use crate::protocol::validate::{validator, SchemaDialect, Direction, FrameError};
use crate::protocol::{ConformanceAdapter, ConformanceAdapterCapabilitiesItem, ConformanceAdapterDialectsItem, TranscriptEffect, TranscriptEffectEffect, TranscriptHeaderDialect, TranscriptLine};

/// The agent under test.
#[derive(Debug, Clone)]
pub enum AgentUnderTest {
    /// An agentwire binary: it gets `--mode`, `--cwd`, `--config-dir`, the header's `args` and
    /// the transcript's model replies as `--model-script`.
    Agentwire(std::path::PathBuf),
    /// An agent started as an adapter says, its model replies served by a fake OpenAI server.
    /// `agentwire` is what `{{agentwire}}` stands for.
    Adapted { adapter: Box<ConformanceAdapter>, agentwire: std::path::PathBuf },
}

impl AgentUnderTest {
    /// `--bin "CMD ARGS"` without an adapter file: the command as given, both dialects, the
    /// fake server's URL in `AGENTWIRE_CONFORMANCE_BASE_URL`.
    pub fn command(command: Vec<String>, agentwire: std::path::PathBuf) -> Result<Self, InputError> {
        let name = command.first().ok_or(InputError::EmptyCommand)?.clone();
        let adapter = serde_json::json!({"name": name, "command": command, "dialects": ["rpc", "wire"],
                                          "env": {"AGENTWIRE_CONFORMANCE_BASE_URL": "{{baseUrl}}"}});
        let adapter = crate::protocol::decode::from_value(adapter).map_err(InputError::Adapter)?;
        Ok(Self::Adapted { adapter: Box::new(adapter), agentwire })
    }

    /// The agent's name for reports.
    pub fn name(&self) -> String {
        match self {
            Self::Agentwire(_) => "agentwire".into(),
            Self::Adapted { adapter, .. } => adapter.name.to_string(),
        }
    }
}

/// Reads and validates an adapter file; errors name the file and the field.
pub fn load_adapter(path: &Path) -> Result<ConformanceAdapter, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Io { path: path.to_owned(), source })?;
    let at = || path.display().to_string();
    let v: Value = serde_json::from_str(&text).map_err(|source| InputError::Json { at: at(), source })?;
    validator().validate_def("ConformanceAdapter", &v).map_err(|source| InputError::Schema { at: at(), source })?;
    crate::protocol::decode::from_value(v).map_err(|source| InputError::Json { at: at(), source })
}

/// How to run transcripts.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The agent under test.
    pub agent: AgentUnderTest,
    /// How long to wait for one expected frame.
    pub frame_timeout: Duration,
}

/// The outcome of one transcript.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Transcript name (from its header).
    pub name: String,
    /// Requirement ids it covers.
    pub requirements: Vec<String>,
    /// Its dialect (`rpc`, `wire`, `acp`), when its header could be read.
    pub dialect: Option<String>,
    /// `None` when it passed; otherwise what differed, readable.
    pub failure: Option<String>,
    /// The requirements a failure is charged to: those of the line that failed (the header's
    /// when the line names none); empty when it passed or the harness itself was at fault.
    pub charged: Vec<String>,
    /// The failure is on a line that sets up a precondition (`setup`): the requirements it is
    /// charged to could not be tested, which counts as failed.
    pub not_testable: bool,
    /// The requirements of the checking lines that were satisfied before the run ended (those a
    /// failure later in the transcript was not charged to were still exercised, and held).
    pub checked: Vec<String>,
    /// Why the transcript was not run (a dialect the agent does not speak).
    pub skipped: Option<String>,
    /// How long the run took.
    pub duration: Duration,
    /// The last frames seen, for the report.
    pub last_frames: Vec<Value>,
}

/// Parses a transcript file, validating each line; errors name the line.
pub fn load(path: &Path) -> Result<Vec<TranscriptLine>, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Io { path: path.to_owned(), source })?;
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = || format!("{}:{}", path.display(), i + 1);
        let v: Value = serde_json::from_str(raw).map_err(|source| InputError::Json { at: at(), source })?;
        validator().validate_def("TranscriptLine", &v).map_err(|source| InputError::Schema { at: at(), source })?;
        lines.push(TranscriptLine::from_value(v).map_err(|source| InputError::Json { at: at(), source })?);
    }
    let Some(TranscriptLine::Header(header)) = lines.first() else {
        return Err(InputError::Content { at: path.display().to_string(), reason: "the first line must be the header".into() });
    };
    // A check charged to a requirement the header does not name would count for nothing: the
    // header's requirements are what the transcript claims, its lines what earns them.
    for (i, line) in lines.iter().enumerate().skip(1) {
        let named = match line {
            TranscriptLine::Out(l) => l.requirements.as_deref(),
            TranscriptLine::Unordered(l) => l.requirements.as_deref(),
            TranscriptLine::Wait(l) => l.requirements.as_deref(),
            TranscriptLine::Effect(l) => {
                effect_shape(l).map_err(|e| InputError::Content { at: format!("{}: line {}", path.display(), i + 1), reason: e.to_string() })?;
                l.requirements.as_deref()
            }
            TranscriptLine::Header(_)
            | TranscriptLine::In(_)
            | TranscriptLine::Model(_)
            | TranscriptLine::CloseStdin(_)
            | TranscriptLine::Exit(_)
            | TranscriptLine::Sleep(_) => None,
        };
        if let Some(other) = named.into_iter().flatten().find(|r| !header.requirements.contains(r)) {
            return Err(InputError::Content { at: format!("{}: line {}", path.display(), i + 1), reason: format!("{other} is not among the header's requirements") });
        }
    }
    Ok(lines)
}

/// Why an `effect` line does not hold, or cannot be checked as written.
#[derive(Debug, thiserror::Error)]
pub enum EffectError {
    /// The line lacks a field its effect needs, or has one it does not take.
    #[error("`{effect}` effect: {why}")]
    Shape { effect: &'static str, why: &'static str },
    /// `file`'s path leaves the run's work directory.
    #[error("`file` effect: {0:?} must be a relative path inside the work directory")]
    Outside(String),
    /// No model request held the text.
    #[error("the model received {requests} request(s), none holding {text:?}")]
    NotReceived { text: String, requests: usize },
    /// The streamed reply does not hold the text.
    #[error("the reply the host received so far does not hold {text:?}: {got:?}")]
    NotReplied { text: String, got: String },
    /// The file's content differs (or it is missing, or unreadable).
    #[error("{path}: expected content {expected:?}, found {found}")]
    Content { path: String, expected: String, found: String },
    /// The file exists although it must not.
    #[error("{path}: exists (content {found:?}) although it must not")]
    Present { path: String, found: String },
}

fn effect_name(effect: TranscriptEffectEffect) -> &'static str {
    match effect {
        TranscriptEffectEffect::ModelReceived => "model_received",
        TranscriptEffectEffect::ReplyReceived => "reply_received",
        TranscriptEffectEffect::File => "file",
    }
}

/// Checks that an `effect` line carries what its effect needs, and only that.
fn effect_shape(l: &TranscriptEffect) -> Result<(), EffectError> {
    let effect = effect_name(l.effect);
    let shape = |why| Err(EffectError::Shape { effect, why });
    match l.effect {
        TranscriptEffectEffect::ModelReceived | TranscriptEffectEffect::ReplyReceived => {
            if l.contains.as_deref().is_none_or(str::is_empty) {
                return shape("needs a non-empty `contains`");
            }
            if l.path.is_some() || l.content.is_some() || l.absent.is_some() {
                return shape("takes no `path`, `content` or `absent`");
            }
        }
        TranscriptEffectEffect::File => {
            let Some(path) = l.path.as_deref() else { return shape("needs `path`") };
            if path.is_empty() || Path::new(path).is_absolute() || path.split('/').any(|c| c == "..") {
                return Err(EffectError::Outside(path.to_owned()));
            }
            if l.contains.is_some() {
                return shape("takes no `contains` (`content` is the whole file)");
            }
            match (&l.content, l.absent) {
                (Some(_), None | Some(false)) | (None, Some(true)) => {}
                (Some(_), Some(true)) => return shape("takes `content` or `absent: true`, not both"),
                (None, None | Some(false)) => return shape("needs `content` or `absent: true`"),
            }
        }
    }
    Ok(())
}

/// The assistant text a frame streams to the host, if it is such a frame: an ACP
/// `agent_message_chunk` (v1 and v2), a wire `ContentPart` of type text, an rpc `text_delta`.
fn streamed_text(dialect: TranscriptHeaderDialect, frame: &Value) -> Option<&str> {
    match dialect {
        TranscriptHeaderDialect::Acp => {
            let update = frame.pointer("/params/update").filter(|_| frame.get("method").is_some_and(|m| m == "session/update"))?;
            (update.get("sessionUpdate")? == "agent_message_chunk").then(|| update.pointer("/content/text")?.as_str()).flatten()
        }
        TranscriptHeaderDialect::Wire => {
            let params = frame.get("params").filter(|_| frame.get("method").is_some_and(|m| m == "event"))?;
            (params.get("type")? == "ContentPart" && params.pointer("/payload/type")? == "text").then(|| params.pointer("/payload/text")?.as_str()).flatten()
        }
        TranscriptHeaderDialect::Rpc => {
            let event = frame.get("assistantMessageEvent").filter(|_| frame.get("type").is_some_and(|t| t == "message_update"))?;
            (event.get("type")? == "text_delta").then(|| event.get("delta")?.as_str()).flatten()
        }
    }
}

/// Whether a string anywhere in `v` holds `text`.
fn holds_text(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s.contains(text),
        Value::Array(items) => items.iter().any(|i| holds_text(i, text)),
        Value::Object(map) => map.values().any(|i| holds_text(i, text)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Checks an `effect` line now. `Ok(false)`: it cannot be judged in this run (a model request
/// when no fake server serves the model), which is neither a pass nor a failure.
fn check_effect(run: &Run, model: Option<&FakeLlm>, work: &Path, l: &TranscriptEffect) -> Result<bool, EffectError> {
    match l.effect {
        TranscriptEffectEffect::ModelReceived => {
            let Some(model) = model else { return Ok(false) };
            let text = l.contains.clone().unwrap_or_default();
            let requests = model.requests();
            if requests.iter().any(|body| holds_text(body, &text)) {
                Ok(true)
            } else {
                Err(EffectError::NotReceived { text, requests: requests.len() })
            }
        }
        TranscriptEffectEffect::ReplyReceived => {
            let text = l.contains.clone().unwrap_or_default();
            let frames = run.seen.iter().flat_map(|f| match f {
                Value::Array(members) => members.iter().collect::<Vec<_>>(),
                single => vec![single],
            });
            let got: String = frames.filter_map(|f| streamed_text(run.dialect, f)).collect();
            if got.contains(&text) {
                Ok(true)
            } else {
                Err(EffectError::NotReplied { text, got })
            }
        }
        TranscriptEffectEffect::File => {
            let relative = l.path.clone().unwrap_or_default();
            let file = work.join(&relative);
            let read = || match std::fs::read(&file) {
                Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                Err(_) => None,
            };
            match &l.content {
                None => match read() {
                    None if !file.exists() => Ok(true),
                    found => Err(EffectError::Present { path: relative, found: found.unwrap_or_default() }),
                },
                Some(expected) => {
                    // The write may land just after the frame that reported it.
                    let deadline = Instant::now() + run.timeout;
                    loop {
                        let found = read();
                        if found.as_deref() == Some(expected.as_str()) {
                            return Ok(true);
                        }
                        if Instant::now() > deadline {
                            let found = found.map_or_else(|| "no such file".to_owned(), |f| format!("{f:?}"));
                            return Err(EffectError::Content { path: relative, expected: expected.clone(), found });
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        }
    }
}

/// The `--mode` (and adapter `{{dialect}}`) name of a transcript's dialect.
fn mode_name(dialect: TranscriptHeaderDialect) -> &'static str {
    match dialect {
        TranscriptHeaderDialect::Rpc => "rpc",
        TranscriptHeaderDialect::Wire => "wire",
        TranscriptHeaderDialect::Acp => "acp",
    }
}

/// Validates a frame the agent wrote. `answered` is the method of the transcript's request a
/// response answers: ACP results are typed per method, so they are checked against it.
fn validate_outbound(dialect: TranscriptHeaderDialect, acp: &AcpValidator, frame: &Value, answered: Option<&str>) -> Result<(), FrameError> {
    match dialect {
        TranscriptHeaderDialect::Rpc => validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, frame, None),
        TranscriptHeaderDialect::Wire => validator().validate_frame(SchemaDialect::Wire, Direction::Outbound, frame, None),
        TranscriptHeaderDialect::Acp => acp.validate_outbound(frame, answered),
    }
}

/// The ACP protocol version a transcript speaks: the one its first `initialize` asks for (1 when
/// it sends none, or asks in a frame it marks `invalid`).
pub fn acp_version(lines: &[TranscriptLine]) -> u64 {
    lines
        .iter()
        .find_map(|l| match l {
            TranscriptLine::In(l) if l.invalid != Some(true) => {
                let frame = l.frame.clone().or_else(|| l.raw.as_deref().and_then(|r| serde_json::from_str(r).ok()))?;
                (frame.get("method")? == "initialize").then(|| frame.pointer("/params/protocolVersion").and_then(Value::as_u64)).flatten()
            }
            TranscriptLine::In(_)
            | TranscriptLine::Header(_)
            | TranscriptLine::Out(_)
            | TranscriptLine::Unordered(_)
            | TranscriptLine::Model(_)
            | TranscriptLine::Wait(_)
            | TranscriptLine::CloseStdin(_)
            | TranscriptLine::Exit(_)
            | TranscriptLine::Sleep(_)
            | TranscriptLine::Effect(_) => None,
        })
        .unwrap_or(1)
}

/// The validator for frames of an ACP transcript speaking `version`: v2's vendored schema for 2
/// and later, v1's otherwise.
fn acp_schema(version: u64) -> &'static AcpValidator {
    if version >= 2 {
        acp_v2_validator()
    } else {
        acp_validator()
    }
}

struct Run {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    /// Each line the agent wrote: a JSON value, or the line that is not one.
    frames: Receiver<Result<Value, RunError>>,
    seen: Vec<Value>,
    dialect: TranscriptHeaderDialect,
    /// The JSON-RPC requests the transcript sent (id → method), so responses can be typed.
    requests: std::collections::HashMap<String, String>,
    timeout: Duration,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// Patterns of unprompted frames to drop (the adapter's `ignore`).
    ignore: Vec<Value>,
    /// Capabilities the transcript needs (its header's `requires`).
    requires: Vec<String>,
    /// The first of them the agent's own answer showed it does not advertise.
    missing: Option<String>,
    /// The ACP version the transcript speaks (1 for the other dialects).
    acp_version: u64,
    /// Requirements of the checking lines satisfied so far.
    checked: std::collections::BTreeSet<String>,
}

impl Run {
    fn next(&mut self) -> Result<Value, RunError> {
        loop {
            let item = match self.frames.recv_timeout(self.timeout) {
                Ok(item) => item,
                Err(RecvTimeoutError::Timeout) => return Err(RunError::Timeout(self.timeout)),
                Err(RecvTimeoutError::Disconnected) => {
                    let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    return Err(RunError::Closed(tail.trim().to_owned()));
                }
            };
            if let Some(frame) = self.take(item)? {
                return Ok(frame);
            }
        }
    }

    /// Checks one line the agent wrote: `None` when the adapter's `ignore` drops it.
    fn take(&mut self, item: Result<Value, RunError>) -> Result<Option<Value>, RunError> {
        match item {
            Ok(frame) => {
                // A batch's answer (JSON-RPC 2.0): each response is checked as one on its own.
                if let Value::Array(members) = &frame {
                    for member in members {
                        let answered = member.get("id").and_then(|id| self.requests.get(&id.to_string())).map(String::as_str);
                        validate_outbound(self.dialect, acp_schema(self.acp_version), member, answered).map_err(|error| RunError::InvalidBatch { error: Box::new(error), frame: Box::new(frame.clone()) })?;
                    }
                    self.seen.push(frame.clone());
                    return Ok(Some(frame));
                }
                let answered = match (frame.get("method"), frame.get("id")) {
                    (None, Some(id)) => self.requests.get(&id.to_string()).map(String::as_str),
                    _ => None,
                };
                if let (Some("initialize"), Some(result), true) = (answered, frame.get("result"), self.acp_version >= 2 && self.dialect == TranscriptHeaderDialect::Acp) {
                    // Version negotiation: an agent answering an older version than the one asked
                    // for does not speak it, which is no failure of that version's transcript.
                    let answered_version = result.get("protocolVersion").and_then(Value::as_u64);
                    if answered_version.is_some_and(|v| v < self.acp_version) && self.missing.is_none() {
                        self.missing = Some(format!("ACP v{} (it answers protocolVersion {})", self.acp_version, answered_version.unwrap_or_default()));
                        return Err(RunError::AcpVersion(self.acp_version));
                    }
                }
                if let (Some(method), Some(result)) = (answered, frame.get("result")) {
                    let absent = self.requires.iter().find(|c| advertises(self.dialect, c, method, result) == Some(false));
                    if let Some(capability) = absent.filter(|_| self.missing.is_none()) {
                        self.missing = Some(capability.clone());
                        return Err(RunError::NotAdvertised(capability.clone()));
                    }
                }
                validate_outbound(self.dialect, acp_schema(self.acp_version), &frame, answered)
                    .map_err(|error| RunError::InvalidFrame { error: Box::new(error), frame: Box::new(frame.clone()) })?;
                self.seen.push(frame.clone());
                if self.ignore.iter().any(|p| Matcher::default().check(p, &frame, true).is_ok()) {
                    return Ok(None);
                }
                Ok(Some(frame))
            }
            Err(e) => Err(e),
        }
    }

    fn write(&mut self, line: &str) -> Result<(), RunError> {
        let stdin = self.stdin.as_mut().ok_or(RunError::StdinClosed)?;
        stdin.write_all(format!("{line}\n").as_bytes()).and_then(|()| stdin.flush()).map_err(RunError::Write)
    }

    /// Closes the agent's input, gives it time to exit, then TERM and KILL to its whole process
    /// group. The group is killed even after a clean exit: an agent's children (a bash tool, an
    /// MCP server, the node process behind an `npx` wrapper) must not outlive the run.
    fn stop(&mut self) {
        self.stdin.take();
        let ladder = [(Duration::from_secs(3), None), (Duration::from_secs(1), Some(libc::SIGTERM)), (Duration::from_secs(1), Some(libc::SIGKILL))];
        'ladder: for (wait, signal) in ladder {
            if let Some(sig) = signal {
                signal_group(self.child.id(), sig);
            }
            let deadline = Instant::now() + wait;
            while Instant::now() < deadline {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    break 'ladder;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        signal_group(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

fn diff(expected: &Value, actual: &Value) -> String {
    let e = serde_json::to_string_pretty(expected).unwrap_or_default();
    let a = serde_json::to_string_pretty(actual).unwrap_or_default();
    similar::TextDiff::from_lines(&e, &a).unified_diff().context_radius(3).header("expected", "actual").to_string()
}

/// Runs one transcript.
pub fn run(path: &Path, options: &RunOptions) -> Outcome {
    let started = Instant::now();
    let lines = match load(path) {
        Ok(l) => l,
        Err(e) => {
            let name = path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
            return Outcome {
                name,
                requirements: Vec::new(),
                dialect: None,
                failure: Some(e.to_string()),
                charged: Vec::new(),
                not_testable: false,
                checked: Vec::new(),
                skipped: None,
                duration: started.elapsed(),
                last_frames: Vec::new(),
            };
        }
    };
    let TranscriptLine::Header(header) = &lines[0] else { unreachable!("checked by load") };
    let mut outcome = Outcome {
        name: header.name.to_string(),
        requirements: header.requirements.clone(),
        // ACP v2 requirements are judged apart from v1's: an agent that answers only v1 is
        // not charged with v2's mandatory requirements.
        dialect: Some(match (header.dialect, acp_version(&lines)) {
            (TranscriptHeaderDialect::Acp, v) if v >= 2 => "acp-v2".to_owned(),
            (d, _) => mode_name(d).to_owned(),
        }),
        failure: None,
        charged: Vec::new(),
        not_testable: false,
        checked: Vec::new(),
        skipped: None,
        duration: Duration::ZERO,
        last_frames: Vec::new(),
    };
    if let AgentUnderTest::Adapted { adapter, .. } = &options.agent {
        // Transcripts pinning agentwire's own choices are asked of agentwire only.
        if adapter.agentwire != Some(true) {
            match super::requirements::Registry::embedded() {
                Ok(registry) => {
                    let own = registry.agentwire_ids(&header.requirements);
                    if !own.is_empty() {
                        outcome.skipped = Some(format!("AGENTWIRE tier ({}): agentwire's own choices, not asked of other agents", own.join(", ")));
                        return outcome;
                    }
                }
                Err(e) => {
                    outcome.failure = Some(format!("the built-in requirements registry is unusable: {e}"));
                    return outcome;
                }
            }
        }
        let wanted = match header.dialect {
            TranscriptHeaderDialect::Rpc => ConformanceAdapterDialectsItem::Rpc,
            TranscriptHeaderDialect::Wire => ConformanceAdapterDialectsItem::Wire,
            TranscriptHeaderDialect::Acp => ConformanceAdapterDialectsItem::Acp,
        };
        let speaks = adapter.dialects.as_ref().map_or(wanted == ConformanceAdapterDialectsItem::Rpc, |d| d.contains(&wanted));
        if !speaks {
            outcome.skipped = Some(format!("{} does not speak the {wanted} dialect", adapter.name.as_str()));
            return outcome;
        }
        let declared: Vec<&str> = adapter.capabilities.iter().flatten().map(|c| implementation_name(*c)).collect();
        if let Some(missing) = header.requires.iter().flatten().map(|c| c.as_str()).find(|c| is_implementation(c) && !declared.contains(c)) {
            outcome.skipped = Some(format!("{} does not declare the {missing} capability (a feature only {missing} documents)", adapter.name.as_str()));
            return outcome;
        }
    }
    let (ending, seen, checked) = execute(&lines, options);
    outcome.checked = checked;
    outcome.duration = started.elapsed();
    outcome.last_frames = seen;
    match ending {
        Ending::Passed => {}
        Ending::Failed(failure) => {
            outcome.not_testable = matches!(failure.cause, Cause::Line { setup: true, .. });
            outcome.charged = match failure.cause {
                Cause::Line { requirements: Some(ids), .. } => ids,
                Cause::Line { requirements: None, .. } | Cause::Agent => header.requirements.clone(),
                Cause::Harness => Vec::new(),
            };
            outcome.failure = Some(if outcome.not_testable { format!("not testable: {}", failure.text) } else { failure.text });
        }
        Ending::Skipped(why) => outcome.skipped = Some(why),
    }
    let keep = outcome.last_frames.len().saturating_sub(8);
    outcome.last_frames.drain(..keep);
    outcome
}

/// The implementation features an adapter may declare (`ConformanceAdapter.capabilities`).
const IMPLEMENTATIONS: [ConformanceAdapterCapabilitiesItem; 4] =
    [ConformanceAdapterCapabilitiesItem::Pi, ConformanceAdapterCapabilitiesItem::Omp, ConformanceAdapterCapabilitiesItem::Kimi, ConformanceAdapterCapabilitiesItem::Agentwire];

/// The name a transcript's `requires` uses for an implementation feature.
fn implementation_name(c: ConformanceAdapterCapabilitiesItem) -> &'static str {
    match c {
        ConformanceAdapterCapabilitiesItem::Pi => "pi",
        ConformanceAdapterCapabilitiesItem::Omp => "omp",
        ConformanceAdapterCapabilitiesItem::Kimi => "kimi",
        ConformanceAdapterCapabilitiesItem::Agentwire => "agentwire",
    }
}

/// Whether a required capability is an implementation feature (declared by the adapter) rather
/// than one the agent advertises in its answers.
fn is_implementation(capability: &str) -> bool {
    IMPLEMENTATIONS.iter().any(|c| implementation_name(*c) == capability)
}

/// Who a failure is charged to.
#[derive(Debug, Clone)]
enum Cause {
    /// A transcript line the agent did not satisfy: its own requirements (the header's when
    /// `None`); `setup` when the line only set up a precondition.
    Line { requirements: Option<Vec<String>>, setup: bool },
    /// The agent failed outside any one line (it could not be started, or died at the end).
    Agent,
    /// The harness: a frame it was about to send does not validate.
    Harness,
}

/// A failed run: what happened, and who it is charged to.
#[derive(Debug, Clone)]
struct Failure {
    text: String,
    cause: Cause,
}

impl Failure {
    fn agent(text: impl std::fmt::Display) -> Self {
        Self { text: text.to_string(), cause: Cause::Agent }
    }
}

/// How a transcript's run ended.
enum Ending {
    Passed,
    Failed(Failure),
    /// The agent does not advertise a capability the transcript `requires`.
    Skipped(String),
}

fn execute(lines: &[TranscriptLine], options: &RunOptions) -> (Ending, Vec<Value>, Vec<String>) {
    match launch_and_play(lines, options) {
        Ok(played) => played,
        Err(e) => (Ending::Failed(Failure::agent(e)), Vec::new(), Vec::new()),
    }
}

/// Whether an answer to `method` carries `capability`, and if so whether it is advertised
/// (present, not `null`, not `false`). `modes` is in ACP's `session/new` answer; any other
/// capability is a dotted path under ACP's `initialize` `agentCapabilities` (or the wire
/// `initialize` answer's `capabilities`).
fn advertises(dialect: TranscriptHeaderDialect, capability: &str, method: &str, result: &Value) -> Option<bool> {
    let pointer = match (dialect, capability, method) {
        (TranscriptHeaderDialect::Acp, "modes", "session/new") => "/modes".to_owned(),
        (_, "modes", _) => return None,
        (TranscriptHeaderDialect::Acp, path, "initialize") => format!("/agentCapabilities/{}", path.replace('.', "/")),
        (TranscriptHeaderDialect::Wire, path, "initialize") => format!("/capabilities/{}", path.replace('.', "/")),
        (TranscriptHeaderDialect::Acp | TranscriptHeaderDialect::Wire | TranscriptHeaderDialect::Rpc, _, _) => return None,
    };
    let advertised = |v: &Value| !v.is_null() && *v != Value::Bool(false);
    // ACP v2 names the agent's capabilities `capabilities`, v1 `agentCapabilities`.
    let v2 = pointer.strip_prefix("/agentCapabilities").map(|rest| format!("/capabilities{rest}"));
    Some(result.pointer(&pointer).is_some_and(advertised) || v2.and_then(|p| result.pointer(&p)).is_some_and(advertised))
}

/// A scripted tool call with a `role`, rewritten as the adapter's tool for that role: its
/// name, and its argument template with `{{arg:NAME}}` filled from the role's arguments.
fn play_role(call: &Value, tools: &crate::protocol::ConformanceAdapterTools, p: &Placeholders<'_>) -> Value {
    let tool = match call.get("role").and_then(Value::as_str) {
        Some("shell") => tools.shell.as_ref(),
        Some("read") => tools.read.as_ref(),
        Some("write") => tools.write.as_ref(),
        Some("edit") => tools.edit.as_ref(),
        _ => None,
    };
    let Some(tool) = tool else { return call.clone() };
    let args = call.get("arguments").cloned().unwrap_or_default();
    fn fill(template: &Value, args: &Value, p: &Placeholders<'_>) -> Value {
        match template {
            Value::String(s) => {
                if let Some(name) = s.strip_prefix("{{arg:").and_then(|r| r.strip_suffix("}}")).filter(|n| !n.contains('}')) {
                    return args.get(name).cloned().unwrap_or(Value::Null);
                }
                let mut text = p.apply(s);
                if let Some(map) = args.as_object() {
                    for (k, v) in map {
                        let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                        text = text.replace(&format!("{{{{arg:{k}}}}}"), &v);
                    }
                }
                Value::String(text)
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| fill(x, args, p)).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), fill(x, args, p))).collect()),
            other => other.clone(),
        }
    }
    let mut mapped = serde_json::Map::new();
    if let Some(id) = call.get("id") {
        mapped.insert("id".into(), id.clone());
    }
    mapped.insert("name".into(), Value::String(tool.name.to_string()));
    mapped.insert("arguments".into(), fill(&Value::Object(tool.arguments.clone()), &args, p));
    // `argumentChunks` spelled agentwire's arguments; the mapped ones are streamed by size.
    Value::Object(mapped)
}

fn launch_and_play(lines: &[TranscriptLine], options: &RunOptions) -> Result<(Ending, Vec<Value>, Vec<String>), RunError> {
    let TranscriptLine::Header(header) = &lines[0] else { unreachable!() };
    let temp = tempfile::tempdir()?;
    let (home, config, work) = (temp.path().join("home"), temp.path().join("config"), temp.path().join("work"));
    for d in [&home, &config, &work] {
        std::fs::create_dir_all(d)?;
    }
    for (relative, text) in &header.work_files {
        if Path::new(relative).is_absolute() || relative.split('/').any(|c| c == "..") {
            return Err(RunError::WorkFileOutside(relative.clone()));
        }
        let file = work.join(relative);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&file, text).map_err(|source| RunError::WorkFile { name: relative.clone(), source })?;
    }
    let dialect = header.dialect;
    let replies: Vec<Value> = lines.iter().filter_map(|l| if let TranscriptLine::Model(m) = l { serde_json::to_value(&m.reply).ok() } else { None }).collect();
    let mut fake = None;
    let mut plays_script = false;
    let script = temp.path().join("model-script.jsonl");
    let mut command = match &options.agent {
        AgentUnderTest::Adapted { adapter, agentwire } => {
            let llm = FakeLlm::start(Vec::new()).map_err(RunError::FakeLlm)?;
            let dirs = Placeholders { base_url: llm.base_url(), origin: llm.origin(), dialect: mode_name(dialect), home: &home, config: &config, work: &work, tmp: temp.path(), agentwire, script: &script };
            // Tool calls by role become the agent's own tools.
            let replies: Vec<Value> = match &adapter.tools {
                Some(tools) => replies
                    .iter()
                    .map(|r| {
                        let mut r = r.clone();
                        if let Some(calls) = r.get_mut("toolCalls").and_then(Value::as_array_mut) {
                            calls.iter_mut().for_each(|c| *c = play_role(c, tools, &dirs));
                        }
                        r
                    })
                    .collect(),
                None => replies.clone(),
            };
            // A provider layer that retries on its own, invisibly, gets each retryable error as
            // many times as it tries, so the agent's documented retry is what answers it.
            let replies: Vec<Value> = replies
                .into_iter()
                .flat_map(|r| {
                    let retryable = r.get("retryable").and_then(Value::as_bool) == Some(true) && r.get("error").is_some();
                    let times = if retryable { 1 + adapter.provider_retries.unwrap_or(0) as usize } else { 1 };
                    std::iter::repeat_n(r, times)
                })
                .collect();
            llm.push_script(replies.clone());
            std::fs::write(&script, replies.iter().map(|r| format!("{r}\n")).collect::<String>())?;
            // An agent that plays the replies from the script itself (agentwire's offline
            // model) asks no server: what the model received cannot be judged.
            plays_script = adapter.command.iter().any(|a| a.contains("{{modelScript}}"));
            fake = Some(llm);
            let mut command = adapted_command(adapter, &dirs, header.args.as_deref().unwrap_or_default())?;
            if header.approvals != Some(true) {
                command.args(adapter.auto_approve_args.iter().flatten().map(|a| dirs.apply(a)));
            }
            command
        }
        AgentUnderTest::Agentwire(program) => {
            let mut c = Command::new(program);
            base_env(&mut c, &home);
            c.arg("--mode").arg(mode_name(dialect)).arg("--cwd").arg(&work).arg("--config-dir").arg(&config);
            if !replies.is_empty() {
                std::fs::write(&script, replies.iter().map(|r| format!("{r}\n")).collect::<String>())?;
                c.arg("--model-script").arg(script);
            }
            c.args(header.args.iter().flatten());
            c
        }
    };
    command.current_dir(&work);
    isolate(&mut command);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(RunError::Spawn)?;
    // The last few KB of stderr, for the report when the agent dies.
    let stderr_tail = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    {
        let (tail, mut stderr) = (stderr_tail.clone(), child.stderr.take().expect("piped"));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut stderr, &mut buf) {
                if n == 0 {
                    break;
                }
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                t.push_str(&String::from_utf8_lossy(&buf[..n]));
                if t.len() > 4096 {
                    let cut = t.len() - 4096;
                    let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(t.len());
                    t.drain(..cut);
                }
            }
        });
    }
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let item = serde_json::from_str::<Value>(&line).map_err(|_| RunError::NotJson(line));
            if tx.send(item).is_err() {
                break;
            }
        }
    });
    let stdin = child.stdin.take();
    let ignore = match &options.agent {
        AgentUnderTest::Adapted { adapter, .. } => adapter.ignore.iter().flatten().map(|m| Value::Object(m.clone())).collect(),
        AgentUnderTest::Agentwire(_) => Vec::new(),
    };
    let requires = header.requires.iter().flatten().filter(|c| !is_implementation(c.as_str())).map(|c| c.to_string()).collect();
    let mut run = Run {
        child,
        stdin,
        frames: rx,
        seen: Vec::new(),
        dialect,
        requests: std::collections::HashMap::new(),
        timeout: options.frame_timeout,
        stderr: stderr_tail,
        ignore,
        requires,
        missing: None,
        // A transcript asking for a later version than v2 (negotiation) is still written in v2.
        acp_version: acp_version(lines).min(u64::from(crate::protocol::acp_v2::ACP_V2_PROTOCOL_VERSION)),
        checked: std::collections::BTreeSet::new(),
    };
    let mut matcher = Matcher::new(temp.path().display().to_string());
    let result = steps(&mut run, &mut matcher, &lines[1..], &header.requirements, fake.as_ref().filter(|_| !plays_script), &work);
    run.stop();
    drop(fake);
    let seen = std::mem::take(&mut run.seen);
    // A capability the agent does not advertise decides, whatever happened after it.
    let ending = match (run.missing.take(), result) {
        (Some(capability), _) => Ending::Skipped(format!("the agent does not advertise {capability}")),
        (None, Ok(())) => Ending::Passed,
        (None, Err(e)) => Ending::Failed(e),
    };
    Ok((ending, seen, std::mem::take(&mut run.checked).into_iter().collect()))
}

/// What adapter placeholders stand for in one run.
struct Placeholders<'a> {
    base_url: String,
    /// The fake server's `http://127.0.0.1:PORT` (Gemini and Anthropic clients add their paths).
    origin: String,
    dialect: &'a str,
    home: &'a Path,
    config: &'a Path,
    work: &'a Path,
    tmp: &'a Path,
    agentwire: &'a Path,
    /// The transcript's model replies as a `--model-script` file.
    script: &'a Path,
}

impl Placeholders<'_> {
    fn apply(&self, s: &str) -> String {
        s.replace("{{baseUrl}}", &self.base_url)
            .replace("{{origin}}", &self.origin)
            .replace("{{model}}", FAKE_MODEL)
            .replace("{{dialect}}", self.dialect)
            .replace("{{home}}", &self.home.display().to_string())
            .replace("{{config}}", &self.config.display().to_string())
            .replace("{{work}}", &self.work.display().to_string())
            .replace("{{tmp}}", &self.tmp.display().to_string())
            .replace("{{agentwire}}", &self.agentwire.display().to_string())
            .replace("{{modelScript}}", &self.script.display().to_string())
    }

    fn apply_json(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.apply(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.apply_json(x)).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (self.apply(k), self.apply_json(x))).collect()),
            other => other.clone(),
        }
    }
}

/// What every agent starts from: its own HOME, and none of the caller's provider keys (an agent
/// must reach the fake model, never a real one). An adapter's own environment is applied after
/// this, as written, so an adapter may set any of these for the agent it starts.
fn base_env(c: &mut Command, home: &Path) {
    c.env("HOME", home);
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
        c.env_remove(var);
    }
}

/// The adapter's command with its files written and its environment set.
fn adapted_command(adapter: &ConformanceAdapter, p: &Placeholders<'_>, args: &[String]) -> Result<Command, RunError> {
    for file in adapter.files.iter().flatten() {
        let path = std::path::PathBuf::from(p.apply(file.path.as_str()));
        let content = match (&file.text, &file.json) {
            (Some(text), _) => p.apply(text),
            (None, Some(json)) => serde_json::to_string_pretty(&p.apply_json(json)).unwrap_or_default() + "\n",
            (None, None) => String::new(),
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| RunError::AdapterFile { path: parent.to_owned(), source })?;
        }
        std::fs::write(&path, content).map_err(|source| RunError::AdapterFile { path: path.clone(), source })?;
    }
    let argv: Vec<String> = adapter.command.iter().map(|a| p.apply(a)).collect();
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]);
    base_env(&mut c, p.home);
    if adapter.pass_args == Some(true) {
        // Placeholders too: an imported recording's `--session-dir {{tmp}}/sessions`.
        c.args(args.iter().map(|a| p.apply(a)));
    }
    for (k, v) in &adapter.env {
        c.env(k, p.apply(v));
    }
    Ok(c)
}

/// `optional` out lines not settled yet: the next frame either matches the first (and is
/// consumed by it) or skips it. They never wait on their own: an agent that does not send the
/// frame at all (pi has no `ready`) simply goes on to the next line.
type PendingOptional<'a> = Vec<(&'a Value, bool)>;

/// The next frame for a non-optional line, after settling pending optional lines.
fn next_frame(run: &mut Run, matcher: &mut Matcher, pending: &mut PendingOptional<'_>) -> Result<Value, RunError> {
    'frames: loop {
        let frame = run.next()?;
        while let Some((pattern, subset)) = pending.first().copied() {
            pending.remove(0);
            if matcher.check(pattern, &frame, subset).is_ok() {
                continue 'frames;
            }
        }
        return Ok(frame);
    }
}

/// Validates a frame the transcript is about to send: the harness must not blame an agent for
/// refusing a frame that was wrong to begin with (frames marked `invalid` test refusals).
fn validate_inbound(dialect: TranscriptHeaderDialect, acp: &AcpValidator, frame: &Value) -> Result<(), FrameError> {
    match dialect {
        TranscriptHeaderDialect::Rpc => validator().validate_frame(SchemaDialect::Rpc, Direction::Inbound, frame, None),
        TranscriptHeaderDialect::Wire => validator().validate_frame(SchemaDialect::Wire, Direction::Inbound, frame, None),
        TranscriptHeaderDialect::Acp => acp.validate_inbound(frame, None),
    }
}

/// An `in` line sending `frame`, marked `invalid` when it does not validate: a recording that
/// sent it did so to see it refused, and the runner then leaves it unchecked.
pub fn in_line(dialect: TranscriptHeaderDialect, frame: Value) -> Value {
    let version = frame.pointer("/params/protocolVersion").and_then(Value::as_u64).filter(|_| frame.get("method").is_some_and(|m| m == "initialize")).unwrap_or(1);
    let invalid = validate_inbound(dialect, acp_schema(version), &frame).is_err();
    let mut line = serde_json::json!({"kind": "in", "frame": frame});
    if invalid {
        line["invalid"] = Value::Bool(true);
    }
    line
}

/// The requirements and `setup` flag of a checking line.
fn blame(requirements: &Option<Vec<String>>, setup: Option<bool>) -> Cause {
    Cause::Line { requirements: requirements.clone(), setup: setup == Some(true) }
}

/// Why an `interleaved` line was not satisfied.
#[derive(Debug, thiserror::Error)]
enum InterleavedError {
    /// The transcript's fault: an item of `frames` that is not an array of patterns.
    #[error("harness error: item {0} of an interleaved line is not an array of patterns")]
    NotASequence(usize),
    /// No frame came (a timeout, the agent's end) while some were still expected.
    #[error("{remaining} interleaved frames still expected: {reason}")]
    Ended { remaining: usize, reason: RunError },
    /// A frame that is the next of no sequence and is not to be skipped.
    #[error("frame matches the next pattern of none of the interleaved sequences:\n  {frame}\nexpected one of:\n{}", heads.join("\n"))]
    Unmatched { frame: Value, heads: Vec<String> },
}

/// Matches the next frames against `sequences`, each in its own order, interleaved in any way:
/// each frame must match the first pattern still open in one of them (tried in order), or else
/// one of `skip` (a subset match), which passes it over.
fn interleaved(run: &mut Run, matcher: &mut Matcher, pending: &mut PendingOptional<'_>, sequences: &[Value], skip: &[Value], subset: bool) -> Result<(), InterleavedError> {
    let mut open: Vec<std::collections::VecDeque<&Value>> = Vec::with_capacity(sequences.len());
    for (k, sequence) in sequences.iter().enumerate() {
        open.push(sequence.as_array().ok_or(InterleavedError::NotASequence(k))?.iter().collect());
    }
    loop {
        let remaining: usize = open.iter().map(std::collections::VecDeque::len).sum();
        if remaining == 0 {
            return Ok(());
        }
        let frame = next_frame(run, matcher, pending).map_err(|reason| InterleavedError::Ended { remaining, reason })?;
        let hit = open.iter().position(|s| s.front().is_some_and(|p| matcher.check(p, &frame, subset).is_ok()));
        match hit {
            Some(k) => {
                open[k].pop_front();
            }
            None if skip.iter().any(|p| matcher.check(p, &frame, true).is_ok()) => {}
            None => return Err(InterleavedError::Unmatched { frame, heads: open.iter().filter_map(|s| s.front().map(|p| format!("  {p}"))).collect() }),
        }
    }
}

/// Plays the lines after the header. `model` is the fake server serving the model replies, when
/// one does; `work` the run's work directory (the agent's cwd), where `file` effects look.
fn steps(run: &mut Run, matcher: &mut Matcher, lines: &[TranscriptLine], defaults: &[String], model: Option<&FakeLlm>, work: &Path) -> Result<(), Failure> {
    let mut pending: PendingOptional<'_> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 2; // 1-based, after the header
        // A checking line (not a setup one) that is satisfied exercised its requirements.
        let held = |run: &mut Run, requirements: &Option<Vec<String>>, setup: Option<bool>| {
            if setup != Some(true) {
                run.checked.extend(requirements.as_deref().unwrap_or(defaults).iter().cloned());
            }
        };
        match line {
            TranscriptLine::Header(_) | TranscriptLine::Model(_) => {}
            TranscriptLine::In(l) => match (&l.frame, &l.raw) {
                (_, Some(raw)) => run.write(raw).map_err(Failure::agent)?,
                (Some(frame), None) => {
                    let frame = matcher.substitute(frame).map_err(|e| Failure::agent(format!("line {n}: {e}")))?;
                    if l.invalid != Some(true) {
                        validate_inbound(run.dialect, acp_schema(run.acp_version), &frame).map_err(|e| Failure {
                            text: format!("line {n}: harness error: the transcript's own frame does not validate (mark it `invalid` if that is the point): {e}\n  {frame}"),
                            cause: Cause::Harness,
                        })?;
                    }
                    if let (Some(id), Some(method)) = (frame.get("id"), frame.get("method").and_then(Value::as_str)) {
                        run.requests.insert(id.to_string(), method.to_owned());
                    }
                    run.write(&frame.to_string()).map_err(Failure::agent)?;
                }
                (None, None) => return Err(Failure { text: format!("line {n}: `in` needs `frame` or `raw`"), cause: Cause::Harness }),
            },
            TranscriptLine::Out(l) if l.optional == Some(true) => pending.push((&l.frame, l.subset.unwrap_or(false))),
            TranscriptLine::Out(l) => {
                let cause = blame(&l.requirements, l.setup);
                let fail = |text: String| Failure { text, cause: cause.clone() };
                let subset = l.subset.unwrap_or(false);
                let frame = next_frame(run, matcher, &mut pending).map_err(|e| fail(format!("line {n}: expected a frame: {e}")))?;
                if let Err(why) = matcher.check(&l.frame, &frame, subset) {
                    return Err(fail(format!("line {n}: frame differs at {why}\n{}", diff(&l.frame, &frame))));
                }
                held(run, &l.requirements, l.setup);
            }
            TranscriptLine::Unordered(l) => {
                let cause = blame(&l.requirements, l.setup);
                let fail = |text: String| Failure { text, cause: cause.clone() };
                let subset = l.subset.unwrap_or(false);
                if l.interleaved == Some(true) {
                    interleaved(run, matcher, &mut pending, &l.frames, l.skip.as_deref().unwrap_or_default(), subset).map_err(|e| match e {
                        InterleavedError::NotASequence(_) => Failure { text: format!("line {n}: {e}"), cause: Cause::Harness },
                        InterleavedError::Ended { .. } | InterleavedError::Unmatched { .. } => fail(format!("line {n}: {e}")),
                    })?;
                    held(run, &l.requirements, l.setup);
                    continue;
                }
                let mut open: Vec<&Value> = l.frames.iter().collect();
                while !open.is_empty() {
                    let frame = next_frame(run, matcher, &mut pending).map_err(|e| fail(format!("line {n}: {} unordered frames still expected: {e}", open.len())))?;
                    let hit = open.iter().position(|p| matcher.check(p, &frame, subset).is_ok());
                    match hit {
                        Some(k) => {
                            open.remove(k);
                        }
                        None => return Err(fail(format!("line {n}: frame matches none of the {} remaining unordered patterns:\n  {frame}", open.len()))),
                    }
                }
                held(run, &l.requirements, l.setup);
            }
            TranscriptLine::Wait(l) => {
                let cause = blame(&l.requirements, l.setup);
                loop {
                    let frame = next_frame(run, matcher, &mut pending)
                        .map_err(|e| Failure { text: format!("line {n}: waiting for {}: {e}", l.frame), cause: cause.clone() })?;
                    if matcher.check(&l.frame, &frame, l.subset.unwrap_or(false)).is_ok() {
                        break;
                    }
                }
                held(run, &l.requirements, l.setup);
            }
            TranscriptLine::CloseStdin(_) => {
                run.stdin.take();
            }
            TranscriptLine::Exit(l) => {
                let deadline = Instant::now() + run.timeout;
                let status = loop {
                    if let Ok(Some(s)) = run.child.try_wait() {
                        break s;
                    }
                    if Instant::now() > deadline {
                        return Err(Failure::agent(format!("line {n}: the agent did not exit")));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                };
                if status.code() != Some(l.code) {
                    return Err(Failure::agent(format!("line {n}: expected exit code {}, got {:?}", l.code, status.code())));
                }
            }
            TranscriptLine::Sleep(l) => std::thread::sleep(Duration::from_millis(l.ms)),
            TranscriptLine::Effect(l) => match check_effect(run, model, work, l) {
                Ok(true) => held(run, &l.requirements, None),
                Ok(false) => {}
                Err(e) => return Err(Failure { text: format!("line {n}: {e}"), cause: blame(&l.requirements, None) }),
            },
        }
    }
    trailing(run, matcher, &mut pending, lines.len() + 2)?;
    // Coverage is earned per line: a header naming a requirement that no checking line held
    // (only `in` lines, only optional or setup lines, checks charged elsewhere) passed nothing.
    let unearned: Vec<&str> = defaults.iter().filter(|r| !run.checked.contains(*r)).map(String::as_str).collect();
    if !unearned.is_empty() {
        return Err(Failure {
            text: format!(
                "the header names {} but no checking line charged to it held (an `out`, `unordered`, `wait` or `effect` line, neither `setup` nor `optional`): the transcript exercises nothing of it",
                unearned.join(", ")
            ),
            cause: Cause::Harness,
        });
    }
    Ok(())
}

/// How long the agent is watched after the last line for an answer it should not write.
const TRAILING_QUIET: Duration = Duration::from_millis(300);

/// After the last line, the agent must not answer anything more: a reply to a notification, a
/// second response to a request, a response nobody asked for all fail (charged to the
/// transcript's requirements). Frames the agent sends on its own (events, notifications,
/// requests) are not judged here: what follows the last line is not the transcript's subject,
/// and an `optional` line still waiting accepts the response it describes. The agent is watched
/// until it is quiet for [`TRAILING_QUIET`] or has closed its output.
fn trailing(run: &mut Run, matcher: &mut Matcher, pending: &mut PendingOptional<'_>, after: usize) -> Result<(), Failure> {
    loop {
        let item = match run.frames.recv_timeout(TRAILING_QUIET) {
            Ok(item) => item,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return Ok(()),
        };
        let Some(frame) = run.take(item).map_err(|e| Failure::agent(format!("line {after}: after the last line: {e}")))? else { continue };
        if let Some(k) = pending.iter().position(|(pattern, subset)| matcher.check(pattern, &frame, *subset).is_ok()) {
            pending.drain(..=k);
            continue;
        }
        if is_response(run.dialect, &frame) {
            return Err(Failure::agent(format!("line {after}: the agent answered after the last line, where nothing was asked:\n  {frame}")));
        }
    }
}

/// Whether `frame` answers a request: an rpc `response`, a JSON-RPC response (an `id` and no
/// `method`) or a batch of them.
fn is_response(dialect: TranscriptHeaderDialect, frame: &Value) -> bool {
    match dialect {
        TranscriptHeaderDialect::Rpc => frame.get("type").and_then(Value::as_str) == Some("response"),
        TranscriptHeaderDialect::Wire | TranscriptHeaderDialect::Acp => frame.is_array() || (frame.get("method").is_none() && frame.get("id").is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(env: Value) -> ConformanceAdapter {
        serde_json::from_value(serde_json::json!({"name": "t", "command": ["true"], "dialects": ["acp"], "env": env})).expect("an adapter")
    }

    #[test]
    fn an_adapters_own_provider_key_reaches_the_agent_and_the_callers_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = Placeholders { base_url: "http://127.0.0.1:1/v1".into(), origin: "http://127.0.0.1:1".into(), dialect: "acp", home: dir.path(), config: dir.path(), work: dir.path(), tmp: dir.path(), agentwire: dir.path(), script: dir.path() };
        let c = adapted_command(&adapter(serde_json::json!({"ANTHROPIC_API_KEY": "{{baseUrl}}-key"})), &p, &[]).unwrap();
        let envs: std::collections::HashMap<_, _> = c.get_envs().map(|(k, v)| (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned()))).collect();
        assert_eq!(envs.get("ANTHROPIC_API_KEY"), Some(&Some("http://127.0.0.1:1/v1-key".to_owned())), "{envs:?}");
        assert_eq!(envs.get("OPENAI_API_KEY"), Some(&None), "the caller's key is removed: {envs:?}");
        assert_eq!(envs.get("HOME"), Some(&Some(dir.path().display().to_string())));
    }

    #[test]
    fn a_transcript_speaks_the_acp_version_its_initialize_asks_for() {
        let parse = |text: &str| text.lines().map(|l| TranscriptLine::from_value(serde_json::from_str(l).unwrap()).unwrap()).collect::<Vec<_>>();
        let header = r#"{"kind": "header", "name": "t", "dialect": "acp", "description": "d", "requirements": []}"#;
        let init = |v: u64| format!(r#"{{"kind": "in", "frame": {{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {{"protocolVersion": {v}}}}}}}"#);
        assert_eq!(acp_version(&parse(&format!("{header}\n{}", init(2)))), 2);
        assert_eq!(acp_version(&parse(&format!("{header}\n{}", init(1)))), 1);
        assert_eq!(acp_version(&parse(header)), 1);
        assert!(std::ptr::eq(acp_schema(2), acp_v2_validator()) && std::ptr::eq(acp_schema(1), acp_validator()));
    }
}
