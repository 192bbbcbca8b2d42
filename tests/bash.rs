//! The `bash` command: output, exit codes, truncation with the full text on disk, abort_bash,
//! and the bash-execution message joining the conversation.

mod common;

use common::Agent;
use serde_json::{json, Value};

#[test]
fn runs_in_the_working_directory_and_reports_exit_codes() {
    let mut a = Agent::start(&[], &[]);
    let r = a.request(json!({"id":"b","type":"bash","command":"pwd; echo err >&2; exit 3"}));
    let d = &r["data"];
    assert_eq!((&d["exitCode"], &d["cancelled"], &d["truncated"]), (&json!(3), &json!(false), &json!(false)));
    let out = d["output"].as_str().unwrap();
    assert!(out.starts_with(&format!("{}\n", a.dir.path().canonicalize().unwrap().display())) && out.contains("err\n"), "{out}");
    let messages = a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].clone();
    assert_eq!((&messages[0]["role"], &messages[0]["exitCode"]), (&json!("bashExecution"), &json!(3)));
}

#[test]
fn long_output_keeps_the_tail_and_the_full_output_path() {
    let mut a = Agent::start(&[], &[]);
    let d = a.request(json!({"id":"b","type":"bash","command":"seq 1 100000"}))["data"].clone();
    assert_eq!((&d["truncated"], &d["totalLines"]), (&json!(true), &json!(100000)));
    assert!(d["output"].as_str().unwrap().ends_with("100000\n"));
    let full = std::fs::read_to_string(d["fullOutputPath"].as_str().unwrap()).unwrap();
    assert_eq!(full.lines().count(), 100_000);
}

/// The next response, past the `bash_execution_update` events that stream the output.
fn next_response(a: &mut Agent) -> Value {
    loop {
        let frame = a.next();
        if frame["type"] == "response" {
            return frame;
        }
        assert_eq!(frame["type"], "bash_execution_update", "{frame}");
    }
}

#[test]
fn abort_bash_cancels_and_other_commands_are_answered_meanwhile() {
    let mut a = Agent::start(&[], &[]);
    a.send(json!({"id":"b","type":"bash","command":"echo start; sleep 20"}));
    // bash runs off the reader loop: get_state is answered while it runs.
    assert_eq!(a.request(json!({"id":"s","type":"get_state"}))["success"], true);
    std::thread::sleep(std::time::Duration::from_millis(200));
    a.send(json!({"id":"ab","type":"abort_bash"}));
    // The two responses are concurrent: take both, in whichever order they come.
    let mut responses = vec![next_response(&mut a), next_response(&mut a)];
    responses.sort_by_key(|f| f["id"].as_str().unwrap_or_default().to_owned());
    assert_eq!((&responses[0]["id"], &responses[0]["success"]), (&json!("ab"), &json!(true)));
    let r = responses.pop().unwrap();
    assert_eq!(r["id"], "b");
    assert_eq!((&r["data"]["cancelled"], r["data"].get("exitCode"), &r["data"]["output"]), (&json!(true), None, &json!("start\n")));
}

#[test]
fn concurrent_bash_commands_all_succeed_and_answer_as_they_finish() {
    // pi and omp run every command as its own task (notes §1.4): written together, the slow
    // bash does not refuse or delay the others.
    let mut a = Agent::start(&[], &[]);
    a.send(json!({"id":"slow","type":"bash","command":"sleep 1; echo slow"}));
    a.send(json!({"id":"s","type":"get_state"}));
    a.send(json!({"id":"fast","type":"bash","command":"echo hi"}));
    let order: Vec<Value> = (0..3).map(|_| next_response(&mut a)).collect();
    let ids: Vec<&str> = order.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["s", "fast", "slow"], "{order:?}");
    assert!(order.iter().all(|f| f["success"] == true), "{order:?}");
    assert_eq!(order[1]["data"]["output"], "hi\n");
    assert_eq!(order[2]["data"]["output"], "slow\n");
}

#[test]
fn stdin_eof_lets_a_pending_bash_finish_and_answer() {
    // EOF drains, it does not cancel (omp; notes §1.6): the bash written last completes.
    let mut a = Agent::start(&[], &[]);
    a.send(json!({"id":"s1","type":"get_state"}));
    a.send(json!({"id":"b","type":"bash","command":"sleep 1; echo late"}));
    let (rest, code) = a.finish();
    assert_eq!(code, 0);
    let b = rest.iter().find(|f| f["id"] == "b" && f["type"] == "response").unwrap_or_else(|| panic!("no bash answer: {rest:?}"));
    assert_eq!((&b["success"], &b["data"]["output"], &b["data"]["cancelled"]), (&json!(true), &json!("late\n"), &json!(false)), "{b}");
    assert!(rest.iter().any(|f| f["id"] == "s1"));
}
