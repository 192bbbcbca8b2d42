//! `agentwire --mode wire` (kimi-cli JSON-RPC 2.0) through the real binary: envelope and
//! errors, initialize, prompt and streaming, tool turns, steer, cancel, plan mode (stdin EOF:
//! `tests/lifecycle.rs`). Every frame is validated against the wire schema, responses against
//! the method they answer.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::wire::{kinds, Wire};
use serde_json::{json, Value};

#[test]
fn initialize_and_a_text_turn() {
    let mut w = Wire::start(&[json!({"thinking":"Hm.","text":"Hello!","chunkSize":3})]);
    w.send(json!({"jsonrpc":"2.0","id":"i1","method":"initialize","params":{"protocol_version":"1.10","client":{"name":"t","version":"1"}}}));
    let init = w.next();
    assert_eq!((&init["id"], &init["result"]["protocol_version"], &init["result"]["capabilities"]["supports_question"]), (&json!("i1"), &json!("1.10"), &json!(true)));
    w.send(json!({"jsonrpc":"2.0","id":7,"method":"prompt","params":{"user_input":"Say hello"}}));
    let frames = w.until_id(json!(7));
    let k = kinds(&frames);
    assert_eq!(k[..2], ["TurnBegin", "StepBegin"]);
    assert_eq!(k[k.len() - 3..], ["StatusUpdate", "TurnEnd", "result"]);
    let text: String = frames.iter().filter(|f| f["params"]["payload"]["type"] == "text").map(|f| f["params"]["payload"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "Hello!");
    assert!(frames.iter().any(|f| f["params"]["payload"]["type"] == "think"));
    assert_eq!(frames[0]["params"]["payload"], json!({"user_input":"Say hello"}));
    assert_eq!(frames.last().unwrap(), &json!({"jsonrpc":"2.0","id":7,"result":{"status":"finished"}}), "integer ids are echoed as integers");
}

#[test]
fn a_tool_turn_streams_calls_and_results() {
    let mut w = Wire::start(&[json!({"text":"Running.","toolCalls":[{"id":"call_sh_1","name":"bash","arguments":{"command":"echo wired"}}],"chunkSize":6}), json!({"text":"It printed wired."})]);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":[{"type":"text","text":"run it"}]}}));
    let frames = w.until_id(json!("p"));
    let k = kinds(&frames);
    let call = frames.iter().find(|f| f["params"]["type"] == "ToolCall").unwrap();
    assert_eq!(call["params"]["payload"]["function"], json!({"name":"bash","arguments":""}));
    let args: String = frames.iter().filter(|f| f["params"]["type"] == "ToolCallPart").map(|f| f["params"]["payload"]["arguments_part"].as_str().unwrap()).collect();
    assert_eq!(args, r#"{"command":"echo wired"}"#);
    let result = frames.iter().find(|f| f["params"]["type"] == "ToolResult").unwrap();
    assert_eq!((&result["params"]["payload"]["tool_call_id"], &result["params"]["payload"]["return_value"]["output"]), (&json!("call_sh_1"), &json!("wired\n")));
    assert_eq!(k.iter().filter(|k| *k == "StepBegin").count(), 2);
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn state_errors_steer_cancel_and_plan_mode() {
    let slow = json!({"text":"w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11","chunkSize":3,"delayMs":60});
    let mut w = Wire::start(&[slow.clone(), json!({"text":"Steered reply."}), slow]);
    w.send(json!({"jsonrpc":"2.0","id":"s0","method":"steer","params":{"user_input":"x"}}));
    assert_eq!(w.next()["error"], json!({"code":-32000,"message":"No agent turn is in progress","data":null}));
    w.send(json!({"jsonrpc":"2.0","id":"c0","method":"cancel"}));
    assert_eq!(w.next()["error"]["code"], -32000);

    w.send(json!({"jsonrpc":"2.0","id":"p1","method":"prompt","params":{"user_input":"long"}}));
    loop {
        if w.next()["params"]["type"] == "ContentPart" {
            break;
        }
    }
    w.send(json!({"jsonrpc":"2.0","id":"p2","method":"prompt","params":{"user_input":"busy?"}}));
    w.send(json!({"jsonrpc":"2.0","id":"s1","method":"steer","params":{"user_input":"Actually, be brief."}}));
    let frames = w.until_id(json!("p1"));
    let busy = frames.iter().find(|f| f["id"] == "p2").unwrap();
    assert_eq!(busy["error"]["message"], "An agent turn is already in progress");
    assert_eq!(frames.iter().find(|f| f["id"] == "s1").unwrap()["result"], json!({"status":"steered"}));
    let k = kinds(&frames);
    let steer = k.iter().position(|k| k == "SteerInput").unwrap();
    assert_eq!(k[steer + 1], "StepBegin");
    assert_eq!(frames[steer]["params"]["payload"]["user_input"], "Actually, be brief.");

    w.send(json!({"jsonrpc":"2.0","id":"p3","method":"prompt","params":{"user_input":"again"}}));
    loop {
        if w.next()["params"]["type"] == "ContentPart" {
            break;
        }
    }
    w.send(json!({"jsonrpc":"2.0","id":"c1","method":"cancel"}));
    let frames = w.until_id(json!("p3"));
    let k = kinds(&frames);
    let cancel = frames.iter().position(|f| f["id"] == "c1").unwrap();
    let end = k.iter().position(|k| k == "TurnEnd").unwrap();
    assert!(cancel < end, "cancel result, then TurnEnd: {k:?}");
    assert_eq!(frames.last().unwrap()["result"], json!({"status":"cancelled"}));

    w.send(json!({"jsonrpc":"2.0","id":"pm","method":"set_plan_mode","params":{"enabled":true}}));
    let status = w.next();
    assert_eq!((&status["params"]["type"], &status["params"]["payload"]["plan_mode"]), (&json!("StatusUpdate"), &json!(true)));
    assert_eq!(w.next()["result"], json!({"status":"ok","plan_mode":true}));
}

#[test]
fn envelope_errors_and_notifications() {
    let mut w = Wire::start(&[]);
    w.send_raw("{not json");
    assert_eq!(w.next(), json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON format","data":null}}));
    w.send_raw(r#"{"jsonrpc":"2.0","method":"prompt","params":{"user_input":"as a notification"}}"#);
    w.send(json!({"jsonrpc":"2.0","id":"u","method":"shutdown"}));
    let e = w.next();
    assert_eq!((&e["id"], &e["error"]["code"]), (&json!("u"), &json!(-32601)), "the notification got no answer and did not run");
    w.send(json!({"jsonrpc":"2.0","id":"bad","method":"prompt","params":{"user_input":[{"type":"no_such_part"}]}}));
    assert_eq!(w.next()["error"]["code"], -32602);
}

fn shell_call(id: &str, command: &str) -> Value {
    json!({"toolCalls":[{"id": id, "name":"bash","arguments":{"command": command}}]})
}

#[test]
fn approvals_are_wire_requests_and_fail_closed() {
    let mut w = Wire::start_with(&["--approval", "dangerous"], &[
        shell_call("call_sh_1", "echo approved-run"),
        shell_call("call_sh_2", "echo rejected-run"),
        json!({"text":"done"}),
    ]);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"run"}}));
    let ask = loop {
        let f = w.next();
        if f["method"] == "request" {
            break f;
        }
    };
    let payload = &ask["params"]["payload"];
    assert_eq!((&ask["params"]["type"], &payload["tool_call_id"], &payload["sender"], &payload["description"]),
        (&json!("ApprovalRequest"), &json!("call_sh_1"), &json!("bash"), &json!("Run command `echo approved-run`")));
    assert_eq!(ask["id"], payload["id"]);
    w.send_raw(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"request_id":ask["id"],"response":"approve"}}).to_string());
    let second = loop {
        let f = w.next();
        if f["method"] == "request" {
            break f;
        }
    };
    w.send_raw(&json!({"jsonrpc":"2.0","id":second["id"],"result":{"request_id":second["id"],"response":"reject","feedback":"not that"}}).to_string());
    let frames = w.until_id(json!("p"));
    let results: Vec<&Value> = frames.iter().filter(|f| f["params"]["type"] == "ToolResult").collect();
    assert_eq!(results[0]["params"]["payload"]["return_value"]["is_error"], true, "the second call was rejected");
    let responses: Vec<&Value> = frames.iter().filter(|f| f["params"]["type"] == "ApprovalResponse").collect();
    assert_eq!(responses[0]["params"]["payload"], json!({"request_id": second["id"], "response":"reject","feedback":"not that"}));
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn external_tools_are_registered_called_and_answered() {
    let mut w = Wire::start(&[json!({"toolCalls":[{"id":"call_ext_1","name":"lookup_ticket","arguments":{"id":"T-42"}}]}), json!({"text":"It is open."})]);
    w.send(json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocol_version":"1.10","external_tools":[
        {"name":"lookup_ticket","description":"Look up a ticket.","parameters":{"type":"object","properties":{"id":{"type":"string"}}}},
        {"name":"bash","description":"clash","parameters":{"type":"object"}},
        {"name":"bad name","description":"x","parameters":{"type":"object"}}]}}));
    let init = w.next();
    let ext = &init["result"]["external_tools"];
    assert_eq!(ext["accepted"], json!(["lookup_ticket"]));
    assert_eq!(ext["rejected"].as_array().unwrap().len(), 2);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"check T-42"}}));
    let call = loop {
        let f = w.next();
        if f["method"] == "request" {
            break f;
        }
    };
    assert_eq!((&call["id"], &call["params"]["type"], &call["params"]["payload"]["arguments"]), (&json!("call_ext_1"), &json!("ToolCallRequest"), &json!(r#"{"id":"T-42"}"#)));
    w.send_raw(&json!({"jsonrpc":"2.0","id":"call_ext_1","result":{"tool_call_id":"call_ext_1","return_value":{"is_error":false,"output":"status: open","message":"","display":[]}}}).to_string());
    let frames = w.until_id(json!("p"));
    let result = frames.iter().find(|f| f["params"]["type"] == "ToolResult").unwrap();
    assert_eq!(result["params"]["payload"]["return_value"]["output"], "status: open");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn replay_serves_the_merged_log_in_the_same_process_and_after_resume() {
    let sessions = tempfile::tempdir().unwrap();
    let dir = sessions.path().to_str().unwrap().to_owned();
    let mut w = Wire::start_with(&["--session-dir", dir.as_str()], &[json!({"text":"Hello there","chunkSize":3,"toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"echo hi"}}]}), json!({"text":"Done."})]);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"hi"}}));
    w.until_id(json!("p"));
    w.send(json!({"jsonrpc":"2.0","id":"r","method":"replay"}));
    let frames = w.until_id(json!("r"));
    let result = frames.last().unwrap()["result"].clone();
    let replayed = &frames[..frames.len() - 1];
    assert!(replayed.iter().all(|f| f["replayed"] == true));
    let k = kinds(replayed);
    assert_eq!(k, ["TurnBegin", "StepBegin", "ContentPart", "ToolCall", "StatusUpdate", "ToolResult", "StepBegin", "ContentPart", "StatusUpdate", "TurnEnd"]);
    assert_eq!(replayed[2]["params"]["payload"]["text"], "Hello there", "text parts are merged");
    assert_eq!(replayed[3]["params"]["payload"]["function"]["arguments"], r#"{"command":"echo hi"}"#, "a tool call carries its full arguments");
    assert_eq!(result, json!({"status":"finished","events":10,"requests":0}));
    drop(w);

    let file = std::fs::read_dir(sessions.path()).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().ends_with(".wire.jsonl")).expect("a wire log beside the session");
    let first: Value = serde_json::from_str(std::fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(first, json!({"type":"metadata","protocol_version":"1.10"}));
    let session = file.to_string_lossy().replace(".wire.jsonl", ".jsonl");
    let mut resumed = Wire::start_with(&["--session", session.as_str()], &[]);
    resumed.send(json!({"jsonrpc":"2.0","id":"r2","method":"replay"}));
    let frames = resumed.until_id(json!("r2"));
    assert_eq!(frames.last().unwrap()["result"]["events"], 10);
}

#[test]
fn continue_resumes_the_session_not_the_wire_log_beside_it() {
    let sessions = tempfile::tempdir().unwrap();
    let dir = sessions.path().to_str().unwrap().to_owned();
    let mut w = Wire::start_with(&["--session-dir", dir.as_str()], &[json!({"text":"First answer."})]);
    w.send(json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocol_version":"1.10","client":{"name":"t","version":"1"}}}));
    w.until_id(json!("i"));
    w.send(json!({"jsonrpc":"2.0","id":"1","method":"prompt","params":{"user_input":"hi"}}));
    w.until_id(json!("1"));
    let (_, code) = w.finish();
    assert_eq!(code, 0);
    let names: Vec<String> = std::fs::read_dir(sessions.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().any(|n| n.ends_with(".wire.jsonl")), "the wire log, written last, is the newest file: {names:?}");

    // --continue takes the newest session file; before, it took the wire log and exited with
    // "line 1 is not a session header".
    let mut resumed = Wire::start_with(&["--continue", "--session-dir", dir.as_str()], &[]);
    resumed.send(json!({"jsonrpc":"2.0","id":"i2","method":"initialize","params":{"protocol_version":"1.10","client":{"name":"t","version":"1"}}}));
    resumed.until_id(json!("i2"));
    resumed.send(json!({"jsonrpc":"2.0","id":"r","method":"replay"}));
    let frames = resumed.until_id(json!("r"));
    let replayed = &frames[..frames.len() - 1];
    assert_eq!(kinds(&replayed[..2]), ["TurnBegin", "StepBegin"]);
    assert_eq!(replayed[0]["params"]["payload"]["user_input"], "hi", "the first turn is replayed");
    assert!(replayed.iter().any(|f| f["params"]["payload"]["text"] == "First answer."));
    drop(resumed);

    // rpc's list_sessions over the same directory lists the session only.
    let mut rpc = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--config-dir"])
        .arg(sessions.path())
        .args(["--session-dir", dir.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    rpc.stdin.take().unwrap().write_all(b"{\"id\":\"l\",\"type\":\"list_sessions\"}\n").unwrap();
    let out = rpc.wait_with_output().unwrap();
    let response = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|f| f["id"] == "l").expect("a list_sessions response");
    let listed: Vec<&str> = response["data"]["sessions"].as_array().unwrap().iter().map(|s| s["path"].as_str().unwrap()).collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].ends_with(".jsonl") && !listed[0].ends_with(".wire.jsonl"), "{listed:?}");
}

#[test]
fn provider_errors_interrupt_the_step_and_answer_32003() {
    // A scripted provider failure that is not retryable.
    let mut w = Wire::start(&[json!({"error":"500 boom"})]);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"x"}}));
    let frames = w.until_id(json!("p"));
    assert_eq!(kinds(&frames), ["TurnBegin", "StepBegin", "StepInterrupted", "TurnEnd", "error -32003"]);
    assert_eq!(frames.last().unwrap()["error"]["message"], "500 boom");
}

#[test]
fn questions_go_to_clients_that_support_them_and_their_answers_reach_the_model() {
    let ask = json!({"toolCalls":[{"id":"call_q_1","name":"AskUserQuestion","arguments":{"questions":[
        {"question":"Which color?","options":[{"label":"Blue"},{"label":"Red","description":"warm"}]}]}}]});
    let mut w = Wire::start(&[ask, json!({"text":"Blue it is."})]);
    w.send(json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocol_version":"1.10","capabilities":{"supports_question":true}}}));
    assert_eq!(w.next()["result"]["capabilities"]["supports_question"], true);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"pick a color"}}));
    let request = loop {
        let f = w.next();
        if f["method"] == "request" {
            break f;
        }
    };
    let payload = &request["params"]["payload"];
    assert_eq!(request["params"]["type"], "QuestionRequest");
    assert_eq!(request["id"], payload["id"]);
    assert_eq!(payload["tool_call_id"], "call_q_1");
    assert_eq!(payload["questions"][0]["question"], "Which color?");
    let id = payload["id"].as_str().unwrap().to_owned();
    w.send_raw(&json!({"jsonrpc":"2.0","id":id,"result":{"request_id":id,"answers":{"Which color?":"Blue"}}}).to_string());
    let frames = w.until_id(json!("p"));
    let result = frames.iter().find(|f| f["params"]["type"] == "ToolResult").unwrap();
    let rv = &result["params"]["payload"]["return_value"];
    assert_eq!(rv["is_error"], false);
    assert_eq!(serde_json::from_str::<Value>(rv["output"].as_str().unwrap()).unwrap(), json!({"answers":{"Which color?":"Blue"}}));
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn without_supports_question_the_model_is_not_offered_the_question_tool() {
    // The model calls it anyway: it is an unknown tool, an error result, and the turn goes on.
    let ask = json!({"toolCalls":[{"id":"call_q_1","name":"AskUserQuestion","arguments":{"questions":[{"question":"?","options":[]}]}}]});
    let mut w = Wire::start(&[ask, json!({"text":"I will ask in text."})]);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"pick"}}));
    let frames = w.until_id(json!("p"));
    assert!(frames.iter().all(|f| f["method"] != "request"), "no request without supports_question");
    let result = frames.iter().find(|f| f["params"]["type"] == "ToolResult").unwrap();
    assert_eq!(result["params"]["payload"]["return_value"]["is_error"], true);
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn a_question_answered_with_an_error_is_an_empty_answer() {
    let ask = json!({"toolCalls":[{"id":"call_q_1","name":"AskUserQuestion","arguments":{"questions":[{"question":"Which?","options":[{"label":"A"}]}]}}]});
    let mut w = Wire::start(&[ask, json!({"text":"ok"})]);
    w.send(json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocol_version":"1.10","capabilities":{"supports_question":true}}}));
    w.next();
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"pick"}}));
    let request = loop {
        let f = w.next();
        if f["method"] == "request" {
            break f;
        }
    };
    w.send_raw(&json!({"jsonrpc":"2.0","id":request["id"],"error":{"code":-32000,"message":"user closed the dialog"}}).to_string());
    let frames = w.until_id(json!("p"));
    let result = frames.iter().find(|f| f["params"]["type"] == "ToolResult").unwrap();
    assert_eq!(result["params"]["payload"]["return_value"]["output"], r#"{"answers":{}}"#);
}

#[test]
fn max_steps_per_turn_ends_the_turn_with_max_steps_reached() {
    let call = |id: &str| json!({"toolCalls":[{"id":id,"name":"ls","arguments":{}}]});
    let mut w = Wire::start_with(&["--max-steps-per-turn", "2"], &[call("c1"), call("c2"), call("c3"), json!({"text":"never reached"})]);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":"keep listing"}}));
    let frames = w.until_id(json!("p"));
    let k = kinds(&frames);
    assert_eq!(k.iter().filter(|k| *k == "StepBegin").count(), 2, "{k:?}");
    assert_eq!(k.iter().filter(|k| *k == "ToolResult").count(), 2, "{k:?}");
    assert_eq!(k[k.len() - 2], "TurnEnd");
    assert_eq!(frames.last().unwrap()["result"], json!({"status":"max_steps_reached","steps":2}));
    // The next prompt counts its steps afresh: a tool step and a text step fit in two.
    w.send(json!({"jsonrpc":"2.0","id":"p2","method":"prompt","params":{"user_input":"now stop"}}));
    let frames = w.until_id(json!("p2"));
    assert_eq!(frames.last().unwrap()["result"], json!({"status":"finished"}));
}
