//! What a `bash` command deliberately leaves running (`server > log 2>&1 &`) keeps running after
//! the command is answered, for as long as the agent lives, and goes with the agent: when it exits
//! on EOF and when it is killed. No child process outlives the agent, whoever started it. (Until
//! 2026-11-27 the watchdog was told "done" when the command ended, and such a process ran on
//! after the agent, holding its port or its files.)

mod common;

use common::{is_gone, wait_for, Agent};
use serde_json::json;

/// Kills the background process if a test fails before the agent took it down, so that a failing
/// run does not leave it behind for 300 s.
struct Reap(i32);

impl Drop for Reap {
    fn drop(&mut self) {
        if !is_gone(self.0) {
            // SAFETY: signalling a process this test started (through the agent).
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// Runs a command that starts `sleep 300` in the background and ends at once; returns the
/// sleep's pid.
fn leave_running(a: &mut Agent) -> Reap {
    let r = a.request(json!({"id":"b","type":"bash","command":"sleep 300 > /dev/null 2>&1 & echo $!"}));
    assert_eq!((&r["success"], &r["data"]["exitCode"], &r["data"]["cancelled"]), (&json!(true), &json!(0), &json!(false)), "{r}");
    Reap(r["data"]["output"].as_str().unwrap().trim().parse().unwrap())
}

#[test]
fn what_a_finished_command_left_running_lives_until_the_agent_exits() {
    let mut a = Agent::start(&[], &[]);
    let sleep = leave_running(&mut a);
    // The command meant it to run on: neither its end nor the next command stops it.
    a.request(json!({"id":"s","type":"get_state"}));
    assert!(!is_gone(sleep.0), "the background process was killed with its command");
    let (_, code) = a.finish();
    assert_eq!(code, 0);
    wait_for(|| is_gone(sleep.0), "the background process to go with the agent");
}

#[test]
fn what_a_finished_command_left_running_goes_when_the_agent_is_killed() {
    let mut a = Agent::start(&[], &[]);
    let sleep = leave_running(&mut a);
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(a.pid() as i32, libc::SIGKILL) };
    let _ = a.wait_exit();
    wait_for(|| is_gone(sleep.0), "the background process to go after SIGKILL of the agent");
}
