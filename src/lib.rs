//! agentwire: a protocol-first agent speaking the pi/omp JSONL RPC dialect, the kimi-cli
//! JSON-RPC 2.0 wire dialect and ACP over stdio, in both directions.
//!
//! Layers, each knowing only the ones below it:
//! - [`protocol`]: types generated from `schema/` by `build.rs`, envelopes, validators;
//! - [`transport`]: LF-only bounded line reading and the single stdout writer;
//! - [`jsonrpc`]: the JSON-RPC 2.0 runtime of the wire and ACP dialects (error object,
//!   envelopes, decoding, our requests to the peer, the serve loop);
//! - [`core`]: the core interface: the trait a front serves, its events, port, errors and the
//!   value types they name, [`core::Runs`] for a custom agent;
//! - [`dialect`]: per dialect, its front (decode, the handler trait mapped onto the core, the
//!   event projection, the host port) and its remote agent (an agent in that dialect, driven as
//!   the core);
//! - [`codegen`]: schema bundling and documentation generation (shared with `build.rs`);
//! - [`server`]: serves a dialect on stdin/stdout (reader loop, dispatch, shutdown);
//! - [`agent`]: the built-in agent: the loop, state, sessions, models and tools (implements the
//!   core interface);
//! - [`providers`]: model providers (the built-in offline model);
//! - [`sessions`]: session files on disk (append-only JSONL tree), HTML export;
//! - [`tools`]: the built-in tools (read, write, edit, bash, ls, grep, find);
//! - [`bridge`]: `agentwire bridge`, a front composed with a remote agent;
//! - [`client`]: the host side: an agent subprocess, driven in any dialect;
//! - [`recording`]: live sessions written as conformance transcripts (the bridge's `--record`);
//! - [`mcp`]: MCP servers as a source of tools (rmcp: start, list, call, shut down);
//! - [`conformance`]: the transcript harness (beside the layers: it drives any agent binary);
//! - [`cli`]: the command-line front end.

#[cfg(feature = "agent")]
pub mod agent;
#[cfg(feature = "core")]
pub mod core;
#[cfg(all(feature = "client", feature = "server"))]
pub mod bridge;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "cli")]
pub mod cli;
pub mod codegen;
#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "server")]
pub mod dialect;
pub mod jsonrpc;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod protocol;
#[cfg(any(feature = "core", feature = "transport"))]
mod panic;
#[cfg(feature = "providers")]
pub mod providers;
#[cfg(feature = "client")]
pub mod recording;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "agent")]
pub mod sessions;
#[cfg(feature = "tools")]
pub mod tools;
#[cfg(feature = "transport")]
pub mod transport;
