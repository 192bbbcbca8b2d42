//! The recorder a same-dialect proxy calls (`agentwire::recording::Tap`): a live session
//! with `agentwire` in a directory of its own, every line fed through the tap as a proxy would
//! (the agent's lines from the thread reading them), and the transcript it writes must pass
//! `agentwire conformance run`, three times over.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::Duration;

use agentwire::recording::Tap;
use agentwire::protocol::TranscriptHeaderDialect as Dialect;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);

/// An agent in `T/work` (HOME `T/home`, config dir `T/config`) whose lines pass through a tap.
struct Proxied {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: Receiver<Value>,
    tap: Arc<Tap>,
    transcript: PathBuf,
    _temp: tempfile::TempDir,
}

impl Proxied {
    fn start(mode: &str, dialect: Dialect) -> Proxied {
        let temp = tempfile::tempdir().unwrap();
        let (work, home, config) = (temp.path().join("work"), temp.path().join("home"), temp.path().join("config"));
        for d in [&work, &home, &config] {
            std::fs::create_dir_all(d).unwrap();
        }
        let transcript = temp.path().join(format!("tap-{mode}.jsonl"));
        let tap = Arc::new(Tap::create(&transcript, dialect, &work).unwrap());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentwire"));
        cmd.args(["--mode", mode, "--cwd"]).arg(&work).arg("--config-dir").arg(&config).env("HOME", &home).current_dir(&work);
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
            cmd.env_remove(var);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        let agent_tap = tap.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                agent_tap.agent_line(&line);
                let frame: Value = serde_json::from_slice(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&line)));
                if tx.send(frame).is_err() {
                    break;
                }
                line.clear();
            }
        });
        let stdin = child.stdin.take();
        Proxied { child, stdin, frames, tap, transcript, _temp: temp }
    }

    fn work(&self) -> PathBuf {
        self.transcript.parent().unwrap().join("work")
    }

    fn send(&mut self, frame: &Value) {
        let line = format!("{frame}\n");
        self.tap.host_line(line.as_bytes());
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Frames up to the first one `wanted` picks; returns that one.
    fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let frame = self.frames.recv_timeout(TIMEOUT).expect("a frame from the agent in time");
            if wanted(&frame) {
                return frame;
            }
        }
    }

    /// The host closes its input (the proxy finishes the transcript there), the agent's last
    /// frames and its exit are recorded and the transcript written again; returns it.
    fn close(mut self) -> (PathBuf, tempfile::TempDir) {
        self.stdin.take();
        self.tap.finish().unwrap();
        while self.frames.recv_timeout(TIMEOUT).is_ok() {}
        let code = self.child.wait().unwrap().code().expect("the agent exited");
        self.tap.agent_exit(code);
        self.tap.finish().unwrap();
        (self.transcript, self._temp)
    }
}

/// `agentwire conformance run FILE`: its exit status and report.
fn replay(transcript: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentwire")).args(["conformance", "run"]).arg(transcript).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn assert_replays(transcript: &Path) {
    let text = std::fs::read_to_string(transcript).unwrap();
    for attempt in 1..=3 {
        let (ok, report) = replay(transcript);
        assert!(ok, "replay {attempt} of the recorded transcript failed:\n{report}\ntranscript:\n{text}");
    }
}

fn lines(transcript: &Path) -> Vec<Value> {
    std::fs::read_to_string(transcript).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn an_acp_session_through_the_tap_replays() {
    let mut s = Proxied::start("acp", Dialect::Acp);
    let work = s.work();
    s.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    s.until(|f| f["id"] == 0);
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": work, "mcpServers": []}}));
    let session = s.until(|f| f["id"] == 1)["result"]["sessionId"].as_str().expect("a session id").to_owned();
    s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}}));
    let answer = s.until(|f| f["id"] == 2 && f.get("method").is_none());
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    // The agent names its working directory back: a transcript still holding the live one
    // fails its replay.
    s.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}}));
    let list = s.until(|f| f["id"] == 3);
    assert_eq!(list["result"]["sessions"][0]["cwd"], json!(work));
    let (transcript, _temp) = s.close();

    let lines = lines(&transcript);
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(lines[0]["dialect"], "acp");
    assert!(!text.contains(&*work.to_string_lossy()), "the live working directory is left in the transcript:\n{text}");
    assert!(lines.contains(&json!({"kind": "in", "frame": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "{{tmp}}/work", "mcpServers": []}}})), "{text}");
    assert!(!text.contains(&session), "the session id is a capture:\n{text}");
    assert!(lines.iter().any(|l| l["optional"] == true), "the streamed reply is loose:\n{text}");
    assert_eq!(&lines[lines.len() - 2..], [json!({"kind": "close_stdin"}), json!({"kind": "exit", "code": 0})]);
    assert_replays(&transcript);
}

#[test]
fn an_rpc_session_through_the_tap_replays() {
    let mut s = Proxied::start("rpc", Dialect::Rpc);
    s.send(&json!({"id": "p1", "type": "prompt", "message": "hello"}));
    s.until(|f| f["type"] == "prompt_result" && f["id"] == "p1");
    let (transcript, _temp) = s.close();
    assert_eq!(lines(&transcript)[0]["dialect"], "rpc");
    assert_replays(&transcript);
}
