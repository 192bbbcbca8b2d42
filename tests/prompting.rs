//! Prompting, the event sequence, queues (steer / follow-up, one-at-a-time / all), the busy
//! rule and `prompt_result`.

mod common;

use common::{text_reply, tool_reply, types, Agent};
use serde_json::{json, Value};

fn slow(text: &str) -> Value {
    json!({"text": text, "chunkSize": 4, "delayMs": 40})
}

#[test]
fn a_prompt_streams_the_documented_event_sequence() {
    let mut a = Agent::start(&[], &[json!({"thinking": "Short.", "text": "Hello there!", "chunkSize": 5})]);
    a.send(json!({"id":"p1","type":"prompt","message":"hi"}));
    let frames = a.until_prompt_result("p1");
    assert_eq!(
        types(&frames),
        [
            "response", "agent_start", "turn_start", "message_start:user", "message_end:user", "message_start:assistant",
            "mu:thinking_start", "mu:thinking_delta", "mu:thinking_delta", "mu:thinking_end",
            "mu:text_start", "mu:text_delta", "mu:text_delta", "mu:text_delta", "mu:text_end",
            "message_end:assistant", "turn_end", "agent_end", "agent_settled", "prompt_result"
        ]
    );
    assert_eq!(frames[0]["id"], "p1");
    let end = &frames[15]["message"];
    assert_eq!((&end["content"][1]["text"], &end["stopReason"]), (&json!("Hello there!"), &json!("stop")));
    assert_eq!(frames[17]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(frames[18], json!({"type":"agent_settled","aborted":false}));
    assert_eq!(frames[19], json!({"type":"prompt_result","id":"p1","status":"completed","agentInvoked":true,"sessionSettled":true}));
    assert_eq!(a.request(json!({"id":"t","type":"get_last_assistant_text"}))["data"], json!({"text":"Hello there!"}));
    assert_eq!(a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].as_array().unwrap().len(), 2);
}

#[test]
fn the_unscripted_offline_model_answers_from_the_prompt() {
    let mut a = Agent::start(&[], &[]);
    a.send(json!({"id":"p","type":"prompt","message":"hello"}));
    a.until_prompt_result("p");
    let text = a.request(json!({"id":"t","type":"get_last_assistant_text"}))["data"]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("You said: \"hello\"."), "{text}");
}

#[test]
fn busy_prompts_need_a_streaming_behavior_and_queue_updates_precede_responses() {
    let mut a = Agent::start(&[], &[slow("first reply is slow"), text_reply("second"), text_reply("third")]);
    a.send(json!({"id":"p1","type":"prompt","message":"one"}));
    a.until(|f| f["type"] == "message_start" && f["message"]["role"] == "assistant");
    let busy = a.request(json!({"id":"p2","type":"prompt","message":"two"}));
    assert_eq!((&busy["success"], &busy["code"]), (&json!(false), &json!("busy")));
    // The run keeps streaming meanwhile: look only at the queue frames and responses.
    let queue_frames = |frames: Vec<Value>| -> Vec<Value> {
        frames.into_iter().filter(|f| f["type"] == "queue_update" || f["type"] == "response").collect()
    };
    a.send(json!({"id":"p3","type":"prompt","message":"as steer","streamingBehavior":"steer"}));
    let got = queue_frames(a.until(|f| f["id"] == "p3"));
    assert_eq!(got[0], json!({"type":"queue_update","steering":["as steer"],"followUp":[]}));
    assert_eq!(got[1]["id"], "p3");
    a.send(json!({"id":"f1","type":"follow_up","message":"later"}));
    let got = queue_frames(a.until(|f| f["id"] == "f1"));
    assert_eq!(got[0], json!({"type":"queue_update","steering":["as steer"],"followUp":["later"]}));
    assert_eq!(got[1]["id"], "f1");
    let state = a.request(json!({"id":"s","type":"get_state"}));
    assert_eq!((&state["data"]["pendingMessageCount"], &state["data"]["queuedMessageCount"], &state["data"]["isStreaming"]), (&json!(2), &json!(2), &json!(true)));
    let frames = a.until_prompt_result("p1");
    let t = types(&frames);
    // One run: the steer is delivered first (its own turn), then the follow-up.
    assert_eq!(t.iter().filter(|t| *t == "agent_start").count(), 0, "agent_start came before");
    assert_eq!(t.iter().filter(|t| *t == "agent_end").count(), 1);
    let users: Vec<&Value> = frames.iter().filter(|f| f["type"] == "message_start" && f["message"]["role"] == "user").map(|f| &f["message"]).collect();
    assert_eq!(users.iter().map(|m| m["content"][0]["text"].as_str().unwrap()).collect::<Vec<_>>(), ["as steer", "later"]);
    assert_eq!(users[0]["steering"], true);
    let i = t.iter().position(|t| t == "message_start:user").unwrap();
    assert_eq!(t[i - 1], "queue_update", "delivery is announced right before the user message");
}

#[test]
fn all_mode_delivers_every_queued_steer_in_one_turn() {
    let mut a = Agent::start(&[], &[slow("slow first"), text_reply("both handled")]);
    assert_eq!(a.request(json!({"id":"m","type":"set_steering_mode","mode":"all"}))["success"], true);
    a.send(json!({"id":"p1","type":"prompt","message":"go"}));
    a.until(|f| f["type"] == "message_start" && f["message"]["role"] == "assistant");
    a.request(json!({"id":"s1","type":"steer","message":"a"}));
    a.request(json!({"id":"s2","type":"steer","message":"b"}));
    let frames = a.until_prompt_result("p1");
    let t = types(&frames);
    let second_turn = t.iter().rposition(|t| t == "turn_start").unwrap();
    assert_eq!(&t[second_turn..second_turn + 7], ["turn_start", "queue_update", "message_start:user", "message_end:user", "queue_update", "message_start:user", "message_end:user"]);
}

#[test]
fn idle_steer_and_follow_up_start_a_run() {
    let mut a = Agent::start(&[], &[text_reply("steered"), text_reply("followed")]);
    a.send(json!({"id":"s","type":"steer","message":"hello"}));
    let frames = a.until_prompt_result("s");
    assert_eq!(types(&frames)[..2], ["response", "agent_start"]);
    a.send(json!({"id":"f","type":"follow_up","message":"again"}));
    assert_eq!(a.until_prompt_result("f").last().unwrap()["status"], "completed");
}

#[test]
fn immediate_interrupt_mode_skips_the_tool_calls_still_waiting_to_start() {
    // Calls run in parallel; the second waits behind the first one's approval, so a steer that
    // arrives meanwhile skips it.
    let calls = json!({"text":"two calls","toolCalls":[
        {"id":"c1","name":"bash","arguments":{"command":"echo one"}},
        {"id":"c2","name":"bash","arguments":{"command":"echo two"}}]});
    let mut a = Agent::start(&["--approval", "dangerous"], &[calls, text_reply("after steer")]);
    a.send(json!({"id":"p","type":"prompt","message":"run both"}));
    let ask = a.until(|f| f["type"] == "extension_ui_request" && f["method"] == "select").pop().unwrap();
    a.request(json!({"id":"s","type":"steer","message":"stop that"}));
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Approve"}));
    let frames = a.until_prompt_result("p");
    let end1 = frames.iter().find(|f| f["type"] == "tool_execution_end" && f["toolCallId"] == "c1").unwrap();
    assert_eq!(end1["isError"], false);
    let end2 = frames.iter().find(|f| f["type"] == "tool_execution_end" && f["toolCallId"] == "c2").unwrap();
    assert_eq!((&end2["isError"], &end2["result"]["content"][0]["text"]), (&json!(true), &json!("Skipped: a steering message arrived")));
    assert!(!frames.iter().any(|f| f["type"] == "extension_ui_request" && f["method"] == "select"), "the skipped call is not asked about");
}

#[test]
fn tool_calls_of_one_message_run_in_parallel() {
    // pi (notes §2.9.4): every start first, ends in completion order, results in call order.
    let calls = json!({"text":"three calls","toolCalls":[
        {"id":"c1","name":"bash","arguments":{"command":"sleep 1; echo one"}},
        {"id":"c2","name":"bash","arguments":{"command":"sleep 1; echo two"}},
        {"id":"c3","name":"bash","arguments":{"command":"sleep 0.3; echo three"}}]});
    let mut a = Agent::start(&[], &[calls, text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"run all"}));
    let frames = a.until_prompt_result("p");
    let of = |kind: &str| -> Vec<String> {
        frames.iter().filter(|f| f["type"] == kind).map(|f| f["toolCallId"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(of("tool_execution_start"), ["c1", "c2", "c3"]);
    let t = types(&frames);
    let last_start = t.iter().rposition(|t| t == "tool_execution_start").unwrap();
    let first_end = t.iter().position(|t| t == "tool_execution_end").unwrap();
    assert!(last_start < first_end, "all starts come before the first end: {t:?}");
    // c3 sleeps 0.3 s, c1 and c2 a second: run one after the other, c3 could not end first.
    assert_eq!(of("tool_execution_end")[0], "c3", "ends come in completion order");
    let results: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "message_end" && f["message"]["role"] == "toolResult")
        .map(|f| f["message"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["c1", "c2", "c3"], "tool results in call order");
    let turn_end = frames.iter().find(|f| f["type"] == "turn_end").unwrap();
    let texts: Vec<&str> = turn_end["toolResults"].as_array().unwrap().iter().map(|r| r["content"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["one\n", "two\n", "three\n"]);
}

#[test]
fn a_model_error_ends_the_prompt_with_status_error() {
    let mut a = Agent::start(&[], &[json!({"text":"partial ","error":"upstream exploded"})]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let frames = a.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant").unwrap();
    assert_eq!((&end["message"]["stopReason"], &end["message"]["errorMessage"]), (&json!("error"), &json!("upstream exploded")));
    let result = frames.last().unwrap();
    assert_eq!((&result["status"], &result["error"]["message"]), (&json!("error"), &json!("upstream exploded")));
}

#[test]
fn max_steps_per_turn_stops_the_run_with_a_notice() {
    let ls = || tool_reply("ls", json!({}));
    let mut a = Agent::start(&["--max-steps-per-turn", "1"], &[ls(), ls(), text_reply("unreached")]);
    a.send(json!({"id":"p1","type":"prompt","message":"list forever"}));
    let frames = a.until_prompt_result("p1");
    let t = types(&frames);
    assert_eq!(t.iter().filter(|t| *t == "message_start:assistant").count(), 1, "{t:?}");
    assert_eq!(t[t.len() - 5..], ["turn_end", "notice", "agent_end", "agent_settled", "prompt_result"]);
    let notice = &frames[frames.len() - 4];
    assert_eq!((&notice["level"], &notice["message"]), (&json!("warning"), &json!("Stopped after 1 step (--max-steps-per-turn)")));
    assert_eq!(frames.last().unwrap()["status"], "completed");
}

#[test]
fn an_image_for_a_text_only_model_is_refused_not_dropped() {
    // The offline model reads only text and says so in its model entry.
    let mut a = Agent::start(&[], &[text_reply("never")]);
    let models = a.request(json!({"id":"m","type":"get_available_models"}))["data"]["models"].clone();
    assert_eq!(models[0]["input"], json!(["text"]));
    let image = json!({"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"});
    // A prompt is accepted and its run fails at once with the reason: a host that waits for
    // agent_end (pi's RpcClient does not look at `success`) is not left hanging.
    let r = a.request(json!({"id": "p", "type": "prompt", "message":"what is this?", "images":[image]}));
    assert_eq!(r["success"], true, "{r}");
    let frames = a.until_prompt_result("p");
    let result = frames.last().unwrap();
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(result["error"]["message"], "LLM model 'offline' does not support required capability: image_in.");
    let kinds: Vec<&str> = frames.iter().map(|f| f["type"].as_str().unwrap_or_default()).collect();
    assert_eq!(kinds, ["agent_start", "agent_end", "agent_settled", "prompt_result"], "an empty run: {frames:?}");
    // steer and follow_up are refused outright (they have no run of their own to fail).
    for (id, kind) in [("s", "steer"), ("f", "follow_up")] {
        let r = a.request(json!({"id": id, "type": kind, "message":"what is this?", "images":[image]}));
        assert_eq!((&r["success"], &r["code"]), (&json!(false), &json!("unsupported")), "{r}");
        assert_eq!(r["error"], "LLM model 'offline' does not support required capability: image_in.");
    }
    assert_eq!(a.request(json!({"id":"g","type":"get_messages"}))["data"]["messages"], json!([]), "nothing was sent on");
}
