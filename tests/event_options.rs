//! `set_event_options`: with `partialMessages:false` (the default profile's stream, pi 1.6's
//! delta-only `message_update`) an update carries the step alone (no `message`, no
//! `assistantMessageEvent.partial`, but pi 1.6's `usage` and omp's `messageId`), `message_end`
//! the whole message; `partialMessages:true` (the default of `--rpc-profile pi-0.73`) brings pi
//! 0.73's snapshots back. Checked through the real binary, frame by frame, and by counting the
//! bytes a 20 000-delta reply puts on stdout.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use agentwire::protocol::validate::{validator, SchemaDialect, Direction};
use common::{types, Agent};
use serde_json::{json, Value};

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap_or_else(|| panic!("not an object: {v}")).keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

/// A reply with every kind of step: thinking, text and a tool call, streamed in small deltas.
fn every_step() -> Vec<Value> {
    vec![
        json!({"thinking": "Let me look.", "text": "Listing the files now.", "chunkSize": 4,
               "toolCalls": [{"id": "call_ls", "name": "ls", "arguments": {"path": "."}, "argumentChunks": ["{\"pa", "th\":", "\".\"}"]}]}),
        json!({"text": "There is nothing here.", "chunkSize": 6}),
    ]
}

/// What each lean `assistantMessageEvent` carries: its step's own fields and nothing else.
fn lean_keys(kind: &str) -> Vec<&'static str> {
    match kind {
        "text_start" | "thinking_start" => vec!["contentIndex", "type"],
        "toolcall_start" => vec!["contentIndex", "id", "toolName", "type"],
        "text_delta" | "thinking_delta" | "toolcall_delta" => vec!["contentIndex", "delta", "type"],
        "text_end" | "thinking_end" => vec!["content", "contentIndex", "type"],
        "toolcall_end" => vec!["contentIndex", "toolCall", "type"],
        other => panic!("unexpected assistantMessageEvent {other}"),
    }
}

#[test]
fn lean_updates_carry_the_step_alone_and_message_end_the_whole_message() {
    let mut a = Agent::start(&[], &every_step());
    let r = a.request(json!({"id": "eo1", "type": "set_event_options", "partialMessages": false}));
    assert_eq!(r, json!({"id": "eo1", "type": "response", "command": "set_event_options", "success": true}));
    a.send(json!({"id": "p1", "type": "prompt", "message": "What is here?"}));
    let frames = a.until_prompt_result("p1");
    let updates: Vec<&Value> = frames.iter().filter(|f| f["type"] == "message_update").collect();
    assert!(updates.len() > 15, "{:?}", types(&frames));
    for u in &updates {
        assert_eq!(keys(u), ["assistantMessageEvent", "messageId", "type", "usage"], "no top-level snapshot: {u}");
        let step = &u["assistantMessageEvent"];
        assert_eq!(keys(step), lean_keys(step["type"].as_str().unwrap()), "no partial: {u}");
    }
    let seen: std::collections::BTreeSet<&str> = updates.iter().map(|u| u["assistantMessageEvent"]["type"].as_str().unwrap()).collect();
    for kind in ["thinking_start", "thinking_delta", "thinking_end", "text_start", "text_delta", "text_end", "toolcall_start", "toolcall_delta", "toolcall_end"] {
        assert!(seen.contains(kind), "{kind} streamed: {seen:?}");
    }
    // The deltas rebuild what message_end carries whole.
    let ends: Vec<&Value> = frames.iter().filter(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant").collect();
    assert_eq!(ends.len(), 2);
    let first_turn: Vec<&&Value> = updates.iter().take_while(|u| u["assistantMessageEvent"]["type"] != "toolcall_end").collect();
    let deltas = |kind: &str| -> String {
        first_turn.iter().filter(|u| u["assistantMessageEvent"]["type"] == kind).map(|u| u["assistantMessageEvent"]["delta"].as_str().unwrap()).collect()
    };
    let content = &ends[0]["message"]["content"];
    assert_eq!(content[0], json!({"type": "thinking", "thinking": deltas("thinking_delta")}));
    assert_eq!(content[1], json!({"type": "text", "text": deltas("text_delta")}));
    assert_eq!(content[1]["text"], "Listing the files now.");
    assert_eq!(deltas("toolcall_delta"), "{\"path\":\".\"}");
    assert_eq!((&content[2]["type"], &content[2]["name"], &content[2]["arguments"]), (&json!("toolCall"), &json!("ls"), &json!({"path": "."})));
    assert_eq!(ends[1]["message"]["content"], json!([{"type": "text", "text": "There is nothing here."}]));
}

#[test]
fn the_default_stream_is_delta_only_and_the_toolcall_start_names_its_call() {
    let mut a = Agent::start(&[], &every_step());
    a.send(json!({"id": "p1", "type": "prompt", "message": "What is here?"}));
    let frames = a.until_prompt_result("p1");
    let updates: Vec<&Value> = frames.iter().filter(|f| f["type"] == "message_update").collect();
    assert!(updates.len() > 15 && updates.iter().all(|u| u.get("message").is_none() && u["assistantMessageEvent"].get("partial").is_none()), "{updates:?}");
    let start = updates.iter().find(|u| u["assistantMessageEvent"]["type"] == "toolcall_start").unwrap();
    assert_eq!((&start["assistantMessageEvent"]["id"], &start["assistantMessageEvent"]["toolName"]), (&json!("call_ls"), &json!("ls")));
    // One messageId from message_start through message_end, a new one per message.
    let ids: Vec<(&str, &str)> = frames.iter().filter(|f| f["type"].as_str().unwrap().starts_with("message_")).map(|f| (f["type"].as_str().unwrap(), f["messageId"].as_str().unwrap())).collect();
    let first_assistant = ids.iter().position(|(t, _)| *t == "message_update").unwrap() - 1;
    let id = ids[first_assistant].1;
    assert!(ids[first_assistant..].iter().take_while(|(t, _)| *t != "message_end").all(|(_, i)| *i == id), "{ids:?}");
    let starts: std::collections::BTreeSet<&str> = ids.iter().filter(|(t, _)| *t == "message_start").map(|(_, i)| *i).collect();
    assert_eq!(starts.len(), ids.iter().filter(|(t, _)| *t == "message_start").count(), "{ids:?}");
    // The tool's run is timed.
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert!(end["durationMs"].as_f64().unwrap() >= 0.0, "{end}");
}

#[test]
fn the_pi_073_profile_streams_snapshots_without_the_new_fields() {
    let mut a = Agent::start(&["--rpc-profile", "pi-0.73"], &every_step());
    a.send(json!({"id": "p1", "type": "prompt", "message": "What is here?"}));
    let frames = a.until_prompt_result("p1");
    let updates: Vec<&Value> = frames.iter().filter(|f| f["type"] == "message_update").collect();
    assert!(updates.len() > 15);
    for u in &updates {
        assert_eq!(keys(u), ["assistantMessageEvent", "message", "type"], "{u}");
        assert_eq!(u["message"], u["assistantMessageEvent"]["partial"]);
    }
    let start = updates.iter().find(|u| u["assistantMessageEvent"]["type"] == "toolcall_start").unwrap();
    assert_eq!(keys(&start["assistantMessageEvent"]), ["contentIndex", "partial", "type"]);
    assert!(frames.iter().all(|f| f.get("messageId").is_none() && f.get("durationMs").is_none()), "{frames:?}");
}

#[test]
fn snapshots_come_back_with_partial_messages_true() {
    let reply = json!({"text": "Hello there!", "chunkSize": 5});
    let mut a = Agent::start(&[], &[reply.clone(), reply.clone(), reply]);
    let snapshots = |frames: &[Value]| -> Vec<bool> {
        frames.iter().filter(|f| f["type"] == "message_update").map(|u| u.get("message").is_some() && u["assistantMessageEvent"].get("partial").is_some()).collect()
    };
    a.request(json!({"id": "on0", "type": "set_event_options", "partialMessages": true}));
    a.send(json!({"id": "p1", "type": "prompt", "message": "hi"}));
    let default = snapshots(&a.until_prompt_result("p1"));
    assert!(!default.is_empty() && default.iter().all(|&s| s), "pi 0.73's snapshots on request: {default:?}");

    a.request(json!({"id": "off", "type": "set_event_options", "partialMessages": false}));
    a.send(json!({"id": "p2", "type": "prompt", "message": "hi"}));
    let lean = snapshots(&a.until_prompt_result("p2"));
    assert!(!lean.is_empty() && lean.iter().all(|&s| !s), "{lean:?}");

    let r = a.request(json!({"id": "on", "type": "set_event_options", "partialMessages": true}));
    assert_eq!(r["success"], true);
    a.send(json!({"id": "p3", "type": "prompt", "message": "hi"}));
    let restored = snapshots(&a.until_prompt_result("p3"));
    assert_eq!(restored, default, "the snapshots again");
    // The snapshot is the message after the step, as before.
    let last = a.seen.iter().rev().find(|f| f["type"] == "message_update" && f["assistantMessageEvent"]["type"] == "text_end").unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "Hello there!");
    assert_eq!(last["message"], last["assistantMessageEvent"]["partial"]);
}

#[test]
fn bad_set_event_options_get_one_validation_error_with_their_id_and_change_nothing() {
    // The legacy profile streams snapshots by default, so a request that wrongly took effect
    // would show.
    let mut a = Agent::start(&["--rpc-profile", "pi-0.73"], &[json!({"text": "abc", "chunkSize": 1})]);
    for (id, frame, expected) in [
        ("t", json!({"id": "t", "type": "set_event_options", "partialMessages": "no"}), "set_event_options: /partialMessages: \"no\" is not of type \"boolean\""),
        ("m", json!({"id": "m", "type": "set_event_options"}), "set_event_options: /partialMessages: \"partialMessages\" is a required property"),
        ("u", json!({"id": "u", "type": "set_event_options", "partialMessages": false, "snapshots": false}), "set_event_options: /snapshots: unknown field \"snapshots\""),
    ] {
        let r = a.request(frame);
        assert_eq!((&r["id"], &r["command"], &r["success"], &r["code"]), (&json!(id), &json!("set_event_options"), &json!(false), &json!("invalid_params")), "{r}");
        assert_eq!(r["error"], expected);
    }
    // None of them switched the stream.
    a.send(json!({"id": "p", "type": "prompt", "message": "hi"}));
    let frames = a.until_prompt_result("p");
    assert!(frames.iter().filter(|f| f["type"] == "message_update").all(|u| u.get("message").is_some()));
    assert_eq!(a.seen.iter().filter(|f| f["type"] == "response").count(), 4, "exactly one response per request");
}

/// The lean stream's budget: a 20 000-delta reply costs at most 2× its text plus 450 bytes per
/// delta on stdout (pi 1.6's `usage` is ~170 of them; pi 0.73's snapshot stream is O(n²): ~4 GB
/// for this reply). A byte count, not a timing.
#[test]
fn a_twenty_thousand_delta_reply_stays_within_the_byte_budget() {
    const DELTAS: usize = 20_000;
    let text: String = (0..DELTAS).map(|i| format!("{:>9} ", i % 1_000_000_000)).collect();
    assert_eq!(text.len(), DELTAS * 10);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, format!("{}\n", json!({"text": text, "chunkSize": 10}))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--no-session", "--cwd"])
        .arg(dir.path())
        .arg("--config-dir")
        .arg(dir.path())
        .arg("--model-script")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"id\":\"eo\",\"type\":\"set_event_options\",\"partialMessages\":false}\n{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n").unwrap();
    stdin.flush().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut bytes, mut deltas, mut rebuilt, mut line) = (0usize, 0usize, String::new(), String::new());
    let mut options_answered = false;
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "stdout ended before prompt_result");
        let frame: Value = serde_json::from_str(&line).unwrap();
        validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &frame, None).unwrap_or_else(|e| panic!("{e}: {line}"));
        if frame["id"] == "eo" {
            assert_eq!(frame["success"], true);
            options_answered = true;
        }
        if frame["id"] == "p" && frame["type"] == "response" {
            // Counting starts with the reply: everything the prompt causes.
            bytes = 0;
        }
        bytes += line.len();
        if frame["type"] == "message_update" && frame["assistantMessageEvent"]["type"] == "text_delta" {
            deltas += 1;
            rebuilt.push_str(frame["assistantMessageEvent"]["delta"].as_str().unwrap());
        }
        if frame["type"] == "prompt_result" {
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    assert!(options_answered);
    assert_eq!(deltas, DELTAS);
    assert_eq!(rebuilt, text, "the deltas are the whole text");
    let budget = 2 * text.len() + 450 * DELTAS;
    assert!(bytes <= budget, "{bytes} bytes on stdout for {} bytes of text in {DELTAS} deltas (budget {budget})", text.len());
}
