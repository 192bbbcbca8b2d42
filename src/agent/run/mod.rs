//! A prompt's work: runs of `RunStart`, turns of (user messages →) assistant streaming → tool
//! calls → tool results, `RunEnd`; then its one `PromptSettled`. A tool call starts as soon as
//! its arguments are complete, while the message may still stream ([`ToolCalls`]). Steering is
//! delivered at turn boundaries (and, in `immediate` interrupt mode, skips the tool calls still
//! waiting to start); follow-ups only when the agent would otherwise stop. Queued messages left
//! when a run ends (it failed, hit the step limit, or they came while it was ending) start the
//! next run of the same work, so the prompt settles once, after all of them.
//!
//! Here the loop and one message streamed; [`retry`] retries a failed model call (and compacts
//! once on a context overflow); [`tool_calls`] runs the message's tool calls.

mod retry;
mod tool_calls;

use futures_util::future::FutureExt;
use serde_json::Map;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use self::retry::{stream_with_retries, Stopped};
use self::tool_calls::{question_tool, ToolCalls};
use super::events::{AgentEvent, CompactionReason, NoticeLevel, PromptId, RunOutcome};
use super::stream::MessageBuilder;
use super::{nonempty, user_message, Agent, Queued, State};
use crate::protocol::*;
use crate::providers::{ModelChunk, ModelRequest, ProviderError};
use crate::tools;

pub use crate::core::port::QUESTION_TOOL;

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

/// The work of `prompt`: runs until none leaves queued messages behind, then its one
/// `PromptSettled` with the last run's outcome.
pub(super) async fn run(agent: Agent, first: Vec<Queued>, prompt: PromptId, cancel: CancellationToken, done: watch::Sender<bool>) {
    // (message, delivered from a queue)
    let mut incoming: Vec<(Queued, bool)> = first.into_iter().map(|q| (q, false)).collect();
    let outcome = loop {
        let (outcome, left) = one_run(&agent, incoming, prompt, &cancel).await;
        if left.is_empty() {
            break outcome;
        }
        incoming = left.into_iter().map(|q| (q, true)).collect();
    };
    agent.emit(AgentEvent::PromptSettled { prompt: Some(prompt), outcome, model_invoked: true }).await;
    agent.state().run = None;
    let _ = done.send(true);
}

/// One run (`RunStart` … `RunEnd`) of `incoming`: its outcome, and the queued messages it left
/// for the next run of the work.
async fn one_run(agent: &Agent, mut incoming: Vec<(Queued, bool)>, prompt: PromptId, cancel: &CancellationToken) -> (RunOutcome, Vec<Queued>) {
    agent.emit(AgentEvent::RunStart { prompt: Some(prompt) }).await;
    let mut produced: Vec<AgentMessage> = Vec::new();
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
            // `pending` names a message still streaming (pi 1.6); a step that ended never says it.
            StopReason::Stop | StopReason::Length | StopReason::ToolUse | StopReason::Pending => {}
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
    // Messages still queued go on in the next run of this work. When none is, the work has
    // ended: marked so under the same lock, so a message arriving from here on waits for the
    // settle and starts work of its own instead of joining work that takes no more. An aborted
    // run leaves the queues as they are (the abort took what it wanted from them).
    let left = {
        let mut st = agent.state();
        let mut left = Vec::new();
        if !cancel.is_cancelled() {
            let mode = st.steering_mode;
            left = take_queue(&mut st.steering, mode);
            if left.is_empty() {
                let mode = st.follow_up_mode;
                left = take_queue(&mut st.follow_up, mode);
            }
        }
        if left.is_empty() {
            if let Some(run) = st.run.as_mut() {
                run.finishing = true;
            }
        }
        left
    };
    agent.emit(AgentEvent::RunEnd { messages: &produced, continues: !left.is_empty() }).await;
    let outcome = match outcome {
        Outcome::Completed => RunOutcome::Completed,
        Outcome::StepLimit(steps) => RunOutcome::StepLimit { steps },
        Outcome::Aborted => RunOutcome::Aborted,
        Outcome::Error(error) => RunOutcome::Failed(error),
    };
    (outcome, left)
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
