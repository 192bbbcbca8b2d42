//! The core's events as JSONL frames (pi's event stream). One exhaustive `match`: a new
//! [`AgentEvent`] does not compile until this dialect decides what it sends for it.
//!
//! In the current profile `message_update` carries the step alone (pi 0.84 and later), so a
//! reply costs output linear in its length. Under `--rpc-profile pi-0.73` (or after
//! `set_event_options` with `partialMessages:true`) it carries the whole partial message twice
//! (top-level `message` and `assistantMessageEvent.partial`), as pi 0.73 did; that copy is made
//! here, only for this dialect.

use std::time::Instant;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::RpcHost;
use crate::core::events::{AgentEvent, CompactionReason, EventSink, NoticeLevel, RunOutcome, StreamDelta};
use crate::protocol::nonempty;
use crate::protocol::*;
use crate::transport::FrameBatch;

/// The step as pi's `assistantMessageEvent`; `partial` is the snapshot it carries (`None`: the
/// lean stream, no snapshot); `current`: whether the fields pi 0.84 added are sent.
fn assistant_event(delta: StreamDelta, partial: Option<AssistantMessage>, current: bool) -> AssistantMessageEvent {
    match delta {
        StreamDelta::TextStart { index } => AmeTextStart::new(index).with_partial(partial).into(),
        StreamDelta::TextDelta { index, delta } => AmeTextDelta::new(index, delta).with_partial(partial).into(),
        StreamDelta::TextEnd { index, content } => AmeTextEnd::new(index, content).with_partial(partial).into(),
        StreamDelta::ThinkingStart { index } => AmeThinkingStart::new(index).with_partial(partial).into(),
        StreamDelta::ThinkingDelta { index, delta } => AmeThinkingDelta::new(index, delta).with_partial(partial).into(),
        StreamDelta::ThinkingEnd { index, content } => AmeThinkingEnd::new(index, content).with_partial(partial).into(),
        StreamDelta::ToolCallStart { index, id, name } => {
            let start = AmeToolcallStart::new(index).with_partial(partial);
            if current { start.with_id(Some(id)).with_tool_name(Some(name)).into() } else { start.into() }
        }
        StreamDelta::ToolCallDelta { index, delta } => AmeToolcallDelta::new(index, delta).with_partial(partial).into(),
        StreamDelta::ToolCallEnd { index, call } => AmeToolcallEnd::new(index, call).with_partial(partial).into(),
    }
}

fn start_reason(reason: CompactionReason) -> CompactionStartEventReason {
    match reason {
        CompactionReason::Manual => CompactionStartEventReason::Manual,
        CompactionReason::Threshold => CompactionStartEventReason::Threshold,
        CompactionReason::Overflow => CompactionStartEventReason::Overflow,
    }
}

fn end_reason(reason: CompactionReason) -> CompactionEndEventReason {
    match reason {
        CompactionReason::Manual => CompactionEndEventReason::Manual,
        CompactionReason::Threshold => CompactionEndEventReason::Threshold,
        CompactionReason::Overflow => CompactionEndEventReason::Overflow,
    }
}

impl RpcHost {
    /// A new message's `messageId` (omp's `msg-N`), in the current profile.
    fn start_message_id(&self) -> Option<String> {
        if !self.profile.is_current() {
            return None;
        }
        let mut ids = self.message_ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.0 += 1;
        let id = format!("msg-{}", ids.0);
        ids.1.push(id.clone());
        Some(id)
    }

    /// The streaming message's `messageId`, in the current profile.
    fn open_message_id(&self) -> Option<String> {
        if !self.profile.is_current() {
            return None;
        }
        let open = self.message_ids.lock().unwrap_or_else(|e| e.into_inner()).1.last().cloned();
        open.or_else(|| self.start_message_id())
    }

    /// The ending message's `messageId`, in the current profile.
    fn end_message_id(&self) -> Option<String> {
        if !self.profile.is_current() {
            return None;
        }
        let open = self.message_ids.lock().unwrap_or_else(|e| e.into_inner()).1.pop();
        open.or_else(|| {
            let mut ids = self.message_ids.lock().unwrap_or_else(|e| e.into_inner());
            ids.0 += 1;
            Some(format!("msg-{}", ids.0))
        })
    }

    /// A `tool_execution_*` frame: held while the assistant message streams, sent otherwise.
    async fn tool_frame<T: serde::Serialize>(&self, frame: &T) -> Result<(), crate::transport::WriterClosed> {
        if let Some(held) = self.early_tools.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            return held.push(frame);
        }
        self.out.send(frame).await
    }

    async fn project(&self, event: AgentEvent<'_>) {
        let out = &self.out;
        let _ = match event {
            AgentEvent::RunStart { prompt: _ } => {
                self.active.store(true, std::sync::atomic::Ordering::Relaxed);
                self.stretch.store(true, std::sync::atomic::Ordering::Relaxed);
                // The `agent_end` of the run before, when this run continues its work.
                let mut batch = self.run_end.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
                let pushed = batch.push(&AgentStartEvent::new());
                let sent = out.send_batch(&mut batch).await;
                pushed.and(sent)
            }
            AgentEvent::TurnStart => out.send(&TurnStartEvent::new()).await,
            AgentEvent::MessageStart { message } => {
                if matches!(message, AgentMessage::Assistant(_)) {
                    *self.early_tools.lock().unwrap_or_else(|e| e.into_inner()) = Some(FrameBatch::default());
                }
                out.send(&MessageStartEvent::new(message.clone()).with_message_id(self.start_message_id())).await
            }
            AgentEvent::MessageDelta { delta, partial } => {
                let current = self.profile.is_current();
                let frame = if self.partial_messages() {
                    let event = assistant_event(delta, Some(partial.clone()), current);
                    MessageUpdateEvent::new(event).with_message(Some(AgentMessage::Assistant(partial.clone())))
                } else {
                    MessageUpdateEvent::new(assistant_event(delta, None, current))
                };
                let frame = if current { frame.with_usage(Some(partial.usage.clone())).with_message_id(self.open_message_id()) } else { frame };
                out.send(&frame).await
            }
            AgentEvent::MessageEnd { message } => {
                let held = match message {
                    AgentMessage::Assistant(_) => self.early_tools.lock().unwrap_or_else(|e| e.into_inner()).take(),
                    _ => None,
                };
                let frame = MessageEndEvent::new(message.clone()).with_message_id(self.end_message_id());
                match held {
                    Some(tools) => {
                        let mut batch = FrameBatch::default();
                        let pushed = batch.push(&frame);
                        batch.append(tools);
                        let sent = out.send_batch(&mut batch).await;
                        pushed.and(sent)
                    }
                    None => out.send(&frame).await,
                }
            }
            AgentEvent::ToolStart { call } => {
                self.tool_started.lock().unwrap_or_else(|e| e.into_inner()).insert(call.id.to_string(), Instant::now());
                self.tool_frame(&ToolExecutionStartEvent::new(nonempty(&call.id), call.name.as_str(), call.arguments.clone())).await
            }
            AgentEvent::ToolUpdate { call, partial } => {
                self.tool_frame(&ToolExecutionUpdateEvent::new(nonempty(&call.id), call.name.as_str(), call.arguments.clone(), partial.clone())).await
            }
            AgentEvent::ToolEnd { call, result, is_error, change: _ } => {
                let started = self.tool_started.lock().unwrap_or_else(|e| e.into_inner()).remove(&call.id.to_string());
                // pi: "absent when the tool did not run"; a call that never started has no start.
                let duration = started.filter(|_| self.profile.is_current()).map(|at| at.elapsed().as_secs_f64() * 1000.0);
                self.tool_frame(&ToolExecutionEndEvent::new(nonempty(&call.id), call.name.as_str(), result.clone(), is_error).with_duration_ms(duration)).await
            }
            AgentEvent::TurnEnd { message, tool_results } => out.send(&TurnEndEvent::new(message.clone(), tool_results.to_vec())).await,
            // The core settles the prompt right after ending its last run (`PromptSettled`
            // follows `RunEnd` with nothing between), or starts the next run of its work
            // (`RunStart` follows): `agent_end` waits for that event and both go out at once.
            // A retry happens inside a run, so no `agent_end` is followed by one (`willRetry`);
            // omp's `isTerminal` says whether another run of the work follows.
            AgentEvent::RunEnd { messages, continues } => {
                // A run never leaves a message open (omp drops stranded ids here too).
                self.message_ids.lock().unwrap_or_else(|e| e.into_inner()).1.clear();
                // Tool frames still held (a message that never ended) go out before the end.
                let mut batch = self.early_tools.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
                let end = AgentEndEvent::new(messages.to_vec()).with_is_terminal(Some(!continues)).with_will_retry(Some(false));
                let encoded = batch.push(&end);
                *self.run_end.lock().unwrap_or_else(|e| e.into_inner()) = Some(batch);
                encoded
            }
            AgentEvent::PromptSettled { prompt, outcome, model_invoked } => {
                let id = prompt.and_then(|p| self.prompts.lock().unwrap_or_else(|e| e.into_inner()).remove(&p));
                let (status, error) = match outcome {
                    // The step limit was announced with a notice; the prompt itself completed.
                    RunOutcome::Completed | RunOutcome::StepLimit { .. } => (PromptResultEventStatus::Completed, None),
                    RunOutcome::Aborted => (PromptResultEventStatus::Aborted, None),
                    RunOutcome::Failed(error) => (PromptResultEventStatus::Error, Some(error)),
                };
                let aborted = matches!(status, PromptResultEventStatus::Aborted);
                let held = self.run_end.lock().unwrap_or_else(|e| e.into_inner()).take();
                let mut batch = held.unwrap_or_default();
                // pi's `agent_settled` ends a period of agent activity: only work that ran the
                // agent has one (a slash command handled without a run has none). omp's
                // `session_settled` ends the stretch of activity, unless the host is already
                // replacing this work (`abort_and_prompt`): then the next prompt's work
                // continues the stretch and this result says the session is not settled.
                let ran = self.active.swap(false, std::sync::atomic::Ordering::Relaxed);
                let quiet = !self.handing_over.load(std::sync::atomic::Ordering::Relaxed);
                let mut pushed = Ok(());
                if ran {
                    pushed = pushed.and(batch.push(&AgentSettledEvent::new(aborted)));
                }
                pushed = pushed.and(batch.push(&PromptResultEvent::new(status, model_invoked, quiet).with_id(id).with_error(error)));
                if quiet && self.stretch.swap(false, std::sync::atomic::Ordering::Relaxed) {
                    pushed = pushed.and(batch.push(&SessionSettledEvent::new()));
                }
                let sent = out.send_batch(&mut batch).await;
                pushed.and(sent)
            }
            AgentEvent::QueueChanged { steering, follow_up } => out.send(&QueueUpdateEvent::new(steering, follow_up)).await,
            // pi's names for manual and automatic compaction alike, which both peers' hosts
            // read; omp's `auto_compaction_*` are not sent.
            AgentEvent::CompactionStart { reason } => out.send(&CompactionStartEvent::new(start_reason(reason))).await,
            AgentEvent::CompactionEnd { reason, result, aborted, will_retry } => {
                let (result, error) = match result {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                out.send(&CompactionEndEvent::new(end_reason(reason), aborted, will_retry).with_result(result).with_error_message(error)).await
            }
            AgentEvent::RetryStart { attempt, max_attempts, delay, error } => {
                out.send(&AutoRetryStartEvent::new(attempt, max_attempts, delay.as_millis() as f64, error)).await
            }
            AgentEvent::RetryEnd { success, attempt, final_error } => out.send(&AutoRetryEndEvent::new(success, attempt).with_final_error(final_error)).await,
            // pi reads `level`, omp `thinkingLevel`: both are sent.
            AgentEvent::ThinkingLevelChanged { level } => {
                out.send(&ThinkingLevelChangedEvent::new().with_level(Some(level)).with_thinking_level(Some(level.to_string()))).await
            }
            AgentEvent::SessionNameChanged { name } => out.send(&SessionInfoChangedEvent::new().with_name(Some(name))).await,
            AgentEvent::TodosChanged { phases } => out.send(&TodoUpdateEvent::new(phases.to_vec())).await,
            // rpc has no event for an agent's own settings: `get_state` shows what they affect.
            AgentEvent::SettingsChanged { .. } => Ok(()),
            AgentEvent::Notice { level, message } => {
                let level = match level {
                    NoticeLevel::Info => NoticeEventLevel::Info,
                    NoticeLevel::Warning => NoticeEventLevel::Warning,
                    NoticeLevel::Error => NoticeEventLevel::Error,
                };
                out.send(&NoticeEvent::new(level, message).with_source(Some("agent".to_owned()))).await
            }
        };
    }
}

impl EventSink for RpcHost {
    fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
        self.project(event).boxed()
    }

    /// Only the default stream reads the snapshot beyond its text.
    fn wants_snapshots(&self) -> bool {
        self.partial_messages()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::core::PromptId;

    /// A command answered while a run ends (the reader's task is not the run's) goes before
    /// `agent_end` or after `prompt_result`, never between them: hosts (and the conformance
    /// corpus) read `prompt_result` as the frame right after `agent_end`.
    #[tokio::test]
    async fn agent_end_and_prompt_result_go_out_together() {
        let (sink, mut sent) = tokio::io::duplex(1 << 16);
        let (out, writer) = crate::transport::spawn_writer(sink, 1 << 20);
        let host = RpcHost::new(out.clone());
        host.expect_result(PromptId(7), Some(Value::from("p1")));
        host.emit(AgentEvent::RunStart { prompt: Some(PromptId(7)) }).await;
        host.emit(AgentEvent::RunEnd { messages: &[], continues: false }).await;
        // The reader answers the host's next command now.
        out.send(&SessionInfoChangedEvent::new().with_name(Some("n".to_owned()))).await.unwrap();
        host.emit(AgentEvent::PromptSettled { prompt: Some(PromptId(7)), outcome: RunOutcome::Completed, model_invoked: true }).await;
        drop((host, out));
        writer.await.unwrap().unwrap();
        let mut written = String::new();
        sent.read_to_string(&mut written).await.unwrap();
        let types: Vec<String> = written.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].as_str().unwrap().to_owned()).collect();
        assert_eq!(types, ["agent_start", "session_info_changed", "agent_end", "agent_settled", "prompt_result", "session_settled"], "{written}");
        assert!(written.lines().nth(4).unwrap().contains(r#""id":"p1""#), "{written}");
    }
}
