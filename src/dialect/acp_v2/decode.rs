//! ACP v2's inbound side: v1's rules ([`crate::dialect::acp::decode`]) over the v2 schema's
//! method table and validators.

use serde_json::Value;

use crate::jsonrpc::{Error, Policy, Side};
use crate::protocol::acp_v2::{acp_v2_validator, AcpAgentNotification, AcpAgentRequest, AcpReader};

/// The agent side of ACP v2: it answers the client's v2 requests and acts on its notifications.
#[derive(Debug)]
pub enum AcpV2AgentSide {}

impl Side for AcpV2AgentSide {
    type Request = AcpAgentRequest;
    type Notification = AcpAgentNotification;
    const POLICY: Policy = Policy::STRICT;

    fn request(method: &str, frame: Value) -> Result<AcpAgentRequest, Error> {
        AcpReader::Agent.request_in(acp_v2_validator(), method, frame, AcpAgentRequest::from_params)
    }

    fn notification(method: &str, frame: Value) -> Result<AcpAgentNotification, crate::jsonrpc::IgnoredNotification> {
        AcpReader::Agent.notification_in(acp_v2_validator(), method, frame, AcpAgentNotification::from_params)
    }
}
