//! A kimi-wire agent (kimi-cli `--wire`, `agentwire --mode wire`) driven as the core: the
//! remote agent of this dialect ([`crate::dialect::remote`]). `initialize` was sent when the
//! dialect was detected.
//!
//! | core | wire (agent) |
//! |---|---|
//! | prompt | `prompt`; its answer ends the run (`finished`, `cancelled`, `max_steps_reached`) |
//! | cancel | `cancel`; the run ends with the prompt's answer |
//! | steer while running | `steer` |
//! | text / thinking | `ContentPart` `text` / `think` |
//! | tool started / finished | `ToolCall` (with its `ToolCallPart`s) / `ToolResult` |
//! | approval | `ApprovalRequest` (approve, approve for session, reject with feedback) |
//! | questions | `QuestionRequest`, where the host's dialect can ask them; dismissed otherwise |
//!
//! The wire has one session per process and no request for another: a front's second session
//! is refused. External tools and hooks are not offered in `initialize`, so the agent does not
//! ask for them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::core::events::RunOutcome;
use crate::core::model::TokenUsage;
use crate::core::port::{Decision, Question, QuestionAsk, QuestionOption};
use crate::core::{AgentCore, CoreError, CoreResult, Host, QueueKind, Reply, RunControl, Runs, Submitted};
use crate::client::{CallError, InputCloser, WireClient, WireEvents, WireHostHandler};
use crate::dialect::remote::{approve, failed, slash_command, Answer, HostSlot, OpenCall, Owed, WIND_DOWN};
use crate::jsonrpc::Error;
use crate::protocol::{
    nonempty, CommandsResult, ImageContent, ToolCall, WireInitializeResult, WireApprovalDecision, WireApprovalRequestPayload, WireApprovalResult, WireCancelRequest, WireContentPart, WireEvent, WirePromptParams, WirePromptRequest,
    WirePromptResultStatus, WireQuestionRequestPayload, WireQuestionResult, WireSteerRequest, WireUserInput,
};
use crate::transport::Outbox;

/// How long the agent's request waits for its run to forward what came before it.
const CATCH_UP: Duration = Duration::from_secs(1);

const ONE_SESSION: &str = "The wire agent behind this bridge has one session per process, and the wire has no request for another; use the first session";

/// The connection to a wire agent: its one session, for the first front session that prompts.
#[derive(Debug, Clone)]
pub struct WireAgents {
    link: Arc<Link>,
}

#[derive(Debug)]
struct Link {
    client: WireClient,
    /// The agent's events, and the catch-up requests of its own requests; a run holds them.
    events: tokio::sync::Mutex<(WireEvents, mpsc::UnboundedReceiver<oneshot::Sender<()>>)>,
    slot: HostSlot,
    owner: Mutex<Option<u64>>,
    next: AtomicU64,
    /// The answer of a prompt a run ended before it came.
    owed: Owed<Result<crate::protocol::WirePromptResult, CallError>>,
    /// The slash commands the agent listed in `initialize`.
    commands: CommandsResult,
}

impl WireAgents {
    /// Drives the wire agent reading `input` (its stdout, `initialize` already answered) and
    /// writing `out` (its stdin, closed by `closer`).
    pub fn connect<R>(input: R, out: Outbox, closer: InputCloser, initialized: &WireInitializeResult) -> Self
    where
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
    {
        let slot = HostSlot::default();
        let (catch_up, caught) = mpsc::unbounded_channel();
        let (client, events) = WireClient::over(input, out, closer, Requests { slot: slot.clone(), catch_up });
        let commands = initialized.slash_commands.iter().filter_map(|c| slash_command(&c.name, Some(c.description.clone()), c.aliases.clone())).collect();
        let link = Link { client, events: tokio::sync::Mutex::new((events, caught)), slot, owner: Mutex::new(None), next: AtomicU64::new(1), commands: CommandsResult { commands }, owed: Owed::default() };
        Self { link: Arc::new(link) }
    }

    /// A session for a front, reporting to `host`.
    pub fn agent(&self, host: Host) -> WireRemote {
        let me = self.link.next.fetch_add(1, Ordering::Relaxed);
        WireRemote { runs: Runs::new("wire-agent", host), link: self.link.clone(), me }
    }

    /// Closes the agent's input (it finishes what it was asked, then exits).
    pub async fn close(&self) {
        self.link.client.close().await;
    }
}

/// The wire agent has one session: a front's first session is it, a second is refused.
impl crate::core::MakeAgent for WireAgents {
    type Agent = WireRemote;

    fn make(&self, host: Host) -> CoreResult<WireRemote> {
        if self.link.next.load(Ordering::Relaxed) > 1 {
            return Err(CoreError::Unsupported(ONE_SESSION.into()));
        }
        Ok(self.agent(host))
    }
}

/// The wire agent's session, as the core.
#[derive(Debug)]
pub struct WireRemote {
    runs: Runs,
    link: Arc<Link>,
    me: u64,
}

impl WireRemote {
    fn claim(&self) -> CoreResult<()> {
        let mut owner = self.link.owner.lock().unwrap_or_else(|e| e.into_inner());
        match *owner {
            Some(o) if o != self.me => Err(CoreError::Unsupported(ONE_SESSION.into())),
            Some(_) | None => {
                *owner = Some(self.me);
                self.link.slot.set(self.runs.host());
                Ok(())
            }
        }
    }
}

impl WireRemote {
    /// Starts a run of `text`.
    async fn start(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        self.check_input(&images)?;
        self.claim()?;
        let link = self.link.clone();
        let request = WirePromptRequest::new(WirePromptParams { user_input: WireUserInput::String(text.clone()) });
        self.runs.start_cooperative(text, images, None, WIND_DOWN, move |reply| run(link, request, reply)).await
    }

    /// Steers the running turn.
    async fn steer_running(&self, text: String, images: &[ImageContent]) -> CoreResult<Submitted> {
        self.check_input(images)?;
        let request = WireSteerRequest::new(WirePromptParams { user_input: WireUserInput::String(text) });
        self.link.client.request(&request).await.map(|_| Submitted::Queued).map_err(|e| CoreError::Internal(format!("agent: {e}")))
    }
}

impl AgentCore for WireRemote {
    type Control = Runs;

    fn control(&self) -> &Runs {
        &self.runs
    }

    fn commands(&self) -> CommandsResult {
        self.link.commands.clone()
    }

    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        if queue == Some(QueueKind::Steer) && self.runs.is_running() {
            return self.steer_running(text, &images).await;
        }
        self.start(text, images).await
    }

    async fn steer(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        if self.runs.is_running() {
            self.steer_running(text, &images).await
        } else {
            self.start(text, images).await
        }
    }

}

/// One run: the prompt sent, the agent's events streamed until the prompt's answer.
async fn run(link: Arc<Link>, request: WirePromptRequest, reply: Reply) -> RunOutcome {
    let mut guard = link.events.lock().await;
    let (events, catch_ups) = &mut *guard;
    // An earlier run ended here before its prompt was answered: every event of that prompt
    // comes before its answer, so once it is answered what is queued is its, and dropped.
    if !link.owed.settle().await {
        return failed("the agent is still ending the cancelled prompt; try again");
    }
    while events.try_next().is_some() {}
    let run_guard = link.slot.begin_run();
    let client = link.client.clone();
    let answer = Answer::spawn(async move { client.request(&request).await }, &link.owed);
    tokio::pin!(answer);
    let mut open: Option<OpenCall> = None;
    let mut cancel_sent = false;
    let answer = loop {
        tokio::select! {
            biased;
            event = events.next() => match event {
                Some(event) => forward(event, &mut open, &reply).await,
                // The answer says why (the agent is gone).
                None => break answer.await,
            },
            Some(done) = catch_ups.recv() => {
                while let Some(event) = events.try_next() {
                    forward(event, &mut open, &reply).await;
                }
                if let Some(call) = open.take() {
                    call.start(&reply).await;
                }
                let _ = done.send(());
            }
            answer = &mut answer => break answer,
            () = reply.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                run_guard.cancel();
                let client = link.client.clone();
                tokio::spawn(async move {
                    // kimi reads `params` as an object: an empty one, never absent.
                    let cancel = WireCancelRequest::new().with_params(Value::Object(Map::new()));
                    if let Err(e) = client.request(&cancel).await {
                        tracing::warn!("cancel: the agent refused `cancel`: {e}");
                    }
                });
            }
        }
    };
    // Every event of the prompt came before its answer.
    while let Some(event) = events.try_next() {
        forward(event, &mut open, &reply).await;
    }
    if let Some(call) = open.take() {
        call.start(&reply).await;
    }
    match answer.unwrap_or(Err(CallError::Closed { method: "prompt" })) {
        Ok(result) => match result.status {
            WirePromptResultStatus::Finished => RunOutcome::Completed,
            WirePromptResultStatus::Cancelled => RunOutcome::Aborted,
            WirePromptResultStatus::MaxStepsReached => RunOutcome::StepLimit { steps: 0 },
        },
        Err(CallError::Closed { .. }) => failed("The agent exited before the prompt ended"),
        Err(e) => failed(format!("agent: {e}")),
    }
}

async fn forward(event: WireEvent, open: &mut Option<OpenCall>, reply: &Reply) {
    if let WireEvent::ToolCallPart(part) = &event {
        if let (Some(call), Some(text)) = (open.as_mut(), &part.payload.arguments_part) {
            call.arguments.push_str(text);
        }
        return;
    }
    // Any other event means the open call's arguments are complete.
    if let Some(call) = open.take() {
        call.start(reply).await;
    }
    match event {
        WireEvent::ContentPart(part) => match part.payload {
            WireContentPart::Text(t) => reply.text(t.text).await,
            WireContentPart::Think(t) => reply.thinking(t.think).await,
            WireContentPart::ImageUrl(_) | WireContentPart::AudioUrl(_) | WireContentPart::VideoUrl(_) => {
                tracing::warn!("the agent streamed media by URL; the core's messages carry text and images as data, so it is not shown");
            }
        },
        WireEvent::ToolCall(call) => {
            let call = call.payload;
            *open = Some(OpenCall { id: call.id, name: call.function.name, arguments: call.function.arguments.unwrap_or_default() });
        }
        WireEvent::StatusUpdate(status) => {
            if let Some(used) = status.payload.token_usage {
                let usage = TokenUsage { input: used.input_other, output: used.output, cache_read: used.input_cache_read.unwrap_or(0), cache_write: used.input_cache_creation.unwrap_or(0), reasoning: None };
                reply.usage(usage).await;
            }
        }
        WireEvent::ToolResult(result) => {
            let value = result.payload.return_value;
            let text = match &value.output {
                WireUserInput::String(s) if !s.is_empty() => s.clone(),
                WireUserInput::Array(parts) if !parts.is_empty() => parts.iter().filter_map(|p| if let WireContentPart::Text(t) = p { Some(t.text.as_str()) } else { None }).collect::<Vec<_>>().join("\n"),
                WireUserInput::String(_) | WireUserInput::Array(_) => value.message.clone(),
            };
            let details = serde_json::to_value(&value).ok();
            reply.tool_finished(&result.payload.tool_call_id, "", &text, details, value.is_error).await;
        }
        // Turn and step boundaries (the core opens turns as the run streams), compaction, MCP loading, hooks, sub-agents, plans and side questions: nothing the
        // core reports.
        WireEvent::ToolCallPart(_)
        | WireEvent::TurnBegin(_)
        | WireEvent::SteerInput(_)
        | WireEvent::TurnEnd(_)
        | WireEvent::StepBegin(_)
        | WireEvent::StepInterrupted(_)
        | WireEvent::StepRetry(_)
        | WireEvent::CompactionBegin(_)
        | WireEvent::CompactionEnd(_)
        | WireEvent::McpLoadingBegin(_)
        | WireEvent::McpLoadingEnd(_)
        | WireEvent::Notification(_)
        | WireEvent::ApprovalResponse(_)
        | WireEvent::HookTriggered(_)
        | WireEvent::HookResolved(_)
        | WireEvent::SubagentEvent(_)
        | WireEvent::PlanDisplay(_)
        | WireEvent::BtwBegin(_)
        | WireEvent::BtwEnd(_) => {}
    }
}

/// The agent's requests, asked of the host that speaks for the connection.
struct Requests {
    slot: HostSlot,
    catch_up: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

impl Requests {
    /// Waits (briefly) until the run has forwarded every event that came before the request: an
    /// approval goes to the host after the tool call it is about.
    async fn caught_up(&self) {
        let (done, caught) = oneshot::channel();
        if self.catch_up.send(done).is_ok() {
            let _ = tokio::time::timeout(CATCH_UP, caught).await;
        }
    }
}

impl WireHostHandler for Requests {
    async fn approval(&self, request: WireApprovalRequestPayload) -> Result<WireApprovalResult, Error> {
        self.caught_up().await;
        // Nobody to ask: rejected, as the wire does when unanswered.
        let decision = match self.slot.get() {
            Some(host) => approve(&host, &request.tool_call_id, &request.sender, Map::new(), request.description.clone(), None, &self.slot.run_token()).await,
            None => Decision::Unanswerable,
        };
        let (response, feedback) = match decision {
            Decision::Approve => (WireApprovalDecision::Approve, None),
            Decision::ApproveForSession => (WireApprovalDecision::ApproveForSession, None),
            Decision::Reject { feedback } => (WireApprovalDecision::Reject, feedback),
            Decision::RejectAndStop | Decision::TimedOut | Decision::Abandoned | Decision::Unanswerable => (WireApprovalDecision::Reject, None),
        };
        Ok(WireApprovalResult { request_id: request.id, response, feedback })
    }

    async fn question(&self, request: WireQuestionRequestPayload) -> Result<WireQuestionResult, Error> {
        let dismissed = |id: String| Ok(WireQuestionResult { request_id: id, answers: Default::default() });
        let Some(host) = self.slot.get().filter(|h| h.port().supports_questions()) else {
            tracing::warn!("the agent asked {} question(s) (QuestionRequest {}); the host's dialect cannot be asked, so they are dismissed", request.questions.len(), request.id);
            return dismissed(request.id);
        };
        let questions = request
            .questions
            .iter()
            .map(|q| Question {
                question: q.question.clone(),
                header: q.header.clone(),
                options: q.options.iter().map(|o| QuestionOption { label: o.label.clone(), description: o.description.clone() }).collect(),
                multi_select: q.multi_select,
            })
            .collect();
        let call = ToolCall::new(nonempty(&request.tool_call_id), nonempty("AskUserQuestion"), Map::new());
        let cancel = CancellationToken::new();
        let Some(answers) = host.port().ask_questions(QuestionAsk { call: &call, questions, cancel: &cancel }).await else {
            return dismissed(request.id);
        };
        let answers = answers.into_iter().map(|(q, a)| (q, a.as_str().map_or_else(|| a.to_string(), str::to_owned))).collect();
        Ok(WireQuestionResult { request_id: request.id, answers })
    }
}
