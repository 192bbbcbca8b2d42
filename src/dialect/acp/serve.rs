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

use tokio::io::AsyncBufRead;

use super::{AcpAgentSide, AcpServer};
use crate::core::AgentCore;
use crate::jsonrpc::{Connection, Service};
use crate::protocol::acp::{AcpAgentNotification, SessionId};

impl<A: AgentCore> Service for AcpServer<A> {
    type Side = AcpAgentSide;

    fn connection(&self) -> &Connection {
        self.conn()
    }

    fn notified(&self, notification: AcpAgentNotification) {
        route_notification(self.conn(), notification, |session| self.cancel(session));
    }
}

/// Routes a client's notification: `session/cancel` to `cancel`, `$/cancel_request` to the
/// request it names on `conn` (every ACP agent side, ours and the bridge's, does the same).
pub fn route_notification(conn: &Connection, notification: AcpAgentNotification, cancel: impl FnOnce(&SessionId)) {
    match notification {
        AcpAgentNotification::SessionCancel(n) => cancel(&n.session_id),
        AcpAgentNotification::CancelRequest(n) => {
            let id = serde_json::to_value(&n.request_id).unwrap_or_default();
            if !conn.cancel_request(&id) {
                tracing::debug!("$/cancel_request for {id}, which is not in flight");
            }
        }
    }
}

/// Serves ACP on `input` until it ends and every request read is answered.
pub async fn serve_acp<A, R>(server: &AcpServer<A>, input: R, max_line_bytes: usize)
where
    A: AgentCore,
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::jsonrpc::serve(server, input, max_line_bytes).await;
}
