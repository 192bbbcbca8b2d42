//! One run: `agent_start`, turns of (user messages →) assistant streaming → tool calls → tool
//! results, `agent_end`, then one `prompt_result`. A tool call starts as soon as its arguments
//! are complete, while the message may still stream ([`ToolCalls`]). Steering is delivered at turn
//! boundaries (and, in `immediate` interrupt mode, skips the tool calls still waiting to start);
//! follow-ups only when the agent would otherwise stop. Queued messages left when a run ends start
//! a new run.

use std::sync::{Arc, OnceLock};

use futures_util::future::{BoxFuture, FutureExt};
use futures_util::stream::{FuturesUnordered, StreamExt};

use serde_json::{json, Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::approval::{CallKind, Refused};
use super::events::{AgentEvent, CompactionReason, NoticeLevel, PromptId, RunOutcome};
use super::port::{Question, QuestionAsk, ToolAsk};
use super::stream::MessageBuilder;
use super::{nonempty, now_ms, user_message, Agent, Queued, RetryWait, State};
use crate::protocol::*;
use crate::providers::{ModelChunk, ModelRequest, ProviderError};
use crate::tools::{self, ToolContext, ToolOutput};

pub use crate::core::port::QUESTION_TOOL;

/// The question tool's definition: its parameters are a list of [`Question`]s.
fn question_tool() -> &'static ToolInfo {
    static TOOL: OnceLock<ToolInfo> = OnceLock::new();
    TOOL.get_or_init(|| {
        let parameters = json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "description": "The question."},
                            "header": {"type": "string", "description": "Short header."},
                            "options": {
                                "type": "array",
                                "items": {"type": "object", "properties": {"label": {"type": "string"}, "description": {"type": "string"}}, "required": ["label"]},
                                "description": "Answer options."
                            },
                            "multi_select": {"type": "boolean", "description": "Several options may be chosen."}
                        },
                        "required": ["question", "options"]
                    }
                }
            },
            "required": ["questions"]
        });
        let Value::Object(parameters) = parameters else { unreachable!("an object literal") };
        ToolInfo {
            name: nonempty(QUESTION_TOOL),
            description: "Ask the user one or more multiple-choice questions and wait for the answers. Use it when a decision needs the user's input; each question offers labelled options (the user may also answer in their own words).".into(),
            parameters,
            extra: Map::new(),
        }
    })
}

/// How a run ended.
enum Outcome {
    Completed,
    StepLimit(u32),
    Aborted,
    Error(PromptError),
}

/// The prompt's error for a session write that failed: not the provider's, not retryable by
/// asking the model again.
fn write_failed(message: String) -> PromptError {
    PromptError { message, http_status: None, retryable: false }
}

/// The prompt's error detail for a provider failure, so a host can tell a bad key from an outage
/// without parsing the message: the HTTP status when there was one and whether retrying could help
/// (408/409/429/5xx and connection errors).
fn prompt_error(error: ProviderError) -> PromptError {
    PromptError { message: error.message, http_status: error.http_status, retryable: error.retryable }
}

fn take_queue(queue: &mut std::collections::VecDeque<Queued>, mode: QueueMode) -> Vec<Queued> {
    match mode {
        QueueMode::All => queue.drain(..).collect(),
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
    }
}

pub(super) async fn run(agent: Agent, first: Vec<Queued>, prompt: Option<PromptId>, cancel: CancellationToken, done: watch::Sender<bool>) {
    agent.emit(AgentEvent::RunStart { prompt }).await;
    let mut produced: Vec<AgentMessage> = Vec::new();
    // (message, delivered from a queue)
    let mut incoming: Vec<(Queued, bool)> = first.into_iter().map(|q| (q, false)).collect();
    let max_steps = agent.inner.config.max_steps_per_turn;
    let mut steps = 0u32;
    // A panic anywhere in the turns (a provider, a tool, compaction) fails the prompt like a
    // model error: its turn ends, then the run. Before, the run's task died with `st.run` still
    // set, the prompt was never answered, and EOF spun at 100 % CPU waiting for it.
    let turns = std::panic::AssertUnwindSafe(async { loop {
        agent.emit(AgentEvent::TurnStart).await;
        for (q, from_queue) in incoming.drain(..) {
            if from_queue {
                let update = Agent::queue_event(&agent.state());
                agent.emit(update).await;
            }
            let message = user_message(&q, from_queue);
            agent.record_for_run(message.clone());
            agent.emit(AgentEvent::MessageStart { message: &message }).await;
            agent.emit(AgentEvent::MessageEnd { message: &message }).await;
            produced.push(message);
        }
        if let Some(error) = agent.take_write_failure().await {
            break Outcome::Error(write_failed(error));
        }

        if super::compaction::over_threshold(&agent) {
            super::compaction::auto_compact(&agent, CompactionReason::Threshold, false, &cancel).await;
        }
        let mut tools = ToolCalls::new(&agent, &cancel);
        let (assistant, failure) = match stream_with_retries(&agent, &cancel, &mut tools).await {
            Ok(streamed) => streamed,
            Err(Stopped::Aborted) => break Outcome::Aborted,
            Err(Stopped::Failed(error)) => break Outcome::Error(error),
        };
        steps += 1;
        let message = AgentMessage::Assistant(assistant);
        let AgentMessage::Assistant(assistant) = &message else { unreachable!("built just above") };
        match assistant.stop_reason {
            StopReason::Aborted => {
                agent.emit(AgentEvent::TurnEnd { message: &message, tool_results: &[] }).await;
                produced.push(message);
                break Outcome::Aborted;
            }
            StopReason::Error => {
                let message_text = assistant.error_message.clone().unwrap_or_else(|| "the model failed".into());
                let error = failure.map_or_else(|| PromptError { message: message_text, http_status: None, retryable: false }, prompt_error);
                agent.emit(AgentEvent::TurnEnd { message: &message, tool_results: &[] }).await;
                produced.push(message);
                break Outcome::Error(error);
            }
            StopReason::Stop | StopReason::Length | StopReason::ToolUse => {}
        }

        let calls: Vec<ToolCall> = assistant.content.iter().filter_map(|c| if let AssistantContent::ToolCall(tc) = c { Some(tc.clone()) } else { None }).collect();
        let (results, user_took_over) = tools.finish(&calls).await;
        for r in &results {
            let m = AgentMessage::ToolResult(r.clone());
            agent.record_for_run(m.clone());
            agent.emit(AgentEvent::MessageStart { message: &m }).await;
            agent.emit(AgentEvent::MessageEnd { message: &m }).await;
            produced.push(m);
        }
        agent.emit(AgentEvent::TurnEnd { message: &message, tool_results: &results }).await;
        // The assistant message goes before its tool results in `produced`.
        let at = produced.len() - results.len();
        produced.insert(at, message);
        if let Some(error) = agent.take_write_failure().await {
            break Outcome::Error(write_failed(error));
        }
        if cancel.is_cancelled() {
            break Outcome::Aborted;
        }
        if user_took_over {
            // A call was rejected with "stop and wait for me" (kimi): no further model request.
            break Outcome::Completed;
        }
        if !calls.is_empty() && max_steps.is_some_and(|max| steps >= max) {
            // The model wants another step but the run may not take it. Queued messages stay
            // queued and start a run of their own below.
            let message = format!("Stopped after {steps} step{} (--max-steps-per-turn)", if steps == 1 { "" } else { "s" });
            agent.emit(AgentEvent::Notice { level: NoticeLevel::Warning, message }).await;
            break Outcome::StepLimit(steps);
        }
        let next = {
            let mut st = agent.state();
            let mode = st.steering_mode;
            let steer = take_queue(&mut st.steering, mode);
            if !steer.is_empty() || !calls.is_empty() {
                steer
            } else {
                let mode = st.follow_up_mode;
                take_queue(&mut st.follow_up, mode)
            }
        };
        if next.is_empty() && calls.is_empty() {
            break Outcome::Completed;
        }
        incoming = next.into_iter().map(|q| (q, true)).collect();
    } })
    .catch_unwind()
    .await;
    let outcome = match turns {
        Ok(outcome) => outcome,
        Err(panic) => Outcome::Error(end_panicked_turn(&agent, &mut produced, crate::panic::reason(panic)).await),
    };

    // A write that failed on the way out (a failed or aborted model call) still fails the prompt.
    let outcome = match outcome {
        Outcome::Error(e) => Outcome::Error(e),
        other => agent.take_write_failure().await.map_or(other, |e| Outcome::Error(write_failed(e))),
    };
    if let Some(run) = agent.state().run.as_mut() {
        run.finishing = true;
    }
    agent.emit(AgentEvent::RunEnd { messages: &produced }).await;
    let outcome = match outcome {
        Outcome::Completed => RunOutcome::Completed,
        Outcome::StepLimit(steps) => RunOutcome::StepLimit { steps },
        Outcome::Aborted => RunOutcome::Aborted,
        Outcome::Error(error) => RunOutcome::Failed(error),
    };
    agent.emit(AgentEvent::PromptSettled { prompt, outcome, model_invoked: true }).await;
    // Messages queued while the run was finishing start a run of their own.
    {
        let mut st = agent.state();
        st.run = None;
        let mode = st.steering_mode;
        let mut leftover = take_queue(&mut st.steering, mode);
        if leftover.is_empty() {
            let mode = st.follow_up_mode;
            leftover = take_queue(&mut st.follow_up, mode);
        }
        if !leftover.is_empty() && !cancel.is_cancelled() {
            restart(&agent, &mut st, leftover);
        }
    }
    let _ = done.send(true);
}

/// The error a panicking run fails its prompt with. When the panic came inside a turn, the turn
/// ends as a failed model call's does: an assistant message with `stopReason: "error"`, then
/// `TurnEnd`.
async fn end_panicked_turn(agent: &Agent, produced: &mut Vec<AgentMessage>, reason: String) -> PromptError {
    let error = PromptError { message: format!("the agent's run panicked: {reason}"), http_status: None, retryable: false };
    if agent.turn_open() {
        let sink = &*agent.inner.sink;
        let mut builder = MessageBuilder::new(&agent.current().info);
        builder.apply(ModelChunk::Error(ProviderError::fatal(error.message.clone())), sink).await;
        let message = AgentMessage::Assistant(builder.into_message());
        agent.emit(AgentEvent::MessageStart { message: &message }).await;
        agent.emit(AgentEvent::MessageEnd { message: &message }).await;
        agent.emit(AgentEvent::TurnEnd { message: &message, tool_results: &[] }).await;
        produced.push(message);
    }
    error
}

fn restart(agent: &Agent, st: &mut State, first: Vec<Queued>) {
    agent.start_run(st, first, None);
    // No request is answered before this run, so nothing else opens its gate.
    agent.release_gates();
}

/// Why streaming ended without a message for the turn.
enum Stopped {
    /// The run was aborted (or `abort_retry` cancelled a back-off) while waiting to retry.
    Aborted,
    /// The request failed and its message and turn were already reported.
    Failed(PromptError),
}

/// Streams the assistant message, retrying transient failures with exponential back-off and
/// jitter (honouring `Retry-After`): the failed attempt's turn ends, `RetryStart` is emitted, the
/// wait can be cancelled by `abort` / `abort_retry`, a new turn starts; after the last attempt
/// `RetryEnd` says how it went. Failed attempts are not kept in history.
async fn stream_with_retries(agent: &Agent, cancel: &CancellationToken, tools: &mut ToolCalls<'_>) -> Result<(AssistantMessage, Option<ProviderError>), Stopped> {
    let policy = agent.inner.config.retry;
    let mut attempt: u32 = 0;
    let mut compacted_for_overflow = false;
    loop {
        let (assistant, error) = stream_assistant(agent, cancel, tools).await;
        let message = AgentMessage::Assistant(assistant);
        // Context overflow: compact once and try again (not counted as a retry).
        if error.as_ref().is_some_and(|e| e.context_overflow) && !compacted_for_overflow && agent.state().auto_compaction && !cancel.is_cancelled() {
            compacted_for_overflow = true;
            agent.emit(AgentEvent::MessageEnd { message: &message }).await;
            agent.emit(AgentEvent::TurnEnd { message: &message, tool_results: &[] }).await;
            if super::compaction::auto_compact(agent, CompactionReason::Overflow, true, cancel).await {
                agent.emit(AgentEvent::TurnStart).await;
                continue;
            }
            // Compaction failed: the run ends with the original error (already reported).
            return Err(Stopped::Failed(error.map_or_else(|| PromptError { message: "context overflow".into(), http_status: None, retryable: false }, prompt_error)));
        }
        let retry = error.as_ref().filter(|e| e.retryable && agent.state().auto_retry && attempt < policy.max_attempts && !cancel.is_cancelled());
        let Some(error) = retry else {
            // The final message is on disk before the event that reports it.
            agent.record_for_run(message.clone());
            agent.emit(AgentEvent::MessageEnd { message: &message }).await;
            if attempt > 0 {
                agent.emit(AgentEvent::RetryEnd { success: error.is_none(), attempt, final_error: error.as_ref().map(|e| e.message.clone()) }).await;
            }
            let AgentMessage::Assistant(assistant) = message else { unreachable!("built above") };
            return Ok((assistant, error));
        };
        attempt += 1;
        // A failed attempt is reported but not kept in history.
        agent.emit(AgentEvent::MessageEnd { message: &message }).await;
        agent.emit(AgentEvent::TurnEnd { message: &message, tool_results: &[] }).await;
        let delay = backoff(&policy, attempt, error.retry_after);
        let (ended_tx, ended_rx) = watch::channel(false);
        let stop = CancellationToken::new();
        agent.state().retry = Some(RetryWait { cancel: stop.clone(), ended: ended_rx });
        agent.emit(AgentEvent::RetryStart { attempt, max_attempts: policy.max_attempts, delay, error: error.message.clone() }).await;
        let waited = tokio::select! {
            () = tokio::time::sleep(delay) => true,
            () = stop.cancelled() => false,
            () = cancel.cancelled() => false,
        };
        agent.state().retry = None;
        if !waited {
            agent.emit(AgentEvent::RetryEnd { success: false, attempt, final_error: Some("Retry cancelled".into()) }).await;
            // After `abort_retry`, its answer comes before the run's last events: wait until
            // the dialect has queued it (it opens the gate). `abort` answers after the run, so
            // there is nothing to wait for then.
            let gate = stop.is_cancelled().then(|| agent.add_gate());
            let _ = ended_tx.send(true);
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            return Err(Stopped::Aborted);
        }
        let _ = ended_tx.send(true);
        agent.emit(AgentEvent::TurnStart).await;
    }
}

fn backoff(policy: &super::RetryPolicy, attempt: u32, retry_after: Option<std::time::Duration>) -> std::time::Duration {
    let exp = policy.base_delay.saturating_mul(1 << (attempt - 1).min(16));
    // Up to 25% jitter so clients of one server do not retry in lockstep.
    let jitter = exp.mul_f64(rand::random::<f64>() * 0.25);
    let wanted = (exp + jitter).max(retry_after.unwrap_or_default());
    wanted.min(policy.max_delay.max(retry_after.unwrap_or_default().min(policy.max_delay)))
}

/// The system prompt the model is sent (rpc `get_state` shows it on request).
pub(super) fn system_prompt(agent: &Agent) -> String {
    format!(
        "You are agentwire, a coding agent. You work in {}. Use the tools to read, search and change files and to run commands; \
         prefer small, verifiable steps and say what you changed.",
        agent.inner.config.cwd.display()
    )
}

/// The tools offered to the model: the built-ins, the host's (unless hidden), and the question
/// tool when the host can be asked.
pub(super) fn offered_tools(agent: &Agent, st: &State) -> Vec<ToolInfo> {
    let mut tools = tools::builtin_definitions().to_vec();
    for t in st.host_tools.iter().filter(|t| t.hidden != Some(true)) {
        tools.push(ToolInfo { name: nonempty(&t.name), description: t.description.to_string(), parameters: t.parameters.clone(), extra: Map::new() });
    }
    if agent.port().supports_questions() {
        tools.push(question_tool().clone());
    }
    // MCP tools come last: a built-in, host or question tool of the same name wins (their
    // `mcp__` prefix makes that unlikely).
    for t in st.mcp.tools() {
        if !tools.iter().any(|known| *known.name == *t.info.name) {
            tools.push(t.info);
        }
    }
    tools
}

/// Streams one assistant message, emitting `MessageStart` and the `MessageDelta`s (the caller
/// emits `MessageEnd` once the message is recorded), and starts each tool call whose arguments
/// the stream completed on `tools`. Returns the message and the provider error it ended with, if
/// any; a message that failed or was aborted keeps no tool call, so the calls it started are
/// abandoned before it is returned.
async fn stream_assistant(agent: &Agent, cancel: &CancellationToken, tools: &mut ToolCalls<'_>) -> (AssistantMessage, Option<ProviderError>) {
    // An MCP server that said its tools changed has listed them again before the model is
    // offered them.
    agent.mcp().settle().await;
    let spec = agent.current();
    let request = {
        let st = agent.state();
        let tools = offered_tools(agent, &st);
        ModelRequest { system: system_prompt(agent), messages: st.session.messages(), tools, thinking: st.thinking, purpose: crate::providers::Purpose::Turn }
    };
    let mut builder = MessageBuilder::new(&spec.info);
    // `MessageStart` waits for the provider's first answer: a request that fails before any
    // content starts (and ends) an error message, as pi's does (`stopReason: "error"` from
    // `message_start` on).
    let mut started = false;
    let start = |builder: &MessageBuilder| {
        let message = AgentMessage::Assistant(builder.message().clone());
        async move { agent.emit(AgentEvent::MessageStart { message: &message }).await }
    };
    let sink = &*agent.inner.sink;
    let mut stream = spec.provider.stream(request);
    let mut error = None;
    loop {
        let chunk = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            // Calls started while the message streams run meanwhile (and report their ends).
            () = tools.next_finished() => continue,
            chunk = stream.next() => Some(chunk),
        };
        let Some(chunk) = chunk else {
            if !started {
                start(&builder).await;
            }
            // Abort: dropping the stream below cancels the HTTP request at once.
            builder.abort(sink).await;
            break;
        };
        let chunk = chunk.unwrap_or_else(|| ModelChunk::Error(ProviderError::transient("the provider stream ended unexpectedly")));
        if let ModelChunk::Error(e) = &chunk {
            error = Some(e.clone());
        }
        let last = matches!(chunk, ModelChunk::Done { .. } | ModelChunk::Error(_));
        let failed_first = !started && error.is_some();
        if !started && !failed_first {
            start(&builder).await;
            started = true;
        }
        if let Some((index, call)) = builder.apply(chunk, sink).await {
            tools.start_early(index, call).await;
        }
        if failed_first {
            start(&builder).await;
        }
        if last {
            break;
        }
    }
    drop(stream);
    if error.is_some() || builder.message().stop_reason == StopReason::Aborted {
        tools.abandon().await;
    }
    (builder.into_message(), error)
}

/// A finished tool call: its position among the message's calls, its result, and whether its
/// refusal ends the turn.
type Finished = (usize, ToolResultMessage, bool);

/// The tool calls of one assistant message, run in parallel as pi does (one slow
/// call does not hold up the others), each started as soon as its arguments are complete, as
/// kimi does: while the message streams when
/// the provider has moved on to the next block ([`MessageBuilder::apply`]), the others once the
/// message has ended. Calls start in call order, so `ToolStart`s come in call order; each
/// `ToolEnd` as its call finishes (completion order); the results in call order — the order of
/// the toolResult messages and of the next model request. Approvals are asked one at a time, in
/// call order: `asking` is a fair lock and the calls queue for it in the order they start.
struct ToolCalls<'a> {
    agent: &'a Agent,
    /// The run's token: abort cancels every call.
    run_cancel: CancellationToken,
    /// This attempt's: cancelled too when the message fails and its started calls are dropped.
    cancel: CancellationToken,
    asking: Arc<tokio::sync::Mutex<()>>,
    /// How many calls have started: always the first ones of the message.
    started: usize,
    running: FuturesUnordered<BoxFuture<'a, Finished>>,
    finished: Vec<Finished>,
}

impl<'a> ToolCalls<'a> {
    fn new(agent: &'a Agent, run_cancel: &CancellationToken) -> Self {
        Self {
            agent,
            run_cancel: run_cancel.clone(),
            cancel: run_cancel.child_token(),
            asking: Arc::new(tokio::sync::Mutex::new(())),
            started: 0,
            running: FuturesUnordered::new(),
            finished: Vec::new(),
        }
    }

    /// Starts the call at `index` of the streaming message, whose arguments are complete, if
    /// every earlier call has started: after a call whose arguments did not parse (it fails once
    /// the message has ended), the later ones wait for the end too, so calls still start, and ask,
    /// in call order.
    async fn start_early(&mut self, index: usize, call: ToolCall) {
        if index == self.started {
            self.start(call).await;
        }
    }

    /// Reports the next call's start and runs it (as this set is polled).
    async fn start(&mut self, call: ToolCall) {
        self.agent.emit(AgentEvent::ToolStart { call: &call }).await;
        let index = self.started;
        self.started += 1;
        let (agent, asking, cancel) = (self.agent, Arc::clone(&self.asking), self.cancel.clone());
        self.running.push(Box::pin(async move {
            let (result, ends_turn) = execute(agent, &call, index, &asking, &cancel).await;
            (index, result, ends_turn)
        }));
    }

    /// Runs the started calls until one finishes and keeps its result; never completes while
    /// none runs (a `select!` branch beside the model stream).
    async fn next_finished(&mut self) {
        match self.running.next().await {
            Some(done) => self.finished.push(done),
            None => std::future::pending().await,
        }
    }

    /// The message failed or was aborted, so it keeps none of its calls: the started ones are
    /// cancelled and awaited (each reports its end, and no child process outlives it) and their
    /// results dropped with the message. A retried attempt starts its calls afresh.
    async fn abandon(&mut self) {
        if self.started == 0 {
            return;
        }
        self.cancel.cancel();
        while self.running.next().await.is_some() {}
        self.started = 0;
        self.finished.clear();
        self.cancel = self.run_cancel.child_token();
    }

    /// Starts the calls of the ended message not started yet (in call order) and waits for all;
    /// the results in call order, and whether a call was refused with "the user takes over", so
    /// the turn ends after these calls.
    async fn finish(mut self, calls: &[ToolCall]) -> (Vec<ToolResultMessage>, bool) {
        for call in calls.iter().skip(self.started) {
            self.start(call.clone()).await;
        }
        while let Some(done) = self.running.next().await {
            self.finished.push(done);
        }
        self.finished.sort_by_key(|(index, _, _)| *index);
        let ends_turn = self.finished.iter().any(|(_, _, ends)| *ends);
        (self.finished.into_iter().map(|(_, result, _)| result).collect(), ends_turn)
    }
}

/// Runs one tool call and reports its end; returns the tool result message and whether the
/// call's refusal ends the turn.
async fn execute(agent: &Agent, call: &ToolCall, index: usize, asking: &tokio::sync::Mutex<()>, cancel: &CancellationToken) -> (ToolResultMessage, bool) {
    let (output, ends_turn) = match run_tool(agent, call, index, asking, cancel).await {
        Ok(output) => (output, false),
        Err(refused) => (refused.output, refused.ends_turn),
    };
    let result = output.to_result();
    agent.emit(AgentEvent::ToolEnd { call, result: &result, is_error: output.is_error }).await;
    let message = ToolResultMessage {
        role: Default::default(),
        tool_call_id: nonempty(&call.id),
        tool_name: call.name.to_string(),
        content: result.content,
        details: result.details,
        is_error: output.is_error,
        timestamp: now_ms(),
    };
    (message, ends_turn)
}

/// Where a tool call goes.
enum Target {
    Builtin,
    Host(HostToolDefinition),
    Questions,
    Mcp(crate::mcp::McpTool),
}

/// `asking` is held while a call decides whether it may start (skip checks and the approval),
/// so approvals of parallel calls are asked one by one; the tools themselves run concurrently.
/// `Err`: the call did not run (refused, skipped, unknown, bad arguments).
async fn run_tool(agent: &Agent, call: &ToolCall, index: usize, asking: &tokio::sync::Mutex<()>, cancel: &CancellationToken) -> Result<ToolOutput, Refused> {
    let name = call.name.to_string();
    let host = agent.state().host_tools.iter().find(|t| *t.name == name).cloned();
    let (target, parameters) = match host {
        Some(def) => {
            let parameters = def.parameters.clone();
            (Target::Host(def), parameters)
        }
        None if name == QUESTION_TOOL && agent.port().supports_questions() => (Target::Questions, question_tool().parameters.clone()),
        None => match tools::builtin_definitions().iter().find(|t| *t.name == name) {
            Some(def) => (Target::Builtin, def.parameters.clone()),
            None => match agent.mcp().find(&name) {
                Some(tool) => {
                    let parameters = tool.info.parameters.clone();
                    (Target::Mcp(tool), parameters)
                }
                None => return Err(ToolOutput::error(format!("Tool {name} not found")).into()),
            },
        },
    };
    match tools::check_arguments(&parameters, &name, &call.arguments) {
        Ok(()) => {}
        // An MCP server's schema that our validator cannot compile is the server's to check.
        Err(tools::ArgumentsError::BadSchema { .. }) if matches!(target, Target::Mcp(_)) => {}
        Err(message) => return Err(ToolOutput::error(message).into()),
    }
    {
        let _turn = asking.lock().await;
        if cancel.is_cancelled() {
            return Err(ToolOutput::error("Skipped: the run was aborted").into());
        }
        // `immediate` interrupt mode (omp): a steer that arrived before this call could start
        // (it waited behind an earlier call's approval) skips it.
        if index > 0 && agent.state().interrupt_mode == InterruptMode::Immediate && !agent.state().steering.is_empty() {
            return Err(ToolOutput::error("Skipped: a steering message arrived").into());
        }
        let kind = match &target {
            Target::Builtin => CallKind::Builtin,
            Target::Host(_) | Target::Questions => CallKind::Host,
            Target::Mcp(tool) => CallKind::Mcp { read_only: tool.read_only },
        };
        agent.approve_call(call, kind, cancel).await?;
    }
    Ok(match target {
        Target::Host(def) => call_host_tool(agent, &def, call, cancel).await,
        Target::Questions => ask_questions(agent, call, cancel).await,
        Target::Builtin => run_builtin(agent, call, cancel).await,
        Target::Mcp(tool) => call_mcp_tool(agent, &tool, call, cancel).await,
    })
}

/// Calls an MCP server's tool; its progress notifications become `ToolUpdate`s, an abort
/// sends `notifications/cancelled`. A server that never answers is bounded like a host tool
/// (`--host-tool-timeout-ms`).
async fn call_mcp_tool(agent: &Agent, tool: &crate::mcp::McpTool, call: &ToolCall, cancel: &CancellationToken) -> ToolOutput {
    let servers = agent.mcp();
    let timeout = agent.inner.config.host_tool_timeout;
    let (tx, rx) = tokio::sync::mpsc::channel::<AgentToolResult>(16);
    let work = async move {
        let out = servers
            .call(tool, &call.arguments, cancel, timeout, |partial| {
                let _ = tx.try_send(partial);
            })
            .await;
        drop(tx);
        out
    };
    with_updates(agent, call, rx, work).await
}

/// Forwards a tool's partial results as `ToolUpdate` events while `work` runs. The tool never
/// waits on the host: a full channel drops an intermediate snapshot (updates are cumulative,
/// the next one carries everything).
async fn with_updates<F>(agent: &Agent, call: &ToolCall, mut rx: tokio::sync::mpsc::Receiver<AgentToolResult>, work: F) -> ToolOutput
where
    F: std::future::Future<Output = ToolOutput>,
{
    let forward = async {
        while let Some(partial) = rx.recv().await {
            agent.emit(AgentEvent::ToolUpdate { call, partial: &partial }).await;
        }
    };
    let (out, ()) = tokio::join!(work, forward);
    out
}

async fn run_builtin(agent: &Agent, call: &ToolCall, cancel: &CancellationToken) -> ToolOutput {
    let ctx = ToolContext { cwd: agent.inner.config.cwd.clone(), cancel: cancel.clone(), host: agent.port().tools() };
    let (tx, rx) = tokio::sync::mpsc::channel::<AgentToolResult>(16);
    let name = call.name.to_string();
    let work = async move {
        let out = tools::run_builtin(&name, &call.arguments, &ctx, |partial| {
            let _ = tx.try_send(partial);
        })
        .await;
        drop(tx);
        out
    };
    with_updates(agent, call, rx, work).await
}

async fn call_host_tool(agent: &Agent, def: &HostToolDefinition, call: &ToolCall, cancel: &CancellationToken) -> ToolOutput {
    // A host that never answers is bounded: by the definition's timeoutMs, else the default.
    let timeout = def.timeout_ms.map_or(agent.inner.config.host_tool_timeout, std::time::Duration::from_millis);
    let (tx, rx) = tokio::sync::mpsc::channel::<AgentToolResult>(64);
    let work = async move { agent.port().call_tool(ToolAsk { def, call, timeout, cancel, updates: tx }).await };
    with_updates(agent, call, rx, work).await
}

async fn ask_questions(agent: &Agent, call: &ToolCall, cancel: &CancellationToken) -> ToolOutput {
    let questions: Vec<Question> = match call.arguments.get("questions").cloned().map(serde_json::from_value) {
        Some(Ok(q)) => q,
        Some(Err(e)) => return ToolOutput::error(format!("{QUESTION_TOOL}: invalid questions: {e}")),
        None => return ToolOutput::error(format!("{QUESTION_TOOL}: questions are required")),
    };
    // No answer (declined, failed or aborted) is an empty answer, as in kimi: the model goes on.
    let answers = agent.port().ask_questions(QuestionAsk { call, questions, cancel }).await.unwrap_or_default();
    let answers = Value::Object(answers);
    ToolOutput::text(json!({"answers": answers}).to_string()).with_details(json!({"answers": answers}))
}
