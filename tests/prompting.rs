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
            "message_end:assistant", "turn_end", "agent_end", "prompt_result"
        ]
    );
    assert_eq!(frames[0]["id"], "p1");
    let end = &frames[15]["message"];
    assert_eq!((&end["content"][1]["text"], &end["stopReason"]), (&json!("Hello there!"), &json!("stop")));
    assert_eq!(frames[17]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(frames[18], json!({"type":"prompt_result","id":"p1","status":"completed","agentInvoked":true}));
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
fn immediate_interrupt_mode_skips_the_remaining_tool_calls_for_a_steer() {
    let calls = json!({"text":"two calls","delayMs":30,"chunkSize":50,"toolCalls":[
        {"id":"c1","name":"bash","arguments":{"command":"sleep 0.4; echo one"}},
        {"id":"c2","name":"bash","arguments":{"command":"echo two"}}]});
    let mut a = Agent::start(&[], &[calls, text_reply("after steer")]);
    a.send(json!({"id":"p","type":"prompt","message":"run both"}));
    a.until(|f| f["type"] == "tool_execution_start" && f["toolCallId"] == "c1");
    a.request(json!({"id":"s","type":"steer","message":"stop that"}));
    let frames = a.until_prompt_result("p");
    let end2 = frames.iter().find(|f| f["type"] == "tool_execution_end" && f["toolCallId"] == "c2").unwrap();
    assert_eq!((&end2["isError"], &end2["result"]["content"][0]["text"]), (&json!(true), &json!("Skipped: a steering message arrived")));
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
    assert_eq!(t[t.len() - 4..], ["turn_end", "notice", "agent_end", "prompt_result"]);
    let notice = &frames[frames.len() - 3];
    assert_eq!((&notice["level"], &notice["message"]), (&json!("warning"), &json!("Stopped after 1 step (--max-steps-per-turn)")));
    assert_eq!(frames.last().unwrap()["status"], "completed");
}
