//! The `agentwire` process: builds the core for the chosen dialect, serves stdin/stdout,
//! and handles signals and the end of output. Which frames mean what lives in the dialects
//! (`crate::dialect::rpc`, `crate::dialect::wire`); the agent in `crate::agent`.
//!
//! One serve path ([`serve_with`]) serves every dialect, for the built-in agent, a custom one
//! and the agents behind `agentwire bridge`; one supervisor ([`supervisor`]) reads stdin and
//! handles signals for the agent process and the bridge. The agent process ends alike in every
//! dialect ([`supervisor::run`]):
//! - stdin EOF means "no more requests": the dialect's loop stops reading, what waits for the
//!   host's answer fails closed ([`crate::dialect::HostRequests`]), every request read is
//!   answered and every run goes on to its end; then the output is flushed and the exit code is
//!   0. `--eof-timeout` bounds that wait (past it, the work is cancelled as `abort` would).
//! - SIGINT / SIGTERM / SIGHUP: the input ends even while a read is blocked, the work is
//!   cancelled (a running `bash` gets SIGTERM, then SIGKILL, to its process group) and answered
//!   in the dialect's terms, the output is flushed, and the exit code is 130 / 143 / 129.
//! - stdout fails (EPIPE) or its pipe reports an error (`crate::transport::hangup`): the host is
//!   gone; the work is cancelled (child process groups stopped) and the process exits.
//!
//! [`serve`] serves any [`crate::core::AgentCore`] (a custom agent) in any dialect over any
//! `AsyncRead`/`AsyncWrite`, without the process's signals and exit codes.

#[cfg(feature = "agent")]
mod process;
mod serve;
#[cfg(any(feature = "agent", feature = "client"))]
pub mod served;
pub mod supervisor;

pub use crate::core::MakeAgent;
#[cfg(feature = "agent")]
pub use process::{run_acp_process, run_rpc_process, run_wire_process, ProcessOptions, SessionOptions, StartupError};
pub use serve::{acp_version, serve, serve_with, Dialect, Input, ServeOptions};
