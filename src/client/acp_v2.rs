//! A host of ACP v2: typed requests to a v2 agent, its `session/update` stream, and its
//! requests to us answered through the generated v2 [`AcpClientHandler`] — v1's client
//! ([`super::acp::Client`]) projected onto the v2 schema. A v2 prompt is answered as soon as its user message
//! is inserted (the answer carries its `messageId`); the turn is reported on the update stream
//! (`state_update`, `idle` with the stop reason).

use super::acp::{Client, Host};
use super::call::CallError;
use super::inbox::Notifications;
use crate::jsonrpc::{Dispatch, Responder};
use crate::jsonrpc::dispatch::acp_v2::dispatch_acp_client_request;
use crate::protocol::acp_v2::{
    methods, AcpClientHandler, AcpClientRequest, CloseSessionRequest, CloseSessionResponse, SessionId,
    UpdateSessionNotification,
};

/// The client side of ACP v2 (the mirror of `dialect::acp_v2::AcpV2AgentSide`).
#[derive(Debug)]
pub enum AcpV2ClientSide {}

/// The v2 agent's `session/update` notifications, in the order it sent them.
pub type AcpV2Updates = Notifications<UpdateSessionNotification>;

/// ACP v2 on the host side.
#[derive(Debug)]
pub enum V2 {}

super::acp::client_version!(V2, acp_v2, acp_v2_validator, AcpV2ClientSide, UpdateSessionNotification, CancelSessionNotification);

impl<H: AcpClientHandler> Dispatch<AcpClientRequest> for Host<V2, H> {
    fn dispatch(&self, request: AcpClientRequest, responder: Responder) -> impl std::future::Future<Output = crate::jsonrpc::Answer> + Send + '_ {
        dispatch_acp_client_request(&self.handler, request, responder)
    }
}

/// A connection to an agent speaking ACP v2. Cheap to clone.
pub type AcpV2Client = Client<V2>;

impl AcpV2Client {
    /// `session/close`.
    pub async fn close_session(&self, session: &SessionId) -> Result<CloseSessionResponse, CallError> {
        self.request::<methods::SessionClose>(&CloseSessionRequest::new(session.clone())).await
    }
}
