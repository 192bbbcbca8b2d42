//! A model call retried: transient failures with exponential back-off and jitter, a context
//! overflow with one compaction.

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::tool_calls::ToolCalls;
use super::{prompt_error, stream_assistant};
use crate::agent::events::{AgentEvent, CompactionReason};
use crate::agent::{Agent, RetryPolicy, RetryWait};
use crate::protocol::*;
use crate::providers::ProviderError;

/// Why streaming ended without a message for the turn.
pub(super) enum Stopped {
    /// The run was aborted (or `abort_retry` cancelled a back-off) while waiting to retry.
    Aborted,
    /// The request failed and its message and turn were already reported.
    Failed(PromptError),
}

/// Streams the assistant message, retrying transient failures with exponential back-off and
/// jitter (honouring `Retry-After`): the failed attempt's turn ends, `RetryStart` is emitted, the
/// wait can be cancelled by `abort` / `abort_retry`, a new turn starts; after the last attempt
/// `RetryEnd` says how it went. Failed attempts are not kept in history.
pub(super) async fn stream_with_retries(agent: &Agent, cancel: &CancellationToken, tools: &mut ToolCalls<'_>) -> Result<(AssistantMessage, Option<ProviderError>), Stopped> {
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
            if crate::agent::compaction::auto_compact(agent, CompactionReason::Overflow, true, cancel).await {
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
        let (resume, resumed) = crate::core::Start::pair();
        agent.state().retry = Some(RetryWait { cancel: stop.clone(), ended: ended_rx, resume: std::sync::Arc::new(std::sync::Mutex::new(Some(resume))) });
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
            // the dialect has queued it (it holds the resume). `abort` answers after the run,
            // so there is nothing to wait for then.
            let _ = ended_tx.send(true);
            if stop.is_cancelled() && !cancel.is_cancelled() {
                let _ = resumed.await;
            }
            return Err(Stopped::Aborted);
        }
        let _ = ended_tx.send(true);
        agent.emit(AgentEvent::TurnStart).await;
    }
}

fn backoff(policy: &RetryPolicy, attempt: u32, retry_after: Option<std::time::Duration>) -> std::time::Duration {
    let exp = policy.base_delay.saturating_mul(1 << (attempt - 1).min(16));
    // Up to 25% jitter so clients of one server do not retry in lockstep.
    let jitter = exp.mul_f64(rand::random::<f64>() * 0.25);
    let wanted = (exp + jitter).max(retry_after.unwrap_or_default());
    wanted.min(policy.max_delay.max(retry_after.unwrap_or_default().min(policy.max_delay)))
}
