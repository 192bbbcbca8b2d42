//! An agent subprocess: started in a process group of its own, its stdin and stdout piped, its
//! stderr passed through, and never outliving us.
//!
//! - The group: a signal meant for the agent reaches everything it started
//!   ([`AgentProcess::signal`]), and a terminal's Ctrl-C aimed at our group does not kill the
//!   agent behind our back (we forward it, then shut down in order).
//! - `PR_SET_PDEATHSIG` (Linux): if we die however we die, even by SIGKILL, the kernel kills
//!   the agent.
//! - [`AgentProcess::shutdown`]: the polite end. The caller closes the agent's stdin (drops
//!   the writer), we wait a bounded time for it to exit, then SIGKILL its group; the group is
//!   killed even after a clean exit, so nothing the agent left behind in it survives.
//! - Dropping an [`AgentProcess`] that was not shut down kills the group at once.

use std::ffi::OsStr;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long [`AgentProcess::shutdown`] waits by default for the agent to exit after its stdin
/// closed, before it kills the group. A host's EOF must not leave a process behind for long.
pub const DEFAULT_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Why an agent process could not be started or managed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// The command line was empty.
    #[error("no agent command given")]
    NoCommand,
    /// The program could not be started.
    #[error("cannot start the agent `{program}`: {source}")]
    Spawn {
        /// The program as given.
        program: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the process failed.
    #[error("cannot wait for the agent: {0}")]
    Wait(#[source] std::io::Error),
}

/// A running agent process (see the module docs for what it guarantees).
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    /// The group id (= the agent's pid); `None` once the agent has been reaped and its group
    /// killed, so a recycled pid is never signalled.
    pgid: Option<i32>,
    program: String,
}

impl AgentProcess {
    /// Starts `program` with `args`, stdin and stdout piped, stderr inherited.
    pub fn spawn<I, S>(program: impl AsRef<OsStr>, args: I) -> Result<Self, ProcessError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(program.as_ref());
        command.args(args);
        Self::spawn_command(command)
    }

    /// Starts `argv[0]` with the rest as its arguments.
    pub fn spawn_argv<S: AsRef<OsStr>>(argv: &[S]) -> Result<Self, ProcessError> {
        let (program, args) = argv.split_first().ok_or(ProcessError::NoCommand)?;
        Self::spawn(program, args)
    }

    /// Starts a prepared command (its environment and working directory are the caller's).
    /// Its stdio, process group and kill-on-drop are set here.
    pub fn spawn_command(mut command: Command) -> Result<Self, ProcessError> {
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        isolate(command.as_std_mut());
        let child = command.spawn().map_err(|source| ProcessError::Spawn {
            program: program.clone(),
            source,
        })?;
        let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
        Ok(Self {
            child,
            pgid,
            program,
        })
    }

    /// The program as given (for messages).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The agent's pid (also its process group id), while it has not been reaped.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The agent's stdin, once (dropping it closes the agent's input).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// The agent's stdout, once.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Sends `signal` to the agent's whole process group. `false` when the group is gone.
    pub fn signal(&self, signal: i32) -> bool {
        self.pgid
            .and_then(|pgid| u32::try_from(pgid).ok())
            .is_some_and(|pgid| signal_group(pgid, signal))
    }

    /// Waits for the agent to exit (cancel-safe), then kills what is left of its group.
    pub async fn wait(&mut self) -> Result<ExitStatus, ProcessError> {
        let status = self.child.wait().await.map_err(ProcessError::Wait)?;
        self.kill_group();
        Ok(status)
    }

    /// Ends the agent: waits up to `grace` for it to exit on its own (the caller has closed
    /// its stdin, or signalled it), then SIGKILLs its group and reaps it. The status is the
    /// agent's own when it exited in time, else the kill's.
    pub async fn shutdown(mut self, grace: Duration) -> Result<ExitStatus, ProcessError> {
        // Our own copy of stdin, if the caller never took it, closes now.
        drop(self.child.stdin.take());
        if let Ok(waited) = tokio::time::timeout(grace, self.child.wait()).await {
            let status = waited.map_err(ProcessError::Wait)?;
            self.kill_group();
            return Ok(status);
        }
        tracing::warn!(agent = %self.program, "the agent did not exit within {grace:?} of its input closing; killing it");
        self.signal(libc::SIGKILL);
        let status = self.child.wait().await.map_err(ProcessError::Wait)?;
        self.kill_group();
        Ok(status)
    }

    /// SIGKILLs the group (whatever the agent left running in it) and forgets its id.
    fn kill_group(&mut self) {
        self.signal(libc::SIGKILL);
        self.pgid = None;
    }
}

/// Prepares a command the way every agent process we start is started: in a process group of
/// its own (its pid is the group id, so [`signal_group`] reaches everything it starts) and, on
/// Linux, killed by the kernel when the thread that spawned it dies, even by SIGKILL
/// (`PR_SET_PDEATHSIG`). [`AgentProcess`] uses it; so does the conformance harness, which drives
/// agents from plain threads, so an agent it times out on cannot leave its children behind.
pub fn isolate(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            Ok(())
        });
    }
}

/// Kills the process group it names when dropped: for an agent started with [`isolate`] from
/// plain threads (the conformance recorder), so an early return cannot leave it running.
#[derive(Debug)]
pub struct GroupGuard(pub u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, libc::SIGKILL);
    }
}

/// Sends `signal` to the process group `pgid` (an agent started after [`isolate`]: its pid).
/// `false` when the group is gone or `pgid` is not a valid id.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    // SAFETY: killpg has no memory-safety preconditions.
    i32::try_from(pgid).is_ok_and(|pgid| pgid > 0 && unsafe { libc::killpg(pgid, signal) } == 0)
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        // Not shut down (a task dropped mid-run, a panic): nothing of the agent may stay.
        self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Running (a zombie waiting for its reaper counts as gone).
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                != Some("Z")
        })
    }

    #[tokio::test]
    async fn shutdown_kills_an_agent_that_ignores_eof_and_its_children() {
        // The shell ignores its stdin closing and keeps a child in its group.
        let mut agent =
            AgentProcess::spawn("sh", ["-c", "trap '' TERM; sleep 60 & echo $!; wait"]).unwrap();
        let mut stdout = agent.take_stdout().unwrap();
        let mut line = String::new();
        let mut reader = tokio::io::BufReader::new(&mut stdout);
        tokio::io::AsyncBufReadExt::read_line(&mut reader, &mut line)
            .await
            .unwrap();
        let child: u32 = line.trim().parse().unwrap();
        let pid = agent.id().unwrap();
        drop(agent.take_stdin());
        let started = std::time::Instant::now();
        let status = agent.shutdown(Duration::from_millis(300)).await.unwrap();
        assert!(!status.success());
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(!alive(pid), "the agent outlived its shutdown");
        // The grandchild is reaped by init; give it a moment to disappear.
        for _ in 0..100 {
            if !alive(child) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the agent's child {child} outlived the shutdown");
    }

    #[tokio::test]
    async fn an_agent_that_exits_on_eof_keeps_its_own_status() {
        let mut agent = AgentProcess::spawn("sh", ["-c", "cat >/dev/null; exit 3"]).unwrap();
        drop(agent.take_stdin());
        let status = agent.shutdown(Duration::from_secs(30)).await.unwrap();
        assert_eq!(status.code(), Some(3));
    }

    #[tokio::test]
    async fn a_missing_program_is_a_clear_error() {
        let err =
            AgentProcess::spawn("/nonexistent/agent", std::iter::empty::<&str>()).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/agent"), "{err}");
        assert!(matches!(
            AgentProcess::spawn_argv::<&str>(&[]),
            Err(ProcessError::NoCommand)
        ));
    }
}
