//! A live session written as transcript lines as its frames pass: the recorder of `agentwire
//! conformance record` and the bridge's `--record` tap share it.

use serde_json::{json, Map, Value};

use super::normalize::Normalizer;

/// A session turned into transcript lines as its frames pass, in that order: host frames become
/// `in` lines (ids the agent chose replaced by their captures), agent frames `out` patterns; the
/// assistant messages of the rpc dialect are kept as the model replies that replay them.
#[derive(Debug)]
pub struct Recording {
    normalizer: Normalizer,
    lines: Vec<Value>,
    /// Request ids the host chose: literal in the agent's answers, never captures.
    host_ids: Vec<Value>,
    /// Model replies rebuilt from the assistant messages (rpc `message_end`).
    replies: Vec<Value>,
    /// Streamed chunks are `optional` and the frame after them a `wait` (see [`Self::loose_streams`]).
    loose_streams: bool,
    /// The last agent frame recorded was such a chunk.
    in_stream: bool,
}

impl Recording {
    /// An empty recording normalizing frames with `normalizer`.
    pub fn new(normalizer: Normalizer) -> Self {
        Self { normalizer, lines: Vec::new(), host_ids: Vec::new(), replies: Vec::new(), loose_streams: false, in_stream: false }
    }

    /// Streamed chunks (ACP message and thought chunks, rpc `message_update` and
    /// `tool_execution_update`, wire `ContentPart` and `ToolCallPart`) become `optional` lines
    /// and the agent frame after them a `wait`: how a reply is cut into chunks, and where a host
    /// frame falls among them, is timing, not protocol, so the replay tolerates other cuts.
    pub fn loose_streams(mut self) -> Self {
        self.loose_streams = true;
        self
    }

    /// A line the host sent: an `in` line (`raw` when it is not a JSON object); returns the
    /// frame when it is one.
    pub fn host(&mut self, line: &str) -> Option<Value> {
        let frame: Option<Value> = serde_json::from_str(line).ok().filter(Value::is_object);
        match &frame {
            Some(frame) => {
                if let Some(id) = frame.get("id") {
                    self.host_ids.push(id.clone());
                }
                self.lines.push(json!({"kind": "in", "frame": self.normalizer.inbound(frame)}));
            }
            None => self.lines.push(json!({"kind": "in", "raw": line})),
        }
        frame
    }

    /// A frame the agent sent.
    pub fn agent(&mut self, frame: &Value) {
        if frame["type"] == "message_end" && frame["message"]["role"] == "assistant" {
            self.replies.push(reply_from_message(&frame["message"]));
        }
        let pattern = self.normalizer.outbound(frame, &self.host_ids);
        let chunk = self.loose_streams && is_stream_chunk(frame);
        let line = if chunk {
            json!({"kind": "out", "frame": pattern, "optional": true})
        } else if self.in_stream {
            json!({"kind": "wait", "frame": pattern})
        } else {
            json!({"kind": "out", "frame": pattern})
        };
        self.in_stream = chunk;
        self.lines.push(line);
    }

    /// The host's input ended: a `close_stdin` line.
    pub fn close_stdin(&mut self) {
        self.lines.push(json!({"kind": "close_stdin"}));
    }

    /// The agent exited with `code`: an `exit` line.
    pub fn exit(&mut self, code: i32) {
        self.lines.push(json!({"kind": "exit", "code": code}));
    }

    /// The transcript: `header`, a `model` line per reply (`scripted`, or when there is none the
    /// replies rebuilt from the assistant messages), then the recorded lines.
    pub fn transcript(&self, header: &Value, scripted: &[Value]) -> String {
        let models = if scripted.is_empty() { &self.replies } else { scripted };
        let mut out = format!("{header}\n");
        for reply in models {
            out.push_str(&format!("{}\n", json!({"kind": "model", "reply": reply})));
        }
        for line in &self.lines {
            out.push_str(&format!("{line}\n"));
        }
        out
    }
}

/// Whether an agent frame is one chunk of a stream whose cut is timing (see
/// [`Recording::loose_streams`]).
fn is_stream_chunk(frame: &Value) -> bool {
    let acp = frame["method"] == "session/update" && matches!(frame["params"]["update"]["sessionUpdate"].as_str(), Some("agent_message_chunk" | "agent_thought_chunk"));
    let rpc = matches!(frame["type"].as_str(), Some("message_update" | "tool_execution_update"));
    let wire = frame["method"] == "event" && matches!(frame["params"]["type"].as_str(), Some("ContentPart" | "ToolCallPart"));
    acp || rpc || wire
}

/// A scripted reply that makes the offline model say what an assistant message said.
fn reply_from_message(message: &Value) -> Value {
    let mut reply = Map::new();
    let (mut text, mut thinking, mut calls) = (String::new(), String::new(), Vec::new());
    for block in message["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("thinking") => thinking.push_str(block["thinking"].as_str().unwrap_or_default()),
            Some("toolCall") => calls.push(json!({"id": block["id"], "name": block["name"], "arguments": block["arguments"]})),
            _ => {}
        }
    }
    if !thinking.is_empty() {
        reply.insert("thinking".into(), json!(thinking));
    }
    if !text.is_empty() {
        reply.insert("text".into(), json!(text));
    }
    if !calls.is_empty() {
        reply.insert("toolCalls".into(), json!(calls));
    }
    if message["stopReason"] == "error" {
        reply.insert("error".into(), message["errorMessage"].clone());
    }
    Value::Object(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_messages_become_model_replies() {
        let m = json!({"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Listing."},
            {"type": "toolCall", "id": "c1", "name": "ls", "arguments": {"path": "."}}]});
        assert_eq!(reply_from_message(&m), json!({"thinking": "hm", "text": "Listing.", "toolCalls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]}));
    }
}
