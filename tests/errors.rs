//! Every class of bad input gets exactly one error frame (with the id whenever it could be
//! read), and the process keeps serving.

mod common;

use std::time::Duration;

use common::Agent;
use serde_json::{json, Value};

fn one_error(a: &mut Agent, line: &str) -> Value {
    a.send_raw(line);
    let e = a.next();
    assert_eq!((&e["type"], &e["success"]), (&json!("response"), &json!(false)), "{line} → {e}");
    // The server still answers, and nothing else was written for the bad line.
    let probe = a.next_probe();
    assert_eq!(probe["command"], "get_state");
    e
}

trait Probe {
    fn next_probe(&mut self) -> Value;
}

impl Probe for Agent {
    fn next_probe(&mut self) -> Value {
        self.send(json!({"id":"probe","type":"get_state"}));
        self.next()
    }
}

#[test]
fn malformed_input_classes_each_get_one_error_frame() {
    let mut a = Agent::start(&[], &[]);
    for line in ["{not json", "null", "42", "[]", "\"text\"", "true", "{}{}"] {
        let e = one_error(&mut a, line);
        assert_eq!((&e["command"], &e["code"], e.get("id")), (&json!("parse"), &json!("parse_error"), None), "{line}");
    }
    // A parse error still carries the id whenever the top-level `id` can be read (issue 15).
    let e = one_error(&mut a, "{\"id\":1,\"type\":\"get_state\"} trailing");
    assert_eq!((&e["command"], &e["code"], &e["id"]), (&json!("parse"), &json!("parse_error"), &json!(1)));
    let e = one_error(&mut a, r#"{"id":"u1","type":"does_not_exist"}"#);
    assert_eq!((&e["id"], &e["command"], &e["code"], &e["error"]), (&json!("u1"), &json!("does_not_exist"), &json!("unknown_command"), &json!("Unknown command: does_not_exist")));
    let e = one_error(&mut a, r#"{"id":"t1"}"#);
    assert_eq!((&e["id"], &e["command"], &e["code"]), (&json!("t1"), &json!("unknown"), &json!("invalid_request")));
    let e = one_error(&mut a, r#"{"id":"m1","type":"set_model","provider":"x"}"#);
    assert_eq!((&e["id"], &e["code"], &e["error"]), (&json!("m1"), &json!("invalid_params"), &json!(r#"set_model: /modelId: "modelId" is a required property"#)));
    let e = one_error(&mut a, r#"{"id":"l1","type":"set_thinking_level","level":"hgh"}"#);
    assert!(e["error"].as_str().unwrap().starts_with(r#"set_thinking_level: /level: "hgh" is not one of"#));
    let e = one_error(&mut a, r#"{"id":[1],"type":"get_state"}"#);
    assert_eq!((&e["id"], &e["code"]), (&json!([1]), &json!("invalid_request")));
    let e = one_error(&mut a, r#"{"id":"r1","type":"response","command":"x","success":true}"#);
    assert_eq!(e["id"], "r1");
    let e = one_error(&mut a, r#"{"type":"extension_ui_response","confirmed":true}"#);
    assert_eq!((&e["command"], &e["code"]), (&json!("extension_ui_response"), &json!("invalid_request")));
    let e = one_error(&mut a, r#"{"id":"b1","type":"bash"}"#);
    assert_eq!(e["error"], r#"bash: /command: "command" is a required property"#);
}

#[test]
fn answers_nobody_waits_for_get_one_not_found_error_each() {
    let mut a = Agent::start(&[], &[]);
    a.send(json!({"type":"extension_ui_response","id":"nobody","value":"x"}));
    a.send(json!({"type":"host_tool_result","id":"no-call","result":{"content":[]}}));
    a.send(json!({"type":"host_tool_update","id":"no-call","partialResult":{"content":[]}}));
    for (id, command) in [("nobody", "extension_ui_response"), ("no-call", "host_tool_result"), ("no-call", "host_tool_update")] {
        let e = a.next();
        assert_eq!((&e["id"], &e["command"], &e["success"], &e["code"]), (&json!(id), &json!(command), &json!(false), &json!("not_found")), "{e}");
        assert!(e["error"].as_str().unwrap().contains(id), "{e}");
    }
    a.expect_silence(Duration::from_millis(200));
    assert_eq!(a.next_probe()["id"], "probe");
}

#[test]
fn invalid_utf8_is_a_parse_error_and_unknown_fields_are_named() {
    let mut a = Agent::start(&[], &[]);
    a.send_bytes(b"{\"id\":\"x\",\"type\":\"get_state\",\"bad\":\"\xff\"}\n");
    let e = a.next();
    assert_eq!((&e["command"], &e["code"]), (&json!("parse"), &json!("parse_error")), "{e}");
    let e = one_error(&mut a, r#"{"id":"x","type":"get_state","junk":1}"#);
    assert_eq!(e["error"], r#"get_state: /junk: unknown field "junk""#);
}

#[test]
fn typos_are_named_with_the_closest_known_name() {
    let mut a = Agent::start(&[], &[]);
    let e = one_error(&mut a, r#"{"id":"t","type":"prompt","mesage":"hi"}"#);
    assert_eq!(
        e["error"],
        r#"prompt: /message: "message" is a required property; /mesage: unknown field "mesage" (did you mean "message"?)"#,
        "every violation is reported, the unknown field by name"
    );
    let e = one_error(&mut a, r#"{"id":"u","type":"promt","message":"hi"}"#);
    assert_eq!(e["error"], r#"Unknown command: promt (did you mean "prompt"?)"#);
    // Far from every known name: no guess.
    let e = one_error(&mut a, r#"{"id":"v","type":"set_model","provider":"p","modelId":"m","colour":"red"}"#);
    assert_eq!(e["error"], r#"set_model: /colour: unknown field "colour""#);
}

#[test]
fn invalid_params_name_the_pointer_and_the_reason() {
    let mut a = Agent::start(&[], &[]);
    let invalid = |a: &mut Agent, line: &str| {
        let e = one_error(a, line);
        assert_eq!(e["code"], "invalid_params", "{line} → {e}");
        e["error"].as_str().unwrap_or_default().to_owned()
    };
    // A wrong enum value, with the candidates.
    let e = invalid(&mut a, r#"{"id":"e","type":"set_thinking_level","level":"hgh"}"#);
    assert_eq!(e, r#"set_thinking_level: /level: "hgh" is not one of "off", "minimal" or 6 other candidates"#);
    // A missing required field.
    let e = invalid(&mut a, r#"{"id":"m","type":"set_model","provider":"p"}"#);
    assert_eq!(e, r#"set_model: /modelId: "modelId" is a required property"#);
    // An unknown field on a closed object, nested.
    let e = invalid(&mut a, r#"{"id":"u","type":"prompt","message":"hi","images":[{"type":"image","data":"AA==","mimeType":"image/png","size":1}]}"#);
    assert_eq!(e, r#"prompt: /images/0/size: unknown field "size""#);
    // A wrong type inside a nested union member.
    let e = invalid(&mut a, r#"{"id":"t","type":"prompt","message":"hi","images":[{"type":"image","data":7,"mimeType":"image/png"}]}"#);
    assert_eq!(e, r#"prompt: /images/0/data: 7 is not of type "string""#);
    // An integer out of its format's range.
    let e = invalid(&mut a, r#"{"id":"r","type":"get_messages_page","limit":4294967296}"#);
    assert_eq!(e, r#"get_messages_page: /limit: 4294967296 is greater than the maximum of 10000; /limit: 4294967296 is not a "uint32""#);
}
