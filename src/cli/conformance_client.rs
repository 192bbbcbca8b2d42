//! `agentwire conformance client` (judge a client) and the hidden `conformance scripted-agent`
//! it hands to the client.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use super::args::ClientDialectArg;
use super::{fail, RequirementsFormat};
use crate::conformance::client::report::ReportWriter;
use crate::conformance::client::requirements;
use crate::conformance::client::scenarios::AcpScenario;
use crate::conformance::client::{failed, json_report, run_client, text_report, ClientRun, PROMPT_LINE};

/// The scenarios named on the command line (all when none is).
fn scenarios(names: &[String]) -> Result<Vec<AcpScenario>, String> {
    if names.is_empty() {
        return Ok(AcpScenario::ALL.to_vec());
    }
    names
        .iter()
        .map(|n| {
            AcpScenario::parse(n).ok_or_else(|| {
                let known: Vec<&str> = AcpScenario::ALL.iter().map(|s| s.name()).collect();
                format!("unknown scenario {n:?} (known: {})", known.join(", "))
            })
        })
        .collect()
}

/// Runs the client command once per scenario and prints the verdicts.
/// `waits`: seconds the scripted agent waits for a step, and one run may take.
pub fn client(dialect: ClientDialectArg, names: &[String], format: RequirementsFormat, waits: (u64, u64), input: Vec<String>, command: Vec<String>) -> ExitCode {
    match dialect {
        ClientDialectArg::Acp => {}
    }
    let scenarios = match scenarios(names) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let agentwire = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(&format!("cannot find this binary (it plays the scripted agent): {e}")),
    };
    let input = if input.is_empty() { vec![PROMPT_LINE.to_owned()] } else { input };
    let run = ClientRun { command, scenarios, agentwire, wait: Duration::from_secs(waits.0), timeout: Duration::from_secs(waits.1), input };
    let runs = match run_client(&run) {
        Ok(r) => r,
        Err(e) => return fail(&e.to_string()),
    };
    match format {
        RequirementsFormat::Text => print!("{}", text_report(&run.command, &runs)),
        RequirementsFormat::Json => print!("{}", json_report(&runs)),
    }
    if failed(&runs) { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// Plays one scenario on stdio, verdicts appended to `report`.
pub fn scripted_agent(dialect: ClientDialectArg, name: &str, report: &Path, wait_ms: u64) -> ExitCode {
    match dialect {
        ClientDialectArg::Acp => {}
    }
    let scenario = match scenarios(&[name.to_owned()]) {
        Ok(s) => s[0],
        Err(e) => return fail(&e),
    };
    let writer = match ReportWriter::open(report) {
        Ok(w) => w,
        Err(e) => return fail(&format!("{}: {e}", report.display())),
    };
    crate::conformance::client::acp::ScriptedAcpAgent::new(scenario, writer, Duration::from_millis(wait_ms)).run();
    ExitCode::SUCCESS
}

/// The client requirements after the agent ones (`conformance requirements`).
pub fn requirements(format: RequirementsFormat) {
    match format {
        RequirementsFormat::Text => print!("{}", requirements::text()),
        RequirementsFormat::Json => print!("{}", requirements::json_lines()),
    }
}
