//! A tap on a live session: a proxy between a host and an agent of the same dialect
//! (`agentwire bridge --serve acp --record FILE -- agentwire --mode acp`) hands it every line
//! that passed, both ways, and it writes them as a conformance transcript that
//! `agentwire conformance run FILE` replays against the agent.
//!
//! The lines are normalized as `agentwire conformance record` does ([`Recording`]): volatile
//! values become placeholders, ids the agent chose become captures that the host's later frames
//! refer to. The agent's working directory becomes `{{tmp}}/work`, the directory the replay runs
//! the agent in (in host frames, such as ACP's `session/new` `cwd`, and in agent frames). How a
//! streamed reply is cut into chunks is timing, so chunks are `optional` lines and the frame
//! after them a `wait`.
//!
//! The transcript has no `model` lines for ACP and wire (the replay's offline model answers as
//! it did live when the agent ran agentwire's offline model); for rpc the assistant messages
//! become the replies, as the recorder does. Its header names no requirement: a recording checks
//! that the agent still does what it did, not a registry requirement.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::{Normalizer, Recording, TMP_PLACEHOLDER};
use crate::protocol::{nonempty, TranscriptHeader, TranscriptHeaderDialect as Dialect};

/// Records the lines passing between a host and an agent; thread-safe (one mutex), so the
/// proxy's two directions can call it from their own threads.
#[derive(Debug)]
pub struct Tap {
    path: PathBuf,
    header: Value,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    recording: Recording,
    /// A `close_stdin` line has been recorded.
    closed: bool,
    /// The first agent line that is not JSON (it cannot be an `out` line).
    not_json: Option<String>,
}

impl Tap {
    /// Records a session of `dialect` into `path` (created now, written by [`Tap::finish`]);
    /// `cwd` is the working directory the proxied agent runs in.
    pub fn create(path: &Path, dialect: Dialect, cwd: &Path) -> io::Result<Self> {
        std::fs::File::create(path)?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).filter(|s| !s.is_empty()).unwrap_or_else(|| "recording".into());
        let description = format!("A session in the {dialect} dialect, recorded by a proxy between a host and the agent: the agent must answer the host's frames as it did then.");
        let header = TranscriptHeader::new(nonempty(&name), dialect, description, Vec::new());
        let header = serde_json::to_value(&header).map_err(io::Error::other)?;
        let work = format!("{TMP_PLACEHOLDER}/work");
        let recording = Recording::new(Normalizer::mapping(cwd, &work)).loose_streams();
        Ok(Self { path: path.to_path_buf(), header, inner: Mutex::new(Inner { recording, closed: false, not_json: None }) })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A line the host sent to the agent.
    pub fn host_line(&self, line: &[u8]) {
        let line = trim(line);
        if !line.is_empty() {
            self.lock().recording.host(&line);
        }
    }

    /// A line the agent sent to the host.
    pub fn agent_line(&self, line: &[u8]) {
        let line = trim(line);
        if line.is_empty() {
            return;
        }
        let mut inner = self.lock();
        match serde_json::from_str::<Value>(&line) {
            Ok(frame) => inner.recording.agent(&frame),
            Err(_) => {
                inner.not_json.get_or_insert(line);
            }
        }
    }

    /// The agent exited with `code`: the transcript expects that exit (after `close_stdin`).
    pub fn agent_exit(&self, code: i32) {
        let mut inner = self.lock();
        inner.close();
        inner.recording.exit(code);
    }

    /// Host input ended / the session is over: writes the whole transcript (header, in/out
    /// lines, `close_stdin` here unless already recorded, and anything recorded after it) and
    /// returns any IO error. Lines recorded afterwards are kept: calling `finish` again rewrites
    /// the file with them. An agent line that was not JSON is an `InvalidData` error (the
    /// transcript is written without it).
    pub fn finish(&self) -> io::Result<()> {
        let mut inner = self.lock();
        inner.close();
        let text = inner.recording.transcript(&self.header, &[]);
        let mut file = std::fs::File::create(&self.path)?;
        file.write_all(text.as_bytes())?;
        file.flush()?;
        match &inner.not_json {
            Some(line) => Err(io::Error::new(io::ErrorKind::InvalidData, format!("the agent wrote a line that is not JSON: {line}"))),
            None => Ok(()),
        }
    }
}

impl Inner {
    fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            self.recording.close_stdin();
        }
    }
}

/// The line without its line ending, as text.
fn trim(line: &[u8]) -> String {
    String::from_utf8_lossy(line).trim_end_matches(['\n', '\r']).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_working_directory_becomes_the_replays_and_agent_ids_captures() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.jsonl");
        let tap = Tap::create(&file, Dialect::Acp, Path::new("/home/u/project")).unwrap();
        tap.host_line(br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/u/project","mcpServers":[],"_meta":{"also":"/home/u/project2"}}}"#);
        tap.agent_line(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"0192f3a4-7b1c-7d2e-9f00-1234567890ab\"}}\n");
        for chunk in ["Hel", "lo"] {
            tap.agent_line(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "0192f3a4-7b1c-7d2e-9f00-1234567890ab",
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": chunk}}}}).to_string().as_bytes());
        }
        tap.host_line(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"0192f3a4-7b1c-7d2e-9f00-1234567890ab"}}"#);
        tap.agent_line(br#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}"#);
        tap.finish().unwrap();
        let lines: Vec<Value> = std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[0]["kind"], "header");
        assert_eq!(lines[0]["name"], "t");
        assert_eq!(lines[0]["dialect"], "acp");
        assert_eq!(lines[1]["frame"]["params"]["cwd"], "{{tmp}}/work");
        assert_eq!(lines[1]["frame"]["params"]["_meta"]["also"], "/home/u/project2", "only the directory itself is mapped");
        assert_eq!(lines[2], json!({"kind": "out", "frame": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "{{capture:session1}}"}}}));
        assert_eq!(lines[3]["optional"], true);
        assert_eq!(lines[4]["frame"]["params"]["update"]["content"]["text"], "lo");
        assert_eq!(lines[5]["frame"]["params"]["sessionId"], "{{capture:session1}}");
        assert_eq!(lines[6]["kind"], "wait");
        assert_eq!(lines[7], json!({"kind": "close_stdin"}));
        assert_eq!(lines.len(), 8);
        for line in &lines {
            crate::protocol::validate::validator().validate_def("TranscriptLine", line).unwrap();
        }
    }

    #[test]
    fn an_agent_line_that_is_not_json_fails_the_finish() {
        let dir = tempfile::tempdir().unwrap();
        let tap = Tap::create(&dir.path().join("t.jsonl"), Dialect::Rpc, dir.path()).unwrap();
        tap.agent_line(b"oops\n");
        assert_eq!(tap.finish().unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
