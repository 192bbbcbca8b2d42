//! ACP v2 as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]), as v1
//! is: `session/cancel` cancels the session's run, `$/cancel_request` the request it names.

use tokio::io::AsyncBufRead;

use super::{AcpV2AgentSide, AcpV2Server};
use crate::core::AgentCore;
use crate::jsonrpc::{Connection, Service};
use crate::protocol::acp_v2::AcpAgentNotification;

impl<A: AgentCore> Service for AcpV2Server<A> {
    type Side = AcpV2AgentSide;

    fn connection(&self) -> &Connection {
        self.conn()
    }

    fn notified(&self, notification: AcpAgentNotification) {
        match notification {
            AcpAgentNotification::SessionCancel(n) => self.cancel(&n.session_id.0),
            AcpAgentNotification::CancelRequest(n) => {
                let id = serde_json::to_value(&n.request_id).unwrap_or_default();
                if !self.conn().cancel_request(&id) {
                    tracing::debug!("$/cancel_request for {id}, which is not in flight");
                }
            }
        }
    }
}

/// Serves ACP v2 on `input` until it ends and every request read is answered.
pub async fn serve_acp_v2<A, R>(server: &AcpV2Server<A>, input: R, max_line_bytes: usize)
where
    A: AgentCore,
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::jsonrpc::serve(server, input, max_line_bytes).await;
}
