//! The wire dialect as a projection of the core (issue "typed agent core"): one turn at a
//! time, every request answered exactly once, the line limit, the wire log of a fresh session
//! directory, slash-command dialogs as questions, and approvals scoped to their session and tool.
//! Everything through the real binary.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use common::wire::{kinds, Wire};
use serde_json::{json, Value};

/// Writes several requests in one write, as a host that does not wait would.
fn send_together(w: &mut Wire, frames: &[Value]) {
    let text: String = frames.iter().map(|f| format!("{f}\n")).collect();
    let stdin = w.stdin.as_mut().unwrap();
    stdin.write_all(text.as_bytes()).unwrap();
    stdin.flush().unwrap();
}

/// Frames until every id in `ids` has its response (and for `quiet` more, to catch extras).
fn until_answered(w: &mut Wire, ids: &[&str], quiet: Duration) -> Vec<Value> {
    let mut frames = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answered = ids.iter().all(|id| frames.iter().any(|f: &Value| f.get("method").is_none() && f["id"] == *id));
        let wait = if answered { quiet } else { deadline.saturating_duration_since(Instant::now()) };
        match w.rx.recv_timeout(wait) {
            Ok(f) => {
                w.checker.check(&f, Some(agentwire::protocol::validate::Direction::Outbound)).unwrap_or_else(|e| panic!("invalid wire frame: {e}\n{f}"));
                w.seen.push(f.clone());
                frames.push(f);
            }
            Err(_) if answered => return frames,
            Err(_) => panic!("not every request was answered: {ids:?}\n{frames:#?}"),
        }
    }
}

fn responses(frames: &[Value]) -> HashMap<String, usize> {
    let mut count = HashMap::new();
    for f in frames.iter().filter(|f| f.get("method").is_none()) {
        *count.entry(f["id"].as_str().map_or_else(|| f["id"].to_string(), str::to_owned)).or_insert(0) += 1;
    }
    count
}

fn assert_turns_alternate(frames: &[Value]) {
    let turns: Vec<String> = kinds(frames).into_iter().filter(|k| k == "TurnBegin" || k == "TurnEnd").collect();
    for pair in turns.chunks(2) {
        assert_eq!(pair, ["TurnBegin", "TurnEnd"], "TurnBegin and TurnEnd strictly alternate: {turns:?}");
    }
}

fn prompt(id: &str, text: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"prompt","params":{"user_input":text}})
}

/// A reply streamed as `n` ten-character deltas.
fn long_reply(n: usize) -> Value {
    json!({"textChunks": vec!["0123456789"; n]})
}

#[test]
fn a_prompt_while_the_turn_is_streaming_is_refused_and_never_interleaved() {
    // The reply streams for a while: a prompt sent after its first delta meets a turn that is
    // still in progress on the wire.
    let mut w = Wire::start(&[json!({"text":"a b c d e f g h i j k l","chunkSize":2,"delayMs":30}), json!({"text":"second"})]);
    w.send(prompt("p1", "first"));
    loop {
        if w.next()["params"]["type"] == "ContentPart" {
            break;
        }
    }
    w.send(prompt("p2", "second"));
    let frames = until_answered(&mut w, &["p1", "p2"], Duration::from_millis(300));
    assert_turns_alternate(&w.seen);
    let p2 = frames.iter().find(|f| f["id"] == "p2").unwrap();
    assert_eq!(p2["error"], json!({"code":-32000,"message":"An agent turn is already in progress","data":null}));
    let turn_end = frames.iter().position(|f| f["params"]["type"] == "TurnEnd").unwrap();
    let p2_at = frames.iter().position(|f| f["id"] == "p2").unwrap();
    assert!(p2_at < turn_end, "refused at once, not after the turn");
    assert_eq!(frames.iter().find(|f| f["id"] == "p1").unwrap()["result"]["status"], "finished");
    assert_eq!(responses(&frames).values().copied().max(), Some(1));

    // Right after the result, the next prompt is accepted (the turn is over for the client).
    w.send(prompt("p3", "third"));
    let frames = w.until_id(json!("p3"));
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
    assert_turns_alternate(&w.seen);
}

#[test]
fn prompt_cancel_prompt_written_together_are_each_answered_once() {
    for round in 0..8 {
        let mut w = Wire::start(&[json!({"text":"a b c d e f g h","chunkSize":2,"delayMs":20}), json!({"text":"again"}), json!({"text":"more"})]);
        send_together(&mut w, &[prompt("p1", "one"), json!({"jsonrpc":"2.0","id":"c1","method":"cancel"}), prompt("p2", "two")]);
        let frames = until_answered(&mut w, &["p1", "c1", "p2"], Duration::from_millis(200));
        let count = responses(&frames);
        assert_eq!((count["p1"], count["c1"], count["p2"]), (1, 1, 1), "round {round}: {frames:#?}");
        assert_eq!(frames.iter().find(|f| f["id"] == "c1").unwrap()["result"], json!({}), "round {round}: the turn exists once its prompt is accepted");
        assert_eq!(frames.iter().find(|f| f["id"] == "p1").unwrap()["result"]["status"], "cancelled", "round {round}");
        assert_turns_alternate(&frames);
    }
}

#[test]
fn a_steer_right_behind_its_prompt_is_steered() {
    for round in 0..8 {
        // The turn takes a moment, as any real one does: the steer is read while it runs.
        let mut w = Wire::start(&[json!({"text":"one two three four","chunkSize":4,"delayMs":15}), json!({"text":"steered answer"})]);
        send_together(&mut w, &[prompt("p", "go"), json!({"jsonrpc":"2.0","id":"s","method":"steer","params":{"user_input":"and be brief"}})]);
        let frames = until_answered(&mut w, &["p", "s"], Duration::from_millis(300));
        assert_eq!(frames.iter().find(|f| f["id"] == "s").unwrap()["result"], json!({"status":"steered"}), "round {round}: {frames:#?}");
        assert!(
            frames.iter().any(|f| matches!(f["params"]["type"].as_str(), Some("SteerInput" | "TurnBegin")) && f["params"]["payload"]["user_input"] == "and be brief"),
            "round {round}: the steered message reaches the model: {frames:#?}"
        );
        assert_turns_alternate(&frames);
        assert_eq!(responses(&frames).values().copied().max(), Some(1));
    }
}

#[test]
fn the_line_limit_applies_to_the_wire_too() {
    let mut w = Wire::start_with(&["--max-line-bytes", "2000"], &[json!({"text":"small one"})]);
    let big = "x".repeat(10_000);
    w.send(json!({"jsonrpc":"2.0","id":"big","method":"prompt","params":{"user_input": big}}));
    let e = w.next();
    assert_eq!((&e["id"], &e["error"]["code"]), (&json!("big"), &json!(-32600)), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("exceeds the line limit"), "{e}");
    w.send(prompt("small", "hi"));
    assert_eq!(w.until_id(json!("small")).last().unwrap()["result"]["status"], "finished", "the next request is served");
}

#[test]
fn the_wire_log_of_a_fresh_session_directory_keeps_the_first_turn() {
    let root = tempfile::tempdir().unwrap();
    let fresh = root.path().join("not").join("yet");
    let dir = fresh.to_str().unwrap().to_owned();
    let mut w = Wire::start_with(&["--session-dir", dir.as_str()], &[json!({"text":"First."})]);
    w.send(prompt("p", "hello"));
    w.until_id(json!("p"));
    let (_, code) = w.finish();
    assert_eq!(code, 0);
    let session = std::fs::read_dir(&fresh).unwrap().map(|e| e.unwrap().path()).find(|p| !p.to_string_lossy().ends_with(".wire.jsonl")).unwrap();
    let mut resumed = Wire::start_with(&["--session", session.to_str().unwrap()], &[]);
    resumed.send(json!({"jsonrpc":"2.0","id":"r","method":"replay"}));
    let frames = resumed.until_id(json!("r"));
    assert_eq!(kinds(&frames[..frames.len() - 1]), ["TurnBegin", "StepBegin", "ContentPart", "StatusUpdate", "TurnEnd"]);
    assert_eq!(frames[0]["params"]["payload"]["user_input"], "hello");
}

fn initialize(w: &mut Wire, questions: bool) {
    w.send(json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocol_version":"1.10","capabilities":{"supports_question":questions}}}));
    w.until_id(json!("i"));
}

fn next_request(w: &mut Wire) -> Value {
    loop {
        let f = w.next();
        if f["method"] == "request" {
            return f;
        }
    }
}

fn answer(w: &mut Wire, request: &Value, result: Value) {
    w.send_raw(&json!({"jsonrpc":"2.0","id":request["id"],"result":result}).to_string());
}

#[test]
fn slash_command_dialogs_are_questions_for_clients_that_answer_them() {
    let sessions = tempfile::tempdir().unwrap();
    let dir = sessions.path().to_str().unwrap().to_owned();
    let mut w = Wire::start_with(&["--session-dir", dir.as_str()], &[json!({"text":"hi"})]);
    initialize(&mut w, true);
    w.send(prompt("p0", "hello"));
    w.until_id(json!("p0"));
    w.send(prompt("n", "/name"));
    let ask = next_request(&mut w);
    assert_eq!(ask["params"]["type"], "QuestionRequest", "{ask}");
    let question = &ask["params"]["payload"]["questions"][0];
    assert_eq!(question["question"], "Session name");
    let id = ask["id"].clone();
    answer(&mut w, &ask, json!({"request_id": id, "answers": {"Session name": "Release work"}}));
    let frames = w.until_id(json!("n"));
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
    assert_turns_alternate(&w.seen);
    let session = std::fs::read_dir(sessions.path()).unwrap().map(|e| e.unwrap().path()).find(|p| !p.to_string_lossy().ends_with(".wire.jsonl")).unwrap();
    let text = std::fs::read_to_string(session).unwrap();
    assert!(text.lines().any(|l| l.contains("\"session_info\"") && l.contains("Release work")), "the name is saved:\n{text}");
}

#[test]
fn slash_command_dialogs_are_refused_with_a_reason_when_the_client_cannot_answer() {
    let mut w = Wire::start(&[]);
    initialize(&mut w, false);
    w.send(prompt("n", "/name"));
    let frames = w.until_id(json!("n"));
    assert!(frames.iter().all(|f| f["method"] != "request"), "no request the client cannot answer: {frames:#?}");
    let note = frames.iter().find(|f| f["params"]["type"] == "Notification").expect("the client is told why");
    assert!(note["params"]["payload"]["body"].as_str().unwrap().contains("supports_question"), "{note}");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
    assert_turns_alternate(&frames);
}

fn shell_call(id: &str, command: &str) -> Value {
    json!({"toolCalls":[{"id": id, "name":"bash","arguments":{"command": command}}]})
}

#[test]
fn approve_for_session_covers_that_tool_in_that_session_only() {
    let sessions = tempfile::tempdir().unwrap();
    let dir = sessions.path().to_str().unwrap().to_owned();
    let write = json!({"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"x"}}]});
    let mut w = Wire::start_with(
        &["--approval", "dangerous", "--session-dir", dir.as_str()],
        &[shell_call("b1", "echo one"), shell_call("b2", "echo two"), write, json!({"text":"done"}), shell_call("b3", "echo three"), json!({"text":"done again"})],
    );
    initialize(&mut w, true);
    w.send(prompt("p", "work"));
    let first = next_request(&mut w);
    assert_eq!(first["params"]["payload"]["tool_call_id"], "b1");
    answer(&mut w, &first, json!({"request_id": first["id"], "response": "approve_for_session"}));
    // b2 (bash again) runs without asking; w1 (write) asks.
    let second = next_request(&mut w);
    assert_eq!((&second["params"]["type"], &second["params"]["payload"]["tool_call_id"]), (&json!("ApprovalRequest"), &json!("w1")), "approving bash never approves write");
    answer(&mut w, &second, json!({"request_id": second["id"], "response": "approve"}));
    w.until_id(json!("p"));
    let results: Vec<&Value> = w.seen.iter().filter(|f| f["params"]["type"] == "ToolResult").collect();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r["params"]["payload"]["return_value"]["is_error"] == false), "{results:#?}");

    // A new session (its confirm dialog is a question here) asks again.
    w.send(prompt("n", "/new"));
    let confirm = next_request(&mut w);
    assert_eq!(confirm["params"]["type"], "QuestionRequest", "the /new dialog is not an approval of the last tool: {confirm}");
    let question = confirm["params"]["payload"]["questions"][0]["question"].as_str().unwrap().to_owned();
    answer(&mut w, &confirm, json!({"request_id": confirm["id"], "answers": {question: "Yes"}}));
    w.until_id(json!("n"));
    w.send(prompt("p2", "more work"));
    let again = next_request(&mut w);
    assert_eq!((&again["params"]["type"], &again["params"]["payload"]["tool_call_id"]), (&json!("ApprovalRequest"), &json!("b3")), "a new session asks again");
    answer(&mut w, &again, json!({"request_id": again["id"], "response": "approve"}));
    assert_eq!(w.until_id(json!("p2")).last().unwrap()["result"]["status"], "finished");
}

#[test]
fn an_approval_answer_that_is_not_exactly_approve_rejects() {
    let mut w = Wire::start_with(&["--approval", "dangerous"], &[shell_call("b1", "echo never"), json!({"text":"ok"})]);
    w.send(prompt("p", "run"));
    let ask = next_request(&mut w);
    answer(&mut w, &ask, json!({"request_id": ask["id"], "response": "approved, I guess"}));
    let frames = w.until_id(json!("p"));
    let result = frames.iter().find(|f| f["params"]["type"] == "ToolResult").unwrap();
    assert_eq!(result["params"]["payload"]["return_value"]["is_error"], true, "fail closed: {result}");
    let settled = frames.iter().find(|f| f["params"]["type"] == "ApprovalResponse").unwrap();
    assert_eq!(settled["params"]["payload"]["response"], "reject");
}

#[test]
fn streaming_costs_a_constant_number_of_bytes_per_delta() {
    let bytes_for = |n: usize| {
        let mut w = Wire::start(&[long_reply(n)]);
        w.send(prompt("p", "long"));
        let frames = w.until_id(json!("p"));
        let parts: Vec<usize> = frames.iter().filter(|f| f["params"]["type"] == "ContentPart").map(|f| f.to_string().len()).collect();
        assert_eq!(parts.len(), n);
        assert!(parts.iter().all(|b| *b <= 400), "at most 400 bytes per text delta: {:?}", parts.iter().max());
        parts.iter().sum::<usize>()
    };
    let (small, large) = (bytes_for(1000), bytes_for(2000));
    assert_eq!(large, 2 * small, "twice the deltas, twice the bytes");
}

#[test]
fn typos_in_methods_and_params_are_named_with_the_closest_known_name() {
    let mut w = Wire::start(&[]);
    w.send_raw(r#"{"jsonrpc":"2.0","id":"a","method":"promt","params":{}}"#);
    assert_eq!(w.next()["error"]["message"], r#"Unexpected method received: promt (did you mean "prompt"?)"#);
    w.send_raw(r#"{"jsonrpc":"2.0","id":"b","method":"prompt","params":{"user_inpt":"x"}}"#);
    let e = w.next();
    let reason = e["error"]["data"]["reason"].as_str().unwrap();
    assert!(reason.contains(r#"unknown field "user_inpt" (did you mean "user_input"?)"#) && reason.contains(r#""user_input" is a required property"#), "{e}");
}

/// kimi's ToolResult for a call the user rejected without feedback (notes §3.6.1).
fn rejected_stop(id: &str) -> Value {
    json!({"tool_call_id": id, "return_value": {"is_error": true, "output": "",
        "message": "The tool call is rejected by the user. Stop what you are doing and wait for the user to tell you how to proceed.",
        "display": [{"type": "brief", "text": "Rejected by user"}]}})
}

fn tool_result(frames: &[Value]) -> Value {
    let mut payload = frames.iter().find(|f| f["params"]["type"] == "ToolResult").unwrap_or_else(|| panic!("no ToolResult: {frames:#?}"))["params"]["payload"].clone();
    // `extras` is kimi's optional passthrough, null here.
    payload["return_value"].as_object_mut().unwrap().remove("extras");
    payload
}

#[test]
fn a_rejection_without_feedback_or_an_error_reply_ends_the_turn() {
    let answers = [
        json!({"result": {"request_id": "{id}", "response": "reject"}}),
        json!({"error": {"code": -32000, "message": "client closed the dialog"}}),
    ];
    for reply in answers {
        let mut w = Wire::start_with(&["--approval", "dangerous"], &[shell_call("b1", "echo never"), json!({"text":"asked again"}), json!({"text":"next turn"})]);
        w.send(prompt("p", "run"));
        let ask = next_request(&mut w);
        let mut frame = json!({"jsonrpc":"2.0","id":ask["id"]});
        for (k, v) in reply.as_object().unwrap() {
            frame[k] = v.clone();
        }
        if frame.get("result").is_some() {
            frame["result"]["request_id"] = ask["id"].clone();
        }
        w.send_raw(&frame.to_string());
        let frames = w.until_id(json!("p"));
        assert_eq!(tool_result(&frames), rejected_stop("b1"));
        let k = kinds(&frames);
        let at = k.iter().position(|k| k == "ToolResult").unwrap();
        assert_eq!(k[at + 1..].iter().filter(|k| *k != "StatusUpdate").collect::<Vec<_>>(), ["TurnEnd", "result"], "the turn ends right away: {k:?}");
        assert_eq!(kinds(&w.seen).iter().filter(|k| *k == "StepBegin").count(), 1, "no further model request");
        assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
        // The model was not asked in that turn: its next scripted reply is still unplayed.
        w.send(prompt("p2", "go on"));
        let frames = w.until_id(json!("p2"));
        let text: String = frames.iter().filter(|f| f["params"]["type"] == "ContentPart").filter_map(|f| f["params"]["payload"]["text"].as_str()).collect();
        assert_eq!(text, "asked again");
    }
}

#[test]
fn a_rejection_with_feedback_tells_the_model_and_the_turn_goes_on() {
    let mut w = Wire::start_with(&["--approval", "dangerous"], &[shell_call("b1", "echo never"), json!({"text":"understood"})]);
    w.send(prompt("p", "run"));
    let ask = next_request(&mut w);
    answer(&mut w, &ask, json!({"request_id": ask["id"], "response": "reject", "feedback": "use ls"}));
    let frames = w.until_id(json!("p"));
    assert_eq!(tool_result(&frames), json!({"tool_call_id": "b1", "return_value": {"is_error": true, "output": "",
        "message": "The tool call is rejected by the user. User feedback: use ls", "display": [{"type": "brief", "text": "Rejected: use ls"}]}}));
    assert_eq!(kinds(&w.seen).iter().filter(|k| *k == "StepBegin").count(), 2);
}

#[test]
fn an_external_tool_error_reply_is_kimis_tool_error_and_the_loop_goes_on() {
    let mut w = Wire::start(&[json!({"toolCalls":[{"id":"call_ext_1","name":"lookup_ticket","arguments":{"id":"T-42"}}]}), json!({"text":"The db is down."})]);
    w.send(json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocol_version":"1.10","external_tools":[
        {"name":"lookup_ticket","description":"Look up a ticket.","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}]}}));
    w.until_id(json!("i"));
    w.send(prompt("p", "check T-42"));
    let call = next_request(&mut w);
    w.send_raw(&json!({"jsonrpc":"2.0","id":call["id"],"error":{"code":-32000,"message":"ticket db offline"}}).to_string());
    let frames = w.until_id(json!("p"));
    assert_eq!(tool_result(&frames), json!({"tool_call_id": "call_ext_1", "return_value": {"is_error": true, "output": "",
        "message": "ticket db offline", "display": [{"type": "brief", "text": "External tool error"}]}}));
    assert_eq!(kinds(&w.seen).iter().filter(|k| *k == "StepBegin").count(), 2, "the loop continues");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn question_requests_carry_kimis_defaults() {
    let ask = json!({"toolCalls":[{"id":"call_q_1","name":"AskUserQuestion","arguments":{"questions":[{"question":"Which?","options":[{"label":"A"},{"label":"B"}]}]}}]});
    let mut w = Wire::start(&[ask, json!({"text":"ok"})]);
    initialize(&mut w, true);
    w.send(prompt("p", "pick"));
    let request = next_request(&mut w);
    assert_eq!(request["params"]["payload"]["questions"], json!([{"question":"Which?","header":"","body":"","multi_select":false,"other_label":"","other_description":"",
        "options":[{"label":"A","description":""},{"label":"B","description":""}]}]));
    answer(&mut w, &request, json!({"request_id": request["id"], "answers": {"Which?": "A"}}));
    w.until_id(json!("p"));
}

#[test]
fn an_image_for_a_text_only_model_is_refused_after_turn_begin_and_turn_end() {
    let mut w = Wire::start(&[json!({"text":"never"})]);
    let input = json!([{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]);
    w.send(json!({"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":input}}));
    let frames = w.until_id(json!("p"));
    assert_eq!(kinds(&frames), ["TurnBegin", "TurnEnd", "error -32002"]);
    let mut echoed = input.clone();
    echoed[1]["image_url"]["id"] = Value::Null;
    assert_eq!(frames[0]["params"]["payload"]["user_input"], echoed, "the parts as sent, the image's id null as kimi writes it");
    assert_eq!(frames[2]["error"]["message"], "LLM model 'offline' does not support required capability: image_in.");
}
