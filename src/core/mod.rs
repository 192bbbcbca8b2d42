//! The core interface: what a host-facing dialect needs from an agent, whatever the agent is
//! (the built-in one in `crate::agent`, a custom one, or an agent driven over a connection in
//! any dialect, `crate::dialect::<name>::remote`).
//!
//! - [`AgentCore`]: the trait. Its required part is the run (a prompt, its control: cancel,
//!   whether one runs; a started prompt's explicit start and its one end); everything else has an honest default that refuses what the
//!   agent lacks ([`CoreError::Unsupported`], naming it) or advertises it absent.
//! - [`events`]: what the agent reports ([`AgentEvent`] to an [`EventSink`]), in order.
//! - [`port`]: what it asks the host ([`HostPort`]: approvals, host tools, questions, dialogs).
//! - [`error`]: [`CoreError`], mapped to wire codes by each dialect.
//! - [`prompt`]: a prompt's handle ([`Prompt`], [`Submitted`], [`QueueKind`]).
//! - [`runs`]: [`Runs`], the bookkeeping of an agent answering one prompt at a time, with
//!   [`Reply`] to stream its answer, and [`Host`] (the sink and port a front gives an agent).
//! - [`stream`], [`model`]: a streamed assistant message built from model chunks.
//! - [`tools`], [`mcp`], [`messages`]: the plain values the interface names (a tool's output,
//!   the host's file and command access, MCP server configs, a conversation as JSON).
//!
//! Nothing here knows a dialect, a frame, a provider or a file on disk: a custom agent served
//! with `crate::server::serve_with` compiles this, the fronts and the transport only.

pub mod agent_core;
pub mod error;
pub mod events;
pub mod mcp;
pub mod messages;
pub mod model;
pub mod port;
pub mod prompt;
pub mod runs;
pub mod sessions;
pub mod stream;
pub mod tools;

pub use agent_core::{unsupported, AgentCore, AgentInfo, ApprovalPolicy, AuthMethod, BashOutput, Capabilities, MakeAgent, RunControl, Setting, SettingValue, StateExtras, StateVersion};
pub use error::{CoreError, CoreResult, Refusal};
pub use events::{AgentEvent, EventSink, PromptId, RunOutcome};
pub use port::HostPort;
pub use prompt::{Prompt, QueueKind, Start, Submitted};
pub use runs::{Host, Reply, Runs};
pub use sessions::{AuthFuture, SessionError, SessionFactory, StartFuture};
