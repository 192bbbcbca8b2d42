//! ACP beyond the prompt, through the binary (issue 23, Done-when 1–6, 13 and 14): what
//! `initialize` advertises, `session/close`, `session/delete`, config options, authentication,
//! `$/cancel_request`, the order of a load's updates, resuming a session that was never
//! prompted, and the slash commands over ACP. Every frame is validated against the vendored
//! official schema by the harness.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::acp::*;
use common::fake_llm::{status, FakeLlm};
use serde_json::{json, Value};

fn cwd(dir: &Path) -> String {
    dir.display().to_string()
}

/// The config option `id` of a `configOptions` list.
fn option<'a>(options: &'a Value, id: &str) -> Option<&'a Value> {
    options.as_array()?.iter().find(|o| o["id"] == id)
}

fn current(options: &Value, id: &str) -> Value {
    option(options, id).map_or(Value::Null, |o| o["currentValue"].clone())
}

/// Session files under the config dir.
fn session_files(config: &Path) -> Vec<std::path::PathBuf> {
    let root = config.join("sessions");
    std::fs::read_dir(&root).into_iter().flatten().flatten().flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten()).map(|e| e.path()).collect()
}

#[test]
fn initialize_advertises_close_delete_list_resume_logout_and_auth_methods() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let caps = &init["result"]["agentCapabilities"];
    for capability in ["close", "delete", "list", "resume"] {
        assert!(caps["sessionCapabilities"][capability].is_object(), "{capability}: {init}");
    }
    assert!(caps["auth"]["logout"].is_object(), "{init}");
    let methods = init["result"]["authMethods"].as_array().unwrap();
    assert_eq!(methods.len(), 1, "{init}");
    assert_eq!((&methods[0]["id"], methods[0].get("type")), (&json!("provider-keys"), None), "an agent-type method: {init}");
    assert!(acp.close().success());

    // A client that can run a terminal also gets `agentwire login`.
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": true}}}));
    let methods = init["result"]["authMethods"].as_array().unwrap();
    assert_eq!((&methods[1]["type"], &methods[1]["id"], &methods[1]["args"]), (&json!("terminal"), &json!("agentwire-login"), &json!(["login"])), "{init}");
}

#[test]
fn config_options_select_the_model_the_thinking_level_and_the_mode() {
    let (dir, config) = dirs();
    let fake = FakeLlm::start(Vec::new()).unwrap();
    fake.write_models(config.path()).unwrap();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    let session = {
        acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
        let new = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": []}));
        let options = &new["result"]["configOptions"];
        let model = option(options, "model").unwrap_or_else(|| panic!("a model selector: {new}"));
        assert_eq!(model["category"], "model");
        let values: Vec<&str> = model["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap()).collect();
        assert!(values.len() >= 2 && values.contains(&"fake/fake-reasoner") && values.contains(&model["currentValue"].as_str().unwrap()), "{model}");
        assert_eq!(current(options, "mode"), "default");
        assert_eq!(option(options, "mode").unwrap()["category"], "mode");
        let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
        assert_eq!(acp.next()["params"]["update"]["sessionUpdate"], "available_commands_update");
        session
    };
    let set = |acp: &mut Acp, config_id: &str, value: &str| {
        let id = acp.request("session/set_config_option", json!({"sessionId": session, "configId": config_id, "value": value}));
        acp.until_response(&id)
    };

    // Another model: the answer has it current, and its thinking levels.
    let (_, r) = set(&mut acp, "model", "fake/fake-reasoner");
    let options = &r["result"]["configOptions"];
    assert_eq!(current(options, "model"), "fake/fake-reasoner", "{r}");
    assert_eq!(option(options, "thought_level").map(|o| o["category"].clone()), Some(json!("thought_level")), "{r}");
    let (_, r) = set(&mut acp, "thought_level", "high");
    assert_eq!(current(&r["result"]["configOptions"], "thought_level"), "high", "{r}");

    // The mode as a config option: `current_mode_update` keeps the modes in step.
    let (frames, r) = set(&mut acp, "mode", "auto");
    assert_eq!(current(&r["result"]["configOptions"], "mode"), "auto", "{r}");
    assert!(updates(&frames).iter().any(|u| u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "auto"), "{frames:?}");
    // ... and `session/set_mode` sends the updated config options.
    let id = acp.request("session/set_mode", json!({"sessionId": session, "modeId": "ask"}));
    let (frames, _) = acp.until_response(&id);
    let update = updates(&frames).into_iter().find(|u| u["sessionUpdate"] == "config_option_update").unwrap_or_else(|| panic!("{frames:?}"));
    assert_eq!(current(&update["configOptions"], "mode"), "ask");

    // A model switched by `/model` is pushed before the prompt's answer.
    let id = acp.request("session/prompt", prompt("/model fake/fake-model", &session));
    let (frames, r) = acp.until_response(&id);
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let update = updates(&frames).into_iter().find(|u| u["sessionUpdate"] == "config_option_update").unwrap_or_else(|| panic!("{frames:?}"));
    assert_eq!(current(&update["configOptions"], "model"), "fake/fake-model");
    assert!(option(&update["configOptions"], "thought_level").is_none(), "a model without reasoning has no levels: {update}");

    // Unknown options and values are -32602 naming the field.
    let (_, r) = set(&mut acp, "temperature", "hot");
    assert_eq!((&r["error"]["code"], &r["error"]["data"]["path"]), (&json!(-32602), &json!("/configId")), "{r}");
    let (_, r) = set(&mut acp, "model", "nobody/nothing");
    assert_eq!((&r["error"]["code"], &r["error"]["data"]["path"]), (&json!(-32602), &json!("/value")), "{r}");
}

#[test]
fn close_cancels_a_streaming_prompt_and_later_requests_fail() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[slow_reply()], &[]);
    let session = acp.init_and_new(dir.path());
    let prompt_id = acp.start_streaming(&session);
    let t = Instant::now();
    let close_id = acp.request("session/close", json!({"sessionId": session}));
    // The cancelled prompt is answered first, then the close.
    let (_, prompt_answer) = acp.until_response(&prompt_id);
    assert_eq!(prompt_answer["result"]["stopReason"], "cancelled", "{prompt_answer}");
    let close_answer = acp.next();
    assert_eq!((&close_answer["id"], &close_answer["result"]), (&close_id, &json!({})), "{close_answer}");
    assert!(t.elapsed() < Duration::from_secs(3), "took {:?}", t.elapsed());
    // The session is gone: an error that says so, not "method not found".
    let again = acp.call("session/prompt", prompt("still there?", &session));
    assert_eq!(again["error"]["code"], -32002, "{again}");
    assert!(again["error"]["message"].as_str().unwrap().contains("closed"), "{again}");
    let mode = acp.call("session/set_mode", json!({"sessionId": session, "modeId": "auto"}));
    assert_eq!(mode["error"]["code"], -32002, "{mode}");
    let twice = acp.call("session/close", json!({"sessionId": session}));
    assert_eq!(twice["error"]["code"], -32002, "{twice}");
}

#[test]
fn delete_removes_the_file_and_the_listing_and_load_fails() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[json!({"text": "kept"})], &[]);
    let session = acp.init_and_new(dir.path());
    assert_eq!(acp.call("session/prompt", prompt("hello", &session))["result"]["stopReason"], "end_turn");
    let other = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": []}))["result"]["sessionId"].clone();
    let listed = |acp: &mut Acp| -> Vec<Value> { acp.call("session/list", json!({}))["result"]["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].clone()).collect() };
    assert!(listed(&mut acp).contains(&json!(session)));
    assert_eq!(session_files(config.path()).len(), 2);

    let deleted = acp.call("session/delete", json!({"sessionId": session}));
    assert_eq!(deleted["result"], json!({}), "{deleted}");
    assert_eq!(listed(&mut acp), std::slice::from_ref(&other), "only the other session is left");
    assert_eq!(session_files(config.path()).len(), 1);
    let prompt_after = acp.call("session/prompt", prompt("hello?", &session));
    assert_eq!(prompt_after["error"]["code"], -32002, "{prompt_after}");
    // A session that never existed is deleted silently (the spec asks for success), and so is
    // one deleted already.
    let unknown = acp.call("session/delete", json!({"sessionId": "no-such-session"}));
    assert_eq!(unknown["result"], json!({}), "{unknown}");
    let again = acp.call("session/delete", json!({"sessionId": session}));
    assert_eq!(again["result"], json!({}), "{again}");
    assert!(acp.close().success());

    // Another process cannot load it either; the other session it can.
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let load = acp.call("session/load", json!({"sessionId": session, "cwd": cwd(dir.path()), "mcpServers": []}));
    assert_eq!(load["error"]["code"], -32002, "{load}");
    // A session not loaded in this process is deleted from its file.
    assert_eq!(acp.call("session/delete", json!({"sessionId": other}))["result"], json!({}));
    assert!(session_files(config.path()).is_empty());
}

#[test]
fn authenticate_reports_missing_keys_and_logout_forgets_the_stored_ones() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": true}}}));
    let r = acp.call("authenticate", json!({"methodId": "provider-keys"}));
    assert_eq!(r["error"]["code"], -32000, "no key anywhere: auth required: {r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("agentwire login"), "{r}");
    let r = acp.call("authenticate", json!({"methodId": "password"}));
    assert_eq!((&r["error"]["code"], &r["error"]["data"]["path"]), (&json!(-32602), &json!("/methodId")), "{r}");

    // `agentwire login` (the terminal method) stores a key only its owner can read.
    let mut login = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .arg("--config-dir")
        .arg(config.path())
        .args(["login", "openai"])
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(login.stdin.as_mut().unwrap(), b"sk-stored-0123456789\n").unwrap();
    let out = login.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("sk-stored"), "the key is not echoed");
    let store = config.path().join("auth.json");
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&store).unwrap().permissions()) & 0o777, 0o600);

    for method in ["provider-keys", "agentwire-login"] {
        let r = acp.call("authenticate", json!({"methodId": method}));
        assert_eq!(r["result"], json!({}), "{method}: {r}");
    }
    // New sessions use the stored key: the provider's models are offered.
    let new = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": []}));
    let models = option(&new["result"]["configOptions"], "model").unwrap()["options"].to_string();
    assert!(models.contains("openai/gpt-4.1"), "{models}");
    assert!(!acp.call("session/list", json!({})).to_string().contains("sk-stored"));

    let r = acp.call("logout", json!({}));
    assert_eq!(r["result"], json!({}), "{r}");
    assert!(!store.exists(), "logout forgets the stored keys");
    let r = acp.call("authenticate", json!({"methodId": "provider-keys"}));
    assert_eq!(r["error"]["code"], -32000, "{r}");
}

#[test]
fn a_prompt_the_provider_refuses_for_its_key_fails_with_auth_required() {
    let (dir, config) = dirs();
    let fake = FakeLlm::start(vec![status(401, &[], "Incorrect API key provided: sk-fake-secret-123.")]).unwrap();
    fake.write_models(config.path()).unwrap();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &["--provider", "fake", "--model", "fake-model"]);
    let session = acp.init_and_new(dir.path());
    let r = acp.call("session/prompt", prompt("hi", &session));
    assert_eq!(r["error"]["code"], -32000, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Authentication required") && !message.contains("sk-fake-secret-123"), "{message}");
}

#[test]
fn cancel_request_cancels_a_prompt_and_unknown_ids_are_ignored() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[slow_reply(), json!({"text": "next"})], &[]);
    let session = acp.init_and_new(dir.path());
    acp.notify("$/cancel_request", json!({"requestId": 999_999}));
    let id = acp.start_streaming(&session);
    acp.notify("$/cancel_request", json!({"requestId": id}));
    let (_, response) = acp.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    assert_eq!(acp.call("session/prompt", prompt("again", &session))["result"]["stopReason"], "end_turn");
}

#[test]
fn a_never_prompted_session_resumes_in_a_new_process_with_its_mode() {
    let (dir, config) = dirs();
    let session = {
        let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
        let session = acp.init_and_new(dir.path());
        assert_eq!(acp.call("session/set_mode", json!({"sessionId": session, "modeId": "auto"}))["result"], json!({}));
        assert!(acp.close().success());
        session
    };
    for (method, history) in [("session/resume", &[][..]), ("session/load", &["user_message_chunk", "agent_message_chunk"][..])] {
        let mut acp = Acp::start(dir.path(), config.path(), &[json!({"text": "resumed"})], &[]);
        acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
        let id = acp.request(method, json!({"sessionId": session, "cwd": cwd(dir.path()), "mcpServers": []}));
        let (frames, r) = acp.until_response(&id);
        assert_eq!(r["result"]["modes"]["currentModeId"], "auto", "{method}: {r}");
        assert_eq!(current(&r["result"]["configOptions"], "mode"), "auto", "{method}: {r}");
        // Every update for the session comes before the answer, and nothing after it.
        let expected: Vec<&str> = std::iter::once("available_commands_update").chain(history.iter().copied()).collect();
        assert_eq!(kinds(&frames), expected, "{method}");
        acp.no_frame_within(Duration::from_millis(500));
        assert_eq!(acp.call("session/prompt", prompt("hi", &session))["result"]["stopReason"], "end_turn");
    }
}

#[test]
fn every_advertised_slash_command_shows_its_result() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let session = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": []}))["result"]["sessionId"].as_str().unwrap().to_owned();
    let commands = acp.next()["params"]["update"]["availableCommands"].as_array().unwrap().clone();
    let names: Vec<&str> = commands.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["model", "name", "todos", "status", "recall", "help"], "commands that need a dialog are not offered");
    for c in &commands {
        let description = c["description"].as_str().unwrap().to_lowercase();
        assert!(!["dialog", "widget", "status bar", "editor"].iter().any(|w| description.contains(w)), "{c}");
        let takes_text = ["model", "name"].contains(&c["name"].as_str().unwrap());
        assert_eq!(c["input"]["hint"].is_string(), takes_text, "{c}");
    }
    for c in commands.iter().filter(|c| c.get("input").is_none()) {
        let name = c["name"].as_str().unwrap();
        let id = acp.request("session/prompt", prompt(&format!("/{name}"), &session));
        let (frames, r) = acp.until_response(&id);
        assert_eq!(r["result"]["stopReason"], "end_turn", "/{name}: {r}");
        let text: String = updates(&frames).iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").map(|u| u["content"]["text"].as_str().unwrap()).collect();
        assert!(!text.trim().is_empty(), "/{name} shows something: {frames:?}");
        assert!(!text.contains("arguments"), "/{name}: {text}");
    }
    let shown = |frames: &[Value]| -> String { updates(frames).iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").map(|u| u["content"]["text"].as_str().unwrap()).collect() };
    let id = acp.request("session/prompt", prompt("/name Release notes", &session));
    let (frames, _) = acp.until_response(&id);
    assert!(updates(&frames).iter().any(|u| u["sessionUpdate"] == "session_info_update" && u["title"] == "Release notes"), "{frames:?}");
    // Also said as text, for a client that ignores `session_info_update`.
    assert!(shown(&frames).contains("Session named: Release notes"), "{frames:?}");
    // Commands that need a dialog, typed by hand, say what to do instead: only those that take
    // input are told to take it after their name.
    for (typed, advice) in [("/compose", "send the prompt itself"), ("/new", "start a new session from the client"), ("/model", "/model <provider/id>")] {
        let id = acp.request("session/prompt", prompt(typed, &session));
        let (frames, r) = acp.until_response(&id);
        assert_eq!(r["result"]["stopReason"], "end_turn", "{typed}: {r}");
        let text = shown(&frames);
        assert!(text.contains("ACP clients show no dialogs") && text.contains(advice), "{typed}: {text}");
        assert_eq!(text.contains("after its name"), typed == "/model", "{typed}: {text}");
    }
    assert!(acp.close().success());
    // The title is part of the session: a new process resuming it says so before answering.
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let id = acp.request("session/resume", json!({"sessionId": session, "cwd": cwd(dir.path())}));
    let (frames, _) = acp.until_response(&id);
    assert_eq!(kinds(&frames), ["available_commands_update", "session_info_update"]);
    assert_eq!(updates(&frames)[1]["title"], "Release notes");
}

#[test]
fn images_reach_a_model_that_takes_them_and_are_refused_otherwise() {
    let (dir, config) = dirs();
    let fake = FakeLlm::start(vec![common::fake_llm::openai_text(&["I see a dot"])]).unwrap();
    let mut models = fake.models_file();
    models["providers"]["fake"]["models"][0]["input"] = json!(["text", "image"]);
    std::fs::write(config.path().join("models.json"), models.to_string()).unwrap();
    let image = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
    let with_image = |session: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": "what is this?"}, image]});

    // The offline model takes text only and the fake one takes images: both selectable, so
    // images are advertised; while the offline model is current an image is refused naming it.
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    assert_eq!(init["result"]["agentCapabilities"]["promptCapabilities"]["image"], true, "{init}");
    let session = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": []}))["result"]["sessionId"].as_str().unwrap().to_owned();
    let r = acp.call("session/prompt", with_image(&session));
    assert_eq!((&r["error"]["code"], &r["error"]["data"]["path"]), (&json!(-32602), &json!("/prompt/1")), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("model agentwire/offline does not take images"), "{r}");
    assert!(acp.close().success());

    // A model that takes images: advertised, and the image is in the provider request.
    let mut acp = Acp::start(dir.path(), config.path(), &[], &["--provider", "fake", "--model", "fake-model"]);
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    assert_eq!(init["result"]["agentCapabilities"]["promptCapabilities"]["image"], true, "{init}");
    let session = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": []}))["result"]["sessionId"].as_str().unwrap().to_owned();
    let r = acp.call("session/prompt", with_image(&session));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let sent = fake.requests().last().cloned().unwrap_or_default().to_string();
    assert!(sent.contains("data:image/png;base64,iVBORw0KGgo="), "{sent}");
}

/// `promptCapabilities.image` follows the models the client can select: none that takes images
/// (the offline model alone) → false; a built-in provider's key in the environment makes its
/// models selectable, and they take images → true, while an image prompt to the offline model,
/// still current, is -32602 naming it.
#[test]
fn the_image_capability_follows_the_selectable_models() {
    let (dir, config) = dirs();
    let image = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    assert_eq!(init["result"]["agentCapabilities"]["promptCapabilities"]["image"], false, "{init}");
    assert!(acp.close().success());

    let mut acp = Acp::start_with_env(dir.path(), config.path(), &[], &[], &[("ANTHROPIC_API_KEY", "dummy")]);
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    assert_eq!(init["result"]["agentCapabilities"]["promptCapabilities"]["image"], true, "{init}");
    let new = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": []}));
    let models = option(&new["result"]["configOptions"], "model").unwrap();
    assert!(models["options"].to_string().contains("anthropic/"), "{models}");
    let offline = models["currentValue"].as_str().unwrap().to_owned();
    assert_eq!(offline, "agentwire/offline", "the offline model is still current");
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    let r = acp.call("session/prompt", json!({"sessionId": session, "prompt": [image]}));
    assert_eq!((&r["error"]["code"], &r["error"]["data"]["path"]), (&json!(-32602), &json!("/prompt/0")), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains(&format!("model {offline} does not take images")), "{r}");
}

#[test]
fn additional_directories_widen_the_path_policy() {
    let (dir, config) = dirs();
    let (extra, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(extra.path().join("note.txt"), "in the extra root\n").unwrap();
    std::fs::write(elsewhere.path().join("note.txt"), "elsewhere\n").unwrap();
    let read = |d: &Path, id: &str| json!({"toolCalls": [{"id": id, "name": "read", "arguments": {"path": d.join("note.txt").display().to_string()}}]});
    let script = [read(extra.path(), "in"), json!({"text": "read it"}), read(elsewhere.path(), "out"), json!({"text": "asked"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
    let init = acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    assert!(init["result"]["agentCapabilities"]["sessionCapabilities"]["additionalDirectories"].is_object(), "{init}");
    let bad = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": [], "additionalDirectories": ["relative/dir"]}));
    assert_eq!((&bad["error"]["code"], &bad["error"]["data"]["path"]), (&json!(-32602), &json!("/additionalDirectories/0")), "{bad}");
    let new = acp.call("session/new", json!({"cwd": cwd(dir.path()), "mcpServers": [], "additionalDirectories": [cwd(extra.path())]}));
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();

    // Inside the extra root: read without a question, like the working directory.
    let id = acp.request("session/prompt", prompt("read the note", &session));
    let (frames, r) = acp.until_response(&id);
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert!(frames.iter().all(|f| f["method"] != "session/request_permission"), "{frames:?}");
    assert!(updates(&frames).iter().any(|u| u["toolCallId"] == "in" && u["status"] == "completed"), "{frames:?}");

    // Anywhere else: the question, as before.
    let id = acp.request("session/prompt", prompt("read the other", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}));
    let (_, r) = acp.until_response(&id);
    assert_eq!(r["result"]["stopReason"], "end_turn");
}

#[test]
fn cancel_request_answers_another_request_in_flight_with_32800() {
    let (dir, config) = dirs();
    // A command that ignores SIGTERM holds `session/close` for the kill grace (2 s).
    let script = [json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "trap '' TERM; echo started; sleep 20"}}]}), json!({"text": "never"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &["--approval", "never"]);
    let session = acp.init_and_new(dir.path());
    let prompt_id = acp.request("session/prompt", prompt("run it", &session));
    loop {
        let f = acp.next();
        if f["params"]["update"]["toolCallId"] == "b1" && f["params"]["update"]["status"] == "in_progress" {
            break;
        }
    }
    let close_id = acp.request("session/close", json!({"sessionId": session}));
    let t = Instant::now();
    acp.notify("$/cancel_request", json!({"requestId": close_id}));
    let (_, closed) = acp.until_response(&close_id);
    assert_eq!(closed["error"]["code"], -32800, "{closed}");
    assert!(t.elapsed() < Duration::from_secs(1), "answered at once, not after the grace: {:?}", t.elapsed());
    let (_, prompt) = acp.until_response(&prompt_id);
    assert_eq!(prompt["result"]["stopReason"], "cancelled", "{prompt}");
}
