//! A host of ACP v2: typed requests to a v2 agent, its `session/update` stream, and its
//! requests to us answered through the generated v2 [`AcpClientHandler`] — v1's
//! [`super::AcpClient`] over the v2 schema. A v2 prompt is answered as soon as its user message
//! is inserted (the answer carries its `messageId`); the turn is reported on the update stream
//! (`state_update`, `idle` with the stop reason).

use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncBufRead;
use tokio::sync::mpsc;

use super::call::{settle, CallError};
use super::inbox::Notifications;
use super::input::InputCloser;
use super::rpc::MAX_AGENT_LINE_BYTES;
use crate::jsonrpc::dispatch::acp_v2::dispatch_acp_client_request;
use crate::jsonrpc::{Connection, Dispatch, Error, Policy, Request, Responder, Service, Side};
use crate::protocol::acp_v2::{
    acp_v2_validator, methods, AcpClientHandler, AcpClientNotification, AcpClientRequest, AcpReader, CancelSessionNotification, CloseSessionRequest,
    CloseSessionResponse, InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, SessionId, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, UpdateSessionNotification,
};
use crate::transport::Outbox;

/// The client side of ACP v2 (the mirror of `dialect::acp_v2::AcpV2AgentSide`).
#[derive(Debug)]
pub enum AcpV2ClientSide {}

impl Side for AcpV2ClientSide {
    type Request = AcpClientRequest;
    type Notification = AcpClientNotification;
    const POLICY: Policy = Policy::STRICT;

    fn request(method: &str, frame: Value) -> Result<AcpClientRequest, Error> {
        AcpReader::Client.request_in(acp_v2_validator(), method, frame, AcpClientRequest::from_params)
    }

    fn notification(method: &str, frame: Value) -> Result<AcpClientNotification, crate::jsonrpc::IgnoredNotification> {
        AcpReader::Client.notification_in(acp_v2_validator(), method, frame, AcpClientNotification::from_params)
    }
}

/// The v2 agent's `session/update` notifications, in the order it sent them.
pub type AcpV2Updates = Notifications<UpdateSessionNotification>;

/// The serve loop's service: the host's handler answering the agent's requests.
struct Host<H> {
    conn: Arc<Connection>,
    handler: H,
    updates: mpsc::UnboundedSender<UpdateSessionNotification>,
}

impl<H: AcpClientHandler> Dispatch<AcpClientRequest> for Host<H> {
    fn dispatch(&self, request: AcpClientRequest, responder: Responder) -> impl std::future::Future<Output = crate::jsonrpc::Answer> + Send + '_ {
        dispatch_acp_client_request(&self.handler, request, responder)
    }
}

impl<H: AcpClientHandler> Service for Host<H> {
    type Side = AcpV2ClientSide;

    fn connection(&self) -> &Connection {
        &self.conn
    }

    fn notified(&self, notification: AcpClientNotification) {
        match notification {
            AcpClientNotification::SessionUpdate(update) => {
                let _ = self.updates.send(update);
            }
        }
    }
}

/// A connection to an agent speaking ACP v2. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AcpV2Client {
    conn: Arc<Connection>,
    input: InputCloser,
    agent: Arc<Mutex<Option<InitializeResponse>>>,
}

impl AcpV2Client {
    /// Connects over a reader (the agent's stdout) and its input (`out`, closed by `closer`).
    /// Send [`AcpV2Client::initialize`] first.
    pub fn over<R, H>(input: R, out: Outbox, closer: InputCloser, handler: H) -> (Self, AcpV2Updates)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        H: AcpClientHandler + 'static,
    {
        let conn = Arc::new(Connection::new(out));
        let (tx, notifications) = Notifications::channel();
        let host = Host { conn: conn.clone(), handler, updates: tx };
        tokio::spawn(async move {
            crate::jsonrpc::serve(&host, input, MAX_AGENT_LINE_BYTES).await;
        });
        (Self { conn, input: closer, agent: Arc::new(Mutex::new(None)) }, notifications)
    }

    /// Sends the request `M` and waits for its typed result.
    pub async fn request<M>(&self, params: &M::Params) -> Result<M::Result, CallError>
    where
        M: Request,
        M::Params: Serialize,
        M::Result: DeserializeOwned,
    {
        let pending = self.conn.peer().request::<M>(params).await;
        settle(M::METHOD, pending.wait(None, None).await)
    }

    /// `initialize`; the answer is kept.
    pub async fn initialize(&self, request: &InitializeRequest) -> Result<InitializeResponse, CallError> {
        let answer = self.request::<methods::Initialize>(request).await?;
        *self.agent.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer.clone());
        Ok(answer)
    }

    /// The agent's `initialize` answer, once it gave one.
    pub fn agent(&self) -> Option<InitializeResponse> {
        self.agent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `session/new`.
    pub async fn new_session(&self, request: &NewSessionRequest) -> Result<NewSessionResponse, CallError> {
        self.request::<methods::SessionNew>(request).await
    }

    /// `session/prompt`: resolves once the user message is inserted (its id); the turn goes on
    /// on the update stream.
    pub async fn prompt(&self, request: &PromptRequest) -> Result<PromptResponse, CallError> {
        self.request::<methods::SessionPrompt>(request).await
    }

    /// `session/cancel` (a notification: the turn ends `idle`, `cancelled`).
    pub async fn cancel(&self, session: &SessionId) {
        self.conn.peer().notify::<methods::SessionCancel>(&CancelSessionNotification::new(session.clone())).await;
    }

    /// `session/close`.
    pub async fn close_session(&self, session: &SessionId) -> Result<CloseSessionResponse, CallError> {
        self.request::<methods::SessionClose>(&CloseSessionRequest::new(session.clone())).await
    }

    /// `session/set_config_option`.
    pub async fn set_config_option(&self, request: &SetSessionConfigOptionRequest) -> Result<SetSessionConfigOptionResponse, CallError> {
        self.request::<methods::SessionSetConfigOption>(request).await
    }

    /// Closes the agent's input once what is queued is written.
    pub async fn close(&self) {
        self.input.close().await;
    }
}
