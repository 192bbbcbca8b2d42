//! ACP v2 through the binary, with raw frames: every frame agentwire writes is validated
//! against the vendored v2 schema (`schema/acp/v2/schema.json`) by the harness — message shape,
//! params, and each result against the method it answers. Version routing: `initialize` with 2
//! (or later) gets v2, and a connection asking for 1 keeps v1.

mod common;

use common::acp::*;
use serde_json::{json, Value};

fn init_v2(acp: &mut Acp, version: u64) -> Value {
    acp.call("initialize", json!({"protocolVersion": version, "info": {"name": "test", "version": "1"}, "capabilities": {}}))
}

fn new_session(acp: &mut Acp, cwd: &std::path::Path) -> String {
    let new = acp.call("session/new", json!({"cwd": cwd.display().to_string(), "mcpServers": []}));
    new["result"]["sessionId"].as_str().expect("a session id").to_owned()
}

/// Frames up to and including the idle `state_update`; returns them and its stop reason.
fn until_idle(acp: &mut Acp) -> (Vec<Value>, String) {
    let mut frames = Vec::new();
    loop {
        let f = acp.next();
        let update = &f["params"]["update"];
        let idle = update["sessionUpdate"] == "state_update" && update["state"] == "idle";
        let reason = update["stopReason"].as_str().unwrap_or_default().to_owned();
        frames.push(f);
        if idle {
            return (frames, reason);
        }
    }
}

#[test]
fn version_two_is_answered_two_and_a_later_version_too() {
    let (dir, config) = dirs();
    for asked in [2, 3] {
        let mut acp = Acp::start(dir.path(), config.path(), &[], &[]).v2();
        let init = init_v2(&mut acp, asked);
        assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
        assert!(init["result"]["capabilities"]["session"]["delete"].is_object(), "{init}");
        assert!(init["result"]["capabilities"]["session"]["prompt"]["image"].is_null(), "the offline model takes no images: {init}");
        assert!(acp.close().success());
    }
}

#[test]
fn a_prompt_is_acknowledged_then_reported_by_state_updates_with_message_ids() {
    let (dir, config) = dirs();
    let script = [json!({"thinking": "hmm", "text": "Hello there", "chunkSize": 3})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]).v2();
    init_v2(&mut acp, 2);
    let session = new_session(&mut acp, dir.path());
    let id = acp.request("session/prompt", prompt("hi", &session));
    let (before, answer) = acp.until_response(&id);
    let message_id = answer["result"]["messageId"].as_str().expect("a message id").to_owned();
    let (after, reason) = until_idle(&mut acp);
    assert_eq!(reason, "end_turn");
    let all: Vec<Value> = before.into_iter().chain(after).collect();
    let ups = updates(&all);
    assert_eq!((ups[0]["sessionUpdate"].as_str(), ups[0]["state"].as_str()), (Some("state_update"), Some("running")));
    let user = ups.iter().find(|u| u["sessionUpdate"] == "user_message").expect("the user message");
    assert_eq!(user["messageId"], message_id.as_str());
    let chunks: Vec<&&Value> = ups.iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").collect();
    assert_eq!(chunks.iter().map(|u| u["content"]["text"].as_str().unwrap()).collect::<String>(), "Hello there");
    assert!(chunks.iter().all(|u| u["messageId"] == chunks[0]["messageId"]));
    assert_ne!(chunks[0]["messageId"], message_id.as_str(), "the reply is a message of its own");
    assert!(ups.iter().any(|u| u["sessionUpdate"] == "agent_thought_chunk" && u["content"]["text"] == "hmm"));
    assert!(acp.close().success());
}

#[test]
fn a_rejected_write_asks_with_a_diff_and_does_not_run() {
    let (dir, config) = dirs();
    let script = [json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "no.txt", "content": "nope\n"}}]}), json!({"text": "ok"})];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]).v2();
    init_v2(&mut acp, 2);
    let session = new_session(&mut acp, dir.path());
    acp.request("session/prompt", prompt("write", &session));
    let (before, ask) = acp.until_request("session/request_permission");
    assert!(updates(&before).iter().any(|u| u["sessionUpdate"] == "state_update" && u["state"] == "requires_action"));
    let subject = &ask["params"]["subject"];
    assert_eq!(subject["type"], "tool_call");
    let diff = subject["toolCall"]["content"].as_array().unwrap().iter().find(|c| c["type"] == "diff").expect("a diff");
    assert_eq!(diff["changes"][0]["operation"], "add");
    assert!(diff["patch"]["text"].as_str().unwrap().contains("+nope"));
    acp.answer(&ask, json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}));
    let (after, reason) = until_idle(&mut acp);
    assert_eq!(reason, "end_turn");
    assert!(updates(&after).iter().any(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "w1" && u["status"] == "failed"));
    assert!(!dir.path().join("no.txt").exists());
    assert!(acp.close().success());
}

#[test]
fn cancel_ends_the_turn_idle_cancelled_and_close_answers_after_it() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[slow_reply(), slow_reply()], &[]).v2();
    init_v2(&mut acp, 2);
    let session = new_session(&mut acp, dir.path());
    acp.call("session/prompt", prompt("go", &session));
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (_, reason) = until_idle(&mut acp);
    assert_eq!(reason, "cancelled");
    acp.call("session/prompt", prompt("again", &session));
    let close = acp.request("session/close", json!({"sessionId": session}));
    let (before, answer) = acp.until_response(&close);
    assert!(answer.get("result").is_some(), "{answer}");
    let last = updates(&before).last().copied().cloned().expect("the run's updates");
    assert_eq!((last["state"].as_str(), last["stopReason"].as_str()), (Some("idle"), Some("cancelled")));
    // Closing or deleting what does not exist succeeds.
    assert!(acp.call("session/close", json!({"sessionId": "never"})).get("result").is_some());
    assert!(acp.call("session/delete", json!({"sessionId": "never"})).get("result").is_some());
    assert!(acp.close().success());
}

#[test]
fn an_unsupported_replay_cursor_is_invalid_params() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]).v2();
    init_v2(&mut acp, 2);
    let session = new_session(&mut acp, dir.path());
    let answer = acp.call("session/resume", json!({"sessionId": session, "cwd": dir.path().display().to_string(), "replayFrom": {"type": "_somewhere"}}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(acp.close().success());
}

#[test]
fn version_one_keeps_v1() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    let session = acp.init_and_new(dir.path());
    assert!(!session.is_empty());
    assert!(acp.close().success());
}

#[test]
fn a_repeated_initialize_asking_for_v1_on_a_v2_connection_is_unsupported_version() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]).v2();
    init_v2(&mut acp, 2);
    let again = init_v2(&mut acp, 1);
    assert_eq!(again["error"]["code"], -32022, "{again}");
    assert_eq!(again["error"]["data"]["requested"], 1, "{again}");
    // The connection still speaks v2.
    assert!(!new_session(&mut acp, dir.path()).is_empty());
    assert!(acp.close().success());
}

/// `session/close` right behind a prompt (both lines written at once): the prompt is inserted
/// (answered with its message id), its turn is cancelled, and its `idle` goes out before the
/// close is answered; nothing about the session follows the close's answer.
#[test]
fn close_right_behind_a_prompt_answers_after_the_prompts_idle() {
    for _ in 0..5 {
        let (dir, config) = dirs();
        let mut acp = Acp::start(dir.path(), config.path(), &[slow_reply()], &[]).v2();
        init_v2(&mut acp, 2);
        let session = new_session(&mut acp, dir.path());
        let prompt_id = json!(900);
        let close_id = json!(901);
        let prompt = json!({"jsonrpc": "2.0", "id": prompt_id, "method": "session/prompt", "params": prompt("go", &session)});
        let close = json!({"jsonrpc": "2.0", "id": close_id, "method": "session/close", "params": {"sessionId": session}});
        acp.send_raw(&format!("{prompt}\n{close}"));
        let mut idle_seen = false;
        let mut prompt_answered = false;
        loop {
            let f = acp.next();
            if f["id"] == prompt_id {
                prompt_answered = true;
            }
            if f["params"]["update"]["sessionUpdate"] == "state_update" && f["params"]["update"]["state"] == "idle" {
                assert_eq!(f["params"]["update"]["stopReason"], "cancelled", "{f}");
                idle_seen = true;
            }
            if f["id"] == close_id {
                assert!(f.get("result").is_some(), "{f}");
                assert!(idle_seen, "the close was answered before the prompt's idle");
                break;
            }
        }
        assert!(prompt_answered || acp.next()["id"] == prompt_id);
        acp.no_frame_within(std::time::Duration::from_millis(300));
        assert!(acp.close().success());
    }
}

/// `id` of a response, as text (a batch's answers come in any order).
fn by_id(answers: &[Value]) -> std::collections::BTreeMap<String, Value> {
    answers.iter().map(|a| (a["id"].to_string(), a.clone())).collect()
}

/// JSON-RPC 2.0 batches, in v1 and v2: a batch used to be answered with one -32600.
#[test]
fn a_batch_is_answered_as_json_rpc_two_defines_it_in_both_versions() {
    for version in [1, 2] {
        let (dir, config) = dirs();
        let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
        let session = if version == 2 {
            acp = acp.v2();
            init_v2(&mut acp, 2);
            new_session(&mut acp, dir.path())
        } else {
            acp.init_and_new(dir.path())
        };
        let cwd = dir.path().display().to_string();
        // Two requests: one array holding both answers.
        acp.send_batch(&[
            json!({"jsonrpc": "2.0", "id": "a", "method": "session/list", "params": {"cwd": cwd}}),
            json!({"jsonrpc": "2.0", "id": "b", "method": "session/list", "params": {}}),
        ]);
        let answers = by_id(&acp.next_batch());
        assert_eq!(answers.keys().collect::<Vec<_>>(), ["\"a\"", "\"b\""], "v{version}: {answers:?}");
        assert!(answers.values().all(|a| a["result"]["sessions"].is_array()), "v{version}: {answers:?}");
        // Notifications only: no reply at all (the next frame answers the request after it).
        acp.send_batch(&[json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}), json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nobody"}})]);
        let after = acp.request("session/list", json!({}));
        assert_eq!(acp.next()["id"], after, "v{version}: a batch of notifications is not answered");
        // Members that are no requests: one -32600 each, in one array.
        acp.send_raw("[17, true, null]");
        let errors = acp.next_batch();
        assert_eq!(errors.len(), 3, "v{version}: {errors:?}");
        assert!(errors.iter().all(|e| e["error"]["code"] == -32600 && e["id"].is_null()), "v{version}: {errors:?}");
        // An empty array: one -32600, not an array.
        acp.send_raw("[]");
        let empty = acp.next();
        assert_eq!((&empty["error"]["code"], &empty["id"]), (&json!(-32600), &Value::Null), "v{version}: {empty}");
        // A request and a notification and a bad member: the answer and the error, once.
        acp.send_raw(&format!(r#"[{{"jsonrpc":"2.0","id":7,"method":"session/list","params":{{}}}},{{"jsonrpc":"2.0","method":"session/cancel","params":{{"sessionId":"{session}"}}}},{{"jsonrpc":"2.0","id":8,"method":"session/teleport","params":{{}}}}]"#));
        let mixed = by_id(&acp.next_batch());
        assert!(mixed["7"]["result"].is_object() && mixed["8"]["error"]["code"] == -32601 && mixed.len() == 2, "v{version}: {mixed:?}");
        assert!(acp.close().success());
    }
}

/// A session with a pending permission: `session/cancel` and `session/close` each withdraw it
/// with `$/cancel_request` (the v2 schema's SHOULD). It used to be dropped silently.
#[test]
fn cancel_and_close_withdraw_a_pending_permission_with_cancel_request() {
    let (dir, config) = dirs();
    let write = |id: &str| json!({"toolCalls": [{"id": id, "name": "write", "arguments": {"path": format!("{id}.txt"), "content": "x\n"}}]});
    let mut acp = Acp::start(dir.path(), config.path(), &[write("w1"), write("w2")], &[]).v2();
    init_v2(&mut acp, 2);
    let session = new_session(&mut acp, dir.path());
    acp.call("session/prompt", prompt("write", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (before, withdrawn) = acp.until_method("$/cancel_request");
    assert_eq!(withdrawn["params"]["requestId"], ask["id"], "{withdrawn}");
    assert!(!updates(&before).iter().any(|u| u["state"] == "idle"), "withdrawn before the idle");
    let (_, reason) = until_idle(&mut acp);
    assert_eq!(reason, "cancelled");
    // The client's late `cancelled` answer is ignored.
    acp.answer(&ask, json!({"outcome": {"outcome": "cancelled"}}));

    acp.call("session/prompt", prompt("write again", &session));
    let (_, ask) = acp.until_request("session/request_permission");
    let close = acp.request("session/close", json!({"sessionId": session}));
    let (before, answer) = acp.until_response(&close);
    assert!(answer.get("result").is_some(), "{answer}");
    let withdrawn = before.iter().find(|f| f["method"] == "$/cancel_request").expect("the permission withdrawn before the close is answered");
    assert_eq!(withdrawn["params"]["requestId"], ask["id"], "{withdrawn}");
    assert!(!dir.path().join("w1.txt").exists() && !dir.path().join("w2.txt").exists());
    assert!(acp.close().success());
}

/// The permission's patch is a `git_patch` as `DiffPatchFormat` defines it (it used to read
/// `--- a//<absolute path>`, with no `diff --git` line and no `/dev/null`), and an edit's
/// completed patch is the approved one, of the whole file (it used to be made of the edit's
/// fragments: `@@ -1 +1 @@ -two`).
#[test]
fn patches_are_git_patches_of_the_whole_file_the_same_when_asked_and_done() {
    let (dir, config) = dirs();
    std::fs::write(dir.path().join("three.txt"), "one\ntwo\nthree\n").unwrap();
    let script = [
        json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "new.txt", "content": "fresh\n"}}]}),
        json!({"toolCalls": [{"id": "e1", "name": "edit", "arguments": {"path": "three.txt", "oldText": "two", "newText": "2"}}]}),
        json!({"text": "done"}),
    ];
    let mut acp = Acp::start(dir.path(), config.path(), &script, &[]).v2();
    init_v2(&mut acp, 2);
    let session = new_session(&mut acp, dir.path());
    acp.call("session/prompt", prompt("change things", &session));
    let patch_of = |content: &Value| content.as_array().and_then(|c| c.iter().find(|c| c["type"] == "diff")).map(|d| d["patch"]["text"].as_str().unwrap().to_owned());
    let mut asked = Vec::new();
    let mut done = std::collections::HashMap::new();
    loop {
        let f = acp.next();
        if f["method"] == "session/request_permission" {
            asked.push(patch_of(&f["params"]["subject"]["toolCall"]["content"]).expect("a patch in the permission"));
            acp.answer(&f, json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}));
            continue;
        }
        let u = &f["params"]["update"];
        if u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed" {
            done.insert(u["toolCallId"].as_str().unwrap().to_owned(), patch_of(&u["content"]).expect("a patch in the completed update"));
        }
        if u["sessionUpdate"] == "state_update" && u["state"] == "idle" {
            break;
        }
    }
    let new = dir.path().join("new.txt").display().to_string();
    let three = dir.path().join("three.txt").display().to_string();
    assert_eq!(asked[0], format!("diff --git {new} {new}\nnew file mode 100644\n--- /dev/null\n+++ {new}\n@@ -0,0 +1 @@\n+fresh\n"));
    assert_eq!(asked[1], format!("diff --git {three} {three}\n--- {three}\n+++ {three}\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"));
    assert_eq!(done["w1"], asked[0], "the write's completed patch is the approved one");
    assert_eq!(done["e1"], asked[1], "the edit's completed patch is the approved one");
    assert!(acp.close().success());
}

/// A second prompt while a run works is held and inserted once the run before it is idle (it
/// used to be refused -32603); a held prompt is cancelled by `session/cancel` with -32800.
#[test]
fn a_prompt_sent_while_a_run_works_is_held_then_inserted() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[slow_reply(), json!({"text": "second"}), slow_reply()], &[]).v2();
    init_v2(&mut acp, 2);
    let session = new_session(&mut acp, dir.path());
    acp.call("session/prompt", prompt("first", &session));
    let second = acp.request("session/prompt", prompt("second", &session));
    let (before, answer) = acp.until_response(&second);
    assert!(answer["result"]["messageId"].is_string(), "held, then inserted: {answer}");
    let first_idle = updates(&before).into_iter().find(|u| u["state"] == "idle").cloned().expect("the first run's idle before the second prompt's answer");
    assert_eq!(first_idle["stopReason"], "end_turn");
    let inserted = updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "user_message").last().cloned().expect("the second prompt inserted");
    assert_eq!(inserted["messageId"], answer["result"]["messageId"], "inserted after the first run's idle: {before:?}");
    assert_eq!(inserted["content"][0]["text"], "second");
    let ups = updates(&before);
    let at = |kind: &str| ups.iter().position(|u| u["sessionUpdate"] == kind && (kind != "state_update" || u["state"] == "idle")).unwrap();
    assert!(at("state_update") < at("user_message"), "the held prompt is inserted after the first run's idle");
    let (after, reason) = until_idle(&mut acp);
    assert_eq!(reason, "end_turn");
    assert!(updates(&after).iter().any(|u| u["sessionUpdate"] == "agent_message_chunk" && u["content"]["text"] == "second"));

    // Held, then cancelled: answered -32800 and never inserted.
    acp.call("session/prompt", prompt("third", &session));
    let held = acp.request("session/prompt", prompt("fourth", &session));
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (frames, answer) = acp.until_response(&held);
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    let mut frames = frames;
    if !updates(&frames).iter().any(|u| u["state"] == "idle") {
        frames.extend(until_idle(&mut acp).0);
    }
    assert_eq!(updates(&frames).iter().filter(|u| u["sessionUpdate"] == "user_message").count(), 0, "the held prompt was never inserted");
    assert!(acp.close().success());
}

/// Sessions do not block each other: one waits for a permission nobody answers while the
/// other's prompt runs to its end (field report qwen-code#11795).
#[test]
fn a_session_waiting_for_a_permission_does_not_block_another_in_both_versions() {
    for version in [1, 2] {
        let (dir, config) = dirs();
        let script = [json!({"toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "a\n"}}]}), json!({"text": "from b"})];
        let mut acp = Acp::start(dir.path(), config.path(), &script, &[]);
        let (a, b) = if version == 2 {
            acp = acp.v2();
            init_v2(&mut acp, 2);
            (new_session(&mut acp, dir.path()), new_session(&mut acp, dir.path()))
        } else {
            let a = acp.init_and_new(dir.path());
            let b = acp.call("session/new", json!({"cwd": dir.path().display().to_string(), "mcpServers": []}))["result"]["sessionId"].as_str().unwrap().to_owned();
            (a, b)
        };
        let a_prompt = acp.request("session/prompt", prompt("write", &a));
        let (_, ask) = acp.until_request("session/request_permission");
        assert_eq!(ask["params"]["sessionId"], a.as_str());
        let b_prompt = acp.request("session/prompt", prompt("talk", &b));
        let b_done = |f: &Value| match version {
            1 => f["id"] == b_prompt && f["result"]["stopReason"] == "end_turn",
            _ => f["params"]["sessionId"] == b.as_str() && f["params"]["update"]["state"] == "idle",
        };
        let (between, _) = acp.until(b_done);
        assert!(!between.iter().any(|f| f["id"] == a_prompt && f.get("method").is_none() && version == 1), "v{version}: a's prompt still waits");
        assert!(between.iter().any(|f| f["params"]["sessionId"] == b.as_str() && f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"), "v{version}: b ran");
        // The permission nobody answered settles when the input ends; the process exits clean.
        assert!(acp.close().success(), "v{version}");
    }
}
