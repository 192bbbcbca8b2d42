//! The generated [`WireHandler`] trait, implemented by mapping each wire method onto the core.
//!
//! One turn at a time: `prompt` claims the turn before anything else happens (a second prompt
//! is answered -32000 at once), and its result is the turn's outcome, sent after `TurnEnd`.
//! `cancel` is answered first; the abort starts once that answer is queued.

use std::sync::Arc;

use super::project::prompt_result;
use super::{codes, lock, wire_error, WireHost, WIRE_PROTOCOL_VERSION};
use crate::core::{AgentCore, AgentInfo, Submitted};
use crate::jsonrpc::Error;
use crate::protocol::*;

/// One wire session: the core (the built-in [`Agent`], or any [`AgentCore`]) and this
/// dialect's host side.
pub struct WireSession<A> {
    agent: Arc<A>,
    host: Arc<WireHost>,
    info: Arc<AgentInfo>,
}

impl<A> Clone for WireSession<A> {
    fn clone(&self) -> Self {
        Self { agent: self.agent.clone(), host: self.host.clone(), info: self.info.clone() }
    }
}

impl<A> std::fmt::Debug for WireSession<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireSession").field("host", &self.host).finish_non_exhaustive()
    }
}

fn busy() -> Error {
    Error::new(codes::INVALID_STATE, "An agent turn is already in progress")
}

fn idle() -> Error {
    Error::new(codes::INVALID_STATE, "No agent turn is in progress")
}

/// The prompt's text and images (data URLs only; audio and video are refused).
fn user_text(input: &WireUserInput) -> Result<(String, Vec<ImageContent>), Error> {
    match input {
        WireUserInput::String(s) => Ok((s.clone(), Vec::new())),
        WireUserInput::Array(parts) => {
            let mut text = Vec::new();
            let mut images = Vec::new();
            for p in parts {
                match p {
                    WireContentPart::Text(t) => text.push(t.text.clone()),
                    WireContentPart::Think(_) => {}
                    WireContentPart::ImageUrl(i) => {
                        let url = i.image_url.url.as_str();
                        let Some((mime, data)) = url.strip_prefix("data:").and_then(|r| r.split_once(";base64,")) else {
                            return Err(Error::new(codes::LLM_NOT_SUPPORTED, "Only data: image URLs are supported"));
                        };
                        let mime = mime.parse().map_err(|_| Error::new(codes::LLM_NOT_SUPPORTED, format!("Unsupported image type: {mime}")))?;
                        images.push(ImageContent::new(data, mime));
                    }
                    WireContentPart::AudioUrl(_) | WireContentPart::VideoUrl(_) => {
                        return Err(Error::new(codes::LLM_NOT_SUPPORTED, "Audio and video input are not supported"));
                    }
                }
            }
            Ok((text.join("\n"), images))
        }
    }
}

impl<A: AgentCore> WireSession<A> {
    /// A session of `agent` whose host side is `host`.
    pub fn new(agent: A, host: Arc<WireHost>) -> Self {
        Self { agent: Arc::new(agent), host, info: Arc::default() }
    }

    /// The same, naming the agent `info` in `initialize` (agentwire's own name by default).
    #[must_use]
    pub fn with_info(mut self, info: AgentInfo) -> Self {
        self.info = Arc::new(info);
        self
    }

    /// The core.
    pub fn agent(&self) -> &A {
        &self.agent
    }

    /// The host side (client responses go there).
    pub fn host(&self) -> &WireHost {
        &self.host
    }

    /// External tools become host tools, each checked on its own so one bad tool does not sink
    /// the others.
    fn external_tools(&self, tools: &[WireExternalTool]) -> WireExternalToolsResult {
        let (mut accepted, mut rejected, mut defs) = (Vec::new(), Vec::new(), Vec::<HostToolDefinition>::new());
        for t in tools {
            let name = t.name.to_string();
            let reject = |reason: String| WireRejectedTool { name: name.clone(), reason };
            if name == crate::core::port::QUESTION_TOOL && self.host.questions_supported() {
                rejected.push(reject("reserved for the question tool (supports_question)".into()));
                continue;
            }
            let Ok(tool_name) = name.parse::<HostToolDefinitionName>() else {
                rejected.push(reject("invalid tool name (letters, digits, `_` and `-`) or parameters".into()));
                continue;
            };
            let description = if t.description.is_empty() { name.clone() } else { t.description.clone() };
            let def = HostToolDefinition {
                name: tool_name,
                label: None,
                description: crate::protocol::nonempty(&description),
                parameters: t.parameters.clone(),
                hidden: None,
                load_mode: None,
                reads_skill_uris: None,
                timeout_ms: None,
            };
            if defs.iter().any(|d| *d.name == name) {
                rejected.push(reject("duplicate tool name".into()));
                continue;
            }
            match self.agent.set_host_tools(vec![def.clone()]) {
                Ok(_) => {
                    defs.push(def);
                    accepted.push(name);
                }
                Err(e) => rejected.push(reject(e.to_string())),
            }
        }
        // Each was checked alone above, so the whole set is accepted.
        let _ = self.agent.set_host_tools(defs);
        WireExternalToolsResult { accepted, rejected }
    }
}

impl<A: AgentCore> WireHandler for WireSession<A> {
    async fn initialize(&self, request: WireInitializeRequest) -> Result<WireInitializeResult, Error> {
        if self.agent.is_running() || lock(&self.host.turn).active {
            return Err(busy());
        }
        let params = request.params;
        let questions = params.capabilities.as_ref().and_then(|c| c.supports_question).unwrap_or(false);
        self.host.supports_question.store(questions, std::sync::atomic::Ordering::Relaxed);
        let tools = params.external_tools.unwrap_or_default();
        let external_tools = self.external_tools(&tools);
        let slash_commands = self
            .agent
            .commands()
            .commands
            .into_iter()
            .map(|c| WireSlashCommand { name: c.name.to_string(), description: c.description.clone().unwrap_or_default(), aliases: Vec::new() })
            .collect();
        Ok(WireInitializeResult {
            protocol_version: WIRE_PROTOCOL_VERSION.into(),
            server: WireServerInfo { name: self.info.name.clone(), version: self.info.version.clone() },
            slash_commands,
            external_tools: (!tools.is_empty()).then_some(external_tools),
            hooks: Some(WireHooksInfo { supported_events: Vec::new(), configured: Default::default() }),
            capabilities: Some(WireServerCapabilities { supports_question: true, extra: Default::default() }),
        })
    }

    async fn prompt(&self, request: WirePromptRequest) -> Result<WirePromptResult, Error> {
        let input = request.params.user_input;
        let (text, images) = user_text(&input)?;
        {
            // The turn is claimed before anything awaits, so a prompt right behind this one is
            // refused rather than interleaved.
            let mut t = lock(&self.host.turn);
            if t.active || self.agent.is_running() {
                return Err(busy());
            }
            (t.active, t.implicit, t.step, t.interrupted, t.retrying) = (true, false, 0, false, false);
        }
        let claim = TurnClaim { turn: &self.host.turn, armed: true };
        self.host.event(WireTurnBeginEvent::new(WireTurnBeginPayload { user_input: input }).into()).await;
        let submitted = self.agent.prompt(text, images, None).await;
        // From here the run's events (or `turn_end` below) settle the turn.
        claim.disarm();
        match submitted {
            // Started now (TurnBegin is out; its outcome's waiter is the core's); a slash
            // command's turn ends with its settle as a run's does.
            Ok(Submitted::Started(prompt) | Submitted::Handled(prompt)) => {
                let outcome = prompt.outcome().await.ok_or_else(|| Error::internal("The turn ended without an outcome"))?;
                prompt_result(outcome)
            }
            outcome => {
                // Only work the wire did not start can stand in the way (a slash command's
                // composed prompt); the claimed turn is settled either way.
                self.host.turn_end().await;
                Err(match outcome {
                    Err(e) => wire_error(e),
                    Ok(_) => busy(),
                })
            }
        }
    }

    async fn steer(&self, request: WireSteerRequest) -> Result<WireSteerResult, Error> {
        if !lock(&self.host.turn).active {
            return Err(idle());
        }
        let (text, images) = user_text(&request.params.user_input)?;
        match self.agent.steer(text, images).await.map_err(wire_error)? {
            Submitted::Queued => {}
            // The work ended between the check and the steer: the message starts work of its
            // own, at once (the steer's answer says nothing of it).
            Submitted::Started(mut prompt) | Submitted::Handled(mut prompt) => prompt.start(),
        }
        Ok(WireSteerResult::new())
    }

    async fn replay(&self, _request: WireReplayRequest) -> Result<WireReplayResult, Error> {
        if lock(&self.host.turn).active || self.agent.is_running() {
            return Err(busy());
        }
        // Historical frames, marked `replayed`: answers to replayed requests are ignored.
        let records = lock(&self.host.log).records();
        let (mut events, mut requests) = (0u64, 0u64);
        let out = self.host.outbox();
        for record in records {
            let message = record["message"].clone();
            let kind = message["type"].as_str().unwrap_or_default().to_owned();
            if matches!(kind.as_str(), "ToolCallRequest" | "QuestionRequest" | "ApprovalRequest" | "HookRequest") {
                let id = message["payload"]["id"].as_str().unwrap_or_default().to_owned();
                match WireAgentRequestParams::from_value(message) {
                    Ok(params) => {
                        let mut frame = WireAgentRequest::new(crate::protocol::nonempty(&id), params);
                        frame.replayed = Some(true);
                        let _ = out.send(&frame).await;
                        requests += 1;
                    }
                    Err(e) => tracing::warn!("skipping an unreadable {kind} record of the wire log: {e}"),
                }
            } else {
                match WireEvent::from_value(message) {
                    Ok(event) => {
                        let mut frame = WireEventNotification::new(event);
                        frame.replayed = Some(true);
                        let _ = out.send(&frame).await;
                        events += 1;
                    }
                    Err(e) => tracing::warn!("skipping an unreadable {kind} record of the wire log: {e}"),
                }
            }
        }
        Ok(WireReplayResult { status: WireReplayResultStatus::Finished, events, requests })
    }

    async fn cancel(&self, _request: WireCancelRequest) -> Result<WireEmptyResult, Error> {
        if !lock(&self.host.turn).active {
            return Err(idle());
        }
        // The cancel result comes first, then the turn's remaining events, TurnEnd and the
        // prompt's `cancelled` result.
        let answered = self.host.connection().after_answer();
        let agent = self.agent.clone();
        tokio::spawn(async move {
            answered.await;
            agent.abort().await;
        });
        Ok(WireEmptyResult {})
    }

    async fn set_plan_mode(&self, request: WireSetPlanModeRequest) -> Result<WireSetPlanModeResult, Error> {
        let enabled = request.params.enabled;
        lock(&self.host.turn).plan_mode = enabled;
        let status = WireStatusUpdatePayload {
            context_usage: None,
            context_tokens: None,
            max_context_tokens: None,
            token_usage: None,
            message_id: None,
            plan_mode: Some(enabled),
            mcp_status: None,
        };
        self.host.event(WireStatusUpdateEvent::new(status).into()).await;
        Ok(WireSetPlanModeResult::new(enabled))
    }
}

/// The turn a `prompt` claimed, released if the handler ends before the agent took the prompt
/// (a panic unwinding through it, the future dropped): otherwise every later `prompt` would be
/// refused as busy.
struct TurnClaim<'a> {
    turn: &'a std::sync::Mutex<super::Turn>,
    armed: bool,
}

impl TurnClaim<'_> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for TurnClaim<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut t = lock(self.turn);
            (t.active, t.retrying) = (false, false);
        }
    }
}
