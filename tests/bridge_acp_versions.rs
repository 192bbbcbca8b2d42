//! `agentwire bridge --serve acp` between ACP versions: a v2 host in front of a v1 agent and a
//! v1 host in front of a v2 agent (`--agent-acp-version`), each through the v2 front or remote
//! agent, with every frame the bridge writes validated against the host's version's schema;
//! and a v2 host in front of a v2 agent proxied unchanged.

mod common;

use agentwire::protocol::acp::acp_validator;
use agentwire::protocol::acp_v2::acp_v2_validator;
use common::bridge::Bridge;
use serde_json::{json, Value};

fn init_v2(bridge: &mut Bridge) -> Value {
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}}));
    bridge.until(|f| f["id"] == 0).pop().unwrap()
}

fn new_session(bridge: &mut Bridge) -> String {
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let answer = bridge.until(|f| f["id"] == 1).pop().unwrap();
    answer["result"]["sessionId"].as_str().expect("a session id").to_owned()
}

/// Host EOF: the bridge and its agent end, exit 0.
fn finish(bridge: &mut Bridge) {
    drop(bridge.stdin.take());
    let status = bridge.exit_within(std::time::Instant::now(), std::time::Duration::from_secs(10), "the bridge at host EOF");
    assert!(status.success(), "{status}");
}

fn is_idle(f: &Value) -> bool {
    f["params"]["update"]["sessionUpdate"] == "state_update" && f["params"]["update"]["state"] == "idle"
}

fn text_of(frames: &[Value]) -> String {
    frames.iter().filter(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk").map(|f| f["params"]["update"]["content"]["text"].as_str().unwrap_or_default()).collect()
}

#[test]
fn a_v2_host_in_front_of_a_v1_agent() {
    let script = [json!({"text": "hello from a v1 agent", "chunkSize": 4}), json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "w.txt", "content": "x\n"}}]}), json!({"text": "done"})];
    let mut bridge = Bridge::start_acp_versions(acp_v2_validator(), "acp", &script, &["--agent-acp-version", "1"]);
    let init = init_v2(&mut bridge);
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let session = new_session(&mut bridge);
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
    let frames = bridge.until(is_idle);
    assert!(frames.iter().any(|f| f["id"] == 2 && f["result"]["messageId"].is_string()), "{frames:#?}");
    assert_eq!(text_of(&frames), "hello from a v1 agent");
    assert_eq!(frames.last().unwrap()["params"]["update"]["stopReason"], "end_turn");
    // The v1 agent's permission request reaches the v2 host as v2's.
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "write"}]}}));
    let asked = bridge.until(|f| f["method"] == "session/request_permission");
    let ask = asked.last().unwrap().clone();
    assert_eq!(ask["params"]["subject"]["toolCall"]["toolCallId"], "w1", "{ask}");
    // The v1 agent's diff (path, new text) reaches the v2 host as a patch.
    let diff = ask["params"]["subject"]["toolCall"]["content"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "diff")).unwrap_or_else(|| panic!("a diff: {ask}"));
    assert!(diff["patch"]["text"].as_str().unwrap().contains("+x"), "{diff}");
    assert!(diff["changes"][0]["path"].as_str().unwrap().ends_with("w.txt"), "{diff}");
    bridge.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}));
    let frames = bridge.until(is_idle);
    assert!(frames.iter().any(|f| f["params"]["update"]["toolCallId"] == "w1" && f["params"]["update"]["status"] == "completed"), "{frames:#?}");
    assert_eq!(std::fs::read_to_string(bridge.dir.path().join("w.txt")).unwrap(), "x\n");
    finish(&mut bridge);
}

#[test]
fn a_v1_host_in_front_of_a_v2_agent() {
    let script = [json!({"text": "hello from a v2 agent", "chunkSize": 4}), json!({"text": "a slow one streamed two at a time for a while", "chunkSize": 2, "delayMs": 40})];
    let mut bridge = Bridge::start_acp_versions(acp_validator(), "acp", &script, &["--agent-acp-version", "2"]);
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    let init = bridge.until(|f| f["id"] == 0).pop().unwrap();
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let answer = bridge.until(|f| f["id"] == 1).pop().unwrap();
    let session = answer["result"]["sessionId"].as_str().expect("a session id").to_owned();
    // The v2 agent's thinking levels are the v1 host's `thought_level` option.
    let thought = |options: &Value| options.as_array().and_then(|o| o.iter().find(|o| o["id"] == "thought_level").cloned());
    assert_eq!(thought(&answer["result"]["configOptions"]).unwrap_or_else(|| panic!("{answer}"))["currentValue"], "off");
    bridge.send(json!({"jsonrpc": "2.0", "id": 9, "method": "session/set_config_option", "params": {"sessionId": session, "configId": "thought_level", "value": "high"}}));
    let set = bridge.until(|f| f["id"] == 9).pop().unwrap();
    assert_eq!(thought(&set["result"]["configOptions"]).unwrap_or_else(|| panic!("{set}"))["currentValue"], "high", "{set}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
    let frames = bridge.until(|f| f["id"] == 2);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn", "{frames:#?}");
    assert_eq!(text_of(&frames), "hello from a v2 agent");
    // Cancel reaches the v2 agent; its idle `cancelled` ends the v1 prompt `cancelled`.
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "slow"}]}}));
    bridge.until(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    let started = std::time::Instant::now();
    bridge.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
    let frames = bridge.until(|f| f["id"] == 3);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "cancelled", "{frames:#?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    finish(&mut bridge);
}

#[test]
fn a_v2_host_in_front_of_a_v2_agent_is_proxied() {
    let script = [json!({"text": "unchanged", "chunkSize": 3})];
    let mut bridge = Bridge::start_acp_versions(acp_v2_validator(), "acp", &script, &[]);
    let init = init_v2(&mut bridge);
    // The agent's own answer passes through: its name, not the bridge's.
    assert_eq!(init["result"]["info"]["name"], "agentwire", "{init}");
    let session = new_session(&mut bridge);
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
    let frames = bridge.until(is_idle);
    assert_eq!(text_of(&frames), "unchanged");
    finish(&mut bridge);
}

#[test]
fn a_v2_host_in_front_of_an_rpc_agent() {
    let script = [json!({"text": "hello from an rpc agent", "chunkSize": 4})];
    let mut bridge = Bridge::start_acp_versions(acp_v2_validator(), "rpc", &script, &[]);
    let init = init_v2(&mut bridge);
    assert_eq!((init["result"]["protocolVersion"].as_u64(), init["result"]["info"]["name"].as_str()), (Some(2), Some("agentwire-bridge")), "{init}");
    let session = new_session(&mut bridge);
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
    let frames = bridge.until(is_idle);
    assert_eq!(text_of(&frames), "hello from an rpc agent");
    finish(&mut bridge);
}

/// The ids of `options` (v2 names them `configId`, v1 `id`).
fn option_ids(options: &Value) -> Vec<String> {
    options.as_array().map(|o| o.iter().filter_map(|o| o["configId"].as_str().or(o["id"].as_str()).map(str::to_owned)).collect()).unwrap_or_default()
}

#[test]
fn a_v2_host_sees_a_v1_agents_own_config_options_and_changes_them() {
    let mut bridge = Bridge::start_acp_versions(acp_v2_validator(), "acp", &[json!({"text": "x"})], &["--agent-acp-version", "1"]);
    init_v2(&mut bridge);
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let answer = bridge.until(|f| f["id"] == 1).pop().unwrap();
    let options = &answer["result"]["configOptions"];
    for id in ["model", "mode", "thought_level"] {
        assert!(option_ids(options).contains(&id.to_owned()), "the agent's {id} option: {answer}");
    }
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let mode = options.as_array().unwrap().iter().find(|o| o["configId"] == "mode").unwrap();
    let other = mode["options"].as_array().unwrap().iter().map(|v| v["value"].as_str().unwrap()).find(|v| *v != mode["currentValue"]).unwrap().to_owned();
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/set_config_option", "params": {"sessionId": session, "configId": "mode", "type": "select", "value": other}}));
    let set = bridge.until(|f| f["id"] == 2).pop().unwrap();
    let now = set["result"]["configOptions"].as_array().unwrap_or_else(|| panic!("{set}")).iter().find(|o| o["configId"] == "mode").unwrap().clone();
    assert_eq!(now["currentValue"], other.as_str(), "the agent reports the change: {set}");
    finish(&mut bridge);
}

#[test]
fn a_v1_host_sees_a_v2_agents_own_config_options() {
    let mut bridge = Bridge::start_acp_versions(acp_validator(), "acp", &[json!({"text": "x"})], &["--agent-acp-version", "2"]);
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    bridge.until(|f| f["id"] == 0);
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let answer = bridge.until(|f| f["id"] == 1).pop().unwrap();
    for id in ["model", "mode", "thought_level"] {
        assert!(option_ids(&answer["result"]["configOptions"]).contains(&id.to_owned()), "the agent's {id} option: {answer}");
    }
    finish(&mut bridge);
}

#[test]
fn a_v2_host_in_front_of_an_rpc_agent_is_offered_no_mcp_and_told_after_the_session_exists() {
    let mut bridge = Bridge::start_acp_versions(acp_v2_validator(), "rpc", &[json!({"text": "x"})], &[]);
    let init = init_v2(&mut bridge);
    assert!(init["result"]["capabilities"]["session"].get("mcp").is_none(), "no MCP: the agent takes no servers: {init}");
    // A host that sends servers anyway hears they did not start, once it knows the session.
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": [{"type": "stdio", "name": "files", "command": "true", "args": [], "env": []}]}}));
    let frames = bridge.until(|f| f["params"]["update"]["sessionUpdate"] == "notice");
    let answered = frames.iter().position(|f| f["id"] == 1).unwrap_or_else(|| panic!("the session/new answer comes before the notice: {frames:#?}"));
    assert!(answered < frames.len() - 1);
    finish(&mut bridge);
}

/// The agent's own answer to `initialize` as the agent itself gives it (what the bridge must
/// pass on): agentwire's provider-keys method, no terminal one (the bridge offers no terminal).
fn is_provider_keys(method: &Value) -> bool {
    method["methodId"] == "provider-keys" || method["id"] == "provider-keys"
}

/// A v2 host in front of agentwire's own v1 ACP agent sees the agent's auth method, and
/// `auth/login` reaches the agent: its answer comes back, and so do its errors, code, message
/// and data as it gave them (with no provider key it answers -32000; an unknown method -32602
/// naming `/methodId`).
#[test]
fn a_v2_host_sees_a_v1_agents_auth_methods_and_its_login_reaches_the_agent() {
    let mut bridge = Bridge::start_acp_versions(acp_v2_validator(), "acp", &[json!({"text": "x"})], &["--agent-acp-version", "1"]);
    let init = init_v2(&mut bridge);
    let methods = init["result"]["authMethods"].as_array().cloned().unwrap_or_default();
    assert_eq!(methods.len(), 1, "the agent's one method: {init}");
    assert!(is_provider_keys(&methods[0]) && methods[0]["type"] == "agent", "{init}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "auth/login", "params": {"methodId": "provider-keys"}}));
    let login = bridge.until(|f| f["id"] == 1).pop().unwrap();
    assert_eq!(login["error"]["code"], -32000, "the agent's own answer: no key: {login}");
    assert!(login["error"]["message"].as_str().unwrap_or_default().contains("no provider has an API key"), "{login}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "auth/login", "params": {"methodId": "nope"}}));
    let unknown = bridge.until(|f| f["id"] == 2).pop().unwrap();
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap_or_default().contains("provider-keys"), "the agent's message: {unknown}");
    assert!(unknown["error"]["data"].to_string().contains("/methodId"), "the agent's data: {unknown}");
    // The v1 agent offers `logout`: v2's `auth/logout` reaches it.
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "auth/logout", "params": {}}));
    let logout = bridge.until(|f| f["id"] == 3).pop().unwrap();
    assert!(logout["result"].is_object(), "{logout}");
    finish(&mut bridge);
}

/// With a provider key the agent's own `authenticate` succeeds, and that answer comes back.
#[test]
fn a_v2_host_logs_in_to_a_v1_agent_that_has_a_key() {
    let env = [("OPENAI_API_KEY", std::ffi::OsString::from("sk-bridge-test"))];
    let mut bridge = Bridge::start_acp_versions_with(acp_v2_validator(), "acp", &[json!({"text": "x"})], &["--agent-acp-version", "1"], &env);
    init_v2(&mut bridge);
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "auth/login", "params": {"methodId": "provider-keys"}}));
    let login = bridge.until(|f| f["id"] == 1).pop().unwrap();
    assert!(login["result"].is_object(), "{login}");
    finish(&mut bridge);
}

/// A v1 host in front of agentwire's own v2 agent (`--agent-acp-version 2`): the agent's method
/// in v1's shape, `authenticate` sent on as v2's `auth/login`, `logout` offered and sent on.
#[test]
fn a_v1_host_sees_a_v2_agents_auth_methods_and_its_authenticate_reaches_the_agent() {
    let mut bridge = Bridge::start_acp_versions(acp_validator(), "acp", &[json!({"text": "x"})], &["--agent-acp-version", "2"]);
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    let init = bridge.until(|f| f["id"] == 0).pop().unwrap();
    let methods = init["result"]["authMethods"].as_array().cloned().unwrap_or_default();
    assert!(methods.len() == 1 && is_provider_keys(&methods[0]), "{init}");
    assert!(init["result"]["agentCapabilities"]["auth"]["logout"].is_object(), "{init}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "authenticate", "params": {"methodId": "provider-keys"}}));
    let login = bridge.until(|f| f["id"] == 1).pop().unwrap();
    assert_eq!(login["error"]["code"], -32000, "the agent's own answer: no key: {login}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "logout", "params": {}}));
    let logout = bridge.until(|f| f["id"] == 2).pop().unwrap();
    assert!(logout["result"].is_object(), "{logout}");
    finish(&mut bridge);
}

/// An rpc agent has no auth methods a host could name: none are advertised, and `auth/login`
/// is refused as before.
#[test]
fn a_v2_host_in_front_of_an_rpc_agent_sees_no_auth_methods() {
    let mut bridge = Bridge::start_acp_versions(acp_v2_validator(), "rpc", &[json!({"text": "x"})], &[]);
    let init = init_v2(&mut bridge);
    assert_eq!(init["result"]["authMethods"].as_array().map_or(0, Vec::len), 0, "{init}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "auth/login", "params": {"methodId": "provider-keys"}}));
    let login = bridge.until(|f| f["id"] == 1).pop().unwrap();
    assert_eq!(login["error"]["code"], -32601, "{login}");
    finish(&mut bridge);
}

/// `tests/fixtures/extension_acp_agent.py`: a v1 agent that switches its model on its own and
/// sends `_auth/status_update` extension notifications.
fn extension_agent() -> Vec<std::ffi::OsString> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/extension_acp_agent.py");
    vec!["python3".into(), script.into()]
}

fn is_config_update(f: &Value) -> bool {
    f["params"]["update"]["sessionUpdate"] == "config_option_update"
}

fn current_model(update: &Value) -> Option<&str> {
    update["params"]["update"]["configOptions"].as_array()?.iter().find(|o| o["configId"] == "model" || o["id"] == "model")?["currentValue"].as_str()
}

/// The agent switches its model on its own, during a prompt and with none running: a v2 host
/// in front of it (translated) hears each switch as v2's `config_option_update`, in order. Its
/// `_auth/status_update` extension has no v2 counterpart here and is dropped.
#[test]
fn a_v2_host_hears_of_a_v1_agents_own_config_changes() {
    let mut bridge = Bridge::spawn_checked("acp", &[], &extension_agent(), &[], tempfile::tempdir().unwrap(), acp_v2_validator());
    init_v2(&mut bridge);
    let session = new_session(&mut bridge);
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
    let during = bridge.until(is_config_update);
    assert_eq!(current_model(during.last().unwrap()), Some("beta"), "{during:#?}");
    let mut frames = bridge.until(is_idle);
    frames.extend(bridge.until(is_config_update));
    let after = frames.last().unwrap();
    assert_eq!(current_model(after), Some("alpha"), "the switch back, after the turn: {frames:#?}");
    assert_eq!(after["params"]["sessionId"], session.as_str(), "{after}");
    assert!(frames.iter().chain(&during).all(|f| f["method"] != "_auth/status_update"), "{frames:#?}");
    finish(&mut bridge);
}

/// A v1 host in front of the same v1 agent is proxied: the agent's `_auth/status_update`
/// extension notifications reach the host unchanged, and the bridge does not report them as
/// frames that do not fit the schema (ACP allows `_` methods).
#[test]
fn a_proxied_agents_extension_notifications_pass_unremarked() {
    use std::io::{BufRead, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["bridge", "--serve", "acp", "--"])
        .args(extension_agent())
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut read_until = |done: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the bridge's output ended: {seen:#?}");
            let frame: Value = serde_json::from_str(&line).unwrap();
            let end = done(&frame);
            seen.push(frame);
            if end {
                return seen;
            }
        }
    };
    let cwd = dir.path().display().to_string();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})).unwrap();
    let status = read_until(&|f| f["method"] == "_auth/status_update");
    assert_eq!(status.last().unwrap()["params"], json!({"status": "signed_in"}), "unchanged: {status:#?}");
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})).unwrap();
    read_until(&|f| f["id"] == 1);
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}})).unwrap();
    let frames = read_until(&|f| f["id"] == 2);
    assert!(frames.iter().any(|f| f["method"] == "_auth/status_update" && f["params"]["status"] == "refreshed"), "{frames:#?}");
    drop(stdin);
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(!stderr.contains("does not fit"), "the extension notifications were reported: {stderr}");
}

/// An agent that wants authentication before any session (codex-acp without a key answers
/// `session/new` -32000): a v2 host in front of it (translated) is served, sees its method,
/// logs in through the bridge, and then gets a session with the agent's own options.
#[test]
fn a_v2_host_logs_in_to_an_agent_that_wants_it_before_a_session() {
    let mut agent = extension_agent();
    agent.push("--auth".into());
    let mut bridge = Bridge::spawn_checked("acp", &[], &agent, &[], tempfile::tempdir().unwrap(), acp_v2_validator());
    let init = init_v2(&mut bridge);
    assert_eq!(init["result"]["authMethods"][0]["methodId"], "fixture-login", "{init}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "auth/login", "params": {"methodId": "fixture-login"}}));
    let login = bridge.until(|f| f["id"] == 1).pop().unwrap();
    assert!(login["result"].is_object(), "{login}");
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let answer = bridge.until(|f| f["id"] == 2).pop().unwrap();
    assert!(option_ids(&answer["result"]["configOptions"]).contains(&"model".to_owned()), "the agent's own options: {answer}");
    finish(&mut bridge);
}

/// The same agent in v2, a v1 host in front of it (`--agent-acp-version 2`): each switch the
/// agent makes on its own reaches the host once, as v1's `config_option_update`.
#[test]
fn a_v1_host_hears_of_a_v2_agents_own_config_changes_once_each() {
    let mut agent = extension_agent();
    agent.push("--v2".into());
    let mut bridge = Bridge::spawn_checked("acp", &["--agent-acp-version", "2"], &agent, &[], tempfile::tempdir().unwrap(), acp_validator());
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    bridge.until(|f| f["id"] == 0);
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let session = bridge.until(|f| f["id"] == 1).pop().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
    let mut frames = bridge.until(|f| f["id"] == 2);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn", "{frames:#?}");
    frames.extend(bridge.until(|f| is_config_update(f) && current_model(f) == Some("alpha")));
    let switches: Vec<Option<&str>> = frames.iter().filter(|f| is_config_update(f)).map(current_model).collect();
    assert_eq!(switches, [Some("beta"), Some("alpha")], "{frames:#?}");
    finish(&mut bridge);
}
