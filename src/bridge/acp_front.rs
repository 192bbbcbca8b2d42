//! What every ACP front of the bridge shares, whatever the agent behind it speaks: the
//! `initialize` answer (no session loading, listing or resuming, text prompts only), the
//! refusals of what no such agent carries, and the routing of cancels. A front implements
//! [`AcpFront`] (its sessions, prompts and cancel); the ACP handler and the serve loop's
//! service come from here.

use std::future::Future;

use tokio_util::sync::CancellationToken;


use crate::dialect::acp::serve::route_notification;
use crate::dialect::acp::AcpAgentSide;
use crate::jsonrpc::{Connection, Error, Service};
use crate::protocol::acp::{
    AcpAgentHandler, AcpAgentNotification, AuthenticateRequest, AuthenticateResponse, CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse, Implementation,
    ContentBlock, InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, LogoutRequest, LogoutResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, ProtocolVersion, ResumeSessionRequest, ResumeSessionResponse, SessionId, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};

/// An ACP server in front of an agent of another dialect.
pub trait AcpFront: Send + Sync {
    /// The agent's dialect as the errors name it ("the pi/omp JSONL dialect").
    const AGENT: &'static str;
    /// The bridge's title in `initialize` ("agentwire bridge (pi/omp JSONL agent)").
    const TITLE: &'static str;

    /// The host's connection.
    fn conn(&self) -> &Connection;

    /// `session/new`.
    fn open_session(&self, params: NewSessionRequest) -> impl Future<Output = Result<NewSessionResponse, Error>> + Send;

    /// Whether `session` is the live session (else the error saying why not).
    fn live(&self, session: &SessionId) -> Result<(), Error>;

    /// `session/prompt` in the live session, its `text` read: `cancelled` fires when the host
    /// withdraws it with `$/cancel_request` (then the agent's run is cancelled as by
    /// `session/cancel`, and the prompt still gets exactly one answer).
    fn prompt(&self, text: String, cancelled: CancellationToken) -> impl Future<Output = Result<PromptResponse, Error>> + Send;

    /// `session/cancel` for `session`: the running prompt ends `cancelled`.
    fn cancel(&self, session: &SessionId);

    /// The host's input ended: the agent's input closes, so its prompts end when it does.
    fn close_agent(&self);
}

/// What a new prompt waits for before it starts, decided from the front's state under the lock
/// that guards it (so that a prompt's end between the check and the wait is not missed).
pub(super) enum PromptWait<'a> {
    /// No prompt runs: start now.
    Now,
    /// The running prompt was cancelled (a prompt right behind `session/cancel`, an editor's
    /// "interrupt and send"): start once it ends, woken by the front's notify.
    AfterCancelled(tokio::sync::futures::Notified<'a>),
    /// A prompt runs and nobody cancelled it: refused as busy.
    Busy,
}

impl<'a> PromptWait<'a> {
    /// The wait for a front where a prompt is `running` and was `cancelled`; `ended` is woken
    /// whenever a prompt ends.
    pub(super) fn of(running: bool, cancelled: bool, ended: &'a tokio::sync::Notify) -> Self {
        match (running, cancelled) {
            (false, _) => Self::Now,
            (true, true) => Self::AfterCancelled(ended.notified()),
            (true, false) => Self::Busy,
        }
    }

    /// Waits (a cancelled prompt's end up to [`crate::dialect::acp::CANCEL_WIND_DOWN`], the
    /// limit of agentwire's own ACP mode); whether the new prompt may start.
    pub(super) async fn ready(self) -> bool {
        match self {
            Self::Now => true,
            Self::AfterCancelled(ended) => tokio::time::timeout(crate::dialect::acp::CANCEL_WIND_DOWN, ended).await.is_ok(),
            Self::Busy => false,
        }
    }
}

/// A prompt's text (resource links as their URI): the bridge advertises text prompts only
/// (`promptCapabilities` all false), so images, audio and embedded resources are refused.
fn prompt_text(prompt: &[ContentBlock]) -> Result<String, Error> {
    let mut text = String::new();
    for block in prompt {
        match block {
            ContentBlock::Text { text: t, .. } => text.push_str(t),
            ContentBlock::ResourceLink { uri, .. } => text.push_str(uri),
            ContentBlock::Image { .. } | ContentBlock::Audio { .. } | ContentBlock::Resource { .. } => {
                return Err(Error::invalid_params("The bridge carries text prompts only (promptCapabilities): images, audio and embedded resources are not offered to the agent behind it"));
            }
        }
    }
    Ok(text)
}

/// `method`, which the agent behind `F` has no request for.
fn refused<F: AcpFront>(method: &str) -> Error {
    Error::method_not_found(format!("{method} is not available: the agent behind this bridge speaks {}, which has no such request", F::AGENT))
}

impl<F: AcpFront> AcpAgentHandler for F {
    async fn initialize(&self, _params: InitializeRequest) -> Result<InitializeResponse, Error> {
        // The default capabilities are what the bridge carries: no session loading, listing
        // or resuming, text prompts only.
        Ok(InitializeResponse::new(ProtocolVersion(1)).with_agent_info(Implementation::new("agentwire-bridge", env!("CARGO_PKG_VERSION")).with_title(F::TITLE.to_owned())))
    }

    async fn session_new(&self, params: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        // Neither agent dialect behind the bridge takes a working directory or MCP servers
        // per session: the agent runs where it was started, with its own MCP configuration.
        if !params.mcp_servers.is_empty() {
            tracing::warn!("session/new: {} MCP server(s) not connected: the agent behind this bridge speaks {}, which cannot be handed MCP servers", params.mcp_servers.len(), F::AGENT);
        }
        self.open_session(params).await
    }

    async fn session_prompt(&self, params: PromptRequest) -> Result<PromptResponse, Error> {
        // The handler ends itself on `$/cancel_request` (instead of being dropped while the
        // agent goes on).
        let cancelled = crate::jsonrpc::claim_cancellation();
        self.live(&params.session_id)?;
        let text = prompt_text(&params.prompt)?;
        self.prompt(text, cancelled).await
    }

    async fn session_load(&self, _params: LoadSessionRequest) -> Result<LoadSessionResponse, Error> {
        Err(refused::<F>("session/load"))
    }

    async fn session_list(&self, _params: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        Err(refused::<F>("session/list"))
    }

    async fn session_resume(&self, _params: ResumeSessionRequest) -> Result<ResumeSessionResponse, Error> {
        Err(refused::<F>("session/resume"))
    }

    async fn logout(&self, _params: LogoutRequest) -> Result<LogoutResponse, Error> {
        Err(refused::<F>("logout"))
    }

    async fn session_close(&self, _params: CloseSessionRequest) -> Result<CloseSessionResponse, Error> {
        Err(refused::<F>("session/close"))
    }

    async fn session_delete(&self, _params: DeleteSessionRequest) -> Result<DeleteSessionResponse, Error> {
        Err(refused::<F>("session/delete"))
    }

    async fn session_set_mode(&self, _params: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        Err(Error::invalid_params(format!("The bridge offers no session modes (none of {} is mapped to one)", F::AGENT)))
    }

    async fn session_set_config_option(&self, _params: SetSessionConfigOptionRequest) -> Result<SetSessionConfigOptionResponse, Error> {
        Err(Error::invalid_params(format!("The bridge offers no config options (none of {} is mapped to one)", F::AGENT)).at("/configId", "no config options are offered"))
    }

    async fn authenticate(&self, params: AuthenticateRequest) -> Result<AuthenticateResponse, Error> {
        Err(Error::invalid_params(format!("Unknown authentication method {:?}: the bridge advertises none (the agent behind it reads its own keys)", params.method_id))
            .at("/methodId", "not an advertised authentication method"))
    }
}

impl<F: AcpFront> Service for F {
    type Side = AcpAgentSide;

    fn connection(&self) -> &Connection {
        self.conn()
    }

    fn notified(&self, notification: AcpAgentNotification) {
        route_notification(self.conn(), notification, |session| self.cancel(session));
    }

    fn input_ended(&self) {
        self.close_agent();
    }
}
