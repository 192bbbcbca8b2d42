//! The command line: `agentwire --mode rpc|wire` (the agent) and `agentwire schema …` (tools).

pub mod schema;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::protocol::validate::Dialect;

/// agentwire: a protocol-first coding agent for stdio hosts.
#[derive(Debug, Parser)]
#[command(name = "agentwire", version, about, long_about = None)]
pub struct Cli {
    /// Protocol to speak on stdin/stdout when running as the agent.
    #[arg(long, value_enum, global = false)]
    pub mode: Option<Mode>,
    /// Tools (schema bundling and validation).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The agent's stdio dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// pi / oh-my-pi JSONL RPC.
    Rpc,
    /// kimi-cli JSON-RPC 2.0 wire protocol.
    Wire,
}

/// `--dialect` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DialectArg {
    /// pi / oh-my-pi JSONL RPC.
    Rpc,
    /// kimi-cli JSON-RPC 2.0 wire protocol.
    Wire,
}

impl From<DialectArg> for Dialect {
    fn from(d: DialectArg) -> Self {
        match d {
            DialectArg::Rpc => Dialect::Rpc,
            DialectArg::Wire => Dialect::Wire,
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with the protocol schema.
    Schema {
        /// What to do.
        #[command(subcommand)]
        action: SchemaAction,
    },
}

/// `agentwire schema …`
#[derive(Debug, Subcommand)]
pub enum SchemaAction {
    /// Print one self-contained JSON Schema (all `$defs`, local refs only) to stdout.
    Bundle {
        /// Only the definitions one dialect uses.
        #[arg(long, value_enum)]
        dialect: Option<DialectArg>,
    },
    /// Validate JSONL frames (plain frames or reference-transcript lines with `dir`/`frame`).
    ///
    /// Prints `file:line: <context>: <path>: <reason>` per invalid frame; exits 1 if any.
    Validate {
        /// Force a dialect instead of detecting it per frame.
        #[arg(long, value_enum)]
        dialect: Option<DialectArg>,
        /// Files to check; `-` reads stdin.
        #[arg(required = true)]
        files: Vec<String>,
    },
    /// Print docs/protocol.md, generated from the schema and its examples.
    Docs,
}

/// Runs the command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Some(Command::Schema { action }) => run_schema(action),
        None => {
            let mode = cli.mode.unwrap_or(Mode::Rpc);
            eprintln!(
                "agentwire: the {} agent server is not part of this build yet; it arrives with the agent-server \
                 work (see README). Available now: `agentwire schema bundle|validate|docs`.",
                match mode {
                    Mode::Rpc => "--mode rpc",
                    Mode::Wire => "--mode wire",
                }
            );
            ExitCode::from(1)
        }
    }
}

fn run_schema(action: SchemaAction) -> ExitCode {
    let stdout = std::io::stdout();
    match action {
        SchemaAction::Bundle { dialect } => match schema::bundle_text(dialect.map(Dialect::from)) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        SchemaAction::Validate { dialect, files } => match schema::validate_files(&files, dialect.map(Dialect::from), &mut stdout.lock()) {
            Ok(0) => ExitCode::SUCCESS,
            Ok(_) => ExitCode::from(1),
            Err(e) => fail(&e),
        },
        SchemaAction::Docs => match crate::codegen::docs::protocol_markdown() {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("agentwire: {message}");
    ExitCode::from(2)
}
