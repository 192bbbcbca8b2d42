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
//! | assistant `message_end` | `StatusUpdate` (token usage, message id, plan mode) |
//! | `tool_execution_end` | `ToolResult` |
//! | steered user message | `SteerInput` |
//! | `auto_retry_start` | `StepRetry` |
//! | `agent_end` | `TurnEnd`, then the prompt's result (`finished` / `cancelled`, or -32003) |
//!
//! Not yet: `replay` (the wire log is not kept yet), approvals, external tools and questions as
//! wire requests; those answer with a clear error or are not offered.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::agent::Agent;
use crate::dialect::wire::{decode_wire_line, error_response, WireInbound};
use crate::protocol::envelope::{wire_codes, WireError};
use crate::protocol::*;
use crate::transport::{LineReader, Outbox};

/// Protocol version this adapter speaks (kimi-cli's).
pub const WIRE_PROTOCOL_VERSION: &str = "1.10";

/// Per-turn translation state.
#[derive(Debug, Default)]
struct Turn {
    /// The prompt's request id, answered after `TurnEnd`.
    prompt_id: Option<Value>,
    step: u32,
    plan_mode: bool,
}

fn event(kind: &str, payload: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "event", "params": {"type": kind, "payload": payload}})
}

fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Translates one agent frame into wire frames.
fn translate(frame: &Value, turn: &Mutex<Turn>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut t = turn.lock().unwrap_or_else(|e| e.into_inner());
    match frame["type"].as_str().unwrap_or_default() {
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
        "message_end" if frame["message"]["role"] == "assistant" => {
            let m = &frame["message"];
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
            out.push(event(
                "ToolResult",
                json!({"tool_call_id": frame["toolCallId"], "return_value": {"is_error": frame["isError"], "output": text, "message": "", "display": [], "extras": null}}),
            ));
        }
        "auto_retry_start" => {
            let wait = frame["delayMs"].as_f64().unwrap_or(0.0) / 1000.0;
            out.push(event(
                "StepRetry",
                json!({"n": t.step, "next_attempt": frame["attempt"].as_u64().unwrap_or(1) + 1, "max_attempts": frame["maxAttempts"].as_u64().unwrap_or(0) + 1,
                       "wait_s": wait, "error_type": "ProviderError", "status_code": null}),
            ));
        }
        "agent_end" => out.push(event("TurnEnd", json!({}))),
        "prompt_result" => {
            if let Some(id) = t.prompt_id.take() {
                match frame["status"].as_str() {
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
    out
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
    let translator = {
        let (turn, out) = (turn.clone(), out.clone());
        tokio::spawn(async move {
            let mut lines = agent_frames.lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(frame) = serde_json::from_str::<Value>(&line) else { continue };
                for wire in translate(&frame, &turn) {
                    let _ = out.send(&wire).await;
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
            // Approvals, external tools and questions are not sent as wire requests yet.
            Ok(WireInbound::ClientResponse { .. }) => continue,
            Ok(WireInbound::Request { id, request }) => (id, request),
        };
        let reply = handle(&agent, &turn, &out, &id, request).await;
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
    drop(agent);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), translator).await;
}

/// Runs one request; `Ok(None)` when the answer comes later (a prompt's result after `TurnEnd`).
async fn handle(agent: &Agent, turn: &Mutex<Turn>, out: &Outbox, id: &Value, request: WireRequest) -> Result<Option<Value>, WireError> {
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
                "capabilities": {"supports_question": false}
            });
            if let Some(tools) = r.params.external_tools.filter(|t| !t.is_empty()) {
                let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
                result["external_tools"] = json!({"accepted": [], "rejected": names.iter().map(|n| json!({"name": n, "reason": "external tools are not supported by this build yet"})).collect::<Vec<_>>()});
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
            }
            let _ = out.send(&event("TurnBegin", json!({"user_input": serde_json::to_value(&r.params.user_input).unwrap_or_default()}))).await;
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
            let _ = out.send(&event("StatusUpdate", status)).await;
            Ok(Some(json!({"status": "ok", "plan_mode": r.params.enabled})))
        }
        WireRequest::Replay(_) => {
            if running {
                return Err(busy());
            }
            Err(WireError::new(wire_codes::INTERNAL_ERROR, "replay needs the session's wire log, which this build does not keep yet"))
        }
    }
}
