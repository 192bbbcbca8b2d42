//! The model's built-in tools through a full run: results, errors as tool results, files on disk.

mod common;

use common::{text_reply, tool_reply, Agent};
use serde_json::{json, Value};

fn run_tool(name: &str, args: Value, setup: impl FnOnce(&std::path::Path)) -> (Value, Agent) {
    let mut a = Agent::start(&[], &[tool_reply(name, args), text_reply("done")]);
    setup(a.dir.path());
    a.send(json!({"id":"p","type":"prompt","message":"use the tool"}));
    let frames = a.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").cloned().expect("tool_execution_end");
    let results: Vec<&Value> = frames.iter().filter(|f| f["type"] == "message_end" && f["message"]["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["message"]["isError"], end["isError"]);
    (end, a)
}

fn text(end: &Value) -> String {
    end["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn write_read_and_edit_change_real_files() {
    let (end, a) = run_tool("write", json!({"path":"notes/a.txt","content":"alpha\nbeta\n"}), |_| {});
    assert_eq!((end["isError"].clone(), text(&end)), (json!(false), "Wrote 11 bytes to notes/a.txt".to_owned()));
    assert_eq!(std::fs::read_to_string(a.dir.path().join("notes/a.txt")).unwrap(), "alpha\nbeta\n");

    let (end, _a) = run_tool("read", json!({"path":"f.txt"}), |d| std::fs::write(d.join("f.txt"), "x\ny\n").unwrap());
    assert_eq!(text(&end), "     1\tx\n     2\ty\n");

    let (end, a) = run_tool("edit", json!({"path":"f.txt","oldText":"y","newText":"z"}), |d| std::fs::write(d.join("f.txt"), "x\ny\n").unwrap());
    assert_eq!(end["isError"], false);
    assert!(end["result"]["details"]["diff"].as_str().unwrap().contains("-y\n+z"));
    assert_eq!(std::fs::read_to_string(a.dir.path().join("f.txt")).unwrap(), "x\nz\n");

    let (end, _a) = run_tool("edit", json!({"path":"f.txt","oldText":"nope","newText":"z"}), |d| std::fs::write(d.join("f.txt"), "x\n").unwrap());
    assert!(end["isError"] == true && text(&end).starts_with("Could not find the text to replace"));
}

#[test]
fn ls_grep_find_and_bash() {
    let setup = |d: &std::path::Path| {
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::write(d.join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n").unwrap();
        std::fs::write(d.join(".gitignore"), "*.tmp\n").unwrap();
        std::fs::write(d.join("junk.tmp"), "pub fn hidden() {}\n").unwrap();
    };
    let (end, _a) = run_tool("ls", json!({}), setup);
    assert_eq!(text(&end), ".gitignore\n.model-script.jsonl\nsrc/\n");
    let (end, _a) = run_tool("grep", json!({"pattern":"pub fn \\w+"}), setup);
    assert_eq!(text(&end), "src/lib.rs:1:pub fn answer() -> u32 { 42 }\n");
    let (end, _a) = run_tool("find", json!({"pattern":"*.rs"}), setup);
    assert_eq!(text(&end), "src/lib.rs\n");
    let (end, _a) = run_tool("bash", json!({"command":"echo out; echo err >&2; exit 4"}), setup);
    assert_eq!(end["isError"], true);
    assert!(text(&end).contains("out\n") && text(&end).ends_with("Command exited with code 4"), "{}", text(&end));
}

#[test]
fn bash_tool_streams_cumulative_updates() {
    let mut a = Agent::start(&[], &[tool_reply("bash", json!({"command":"echo one; sleep 0.3; echo two"})), text_reply("ok")]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let frames = a.until_prompt_result("p");
    let updates: Vec<String> = frames
        .iter()
        .filter(|f| f["type"] == "tool_execution_update")
        .map(|f| f["partialResult"]["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(updates, ["one\n", "one\ntwo\n"]);
}

#[test]
fn unknown_tools_and_bad_arguments_become_error_results_and_the_loop_continues() {
    let mut a = Agent::start(&[], &[
        json!({"toolCalls":[{"id":"c1","name":"no_such_tool","arguments":{}},{"id":"c2","name":"read","arguments":{"nope":1}}]}),
        text_reply("recovered"),
    ]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let frames = a.until_prompt_result("p");
    let ends: Vec<&Value> = frames.iter().filter(|f| f["type"] == "tool_execution_end").collect();
    assert_eq!(text(ends[0]), "Tool no_such_tool not found");
    assert!(text(ends[1]).starts_with("Validation failed for tool \"read\":"), "{}", text(ends[1]));
    assert_eq!(frames.last().unwrap()["status"], "completed");
    let turn_end = frames.iter().find(|f| f["type"] == "turn_end").unwrap();
    assert_eq!(turn_end["toolResults"].as_array().unwrap().len(), 2);
}

/// A search over a big tree runs beside the frames (rpc and wire serve on one thread; the
/// walk runs on the blocking pool): a `get_state` is answered while `grep` still reads, and an
/// `abort` ends the call at once instead of after the walk.
#[test]
fn a_slow_edit_diff_leaves_the_frames_flowing() {
    // Every one of 2,000 lines changed: the diff of the edit (unoptimized in the test binary)
    // takes seconds, far longer than a frame's round trip; rpc serves on one thread.
    let before: String = (0..2000).map(|i| format!("old line {i}\n")).collect();
    let after: String = (0..2000).map(|i| format!("new {i} line\n")).collect();
    // The arguments in one delta: streamed 8 characters at a time they are 20,000 frames, and
    // this test, reading them unoptimized, would see `tool_execution_start` only after the diff.
    let mut call = tool_reply("edit", json!({"path": "big.txt", "oldText": before, "newText": after}));
    call["chunkSize"] = json!(1 << 20);
    let mut a = Agent::start(&[], &[call, text_reply("done")]);
    std::fs::write(a.dir.path().join("big.txt"), &before).unwrap();
    a.send(json!({"id": "p", "type": "prompt", "message": "edit"}));
    a.until(|f| f["type"] == "tool_execution_start");
    a.send(json!({"id": "s", "type": "get_state"}));
    let before_state = a.until(|f| f["id"] == "s");
    let types: Vec<&Value> = before_state.iter().map(|f| &f["type"]).collect();
    assert!(!types.contains(&&json!("tool_execution_end")), "the state waited for the diff: {types:?}");
    let frames = a.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").expect("tool_execution_end");
    assert_eq!(end["isError"], json!(false), "{end}");
    assert_eq!(std::fs::read_to_string(a.dir.path().join("big.txt")).unwrap(), after);
}

#[test]
fn a_long_search_leaves_the_frames_flowing_and_abort_ends_it() {
    let mut a = Agent::start(&[], &[tool_reply("grep", json!({"pattern": "never-in-the-file"})), text_reply("done")]);
    // 36 MB of lines: the searcher (unoptimized in the test binary) reads them for about a
    // second, far longer than a frame's round trip.
    std::fs::write(a.dir.path().join("big.txt"), "some text without the pattern in it\n".repeat(1 << 20)).unwrap();
    a.send(json!({"id": "p", "type": "prompt", "message": "search"}));
    a.until(|f| f["type"] == "tool_execution_start");
    a.send(json!({"id": "s", "type": "get_state"}));
    let before = a.until(|f| f["id"] == "s");
    assert!(before.iter().all(|f| f["type"] != "tool_execution_end"), "the state waited for the search: {before:?}");
    a.send(json!({"id": "a", "type": "abort"}));
    let frames = a.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").expect("tool_execution_end");
    assert_eq!((&end["isError"], text(end).as_str()), (&json!(true), "Search aborted"), "{end}");
    assert_eq!(frames.last().unwrap()["status"], "aborted");
}
