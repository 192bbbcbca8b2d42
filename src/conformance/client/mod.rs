//! `agentwire conformance client --dialect acp -- <client command>`: the harness plays a scripted
//! agent and judges what the client does, as MCP's conformance suite does with `client --command`.
//!
//! Each scenario is one run of the client command. In that command `{{agent}}` stands for the
//! scripted agent's command line, as one argument (clients such as acpx take the agent as a
//! string; a client that takes argv can be given `sh -c {{agent}}`). The client starts the agent
//! itself, so what is judged is the client as it runs for real: the scripted agent
//! ([`acp::ScriptedAcpAgent`], `agentwire conformance scripted-agent`) validates every frame
//! the client writes and writes its verdicts to a report file; the harness reads them, sends the
//! client SIGINT when the agent asks for an interruption, and judges what only the outside can
//! see (did the client exit when the agent died, did it close the agent's input when done).
//! The client's stdin gets the user's lines (`--input-line`; by default one prompt line), then EOF.

pub mod acp;
mod inbox;
pub mod matrix;
pub mod report;
pub mod requirements;
pub mod rpc;
pub mod scenarios;
pub mod wire;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use report::{parse_lines, ReportLine, Verdict};
use requirements::{client_requirement, CLIENT_REQUIREMENTS};
use scenarios::{AcpScenario, RpcScenario, Scenario, WireScenario};

use crate::protocol::{ConformanceRequirementTier, Dialect};

/// The placeholder for the scripted agent's command line in the client command.
pub const AGENT_PLACEHOLDER: &str = "{{agent}}";

/// The report event naming the ACP version a client asked for: this prefix, then the number.
pub const ACP_VERSION_EVENT: &str = "acp-version ";

/// The line the client reads on its stdin when no other is given: a prompt for clients that
/// read theirs from stdin.
pub const PROMPT_LINE: &str = "conformance prompt";

/// Why the harness cannot run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientHarnessError {
    /// The client command never names the agent.
    #[error("the client command has no {AGENT_PLACEHOLDER}: write it where the client takes the agent's command line (`sh -c {AGENT_PLACEHOLDER}` for a client that takes argv)")]
    NoAgentPlaceholder,
    /// An empty command.
    #[error("no client command after `--`")]
    NoCommand,
    /// A scratch directory could not be made.
    #[error("cannot make a scratch directory: {0}")]
    Scratch(std::io::Error),
    /// A clients file (`--clients`) that cannot be used.
    #[error("{path}: {reason}")]
    Clients { path: String, reason: String },
}

/// How to run the client.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// The client command, `{{agent}}` in one of its arguments.
    pub command: Vec<String>,
    /// The scenarios to play.
    pub scenarios: Vec<Scenario>,
    /// This binary (it plays the scripted agent).
    pub agentwire: PathBuf,
    /// How long the scripted agent waits for the client's next step.
    pub wait: Duration,
    /// How long one client run may take before it is killed.
    pub timeout: Duration,
    /// What the user types: the lines written to the client's stdin before it is closed (an
    /// interactive client's answers, or its prompt).
    pub input: Vec<String>,
}

/// One verdict of one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The requirement (`HARNESS` for a fault of the scripted agent itself).
    pub requirement: String,
    /// What the scenario found.
    pub verdict: Verdict,
    /// What was seen.
    pub detail: String,
}

/// A scenario's run.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    /// The scenario.
    pub scenario: Scenario,
    /// How the client ended: its exit code, `None` when killed (signal or timeout).
    pub exit: Option<i32>,
    /// Whether the harness killed it at the timeout.
    pub timed_out: bool,
    /// Every verdict.
    pub findings: Vec<Finding>,
    /// The end of the client's stderr (for a reader working out a failure).
    pub stderr_tail: String,
    /// The ACP protocol version the client's `initialize` asked for (ACP scenarios).
    pub acp_version: Option<u64>,
}

/// The command line of the scripted agent for `scenario`, quoted for a shell.
pub fn agent_command_line(run: &ClientRun, scenario: Scenario, report: &Path) -> String {
    let args = [
        run.agentwire.display().to_string(),
        "conformance".into(),
        "scripted-agent".into(),
        "--dialect".into(),
        scenario.dialect().name().into(),
        "--scenario".into(),
        scenario.name().into(),
        "--report".into(),
        report.display().to_string(),
        "--wait-ms".into(),
        run.wait.as_millis().to_string(),
    ];
    args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
}

/// `s` as one POSIX shell word.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:+@%,".contains(c)) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs every scenario of `run`, one client run each.
pub fn run_client(run: &ClientRun) -> Result<Vec<ScenarioRun>, ClientHarnessError> {
    if run.command.is_empty() {
        return Err(ClientHarnessError::NoCommand);
    }
    if !run.command.iter().any(|a| a.contains(AGENT_PLACEHOLDER)) {
        return Err(ClientHarnessError::NoAgentPlaceholder);
    }
    run.scenarios.iter().map(|s| run_scenario(run, *s)).collect()
}

fn drain(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Sends `signal` to a process (`pid` > 0) or a process group (`pid` < 0).
fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) with a pid or process group id this harness started; no memory involved.
    unsafe {
        libc::kill(pid, signal);
    }
}

fn run_scenario(run: &ClientRun, scenario: Scenario) -> Result<ScenarioRun, ClientHarnessError> {
    let scratch = tempfile::tempdir().map_err(ClientHarnessError::Scratch)?;
    let work = scratch.path().join("work");
    std::fs::create_dir_all(&work).map_err(ClientHarnessError::Scratch)?;
    let report_path = scratch.path().join("report.jsonl");
    let agent = agent_command_line(run, scenario, &report_path);
    let argv: Vec<String> = run.command.iter().map(|a| a.replace(AGENT_PLACEHOLDER, &agent)).collect();
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(&work).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group: whatever the client leaves running (the scripted agent included)
    // is ended with it.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let findings = scenario.requirements().iter().map(|r| Finding { requirement: (*r).to_owned(), verdict: Verdict::NotTestable, detail: format!("the client command did not start: {e}") }).collect();
            return Ok(ScenarioRun { scenario, exit: None, timed_out: false, findings, stderr_tail: String::new(), acp_version: None });
        }
    };
    let pid = child.id() as i32;
    // The user's first line goes in at once; each next one when the agent asks for permission
    // again (an interactive client reads one answer per question); then stdin closes.
    let mut stdin = child.stdin.take();
    let mut typed = 0;
    let mut type_lines = |upto: usize, stdin: &mut Option<std::process::ChildStdin>| {
        while typed < upto.min(run.input.len()) {
            if let Some(pipe) = stdin.as_mut() {
                let _ = writeln!(pipe, "{}", run.input[typed]).and_then(|()| pipe.flush());
            }
            typed += 1;
        }
        if typed == run.input.len() {
            stdin.take();
        }
    };
    type_lines(1, &mut stdin);
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let started = Instant::now();
    let (mut interrupted, mut timed_out) = (false, false);
    let mut agent_exited_at = None;
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        let lines = parse_lines(&std::fs::read_to_string(&report_path).unwrap_or_default());
        let asks = lines.iter().filter(|l| **l == ReportLine::Event("ask".into())).count();
        type_lines(asks.max(1), &mut stdin);
        if !interrupted && lines.contains(&ReportLine::Event("interrupt".into())) {
            interrupted = true;
            signal(pid, libc::SIGINT);
        }
        if agent_exited_at.is_none() && lines.contains(&ReportLine::Event("agent-exit".into())) {
            agent_exited_at = Some(Instant::now());
        }
        if started.elapsed() > run.timeout {
            timed_out = true;
            signal(-pid, libc::SIGKILL);
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The scripted agent ends once its input closes; give it a moment to write its last
    // verdicts, then end whatever is left of the group.
    let grace = Instant::now() + Duration::from_secs(3);
    let mut lines = parse_lines(&std::fs::read_to_string(&report_path).unwrap_or_default());
    while !lines.contains(&ReportLine::Event("exit".into())) && Instant::now() < grace {
        std::thread::sleep(Duration::from_millis(20));
        lines = parse_lines(&std::fs::read_to_string(&report_path).unwrap_or_default());
    }
    // A client that ends at once ends before the loop above reads the agent's last lines.
    if agent_exited_at.is_none() && lines.contains(&ReportLine::Event("agent-exit".into())) {
        agent_exited_at = Some(Instant::now());
    }
    drop(stdin);
    let agent_finished = lines.contains(&ReportLine::Event("exit".into())) || agent_exited_at.is_some();
    let sigterm = lines.contains(&ReportLine::Event("sigterm".into()));
    signal(-pid, libc::SIGKILL);
    let _ = stdout.map(|h| h.join());
    let stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let exit = status.and_then(|s| s.code());
    let mut findings: Vec<Finding> = lines
        .iter()
        .filter_map(|l| match l {
            ReportLine::Check { requirement, verdict, detail } => Some(Finding { requirement: requirement.clone(), verdict: *verdict, detail: detail.clone() }),
            ReportLine::Frame { .. } | ReportLine::Event(_) => None,
        })
        .collect();
    let started_agent = !lines.is_empty();
    let secs = run.timeout.as_secs();
    match scenario {
        Scenario::Acp(AcpScenario::Initialize) => {
            let (verdict, detail) = match (timed_out, agent_finished) {
                (true, _) => (Verdict::Fail, format!("the client was still running {secs} s after its run began, its own input closed after one prompt")),
                (false, true) if sigterm => (Verdict::Pass, "the client exited and ended its agent with SIGTERM".to_owned()),
                (false, true) => (Verdict::Pass, "the client exited and its agent saw its input close".to_owned()),
                (false, false) => (Verdict::Fail, "the client exited and left its agent running, its input open".to_owned()),
            };
            findings.push(Finding { requirement: "ACP-CLIENT-EOF-2".into(), verdict, detail });
        }
        Scenario::Acp(AcpScenario::AgentExit) | Scenario::Rpc(RpcScenario::AgentExit) => {
            let (verdict, detail) = match (agent_exited_at.is_some(), timed_out) {
                (false, _) => (Verdict::NotTestable, "the run did not reach the agent's exit".to_owned()),
                (true, true) => (Verdict::Fail, format!("the agent exited mid-turn and the client was still running at the {secs} s timeout")),
                (true, false) => (Verdict::Pass, format!("the client exited ({}) after its agent did", exit.map_or("by a signal".to_owned(), |c| format!("code {c}")))),
            };
            let requirement = match scenario.dialect() {
                Dialect::Rpc => "RPC-CLIENT-EOF-1",
                Dialect::Acp | Dialect::Wire => "ACP-CLIENT-EOF-1",
            };
            findings.push(Finding { requirement: requirement.into(), verdict, detail });
        }
        Scenario::Acp(AcpScenario::EarlyUpdate | AcpScenario::Extensions | AcpScenario::Permission | AcpScenario::Cancel | AcpScenario::FsTerminal | AcpScenario::Load | AcpScenario::Downgrade)
        | Scenario::Rpc(RpcScenario::Turn | RpcScenario::Framing | RpcScenario::Extensions | RpcScenario::ExtensionUi)
        | Scenario::Wire(WireScenario::Turn | WireScenario::Approval | WireScenario::Extensions) => {}
    }
    let agent_ended_itself = lines.contains(&ReportLine::Event("exit".into())) || lines.contains(&ReportLine::Event("agent-exit".into()));
    for id in scenario.requirements() {
        if !findings.iter().any(|f| f.requirement == *id) {
            let detail = match (started_agent, agent_ended_itself) {
                (false, _) => format!("the client never started the scripted agent ({AGENT_PLACEHOLDER})"),
                (true, false) => "the scripted agent was ended (by the client, or at the timeout) before it could judge this".to_owned(),
                (true, true) => "the run ended before this was checked".to_owned(),
            };
            findings.push(Finding { requirement: (*id).to_owned(), verdict: Verdict::NotTestable, detail });
        }
    }
    let stderr_tail = stderr.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    let acp_version = lines.iter().find_map(|l| match l {
        ReportLine::Event(e) => e.strip_prefix(ACP_VERSION_EVENT).and_then(|v| v.parse().ok()),
        ReportLine::Check { .. } | ReportLine::Frame { .. } => None,
    });
    Ok(ScenarioRun { scenario, exit, timed_out, findings, stderr_tail, acp_version })
}

/// A requirement's verdict over every scenario: a failure anywhere fails it; otherwise a pass
/// anywhere passes it.
pub fn overall(runs: &[ScenarioRun], requirement: &str) -> Option<Verdict> {
    let verdicts: Vec<Verdict> = runs.iter().flat_map(|r| &r.findings).filter(|f| f.requirement == requirement).map(|f| f.verdict).collect();
    [Verdict::Fail, Verdict::Pass, Verdict::NotTestable, Verdict::NotApplicable].into_iter().find(|v| verdicts.contains(v))
}

/// The requirements of the dialects `runs` played, in registry order.
pub fn judged_requirements(runs: &[ScenarioRun]) -> Vec<&'static requirements::ClientRequirement> {
    CLIENT_REQUIREMENTS.iter().filter(|r| runs.iter().any(|run| run.scenario.dialect() == r.dialect)).collect()
}

/// Whether the client fails the run: a MANDATORY requirement failed or never tested, a
/// CAPABILITY requirement failed, or the scripted agent itself went wrong. ADVISORY failures are
/// reported and do not fail it.
pub fn failed(runs: &[ScenarioRun]) -> bool {
    let harness = runs.iter().flat_map(|r| &r.findings).any(|f| f.requirement == "HARNESS");
    harness
        || CLIENT_REQUIREMENTS.iter().any(|r| {
            matches!(
                (r.tier, overall(runs, r.id)),
                (ConformanceRequirementTier::Mandatory, Some(Verdict::Fail | Verdict::NotTestable)) | (ConformanceRequirementTier::Capability, Some(Verdict::Fail))
            )
        })
}

/// The text report: each scenario's verdicts, then each requirement's.
pub fn text_report(command: &[String], runs: &[ScenarioRun]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("client: {}\n", command.join(" "));
    for run in runs {
        let ended = match (run.timed_out, run.exit) {
            (true, _) => "killed at the timeout".to_owned(),
            (false, Some(code)) => format!("exited {code}"),
            (false, None) => "ended by a signal".to_owned(),
        };
        let version = run.acp_version.map(|v| format!(", ACP v{v}")).unwrap_or_default();
        let _ = writeln!(out, "\nscenario {} (client {ended}{version})", run.scenario.name());
        for f in &run.findings {
            let _ = writeln!(out, "  {:<12} {:<20} {}", f.verdict.name(), f.requirement, f.detail);
        }
        if run.findings.iter().any(|f| f.verdict == Verdict::Fail) && !run.stderr_tail.is_empty() {
            let _ = writeln!(out, "  client stderr (end):\n    {}", run.stderr_tail.replace('\n', "\n    "));
        }
    }
    let _ = writeln!(out, "\nrequirements:");
    for r in judged_requirements(runs) {
        let verdict = overall(runs, r.id).map_or("not run", Verdict::name);
        let _ = writeln!(out, "  {:<12} {:<13} {:<20} {}", verdict, super::requirements::tier_name(r.tier), r.id, r.text);
    }
    let _ = writeln!(out, "\n{}", if failed(runs) { "FAILED" } else { "passed" });
    out
}

/// The JSON report: one line per requirement, with each scenario's verdict and detail.
pub fn json_report(runs: &[ScenarioRun]) -> String {
    let mut out = String::new();
    for r in judged_requirements(runs) {
        let seen: Vec<serde_json::Value> = runs
            .iter()
            .flat_map(|run| run.findings.iter().filter(|f| f.requirement == r.id).map(|f| serde_json::json!({"scenario": run.scenario.name(), "verdict": f.verdict.name(), "detail": f.detail})))
            .collect();
        let line = serde_json::json!({"requirement": r.id, "tier": super::requirements::tier_name(r.tier), "verdict": overall(runs, r.id).map(Verdict::name), "findings": seen});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    for f in runs.iter().flat_map(|r| &r.findings).filter(|f| client_requirement(&f.requirement).is_none()) {
        out.push_str(&serde_json::json!({"requirement": f.requirement, "verdict": f.verdict.name(), "detail": f.detail}).to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_command_line_is_one_shell_word_per_argument() {
        assert_eq!(shell_quote("/usr/bin/agentwire"), "/usr/bin/agentwire");
        assert_eq!(shell_quote("/tmp/a b/it's"), r"'/tmp/a b/it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn a_command_without_the_agent_placeholder_is_refused() {
        let run = ClientRun { command: vec!["client".into()], scenarios: Scenario::all(Dialect::Acp), agentwire: "agentwire".into(), wait: Duration::from_secs(1), timeout: Duration::from_secs(1), input: Vec::new() };
        assert!(matches!(run_client(&run), Err(ClientHarnessError::NoAgentPlaceholder)));
    }
}
