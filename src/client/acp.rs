//! A host of ACP (the Agent Client Protocol): typed requests to the agent, its `session/update`
//! stream, and its requests to us answered through the generated [`AcpClientHandler`].
//!
//! It stands on the same JSON-RPC runtime as agentwire's own ACP server ([`crate::jsonrpc`]):
//! the agent's lines are read by the one serve loop ([`crate::jsonrpc::serve`]) with the client
//! side's decoding rules ([`AcpClientSide`]), our requests go through its [`crate::jsonrpc::Peer`]
//! (ids, correlation, settling once). Same shape as [`super::RpcClient`]: connect over any
//! `AsyncRead`/`AsyncWrite` or an [`super::AgentProcess`]'s pipes, and get the client and the
//! stream of the agent's updates.
//!
//! **What the handler answers by default** (the generated trait's defaults): a permission is
//! answered `cancelled` (nobody was asked, so nothing is allowed), `fs/*` and `terminal/*` are
//! refused with -32601. The default [`InitializeRequest`] advertises neither file system nor
//! terminal, so an agent that reads `clientCapabilities` never asks; a host that implements them
//! advertises them in the `initialize` it sends.
//!
//! **What the agent did not offer is not asked.** `session/load`, `session/list`,
//! `session/resume`, `session/close` and `session/delete` are refused here, without a frame,
//! with [`AcpClientError::NotOffered`] when the agent's `initialize` answer leaves the
//! capability out.

use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc;

use super::call::{settle, CallError};
use super::inbox::Notifications;
use super::input::{spawn_closable_writer, InputCloser, OUTBOUND_BUDGET};
use super::rpc::MAX_AGENT_LINE_BYTES;
use crate::jsonrpc::{Connection, Dispatch, Request, Responder, Service, Side};
use crate::jsonrpc::dispatch::acp::dispatch_acp_client_request;
use crate::protocol::acp::{
    methods, AcpClientHandler, AcpClientRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, ResumeSessionRequest, ResumeSessionResponse, SessionNotification,
};
use crate::transport::Outbox;

/// The client side of ACP: it answers the agent's [`AcpClientRequest`]s and acts on its
/// [`AcpClientNotification`]s (the mirror of the agent side's `dialect::acp::AcpAgentSide`).
#[derive(Debug)]
pub enum AcpClientSide {}

/// Why a request to the ACP agent got no result, or not the one asked for.
pub type AcpClientError = CallError;

/// The agent's `session/update` notifications, in the order it sent them; ends when its
/// output ends. Every update of a prompt is here before that prompt's answer is returned.
pub type AcpUpdates = Notifications<SessionNotification>;

/// What one ACP version's host side is made of: the side that reads the agent's frames, the
/// updates it sends, and the methods both versions have (each version's generated types).
/// v1 and v2 hosts are [`Client`] of their version ([`AcpClient`], [`super::AcpV2Client`]).
pub trait ClientVersion: Send + Sync + 'static {
    /// The decoding of the agent's frames.
    type Side: Side<Notification = Self::Notification>;
    /// The agent's notifications.
    type Notification;
    /// Its `session/update` notification.
    type Update: Send + 'static;
    /// `initialize`.
    type Initialize: Request<Result: Clone + DeserializeOwned + Send + 'static, Params: Serialize + Sync>;
    /// `session/new`.
    type SessionNew: Request<Result: DeserializeOwned, Params: Serialize + Sync>;
    /// `session/prompt`.
    type SessionPrompt: Request<Result: DeserializeOwned, Params: Serialize + Sync>;
    /// `session/set_config_option`.
    type SessionSetConfigOption: Request<Result: DeserializeOwned, Params: Serialize + Sync>;
    /// `session/cancel`.
    type SessionCancel: crate::jsonrpc::Notification<Params: Serialize + Sync>;
    /// A session's id.
    type SessionId: Clone + Sync;
    /// The update a notification carries.
    fn update(notification: Self::Notification) -> Self::Update;
    /// `session/cancel`'s params for `session`.
    fn cancel(session: Self::SessionId) -> <Self::SessionCancel as crate::jsonrpc::Notification>::Params;
}

/// Implements [`ClientVersion`] for `$version` from the generated module `$p` (both versions'
/// modules name their methods alike), and the decoding of the agent's frames (`$side`) with the
/// version's schema (`$validator`).
macro_rules! client_version {
    ($version:ty, $p:ident, $validator:ident, $side:ty, $update:ident, $cancel:ident) => {
        impl $crate::jsonrpc::Side for $side {
            type Request = $crate::protocol::$p::AcpClientRequest;
            type Notification = $crate::protocol::$p::AcpClientNotification;
            const POLICY: $crate::jsonrpc::Policy = $crate::jsonrpc::Policy::STRICT;

            fn request(method: &str, frame: serde_json::Value) -> Result<Self::Request, $crate::jsonrpc::Error> {
                $crate::protocol::$p::AcpReader::Client.request_in($crate::protocol::$p::$validator(), method, frame, Self::Request::from_params)
            }

            fn notification(method: &str, frame: serde_json::Value) -> Result<Self::Notification, $crate::jsonrpc::IgnoredNotification> {
                $crate::protocol::$p::AcpReader::Client.notification_in($crate::protocol::$p::$validator(), method, frame, Self::Notification::from_params)
            }
        }

        impl $crate::client::acp::ClientVersion for $version {
            type Side = $side;
            type Notification = $crate::protocol::$p::AcpClientNotification;
            type Update = $crate::protocol::$p::$update;
            type Initialize = $crate::protocol::$p::methods::Initialize;
            type SessionNew = $crate::protocol::$p::methods::SessionNew;
            type SessionPrompt = $crate::protocol::$p::methods::SessionPrompt;
            type SessionSetConfigOption = $crate::protocol::$p::methods::SessionSetConfigOption;
            type SessionCancel = $crate::protocol::$p::methods::SessionCancel;
            type SessionId = $crate::protocol::$p::SessionId;

            fn update(notification: Self::Notification) -> Self::Update {
                match notification {
                    $crate::protocol::$p::AcpClientNotification::SessionUpdate(update) => update,
                }
            }

            fn cancel(session: Self::SessionId) -> $crate::protocol::$p::$cancel {
                $crate::protocol::$p::$cancel::new(session)
            }
        }
    };
}
pub(super) use client_version;

/// ACP v1 on the host side.
#[derive(Debug)]
pub enum V1 {}

client_version!(V1, acp, acp_validator, AcpClientSide, SessionNotification, CancelNotification);

/// The serve loop's service of a [`Client`]: the host's handler answering the agent's requests.
pub struct Host<V: ClientVersion, H> {
    conn: Arc<Connection>,
    pub(super) handler: H,
    updates: mpsc::UnboundedSender<V::Update>,
}

impl<H: AcpClientHandler> Dispatch<AcpClientRequest> for Host<V1, H> {
    fn dispatch(&self, request: AcpClientRequest, responder: Responder) -> impl std::future::Future<Output = crate::jsonrpc::Answer> + Send + '_ {
        dispatch_acp_client_request(&self.handler, request, responder)
    }
}

impl<V: ClientVersion, H: Send + Sync> Service for Host<V, H>
where
    Self: Dispatch<<V::Side as Side>::Request>,
{
    type Side = V::Side;

    fn connection(&self) -> &Connection {
        &self.conn
    }

    fn notified(&self, notification: V::Notification) {
        let _ = self.updates.send(V::update(notification));
    }
}

/// The handler that answers nothing itself: every default of [`AcpClientHandler`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAcpHost;

impl AcpClientHandler for NoAcpHost {}

/// A connection to an agent speaking ACP version `V`. Cheap to clone.
pub struct Client<V: ClientVersion> {
    conn: Arc<Connection>,
    input: InputCloser,
    agent: Arc<Mutex<Option<<V::Initialize as Request>::Result>>>,
}

impl<V: ClientVersion> Clone for Client<V> {
    fn clone(&self) -> Self {
        Self { conn: self.conn.clone(), input: self.input.clone(), agent: self.agent.clone() }
    }
}

impl<V: ClientVersion> std::fmt::Debug for Client<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpClient").field("conn", &self.conn).field("input", &self.input).finish_non_exhaustive()
    }
}

/// A connection to an agent speaking ACP (v1).
pub type AcpClient = Client<V1>;

impl AcpClient {
    /// Connects to an agent reading `input` (its stdout) and writing `output` (its stdin).
    /// Send [`AcpClient::initialize`] first.
    pub fn connect<R, W, H>(input: R, output: W, handler: H) -> (Self, AcpUpdates)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        H: AcpClientHandler + 'static,
    {
        let (out, closer) = spawn_closable_writer(output, OUTBOUND_BUDGET);
        Self::over(input, out, closer, handler, None)
    }
}

impl<V: ClientVersion> Client<V> {
    /// Connects over a reader (the agent's stdout) and an input already in use (`out`, closed
    /// by `closer`); `initialized` is the agent's `initialize` answer when it was sent already
    /// (dialect detection sends it), else send [`Client::initialize`] first.
    pub fn over<R, H>(input: R, out: Outbox, closer: InputCloser, handler: H, initialized: Option<<V::Initialize as Request>::Result>) -> (Self, Notifications<V::Update>)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        H: Send + Sync + 'static,
        Host<V, H>: Service,
    {
        let conn = Arc::new(Connection::new(out));
        let (tx, notifications) = Notifications::channel();
        let host = Host { conn: conn.clone(), handler, updates: tx };
        tokio::spawn(async move {
            // Returns once the agent's output ended and every request of its was answered;
            // our requests still waiting settle `InputEnded` (the peer is closed).
            crate::jsonrpc::serve(&host, input, MAX_AGENT_LINE_BYTES).await;
        });
        (Self { conn, input: closer, agent: Arc::new(Mutex::new(initialized)) }, notifications)
    }

    /// Sends the request `M` and waits for its typed result.
    pub async fn request<M>(&self, params: &M::Params) -> Result<M::Result, AcpClientError>
    where
        M: Request,
        M::Params: Serialize,
        M::Result: DeserializeOwned,
    {
        let pending = self.conn.peer().request::<M>(params).await;
        settle(M::METHOD, pending.wait(None, None).await)
    }

    /// `initialize`; the answer is kept to check what the agent offers.
    pub async fn initialize(&self, request: &<V::Initialize as Request>::Params) -> Result<<V::Initialize as Request>::Result, AcpClientError> {
        let answer = self.request::<V::Initialize>(request).await?;
        *self.agent.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer.clone());
        Ok(answer)
    }

    /// The agent's `initialize` answer, once it gave one.
    pub fn agent(&self) -> Option<<V::Initialize as Request>::Result> {
        self.agent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `session/new`.
    pub async fn new_session(&self, request: &<V::SessionNew as Request>::Params) -> Result<<V::SessionNew as Request>::Result, AcpClientError> {
        self.request::<V::SessionNew>(request).await
    }

    /// `session/prompt`: in v1 it resolves when the prompt ends (its updates are on the update
    /// stream first); in v2 once the user message is inserted (its id), the turn going on on the
    /// update stream.
    pub async fn prompt(&self, request: &<V::SessionPrompt as Request>::Params) -> Result<<V::SessionPrompt as Request>::Result, AcpClientError> {
        self.request::<V::SessionPrompt>(request).await
    }

    /// `session/cancel` (a notification: the running prompt answers `cancelled`; a v2 turn
    /// ends `idle`, `cancelled`).
    pub async fn cancel(&self, session: &V::SessionId) {
        self.conn.peer().notify::<V::SessionCancel>(&V::cancel(session.clone())).await;
    }

    /// `session/set_config_option`.
    pub async fn set_config_option(&self, request: &<V::SessionSetConfigOption as Request>::Params) -> Result<<V::SessionSetConfigOption as Request>::Result, AcpClientError> {
        self.request::<V::SessionSetConfigOption>(request).await
    }

    /// Closes the agent's input once what is queued is written (it sees EOF); answers still
    /// arrive, requests sent afterwards are lost.
    pub async fn close(&self) {
        self.input.close().await;
    }

    /// Whether the agent's output has ended (nothing can be answered any more).
    pub fn is_closed(&self) -> bool {
        self.conn.peer().is_closed()
    }

    /// How many of our requests wait for the agent's answer.
    pub fn in_flight(&self) -> usize {
        self.conn.peer().in_flight()
    }
}

impl AcpClient {
    /// `session/load`, when the agent offers `loadSession`.
    pub async fn load_session(&self, request: &LoadSessionRequest) -> Result<LoadSessionResponse, AcpClientError> {
        self.offered(methods::SessionLoad::METHOD, "agentCapabilities.loadSession", |a| a.agent_capabilities.load_session)?;
        self.request::<methods::SessionLoad>(request).await
    }

    /// `session/list`, when the agent offers `sessionCapabilities.list`.
    pub async fn list_sessions(&self, request: &ListSessionsRequest) -> Result<ListSessionsResponse, AcpClientError> {
        self.offered(methods::SessionList::METHOD, "agentCapabilities.sessionCapabilities.list", |a| a.agent_capabilities.session_capabilities.list.is_some())?;
        self.request::<methods::SessionList>(request).await
    }

    /// `session/resume`, when the agent offers `sessionCapabilities.resume`.
    pub async fn resume_session(&self, request: &ResumeSessionRequest) -> Result<ResumeSessionResponse, AcpClientError> {
        self.offered(methods::SessionResume::METHOD, "agentCapabilities.sessionCapabilities.resume", |a| a.agent_capabilities.session_capabilities.resume.is_some())?;
        self.request::<methods::SessionResume>(request).await
    }

    fn offered(&self, method: &'static str, capability: &'static str, has: impl FnOnce(&InitializeResponse) -> bool) -> Result<(), AcpClientError> {
        match &*self.agent.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(agent) if has(agent) => Ok(()),
            Some(_) | None => Err(AcpClientError::NotOffered { method, capability }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::acp::{
        ContentBlock, InitializeRequest, NewSessionRequest, PermissionOption, PermissionOptionId, PermissionOptionKind, PromptRequest, ProtocolVersion, ReadTextFileRequest, RequestPermissionOutcome, SessionId,
        RequestPermissionRequest, RequestPermissionResponse, StopReason, ToolCallId, ToolCallUpdate,
    };
    use crate::jsonrpc::Error;
    use serde_json::Value;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A scripted agent on the other end of two pipes: reads our lines, writes its own.
    struct Agent {
        lines: tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
        out: tokio::io::DuplexStream,
    }

    impl Agent {
        async fn read(&mut self) -> Value {
            let line = tokio::time::timeout(std::time::Duration::from_secs(10), self.lines.next_line()).await.expect("a frame in time").unwrap().expect("a line");
            serde_json::from_str(&line).unwrap()
        }
        async fn write(&mut self, frame: Value) {
            self.out.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
        }
    }

    fn pair<H: AcpClientHandler + 'static>(handler: H) -> (AcpClient, AcpUpdates, Agent) {
        let (ours, theirs_in) = tokio::io::duplex(1 << 16);
        let (theirs_out, ours_out) = tokio::io::duplex(1 << 16);
        let (client, updates) = AcpClient::connect(BufReader::new(ours_out), ours, handler);
        (client, updates, Agent { lines: BufReader::new(theirs_in).lines(), out: theirs_out })
    }

    #[tokio::test]
    async fn requests_are_typed_and_updates_arrive_before_the_answer() {
        let (client, mut updates, mut agent) = pair(NoAcpHost);
        let init = tokio::spawn({
            let client = client.clone();
            async move { client.initialize(&InitializeRequest::new(ProtocolVersion(1))).await }
        });
        let frame = agent.read().await;
        assert_eq!(frame["method"], "initialize");
        assert_eq!(frame["params"]["clientCapabilities"]["fs"]["readTextFile"], false, "fs advertised absent: {frame}");
        agent.write(serde_json::json!({"jsonrpc":"2.0","id":frame["id"],"result":{"protocolVersion":1,"agentCapabilities":{}}})).await;
        assert_eq!(init.await.unwrap().unwrap().protocol_version, ProtocolVersion(1));
        // Not offered: refused without a frame.
        let err = client.load_session(&LoadSessionRequest::new("/", Vec::new(), SessionId("s".into()))).await.unwrap_err();
        assert!(matches!(err, AcpClientError::NotOffered { capability: "agentCapabilities.loadSession", .. }), "{err}");

        let prompt = tokio::spawn({
            let client = client.clone();
            async move { client.prompt(&PromptRequest::new(vec![ContentBlock::Text { annotations: None, meta: None, text: "hi".into() }], SessionId("s".into()))).await }
        });
        let frame = agent.read().await;
        assert_eq!(frame["method"], "session/prompt");
        agent.write(serde_json::json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}})).await;
        agent.write(serde_json::json!({"jsonrpc":"2.0","id":frame["id"],"result":{"stopReason":"end_turn"}})).await;
        assert_eq!(prompt.await.unwrap().unwrap().stop_reason, StopReason::EndTurn);
        let update = updates.try_next().expect("the update came before the answer");
        assert_eq!(update.session_id.0, "s");

        let rejected = tokio::spawn({
            let client = client.clone();
            async move { client.new_session(&NewSessionRequest::new("/", Vec::new())).await }
        });
        let frame = agent.read().await;
        agent.write(serde_json::json!({"jsonrpc":"2.0","id":frame["id"],"error":{"code":-32603,"message":"no"}})).await;
        assert!(matches!(rejected.await.unwrap(), Err(AcpClientError::Rejected { method: "session/new", .. })));

        // The agent's output ends: a request waiting settles `Closed`.
        let waiting = tokio::spawn({
            let client = client.clone();
            async move { client.new_session(&NewSessionRequest::new("/", Vec::new())).await }
        });
        let _ = agent.read().await;
        drop(agent);
        assert!(matches!(waiting.await.unwrap(), Err(AcpClientError::Closed { .. })));
        assert!(updates.next().await.is_none(), "the stream ends with the agent's output");
    }

    /// Allows everything it is asked.
    struct Allow;

    impl AcpClientHandler for Allow {
        async fn session_request_permission(&self, request: RequestPermissionRequest) -> Result<RequestPermissionResponse, Error> {
            let id = request.options[0].option_id.clone();
            Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Selected { option_id: id, meta: None }))
        }
    }

    fn permission(id: i64) -> Value {
        let request = RequestPermissionRequest::new(
            vec![PermissionOption::new(PermissionOptionKind::AllowOnce, "Allow", PermissionOptionId("a".into()))],
            SessionId("s".into()),
            ToolCallUpdate::new(ToolCallId("t".into())),
        );
        serde_json::json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":request})
    }

    #[tokio::test]
    async fn the_agents_requests_go_to_the_handler_with_defaults() {
        let (_client, _updates, mut agent) = pair(NoAcpHost);
        agent.write(permission(1)).await;
        let answer = agent.read().await;
        assert_eq!((answer["id"].clone(), answer["result"]["outcome"]["outcome"].clone()), (Value::from(1), Value::from("cancelled")), "{answer}");
        let read = ReadTextFileRequest::new("/etc/hostname", SessionId("s".into()));
        agent.write(serde_json::json!({"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":read})).await;
        let answer = agent.read().await;
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("fs/read_text_file is not offered"), "{answer}");
        agent.write(serde_json::json!({"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{}})).await;
        assert_eq!(agent.read().await["error"]["code"], -32602, "params checked against the schema");
        agent.write(serde_json::json!({"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{}})).await;
        assert_eq!(agent.read().await["error"]["code"], -32601, "not a request a client answers");

        let (_client, _updates, mut agent) = pair(Allow);
        agent.write(permission(9)).await;
        let answer = agent.read().await;
        assert_eq!(answer["result"]["outcome"], serde_json::json!({"outcome":"selected","optionId":"a"}), "{answer}");
    }
}
