//! ACP v2 as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]), as v1
//! is ([`crate::dialect::acp::front`]): `session/cancel` cancels the session's run,
//! `$/cancel_request` the request it names.

use crate::core::AgentCore;
use crate::dialect::acp::front::{cancel_request, Front};
use crate::protocol::acp_v2::AcpAgentNotification;

pub use crate::dialect::acp::front::serve as serve_acp_v2;

/// Routes a client's v2 notification on `front`.
pub(super) fn route_notification<A: AgentCore>(front: &Front<super::handler::V2, A>, notification: AcpAgentNotification) {
    match notification {
        AcpAgentNotification::SessionCancel(n) => front.cancel(&n.session_id.0),
        AcpAgentNotification::CancelRequest(n) => cancel_request(front.conn(), &n.request_id),
    }
}
