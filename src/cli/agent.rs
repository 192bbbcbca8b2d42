//! The agent itself (no subcommand): its flags as the server's `ProcessOptions`, served in the
//! `--mode` dialect on a runtime sized for it.

use std::process::ExitCode;

use super::{fail, ApprovalArg, Cli, Mode};

/// Runs the agent in `mode` and returns the process exit code.
pub(super) fn run(cli: &Cli, mode: Mode) -> ExitCode {
    let cwd = match cli.cwd.clone().map_or_else(std::env::current_dir, Ok).and_then(|d| d.canonicalize()) {
        Ok(dir) => dir,
        Err(e) => return fail(&format!("working directory: {e}")),
    };
    let options = crate::server::ProcessOptions {
        cwd,
        max_line_bytes: cli.max_line_bytes.max(1),
        max_outbound_bytes: cli.max_outbound_bytes.max(1),
        max_session_bytes: cli.max_session_bytes,
        model_script: cli.model_script.clone(),
        rpc_profile: match cli.rpc_profile {
            super::args::RpcProfileArg::Current => crate::dialect::rpc::RpcProfile::Current,
            super::args::RpcProfileArg::Pi073 => crate::dialect::rpc::RpcProfile::Pi073,
        },
        approval: match cli.approval.unwrap_or(if mode == Mode::Acp { ApprovalArg::Dangerous } else { ApprovalArg::Never }) {
            ApprovalArg::Never => crate::agent::ApprovalPolicy::Never,
            ApprovalArg::Dangerous => crate::agent::ApprovalPolicy::Dangerous,
            ApprovalArg::Always => crate::agent::ApprovalPolicy::Always,
        },
        approval_timeout: std::time::Duration::from_millis(cli.approval_timeout_ms),
        host_tool_timeout: std::time::Duration::from_millis(cli.host_tool_timeout_ms),
        selection: crate::providers::config::Selection {
            config_dir: cli.config_dir.clone(),
            provider: cli.provider.clone(),
            model: cli.model.clone(),
            api_key: cli.api_key.clone(),
            offline: None,
        },
        sessions: crate::server::SessionOptions {
            dir: cli.session_dir.clone(),
            disabled: cli.no_session,
            resume: cli.session.clone(),
            continue_recent: cli.continue_recent,
        },
        compaction: crate::agent::compaction::CompactionPolicy { threshold: cli.compaction_threshold, keep_tokens: cli.compaction_keep_tokens },
        max_steps_per_turn: cli.max_steps_per_turn,
        thinking: cli.thinking,
        eof_timeout: cli.eof_timeout.map(Into::into),
        mcp_config: cli.mcp_config.as_ref().map(|p| if p.is_absolute() { p.clone() } else { std::env::current_dir().unwrap_or_default().join(p) }),
        mcp_startup_timeout: std::time::Duration::from_millis(cli.mcp_startup_timeout_ms),
        retry: crate::agent::RetryPolicy {
            max_attempts: cli.retry_max_attempts,
            base_delay: std::time::Duration::from_millis(cli.retry_base_delay_ms),
            ..crate::agent::RetryPolicy::default()
        },
    };
    // rpc and wire serve one session: one thread runs it, which answers the first frame ~0.3 ms
    // sooner than two workers started up front (docs/performance.md, "Start-up");
    // throughput measured the same. A piped stdin and stdout are read and written on that
    // thread too (`transport::stdio`); the file and search tools use the blocking pool. ACP
    // serves any number of sessions, whose work (a session loaded, a tool run) keeps running on
    // two workers side by side.
    let built = match mode {
        Mode::Rpc | Mode::Wire => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Mode::Acp => tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build(),
    };
    let runtime = match built {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("could not start the async runtime: {e}")),
    };
    let code = match mode {
        Mode::Rpc => runtime.block_on(crate::server::run_rpc_process(options)),
        Mode::Wire => runtime.block_on(crate::server::run_wire_process(options)),
        Mode::Acp => runtime.block_on(crate::server::run_acp_process(options)),
    };
    // stdin is read on a blocking thread that may still be parked in read(2); do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(50));
    ExitCode::from(code)
}
