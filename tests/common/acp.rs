//! The ACP test harness: `agentwire --mode acp` driven over pipes with raw JSON-RPC frames,
//! every frame it writes validated against the vendored official ACP schema
//! (`schema/acp/schema.json`): its message shape, the params of its requests and
//! notifications, and the result of each response against the method it answers.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use agentwire::protocol::acp::{acp_validator, AcpValidator};
use serde_json::{json, Value};

/// Wait for one frame.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// One `agentwire --mode acp` process and the frames it wrote.
pub struct Acp {
    /// The agent process (tests look for its descendants).
    pub child: Child,
    /// Its stdin (`None` once closed).
    pub stdin: Option<ChildStdin>,
    frames: Receiver<Value>,
    /// Our request ids → method, so responses are checked against the method's result.
    methods: HashMap<String, String>,
    next_id: u64,
    /// The vendored schema of the version spoken (v1 unless [`Acp::v2`]).
    schema: &'static AcpValidator,
    /// A second schema every frame must fit too ([`Acp::v2_unstable`]).
    also: Option<&'static AcpValidator>,
}

fn key(id: &Value) -> String {
    id.to_string()
}

impl Acp {
    pub fn start(dir: &std::path::Path, config: &std::path::Path, script: &[Value], extra: &[&str]) -> Acp {
        Self::start_with_env(dir, config, script, extra, &[])
    }

    /// [`Acp::start`] with these environment variables set (provider keys are otherwise unset).
    pub fn start_with_env(dir: &std::path::Path, config: &std::path::Path, script: &[Value], extra: &[&str], env: &[(&str, &str)]) -> Acp {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentwire"));
        cmd.args(["--mode", "acp", "--config-dir"]).arg(config).arg("--cwd").arg(dir).args(extra);
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().copied());
        if !script.is_empty() {
            let path = config.join(format!("script-{}.jsonl", uuid::Uuid::new_v4()));
            std::fs::write(&path, script.iter().map(|v| format!("{v}\n")).collect::<String>()).unwrap();
            cmd.arg("--model-script").arg(&path);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        // Frames are validated when a test takes them (`next`), against the method they answer.
        let rx = super::frames_of(child.stdout.take().unwrap(), |_, _| {});
        let stdin = child.stdin.take();
        Acp { child, stdin, frames: rx, methods: HashMap::new(), next_id: 100, schema: acp_validator(), also: None }
    }

    /// The same, its frames checked against the vendored ACP v2 schema (the test initializes
    /// with protocol version 2).
    pub fn v2(mut self) -> Acp {
        self.schema = agentwire::protocol::acp_v2::acp_v2_validator();
        self
    }

    /// [`Acp::v2`], every frame (both ways) also checked against the vendored v2 unstable schema
    /// (`schema/acp/v2/schema.unstable.json`), which types `usage`, `fork`, `title`,
    /// `session/fork` and `session/set_title`; the stable methods' frames still fit the stable one.
    pub fn v2_unstable(mut self) -> Acp {
        self.schema = agentwire::protocol::acp_v2::acp_v2_validator();
        self.also = Some(agentwire::protocol::acp_v2::acp_v2_unstable_validator());
        self
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, frame: &Value) {
        self.schema.validate_inbound(frame, None).unwrap_or_else(|e| panic!("test sends an invalid frame: {e}\n{frame}"));
        if let Some(also) = self.also {
            also.validate_inbound(frame, None).unwrap_or_else(|e| panic!("test sends a frame the unstable schema rejects: {e}\n{frame}"));
        }
        self.send_raw(&frame.to_string());
    }

    /// Sends a request; returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.methods.insert(key(&id), method.to_owned());
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next frame, validated against the vendored schema.
    pub fn next(&mut self) -> Value {
        let frame = self.frames.recv_timeout(TIMEOUT).expect("a frame from agentwire in time");
        let answered = frame.get("id").filter(|_| frame.get("method").is_none()).and_then(|id| self.methods.get(&key(id))).map(String::as_str);
        self.schema.validate_outbound(&frame, answered).unwrap_or_else(|e| panic!("agentwire sent an invalid frame: {e}\n{frame}"));
        if let Some(also) = self.also {
            also.validate_outbound(&frame, answered).unwrap_or_else(|e| panic!("agentwire sent a frame the unstable schema rejects: {e}\n{frame}"));
        }
        frame
    }

    /// Sends `members` as one JSON-RPC batch (one line holding an array); each member is a frame
    /// the client sends, and a request's id is remembered for checking its answer.
    pub fn send_batch(&mut self, members: &[Value]) {
        for m in members {
            self.schema.validate_inbound(m, None).unwrap_or_else(|e| panic!("test sends an invalid frame: {e}\n{m}"));
            if let (Some(id), Some(method)) = (m.get("id"), m["method"].as_str()) {
                self.methods.insert(key(id), method.to_owned());
            }
        }
        self.send_raw(&Value::Array(members.to_vec()).to_string());
    }

    /// The next frame, which must be the answer to a batch: an array of responses, each
    /// validated against the method its id names.
    pub fn next_batch(&mut self) -> Vec<Value> {
        let frame = self.frames.recv_timeout(TIMEOUT).expect("a frame from agentwire in time");
        let Value::Array(members) = frame else { panic!("not a batch's answer: {frame}") };
        for m in &members {
            assert!(m.get("method").is_none(), "a batch's answer holds responses only: {m}");
            let answered = m.get("id").and_then(|id| self.methods.get(&key(id))).map(String::as_str);
            self.schema.validate_outbound(m, answered).unwrap_or_else(|e| panic!("agentwire sent an invalid frame: {e}\n{m}"));
        }
        members
    }

    /// Frames up to and including the response to `id`.
    pub fn until_response(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let f = self.next();
            if f.get("method").is_none() && f.get("id") == Some(id) {
                return (before, f);
            }
            before.push(f);
        }
    }

    /// Sends a prompt answered by [`slow_reply`] and returns its id once the first chunk is in.
    pub fn start_streaming(&mut self, session: &str) -> Value {
        let id = self.request("session/prompt", prompt("go", session));
        assert_eq!(self.next()["params"]["update"]["sessionUpdate"], "agent_message_chunk");
        id
    }

    /// Frames up to the next request of `method` from agentwire, and that request.
    pub fn until_request(&mut self, method: &str) -> (Vec<Value>, Value) {
        self.until(|f| f["method"] == method && f.get("id").is_some())
    }

    /// Frames up to the next request or notification named `method`, and that frame.
    pub fn until_method(&mut self, method: &str) -> (Vec<Value>, Value) {
        self.until(|f| f["method"] == method)
    }

    /// Frames up to the first one `wanted` picks, and that frame.
    pub fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let f = self.next();
            if wanted(&f) {
                return (before, f);
            }
            before.push(f);
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        let (_, response) = self.until_response(&id);
        response
    }

    pub fn answer(&mut self, request: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    pub fn no_frame_within(&mut self, wait: Duration) {
        if let Ok(f) = self.frames.recv_timeout(wait) {
            panic!("unexpected frame: {f}");
        }
    }

    pub fn init_and_new(&mut self, cwd: &std::path::Path) -> String {
        let init = self.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}));
        assert_eq!(init["result"]["protocolVersion"], 1);
        let new = self.call("session/new", json!({"cwd": cwd.display().to_string(), "mcpServers": []}));
        let session = new["result"]["sessionId"].as_str().expect("a session id").to_owned();
        let commands = self.next();
        assert_eq!(commands["params"]["update"]["sessionUpdate"], "available_commands_update", "{commands}");
        session
    }

    pub fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn updates(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f["method"] == "session/update").map(|f| &f["params"]["update"]).collect()
}

pub fn kinds(frames: &[Value]) -> Vec<String> {
    updates(frames).iter().map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned()).collect()
}

pub fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

/// A model reply that streams for a few seconds, two characters every 50 ms.
pub fn slow_reply() -> Value {
    json!({"text": "a long answer that streams slowly, chunk by chunk, for quite a while", "chunkSize": 2, "delayMs": 50})
}

pub fn prompt(text: &str, session: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

