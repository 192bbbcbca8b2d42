//! Process hygiene through the binary (issue 15, defect 4; issue 25): a signal while an rpc
//! `bash` command runs answers the command (cancelled), takes its whole process tree down and
//! exits with the conventional code within 1.5 s, stdin still open; SIGKILL of the agent takes
//! the tree down too. The other dialects' signal paths are in `tests/lifecycle.rs`.

mod common;

use std::time::{Duration, Instant};

use common::{is_gone, wait_for, Agent};
use serde_json::json;

/// Starts a `bash` command that leaves a background `sleep` in its group and waits for it;
/// returns the sleep's pid once it is written.
fn start_tree(a: &mut Agent) -> i32 {
    let pidfile = a.dir.path().join("pid");
    let command = format!("sleep 300 & echo $! > {}.tmp && mv {0}.tmp {0}; wait", pidfile.display());
    a.send(json!({"id":"b","type":"bash","command": command}));
    wait_for(|| pidfile.exists(), "the command to start");
    std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap()
}

/// From the signal to the exit (issue 25: the answer, the flush and the exit within 1.5 s, even
/// while the host keeps stdin open and a read of it is blocked).
const SIGNAL_EXIT: Duration = Duration::from_millis(1500);

fn signal_answers_the_command_and_kills_the_tree(signal: i32, code: i32) {
    let mut a = Agent::start(&[], &[]);
    let pid = start_tree(&mut a);
    assert!(!is_gone(pid));
    let t = Instant::now();
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(a.pid() as i32, signal) };
    let (rest, exit) = a.wait_exit();
    assert!(t.elapsed() < SIGNAL_EXIT, "exited {:?} after the signal", t.elapsed());
    let response = rest.iter().find(|f| f["type"] == "response" && f["id"] == "b").unwrap_or_else(|| panic!("the bash command is answered: {rest:?}"));
    assert_eq!((&response["success"], &response["data"]["cancelled"]), (&json!(true), &json!(true)), "{response}");
    assert_eq!(exit, code);
    wait_for(|| is_gone(pid), "the background process to be killed");
}

#[test]
fn sigterm_answers_a_running_bash_kills_its_tree_and_exits_143() {
    signal_answers_the_command_and_kills_the_tree(libc::SIGTERM, 143);
}

#[test]
fn sigint_answers_a_running_bash_kills_its_tree_and_exits_130() {
    signal_answers_the_command_and_kills_the_tree(libc::SIGINT, 130);
}

#[test]
fn sighup_answers_a_running_bash_kills_its_tree_and_exits_129() {
    signal_answers_the_command_and_kills_the_tree(libc::SIGHUP, 129);
}

#[test]
fn sigkill_of_the_agent_takes_the_tree_down() {
    let mut a = Agent::start(&[], &[]);
    let pid = start_tree(&mut a);
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(a.pid() as i32, libc::SIGKILL) };
    let _ = a.wait_exit();
    wait_for(|| is_gone(pid), "the background process to be killed after SIGKILL of the agent");
}
