//! ACP as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]): a
//! `session/prompt` answers when its run ends while the loop keeps serving `session/cancel`
//! and the client's answers to permission, `fs/*` and `terminal/*` requests.
//!
//! stdin EOF: every session's run is aborted (prompts resolve `cancelled`), requests in flight
//! are answered (bounded by a grace period), and the loop returns.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::io::AsyncBufRead;

use super::{AcpAgentSide, AcpServer};
use crate::dialect::SHUTDOWN_GRACE;
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

    fn end_of_input(&self) -> BoxFuture<'static, ()> {
        let agents = self.agents();
        async move {
            for agent in agents {
                agent.shutdown().await;
            }
        }
        .boxed()
    }
}

/// Serves ACP on `input` until it ends and everything in flight is answered.
pub async fn serve_acp<R>(server: &AcpServer, input: R, max_line_bytes: usize)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::jsonrpc::serve(server, input, max_line_bytes, SHUTDOWN_GRACE).await;
}
