//! A conformance run leaves nothing of the agent behind: the harness starts each agent in a
//! process group of its own and kills the group when the transcript ends, so a child the agent
//! started (a bash tool, an MCP server, the node process behind an `npx` wrapper) cannot outlive
//! the run and pile up over a suite of hundreds of transcripts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentwire::conformance::runner::{load_adapter, run, AgentUnderTest, RunOptions};

/// Running (a zombie waiting for its reaper counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) != Some("Z"))
}

#[test]
fn a_child_the_agent_left_running_dies_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("sleep.pid");
    // The agent starts a long-lived child of its own, then becomes agentwire (exec keeps the
    // pid, so the sleep is agentwire's child), which exits cleanly at the transcript's EOF.
    let script = format!(
        "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > '{}'; exec {{{{agentwire}}}} --mode rpc --cwd {{{{work}}}} --config-dir {{{{config}}}} --model-script {{{{modelScript}}}}",
        pid_file.display()
    );
    let adapter = serde_json::json!({
        "name": "agentwire-with-a-child",
        "description": "agentwire in --mode rpc behind a shell that first starts a background sleep",
        "command": ["sh", "-c", script],
        "agentwire": true,
        "dialects": ["rpc"],
    });
    let adapter_path = dir.path().join("adapter.json");
    std::fs::write(&adapter_path, adapter.to_string()).unwrap();
    let options = RunOptions {
        agent: AgentUnderTest::Adapted {
            adapter: Box::new(load_adapter(&adapter_path).unwrap()),
            agentwire: PathBuf::from(env!("CARGO_BIN_EXE_agentwire")),
        },
        frame_timeout: Duration::from_secs(10),
    };
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/rpc-cmd-state-queries.jsonl");
    let outcome = run(&transcript, &options);
    assert!(outcome.failure.is_none(), "the transcript itself must pass: {:?}", outcome.failure);

    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // The group is killed before `run` returns; the orphaned sleep is reaped by whoever
    // adopted it, which may take a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = alive(pid);
    if survived {
        // SAFETY: killing the stray test process so it does not outlive the test either.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(!survived, "the agent's child (pid {pid}) outlived the conformance run");
}
