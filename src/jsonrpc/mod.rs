//! The JSON-RPC 2.0 runtime every JSON-RPC dialect (kimi's wire, ACP) stands on, and a client
//! of either would too: the connection is symmetric, a side is chosen by the [`Side`] it
//! decodes and the generated handler trait it implements (the old ACP crate's
//! `RpcConnection<Local, Remote>`; rmcp's model / service / handler / transport split).
//!
//! - the one error object (`code`, `message`, `data`), its [`ErrorCode`] enum, the typed
//!   request, notification, success and error frames and the [`Request`] / [`Notification`]
//!   method traits: data, defined in the protocol layer ([`crate::protocol::envelope`]) so the
//!   generated types name them without naming this runtime; re-exported here;
//! - [`frames`]: the [`Responder`] a generated dispatch answers through, serializing the typed
//!   result once, straight into the frame bytes;
//! - [`dispatch`]: the generated dispatch of each JSON-RPC handler trait (wire, ACP v1, ACP v2)
//!   onto this runtime's [`Responder`] and [`Dispatch`];
//! - [`decode`]: envelope decoding with each dialect's [`Policy`] (ids byte-exact, see
//!   [`crate::transport::raw_id`]);
//! - [`peer`]: our requests to the other side (ids, correlation, timeouts, cancellation,
//!   withdrawal);
//! - [`answer`]: "the answer is queued", the one hook for work that must follow a request's
//!   answer (used by the JSONL dialect's loop too);
//! - [`serve`]: the one serve loop, generic over [`Service`] + the generated [`Dispatch`].
//!
//! It knows no dialect's code nor the agent: it sits on the transport and the protocol's
//! types, and the dialects sit on it.

// Without the `transport` feature only the protocol's error object, method traits and frame
// types are here (re-exported); decoding, the peer, the serve loop, the generated dispatch and
// the encoded answers stand on the transport.
#[cfg(feature = "transport")]
pub mod answer;
#[cfg(feature = "transport")]
pub mod decode;
#[cfg(feature = "transport")]
pub mod dispatch;
#[cfg(feature = "transport")]
pub mod frames;
#[cfg(feature = "transport")]
pub mod peer;
#[cfg(feature = "transport")]
pub mod serve;

#[cfg(feature = "transport")]
pub use decode::{decode, decode_line, Decoded, Inbound, Line, Policy, Side, Words};
#[cfg(feature = "transport")]
pub use frames::{Answer, Responder};
pub use crate::protocol::envelope::{Error, ErrorCode, ErrorFrame, IgnoredNotification, Notification, NotificationFrame, Request, RequestFrame, SuccessFrame};
#[cfg(feature = "transport")]
pub use peer::{Outcome, Peer, Pending, Reply};
#[cfg(feature = "transport")]
pub use serve::{claim_cancellation, serve, Connection, Dispatch, Service};
