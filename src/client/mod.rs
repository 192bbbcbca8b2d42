//! The host side: driving an agent in any dialect, as a subprocess or over any
//! `AsyncRead`/`AsyncWrite`.
//!
//! - [`process`]: the agent subprocess (its own process group, never outliving us, a bounded
//!   shutdown);
//! - [`rpc`]: a host of the pi/omp JSONL dialect ([`RpcClient`]);
//! - [`detect`]: which dialect an agent speaks.

pub mod detect;
pub mod process;
pub mod rpc;

pub use detect::{connect, DetectError, Detected, Dialect, Handshake};
pub use process::{AgentProcess, ProcessError, DEFAULT_EXIT_GRACE};
pub use rpc::{
    ClientError, DialogAnswer, NoHost, RpcAgentFrame, RpcClient, RpcDialog, RpcEvents,
    RpcHostHandler,
};
