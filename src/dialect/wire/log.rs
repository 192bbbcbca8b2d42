//! The session's wire log: the events and requests of every turn, merged (consecutive text
//! parts joined, a tool call with its full arguments), one JSON object per line after a
//! `metadata` line, kept beside the session file as `<session>.wire.jsonl` and in memory.
//! Approvals are not logged (as in kimi). `replay` serves it.
//!
//! The file is opened once, on the first record, after creating its directory (a fresh
//! session directory is created lazily by the session store, possibly after the first event).

use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;

use super::WIRE_PROTOCOL_VERSION;
use crate::protocol::*;

/// How much of the log is kept in memory: a long session's log lives in its file; memory holds
/// the newest records for `replay` when there is no file (`--no-session`, a failed write).
pub const MEMORY_BYTES: usize = 16 * 1024 * 1024;

/// Where a line of the log goes: the file (once it is open) and memory.
#[derive(Debug, Default)]
pub struct WireLog {
    path: Option<PathBuf>,
    file: Option<std::fs::File>,
    /// The file could not be opened or written; said once on stderr, then memory only.
    failed: bool,
    /// The newest records, within [`MEMORY_BYTES`]; older ones are only in the file.
    records: std::collections::VecDeque<(Value, usize)>,
    /// Bytes of `records` (as serialized).
    memory: usize,
    /// Records were dropped from memory.
    trimmed: bool,
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
            .map(|text| Self::parse(&text))
            .unwrap_or_default();
        let mut log = Self { path, ..Self::default() };
        for record in records {
            log.remember(record);
        }
        log
    }

    fn parse(text: &str) -> Vec<Value> {
        text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v.get("message").is_some()).collect()
    }

    /// Keeps `record` in memory, dropping the oldest records beyond [`MEMORY_BYTES`].
    fn remember(&mut self, record: Value) {
        let size = record.to_string().len();
        self.memory += size;
        self.records.push_back((record, size));
        while self.memory > MEMORY_BYTES && self.records.len() > 1 {
            let (_, dropped) = self.records.pop_front().expect("more than one");
            self.memory -= dropped;
            self.trimmed = true;
        }
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
                    let metadata = Metadata { kind: "metadata", protocol_version: WIRE_PROTOCOL_VERSION };
                    writeln!(file, "{}", serde_json::to_string(&metadata).map_err(std::io::Error::other)?)?;
                }
                Ok::<_, std::io::Error>(file)
            })();
            match opened {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.failed = true;
                    tracing::warn!("could not write the wire log {}: {e}", path.display());
                }
            }
        }
        self.file.as_mut()
    }

    fn write(&mut self, kind: &str, payload: Value) {
        // The record's shape is kimi's (`{"timestamp", "message": {"type", "payload"}}`).
        let timestamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let record = serde_json::to_value(Record { timestamp, message: Message { kind, payload } }).unwrap_or_default();
        if let Some(file) = self.file() {
            if let Err(e) = writeln!(file, "{record}") {
                tracing::warn!("could not write the wire log: {e}");
                self.failed = true;
                self.file = None;
            }
        }
        self.remember(record);
    }

    /// Writes what is being merged (text parts, a streaming tool call).
    pub fn flush(&mut self) {
        if let Some(text) = self.text.take() {
            self.write("ContentPart", serde_json::to_value(WireContentPart::Text(WireTextPart::new(text))).unwrap_or_default());
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

    /// Every record so far (what is being merged included): from the file when memory holds
    /// only the newest part of a long log and the file is whole, else what memory holds.
    pub fn records(&mut self) -> Vec<Value> {
        self.flush();
        if self.trimmed && !self.failed {
            if let Some(text) = self.path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
                return Self::parse(&text);
            }
        }
        self.records.iter().map(|(r, _)| r.clone()).collect()
    }
}

/// The first line of a wire log.
#[derive(serde::Serialize)]
struct Metadata {
    #[serde(rename = "type")]
    kind: &'static str,
    protocol_version: &'static str,
}

/// One logged message.
#[derive(serde::Serialize)]
struct Record<'a> {
    timestamp: f64,
    message: Message<'a>,
}

#[derive(serde::Serialize)]
struct Message<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    payload: Value,
}

#[cfg(test)]
mod memory_tests {
    use super::*;
    use serde_json::json;

    /// A long session must not make the process grow without bound: the in-memory log is
    /// bounded; the newest records stay for `replay`.
    #[test]
    fn memory_holds_only_the_newest_records_within_the_bound() {
        let mut log = WireLog::open(None);
        let chunk = "x".repeat(10_000);
        for n in 0..3000 {
            log.write("ContentPart", json!({"n": n, "text": chunk}));
        }
        assert!(log.memory <= MEMORY_BYTES, "{} bytes in memory", log.memory);
        let records = log.records();
        assert!(records.len() < 3000 && records.len() > 1000, "{}", records.len());
        assert_eq!(records.last().unwrap()["message"]["payload"]["n"], 2999);
    }
}
