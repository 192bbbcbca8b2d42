//! ACP as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]): a
//! `session/prompt` answers when its run ends while the loop keeps serving `session/cancel`
//! and the client's answers to permission, `fs/*` and `terminal/*` requests.
//!
//! stdin EOF means "no more requests" (notes §1.6): permission requests and client calls waiting
//! for the client fail closed, the requests in flight are answered — a `session/prompt` when its
//! run ends, as it would have — and the loop returns. Bounding that wait (`--eof-timeout`, a
//! signal) is the process runner's (`crate::server`): it cancels the runs.

use tokio::io::AsyncBufRead;

use super::{AcpAgentSide, AcpServer};
use crate::jsonrpc::Service;
use crate::protocol::acp::AcpAgentNotification;

impl Service for AcpServer {
    type Side = AcpAgentSide;

    fn connection(&self) -> &crate::jsonrpc::Connection {
        self.conn()
    }

    fn notified(&self, notification: AcpAgentNotification) {
        match notification {
            AcpAgentNotification::SessionCancel(n) => self.cancel(&n.session_id),
        }
    }
}

/// Serves ACP on `input` until it ends and every request read is answered.
pub async fn serve_acp<R>(server: &AcpServer, input: R, max_line_bytes: usize)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::jsonrpc::serve(server, input, max_line_bytes).await;
}
