//! Sessions on disk through the binary: the files (validated against the schema), resume
//! (`--session`, `--continue`), new/switch/branch/fork/clone, listings, the tree, HTML export,
//! and SIGKILL at many points of a streaming run.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentwire::protocol::validate::validator;
use common::{text_reply, Agent};
use serde_json::{json, Value};

fn validate_file(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            validator().validate_def("SessionFileLine", &v).unwrap_or_else(|e| panic!("{}: {e}\n{l}", path.display()));
            v
        })
        .collect()
}

fn session_file(a: &mut Agent) -> PathBuf {
    PathBuf::from(a.request(json!({"id":"sf","type":"get_state"}))["data"]["sessionFile"].as_str().unwrap())
}

fn prompt(a: &mut Agent, id: &str, text: &str) {
    a.send(json!({"id": id, "type": "prompt", "message": text}));
    a.until_prompt_result(id);
}

fn start_in(dir: &Path, extra: &[&str], script: &[Value]) -> Agent {
    let d = dir.to_str().unwrap().to_owned();
    let mut args = vec!["--session-dir", d.as_str()];
    args.extend_from_slice(extra);
    // Leak-free: the Vec<&str> only lives for the call.
    Agent::start(&args, script)
}

#[test]
fn a_session_file_records_the_conversation_and_resumes() {
    let sessions = tempfile::tempdir().unwrap();
    let mut a = start_in(sessions.path(), &[], &[text_reply("first answer"), text_reply("second answer")]);
    assert!(a.request(json!({"id":"s0","type":"get_state"}))["data"].get("sessionFile").is_none(), "created on the first entry, named once it exists");
    prompt(&mut a, "p1", "first question");
    let path = session_file(&mut a);
    a.request(json!({"id":"n","type":"set_session_name","name":"my work"}));
    a.request(json!({"id":"b","type":"bash","command":"echo hi"}));
    prompt(&mut a, "p2", "second question");
    let lines = validate_file(&path);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["session", "model_change", "thinking_level_change", "message", "message", "session_info", "message", "message", "message"]);
    assert_eq!(lines[8]["message"]["content"][0]["text"], "second answer");
    let stats = a.request(json!({"id":"st","type":"get_session_stats"}))["data"].clone();
    assert_eq!(stats["sessionFile"], path.display().to_string());
    drop(a);

    let p = path.to_str().unwrap().to_owned();
    let mut b = Agent::start(&["--session", p.as_str()], &[]);
    let state = b.request(json!({"id":"s","type":"get_state"}))["data"].clone();
    assert_eq!((&state["sessionName"], &state["messageCount"]), (&json!("my work"), &json!(5)));
    assert_eq!(b.request(json!({"id":"t","type":"get_last_assistant_text"}))["data"]["text"], "second answer");
    drop(b);
    let mut c = start_in(sessions.path(), &["--continue"], &[]);
    assert_eq!(session_file(&mut c), path, "--continue picks the most recent session");
}

#[test]
fn new_switch_branch_clone_list_and_tree() {
    let sessions = tempfile::tempdir().unwrap();
    let mut a = start_in(sessions.path(), &[], &[text_reply("A1"), text_reply("A2"), text_reply("A3")]);
    prompt(&mut a, "p1", "Q1");
    prompt(&mut a, "p2", "Q2");
    let first = session_file(&mut a);

    let points = a.request(json!({"id":"bm","type":"get_branch_messages"}))["data"]["messages"].clone();
    assert_eq!(points.as_array().unwrap().iter().map(|p| p["text"].as_str().unwrap()).collect::<Vec<_>>(), ["Q1", "Q2"]);
    let second_q = points[1]["entryId"].as_str().unwrap().to_owned();
    let branched = a.request(json!({"id":"br","type":"branch","entryId":second_q}));
    assert_eq!(branched["data"], json!({"text":"Q2","cancelled":false}));
    assert_eq!(a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].as_array().unwrap().len(), 2);
    prompt(&mut a, "p3", "Q2 again");
    let tree = a.request(json!({"id":"tr","type":"get_tree"}))["data"].clone();
    let entries = tree["entries"].as_array().unwrap();
    let a1 = entries.iter().find(|e| e["label"] == "assistant: A1").unwrap();
    assert_eq!(a1["children"].as_array().unwrap().len(), 2, "two branches grow from the first answer");
    assert_eq!(tree["leafId"], entries.last().unwrap()["id"]);
    let bad = a.request(json!({"id":"bb","type":"fork","entryId":"nope"}));
    assert_eq!((&bad["code"], &bad["command"]), (&json!("invalid_params"), &json!("fork")));
    assert_eq!(a.request(json!({"id":"fm","type":"get_fork_messages"}))["data"]["messages"].as_array().unwrap().len(), 2);

    assert_eq!(a.request(json!({"id":"ns","type":"new_session","parentSession":first.display().to_string()}))["data"], json!({"cancelled":false}));
    assert_eq!(a.request(json!({"id":"s","type":"get_state"}))["data"]["messageCount"], 0);
    let missing = a.request(json!({"id":"sw0","type":"switch_session","sessionPath":"/nonexistent/x.jsonl"}));
    assert_eq!((&missing["success"], &missing["code"]), (&json!(false), &json!("not_found")));
    let garbage = sessions.path().join("garbage.jsonl");
    std::fs::write(&garbage, "not json\n").unwrap();
    let corrupt = a.request(json!({"id":"sw1","type":"switch_session","sessionPath":garbage.display().to_string()}));
    assert!(corrupt["error"].as_str().unwrap().starts_with("Not a session file"), "{corrupt}");
    std::fs::remove_file(&garbage).unwrap();
    a.request(json!({"id":"sw","type":"switch_session","sessionPath":first.display().to_string()}));
    assert_eq!(a.request(json!({"id":"t","type":"get_last_assistant_text"}))["data"]["text"], "A3");

    assert_eq!(a.request(json!({"id":"cl","type":"clone"}))["data"], json!({"cancelled":false}));
    let clone = session_file(&mut a);
    assert_ne!(clone, first);
    let header = &validate_file(&clone)[0];
    assert_eq!(header["parentSession"], first.display().to_string());

    let list = a.request(json!({"id":"ls","type":"list_sessions"}))["data"]["sessions"].clone();
    let listed: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["path"].as_str().unwrap()).collect();
    assert!(listed.contains(&first.to_str().unwrap()) && listed.contains(&clone.to_str().unwrap()), "{listed:?}");
    let entry = list.as_array().unwrap().iter().find(|s| s["path"] == first.display().to_string()).unwrap();
    assert_eq!((&entry["firstMessage"], &entry["messageCount"]), (&json!("Q1"), &json!(6)));
}

#[test]
fn export_html_is_self_contained_and_escapes_hostile_content() {
    let sessions = tempfile::tempdir().unwrap();
    let mut a = start_in(sessions.path(), &[], &[json!({"text":"<script>alert('x')</script>","toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"echo '\"><img src=x onerror=alert(1)>'"}}]}), text_reply("done")]);
    prompt(&mut a, "p", "<b>bold?</b>");
    let default = a.request(json!({"id":"e","type":"export_html"}))["data"]["path"].as_str().unwrap().to_owned();
    assert!(Path::new(&default).is_absolute() && default.ends_with(".html"));
    assert_eq!(Path::new(&default).with_extension("jsonl"), session_file(&mut a));
    let html = std::fs::read_to_string(&default).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(!html.contains("<script") && !html.contains("<img src=x") && !html.contains("<b>bold"), "nothing from the conversation is live markup");
    assert!(html.contains("&lt;script&gt;") && html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!html.contains("http://") && !html.contains("https://"), "no external assets");
    // A missing directory fails as in pi (notes §2.6.30): an ENOENT-style message naming the
    // path, and no directory is created.
    let out = a.dir.path().join("out/export.html");
    let r = a.request(json!({"id":"e2","type":"export_html","outputPath":"out/export.html"}));
    assert_eq!((&r["success"], &r["code"]), (&json!(false), &json!("not_found")), "{r}");
    assert_eq!(r["error"], format!("ENOENT: no such file or directory, open '{}'", out.display()));
    assert!(!a.dir.path().join("out").exists());
    std::fs::create_dir(a.dir.path().join("out")).unwrap();
    let r = a.request(json!({"id":"e3","type":"export_html","outputPath":"out/export.html"}));
    assert_eq!(r["data"]["path"], out.canonicalize().unwrap().display().to_string());
}

#[test]
fn an_in_memory_session_exports_to_an_explicit_output_path() {
    // Our extension (pi refuses any export of an in-memory session).
    let mut a = Agent::start(&["--no-session"], &[text_reply("hi")]);
    prompt(&mut a, "p", "hello");
    let r = a.request(json!({"id":"e","type":"export_html","outputPath":"memory.html"}));
    let path = r["data"]["path"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(std::fs::read_to_string(path).unwrap().contains("hello"));
}

#[test]
fn every_file_left_by_sigkill_during_a_run_loads() {
    let sessions = tempfile::tempdir().unwrap();
    let slow = json!({"thinking":"pondering the question", "text":"a long answer streamed slowly in many small pieces", "chunkSize": 3, "delayMs": 4,
        "toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"echo tool"}}]});
    for (i, kill_after_ms) in [0u64, 5, 15, 30, 60, 90, 120, 160, 220, 300].into_iter().enumerate() {
        let dir = sessions.path().join(format!("run{i}"));
        let mut a = start_in(&dir, &[], &[slow.clone(), text_reply("after the tool")]);
        a.send(json!({"id":"p","type":"prompt","message":"go"}));
        std::thread::sleep(Duration::from_millis(kill_after_ms));
        unsafe { libc::kill(a.pid() as i32, libc::SIGKILL) };
        drop(a);
        let Some(path) = agentwire::sessions::files_in(&dir).pop() else { continue };
        // Every complete line is valid; the agent resumes from whatever is there.
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().filter(|l| text.ends_with('\n') || !text.ends_with(*l)) {
            let v: Value = serde_json::from_str(line).unwrap();
            validator().validate_def("SessionFileLine", &v).unwrap();
        }
        let p = path.to_str().unwrap().to_owned();
        let mut b = Agent::start(&["--session", p.as_str()], &[]);
        let messages = b.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].clone();
        assert!(messages.as_array().unwrap().len() <= 4);
    }
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning() {
    let sessions = tempfile::tempdir().unwrap();
    let mut a = start_in(sessions.path(), &[], &[text_reply("kept")]);
    prompt(&mut a, "p", "q");
    let path = session_file(&mut a);
    drop(a);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"type\":\"message\",\"id\":\"dead\",\"par");
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap().to_owned();
    let mut b = Agent::start(&["--session", p.as_str()], &[]);
    assert_eq!(b.request(json!({"id":"t","type":"get_last_assistant_text"}))["data"]["text"], "kept");
}

#[test]
fn a_name_given_before_the_first_message_is_saved_with_it() {
    // set_session_name is acknowledged at once; the file only exists from the first message on.
    let sessions = tempfile::tempdir().unwrap();
    let mut a = start_in(sessions.path(), &[], &[text_reply("hello")]);
    assert_eq!(a.request(json!({"id":"n","type":"set_session_name","name":"early name"}))["success"], true);
    prompt(&mut a, "p", "hi");
    let path = session_file(&mut a);
    let lines = validate_file(&path);
    assert!(lines.iter().any(|l| l["type"] == "session_info" && l["name"] == "early name"), "{lines:#?}");
    drop(a);
    let p = path.to_str().unwrap().to_owned();
    let mut b = start_in(sessions.path(), &["--session", p.as_str()], &[]);
    assert_eq!(b.request(json!({"id":"s","type":"get_state"}))["data"]["sessionName"], "early name", "the name survives a resume");
}

/// A pi session with entries of types this build does not know (`label`, `branch_summary`):
/// they link the tree (the next message's `parentId` names one), so the whole conversation
/// resumes; `get_messages` answers the stored messages as they are written, pages hold their
/// own messages, the tree shows every entry, and a clone writes the unknown lines back unchanged.
#[test]
fn a_pi_session_with_entries_of_unknown_types_resumes_whole_and_clones_verbatim() {
    let sessions = tempfile::tempdir().unwrap();
    let header = json!({"type":"session","version":3,"id":"pi-session","timestamp":"2026-01-01T00:00:00.000Z","cwd":sessions.path()});
    let user = |i: u64| json!({"role":"user","content":[{"type":"text","text":format!("question {i}")}],"timestamp":1_700_000_000_000u64 + i});
    // pi's key order (`timestamp` before `content`), not ours.
    let assistant = |i: u64| {
        serde_json::from_str::<Value>(&format!(
            r#"{{"role":"assistant","timestamp":{},"content":[{{"type":"text","text":"answer {i}"}}],"api":"openai-completions","provider":"fake","model":"m","usage":{{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop"}}"#,
            1_700_000_000_000u64 + i
        ))
        .unwrap()
    };
    let label = r#"{"type":"label","id":"l1","parentId":"m1","timestamp":"2026-01-01T00:00:02.000Z","targetId":"m0","label":"  kept as written  ","extra":{"n":[1,2.50,"\u00e9"]}}"#;
    let mut lines = vec![header.to_string()];
    let mut messages = Vec::new();
    for i in 0..6u64 {
        let message = if i % 2 == 0 { user(i) } else { assistant(i) };
        let parent = match i {
            0 => Value::Null,
            2 => json!("l1"),
            _ => json!(format!("m{}", i - 1)),
        };
        lines.push(json!({"type":"message","id":format!("m{i}"),"parentId":parent,"timestamp":"2026-01-01T00:00:01.000Z","message":message}).to_string());
        if i == 1 {
            lines.push(label.to_owned());
        }
        messages.push(message);
    }
    let path = sessions.path().join("2026-01-01T00-00-00-000Z_pi-session.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();

    let p = path.to_str().unwrap().to_owned();
    let mut a = start_in(sessions.path(), &["--session", p.as_str()], &[]);
    let all = a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].clone();
    assert_eq!(all, Value::Array(messages.clone()), "every message, across the unknown entry");
    let page = a.request(json!({"id":"p","type":"get_messages_page","cursor":"4","limit":50}))["data"].clone();
    assert_eq!(page, json!({"messages": &messages[4..], "totalMessages": 6}));
    let tree = a.request(json!({"id":"t","type":"get_tree"}))["data"]["entries"].clone();
    let kinds: Vec<&str> = tree.as_array().unwrap().iter().map(|e| e["entryType"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "message", "label", "message", "message", "message", "message"]);
    assert_eq!(a.request(json!({"id":"c","type":"clone"}))["success"], true);
    let copy = session_file(&mut a);
    assert_ne!(copy, path);
    let written = std::fs::read_to_string(&copy).unwrap();
    assert!(written.lines().any(|l| l == label), "the unknown entry is written back byte for byte:\n{written}");
}

/// `list_sessions` reads every session file whole; rpc serves on one thread, so the reading
/// runs on the blocking pool and a run streaming meanwhile keeps sending its deltas (they all
/// waited for the listing when it was read inline).
#[test]
fn a_slow_listing_leaves_a_streaming_run_flowing() {
    const FILES: usize = 6;
    const MESSAGES: u64 = 1500;
    let sessions = tempfile::tempdir().unwrap();
    // 6 files of 1,500 messages (~0.9 MB each): the unoptimized test binary reads them for
    // about a second.
    let text = "lorem ipsum dolor sit amet ".repeat(15);
    for f in 0..FILES {
        let mut lines = vec![json!({"type":"session","version":3,"id":format!("s{f}"),"timestamp":"2026-01-01T00:00:00.000Z","cwd":sessions.path()}).to_string()];
        let mut parent = Value::Null;
        for i in 0..MESSAGES {
            let message = if i % 2 == 0 {
                json!({"role":"user","content":[{"type":"text","text":format!("{i} {text}")}],"timestamp":1_700_000_000_000u64 + i})
            } else {
                json!({"role":"assistant","content":[{"type":"text","text":format!("{i} {text}")}],"api":"openai-completions","provider":"fake","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1_700_000_000_000u64 + i})
            };
            let id = format!("{f}-{i}");
            lines.push(json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:01.000Z","message":message}).to_string());
            parent = json!(id);
        }
        std::fs::write(sessions.path().join(format!("2026-01-01T00-00-0{f:02}_s{f}.jsonl")), lines.join("\n") + "\n").unwrap();
    }
    // A reply of 400 one-character deltas, 10 ms apart.
    let mut a = start_in(sessions.path(), &[], &[json!({"text": "x".repeat(400), "chunkSize": 1, "delayMs": 10})]);
    a.send(json!({"id": "p", "type": "prompt", "message": "stream"}));
    a.until(|f| f["type"] == "message_update");
    let asked = std::time::Instant::now();
    a.send(json!({"id": "ls", "type": "list_sessions"}));
    let during = a.until(|f| f["id"] == "ls");
    let took = asked.elapsed();
    let listed = during.last().unwrap()["data"]["sessions"].as_array().map_or(0, Vec::len);
    assert!(listed >= FILES, "{listed} sessions listed");
    let deltas = during.iter().filter(|f| f["type"] == "message_update").count();
    // A delta every 10 ms while the listing ran; a third of them is plenty of slack.
    let expected = (took.as_millis() / 30) as usize;
    assert!(took >= Duration::from_millis(150), "the listing took only {took:?}: too short to tell");
    assert!(deltas >= expected, "{deltas} deltas during a listing of {took:?} (expected at least {expected})");
    a.until_prompt_result("p");
}
