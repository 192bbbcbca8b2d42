//! The one scripted fake LLM server on 127.0.0.1, shared by the conformance harness (model
//! replies of a transcript, for agents we did not write) and agentwire's own integration tests
//! (exact SSE streams, HTTP errors with headers, cut and slow streams, request capture).
//!
//! Routes, one per major provider API, each streaming: `POST …/chat/completions` (OpenAI Chat
//! Completions), `POST …/responses` (OpenAI Responses), `POST …/messages` (Anthropic Messages)
//! and `POST …/models/M:streamGenerateContent` (Gemini, `alt=sse`). Each model request takes
//! the next scripted [`Reply`] and is recorded as a [`Seen`] (path, headers, JSON body).
//! `GET …/models` lists the one model, [`FAKE_MODEL`]. Anything else is a 404. Once the script
//! is exhausted the reply is a fixed text, [`EXHAUSTED_REPLY`].
//!
//! Side requests do not use up the script: an agent's own bookkeeping (a title for the session,
//! a token count, a check whether to go on) is answered with [`SIDE_REPLY`] (or `{}` when the
//! request asks for JSON), so the scripted replies stay aligned with the conversation. A side
//! request is a Gemini `countTokens` or non-streaming `generateContent`, a request that does
//! not stream, or one without tools whose instructions ask for a title (opencode's first
//! request). They are recorded in [`FakeLlm::side_requests`], not in [`FakeLlm::seen`].
//!
//! Replies are either given exactly ([`Reply::Sse`], [`Reply::Status`], built by helpers such as
//! [`openai_text`], [`status`], [`anthropic_full`]) or as model-script entries
//! ([`Reply::Script`], the `model` replies of `schema/transcript.schema.json`), which are
//! rendered in the API the request used: thinking, text and tool-call deltas, the finish, usage;
//! an `error` entry is an HTTP error (503 when `retryable`, else 400) with that API's error body.
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

/// Text of the reply to a side request (a title, a token count, a next-speaker check).
pub const SIDE_REPLY: &str = "Conformance session";

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
    /// Side requests, answered by default.
    side: Vec<Seen>,
    /// Set when a client went away before its stream was fully written (an abort must drop
    /// the HTTP request, not read it to its end).
    disconnected: bool,
    /// When each SSE event of the model requests' streams was written, in order.
    written: Vec<std::time::Instant>,
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
        FakeLlm::start_on("127.0.0.1:0", replies)
    }

    /// Starts serving `replies` on `addr` (`127.0.0.1:0` for an ephemeral port).
    pub fn start_on(addr: &str, replies: Vec<Reply>) -> std::io::Result<FakeLlm> {
        let listener = TcpListener::bind(addr)?;
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

    /// Appends model-script entries to the replies still to serve.
    pub fn push_script(&self, entries: Vec<Value>) {
        lock(&self.shared).replies.extend(entries.into_iter().map(Reply::Script));
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The side requests answered by default so far (titles, token counts, …).
    pub fn side_requests(&self) -> Vec<Seen> {
        lock(&self.shared).side.clone()
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

    /// When each SSE event of the model requests' streams was written to the socket, in order
    /// (side requests' streams are not counted): what a benchmark compares the client's reading
    /// times with. A stream's times are added once it is fully written.
    pub fn written(&self) -> Vec<std::time::Instant> {
        lock(&self.shared).written.clone()
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
    if method == "GET" && (path.ends_with("/models") || path.contains("/models/")) {
        let list = json!({"object": "list", "data": [{"id": FAKE_MODEL, "object": "model", "owned_by": "agentwire-fake"}],
                          "models": [{"name": format!("models/{FAKE_MODEL}"), "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]}]});
        return respond(&mut out, 200, &[], &list.to_string());
    }
    let Some(api) = (method == "POST").then(|| Api::of(path)).flatten() else {
        let body = json!({"error": {"message": format!("no route for {method} {path}"), "type": "not_found"}});
        return respond(&mut out, 404, &[], &body.to_string());
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    // A Responses client that stores nothing asks for its reasoning back, encrypted.
    let encrypted = body.get("include").and_then(Value::as_array).is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"));
    let seen = Seen { path: path.to_owned(), headers, body };
    if let Some(side) = side_request(api, &seen.body) {
        lock(shared).side.push(seen);
        return answer_side(&mut out, api, side);
    }
    let (reply, n) = {
        let mut s = lock(shared);
        s.seen.push(seen);
        let reply = s.replies.pop_front().unwrap_or_else(|| Reply::Script(json!({"text": EXHAUSTED_REPLY})));
        (reply, s.seen.len())
    };
    match reply {
        Reply::Status { code, headers, body } => respond(&mut out, code, &headers, &body),
        Reply::Sse { events, delay } => stream_recorded(&mut out, &events, delay, shared),
        Reply::Script(entry) => match entry.get("error").and_then(Value::as_str) {
            Some(message) => {
                let retryable = entry.get("retryable").and_then(Value::as_bool).unwrap_or(false);
                let code = if retryable { 503 } else { 400 };
                // A retryable error says "retry at once": provider layers that retry on their own
                // (and cannot be told not to) then do so without sleeping through the run.
                let headers = if retryable { vec![("retry-after-ms".to_owned(), "0".to_owned())] } else { Vec::new() };
                respond(&mut out, code, &headers, &api.error_body(code, message).to_string())
            }
            None => {
                let delay = Duration::from_millis(entry.get("delayMs").and_then(Value::as_u64).unwrap_or(0));
                let content = Content::of(&entry, n);
                let events = match api {
                    Api::ChatCompletions => chat_events(&content),
                    Api::Responses => responses_events(&content, encrypted),
                    Api::Anthropic | Api::AnthropicCount => anthropic_events(&content),
                    Api::Gemini | Api::GeminiOnce | Api::GeminiCount => gemini_events(&content),
                };
                stream_recorded(&mut out, &events, delay, shared)
            }
        },
    }
}

/// The provider API a model route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// `POST …/chat/completions`.
    ChatCompletions,
    /// `POST …/responses`.
    Responses,
    /// `POST …/messages`.
    Anthropic,
    /// `POST …/messages/count_tokens`.
    AnthropicCount,
    /// `POST …/models/M:streamGenerateContent`.
    Gemini,
    /// `POST …/models/M:generateContent`, not streamed (gemini-cli's side checks).
    GeminiOnce,
    /// `POST …/models/M:countTokens`.
    GeminiCount,
}

/// Model routes by the end of their path (Gemini's name the method after the model: `…/models/M:countTokens`).
const ROUTES: [(&str, Api); 7] = [
    ("/chat/completions", Api::ChatCompletions),
    ("/responses", Api::Responses),
    ("/messages", Api::Anthropic),
    ("/messages/count_tokens", Api::AnthropicCount),
    (":streamGenerateContent", Api::Gemini),
    (":generateContent", Api::GeminiOnce),
    (":countTokens", Api::GeminiCount),
];

impl Api {
    fn of(path: &str) -> Option<Api> {
        ROUTES.iter().find(|(suffix, _)| path.ends_with(suffix)).map(|(_, api)| *api)
    }

    /// The API's error body for an HTTP error.
    fn error_body(self, code: u16, message: &str) -> Value {
        match self {
            Api::ChatCompletions | Api::Responses => {
                let kind = if code >= 500 { "server_error" } else { "invalid_request_error" };
                json!({"error": {"message": message, "type": kind, "code": code}})
            }
            Api::Anthropic | Api::AnthropicCount => {
                let kind = if code >= 500 { "overloaded_error" } else { "invalid_request_error" };
                json!({"type": "error", "error": {"type": kind, "message": message}})
            }
            Api::Gemini | Api::GeminiOnce | Api::GeminiCount => {
                let status = if code >= 500 { "UNAVAILABLE" } else { "INVALID_ARGUMENT" };
                json!({"error": {"code": code, "message": message, "status": status}})
            }
        }
    }
}

/// What kind of side request this is, if it is one: see the module documentation.
fn side_request(api: Api, body: &Value) -> Option<Side> {
    match api {
        Api::GeminiCount | Api::AnthropicCount => return Some(Side::TokenCount),
        Api::GeminiOnce => return Some(Side::Once { json: wants_json(body) }),
        Api::ChatCompletions | Api::Responses | Api::Anthropic | Api::Gemini => {}
    }
    if api != Api::Gemini && body.get("stream") != Some(&Value::Bool(true)) {
        return Some(Side::Once { json: wants_json(body) });
    }
    let no_tools = body.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty);
    let instructions = [body.get("system"), body.get("instructions"), body.get("systemInstruction"), body.pointer("/messages/0/content")]
        .into_iter()
        .flatten()
        .map(Value::to_string)
        .collect::<String>()
        .to_lowercase();
    (no_tools && instructions.contains("title")).then_some(Side::Streamed)
}

/// Whether a side request asks for a JSON answer (a response schema or JSON mime type).
fn wants_json(body: &Value) -> bool {
    body.pointer("/generationConfig/responseMimeType").and_then(Value::as_str) == Some("application/json")
        || body.pointer("/generationConfig/responseJsonSchema").is_some()
        || body.pointer("/response_format/type").and_then(Value::as_str).is_some_and(|t| t.starts_with("json"))
}

/// A side request's kind.
#[derive(Debug, Clone, Copy)]
enum Side {
    /// A token count.
    TokenCount,
    /// A request answered in one piece.
    Once { json: bool },
    /// A streamed request (a title).
    Streamed,
}

/// Answers a side request without touching the script.
fn answer_side(out: &mut TcpStream, api: Api, side: Side) -> std::io::Result<()> {
    let text = match side {
        Side::Once { json: true } => "{}",
        Side::Once { json: false } | Side::Streamed | Side::TokenCount => SIDE_REPLY,
    };
    let content = Content { id: "side".into(), thinking: Vec::new(), text: vec![text.to_owned()], calls: Vec::new(), finish: Finish::Stop, input: 10, output: 2 };
    let body = match (side, api) {
        (Side::TokenCount, Api::Anthropic | Api::AnthropicCount) => json!({"input_tokens": 10}),
        (Side::TokenCount, _) => json!({"totalTokens": 10}),
        (Side::Streamed, _) => {
            let events = match api {
                Api::ChatCompletions => chat_events(&content),
                Api::Responses => responses_events(&content, false),
                Api::Anthropic | Api::AnthropicCount => anthropic_events(&content),
                Api::Gemini | Api::GeminiOnce | Api::GeminiCount => gemini_events(&content),
            };
            return stream_events(out, &events, Duration::ZERO, &mut Vec::new());
        }
        (Side::Once { .. }, Api::ChatCompletions) => json!({"id": "chatcmpl-side", "object": "chat.completion", "created": 0, "model": FAKE_MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}),
        (Side::Once { .. }, Api::Responses) => {
            json!({"id": "resp_side", "object": "response", "status": "completed", "model": FAKE_MODEL, "output": [message_item("msg_side", text)],
                   "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}})
        }
        (Side::Once { .. }, Api::Anthropic | Api::AnthropicCount) => json!({"id": "msg_side", "type": "message", "role": "assistant", "model": FAKE_MODEL,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 2}}),
        (Side::Once { .. }, Api::Gemini | Api::GeminiOnce | Api::GeminiCount) => json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12}, "modelVersion": FAKE_MODEL}),
    };
    respond(out, 200, &[], &body.to_string())
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

/// [`stream_events`], keeping when each event was written ([`FakeLlm::written`]).
fn stream_recorded(out: &mut TcpStream, events: &[SseEvent], delay: Duration, shared: &Mutex<Shared>) -> std::io::Result<()> {
    let mut written = Vec::with_capacity(events.len());
    let result = stream_events(out, events, delay, &mut written);
    lock(shared).written.extend(written);
    result
}

fn stream_events(out: &mut TcpStream, events: &[SseEvent], delay: Duration, written: &mut Vec<std::time::Instant>) -> std::io::Result<()> {
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
        written.push(std::time::Instant::now());
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

/// How a scripted reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    Stop,
    Length,
    ToolCalls,
}

/// One scripted tool call, its arguments as JSON text and the deltas to stream it in.
#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    arguments: Value,
    pieces: Vec<String>,
}

/// A model-script entry as deltas, whatever API renders it.
#[derive(Debug, Clone)]
struct Content {
    /// Distinguishes the `n`th response's ids.
    id: String,
    thinking: Vec<String>,
    text: Vec<String>,
    calls: Vec<Call>,
    finish: Finish,
    input: u64,
    output: u64,
}

impl Content {
    /// The deltas of a model-script entry served as the `n`th request.
    fn of(entry: &Value, n: usize) -> Content {
        let size = entry.get("chunkSize").and_then(Value::as_u64).unwrap_or(8) as usize;
        let thinking = deltas(entry, "thinkingChunks", "thinking", size);
        let text = deltas(entry, "textChunks", "text", size);
        let calls: Vec<Call> = entry
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(index, call)| {
                let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
                let pieces = match call.get("argumentChunks").and_then(Value::as_array) {
                    Some(exact) => exact.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                    None => chunks(&arguments.to_string(), size.max(4)),
                };
                let id = call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{n}_{index}"), str::to_owned);
                Call { id, name: call.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(), arguments, pieces }
            })
            .collect();
        let finish = if !calls.is_empty() {
            Finish::ToolCalls
        } else if entry.get("stopReason").and_then(Value::as_str) == Some("length") {
            Finish::Length
        } else {
            Finish::Stop
        };
        let produced: usize = thinking.iter().chain(&text).chain(calls.iter().flat_map(|c| &c.pieces)).map(String::len).sum();
        let completion = (produced / 4).max(1) as u64;
        let usage = entry.get("usage");
        let input = usage.and_then(|u| u.get("input")).and_then(Value::as_u64).unwrap_or(100);
        let output = usage.and_then(|u| u.get("output")).and_then(Value::as_u64).unwrap_or(completion);
        Content { id: n.to_string(), thinking, text, calls, finish, input, output }
    }

    fn full_text(&self) -> String {
        self.text.concat()
    }
}

/// OpenAI Chat Completions chunks: `reasoning_content`, `content`, `tool_calls` deltas, a finish
/// chunk, a usage-only chunk, `[DONE]`.
fn chat_events(c: &Content) -> Vec<SseEvent> {
    let id = format!("chatcmpl-fake-{}", c.id);
    let mut events = Vec::new();
    let mut send = |delta: Value, finish: Value| {
        let chunk = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": FAKE_MODEL,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        events.push((None, chunk.to_string()));
    };
    send(json!({"role": "assistant", "content": ""}), Value::Null);
    for t in &c.thinking {
        send(json!({"reasoning_content": t}), Value::Null);
    }
    for t in &c.text {
        send(json!({"content": t}), Value::Null);
    }
    for (index, call) in c.calls.iter().enumerate() {
        send(json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]}), Value::Null);
        for piece in &call.pieces {
            send(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), Value::Null);
        }
    }
    let finish = match c.finish {
        Finish::Stop => "stop",
        Finish::Length => "length",
        Finish::ToolCalls => "tool_calls",
    };
    send(json!({}), json!(finish));
    let tail = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": FAKE_MODEL, "choices": [],
                      "usage": {"prompt_tokens": c.input, "completion_tokens": c.output, "total_tokens": c.input + c.output}});
    events.push((None, tail.to_string()));
    events.push((None, "[DONE]".to_owned()));
    events
}

/// A finished Responses `message` output item.
fn message_item(id: &str, text: &str) -> Value {
    json!({"type": "message", "id": id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// Reasoning tokens reported for scripted thinking: a token per four characters.
fn reasoning_tokens(c: &Content) -> u64 {
    (c.thinking.iter().map(String::len).sum::<usize>() / 4) as u64
}

/// OpenAI Responses events: `response.created`, then per output item (reasoning, message,
/// function calls) `output_item.added`, its deltas and `output_item.done`, then
/// `response.completed` with the output and usage. With `encrypted` (the request's `include`
/// asked for it) the reasoning item carries `encrypted_content`, `enc_<response id>`.
fn responses_events(c: &Content, encrypted: bool) -> Vec<SseEvent> {
    let response_id = format!("resp_fake_{}", c.id);
    let mut events = Vec::new();
    let mut seq = 0u64;
    let mut emit = |kind: &str, mut v: Value| {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(seq);
        seq += 1;
        events.push((Some(kind.to_owned()), v.to_string()));
    };
    let shell = json!({"id": response_id, "object": "response", "created_at": 0, "status": "in_progress", "model": FAKE_MODEL, "output": []});
    emit("response.created", json!({"response": shell}));
    let mut output = Vec::new();
    if !c.thinking.is_empty() {
        let (id, index) = (format!("rs_{}", c.id), output.len());
        emit("response.output_item.added", json!({"output_index": index, "item": {"type": "reasoning", "id": id, "summary": []}}));
        for t in &c.thinking {
            emit("response.reasoning_summary_text.delta", json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": t}));
        }
        let mut item = json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": c.thinking.concat()}]});
        if encrypted {
            item["encrypted_content"] = json!(format!("enc_{response_id}"));
        }
        emit("response.output_item.done", json!({"output_index": index, "item": item}));
        output.push(item);
    }
    if !c.text.is_empty() {
        let (id, index) = (format!("msg_{}", c.id), output.len());
        emit("response.output_item.added", json!({"output_index": index, "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}}));
        emit("response.content_part.added", json!({"item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}));
        for t in &c.text {
            emit("response.output_text.delta", json!({"item_id": id, "output_index": index, "content_index": 0, "delta": t}));
        }
        let text = c.full_text();
        emit("response.output_text.done", json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}));
        emit("response.content_part.done", json!({"item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}}));
        let item = message_item(&id, &text);
        emit("response.output_item.done", json!({"output_index": index, "item": item}));
        output.push(item);
    }
    for call in &c.calls {
        let (id, index) = (format!("fc_{}", call.id), output.len());
        emit("response.output_item.added", json!({"output_index": index, "item": {"type": "function_call", "id": id, "call_id": call.id, "name": call.name, "arguments": "", "status": "in_progress"}}));
        for piece in &call.pieces {
            emit("response.function_call_arguments.delta", json!({"item_id": id, "output_index": index, "delta": piece}));
        }
        let arguments = call.pieces.concat();
        emit("response.function_call_arguments.done", json!({"item_id": id, "output_index": index, "arguments": arguments}));
        let item = json!({"type": "function_call", "id": id, "call_id": call.id, "name": call.name, "arguments": arguments, "status": "completed"});
        emit("response.output_item.done", json!({"output_index": index, "item": item}));
        output.push(item);
    }
    let status = if c.finish == Finish::Length { "incomplete" } else { "completed" };
    let mut done = json!({"id": response_id, "object": "response", "created_at": 0, "status": status, "model": FAKE_MODEL, "output": output,
                          "usage": {"input_tokens": c.input, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": c.output,
                                    "output_tokens_details": {"reasoning_tokens": reasoning_tokens(c)}, "total_tokens": c.input + c.output}});
    if c.finish == Finish::Length {
        done["incomplete_details"] = json!({"reason": "max_output_tokens"});
        emit("response.incomplete", json!({"response": done}));
    } else {
        emit("response.completed", json!({"response": done}));
    }
    events
}

/// Anthropic Messages events: `message_start`, a content block per thinking, text and tool use
/// (`thinking_delta` + `signature_delta`, `text_delta`, `input_json_delta`), `message_delta`
/// with the stop reason and usage, `message_stop`.
fn anthropic_events(c: &Content) -> Vec<SseEvent> {
    let mut events = vec![named("message_start", json!({"type": "message_start", "message": {"id": format!("msg_fake_{}", c.id), "type": "message", "role": "assistant",
        "model": FAKE_MODEL, "content": [], "stop_reason": null, "usage": {"input_tokens": c.input, "output_tokens": 1}}}))];
    let mut index = 0;
    let mut block = |start: Value, deltas: Vec<Value>, events: &mut Vec<SseEvent>| {
        events.push(named("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": start})));
        for d in deltas {
            events.push(named("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": d})));
        }
        events.push(named("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    };
    if !c.thinking.is_empty() {
        let mut deltas: Vec<Value> = c.thinking.iter().map(|t| json!({"type": "thinking_delta", "thinking": t})).collect();
        deltas.push(json!({"type": "signature_delta", "signature": "fake-signature"}));
        block(json!({"type": "thinking", "thinking": ""}), deltas, &mut events);
    }
    if !c.text.is_empty() {
        block(json!({"type": "text", "text": ""}), c.text.iter().map(|t| json!({"type": "text_delta", "text": t})).collect(), &mut events);
    }
    for call in &c.calls {
        let deltas = call.pieces.iter().map(|p| json!({"type": "input_json_delta", "partial_json": p})).collect();
        block(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}), deltas, &mut events);
    }
    let stop = match c.finish {
        Finish::Stop => "end_turn",
        Finish::Length => "max_tokens",
        Finish::ToolCalls => "tool_use",
    };
    events.push(named("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": c.output}})));
    events.push(named("message_stop", json!({"type": "message_stop"})));
    events
}

/// Gemini `streamGenerateContent?alt=sse` chunks: a candidate per thinking (`thought: true`) and
/// text delta, the function calls whole (Gemini does not stream arguments), and a last chunk
/// with `finishReason` and `usageMetadata` (`thoughtsTokenCount` when there was thinking). After
/// thinking, as Gemini does, the first function call carries a `thoughtSignature`,
/// `sig_fake-<n>`.
fn gemini_events(c: &Content) -> Vec<SseEvent> {
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
        }
        let mut v = json!({"candidates": [candidate], "modelVersion": FAKE_MODEL, "responseId": format!("fake-{}", c.id)});
        if finish.is_some() {
            v["usageMetadata"] = json!({"promptTokenCount": c.input, "candidatesTokenCount": c.output, "totalTokenCount": c.input + c.output});
            if !c.thinking.is_empty() {
                v["usageMetadata"]["thoughtsTokenCount"] = json!(reasoning_tokens(c));
            }
        }
        data(v)
    };
    let mut events: Vec<SseEvent> = c.thinking.iter().map(|t| chunk(json!([{"text": t, "thought": true}]), None)).collect();
    events.extend(c.text.iter().map(|t| chunk(json!([{"text": t}]), None)));
    if !c.calls.is_empty() {
        let mut parts: Vec<Value> = c.calls.iter().map(|call| json!({"functionCall": {"id": call.id, "name": call.name, "args": call.arguments}})).collect();
        if !c.thinking.is_empty() {
            parts[0]["thoughtSignature"] = json!(format!("sig_fake-{}", c.id));
        }
        events.push(chunk(Value::Array(parts), None));
    }
    let finish = if c.finish == Finish::Length { "MAX_TOKENS" } else { "STOP" };
    events.push(chunk(json!([{"text": ""}]), Some(finish)));
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
        let (status, body) = post(&llm, "/v1/chat/completions", "", &json!({"model": FAKE_MODEL, "messages": [], "stream": true}));
        assert_eq!(status, 200);
        assert!(body.contains(r#""reasoning_content":"hm""#) && body.contains(r#""content":"Hello""#) && body.contains(r#""content":" ther""#));
        assert!(body.contains(r#""finish_reason":"stop""#) && body.trim_end().ends_with("data: [DONE]"));
        let (_, body) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true}));
        assert!(body.contains(r#""id":"c1""#) && body.contains(r#""finish_reason":"tool_calls""#));
        let (status, body) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true}));
        assert_eq!(status, 503);
        assert!(body.contains("overloaded"));
        let (_, body) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true}));
        assert!(body.contains(&format!(r#""content":"{}""#, &EXHAUSTED_REPLY[..8])), "{body}");
        assert_eq!(llm.requests().len(), 4);
    }

    #[test]
    fn exact_deltas_are_streamed_as_given() {
        let llm = FakeLlm::from_script(vec![json!({"textChunks": ["Hel", "lo, wor", "ld"], "text": "ignored",
                                                   "toolCalls": [{"name": "ls", "arguments": {"path": "."}, "argumentChunks": ["{\"path\": ", "\".\"}"]}]})])
        .unwrap();
        let (_, body) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true}));
        let contents: Vec<&str> = body.match_indices(r#""content":""#).map(|(i, m)| body[i + m.len()..].split('"').next().unwrap()).collect();
        assert_eq!(contents, ["", "Hel", "lo, wor", "ld"]);
        assert!(body.contains(r#""arguments":"{\"path\": ""#) && body.contains(r#""arguments":"\".\"}""#), "{body}");
    }

    #[test]
    fn exact_replies_keep_their_status_headers_and_events_and_requests_are_recorded() {
        let llm = FakeLlm::start(vec![status(429, &[("retry-after", "0.3")], "slow down"), anthropic_text("hi")]).unwrap();
        let (code, response) = post(&llm, "/v1/chat/completions", "authorization: Bearer k\r\n", &json!({"n": 1, "stream": true}));
        assert_eq!(code, 429);
        assert!(response.contains("retry-after: 0.3\r\n") && response.contains("slow down"), "{response}");
        let (code, response) = post(&llm, "/v1/messages", "x-api-key: a\r\n", &json!({"n": 2, "stream": true}));
        assert_eq!(code, 200);
        assert!(response.contains("event: message_start\ndata: {") && response.contains(r#""text":"hi""#), "{response}");
        let (code, _) = post(&llm, "/v1/other", "", &json!({}));
        assert_eq!(code, 404);
        let seen = llm.seen();
        assert_eq!(seen.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(), ["/v1/chat/completions", "/v1/messages"], "404s are not model requests");
        assert_eq!(seen[0].headers["authorization"], "Bearer k");
        assert_eq!(seen[1].headers["x-api-key"], "a");
        assert_eq!((&seen[0].body, &seen[1].body), (&json!({"n": 1, "stream": true}), &json!({"n": 2, "stream": true})));
        assert!(!llm.disconnected());
    }

    /// The `data:` payloads of an SSE response.
    fn payloads(response: &str) -> Vec<Value> {
        response.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok()).collect()
    }

    #[test]
    fn one_script_streams_in_every_provider_api() {
        let entry = json!({"thinking": "hm", "text": "Hello there", "chunkSize": 6, "usage": {"input": 7, "output": 3}});
        let call = json!({"toolCalls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]});
        let llm = FakeLlm::from_script(vec![entry.clone(), call.clone(), entry.clone(), call.clone(), entry.clone(), call.clone(), entry, call]).unwrap();
        let text_of = |events: &[Value], pick: &dyn Fn(&Value) -> Option<String>| events.iter().filter_map(pick).collect::<String>();

        let (_, r) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true}));
        let ev = payloads(&r);
        assert_eq!(text_of(&ev, &|v| v.pointer("/choices/0/delta/content").and_then(Value::as_str).map(str::to_owned)), "Hello there");
        let (_, r) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true}));
        assert!(r.contains(r#""finish_reason":"tool_calls""#) && r.contains(r#""name":"ls""#), "{r}");

        let (_, r) = post(&llm, "/v1/responses", "", &json!({"stream": true, "input": []}));
        let ev = payloads(&r);
        assert!(r.contains("event: response.created\n"), "{r}");
        assert_eq!(text_of(&ev, &|v| (v["type"] == "response.output_text.delta").then(|| v["delta"].as_str().unwrap_or_default().to_owned())), "Hello there");
        assert_eq!(text_of(&ev, &|v| (v["type"] == "response.reasoning_summary_text.delta").then(|| v["delta"].as_str().unwrap_or_default().to_owned())), "hm");
        let done = ev.last().unwrap();
        assert_eq!((done["type"].as_str(), done["response"]["usage"]["input_tokens"].as_u64()), (Some("response.completed"), Some(7)));
        let (_, r) = post(&llm, "/v1/responses", "", &json!({"stream": true, "input": []}));
        let item = payloads(&r).into_iter().find(|v| v["type"] == "response.output_item.done").unwrap();
        assert_eq!((item["item"]["type"].as_str(), item["item"]["call_id"].as_str(), item["item"]["arguments"].as_str()), (Some("function_call"), Some("c1"), Some(r#"{"path":"."}"#)));

        let (_, r) = post(&llm, "/v1/messages", "", &json!({"stream": true, "max_tokens": 100, "messages": []}));
        let ev = payloads(&r);
        assert!(r.contains("event: message_start\n") && r.contains(r#""stop_reason":"end_turn""#), "{r}");
        assert_eq!(text_of(&ev, &|v| v.pointer("/delta/text").and_then(Value::as_str).map(str::to_owned)), "Hello there");
        assert_eq!(text_of(&ev, &|v| v.pointer("/delta/thinking").and_then(Value::as_str).map(str::to_owned)), "hm");
        let (_, r) = post(&llm, "/v1/messages", "", &json!({"stream": true, "max_tokens": 100, "messages": []}));
        assert!(r.contains(r#""type":"tool_use""#) && r.contains(r#""stop_reason":"tool_use""#), "{r}");

        let (_, r) = post(&llm, "/v1beta/models/fake-model:streamGenerateContent?alt=sse", "", &json!({"contents": []}));
        let ev = payloads(&r);
        assert_eq!(text_of(&ev, &|v| v.pointer("/candidates/0/content/parts/0").filter(|p| p.get("thought").is_none()).and_then(|p| p["text"].as_str()).map(str::to_owned)), "Hello there");
        assert_eq!(ev.last().unwrap().pointer("/candidates/0/finishReason").and_then(Value::as_str), Some("STOP"));
        let (_, r) = post(&llm, "/v1beta/models/fake-model:streamGenerateContent?alt=sse", "", &json!({"contents": []}));
        assert!(r.contains(r#""functionCall":{"#) && r.contains(r#""args":{"path":"."}"#), "{r}");
        assert_eq!(llm.seen().len(), 8);
    }

    #[test]
    fn side_requests_get_a_default_reply_and_leave_the_script_alone() {
        let llm = FakeLlm::from_script(vec![json!({"text": "the scripted answer"})]).unwrap();
        // opencode's first request: a title, streamed, without tools.
        let (_, r) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true, "messages": [{"role": "system", "content": "You are a title generator. Output a short title."}, {"role": "user", "content": "hi"}]}));
        assert!(r.contains(SIDE_REPLY) && !r.contains("scripted"), "{r}");
        // gemini-cli's token count and non-streamed check.
        let (_, r) = post(&llm, "/v1beta/models/fake-model:countTokens", "", &json!({"contents": []}));
        assert!(r.contains(r#""totalTokens":10"#), "{r}");
        let (_, r) = post(&llm, "/v1beta/models/fake-model:generateContent", "", &json!({"contents": [], "generationConfig": {"responseMimeType": "application/json"}}));
        assert!(r.contains(r#""text":"{}""#), "{r}");
        // A request that does not stream.
        let (_, r) = post(&llm, "/v1/responses", "", &json!({"input": "summarise"}));
        assert!(r.contains(r#""object":"response""#) && r.contains(SIDE_REPLY), "{r}");
        assert_eq!(llm.side_requests().len(), 4);
        assert!(llm.seen().is_empty());
        // The conversation's request still gets the first scripted reply.
        let (_, r) = post(&llm, "/v1/chat/completions", "", &json!({"stream": true, "tools": [{"type": "function"}], "messages": [{"role": "user", "content": "hi"}]}));
        assert!(r.contains("the scr"), "{r}");
    }
}
