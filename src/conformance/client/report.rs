//! The file through which the scripted agent (a child of the client under test) tells the
//! harness what it saw: one JSON object a line, appended and flushed as it happens, so the
//! harness can act on a line while the run goes on (an `interrupt` line asks it to SIGINT the
//! client) and still has every line written before a kill.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

/// A requirement's verdict in one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// The client did what the requirement asks.
    Pass,
    /// The client did not apply: it lacks the capability (or did not show it).
    NotApplicable,
    /// The run never reached the point where it could be checked.
    NotTestable,
    /// The client broke the requirement.
    Fail,
}

impl Verdict {
    /// The name in report lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::NotApplicable => "n/a",
            Self::NotTestable => "not testable",
            Self::Fail => "fail",
        }
    }

    /// The verdict of a name.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Pass, Self::NotApplicable, Self::NotTestable, Self::Fail].into_iter().find(|v| v.name() == name)
    }
}

/// The report's file descriptor, for the SIGTERM handler (-1: none).
static SIGTERM_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
/// What the SIGTERM handler appends to the report: a `&'static &'static [u8]`, swapped whole as
/// the scenario goes on (null: nothing).
static SIGTERM_LINES: std::sync::atomic::AtomicPtr<&'static [u8]> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

extern "C" fn on_sigterm(_: libc::c_int) {
    let fd = SIGTERM_FD.load(std::sync::atomic::Ordering::SeqCst);
    let lines = SIGTERM_LINES.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: the pointer is null or came from a `&'static &'static [u8]`; write(2) and _exit(2)
    // are async-signal-safe.
    unsafe {
        if fd >= 0 && !lines.is_null() {
            let lines: &[u8] = *lines;
            libc::write(fd, lines.as_ptr().cast(), lines.len());
        }
        libc::_exit(0);
    }
}

/// On SIGTERM the scripted agent appends `lines` (report lines, each ending in LF) to `file` and
/// exits: a client that ends its agent with SIGTERM is told apart from one that leaves it
/// running, although nothing after the signal runs.
pub fn on_sigterm_report(file: File, lines: &'static &'static [u8]) {
    use std::os::fd::IntoRawFd;
    set_sigterm_report(lines);
    // The descriptor stays open until the process ends: the handler may write at any time.
    let old = SIGTERM_FD.swap(file.into_raw_fd(), std::sync::atomic::Ordering::SeqCst);
    if old >= 0 {
        return;
    }
    // SAFETY: installs a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(libc::SIGTERM, on_sigterm as *const () as libc::sighandler_t);
    }
}

/// What a SIGTERM from now on appends (what the scenario has seen so far makes it mean more).
pub fn set_sigterm_report(lines: &'static &'static [u8]) {
    SIGTERM_LINES.store(std::ptr::from_ref(lines).cast_mut(), std::sync::atomic::Ordering::SeqCst);
}

/// The writing end, held by the scripted agent.
#[derive(Debug)]
pub struct ReportWriter {
    file: Option<File>,
}

impl ReportWriter {
    /// Appends to `path` (created if missing).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Self { file: Some(std::fs::OpenOptions::new().create(true).append(true).open(path)?) })
    }

    fn line(&mut self, value: Value) {
        // A report that cannot be written leaves the harness without verdicts, which it reports
        // as "not testable": nothing else to do here.
        if let Some(file) = self.file.as_mut() {
            let _ = writeln!(file, "{value}").and_then(|()| file.flush());
        }
    }

    /// A verdict on a requirement, with what was seen (the frame quoted when there is one).
    pub fn check(&mut self, requirement: &str, verdict: Verdict, detail: impl Into<String>) {
        self.line(json!({"kind": "check", "requirement": requirement, "verdict": verdict.name(), "detail": detail.into()}));
    }

    /// A frame read from the client (`in`) or written to it (`out`).
    pub fn frame(&mut self, dir: &str, frame: &Value) {
        self.line(json!({"kind": "frame", "dir": dir, "frame": frame}));
    }

    /// Something the harness should do or know (`interrupt`, `eof`, `exit`).
    pub fn event(&mut self, event: &str) {
        self.line(json!({"kind": "event", "event": event}));
    }
}

/// A line of a report, as the harness reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportLine {
    /// A verdict.
    Check { requirement: String, verdict: Verdict, detail: String },
    /// A frame either way.
    Frame { dir: String, frame: Value },
    /// An event.
    Event(String),
}

/// The lines of a report's text (a line that does not parse is skipped: the file may end in a
/// line being written).
pub fn parse_lines(text: &str) -> Vec<ReportLine> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            match v.get("kind").and_then(Value::as_str)? {
                "check" => Some(ReportLine::Check { requirement: s("requirement")?, verdict: Verdict::parse(&s("verdict")?)?, detail: s("detail").unwrap_or_default() }),
                "frame" => Some(ReportLine::Frame { dir: s("dir")?, frame: v.get("frame").cloned().unwrap_or_default() }),
                "event" => Some(ReportLine::Event(s("event")?)),
                _ => None,
            }
        })
        .collect()
}
