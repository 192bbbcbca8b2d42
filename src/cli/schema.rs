//! `agentwire schema bundle|validate|docs`.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::process::ExitCode;

use serde_json::Value;

use super::{fail, BundleDialectArg, SchemaAction};
use crate::codegen::bundle::{BundleError, SchemaSet};
use crate::protocol::validate::{validator, SchemaDialect, Direction, FrameError};
use crate::protocol::embedded::schema_files;
use crate::protocol::UnionInfo;

/// Roots of each dialect's bundle: the frame unions (their `x-response` / `x-result` links
/// pull in the payload types).
pub fn dialect_roots(dialect: Option<SchemaDialect>) -> Option<&'static [&'static str]> {
    match dialect {
        None => None,
        Some(SchemaDialect::Rpc) => Some(&["RpcInboundFrame", "RpcOutboundFrame"]),
        Some(SchemaDialect::Wire) => Some(&["WireInboundFrame", "WireOutboundFrame", "WireAgentRequestParams"]),
    }
}

/// Roots of the file formats that are not frames of either dialect (the offline model's
/// script, the session file, the conformance transcript, adapter and requirements registry).
pub const FILE_FORMAT_ROOTS: &[&str] = &["ConformanceAdapter", "ConformanceRequirements", "ModelScriptEntry", "ModelsFile", "SessionFileLine", "TranscriptLine"];

/// The bundled schema (one dialect's or all of it) as pretty JSON text.
pub fn bundle_text(dialect: Option<SchemaDialect>) -> Result<String, BundleError> {
    let set = SchemaSet::from_texts(schema_files().iter().copied())?;
    let bundle = set.bundle_reachable(dialect_roots(dialect))?;
    // `{:#}` is serde_json's pretty printer, which cannot fail on a `Value`.
    Ok(format!("{bundle:#}"))
}

/// What one input line is, once the transcript wrapper (if any) is taken off.
enum Line {
    /// A frame, with its direction when the line said so (`dir`).
    Frame(Value, Option<Direction>),
    /// A line that is not a JSON object frame (sent raw by a test harness, or not JSON).
    NotJson(String),
    /// Transcript bookkeeping (`meta`, `eof`): nothing to check.
    Skip,
}

fn classify(text: &str) -> Line {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Line::NotJson(format!("not valid JSON: {e}")),
    };
    // The reference-transcript line format: {"dir":"in"|"out"|"meta", "t_ms", "frame"|"raw"|"eof"}.
    let Some(dir) = value.get("dir").and_then(Value::as_str) else { return Line::Frame(value, None) };
    let direction = match dir {
        "in" => Direction::Inbound,
        "out" => Direction::Outbound,
        _ => return Line::Skip,
    };
    if let Some(frame) = value.get("frame") {
        return Line::Frame(frame.clone(), Some(direction));
    }
    match value.get("raw").and_then(Value::as_str) {
        Some(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(frame) => Line::Frame(frame, Some(direction)),
            Err(e) => Line::NotJson(format!("not valid JSON: {e}")),
        },
        None => Line::Skip,
    }
}

/// Tracks request ids so responses can be checked against the method they answer.
#[derive(Default)]
pub struct FrameChecker {
    /// wire: client request id → method (for the agent's responses).
    client_requests: HashMap<String, String>,
    /// wire: agent request id → request type (for the client's responses).
    agent_requests: HashMap<String, String>,
    forced: Option<SchemaDialect>,
}

impl FrameChecker {
    /// A checker; `dialect` forces the dialect, otherwise it is detected per frame.
    pub fn new(dialect: Option<SchemaDialect>) -> Self {
        Self { forced: dialect, ..Self::default() }
    }

    /// Validates one frame; `direction` is detected from the frame when not given.
    pub fn check(&mut self, frame: &Value, direction: Option<Direction>) -> Result<(), FrameError> {
        let dialect = self.forced.unwrap_or_else(|| detect_dialect(frame));
        let direction = direction.unwrap_or_else(|| detect_direction(dialect, frame));
        let id_key = frame.get("id").map(Value::to_string);
        let mut method_for_response = None;
        if dialect == SchemaDialect::Wire {
            let method = frame.get("method").and_then(Value::as_str);
            match (direction, method, &id_key) {
                (Direction::Inbound, Some(m), Some(id)) => {
                    self.client_requests.insert(id.clone(), m.to_owned());
                }
                (Direction::Outbound, Some("request"), Some(id)) => {
                    if let Some(t) = frame.pointer("/params/type").and_then(Value::as_str) {
                        self.agent_requests.insert(id.clone(), t.to_owned());
                    }
                }
                (Direction::Outbound, None, Some(id)) => method_for_response = self.client_requests.remove(id),
                (Direction::Inbound, None, Some(id)) => method_for_response = self.agent_requests.remove(id),
                _ => {}
            }
        }
        validator().validate_frame(dialect, direction, frame, method_for_response.as_deref())
    }
}

/// `jsonrpc` or `method` → wire; anything else → JSONL RPC.
pub fn detect_dialect(frame: &Value) -> SchemaDialect {
    let has_method = frame.get("method").and_then(Value::as_str).is_some_and(|m| !m.is_empty());
    if frame.get("jsonrpc").is_some() || (has_method && frame.get("type").is_none()) {
        SchemaDialect::Wire
    } else {
        SchemaDialect::Rpc
    }
}

/// Picks the union whose tags include the frame's discriminator.
pub fn detect_direction(dialect: SchemaDialect, frame: &Value) -> Direction {
    match dialect {
        SchemaDialect::Rpc => {
            let tag = frame.get("type").and_then(Value::as_str).unwrap_or_default();
            let outbound = UnionInfo::get("RpcOutboundFrame").is_some_and(|u| u.member(tag).is_some());
            if outbound { Direction::Outbound } else { Direction::Inbound }
        }
        SchemaDialect::Wire => match frame.get("method").and_then(Value::as_str) {
            Some("event" | "request") => Direction::Outbound,
            Some(_) => Direction::Inbound,
            None => Direction::Outbound,
        },
    }
}

/// Checks every line of a JSONL stream; returns (1-based line, problem) per invalid frame.
pub fn check_lines(reader: impl BufRead, dialect: Option<SchemaDialect>) -> std::io::Result<Vec<(usize, String)>> {
    let mut checker = FrameChecker::new(dialect);
    let mut problems = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line?;
        let text = line.trim_end_matches('\r');
        if text.trim().is_empty() {
            continue;
        }
        let problem = match classify(text) {
            Line::Skip => None,
            Line::NotJson(reason) => Some(reason),
            Line::Frame(frame, direction) => checker.check(&frame, direction).err().map(|e| e.to_string()),
        };
        if let Some(problem) = problem {
            problems.push((index + 1, problem));
        }
    }
    Ok(problems)
}

/// Why `schema validate` stopped before checking every file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValidateFilesError {
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Read {
        /// The path as given (`-` for stdin).
        path: String,
        /// The OS's reason.
        source: std::io::Error,
    },
    /// The report could not be written.
    #[error("{0}")]
    Write(std::io::Error),
}

/// `schema validate`: checks every line of every file (`-` is stdin), prints one line per
/// invalid frame to `out`, and returns how many were invalid. Unreadable files are `Err`.
pub fn validate_files(paths: &[String], dialect: Option<SchemaDialect>, out: &mut dyn Write) -> Result<usize, ValidateFilesError> {
    let mut invalid = 0;
    for path in paths {
        let problems = if path == "-" {
            check_lines(std::io::stdin().lock(), dialect)
        } else {
            let file = std::fs::File::open(path).map_err(|source| ValidateFilesError::Read { path: path.clone(), source })?;
            check_lines(std::io::BufReader::new(file), dialect)
        }
        .map_err(|source| ValidateFilesError::Read { path: path.clone(), source })?;
        for (line, problem) in problems {
            invalid += 1;
            // A reader gone away (`| head`) has all it wanted; the count still decides the status.
            match writeln!(out, "{path}:{line}: {problem}") {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(ValidateFilesError::Write(e)),
                Ok(()) | Err(_) => {}
            }
        }
    }
    Ok(invalid)
}

/// Runs `agentwire schema …` and returns the process exit code.
pub(super) fn run(action: SchemaAction) -> ExitCode {
    let stdout = std::io::stdout();
    match action {
        SchemaAction::Bundle { dialect } => match match dialect {
            Some(BundleDialectArg::Acp) => Ok(crate::protocol::embedded::acp_schema_json().trim_end().to_owned()),
            Some(BundleDialectArg::Rpc) => bundle_text(Some(SchemaDialect::Rpc)),
            Some(BundleDialectArg::Wire) => bundle_text(Some(SchemaDialect::Wire)),
            None => bundle_text(None),
        } {
            Ok(text) => match super::emit_or_fail(&format!("{text}\n")) {
                Ok(()) => ExitCode::SUCCESS,
                Err(code) => code,
            },
            Err(e) => fail(&e.to_string()),
        },
        SchemaAction::Validate { dialect, files } => match validate_files(&files, dialect.map(SchemaDialect::from), &mut stdout.lock()) {
            Ok(0) => ExitCode::SUCCESS,
            Ok(_) => ExitCode::from(1),
            Err(e) => fail(&e.to_string()),
        },
        SchemaAction::Docs => match crate::codegen::docs::protocol_markdown() {
            Ok(text) => match super::emit_or_fail(&text) {
                Ok(()) => ExitCode::SUCCESS,
                Err(code) => code,
            },
            Err(e) => fail(&e.to_string()),
        },
    }
}
