//! The agent on whatever stdio its host gives it (`transport::stdio`): pipes and sockets are
//! read and written on the runtime's own thread, anything else through the blocking paths; and a
//! host that goes away while a tool runs silently (no frame to fail on) is noticed by the
//! hang-up watch alone, on a pipe and on a socket, within the 3 s of issue 25.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{is_gone, wait_for};
use serde_json::{json, Value};

/// From the host going away to the exit (issue 25).
const HOST_GONE_EXIT: Duration = Duration::from_secs(3);

/// `agentwire --mode rpc` in `dir`, its stdin and stdout as given, its model calling `bash`
/// with a command that starts a background `sleep` (its pid in `dir/pid`) and then prints
/// nothing for five minutes.
fn start_silent_tool(dir: &std::path::Path, stdin: Stdio, stdout: Stdio) -> Child {
    let command = "sleep 300 & echo $! > pid.tmp && mv pid.tmp pid; wait";
    let script = [json!({"toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": command}}]}), json!({"text": "never"})];
    let path = dir.join(".model-script.jsonl");
    std::fs::write(&path, script.iter().map(|v| format!("{v}\n")).collect::<String>()).unwrap();
    Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--no-session", "--approval", "never", "--cwd"])
        .arg(dir)
        .arg("--config-dir")
        .arg(dir)
        .arg("--model-script")
        .arg(&path)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Reads frames until one of type `kind`.
fn until_type(reader: &mut impl BufRead, kind: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "stdout ended before {kind}: {seen:?}");
        let frame: Value = serde_json::from_str(&line).unwrap();
        let done = frame["type"] == kind;
        seen.push(frame);
        if done {
            return seen;
        }
    }
}

/// Waits for the exit after the host went away; the tool's background child must be gone too.
fn exits_and_leaves_no_child(mut child: Child, dir: &std::path::Path, gone_at: Instant) {
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if gone_at.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("still running 20 s after the host went away");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = gone_at.elapsed();
    assert!(took < HOST_GONE_EXIT, "exited {took:?} after the host went away");
    assert_eq!(code, Some(0), "no panic, no signal death");
    let pid: i32 = std::fs::read_to_string(dir.join("pid")).unwrap().trim().parse().unwrap();
    wait_for(|| is_gone(pid), "the tool's background child to be killed");
}

/// The host asks for the state and a prompt whose tool prints nothing, then closes its end of
/// our stdout (stdin stays open): the answers came, and the hang-up alone ends the agent.
fn host_leaves_during_a_silent_tool(dir: &std::path::Path, child: Child, mut input: impl Write, output: impl std::io::Read) {
    let mut output = BufReader::new(output);
    input.write_all(b"{\"id\":\"s\",\"type\":\"get_state\"}\n{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n").unwrap();
    let frames = until_type(&mut output, "tool_execution_start");
    assert!(frames.iter().any(|f| f["id"] == "s" && f["success"] == true), "get_state answered: {frames:?}");
    wait_for(|| dir.join("pid").exists(), "the command to start");
    drop(output);
    exits_and_leaves_no_child(child, dir, Instant::now());
    drop(input);
}

#[test]
fn a_host_on_sockets_gets_its_answers_and_closing_stdout_during_a_silent_tool_ends_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let (host_in, agent_in) = UnixStream::pair().unwrap();
    let (host_out, agent_out) = UnixStream::pair().unwrap();
    let child = start_silent_tool(dir.path(), Stdio::from(OwnedFd::from(agent_in)), Stdio::from(OwnedFd::from(agent_out)));
    host_leaves_during_a_silent_tool(dir.path(), child, host_in, host_out);
}

#[test]
fn a_host_on_pipes_gets_its_answers_and_closing_stdout_during_a_silent_tool_ends_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_silent_tool(dir.path(), Stdio::piped(), Stdio::piped());
    let (input, output) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    host_leaves_during_a_silent_tool(dir.path(), child, input, output);
}

/// Regular files on both sides (`agentwire < commands > answers`): the blocking paths answer
/// every command, in order, and stdin's end is the end of the session.
#[test]
fn regular_files_as_stdin_and_stdout_are_served_whole() {
    let dir = tempfile::tempdir().unwrap();
    let commands = dir.path().join("commands.jsonl");
    let lines: String = (0..500).map(|i| format!("{{\"id\":{i},\"type\":\"get_state\"}}\n")).collect();
    std::fs::write(&commands, lines).unwrap();
    let answers = dir.path().join("answers.jsonl");
    let status = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--no-session", "--cwd"])
        .arg(dir.path())
        .arg("--config-dir")
        .arg(dir.path())
        .stdin(std::fs::File::open(&commands).unwrap())
        .stdout(std::fs::File::create(&answers).unwrap())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(&answers).unwrap();
    let frames: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(frames[0]["type"], "ready");
    let ids: Vec<u64> = frames[1..].iter().map(|f| f["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, (0..500).collect::<Vec<_>>(), "every command answered, in order");
}
