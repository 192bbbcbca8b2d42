//! The one scripted fake LLM server on 127.0.0.1, shared by the conformance harness (model
//! replies of a transcript, for agents we did not write) and agentwire's own integration tests
//! (exact SSE streams, HTTP errors with headers, cut and slow streams, request capture).
//!
//! Routes: every `POST …/chat/completions` (OpenAI Chat Completions) and `POST …/messages`
//! (Anthropic Messages) takes the next scripted [`Reply`] and is recorded as a [`Seen`] (path,
//! headers, JSON body). `GET …/models` lists the one model, [`FAKE_MODEL`]. Anything else is a
//! 404. Once the script is exhausted the reply is a fixed text, [`EXHAUSTED_REPLY`].
//!
//! Replies are either given exactly ([`Reply::Sse`], [`Reply::Status`], built by helpers such as
//! [`openai_text`], [`status`], [`anthropic_full`]) or as model-script entries
//! ([`Reply::Script`], the `model` replies of `schema/transcript.schema.json`), which are
//! rendered as Chat Completions chunks when served: `reasoning_content`, `content`, `tool_calls`
//! deltas, a finish chunk, a usage-only chunk, `[DONE]`; an `error` entry is an HTTP error (503
//! when `retryable`, else 400) with an OpenAI-style JSON body. Script entries are always
//! rendered in the OpenAI format, whichever route asked.
//!
//! Plain `std::net`, no async runtime: one thread accepts, one thread per connection, and every
//! response closes its connection, so no keep-alive or chunked encoding is needed (an SSE body
//! simply ends when the connection closes, which is also how a "cut" stream looks). The server
//! stops accepting when dropped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};

/// The model id the fake server reports and accepts.
pub const FAKE_MODEL: &str = "fake-model";

/// Text of the reply once the script is exhausted.
pub const EXHAUSTED_REPLY: &str = "(fake default reply)";

/// One SSE event: an optional `event:` name and the `data:` text.
pub type SseEvent = (Option<String>, String);

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An SSE stream of exactly these events, `delay` before each. The body ends (the connection
    /// closes) after the last event, so a list without a finish chunk or `[DONE]` is a stream
    /// cut mid-way.
    Sse { events: Vec<SseEvent>, delay: Duration },
    /// An HTTP status with extra headers (such as `retry-after`) and a JSON body.
    Status { code: u16, headers: Vec<(String, String)>, body: String },
    /// A model-script entry (`{"text": …, "thinking": …, "toolCalls": […], "error": …, …}`),
    /// rendered as Chat Completions chunks when served.
    Script(Value),
}

impl From<Value> for Reply {
    fn from(entry: Value) -> Self {
        Reply::Script(entry)
    }
}

/// A request the server received on a model route.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request path, such as `/v1/chat/completions`.
    pub path: String,
    pub headers: HeaderMap,
    /// The JSON body (`null` when it was not JSON).
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    seen: Vec<Seen>,
    /// Set when a client went away before its stream was fully written (an abort must drop
    /// the HTTP request, not read it to its end).
    disconnected: bool,
}

/// A running fake LLM server.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
}

/// A poisoned lock only means a connection thread panicked; the recorded state is still the
/// best there is, and the server must keep answering.
fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl FakeLlm {
    /// Starts serving `replies`, one per model request in order, on an ephemeral port.
    pub fn start(replies: Vec<Reply>) -> std::io::Result<FakeLlm> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        // Non-blocking accept so the loop can notice `stop` after the server is dropped.
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared { replies: replies.into(), ..Shared::default() }));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let s = s.clone();
                        std::thread::spawn(move || {
                            if serve(stream, &s).is_err() {
                                // The client hung up (or the request was unreadable) before
                                // the whole response was written.
                                lock(&s).disconnected = true;
                            }
                        });
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Ok(FakeLlm { addr, shared, stop })
    }

    /// Starts serving model-script entries (the transcript's `model` replies), in order.
    pub fn from_script(entries: Vec<Value>) -> std::io::Result<FakeLlm> {
        FakeLlm::start(entries.into_iter().map(Reply::Script).collect())
    }

    /// `http://127.0.0.1:PORT`, the server's origin (an Anthropic client's base URL).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL an OpenAI client is pointed at.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// The model requests received so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.shared).seen.clone()
    }

    /// The JSON bodies of the model requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared).seen.iter().map(|s| s.body.clone()).collect()
    }

    /// Whether a client went away before its response was fully written.
    pub fn disconnected(&self) -> bool {
        lock(&self.shared).disconnected
    }

    /// A models file (`schema/models-file.schema.json`) for this server: an OpenAI-compatible
    /// provider `fake` (models [`FAKE_MODEL`], with costs, and the reasoning `fake-reasoner`) and
    /// an Anthropic provider `fakeclaude` (model `claude-fake`).
    pub fn models_file(&self) -> Value {
        json!({"providers": {
            "fake": {"api": "openai-completions", "baseUrl": self.base_url(), "apiKey": "sk-fake-secret-123", "models": [
                {"id": FAKE_MODEL, "name": "Fake", "contextWindow": 128000, "maxTokens": 4096, "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 0}},
                {"id": "fake-reasoner", "reasoning": true, "maxTokens": 8192}
            ]},
            "fakeclaude": {"api": "anthropic-messages", "baseUrl": self.origin(), "apiKey": "sk-ant-fake-456", "models": [
                {"id": "claude-fake", "reasoning": true, "maxTokens": 4096, "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
            ]}
        }})
    }

    /// Writes [`FakeLlm::models_file`] as `models.json` into the config directory `dir`.
    pub fn write_models(&self, dir: &std::path::Path) -> std::io::Result<()> {
        std::fs::write(dir.join("models.json"), self.models_file().to_string())
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(stream: TcpStream, shared: &Mutex<Shared>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    let mut headers = HeaderMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            }
            if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
                headers.append(name, value);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let mut out = stream;
    if method == "GET" && path.ends_with("/models") {
        let list = json!({"object": "list", "data": [{"id": FAKE_MODEL, "object": "model", "owned_by": "agentwire-fake"}]});
        return respond(&mut out, 200, &[], &list.to_string());
    }
    if method != "POST" || !(path.ends_with("/chat/completions") || path.ends_with("/messages")) {
        let body = json!({"error": {"message": format!("no route for {method} {path}"), "type": "not_found"}});
        return respond(&mut out, 404, &[], &body.to_string());
    }
    let (reply, n) = {
        let mut s = lock(shared);
        s.seen.push(Seen { path: path.to_owned(), headers, body: serde_json::from_slice(&body).unwrap_or(Value::Null) });
        let reply = s.replies.pop_front().unwrap_or_else(|| Reply::Script(json!({"text": EXHAUSTED_REPLY})));
        (reply, s.seen.len())
    };
    match reply {
        Reply::Status { code, headers, body } => respond(&mut out, code, &headers, &body),
        Reply::Sse { events, delay } => stream_events(&mut out, &events, delay),
        Reply::Script(entry) => match entry.get("error").and_then(Value::as_str) {
            Some(message) => {
                let retryable = entry.get("retryable").and_then(Value::as_bool).unwrap_or(false);
                let (code, kind) = if retryable { (503, "server_error") } else { (400, "invalid_request_error") };
                respond(&mut out, code, &[], &json!({"error": {"message": message, "type": kind, "code": code}}).to_string())
            }
            None => {
                let delay = Duration::from_millis(entry.get("delayMs").and_then(Value::as_u64).unwrap_or(0));
                stream_events(&mut out, &script_events(&entry, n), delay)
            }
        },
    }
}

fn respond(out: &mut TcpStream, code: u16, headers: &[(String, String)], body: &str) -> std::io::Result<()> {
    let reason = reqwest::StatusCode::from_u16(code).ok().and_then(|s| s.canonical_reason()).unwrap_or("Unknown");
    let mut head = format!("HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

/// Whether the client has closed its end. Writing to a closed socket can still succeed once
/// (the kernel only learns of the close from the peer's reset), so a slow stream checks before
/// each event instead of relying on the write failing.
fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let closed = matches!(stream.peek(&mut [0u8; 1]), Ok(0));
    let _ = stream.set_nonblocking(false);
    closed
}

fn stream_events(out: &mut TcpStream, events: &[SseEvent], delay: Duration) -> std::io::Result<()> {
    out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n")?;
    out.flush()?;
    for (name, data) in events {
        if !delay.is_zero() {
            std::thread::sleep(delay);
            if peer_closed(out) {
                return Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "the client closed the stream"));
            }
        }
        let mut text = String::new();
        if let Some(name) = name {
            text.push_str(&format!("event: {name}\n"));
        }
        text.push_str(&format!("data: {data}\n\n"));
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size.max(1)).map(|c| c.iter().collect()).collect()
}

/// A script entry's deltas for one block: the exact `…Chunks` list when given, else the string cut by `size`.
fn deltas(entry: &Value, exact: &str, whole: &str, size: usize) -> Vec<String> {
    match (entry.get(exact).and_then(Value::as_array), entry.get(whole).and_then(Value::as_str)) {
        (Some(list), _) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        (None, Some(text)) => chunks(text, size),
        (None, None) => Vec::new(),
    }
}

/// The Chat Completions SSE events for a model-script entry, served as the `n`th request.
fn script_events(entry: &Value, n: usize) -> Vec<SseEvent> {
    let id = format!("chatcmpl-fake-{n}");
    let size = entry.get("chunkSize").and_then(Value::as_u64).unwrap_or(8) as usize;
    let mut events = Vec::new();
    let mut send = |delta: Value, finish: Value| {
        let chunk = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": FAKE_MODEL,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        events.push((None, chunk.to_string()));
    };
    send(json!({"role": "assistant", "content": ""}), Value::Null);
    let mut produced = 0usize;
    for c in deltas(entry, "thinkingChunks", "thinking", size) {
        produced += c.len();
        send(json!({"reasoning_content": c}), Value::Null);
    }
    for c in deltas(entry, "textChunks", "text", size) {
        produced += c.len();
        send(json!({"content": c}), Value::Null);
    }
    let calls = entry.get("toolCalls").and_then(Value::as_array).cloned().unwrap_or_default();
    for (index, call) in calls.iter().enumerate() {
        let call_id = call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{n}_{index}"), str::to_owned);
        send(json!({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": call["name"], "arguments": ""}}]}), Value::Null);
        let arguments = call.get("arguments").map_or_else(|| "{}".to_owned(), Value::to_string);
        let pieces = match call.get("argumentChunks").and_then(Value::as_array) {
            Some(exact) => exact.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            None => chunks(&arguments, size.max(4)),
        };
        for c in pieces {
            produced += c.len();
            send(json!({"tool_calls": [{"index": index, "function": {"arguments": c}}]}), Value::Null);
        }
    }
    let finish = if !calls.is_empty() {
        "tool_calls"
    } else if entry.get("stopReason").and_then(Value::as_str) == Some("length") {
        "length"
    } else {
        "stop"
    };
    send(json!({}), json!(finish));
    let completion = (produced / 4).max(1) as u64;
    let usage = entry.get("usage").cloned().unwrap_or_else(|| json!({"input": 100, "output": completion}));
    let prompt = usage.get("input").and_then(Value::as_u64).unwrap_or(100);
    let output = usage.get("output").and_then(Value::as_u64).unwrap_or(completion);
    let tail = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": FAKE_MODEL, "choices": [],
                      "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}});
    events.push((None, tail.to_string()));
    events.push((None, "[DONE]".to_owned()));
    events
}

fn data(v: Value) -> SseEvent {
    (None, v.to_string())
}

fn named(name: &str, v: Value) -> SseEvent {
    (Some(name.to_owned()), v.to_string())
}

/// OpenAI chunks for plain text, a finish reason, usage (101 prompt tokens of which 20 cached,
/// 15 completion) and `[DONE]`; the response id is `chatcmpl-1`.
pub fn openai_text(parts: &[&str]) -> Reply {
    let mut events: Vec<SseEvent> = parts.iter().map(|p| data(json!({"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":p}}]}))).collect();
    events.push(data(json!({"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})));
    events.push(data(json!({"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":101,"completion_tokens":15,"total_tokens":116,"prompt_tokens_details":{"cached_tokens":20}}})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay: Duration::ZERO }
}

/// OpenAI chunks for reasoning (`reasoning_content`), then text.
pub fn openai_reasoning(thinking: &[&str], text: &str) -> Reply {
    let mut events: Vec<SseEvent> = thinking.iter().map(|t| data(json!({"id":"chatcmpl-2","choices":[{"index":0,"delta":{"reasoning_content":t}}]}))).collect();
    events.push(data(json!({"id":"chatcmpl-2","choices":[{"index":0,"delta":{"content":text}}]})));
    events.push(data(json!({"id":"chatcmpl-2","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay: Duration::ZERO }
}

/// OpenAI chunks for the text "Let me run that." and one tool call whose arguments arrive in
/// pieces of 7 characters.
pub fn openai_tool_call(id: &str, name: &str, args: &str) -> Reply {
    let mut events = vec![data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{"content":"Let me run that."}}]}))];
    events.push(data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]})));
    for piece in chunks(args, 7) {
        events.push(data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":piece}}]}}]})));
    }
    events.push(data(json!({"id":"chatcmpl-3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay: Duration::ZERO }
}

/// A stream cut mid-way: content, then the connection ends without a finish chunk or `[DONE]`.
pub fn openai_cut(parts: &[&str]) -> Reply {
    let events = parts.iter().map(|p| data(json!({"id":"chatcmpl-4","choices":[{"index":0,"delta":{"content":p}}]}))).collect();
    Reply::Sse { events, delay: Duration::ZERO }
}

/// A slow stream: `chunks` text chunks `delay` apart, then a finish chunk and `[DONE]`.
pub fn openai_slow(chunks: usize, delay: Duration) -> Reply {
    let mut events: Vec<SseEvent> = (0..chunks).map(|i| data(json!({"id":"chatcmpl-5","choices":[{"index":0,"delta":{"content":format!("w{i} ")}}]}))).collect();
    events.push(data(json!({"id":"chatcmpl-5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse { events, delay }
}

/// An HTTP error `code` with extra `headers` and an OpenAI-style error body carrying `message`.
pub fn status(code: u16, headers: &[(&str, &str)], message: &str) -> Reply {
    Reply::Status {
        code,
        headers: headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        body: json!({"error": {"message": message, "type": "fake_error"}}).to_string(),
    }
}

/// An Anthropic stream: thinking with a signature, text, a `tool_use` of `ls` with streamed
/// input, cache usage, stop reason `tool_use`.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn post(llm: &FakeLlm, path: &str, extra: &str, body: &Value) -> (u16, String) {
        let mut s = TcpStream::connect(llm.addr).unwrap();
        let text = body.to_string();
        write!(s, "POST {path} HTTP/1.1\r\nhost: x\r\n{extra}content-type: application/json\r\ncontent-length: {}\r\n\r\n{text}", text.len()).unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        let status = response[9..12].parse().unwrap();
        (status, response)
    }

    #[test]
    fn streams_text_tool_calls_and_errors_in_script_order() {
        let llm = FakeLlm::from_script(vec![
            json!({"thinking": "hm", "text": "Hello there", "chunkSize": 5}),
            json!({"toolCalls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]}),
            json!({"error": "overloaded", "retryable": true}),
        ])
        .unwrap();
        let (status, body) = post(&llm, "/v1/chat/completions", "", &json!({"model": FAKE_MODEL, "messages": []}));
        assert_eq!(status, 200);
        assert!(body.contains(r#""reasoning_content":"hm""#) && body.contains(r#""content":"Hello""#) && body.contains(r#""content":" ther""#));
        assert!(body.contains(r#""finish_reason":"stop""#) && body.trim_end().ends_with("data: [DONE]"));
        let (_, body) = post(&llm, "/v1/chat/completions", "", &json!({}));
        assert!(body.contains(r#""id":"c1""#) && body.contains(r#""finish_reason":"tool_calls""#));
        let (status, body) = post(&llm, "/v1/chat/completions", "", &json!({}));
        assert_eq!(status, 503);
        assert!(body.contains("overloaded"));
        let (_, body) = post(&llm, "/v1/chat/completions", "", &json!({}));
        assert!(body.contains(&format!(r#""content":"{}""#, &EXHAUSTED_REPLY[..8])), "{body}");
        assert_eq!(llm.requests().len(), 4);
    }

    #[test]
    fn exact_deltas_are_streamed_as_given() {
        let llm = FakeLlm::from_script(vec![json!({"textChunks": ["Hel", "lo, wor", "ld"], "text": "ignored",
                                                   "toolCalls": [{"name": "ls", "arguments": {"path": "."}, "argumentChunks": ["{\"path\": ", "\".\"}"]}]})])
        .unwrap();
        let (_, body) = post(&llm, "/v1/chat/completions", "", &json!({}));
        let contents: Vec<&str> = body.match_indices(r#""content":""#).map(|(i, m)| body[i + m.len()..].split('"').next().unwrap()).collect();
        assert_eq!(contents, ["", "Hel", "lo, wor", "ld"]);
        assert!(body.contains(r#""arguments":"{\"path\": ""#) && body.contains(r#""arguments":"\".\"}""#), "{body}");
    }

    #[test]
    fn exact_replies_keep_their_status_headers_and_events_and_requests_are_recorded() {
        let llm = FakeLlm::start(vec![status(429, &[("retry-after", "0.3")], "slow down"), anthropic_text("hi")]).unwrap();
        let (code, response) = post(&llm, "/v1/chat/completions", "authorization: Bearer k\r\n", &json!({"n": 1}));
        assert_eq!(code, 429);
        assert!(response.contains("retry-after: 0.3\r\n") && response.contains("slow down"), "{response}");
        let (code, response) = post(&llm, "/v1/messages", "x-api-key: a\r\n", &json!({"n": 2}));
        assert_eq!(code, 200);
        assert!(response.contains("event: message_start\ndata: {") && response.contains(r#""text":"hi""#), "{response}");
        let (code, _) = post(&llm, "/v1/other", "", &json!({}));
        assert_eq!(code, 404);
        let seen = llm.seen();
        assert_eq!(seen.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(), ["/v1/chat/completions", "/v1/messages"], "404s are not model requests");
        assert_eq!(seen[0].headers["authorization"], "Bearer k");
        assert_eq!(seen[1].headers["x-api-key"], "a");
        assert_eq!((&seen[0].body, &seen[1].body), (&json!({"n": 1}), &json!({"n": 2})));
        assert!(!llm.disconnected());
    }
}
