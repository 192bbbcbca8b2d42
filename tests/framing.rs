//! Framing through the real binary: ready first, LF-only splitting, CRLF, blank lines, an
//! unterminated last line, oversized lines, escaped U+2028/2029, pipelined order, EOF exit.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use common::Agent;
use serde_json::{json, Value};

#[test]
fn crlf_blank_lines_and_line_separators_inside_strings() {
    let mut a = Agent::start(&[], &[]);
    a.send_raw("");
    a.send_raw("   \t");
    a.send_raw("{\"id\":\"crlf\",\"type\":\"get_state\"}\r");
    let r = a.next();
    assert_eq!((&r["id"], &r["success"]), (&json!("crlf"), &json!(true)), "blank lines get no frame; CRLF works");
    let name = "a\u{2028}b\u{2029}c";
    assert_eq!(a.request(json!({"id":"n","type":"set_session_name","name":name}))["success"], true);
    assert_eq!(a.request(json!({"id":"s","type":"get_state"}))["data"]["sessionName"], name);
}

#[test]
fn oversized_lines_get_one_error_and_the_server_keeps_serving() {
    let mut a = Agent::start(&["--max-line-bytes", "64"], &[]);
    a.send_raw(&format!("{{\"id\":\"big\",\"type\":\"prompt\",\"message\":\"{}\"}}", "x".repeat(10_000)));
    let e = a.next();
    // The id and command come first on the line, so they are read from its head.
    assert_eq!((&e["command"], &e["code"], &e["id"]), (&json!("prompt"), &json!("frame_too_large"), &json!("big")));
    // Here the id comes after the oversized part: it cannot be read.
    a.send_raw(&format!("{{\"message\":\"{}\",\"id\":\"late\",\"type\":\"prompt\"}}", "x".repeat(10_000)));
    let e = a.next();
    assert_eq!((&e["command"], &e["code"], e.get("id")), (&json!("parse"), &json!("frame_too_large"), None));
    assert_eq!(a.request(json!({"id":1,"type":"get_state"}))["success"], true);
}

#[test]
fn pipelined_commands_are_answered_in_order() {
    let mut a = Agent::start(&[], &[]);
    let batch: String = (0..500).map(|i| format!("{{\"id\":{i},\"type\":\"get_state\"}}\n")).collect();
    a.send_raw(batch.trim_end());
    for i in 0..500 {
        assert_eq!(a.next()["id"], i);
    }
}

/// Answers to read-only commands are gathered while more input is buffered (issue 17); a
/// command with effects must still see every earlier answer written before anything it causes.
#[test]
fn gathered_answers_never_let_a_later_command_overtake_them() {
    let mut a = Agent::start(&[], &[]);
    let mut batch = String::new();
    for i in 0..300 {
        batch.push_str(&format!("{{\"id\":{i},\"type\":\"get_state\"}}\n{{\"id\":\"bad{i}\",\"type\":\"no_such\"}}\n"));
        if i % 100 == 99 {
            batch.push_str(&format!("{{\"id\":\"name{i}\",\"type\":\"set_session_name\",\"name\":\"n{i}\"}}\n"));
        }
    }
    a.send_raw(batch.trim_end());
    let mut expected = Vec::new();
    for i in 0..300 {
        expected.push(json!(i));
        expected.push(json!(format!("bad{i}")));
        if i % 100 == 99 {
            // The event set_session_name causes comes after every earlier answer.
            expected.push(json!(format!("event n{i}")));
            expected.push(json!(format!("name{i}")));
        }
    }
    let got: Vec<Value> = (0..expected.len())
        .map(|_| {
            let f = a.next();
            if f["type"] == "session_info_changed" { json!(format!("event {}", f["name"].as_str().unwrap())) } else { f["id"].clone() }
        })
        .collect();
    assert_eq!(got, expected);
}

/// The binary with raw pipes (for byte-level checks the frame helper would hide).
fn spawn_raw() -> (tempfile::TempDir, std::process::Child) {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--no-session", "--cwd"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    (dir, child)
}

#[test]
fn raw_output_is_compact_lines_with_separators_escaped_and_the_last_line_needs_no_lf() {
    let (_dir, mut child) = spawn_raw();
    let mut stdin = child.stdin.take().unwrap();
    // The last command has no trailing LF: it is still handled at EOF.
    stdin.write_all("{\"id\":1,\"type\":\"set_session_name\",\"name\":\"x\u{2028}y\"}\n{\"id\":2,\"type\":\"get_state\",\"dumpTools\":true}".as_bytes()).unwrap();
    drop(stdin);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert!(!out.contains('\u{2028}') && out.contains("x\\u2028y"), "U+2028 is escaped on output");
    let frames: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(frames[0]["type"], "ready");
    // Compact: no white space outside strings (tool descriptions in `dumpTools` hold ", ").
    assert!(out.lines().all(|l| !has_space_outside_strings(l)), "compact JSON");
    let state = frames.iter().find(|f| f["id"] == 2).expect("the unterminated last line was answered");
    assert_eq!(state["data"]["sessionName"], "x\u{2028}y");
}

/// Whether JSON text has white space between its tokens.
fn has_space_outside_strings(line: &str) -> bool {
    let (mut in_string, mut escaped) = (false, false);
    for c in line.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_string = !in_string,
            (false, _, c) if c.is_whitespace() => return true,
            _ => {}
        }
    }
    false
}

#[test]
fn stdin_eof_when_idle_exits_0() {
    let a = Agent::start(&[], &[]);
    let (rest, code) = a.finish();
    assert_eq!((rest.len(), code), (0, 0));
}

#[test]
fn a_closed_stdout_ends_the_process_cleanly() {
    let (_dir, mut child) = spawn_raw();
    drop(child.stdout.take()); // the host stops reading
    let mut stdin = child.stdin.take().unwrap();
    for i in 0..50 {
        // Writes may fail once the agent is gone; that is the point.
        if stdin.write_all(format!("{{\"id\":{i},\"type\":\"get_state\"}}\n").as_bytes()).is_err() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert_eq!(status.code(), Some(0));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "agentwire kept running with stdout closed and stdin open");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Found by the `rpc_decode` fuzz target: a line with invalid UTF-8 after a readable `id` was
/// answered without its id (the host would wait forever). The id now comes back, as for every
/// other line the full parser rejects.
#[test]
fn invalid_utf8_after_a_readable_id_still_gets_its_id() {
    let mut a = Agent::start(&[], &[]);
    a.send_bytes(b"{\"id\":\"br1\",\"type\":\"branch\x8c\",\"entryId\":\"5d46e4ac\"}\n");
    let r = a.next();
    assert_eq!((&r["id"], &r["type"], &r["success"], &r["code"]), (&json!("br1"), &json!("response"), &json!(false), &json!("parse_error")), "{r}");
    assert_eq!(a.request(json!({"id":"after","type":"get_state"}))["success"], true, "still serving");
}
