//! `agentwire conformance serve-model` streams a scripted reply in every major provider API,
//! and a title-style side request does not use up the script.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// Kills the server when the test ends, passing or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn post(origin: &str, path: &str, body: &serde_json::Value) -> String {
    let mut s = TcpStream::connect(origin.trim_start_matches("http://")).unwrap();
    let text = body.to_string();
    write!(s, "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}", text.len()).unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    response
}

/// The concatenated text deltas of an SSE body, whatever the API.
fn streamed_text(response: &str) -> String {
    let pointers = ["/choices/0/delta/content", "/delta", "/candidates/0/content/parts/0/text"];
    response
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter(|v| v.get("type").is_none_or(|t| t == "response.output_text.delta" || t == "content_block_delta"))
        .filter_map(|v| {
            let anthropic = v.pointer("/delta/text").and_then(|t| t.as_str()).map(str::to_owned);
            anthropic.or_else(|| pointers.iter().find_map(|p| v.pointer(p).and_then(|t| t.as_str()).map(str::to_owned)))
        })
        .collect()
}

#[test]
fn serve_model_streams_the_script_in_every_api_and_side_requests_leave_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, "{\"text\": \"one\"}\n{\"text\": \"two\"}\n{\"text\": \"three\"}\n{\"text\": \"four\"}\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["conformance", "serve-model", "--listen", "127.0.0.1:0", "--script"])
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let _server = Server(child);
    let origin = first.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(first.starts_with("serving 4 scripted replies on http://127.0.0.1:"), "{first}");

    // A title request (no tools, instructions asking for a title) before the conversation's.
    let title = post(&origin, "/v1/chat/completions", &serde_json::json!({"stream": true, "messages": [
        {"role": "system", "content": "Generate a short title for this conversation."}, {"role": "user", "content": "hi"}]}));
    assert_eq!(streamed_text(&title), "Conformance session");
    let tools = serde_json::json!([{"type": "function", "function": {"name": "bash"}}]);
    let chat = post(&origin, "/v1/chat/completions", &serde_json::json!({"stream": true, "tools": tools, "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(streamed_text(&chat), "one", "{chat}");
    let responses = post(&origin, "/v1/responses", &serde_json::json!({"stream": true, "input": "hi"}));
    assert_eq!(streamed_text(&responses), "two", "{responses}");
    assert!(responses.contains("event: response.completed"), "{responses}");
    let anthropic = post(&origin, "/v1/messages", &serde_json::json!({"stream": true, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(streamed_text(&anthropic), "three", "{anthropic}");
    assert!(anthropic.contains("event: message_stop"), "{anthropic}");
    let count = post(&origin, "/v1beta/models/gemini-2.5-flash:countTokens", &serde_json::json!({"contents": []}));
    assert!(count.contains("\"totalTokens\""), "{count}");
    let gemini = post(&origin, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", &serde_json::json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}));
    assert_eq!(streamed_text(&gemini), "four", "{gemini}");
    assert!(gemini.contains("\"finishReason\":\"STOP\""), "{gemini}");
}
