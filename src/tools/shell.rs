//! Running a shell command: the `bash` RPC command and the model's `bash` tool share this.
//!
//! stdout and stderr are merged in arrival order; the whole output goes to a temp file while the
//! command runs (so memory stays bounded however much it prints) and the caller gets the tail
//! (the last [`TAIL_LINES`] lines / [`TAIL_BYTES`] bytes).
//!
//! Process hygiene: the command runs in its own process group. Cancelling (abort, timeout, the
//! agent shutting down) sends SIGTERM to the group and SIGKILL after [`KILL_GRACE`]; dropping a
//! running command (its task was cancelled) kills the group at once. So that not even SIGKILL of
//! the agent leaves a tree behind, the shell gets `PR_SET_PDEATHSIG` (Linux) and a watchdog
//! `sh` in a group of its own holds a pipe from us: when the agent dies, however it dies, the
//! pipe closes and the watchdog kills the command's group. A command that finishes normally
//! keeps what it deliberately left running (`server > log &`) for as long as the agent lives: its
//! watchdog's pipe is held in [`LEFT_RUNNING`] instead of being told "done", so that what it left
//! goes with the agent, on a clean exit as on SIGKILL. A group found empty later (the server
//! ended on its own) releases its watchdog, which is then told "done": a group id is never
//! signalled after the kernel could have given it to another process.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// Lines kept in the returned output.
pub const TAIL_LINES: usize = 2000;
/// Bytes kept in the returned output.
pub const TAIL_BYTES: usize = 50 * 1024;
/// Progress reports are at least this far apart (the first comes with the first output): a
/// command printing 50 MB would otherwise report its 50 KB tail thousands of times (~150 MB
/// of `tool_execution_update` frames). The final result always carries the whole tail.
pub const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How long a cancelled command's group has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// Kills the command's process group when dropped while armed (a task dropped mid-command).
struct GroupGuard {
    pgid: Option<u32>,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.pgid, libc::SIGKILL);
        }
    }
}

/// A watchdog that kills group `pgid` when its stdin closes without "done" (the agent died).
/// Also used for MCP stdio servers (`crate::mcp`).
pub fn spawn_watchdog(pgid: u32) -> Option<tokio::process::ChildStdin> {
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("IFS= read -r line; [ \"$line\" = done ] || kill -KILL -\"$1\" 2>/dev/null")
        .arg("agentwire-watchdog")
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a Ctrl-C aimed at the agent's group must not take the watchdog first.
        .process_group(0)
        .spawn()
        .ok()?;
    child.stdin.take()
}

/// How a shell command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellOutcome {
    /// The tail of the merged output (all of it when not truncated).
    pub output: String,
    /// Exit code; `None` when cancelled, timed out or killed by a signal.
    pub exit_code: Option<i32>,
    /// Cancelled by the caller.
    pub cancelled: bool,
    /// Killed after the timeout.
    pub timed_out: bool,
    /// `output` is only the tail.
    pub truncated: bool,
    /// The full output, kept when truncated.
    pub full_output_path: Option<PathBuf>,
    /// Lines of the full output.
    pub total_lines: u64,
    /// Bytes of the full output.
    pub total_bytes: u64,
}

/// The user's shell: `$SHELL` when it is bash or sh-like, else `/bin/sh`.
fn shell() -> String {
    std::env::var("SHELL").ok().filter(|s| !s.is_empty() && Path::new(s).exists()).unwrap_or_else(|| "/bin/sh".to_owned())
}

/// What a running command wrote, as [`run_shell`] reports it.
#[derive(Debug, Clone, Copy)]
pub struct ShellProgress<'a> {
    /// The tail of the output so far; `None` on the last report, which only flushes `delta`.
    pub tail: Option<&'a str>,
    /// The output since the previous report (a character split across reads waits for its
    /// last byte); all the reports' deltas together are the whole output.
    pub delta: &'a str,
}

/// Output not yet reported as a delta: complete characters go out, a split one waits.
#[derive(Debug, Default)]
struct PendingDelta(Vec<u8>);

impl PendingDelta {
    /// The complete characters held, taken out (a split character's bytes stay).
    fn take(&mut self) -> String {
        let valid = match std::str::from_utf8(&self.0) {
            Ok(_) => self.0.len(),
            // A sequence cut at the end waits; bytes that can never be UTF-8 go out replaced.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.0.len(),
        };
        let text = String::from_utf8_lossy(&self.0[..valid]).into_owned();
        self.0.drain(..valid);
        text
    }

    /// Everything held, a split character replaced.
    fn take_all(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.0).into_owned();
        self.0.clear();
        text
    }
}

/// Runs `command` in `cwd`. `on_output` gets the tail so far and the output since its last
/// call when the first output arrives and then at most every [`UPDATE_INTERVAL`] while new
/// output keeps arriving; once more at the end (tail `None`) when output is left unreported.
pub async fn run_shell(
    command: &str,
    cwd: &Path,
    timeout: Option<Duration>,
    cancel: CancellationToken,
    on_output: impl FnMut(ShellProgress<'_>),
) -> std::io::Result<ShellOutcome> {
    run_shell_spilling_to(&std::env::temp_dir(), command, cwd, timeout, cancel, on_output).await
}

/// [`run_shell`] with the full output spilled into `spill_dir` instead of the temp directory.
async fn run_shell_spilling_to(
    spill_dir: &Path,
    command: &str,
    cwd: &Path,
    timeout: Option<Duration>,
    cancel: CancellationToken,
    mut on_output: impl FnMut(ShellProgress<'_>),
) -> std::io::Result<ShellOutcome> {
    // `exec 2>&1` merges stderr into stdout inside the shell, so the two keep their real order
    // (reading two pipes would interleave them by scheduling). It shares the command's first
    // line, so the shell's messages name the lines the host wrote (`line 1: x: command not
    // found`, as pi's bash reports them).
    let mut cmd = tokio::process::Command::new(shell());
    cmd.arg("-c")
        .arg(format!("exec 2>&1; {command}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pgid = child.id();
    let mut guard = GroupGuard { pgid, armed: true };
    let mut watchdog = pgid.and_then(spawn_watchdog);
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // The file is deleted when `spill` drops (an error, the task dropped mid-command, the agent
    // shutting down) and kept only when the caller is given its path: a truncated output.
    let spill = tempfile::Builder::new().prefix("agentwire-bash-").suffix(".log").tempfile_in(spill_dir)?;
    let mut full = tokio::fs::File::from_std(spill.as_file().try_clone()?);
    let mut tail = Tail::default();
    let mut pending = PendingDelta::default();
    let (mut out_buf, mut err_buf) = ([0u8; 8192], [0u8; 8192]);
    let (mut out_open, mut err_open) = (true, true);
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let grace = tokio::time::sleep_until(far_future());
    tokio::pin!(grace);
    let mut stopped = None;
    // Output held back by the interval is reported when the interval ends, so progress shows
    // even when the command then goes quiet.
    let mut reported: Option<tokio::time::Instant> = None;
    let held = tokio::time::sleep_until(far_future());
    tokio::pin!(held);
    let mut holding = false;
    while out_open || err_open {
        let chunk = tokio::select! {
            n = stdout.read(&mut out_buf), if out_open => match n? { 0 => { out_open = false; continue } n => &out_buf[..n] },
            n = stderr.read(&mut err_buf), if err_open => match n? { 0 => { err_open = false; continue } n => &err_buf[..n] },
            () = cancel.cancelled(), if stopped.is_none() => { stopped = Some(Stop::Cancelled); terminate(pgid, grace.as_mut()); continue }
            () = &mut deadline, if stopped.is_none() => { stopped = Some(Stop::TimedOut); terminate(pgid, grace.as_mut()); continue }
            () = &mut grace => { signal_group(pgid, libc::SIGKILL); grace.as_mut().reset(far_future()); continue }
            () = &mut held, if holding => {
                holding = false;
                held.as_mut().reset(far_future());
                reported = Some(tokio::time::Instant::now());
                on_output(ShellProgress { tail: Some(&tail.text()), delta: &pending.take() });
                continue
            }
        };
        full.write_all(chunk).await?;
        tail.push(chunk);
        pending.0.extend_from_slice(chunk);
        match reported {
            Some(at) if at.elapsed() < UPDATE_INTERVAL => {
                if !holding {
                    holding = true;
                    held.as_mut().reset(at + UPDATE_INTERVAL);
                }
            }
            _ => {
                holding = false;
                held.as_mut().reset(far_future());
                reported = Some(tokio::time::Instant::now());
                on_output(ShellProgress { tail: Some(&tail.text()), delta: &pending.take() });
            }
        }
    }
    if !pending.0.is_empty() {
        on_output(ShellProgress { tail: None, delta: &pending.take_all() });
    }
    if stopped.is_some() {
        // Whatever ignored SIGTERM but closed its output goes now.
        signal_group(pgid, libc::SIGKILL);
    }
    let status = child.wait().await?;
    guard.armed = false;
    if let Some(mut w) = watchdog.take() {
        match pgid {
            // The shell is gone and its group is not: the command left something running.
            Some(pgid) if stopped.is_none() && group_alive(pgid) => keep_watching(pgid, w),
            _ => {
                let _ = w.write_all(b"done\n").await;
            }
        }
    }
    release_ended_groups();
    full.flush().await?;
    let truncated = tail.truncated;
    let full_path = if truncated { Some(spill.keep().map_err(|e| e.error)?.1) } else { None };
    Ok(ShellOutcome {
        output: tail.text(),
        exit_code: if stopped.is_some() { None } else { status.code() },
        cancelled: stopped == Some(Stop::Cancelled),
        timed_out: stopped == Some(Stop::TimedOut),
        truncated,
        full_output_path: full_path,
        total_lines: tail.total_lines,
        total_bytes: tail.total_bytes,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cancelled,
    TimedOut,
}

/// SIGTERM to the group now, SIGKILL when `grace` fires.
fn terminate(pgid: Option<u32>, grace: std::pin::Pin<&mut tokio::time::Sleep>) {
    signal_group(pgid, libc::SIGTERM);
    grace.reset(tokio::time::Instant::now() + KILL_GRACE);
}

fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86400 * 365)
}

/// The process groups that finished commands left running, each with its watchdog's pipe. The
/// pipes stay open for the agent's life, so each watchdog kills its group when the agent goes
/// (the process's exit closes them). Never dropped by hand while the group lives: a closed pipe
/// without "done" is the watchdog's signal to kill.
static LEFT_RUNNING: std::sync::Mutex<Vec<(u32, std::fs::File)>> = std::sync::Mutex::new(Vec::new());

/// Whether process group `pgid` still has a process in it.
fn group_alive(pgid: u32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the group exists and may be signalled.
    i32::try_from(pgid).is_ok_and(|p| p > 0 && unsafe { libc::kill(-p, 0) } == 0)
}

/// Holds `watchdog` (the pipe to group `pgid`'s watchdog) until the agent exits or the group
/// ends ([`release_ended_groups`]).
fn keep_watching(pgid: u32, watchdog: tokio::process::ChildStdin) {
    match watchdog.into_owned_fd() {
        Ok(fd) => LEFT_RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((pgid, std::fs::File::from(fd))),
        // Dropping the pipe would have the watchdog kill the group now; the command meant it
        // to run, and it stays as it did before the registry existed.
        Err(e) => tracing::debug!("cannot keep the watchdog of group {pgid} ({e}); what the command left running may outlive the agent"),
    }
}

/// Tells the watchdogs of the groups that have ended "done" and forgets them, so that a group
/// id the kernel may reuse is never killed later, and idle watchdogs do not pile up.
fn release_ended_groups() {
    use std::io::Write;
    let mut left = LEFT_RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    left.retain_mut(|(pgid, watchdog)| {
        if group_alive(*pgid) {
            return true;
        }
        // Five bytes into an empty pipe: never blocks.
        let _ = watchdog.write_all(b"done\n");
        false
    });
}

fn signal_group(pgid: Option<u32>, signal: libc::c_int) {
    if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 0) {
        // SAFETY: kill(2) with a negative pid signals the process group we created.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// The last lines of a byte stream, bounded in lines and bytes.
#[derive(Default)]
struct Tail {
    buf: Vec<u8>,
    truncated: bool,
    total_bytes: u64,
    total_lines: u64,
    ends_with_newline: bool,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        self.total_lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        self.ends_with_newline = chunk.last() == Some(&b'\n');
        self.buf.extend_from_slice(chunk);
        if self.buf.len() > TAIL_BYTES * 2 {
            self.trim();
        }
    }

    fn trim(&mut self) {
        let mut start = self.buf.len().saturating_sub(TAIL_BYTES);
        let lines = memchr::memrchr_iter(b'\n', &self.buf[..self.buf.len().saturating_sub(1)]).nth(TAIL_LINES - 1);
        if let Some(nl) = lines {
            start = start.max(nl + 1);
        }
        if start > 0 {
            // Start at a line boundary when possible.
            if let Some(nl) = memchr::memchr(b'\n', &self.buf[start.saturating_sub(1)..]) {
                let candidate = start.saturating_sub(1) + nl + 1;
                if candidate < self.buf.len() {
                    start = candidate;
                }
            }
            self.buf.drain(..start);
            self.truncated = true;
        }
    }

    fn text(&mut self) -> String {
        if self.buf.len() > TAIL_BYTES || self.line_count() > TAIL_LINES {
            self.trim();
        }
        String::from_utf8_lossy(&self.buf).into_owned()
    }

    fn line_count(&self) -> usize {
        memchr::memchr_iter(b'\n', &self.buf).count() + usize::from(!self.ends_with_newline && !self.buf.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(cmd: &str) -> ShellOutcome {
        run_shell(cmd, Path::new("/tmp"), None, CancellationToken::new(), |_| {}).await.unwrap()
    }

    #[tokio::test]
    async fn merges_output_and_reports_exit_code() {
        let o = run("echo out; echo err >&2; exit 3").await;
        assert!(o.output.contains("out\n") && o.output.contains("err\n"), "{o:?}");
        assert_eq!((o.exit_code, o.cancelled, o.truncated), (Some(3), false, false));
        assert_eq!(run("pwd").await.output, "/tmp\n");
    }

    #[tokio::test]
    async fn shell_messages_name_the_line_the_host_wrote() {
        // bash: `line 1: nonexistent_cmd_xyz: command not found`; dash: `1: nonexistent_cmd_xyz: not found`.
        let o = run("nonexistent_cmd_xyz").await;
        assert!(o.output.contains("1: nonexistent_cmd_xyz:"), "{o:?}");
    }

    /// 20 MB of output is ~2,400 reads; a report per read would send the 50 KB tail each
    /// time (120 MB to the host). Reports are spaced by UPDATE_INTERVAL, so there are a handful
    /// (the bound allows a 20-second run).
    #[tokio::test]
    async fn progress_reports_are_spaced_out_however_much_is_printed() {
        let mut reports = Vec::new();
        let spill = tempfile::tempdir().unwrap();
        let cmd = "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo end";
        let o = run_shell_spilling_to(spill.path(), cmd, Path::new("/tmp"), None, CancellationToken::new(), |tail| reports.push(tail.len()))
        .await
        .unwrap();
        assert_eq!(o.total_bytes, 20_000_005);
        assert!(!reports.is_empty(), "progress is reported");
        assert!(reports.len() < 200, "{} reports for 20 MB", reports.len());
    }

    #[tokio::test]
    async fn long_output_keeps_the_tail_and_the_full_text_on_disk() {
        let spill = tempfile::tempdir().unwrap();
        let o = run_shell_spilling_to(spill.path(), "seq 1 100000", Path::new("/tmp"), None, CancellationToken::new(), |_| {}).await.unwrap();
        assert!(o.truncated);
        assert!(o.output.ends_with("99999\n100000\n"), "{}", &o.output[o.output.len() - 20..]);
        assert!(o.output.lines().count() <= TAIL_LINES && o.output.len() <= TAIL_BYTES, "{} lines", o.output.lines().count());
        assert!(o.output.starts_with(|c: char| c.is_ascii_digit()), "starts at a line boundary");
        assert_eq!((o.total_lines, o.total_bytes), (100_000, 588_895));
        let full = std::fs::read_to_string(o.full_output_path.unwrap()).unwrap();
        assert_eq!(full.lines().count(), 100_000);
    }

    fn watched(pgid: u32) -> bool {
        LEFT_RUNNING.lock().unwrap().iter().any(|(g, _)| *g == pgid)
    }

    /// A group a finished command left running is watched until it ends on its own; then the
    /// next command releases its watchdog, so the group id is never killed after its end.
    #[tokio::test]
    async fn a_group_left_running_is_watched_until_it_ends() {
        // `$$` is the shell's pid, which is the group's id.
        let o = run("sleep 0.5 > /dev/null 2>&1 & echo $$").await;
        let pgid: u32 = o.output.trim().parse().unwrap();
        assert!(group_alive(pgid) && watched(pgid), "{o:?}");
        while group_alive(pgid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        run("true").await;
        assert!(!watched(pgid), "an ended group's watchdog is released");
        // A command that leaves nothing running is never watched.
        let o = run("echo $$").await;
        assert!(!watched(o.output.trim().parse().unwrap()));
    }

    fn spilled(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect()
    }

    /// A short output is all in the answer, so its spill file goes.
    #[tokio::test]
    async fn short_output_leaves_no_file() {
        let spill = tempfile::tempdir().unwrap();
        let o = run_shell_spilling_to(spill.path(), "echo hi", Path::new("/tmp"), None, CancellationToken::new(), |_| {}).await.unwrap();
        assert_eq!((o.output.as_str(), o.full_output_path), ("hi\n", None));
        assert_eq!(spilled(spill.path()), Vec::<PathBuf>::new());
    }

    /// A command whose task is dropped while it runs (the turn aborted, the agent shutting down)
    /// used to leave its empty spill file in the temp directory, one per command.
    #[tokio::test]
    async fn a_command_dropped_mid_run_leaves_no_file() {
        let spill = tempfile::tempdir().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut tx = Some(tx);
        let run = run_shell_spilling_to(spill.path(), "echo started; sleep 30", Path::new("/tmp"), None, CancellationToken::new(), move |_| {
            if let Some(tx) = tx.take() {
                let _ = tx.send(());
            }
        });
        tokio::select! {
            _ = run => panic!("the command ended"),
            _ = rx => {}
        }
        assert_eq!(spilled(spill.path()), Vec::<PathBuf>::new());
    }

    #[tokio::test]
    async fn cancel_and_timeout_kill_the_whole_process_group() {
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            c.cancel();
        });
        let started = std::time::Instant::now();
        let o = run_shell("echo start; sleep 30 & sleep 30; echo never", Path::new("/tmp"), None, cancel, |_| {}).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!((o.output.as_str(), o.exit_code, o.cancelled), ("start\n", None, true));
        let o = run_shell("sleep 30", Path::new("/tmp"), Some(Duration::from_millis(50)), CancellationToken::new(), |_| {}).await.unwrap();
        assert!(o.timed_out && !o.cancelled && o.exit_code.is_none());
    }
}
