//! Code and document generation from the schema.
//!
//! - [`bundle`]: merges `schema/*.schema.json` into one self-contained document (also compiled
//!   into `build.rs`).
//! - [`clients`]: the TypeScript and Python clients' protocol layers, and the input their type
//!   generators read.
//! - [`docs`]: renders `docs/protocol.md` from the bundle and `schema/examples/`.
//!
//! `rust_types.rs`, `acp_types.rs` and `handlers.rs` (the handler layer of every dialect) in
//! this folder are the build-time Rust generators; only `build.rs` compiles them
//! (it needs typify, a build dependency).

pub mod bundle;
pub mod clients;
pub mod docs;
