//! `agentwire conformance client` (judge a client) and the hidden `conformance scripted-agent`
//! it hands to the client.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use super::args::ClientDialectArg;
use super::{fail, RequirementsFormat};
use crate::conformance::client::matrix::{load_clients, markdown, unexpected, write_section};
use crate::conformance::client::report::{on_sigterm_report, ReportWriter};
use crate::conformance::client::requirements;
use crate::conformance::client::scenarios::Scenario;
use crate::protocol::Dialect;
use crate::conformance::client::{failed, json_report, run_client, text_report, ClientRun, PROMPT_LINE};

/// The scenarios named on the command line (all of the dialect's when none is); an unknown name
/// is a usage error.
fn scenarios(dialect: Dialect, names: &[String]) -> Result<Vec<Scenario>, ExitCode> {
    if names.is_empty() {
        return Ok(Scenario::all(dialect));
    }
    names
        .iter()
        .map(|n| {
            Scenario::parse(dialect, n).ok_or_else(|| {
                let known: Vec<&str> = Scenario::all(dialect).iter().map(|s| s.name()).collect();
                fail(&format!("unknown {} scenario {n:?} (known: {})", dialect.name(), known.join(", ")))
            })
        })
        .collect()
}

/// What every client of one invocation shares: the scenarios, this binary as the scripted
/// agent, the waits (`waits`: seconds the scripted agent waits for a step, and one run may
/// take). The command and the user's input are the caller's.
fn base_run(dialect: Dialect, names: &[String], waits: (u64, u64)) -> Result<ClientRun, ExitCode> {
    let scenarios = scenarios(dialect, names)?;
    let agentwire = std::env::current_exe().map_err(|e| fail(&format!("cannot find this binary (it plays the scripted agent): {e}")))?;
    Ok(ClientRun { command: Vec::new(), scenarios, agentwire, wait: Duration::from_secs(waits.0), timeout: Duration::from_secs(waits.1), input: Vec::new() })
}

/// The user's lines, one prompt line when none is given.
fn user_input(input: Vec<String>) -> Vec<String> {
    if input.is_empty() { vec![PROMPT_LINE.to_owned()] } else { input }
}

/// Runs the client command once per scenario and prints the verdicts.
pub fn client(dialect: ClientDialectArg, names: &[String], format: RequirementsFormat, waits: (u64, u64), input: Vec<String>, command: Vec<String>) -> ExitCode {
    let run = match base_run(dialect.dialect(), names, waits) {
        Ok(base) => ClientRun { command, input: user_input(input), ..base },
        Err(code) => return code,
    };
    let runs = match run_client(&run) {
        Ok(r) => r,
        Err(e) => return fail(&e.to_string()),
    };
    let report = match format {
        RequirementsFormat::Text => text_report(&run.command, &runs),
        RequirementsFormat::Json => json_report(&runs),
    };
    if let Err(code) = super::emit_or_fail(&report) {
        return code;
    }
    if failed(&runs) { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// Judges every client of a clients file (each in its own dialect); prints (or writes into
/// `out`) the client matrix.
pub fn client_matrix(names: &[String], waits: (u64, u64), file: &Path, out: Option<&Path>) -> ExitCode {
    let clients = match load_clients(file) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let mut columns = Vec::new();
    for client in clients {
        let base = match base_run(client.dialect.dialect(), names, waits) {
            Ok(base) => base,
            Err(code) => return code,
        };
        let run = ClientRun { command: client.command.clone(), input: user_input(client.input.clone()), ..base };
        eprintln!("judging {} {}", client.name, client.version);
        match run_client(&run) {
            Ok(runs) => columns.push((client, runs)),
            Err(e) => return fail(&format!("{}: {e}", client.name)),
        }
    }
    let mut reproduce = format!("agentwire conformance client --clients {}", file.display());
    if let Some(out) = out {
        reproduce.push_str(&format!(" --out {}", out.display()));
    }
    let section = markdown(&columns, &reproduce);
    match out {
        Some(path) => {
            if let Err(e) = write_section(path, &section) {
                return fail(&format!("{}: {e}", path.display()));
            }
        }
        None => {
            if let Err(code) = super::emit_or_fail(&section) {
                return code;
            }
        }
    }
    let unexpected = unexpected(&columns);
    if !unexpected.is_empty() {
        eprintln!("not the result expected (\"expectFailure\" in {}): {}", file.display(), unexpected.join(", "));
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// What a SIGTERM to the scripted ACP agent appends to its report.
static ACP_SIGTERM_LINES: &[u8] = b"{\"kind\":\"event\",\"event\":\"sigterm\"}\n{\"kind\":\"event\",\"event\":\"exit\"}\n";

/// Plays one scenario on stdio, verdicts appended to `report`.
pub fn scripted_agent(dialect: ClientDialectArg, name: &str, report: &Path, wait_ms: u64) -> ExitCode {
    let scenario = match scenarios(dialect.dialect(), &[name.to_owned()]) {
        Ok(s) => s[0],
        Err(code) => return code,
    };
    let open = || ReportWriter::open(report).map_err(|e| fail(&format!("{}: {e}", report.display())));
    let writer = match open() {
        Ok(w) => w,
        Err(code) => return code,
    };
    let wait = Duration::from_millis(wait_ms);
    // A second handle on the report, for what a SIGTERM handler writes.
    let file = std::fs::OpenOptions::new().append(true).open(report).ok();
    match scenario {
        Scenario::Acp(s) => {
            if let Some(file) = file {
                on_sigterm_report(file, &ACP_SIGTERM_LINES);
            }
            crate::conformance::client::acp::ScriptedAcpAgent::new(s, writer, wait).run()
        }
        Scenario::Rpc(s) => crate::conformance::client::rpc::ScriptedRpcAgent::new(s, writer, file, wait).run(),
        Scenario::Wire(s) => crate::conformance::client::wire::ScriptedWireAgent::new(s, writer, wait).run(),
    }
    ExitCode::SUCCESS
}

/// The client requirements, printed after the agent ones (`conformance requirements`).
pub fn requirements(format: RequirementsFormat) -> String {
    match format {
        RequirementsFormat::Text => requirements::text(),
        RequirementsFormat::Json => requirements::json_lines(),
    }
}
