//! The process around a front: stdin as the serve loops read it, the signals that end it, and
//! how the `agentwire` process ([`run`]) and `agentwire bridge` ([`supervise`]) end. Which
//! frames mean what is the fronts' business; this module knows none.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::transport::until::UntilCancelled;

/// stdin as the serve loops read it, and the tokens it is driven by.
pub struct Stdin {
    /// Cancelled to end the input for the serve loop (a signal, `--eof-timeout`, the bridge's
    /// agent gone), even while a read of stdin is blocked.
    pub stop: CancellationToken,
    /// Cancelled when the input ended (EOF, a read error, or `stop`).
    pub ended: CancellationToken,
}

impl Default for Stdin {
    fn default() -> Self {
        Self::new()
    }
}

/// What a serve loop reads: stdin, ending when [`Stdin::stop`] is cancelled.
pub type StdinReader = UntilCancelled<tokio::io::BufReader<crate::transport::stdio::Stdin>>;

impl Stdin {
    /// The tokens of a stdin not read yet.
    pub fn new() -> Self {
        Self { stop: CancellationToken::new(), ended: CancellationToken::new() }
    }

    /// stdin, ending when `stop` is cancelled and noting its own end in `ended`.
    pub fn reader(&self) -> StdinReader {
        UntilCancelled::new(tokio::io::BufReader::with_capacity(64 * 1024, crate::transport::stdio::stdin()), self.stop.clone()).noting_end(self.ended.clone())
    }
}

/// A signal that ends the process or is passed on to its child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT.
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP.
    Hangup,
}

impl Signal {
    /// Its number.
    pub fn number(self) -> i32 {
        match self {
            Self::Interrupt => libc::SIGINT,
            Self::Terminate => libc::SIGTERM,
            Self::Hangup => libc::SIGHUP,
        }
    }

    /// The exit code of a process it ended: 128+n.
    pub fn exit_code(self) -> u8 {
        u8::try_from(128 + self.number()).unwrap_or(u8::MAX)
    }
}

/// SIGINT, SIGTERM and SIGHUP, caught from when this is made.
pub struct Signals {
    handlers: Option<[tokio::signal::unix::Signal; 3]>,
}

impl Signals {
    /// Catches the three (none when the runtime cannot: then none ever arrives).
    pub fn new() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup())) {
            (Ok(int), Ok(term), Ok(hup)) => Some([int, term, hup]),
            _ => None,
        };
        Self { handlers }
    }

    /// The next one to arrive.
    pub async fn next(&mut self) -> Signal {
        let Some([int, term, hup]) = &mut self.handlers else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => Signal::Interrupt,
            _ = term.recv() => Signal::Terminate,
            _ = hup.recv() => Signal::Hangup,
        }
    }
}

impl Default for Signals {
    fn default() -> Self {
        Self::new()
    }
}

/// How long the end of input's final flush waits for a slow host to read what is left.
const FLUSH_GRACE: Duration = Duration::from_secs(5);

/// From a signal to the exit: the process answers what was read, flushes and exits within this
/// (a host is promised 1.5 s; the rest is room for the runtime to stop).
const SIGNAL_EXIT: Duration = Duration::from_millis(1300);

/// Of [`SIGNAL_EXIT`], the part the cancelled work has to write its answers; the rest is for
/// the flush.
const SIGNAL_ANSWERS: Duration = Duration::from_millis(1000);

/// After `--eof-timeout` cancelled the work, or the host went away: how long the cancelled work
/// has to end before the process exits anyway.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// Why the process stops waiting.
enum Ending {
    /// Everything asked is done (after stdin EOF): exit 0.
    Finished,
    /// A signal: exit 128+n.
    Signal(Signal),
    /// `--eof-timeout` passed after stdin EOF.
    EofTimeout,
    /// stdout failed (EPIPE): nobody reads our answers any more.
    HostGone,
}

/// The `agentwire` process, whichever dialect it serves. `finished` is the front serving
/// `stdin`: it returns once the input ended, every request read was answered and every run
/// ended. `cancel` cancels every agent's work (runs aborted, `bash` process groups
/// terminated). Returns the exit code:
/// - stdin EOF: every request read is answered, every run goes on to its end (queued messages
///   delivered), then the output is flushed: 0. `eof_timeout` bounds that wait: past it, the
///   work is cancelled as `abort` would, and answered.
/// - SIGINT / SIGTERM / SIGHUP: the input ends (even while a read is blocked), the work is
///   cancelled and answered in the dialect's terms, the output flushed: 130 / 143 / 129 within
///   [`SIGNAL_EXIT`].
/// - stdout fails or its pipe reports an error (the host is gone): the work is cancelled, child
///   process groups stopped: 0.
pub async fn run<C, F>(finished: impl Future<Output = ()>, cancel: C, writer: tokio::task::JoinHandle<std::io::Result<u64>>, stdin: Stdin, eof_timeout: Option<Duration>) -> u8
where
    C: Fn() -> F,
    F: Future<Output = ()>,
{
    let mut writer = writer;
    let host_gone = crate::transport::hangup::watch_stdout_hangup();
    let mut signals = Signals::new();
    // Boxed so it can be dropped (with the sessions it owns) before the final flush.
    let mut finished = Box::pin(finished);
    let eof_expired = async {
        stdin.ended.cancelled().await;
        match eof_timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let ending = tokio::select! {
        biased;
        signal = signals.next() => Ending::Signal(signal),
        _ = &mut writer => Ending::HostGone,
        () = host_gone.cancelled() => Ending::HostGone,
        () = &mut finished => Ending::Finished,
        () = eof_expired => Ending::EofTimeout,
    };
    let now = tokio::time::Instant::now();
    let (code, flush_by) = match ending {
        Ending::Finished => (0, now + FLUSH_GRACE),
        Ending::Signal(signal) => {
            // The input ends even while a read of stdin is blocked; the cancelled work answers.
            stdin.stop.cancel();
            let answered = async {
                cancel().await;
                (&mut finished).await;
            };
            let _ = tokio::time::timeout_at(now + SIGNAL_ANSWERS, answered).await;
            (signal.exit_code(), now + SIGNAL_EXIT)
        }
        Ending::EofTimeout => {
            tracing::info!("--eof-timeout passed after stdin EOF: cancelling what is still running");
            let answered = async {
                cancel().await;
                (&mut finished).await;
            };
            let _ = tokio::time::timeout(CANCEL_GRACE, answered).await;
            (0, tokio::time::Instant::now() + FLUSH_GRACE)
        }
        Ending::HostGone => {
            // Nobody can read an answer: stop the work (child process groups included) and go.
            let _ = tokio::time::timeout(CANCEL_GRACE, cancel()).await;
            return 0;
        }
    };
    // The agents and the sessions hold the front's outbox: once they are gone, the writer
    // drains and ends.
    drop(finished);
    drop(cancel);
    let _ = tokio::time::timeout_at(flush_by, writer).await;
    code
}

#[cfg(feature = "client")]
pub use child::supervise;

#[cfg(feature = "client")]
mod child {
    use std::future::Future;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::{Signal, Signals, Stdin};
    use crate::client::AgentProcess;

    /// `agentwire bridge`: runs `serve` (the host's side, reading `stdin`) while watching the
    /// agent process and passing SIGINT, SIGTERM and SIGHUP on to its group (SIGTERM and SIGHUP
    /// also end our input), until `serve` returns, or `eof_grace` after our input ended;
    /// returns how the agent died, if it did (then our input was ended, so what was in flight
    /// got its error).
    pub async fn supervise(agent: &mut AgentProcess, stdin: &Stdin, eof_grace: Duration, serve: impl Future<Output = ()>) -> Option<String> {
        let mut agent_died = None;
        let mut exited = false;
        let alive = Arc::new(AtomicBool::new(true));
        let signals = forward_signals(agent.id(), alive.clone(), stdin.stop.clone());
        tokio::pin!(signals);
        tokio::pin!(serve);
        // What was asked before our input ended has this long to finish.
        let answer_grace = async {
            stdin.ended.cancelled().await;
            tokio::time::sleep(eof_grace).await;
        };
        tokio::pin!(answer_grace);
        loop {
            tokio::select! {
                () = &mut serve => break,
                () = &mut answer_grace => break,
                status = agent.wait(), if !exited => {
                    exited = true;
                    alive.store(false, Ordering::SeqCst);
                    if stdin.ended.is_cancelled() {
                        // Our input ended, so the agent's did: it finished, as it should.
                        continue;
                    }
                    // The agent is gone: its output ended, so every prompt in flight ends with
                    // an error; our input ends so the serve loop answers what is left.
                    let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                    eprintln!("agentwire bridge: the agent exited ({status})");
                    agent_died = Some(status);
                    stdin.stop.cancel();
                }
                () = &mut signals => {}
            }
        }
        alive.store(false, Ordering::SeqCst);
        agent_died
    }

    /// Passes SIGINT, SIGTERM and SIGHUP on to the agent's group; SIGTERM and SIGHUP also end
    /// our input. Never returns (a select arm that stays pending).
    async fn forward_signals(pgid: Option<u32>, alive: Arc<AtomicBool>, stop: tokio_util::sync::CancellationToken) {
        let mut signals = Signals::new();
        loop {
            let signal = signals.next().await;
            // Only while the agent has not been reaped (`alive`): its group id is its own.
            if let (Some(pgid), true) = (pgid, alive.load(Ordering::SeqCst)) {
                crate::client::process::signal_group(pgid, signal.number());
            }
            match signal {
                Signal::Terminate | Signal::Hangup => stop.cancel(),
                Signal::Interrupt => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Signal;

    #[test]
    fn a_signal_exits_with_128_plus_its_number() {
        assert_eq!([Signal::Interrupt, Signal::Terminate, Signal::Hangup].map(Signal::exit_code), [130, 143, 129]);
    }
}
