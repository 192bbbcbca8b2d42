//! A host in front of `agentwire bridge --serve acp|wire`: spawns the bridge over an agent
//! command, checks every frame it writes against the served dialect's schema (the vendored ACP
//! one, or ours for the wire), and speaks that dialect to it.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use agentwire::protocol::acp::{acp_validator, AcpValidator};
use agentwire::protocol::validate::{validator, SchemaDialect, Direction};
use serde_json::{json, Value};

pub const TIMEOUT: Duration = Duration::from_secs(30);

pub struct Bridge {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    frames: Receiver<Value>,
    /// The agent's working and config directory.
    pub dir: tempfile::TempDir,
}

impl Bridge {
    /// The bridge in front of `agentwire --mode rpc` playing `script`.
    pub fn start(script: &[Value], extra: &[&str]) -> Bridge {
        Self::start_serving("acp", script, extra)
    }

    /// The bridge serving `serve` in front of `agentwire --mode rpc` playing `script`.
    pub fn start_serving(serve: &str, script: &[Value], extra: &[&str]) -> Bridge {
        Self::start_agent(serve, script, extra, &[])
    }

    /// [`Bridge::start_serving`] with `agent_args` added to the agent's command line.
    pub fn start_agent(serve: &str, script: &[Value], extra: &[&str], agent_args: &[&str]) -> Bridge {
        Self::start_mode(serve, "rpc", script, extra, agent_args)
    }

    /// The bridge serving the JSONL dialect in front of `agentwire --mode acp` playing `script`.
    pub fn start_acp_agent(script: &[Value], extra: &[&str]) -> Bridge {
        Self::start_mode("rpc", "acp", script, extra, &[])
    }

    /// The bridge serving ACP in front of `agentwire --mode wire` playing `script`, with
    /// `agent_args` added to the agent's command line.
    pub fn start_wire_agent(script: &[Value], extra: &[&str], agent_args: &[&str]) -> Bridge {
        Self::start_mode("acp", "wire", script, extra, agent_args)
    }

    /// The bridge serving `serve` in front of `agentwire --mode <mode>` playing `script`.
    pub fn start_mode(serve: &str, mode: &str, script: &[Value], extra: &[&str], agent_args: &[&str]) -> Bridge {
        let (dir, agent) = Self::agent_command(mode, script, agent_args);
        Self::spawn(serve, extra, &agent, &[], dir)
    }

    /// The bridge serving ACP to a host speaking `host` (its frames checked against that
    /// version's schema) in front of `agentwire --mode <mode>` playing `script`.
    pub fn start_acp_versions(host: &'static AcpValidator, mode: &str, script: &[Value], extra: &[&str]) -> Bridge {
        let (dir, agent) = Self::agent_command(mode, script, &[]);
        Self::spawn_checked("acp", extra, &agent, &[], dir, host)
    }

    /// [`Bridge::start_acp_versions`], the bridge and its agent run with `env`.
    pub fn start_acp_versions_with(host: &'static AcpValidator, mode: &str, script: &[Value], extra: &[&str], env: &[(&str, OsString)]) -> Bridge {
        let (dir, agent) = Self::agent_command(mode, script, &[]);
        Self::spawn_checked("acp", extra, &agent, env, dir, host)
    }

    /// `agentwire --mode <mode>` playing `script` in a directory of its own.
    fn agent_command(mode: &str, script: &[Value], agent_args: &[&str]) -> (tempfile::TempDir, Vec<OsString>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.jsonl");
        std::fs::write(&path, script.iter().map(|v| format!("{v}\n")).collect::<String>()).unwrap();
        let bin = env!("CARGO_BIN_EXE_agentwire");
        let mut agent: Vec<OsString> = vec![bin.into(), "--mode".into(), mode.into(), "--no-session".into(), "--cwd".into(), dir.path().into()];
        agent.extend(["--config-dir".into(), dir.path().into(), "--model-script".into(), path.into()]);
        agent.extend(agent_args.iter().map(OsString::from));
        (dir, agent)
    }

    /// The bridge (with `extra` bridge arguments) in front of `agent`, run with `env` in `dir`.
    pub fn spawn(serve: &str, extra: &[&str], agent: &[OsString], env: &[(&str, OsString)], dir: tempfile::TempDir) -> Bridge {
        Self::spawn_checked(serve, extra, agent, env, dir, acp_validator())
    }

    /// [`Bridge::spawn`], ACP frames checked against `acp`'s schema.
    pub fn spawn_checked(serve: &str, extra: &[&str], agent: &[OsString], env: &[(&str, OsString)], dir: tempfile::TempDir, acp: &'static AcpValidator) -> Bridge {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentwire"));
        cmd.arg("bridge").arg("--serve").arg(serve).args(extra).arg("--").args(agent).current_dir(dir.path());
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let served = match serve {
            "acp" => None,
            "rpc" => Some(SchemaDialect::Rpc),
            _ => Some(SchemaDialect::Wire),
        };
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let frame: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                let checked = match served {
                    None => acp.validate_outbound(&frame, None),
                    Some(dialect) => validator().validate_frame(dialect, Direction::Outbound, &frame, None),
                };
                if let Err(e) = checked {
                    panic!("invalid frame from the bridge: {e}\n{line}");
                }
                if tx.send(frame).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Bridge { child, stdin, frames: rx, dir }
    }

    /// Frames up to and including the JSONL frame that `done` accepts.
    pub fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let frame = self.next().unwrap_or_else(|| panic!("the awaited frame did not come; seen: {seen:#?}"));
            let last = done(&frame);
            seen.push(frame);
            if last {
                return seen;
            }
        }
    }

    pub fn send(&mut self, frame: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{frame}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn next(&mut self) -> Option<Value> {
        self.frames.recv_timeout(TIMEOUT).ok()
    }

    /// Frames up to and including the answer to `id`.
    pub fn until_answer(&mut self, id: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let frame = self.next().unwrap_or_else(|| panic!("no answer to {id}; seen: {seen:#?}"));
            let done = frame["id"] == json!(id) && frame.get("method").is_none();
            seen.push(frame);
            if done {
                return seen;
            }
        }
    }

    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.until_answer(id)
    }

    /// An ACP text prompt (id 3) in `session`: the frames up to its answer.
    pub fn prompt(&mut self, session: &str, text: &str) -> Vec<Value> {
        self.request(3, "session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}))
    }

    /// `initialize` and `session/new`; the session id.
    pub fn open(&mut self) -> String {
        let init = self.request(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
        assert_eq!(init.last().unwrap()["result"]["protocolVersion"], 1);
        let new = self.request(2, "session/new", json!({"cwd": "/", "mcpServers": []}));
        new.last().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    /// Sends an ACP prompt (id 3) in `session`, waits for its first chunk, then sends
    /// `session/cancel`: the frames up to the prompt's answer, and how long after the cancel
    /// it came.
    pub fn cancel_after_first_chunk(&mut self, session: &str) -> (Vec<Value>, Duration) {
        self.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
        // The first chunk shows the reply is under way.
        while self.next().expect("a chunk")["params"]["update"]["sessionUpdate"] != "agent_message_chunk" {}
        let asked = std::time::Instant::now();
        self.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
        let frames = self.until_answer(3);
        (frames, asked.elapsed())
    }

    /// Sends an ACP prompt (id 3) in `session`, answering each `session/request_permission`
    /// with the option named `choose`: the frames up to the prompt's answer, and the option
    /// names offered.
    pub fn prompt_choosing(&mut self, session: &str, choose: &str) -> (Vec<Value>, Vec<String>) {
        self.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}}));
        let (mut frames, mut offered) = (Vec::new(), Vec::new());
        loop {
            let frame = self.next().unwrap_or_else(|| panic!("no answer to the prompt; seen: {frames:#?}"));
            if frame["method"] == "session/request_permission" {
                let options = frame["params"]["options"].as_array().unwrap();
                offered = options.iter().map(|o| o["name"].as_str().unwrap().to_owned()).collect();
                let pick = options.iter().find(|o| o["name"] == choose).expect("the option offered")["optionId"].clone();
                self.send(json!({"jsonrpc": "2.0", "id": frame["id"], "result": {"outcome": {"outcome": "selected", "optionId": pick}}}));
            }
            let done = frame["id"] == json!(3) && frame.get("method").is_none();
            frames.push(frame);
            if done {
                return (frames, offered);
            }
        }
    }

    /// Checks that `session/cancel` at the first chunk of a slow reply ([`slow_script`]) ends
    /// the prompt `cancelled` within 5 s.
    pub fn assert_cancel_ends_cancelled(&mut self, session: &str) {
        let (frames, after) = self.cancel_after_first_chunk(session);
        assert_eq!(frames.last().unwrap()["result"]["stopReason"], "cancelled");
        assert!(after < Duration::from_secs(5), "cancelled after {after:?}");
    }

    /// Checks an editor's "interrupt and send" ([`stubborn_script`]): `session/cancel` and the
    /// next prompt (id 4) written back to back while the cancelled prompt (id 3) winds down. The
    /// first answers `cancelled`, then the second runs to `end_turn` instead of being refused.
    pub fn assert_prompt_behind_a_cancel_waits(&mut self, session: &str) {
        let prompt = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}});
        self.send(prompt(3));
        let started = self.dir.path().join("started");
        super::wait_for(|| started.exists(), "the command to start");
        self.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
        self.send(prompt(4));
        let mut answers = Vec::new();
        while answers.len() < 2 {
            let frame = self.next().unwrap_or_else(|| panic!("no answers to both prompts; got {answers:#?}"));
            if frame.get("method").is_none() && (frame["id"] == 3 || frame["id"] == 4) {
                answers.push(frame);
            }
        }
        assert_eq!((&answers[0]["id"], &answers[0]["result"]["stopReason"]), (&json!(3), &json!("cancelled")), "{answers:#?}");
        assert_eq!((&answers[1]["id"], &answers[1]["result"]["stopReason"]), (&json!(4), &json!("end_turn")), "{answers:#?}");
    }

    /// Checks that `session/load`, `session/list` and `session/resume` (ids 3 to 5) are refused
    /// -32601 naming the method (the agent behind keeps no sessions the bridge can list or
    /// load), and that an image prompt (id 6) is answered: carried, or refused saying so.
    pub fn assert_sessions_refused(&mut self, session: &str) {
        for (id, method) in [(3, "session/load"), (4, "session/list"), (5, "session/resume")] {
            let params = match method {
                "session/list" => json!({}),
                _ => json!({"sessionId": session, "cwd": "/", "mcpServers": []}),
            };
            let answer = self.request(id, method, params).pop().unwrap();
            assert_eq!(answer["error"]["code"], -32601, "{answer}");
            let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("{answer}"));
            assert!(message.contains(method), "{message}");
        }
    }

    /// The names of the slash commands the bridge offers after `session/new` (its
    /// `available_commands_update`).
    pub fn commands_offered(&mut self) -> Vec<String> {
        loop {
            let frame = self.next().expect("available_commands_update after session/new");
            let update = &frame["params"]["update"];
            if update["sessionUpdate"] == "available_commands_update" {
                return update["availableCommands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect();
            }
        }
    }

    /// Sends a JSONL prompt (`p1`), waits for its first text delta, then sends `abort` (`a1`):
    /// whether the run ended aborted (its `agent_end`'s last message), and how long after the
    /// abort it ended.
    pub fn rpc_abort_after_first_delta(&mut self) -> (bool, Duration) {
        let is = |f: &Value, kind: &str| f["type"] == kind;
        self.send(json!({"id": "p1", "type": "prompt", "message": "hi"}));
        self.until(|f| is(f, "message_update") && f["assistantMessageEvent"]["type"] == "text_delta");
        let asked = std::time::Instant::now();
        self.send(json!({"id": "a1", "type": "abort"}));
        let frames = self.until(|f| is(f, "agent_end"));
        let after = asked.elapsed();
        let last = frames.last().unwrap()["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
        (last["stopReason"] == "aborted", after)
    }

    /// Sends an image prompt (id 6): the answer, once it comes.
    pub fn prompt_image(&mut self, session: &str) -> Value {
        self.request(6, "session/prompt", json!({"sessionId": session, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]})).pop().unwrap()
    }

    /// The bridge's exit status, once it exits within `limit` of `since` (else a panic naming
    /// `what` was awaited).
    pub fn exit_within(&mut self, since: std::time::Instant, limit: Duration, what: &str) -> std::process::ExitStatus {
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(since.elapsed() < limit, "the bridge still runs {limit:?} after {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Closes the bridge's input (host EOF) and checks that the bridge exits 0 and its agent
    /// is gone within 3 s.
    pub fn assert_host_eof_ends_both_within_3_s(&mut self) {
        let agent = self.agent_pid();
        let closed = std::time::Instant::now();
        drop(self.stdin.take());
        let status = self.exit_within(closed, Duration::from_secs(3), "host EOF");
        assert!(status.success(), "{status}");
        while running(agent) {
            assert!(closed.elapsed() < Duration::from_secs(3), "the agent still runs 3 s after host EOF");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends a prompt (id 3) in the ACP `session` the agent replies to slowly, kills the agent
    /// at the first chunk, and checks that the prompt is answered with an error saying it
    /// exited and the bridge exits 1.
    pub fn assert_agent_death_fails_the_acp_prompt(&mut self, session: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
        while self.next().expect("a chunk")["params"]["update"]["sessionUpdate"] != "agent_message_chunk" {}
        // SAFETY: kill has no memory-safety preconditions; the pid is the bridge's live child.
        unsafe { libc::kill(i32::try_from(self.agent_pid()).unwrap(), libc::SIGKILL) };
        let answer = self.until_answer(3).pop().unwrap();
        assert!(answer["error"]["message"].as_str().unwrap().contains("exited"), "{answer}");
        let status = self.exit_within(std::time::Instant::now(), TIMEOUT, "its agent died");
        assert_eq!(status.code(), Some(1));
    }

    /// Pids of the bridge's children (the agent).
    pub fn agent_pid(&self) -> u32 {
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children", pid = self.child.id())).unwrap_or_default();
        children.split_whitespace().next().and_then(|p| p.parse().ok()).expect("the bridge has an agent child")
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `session/update` payloads of `kind`.
pub fn updates<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames.iter().filter(|f| f["method"] == "session/update" && f["params"]["update"]["sessionUpdate"] == kind).map(|f| &f["params"]["update"]).collect()
}

/// Running (a zombie counts as gone).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) != Some("Z"))
}


/// The offline model's script for one `bash` call (id `b1`) echoing `output`, then "done".
pub fn bash_script(output: &str) -> [Value; 2] {
    [json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": format!("echo {output}")}}]}), json!({"text": "done"})]
}

/// Checks an ACP prompt's frames: `text` streamed in several `agent_message_chunk`s, then
/// `end_turn`.
pub fn assert_streamed(frames: &[Value], text: &str) {
    let chunks = updates(frames, "agent_message_chunk");
    let streamed: String = chunks.iter().map(|u| u["content"]["text"].as_str().unwrap()).collect();
    assert_eq!(streamed, text);
    assert!(chunks.len() > 1, "streamed in several chunks");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

/// Checks an ACP prompt's frames for [`bash_script`]'s call: one `tool_call` (`b1`, `execute`,
/// titled by its command), one completed `tool_call_update` with `output`, then `end_turn`.
pub fn assert_bash_call(frames: &[Value], output: &str) {
    let calls = updates(frames, "tool_call");
    assert_eq!(calls.len(), 1, "{frames:#?}");
    assert_eq!((&calls[0]["toolCallId"], &calls[0]["kind"]), (&json!("b1"), &json!("execute")));
    // Titled by its command once its arguments are known: in the `tool_call` or an update.
    let title = json!(format!("echo {output}"));
    let titled = calls[0]["title"] == title || updates(frames, "tool_call_update").iter().any(|u| u["toolCallId"] == "b1" && u["title"] == title);
    assert!(titled, "{frames:#?}");
    let done: Vec<_> = updates(frames, "tool_call_update").into_iter().filter(|u| u["status"] == "completed").collect();
    assert_eq!(done.len(), 1, "{frames:#?}");
    assert_eq!(done[0]["toolCallId"], "b1");
    assert!(done[0]["content"][0]["content"]["text"].as_str().unwrap().contains(output), "{:#}", done[0]);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

/// The offline model's script for a `bash` that ignores SIGTERM (so a cancelled turn takes the
/// 2 s until its SIGKILL to end), then a reply.
pub fn stubborn_script() -> [Value; 2] {
    [
        json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "touch started; trap '' TERM; sleep 30"}}]}),
        json!({"text": "the new answer"}),
    ]
}

/// The offline model's script for a reply streamed one character every 200 ms.
pub fn slow_script() -> [Value; 1] {
    [json!({"text": "a slow reply that takes a long time to stream out", "chunkSize": 1, "delayMs": 200})]
}
