//! The command line's arguments: the clap types of the agent's flags and of every subcommand.

use clap::{Parser, Subcommand, ValueEnum};

use crate::protocol::validate::SchemaDialect;

/// agentwire: a protocol-first coding agent for stdio hosts.
#[derive(Debug, Parser)]
#[command(name = "agentwire", version, about, long_about = None)]
pub struct Cli {
    /// Diagnostics on stderr from this level on: error, warn, info (default), debug, trace; or
    /// an env-filter directive. Default: $AGENTWIRE_LOG, else info.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Protocol to speak on stdin/stdout when running as the agent.
    #[arg(long, value_enum, global = false)]
    pub mode: Option<Mode>,
    /// Longest inbound line in bytes; longer lines get an error frame and are skipped.
    #[arg(long, default_value_t = 16 * 1024 * 1024, value_name = "BYTES")]
    pub max_line_bytes: usize,
    /// Bytes of outbound frames that may wait for a slow host before the agent pauses (nothing
    /// is dropped; a single larger frame is written alone).
    #[arg(long, default_value_t = crate::transport::writer::DEFAULT_OUTBOUND_BYTES, value_name = "BYTES")]
    pub max_outbound_bytes: usize,
    /// Largest session file that `--session`, `--continue`, `switch_session` and the session
    /// listings read; a larger file is refused with its path and this limit.
    #[arg(long, default_value_t = crate::sessions::DEFAULT_MAX_SESSION_BYTES, value_name = "BYTES")]
    pub max_session_bytes: u64,
    /// Which generation of the rpc dialect to speak (`--mode rpc`): `current` (pi 1.6 / omp
    /// 18.3: delta-only `message_update`) or `pi-0.73` (pi 0.73-era hosts: `message_update`
    /// carries the message so far).
    #[arg(long, value_enum, default_value_t = RpcProfileArg::Current, value_name = "PROFILE")]
    pub rpc_profile: RpcProfileArg,
    /// JSONL script for the built-in offline model (see schema/model-script.schema.json).
    #[arg(long, value_name = "FILE")]
    pub model_script: Option<std::path::PathBuf>,
    /// When tool calls ask the host to confirm first (fail closed on denial or timeout).
    /// Default: `never`; with `--mode acp`, `dangerous` (editors expect to be asked).
    #[arg(long, value_enum)]
    pub approval: Option<ApprovalArg>,
    /// How long a dialog (an approval, or a slash command's) waits for the host, in milliseconds.
    #[arg(long, alias = "dialog-timeout-ms", default_value_t = 60_000, value_name = "MS")]
    pub approval_timeout_ms: u64,
    /// After stdin EOF, how long to wait for the work already asked (running prompts, queued
    /// messages, commands read) before cancelling it as `abort` would (e.g. `30s`, `500ms`).
    /// Default: wait until it is done.
    #[arg(long, value_name = "DURATION")]
    pub eof_timeout: Option<humantime::Duration>,
    /// How long a host tool call waits for the host when its definition sets no timeoutMs (and
    /// an MCP tool call for its server).
    #[arg(long, default_value_t = 600_000, value_name = "MS")]
    pub host_tool_timeout_ms: u64,
    /// Config dir holding models.json (default: $AGENTWIRE_CONFIG_DIR, else ~/.config/agentwire).
    #[arg(long, value_name = "DIR")]
    pub config_dir: Option<std::path::PathBuf>,
    /// Provider of the model to start with (e.g. openai, anthropic, or one from models.json).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id to start with.
    #[arg(long)]
    pub model: Option<String>,
    /// Thinking level to start with (off, minimal, low, medium, high, xhigh), clamped to what
    /// the model supports (pi's `--thinking`); a resumed session keeps its own.
    #[arg(long, value_name = "LEVEL", value_parser = parse_thinking_level)]
    pub thinking: Option<crate::protocol::ThinkingLevel>,
    /// API key for --provider (overrides the configured key; never logged).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Retries of a transient provider error (429, 5xx, connection errors, cut streams).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retry_max_attempts: u32,
    /// Delay before the first retry, doubled each time (with jitter), in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub retry_base_delay_ms: u64,
    /// Put session files directly in this directory (default: <config dir>/sessions/--<cwd>--/).
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<std::path::PathBuf>,
    /// Keep the session in memory only.
    #[arg(long, conflicts_with_all = ["session", "continue_recent"])]
    pub no_session: bool,
    /// Resume this session file.
    #[arg(long, value_name = "FILE")]
    pub session: Option<std::path::PathBuf>,
    /// Resume the most recent session of this working directory.
    #[arg(long = "continue", short = 'c')]
    pub continue_recent: bool,
    /// Share of the context window that triggers automatic compaction.
    #[arg(long, default_value_t = 0.8, value_name = "SHARE")]
    pub compaction_threshold: f64,
    /// Tokens of recent conversation that compaction keeps verbatim.
    #[arg(long, default_value_t = 20_000, value_name = "TOKENS")]
    pub compaction_keep_tokens: u64,
    /// Stop a run after this many model calls, even if the model wants to go on calling tools
    /// (wire mode answers the prompt `max_steps_reached`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps_per_turn: Option<u32>,
    /// MCP servers whose tools the agent offers (rpc and wire; ACP clients pass theirs in
    /// `session/new`): `{"mcpServers": {"<name>": {"command", "args", "env", "cwd"} |
    /// {"type": "http", "url", "headers"}}}`, the format Claude Code, Cursor and kimi-cli read.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<std::path::PathBuf>,
    /// How long one MCP server may take to start and answer `initialize` before the agent
    /// goes on without it, in milliseconds.
    #[arg(long, default_value_t = crate::mcp::DEFAULT_STARTUP_TIMEOUT.as_secs() * 1000, value_name = "MS")]
    pub mcp_startup_timeout_ms: u64,
    /// Working directory for tools and `bash` (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,
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
    /// The Agent Client Protocol (Zed and other ACP editors).
    Acp,
}

/// `--rpc-profile` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RpcProfileArg {
    /// pi 1.6 / oh-my-pi 18.3.
    Current,
    /// pi 0.73.1 / oh-my-pi 18.2.3 (the snapshots in every `message_update`).
    #[value(name = "pi-0.73")]
    Pi073,
}

/// `--approval` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalArg {
    /// Never ask.
    Never,
    /// Ask before bash, write and edit (and MCP tools not annotated read-only).
    Dangerous,
    /// Ask before every tool call.
    Always,
}

/// `--dialect` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DialectArg {
    /// pi / oh-my-pi JSONL RPC.
    Rpc,
    /// kimi-cli JSON-RPC 2.0 wire protocol.
    Wire,
}

/// `schema bundle --dialect` values: ours, and the vendored ACP schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BundleDialectArg {
    /// pi / oh-my-pi JSONL RPC.
    Rpc,
    /// kimi-cli JSON-RPC 2.0 wire protocol.
    Wire,
    /// The Agent Client Protocol (schema/acp/schema.json, as vendored).
    Acp,
}

impl From<DialectArg> for SchemaDialect {
    fn from(d: DialectArg) -> Self {
        match d {
            DialectArg::Rpc => SchemaDialect::Rpc,
            DialectArg::Wire => SchemaDialect::Wire,
        }
    }
}

/// Subcommands.
// Each subcommand's arguments are built only when it is invoked or its help shown (`defer`): the
// agent itself (no subcommand) is served without building the tools' argument trees, a quarter
// of the instructions of spawn → first answer (docs/performance.md, "Start-up").
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Run conformance transcripts against an agent.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Conformance {
        /// The tool's arguments (`agentwire conformance --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<std::ffi::OsString>,
    },
    /// Generate the client bindings' inputs and protocol layers (see clients/generate).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Codegen {
        /// The tool's arguments (`agentwire codegen --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<std::ffi::OsString>,
    },
    /// Store a provider's API key in the config dir (`auth.json`, file mode 0600), where every
    /// mode finds it when the environment has no key for that provider. Reads the key from
    /// stdin (without echo on a terminal); ACP clients offer this as the `agentwire-login`
    /// terminal authentication method.
    Login {
        /// The provider the key is for (asked on a terminal; default openai).
        #[arg(value_name = "PROVIDER")]
        provider: Option<String>,
    },
    /// Work with the protocol schema.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Schema {
        /// The tool's arguments (`agentwire schema --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<std::ffi::OsString>,
    },
    /// Speak one dialect to the host on stdio and drive an agent process in another
    /// (docs/bridge.md).
    Bridge {
        /// The dialect spoken to the host.
        #[arg(long, value_enum)]
        serve: Mode,
        /// The agent's dialect; detected when not given (pi/omp `ready` or `get_state`, ACP or
        /// wire `initialize`).
        #[arg(long, value_enum)]
        agent_dialect: Option<Mode>,
        /// The ACP version spoken to an ACP agent (1 or 2). By default v1 for a v1 host, and v2
        /// for a v2 host when the agent speaks it (the frames then pass through unchanged), else
        /// v1, translated. Set it to translate between the versions anyway.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=2))]
        agent_acp_version: Option<u16>,
        /// Write the session as a conformance transcript (the agent must speak the served
        /// dialect: the bridge is then a validating proxy); `agentwire conformance run FILE`
        /// replays it.
        #[arg(long, value_name = "FILE")]
        record: Option<std::path::PathBuf>,
        /// The agent's command line, after `--`.
        #[arg(last = true, required = true, value_name = "AGENT COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
}

/// The tools (`agentwire conformance | schema | codegen`), a binary of their own beside the
/// agent's: the agent's binary runs it for those subcommands (see [`Command::Conformance`]), so
/// the harness, the schema tools and the generators are not in the binary editors and hosts start.
#[derive(Debug, Parser)]
#[command(name = "agentwire", bin_name = "agentwire", version, about, long_about = None)]
pub struct ToolsCli {
    /// Diagnostics on stderr from this level on: error, warn, info (default), debug, trace; or
    /// an env-filter directive. Default: $AGENTWIRE_LOG, else info.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// The tool.
    #[command(subcommand)]
    pub command: ToolCommand,
}

/// The tools' subcommands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ToolCommand {
    /// Run conformance transcripts against an agent.
    Conformance {
        /// What to do.
        #[command(subcommand)]
        action: ConformanceAction,
    },
    /// Generate the client bindings' inputs and protocol layers (see clients/generate).
    Codegen {
        /// What to generate.
        #[command(subcommand)]
        action: CodegenAction,
        /// Write here instead of stdout.
        #[arg(long, global = true, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
    },
    /// Work with the protocol schema.
    Schema {
        /// What to do.
        #[command(subcommand)]
        action: SchemaAction,
    },
}

impl Mode {
    pub(super) fn dialect(self) -> crate::client::Dialect {
        match self {
            Mode::Rpc => crate::client::Dialect::Rpc,
            Mode::Wire => crate::client::Dialect::Wire,
            Mode::Acp => crate::client::Dialect::Acp,
        }
    }
}

// The same text as the `conformance` variant's: with `Command` deferred, a subcommand's own help
// line is its enum's doc comment (likewise `CodegenAction`, `SchemaAction`).
/// Run conformance transcripts against an agent.
#[derive(Debug, Subcommand)]
pub enum ConformanceAction {
    /// Replay transcripts (files or directories of `*.jsonl`) against an agent; exits 1 if any fails.
    Run {
        /// The agent command, e.g. "pi --mode rpc --no-session" (default: this agentwire binary);
        /// replaces an adapter's command.
        #[arg(long, value_name = "CMD ARGS")]
        bin: Option<String>,
        /// How to start and configure another agent (schema: ConformanceAdapter), e.g.
        /// tests/conformance/adapters/pi.json; model replies are then served over HTTP.
        #[arg(long, value_name = "FILE")]
        adapter: Option<std::path::PathBuf>,
        /// Known failures of the agent under test (`name  # why` per line); a listed transcript
        /// that passes fails the run.
        #[arg(long, value_name = "FILE")]
        baseline: Option<std::path::PathBuf>,
        /// Run without a baseline even where the directory has one (see `--baseline`: by
        /// default a single directory's baseline for the agent is used when it exists).
        #[arg(long, conflicts_with = "baseline")]
        no_baseline: bool,
        /// Only transcripts whose path contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Report format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
        /// Seconds to wait for one expected frame.
        #[arg(long, default_value_t = 10)]
        frame_timeout: u64,
        /// Transcripts run at the same time (each in its own process).
        #[arg(long, default_value_t = 4)]
        jobs: usize,
        /// Transcript files or directories.
        #[arg(required = true)]
        paths: Vec<std::path::PathBuf>,
    },
    /// Record a live session as a transcript: frames from stdin go to a fresh agentwire (in an
    /// isolated directory, as the runner uses), its frames are echoed to stdout, and the session
    /// is written to --out with volatile values as placeholders and agent-chosen ids captured.
    Record {
        /// The transcript file to write.
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
        /// Transcript name (default: the file stem).
        #[arg(long)]
        name: Option<String>,
        /// What the transcript pins down.
        #[arg(long, default_value = "Recorded with agentwire conformance record.")]
        description: String,
        /// Requirement ids it covers (repeatable).
        #[arg(long = "requirement", value_name = "ID")]
        requirements: Vec<String>,
        /// The dialect to speak.
        #[arg(long, value_enum, default_value_t = DialectArg::Rpc)]
        dialect: DialectArg,
        /// Milliseconds the agent must be quiet before the next input line is forwarded.
        #[arg(long, default_value_t = 150)]
        settle_ms: u64,
        /// agentwire arguments after `--` (`--model-script FILE` becomes `model` lines).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Print the requirements registry (tests/conformance/requirements.json, built in) with the
    /// transcripts that name each id.
    Requirements {
        /// Output format.
        #[arg(long, value_enum, default_value_t = RequirementsFormat::Text)]
        format: RequirementsFormat,
        /// Corpus directory whose transcripts (and their subdirectories') are listed per id.
        #[arg(default_value = "tests/conformance")]
        dir: std::path::PathBuf,
    },
    /// Serve scripted model replies over HTTP in every major provider API (OpenAI Chat
    /// Completions and Responses, Anthropic Messages, Gemini), for pointing an agent at by hand.
    ServeModel {
        /// Address to listen on, e.g. 127.0.0.1:8787 (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
        /// The replies: a model-script JSONL file, or a transcript (its `model` lines).
        #[arg(long, value_name = "FILE")]
        script: std::path::PathBuf,
    },
    /// Run a corpus against several agents and write a compatibility matrix (requirements ×
    /// agents) as Markdown, plus the same as JSON beside it.
    Matrix {
        /// An agent's adapter file (repeatable; one column each).
        #[arg(long = "adapter", value_name = "FILE", required = true)]
        adapters: Vec<std::path::PathBuf>,
        /// The Markdown file to write (`FILE.json` is written beside it); stdout without it.
        #[arg(long, value_name = "FILE.md")]
        out: Option<std::path::PathBuf>,
        /// Seconds to wait for one expected frame.
        #[arg(long, default_value_t = 10)]
        frame_timeout: u64,
        /// Transcripts run at the same time, per agent.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// The corpus directory (its `baselines/<agent>.txt` are used).
        dir: std::path::PathBuf,
    },
    /// Convert recordings of another implementation into transcripts that replay against
    /// agentwire (implementation-specific values loosened; see docs/conformance.md).
    Import {
        /// Whose recordings.
        #[arg(long, value_enum)]
        from: ImportFrom,
        /// Directory to write `<peer>-<scenario>.jsonl` into.
        #[arg(long, value_name = "DIR")]
        out: std::path::PathBuf,
        /// Recording files (`<scenario>.jsonl`).
        #[arg(required = true)]
        recordings: Vec<std::path::PathBuf>,
    },
    /// Judge a client (an editor, a host): the harness plays a scripted agent, the client starts
    /// it where the command says `{{agent}}` (the agent's command line as one argument), and
    /// every scenario's verdicts are printed per requirement; exits 1 when a MANDATORY or
    /// CAPABILITY requirement fails. The client's stdin gets the `--input-line`s, then EOF.
    Client {
        /// The dialect the client speaks (with `--clients`, each client's own `dialect`).
        #[arg(long, value_enum, required_unless_present = "clients")]
        dialect: Option<ClientDialectArg>,
        /// Only these scenarios (repeatable; default: all).
        #[arg(long = "scenario", value_name = "NAME")]
        scenarios: Vec<String>,
        /// Report format.
        #[arg(long, value_enum, default_value_t = RequirementsFormat::Text)]
        format: RequirementsFormat,
        /// Seconds the scripted agent waits for the client's next step.
        #[arg(long, default_value_t = 5)]
        wait: u64,
        /// Seconds one client run may take before it is killed.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// A line the user types on the client's stdin (repeatable; default: one prompt line):
        /// the first at once, each next one when the agent asks for permission again.
        #[arg(long = "input-line", value_name = "LINE")]
        input: Vec<String>,
        /// Judge every client of this file instead (a JSON array of `{name, version, dialect,
        /// command, input, expectFailure}`; `{{dir}}` in a command is the file's directory), e.g.
        /// tests/acp-clients/clients.json; exits 1 when a client's result is not the expected one.
        #[arg(long, value_name = "FILE", conflicts_with = "command")]
        clients: Option<std::path::PathBuf>,
        /// With `--clients`: write the client matrix as the "Clients" section at the end of this
        /// Markdown file (replacing the one there), e.g. docs/compatibility.md.
        #[arg(long, value_name = "FILE.md", requires = "clients")]
        out: Option<std::path::PathBuf>,
        /// The client command, with `{{agent}}` where it takes the agent's command line.
        #[arg(last = true, required_unless_present = "clients")]
        command: Vec<String>,
    },
    /// The scripted agent `conformance client` hands to the client under test (started by the
    /// client through `{{agent}}`).
    #[command(hide = true)]
    ScriptedAgent {
        /// The dialect to speak.
        #[arg(long, value_enum)]
        dialect: ClientDialectArg,
        /// The scenario to play.
        #[arg(long)]
        scenario: String,
        /// The report file the verdicts are appended to.
        #[arg(long, value_name = "FILE")]
        report: std::path::PathBuf,
        /// Milliseconds to wait for the client's next step.
        #[arg(long, default_value_t = 5000)]
        wait_ms: u64,
    },
}

/// `conformance client --dialect`: the dialects whose clients the harness judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientDialectArg {
    /// The Agent Client Protocol, v1 or v2 as the client's `initialize` asks.
    Acp,
    /// pi's JSONL rpc (`pi --mode rpc`), as pi 0.73 and 1.6 hosts speak it.
    Rpc,
    /// kimi-cli's JSON-RPC 2.0 wire (`kimi --wire`).
    Wire,
}

impl ClientDialectArg {
    /// The protocol dialect.
    pub fn dialect(self) -> crate::protocol::Dialect {
        match self {
            Self::Acp => crate::protocol::Dialect::Acp,
            Self::Rpc => crate::protocol::Dialect::Rpc,
            Self::Wire => crate::protocol::Dialect::Wire,
        }
    }
}

/// `--thinking` names no level of the protocol's `ThinkingLevel` enum (clap prints it).
#[derive(Debug, thiserror::Error)]
#[error("unknown thinking level {0:?}")]
struct UnknownThinkingLevel(String);

/// `--thinking`: a level of the protocol's `ThinkingLevel` enum.
fn parse_thinking_level(text: &str) -> Result<crate::protocol::ThinkingLevel, UnknownThinkingLevel> {
    crate::protocol::decode::from_value(serde_json::Value::String(text.to_owned())).map_err(|_| UnknownThinkingLevel(text.to_owned()))
}

/// `agentwire conformance requirements --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RequirementsFormat {
    /// Grouped by tier, each with its source and transcripts.
    Text,
    /// One JSON object per requirement.
    Json,
}

/// Recordings `agentwire conformance import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFrom {
    /// kimi-cli `--wire` recordings (`shared/reference-transcripts/kimi/`, with `scripts.json` beside them).
    Kimi,
    /// pi `--mode rpc` recordings (`shared/reference-transcripts/pi/`, with `scripts.json` beside them).
    Pi,
    /// oh-my-pi `--mode rpc` recordings (`shared/reference-transcripts/omp/`, with `scripts.json` beside them).
    Omp,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One line per transcript, details for failures.
    Text,
    /// One JSON object per transcript, then one per requirement (its tier and status).
    Json,
    /// JUnit XML (one testcase per transcript).
    Junit,
}

/// Generate the client bindings' inputs and protocol layers (see clients/generate).
#[derive(Debug, Subcommand)]
pub enum CodegenAction {
    /// The bundled schema prepared for a type generator (json-schema-to-typescript or datamodel-code-generator).
    Input {
        /// Which generator reads it.
        #[arg(long, value_enum)]
        target: CodegenTarget,
    },
    /// The TypeScript client's protocol layer (clients/typescript/src/generated/protocol.ts).
    Typescript,
    /// The Python client's protocol layer (clients/python/src/agentwire_client/protocol.py).
    Python,
    /// The TypeScript client's wire-dialect layer (clients/typescript/src/generated/wire.ts).
    TypescriptWire,
    /// The Python client's wire-dialect layer (clients/python/src/agentwire_client/wire_protocol.py).
    PythonWire,
}

/// `--target` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodegenTarget {
    /// json-schema-to-typescript.
    Typescript,
    /// datamodel-code-generator.
    Python,
}

/// Work with the protocol schema.
#[derive(Debug, Subcommand)]
pub enum SchemaAction {
    /// Print one self-contained JSON Schema (all `$defs`, local refs only) to stdout.
    Bundle {
        /// Only the definitions one dialect uses (`acp`: the vendored official ACP schema).
        #[arg(long, value_enum)]
        dialect: Option<BundleDialectArg>,
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::{Cli, ToolsCli};

    /// clap's own consistency checks, over every subcommand (deferred ones built too), of both
    /// binaries' command lines.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
        ToolsCli::command().debug_assert();
    }

    /// A deferred subcommand's help opens with the line the top-level help lists for it: its
    /// arguments are added when it is built, and must not replace that line.
    #[test]
    fn a_deferred_subcommand_keeps_the_line_listed_for_it() {
        for cli in [Cli::command(), ToolsCli::command()] {
            for sub in cli.get_subcommands() {
                let listed = sub.get_about().map(ToString::to_string);
                let mut built = sub.clone();
                built.build();
                assert_eq!(built.get_about().map(ToString::to_string), listed, "agentwire {}", sub.get_name());
                assert!(built.get_arguments().count() > 0 || built.has_subcommands(), "agentwire {} was built", sub.get_name());
            }
        }
    }

    /// The agent's binary lists every tool the tools' binary has, with the same line: a tool
    /// added to one and not the other is caught here.
    #[test]
    fn the_agent_lists_every_tool() {
        let agent = Cli::command();
        for tool in ToolsCli::command().get_subcommands() {
            let listed = agent.find_subcommand(tool.get_name()).unwrap_or_else(|| panic!("agentwire --help lacks {}", tool.get_name()));
            assert_eq!(listed.get_about().map(ToString::to_string), tool.get_about().map(ToString::to_string), "agentwire {}", tool.get_name());
        }
    }
}
