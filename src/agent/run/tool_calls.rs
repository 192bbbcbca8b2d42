//! The tool calls of one assistant message: started as their arguments complete, run side by
//! side, approved one at a time, routed to a built-in, host, question or MCP tool.

use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::QUESTION_TOOL;
use crate::agent::approval::{CallKind, Refused};
use crate::agent::events::AgentEvent;
use crate::agent::port::{Question, QuestionAsk, ToolAsk};
use crate::agent::{nonempty, now_ms, Agent};
use crate::protocol::*;
use crate::tools::{self, ToolOutput};

/// The question tool's definition: its parameters are a list of [`Question`]s.
pub(super) fn question_tool() -> &'static ToolInfo {
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
pub(super) struct ToolCalls<'a> {
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
    pub(super) fn new(agent: &'a Agent, run_cancel: &CancellationToken) -> Self {
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
    pub(super) async fn start_early(&mut self, index: usize, call: ToolCall) {
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
    pub(super) async fn next_finished(&mut self) {
        match self.running.next().await {
            Some(done) => self.finished.push(done),
            None => std::future::pending().await,
        }
    }

    /// The message failed or was aborted, so it keeps none of its calls: the started ones are
    /// cancelled and awaited (each reports its end, and no child process outlives it) and their
    /// results dropped with the message. A retried attempt starts its calls afresh.
    pub(super) async fn abandon(&mut self) {
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
    pub(super) async fn finish(mut self, calls: &[ToolCall]) -> (Vec<ToolResultMessage>, bool) {
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
    agent.emit(AgentEvent::ToolEnd { call, result: &result, is_error: output.is_error, change: output.change.as_ref() }).await;
    let message = ToolResultMessage {
        role: Default::default(),
        tool_call_id: nonempty(&call.id),
        tool_name: call.name.to_string(),
        content: result.content,
        details: result.details,
        is_error: output.is_error,
        timestamp: now_ms(),
        usage: None,
        nested_calls: None,
        duration_ms: None,
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
    let ctx = agent.tool_context(cancel);
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
    let questions: Vec<Question> = match call.arguments.get("questions").cloned().map(crate::protocol::decode::from_value) {
        Some(Ok(q)) => q,
        Some(Err(e)) => return ToolOutput::error(format!("{QUESTION_TOOL}: invalid questions: {e}")),
        None => return ToolOutput::error(format!("{QUESTION_TOOL}: questions are required")),
    };
    // No answer (declined, failed or aborted) is an empty answer, as in kimi: the model goes on.
    let answers = agent.port().ask_questions(QuestionAsk { call, questions, cancel }).await.unwrap_or_default();
    let answers = Value::Object(answers);
    ToolOutput::text(json!({"answers": answers}).to_string()).with_details(json!({"answers": answers}))
}
