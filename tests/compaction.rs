//! Compaction: manual `compact` (events before the response, a compaction entry, later
//! requests see the summary), its refusals, automatic compaction at a threshold, and a
//! context-overflow error triggering compaction and one retry.

mod common;

use common::fake_llm::{openai_text, status, FakeLlm};
use common::{text_reply, types, Agent};
use serde_json::{json, Value};

fn prompt(a: &mut Agent, id: &str, text: &str) -> Vec<Value> {
    a.send(json!({"id": id, "type": "prompt", "message": text}));
    a.until_prompt_result(id)
}

#[test]
fn manual_compact_summarises_older_messages() {
    let mut a = Agent::start(&["--compaction-keep-tokens", "10"], &[text_reply("answer one"), text_reply("answer two")]);
    let small = a.request(json!({"id":"c0","type":"compact"}));
    assert_eq!((&small["success"], &small["code"]), (&json!(false), &json!("conflict")));
    prompt(&mut a, "p1", "first question");
    prompt(&mut a, "p2", "second question");
    a.send(json!({"id":"c","type":"compact","customInstructions":"Keep it short"}));
    let frames = a.until(|f| f["id"] == "c");
    assert_eq!(types(&frames), ["compaction_start", "compaction_end", "response"]);
    let result = frames[2]["data"].clone();
    assert_eq!(frames[1]["result"], result);
    assert_eq!(result["summary"], "## Summary\nThe user asked:\n- first question");
    assert!(result["tokensBefore"].as_u64().unwrap() > 0);
    let messages = a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].clone();
    let roles: Vec<&str> = messages.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["compactionSummary", "user", "assistant"]);
    let again = a.request(json!({"id":"c2","type":"compact"}));
    assert_eq!(again["error"], "Already compacted");
    let file = a.request(json!({"id":"s","type":"get_state"}))["data"]["sessionFile"].as_str().unwrap().to_owned();
    let entries: Vec<Value> = std::fs::read_to_string(file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(entries.last().unwrap()["type"], "compaction");
}

#[test]
fn automatic_compaction_runs_inside_the_run_when_the_context_is_full() {
    // The script also answers the summary request (the third model request).
    let mut a = Agent::start(&["--compaction-threshold", "0.000001", "--compaction-keep-tokens", "10"], &[text_reply("one"), text_reply("## Summary\nfirst was asked"), text_reply("two")]);
    let frames = prompt(&mut a, "p1", "first");
    assert!(!types(&frames).iter().any(|t| t.contains("compaction")), "nothing to compact yet: no events");
    let frames = prompt(&mut a, "p2", "second");
    let t = types(&frames);
    // pi's names for automatic compaction too (notes §2.9.5); omp's auto_compaction_* never.
    assert!(!t.iter().any(|t| t.starts_with("auto_compaction")), "{t:?}");
    let start = t.iter().position(|t| t == "compaction_start").expect("auto compaction ran");
    assert_eq!(frames[start]["reason"], "threshold");
    assert_eq!((&frames[start + 1]["type"], &frames[start + 1]["reason"]), (&json!("compaction_end"), &json!("threshold")));
    assert_eq!(frames[start + 1]["result"]["summary"], "## Summary\nfirst was asked");
    assert_eq!(a.request(json!({"id":"t","type":"get_last_assistant_text"}))["data"]["text"], "two");
    assert_eq!(t[t.len() - 3..], ["agent_end", "agent_settled", "prompt_result"], "the run still ends properly");
    a.request(json!({"id":"off","type":"set_auto_compaction","enabled":false}));
    let frames = prompt(&mut a, "p3", "third");
    assert!(!types(&frames).iter().any(|t| t == "compaction_start"));
}

#[test]
fn a_context_overflow_compacts_and_retries_once() {
    let fake = FakeLlm::start(vec![
        openai_text(&["one"]),
        openai_text(&["two"]),
        status(400, &[], "This model's maximum context length is 128000 tokens"),
        openai_text(&["## Summary\nearlier work"]),
        openai_text(&["recovered"]),
    ]).unwrap();
    let config = tempfile::tempdir().unwrap();
    fake.write_models(config.path()).unwrap();
    let dir = config.path().to_str().unwrap().to_owned();
    let mut a = Agent::start(&["--config-dir", dir.as_str(), "--provider", "fake", "--model", "fake-model", "--compaction-keep-tokens", "10"], &[]);
    prompt(&mut a, "p1", "first");
    prompt(&mut a, "p2", "second");
    let frames = prompt(&mut a, "p3", "third");
    let t = types(&frames);
    let start = t.iter().position(|t| t == "compaction_start").expect("overflow compaction");
    assert_eq!(frames[start]["reason"], "overflow");
    assert_eq!((&frames[start + 1]["type"], &frames[start + 1]["reason"]), (&json!("compaction_end"), &json!("overflow")));
    assert_eq!(frames[start + 1]["willRetry"], true);
    assert_eq!(frames.last().unwrap()["status"], "completed");
    let seen = fake.seen();
    assert_eq!(seen.len(), 5);
    assert!(seen[3].body.get("tools").is_none(), "the summary request has no tools");
    let retried = &seen[4].body["messages"];
    assert!(retried[1]["content"].as_str().unwrap().contains("earlier work"), "the retry sees the summary: {retried}");
}
