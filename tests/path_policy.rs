//! The approval modes and paths outside the working directory (issue 15, docs/reliability.md
//! "Paths outside the working directory"), through the real binary: under `dangerous` a read,
//! `ls`, `grep` or `find` whose path leaves the working directory once symlinks are followed
//! asks first and the question says so; `never` asks nothing; `always` asks everything, with
//! the same note.

mod common;

use std::path::PathBuf;

use common::{text_reply, tool_reply, Agent};
use serde_json::{json, Value};

/// A directory outside the agent's working directory holding `secret.txt`.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.txt"), "the secret\n").unwrap();
        Self { dir }
    }

    fn secret(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("secret.txt")
    }
}

/// In the agent's working directory: `inside.txt`, and `link.txt` → the outside secret.
fn prepare(a: &Agent, outside: &Outside) {
    std::fs::write(a.dir.path().join("inside.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(outside.secret(), a.dir.path().join("link.txt")).unwrap();
}

/// Frames up to the next approval dialog, or `None` when the prompt ends without one.
fn next_dialog(a: &mut Agent, id: &str) -> Option<Value> {
    let frames = a.until(|f| (f["type"] == "extension_ui_request" && f["method"] == "select") || (f["type"] == "prompt_result" && f["id"] == id));
    let last = frames.last().unwrap().clone();
    (last["type"] == "extension_ui_request").then_some(last)
}

fn tool_end(frames: &[Value]) -> Value {
    frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap().clone()
}

#[test]
fn dangerous_asks_before_reading_through_a_symlink_that_escapes_and_says_where_it_leads() {
    let outside = Outside::new();
    let mut a = Agent::start(&["--approval", "dangerous"], &[tool_reply("read", json!({"path":"link.txt"})), tool_reply("read", json!({"path":"inside.txt"})), text_reply("done")]);
    prepare(&a, &outside);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = next_dialog(&mut a, "p").expect("the escaping read asks");
    assert_eq!(ask["title"], format!("Allow tool: read\nCommand: outside the working directory: {} (via link.txt)", outside.secret().display()));
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Deny"}));
    let end = tool_end(&a.until(|f| f["type"] == "tool_execution_end"));
    assert_eq!((&end["isError"], &end["result"]["content"][0]["text"]), (&json!(true), &json!("Tool call denied by user: read")));
    // A read inside the working directory runs without a question.
    let frames = a.until_prompt_result("p");
    assert!(!frames.iter().any(|f| f["type"] == "extension_ui_request" && f["method"] == "select"), "no dialog for inside.txt");
    let end = tool_end(&frames);
    assert_eq!(end["isError"], false);
    assert!(end["result"]["content"][0]["text"].as_str().unwrap().contains("inside"));
}

#[test]
fn dangerous_asks_for_absolute_and_dotdot_paths_and_for_search_tools_and_runs_them_when_approved() {
    let outside = Outside::new();
    let dir = outside.dir.path().canonicalize().unwrap();
    let escaping_ls = format!("../{}", dir.file_name().unwrap().to_str().unwrap());
    let calls = [
        tool_reply("read", json!({"path": outside.secret().display().to_string()})),
        tool_reply("ls", json!({"path": escaping_ls})),
        tool_reply("grep", json!({"pattern":"secret","path": dir.display().to_string()})),
        tool_reply("find", json!({"pattern":"*.txt","path": dir.display().to_string()})),
        text_reply("done"),
    ];
    let mut a = Agent::start(&["--approval", "dangerous"], &calls);
    prepare(&a, &outside);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = next_dialog(&mut a, "p").unwrap();
    assert_eq!(ask["title"], format!("Allow tool: read\nCommand: outside the working directory: {}", outside.secret().display()));
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Approve"}));
    let end = tool_end(&a.until(|f| f["type"] == "tool_execution_end"));
    assert!(end["result"]["content"][0]["text"].as_str().unwrap().contains("the secret"), "approved: it runs {end}");
    for tool in ["ls", "grep", "find"] {
        let ask = next_dialog(&mut a, "p").unwrap_or_else(|| panic!("{tool} outside asks"));
        let title = ask["title"].as_str().unwrap();
        assert!(title.starts_with(&format!("Allow tool: {tool}\nCommand: outside the working directory: {}", dir.display())), "{title}");
        a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Approve"}));
    }
    let frames = a.until_prompt_result("p");
    assert_eq!(frames.iter().find(|f| f["type"] == "prompt_result").unwrap()["status"], "completed", "{frames:?}");
}

#[test]
fn dangerous_names_the_real_target_of_a_write_through_a_dangling_symlink() {
    let outside = Outside::new();
    let target = outside.dir.path().canonicalize().unwrap().join("new.txt");
    let mut a = Agent::start(&["--approval", "dangerous"], &[tool_reply("write", json!({"path":"planted.txt","content":"x"})), text_reply("done")]);
    std::os::unix::fs::symlink(&target, a.dir.path().join("planted.txt")).unwrap();
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = next_dialog(&mut a, "p").unwrap();
    assert_eq!(ask["title"], format!("Allow tool: write\nCommand: outside the working directory: {} (via planted.txt)", target.display()));
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Deny"}));
    a.until_prompt_result("p");
    assert!(!target.exists(), "denied: nothing written outside");
}

#[test]
fn never_asks_nothing_even_outside_the_working_directory() {
    let outside = Outside::new();
    let mut a = Agent::start(&["--approval", "never"], &[tool_reply("read", json!({"path":"link.txt"})), text_reply("done")]);
    prepare(&a, &outside);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let frames = a.until_prompt_result("p");
    assert!(!frames.iter().any(|f| f["type"] == "extension_ui_request"), "never means never");
    assert!(tool_end(&frames)["result"]["content"][0]["text"].as_str().unwrap().contains("the secret"));
}

#[test]
fn always_asks_for_everything_and_marks_only_the_escaping_paths() {
    let outside = Outside::new();
    let mut a = Agent::start(&["--approval", "always"], &[tool_reply("read", json!({"path":"inside.txt"})), tool_reply("read", json!({"path":"link.txt"})), text_reply("done")]);
    prepare(&a, &outside);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    let ask = next_dialog(&mut a, "p").unwrap();
    assert_eq!(ask["title"], "Allow tool: read\nCommand: inside.txt");
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Approve"}));
    let ask = next_dialog(&mut a, "p").unwrap();
    assert_eq!(ask["title"], format!("Allow tool: read\nCommand: outside the working directory: {} (via link.txt)", outside.secret().display()));
    a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Deny"}));
    a.until_prompt_result("p");
}
