//! The core's events as wire `event`s. One exhaustive `match`: a new [`AgentEvent`] does not
//! compile until this dialect decides what it sends for it. Text and thinking deltas become one
//! `ContentPart` each: the partial message the core passes along is never copied here, so the
//! cost per delta is constant.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::{lock, ReturnExtras, WireHost};
use crate::core::events::{AgentEvent, EventSink, RunOutcome, StreamDelta};
use crate::protocol::*;

/// The text of a user message as the wire echoes it.
fn user_text(message: &AgentMessage) -> String {
    match message {
        AgentMessage::User(u) => crate::protocol::user_text(&u.content),
        _ => String::new(),
    }
}

fn text_of(result: &AgentToolResult) -> String {
    result.content.iter().filter_map(|c| if let TextOrImageContent::Text(t) = c { Some(t.text.as_str()) } else { None }).collect()
}

impl WireHost {
    pub(super) async fn turn_end(&self) {
        let interrupted = {
            let mut t = lock(&self.turn);
            if !t.active {
                return;
            }
            t.active = false;
            t.retrying = false;
            std::mem::take(&mut t.interrupted)
        };
        if interrupted {
            self.event(WireStepInterruptedEvent::new(WireStepInterruptedPayload {}).into()).await;
        }
        self.event(WireTurnEndEvent::new(WireTurnEndPayload {}).into()).await;
    }

    async fn project(&self, event: AgentEvent<'_>) {
        match event {
            AgentEvent::RunStart { prompt } => {
                // A run the client did not start with `prompt` (queued messages left over from
                // the previous one) opens its turn at its first user message.
                let mut t = lock(&self.turn);
                if prompt.is_none() && !t.active {
                    t.implicit = true;
                    t.step = 0;
                }
            }
            AgentEvent::TurnStart => {}
            AgentEvent::MessageStart { message } => match message {
                AgentMessage::User(u) => {
                    let opens = std::mem::take(&mut lock(&self.turn).implicit);
                    let input = WireUserInput::String(user_text(message));
                    if opens {
                        lock(&self.turn).active = true;
                        self.event(WireTurnBeginEvent::new(WireTurnBeginPayload { user_input: input }).into()).await;
                    } else if u.steering == Some(true) {
                        self.event(WireSteerInputEvent::new(WireSteerInputPayload { user_input: input }).into()).await;
                    }
                }
                AgentMessage::Assistant(_) => {
                    let step = {
                        let mut t = lock(&self.turn);
                        if std::mem::take(&mut t.retrying) {
                            None
                        } else {
                            t.step += 1;
                            Some(t.step)
                        }
                    };
                    if let Some(n) = step {
                        let n = std::num::NonZeroU32::new(n).unwrap_or(std::num::NonZeroU32::MIN);
                        self.event(WireStepBeginEvent::new(WireStepBeginPayload { n }).into()).await;
                    }
                }
                AgentMessage::ToolResult(_) | AgentMessage::BashExecution(_) | AgentMessage::Custom(_) | AgentMessage::BranchSummary(_) | AgentMessage::CompactionSummary(_) | AgentMessage::System(_) => {}
            },
            AgentEvent::MessageDelta { delta, partial: _ } => match delta {
                StreamDelta::TextDelta { delta, .. } => self.event(WireContentPartEvent::new(WireContentPart::Text(WireTextPart::new(delta))).into()).await,
                StreamDelta::ThinkingDelta { delta, .. } => self.event(WireContentPartEvent::new(WireContentPart::Think(WireThinkPart::new(delta))).into()).await,
                StreamDelta::ToolCallStart { id, name, .. } => {
                    let payload = WireToolCallPayload::new(id, WireFunctionCall { name, arguments: Some(String::new()) });
                    self.event(WireToolCallEvent::new(payload).into()).await;
                }
                StreamDelta::ToolCallDelta { delta, .. } if !delta.is_empty() => {
                    self.event(WireToolCallPartEvent::new(WireToolCallPartPayload { arguments_part: Some(delta) }).into()).await;
                }
                StreamDelta::ToolCallDelta { .. }
                | StreamDelta::TextStart { .. }
                | StreamDelta::TextEnd { .. }
                | StreamDelta::ThinkingStart { .. }
                | StreamDelta::ThinkingEnd { .. }
                | StreamDelta::ToolCallEnd { .. } => {}
            },
            AgentEvent::MessageEnd { message } => {
                let AgentMessage::Assistant(m) = message else { return };
                match m.stop_reason {
                    StopReason::Error => lock(&self.turn).interrupted = true,
                    // A cancelled step reports no usage (kimi sends no StatusUpdate for it either).
                    StopReason::Aborted => {}
                    // `pending` names a message still streaming (pi 1.6); an ended one never says it.
                    StopReason::Stop | StopReason::Length | StopReason::ToolUse | StopReason::Pending => {
                        let u = &m.usage;
                        let status = WireStatusUpdatePayload {
                            context_usage: None,
                            context_tokens: Some(u.input + u.cache_read),
                            max_context_tokens: None,
                            token_usage: Some(WireTokenUsage { input_other: u.input, output: u.output, input_cache_read: Some(u.cache_read), input_cache_creation: Some(u.cache_write) }),
                            message_id: m.response_id.clone(),
                            plan_mode: Some(lock(&self.turn).plan_mode),
                            mcp_status: None,
                        };
                        self.event(WireStatusUpdateEvent::new(status).into()).await;
                    }
                }
            }
            AgentEvent::ToolStart { .. } | AgentEvent::ToolUpdate { .. } => {}
            AgentEvent::ToolEnd { call, result, is_error, change: _ } => {
                let extras = lock(&self.returns).remove(call.id.as_str()).unwrap_or(ReturnExtras { message: String::new(), display: Vec::new(), output: None });
                let output = extras.output.unwrap_or_else(|| text_of(result));
                let value = WireToolReturnValue { is_error, output: WireUserInput::String(output), message: extras.message, display: extras.display, extras: None };
                self.event(WireToolResultEvent::new(WireToolResultPayload { tool_call_id: call.id.to_string(), return_value: value }).into()).await;
            }
            AgentEvent::TurnEnd { .. } => {}
            // The prompt's turn ends with its work's last run, not before a run that continues it.
            AgentEvent::RunEnd { continues: true, .. } => {}
            AgentEvent::RunEnd { continues: false, .. } => self.turn_end().await,
            AgentEvent::PromptSettled { .. } => {
                // A slash command settles without a run: its turn ends here. The prompt's
                // result follows: the core hands the outcome to the waiting `prompt` request
                // once this returns.
                self.turn_end().await;
            }
            AgentEvent::QueueChanged { .. } => {}
            AgentEvent::CompactionStart { .. } => self.event(WireCompactionBeginEvent::new(WireCompactionBeginPayload {}).into()).await,
            AgentEvent::CompactionEnd { .. } => self.event(WireCompactionEndEvent::new(WireCompactionEndPayload {}).into()).await,
            AgentEvent::RetryStart { attempt, max_attempts, delay, error: _ } => {
                let n = {
                    let mut t = lock(&self.turn);
                    (t.interrupted, t.retrying) = (false, true);
                    t.step
                };
                let retry = WireStepRetryPayload {
                    n,
                    next_attempt: attempt + 1,
                    max_attempts: max_attempts + 1,
                    wait_s: delay.as_secs_f64(),
                    error_type: "ProviderError".into(),
                    status_code: None,
                };
                self.event(WireStepRetryEvent::new(retry).into()).await;
            }
            // kimi has no events for these; the client asks for state when it needs it.
            AgentEvent::RetryEnd { .. } | AgentEvent::ThinkingLevelChanged { .. } | AgentEvent::SessionNameChanged { .. } | AgentEvent::TodosChanged { .. } | AgentEvent::SettingsChanged { .. } => {}
            // The one notice the core sends (the step limit) is the prompt's `max_steps_reached`.
            AgentEvent::Notice { .. } => {}
        }
    }
}

impl EventSink for WireHost {
    fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
        self.project(event).boxed()
    }
}

/// What a settled prompt answers.
pub fn prompt_result(outcome: RunOutcome) -> Result<WirePromptResult, crate::jsonrpc::Error> {
    use crate::jsonrpc::Error;
    match outcome {
        RunOutcome::Completed => Ok(WirePromptResult { status: WirePromptResultStatus::Finished, steps: None }),
        RunOutcome::StepLimit { steps } => Ok(WirePromptResult { status: WirePromptResultStatus::MaxStepsReached, steps: Some(steps) }),
        RunOutcome::Aborted => Ok(WirePromptResult { status: WirePromptResultStatus::Cancelled, steps: None }),
        RunOutcome::Failed(e) => Err(Error::new(super::codes::CHAT_PROVIDER_ERROR, e.message)),
    }
}
