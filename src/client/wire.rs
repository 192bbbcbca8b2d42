//! A host of kimi-cli's wire dialect (JSON-RPC 2.0): typed requests to the agent, its `event`
//! stream, and its `request`s to us answered through a [`WireHostHandler`] with defaults.
//!
//! On the same JSON-RPC runtime as [`super::AcpClient`]: the agent's lines go through the one
//! serve loop with the client side's rules ([`WireClientSide`]), our requests through its peer.
//!
//! **Defaults** (fail closed): an `ApprovalRequest` is answered `reject`, a `QuestionRequest`
//! with no answers (dismissed), an external `ToolCallRequest` and a `HookRequest` are refused
//! (-32601): a client that offers no external tools and no hooks in `initialize` is not asked.

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc;

use super::call::{settle, CallError};
use super::inbox::Notifications;
use super::input::{spawn_closable_writer, InputCloser, OUTBOUND_BUDGET};
use super::rpc::MAX_AGENT_LINE_BYTES;
use crate::jsonrpc::{Answer, Connection, Dispatch, Error, Policy, Responder, Service, Side, Words};
use crate::protocol::{
    WireAgentRequest, WireAgentRequestParams, WireApprovalDecision, WireApprovalRequestPayload, WireApprovalResult, WireEvent, WireEventNotification, WireHookRequestPayload,
    WireHookResult, WireId, WireInitializeParams, WireInitializeRequest, WireInitializeResult, WireMethod, WireQuestionRequestPayload, WireQuestionResult, WireToolCallRequestPayload,
    WireToolCallResult,
};
use crate::transport::Outbox;

/// The client side of kimi's wire: it answers the agent's `request` frames and reads its
/// `event` notifications. kimi writes `"jsonrpc"` but accepts it missing; a `null` id is no
/// request; our error answers carry `data: null`, as kimi's do.
#[derive(Debug)]
pub enum WireClientSide {}

impl Side for WireClientSide {
    type Request = WireAgentRequestParams;
    type Notification = WireEvent;
    const POLICY: Policy = Policy { jsonrpc_required: false, null_id_is_request: false, parse_error_echoes_id: true, null_data: true, words: Words::PLAIN };

    fn request(method: &str, frame: Value) -> Result<WireAgentRequestParams, Error> {
        if method != "request" {
            return Err(Error::method_not_found(format!("Method not found: {method} (a wire client answers only `request`)")));
        }
        crate::protocol::decode::from_value::<WireAgentRequest>(frame).map(|r| r.params).map_err(|e| Error::invalid_params(format!("Invalid parameters for method `request`: {e}")))
    }

    fn notification(method: &str, frame: Value) -> Result<WireEvent, crate::jsonrpc::IgnoredNotification> {
        if method != "event" {
            return Err(crate::jsonrpc::IgnoredNotification::Unknown);
        }
        Ok(crate::protocol::decode::from_value::<WireEventNotification>(frame)?.params)
    }
}

/// What the host does when the agent asks. Every method has a default (see the module docs).
pub trait WireHostHandler: Send + Sync + 'static {
    /// A tool call to approve; by default rejected (nobody was asked).
    fn approval(&self, request: WireApprovalRequestPayload) -> impl Future<Output = Result<WireApprovalResult, Error>> + Send {
        async move { Ok(WireApprovalResult { request_id: request.id, response: WireApprovalDecision::Reject, feedback: None }) }
    }

    /// Questions for the user; by default dismissed (no answers).
    fn question(&self, request: WireQuestionRequestPayload) -> impl Future<Output = Result<WireQuestionResult, Error>> + Send {
        async move { Ok(WireQuestionResult { request_id: request.id, answers: Default::default() }) }
    }

    /// An external tool call; by default refused (declare `external_tools` to be asked).
    fn tool_call(&self, request: WireToolCallRequestPayload) -> impl Future<Output = Result<WireToolCallResult, Error>> + Send {
        async move { Err(Error::method_not_found(format!("external tool `{}` is not offered by this client", request.name))) }
    }

    /// A hook's question; by default refused (declare `hooks` to be asked).
    fn hook(&self, request: WireHookRequestPayload) -> impl Future<Output = Result<WireHookResult, Error>> + Send {
        async move { Err(Error::method_not_found(format!("hook `{}` is not offered by this client", request.subscription_id))) }
    }
}

/// The handler that answers nothing itself: every default of [`WireHostHandler`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoWireHost;

impl WireHostHandler for NoWireHost {}

/// The serve loop's service: the host's handler answering the agent's requests.
struct Host<H> {
    conn: Arc<Connection>,
    handler: H,
    events: mpsc::UnboundedSender<WireEvent>,
}

impl<H: WireHostHandler> Dispatch<WireAgentRequestParams> for Host<H> {
    async fn dispatch(&self, request: WireAgentRequestParams, responder: Responder) -> Answer {
        match request {
            WireAgentRequestParams::ApprovalRequest(r) => responder.answer(self.handler.approval(r.payload).await),
            WireAgentRequestParams::QuestionRequest(r) => responder.answer(self.handler.question(r.payload).await),
            WireAgentRequestParams::ToolCallRequest(r) => responder.answer(self.handler.tool_call(r.payload).await),
            WireAgentRequestParams::HookRequest(r) => responder.answer(self.handler.hook(r.payload).await),
        }
    }
}

impl<H: WireHostHandler> Service for Host<H> {
    type Side = WireClientSide;

    fn connection(&self) -> &Connection {
        &self.conn
    }

    fn notified(&self, event: WireEvent) {
        let _ = self.events.send(event);
    }
}

/// Why a request to the wire agent got no result, or not the one asked for.
pub type WireClientError = CallError;

/// The agent's events, in the order it sent them; ends when its output ends. Every event of a
/// prompt is here before that prompt's answer is returned.
pub type WireEvents = Notifications<WireEvent>;

/// A connection to an agent speaking kimi's wire dialect. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WireClient {
    conn: Arc<Connection>,
    input: InputCloser,
}

impl WireClient {
    /// Connects to an agent reading `input` (its stdout) and writing `output` (its stdin).
    /// Send [`WireClient::initialize`] first.
    pub fn connect<R, W, H>(input: R, output: W, handler: H) -> (Self, WireEvents)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        H: WireHostHandler,
    {
        let (out, closer) = spawn_closable_writer(output, OUTBOUND_BUDGET);
        Self::over(input, out, closer, handler)
    }

    /// Connects over a reader and an input already in use (after dialect detection, which
    /// sent `initialize`).
    pub fn over<R, H>(input: R, out: Outbox, closer: InputCloser, handler: H) -> (Self, WireEvents)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        H: WireHostHandler,
    {
        let conn = Arc::new(Connection::new(out));
        let (tx, notifications) = Notifications::channel();
        let host = Host { conn: conn.clone(), handler, events: tx };
        tokio::spawn(async move { crate::jsonrpc::serve(&host, input, MAX_AGENT_LINE_BYTES).await });
        (Self { conn, input: closer }, notifications)
    }

    /// Sends `request` (a generated wire request frame; its id is set here) and waits for its
    /// typed result.
    pub async fn request<R>(&self, request: &R) -> Result<R::Result, WireClientError>
    where
        R: WireMethod + Serialize,
        R::Result: DeserializeOwned,
    {
        let data = |source| WireClientError::Data { method: R::METHOD, source };
        let mut frame = serde_json::to_value(request).map_err(data)?;
        let id = Value::String(format!("agentwire-{}", uuid::Uuid::new_v4()));
        if let Value::Object(map) = &mut frame {
            map.insert("id".to_owned(), id.clone());
        }
        settle(R::METHOD, self.conn.peer().send(id, &frame).await.wait(None, None).await)
    }

    /// `initialize`.
    pub async fn initialize(&self, params: WireInitializeParams) -> Result<WireInitializeResult, WireClientError> {
        let mut request = WireInitializeRequest::new(params);
        request.id = Some(WireId::String(String::new()));
        self.request(&request).await
    }

    /// Closes the agent's input once what is queued is written (it sees EOF).
    pub async fn close(&self) {
        self.input.close().await;
    }

    /// Whether the agent's output has ended.
    pub fn is_closed(&self) -> bool {
        self.conn.peer().is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{WirePromptParams, WirePromptRequest, WirePromptResultStatus, WireUserInput};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[tokio::test]
    async fn requests_are_typed_events_stream_and_approvals_default_to_reject() {
        let (ours, theirs_in) = tokio::io::duplex(1 << 16);
        let (mut theirs_out, ours_out) = tokio::io::duplex(1 << 16);
        let (client, mut events) = WireClient::connect(BufReader::new(ours_out), ours, NoWireHost);
        let mut lines = BufReader::new(theirs_in).lines();
        let mut read = async move || -> Value { serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap() };
        let prompt = tokio::spawn({
            let client = client.clone();
            async move { client.request(&WirePromptRequest::new(WirePromptParams { user_input: WireUserInput::String("hi".into()) })).await }
        });
        let frame = read().await;
        assert_eq!((&frame["method"], &frame["params"]["user_input"]), (&Value::from("prompt"), &Value::from("hi")), "{frame}");
        let event = r#"{"jsonrpc":"2.0","method":"event","params":{"type":"ContentPart","payload":{"type":"text","text":"hello"}}}"#;
        let approval = r#"{"jsonrpc":"2.0","method":"request","id":"a1","params":{"type":"ApprovalRequest","payload":{"id":"a1","tool_call_id":"t","sender":"bash","action":"run","description":"ls","display":[]}}}"#;
        theirs_out.write_all(format!("{event}\n{approval}\n").as_bytes()).await.unwrap();
        let answer = read().await;
        assert_eq!((&answer["id"], &answer["result"]["response"]), (&Value::from("a1"), &Value::from("reject")), "{answer}");
        let done = serde_json::json!({"jsonrpc":"2.0","id":frame["id"],"result":{"status":"finished"}});
        theirs_out.write_all(format!("{done}\n").as_bytes()).await.unwrap();
        assert_eq!(prompt.await.unwrap().unwrap().status, WirePromptResultStatus::Finished);
        assert!(matches!(events.try_next(), Some(WireEvent::ContentPart(_))), "the event came before the answer");
        theirs_out.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"request\",\"id\":\"q\",\"params\":{\"type\":\"Nope\"}}\n").await.unwrap();
        let refused = read().await;
        assert_eq!((&refused["id"], &refused["error"]["code"]), (&Value::from("q"), &Value::from(-32602)), "{refused}");
        drop(theirs_out);
        assert!(events.next().await.is_none());
        assert!(matches!(client.initialize(WireInitializeParams { protocol_version: "1.10".into(), client: None, external_tools: None, hooks: None, capabilities: None, extra: Default::default() }).await, Err(WireClientError::Closed { .. })));
    }
}
