//! MCP servers through the real binary, against a real MCP server: the official
//! `@modelcontextprotocol/server-everything` (pinned in `tests/mcp-server/`, installed by
//! `npm ci` from `scripts/test`; `AGENTWIRE_MCP_SERVER` may point at its `dist/index.js`).
//! The offline model's script makes the tool calls. Without node these tests skip, loudly.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::acp::{Acp, TIMEOUT};
use serde_json::{json, Value};

/// `node` and the server's entry point, or `None` (with a loud message) when node is missing.
fn server() -> Option<(String, String)> {
    if Command::new("node").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        eprintln!("\n*** SKIPPED: node is not installed; the MCP tests need it to run @modelcontextprotocol/server-everything ***\n");
        return None;
    }
    let entry = std::env::var("AGENTWIRE_MCP_SERVER").map(PathBuf::from).unwrap_or_else(|_| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-server/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    });
    assert!(entry.is_file(), "{} is missing: run `npm ci` in tests/mcp-server (scripts/test does)", entry.display());
    Some(("node".to_owned(), entry.display().to_string()))
}

/// The stdio entry of `session/new` for the everything server.
fn acp_stdio(name: &str, node: &str, entry: &str) -> Value {
    json!({"name": name, "command": node, "args": [entry, "stdio"], "env": []})
}

/// An `--mcp-config` file with `text` (kept while the returned directory lives), and its path.
fn config_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, text).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"text": "Calling.", "toolCalls": [{"id": id, "name": name, "arguments": args}]})
}

/// The ACP driver of `tests/common/acp.rs` with its directories, initialized, sessions in memory.
struct Client {
    acp: Acp,
    dir: tempfile::TempDir,
    _config: tempfile::TempDir,
}

impl std::ops::Deref for Client {
    type Target = Acp;
    fn deref(&self) -> &Acp {
        &self.acp
    }
}

impl std::ops::DerefMut for Client {
    fn deref_mut(&mut self) -> &mut Acp {
        &mut self.acp
    }
}

impl Client {
    fn start(script: &[Value], extra: &[&str]) -> Client {
        let (dir, config) = common::acp::dirs();
        let mut args = vec!["--no-session"];
        args.extend_from_slice(extra);
        let mut acp = Acp::start(dir.path(), config.path(), script, &args);
        acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
        Client { acp, dir, _config: config }
    }

    fn cwd(&self) -> String {
        self.dir.path().display().to_string()
    }

    fn new_session(&mut self, servers: Value) -> String {
        let cwd = self.cwd();
        let answer = self.call("session/new", json!({"cwd": cwd, "mcpServers": servers}));
        answer["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {answer}")).to_owned()
    }

    fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request("session/prompt", common::acp::prompt(text, session))
    }
}

fn updates(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f["method"] == "session/update").map(|f| &f["params"]["update"]).collect()
}

/// The text of a finished tool call's content.
fn tool_text(update: &Value) -> String {
    update["content"].as_array().into_iter().flatten().filter_map(|c| c["content"]["text"].as_str()).collect::<Vec<_>>().join("\n")
}

fn finished<'a>(frames: &'a [Value], call: &str) -> &'a Value {
    updates(frames)
        .into_iter()
        .find(|u| u["toolCallId"] == call && (u["status"] == "completed" || u["status"] == "failed"))
        .unwrap_or_else(|| panic!("no end of {call} in {frames:#?}"))
}

#[test]
fn rpc_mcp_config_runs_get_sum() {
    let Some((node, entry)) = server() else { return };
    let (_config, path) = config_file(&json!({"mcpServers": {"everything": {"command": node, "args": [entry, "stdio"]}}}).to_string());
    // The second call breaks the server's input schema: our own check answers it, with the
    // pointer, before the server is asked (the schema is the server's, compiled at run time).
    let script = [
        tool_call("s1", "mcp__everything__get-sum", json!({"a": 2, "b": 3})),
        tool_call("s2", "mcp__everything__get-sum", json!({"a": "two", "b": 3})),
        common::text_reply("done"),
    ];
    let mut agent = common::Agent::start(&["--mcp-config", path.as_str()], &script);
    // Asked for, the server's tools are listed with what the model is offered, under their MCP
    // names, with the server's description and input schema (a plain `get_state` lists none).
    let state = agent.request(json!({"id": "s0", "type": "get_state"}));
    assert!(state["data"].get("dumpTools").is_none(), "{state}");
    let state = agent.request(json!({"id": "s", "type": "get_state", "dumpTools": true}));
    let tools = state["data"]["dumpTools"].as_array().expect("dumpTools");
    let sum = tools.iter().find(|t| t["name"] == "mcp__everything__get-sum").unwrap_or_else(|| panic!("{tools:#?}"));
    assert_eq!(sum["description"], "Returns the sum of two numbers");
    assert!(sum["parameters"]["properties"]["a"].is_object(), "{sum}");
    assert!(tools.iter().any(|t| t["name"] == "bash"));
    agent.send(json!({"id": "p", "type": "prompt", "message": "add"}));
    let frames = agent.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").expect("tool_execution_end");
    assert_eq!(end["toolName"], "mcp__everything__get-sum");
    assert_eq!(end["isError"], false, "{end}");
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains('5'), "{text}");
    let refused = frames.iter().filter(|f| f["type"] == "tool_execution_end").nth(1).expect("the second tool_execution_end");
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Validation failed for tool \"mcp__everything__get-sum\":\n  - /a: "), "{text}");
    assert_eq!(frames.last().unwrap()["status"], "completed");
}

#[test]
fn wire_mcp_config_runs_the_tool_and_names_a_server_that_cannot_start() {
    let Some((node, entry)) = server() else { return };
    let servers = json!({"mcpServers": {"everything": {"command": node, "args": [entry, "stdio"]}, "gone": {"command": "/nonexistent/server"}}});
    let (_config, path) = config_file(&servers.to_string());
    let script = [tool_call("w1", "mcp__everything__echo", json!({"message": "wired"})), common::text_reply("done")];
    let mut wire = common::wire::Wire::start_with(&["--mcp-config", path.as_str()], &script);
    let notice = wire.next();
    assert_eq!(notice["params"]["type"], "Notification", "{notice}");
    let body = notice["params"]["payload"]["body"].as_str().unwrap();
    assert!(body.contains("\"gone\"") && body.contains("No such file"), "{body}");
    wire.send(json!({"jsonrpc": "2.0", "id": "p", "method": "prompt", "params": {"user_input": "echo"}}));
    let frames = wire.until_id(json!("p"));
    let result = frames.iter().find(|f| f["params"]["type"] == "ToolResult").expect("a ToolResult");
    let output = result["params"]["payload"]["return_value"]["output"].to_string();
    assert!(output.contains("Echo: wired"), "{result}");
    assert_eq!(result["params"]["payload"]["return_value"]["is_error"], false, "{result}");
}

/// tests/mcp-server/scripted-server.mjs: a hand-written server for what server-everything
/// never does (its tool list changes on request, it answers garbage).
fn scripted_server() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-server/scripted-server.mjs").display().to_string()
}

#[test]
fn rpc_list_changed_offers_new_tools_and_garbage_or_is_error_fails_only_the_call() {
    let Some((node, _)) = server() else { return };
    let (_config, path) = config_file(&json!({"mcpServers": {"dyn": {"command": node, "args": [scripted_server()]}}}).to_string());
    let script = [
        tool_call("a1", "mcp__dyn__add-tool", json!({})),
        tool_call("a2", "mcp__dyn__added", json!({})),
        tool_call("g1", "mcp__dyn__garbage", json!({})),
        tool_call("f1", "mcp__dyn__fails", json!({})),
        common::text_reply("done"),
    ];
    let mut agent = common::Agent::start(&["--mcp-config", path.as_str()], &script);
    let state = agent.request(json!({"id": "s", "type": "get_state", "dumpTools": true}));
    assert!(!state["data"]["dumpTools"].as_array().unwrap().iter().any(|t| t["name"] == "mcp__dyn__added"));
    agent.send(json!({"id": "p", "type": "prompt", "message": "go"}));
    let frames = agent.until_prompt_result("p");
    let end = |id: &str| frames.iter().find(|f| f["type"] == "tool_execution_end" && f["toolCallId"] == id).unwrap_or_else(|| panic!("no end of {id}")).clone();
    // The tool the server added after list_changed is offered and runs.
    let added = end("a2");
    assert_eq!(added["isError"], false, "{added}");
    assert_eq!(added["result"]["content"][0]["text"], "the added tool works");
    // A result that is not a tool result is a failed call, and so is isError; the run goes on.
    let garbage = end("g1");
    assert_eq!(garbage["isError"], true, "{garbage}");
    assert!(garbage["result"]["content"][0]["text"].as_str().unwrap().contains("dyn"), "{garbage}");
    let fails = end("f1");
    assert_eq!((&fails["isError"], &fails["result"]["content"][0]["text"]), (&json!(true), &json!("it broke")));
    assert_eq!(frames.last().unwrap()["status"], "completed");
    let state = agent.request(json!({"id": "s2", "type": "get_state", "dumpTools": true}));
    assert!(state["data"]["dumpTools"].as_array().unwrap().iter().any(|t| t["name"] == "mcp__dyn__added"));
}

#[test]
fn rpc_a_call_the_server_never_answers_fails_after_the_host_tool_timeout() {
    let Some((node, _)) = server() else { return };
    let (_config, path) = config_file(&json!({"mcpServers": {"dyn": {"command": node, "args": [scripted_server()]}}}).to_string());
    let script = [tool_call("h1", "mcp__dyn__hangs", json!({})), common::text_reply("moved on")];
    let mut agent = common::Agent::start(&["--mcp-config", path.as_str(), "--host-tool-timeout-ms", "500"], &script);
    agent.send(json!({"id": "p", "type": "prompt", "message": "go"}));
    let frames = agent.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").expect("tool_execution_end");
    assert_eq!(end["isError"], true, "{end}");
    assert!(end["result"]["content"][0]["text"].as_str().unwrap().contains("did not answer hangs within 500ms"), "{end}");
    assert_eq!(frames.last().unwrap()["status"], "completed");
}

#[test]
fn rpc_bad_mcp_config_is_a_notice_naming_server_and_field_and_the_agent_serves_on() {
    let (_config, path) = config_file(r#"{"mcpServers": {"tools": {"command": "x", "args": "not-a-list"}}}"#);
    let mut agent = common::Agent::start(&["--mcp-config", path.as_str()], &[common::text_reply("still here")]);
    let notice = agent.next();
    assert_eq!((&notice["type"], &notice["level"]), (&json!("notice"), &json!("error")), "{notice}");
    let message = notice["message"].as_str().unwrap();
    assert!(message.contains("\"tools\"") && message.contains("\"args\""), "{message}");
    agent.send(json!({"id": "p", "type": "prompt", "message": "hi"}));
    assert_eq!(agent.until_prompt_result("p").last().unwrap()["status"], "completed");
}

#[test]
fn acp_stdio_read_only_tool_runs_unasked_and_others_ask() {
    let Some((node, entry)) = server() else { return };
    let script = [
        tool_call("e1", "mcp__everything__echo", json!({"message": "hi there"})),
        common::text_reply("echoed"),
        tool_call("t1", "mcp__everything__toggle-simulated-logging", json!({})),
        common::text_reply("refused"),
        tool_call("i1", "mcp__everything__get-tiny-image", json!({})),
        common::text_reply("seen"),
    ];
    let mut acp = Client::start(&script, &[]);
    let session = acp.new_session(json!([acp_stdio("everything", &node, &entry)]));

    // echo is annotated readOnlyHint: it runs without a permission request.
    let id = acp.prompt(&session, "echo");
    let (frames, answer) = acp.until_response(&id);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(frames.iter().all(|f| f["method"] != "session/request_permission"), "echo asked: {frames:#?}");
    let end = finished(&frames, "e1");
    assert_eq!(end["status"], "completed");
    assert!(tool_text(end).contains("Echo: hi there"), "{end}");

    // toggle-simulated-logging is not read-only: it asks, and a rejection fails the call.
    let id = acp.prompt(&session, "toggle");
    let (mut frames, ask) = acp.until_method("session/request_permission");
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "t1");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}));
    let (rest, answer) = acp.until_response(&id);
    frames.extend(rest);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(finished(&frames, "t1")["status"], "failed");

    // An image result reaches the client as an image.
    let id = acp.prompt(&session, "image");
    let (frames, _) = acp.until_response(&id);
    let end = finished(&frames, "i1");
    assert_eq!(end["status"], "completed", "{end}");
    assert!(end["content"].as_array().unwrap().iter().any(|c| c["content"]["type"] == "image"), "{end}");
}

/// A free TCP port on 127.0.0.1 (released again for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn acp_streamable_http_server_echoes() {
    let Some((node, entry)) = server() else { return };
    let port = free_port();
    let http = Killed(Command::new(&node).arg(&entry).arg("streamableHttp").env("PORT", port.to_string()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    let deadline = Instant::now() + TIMEOUT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP MCP server did not listen on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let script = [tool_call("h1", "mcp__web__echo", json!({"message": "over http"})), common::text_reply("ok")];
    let mut acp = Client::start(&script, &[]);
    let session = acp.new_session(json!([{"type": "http", "name": "web", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": [{"name": "X-Test", "value": "1"}]}]));
    let id = acp.prompt(&session, "echo");
    let (frames, _) = acp.until_response(&id);
    let end = finished(&frames, "h1");
    assert_eq!(end["status"], "completed", "{end}");
    assert!(tool_text(end).contains("Echo: over http"), "{end}");
    drop(http);
}

#[test]
fn acp_sse_is_refused_naming_the_server() {
    let mut acp = Client::start(&[], &[]);
    let cwd = acp.cwd();
    let answer = acp.call("session/new", json!({"cwd": cwd, "mcpServers": [{"type": "sse", "name": "legacy", "url": "http://127.0.0.1:1/sse", "headers": []}]}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("\"legacy\""), "{answer}");
    assert_eq!(answer["error"]["data"]["path"], "/mcpServers/0/type");
    // The connection goes on.
    acp.new_session(json!([]));
}

#[test]
fn acp_unstartable_and_silent_servers_are_named_and_the_session_works() {
    let silent = silent_server();
    // The default bound (10 s): session/new answers within 15 s all the same.
    let mut acp = Client::start(&[common::text_reply("fine without them")], &[]);
    let cwd = acp.cwd();
    let started = Instant::now();
    let servers = json!([
        {"name": "missing", "command": "/nonexistent/mcp-server", "args": [], "env": []},
        {"name": "silent", "command": silent.1.display().to_string(), "args": [], "env": []},
    ]);
    let id = acp.request("session/new", json!({"cwd": cwd, "mcpServers": servers}));
    let (_, answer) = acp.until_response(&id);
    assert!(started.elapsed() < Duration::from_secs(15), "session/new took {:?}", started.elapsed());
    let session = answer["result"]["sessionId"].as_str().expect("a session despite the servers").to_owned();
    // After the answer: one message per server, naming it and why.
    let mut said = String::new();
    while !(said.contains("\"missing\"") && said.contains("\"silent\"")) {
        let f = acp.next();
        if f["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            said.push_str(f["params"]["update"]["content"]["text"].as_str().unwrap());
        }
    }
    assert!(said.contains("No such file") && said.contains("initialize"), "{said}");
    let id = acp.prompt(&session, "hello");
    let (_, answer) = acp.until_response(&id);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    // The silent server (and its child) was killed when it was given up on.
    nothing_left_under(acp.child.id(), "a server given up on");
}

/// A stdio "server" that never answers `initialize` (a shell waiting on a child of its own).
fn silent_server() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silent.sh");
    std::fs::write(&path, "#!/bin/sh\nsleep 600\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (dir, path)
}

#[test]
fn rpc_startup_bound_is_the_flag() {
    let silent = silent_server();
    let (_config, path) = config_file(&json!({"mcpServers": {"quiet": {"command": silent.1}}}).to_string());
    let started = Instant::now();
    let mut agent = common::Agent::start(&["--mcp-config", path.as_str(), "--mcp-startup-timeout-ms", "700"], &[]);
    let notice = agent.next();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let message = notice["message"].as_str().unwrap();
    assert!(message.contains("\"quiet\"") && message.contains("within 700ms"), "{notice}");
    nothing_left_under(agent.pid(), "the silent server");
}

#[test]
fn acp_resume_and_load_replace_the_servers_and_name_failures_before_their_answer() {
    let Some((node, entry)) = server() else { return };
    let script = [tool_call("o1", "mcp__one__echo", json!({"message": "x"})), common::text_reply("gone")];
    let mut acp = Client::start(&script, &[]);
    let session = acp.new_session(json!([acp_stdio("one", &node, &entry)]));
    let first = descendants(acp.child.id());
    assert!(!first.is_empty(), "server one runs under the agent");
    let cwd = acp.cwd();
    let id = acp.request("session/resume", json!({"sessionId": session, "cwd": cwd, "mcpServers": [{"name": "missing", "command": "/nonexistent/server", "args": [], "env": []}]}));
    let (before, answer) = acp.until_response(&id);
    assert!(answer["result"].is_object(), "{answer}");
    let said: String = updates(&before).iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").filter_map(|u| u["content"]["text"].as_str()).collect();
    assert!(said.contains("\"missing\""), "the failure comes before the answer: {before:#?}");
    // The servers the session had are shut down, and their tools are gone.
    let deadline = Instant::now() + Duration::from_secs(3);
    while first.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "server one outlived its replacement: {first:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let id = acp.prompt(&session, "echo");
    let (frames, _) = acp.until_response(&id);
    let end = finished(&frames, "o1");
    assert_eq!(end["status"], "failed");
    assert!(tool_text(end).contains("not found"), "{end}");
    // session/load too: the failure is said before its answer (after the replayed history).
    let id = acp.request("session/load", json!({"sessionId": session, "cwd": cwd, "mcpServers": [{"name": "absent", "command": "/nonexistent/other", "args": [], "env": []}]}));
    let (before, answer) = acp.until_response(&id);
    assert!(answer["result"].is_object(), "{answer}");
    let said: String = updates(&before).iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").filter_map(|u| u["content"]["text"].as_str()).collect();
    assert!(said.contains("\"absent\""), "the failure comes before the answer: {before:#?}");
}

#[test]
fn acp_cancel_ends_a_running_call_with_progress_seen() {
    let Some((node, entry)) = server() else { return };
    let script = [tool_call("l1", "mcp__everything__trigger-long-running-operation", json!({"duration": 60, "steps": 120}))];
    let mut acp = Client::start(&script, &[]);
    let session = acp.new_session(json!([acp_stdio("everything", &node, &entry)]));
    let id = acp.prompt(&session, "long");
    // Progress notifications arrive as tool call updates with the progress so far.
    loop {
        let f = acp.next();
        let u = &f["params"]["update"];
        if u["toolCallId"] == "l1" && u["status"] == "in_progress" && tool_text(u).contains("/120") {
            break;
        }
    }
    let asked = Instant::now();
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (frames, answer) = acp.until_response(&id);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert!(asked.elapsed() < Duration::from_secs(5), "cancel took {:?}", asked.elapsed());
    assert_eq!(finished(&frames, "l1")["status"], "failed");
}

/// Every process whose parent chain leads to `root` (read from /proc).
fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
        let ppid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    found.remove(0);
    found
}

/// Fails unless every process under `pid` is gone within 3 s (the watchdog of a server given up
/// on exits just after it kills the server's group).
fn nothing_left_under(pid: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<u32> = descendants(pid).into_iter().filter(|p| alive(*p)).collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "{what} still runs: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit(')').next().unwrap_or_default().trim_start().starts_with('Z'))
}

#[test]
fn no_mcp_process_outlives_the_agent_after_eof() {
    let Some((node, entry)) = server() else { return };
    let mut acp = Client::start(&[], &[]);
    // Two sessions, two servers. The second leaves a process of its own behind that neither
    // stdin EOF nor its parent's death would end: only killing the server's process group does.
    acp.new_session(json!([acp_stdio("one", &node, &entry)]));
    let wrapped = json!({"name": "two", "command": "/bin/sh", "args": ["-c", format!("sleep 600 & exec {node} {entry} stdio")], "env": []});
    acp.new_session(json!([wrapped]));
    let mut started = descendants(acp.child.id());
    assert!(started.len() >= 3, "expected the servers under the agent: {started:?}");
    // The same server from --mcp-config under an rpc agent.
    let (_config, path) = config_file(&json!({"mcpServers": {"two": {"command": "/bin/sh", "args": ["-c", format!("sleep 600 & exec {node} {entry} stdio")]}}}).to_string());
    let mut rpc = common::Agent::start(&["--mcp-config", path.as_str()], &[]);
    rpc.request(json!({"id": "s", "type": "get_state"}));
    let under_rpc = descendants(rpc.pid());
    assert!(under_rpc.len() >= 2, "expected the server under the rpc agent: {under_rpc:?}");
    started.extend(under_rpc);

    drop(acp.stdin.take());
    let status = acp.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(rpc.finish().1, 0);
    std::thread::sleep(Duration::from_secs(3));
    let left: Vec<u32> = started.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "still running after EOF: {left:?}");
}

#[test]
fn a_killed_agent_leaves_no_mcp_process_behind() {
    let Some((node, entry)) = server() else { return };
    let mut acp = Client::start(&[], &[]);
    // The server leaves a child of its own: only its process group's end takes that too.
    let wrapped = json!({"name": "two", "command": "/bin/sh", "args": ["-c", format!("sleep 600 & exec {node} {entry} stdio")], "env": []});
    acp.new_session(json!([wrapped]));
    let started = descendants(acp.child.id());
    assert!(started.len() >= 2, "expected the server under the agent: {started:?}");
    acp.child.kill().unwrap();
    acp.child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let left: Vec<u32> = started.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "still running after SIGKILL of the agent: {left:?}");
}
