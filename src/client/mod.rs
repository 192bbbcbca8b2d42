//! The host side: driving an agent in any dialect, as a subprocess or over any
//! `AsyncRead`/`AsyncWrite`.
//!
//! - [`process`]: the agent subprocess (its own process group, never outliving us, a bounded
//!   shutdown).

pub mod process;

pub use process::{AgentProcess, ProcessError, DEFAULT_EXIT_GRACE};
