//! The commands and events pi 1.6.0 added to the rpc dialect, as pi's `RpcClient` calls them
//! (docs/rpc-commands.md): `get_entries {since}`, `get_tree` answering `{tree, leafId}`,
//! `clear_queue`, `get_available_thinking_levels`, and `bash_execution_update` carrying the
//! `bash` command's id. Every frame is validated against the schema by the harness.

mod common;

use common::{text_reply, types, Agent};
use serde_json::{json, Value};

fn slow(text: &str) -> Value {
    json!({"text": text, "chunkSize": 4, "delayMs": 40})
}

fn entry_ids(data: &Value) -> Vec<String> {
    data["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn get_entries_is_a_durable_cursor_and_an_unknown_since_fails() {
    let mut a = Agent::start(&[], &[text_reply("one"), text_reply("two")]);
    let empty = a.request(json!({"id": "e0", "type": "get_entries"}));
    assert_eq!(empty["data"], json!({"entries": [], "leafId": null}));
    a.send(json!({"id": "p1", "type": "prompt", "message": "first"}));
    a.until_prompt_result("p1");
    let all = a.request(json!({"id": "e1", "type": "get_entries"}));
    let first = entry_ids(&all["data"]);
    assert!(first.len() >= 2, "{all}");
    let roles: Vec<&str> = all["data"]["entries"].as_array().unwrap().iter().filter(|e| e["type"] == "message").map(|e| e["message"]["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(all["data"]["leafId"], json!(first.last().unwrap()));
    // Nothing after the leaf yet; then only the second exchange.
    let none = a.request(json!({"id": "e2", "type": "get_entries", "since": first.last().unwrap()}));
    assert_eq!(none["data"]["entries"], json!([]));
    a.send(json!({"id": "p2", "type": "prompt", "message": "second"}));
    a.until_prompt_result("p2");
    let later = a.request(json!({"id": "e3", "type": "get_entries", "since": first.last().unwrap()}));
    let texts: Vec<&str> = later["data"]["entries"].as_array().unwrap().iter().filter(|e| e["message"]["role"] == "user").map(|e| e["message"]["content"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["second"], "{later}");
    let everything = entry_ids(&a.request(json!({"id": "e4", "type": "get_entries"}))["data"]);
    assert_eq!(everything, [first.clone(), entry_ids(&later["data"])].concat(), "since = strictly after");
    let bad = a.request(json!({"id": "e5", "type": "get_entries", "since": "no-such-entry"}));
    assert_eq!((&bad["success"], &bad["code"], &bad["command"]), (&json!(false), &json!("not_found"), &json!("get_entries")), "{bad}");
    assert!(bad["error"].as_str().unwrap().contains("no-such-entry"), "{bad}");
    let empty_since = a.request(json!({"id": "e6", "type": "get_entries", "since": ""}));
    assert_eq!((&empty_since["success"], &empty_since["code"]), (&json!(false), &json!("invalid_params")));
}

#[test]
fn get_tree_answers_pi_16s_nested_tree_and_the_flat_entries() {
    let mut a = Agent::start(&[], &[text_reply("one"), text_reply("two")]);
    a.send(json!({"id": "p1", "type": "prompt", "message": "first"}));
    a.until_prompt_result("p1");
    a.send(json!({"id": "p2", "type": "prompt", "message": "second"}));
    a.until_prompt_result("p2");
    let tree = a.request(json!({"id": "t", "type": "get_tree"}))["data"].clone();
    let entries = a.request(json!({"id": "e", "type": "get_entries"}))["data"].clone();
    assert_eq!(tree["leafId"], entries["leafId"]);
    assert_eq!(tree["entries"].as_array().unwrap().len(), entries["entries"].as_array().unwrap().len(), "the flat summary stays");
    // One root; following the only child down visits every entry in append order.
    let roots = tree["tree"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{tree}");
    let mut chain = Vec::new();
    let mut node = &roots[0];
    loop {
        chain.push(node["entry"].clone());
        match node["children"].as_array().unwrap().as_slice() {
            [] => break,
            [only] => node = only,
            more => panic!("a linear session branches: {more:?}"),
        }
    }
    assert_eq!(Value::from(chain), entries["entries"], "nodes carry the entries as get_entries gives them");
}

#[test]
fn clear_queue_returns_the_queued_text_and_the_run_goes_on_without_it() {
    let mut a = Agent::start(&[], &[slow("a slow first reply to be long enough"), text_reply("never")]);
    a.send(json!({"id": "p1", "type": "prompt", "message": "one"}));
    a.until(|f| f["type"] == "message_start" && f["message"]["role"] == "assistant");
    a.request(json!({"id": "s1", "type": "steer", "message": "turn left"}));
    a.request(json!({"id": "f1", "type": "follow_up", "message": "then summarise"}));
    a.send(json!({"id": "c", "type": "clear_queue"}));
    let frames: Vec<Value> = a.until(|f| f["id"] == "c" && f["type"] == "response").into_iter().filter(|f| f["type"] == "queue_update" || f["type"] == "response").collect();
    assert_eq!(frames[0], json!({"type": "queue_update", "steering": [], "followUp": []}), "{frames:?}");
    assert_eq!(frames[1], json!({"id": "c", "type": "response", "command": "clear_queue", "success": true, "data": {"steering": ["turn left"], "followUp": ["then summarise"]}}));
    let run = a.until_prompt_result("p1");
    assert!(run.iter().all(|f| !(f["type"] == "message_start" && f["message"]["role"] == "user")), "nothing queued was delivered: {:?}", types(&run));
    // Cleared again, nothing was queued: no event, empty lists.
    let again = a.request(json!({"id": "c2", "type": "clear_queue"}));
    assert_eq!(again["data"], json!({"steering": [], "followUp": []}));
    assert_eq!(a.seen.iter().filter(|f| f["type"] == "queue_update").count(), 3, "two queued, one cleared");
}

#[test]
fn get_available_thinking_levels_answers_levels() {
    let mut a = Agent::start(&[], &[]);
    let r = a.request(json!({"id": "l", "type": "get_available_thinking_levels"}));
    assert_eq!((&r["success"], &r["data"]["levels"]), (&json!(true), &json!(["off"])), "the offline model does not reason: {r}");
}

#[test]
fn bash_streams_its_output_with_the_commands_id_before_the_response() {
    let mut a = Agent::start(&[], &[]);
    a.send(json!({"id": "b1", "type": "bash", "command": "printf 'first\\n'; sleep 0.4; printf 'second\\n'"}));
    let frames = a.until(|f| f["id"] == "b1" && f["type"] == "response");
    let updates: Vec<&Value> = frames.iter().filter(|f| f["type"] == "bash_execution_update").collect();
    assert!(updates.len() >= 2, "the output streams as it comes: {frames:?}");
    assert!(updates.iter().all(|u| u["id"] == "b1"), "{updates:?}");
    let streamed: String = updates.iter().map(|u| u["delta"].as_str().unwrap()).collect();
    let response = frames.last().unwrap();
    assert_eq!(streamed, "first\nsecond\n");
    assert_eq!(response["data"]["output"], streamed);
    // Without an id the updates carry none.
    a.send(json!({"type": "bash", "command": "echo x"}));
    let frames = a.until(|f| f["type"] == "response" && f["command"] == "bash");
    let update = frames.iter().find(|f| f["type"] == "bash_execution_update").unwrap();
    assert_eq!(update, &json!({"type": "bash_execution_update", "delta": "x\n"}));
}

#[test]
fn the_pi_073_profile_sends_no_bash_execution_update() {
    let mut a = Agent::start(&["--rpc-profile", "pi-0.73"], &[]);
    let frames = {
        a.send(json!({"id": "b1", "type": "bash", "command": "echo hi"}));
        a.until(|f| f["id"] == "b1" && f["type"] == "response")
    };
    assert!(frames.iter().all(|f| f["type"] != "bash_execution_update"), "{frames:?}");
    assert_eq!(frames.last().unwrap()["data"]["output"], "hi\n");
}
