//! The JSON-RPC 2.0 envelope as data, shared by every JSON-RPC dialect (kimi's wire, ACP v1 and
//! v2): the one error object ([`Error`], [`ErrorCode`]) and why a notification is ignored
//! ([`IgnoredNotification`]), the four frame shapes, and the method
//! traits ([`Request`], [`Notification`]) the generated per-method types implement. No I/O: the
//! runtime that reads and writes these frames is `crate::jsonrpc`, one layer up, which
//! re-exports all of it.

pub mod error;
pub mod frames;

pub use error::{Error, ErrorCode, IgnoredNotification};
pub use frames::{ErrorFrame, Notification, NotificationFrame, Request, RequestFrame, SuccessFrame};
