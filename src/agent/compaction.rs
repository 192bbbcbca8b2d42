//! Compaction: the older part of the branch is summarised by the current model and replaced,
//! for later requests, by the summary plus the recent messages (`keep_tokens` worth, cut at a
//! user message so no tool call is separated from its result). Manual (`compact`), automatic
//! when the context estimate crosses `threshold` × the model's window, and after a
//! context-overflow error (then the failed request is retried once).

use tokio_util::sync::CancellationToken;

use super::events::{AgentEvent, CompactionReason};
use super::Agent;
use crate::core::CoreError;
use crate::protocol::*;
use crate::providers::{ModelChunk, ModelRequest, Purpose};
use crate::sessions::{message_text, ContextItem, Payload};

/// Why nothing was compacted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactionError {
    /// The branch ends in a compaction already.
    #[error("Already compacted")]
    AlreadyCompacted,
    /// Too little conversation to summarise.
    #[error("Nothing to compact (the conversation is too small)")]
    NothingToCompact,
    /// The run was aborted while summarising.
    #[error("Compaction aborted")]
    Aborted,
    /// The model failed or returned nothing usable.
    #[error("Compaction failed: {0}")]
    Model(String),
    /// The summary could not be saved.
    #[error("could not write the session file: {0}")]
    Write(String),
}

impl From<CompactionError> for CoreError {
    fn from(e: CompactionError) -> Self {
        match e {
            CompactionError::AlreadyCompacted | CompactionError::NothingToCompact => CoreError::Conflict(e.to_string()),
            CompactionError::Aborted | CompactionError::Model(_) | CompactionError::Write(_) => CoreError::Internal(e.to_string()),
        }
    }
}

/// When compaction happens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionPolicy {
    /// Share of the context window that triggers automatic compaction (0–1).
    pub threshold: f64,
    /// Tokens of recent conversation kept verbatim.
    pub keep_tokens: u64,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        Self { threshold: 0.8, keep_tokens: 20_000 }
    }
}

/// A rough token estimate (4 characters per token), enough to decide when and where to cut.
pub fn estimate(message: &AgentMessage) -> u64 {
    serde_json::to_string(message).map_or(0, |s| s.len() as u64 / 4)
}

/// [`estimate`] for the stored context, from the messages' text without parsing them.
fn context_tokens(context: &[ContextItem]) -> u64 {
    context.iter().map(|m| m.json_len() as u64 / 4).sum()
}

fn transcript(previous: Option<&str>, messages: &[(String, AgentMessage)]) -> String {
    let mut out = String::new();
    if let Some(p) = previous {
        out.push_str(&format!("Summary of the conversation before this part:\n{p}\n\n"));
    }
    for (_, m) in messages {
        let line = match m {
            AgentMessage::User(_) => format!("user: {}", message_text(m)),
            AgentMessage::Assistant(a) => {
                let calls: Vec<String> = a.content.iter().filter_map(|c| if let AssistantContent::ToolCall(t) = c { Some(format!("{}({})", *t.name, serde_json::Value::Object(t.arguments.clone()))) } else { None }).collect();
                format!("assistant: {}{}", message_text(m), if calls.is_empty() { String::new() } else { format!(" [calls: {}]", calls.join(", ")) })
            }
            AgentMessage::ToolResult(r) => format!("tool {}: {}", r.tool_name, message_text(m).chars().take(500).collect::<String>()),
            _ => format!("note: {}", message_text(m).chars().take(500).collect::<String>()),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn details(messages: &[(String, AgentMessage)]) -> CompactionDetails {
    let (mut read, mut modified) = (Vec::new(), Vec::new());
    for (_, m) in messages {
        let AgentMessage::Assistant(a) = m else { continue };
        for c in &a.content {
            let AssistantContent::ToolCall(t) = c else { continue };
            let Some(path) = t.arguments.get("path").and_then(|p| p.as_str()) else { continue };
            let list = match t.name.as_str() {
                "read" => &mut read,
                "write" | "edit" => &mut modified,
                _ => continue,
            };
            if !list.iter().any(|p: &String| p == path) {
                list.push(path.to_owned());
            }
        }
    }
    CompactionDetails { read_files: read, modified_files: modified }
}

/// What a compaction would do: the previous summary, the messages to summarise and those kept.
pub struct Plan {
    previous: Option<String>,
    older: Vec<(String, AgentMessage)>,
    kept: Vec<(String, AgentMessage)>,
    tokens_before: u64,
}

/// Decides what to compact; `Err` says why nothing can be.
pub fn plan(agent: &Agent) -> Result<Plan, CompactionError> {
    let keep = agent.inner.config.compaction.keep_tokens;
    let (previous, list, tokens_before) = {
        let st = agent.state();
        let (previous, list) = st.session.compactable().ok_or(CompactionError::AlreadyCompacted)?;
        (previous, list, context_tokens(st.session.context()))
    };
    // The earliest user message from which the rest fits in `keep` tokens.
    let mut suffix = 0;
    let mut cut = None;
    for (i, (_, m)) in list.iter().enumerate().rev() {
        suffix += estimate(m);
        if matches!(m, AgentMessage::User(_)) {
            if suffix <= keep || cut.is_none() {
                cut = Some(i);
            }
            if suffix > keep {
                break;
            }
        }
    }
    let cut = cut.filter(|c| *c > 0).ok_or(CompactionError::NothingToCompact)?;
    let (older, kept) = list.split_at(cut);
    Ok(Plan { previous, older: older.to_vec(), kept: kept.to_vec(), tokens_before })
}

/// Summarises and records a compaction. `Err` says why nothing was compacted.
pub async fn compact(agent: &Agent, custom: Option<&str>, cancel: &CancellationToken) -> Result<CompactionResult, CompactionError> {
    let Plan { previous, older, kept, tokens_before } = plan(agent)?;
    let older = older.as_slice();
    let mut system = "You summarise a coding session so it can continue without its full history. Keep decisions, facts learned, \
                      files touched and open tasks; be concise; use Markdown."
        .to_owned();
    if let Some(c) = custom.filter(|c| !c.trim().is_empty()) {
        system.push_str(&format!("\n\nAdditional instructions: {c}"));
    }
    let text = transcript(previous.as_deref(), older);
    let user = AgentMessage::User(UserMessage {
        role: Default::default(),
        content: UserContent::Array(vec![crate::tools::text_content(text)]),
        timestamp: super::now_ms(),
        attribution: None,
        steering: None,
    });
    let request = ModelRequest { system, messages: vec![user], tools: Vec::new(), thinking: ThinkingLevel::Off, purpose: Purpose::Compaction };
    let mut stream = agent.current().provider.stream(request);
    let mut summary = String::new();
    loop {
        let chunk = tokio::select! {
            () = cancel.cancelled() => return Err(CompactionError::Aborted),
            c = stream.next() => c,
        };
        match chunk {
            Some(ModelChunk::Text(t)) => summary.push_str(&t),
            Some(ModelChunk::Done { .. }) => break,
            Some(ModelChunk::Error(e)) => return Err(CompactionError::Model(e.message)),
            Some(_) => {}
            None => return Err(CompactionError::Model("the provider stream ended unexpectedly".into())),
        }
    }
    if summary.trim().is_empty() {
        return Err(CompactionError::Model("the model returned an empty summary".into()));
    }
    let first_kept = kept[0].0.clone();
    let details = details(older);
    {
        let mut st = agent.state();
        let saved = st.session.append(Payload::Compaction { summary: summary.clone(), first_kept_entry_id: first_kept.clone(), tokens_before, details: Some(details.clone()) });
        // The compaction holds in memory either way (the session's context now starts with it);
        // a failed write is retried with the next.
        saved.map_err(|e| CompactionError::Write(e.to_string()))?;
    }
    Ok(CompactionResult { summary, first_kept_entry_id: first_kept, tokens_before, details: Some(details), short_summary: None, estimated_tokens_after: None, usage: None })
}

/// Whether the conversation has outgrown the automatic-compaction threshold.
pub fn over_threshold(agent: &Agent) -> bool {
    let st = agent.state();
    if !st.auto_compaction {
        return false;
    }
    let window = agent.inner.models[st.current_model].info.context_window as f64;
    let used = context_tokens(st.session.context());
    used as f64 > window * agent.inner.config.compaction.threshold
}

/// Runs an automatic compaction with its `CompactionStart` / `CompactionEnd` events (none at
/// all when there is nothing to compact).
pub async fn auto_compact(agent: &Agent, reason: CompactionReason, will_retry: bool, cancel: &CancellationToken) -> bool {
    if plan(agent).is_err() {
        return false;
    }
    agent.emit(AgentEvent::CompactionStart { reason }).await;
    let outcome = compact(agent, None, cancel).await;
    let ok = outcome.is_ok();
    agent.emit(AgentEvent::CompactionEnd { reason, result: outcome.map_err(CoreError::from), aborted: cancel.is_cancelled(), will_retry: will_retry && ok }).await;
    ok
}
