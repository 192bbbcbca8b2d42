//! `agentwire conformance import`: turns a recording of another implementation (the
//! `shared/reference-transcripts/` format: `{"dir":"in"|"out","frame"|"raw"|"eof",…}` lines plus
//! the fake model's script in `scripts.json`) into a transcript that replays against agentwire.
//!
//! The conversion keeps what the protocol fixes and loosens what belongs to the implementation:
//! - the model script becomes `model` lines with the exact deltas the recording shows
//!   (`textChunks`, `thinkingChunks`, `argumentChunks`), usage as the fake reported it;
//! - kimi's built-in tools are renamed to ours (`ReadFile` → `read`, `Shell` → `bash`, …) in the
//!   script and in the expected frames; their outputs and messages become `{{string}}` (tool
//!   implementations differ), an external tool's result stays exact (the client wrote it);
//! - error messages and data become placeholders (the codes are the contract); the server's
//!   name, version, slash commands and hooks in `initialize` become `{{any}}`;
//! - `StatusUpdate` keeps the token counts and plan mode; its context-window fields and message id
//!   are left out (subset match), and it is placed right after the step's streamed output: kimi
//!   starts tools while the step's usage is still being reported, so where it lands relative to
//!   an approval or tool call is a race there, not part of the protocol;
//! - ids the agent chose (approval request ids) become captures; `eof` lines become
//!   `close_stdin` and `exit`;
//! - kimi asks before shell commands and file writes (our `--approval dangerous`) unless the
//!   recording ran with `--yolo`;
//! - the `ToolResult`s of parallel tool calls come in completion order, which is the tools'
//!   timing, not the protocol: consecutive `ToolResult`s become one `unordered` line, matched by
//!   their tool call ids whatever order either agent finished them in;
//! - and a call starts once its arguments are complete, so its `ToolResult` may come while the
//!   next call's arguments still stream or after the step's stream: a step streaming several
//!   calls becomes one `interleaved` line, the stream in its order and each result anywhere in
//!   it. Fixed: the stream's own order (calls, their argument parts, the StatusUpdate) and the
//!   step's place in the turn. Open: where each result falls (a result before its own call's
//!   arguments end is not refused by the line, which the wire document does not fix either).

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::recording::Normalizer;
use super::error::InputError;
use super::runner::in_line;
use crate::protocol::TranscriptHeaderDialect;

/// kimi-cli's built-in tools that have an agentwire counterpart, with the arguments kept as is.
/// (`AskUserQuestion` is ours too, offered to clients that support questions.)
const KIMI_TOOLS: &[(&str, &str)] =
    &[("ReadFile", "read"), ("Shell", "bash"), ("WriteFile", "write"), ("StrReplaceFile", "edit"), ("Glob", "find"), ("Grep", "grep"), ("AskUserQuestion", "AskUserQuestion")];

/// The work directory the kimi recordings ran in held this file.
const KIMI_WORK_FILES: &[(&str, &str)] = &[("hello.txt", "hello from the work dir\nsecond line\n")];

/// kimi's fake LLM reported this usage when a script entry set none.
const KIMI_DEFAULT_USAGE: (u64, u64) = (1000, 10);

/// The requirement every imported kimi transcript covers (listed in docs/conformance.md).
pub const KIMI_REQUIREMENT: &str = "REF-KIMI-1";

fn our_tool(name: &str) -> &str {
    KIMI_TOOLS.iter().find(|(kimi, _)| *kimi == name).map_or(name, |(_, ours)| ours)
}

fn is_builtin(name: &str) -> bool {
    KIMI_TOOLS.iter().any(|(kimi, _)| *kimi == name)
}

/// One recorded line.
pub(super) enum Recorded {
    In(Value),
    InRaw(String),
    CloseStdin,
    Out(Value),
    Exit(i64),
}

/// The recordings write their temporary directory as `<tmp>`, except inside deltas that split
/// it; both read as `/tmp` here.
pub(super) const REDACTED_TMP: &str = "<tmp>";

/// Reads a recording: `in`/`out` lines, `eof` markers (pi, kimi) and omp's harness `meta`
/// events `stdin_close` and `exit`; other bookkeeping is skipped.
pub(super) fn read_recording(path: &Path) -> Result<Vec<Recorded>, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Io { path: path.to_owned(), source })?.replace(REDACTED_TMP, "/tmp");
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |reason: &str| InputError::Content { at: format!("{}:{}", path.display(), i + 1), reason: reason.to_owned() };
        let v: Value = serde_json::from_str(line).map_err(|source| InputError::Json { at: format!("{}:{}", path.display(), i + 1), source })?;
        let dir = v.get("dir").and_then(Value::as_str).unwrap_or_default();
        let eof = v.get("eof").and_then(Value::as_bool) == Some(true);
        if dir == "meta" {
            match v.get("event").and_then(Value::as_str) {
                Some("stdin_close") => out.push(Recorded::CloseStdin),
                Some("exit") => out.push(Recorded::Exit(v.get("code").and_then(Value::as_i64).ok_or_else(|| at("an exit event without code"))?)),
                _ => {}
            }
            continue;
        }
        out.push(match (dir, eof) {
            ("in", true) => Recorded::CloseStdin,
            ("out", true) => Recorded::Exit(v.get("exit_code").and_then(Value::as_i64).ok_or_else(|| at("eof without exit_code"))?),
            ("in", false) => match (v.get("raw").and_then(Value::as_str), v.get("frame")) {
                (Some(raw), _) => Recorded::InRaw(raw.to_owned()),
                (None, Some(frame)) => Recorded::In(frame.clone()),
                (None, None) => return Err(at("an in line without frame or raw")),
            },
            ("out", false) => Recorded::Out(v.get("frame").cloned().ok_or_else(|| at("an out line without frame"))?),
            _ => continue, // harness bookkeeping
        });
    }
    Ok(out)
}

/// The tool-call argument deltas the recording shows, per tool call id, in order.
fn recorded_argument_chunks(lines: &[Recorded]) -> Vec<(String, Vec<String>)> {
    let mut calls: Vec<(String, Vec<String>)> = Vec::new();
    for line in lines {
        let Recorded::Out(frame) = line else { continue };
        let (kind, payload) = (&frame["params"]["type"], &frame["params"]["payload"]);
        if frame["method"] != "event" {
            continue;
        }
        if kind == "ToolCall" {
            calls.push((payload["id"].as_str().unwrap_or_default().to_owned(), Vec::new()));
        } else if kind == "ToolCallPart" {
            if let (Some(last), Some(part)) = (calls.last_mut(), payload["arguments_part"].as_str()) {
                last.1.push(part.to_owned());
            }
        }
    }
    calls
}

/// A kimi fake-script entry as an offline-model reply.
fn model_reply(entry: &Value, argument_chunks: &[(String, Vec<String>)]) -> Value {
    let mut reply = Map::new();
    let strings = |v: &Value| -> Option<Vec<Value>> { v.as_array().map(|a| a.iter().filter(|s| s.is_string()).cloned().collect()) };
    if let Some(status) = entry.get("status").and_then(Value::as_u64) {
        let message = entry.get("message").and_then(Value::as_str).unwrap_or("error");
        reply.insert("error".into(), json!(format!("{status} {message}")));
        reply.insert("retryable".into(), json!(status >= 500 || status == 429));
        return Value::Object(reply);
    }
    if let Some(think) = strings(&entry["think"]).filter(|t| !t.is_empty()) {
        reply.insert("thinkingChunks".into(), Value::Array(think));
    }
    if let Some(text) = strings(&entry["text"]).filter(|t| !t.is_empty()) {
        reply.insert("textChunks".into(), Value::Array(text));
    }
    if let Some(calls) = entry.get("tool_calls").and_then(Value::as_array) {
        let calls: Vec<Value> = calls
            .iter()
            .map(|call| {
                let id = call["id"].as_str().unwrap_or_default();
                let text = call["arguments"].as_str().unwrap_or("{}");
                let arguments: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
                let mut out = json!({"id": id, "name": our_tool(call["name"].as_str().unwrap_or_default()), "arguments": arguments});
                if let Some((_, chunks)) = argument_chunks.iter().find(|(cid, chunks)| cid == id && !chunks.is_empty()) {
                    out["argumentChunks"] = json!(chunks);
                }
                out
            })
            .collect();
        reply.insert("toolCalls".into(), Value::Array(calls));
    }
    if let Some(ms) = entry.get("delay_ms").and_then(Value::as_u64) {
        reply.insert("delayMs".into(), json!(ms));
    }
    let usage = &entry["usage"];
    let input = usage["prompt_tokens"].as_u64().unwrap_or(KIMI_DEFAULT_USAGE.0);
    let output = usage["completion_tokens"].as_u64().unwrap_or(KIMI_DEFAULT_USAGE.1);
    reply.insert("usage".into(), json!({"input": input, "output": output}));
    Value::Object(reply)
}

/// Loosens what belongs to kimi in one agent frame; returns the pattern and whether it is a
/// subset match.
fn loosen(frame: &Value, builtin_calls: &[String]) -> (Value, bool) {
    let mut f = frame.clone();
    if let Some(error) = f.get_mut("error").and_then(Value::as_object_mut) {
        error.insert("message".into(), json!("{{string}}"));
        if error.contains_key("data") {
            error.insert("data".into(), json!("{{any}}"));
        }
    }
    if let Some(result) = f.get_mut("result").and_then(Value::as_object_mut) {
        if result.contains_key("server") {
            for key in ["server", "slash_commands", "hooks"] {
                if result.contains_key(key) {
                    result.insert(key.into(), json!("{{any}}"));
                }
            }
            if let Some(rejected) = result.get_mut("external_tools").and_then(|e| e.get_mut("rejected")).and_then(Value::as_array_mut) {
                for r in rejected {
                    r["reason"] = json!("{{string}}");
                    if let Some(name) = r["name"].as_str() {
                        r["name"] = json!(our_tool(name));
                    }
                }
            }
        }
    }
    let kind = frame["params"]["type"].as_str().unwrap_or_default().to_owned();
    let mut subset = false;
    let Some(payload) = f.get_mut("params").and_then(|p| p.get_mut("payload")) else { return (f, subset) };
    match (frame["method"].as_str(), kind.as_str()) {
        (Some("event"), "StatusUpdate") => {
            if let Some(p) = payload.as_object_mut() {
                for key in ["context_usage", "max_context_tokens", "message_id", "mcp_status"] {
                    p.remove(key);
                }
            }
            subset = true;
        }
        (Some("event"), "StepRetry") => {
            // kimi names its Python exception class; the status code is known only for HTTP errors.
            payload["error_type"] = json!("{{string}}");
            payload["status_code"] = json!("{{any}}");
        }
        (Some("request"), "ToolCallRequest") => {
            // Compared as JSON text re-serialised compactly: the formatting is the model's, not the protocol's.
            if let Some(compact) = payload["arguments"].as_str().and_then(|a| serde_json::from_str::<Value>(a).ok()) {
                payload["arguments"] = json!(compact.to_string());
            }
        }
        (Some("event"), "ToolCall") => {
            if let Some(name) = payload["function"]["name"].as_str() {
                payload["function"]["name"] = json!(our_tool(name));
            }
        }
        (Some("event"), "ToolResult") => {
            let id = payload["tool_call_id"].as_str().unwrap_or_default();
            if builtin_calls.iter().any(|c| c == id) {
                let rv = &mut payload["return_value"];
                for key in ["output", "message"] {
                    if rv.get(key).is_some() {
                        rv[key] = json!("{{string}}");
                    }
                }
                if rv.get("display").is_some() {
                    rv["display"] = json!("{{any}}");
                }
            }
        }
        (Some("request"), "ApprovalRequest") => {
            if let Some(sender) = payload["sender"].as_str() {
                payload["sender"] = json!(our_tool(sender));
            }
            // kimi's id of the foreground turn; agentwire has none to give.
            payload["source_id"] = json!("{{any}}");
        }
        _ => {}
    }
    (f, subset)
}

/// An `initialize` whose external tools clash with kimi's built-ins (a test of the conflict)
/// names ours instead, so the clash is tested against agentwire's built-ins.
fn rename_external_tools(frame: &Value) -> Value {
    let mut f = frame.clone();
    if frame["method"] == "initialize" {
        if let Some(tools) = f.get_mut("params").and_then(|p| p.get_mut("external_tools")).and_then(Value::as_array_mut) {
            for tool in tools {
                if let Some(name) = tool["name"].as_str().filter(|n| is_builtin(n)) {
                    tool["name"] = json!(our_tool(name));
                }
            }
        }
    }
    f
}

fn is_streamed_output(frame: &Value) -> bool {
    frame["method"] == "event" && matches!(frame["params"]["type"].as_str(), Some("ContentPart" | "ToolCall" | "ToolCallPart" | "StepBegin"))
}

fn is_status_update(frame: &Value) -> bool {
    frame["method"] == "event" && frame["params"]["type"] == "StatusUpdate"
}

/// Lines a StatusUpdate may be moved back across: the step's tool execution (agent requests, the
/// client's answers, ApprovalResponse and ToolResult events).
fn is_tool_execution(line: &Recorded) -> bool {
    match line {
        Recorded::In(f) => f.get("method").is_none(),
        Recorded::Out(f) => f["method"] == "request" || (f["method"] == "event" && matches!(f["params"]["type"].as_str(), Some("ApprovalResponse" | "ToolResult"))),
        _ => false,
    }
}

/// Moves each StatusUpdate back to right after its step's streamed output (see the module docs).
fn place_status_updates(lines: &mut Vec<Recorded>) {
    for i in 0..lines.len() {
        if !matches!(&lines[i], Recorded::Out(f) if is_status_update(f)) {
            continue;
        }
        let mut j = i;
        while j > 0 && is_tool_execution(&lines[j - 1]) {
            j -= 1;
        }
        if j < i && matches!(lines.get(j.wrapping_sub(1)), Some(Recorded::Out(f)) if is_streamed_output(f)) {
            let status = lines.remove(i);
            lines.insert(j, status);
        }
    }
}

/// The type of the event an `out` line expects, if it expects one.
fn event_type(line: &Value) -> Option<&str> {
    (line["kind"] == "out" && line["frame"]["method"] == "event").then(|| line["frame"]["params"]["type"].as_str()).flatten()
}

/// Turns each step that streams two or more tool calls, with their results, into one
/// `interleaved` line (see the module docs): the step's stream (calls, argument parts, content,
/// its StatusUpdate) keeps its order, and each `ToolResult` is a sequence of its own that may
/// come anywhere in it. A call runs once its arguments are complete, so its result may arrive
/// while the next call's arguments still stream, or after the stream: which one a run writes
/// is the tools' timing, and the wire document fixes neither. The line is a subset match when
/// any of its frames was one (the StatusUpdate).
fn interleave_parallel_calls(lines: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let in_step = |l: &Value| matches!(event_type(l), Some("ToolCall" | "ToolCallPart" | "ContentPart" | "StatusUpdate" | "ToolResult"));
        let end = if event_type(&lines[i]) == Some("ToolCall") { i + lines[i..].iter().take_while(|l| in_step(l)).count() } else { i };
        let segment = &lines[i..end];
        let calls = segment.iter().filter(|l| event_type(l) == Some("ToolCall")).count();
        let results = segment.iter().filter(|l| event_type(l) == Some("ToolResult")).count();
        if calls < 2 || results == 0 {
            out.push(lines[i].clone());
            i += 1;
            continue;
        }
        let stream: Vec<Value> = segment.iter().filter(|l| event_type(l) != Some("ToolResult")).map(|l| l["frame"].clone()).collect();
        let mut sequences = vec![Value::Array(stream)];
        sequences.extend(segment.iter().filter(|l| event_type(l) == Some("ToolResult")).map(|l| json!([l["frame"].clone()])));
        let mut line = json!({"kind": "unordered", "interleaved": true, "frames": sequences});
        if segment.iter().any(|l| l["subset"] == true) {
            line["subset"] = json!(true);
        }
        out.push(line);
        i = end;
    }
    out
}

fn is_tool_result_line(line: &Value) -> bool {
    line["kind"] == "out" && line["subset"].is_null() && line["frame"]["method"] == "event" && line["frame"]["params"]["type"] == "ToolResult"
}

/// Turns each run of two or more consecutive `ToolResult` lines into one `unordered` line (see
/// the module docs: parallel calls finish in either order).
fn group_tool_results(lines: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(lines.len());
    let mut run: Vec<Value> = Vec::new();
    let flush = |run: &mut Vec<Value>, out: &mut Vec<Value>| match run.len() {
        0 => {}
        1 => out.append(run),
        _ => out.push(json!({"kind": "unordered", "frames": run.drain(..).map(|l| l["frame"].clone()).collect::<Vec<_>>()})),
    };
    for line in lines {
        if is_tool_result_line(&line) {
            run.push(line);
        } else {
            flush(&mut run, &mut out);
            out.push(line);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Converts one kimi-cli recording (`<scenario>.jsonl`, with `scripts.json` beside it) into a
/// transcript for agentwire's wire dialect.
pub fn import_kimi(path: &Path, scripts: &Value) -> Result<String, InputError> {
    let scenario = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl")).ok_or_else(|| InputError::Content { at: path.display().to_string(), reason: "not a .jsonl file".into() })?;
    let script = scripts.get(scenario).ok_or_else(|| InputError::Content { at: path.display().to_string(), reason: format!("no entry {scenario:?} in scripts.json") })?;
    let script: Value = serde_json::from_str(&script.to_string().replace(REDACTED_TMP, "/tmp")).unwrap_or_else(|_| script.clone());
    let mut lines = read_recording(path)?;
    let argument_chunks = recorded_argument_chunks(&lines);
    let builtin_calls: Vec<String> = script["fake_script"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["tool_calls"].as_array().into_iter().flatten())
        .filter(|c| is_builtin(c["name"].as_str().unwrap_or_default()))
        .filter_map(|c| c["id"].as_str().map(str::to_owned))
        .collect();
    place_status_updates(&mut lines);

    let argv: Vec<&str> = script["argv"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    // kimi asks before running shell commands and writing files (our `--approval dangerous`),
    // except with `--yolo`, which approves everything (our default, `--approval never`).
    let mut args = if argv.contains(&"--yolo") { Vec::new() } else { vec!["--approval".to_owned(), "dangerous".to_owned()] };
    for pair in argv.windows(2) {
        if pair[0] == "--max-steps-per-turn" {
            args.extend([pair[0].to_owned(), pair[1].to_owned()]);
        }
        if pair[0] == "--max-retries-per-step" {
            // kimi's N counts attempts (its StepRetry says max_attempts N); ours counts retries.
            let retries = pair[1].parse::<u32>().unwrap_or(1).saturating_sub(1);
            args.extend(["--retry-max-attempts".to_owned(), retries.to_string(), "--retry-base-delay-ms".to_owned(), "1".to_owned()]);
        }
    }
    let work_files: Map<String, Value> = KIMI_WORK_FILES.iter().map(|(p, t)| ((*p).to_owned(), json!(t))).collect();
    let mut out = vec![json!({
        "kind": "header",
        "name": format!("kimi-{}", scenario.replace(['.', '_'], "-")),
        "dialect": "wire",
        "description": format!("Imported from kimi-cli 1.50.0's recording `{scenario}` (shared/reference-transcripts/kimi) by `agentwire conformance import`."),
        "requirements": [KIMI_REQUIREMENT],
        "args": args,
        "workFiles": work_files,
    })];
    for entry in script["fake_script"].as_array().into_iter().flatten() {
        out.push(json!({"kind": "model", "reply": model_reply(entry, &argument_chunks)}));
    }
    let mut normalizer = Normalizer::new(Path::new("/nonexistent-recording-dir"));
    // The ids of the host's own requests stay literal; ids the agent chose (its requests, which
    // the host's answers repeat) become captures.
    let host_ids: Vec<Value> = lines.iter().filter_map(|l| if let Recorded::In(f) = l { f.get("method").and(f.get("id")).cloned() } else { None }).collect();
    // Frames between a `replay` request and its result are replayed: agentwire marks them
    // `replayed: true` (an extension), so they are subset matches.
    let mut replay_id: Option<Value> = None;
    for line in &lines {
        match line {
            Recorded::In(f) if f["method"] == "replay" => replay_id = f.get("id").cloned(),
            Recorded::Out(f) if replay_id.is_some() && f.get("id") == replay_id.as_ref() => replay_id = None,
            _ => {}
        }
        let in_replay = replay_id.is_some();
        out.push(match line {
            Recorded::In(frame) => in_line(TranscriptHeaderDialect::Wire, normalizer.inbound(&rename_external_tools(frame))),
            Recorded::InRaw(raw) => json!({"kind": "in", "raw": raw}),
            Recorded::CloseStdin => json!({"kind": "close_stdin"}),
            Recorded::Exit(code) => json!({"kind": "exit", "code": code}),
            Recorded::Out(frame) => {
                let (pattern, subset) = loosen(frame, &builtin_calls);
                let mut line = json!({"kind": "out", "frame": normalizer.outbound(&pattern, &host_ids)});
                if subset || (in_replay && frame.get("method").is_some()) {
                    line["subset"] = json!(true);
                }
                line
            }
        });
    }
    Ok(group_tool_results(interleave_parallel_calls(out)).iter().map(|l| format!("{l}\n")).collect())
}
