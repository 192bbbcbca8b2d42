//! The session's wire log: the events and requests of every turn, merged (consecutive text
//! parts joined, a tool call with its full arguments), one JSON object per line after a
//! `metadata` line, kept beside the session file as `<session>.wire.jsonl` and in memory.
//! Approvals are not logged (as in kimi). `replay` serves it.
//!
//! The file is opened once, on the first record, after creating its directory (a fresh
//! session directory is created lazily by the session store, possibly after the first event).

use std::io::Write;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::WIRE_PROTOCOL_VERSION;
use crate::protocol::*;

/// Where a line of the log goes: the file (once it is open) and memory.
#[derive(Debug, Default)]
pub struct WireLog {
    path: Option<PathBuf>,
    file: Option<std::fs::File>,
    /// The file could not be opened or written; said once on stderr, then memory only.
    failed: bool,
    records: Vec<Value>,
    text: Option<String>,
    call: Option<WireToolCallPayload>,
}

/// The log file of a session file.
pub fn log_path(session: &std::path::Path) -> PathBuf {
    session.with_extension("wire.jsonl")
}

impl WireLog {
    /// The log of `session` (its earlier records are read back for `replay`).
    pub fn open(session: Option<PathBuf>) -> Self {
        let path = session.map(|p| log_path(&p));
        let records = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v.get("message").is_some()).collect())
            .unwrap_or_default();
        Self { path, records, ..Self::default() }
    }

    fn file(&mut self) -> Option<&mut std::fs::File> {
        if self.file.is_none() && !self.failed {
            let path = self.path.clone()?;
            let opened = (|| {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
                if file.metadata()?.len() == 0 {
                    writeln!(file, "{}", json!({"type": "metadata", "protocol_version": WIRE_PROTOCOL_VERSION}))?;
                }
                Ok::<_, std::io::Error>(file)
            })();
            match opened {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.failed = true;
                    eprintln!("agentwire: could not write the wire log {}: {e}", path.display());
                }
            }
        }
        self.file.as_mut()
    }

    fn write(&mut self, kind: &str, payload: Value) {
        let timestamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let record = json!({"timestamp": timestamp, "message": {"type": kind, "payload": payload}});
        if let Some(file) = self.file() {
            if let Err(e) = writeln!(file, "{record}") {
                eprintln!("agentwire: could not write the wire log: {e}");
                self.failed = true;
                self.file = None;
            }
        }
        self.records.push(record);
    }

    /// Writes what is being merged (text parts, a streaming tool call).
    pub fn flush(&mut self) {
        if let Some(text) = self.text.take() {
            self.write("ContentPart", json!({"type": "text", "text": text}));
        }
        if let Some(call) = self.call.take() {
            self.write("ToolCall", serde_json::to_value(call).unwrap_or_default());
        }
    }

    /// Records an event (approval answers are skipped).
    pub fn record_event(&mut self, event: &WireEvent) {
        match event {
            WireEvent::ContentPart(part) => match &part.payload {
                WireContentPart::Text(t) => {
                    if self.call.is_some() {
                        self.flush();
                    }
                    self.text.get_or_insert_with(String::new).push_str(&t.text);
                }
                other => {
                    self.flush();
                    self.write("ContentPart", serde_json::to_value(other).unwrap_or_default());
                }
            },
            WireEvent::ToolCall(call) => {
                self.flush();
                self.call = Some(call.payload.clone());
            }
            WireEvent::ToolCallPart(part) => {
                if let Some(call) = &mut self.call {
                    let so_far = call.function.arguments.get_or_insert_with(String::new);
                    so_far.push_str(part.payload.arguments_part.as_deref().unwrap_or_default());
                }
            }
            WireEvent::ApprovalResponse(_) => {}
            // Every other event is logged as it went out; a new kind is logged without a change
            // here, which is what a log should do.
            other => {
                self.flush();
                let value = serde_json::to_value(other).unwrap_or_default();
                self.write(other.tag(), value["payload"].clone());
            }
        }
    }

    /// Records a request to the client (approval requests are skipped).
    pub fn record_request(&mut self, _id: &str, params: &WireAgentRequestParams) {
        if matches!(params, WireAgentRequestParams::ApprovalRequest(_)) {
            return;
        }
        self.flush();
        let value = serde_json::to_value(params).unwrap_or_default();
        self.write(params.tag(), value["payload"].clone());
    }

    /// Every record so far (what is being merged included).
    pub fn records(&mut self) -> Vec<Value> {
        self.flush();
        self.records.clone()
    }
}
