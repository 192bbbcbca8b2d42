//! A scripted OpenAI-compatible server on 127.0.0.1 for agents we did not write: each
//! `POST …/chat/completions` consumes the transcript's next `model` reply and streams it as
//! Chat Completions SSE chunks (`reasoning_content`, `content`, `tool_calls` deltas, a finish
//! chunk, a usage-only chunk, `[DONE]`); an `error` reply is an HTTP error (503 when
//! `retryable`, else 400) with an OpenAI-style JSON body. When the script is exhausted the
//! reply is a fixed text. `GET …/models` lists the one model, `fake-model`.
//!
//! One thread accepts, one thread per connection; every response closes its connection, so no
//! keep-alive or chunked encoding is needed. The server stops when dropped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// The model id the fake server reports and accepts.
pub const FAKE_MODEL: &str = "fake-model";

/// Text of the reply once the script is exhausted.
pub const EXHAUSTED_REPLY: &str = "(fake default reply)";

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Value>>,
    requests: Mutex<Vec<Value>>,
    served: Mutex<u64>,
}

/// A running fake LLM server.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
}

impl FakeLlm {
    /// Starts serving `replies` (model script entries, in order) on an ephemeral port.
    pub fn start(replies: Vec<Value>) -> std::io::Result<FakeLlm> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared { replies: Mutex::new(replies.into()), ..Shared::default() });
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let s = s.clone();
                        std::thread::spawn(move || {
                            let _ = serve(stream, &s);
                        });
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Ok(FakeLlm { addr, shared, stop })
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL an OpenAI client is pointed at.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The JSON bodies of the chat completion requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut out = stream;
    if method == "GET" && path.ends_with("/models") {
        let list = json!({"object": "list", "data": [{"id": FAKE_MODEL, "object": "model", "owned_by": "agentwire-conformance"}]});
        return respond_json(&mut out, 200, &list);
    }
    if method != "POST" || !path.ends_with("/chat/completions") {
        return respond_json(&mut out, 404, &json!({"error": {"message": format!("no route for {method} {path}"), "type": "not_found"}}));
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.requests.lock().unwrap_or_else(|e| e.into_inner()).push(request);
    let n = {
        let mut served = shared.served.lock().unwrap_or_else(|e| e.into_inner());
        *served += 1;
        *served
    };
    let reply = shared.replies.lock().unwrap_or_else(|e| e.into_inner()).pop_front().unwrap_or_else(|| json!({"text": EXHAUSTED_REPLY}));
    if let Some(message) = reply.get("error").and_then(Value::as_str) {
        let retryable = reply.get("retryable").and_then(Value::as_bool).unwrap_or(false);
        let (status, kind) = if retryable { (503, "server_error") } else { (400, "invalid_request_error") };
        return respond_json(&mut out, status, &json!({"error": {"message": message, "type": kind, "code": status}}));
    }
    stream_reply(&mut out, &reply, n)
}

fn respond_json(out: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Service Unavailable",
    };
    write!(out, "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}", text.len())?;
    out.flush()
}

fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size.max(1)).map(|c| c.iter().collect()).collect()
}

/// A reply's deltas for one block: the exact `…Chunks` list when given, else the string cut by `size`.
fn deltas(reply: &Value, exact: &str, whole: &str, size: usize) -> Vec<String> {
    match (reply.get(exact).and_then(Value::as_array), reply.get(whole).and_then(Value::as_str)) {
        (Some(list), _) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        (None, Some(text)) => chunks(text, size),
        (None, None) => Vec::new(),
    }
}

fn stream_reply(out: &mut TcpStream, reply: &Value, n: u64) -> std::io::Result<()> {
    out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n")?;
    let id = format!("chatcmpl-fake-{n}");
    let size = reply.get("chunkSize").and_then(Value::as_u64).unwrap_or(8) as usize;
    let delay = Duration::from_millis(reply.get("delayMs").and_then(Value::as_u64).unwrap_or(0));
    let mut send = |delta: Value, finish: Value| -> std::io::Result<()> {
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let chunk = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": FAKE_MODEL,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        write!(out, "data: {chunk}\n\n")?;
        out.flush()
    };
    send(json!({"role": "assistant", "content": ""}), Value::Null)?;
    let mut produced = 0usize;
    for c in deltas(reply, "thinkingChunks", "thinking", size) {
        produced += c.len();
        send(json!({"reasoning_content": c}), Value::Null)?;
    }
    for c in deltas(reply, "textChunks", "text", size) {
        produced += c.len();
        send(json!({"content": c}), Value::Null)?;
    }
    let calls = reply.get("toolCalls").and_then(Value::as_array).cloned().unwrap_or_default();
    for (index, call) in calls.iter().enumerate() {
        let call_id = call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{n}_{index}"), str::to_owned);
        send(json!({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": call["name"], "arguments": ""}}]}), Value::Null)?;
        let arguments = call.get("arguments").map_or_else(|| "{}".to_owned(), Value::to_string);
        let pieces = match call.get("argumentChunks").and_then(Value::as_array) {
            Some(exact) => exact.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            None => chunks(&arguments, size.max(4)),
        };
        for c in pieces {
            produced += c.len();
            send(json!({"tool_calls": [{"index": index, "function": {"arguments": c}}]}), Value::Null)?;
        }
    }
    let finish = if !calls.is_empty() {
        "tool_calls"
    } else if reply.get("stopReason").and_then(Value::as_str) == Some("length") {
        "length"
    } else {
        "stop"
    };
    send(json!({}), json!(finish))?;
    let completion = (produced / 4).max(1) as u64;
    let usage = reply.get("usage").cloned().unwrap_or_else(|| json!({"input": 100, "output": completion}));
    let prompt = usage.get("input").and_then(Value::as_u64).unwrap_or(100);
    let output = usage.get("output").and_then(Value::as_u64).unwrap_or(completion);
    let tail = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": FAKE_MODEL, "choices": [],
                      "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}});
    write!(out, "data: {tail}\n\ndata: [DONE]\n\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(base: &str, body: &Value) -> (u16, String) {
        let addr = base.trim_start_matches("http://").trim_end_matches("/v1");
        let mut s = TcpStream::connect(addr).unwrap();
        let text = body.to_string();
        write!(s, "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}", text.len()).unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        let status = response[9..12].parse().unwrap();
        (status, response)
    }

    #[test]
    fn streams_text_tool_calls_and_errors_in_script_order() {
        let llm = FakeLlm::start(vec![
            json!({"thinking": "hm", "text": "Hello there", "chunkSize": 5}),
            json!({"toolCalls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]}),
            json!({"error": "overloaded", "retryable": true}),
        ])
        .unwrap();
        let (status, body) = post(&llm.base_url(), &json!({"model": FAKE_MODEL, "messages": []}));
        assert_eq!(status, 200);
        assert!(body.contains(r#""reasoning_content":"hm""#) && body.contains(r#""content":"Hello""#) && body.contains(r#""content":" ther""#));
        assert!(body.contains(r#""finish_reason":"stop""#) && body.trim_end().ends_with("data: [DONE]"));
        let (_, body) = post(&llm.base_url(), &json!({}));
        assert!(body.contains(r#""id":"c1""#) && body.contains(r#""finish_reason":"tool_calls""#));
        let (status, body) = post(&llm.base_url(), &json!({}));
        assert_eq!(status, 503);
        assert!(body.contains("overloaded"));
        let (_, body) = post(&llm.base_url(), &json!({}));
        assert!(body.contains(&format!(r#""content":"{}""#, &EXHAUSTED_REPLY[..8])), "{body}");
        assert_eq!(llm.requests().len(), 4);
    }

    #[test]
    fn exact_deltas_are_streamed_as_given() {
        let llm = FakeLlm::start(vec![json!({"textChunks": ["Hel", "lo, wor", "ld"], "text": "ignored",
                                             "toolCalls": [{"name": "ls", "arguments": {"path": "."}, "argumentChunks": ["{\"path\": ", "\".\"}"]}]})])
        .unwrap();
        let (_, body) = post(&llm.base_url(), &json!({}));
        let contents: Vec<&str> = body.match_indices(r#""content":""#).map(|(i, m)| body[i + m.len()..].split('"').next().unwrap()).collect();
        assert_eq!(contents, ["", "Hel", "lo, wor", "ld"]);
        assert!(body.contains(r#""arguments":"{\"path\": ""#) && body.contains(r#""arguments":"\".\"}""#), "{body}");
    }
}
