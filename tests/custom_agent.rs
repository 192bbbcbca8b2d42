//! A custom agent (an `AgentCore` of the test's own, the reversed-text agent) served in process
//! in all three dialects through `agentwire::server::serve` over tokio duplex pipes: the
//! reversed reply, a command it does not implement refused with the error naming it (one
//! answer per id, and the server keeps serving), and cancel. Then `examples/custom_agent.rs`
//! as a process, in ACP and rpc.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use agentwire::agent::events::RunOutcome;
use agentwire::agent::{AgentCore, CoreResult, Host, QueueKind, Runs, Submitted};
use agentwire::protocol::ImageContent;
use agentwire::server::{serve, Dialect};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

/// Reverses the prompt; the prompt "hang" never answers (nor looks at the cancellation), so
/// only the runs' own cancel can end it; the prompt "tool" reports a tool call it ran, then text;
/// the prompt "panic" panics halfway; the prompt "crash" panics in the prompt command's handler.
struct Reverse {
    runs: Runs,
}

impl AgentCore for Reverse {
    type Control = Runs;
    fn control(&self) -> &Runs {
        &self.runs
    }
    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        let reversed: String = text.chars().rev().collect();
        if text == "crash" {
            panic!("the test agent crashed");
        }
        let (hang, tool, panics) = (text == "hang", text == "tool", text == "panic");
        self.runs
            .start(text, images, queue, move |reply| async move {
                if tool {
                    let arguments = json!({"q": "x"}).as_object().cloned().unwrap_or_default();
                    reply.tool_call("lookup", arguments, "found", false).await;
                }
                if panics {
                    reply.text("half an ans").await;
                    panic!("the test agent gave up");
                }
                if hang {
                    reply.thinking("waiting").await;
                    std::future::pending::<()>().await;
                }
                reply.text(reversed).await;
                RunOutcome::Completed
            })
            .await
    }
}

/// The host's end of the pipes.
struct Client {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Hang guard only: every frame here arrives in milliseconds.
const PATIENCE: Duration = Duration::from_secs(30);

impl Client {
    fn start(dialect: Dialect) -> Self {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (input, output) = tokio::io::split(theirs);
        let server = tokio::spawn(serve(dialect, |host: Host| Reverse { runs: Runs::new("reverse", host) }, input, output));
        let (read, write) = tokio::io::split(ours);
        Self { write, lines: BufReader::new(read).lines(), server }
    }

    async fn send(&mut self, frame: Value) {
        self.write.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line()).await.expect("a frame in time").unwrap().expect("the server is still writing");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Frames up to and including the first that `last` accepts.
    async fn until(&mut self, last: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = self.next().await;
            let done = last(&frame);
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }

    /// Ends the input; returns every frame written after this, once the server returned.
    async fn finish(mut self) -> Vec<Value> {
        self.write.shutdown().await.unwrap();
        drop(self.write);
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(PATIENCE, self.lines.next_line()).await.expect("the output ends").unwrap() {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        tokio::time::timeout(PATIENCE, self.server).await.expect("serve returns").unwrap().expect("output written");
        rest
    }
}

fn answers<'a>(frames: &'a [Value], id: &Value) -> Vec<&'a Value> {
    frames.iter().filter(|f| f.get("id") == Some(id) && (f["type"] == "response" || f.get("result").is_some() || f.get("error").is_some())).collect()
}

#[tokio::test]
async fn rpc_reverses_refuses_what_it_lacks_and_cancels() {
    let mut c = Client::start(Dialect::Rpc);
    let ready = c.next().await;
    assert_eq!(ready["type"], "ready");
    assert_eq!(ready["capabilities"]["hostTools"], false, "{ready}");
    assert_eq!(ready["capabilities"]["sessions"], false, "{ready}");

    c.send(json!({"id": "p", "type": "prompt", "message": "stressed"})).await;
    let frames = c.until(|f| f["type"] == "prompt_result").await;
    assert_eq!(frames[0]["type"], "response", "accepted before the run's events: {frames:?}");
    let end = frames.iter().rev().find(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant").expect("the reply");
    assert_eq!(end["message"]["content"][0]["text"], "desserts");
    assert_eq!(frames.last().unwrap()["status"], "completed");

    c.send(json!({"id": "c", "type": "compact"})).await;
    c.send(json!({"id": "s", "type": "get_state"})).await;
    let frames = c.until(|f| f["id"] == "s").await;
    let refused = answers(&frames, &json!("c"));
    assert_eq!(refused.len(), 1, "{frames:?}");
    assert_eq!(refused[0]["success"], false);
    assert_eq!(refused[0]["error"], "this agent does not support `compact`");
    let state = &frames.last().unwrap()["data"];
    assert_eq!(frames.last().unwrap()["success"], true, "still serving: {frames:?}");
    assert!(state.get("model").is_none() && state.get("thinkingLevel").is_none(), "no model to report: {state}");
    assert_eq!(state["isStreaming"], false, "{state}");
    // It lists no tools: asked for them, it says so instead of showing an empty list.
    c.send(json!({"id": "t", "type": "get_state", "dumpTools": true})).await;
    let refused = c.until(|f| f["id"] == "t").await;
    let refused = refused.last().unwrap();
    assert_eq!((&refused["success"], &refused["code"]), (&json!(false), &json!("unsupported")), "{refused}");
    assert_eq!(refused["error"], "this agent does not list the tools it offers the model (`dumpTools`)");

    c.send(json!({"id": "h", "type": "prompt", "message": "hang"})).await;
    c.until(|f| f["type"] == "message_update").await;
    c.send(json!({"id": "a", "type": "abort"})).await;
    let frames = c.until(|f| f["type"] == "prompt_result").await;
    assert_eq!(frames.last().unwrap()["id"], "h");
    assert_eq!(frames.last().unwrap()["status"], "aborted", "{frames:?}");
    let rest = c.finish().await;
    let all: Vec<Value> = frames.into_iter().chain(rest).collect();
    assert_eq!(answers(&all, &json!("a")).len(), 1, "{all:?}");
    assert!(answers(&all, &json!("c")).is_empty(), "one answer per id: {all:?}");
}

#[tokio::test]
async fn wire_reverses_refuses_what_it_lacks_and_cancels() {
    let mut c = Client::start(Dialect::Wire);
    let tool = json!({"name": "lookup", "description": "", "parameters": {"type": "object"}});
    c.send(json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {"protocol_version": "1.10", "external_tools": [tool]}})).await;
    let init = c.next().await;
    let rejected = &init["result"]["external_tools"]["rejected"];
    assert_eq!(rejected[0]["reason"], "this agent does not support `set_host_tools`", "{init}");

    c.send(json!({"jsonrpc": "2.0", "id": "p", "method": "prompt", "params": {"user_input": "stressed"}})).await;
    let frames = c.until(|f| f["id"] == "p").await;
    let text: String = frames.iter().filter(|f| f["params"]["type"] == "ContentPart").map(|f| f["params"]["payload"]["text"].as_str().unwrap_or_default()).collect();
    assert_eq!(text, "desserts", "{frames:?}");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");

    c.send(json!({"jsonrpc": "2.0", "id": "h", "method": "prompt", "params": {"user_input": "hang"}})).await;
    c.until(|f| f["params"]["type"] == "ContentPart").await;
    // Steering is the wire command this agent lacks: one error naming it, and the turn goes on.
    c.send(json!({"jsonrpc": "2.0", "id": "s", "method": "steer", "params": {"user_input": "more"}})).await;
    let frames = c.until(|f| f["id"] == "s").await;
    let error = &frames.last().unwrap()["error"];
    assert_eq!(error["message"], "this agent does not support `steer`", "{frames:?}");
    c.send(json!({"jsonrpc": "2.0", "id": "x", "method": "cancel", "params": {}})).await;
    let frames = c.until(|f| f["id"] == "h").await;
    assert_eq!(answers(&frames, &json!("x")).len(), 1, "{frames:?}");
    assert_eq!(frames.last().unwrap()["result"]["status"], "cancelled", "{frames:?}");
    let rest = c.finish().await;
    assert!(answers(&rest, &json!("s")).is_empty() && answers(&rest, &json!("x")).is_empty(), "{rest:?}");
}

#[tokio::test]
async fn acp_reverses_refuses_what_it_lacks_and_cancels() {
    let mut c = Client::start(Dialect::Acp);
    c.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})).await;
    let init = c.next().await;
    let caps = &init["result"]["agentCapabilities"];
    assert_eq!(caps["loadSession"], false, "{init}");
    assert_eq!(init["result"]["authMethods"], json!([]), "{init}");
    assert!(caps["sessionCapabilities"].get("list").is_none(), "{init}");

    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}})).await;
    let created = c.until(|f| f["id"] == 1).await;
    let session = created.last().unwrap()["result"]["sessionId"].as_str().expect("a session").to_owned();

    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "stressed"}]}})).await;
    let frames = c.until(|f| f["id"] == 2).await;
    let text: String = frames
        .iter()
        .filter(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|f| f["params"]["update"]["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(text, "desserts", "{frames:?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");

    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/load", "params": {"sessionId": session, "cwd": "/", "mcpServers": []}})).await;
    c.send(json!({"jsonrpc": "2.0", "id": 4, "method": "session/set_mode", "params": {"sessionId": session, "modeId": "always"}})).await;
    let frames = c.until(|f| f["id"] == 4).await;
    for (id, method) in [(3, "session/load"), (4, "session/set_mode")] {
        let answer = answers(&frames, &json!(id));
        assert_eq!(answer.len(), 1, "{frames:?}");
        assert_eq!(answer[0]["error"]["code"], -32601);
        assert_eq!(answer[0]["error"]["message"], format!("this agent does not support `{method}`"));
    }

    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hang"}]}})).await;
    c.until(|f| f["params"]["update"]["sessionUpdate"] == "agent_thought_chunk").await;
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})).await;
    let frames = c.until(|f| f["id"] == 5).await;
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "cancelled", "{frames:?}");
    let rest = c.finish().await;
    assert!(rest.iter().all(|f| f.get("id").is_none()), "one answer per id: {rest:?}");
}

#[tokio::test]
async fn a_tool_call_the_agent_reports_reaches_acp_and_rpc_as_tool_frames() {
    let mut c = Client::start(Dialect::Acp);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}})).await;
    let session = c.until(|f| f["id"] == 1).await.pop().unwrap()["result"]["sessionId"].clone();
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "tool"}]}})).await;
    let frames = c.until(|f| f["id"] == 2).await;
    let updates: Vec<&Value> = frames.iter().map(|f| &f["params"]["update"]).collect();
    assert!(updates.iter().any(|u| u["sessionUpdate"] == "tool_call" && u["title"].as_str().is_some_and(|t| t.contains("lookup"))), "{frames:?}");
    let done = updates.iter().find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed").expect("the call completed");
    assert_eq!(done["content"][0]["content"]["text"], "found", "{frames:?}");
    assert!(updates.iter().any(|u| u["sessionUpdate"] == "agent_message_chunk" && u["content"]["text"] == "loot"), "{frames:?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
    c.finish().await;

    let mut c = Client::start(Dialect::Rpc);
    c.send(json!({"id": "t", "type": "prompt", "message": "tool"})).await;
    let frames = c.until(|f| f["type"] == "prompt_result").await;
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").expect("the call ran");
    assert_eq!(end["toolName"], "lookup");
    assert_eq!(end["result"]["content"][0]["text"], "found");
    let turns = frames.iter().filter(|f| f["type"] == "turn_end").count();
    assert_eq!(turns, 2, "the call's turn, then the answer's: {frames:?}");
    assert_eq!(frames.last().unwrap()["status"], "completed");
    c.finish().await;
}

#[tokio::test]
async fn a_panicking_run_fails_its_prompt_and_the_agent_answers_the_next() {
    let mut c = Client::start(Dialect::Rpc);
    c.send(json!({"id": "p", "type": "prompt", "message": "panic"})).await;
    let frames = c.until(|f| f["type"] == "prompt_result").await;
    let result = frames.last().unwrap();
    assert_eq!(result["status"], "error", "{frames:?}");
    assert!(result["error"]["message"].as_str().is_some_and(|m| m.contains("the test agent gave up")), "{result}");
    assert!(frames.iter().any(|f| f["type"] == "agent_end"), "the run's events end in order: {frames:?}");
    c.send(json!({"id": "q", "type": "prompt", "message": "stressed"})).await;
    let frames = c.until(|f| f["type"] == "prompt_result").await;
    assert_eq!(frames.last().unwrap()["status"], "completed", "not busy for ever: {frames:?}");
    c.finish().await;
}

/// `examples/custom_agent.rs` as a process, in `mode`.
struct Example {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Example {
    fn start(mode: &str) -> Self {
        let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
        let path = deps.parent().unwrap().join("examples").join("custom_agent");
        assert!(path.exists(), "build the examples first (cargo test builds them): {}", path.display());
        let mut child = Command::new(path).args(["--mode", mode]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        Self { child, stdin, stdout }
    }

    fn send(&mut self, frame: Value) {
        writeln!(self.stdin.as_mut().unwrap(), "{frame}").unwrap();
    }

    /// Frames up to and including the first that `last` accepts.
    fn until(&mut self, last: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let line = self.stdout.next().expect("the example is still writing").unwrap();
            let frame: Value = serde_json::from_str(&line).unwrap();
            let done = last(&frame);
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }

    /// Closes stdin: the example exits 0 once everything asked is answered.
    fn finish(mut self) {
        drop(self.stdin.take());
        assert_eq!(self.child.wait().unwrap().code(), Some(0));
    }
}

#[test]
fn the_example_answers_an_acp_prompt_reversed() {
    let mut agent = Example::start("acp");
    agent.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    agent.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}));
    let mut opened = agent.until(|f| f["id"] == 1);
    assert_eq!(opened[0]["result"]["agentInfo"]["name"], "custom_agent", "it names itself: {opened:?}");
    let session = opened.pop().unwrap()["result"]["sessionId"].clone();
    agent.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "stressed"}]}}));
    let frames = agent.until(|f| f["id"] == 2);
    let chunks: Vec<&Value> = frames.iter().filter(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk").collect();
    assert!(chunks.iter().any(|c| c["params"]["update"]["content"]["text"] == "desserts"), "{frames:?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
    agent.finish();
}

#[test]
fn the_example_answers_an_rpc_prompt_reversed() {
    let mut agent = Example::start("rpc");
    agent.send(json!({"id": "1", "type": "prompt", "message": "stressed"}));
    let frames = agent.until(|f| f["type"] == "prompt_result");
    assert_eq!(frames[0]["agent"], "custom_agent", "it names itself: {frames:?}");
    let end = frames.iter().find(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant").expect("the reply");
    assert_eq!(end["message"]["content"][0]["text"], "desserts", "{frames:?}");
    assert_eq!(frames.last().unwrap()["status"], "completed");
    agent.finish();
}

/// A panic in a request's handler (the prompt "crash" panics before any run starts) is answered
/// as an internal error with the request's id, in each dialect, and the server keeps serving.
/// Before, the panic ended the serve loop: the process died with the request unanswered.
#[tokio::test]
async fn a_panicking_handler_is_answered_and_the_server_keeps_serving() {
    let mut c = Client::start(Dialect::Rpc);
    assert_eq!(c.next().await["type"], "ready");
    c.send(json!({"id": "x", "type": "prompt", "message": "crash"})).await;
    let answer = c.until(|f| f["id"] == "x").await.pop().unwrap();
    assert_eq!((&answer["success"], &answer["code"], &answer["command"]), (&json!(false), &json!("internal"), &json!("prompt")), "{answer}");
    assert_eq!(answer["error"], "the command's handler panicked: the test agent crashed");
    c.send(json!({"id": "p", "type": "prompt", "message": "stressed"})).await;
    assert_eq!(c.until(|f| f["type"] == "prompt_result").await.pop().unwrap()["status"], "completed");
    assert!(answers(&c.finish().await, &json!("x")).is_empty(), "one answer per id");

    let mut c = Client::start(Dialect::Wire);
    c.send(json!({"jsonrpc": "2.0", "id": "x", "method": "prompt", "params": {"user_input": "crash"}})).await;
    let answer = c.until(|f| f["id"] == "x").await.pop().unwrap();
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(answer["error"]["message"], "Internal error: the request's handler panicked: the test agent crashed");
    c.send(json!({"jsonrpc": "2.0", "id": "p", "method": "prompt", "params": {"user_input": "stressed"}})).await;
    let answer = c.until(|f| f["id"] == "p").await.pop().unwrap();
    assert_eq!(answer["result"]["status"], "finished", "{answer}");
    assert!(answers(&c.finish().await, &json!("x")).is_empty(), "one answer per id");

    let mut c = Client::start(Dialect::Acp);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}})).await;
    let session = c.until(|f| f["id"] == 1).await.pop().unwrap()["result"]["sessionId"].clone();
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "crash"}]}})).await;
    let answer = c.until(|f| f["id"] == 2).await.pop().unwrap();
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "stressed"}]}})).await;
    assert_eq!(c.until(|f| f["id"] == 3).await.pop().unwrap()["result"]["stopReason"], "end_turn");
    assert!(c.finish().await.iter().all(|f| f.get("id").is_none()), "one answer per id");
}
