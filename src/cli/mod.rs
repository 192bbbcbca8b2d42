//! The command lines of the two binaries: `agentwire` (the agent in `--mode rpc|wire|acp`,
//! `bridge`, `login`) and `agentwire-tools` (`conformance`, `schema`, `codegen`), which
//! `agentwire` runs for those subcommands ([`tools`]).
//!
//! [`args`] holds the clap types; [`agent`] starts the agent; each subcommand has its file
//! ([`codegen`], [`conformance`] and [`conformance_client`], [`login`], [`schema`]); [`logging`] sets up diagnostics.

mod agent;
mod args;
mod codegen;
pub mod conformance;
mod conformance_client;
mod login;
pub mod logging;
pub mod schema;
pub mod tools;

use std::process::ExitCode;

pub use args::{
    ApprovalArg, BundleDialectArg, Cli, CodegenAction, CodegenTarget, Command, ConformanceAction, DialectArg, ImportFrom, Mode, ReportFormat, RequirementsFormat,
    SchemaAction, ToolCommand, ToolsCli,
};

/// Runs the agent's command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    logging::init(cli.log_level.as_deref());
    match cli.command {
        // Parsed by the tools' binary, which takes this process's arguments as they are.
        Some(Command::Conformance { args: _ } | Command::Schema { args: _ } | Command::Codegen { args: _ }) => tools::exec_tools(),
        Some(Command::Login { provider }) => login::run(cli.config_dir.as_deref(), provider),
        Some(Command::Bridge { serve, agent_dialect, agent_acp_version, record, command }) => {
            let mut options = crate::bridge::BridgeOptions::new(serve.dialect(), command);
            options.agent_acp_version = agent_acp_version;
            options.record = record;
            options.agent_dialect = agent_dialect.map(Mode::dialect);
            options.max_line_bytes = cli.max_line_bytes;
            let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return fail(&format!("could not start the async runtime: {e}")),
            };
            let code = runtime.block_on(crate::bridge::run(options));
            // stdin is read on a blocking thread that may still be parked in read(2).
            runtime.shutdown_timeout(std::time::Duration::from_millis(50));
            ExitCode::from(code)
        }
        None => agent::run(&cli, cli.mode.unwrap_or(Mode::Rpc)),
    }
}

/// Runs the tools' command line and returns the process exit code.
pub fn run_tools(cli: ToolsCli) -> ExitCode {
    logging::init(cli.log_level.as_deref());
    match cli.command {
        ToolCommand::Schema { action } => schema::run(action),
        ToolCommand::Codegen { action, out } => codegen::run(&action, out.as_deref()),
        ToolCommand::Conformance { action } => conformance::run(action),
    }
}

/// Writes `text` to stdout and flushes it. A reader that has gone away (`agentwire … | head`)
/// is not an error: what it did not read it did not want, so the command ends quietly with the
/// status it would have had, instead of panicking as `print!` does.
pub(crate) fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// [`emit`], and a failure when stdout is unusable for another reason (a full disk).
pub(crate) fn emit_or_fail(text: &str) -> Result<(), ExitCode> {
    emit(text).map_err(|e| fail(&format!("cannot write to stdout: {e}")))
}

fn fail(message: &str) -> ExitCode {
    tracing::error!("{message}");
    ExitCode::from(2)
}
