//! A scripted fake LLM server on 127.0.0.1 (OpenAI `/v1/chat/completions` and Anthropic
//! `/v1/messages`), running on its own runtime thread. Each request takes the next scripted
//! reply and is recorded (path, headers, body) for assertions.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An SSE stream: `(event name, data)` pairs, a delay before each, and whether to cut the
    /// connection instead of ending normally.
    Sse { events: Vec<(Option<String>, String)>, delay: Duration },
    /// An error status with headers and a body.
    Status { code: u16, headers: Vec<(String, String)>, body: String },
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    replies: VecDeque<Reply>,
    seen: Vec<Seen>,
    /// Set when a client went away before its stream ended.
    disconnected: bool,
}

#[derive(Clone)]
pub struct FakeLlm {
    pub base: String,
    inner: Arc<Mutex<Inner>>,
}

impl FakeLlm {
    /// Starts a server that plays `replies` in order.
    pub fn start(replies: Vec<Reply>) -> FakeLlm {
        let inner = Arc::new(Mutex::new(Inner { replies: replies.into(), ..Inner::default() }));
        let state = inner.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let app = Router::new().route("/v1/chat/completions", post(handle)).route("/v1/messages", post(handle)).with_state(state);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        FakeLlm { base: format!("http://{addr}"), inner }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.inner.lock().unwrap().seen.clone()
    }

    pub fn disconnected(&self) -> bool {
        self.inner.lock().unwrap().disconnected
    }

    /// Writes a models.json for this server into `dir` with one OpenAI-compatible provider
    /// `fake` (models `fake-model` and reasoning `fake-reasoner`) and one Anthropic provider
    /// `fakeclaude`.
    pub fn write_models(&self, dir: &std::path::Path) {
        let models = json!({"providers": {
            "fake": {"api": "openai-completions", "baseUrl": format!("{}/v1", self.base), "apiKey": "sk-fake-secret-123", "models": [
                {"id": "fake-model", "name": "Fake", "contextWindow": 128000, "maxTokens": 4096, "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 0}},
                {"id": "fake-reasoner", "reasoning": true, "maxTokens": 8192}
            ]},
            "fakeclaude": {"api": "anthropic-messages", "baseUrl": self.base.clone(), "apiKey": "sk-ant-fake-456", "models": [
                {"id": "claude-fake", "reasoning": true, "maxTokens": 4096, "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
            ]}
        }});
        std::fs::write(dir.join("models.json"), models.to_string()).unwrap();
    }
}

struct Guard(Arc<Mutex<Inner>>, bool);

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.lock().unwrap().disconnected = true;
        }
    }
}

async fn handle(State(state): State<Arc<Mutex<Inner>>>, uri: axum::http::Uri, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = {
        let mut s = state.lock().unwrap();
        s.seen.push(Seen { path: uri.path().to_owned(), headers, body });
        s.replies.pop_front().unwrap_or_else(|| openai_text(&["(fake default reply)"]))
    };
    match reply {
        Reply::Status { code, headers, body } => {
            let mut r = Response::builder().status(StatusCode::from_u16(code).unwrap()).header("content-type", "application/json");
            for (k, v) in headers {
                r = r.header(k, v);
            }
            r.body(Body::from(body)).unwrap()
        }
        Reply::Sse { events, delay } => {
            let stream = async_stream(events, delay, state);
            Response::builder().status(200).header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
        }
    }
}

fn async_stream(events: Vec<(Option<String>, String)>, delay: Duration, state: Arc<Mutex<Inner>>) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> {
    let total = events.len();
    futures_util::stream::unfold((events.into_iter().enumerate(), Guard(state, false)), move |(mut it, mut guard)| async move {
        let (i, (name, data)) = it.next()?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if i + 1 == total {
            guard.1 = true; // the whole stream was delivered
        }
        let mut text = String::new();
        if let Some(n) = name {
            text.push_str(&format!("event: {n}\n"));
        }
        text.push_str(&format!("data: {data}\n\n"));
        Some((Ok(Bytes::from(text)), (it, guard)))
    })
}

fn data(v: Value) -> (Option<String>, String) {
    (None, v.to_string())
}

/// OpenAI chunks for plain text, a finish reason, usage and `[DONE]`.
pub fn openai_text(parts: &[&str]) -> Reply {
    let mut events: Vec<(Option<String>, String)> =
        parts.iter().map(|p| data(json!({"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":p}}]}))).collect();
    events.push(data(json!({"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})));
    events.push(data(json!({"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":101,"completion_tokens":15,"total_tokens":116,"prompt_tokens_details":{"cached_tokens":20}}})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay: Duration::ZERO }
}

/// OpenAI chunks for reasoning, then text.
pub fn openai_reasoning(thinking: &[&str], text: &str) -> Reply {
    let mut events: Vec<(Option<String>, String)> =
        thinking.iter().map(|t| data(json!({"id":"chatcmpl-2","choices":[{"index":0,"delta":{"reasoning_content":t}}]}))).collect();
    events.push(data(json!({"id":"chatcmpl-2","choices":[{"index":0,"delta":{"content":text}}]})));
    events.push(data(json!({"id":"chatcmpl-2","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay: Duration::ZERO }
}

/// OpenAI chunks for one tool call with its arguments split in pieces.
pub fn openai_tool_call(id: &str, name: &str, args: &str) -> Reply {
    let mut events = vec![data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{"content":"Let me run that."}}]}))];
    events.push(data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]})));
    let chars: Vec<char> = args.chars().collect();
    for piece in chars.chunks(7) {
        let piece: String = piece.iter().collect();
        events.push(data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":piece}}]}}]})));
    }
    events.push(data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay: Duration::ZERO }
}

/// A stream cut mid-way: content, then the connection ends without finish or `[DONE]`.
pub fn openai_cut(parts: &[&str]) -> Reply {
    let events = parts.iter().map(|p| data(json!({"id":"chatcmpl-4","choices":[{"index":0,"delta":{"content":p}}]}))).collect();
    Reply::Sse { events, delay: Duration::ZERO }
}

/// A slow stream: many chunks, `delay` apart.
pub fn openai_slow(chunks: usize, delay: Duration) -> Reply {
    let mut events: Vec<(Option<String>, String)> =
        (0..chunks).map(|i| data(json!({"id":"chatcmpl-5","choices":[{"index":0,"delta":{"content":format!("w{i} ")}}]}))).collect();
    events.push(data(json!({"id":"chatcmpl-5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay }
}

pub fn status(code: u16, headers: &[(&str, &str)], message: &str) -> Reply {
    Reply::Status {
        code,
        headers: headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        body: json!({"error": {"message": message, "type": "fake_error"}}).to_string(),
    }
}

fn named(name: &str, v: Value) -> (Option<String>, String) {
    (Some(name.to_owned()), v.to_string())
}

/// An Anthropic stream: thinking with a signature, text, a tool_use with streamed input.
pub fn anthropic_full() -> Reply {
    let events = vec![
        named("message_start", json!({"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":50,"cache_read_input_tokens":10,"cache_creation_input_tokens":5,"output_tokens":1}}})),
        named("content_block_start", json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})),
        named("content_block_delta", json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}})),
        named("content_block_delta", json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-abc"}})),
        named("content_block_stop", json!({"type":"content_block_stop","index":0})),
        named("content_block_start", json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})),
        named("content_block_delta", json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Listing."}})),
        named("content_block_stop", json!({"type":"content_block_stop","index":1})),
        named("content_block_start", json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}})),
        named("content_block_delta", json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}})),
        named("content_block_delta", json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"th\":\".\"}"}})),
        named("content_block_stop", json!({"type":"content_block_stop","index":2})),
        named("message_delta", json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}})),
        named("message_stop", json!({"type":"message_stop"})),
    ];
    Reply::Sse { events, delay: Duration::ZERO }
}

/// A plain Anthropic text answer.
pub fn anthropic_text(text: &str) -> Reply {
    let events = vec![
        named("message_start", json!({"type":"message_start","message":{"id":"msg_2","usage":{"input_tokens":80,"output_tokens":1}}})),
        named("content_block_start", json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})),
        named("content_block_delta", json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}})),
        named("content_block_stop", json!({"type":"content_block_stop","index":0})),
        named("message_delta", json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}})),
        named("message_stop", json!({"type":"message_stop"})),
    ];
    Reply::Sse { events, delay: Duration::ZERO }
}

/// An Anthropic `error` event mid-stream (overloaded: retryable).
pub fn anthropic_overloaded() -> Reply {
    let events = vec![
        named("message_start", json!({"type":"message_start","message":{"id":"msg_3","usage":{"input_tokens":1,"output_tokens":1}}})),
        named("error", json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
    ];
    Reply::Sse { events, delay: Duration::ZERO }
}
