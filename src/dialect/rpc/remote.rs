//! A JSONL agent (pi, oh-my-pi, `agentwire --mode rpc`) driven as the core: the remote agent of
//! this dialect ([`crate::dialect::remote`]).
//!
//! | core | JSONL (agent) |
//! |---|---|
//! | prompt | `prompt`; its answer's `disposition` says where the run ends: `started` (pi 1.6) streams until `agent_settled`, so a retry or a queued message after an `agent_end` stays the same run; `handled` ends it at once (nothing ran); none (pi 0.73, oh-my-pi, agentwire's pi 0.73 profile) streams until an `agent_end` no retry follows (or, for a slash command that ran no model, its `prompt_result`) |
//! | cancel | `abort`; the run ends once the agent says it did |
//! | steer / follow-up while running | `steer` / `follow_up` |
//! | text / thinking | `message_update` `text_delta` / `thinking_delta` |
//! | tool started, progress, finished | `tool_execution_start` / `_update` / `_end` |
//! | a second session (ACP `session/new`) | `new_session`: the agent has one session at a time, so the earlier one ends |
//! | dialogs | the host's dialogs where its dialect has them; else `confirm` and `select` as approvals, `input` and `editor` dismissed with a warning |
//!
//! The agent's `message_update` snapshots, `message_end` and queue updates carry nothing the
//! core does not rebuild from the deltas.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use tokio::io::AsyncBufRead;
use tokio::sync::{mpsc, oneshot};

use crate::core::events::RunOutcome;
use super::steps::Step;
use crate::core::port::{DialogAsk, DialogKind, DialogOutcome};
use crate::core::{AgentCore, Capabilities, CoreError, CoreResult, Host, QueueKind, Reply, RunControl, Runs, Submitted};
use crate::client::{DialogAnswer, RpcClient, RpcDialog, RpcEvents, RpcHostHandler};
use crate::dialect::remote::{approve, approved, failed, slash_command, HostSlot, ASK_TIMEOUT, WIND_DOWN};
use crate::protocol::{
    AbortCommand, CommandsResult, CycleModelCommand, CycleModelResult, CycleThinkingLevelCommand, FollowUpCommand, GetAvailableModelsCommand, GetAvailableThinkingLevelsCommand,
    GetCommandsCommand, GetStateCommand, ImageContent, Model, NewSessionCommand, PromptAccepted, PromptCommand, PromptDisposition, SetModelCommand, SetThinkingLevelCommand, SteerCommand, ThinkingLevel,
};
use crate::transport::{LineReader, Outbox};

/// The connection to a JSONL agent: makes one [`RpcRemote`] per session a front opens.
#[derive(Debug, Clone)]
pub struct RpcAgents {
    link: Arc<Link>,
}

#[derive(Debug)]
struct Link {
    client: RpcClient,
    /// The agent's frames, and its dialogs' catch-up requests; a run holds them while it streams.
    events: tokio::sync::Mutex<(RpcEvents, mpsc::UnboundedReceiver<oneshot::Sender<()>>)>,
    /// The tool calls started and not yet finished, in order (an approval names the last).
    open_calls: Arc<Mutex<Vec<(String, String, Map<String, Value>)>>>,
    /// A run was ended here before the agent said it ended (`agent_end`): its end is owed, and
    /// the next run reads up to it first.
    owed_end: AtomicBool,
    /// The agent said what it did with a prompt (its `disposition`): it ends a prompt's work
    /// with `agent_settled`, so an owed end is read up to that.
    settles: AtomicBool,
    slot: HostSlot,
    sessions: Mutex<Sessions>,
    /// A run is streaming (a session switch waits for none).
    running: AtomicBool,
    next: AtomicU64,
    /// The agent's slash commands (`get_commands`).
    commands: Mutex<CommandsResult>,
    /// Its model and thinking level as last reported, and what it offers.
    settings: Mutex<Settings>,
}

/// What a JSONL agent said of its model and thinking level.
#[derive(Debug, Default)]
struct Settings {
    model: Option<Model>,
    thinking: Option<ThinkingLevel>,
    models: Vec<Model>,
    levels: Vec<ThinkingLevel>,
}

/// Which of the front's sessions holds the agent's one session.
#[derive(Debug, Default)]
struct Sessions {
    owner: Option<u64>,
    /// Sessions a later one replaced.
    ended: HashSet<u64>,
}

impl RpcAgents {
    /// Drives the agent reading `lines` (its stdout) and writing `out` (its stdin).
    pub fn connect<R>(lines: LineReader<R>, out: Outbox) -> Self
    where
        R: AsyncBufRead + Unpin + Send + 'static,
    {
        let slot = HostSlot::default();
        let (catch_up, catch_ups) = mpsc::unbounded_channel();
        let open_calls = Arc::new(Mutex::new(Vec::new()));
        let (client, events) = RpcClient::over(lines, out, Dialogs { slot: slot.clone(), catch_up, open_calls: open_calls.clone() });
        let link = Link { client, events: tokio::sync::Mutex::new((events, catch_ups)), open_calls, owed_end: AtomicBool::new(false), settles: AtomicBool::new(false), slot, sessions: Mutex::default(), running: AtomicBool::new(false), next: AtomicU64::new(1), commands: Mutex::new(CommandsResult { commands: Vec::new() }), settings: Mutex::default() };
        let link = Arc::new(link);
        Self { link }
    }

    /// Asks the agent what it offers before the host is served: its slash commands, its model
    /// and thinking level (`state`: the `get_state` data read when the dialect was detected) and
    /// the models and levels to choose from. What an agent refuses to say is offered as absent.
    pub async fn learn(&self, state: &Value) {
        let client = &self.link.client;
        // Asked together: the host is served once all three are answered.
        let (ask_commands, ask_models, ask_levels) = (GetCommandsCommand::default(), GetAvailableModelsCommand::default(), GetAvailableThinkingLevelsCommand::default());
        let (commands, models, levels) = tokio::join!(client.request(&ask_commands), client.request(&ask_models), client.request(&ask_levels));
        match commands {
            Ok(listed) => {
                let commands = listed.commands.into_iter().filter_map(|c| slash_command(c.name.as_str(), c.description, c.aliases.unwrap_or_default())).collect();
                *lock(&self.link.commands) = CommandsResult { commands };
            }
            Err(e) => tracing::debug!("the agent lists no slash commands: {e}"),
        }
        let mut settings = lock(&self.link.settings);
        settings.model = state.get("model").cloned().and_then(|m| crate::protocol::decode::from_value(m).ok());
        settings.thinking = state.get("thinkingLevel").cloned().and_then(|l| crate::protocol::decode::from_value(l).ok());
        settings.models = models.map(|listed| listed.models).unwrap_or_default();
        settings.levels = match levels {
            Ok(listed) => listed.levels,
            // pi has no such command: a reasoning model takes pi's levels.
            Err(_) if settings.model.as_ref().is_some_and(|m| m.reasoning) => [ThinkingLevel::Off, ThinkingLevel::Minimal, ThinkingLevel::Low, ThinkingLevel::Medium, ThinkingLevel::High].into(),
            Err(_) => Vec::new(),
        };
    }

    /// A session for a front, reporting to `host`.
    pub fn agent(&self, host: Host) -> RpcRemote {
        let me = self.link.next.fetch_add(1, Ordering::Relaxed);
        RpcRemote { runs: Runs::new("rpc-agent", host), link: self.link.clone(), me }
    }

    /// Closes the agent's input (it finishes what it was asked, then exits).
    pub fn close(&self) {
        self.link.client.close();
    }
}

/// One session of the JSONL agent, as the core.
#[derive(Debug)]
pub struct RpcRemote {
    runs: Runs,
    link: Arc<Link>,
    me: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RpcRemote {
    /// Makes this session the agent's: the first takes the session the agent started with, a
    /// later one asks for a new session (the earlier one ends).
    async fn claim(&self) -> CoreResult<()> {
        let previous = {
            let sessions = lock(&self.link.sessions);
            if sessions.ended.contains(&self.me) {
                return Err(CoreError::NotFound("This session ended: the agent behind this bridge has one session at a time, and a later session replaced it".into()));
            }
            match sessions.owner {
                Some(owner) if owner == self.me => return Ok(()),
                Some(_) if self.link.running.load(Ordering::SeqCst) => {
                    return Err(CoreError::Busy("Another session's prompt is running; the agent behind this bridge has one session at a time".into()));
                }
                owner => owner,
            }
        };
        if previous.is_some() {
            self.link.client.request(&NewSessionCommand::default()).await.map_err(|e| CoreError::Internal(format!("the agent refused `new_session`: {e}")))?;
        }
        let mut sessions = lock(&self.link.sessions);
        if let Some(previous) = previous {
            sessions.ended.insert(previous);
        }
        sessions.owner = Some(self.me);
        self.link.slot.set(self.runs.host());
        Ok(())
    }

    /// Sends a queued message while this session's run streams; `None` when none does.
    async fn queue(&self, kind: QueueKind, text: &str) -> Option<CoreResult<Submitted>> {
        if !self.runs.is_running() || lock(&self.link.sessions).owner != Some(self.me) {
            return None;
        }
        let sent = match kind {
            QueueKind::Steer => self.link.client.request(&SteerCommand::new(text)).await,
            QueueKind::FollowUp => self.link.client.request(&FollowUpCommand::new(text)).await,
        };
        Some(sent.map(|_| Submitted::Queued).map_err(|e| CoreError::Internal(format!("agent: {e}"))))
    }
}

impl AgentCore for RpcRemote {
    type Control = Runs;

    fn control(&self) -> &Runs {
        &self.runs
    }

    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        if let Some(kind) = queue {
            if let Some(queued) = self.queue(kind, &text).await {
                return queued;
            }
        }
        self.claim().await?;
        let link = self.link.clone();
        let command = PromptCommand::new(text.clone()).with_images(Some(images.clone()).filter(|i| !i.is_empty()));
        self.runs.start_cooperative(text, images, None, WIND_DOWN, move |reply| run(link, command, reply)).await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { images: true, dialogs: true, ..Capabilities::none() }
    }

    fn commands(&self) -> CommandsResult {
        lock(&self.link.commands).clone()
    }

    fn current_model(&self) -> Option<Model> {
        lock(&self.link.settings).model.clone()
    }

    fn available_models(&self) -> Vec<Model> {
        lock(&self.link.settings).models.clone()
    }

    async fn set_model(&self, provider: &str, model_id: &str) -> CoreResult<Model> {
        let (Ok(provider), Ok(model_id)) = (provider.parse(), model_id.parse()) else {
            return Err(CoreError::InvalidParams(format!("no model {provider}/{model_id}")));
        };
        let model = self.link.client.request(&SetModelCommand::new(provider, model_id)).await.map_err(agent_error)?;
        lock(&self.link.settings).model = Some(model.clone());
        Ok(model)
    }

    async fn cycle_model(&self) -> CoreResult<Option<CycleModelResult>> {
        let cycled = self.link.client.request(&CycleModelCommand::default()).await.map_err(agent_error)?;
        if let Some(result) = &cycled {
            let mut settings = lock(&self.link.settings);
            settings.model = Some(result.model.clone());
            settings.thinking = result.thinking_level.or(settings.thinking);
        }
        Ok(cycled)
    }

    fn thinking_level(&self) -> Option<ThinkingLevel> {
        lock(&self.link.settings).thinking
    }

    fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        lock(&self.link.settings).levels.clone()
    }

    async fn set_thinking_level(&self, level: ThinkingLevel) -> CoreResult<ThinkingLevel> {
        self.link.client.request(&SetThinkingLevelCommand::new(level)).await.map_err(agent_error)?;
        // The agent may clamp it to the model: what it now says is the level in force.
        let level = match self.link.client.request(&GetStateCommand::default()).await {
            Ok(state) => state.thinking_level.unwrap_or(level),
            Err(_) => level,
        };
        lock(&self.link.settings).thinking = Some(level);
        Ok(level)
    }

    async fn cycle_thinking_level(&self) -> CoreResult<Option<ThinkingLevel>> {
        let cycled = self.link.client.request(&CycleThinkingLevelCommand::default()).await.map_err(agent_error)?.map(|r| r.level);
        if cycled.is_some() {
            lock(&self.link.settings).thinking = cycled;
        }
        Ok(cycled)
    }

    async fn steer(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        match self.queue(QueueKind::Steer, &text).await {
            Some(queued) => queued,
            None => self.prompt(text, images, None).await,
        }
    }

    async fn follow_up(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        match self.queue(QueueKind::FollowUp, &text).await {
            Some(queued) => queued,
            None => self.prompt(text, images, None).await,
        }
    }

}

/// The agent's refusal, as the core's error.
fn agent_error(e: crate::client::ClientError) -> CoreError {
    CoreError::Internal(format!("agent: {e}"))
}

/// Clears `running` when the run ends, however it ends.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// How long a dialog waits for the run to forward what came before it.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a run waits for the end an abandoned run still owes before it refuses to start.
const OWED_END: std::time::Duration = std::time::Duration::from_secs(5);

/// Marks the run's end as owed unless it saw it (the work dropped at the wind-down's end).
struct Owed<'a> {
    flag: &'a AtomicBool,
    seen: bool,
}

impl Drop for Owed<'_> {
    fn drop(&mut self) {
        if !self.seen {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

/// Where a prompt's work ends, as the agent revealed it in its answer to the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// No run started (pi's disposition `handled`: an extension command consumed it).
    Now,
    /// At `agent_settled`: the agent says what it did with the prompt (pi 1.6), and a retry,
    /// a compaction's retry or a queued message after an `agent_end` belong to the same prompt.
    Settled,
    /// At the first `agent_end` that no retry follows, or a `prompt_result` before any run
    /// started: the agent has no `agent_settled` (pi 0.73, oh-my-pi, agentwire), and says no
    /// disposition. oh-my-pi's `agentInvoked: false` is not taken for an end: its
    /// `prompt_result` still follows, and read by the next prompt it would end that one.
    AgentEnd,
}

impl Ending {
    /// The ending a prompt's answer (its `data`) reveals.
    fn of(accepted: Option<PromptAccepted>) -> Self {
        match accepted.and_then(|a| a.disposition) {
            Some(PromptDisposition::Handled) => Self::Now,
            Some(PromptDisposition::Started | PromptDisposition::Queued) => Self::Settled,
            None => Self::AgentEnd,
        }
    }

    /// Whether `step` is the frame that ends the prompt's work.
    fn ends_at(self, step: &Step) -> bool {
        match (self, step) {
            (Self::Settled, Step::RunSettled { .. }) => true,
            (Self::AgentEnd, Step::End { will_retry, .. }) => !will_retry,
            (Self::Now | Self::Settled | Self::AgentEnd, _) => false,
        }
    }
}

/// The outcome of a run whose last `agent_end` said `stop_reason` and `error`.
fn outcome(stop_reason: Option<&str>, error: Option<String>) -> RunOutcome {
    match stop_reason {
        Some("error") => failed(error.unwrap_or_else(|| "the agent's run failed".to_owned())),
        Some("aborted") => RunOutcome::Aborted,
        _ => RunOutcome::Completed,
    }
}

/// One run: the prompt sent, the agent's frames streamed until its run ends.
async fn run(link: Arc<Link>, command: PromptCommand, reply: Reply) -> RunOutcome {
    let mut guard = link.events.lock().await;
    let (events, catch_ups) = &mut *guard;
    link.running.store(true, Ordering::SeqCst);
    let _running = Running(&link.running);
    // An earlier run ended here before the agent ended it: its last frames are read (and
    // dropped) up to its end, or this prompt would find the agent busy and take them for its
    // own.
    if link.owed_end.swap(false, Ordering::SeqCst) {
        let ending = if link.settles.load(Ordering::SeqCst) { Ending::Settled } else { Ending::AgentEnd };
        let ended = tokio::time::timeout(OWED_END, async {
            while let Some(frame) = events.next().await {
                if super::steps::step(&frame).is_some_and(|step| ending.ends_at(&step)) {
                    return true;
                }
            }
            false
        });
        if !matches!(ended.await, Ok(true)) {
            link.owed_end.store(true, Ordering::SeqCst);
            return failed("the agent is still ending the cancelled prompt; try again");
        }
    }
    // What an earlier run left (its `prompt_result`, a notice) is not this run's.
    while events.try_next().is_some() {}
    lock(&link.open_calls).clear();
    let run_guard = link.slot.begin_run();
    let ending = match link.client.request(&command).await {
        Ok(accepted) => Ending::of(accepted),
        Err(e) => return failed(format!("the agent refused the prompt: {e}")),
    };
    match ending {
        Ending::Now => return RunOutcome::Completed,
        Ending::Settled => link.settles.store(true, Ordering::SeqCst),
        Ending::AgentEnd => {}
    }
    let mut owed = Owed { flag: &link.owed_end, seen: false };
    let mut started = false;
    let mut abort_sent = false;
    // The last `agent_end`'s stop reason and error: the prompt's outcome once it settles.
    let mut last_end: (Option<String>, Option<String>) = (None, None);
    loop {
        let frame = tokio::select! {
            biased;
            frame = events.next() => frame,
            // Polled after the frames (`biased`): none is waiting, so every frame that came
            // before the dialog has been forwarded.
            Some(done) = catch_ups.recv() => {
                let _ = done.send(());
                continue;
            }
            () = reply.cancelled(), if !abort_sent => {
                abort_sent = true;
                run_guard.cancel();
                let client = link.client.clone();
                tokio::spawn(async move {
                    if let Err(e) = client.request(&AbortCommand::default()).await {
                        tracing::warn!("cancel: the agent refused `abort`: {e}");
                    }
                });
                continue;
            }
        };
        let Some(frame) = frame else {
            owed.seen = true;
            return failed("the agent exited before the prompt ended");
        };
        let Some(step) = super::steps::step(&frame) else { continue };
        let ends = ending.ends_at(&step);
        match step {
            Step::RunStart => started = true,
            Step::Usage(usage) => reply.usage(usage).await,
            Step::End { stop_reason, error, .. } => last_end = (stop_reason, error),
            Step::RunSettled { aborted } => {
                if aborted {
                    last_end = (Some("aborted".to_owned()), None);
                }
            }
            // A slash command of agentwire's that ran no model settles with this alone.
            Step::Settled { status, error } if !started && ending == Ending::AgentEnd => {
                owed.seen = true;
                return match status.as_str() {
                    "aborted" => RunOutcome::Aborted,
                    "error" => failed(error.unwrap_or_else(|| "the prompt failed".to_owned())),
                    _ => RunOutcome::Completed,
                };
            }
            step => forward(step, &reply, &link.open_calls).await,
        }
        if ends {
            owed.seen = true;
            let (stop_reason, error) = last_end;
            return outcome(stop_reason.as_deref(), error);
        }
    }
}

async fn forward(step: Step, reply: &Reply, open_calls: &Mutex<Vec<(String, String, Map<String, Value>)>>) {
    match step {
        Step::Text(text) => reply.text(text).await,
        Step::Thinking(text) => reply.thinking(text).await,
        Step::ToolStart { id, name, args } => {
            lock(open_calls).push((id.clone(), name.clone(), args.clone()));
            reply.tool_started(&id, &name, args).await;
        }
        Step::ToolProgress { id, text } => reply.tool_progress(&id, &text).await,
        Step::ToolEnd { id, text, result, is_error } => {
            lock(open_calls).retain(|(open, _, _)| *open != id);
            reply.tool_finished(&id, "", &text, Some(result), is_error).await;
        }
        // The core opens turns as the run streams, and ends the run itself; the run's loop
        // reads the rest.
        Step::TurnStart | Step::RunStart | Step::Usage(_) | Step::End { .. } | Step::RunSettled { .. } | Step::Settled { .. } => {}
    }
}

/// The agent's dialogs, asked of the host that speaks for the connection.
struct Dialogs {
    slot: HostSlot,
    /// Asks the run to forward every frame that came before the dialog (the tool call an
    /// approval is about reaches the host first).
    catch_up: mpsc::UnboundedSender<oneshot::Sender<()>>,
    open_calls: Arc<Mutex<Vec<(String, String, Map<String, Value>)>>>,
}

/// Whether an option label reads as a refusal.
fn refuses(label: &str) -> bool {
    let lower = label.to_lowercase();
    ["deny", "reject", "no", "cancel", "abort", "don't", "do not"].iter().any(|w| lower.starts_with(w))
}

impl RpcHostHandler for Dialogs {
    fn dialog(&self, dialog: RpcDialog) -> BoxFuture<'_, DialogAnswer> {
        async move {
            let Some(host) = self.slot.get() else { return DialogAnswer::Cancelled };
            let (done, caught) = oneshot::channel();
            if self.catch_up.send(done).is_ok() {
                let _ = tokio::time::timeout(CATCH_UP, caught).await;
            }
            let cancel = self.slot.run_token();
            let kind = match dialog.method.as_str() {
                "select" => DialogKind::Select { title: dialog.title.clone(), options: dialog.options.clone() },
                "confirm" => DialogKind::Confirm { title: dialog.title.clone(), message: dialog.message.clone().unwrap_or_default() },
                "input" => DialogKind::Input { title: dialog.title.clone(), placeholder: dialog.placeholder.clone() },
                "editor" => DialogKind::Editor { title: dialog.title.clone(), prefill: dialog.prefill.clone() },
                other => {
                    tracing::warn!("the agent opened a `{other}` dialog ({}), which no host is asked; it is dismissed", dialog.title);
                    return DialogAnswer::Cancelled;
                }
            };
            if host.port().supports_dialogs() {
                return match host.port().dialog(DialogAsk { kind, timeout: ASK_TIMEOUT, cancel: &cancel }).await {
                    DialogOutcome::Value(value) => DialogAnswer::Value(value),
                    DialogOutcome::Confirmed(yes) => DialogAnswer::Confirmed(yes),
                    DialogOutcome::Unsupported(reason) => {
                        tracing::warn!("the agent's `{}` dialog ({}) could not be shown: {reason}", dialog.method, dialog.title);
                        DialogAnswer::Cancelled
                    }
                    DialogOutcome::Dismissed | DialogOutcome::TimedOut | DialogOutcome::Abandoned => DialogAnswer::Cancelled,
                };
            }
            // A host with approvals but no dialogs (ACP): a confirm or a select between allowing
            // and refusing is an approval. agentwire and omp title a tool's approval
            // "Allow tool: NAME\nCommand: …".
            let (name, summary) = match dialog.title.strip_prefix("Allow tool: ").and_then(|t| t.split_once('\n')) {
                Some((name, rest)) => (name.to_owned(), rest.strip_prefix("Command: ").unwrap_or(rest).to_owned()),
                None => (dialog.title.clone(), dialog.message.clone().unwrap_or_default()),
            };
            // The call it is about is the last one started and not finished, when the agent
            // reports its calls before asking (else the dialog stands for itself).
            let (id, name, args) = match lock(&self.open_calls).last().cloned() {
                Some(call) => call,
                None => {
                    let mut args = Map::new();
                    if !summary.is_empty() {
                        args.insert("command".to_owned(), Value::String(summary.clone()));
                    }
                    (format!("dialog-{}", dialog.id), name, args)
                }
            };
            match kind {
                DialogKind::Confirm { .. } => {
                    let decision = approve(&host, &id, &name, args, summary, None, &cancel).await;
                    DialogAnswer::Confirmed(approved(&decision))
                }
                DialogKind::Select { options, .. } if options.iter().any(|o| refuses(o)) && options.iter().any(|o| !refuses(o)) => {
                    let decision = approve(&host, &id, &name, args, summary, None, &cancel).await;
                    let allow = approved(&decision);
                    options.into_iter().find(|o| refuses(o) != allow).map_or(DialogAnswer::Cancelled, DialogAnswer::Value)
                }
                DialogKind::Select { .. } | DialogKind::Input { .. } | DialogKind::Editor { .. } => {
                    tracing::warn!("the agent opened a `{}` dialog ({}); the host's dialect has no dialogs, so it is dismissed", dialog.method, dialog.title);
                    DialogAnswer::Cancelled
                }
            }
        }
        .boxed()
    }
}
