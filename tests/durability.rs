//! The durability contract through the binary (issue 15, defects 1 and 2): a session write that
//! fails reaches the host (an error notice and an error `prompt_result` during a run,
//! `success:false` for a command), nothing acknowledged is lost once space returns (a torn
//! fragment is cut off before the next append, so the parent chain holds), `get_state` names a
//! session file only once it exists, and session paths that are not regular files are refused
//! at once with the path and the reason, never the content.
//!
//! A full disk is simulated with `RLIMIT_FSIZE` (writes past the limit fail with EFBIG after a
//! short write, exactly like ENOSPC on a filling disk) and raised again with `prlimit(2)`.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use agentwire::sessions::Session;
use common::{text_reply, Agent};
use serde_json::{json, Value};

const LIMIT: u64 = 4096;

fn set_file_size_limit(pid: i32, bytes: u64) {
    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: prlimit on a child we own, with a valid rlimit and no old-value pointer.
    let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// An agent whose files may not grow past [`LIMIT`] bytes (SIGXFSZ ignored, so the write fails).
fn start_on_a_full_disk(session_dir: &Path, script: &[Value]) -> Agent {
    let dir = session_dir.to_str().unwrap().to_owned();
    Agent::start_configured(&["--session-dir", &dir], script, |cmd| {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit { rlim_cur: LIMIT, rlim_max: libc::RLIM_INFINITY };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    })
}

fn user_texts(path: &Path) -> Vec<String> {
    let (session, warnings) = Session::load(path).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    session
        .messages()
        .iter()
        .filter(|m| matches!(m, agentwire::protocol::AgentMessage::User(_)))
        .map(agentwire::sessions::message_text)
        .collect()
}

#[test]
fn a_full_disk_fails_the_prompt_loudly_and_loses_nothing_once_space_returns() {
    let sessions = tempfile::tempdir().unwrap();
    let mut a = start_on_a_full_disk(sessions.path(), &[text_reply("first"), text_reply("third")]);
    a.send(json!({"id":"p1","type":"prompt","message":"one"}));
    let frames = a.until_prompt_result("p1");
    assert_eq!(frames.last().unwrap()["status"], "completed");
    let state = a.request(json!({"id":"s1","type":"get_state"}));
    let file = PathBuf::from(state["data"]["sessionFile"].as_str().expect("saved, so named"));

    // This entry does not fit: the write is short, then fails.
    let big = format!("two {}", "x".repeat(2 * LIMIT as usize));
    let ack = a.request(json!({"id":"p2","type":"prompt","message":big}));
    assert_eq!(ack["success"], true);
    let frames = a.until_prompt_result("p2");
    let notice = frames.iter().find(|f| f["type"] == "notice" && f["level"] == "error").unwrap_or_else(|| panic!("an error notice: {frames:#?}"));
    let text = notice["message"].as_str().unwrap();
    assert!(text.contains(&file.display().to_string()) && text.contains("File too large"), "names the file and the OS reason: {text}");
    let result = frames.last().unwrap();
    assert_eq!((&result["status"], &result["error"]["message"]), (&json!("error"), &notice["message"]), "the prompt fails with that reason");

    // Space returns: the next prompt writes the failed entry first, after cutting off the
    // fragment the short write left.
    set_file_size_limit(a.pid() as i32, libc::RLIM_INFINITY);
    a.send(json!({"id":"p3","type":"prompt","message":"three"}));
    assert_eq!(a.until_prompt_result("p3").last().unwrap()["status"], "completed");
    assert_eq!(user_texts(&file), ["one", big.as_str(), "three"], "every acknowledged message is in the file, in one chain");
    let fragments: Vec<_> = std::fs::read_dir(sessions.path()).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().contains(".torn-")).collect();
    assert_eq!(fragments.len(), 1, "the torn fragment is kept beside the file");
}

#[test]
fn a_full_disk_fails_commands_that_save() {
    let sessions = tempfile::tempdir().unwrap();
    let mut a = start_on_a_full_disk(sessions.path(), &[text_reply("ok")]);
    a.send(json!({"id":"p1","type":"prompt","message":"one"}));
    a.until_prompt_result("p1");
    let r = a.request(json!({"id":"n1","type":"set_session_name","name": "n".repeat(2 * LIMIT as usize)}));
    assert_eq!(r["success"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("File too large"), "{r}");
    let r = a.request(json!({"id":"b1","type":"bash","command": format!("printf '%0{}d' 0", 2 * LIMIT)}));
    assert_eq!(r["success"], false, "the command ran but its record could not be saved: {r}");
}

#[test]
fn an_uncreatable_session_directory_is_reported_and_no_file_is_named() {
    let parent = tempfile::tempdir().unwrap();
    let file = parent.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let dir = file.join("sessions");
    let mut a = Agent::start(&["--session-dir", dir.to_str().unwrap()], &[text_reply("hi")]);
    a.send(json!({"id":"p1","type":"prompt","message":"one"}));
    let frames = a.until_prompt_result("p1");
    let notice = frames.iter().find(|f| f["type"] == "notice" && f["level"] == "error").expect("an error notice");
    assert!(notice["message"].as_str().unwrap().contains("Not a directory"), "{notice}");
    assert_eq!(frames.last().unwrap()["status"], "error");
    let state = a.request(json!({"id":"s","type":"get_state"}));
    assert!(state["data"].get("sessionFile").is_none(), "no file exists, so none is named: {state}");
}

#[test]
fn non_regular_session_paths_are_refused_at_once_without_their_content() {
    let mut a = Agent::start(&[], &[]);
    let fifo = a.dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let r = a.request(json!({"id":"f","type":"switch_session","sessionPath": fifo}));
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("not a regular file (a FIFO)"), "{r}");
    for device in ["/dev/zero", "/dev/full"] {
        let r = a.request(json!({"id":"d","type":"switch_session","sessionPath": device}));
        assert!(r["error"].as_str().unwrap().contains(&format!("{device}: not a regular file (a character device)")), "{r}");
    }
    let secret = a.dir.path().join("notes.jsonl");
    std::fs::write(&secret, "{\"type\":\"sk-live-0123456789abcdef\"}\n").unwrap();
    let r = a.request(json!({"id":"s","type":"switch_session","sessionPath": secret}));
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("line 1 is not a session header") && !error.contains("sk-live"), "names the reason, not the content: {error}");
    // Still serving.
    assert_eq!(a.request(json!({"id":"ok","type":"get_state"}))["success"], true);
}

#[test]
fn a_device_given_as_session_is_a_startup_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--session", "/dev/zero"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/dev/zero: not a regular file (a character device)"), "{}", String::from_utf8_lossy(&out.stderr));
}
