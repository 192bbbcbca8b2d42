//! Drives the real `agentwire --mode wire` binary: every frame it writes is validated against
//! the wire schema (responses against the method they answer) before a test sees it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use agentwire::cli::schema::FrameChecker;
use agentwire::protocol::validate::{SchemaDialect, Direction};
use serde_json::Value;

/// A running `agentwire --mode wire` with its own working and config directory.
pub struct Wire {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub rx: Receiver<Value>,
    pub checker: FrameChecker,
    pub dir: tempfile::TempDir,
    /// Every frame a test has read, in order.
    pub seen: Vec<Value>,
}

impl Wire {
    pub fn start(script: &[Value]) -> Wire {
        Self::start_with(&[], script)
    }

    pub fn start_with(args: &[&str], script: &[Value]) -> Wire {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.jsonl");
        std::fs::write(&script_path, script.iter().map(|v| format!("{v}\n")).collect::<String>()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentwire"));
        cmd.args(["--mode", "wire", "--cwd"]).arg(dir.path()).arg("--config-dir").arg(dir.path()).args(args);
        if !args.iter().any(|a| a.starts_with("--session")) {
            cmd.arg("--no-session");
        }
        if !script.is_empty() {
            cmd.arg("--model-script").arg(&script_path);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                assert_eq!(v["jsonrpc"], "2.0", "{line}");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Wire { child, stdin, rx, checker: FrameChecker::new(Some(SchemaDialect::Wire)), dir, seen: Vec::new() }
    }

    pub fn send(&mut self, frame: Value) {
        if frame.get("method").is_some() {
            self.checker.check(&frame, Some(Direction::Inbound)).ok(); // registers the id → method
        }
        self.send_raw(&frame.to_string());
    }

    pub fn send_raw(&mut self, line: &str) {
        let s = self.stdin.as_mut().unwrap();
        s.write_all(line.as_bytes()).unwrap();
        s.write_all(b"\n").unwrap();
        s.flush().unwrap();
    }

    pub fn next(&mut self) -> Value {
        let f = self.rx.recv_timeout(Duration::from_secs(10)).expect("a frame within 10 s");
        self.checker.check(&f, Some(Direction::Outbound)).unwrap_or_else(|e| panic!("invalid wire frame: {e}\n{f}"));
        self.seen.push(f.clone());
        f
    }

    pub fn until_id(&mut self, id: Value) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let f = self.next();
            let done = f.get("method").is_none() && f["id"] == id;
            out.push(f);
            if done {
                return out;
            }
        }
    }

    pub fn finish(mut self) -> (Vec<Value>, i32) {
        self.stdin.take();
        let mut rest = Vec::new();
        while let Ok(f) = self.rx.recv_timeout(Duration::from_secs(10)) {
            rest.push(f);
        }
        (rest, self.child.wait().unwrap().code().unwrap_or(-1))
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each frame as a short name: the event type, `result`, or `error <code>`.
pub fn kinds(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| match f["method"].as_str() {
            Some("event") => f["params"]["type"].as_str().unwrap().to_owned(),
            _ if f.get("error").is_some() => format!("error {}", f["error"]["code"]),
            _ => "result".to_owned(),
        })
        .collect()
}

