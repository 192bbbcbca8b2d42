//! ACP as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]): a
//! `session/prompt` answers when its run ends while the loop keeps serving `session/cancel`
//! and the client's answers to permission, `fs/*` and `terminal/*` requests.
//!
//! `$/cancel_request` names a request in flight: a `session/prompt` is cancelled as by
//! `session/cancel` (it answers `cancelled`); any other request answers -32800 at once. An id
//! not in flight (already answered, or never sent) is ignored.
//!
//! stdin EOF means "no more requests", not "cancel": permission requests and client calls waiting
//! for the client fail closed, the requests in flight are answered — a `session/prompt` when its
//! run ends, as it would have — and the loop returns. Bounding that wait (`--eof-timeout`, a
//! signal) is the process runner's (`crate::server`): it cancels the runs.

use crate::jsonrpc::Connection;
use crate::protocol::acp::{AcpAgentNotification, SessionId};

pub use super::front::serve as serve_acp;

/// Routes a client's notification: `session/cancel` to `cancel`, `$/cancel_request` to the
/// request it names on `conn` (every ACP agent side, ours and the bridge's, does the same).
pub fn route_notification(conn: &Connection, notification: AcpAgentNotification, cancel: impl FnOnce(&SessionId)) {
    match notification {
        AcpAgentNotification::SessionCancel(n) => cancel(&n.session_id),
        AcpAgentNotification::CancelRequest(n) => super::front::cancel_request(conn, &n.request_id),
    }
}
