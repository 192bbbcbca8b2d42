//! [`Runs`]: the run bookkeeping of an agent that answers one prompt at a time, for custom
//! [`super::AgentCore`] implementations. It keeps what the dialects rely on: each prompt gets a
//! [`Prompt`] handle resolving to its outcome, its run waits for the dialect to start it
//! ([`Prompt::start`]) so the host hears "accepted" first, its events come in the core's
//! order (`RunStart`, `TurnStart`, the user message, the assistant message streamed block by
//! block, tool calls and their results, `TurnEnd`, `RunEnd`, then the one `PromptSettled`), and a cancel
//! ([`RunControl::abort`]) ends the run `Aborted` whether or not the agent's own work looks at
//! [`Reply::is_cancelled`].
//!
//! The agent's work is a closure given a [`Reply`], through which it streams text, thinking and
//! tool calls; it returns the run's [`RunOutcome`].

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::FutureExt;
use serde_json::{Map, Value};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::events::{AgentEvent, EventSink, PromptId, RunOutcome};
use super::port::HostPort;
use super::stream::MessageBuilder;
use super::agent_core::RunControl;
use super::{CoreError, CoreResult, Prompt, QueueKind, Submitted};
use crate::protocol::*;
use super::model::{ModelChunk, TokenUsage};

/// What a dialect gives an agent it serves: where its events go and how it asks the host.
/// A custom agent is built from one (per ACP session, one per session).
#[derive(Clone)]
pub struct Host {
    sink: Arc<dyn EventSink>,
    port: Arc<dyn HostPort>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

impl Host {
    /// A host of `sink` (the dialect's projection) and `port` (its requests to the host).
    pub fn new(sink: Arc<dyn EventSink>, port: Arc<dyn HostPort>) -> Self {
        Self { sink, port }
    }

    /// Where the agent's events go.
    pub fn sink(&self) -> &Arc<dyn EventSink> {
        &self.sink
    }

    /// How the agent asks the host (approvals, questions, dialogs, host tools).
    pub fn port(&self) -> &Arc<dyn HostPort> {
        &self.port
    }
}

/// A run in progress.
#[derive(Debug)]
struct Active {
    cancel: CancellationToken,
    done: watch::Receiver<bool>,
    /// It reported its end (`RunEnd`) and is only settling its prompt.
    finishing: bool,
}

#[derive(Debug, Default)]
struct State {
    run: Option<Active>,
    /// Every message of the conversation so far.
    messages: Vec<AgentMessage>,
}

struct Inner {
    host: Host,
    /// The name the assistant messages carry as their api, provider and model.
    name: String,
    session_id: String,
    state: Mutex<State>,
    next_prompt: AtomicU64,
}

/// The runs of an agent answering one prompt at a time (see the module docs): an
/// [`super::AgentCore::Control`] for it. Cheap to clone.
#[derive(Clone)]
pub struct Runs {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs").field("name", &self.inner.name).field("session_id", &self.inner.session_id).finish_non_exhaustive()
    }
}

fn busy() -> CoreError {
    CoreError::Busy("Agent is already processing; wait for the prompt to end or cancel it".into())
}

impl Runs {
    /// The runs of an agent called `name` (its assistant messages' api, provider and model),
    /// reporting to `host`, in a session of its own (a fresh id).
    pub fn new(name: impl Into<String>, host: Host) -> Self {
        let inner = Inner {
            host,
            name: name.into(),
            session_id: uuid::Uuid::now_v7().to_string(),
            state: Mutex::new(State::default()),
            next_prompt: AtomicU64::new(1),
        };
        Self { inner: Arc::new(inner) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The host the runs report to.
    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// Every message of the conversation so far (each run's, once it ended).
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.state().messages.clone()
    }

    /// Starts a run answering `text` with `work` (the [`super::AgentCore::prompt`] of an agent
    /// answering one prompt at a time). A run in progress refuses the prompt: `Busy`, or
    /// `Unsupported` when the host asked to queue it (`queue`), since these runs keep no queue.
    /// The run starts once the dialect starts its [`Prompt`]; `work` streams through its [`Reply`] and returns the
    /// outcome (a cancel makes it `Aborted`, dropping `work` if it is still going).
    pub async fn start<F, Fut>(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>, work: F) -> CoreResult<Submitted>
    where
        F: FnOnce(Reply) -> Fut + Send + 'static,
        Fut: Future<Output = RunOutcome> + Send + 'static,
    {
        self.start_run(text, images, queue, work, None).await
    }

    /// [`Runs::start`] for work that must wind down by itself when cancelled (an agent driven
    /// over a connection: the cancel is forwarded, and the run ends once the other side says it
    /// did, so its last events are not lost and the next prompt does not find it busy). On a
    /// cancel the work is given `wind_down` to return, then dropped; the outcome is `Aborted`
    /// either way.
    pub async fn start_cooperative<F, Fut>(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>, wind_down: std::time::Duration, work: F) -> CoreResult<Submitted>
    where
        F: FnOnce(Reply) -> Fut + Send + 'static,
        Fut: Future<Output = RunOutcome> + Send + 'static,
    {
        self.start_run(text, images, queue, work, Some(wind_down)).await
    }

    async fn start_run<F, Fut>(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>, work: F, wind_down: Option<std::time::Duration>) -> CoreResult<Submitted>
    where
        F: FnOnce(Reply) -> Fut + Send + 'static,
        Fut: Future<Output = RunOutcome> + Send + 'static,
    {
        // A run that already reported its end is over for the host: wait the moment it takes.
        let ending = self.state().run.as_ref().filter(|r| r.finishing).map(|r| r.done.clone());
        if let Some(mut done) = ending {
            let _ = done.wait_for(|d| *d).await;
        }
        let mut st = self.state();
        if st.run.is_some() {
            return Err(match queue {
                Some(QueueKind::Steer) => super::agent_core::unsupported("steer"),
                Some(QueueKind::FollowUp) => super::agent_core::unsupported("follow_up"),
                None => busy(),
            });
        }
        let cancel = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(false);
        st.run = Some(Active { cancel: cancel.clone(), done: done_rx, finishing: false });
        drop(st);
        let (start, gate) = super::Start::pair();
        let id = PromptId(self.inner.next_prompt.fetch_add(1, Ordering::Relaxed));
        let (settle, settled) = oneshot::channel();
        let runs = self.clone();
        tokio::spawn(async move {
            let _ = gate.await;
            runs.run(id, text, images, cancel, work, wind_down, settle).await;
            runs.state().run = None;
            let _ = done_tx.send(true);
        });
        Ok(Submitted::Started(Prompt::new(id, start, settled)))
    }

    #[allow(clippy::too_many_arguments)]
    async fn run<F, Fut>(&self, id: PromptId, text: String, images: Vec<ImageContent>, cancel: CancellationToken, work: F, wind_down: Option<std::time::Duration>, settle: oneshot::Sender<RunOutcome>)
    where
        F: FnOnce(Reply) -> Fut,
        Fut: Future<Output = RunOutcome>,
    {
        let sink = self.inner.host.sink.clone();
        sink.emit(AgentEvent::RunStart { prompt: Some(id) }).await;
        sink.emit(AgentEvent::TurnStart).await;
        let mut content = vec![super::tools::text_content(text)];
        content.extend(images.into_iter().map(TextOrImageContent::Image));
        let user = AgentMessage::User(UserMessage { role: Default::default(), content: UserContent::Array(content), timestamp: now_ms(), attribution: None, steering: None });
        sink.emit(AgentEvent::MessageStart { message: &user }).await;
        sink.emit(AgentEvent::MessageEnd { message: &user }).await;
        let turn = Arc::new(tokio::sync::Mutex::new(Turn { builder: None, produced: vec![user], next_call: 0, tools: None, closed: false, usage: TokenUsage::default(), open_calls: std::collections::HashMap::new(), done_calls: std::collections::HashSet::new() }));
        let reply = Reply { turn: turn.clone(), sink: sink.clone(), name: self.inner.name.clone(), cancel: cancel.clone() };
        // A panicking run fails its prompt (the events still end in order) instead of leaving
        // it unanswered and the agent busy for ever.
        // Boxed so it can be dropped before the turn is locked below: a work stopped while it
        // held the turn (waiting for a slow host inside `emit`) would otherwise keep it for ever.
        let mut work = Box::pin(std::panic::AssertUnwindSafe(work(reply)).catch_unwind());
        let finished = |outcome: Result<RunOutcome, Box<dyn std::any::Any + Send>>| match outcome {
            _ if cancel.is_cancelled() => RunOutcome::Aborted,
            Ok(outcome) => outcome,
            Err(panic) => {
                let reason = crate::panic::reason(panic);
                RunOutcome::Failed(PromptError { message: format!("the agent's run panicked: {reason}"), http_status: None, retryable: false })
            }
        };
        let outcome = tokio::select! {
            outcome = &mut work => finished(outcome),
            () = cancel.cancelled() => {
                if let Some(wind_down) = wind_down {
                    let _ = tokio::time::timeout(wind_down, &mut work).await;
                }
                RunOutcome::Aborted
            }
        };
        drop(work);
        let mut turn = turn.lock().await;
        let aborted = outcome == RunOutcome::Aborted;
        turn.end(&*sink, &self.inner.name, aborted).await;
        if let Some(run) = self.state().run.as_mut() {
            run.finishing = true;
        }
        sink.emit(AgentEvent::RunEnd { messages: &turn.produced, continues: false }).await;
        self.state().messages.append(&mut turn.produced);
        sink.emit(AgentEvent::PromptSettled { prompt: Some(id), outcome: outcome.clone(), model_invoked: true }).await;
        let _ = settle.send(outcome);
    }
}

impl RunControl for Runs {
    async fn abort(&self) {
        let run = self.state().run.as_ref().map(|r| (r.cancel.clone(), r.done.clone()));
        if let Some((cancel, mut done)) = run {
            cancel.cancel();
            let _ = done.wait_for(|d| *d).await;
        }
    }

    fn cancel_now(&self) {
        if let Some(run) = self.state().run.as_ref() {
            run.cancel.cancel();
        }
    }

    fn is_running(&self) -> bool {
        self.state().run.as_ref().is_some_and(|r| !r.finishing)
    }

    async fn settled(&self) {
        let running = self.state().run.as_ref().map(|r| r.done.clone());
        if let Some(mut done) = running {
            let _ = done.wait_for(|d| *d).await;
        }
    }

    fn session_id(&self) -> String {
        self.inner.session_id.clone()
    }

    fn messages(&self) -> Option<Vec<AgentMessage>> {
        Some(Runs::messages(self))
    }
}

/// The turn being streamed.
struct Turn {
    /// The assistant message streaming now (opened by the first text, thinking or tool call).
    builder: Option<MessageBuilder>,
    /// The run's messages so far.
    produced: Vec<AgentMessage>,
    next_call: u64,
    /// The tool calls of this turn reported in parts ([`Reply::tool_started`]), until the turn
    /// ends.
    tools: Option<ToolTurn>,
    /// The turn ended (`TurnEnd`) and the next has not begun: what streams next opens it.
    closed: bool,
    /// What the agent reported the model used for the assistant message that ends next.
    usage: TokenUsage,
    /// Calls started in parts and not finished yet, by id, whatever turn they were started in
    /// (text streamed while a call runs ends its turn, not the call).
    open_calls: std::collections::HashMap<String, ToolCall>,
    /// Calls finished in this run: a repeated report of their end (or start) is ignored.
    done_calls: std::collections::HashSet<String>,
}

/// A turn's tool calls reported in parts: the assistant messages that made them, the calls by
/// id, and their results so far.
#[derive(Default)]
struct ToolTurn {
    message: Option<AgentMessage>,
    calls: std::collections::HashMap<String, ToolCall>,
    results: Vec<ToolResultMessage>,
}

impl Turn {
    /// Ends the turn of tool calls, if one is open (`TurnEnd` with its results so far).
    async fn close_tools(&mut self, sink: &dyn EventSink) {
        let Some(tools) = self.tools.take() else { return };
        if let Some(message) = &tools.message {
            sink.emit(AgentEvent::TurnEnd { message, tool_results: &tools.results }).await;
        }
        self.closed = true;
    }

    /// `call`'s end: `ToolEnd`, its result message, and the result in its turn if that is
    /// still open.
    async fn finish_call(&mut self, sink: &dyn EventSink, call: &ToolCall, output: &str, details: Option<Value>, is_error: bool) {
        let result = AgentToolResult { content: vec![super::tools::text_content(output)], details: details.clone(), structured_content: None };
        // A remote agent reports what its call did in its own terms; the whole file is not known.
        sink.emit(AgentEvent::ToolEnd { call, result: &result, is_error, change: None }).await;
        let tool_message = ToolResultMessage {
            role: Default::default(),
            tool_call_id: nonempty(call.id.as_str()),
            tool_name: call.name.to_string(),
            content: result.content,
            details,
            is_error,
            timestamp: now_ms(),
            usage: None,
            nested_calls: None,
            duration_ms: None,
        };
        let tool_result = AgentMessage::ToolResult(tool_message.clone());
        sink.emit(AgentEvent::MessageStart { message: &tool_result }).await;
        sink.emit(AgentEvent::MessageEnd { message: &tool_result }).await;
        if let Some(tools) = self.tools.as_mut().filter(|t| t.calls.contains_key(call.id.as_str())) {
            tools.results.push(tool_message);
        }
        self.produced.push(tool_result);
    }

    /// The assistant message streaming now, opened (`MessageStart`) if none is.
    async fn builder(&mut self, sink: &dyn EventSink, name: &str) -> &mut MessageBuilder {
        if self.builder.is_none() {
            if self.closed {
                sink.emit(AgentEvent::TurnStart).await;
                self.closed = false;
            }
            let builder = MessageBuilder::named(name);
            let message = AgentMessage::Assistant(builder.message().clone());
            sink.emit(AgentEvent::MessageStart { message: &message }).await;
            self.builder = Some(builder);
        }
        self.builder.as_mut().expect("opened just above")
    }

    /// Ends the turn: its assistant message (an empty one if nothing streamed) and `TurnEnd`.
    async fn end(&mut self, sink: &dyn EventSink, name: &str, aborted: bool) {
        // A call the agent never finished (the run was cancelled or ended here, or the agent
        // went away) ends as failed: a host must not show it running for ever.
        let unfinished: Vec<ToolCall> = self.open_calls.drain().map(|(_, call)| call).collect();
        for call in unfinished {
            let why = if aborted { "The tool call was cancelled with its run." } else { "The run ended before the tool call did." };
            self.finish_call(sink, &call, why, None, true).await;
        }
        if self.builder.is_none() && self.tools.is_some() {
            // The run ended on its tool calls: that turn is its last.
            self.close_tools(sink).await;
            return;
        }
        self.close_tools(sink).await;
        let builder = self.builder(sink, name).await;
        if aborted {
            builder.abort(sink).await;
        } else {
            let usage = std::mem::take(&mut self.usage);
            let builder = self.builder.as_mut().expect("opened above");
            builder.apply(ModelChunk::Done { length_limited: false, usage, response_id: None }, sink).await;
        }
        let message = AgentMessage::Assistant(self.builder.take().expect("opened above").into_message());
        sink.emit(AgentEvent::MessageEnd { message: &message }).await;
        sink.emit(AgentEvent::TurnEnd { message: &message, tool_results: &[] }).await;
        self.produced.push(message);
    }
}

/// How a run's work streams its answer: text, thinking and tool calls, in the order they
/// happen. Each call's events are queued for the host before it returns.
pub struct Reply {
    turn: Arc<tokio::sync::Mutex<Turn>>,
    sink: Arc<dyn EventSink>,
    name: String,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply").field("cancelled", &self.cancel.is_cancelled()).finish_non_exhaustive()
    }
}

impl Reply {
    /// Appends answer text.
    pub async fn text(&self, delta: impl Into<String>) {
        let mut turn = self.turn.lock().await;
        turn.close_tools(&*self.sink).await;
        turn.builder(&*self.sink, &self.name).await.apply(ModelChunk::Text(delta.into()), &*self.sink).await;
    }

    /// Appends reasoning text.
    pub async fn thinking(&self, delta: impl Into<String>) {
        let mut turn = self.turn.lock().await;
        turn.close_tools(&*self.sink).await;
        turn.builder(&*self.sink, &self.name).await.apply(ModelChunk::Thinking(delta.into()), &*self.sink).await;
    }

    /// A tool call the agent made and ran itself, with its result ([`Reply::tool_started`] and
    /// [`Reply::tool_finished`] at once, under an id of its own): the call streams as part of
    /// the assistant message, which then ends; the call runs (`ToolStart`, `ToolEnd`) and its
    /// result is a message of its own. What is streamed next opens the next turn, as a model
    /// answering the tool's result would.
    pub async fn tool_call(&self, name: &str, arguments: Map<String, Value>, output: &str, is_error: bool) {
        let id = {
            let mut turn = self.turn.lock().await;
            turn.next_call += 1;
            format!("call_{}", turn.next_call - 1)
        };
        self.tool_started(&id, name, arguments).await;
        self.tool_finished(&id, name, output, None, is_error).await;
    }

    /// A tool call the agent starts running, known by the agent's own `id` (an agent driven
    /// over a connection reports its calls so: started, progress, finished). The call streams
    /// as part of an assistant message, which then ends, and the call runs (`ToolStart`).
    /// Calls started before the turn's results come belong to the same turn; the turn ends
    /// with the next text or thinking, or the run's end.
    pub async fn tool_started(&self, id: &str, name: &str, arguments: Map<String, Value>) {
        let mut turn = self.turn.lock().await;
        if turn.open_calls.contains_key(id) || turn.done_calls.contains(id) {
            return;
        }
        let sink = &*self.sink;
        let usage = std::mem::take(&mut turn.usage);
        let builder = turn.builder(sink, &self.name).await;
        builder.apply(ModelChunk::ToolCallStart { id: id.to_owned(), name: name.to_owned() }, sink).await;
        builder.apply(ModelChunk::ToolCallArgs(Value::Object(arguments).to_string()), sink).await;
        builder.apply(ModelChunk::Done { length_limited: false, usage, response_id: None }, sink).await;
        let assistant = turn.builder.take().expect("opened above").into_message();
        let call = assistant.content.iter().rev().find_map(|c| if let AssistantContent::ToolCall(tc) = c { Some(tc.clone()) } else { None }).expect("the call was streamed above");
        let message = AgentMessage::Assistant(assistant);
        sink.emit(AgentEvent::MessageEnd { message: &message }).await;
        sink.emit(AgentEvent::ToolStart { call: &call }).await;
        turn.produced.push(message.clone());
        turn.open_calls.insert(id.to_owned(), call.clone());
        let tools = turn.tools.get_or_insert_with(ToolTurn::default);
        tools.message = Some(message);
        tools.calls.insert(id.to_owned(), call);
    }

    /// What the model used for the assistant message being streamed (as the agent reports it):
    /// it goes into that message when it ends, with its cost.
    pub async fn usage(&self, usage: TokenUsage) {
        self.turn.lock().await.usage = usage;
    }

    /// Output so far of the running call `id` (cumulative). Ignored for a call never started.
    pub async fn tool_progress(&self, id: &str, output: &str) {
        let turn = self.turn.lock().await;
        let Some(call) = turn.open_calls.get(id) else { return };
        let partial = AgentToolResult { content: vec![super::tools::text_content(output)], details: None, structured_content: None };
        self.sink.emit(AgentEvent::ToolUpdate { call, partial: &partial }).await;
    }

    /// The call `id` finished with `output` (`details`: the result as the agent gave it).
    /// A call never started is started first, with no arguments.
    pub async fn tool_finished(&self, id: &str, name: &str, output: &str, details: Option<Value>, is_error: bool) {
        let (started, done) = {
            let turn = self.turn.lock().await;
            (turn.open_calls.contains_key(id), turn.done_calls.contains(id))
        };
        if done {
            return;
        }
        if !started {
            self.tool_started(id, name, Map::new()).await;
        }
        let mut turn = self.turn.lock().await;
        let Some(call) = turn.open_calls.remove(id) else { return };
        turn.done_calls.insert(id.to_owned());
        turn.finish_call(&*self.sink, &call, output, details, is_error).await;
    }

    /// Whether the run was cancelled (its outcome is `Aborted` whatever the work returns).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the run is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::BoxFuture;

    /// Records the tool events it sees: `start <id>`, `end <id> <is_error>`.
    #[derive(Default)]
    struct Calls(Mutex<Vec<String>>);

    impl EventSink for Calls {
        fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
            let seen = match event {
                AgentEvent::ToolStart { call } => Some(format!("start {}", call.id.as_str())),
                AgentEvent::ToolEnd { call, is_error, .. } => Some(format!("end {} {is_error}", call.id.as_str())),
                _ => None,
            };
            if let Some(seen) = seen {
                self.0.lock().unwrap().push(seen);
            }
            Box::pin(async {})
        }
    }

    /// Runs `work` as one prompt of a fresh `Runs`; the tool events seen.
    async fn tool_events<F, Fut>(work: F) -> Vec<String>
    where
        F: FnOnce(Reply) -> Fut + Send + 'static,
        Fut: Future<Output = RunOutcome> + Send + 'static,
    {
        let calls = Arc::new(Calls::default());
        let runs = Runs::new("test", Host::new(calls.clone(), Arc::new(crate::core::port::NoHost)));
        let Ok(Submitted::Started(prompt)) = runs.start("go".into(), Vec::new(), None, work).await else { panic!("not started") };
        prompt.outcome().await;
        let seen = calls.0.lock().unwrap().clone();
        seen
    }

    /// Text streamed while a call runs ends the turn, not the call: its end is the same call's.
    #[tokio::test]
    async fn text_while_a_call_runs_does_not_start_it_again() {
        let seen = tool_events(|reply| async move {
            reply.tool_started("c1", "bash", Map::new()).await;
            reply.text("still working").await;
            reply.tool_progress("c1", "half").await;
            reply.tool_finished("c1", "", "done", None, false).await;
            reply.tool_finished("c1", "", "done again", None, false).await;
            RunOutcome::Completed
        })
        .await;
        assert_eq!(seen, ["start c1", "end c1 false"]);
    }

    /// A call the agent never finished ends failed with its run.
    #[tokio::test]
    async fn a_call_left_running_ends_failed_with_the_run() {
        let seen = tool_events(|reply| async move {
            reply.tool_started("c1", "bash", Map::new()).await;
            RunOutcome::Completed
        })
        .await;
        assert_eq!(seen, ["start c1", "end c1 true"]);
    }
}
