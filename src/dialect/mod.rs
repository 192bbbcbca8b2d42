//! The two dialects over the shared protocol types: how lines become requests and how
//! failures become error frames.
//!
//! - [`rpc`]: the pi / omp JSONL RPC dialect.

pub mod rpc;
