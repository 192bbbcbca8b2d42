//! Framing and transport: bytes in, lines out; frames in, bytes out. Knows nothing of the
//! protocol beyond "one JSON object per line".
//!
//! - [`lines`]: bounded LF-only line splitting of the inbound stream.
//! - [`writer`]: the single writer task that owns the outbound stream.
//! - [`until`]: an inbound stream that ends on a signal.
//! - [`hangup`]: noticing that the reader of stdout went away.
//! - [`stdio`]: the process's stdin and stdout on the runtime's own thread (pipes and sockets).
//! - [`json`]: the compact JSON encoder of outbound frames (fast string escaping).
//! - [`raw_id`]: request ids echoed byte for byte.
//! - [`chunk`]: omp protocol v2 `rpc_chunk` splitting and reassembly.

pub mod chunk;
pub mod hangup;
pub mod json;
pub mod lines;
pub mod raw_id;
pub mod stdio;
pub mod until;
pub mod writer;

pub use lines::{InboundLine, LineReader};
pub use writer::{encode_frame, spawn_blocking_writer, spawn_writer, stdout_sink, FrameBatch, Outbox, WriterClosed};
