//! `agentwire conformance client` (judge a client) and the hidden `conformance scripted-agent`
//! it hands to the client.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use super::args::ClientDialectArg;
use super::{fail, RequirementsFormat};
use crate::conformance::client::matrix::{load_clients, markdown, unexpected, write_section};
use crate::conformance::client::report::ReportWriter;
use crate::conformance::client::requirements;
use crate::conformance::client::scenarios::AcpScenario;
use crate::conformance::client::{failed, json_report, run_client, text_report, ClientRun, PROMPT_LINE};

/// The scenarios named on the command line (all when none is); an unknown name is a usage error.
fn scenarios(names: &[String]) -> Result<Vec<AcpScenario>, ExitCode> {
    if names.is_empty() {
        return Ok(AcpScenario::ALL.to_vec());
    }
    names
        .iter()
        .map(|n| {
            AcpScenario::parse(n).ok_or_else(|| {
                let known: Vec<&str> = AcpScenario::ALL.iter().map(|s| s.name()).collect();
                fail(&format!("unknown scenario {n:?} (known: {})", known.join(", ")))
            })
        })
        .collect()
}

/// What every client of one invocation shares: the scenarios, this binary as the scripted
/// agent, the waits (`waits`: seconds the scripted agent waits for a step, and one run may
/// take). The command and the user's input are the caller's.
fn base_run(dialect: ClientDialectArg, names: &[String], waits: (u64, u64)) -> Result<ClientRun, ExitCode> {
    match dialect {
        ClientDialectArg::Acp => {}
    }
    let scenarios = scenarios(names)?;
    let agentwire = std::env::current_exe().map_err(|e| fail(&format!("cannot find this binary (it plays the scripted agent): {e}")))?;
    Ok(ClientRun { command: Vec::new(), scenarios, agentwire, wait: Duration::from_secs(waits.0), timeout: Duration::from_secs(waits.1), input: Vec::new() })
}

/// The user's lines, one prompt line when none is given.
fn user_input(input: Vec<String>) -> Vec<String> {
    if input.is_empty() { vec![PROMPT_LINE.to_owned()] } else { input }
}

/// Runs the client command once per scenario and prints the verdicts.
pub fn client(dialect: ClientDialectArg, names: &[String], format: RequirementsFormat, waits: (u64, u64), input: Vec<String>, command: Vec<String>) -> ExitCode {
    let run = match base_run(dialect, names, waits) {
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

/// Judges every client of a clients file; prints (or writes into `out`) the client matrix.
pub fn client_matrix(dialect: ClientDialectArg, names: &[String], waits: (u64, u64), file: &Path, out: Option<&Path>) -> ExitCode {
    let base = match base_run(dialect, names, waits) {
        Ok(base) => base,
        Err(code) => return code,
    };
    let clients = match load_clients(file) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let mut columns = Vec::new();
    for client in clients {
        let run = ClientRun { command: client.command.clone(), input: user_input(client.input.clone()), ..base.clone() };
        eprintln!("judging {} {}", client.name, client.version);
        match run_client(&run) {
            Ok(runs) => columns.push((client, runs)),
            Err(e) => return fail(&format!("{}: {e}", client.name)),
        }
    }
    let mut reproduce = format!("agentwire conformance client --dialect acp --clients {}", file.display());
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

/// Plays one scenario on stdio, verdicts appended to `report`.
pub fn scripted_agent(dialect: ClientDialectArg, name: &str, report: &Path, wait_ms: u64) -> ExitCode {
    match dialect {
        ClientDialectArg::Acp => {}
    }
    let scenario = match scenarios(&[name.to_owned()]) {
        Ok(s) => s[0],
        Err(code) => return code,
    };
    let writer = match ReportWriter::open(report) {
        Ok(w) => w,
        Err(e) => return fail(&format!("{}: {e}", report.display())),
    };
    crate::conformance::client::acp::ScriptedAcpAgent::new(scenario, writer, Duration::from_millis(wait_ms)).run();
    ExitCode::SUCCESS
}

/// The client requirements, printed after the agent ones (`conformance requirements`).
pub fn requirements(format: RequirementsFormat) -> String {
    match format {
        RequirementsFormat::Text => requirements::text(),
        RequirementsFormat::Json => requirements::json_lines(),
    }
}
