//! The host side: driving an agent in any dialect, as a subprocess or over any
//! `AsyncRead`/`AsyncWrite`.
//!
//! - [`process`]: the agent subprocess (its own process group, never outliving us, a bounded
//!   shutdown);
//! - [`rpc`]: a host of the pi/omp JSONL dialect ([`RpcClient`]);
//! - [`acp`]: a host of ACP ([`AcpClient`]), on the shared JSON-RPC runtime;
//! - [`detect`]: which dialect an agent speaks;
//! - [`wire`]: a host of kimi's wire dialect ([`WireClient`]), on the same runtime;
//! - [`call`]: how a request to a JSON-RPC agent ended ([`CallError`]);
//! - [`inbox`]: what the JSON-RPC agents send unasked, as a stream;
//! - [`input`]: the agent's input, closable while the connection still answers through it.

pub mod acp;
pub mod acp_v2;
pub mod call;
pub mod detect;
pub mod inbox;
pub mod input;
pub mod process;
pub mod rpc;
pub mod wire;

pub use acp::{AcpClient, AcpClientError, AcpClientSide, AcpUpdates, NoAcpHost};
pub use acp_v2::{AcpV2Client, AcpV2ClientSide, AcpV2Updates};
pub use call::CallError;
pub use inbox::Notifications;
pub use input::{spawn_closable_writer, InputCloser};
pub use wire::{NoWireHost, WireClient, WireClientError, WireClientSide, WireEvents, WireHostHandler};

pub use detect::{connect, DetectError, Detected, Dialect, Handshake};
pub use process::{AgentProcess, ProcessError, DEFAULT_EXIT_GRACE};
pub use rpc::{
    ClientError, DialogAnswer, NoHost, RpcAgentFrame, RpcClient, RpcDialog, RpcEvents,
    RpcHostHandler,
};
