//! The dialects: each is a projection of the agent core onto one protocol. A dialect decodes
//! its inbound lines, implements its generated handler trait by calling the core, projects the
//! core's [`crate::core::AgentEvent`]s onto its generated frame types with an exhaustive match,
//! and answers the core's [`crate::core::HostPort`] questions with its own requests. Adding a
//! dialect is adding one module here (see `docs/architecture.md`).
//!
//! - [`rpc`]: the pi / omp JSONL RPC dialect.
//! - [`wire`]: the kimi-cli JSON-RPC 2.0 wire dialect.
//! - [`acp`]: the Agent Client Protocol v1 (agent side), for Zed and other ACP editors;
//!   [`acp_v2`]: ACP v2 (Preview) beside it; [`acp_version`]: which of the two a connection
//!   speaks, from its `initialize`.
//!
//! [`peek_id_and_type`] and [`raw_id`] (from `transport::raw_id`) serve every dialect: an
//! oversized line's error still carries its id. [`HostRequests`] is the JSONL dialect's table
//! of host tool calls waiting for the host, closed when the host's input ends (nobody can
//! answer them then; the call fails closed); every other request we send closes with its
//! [`crate::jsonrpc::Peer`].

pub mod acp;
pub mod acp_v2;
pub mod acp_version;
pub mod pending;
#[cfg(feature = "client")]
pub mod remote;
pub mod rpc;
pub mod wire;

pub use crate::transport::raw_id::{peek_id_and_type, raw_id};
pub use pending::HostRequests;
