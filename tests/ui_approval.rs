//! The extension-UI sub-protocol as used by the approval policy: omp's `select` dialog
//! (notes §2.14) after `tool_execution_start`, answers, denials and timeouts (fail closed, with
//! a `cancel` frame for the host).

mod common;

use common::{text_reply, tool_reply, Agent};
use serde_json::{json, Value};

fn bash_call() -> Value {
    tool_reply("bash", json!({"command":"echo approved > marker.txt"}))
}

fn until_confirm(a: &mut Agent) -> Value {
    let frames = a.until(|f| f["type"] == "extension_ui_request" && f["method"] == "select");
    let start = frames.iter().position(|f| f["type"] == "tool_execution_start");
    assert!(start.is_some(), "tool_execution_start precedes the approval dialog");
    frames.last().unwrap().clone()
}

#[test]
fn a_confirmed_call_runs() {
    let mut a = Agent::start(&["--approval", "dangerous"], &[bash_call(), text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = until_confirm(&mut a);
    assert_eq!((&ask["title"], &ask["options"]), (&json!("Allow tool: bash\nCommand: echo approved > marker.txt"), &json!(["Approve", "Deny"])));
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Approve"}));
    let frames = a.until_prompt_result("p");
    assert_eq!(frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap()["isError"], false);
    assert!(a.dir.path().join("marker.txt").exists());
}

#[test]
fn denial_and_timeout_fail_closed() {
    let mut a = Agent::start(&["--approval", "dangerous", "--approval-timeout-ms", "300"], &[bash_call(), bash_call(), text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = until_confirm(&mut a);
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Deny"}));
    let end = a.until(|f| f["type"] == "tool_execution_end").pop().unwrap();
    assert_eq!((&end["isError"], &end["result"]["content"][0]["text"]), (&json!(true), &json!("Tool call denied by user: bash")));
    // The second call is never answered: the dialog expires, the host is told, the call fails.
    let ask = until_confirm(&mut a);
    let frames = a.until_prompt_result("p");
    let cancel = frames.iter().find(|f| f["type"] == "extension_ui_request" && f["method"] == "cancel").unwrap();
    assert_eq!(cancel["targetId"], ask["id"]);
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Tool call not approved in time: bash");
    assert!(!a.dir.path().join("marker.txt").exists());
}

#[test]
fn read_only_tools_do_not_ask_under_dangerous_but_do_under_always() {
    let mut a = Agent::start(&["--approval", "dangerous"], &[tool_reply("ls", json!({})), text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let frames = a.until_prompt_result("p");
    assert!(!frames.iter().any(|f| f["type"] == "extension_ui_request"));
    let mut a = Agent::start(&["--approval", "always"], &[tool_reply("ls", json!({})), text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = until_confirm(&mut a);
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"cancelled":true}));
    let end = a.until(|f| f["type"] == "tool_execution_end").pop().unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Tool call denied by user: ls");
}

#[test]
fn abort_while_a_dialog_is_open_cancels_it() {
    let mut a = Agent::start(&["--approval", "dangerous"], &[bash_call()]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = until_confirm(&mut a);
    a.send(json!({"id":"ab","type":"abort"}));
    let frames = a.until(|f| f["id"] == "ab" && f["type"] == "response");
    assert!(frames.iter().any(|f| f["method"] == "cancel" && f["targetId"] == ask["id"]));
    assert_eq!(frames.iter().find(|f| f["type"] == "prompt_result").unwrap()["status"], "aborted");
}

/// Issue 15, defect 6: fail closed in rpc. An answer that both confirms and cancels is a denial,
/// said as such to the model and the host; the tool does not run.
#[test]
fn a_confirm_answer_that_also_cancels_rejects() {
    let mut a = Agent::start(&["--approval", "dangerous"], &[bash_call(), text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = until_confirm(&mut a);
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"confirmed":true,"cancelled":true}));
    let frames = a.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert_eq!((&end["isError"], &end["result"]["content"][0]["text"]), (&json!(true), &json!("Tool call denied by user: bash")));
    assert!(!a.dir.path().join("marker.txt").exists(), "the denied command never ran");
}
