//! Drives the real `agentwire --mode rpc` binary over pipes. Every frame it writes is parsed
//! and validated against the schema before a test sees it. Each agent gets its own working
//! directory and (unless the test passes `--config-dir`) an empty config dir, and never sees
//! the machine's provider keys.

#![allow(dead_code)]

pub mod acp;
pub mod bridge;
pub mod fake_llm;
pub mod wire;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use agentwire::protocol::validate::{validator, SchemaDialect, Direction};
use serde_json::{json, Value};

/// The JSON frames of an agent's stdout, read on a thread; `check` sees each (and its line)
/// before it is delivered and panics on one that is wrong.
pub fn frames_of(stdout: std::process::ChildStdout, check: impl Fn(&Value, &str) + Send + 'static) -> Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let frame: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            check(&frame, &line);
            if tx.send(frame).is_err() {
                break;
            }
        }
    });
    rx
}

/// Default wait for one frame.
pub const TIMEOUT: Duration = Duration::from_secs(10);

pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: Receiver<Value>,
    /// Every frame seen so far, in order.
    pub seen: Vec<Value>,
    pub dir: tempfile::TempDir,
    config: tempfile::TempDir,
}

impl Agent {
    /// Starts the agent in a fresh temp working directory. `script` lines become the
    /// offline model's script.
    pub fn start(args: &[&str], script: &[Value]) -> Agent {
        Self::start_configured(args, script, |_| {})
    }

    /// [`Agent::start`] with a last word on the command (resource limits, environment).
    pub fn start_configured(args: &[&str], script: &[Value], configure: impl FnOnce(&mut Command)) -> Agent {
        let dir = tempfile::tempdir().unwrap();
        let config = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentwire"));
        cmd.args(["--mode", "rpc", "--cwd"]).arg(dir.path()).args(args);
        if !args.contains(&"--config-dir") {
            cmd.arg("--config-dir").arg(config.path());
        }
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
            cmd.env_remove(var);
        }
        // The full output of a long `bash` run is kept for the host to read; here it goes with
        // the agent's temp directories.
        cmd.env("TMPDIR", config.path());
        if !script.is_empty() {
            let path = dir.path().join(".model-script.jsonl");
            let text: String = script.iter().map(|v| format!("{v}\n")).collect();
            std::fs::write(&path, text).unwrap();
            cmd.arg("--model-script").arg(&path);
        }
        configure(&mut cmd);
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let rx = frames_of(child.stdout.take().unwrap(), |frame, line| {
            if let Err(e) = validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, frame, None) {
                panic!("invalid frame from agentwire: {e}\n{line}");
            }
        });
        let stdin = child.stdin.take();
        let mut agent = Agent { child, stdin, frames: rx, seen: Vec::new(), dir, config };
        let ready = agent.next();
        assert_eq!(ready["type"], "ready", "the first frame is ready");
        agent
    }

    /// Writes one raw line (a trailing LF is added).
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes raw bytes as they are.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, frame: Value) {
        self.send_raw(&frame.to_string());
    }

    /// The next frame (panics after the timeout).
    pub fn next(&mut self) -> Value {
        match self.frames.recv_timeout(TIMEOUT) {
            Ok(f) => {
                self.seen.push(f.clone());
                f
            }
            Err(RecvTimeoutError::Timeout) => panic!("no frame within {TIMEOUT:?}; seen so far:\n{}", self.tail()),
            Err(RecvTimeoutError::Disconnected) => panic!("agentwire closed stdout; seen so far:\n{}", self.tail()),
        }
    }

    /// Frames until (and including) the first matching one.
    pub fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        frames_until(|| self.next(), pred)
    }

    /// Sends a command and returns its response (events before it are kept in `seen`).
    pub fn request(&mut self, frame: Value) -> Value {
        let id = frame["id"].clone();
        assert!(!id.is_null(), "request() needs an id");
        self.send(frame);
        self.until(|f| f["type"] == "response" && f["id"] == id).pop().unwrap()
    }

    /// Waits for the `prompt_result` of a prompt id; returns every frame up to it. The
    /// `session_settled` that follows the result of work that ran (it goes out in the same
    /// write) is taken too, into `seen` only, so the next read starts after the prompt's work.
    pub fn until_prompt_result(&mut self, id: &str) -> Vec<Value> {
        let frames = self.until(|f| f["type"] == "prompt_result" && f["id"] == id);
        let ran = frames.len() >= 2 && frames[frames.len() - 2]["type"] == "agent_settled";
        if ran && frames[frames.len() - 1]["sessionSettled"] == true {
            let next = self.next();
            assert_eq!(next["type"], "session_settled", "session_settled follows the prompt_result of work that ran");
        }
        frames
    }

    /// Asserts nothing arrives for `wait`.
    pub fn expect_silence(&mut self, wait: Duration) {
        if let Ok(f) = self.frames.recv_timeout(wait) {
            panic!("unexpected frame: {f}");
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Closes stdin and returns the remaining frames and the exit code.
    pub fn finish(mut self) -> (Vec<Value>, i32) {
        self.close_stdin();
        self.wait_exit()
    }

    /// Returns the remaining frames and the exit code, leaving stdin as it is.
    pub fn wait_exit(mut self) -> (Vec<Value>, i32) {
        let mut rest = Vec::new();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match self.frames.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(f) => rest.push(f),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("agentwire did not exit after stdin closed"),
            }
        }
        let status = self.child.wait().unwrap();
        (rest, status.code().unwrap_or(-1))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn tail(&self) -> String {
        self.seen.iter().rev().take(12).rev().map(|f| f.to_string().chars().take(300).collect::<String>()).collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Frames from `next` until (and including) the first matching one.
pub fn frames_until(mut next: impl FnMut() -> Value, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let f = next();
        let done = pred(&f);
        out.push(f);
        if done {
            return out;
        }
    }
}

/// `agentwire --mode <mode> --no-session --config-dir <config>`, then what `configure` adds, with
/// stdin and stdout piped, stderr discarded and no provider keys from the environment.
pub fn spawn_piped(mode: &str, config: &std::path::Path, configure: impl FnOnce(&mut Command)) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentwire"));
    cmd.args(["--mode", mode, "--no-session", "--config-dir"]).arg(config);
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
        cmd.env_remove(var);
    }
    configure(&mut cmd);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap()
}

/// Waits for `done`, polling (a bound for a hang, not a timing assertion).
pub fn wait_for(done: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Gone, or a zombie nobody has reaped yet (it no longer runs).
pub fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Types of the frames, in order.
pub fn types(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| match f["type"].as_str().unwrap_or_default() {
            "message_update" => format!("mu:{}", f["assistantMessageEvent"]["type"].as_str().unwrap_or_default()),
            "message_start" | "message_end" => format!("{}:{}", f["type"].as_str().unwrap(), f["message"]["role"].as_str().unwrap_or_default()),
            t => t.to_owned(),
        })
        .collect()
}

/// A scripted reply with text only.
pub fn text_reply(text: &str) -> Value {
    json!({"text": text})
}

/// A scripted reply calling one tool.
pub fn tool_reply(name: &str, args: Value) -> Value {
    json!({"text": "Working on it.", "toolCalls": [{"id": format!("call_{name}"), "name": name, "arguments": args}]})
}
