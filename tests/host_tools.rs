//! The host-tool sub-protocol: registration and validation, call → update → result, errors,
//! abort (host_tool_cancel) and timeouts.

mod common;

use common::{text_reply, tool_reply, Agent};
use serde_json::{json, Value};

fn echo_tool() -> Value {
    json!({"name":"echo_host","description":"Echo on the host.","parameters":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}})
}

#[test]
fn registration_is_validated_and_replaces_the_set() {
    let mut a = Agent::start(&[], &[]);
    let ok = a.request(json!({"id":"h1","type":"set_host_tools","tools":[echo_tool()]}));
    assert_eq!(ok["data"], json!({"toolNames":["echo_host"]}));
    let dup = a.request(json!({"id":"h2","type":"set_host_tools","tools":[echo_tool(), echo_tool()]}));
    assert!(dup["error"].as_str().unwrap().contains("unique"));
    let builtin = a.request(json!({"id":"h3","type":"set_host_tools","tools":[{"name":"bash","description":"x","parameters":{"type":"object"}}]}));
    assert!(builtin["error"].as_str().unwrap().contains("conflicts with the built-in"));
    let not_object = a.request(json!({"id":"h4","type":"set_host_tools","tools":[{"name":"t","description":"x","parameters":{"type":"array"}}]}));
    assert!(not_object["error"].as_str().unwrap().contains("\"type\": \"object\""));
    let bad_name = a.request(json!({"id":"h5","type":"set_host_tools","tools":[{"name":"has space","description":"x","parameters":{"type":"object"}}]}));
    assert_eq!(bad_name["code"], "invalid_params");
    assert_eq!(a.request(json!({"id":"h6","type":"set_host_tools","tools":[]}))["data"], json!({"toolNames":[]}));
}

#[test]
fn a_call_streams_updates_and_finishes_on_the_host_result() {
    let mut a = Agent::start(&[], &[tool_reply("echo_host", json!({"message":"hi host"})), text_reply("done")]);
    a.request(json!({"id":"h","type":"set_host_tools","tools":[echo_tool()]}));
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let frames = a.until(|f| f["type"] == "host_tool_call");
    let start = frames.iter().position(|f| f["type"] == "tool_execution_start").unwrap();
    assert_eq!(start, frames.len() - 2, "tool_execution_start comes right before host_tool_call");
    let call = frames.last().unwrap().clone();
    assert_eq!((&call["toolName"], &call["arguments"]), (&json!("echo_host"), &json!({"message":"hi host"})));
    let id = call["id"].clone();
    a.send(json!({"type":"host_tool_update","id":id,"partialResult":{"content":[{"type":"text","text":"working"}],"details":{"pct":50}}}));
    let update = a.until(|f| f["type"] == "tool_execution_update").pop().unwrap();
    assert_eq!(update["partialResult"], json!({"content":[{"type":"text","text":"working"}],"details":{"pct":50}}));
    a.send(json!({"type":"host_tool_result","id":id,"result":{"content":[{"type":"text","text":"echo: hi host"}],"details":{"host":true}}}));
    a.send(json!({"type":"host_tool_result","id":id,"result":{"content":[{"type":"text","text":"duplicate, ignored"}]}}));
    let frames = a.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert_eq!((&end["isError"], &end["result"]["details"]), (&json!(false), &json!({"host":true})));
    assert_eq!(end["result"]["content"][0]["text"], "echo: hi host");
}

#[test]
fn error_results_keep_their_details() {
    let mut a = Agent::start(&[], &[tool_reply("echo_host", json!({"message":"x"})), text_reply("done")]);
    a.request(json!({"id":"h","type":"set_host_tools","tools":[echo_tool()]}));
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let call = a.until(|f| f["type"] == "host_tool_call").pop().unwrap();
    a.send(json!({"type":"host_tool_result","id":call["id"],"isError":true,"result":{"content":[{"type":"text","text":"host refused"}],"details":{"why":"policy"}}}));
    let end = a.until(|f| f["type"] == "tool_execution_end").pop().unwrap();
    assert_eq!((&end["isError"], &end["result"]["details"]), (&json!(true), &json!({"why":"policy"})));
}

#[test]
fn abort_cancels_the_pending_call_and_timeouts_fail_it() {
    let mut a = Agent::start(&[], &[tool_reply("echo_host", json!({"message":"x"})), tool_reply("slow_host", json!({})), text_reply("done")]);
    let slow = json!({"name":"slow_host","description":"Never answers.","parameters":{"type":"object"},"timeoutMs":200});
    a.request(json!({"id":"h","type":"set_host_tools","tools":[echo_tool(), slow]}));
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let call = a.until(|f| f["type"] == "host_tool_call").pop().unwrap();
    a.send(json!({"id":"ab","type":"abort"}));
    let frames = a.until(|f| f["id"] == "ab" && f["type"] == "response");
    let cancel = frames.iter().find(|f| f["type"] == "host_tool_cancel").unwrap();
    assert_eq!(cancel["targetId"], call["id"]);
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Host tool \"echo_host\" was aborted");

    a.send(json!({"id":"p2","type":"prompt","message":"again"}));
    let frames = a.until_prompt_result("p2");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Host tool \"slow_host\" did not answer within 200 ms");
    assert!(frames.iter().any(|f| f["type"] == "host_tool_cancel"));
}
