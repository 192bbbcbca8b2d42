//! The built-in offline model: deterministic, no network, no key.
//!
//! Without a script it answers with a short text derived from the conversation (thinking
//! first when a thinking level is set), streamed in chunks like a real model. With
//! `--model-script FILE` (JSONL of `ModelScriptEntry`, see `schema/model-script.schema.json`)
//! it plays one entry per request, in order, and falls back to the default answer when the
//! script runs out.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use std::sync::Arc;

use super::{ChunkStream, ModelChunk, ModelRequest, Provider, ProviderError, TokenUsage};
use crate::protocol::{AgentMessage, ModelScriptEntry, ModelScriptEntryStopReason, TextOrImageContent, ThinkingLevel};

/// Default characters per delta.
const DEFAULT_CHUNK: usize = 8;

/// A chunk and the delay before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// Wait this long before emitting the chunk.
    pub delay: Duration,
    /// The chunk.
    pub chunk: ModelChunk,
}

/// The offline model with its (optional) script.
#[derive(Debug, Default)]
pub struct OfflineModel {
    script: Mutex<VecDeque<ModelScriptEntry>>,
    calls: Mutex<u64>,
}

/// Why a `--model-script` file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Line `line` (1-based) is not JSON or not a `ModelScriptEntry`.
    #[error("{}:{line}: {reason}", path.display())]
    Line { path: PathBuf, line: usize, reason: String },
}

impl OfflineModel {
    /// A model playing `entries` in order.
    pub fn scripted(entries: Vec<ModelScriptEntry>) -> Self {
        Self { script: Mutex::new(entries.into()), calls: Mutex::new(0) }
    }

    /// Loads a script file; errors name the line.
    pub fn from_script_file(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read { path: path.to_path_buf(), source })?;
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = |reason: String| ScriptError::Line { path: path.to_path_buf(), line: i + 1, reason };
            let value: serde_json::Value = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
            crate::protocol::validate::validator().validate_def("ModelScriptEntry", &value).map_err(|e| at(e.to_string()))?;
            entries.push(crate::protocol::decode::from_value(value).map_err(|e| at(e.to_string()))?);
        }
        Ok(Self::scripted(entries))
    }

    /// The reply to a request, as timed chunks ending in `Done` or `Error`.
    pub fn reply(&self, request: &ModelRequest) -> Vec<Timed> {
        let call = {
            let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
            *calls += 1;
            *calls
        };
        let entry = self.script.lock().unwrap_or_else(|e| e.into_inner()).pop_front().unwrap_or_else(|| default_reply(request));
        play(&entry, call)
    }
}

/// The unscripted answer: derived from the last message (for compaction: a summary listing
/// what the user asked).
fn default_reply(request: &ModelRequest) -> ModelScriptEntry {
    let (text, thinking) = match request.messages.last() {
        Some(AgentMessage::User(u)) if request.purpose == super::Purpose::Compaction => {
            let asked: Vec<String> = user_text(&u.content)
                .lines()
                .filter_map(|l| l.strip_prefix("user: "))
                .map(|l| format!("- {}", l.chars().take(120).collect::<String>()))
                .collect();
            (format!("## Summary\nThe user asked:\n{}", asked.join("\n")), "Summarise the conversation.".to_owned())
        }
        Some(AgentMessage::ToolResult(r)) => {
            let lines: usize = r.content.iter().map(|c| if let TextOrImageContent::Text(t) = c { t.text.lines().count() } else { 0 }).sum();
            let outcome = if r.is_error { "failed" } else { "finished" };
            (format!("The `{}` tool {outcome} and returned {lines} lines.", r.tool_name), format!("The {} tool {outcome}; summarise it.", r.tool_name))
        }
        Some(AgentMessage::User(u)) => {
            let said = user_text(&u.content);
            let short: String = said.chars().take(200).collect();
            (
                format!("You said: \"{short}\". I am agentwire's built-in offline model, so I can only echo; configure a provider for real answers."),
                format!("The user wrote {} characters; answer deterministically.", said.chars().count()),
            )
        }
        _ => ("Hello from agentwire's built-in offline model.".to_owned(), "Nothing to respond to; greet.".to_owned()),
    };
    ModelScriptEntry {
        thinking: (request.thinking != ThinkingLevel::Off).then_some(thinking),
        text: Some(text),
        text_chunks: None,
        thinking_chunks: None,
        tool_calls: None,
        error: None,
        retryable: None,
        chunk_size: None,
        delay_ms: None,
        stop_reason: None,
        usage: None,
    }
}

pub use crate::protocol::user_text;

fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size.max(1)).map(|c| c.iter().collect()).collect()
}

fn play(entry: &ModelScriptEntry, call: u64) -> Vec<Timed> {
    let size = entry.chunk_size.map_or(DEFAULT_CHUNK, |n| n.get() as usize);
    let delay = Duration::from_millis(entry.delay_ms.unwrap_or(0));
    let mut out = Vec::new();
    let mut push = |chunk| out.push(Timed { delay, chunk });
    let mut streamed_chars = 0;
    // Exact deltas (`thinkingChunks` / `textChunks`) win over a string cut by `chunkSize`.
    let deltas = |exact: &Option<Vec<String>>, whole: &Option<String>| match (exact, whole) {
        (Some(exact), _) => exact.clone(),
        (None, Some(whole)) => chunks(whole, size),
        (None, None) => Vec::new(),
    };
    for c in deltas(&entry.thinking_chunks, &entry.thinking) {
        streamed_chars += c.chars().count();
        push(ModelChunk::Thinking(c));
    }
    for c in deltas(&entry.text_chunks, &entry.text) {
        streamed_chars += c.chars().count();
        push(ModelChunk::Text(c));
    }
    for (i, tc) in entry.tool_calls.iter().flatten().enumerate() {
        let id = tc.id.as_ref().map_or_else(|| format!("call_{call}_{}", i + 1), |id| id.to_string());
        push(ModelChunk::ToolCallStart { id, name: tc.name.to_string() });
        let args = match &tc.argument_chunks {
            Some(exact) => exact.clone(),
            None => chunks(&serde_json::to_string(&tc.arguments).unwrap_or_else(|_| "{}".into()), size),
        };
        for c in args {
            streamed_chars += c.chars().count();
            push(ModelChunk::ToolCallArgs(c));
        }
    }
    if let Some(error) = &entry.error {
        let mut e = ProviderError::fatal(error.clone());
        e.retryable = entry.retryable.unwrap_or(false);
        push(ModelChunk::Error(e));
        return out;
    }
    let (input_tokens, output_tokens) = match &entry.usage {
        Some(u) => (u.input, u.output),
        None => (100, (streamed_chars as u64).div_ceil(4)),
    };
    push(ModelChunk::Done {
        length_limited: entry.stop_reason == Some(ModelScriptEntryStopReason::Length),
        usage: TokenUsage { input: input_tokens, output: output_tokens, cache_read: 0, cache_write: 0, reasoning: None },
        response_id: Some(format!("offline-{call}")),
    });
    out
}

/// The offline model as a [`Provider`]: plays its chunks with their delays.
#[derive(Debug)]
pub struct OfflineProvider {
    model: Arc<OfflineModel>,
}

impl OfflineProvider {
    /// A provider answering with `model`.
    pub fn new(model: Arc<OfflineModel>) -> Self {
        Self { model }
    }
}

impl Provider for OfflineProvider {
    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let chunks = self.model.reply(&request);
        ChunkStream::spawn(move |tx| async move {
            for timed in chunks {
                if !timed.delay.is_zero() {
                    tokio::time::sleep(timed.delay).await;
                }
                if tx.send(timed.chunk).await.is_err() {
                    return;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(text: &str, thinking: ThinkingLevel) -> ModelRequest {
        let user: AgentMessage =
            serde_json::from_value(json!({"role":"user","content":[{"type":"text","text":text}],"timestamp":1})).unwrap();
        ModelRequest { system: String::new(), messages: vec![user], tools: vec![], thinking, purpose: super::super::Purpose::Turn }
    }

    fn texts(chunks: &[Timed]) -> String {
        chunks.iter().filter_map(|c| if let ModelChunk::Text(t) = &c.chunk { Some(t.as_str()) } else { None }).collect()
    }

    #[test]
    fn script_file_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.jsonl");
        std::fs::write(&path, "{\"text\":\"ok\"}\n\n{\"text\": 5}\n").unwrap();
        let err = OfflineModel::from_script_file(&path).unwrap_err();
        assert!(matches!(&err, ScriptError::Line { line: 3, .. }), "{err:?}");
        assert!(err.to_string().starts_with(&format!("{}:3: ", path.display())), "{err}");
        let missing = dir.path().join("missing.jsonl");
        assert!(matches!(OfflineModel::from_script_file(&missing), Err(ScriptError::Read { path, .. }) if path == missing));
    }

    #[test]
    fn default_reply_is_derived_from_the_prompt_and_streams_in_chunks() {
        let m = OfflineModel::default();
        let r = m.reply(&request("hello", ThinkingLevel::Off));
        assert!(texts(&r).starts_with("You said: \"hello\"."));
        assert!(r.iter().filter(|c| matches!(c.chunk, ModelChunk::Text(_))).count() > 3);
        assert!(matches!(r.last().unwrap().chunk, ModelChunk::Done { .. }));
        assert!(!r.iter().any(|c| matches!(c.chunk, ModelChunk::Thinking(_))));
        let r = m.reply(&request("hello", ThinkingLevel::High));
        assert!(matches!(r[0].chunk, ModelChunk::Thinking(_)));
    }

    #[test]
    fn exact_deltas_win_over_chunk_size() {
        let entry = serde_json::from_value(json!({"thinkingChunks":["a","bc"],"textChunks":["Hel","lo"],"text":"ignored","chunkSize":1,
                                                 "toolCalls":[{"name":"ls","arguments":{"path":"."},"argumentChunks":["{\"path\"",": \".\"}"]}]}))
        .unwrap();
        let played = play(&entry, 1);
        let kinds: Vec<String> = played
            .iter()
            .filter_map(|t| match &t.chunk {
                ModelChunk::Thinking(c) => Some(format!("think:{c}")),
                ModelChunk::Text(c) => Some(format!("text:{c}")),
                ModelChunk::ToolCallArgs(c) => Some(format!("args:{c}")),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, ["think:a", "think:bc", "text:Hel", "text:lo", "args:{\"path\"", "args:: \".\"}"]);
    }

    #[test]
    fn scripts_play_in_order_then_fall_back() {
        let entries: Vec<ModelScriptEntry> = vec![
            serde_json::from_value(json!({"text":"ab","toolCalls":[{"name":"ls","arguments":{"path":"."}}],"chunkSize":1,"delayMs":5})).unwrap(),
            serde_json::from_value(json!({"error":"boom"})).unwrap(),
        ];
        let m = OfflineModel::scripted(entries);
        let r = m.reply(&request("x", ThinkingLevel::Off));
        let kinds: Vec<&ModelChunk> = r.iter().map(|c| &c.chunk).collect();
        assert_eq!(kinds[0], &ModelChunk::Text("a".into()));
        assert_eq!(kinds[2], &ModelChunk::ToolCallStart { id: "call_1_1".into(), name: "ls".into() });
        let args: String = r.iter().filter_map(|c| if let ModelChunk::ToolCallArgs(a) = &c.chunk { Some(a.as_str()) } else { None }).collect();
        assert_eq!(args, r#"{"path":"."}"#);
        assert_eq!(r[0].delay, Duration::from_millis(5));
        assert_eq!(m.reply(&request("x", ThinkingLevel::Off)).last().unwrap().chunk, ModelChunk::Error(ProviderError::fatal("boom")));
        assert!(texts(&m.reply(&request("x", ThinkingLevel::Off))).starts_with("You said"));
    }
}
