//! `agentwire --mode wire`: the kimi-cli JSON-RPC 2.0 dialect as a second adapter over the same
//! agent. The agent still speaks JSONL frames, into an in-process pipe; this adapter answers the
//! client's methods by calling the agent's command handlers and translates the agent's frames
//! into wire `event`s:
//!
//! | agent frame | wire |
//! |---|---|
//! | (prompt accepted) | `TurnBegin {user_input}` |
//! | assistant `message_start` | `StepBegin {n}` |
//! | `text_delta` / `thinking_delta` | `ContentPart {type:text}` / `{type:think}` |
//! | `toolcall_start` / `toolcall_delta` | `ToolCall {arguments:""}` / `ToolCallPart` |
//! | assistant `message_end` | `StatusUpdate` (token usage, message id, plan mode); none for a cancelled step; after a provider error `StepInterrupted`, sent before `TurnEnd` unless the step is retried |
//! | `tool_execution_end` | `ToolResult` |
//! | steered user message | `SteerInput` |
//! | `auto_retry_start` | `StepRetry`; the retried attempt continues the step (no new `StepBegin`) |
//! | `agent_end` | `TurnEnd`, then the prompt's result (`finished` / `cancelled` / `max_steps_reached`, or -32003) |
//!
//! | approval `confirm` dialog | `request ApprovalRequest`; the answer → `ApprovalResponse` event |
//! | `host_tool_call` (external tools) | `request ToolCallRequest`; the answer → the tool result |
//!
//! The merged events are kept in a wire log beside the session file (`<session>.wire.jsonl`) and
//! served by `replay`, marked `replayed: true`.
//!
//! | `host_tool_call` of `AskUserQuestion` (offered when the client `supports_question`) | `request QuestionRequest`; the answers → the tool result |

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::agent::Agent;
use crate::dialect::wire::{decode_wire_line, error_response, WireInbound};
use crate::protocol::envelope::{wire_codes, WireError};
use crate::protocol::*;
use crate::transport::{LineReader, Outbox};

/// Where an external tool's result keeps the client's `message` and `display` (in the host tool
/// result's details) for the ToolResult event.
const WIRE_RETURN_VALUE: &str = "wireReturnValue";

/// Questions as the client gets them: every optional field present with its default (as kimi
/// sends them), so clients need not guess. The tool's arguments were validated against its
/// schema, which matches `WireQuestion`; anything else is passed on as it came.
fn with_question_defaults(questions: &Value) -> Value {
    let Ok(mut questions) = serde_json::from_value::<Vec<WireQuestion>>(questions.clone()) else { return questions.clone() };
    for q in &mut questions {
        q.multi_select.get_or_insert(false);
        for text in [&mut q.body, &mut q.other_label, &mut q.other_description] {
            text.get_or_insert_with(String::new);
        }
        for option in &mut q.options {
            option.description.get_or_insert_with(String::new);
        }
    }
    serde_json::to_value(questions).unwrap_or_default()
}

/// Protocol version this adapter speaks (kimi-cli's).
pub const WIRE_PROTOCOL_VERSION: &str = "1.10";

/// What a request sent to the client is waiting for.
#[derive(Debug, Clone)]
enum Pending {
    /// An approval: the agent's confirm dialog and the tool it is for.
    Approval { ui_id: String, tool: String },
    /// An external tool call: the agent's host tool call id.
    ExternalTool { host_id: String },
    /// A question (the `AskUserQuestion` tool): the agent's host tool call id.
    Question { host_id: String },
}

/// The tool that asks the client questions; offered to the model only when the client declared
/// `capabilities.supports_question` (kimi's name, so prompts written for kimi work).
pub const QUESTION_TOOL: &str = "AskUserQuestion";

/// The question tool as a host tool definition: its parameters are the wire `questions`.
fn question_tool() -> Value {
    json!({
        "name": QUESTION_TOOL,
        "description": "Ask the user one or more multiple-choice questions and wait for the answers. Use it when a decision needs the user's input; each question offers labelled options (the user may also answer in their own words).",
        "parameters": {
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
        }
    })
}

/// Translation state shared by the reader and the translator.
#[derive(Debug, Default)]
struct Turn {
    /// The prompt's request id, answered after `TurnEnd`.
    prompt_id: Option<Value>,
    step: u32,
    plan_mode: bool,
    /// The tool call whose execution started last (approvals refer to it).
    last_tool: Option<(String, String, Value)>,
    /// Requests sent to the client, by JSON-RPC id.
    pending: std::collections::HashMap<String, Pending>,
    /// Tools approved for the rest of the session.
    approved_for_session: std::collections::HashSet<String>,
    /// The client answers `QuestionRequest`s (declared in `initialize`).
    supports_question: bool,
    /// Stop reason of the turn's last assistant message: a completed run whose last step still
    /// asked for tools ended at `--max-steps-per-turn`.
    last_stop: Option<String>,
    /// A failed attempt's `StepInterrupted`, held back: a retry continues the same step
    /// (`StepRetry`, no new `StepBegin`, as kimi does); otherwise it goes out before `TurnEnd`.
    interrupted: bool,
    /// The next assistant message is a retry of the current step.
    retrying: bool,
}

/// The session's wire log: the events and requests of every turn, merged (consecutive text
/// parts joined, a tool call with its full arguments), one JSON object per line after a
/// `metadata` line, kept beside the session file as `<session>.wire.jsonl` and in memory.
/// Approvals are not logged (as in kimi). `replay` serves it.
#[derive(Debug, Default)]
struct WireLog {
    path: Option<std::path::PathBuf>,
    records: Vec<Value>,
    text: Option<String>,
    call: Option<Value>,
}

impl WireLog {
    fn open(session: Option<std::path::PathBuf>) -> Self {
        let path = session.map(|p| p.with_extension("wire.jsonl"));
        let records = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v.get("message").is_some()).collect())
            .unwrap_or_default();
        Self { path, records, text: None, call: None }
    }

    fn write(&mut self, message: Value) {
        let timestamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let record = json!({"timestamp": timestamp, "message": message});
        if let Some(path) = &self.path {
            let fresh = !path.exists();
            let line = if fresh { format!("{}\n{record}\n", json!({"type": "metadata", "protocol_version": WIRE_PROTOCOL_VERSION})) } else { format!("{record}\n") };
            let written = std::fs::OpenOptions::new().create(true).append(true).open(path).and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
            if let Err(e) = written {
                eprintln!("agentwire: could not write the wire log {}: {e}", path.display());
            }
        }
        self.records.push(record);
    }

    fn flush(&mut self) {
        if let Some(text) = self.text.take() {
            self.write(json!({"type": "ContentPart", "payload": {"type": "text", "text": text}}));
        }
        if let Some(call) = self.call.take() {
            self.write(json!({"type": "ToolCall", "payload": call}));
        }
    }

    /// Records an outgoing frame (events and agent requests; approvals are skipped).
    fn record(&mut self, frame: &Value) {
        let params = &frame["params"];
        let kind = params["type"].as_str().unwrap_or_default();
        match (frame["method"].as_str(), kind) {
            (Some("event"), "ContentPart") if params["payload"]["type"] == "text" => {
                if self.call.is_some() {
                    self.flush();
                }
                self.text.get_or_insert_with(String::new).push_str(params["payload"]["text"].as_str().unwrap_or_default());
            }
            (Some("event"), "ToolCall") => {
                self.flush();
                self.call = Some(params["payload"].clone());
            }
            (Some("event"), "ToolCallPart") => {
                if let Some(call) = &mut self.call {
                    let so_far = call["function"]["arguments"].as_str().unwrap_or_default().to_owned();
                    call["function"]["arguments"] = json!(so_far + params["payload"]["arguments_part"].as_str().unwrap_or_default());
                }
            }
            (Some("event"), "ApprovalResponse") | (Some("request"), "ApprovalRequest") => {}
            (Some("event" | "request"), _) => {
                self.flush();
                self.write(json!({"type": kind, "payload": params["payload"]}));
            }
            _ => {}
        }
    }
}

/// Sends a frame to the client, logging events and requests first.
async fn emit(out: &Outbox, log: &Mutex<WireLog>, frame: &Value) {
    log.lock().unwrap_or_else(|e| e.into_inner()).record(frame);
    let _ = out.send(frame).await;
}

fn request(id: &str, kind: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "request", "id": id, "params": {"type": kind, "payload": payload}})
}

/// A confirm answer for the agent's approval dialog.
fn ui_answer(ui_id: &str, confirmed: bool) -> ExtensionUiResponse {
    serde_json::from_value(json!({"type": "extension_ui_response", "id": ui_id, "confirmed": confirmed})).expect("valid UI response")
}

fn event(kind: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "event", "params": {"type": kind, "payload": payload}})
}

fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Translates one agent frame into wire frames. Approvals already granted for the session are
/// answered to the agent directly (returned as the second value).
fn translate(frame: &Value, turn: &Mutex<Turn>) -> (Vec<Value>, Option<ExtensionUiResponse>) {
    let mut out = Vec::new();
    let mut t = turn.lock().unwrap_or_else(|e| e.into_inner());
    match frame["type"].as_str().unwrap_or_default() {
        "tool_execution_start" => {
            t.last_tool = Some((frame["toolCallId"].as_str().unwrap_or_default().to_owned(), frame["toolName"].as_str().unwrap_or_default().to_owned(), frame["args"].clone()));
        }
        "extension_ui_request" if frame["method"] == "confirm" => {
            let ui_id = frame["id"].as_str().unwrap_or_default().to_owned();
            let (call_id, tool, args) = t.last_tool.clone().unwrap_or_default();
            if t.approved_for_session.contains(&tool) {
                return (out, Some(ui_answer(&ui_id, true)));
            }
            let id = uuid::Uuid::new_v4().to_string();
            let command = args.get("command").and_then(Value::as_str).map(str::to_owned);
            let (action, description, display) = match &command {
                Some(c) => ("run command", format!("Run command `{c}`"), json!([{"type": "shell", "language": "bash", "command": c}])),
                None => ("use tool", format!("Use tool `{tool}` with {args}"), json!([{"type": "brief", "text": frame["message"]}])),
            };
            t.pending.insert(id.clone(), Pending::Approval { ui_id, tool: tool.clone() });
            out.push(request(
                &id,
                "ApprovalRequest",
                json!({"id": id, "tool_call_id": call_id, "sender": tool, "action": action, "description": description,
                       "source_kind": "foreground_turn", "source_id": null, "agent_id": null, "subagent_type": null, "source_description": null, "display": display}),
            ));
        }
        "extension_ui_request" if frame["method"] == "cancel" => {
            // The agent gave up on a dialog (timeout, cancel): the approval is settled as a reject.
            let target = frame["targetId"].as_str().unwrap_or_default();
            let key = t.pending.iter().find(|(_, p)| matches!(p, Pending::Approval { ui_id, .. } if ui_id == target)).map(|(k, _)| k.clone());
            if let Some(key) = key {
                t.pending.remove(&key);
                out.push(event("ApprovalResponse", json!({"request_id": key, "response": "reject", "feedback": ""})));
            }
        }
        "host_tool_call" if frame["toolName"] == QUESTION_TOOL && t.supports_question => {
            let id = uuid::Uuid::new_v4().simple().to_string();
            t.pending.insert(id.clone(), Pending::Question { host_id: frame["id"].as_str().unwrap_or_default().to_owned() });
            let questions = with_question_defaults(&frame["arguments"]["questions"]);
            out.push(request(&id, "QuestionRequest", json!({"id": id, "tool_call_id": frame["toolCallId"], "questions": questions})));
        }
        "host_tool_call" => {
            let call_id = frame["toolCallId"].as_str().unwrap_or_default().to_owned();
            t.pending.insert(call_id.clone(), Pending::ExternalTool { host_id: frame["id"].as_str().unwrap_or_default().to_owned() });
            out.push(request(&call_id, "ToolCallRequest", json!({"id": call_id, "name": frame["toolName"], "arguments": frame["arguments"].to_string()})));
        }
        "host_tool_cancel" => {
            let target = frame["targetId"].as_str().unwrap_or_default();
            t.pending.retain(|_, p| !matches!(p, Pending::ExternalTool { host_id } | Pending::Question { host_id } if host_id == target));
        }
        "message_start" if frame["message"]["role"] == "assistant" && t.retrying => t.retrying = false,
        "message_start" if frame["message"]["role"] == "assistant" => {
            t.step += 1;
            out.push(event("StepBegin", json!({"n": t.step})));
        }
        "message_start" if frame["message"]["role"] == "user" && frame["message"]["steering"] == true => {
            let text = frame["message"]["content"][0]["text"].clone();
            out.push(event("SteerInput", json!({"user_input": text})));
        }
        "message_update" => {
            let e = &frame["assistantMessageEvent"];
            let index = e["contentIndex"].as_u64().unwrap_or(0) as usize;
            match e["type"].as_str().unwrap_or_default() {
                "text_delta" => out.push(event("ContentPart", json!({"type": "text", "text": e["delta"]}))),
                "thinking_delta" => out.push(event("ContentPart", json!({"type": "think", "think": e["delta"], "encrypted": null}))),
                "toolcall_start" => {
                    let call = &e["partial"]["content"][index];
                    out.push(event("ToolCall", json!({"type": "function", "id": call["id"], "function": {"name": call["name"], "arguments": ""}, "extras": null})));
                }
                "toolcall_delta" if e["delta"].as_str().is_some_and(|d| !d.is_empty()) => {
                    out.push(event("ToolCallPart", json!({"arguments_part": e["delta"]})));
                }
                _ => {}
            }
        }
        "message_end" if frame["message"]["role"] == "assistant" && frame["message"]["stopReason"] == "error" => {
            t.last_stop = Some("error".into());
            t.interrupted = true;
        }
        "message_end" if frame["message"]["role"] == "assistant" && frame["message"]["stopReason"] == "aborted" => {
            // A cancelled step reports no usage (kimi sends no StatusUpdate for it either).
            t.last_stop = Some("aborted".into());
        }
        "message_end" if frame["message"]["role"] == "assistant" => {
            let m = &frame["message"];
            t.last_stop = m["stopReason"].as_str().map(str::to_owned);
            let u = &m["usage"];
            let input = u["input"].as_u64().unwrap_or(0);
            let cache_read = u["cacheRead"].as_u64().unwrap_or(0);
            out.push(event(
                "StatusUpdate",
                json!({
                    "context_usage": null, "context_tokens": input + cache_read, "max_context_tokens": null,
                    "token_usage": {"input_other": input, "output": u["output"], "input_cache_read": cache_read, "input_cache_creation": u["cacheWrite"]},
                    "message_id": m.get("responseId").cloned().unwrap_or(Value::Null), "plan_mode": t.plan_mode, "mcp_status": null
                }),
            ));
        }
        "tool_execution_end" => {
            let text: String = frame["result"]["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
            let kept = &frame["result"]["details"][WIRE_RETURN_VALUE];
            let (message, display) = (kept.get("message").cloned().unwrap_or(json!("")), kept.get("display").cloned().unwrap_or(json!([])));
            out.push(event(
                "ToolResult",
                json!({"tool_call_id": frame["toolCallId"], "return_value": {"is_error": frame["isError"], "output": text, "message": message, "display": display, "extras": null}}),
            ));
        }
        "auto_retry_start" => {
            (t.interrupted, t.retrying) = (false, true);
            let wait = frame["delayMs"].as_f64().unwrap_or(0.0) / 1000.0;
            out.push(event(
                "StepRetry",
                json!({"n": t.step, "next_attempt": frame["attempt"].as_u64().unwrap_or(1) + 1, "max_attempts": frame["maxAttempts"].as_u64().unwrap_or(0) + 1,
                       "wait_s": wait, "error_type": "ProviderError", "status_code": null}),
            ));
        }
        "agent_end" => {
            if std::mem::take(&mut t.interrupted) {
                out.push(event("StepInterrupted", json!({})));
            }
            t.retrying = false;
            out.push(event("TurnEnd", json!({})));
        }
        "prompt_result" => {
            if let Some(id) = t.prompt_id.take() {
                match frame["status"].as_str() {
                    Some("completed") if t.last_stop.as_deref() == Some("toolUse") => {
                        out.push(success(&id, json!({"status": "max_steps_reached", "steps": t.step})));
                    }
                    Some("completed") => out.push(success(&id, json!({"status": "finished"}))),
                    Some("aborted") => out.push(success(&id, json!({"status": "cancelled"}))),
                    _ => {
                        let message = frame["error"]["message"].as_str().unwrap_or("the provider failed");
                        let e = WireError::new(wire_codes::CHAT_PROVIDER_ERROR, message);
                        out.push(serde_json::to_value(error_response(Some(&id), &e)).unwrap_or_default());
                    }
                }
            }
        }
        _ => {}
    }
    (out, None)
}

fn user_text(input: &WireUserInput) -> Result<(String, Vec<ImageContent>), WireError> {
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
                            return Err(WireError::new(wire_codes::LLM_NOT_SUPPORTED, "Only data: image URLs are supported"));
                        };
                        images.push(serde_json::from_value(json!({"type": "image", "data": data, "mimeType": mime})).map_err(|e| WireError::new(wire_codes::INVALID_PARAMS, e.to_string()))?);
                    }
                    WireContentPart::AudioUrl(_) | WireContentPart::VideoUrl(_) => {
                        return Err(WireError::new(wire_codes::LLM_NOT_SUPPORTED, "Audio and video input are not supported"));
                    }
                }
            }
            Ok((text.join("\n"), images))
        }
    }
}

/// Whether a JSONL command would pass the schema (names of external tools must fit host tools).
fn validator_accepts(command: &Value) -> bool {
    crate::protocol::validate::validator().validate_frame(crate::protocol::validate::Dialect::Rpc, crate::protocol::validate::Direction::Inbound, command, None).is_ok()
}

fn rpc_value<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the adapter builds valid commands")
}

/// Serves the wire dialect on `input`; the agent's own frames arrive on `agent_frames`.
pub async fn serve_wire<R, A>(agent: Agent, input: R, agent_frames: A, out: Outbox)
where
    R: AsyncBufRead + Unpin,
    A: AsyncBufRead + Unpin + Send + 'static,
{
    let turn = Arc::new(Mutex::new(Turn::default()));
    let log = Arc::new(Mutex::new(WireLog::open(agent.session_path())));
    let translator = {
        // Weak: the agent's frames end (and this task with them) once the agent is gone.
        let (turn, out, agent, log) = (turn.clone(), out.clone(), agent.downgrade(), log.clone());
        tokio::spawn(async move {
            let mut lines = agent_frames.lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(frame) = serde_json::from_str::<Value>(&line) else { continue };
                let (frames, answer) = translate(&frame, &turn);
                for wire in frames {
                    emit(&out, &log, &wire).await;
                }
                if let (Some(answer), Some(agent)) = (answer, agent.upgrade()) {
                    agent.ui_response(answer);
                }
            }
        })
    };
    let mut reader = LineReader::new(input, 100 * 1024 * 1024);
    while let Ok(Some(line)) = reader.next_line().await {
        let (id, request) = match decode_wire_line(line) {
            Err(e) => {
                let _ = out.send(&*e).await;
                continue;
            }
            Ok(WireInbound::Notification { method }) => {
                eprintln!("agentwire: ignoring a `{method}` notification (requests need an id)");
                continue;
            }
            Ok(WireInbound::ClientResponse { id, outcome }) => {
                client_response(&agent, &turn, &out, &log, &id, outcome).await;
                continue;
            }
            Ok(WireInbound::Request { id, request }) => (id, request),
        };
        let reply = handle(&agent, &turn, &out, &log, &id, request).await;
        match reply {
            Ok(Some(result)) => {
                let _ = out.send(&success(&id, result)).await;
            }
            Ok(None) => {}
            Err(e) => {
                let _ = out.send(&error_response(Some(&id), &e)).await;
            }
        }
    }
    agent.shutdown().await;
    // The translator ends by itself once the agent is dropped (its frame pipe closes); the caller
    // waits for the output writer, which outlives it.
    drop(translator);
}

/// Delivers the client's answer to one of our requests; answers to unknown or settled requests
/// (including replayed ones) are ignored.
async fn client_response(agent: &Agent, turn: &Mutex<Turn>, out: &Outbox, log: &Mutex<WireLog>, id: &Value, outcome: Result<Value, WireError>) {
    let key = match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let pending = turn.lock().unwrap_or_else(|e| e.into_inner()).pending.remove(&key);
    match pending {
        None => {}
        Some(Pending::Approval { ui_id, tool }) => {
            let (decision, feedback) = match &outcome {
                Ok(r) => (r["response"].as_str().unwrap_or("reject").to_owned(), r["feedback"].as_str().unwrap_or_default().to_owned()),
                Err(_) => ("reject".to_owned(), String::new()),
            };
            if decision == "approve_for_session" {
                turn.lock().unwrap_or_else(|e| e.into_inner()).approved_for_session.insert(tool);
            }
            emit(out, log, &event("ApprovalResponse", json!({"request_id": key, "response": decision, "feedback": feedback}))).await;
            agent.ui_response(ui_answer(&ui_id, decision.starts_with("approve")));
        }
        Some(Pending::Question { host_id }) => {
            // An error reply (or no answers) is an empty answer, as in kimi: the model goes on.
            let answers = outcome.ok().and_then(|r| r.get("answers").filter(|a| a.is_object()).cloned()).unwrap_or_else(|| json!({}));
            let text = json!({"answers": answers}).to_string();
            let frame: HostToolResult = serde_json::from_value(json!({"type": "host_tool_result", "id": host_id, "result": {"content": [{"type": "text", "text": text}], "details": {"answers": answers}}}))
                .expect("valid host tool result");
            agent.host_tool_result(frame);
        }
        Some(Pending::ExternalTool { host_id }) => {
            let (is_error, text, kept) = match outcome {
                Ok(r) => {
                    let rv = &r["return_value"];
                    // The client's message and display go back out in the ToolResult event.
                    let kept = json!({"message": rv.get("message").cloned().unwrap_or(json!("")), "display": rv.get("display").cloned().unwrap_or(json!([]))});
                    let text = match &rv["output"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
                        _ => String::new(),
                    };
                    let text = if text.is_empty() { rv["message"].as_str().unwrap_or_default().to_owned() } else { text };
                    (rv["is_error"].as_bool().unwrap_or(false), text, kept)
                }
                Err(e) => (true, e.message, json!({"message": "", "display": []})),
            };
            let frame: HostToolResult =
                serde_json::from_value(json!({"type": "host_tool_result", "id": host_id, "isError": is_error, "result": {"content": [{"type": "text", "text": text}], "details": {WIRE_RETURN_VALUE: kept}}}))
                .expect("valid host tool result");
            agent.host_tool_result(frame);
        }
    }
}

/// Runs one request; `Ok(None)` when the answer comes later (a prompt's result after `TurnEnd`).
async fn handle(agent: &Agent, turn: &Mutex<Turn>, out: &Outbox, log: &Mutex<WireLog>, id: &Value, request: WireRequest) -> Result<Option<Value>, WireError> {
    let busy = || WireError::new(wire_codes::INVALID_STATE, "An agent turn is already in progress");
    let idle = || WireError::new(wire_codes::INVALID_STATE, "No agent turn is in progress");
    let running = agent.is_running();
    match request {
        WireRequest::Initialize(r) => {
            if running {
                return Err(busy());
            }
            let mut result = json!({
                "protocol_version": WIRE_PROTOCOL_VERSION,
                "server": {"name": "agentwire", "version": env!("CARGO_PKG_VERSION")},
                "slash_commands": [],
                "hooks": {"supported_events": [], "configured": {}},
                "capabilities": {"supports_question": true}
            });
            let questions = r.params.capabilities.as_ref().and_then(|c| c.supports_question).unwrap_or(false);
            turn.lock().unwrap_or_else(|e| e.into_inner()).supports_question = questions;
            let tools = r.params.external_tools.unwrap_or_default();
            if !tools.is_empty() || questions {
                // External tools become host tools; each is checked on its own so one bad tool
                // does not sink the others.
                let (mut accepted, mut rejected, mut defs) = (Vec::new(), Vec::new(), Vec::new());
                for t in &tools {
                    if t.name.as_str() == QUESTION_TOOL && questions {
                        rejected.push(json!({"name": t.name.as_str(), "reason": "reserved for the question tool (supports_question)"}));
                        continue;
                    }
                    let description = if t.description.is_empty() { t.name.to_string() } else { t.description.clone() };
                    let def = json!({"name": t.name.as_str(), "description": description, "parameters": Value::Object(t.parameters.clone())});
                    let candidate = json!({"type": "set_host_tools", "tools": [def.clone()]});
                    let reason = if !validator_accepts(&candidate) {
                        Some("invalid tool name (letters, digits, `_` and `-`) or parameters".to_owned())
                    } else if defs.iter().any(|d: &Value| d["name"] == def["name"]) {
                        Some("duplicate tool name".to_owned())
                    } else {
                        RpcHandler::set_host_tools(agent, rpc_value(candidate)).await.err().map(|e| e.message)
                    };
                    match reason {
                        None => {
                            defs.push(def);
                            accepted.push(t.name.to_string());
                        }
                        Some(reason) => rejected.push(json!({"name": t.name.as_str(), "reason": reason})),
                    }
                }
                if questions {
                    defs.push(question_tool());
                }
                let all: SetHostToolsCommand = rpc_value(json!({"type": "set_host_tools", "tools": defs}));
                let _ = RpcHandler::set_host_tools(agent, all).await;
                if !tools.is_empty() {
                    result["external_tools"] = json!({"accepted": accepted, "rejected": rejected});
                }
            }
            Ok(Some(result))
        }
        WireRequest::Prompt(r) => {
            if running {
                return Err(busy());
            }
            let (text, images) = user_text(&r.params.user_input)?;
            {
                let mut t = turn.lock().unwrap_or_else(|e| e.into_inner());
                t.prompt_id = Some(id.clone());
                t.step = 0;
                t.last_stop = None;
            }
            emit(out, log, &event("TurnBegin", json!({"user_input": serde_json::to_value(&r.params.user_input).unwrap_or_default()}))).await;
            let cmd: PromptCommand = rpc_value(json!({"type": "prompt", "message": text, "images": images}));
            RpcHandler::prompt(agent, cmd).await.map_err(|e| WireError::new(wire_codes::INTERNAL_ERROR, e.message))?;
            agent.release_gates();
            Ok(None)
        }
        WireRequest::Steer(r) => {
            if !running {
                return Err(idle());
            }
            let (text, images) = user_text(&r.params.user_input)?;
            let cmd: SteerCommand = rpc_value(json!({"type": "steer", "message": text, "images": images}));
            RpcHandler::steer(agent, cmd).await.map_err(|e| WireError::new(wire_codes::INTERNAL_ERROR, e.message))?;
            Ok(Some(json!({"status": "steered"})))
        }
        WireRequest::Cancel(_) => {
            if !running {
                return Err(idle());
            }
            // The cancel result comes first, then the turn's remaining events, TurnEnd and the
            // prompt's `cancelled` result.
            let _ = out.send(&success(id, json!({}))).await;
            let agent = Clone::clone(agent);
            tokio::spawn(async move {
                let _ = RpcHandler::abort(&agent, rpc_value(json!({"type": "abort"}))).await;
            });
            Ok(None)
        }
        WireRequest::SetPlanMode(r) => {
            turn.lock().unwrap_or_else(|e| e.into_inner()).plan_mode = r.params.enabled;
            let status = json!({"context_usage": null, "context_tokens": null, "max_context_tokens": null, "token_usage": null,
                                "message_id": null, "plan_mode": r.params.enabled, "mcp_status": null});
            emit(out, log, &event("StatusUpdate", status)).await;
            Ok(Some(json!({"status": "ok", "plan_mode": r.params.enabled})))
        }
        WireRequest::Replay(_) => {
            if running {
                return Err(busy());
            }
            // Historical frames, marked `replayed`: answers to replayed requests are ignored.
            let records = {
                let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                log.flush();
                log.records.clone()
            };
            let (mut events, mut requests) = (0u64, 0u64);
            for r in records {
                let m = &r["message"];
                let kind = m["type"].as_str().unwrap_or_default();
                let frame = if matches!(kind, "ToolCallRequest" | "QuestionRequest") {
                    requests += 1;
                    json!({"jsonrpc": "2.0", "method": "request", "id": m["payload"]["id"], "params": m, "replayed": true})
                } else {
                    events += 1;
                    json!({"jsonrpc": "2.0", "method": "event", "params": m, "replayed": true})
                };
                let _ = out.send(&frame).await;
            }
            Ok(Some(json!({"status": "finished", "events": events, "requests": requests})))
        }
    }
}
