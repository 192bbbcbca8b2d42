//! agentwire: a protocol-first agent speaking the pi/omp JSONL RPC dialect and the kimi-cli
//! JSON-RPC 2.0 wire dialect over stdio.
//!
//! Layers, each knowing only the ones below it:
//! - [`protocol`]: types generated from `schema/` by `build.rs`, envelopes, validators;
//! - [`transport`]: LF-only bounded line reading and the single stdout writer;
//! - [`jsonrpc`]: the JSON-RPC 2.0 runtime of the wire and ACP dialects (error object,
//!   envelopes, decoding, our requests to the peer, the serve loop);
//! - [`dialect`]: how inbound lines become commands, and failures error frames, per dialect;
//! - [`codegen`]: schema bundling and documentation generation (shared with `build.rs`);
//! - [`server`]: serves a dialect on stdin/stdout (reader loop, dispatch, shutdown);
//! - [`agent`]: the agent loop, state and command handlers (implements the generated trait);
//! - [`providers`]: model providers (the built-in offline model);
//! - [`sessions`]: session files on disk (append-only JSONL tree), HTML export;
//! - [`tools`]: the built-in tools (read, write, edit, bash, ls, grep, find);
//! - [`mcp`]: MCP servers as a source of tools (rmcp: start, list, call, shut down);
//! - [`conformance`]: the transcript harness (beside the layers: it drives any agent binary);
//! - [`cli`]: the command-line front end.

pub mod agent;
pub mod cli;
pub mod codegen;
pub mod conformance;
pub mod dialect;
pub mod jsonrpc;
pub mod mcp;
pub mod protocol;
pub mod providers;
pub mod server;
pub mod sessions;
pub mod tools;
pub mod transport;
