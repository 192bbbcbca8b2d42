//! The JSON-RPC 2.0 runtime every JSON-RPC dialect (kimi's wire, ACP) stands on, and a client
//! of either would too: the connection is symmetric, a side is chosen by the [`Side`] it
//! decodes and the generated handler trait it implements (the old ACP crate's
//! `RpcConnection<Local, Remote>`; rmcp's model / service / handler / transport split).
//!
//! - [`error`]: the one error object (`code`, `message`, `data`), its [`ErrorCode`] enum;
//! - [`frames`]: typed request, notification, success and error frames, serialized once
//!   straight into the frame bytes; the [`Request`] / [`Notification`] method traits; the
//!   [`Responder`] a generated dispatch answers through;
//! - [`decode`]: envelope decoding with each dialect's [`Policy`] (ids byte-exact, see
//!   [`crate::transport::raw_id`]);
//! - [`peer`]: our requests to the other side (ids, correlation, timeouts, cancellation,
//!   withdrawal);
//! - [`answer`]: "the answer is queued", the one hook for work that must follow a request's
//!   answer (used by the JSONL dialect's loop too);
//! - [`serve`]: the one serve loop, generic over [`Service`] + the generated [`Dispatch`].
//!
//! It knows nothing of any dialect or of the agent: it sits on the transport, and the
//! dialects sit on it.

// Without the `transport` feature only the error object, the method traits and the frame types
// are here (the generated handler traits name them); decoding, the peer, the serve loop and
// the encoded answers stand on the transport.
#[cfg(feature = "transport")]
pub mod answer;
#[cfg(feature = "transport")]
pub mod decode;
pub mod error;
pub mod frames;
#[cfg(feature = "transport")]
pub mod peer;
#[cfg(feature = "transport")]
pub mod serve;

#[cfg(feature = "transport")]
pub use decode::{decode, decode_line, Decoded, Inbound, Line, Policy, Side, Words};
#[cfg(feature = "transport")]
pub use frames::{Answer, Responder};
pub use frames::{ErrorFrame, Notification, NotificationFrame, Request, RequestFrame, SuccessFrame};
pub use error::{Error, ErrorCode};
#[cfg(feature = "transport")]
pub use peer::{Outcome, Peer, Pending, Reply};
#[cfg(feature = "transport")]
pub use serve::{claim_cancellation, serve, Connection, Dispatch, Service};
