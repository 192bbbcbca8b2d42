//! The scripted agents' side of the pipe: the client's lines as frames (blank lines passed
//! over, the first line that is not a frame remembered), and frames written to the client; each
//! frame recorded in the report, both ways.

use std::io::{BufRead, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::Value;

use super::report::ReportWriter;

/// What came from the client.
#[derive(Debug)]
pub(super) enum Incoming {
    Frame(Value),
    Eof,
    Timeout,
}

/// How the client's records end.
#[derive(Debug, Clone, Copy)]
pub(super) enum Framing {
    /// At `\n`, a `\r` before it dropped (JSON-RPC over stdio, as `BufRead::lines` splits).
    Lines,
    /// At `\n` only: pi's rpc framing (U+2028 and U+2029 inside a string are not ends).
    LfOnly,
}

/// The client's lines, read from this process's stdin on a thread of their own.
#[derive(Debug)]
pub(super) struct ClientLines {
    lines: Receiver<Option<String>>,
    /// The client closed the agent's input.
    pub eof: bool,
    /// The first line that was not a frame the schema accepts, said as the report says it.
    pub invalid: Option<String>,
}

impl ClientLines {
    pub fn stdin(framing: Framing) -> Self {
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin().lock();
            loop {
                let mut bytes = Vec::new();
                match stdin.read_until(b'\n', &mut bytes) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&bytes);
                        let line = match framing {
                            Framing::Lines => text.strip_suffix('\n').map_or(&*text, |l| l.strip_suffix('\r').unwrap_or(l)),
                            Framing::LfOnly => text.trim_end_matches(['\n', '\r']),
                        };
                        if tx.send(Some(line.to_owned())).is_err() {
                            return;
                        }
                    }
                }
            }
            let _ = tx.send(None);
        });
        Self { lines, eof: false, invalid: None }
    }

    /// The next frame within `within`, recorded in `report`; a line that is not JSON is
    /// remembered (`not_json` names what it should have been) and passed over.
    pub fn next(&mut self, report: &mut ReportWriter, within: Duration, not_json: &str) -> Incoming {
        loop {
            if self.eof {
                return Incoming::Eof;
            }
            let line = match self.lines.recv_timeout(within) {
                Ok(Some(line)) => line,
                Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                    self.eof = true;
                    report.event("eof");
                    return Incoming::Eof;
                }
                Err(RecvTimeoutError::Timeout) => return Incoming::Timeout,
            };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(&line) {
                Ok(frame) => {
                    report.frame("in", &frame);
                    return Incoming::Frame(frame);
                }
                Err(e) => {
                    self.invalid.get_or_insert_with(|| format!("{not_json} ({e}): {line}"));
                }
            }
        }
    }
}

/// Writes `frame` to the client (stdout), recorded in `report`.
pub(super) fn write(report: &mut ReportWriter, frame: &Value) {
    report.frame("out", frame);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{frame}").and_then(|()| out.flush());
}
