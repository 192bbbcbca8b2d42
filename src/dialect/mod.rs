//! The two dialects over the shared protocol types: how lines become requests and how
//! failures become error frames.
//!
//! - [`rpc`]: the pi / omp JSONL RPC dialect.
//! - [`wire`]: the kimi-cli JSON-RPC 2.0 wire dialect (inbound decoding; the server comes next).

pub mod rpc;
pub mod wire;
