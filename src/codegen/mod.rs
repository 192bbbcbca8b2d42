//! Code and document generation from the schema.
//!
//! - [`bundle`]: merges `schema/*.schema.json` into one self-contained document (also compiled
//!   into `build.rs`).
//! - [`clients`]: the TypeScript and Python clients' protocol layers, and the input their type
//!   generators read.
//! - [`docs`]: renders `docs/protocol.md` from the bundle and `schema/examples/`.
//!
//! `rust_types.rs` (split by job into `typify_driver.rs`, `syn_fixups.rs`, `unions.rs`,
//! `constructors.rs`, `tables.rs`), `acp_types.rs`, `handlers.rs` (the handler layer of every
//! dialect) and `validators.rs` (the validators of both schemas) in this folder are the
//! build-time Rust generators; only `build.rs` compiles them (typify is a build dependency).

pub mod bundle;
pub mod clients;
pub mod docs;
