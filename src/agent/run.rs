//! One run: `agent_start`, turns of (user messages →) assistant streaming → tool calls → tool
//! results, `agent_end`, then one `prompt_result`. Steering is delivered at turn boundaries
//! (and, in `immediate` interrupt mode, skips the turn's remaining tool calls); follow-ups only
//! when the agent would otherwise stop. Queued messages left when a run ends start a new run.

use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::stream::MessageBuilder;
use super::ui::Confirmation;
use super::{nonempty, now_ms, user_message, Agent, ApprovalPolicy, Queued, RetryWait, State};
use crate::protocol::*;
use crate::providers::{ModelChunk, ModelRequest, ProviderError};
use crate::tools::{self, ToolContext, ToolOutput};

/// How a run ended.
enum Outcome {
    Completed,
    Aborted,
    Error(String),
}

fn take_queue(queue: &mut std::collections::VecDeque<Queued>, mode: QueueMode) -> Vec<Queued> {
    match mode {
        QueueMode::All => queue.drain(..).collect(),
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
    }
}

pub(super) async fn run(agent: Agent, first: Vec<Queued>, prompt_id: Option<Value>, cancel: CancellationToken, done: watch::Sender<bool>) {
    agent.emit(&AgentStartEvent { type_: Default::default() }).await;
    let mut produced: Vec<AgentMessage> = Vec::new();
    // (message, delivered from a queue)
    let mut incoming: Vec<(Queued, bool)> = first.into_iter().map(|q| (q, false)).collect();
    let max_steps = agent.inner.config.max_steps_per_turn;
    let mut steps = 0u32;
    let outcome = loop {
        agent.emit(&TurnStartEvent { type_: Default::default() }).await;
        for (q, from_queue) in incoming.drain(..) {
            if from_queue {
                let update = Agent::queue_update_frame(&agent.state());
                agent.emit(&update).await;
            }
            let message = user_message(&q, from_queue);
            agent.record(message.clone());
            produced.push(message.clone());
            agent.emit(&MessageStartEvent { type_: Default::default(), message: message.clone() }).await;
            agent.emit(&MessageEndEvent { type_: Default::default(), message }).await;
        }

        if super::compaction::over_threshold(&agent) {
            super::compaction::auto_compact(&agent, AutoCompactionStartEventReason::Threshold, false, &cancel).await;
        }
        let assistant = match stream_with_retries(&agent, &cancel).await {
            Ok(a) => a,
            Err(Stopped::Aborted) => break Outcome::Aborted,
            Err(Stopped::Failed(message)) => break Outcome::Error(message),
        };
        steps += 1;
        let message = AgentMessage::Assistant(assistant.clone());
        produced.push(message.clone());
        match assistant.stop_reason {
            StopReason::Aborted => {
                agent.emit(&TurnEndEvent { type_: Default::default(), message, tool_results: Vec::new() }).await;
                break Outcome::Aborted;
            }
            StopReason::Error => {
                agent.emit(&TurnEndEvent { type_: Default::default(), message, tool_results: Vec::new() }).await;
                break Outcome::Error(assistant.error_message.clone().unwrap_or_else(|| "the model failed".into()));
            }
            _ => {}
        }

        let calls: Vec<ToolCall> = assistant.content.iter().filter_map(|c| if let AssistantContent::ToolCall(tc) = c { Some(tc.clone()) } else { None }).collect();
        let mut results = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let skip = if cancel.is_cancelled() {
                Some("Skipped: the run was aborted")
            } else if i > 0 && agent.state().interrupt_mode == InterruptMode::Immediate && !agent.state().steering.is_empty() {
                Some("Skipped: a steering message arrived")
            } else {
                None
            };
            results.push(execute(&agent, call, skip, &cancel).await);
        }
        for r in &results {
            let m = AgentMessage::ToolResult(r.clone());
            agent.record(m.clone());
            produced.push(m.clone());
            agent.emit(&MessageStartEvent { type_: Default::default(), message: m.clone() }).await;
            agent.emit(&MessageEndEvent { type_: Default::default(), message: m }).await;
        }
        agent.emit(&TurnEndEvent { type_: Default::default(), message, tool_results: results }).await;
        if cancel.is_cancelled() {
            break Outcome::Aborted;
        }
        if !calls.is_empty() && max_steps.is_some_and(|max| steps >= max) {
            // The model wants another step but the run may not take it. Queued messages stay
            // queued and start a run of their own below.
            let notice = NoticeEvent {
                type_: Default::default(),
                level: NoticeEventLevel::Warning,
                message: format!("Stopped after {steps} step{} (--max-steps-per-turn)", if steps == 1 { "" } else { "s" }),
                source: Some("agent".into()),
            };
            agent.emit(&notice).await;
            break Outcome::Completed;
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
    };

    agent.emit(&AgentEndEvent { type_: Default::default(), messages: produced, is_terminal: Some(true) }).await;
    let (status, error) = match outcome {
        Outcome::Completed => (PromptResultEventStatus::Completed, None),
        Outcome::Aborted => (PromptResultEventStatus::Aborted, None),
        Outcome::Error(message) => (PromptResultEventStatus::Error, Some(PromptError { message, http_status: None, retryable: false })),
    };
    agent.emit(&PromptResultEvent { type_: Default::default(), id: prompt_id, status, agent_invoked: true, error }).await;
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

fn restart(agent: &Agent, st: &mut State, first: Vec<Queued>) {
    agent.start_run(st, first, None);
    // No command response precedes this run, so nothing else opens its gate.
    agent.release_gates();
}

/// Why streaming ended without a message for the turn.
enum Stopped {
    /// The run was aborted (or `abort_retry` cancelled a back-off) while waiting to retry.
    Aborted,
    /// The request failed and its message and turn were already reported.
    Failed(String),
}

/// Streams the assistant message, retrying transient failures with exponential back-off and
/// jitter (honouring `Retry-After`): the failed attempt's turn ends, `auto_retry_start` is
/// written, the wait can be cancelled by `abort` / `abort_retry`, a new turn starts; after the
/// last attempt `auto_retry_end` says how it went. Failed attempts are not kept in history.
async fn stream_with_retries(agent: &Agent, cancel: &CancellationToken) -> Result<AssistantMessage, Stopped> {
    let policy = agent.inner.config.retry;
    let mut attempt: u32 = 0;
    let mut compacted_for_overflow = false;
    loop {
        let (assistant, error) = stream_assistant(agent, cancel).await;
        // Context overflow: compact once and try again (not counted as a retry).
        if error.as_ref().is_some_and(|e| e.context_overflow) && !compacted_for_overflow && agent.state().auto_compaction && !cancel.is_cancelled() {
            compacted_for_overflow = true;
            agent.emit(&MessageEndEvent { type_: Default::default(), message: AgentMessage::Assistant(assistant.clone()) }).await;
            agent.emit(&TurnEndEvent { type_: Default::default(), message: AgentMessage::Assistant(assistant.clone()), tool_results: Vec::new() }).await;
            if super::compaction::auto_compact(agent, AutoCompactionStartEventReason::Overflow, true, cancel).await {
                agent.emit(&TurnStartEvent { type_: Default::default() }).await;
                continue;
            }
            // Compaction failed: the run ends with the original error (already reported).
            return Err(Stopped::Failed(assistant.error_message.unwrap_or_else(|| "context overflow".into())));
        }
        let retry = error.as_ref().filter(|e| e.retryable && agent.state().auto_retry && attempt < policy.max_attempts && !cancel.is_cancelled());
        let Some(error) = retry else {
            // The final message is on disk before the frame that reports it.
            agent.record(AgentMessage::Assistant(assistant.clone()));
            agent.emit(&MessageEndEvent { type_: Default::default(), message: AgentMessage::Assistant(assistant.clone()) }).await;
            if attempt > 0 {
                let end = AutoRetryEndEvent {
                    type_: Default::default(),
                    success: error.is_none(),
                    attempt,
                    final_error: error.as_ref().map(|e| e.message.clone()),
                    retry_errors: None,
                };
                agent.emit(&end).await;
            }
            return Ok(assistant);
        };
        attempt += 1;
        // A failed attempt is reported but not kept in history.
        agent.emit(&MessageEndEvent { type_: Default::default(), message: AgentMessage::Assistant(assistant.clone()) }).await;
        agent.emit(&TurnEndEvent { type_: Default::default(), message: AgentMessage::Assistant(assistant), tool_results: Vec::new() }).await;
        let delay = backoff(&policy, attempt, error.retry_after);
        let (ended_tx, ended_rx) = watch::channel(false);
        let stop = CancellationToken::new();
        agent.state().retry = Some(RetryWait { cancel: stop.clone(), ended: ended_rx });
        let start = AutoRetryStartEvent {
            type_: Default::default(),
            attempt,
            max_attempts: policy.max_attempts,
            delay_ms: delay.as_millis() as f64,
            error_message: error.message.clone(),
            error_id: None,
        };
        agent.emit(&start).await;
        let waited = tokio::select! {
            () = tokio::time::sleep(delay) => true,
            () = stop.cancelled() => false,
            () = cancel.cancelled() => false,
        };
        agent.state().retry = None;
        if !waited {
            let end = AutoRetryEndEvent { type_: Default::default(), success: false, attempt, final_error: Some("Retry cancelled".into()), retry_errors: None };
            agent.emit(&end).await;
            // After `abort_retry`, its response comes before the run's last frames: wait until
            // the server has queued it (it opens the gate). `abort` answers after the run, so
            // there is nothing to wait for then.
            let gate = stop.is_cancelled().then(|| {
                let (tx, rx) = tokio::sync::oneshot::channel();
                agent.inner.gates.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
                rx
            });
            let _ = ended_tx.send(true);
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            return Err(Stopped::Aborted);
        }
        let _ = ended_tx.send(true);
        agent.emit(&TurnStartEvent { type_: Default::default() }).await;
    }
}

fn backoff(policy: &super::RetryPolicy, attempt: u32, retry_after: Option<std::time::Duration>) -> std::time::Duration {
    let exp = policy.base_delay.saturating_mul(1 << (attempt - 1).min(16));
    // Up to 25% jitter so clients of one server do not retry in lockstep.
    let jitter = exp.mul_f64(rand::random::<f64>() * 0.25);
    let wanted = (exp + jitter).max(retry_after.unwrap_or_default());
    wanted.min(policy.max_delay.max(retry_after.unwrap_or_default().min(policy.max_delay)))
}

fn system_prompt(agent: &Agent) -> String {
    format!(
        "You are agentwire, a coding agent. You work in {}. Use the tools to read, search and change files and to run commands; \
         prefer small, verifiable steps and say what you changed.",
        agent.inner.config.cwd.display()
    )
}

/// Streams one assistant message, emitting `message_start` and the `message_update`s (the caller
/// writes `message_end` once the message is recorded). Returns the message and the provider
/// error it ended with, if any.
async fn stream_assistant(agent: &Agent, cancel: &CancellationToken) -> (AssistantMessage, Option<ProviderError>) {
    let spec = agent.current();
    let request = {
        let st = agent.state();
        let mut tools = tools::builtin_definitions().to_vec();
        for t in st.host_tools.iter().filter(|t| t.hidden != Some(true)) {
            tools.push(ToolInfo { name: nonempty(&t.name), description: t.description.to_string(), parameters: t.parameters.clone(), extra: Map::new() });
        }
        ModelRequest { system: system_prompt(agent), messages: st.messages.clone(), tools, thinking: st.thinking, purpose: crate::providers::Purpose::Turn }
    };
    let mut builder = MessageBuilder::new(&spec.info);
    agent.emit(&MessageStartEvent { type_: Default::default(), message: AgentMessage::Assistant(builder.message().clone()) }).await;
    let mut stream = spec.provider.stream(request);
    let mut error = None;
    loop {
        let chunk = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            chunk = stream.next() => Some(chunk),
        };
        let Some(chunk) = chunk else {
            // Abort: dropping the stream below cancels the HTTP request at once.
            for event in builder.abort() {
                emit_update(agent, event).await;
            }
            break;
        };
        let chunk = chunk.unwrap_or_else(|| ModelChunk::Error(ProviderError::transient("the provider stream ended unexpectedly")));
        if let ModelChunk::Error(e) = &chunk {
            error = Some(e.clone());
        }
        let last = matches!(chunk, ModelChunk::Done { .. } | ModelChunk::Error(_));
        for event in builder.apply(chunk) {
            emit_update(agent, event).await;
        }
        if last {
            break;
        }
    }
    drop(stream);
    (builder.message().clone(), error)
}

async fn emit_update(agent: &Agent, event: AssistantMessageEvent) {
    let partial = match &event {
        AssistantMessageEvent::Start(e) => e.partial.clone(),
        AssistantMessageEvent::TextStart(e) => e.partial.clone(),
        AssistantMessageEvent::TextDelta(e) => e.partial.clone(),
        AssistantMessageEvent::TextEnd(e) => e.partial.clone(),
        AssistantMessageEvent::ThinkingStart(e) => e.partial.clone(),
        AssistantMessageEvent::ThinkingDelta(e) => e.partial.clone(),
        AssistantMessageEvent::ThinkingEnd(e) => e.partial.clone(),
        AssistantMessageEvent::ToolcallStart(e) => e.partial.clone(),
        AssistantMessageEvent::ToolcallDelta(e) => e.partial.clone(),
        AssistantMessageEvent::ToolcallEnd(e) => e.partial.clone(),
        AssistantMessageEvent::Done(e) => e.message.clone(),
        AssistantMessageEvent::Error(e) => e.error.clone(),
    };
    let frame = MessageUpdateEvent { type_: Default::default(), message: AgentMessage::Assistant(partial), assistant_message_event: event };
    agent.emit(&frame).await;
}

/// Emits `tool_execution_update` for each partial result of a host tool.
struct HostUpdates<'a> {
    agent: &'a Agent,
    call: &'a ToolCall,
}

impl super::host_tools::AsyncUpdate for HostUpdates<'_> {
    async fn update(&mut self, partial: AgentToolResult) {
        let frame = ToolExecutionUpdateEvent {
            type_: Default::default(),
            tool_call_id: nonempty(&self.call.id),
            tool_name: self.call.name.to_string(),
            args: self.call.arguments.clone(),
            partial_result: partial,
        };
        self.agent.emit(&frame).await;
    }
}

/// Runs one tool call with its lifecycle events; returns the tool result message.
async fn execute(agent: &Agent, call: &ToolCall, skip: Option<&str>, cancel: &CancellationToken) -> ToolResultMessage {
    let name = call.name.to_string();
    agent
        .emit(&ToolExecutionStartEvent { type_: Default::default(), tool_call_id: nonempty(&call.id), tool_name: name.clone(), args: call.arguments.clone() })
        .await;
    let output = match skip {
        Some(reason) => ToolOutput::error(reason),
        None => run_tool(agent, call, cancel).await,
    };
    let result = output.to_result();
    agent
        .emit(&ToolExecutionEndEvent { type_: Default::default(), tool_call_id: nonempty(&call.id), tool_name: name.clone(), result: result.clone(), is_error: output.is_error })
        .await;
    ToolResultMessage {
        role: Default::default(),
        tool_call_id: nonempty(&call.id),
        tool_name: name,
        content: result.content,
        details: result.details,
        is_error: output.is_error,
        timestamp: now_ms(),
    }
}

async fn run_tool(agent: &Agent, call: &ToolCall, cancel: &CancellationToken) -> ToolOutput {
    let name = call.name.to_string();
    let host = agent.state().host_tools.iter().find(|t| *t.name == name).cloned();
    let parameters = match &host {
        Some(def) => def.parameters.clone(),
        None => match tools::builtin_definitions().iter().find(|t| *t.name == name) {
            Some(def) => def.parameters.clone(),
            None => return ToolOutput::error(format!("Tool {name} not found")),
        },
    };
    if let Err(message) = tools::check_arguments(&parameters, &name, &call.arguments) {
        return ToolOutput::error(message);
    }
    let needs_approval = match agent.inner.config.approval {
        ApprovalPolicy::Never => false,
        ApprovalPolicy::Dangerous => host.is_none() && tools::is_dangerous(&name),
        ApprovalPolicy::Always => true,
    };
    if needs_approval {
        let detail = match call.arguments.get("command").or_else(|| call.arguments.get("path")).and_then(Value::as_str) {
            Some(d) => d.to_owned(),
            None => serde_json::to_string(&call.arguments).unwrap_or_default(),
        };
        let asked = agent.inner.ui.confirm(&agent.inner.out, &format!("Allow tool: {name}"), &detail, agent.inner.config.approval_timeout, cancel).await;
        match asked {
            Confirmation::Yes => {}
            Confirmation::No => return ToolOutput::error(format!("Tool call denied by user: {name}")),
            Confirmation::TimedOut => return ToolOutput::error(format!("Tool call not approved in time: {name}")),
            Confirmation::Abandoned => return ToolOutput::error(format!("Tool call abandoned: {name}")),
        }
    }
    if let Some(def) = host {
        return agent.inner.hosts.call(&agent.inner.out, &def, &call.id, &call.arguments, cancel, HostUpdates { agent, call }).await;
    }
    let ctx = ToolContext { cwd: agent.inner.config.cwd.clone(), cancel: cancel.clone() };
    // Updates are forwarded through a channel so the tool itself never waits on the writer.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<AgentToolResult>(16);
    let forward = async {
        while let Some(partial) = rx.recv().await {
            HostUpdates { agent, call }.update_now(partial).await;
        }
    };
    let work = async move {
        let out = tools::run_builtin(&name, &call.arguments, &ctx, |partial| {
            // A full queue means the host is slow; skip this intermediate snapshot (updates are
            // cumulative, the next one carries everything).
            let _ = tx.try_send(partial);
        })
        .await;
        drop(tx);
        out
    };
    let (out, ()) = tokio::join!(work, forward);
    out
}

impl HostUpdates<'_> {
    async fn update_now(&mut self, partial: AgentToolResult) {
        super::host_tools::AsyncUpdate::update(self, partial).await;
    }
}
