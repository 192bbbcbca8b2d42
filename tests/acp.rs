//! `agentwire --mode acp` driven over pipes with raw JSON-RPC frames. Every frame the agent
//! writes is validated against the vendored official ACP schema (`schema/acp/schema.json`):
//! its message shape, the params of its requests and notifications, and the result of each
//! response against the method it answers (the driver is `tests/common/acp.rs`).

mod common;

use std::process::Command;
use std::time::Duration;

use common::acp::*;
use serde_json::{json, Value};

/// A scripted model reply that calls the tool `name` with `args`.
fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"toolCalls": [{"id": id, "name": name, "arguments": args}]})
}

#[test]
fn initialize_tells_the_truth_and_stdout_has_only_frames() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    // No `ready` line: the first frame is the answer to initialize.
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let r = &init["result"];
    assert_eq!(r["protocolVersion"], 1);
    assert_eq!(r["authMethods"][0]["id"], "provider-keys", "{r}");
    assert_eq!(r["authMethods"].as_array().map(Vec::len), Some(1), "no terminal method for a client without auth.terminal: {r}");
    assert_eq!(r["agentCapabilities"]["loadSession"], true);
    assert_eq!(r["agentCapabilities"]["promptCapabilities"]["audio"], false);
    assert_eq!(r["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(r["agentCapabilities"]["mcpCapabilities"], json!({"http": true, "sse": false}));
    assert!(r["agentCapabilities"]["sessionCapabilities"]["list"].is_object());
    assert_eq!(r["agentInfo"]["name"], "agentwire");
    assert!(acp.close().success());
}

#[test]
fn prompt_streams_thoughts_and_text_then_ends_the_turn() {
    let (dir, config) = dirs();
    let script = [json!({"thinking": "let me think", "text": "Hello there, editor", "chunkSize": 5})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    let session = acp.init_and_new(dir.path());
    let id = acp.request("session/prompt", prompt("hi", &session));
    let (frames, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let ups = updates(&frames);
    let text: String = ups.iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").map(|u| u["content"]["text"].as_str().unwrap()).collect();
    let thought: String = ups.iter().filter(|u| u["sessionUpdate"] == "agent_thought_chunk").map(|u| u["content"]["text"].as_str().unwrap()).collect();
    assert_eq!((text.as_str(), thought.as_str()), ("Hello there, editor", "let me think"));
    assert!(ups.iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").count() > 1, "streamed in chunks");
    assert!(frames.iter().all(|f| f["params"]["sessionId"] == session.as_str()));
    assert!(kinds(&frames).contains(&"usage_update".to_owned()));
}

#[test]
fn permission_granted_runs_the_tool_and_rejected_does_not() {
    let (dir, config) = dirs();
    let script = [
        json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "yes.txt", "content": "allowed\n"}}]}),
        json!({"text": "wrote it"}),
        json!({"toolCalls": [{"id": "w2", "name": "write", "arguments": {"path": "no.txt", "content": "never\n"}}]}),
        json!({"text": "could not"}),
    ];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    let session = acp.init_and_new(dir.path());

    let id = acp.request("session/prompt", prompt("write yes", &session));
    let (seen, ask) = acp.until_request("session/request_permission");
    assert_eq!(ask["params"]["sessionId"], session.as_str());
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "w1");
    assert_eq!(ask["params"]["toolCall"]["kind"], "edit");
    let options: Vec<&str> = ask["params"]["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    let call = updates(&seen).into_iter().find(|u| u["sessionUpdate"] == "tool_call").expect("tool_call before the permission request").clone();
    assert_eq!((&call["toolCallId"], &call["kind"], &call["status"]), (&json!("w1"), &json!("edit"), &json!("pending")));
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}));
    let (frames, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let done = updates(&frames).into_iter().find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed").expect("completed").clone();
    // Paths in ACP are absolute.
    assert_eq!(done["content"][0], json!({"type": "diff", "path": dir.path().join("yes.txt").display().to_string(), "newText": "allowed\n"}));
    assert_eq!(std::fs::read_to_string(dir.path().join("yes.txt")).unwrap(), "allowed\n");

    let id = acp.request("session/prompt", prompt("write no", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}));
    let (frames, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let failed = updates(&frames).into_iter().find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"].is_string()).expect("a final status").clone();
    assert_eq!((&failed["toolCallId"], &failed["status"]), (&json!("w2"), &json!("failed")));
    assert!(!dir.path().join("no.txt").exists(), "a rejected tool does not run");
}

/// The user sees what they approve: a `write` or `edit` permission request carries a `diff`
/// content block with the absolute path, the file's text now (absent for a new file) and after,
/// worked out without touching the file.
#[test]
fn write_and_edit_permission_requests_show_the_change() {
    let (dir, config) = dirs();
    std::fs::write(dir.path().join("old.txt"), "one\ntwo\nthree\n").unwrap();
    let script = [
        tool_call("w1", "write", json!({"path": "fresh.txt", "content": "brand new\n"})),
        json!({"text": "wrote"}),
        tool_call("e1", "edit", json!({"path": "old.txt", "oldText": "two", "newText": "2"})),
        json!({"text": "edited"}),
    ];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    let session = acp.init_and_new(dir.path());
    let path = |name: &str| dir.path().join(name).display().to_string();

    let id = acp.request("session/prompt", prompt("write", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    assert_eq!(ask["params"]["toolCall"]["content"], json!([{"type": "diff", "path": path("fresh.txt"), "newText": "brand new\n"}]), "{ask}");
    assert!(!dir.path().join("fresh.txt").exists(), "nothing is written before the answer");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}));
    assert_eq!(acp.until_response(&id).1["result"]["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(dir.path().join("fresh.txt")).unwrap(), "brand new\n");

    let id = acp.request("session/prompt", prompt("edit", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    let diff = json!({"type": "diff", "path": path("old.txt"), "oldText": "one\ntwo\nthree\n", "newText": "one\n2\nthree\n"});
    assert_eq!(ask["params"]["toolCall"]["content"], json!([diff]), "{ask}");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}));
    assert_eq!(acp.until_response(&id).1["result"]["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(dir.path().join("old.txt")).unwrap(), "one\ntwo\nthree\n", "a rejected edit changes nothing");
}

/// What was done is shown as what was approved: an allowed `edit` of line 2 of a three-line
/// file completes with the whole file's old and new text, as its permission showed them (the
/// completed diff used to carry the edit's fragments, `two` → `2`).
#[test]
fn an_allowed_edit_completes_with_the_whole_files_diff_it_asked_with() {
    let (dir, config) = dirs();
    std::fs::write(dir.path().join("three.txt"), "one\ntwo\nthree\n").unwrap();
    let script = [tool_call("e1", "edit", json!({"path": "three.txt", "oldText": "two", "newText": "2"})), json!({"text": "edited"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    let session = acp.init_and_new(dir.path());
    let id = acp.request("session/prompt", prompt("edit", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    let asked = ask["params"]["toolCall"]["content"][0].clone();
    assert_eq!(asked, json!({"type": "diff", "path": dir.path().join("three.txt").display().to_string(), "oldText": "one\ntwo\nthree\n", "newText": "one\n2\nthree\n"}));
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}));
    let (frames, _) = acp.until_response(&id);
    let done = updates(&frames).into_iter().find(|u| u["toolCallId"] == "e1" && u["status"] == "completed").expect("completed").clone();
    assert_eq!(done["content"], json!([asked]), "{done}");
}

#[test]
fn allow_always_is_remembered_and_unknown_answers_fail_closed() {
    let (dir, config) = dirs();
    let bash = |id: &str, c: &str| json!({"toolCalls": [{"id": id, "name": "bash", "arguments": {"command": c}}]});
    let script = [bash("b1", "echo one"), json!({"text": "1"}), bash("b2", "echo two"), json!({"text": "2"}), json!({"toolCalls": [{"id": "e1", "name": "write", "arguments": {"path": "x.txt", "content": "x"}}]}), json!({"text": "3"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    let session = acp.init_and_new(dir.path());
    let id = acp.request("session/prompt", prompt("one", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "allow_always"}}));
    let (frames, _) = acp.until_response(&id);
    let out = updates(&frames).into_iter().find(|u| u["status"] == "completed").unwrap().clone();
    assert!(out["content"][0]["content"]["text"].as_str().unwrap().contains("one"), "{out}");
    // The same tool again: no question.
    let id = acp.request("session/prompt", prompt("two", &session));
    let (frames, response) = acp.until_response(&id);
    assert!(frames.iter().all(|f| f["method"] != "session/request_permission"));
    assert_eq!(response["result"]["stopReason"], "end_turn");
    // Another tool asks again; an option id that is not an allow option rejects.
    let id = acp.request("session/prompt", prompt("three", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "something_else"}}));
    let (frames, _) = acp.until_response(&id);
    assert!(updates(&frames).iter().any(|u| u["toolCallId"] == "e1" && u["status"] == "failed"));
    assert!(!dir.path().join("x.txt").exists());
}

#[test]
fn cancel_mid_stream_resolves_cancelled_promptly() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[slow_reply()], &[]);
    let session = acp.init_and_new(dir.path());
    let id = acp.start_streaming(&session);
    let t = std::time::Instant::now();
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (_, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
    // The session goes on.
    let again = acp.call("session/prompt", prompt("still there?", &session));
    assert_eq!(again["result"]["stopReason"], "end_turn");
}

/// An editor's "interrupt and send": `session/cancel` and the next `session/prompt` written back
/// to back while the run winds down (here a `bash` that ignores SIGTERM, killed 2 s later). The
/// new prompt waits for the cancelled one's answer and then runs; it used to be refused as busy
/// (-32603) until the cancelled run had ended.
#[test]
fn a_prompt_right_behind_a_cancel_waits_for_the_cancelled_one() {
    let (dir, config) = dirs();
    let stubborn = "touch started; trap '' TERM; sleep 30";
    let script = [json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": stubborn}}]}), json!({"text": "the new answer"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &["--approval", "never"]);
    let session = acp.init_and_new(dir.path());
    let first = acp.request("session/prompt", prompt("run it", &session));
    common::wait_for(|| dir.path().join("started").exists(), "the command to start");
    acp.notify("session/cancel", json!({"sessionId": session}));
    let second = acp.request("session/prompt", prompt("instead", &session));
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let f = acp.next();
        if f.get("method").is_none() && (f["id"] == first || f["id"] == second) {
            answers.push(f);
        }
    }
    assert_eq!((&answers[0]["id"], &answers[0]["result"]["stopReason"]), (&first, &json!("cancelled")), "{answers:?}");
    assert_eq!((&answers[1]["id"], &answers[1]["result"]["stopReason"]), (&second, &json!("end_turn")), "{answers:?}");
}

#[test]
fn cancel_while_permission_pending_rejects_and_resolves_cancelled() {
    let (dir, config) = dirs();
    let script = [json!({"toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": "touch ran.txt"}}]}), json!({"text": "after"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    let session = acp.init_and_new(dir.path());
    let id = acp.request("session/prompt", prompt("go", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    acp.notify("session/cancel", json!({"sessionId": session}));
    // As the spec asks, the client answers the pending request `cancelled`; it is too late anyway.
    acp.answer(&ask, json!({"outcome": {"outcome": "cancelled"}}));
    let (_, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(!dir.path().join("ran.txt").exists());
}

#[test]
fn load_replays_the_history_in_a_fresh_process_before_answering() {
    let (dir, config) = dirs();
    let script = [
        json!({"toolCalls": [{"id": "r1", "name": "bash", "arguments": {"command": "echo replayed-output"}}]}),
        json!({"thinking": "hmm", "text": "first answer"}),
    ];
    let session = {
        let mut acp = Acp::start(dir.path(), config.path(), &script, &["--approval", "never"]);
        let session = acp.init_and_new(dir.path());
        let r = acp.call("session/prompt", prompt("remember me", &session));
        assert_eq!(r["result"]["stopReason"], "end_turn");
        assert!(acp.close().success());
        session
    };
    let script = [json!({"text": "second answer"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let list = acp.call("session/list", json!({"cwd": dir.path().display().to_string()}));
    assert_eq!(list["result"]["sessions"][0]["sessionId"], session.as_str(), "{list}");
    let id = acp.request("session/load", json!({"sessionId": session, "cwd": dir.path().display().to_string(), "mcpServers": []}));
    let (frames, response) = acp.until_response(&id);
    assert_eq!(response["result"]["modes"]["currentModeId"], "default", "{response}");
    // Everything about the session comes before the answer (ACP: session/load), then nothing.
    assert_eq!(kinds(&frames), ["available_commands_update", "user_message_chunk", "tool_call", "tool_call_update", "agent_thought_chunk", "agent_message_chunk"]);
    acp.no_frame_within(Duration::from_millis(500));
    let frames = &frames[1..];
    let ups = updates(frames);
    assert_eq!(ups[0]["content"]["text"], "remember me");
    assert_eq!((&ups[1]["toolCallId"], &ups[1]["kind"], &ups[1]["title"]), (&json!("r1"), &json!("execute"), &json!("echo replayed-output")));
    assert_eq!(ups[2]["status"], "completed");
    assert!(ups[2]["content"][0]["content"]["text"].as_str().unwrap().contains("replayed-output"));
    assert_eq!(ups[4]["content"]["text"], "first answer");
    // The session continues with its history.
    let r = acp.call("session/prompt", prompt("and now?", &session));
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let unknown = acp.call("session/load", json!({"sessionId": "no-such-session", "cwd": dir.path().display().to_string(), "mcpServers": []}));
    assert_eq!(unknown["error"]["code"], -32002);
}

#[test]
fn step_limit_is_max_turn_requests() {
    let (dir, config) = dirs();
    let script = [json!({"toolCalls": [{"id": "t1", "name": "ls", "arguments": {}}]}), json!({"toolCalls": [{"id": "t2", "name": "ls", "arguments": {}}]})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &["--max-steps-per-turn", "1"]);
    let session = acp.init_and_new(dir.path());
    let id = acp.request("session/prompt", prompt("list", &session));
    let (frames, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "max_turn_requests");
    assert!(updates(&frames).iter().any(|u| u["toolCallId"] == "t1" && u["status"] == "completed"), "the allowed step ran");
}

#[test]
fn errors_follow_json_rpc_and_never_kill_the_process() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[json!({"text": "alive"})], &[]);
    acp.send_raw("{this is not json");
    let e = acp.next();
    assert_eq!((&e["id"], &e["error"]["code"]), (&Value::Null, &json!(-32700)));
    // A batch is JSON-RPC 2.0's: its one request answered in an array (here: params missing).
    acp.send_raw(r#"[{"jsonrpc":"2.0","id":1,"method":"initialize"}]"#);
    let batch = acp.next_batch();
    assert_eq!((batch.len(), &batch[0]["id"], &batch[0]["error"]["code"]), (1, &json!(1), &json!(-32602)), "{batch:?}");
    acp.send_raw(r#"{"jsonrpc":"1.0","id":"v","method":"initialize","params":{}}"#);
    let e = acp.next();
    assert_eq!((&e["id"], &e["error"]["code"]), (&json!("v"), &json!(-32600)));
    acp.send_raw(r#"{"jsonrpc":"2.0","id":{"bad":1},"method":"initialize"}"#);
    assert_eq!(acp.next()["error"]["code"], -32600);
    acp.send_raw(r#"{"jsonrpc":"2.0","id":"m","method":"session/teleport","params":{}}"#);
    let e = acp.next();
    assert_eq!((&e["id"], &e["error"]["code"]), (&json!("m"), &json!(-32601)));
    acp.send_raw(r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"one"}}"#);
    let e = acp.next();
    assert_eq!((&e["id"], &e["error"]["code"], &e["error"]["data"]["path"]), (&json!(7), &json!(-32602), &json!("/protocolVersion")));
    acp.send_raw(r#"{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":1}]}}"#);
    let e = acp.next();
    assert_eq!((&e["error"]["code"], &e["error"]["data"]["path"]), (&json!(-32602), &json!("/prompt/0/text")));
    // Unknown and invalid notifications: no answer at all.
    acp.send_raw(r#"{"jsonrpc":"2.0","method":"$/nothing","params":{}}"#);
    acp.send_raw(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}"#);
    acp.send_raw(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#);
    acp.no_frame_within(Duration::from_millis(300));
    // A prompt for a session that does not exist.
    let e = acp.call("session/prompt", prompt("hi", "nope"));
    assert_eq!(e["error"]["code"], -32002);
    let e = acp.call("session/new", json!({"cwd": "relative/dir", "mcpServers": []}));
    assert_eq!(e["error"]["code"], -32602);
    // And the process still works.
    let session = acp.init_and_new(dir.path());
    let r = acp.call("session/prompt", prompt("hi", &session));
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert!(acp.close().success());
}

#[test]
fn schema_bundle_acp_prints_the_vendored_schema() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentwire")).args(["schema", "bundle", "--dialect", "acp"]).output().unwrap();
    assert!(out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let vendored: Value = serde_json::from_str(include_str!("../schema/acp/schema.json")).unwrap();
    assert_eq!(printed, vendored);
}

#[test]
fn approval_modes_are_advertised_and_set_mode_switches_the_policy() {
    let (dir, config) = dirs();
    let script = [
        json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "auto.txt", "content": "no question\n"}}]}),
        json!({"text": "wrote it"}),
        json!({"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "auto.txt"}}]}),
        json!({"text": "read it"}),
    ];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let new = acp.call("session/new", json!({"cwd": dir.path().display().to_string(), "mcpServers": []}));
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    // ACP mode starts at `--approval dangerous`: the `default` mode.
    let modes = &new["result"]["modes"];
    assert_eq!(modes["currentModeId"], "default", "{new}");
    let ids: Vec<&str> = modes["availableModes"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["ask", "default", "auto"]);

    // `auto`: a write runs without a permission request.
    let set = acp.call("session/set_mode", json!({"sessionId": session, "modeId": "auto"}));
    assert_eq!(set["result"], json!({}), "{set}");
    let id = acp.request("session/prompt", prompt("write", &session));
    let (frames, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(frames.iter().all(|f| f["method"] != "session/request_permission"), "auto mode asked: {frames:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("auto.txt")).unwrap(), "no question\n");

    // `ask`: even a read asks (and a rejection means it does not run).
    acp.call("session/set_mode", json!({"sessionId": session, "modeId": "ask"}));
    let id = acp.request("session/prompt", prompt("read", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "r1");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}));
    let (frames, _) = acp.until_response(&id);
    assert!(updates(&frames).iter().any(|u| u["toolCallId"] == "r1" && u["status"] == "failed"));

    // A loaded session reports the mode in force; unknown modes and sessions are errors.
    let bad = acp.call("session/set_mode", json!({"sessionId": session, "modeId": "yolo"}));
    assert_eq!((&bad["error"]["code"], &bad["error"]["data"]["path"]), (&json!(-32602), &json!("/modeId")), "{bad}");
    let unknown = acp.call("session/set_mode", json!({"sessionId": "nope", "modeId": "auto"}));
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    let resumed = acp.call("session/resume", json!({"sessionId": session, "cwd": dir.path().display().to_string()}));
    assert_eq!(resumed["result"]["modes"]["currentModeId"], "ask", "{resumed}");
}

/// `initialize` for a client offering `fs` (read and write) and `terminal` as told, then a
/// session in `cwd`; its id.
fn with_client_tools(acp: &mut Acp, cwd: &std::path::Path, fs: bool, terminal: bool) -> String {
    acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": terminal}}));
    let new = acp.call("session/new", json!({"cwd": cwd.display().to_string(), "mcpServers": []}));
    new["result"]["sessionId"].as_str().unwrap().to_owned()
}

/// Answers the client-side requests agentwire sends while a prompt runs, by method, until the
/// prompt's response; returns the requests (method, params) in order and the frames.
fn serve_client(acp: &mut Acp, prompt: &Value, mut answer: impl FnMut(&str, &Value) -> Option<Value>) -> (Vec<(String, Value)>, Vec<Value>, Value) {
    let (mut asked, mut frames) = (Vec::new(), Vec::new());
    loop {
        let f = acp.next();
        if f.get("method").is_none() && f.get("id") == Some(prompt) {
            return (asked, frames, f);
        }
        if let (Some(method), Some(_)) = (f["method"].as_str(), f.get("id")) {
            asked.push((method.to_owned(), f["params"].clone()));
            match answer(method, &f["params"]) {
                Some(result) => acp.answer(&f, result),
                None => acp.send(&json!({"jsonrpc": "2.0", "id": f["id"], "error": {"code": -32603, "message": "the editor failed"}})),
            }
        }
        frames.push(f);
    }
}

#[test]
fn fs_and_terminal_capabilities_route_the_tools_through_the_client() {
    let (dir, config) = dirs();
    std::fs::write(dir.path().join("notes.txt"), "on disk\n").unwrap();
    let script = [
        tool_call("r1", "read", json!({"path": "notes.txt"})),
        tool_call("w1", "write", json!({"path": "out.txt", "content": "new\n"})),
        tool_call("e1", "edit", json!({"path": "notes.txt", "oldText": "buffer", "newText": "edited"})),
        tool_call("b1", "bash", json!({"command": "echo hi"})),
        tool_call("r2", "read", json!({"path": "broken.txt"})),
        json!({"text": "done"}),
    ];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &["--approval", "never"]);
    let session = with_client_tools(&mut acp, dir.path(), true, true);
    let notes = dir.path().join("notes.txt").display().to_string();
    let id = acp.request("session/prompt", prompt("work", &session));
    let (asked, frames, response) = serve_client(&mut acp, &id, |method, params| match method {
        "fs/read_text_file" if params["path"].as_str().unwrap().ends_with("broken.txt") => None,
        "fs/read_text_file" => Some(json!({"content": "unsaved buffer\n"})),
        "fs/write_text_file" | "terminal/release" => Some(json!({})),
        "terminal/create" => Some(json!({"terminalId": "term-1"})),
        "terminal/wait_for_exit" => Some(json!({"exitCode": 0})),
        "terminal/output" => Some(json!({"output": "hi\n", "truncated": false, "exitStatus": {"exitCode": 0}})),
        other => panic!("unexpected client request {other}"),
    });
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let methods: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["fs/read_text_file", "fs/write_text_file", "fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release", "fs/read_text_file"]);
    assert!(asked.iter().all(|(_, p)| p["sessionId"] == session.as_str()));
    assert_eq!(asked[0].1["path"], notes.as_str(), "absolute paths");
    assert_eq!(asked[1].1["content"], "new\n");
    assert_eq!(asked[3].1, json!({"sessionId": session, "path": notes, "content": "unsaved edited\n"}), "edit changed the buffer's text");
    assert_eq!((&asked[4].1["command"], &asked[4].1["cwd"]), (&json!("bash"), &json!(dir.path().display().to_string())));
    assert_eq!(asked[5].1["terminalId"], "term-1");
    let done = |id: &str| updates(&frames).into_iter().find(|u| u["toolCallId"] == id && (u["status"] == "completed" || u["status"] == "failed")).unwrap_or_else(|| panic!("{id} ended")).clone();
    assert!(done("r1")["content"][0]["content"]["text"].as_str().unwrap().contains("unsaved buffer"));
    assert!(done("b1")["content"][0]["content"]["text"].as_str().unwrap().contains("hi"));
    // The disk was not touched: the editor owns the buffers.
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "on disk\n");
    assert!(!dir.path().join("out.txt").exists());
    // An error answer is the tool's error; the session goes on.
    let failed = done("r2");
    assert_eq!(failed["status"], "failed");
    assert!(failed["content"][0]["content"]["text"].as_str().unwrap().contains("the editor failed"), "{failed}");
}

/// Toad answers `fs/write_text_file` with `"result": null`. The result def is void (only
/// `_meta`), so `null` can only mean "written": the write and the edit complete. A result of the
/// wrong shape still fails the tool.
#[test]
fn a_null_answer_to_a_void_client_method_is_success_and_a_wrong_shape_is_not() {
    let (dir, config) = dirs();
    let script = [
        tool_call("w1", "write", json!({"path": "toad.txt", "content": "hello toad\n"})),
        tool_call("e1", "edit", json!({"path": "toad.txt", "oldText": "toad", "newText": "frog"})),
        tool_call("w2", "write", json!({"path": "bad.txt", "content": "never\n"})),
        json!({"text": "done"}),
    ];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &["--approval", "never"]);
    let session = with_client_tools(&mut acp, dir.path(), true, false);
    let id = acp.request("session/prompt", prompt("write", &session));
    let (asked, frames, response) = serve_client(&mut acp, &id, |method, params| match method {
        "fs/read_text_file" => Some(json!({"content": "hello toad\n"})),
        "fs/write_text_file" if params["path"].as_str().unwrap().ends_with("bad.txt") => Some(json!("written")),
        "fs/write_text_file" => Some(Value::Null),
        other => panic!("unexpected client request {other}"),
    });
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let methods: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["fs/write_text_file", "fs/read_text_file", "fs/write_text_file", "fs/write_text_file"]);
    let end = |id: &str| updates(&frames).into_iter().find(|u| u["toolCallId"] == id && (u["status"] == "completed" || u["status"] == "failed")).unwrap_or_else(|| panic!("{id} ended")).clone();
    assert_eq!(end("w1")["status"], "completed", "{:?}", end("w1"));
    assert_eq!(end("e1")["status"], "completed", "{:?}", end("e1"));
    let bad = end("w2");
    assert_eq!(bad["status"], "failed", "{bad}");
    assert!(bad["content"][0]["content"]["text"].as_str().unwrap().contains("does not fit the schema"), "{bad}");
}

#[test]
fn without_the_capabilities_the_tools_use_the_disk_and_cancel_kills_the_terminal() {
    let (dir, config) = dirs();
    let script = [
        json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "disk.txt", "content": "local\n"}}]}),
        json!({"text": "ok"}),
        json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "sleep 30"}}]}),
        json!({"text": "never"}),
    ];
    // fs not offered: write goes to the disk without asking the client.
    let mut acp = Acp::start(dir.path(), config.path(), &script, &["--approval", "never"]);
    let session = with_client_tools(&mut acp, dir.path(), false, true);
    let id = acp.request("session/prompt", prompt("write", &session));
    let (asked, _, response) = serve_client(&mut acp, &id, |m, _| panic!("unexpected client request {m}"));
    assert!(asked.is_empty());
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(dir.path().join("disk.txt")).unwrap(), "local\n");
    // terminal offered: cancel while the command runs kills the terminal, then releases it.
    let id = acp.request("session/prompt", prompt("sleep", &session));
    let wait = loop {
        let f = acp.next();
        match f["method"].as_str() {
            Some("terminal/create") => acp.answer(&f, json!({"terminalId": "t"})),
            Some("terminal/wait_for_exit") => break f,
            _ => {}
        }
    };
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (asked, _, response) = serve_client(&mut acp, &id, |method, _| match method {
        "terminal/kill" | "terminal/release" => Some(json!({})),
        "terminal/output" => Some(json!({"output": "", "truncated": false, "exitStatus": {"signal": "SIGKILL"}})),
        other => panic!("unexpected client request {other}"),
    });
    acp.answer(&wait, json!({"signal": "SIGKILL"}));
    let methods: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["terminal/kill", "terminal/output", "terminal/release"]);
    assert_eq!(response["result"]["stopReason"], "cancelled");
}

/// `--max-session-bytes` holds for ACP as for the other dialects: `session/list` skips a file
/// over the limit (it is never read whole), and `session/load` of it says it is too large.
#[test]
fn listing_and_loading_honour_max_session_bytes() {
    let (dir, config) = dirs();
    let session = {
        let mut acp = Acp::start(dir.path(), config.path(), &[json!({"text": "an answer long enough to make the file grow"})], &[]);
        let session = acp.init_and_new(dir.path());
        let r = acp.call("session/prompt", prompt("remember me", &session));
        assert_eq!(r["result"]["stopReason"], "end_turn");
        assert!(acp.close().success());
        session
    };
    let cwd = dir.path().display().to_string();
    let mut roomy = Acp::start(dir.path(), config.path(), &[], &[]);
    roomy.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let list = roomy.call("session/list", json!({"cwd": cwd}));
    assert_eq!(list["result"]["sessions"][0]["sessionId"], session.as_str(), "{list}");
    assert!(roomy.close().success());

    let mut tight = Acp::start(dir.path(), config.path(), &[], &["--max-session-bytes", "200"]);
    tight.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let list = tight.call("session/list", json!({"cwd": cwd}));
    assert_eq!(list["result"]["sessions"], json!([]), "{list}");
    let load = tight.call("session/load", json!({"sessionId": session, "cwd": cwd, "mcpServers": []}));
    let message = load["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("is more than the 200-byte session size limit"), "{load}");
}

#[test]
fn a_tool_call_runs_while_the_message_still_streams_the_next() {
    // Issue 25: c1 starts once the model moves on to c2, so its updates come before the
    // message's end (its usage_update); c2, completed by the end, runs after it.
    let (dir, config) = dirs();
    let c2: Vec<String> = r#"{"command": "echo two"}"#.chars().map(String::from).collect();
    let script = [
        json!({"delayMs": 60, "toolCalls": [{"id": "c1", "name": "ls", "arguments": {}}, {"id": "c2", "name": "bash", "arguments": {"command": "echo two"}, "argumentChunks": c2}]}),
        json!({"text": "listed"}),
    ];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &["--approval", "never"]);
    let session = acp.init_and_new(dir.path());
    let id = acp.request("session/prompt", prompt("list", &session));
    let (frames, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let ups = updates(&frames);
    let at = |what: &str, pred: &dyn Fn(&Value) -> bool| ups.iter().position(|u| pred(u)).unwrap_or_else(|| panic!("no {what} in {ups:?}"));
    let done = |call: &'static str| move |u: &Value| u["toolCallId"] == call && u["status"] == "completed";
    let c1_done = at("c1 completed", &done("c1"));
    let message_end = at("usage_update", &|u| u["sessionUpdate"] == "usage_update");
    let c2_done = at("c2 completed", &done("c2"));
    assert!(c1_done < message_end && message_end < c2_done, "{:?}", kinds(&frames));
}
