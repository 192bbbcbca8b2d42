//! `examples/host.rs` (the Rust client driving an agent process) against the real binary: a
//! prompt read from stdin, the offline model's reply printed, exit 0. `cargo test` builds the
//! examples beside the test binaries.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let path = deps.parent().unwrap().join("examples").join(name);
    assert!(path.exists(), "build the examples first (cargo test builds them): {}", path.display());
    path
}

fn run_host(dialect: &[&str], input: &str) -> (String, String, Option<i32>) {
    run_host_on(dialect, "rpc", input)
}

/// The example in front of `agentwire --mode <mode>`.
fn run_host_on(dialect: &[&str], mode: &str, input: &str) -> (String, String, Option<i32>) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(example("host"))
        .args(dialect)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", mode, "--no-session", "--config-dir"])
        .arg(dir.path())
        .arg("--cwd")
        .arg(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned(), out.status.code())
}

/// The example, with `dialect` arguments, in front of `agentwire --mode <mode>`, prints the
/// offline model's reply to each of two lines and exits 0.
fn replies_to_each_line(dialect: &[&str], mode: &str) {
    let (stdout, stderr, code) = run_host_on(dialect, mode, "hello\nstressed\n");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{dialect:?} {mode}: {stdout}\n{stderr}");
    assert!(lines[0].starts_with("You said: \"hello\""), "{stdout}");
    assert!(lines[1].starts_with("You said: \"stressed\""), "{stdout}");
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn host_prints_the_reply_to_each_line_and_exits_0() {
    replies_to_each_line(&[], "rpc");
}

#[test]
fn host_refuses_a_dialect_the_agent_does_not_speak() {
    // agentwire --mode rpc is no ACP agent: the `initialize` gets no ACP answer.
    let (stdout, stderr, code) = run_host(&["--dialect", "acp"], "hello\n");
    assert_eq!(stdout, "");
    assert!(stderr.contains("host:"), "{stderr}");
    assert_eq!(code, Some(1), "{stderr}");
}

#[test]
fn host_drives_an_acp_agent_through_the_acp_client() {
    replies_to_each_line(&["--dialect", "acp"], "acp");
    replies_to_each_line(&[], "acp");
}

#[test]
fn host_drives_a_wire_agent_through_the_wire_client() {
    replies_to_each_line(&["--dialect", "wire"], "wire");
    replies_to_each_line(&[], "wire");
}
