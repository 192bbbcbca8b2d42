//! Prompts and queues: starting a run, steering and follow-up queues, abort.

use futures_util::FutureExt;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::events::{AgentEvent, PromptId, RunOutcome};
use super::{run, Agent, CoreError, CoreResult, Queued, RunState, State};
use crate::core::{QueueKind, Submitted};
use crate::protocol::{ClearedQueue, ImageContent, InputKind, InterruptMode, PromptError, QueueMode};

impl Agent {
    /// A prompt: starts a run when idle (a built-in `/command` runs instead of the model);
    /// while a run is in progress it is queued into `queue`, or refused when `queue` is `None`.
    pub async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        if queue.is_none() {
            self.finish_ending_run().await;
        }
        self.check_input(&images)?;
        let busy = self.state().run.is_some();
        if busy && queue.is_none() {
            return Err(CoreError::Busy("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()));
        }
        if !busy {
            if let Some(prompt) = self.start_slash(&text) {
                return Ok(Submitted::Started(prompt));
            }
        }
        Ok(self.submit(text, images, queue.unwrap_or(QueueKind::Steer)).await)
    }

    /// A steering message: queued while a run is in progress, otherwise it starts one. A run
    /// that has already reported its end is over for the host (it steers on `agent_end`), so
    /// the message waits for it to settle and starts a run of its own, as when idle.
    pub async fn steer(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        self.check_input(&images)?;
        self.finish_ending_run().await;
        Ok(self.submit(text, images, QueueKind::Steer).await)
    }

    /// A follow-up message: queued while a run is in progress, otherwise it starts one (after
    /// a run that has reported its end settles, as [`Agent::steer`]).
    pub async fn follow_up(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        self.check_input(&images)?;
        self.finish_ending_run().await;
        Ok(self.submit(text, images, QueueKind::FollowUp).await)
    }

    /// Refuses content the current model cannot take: images for a model whose declared
    /// `input` is text only are neither sent on nor dropped (kimi's words for it).
    pub fn check_input(&self, images: &[ImageContent]) -> CoreResult<()> {
        let model = self.current().info;
        if images.is_empty() || model.input.contains(&InputKind::Image) {
            return Ok(());
        }
        Err(CoreError::Unsupported(format!("LLM model '{}' does not support required capability: image_in.", model.id.as_str())))
    }

    /// Fires the run's cancellation at once, before returning: what the run waits on (the
    /// model, a tool, an approval) resolves as aborted before anything read after this can
    /// reach it. [`Agent::abort`] does the rest (queues, waiting for the run's last event).
    pub fn cancel_now(&self) {
        if let Some(run) = self.state().run.as_ref() {
            run.cancel.cancel();
        }
    }

    /// Aborts the run (if any) and returns once its last event is out.
    pub async fn abort(&self) {
        self.abort_run().await;
    }

    /// Aborts the run, then prompts. Messages already accepted into the queues were
    /// acknowledged to the host, so they are not dropped: they open the new run, before this one.
    /// Concurrent calls take turns (each aborts the run the previous one started, after that
    /// run has recorded its messages), so back-to-back calls lose nothing either.
    pub async fn abort_and_prompt(&self, text: String, images: Vec<ImageContent>) -> Submitted {
        let _turn = self.inner.abort_and_prompt.lock().await;
        let mut first = self.abort_run_keeping_queue().await;
        first.push(Queued { text, images });
        self.submit_all(first, QueueKind::Steer).await
    }

    /// Takes every queued steering and follow-up message out of the queues (pi's
    /// `clear_queue`) and returns their text; a `queue_update` announces the empty queues when
    /// anything was queued. The run goes on.
    pub async fn clear_queue(&self) -> ClearedQueue {
        let (cleared, update) = {
            let mut st = self.state();
            let steering: Vec<String> = st.steering.drain(..).map(|q| q.text).collect();
            let follow_up: Vec<String> = st.follow_up.drain(..).map(|q| q.text).collect();
            let changed = !steering.is_empty() || !follow_up.is_empty();
            (ClearedQueue { steering, follow_up }, changed.then(|| Self::queue_event(&st)))
        };
        if let Some(update) = update {
            self.emit(update).await;
        }
        cleared
    }

    /// How steering messages are delivered.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.state().steering_mode = mode;
    }

    /// How follow-up messages are delivered.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.state().follow_up_mode = mode;
    }

    /// Whether steering skips the turn's remaining tool calls.
    pub fn set_interrupt_mode(&self, mode: InterruptMode) {
        self.state().interrupt_mode = mode;
    }

    pub(super) fn queue_event(state: &State) -> AgentEvent<'static> {
        AgentEvent::QueueChanged {
            steering: state.steering.iter().map(|q| q.text.clone()).collect(),
            follow_up: state.follow_up.iter().map(|q| q.text.clone()).collect(),
        }
    }

    /// Starts a run, or queues into the running one.
    async fn submit(&self, text: String, images: Vec<ImageContent>, queue: QueueKind) -> Submitted {
        self.submit_all(vec![Queued { text, images }], queue).await
    }

    /// Starts a run with `messages`, or queues them into the running one.
    async fn submit_all(&self, messages: Vec<Queued>, queue: QueueKind) -> Submitted {
        let update = {
            let mut st = self.state();
            if st.run.is_some() {
                match queue {
                    QueueKind::Steer => st.steering.extend(messages),
                    QueueKind::FollowUp => st.follow_up.extend(messages),
                }
                Ok(Self::queue_event(&st))
            } else {
                let prompt = self.new_prompt();
                self.start_run(&mut st, messages, Some(prompt.id()));
                Err(prompt)
            }
        };
        match update {
            Ok(event) => {
                self.emit(event).await;
                Submitted::Queued
            }
            Err(prompt) => Submitted::Started(prompt),
        }
    }

    /// Waits for a run that has already reported its end to settle (a moment): a host that
    /// prompts on `agent_end` / `TurnEnd` is not refused for the run's last frame.
    pub(super) async fn finish_ending_run(&self) {
        let ending = self.state().run.as_ref().filter(|r| r.finishing).map(|r| r.done.clone());
        if let Some(mut done) = ending {
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// Registers and spawns a run; it starts once its request's answer is written.
    pub(super) fn start_run(&self, st: &mut State, first: Vec<Queued>, prompt: Option<PromptId>) {
        let cancel = CancellationToken::new();
        if st.shutting_down {
            cancel.cancel();
        }
        let (done_tx, done_rx) = watch::channel(false);
        let gate = self.add_gate();
        st.run = Some(RunState { cancel: cancel.clone(), done: done_rx, finishing: false });
        let agent = Clone::clone(self);
        tokio::spawn(async move {
            let _ = gate.await;
            // `run` fails its prompt when its turns panic; a panic after them (in the host's
            // sink, on the run's last events) still must not leave the run registered (waiting
            // for it to settle would never end) nor its prompt without an outcome.
            let ran = std::panic::AssertUnwindSafe(run::run(agent.clone(), first, prompt, cancel, done_tx)).catch_unwind().await;
            if let Err(panic) = ran {
                agent.state().run = None;
                if let Some(prompt) = prompt.filter(|p| agent.settle_pending(*p)) {
                    let error = PromptError { message: format!("the agent's run panicked: {}", crate::panic::reason(panic)), http_status: None, retryable: false };
                    let settled = AgentEvent::PromptSettled { prompt: Some(prompt), outcome: RunOutcome::Failed(error), model_invoked: true };
                    let _ = std::panic::AssertUnwindSafe(agent.emit(settled)).catch_unwind().await;
                }
            }
        });
    }

    /// Settles a prompt the model cannot take as a run that failed before asking it: `RunStart`,
    /// `RunEnd` with no messages, `PromptSettled` with the error. For hosts that wait for the
    /// run's end rather than reading the answer (pi's RpcClient never checks `success`), a
    /// refusal must still end a run. `Busy` when a run is in progress.
    pub fn refuse_as_run(&self, reason: String) -> CoreResult<Submitted> {
        let mut st = self.state();
        if st.run.is_some() {
            return Err(CoreError::Busy("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()));
        }
        let (done_tx, done_rx) = watch::channel(false);
        st.run = Some(RunState { cancel: CancellationToken::new(), done: done_rx, finishing: true });
        drop(st);
        let handle = self.new_prompt();
        let prompt = handle.id();
        let gate = self.add_gate();
        let agent = Clone::clone(self);
        tokio::spawn(async move {
            let _ = gate.await;
            agent.emit(AgentEvent::RunStart { prompt: Some(prompt) }).await;
            agent.emit(AgentEvent::RunEnd { messages: &[] }).await;
            let error = crate::protocol::PromptError { message: reason, http_status: None, retryable: false };
            agent.emit(AgentEvent::PromptSettled { prompt: Some(prompt), outcome: super::events::RunOutcome::Failed(error), model_invoked: false }).await;
            agent.state().run = None;
            let _ = done_tx.send(true);
        });
        Ok(Submitted::Started(handle))
    }

    /// A gate the dialect opens ([`Agent::release_gates`]) once the current request is answered.
    pub(super) fn add_gate(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.inner.gates.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
        rx
    }

    /// Aborts the running run, clears the queues and waits until the run has emitted its last
    /// event (`RunEnd`, `PromptSettled`).
    pub(super) async fn abort_run(&self) {
        self.abort_run_keeping_queue().await;
    }

    /// [`Agent::abort_run`], returning what the queues held (steering first) instead of
    /// dropping it.
    async fn abort_run_keeping_queue(&self) -> Vec<Queued> {
        let (run, update, queued) = {
            let mut st = self.state();
            let had_queue = !st.steering.is_empty() || !st.follow_up.is_empty();
            let mut queued: Vec<Queued> = st.steering.drain(..).collect();
            queued.extend(st.follow_up.drain(..));
            let run = st.run.as_ref().map(|r| (r.cancel.clone(), r.done.clone()));
            (run, had_queue.then(|| Self::queue_event(&st)), queued)
        };
        if let Some(event) = update {
            self.emit(event).await;
        }
        if let Some((cancel, mut done)) = run {
            cancel.cancel();
            let _ = done.wait_for(|d| *d).await;
        }
        queued
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use futures_util::future::BoxFuture;
    use futures_util::FutureExt;
    use tokio::sync::Notify;

    use super::*;
    use crate::agent::events::{EventSink, RunOutcome};
    use crate::agent::{compaction::CompactionPolicy, AgentConfig, ApprovalPolicy, RetryPolicy};
    use crate::providers::config::{load, Selection};
    use crate::sessions::Session;

    /// A host that holds the first run's `RunEnd` (pi's and omp's `agent_end`) until the test
    /// releases it, so the run stays in the moment between reporting its end and settling its
    /// prompt; it counts the queue updates it sees.
    #[derive(Default)]
    struct HeldEnd {
        ended: Notify,
        release: Notify,
        held: AtomicBool,
        queue_updates: AtomicUsize,
    }

    impl EventSink for HeldEnd {
        fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
            Box::pin(async move {
                match event {
                    AgentEvent::RunEnd { .. } if !self.held.swap(true, Ordering::SeqCst) => {
                        self.ended.notify_one();
                        self.release.notified().await;
                    }
                    AgentEvent::QueueChanged { .. } => {
                        self.queue_updates.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => {}
                }
            })
        }
        fn wants_snapshots(&self) -> bool {
            false
        }
    }

    /// An agent on the offline model, in memory, reporting to `host`.
    fn agent(dir: &Path, host: Arc<HeldEnd>) -> Agent {
        agent_with(dir, host)
    }

    /// [`agent`] with its events going to `sink`.
    fn agent_with(dir: &Path, sink: Arc<dyn EventSink>) -> Agent {
        let catalogue = load(&Selection { config_dir: Some(dir.to_owned()), ..Selection::default() }).unwrap();
        let config = AgentConfig {
            cwd: dir.to_owned(),
            approval: ApprovalPolicy::Never,
            approval_timeout: Duration::from_secs(60),
            host_tool_timeout: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            compaction: CompactionPolicy::default(),
            session_dir: None,
            sessions_root: None,
            max_steps_per_turn: None,
            max_session_bytes: 1 << 20,
            thinking: None,
        };
        Agent::new(config, catalogue, Session::create(None, dir, None), sink, Arc::new(crate::core::port::NoHost))
    }

    /// A host that sends `steer` / `follow_up` on `agent_end` talks to an idle agent (pi, omp):
    /// the message starts a run of its own, with its own `prompt_result`, and is never queued
    /// into the run that already ended (a `queue_update`, then a run nobody's prompt owns).
    #[tokio::test]
    async fn a_message_sent_after_agent_end_starts_its_own_run_instead_of_queueing() {
        for kind in [QueueKind::FollowUp, QueueKind::Steer] {
            let dir = tempfile::tempdir().unwrap();
            let host = Arc::new(HeldEnd::default());
            let agent = agent(dir.path(), host.clone());
            assert!(matches!(agent.prompt("hello".into(), Vec::new(), None).await, Ok(Submitted::Started(_))));
            agent.release_gates();
            host.ended.notified().await;
            let mut message = match kind {
                QueueKind::FollowUp => agent.follow_up("and then".into(), Vec::new()).boxed(),
                QueueKind::Steer => agent.steer("and then".into(), Vec::new()).boxed(),
            };
            // Polled while the first run is still held between its end and its settling.
            let early = (&mut message).now_or_never();
            host.release.notify_one();
            let submitted = match early {
                Some(submitted) => submitted,
                None => message.await,
            };
            assert!(matches!(submitted, Ok(Submitted::Started(_))), "{kind:?}: {submitted:?}");
            assert_eq!(host.queue_updates.load(Ordering::SeqCst), 0, "{kind:?}: nothing was queued");
        }
    }

    /// A sink that panics the first time it is given a message (or, with `at_run_end`, the run's
    /// end), and lists the run's events.
    #[derive(Default)]
    struct PanicsOnce {
        at_run_end: bool,
        fired: AtomicBool,
        events: std::sync::Mutex<Vec<String>>,
    }

    impl EventSink for PanicsOnce {
        fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
            Box::pin(async move {
                let name = match &event {
                    AgentEvent::MessageStart { .. } if !self.at_run_end && !self.fired.swap(true, Ordering::SeqCst) => panic!("the sink broke"),
                    AgentEvent::RunEnd { .. } if self.at_run_end && !self.fired.swap(true, Ordering::SeqCst) => panic!("the sink broke"),
                    AgentEvent::TurnStart => "turn_start".to_owned(),
                    AgentEvent::TurnEnd { message: crate::protocol::AgentMessage::Assistant(m), .. } => format!("turn_end {:?}", m.stop_reason),
                    AgentEvent::RunEnd { .. } => "run_end".to_owned(),
                    AgentEvent::PromptSettled { .. } => "settled".to_owned(),
                    _ => return,
                };
                self.events.lock().unwrap().push(name);
            })
        }
        fn wants_snapshots(&self) -> bool {
            false
        }
    }

    /// A panic in a run of the built-in agent (here in the host's sink, inside the turn) fails
    /// its prompt: the turn ends with an error message, the run ends, and the agent settles and
    /// takes the next prompt. Before, the run's task died with the run still registered: the
    /// prompt was never answered and waiting for the agent to settle (stdin EOF) spun for ever.
    #[tokio::test]
    async fn a_panicking_run_fails_its_prompt_and_the_agent_settles() {
        let dir = tempfile::tempdir().unwrap();
        let sink = Arc::new(PanicsOnce::default());
        let agent = agent_with(dir.path(), sink.clone());
        panic_fails_the_prompt_then_the_next_runs(&agent, || {
            assert_eq!(*sink.events.lock().unwrap(), ["turn_start", "turn_end Error", "run_end", "settled"]);
        })
        .await;
    }

    /// Prompts `agent`, whose sink panics once: the prompt fails naming the panic, the agent
    /// settles (then `settled` checks what it must), and the next prompt runs to completion.
    async fn panic_fails_the_prompt_then_the_next_runs(agent: &Agent, settled: impl FnOnce()) {
        let Ok(Submitted::Started(prompt)) = agent.prompt("hello".into(), Vec::new(), None).await else { panic!("the prompt starts a run") };
        agent.release_gates();
        let outcome = tokio::time::timeout(Duration::from_secs(30), prompt.outcome()).await.expect("the prompt is answered");
        assert!(matches!(&outcome, Some(RunOutcome::Failed(e)) if e.message == "the agent's run panicked: the sink broke"), "{outcome:?}");
        tokio::time::timeout(Duration::from_secs(30), agent.settled()).await.expect("the agent settles");
        settled();
        let Ok(Submitted::Started(next)) = agent.prompt("again".into(), Vec::new(), None).await else { panic!("the agent takes the next prompt") };
        agent.release_gates();
        assert_eq!(tokio::time::timeout(Duration::from_secs(30), next.outcome()).await.unwrap(), Some(RunOutcome::Completed));
    }

    /// A panic after the turns (the host's sink failing on `RunEnd`) still fails the prompt and
    /// unregisters the run: the agent settles and takes the next prompt.
    #[tokio::test]
    async fn a_run_panicking_at_its_end_still_lets_the_agent_settle() {
        let dir = tempfile::tempdir().unwrap();
        let sink = Arc::new(PanicsOnce { at_run_end: true, ..PanicsOnce::default() });
        let agent = agent_with(dir.path(), sink);
        panic_fails_the_prompt_then_the_next_runs(&agent, || {}).await;
    }

    /// The core keeps the one map of prompts waiting for their outcome: the handle resolves
    /// once the run settled and the dialect queued what `PromptSettled` sends.
    #[tokio::test]
    async fn a_started_prompt_resolves_to_its_runs_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(HeldEnd::default());
        host.held.store(true, Ordering::SeqCst);
        let agent = agent(dir.path(), host);
        let Ok(Submitted::Started(prompt)) = agent.prompt("hello".into(), Vec::new(), None).await else { panic!("the prompt starts a run") };
        agent.release_gates();
        assert_eq!(tokio::time::timeout(Duration::from_secs(30), prompt.outcome()).await.unwrap(), Some(RunOutcome::Completed));
        let Ok(Submitted::Started(refused)) = agent.refuse_as_run("no model for images".into()) else { panic!("a refusal settles as a run") };
        agent.release_gates();
        assert!(matches!(refused.outcome().await, Some(RunOutcome::Failed(e)) if e.message == "no model for images"));
    }
}
