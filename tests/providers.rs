//! Real providers against a scripted fake server on 127.0.0.1: streaming, tool calls, reasoning,
//! usage and cost, the one retry layer (429 + Retry-After, 500s, cut streams, abort_retry), 400s,
//! abort cancelling the HTTP request, the request bodies, and model selection.

mod common;

use std::time::{Duration, Instant};

use common::fake_llm::*;
use common::{types, Agent};
use serde_json::{json, Value};

/// Starts agentwire on the fake server's models; `overrides` are flag/value pairs replacing the
/// defaults (provider fake, model fake-model, 50 ms retry delay).
fn start(fake: &FakeLlm, overrides: &[&str]) -> (Agent, tempfile::TempDir) {
    let config = tempfile::tempdir().unwrap();
    fake.write_models(config.path()).unwrap();
    let dir = config.path().to_str().unwrap().to_owned();
    let mut flags: Vec<(&str, &str)> = vec![("--provider", "fake"), ("--model", "fake-model"), ("--retry-base-delay-ms", "50")];
    for pair in overrides.chunks(2) {
        flags.retain(|(f, _)| *f != pair[0]);
        flags.push((pair[0], pair[1]));
    }
    let mut args = vec!["--config-dir", dir.as_str()];
    for (f, v) in flags {
        args.push(f);
        args.push(v);
    }
    (Agent::start(&args, &[]), config)
}

fn prompt(a: &mut Agent, id: &str, text: &str) -> Vec<Value> {
    a.send(json!({"id": id, "type": "prompt", "message": text}));
    a.until_prompt_result(id)
}

fn assistant_end(frames: &[Value]) -> Value {
    frames.iter().rev().find(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant").unwrap()["message"].clone()
}

#[test]
fn openai_text_usage_cost_and_request_body() {
    let fake = FakeLlm::start(vec![openai_text(&["Hel", "lo!"])]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    let frames = prompt(&mut a, "p", "Say hello");
    let m = assistant_end(&frames);
    assert_eq!((&m["content"][0]["text"], &m["stopReason"], &m["api"], &m["provider"], &m["model"]), (&json!("Hello!"), &json!("stop"), &json!("openai-completions"), &json!("fake"), &json!("fake-model")));
    assert_eq!(m["responseId"], "chatcmpl-1");
    let u = &m["usage"];
    assert_eq!((&u["input"], &u["output"], &u["cacheRead"], &u["totalTokens"]), (&json!(81), &json!(15), &json!(20), &json!(116)));
    let cost = u["cost"]["total"].as_f64().unwrap();
    assert!((cost - (81.0 * 1.0 + 15.0 * 2.0 + 20.0 * 0.5) / 1e6).abs() < 1e-12, "{cost}");
    let stats = a.request(json!({"id":"s","type":"get_session_stats"}))["data"].clone();
    assert_eq!((&stats["tokens"]["input"], &stats["tokens"]["total"]), (&json!(81), &json!(116)));

    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.headers["authorization"], "Bearer sk-fake-secret-123");
    let b = &req.body;
    assert_eq!((&b["model"], &b["stream"], &b["stream_options"], &b["max_completion_tokens"]), (&json!("fake-model"), &json!(true), &json!({"include_usage": true}), &json!(4096)));
    assert_eq!(b["messages"][0]["role"], "system");
    // Text alone goes as a string: chat templates of local servers concatenate it.
    assert_eq!(b["messages"][1], json!({"role":"user","content":"Say hello"}));
    let tools: Vec<&str> = b["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["read", "write", "edit", "bash", "ls", "grep", "find"]);
    assert_eq!(b["tools"][0]["function"]["parameters"]["required"], json!(["path"]));
    assert!(b.get("reasoning_effort").is_none(), "not a reasoning model");
}

#[test]
fn openai_tool_call_round_trip_sends_the_call_and_its_result_back() {
    let fake = FakeLlm::start(vec![openai_tool_call("call_abc", "bash", r#"{"command":"echo hello"}"#), openai_text(&["It printed hello."])]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    let frames = prompt(&mut a, "p", "Run echo hello");
    let t = types(&frames);
    assert!(t.iter().filter(|t| *t == "mu:toolcall_delta").count() >= 3, "arguments stream in pieces: {t:?}");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "hello\n");
    assert_eq!(assistant_end(&frames)["content"][0]["text"], "It printed hello.");
    let second = &fake.seen()[1].body["messages"];
    let n = second.as_array().unwrap().len();
    assert_eq!(second[n - 2]["tool_calls"], json!([{"id":"call_abc","type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo hello\"}"}}]));
    assert_eq!(second[n - 2]["content"], "Let me run that.");
    assert_eq!(second[n - 1], json!({"role":"tool","tool_call_id":"call_abc","content":"hello\n"}));

    // The same essential fields and message layout as pi's request in the same situation.
    let pi_log = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reference-transcripts/pi/prompt_tool_call_bash.http.jsonl")).unwrap();
    let pi: Value = serde_json::from_str(pi_log.lines().nth(1).unwrap()).unwrap();
    let ours = &fake.seen()[1].body;
    for key in ["model", "messages", "tools", "stream", "stream_options", "max_completion_tokens"] {
        assert!(pi["body"].get(key).is_some() && ours.get(key).is_some(), "{key}");
    }
    let roles = |b: &Value| b["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(roles(ours), roles(&pi["body"]));
    let keys = |m: &Value| m.as_object().unwrap().keys().cloned().collect::<std::collections::BTreeSet<_>>();
    assert_eq!(keys(&ours["messages"][2]), keys(&pi["body"]["messages"][2]), "assistant message with tool_calls");
    assert_eq!(keys(&ours["messages"][3]), keys(&pi["body"]["messages"][3]), "tool result message");
    assert_eq!(keys(&ours["tools"][0]), keys(&pi["body"]["tools"][0]));
}

#[test]
fn openai_reasoning_becomes_thinking_and_the_level_is_sent() {
    let fake = FakeLlm::start(vec![openai_reasoning(&["Let me ", "think."], "Done.")]).unwrap();
    let (mut a, _c) = start(&fake, &["--model", "fake-reasoner"]);
    a.request(json!({"id":"t","type":"set_thinking_level","level":"high"}));
    let frames = prompt(&mut a, "p", "Think");
    let m = assistant_end(&frames);
    assert_eq!(m["content"][0], json!({"type":"thinking","thinking":"Let me think.","thinkingSignature":"reasoning_content"}));
    assert_eq!(m["content"][1]["text"], "Done.");
    assert_eq!(fake.seen()[0].body["reasoning_effort"], "high");
    // xhigh is not supported by this model: clamped to high.
    a.request(json!({"id":"x","type":"set_thinking_level","level":"xhigh"}));
    assert_eq!(a.request(json!({"id":"s","type":"get_state"}))["data"]["thinkingLevel"], "high");
}

#[test]
fn set_model_to_a_reasoning_model_while_thinking_is_off_switches_to_medium() {
    // pi and omp (notes §2.6.7): the event comes before the response, the state and the next
    // request follow it.
    let fake = FakeLlm::start(vec![openai_text(&["ok"])]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    assert_eq!(a.request(json!({"id":"s0","type":"get_state"}))["data"]["thinkingLevel"], "off");
    a.send(json!({"id":"m","type":"set_model","provider":"fake","modelId":"fake-reasoner"}));
    assert_eq!(a.next(), json!({"type":"thinking_level_changed","level":"medium","thinkingLevel":"medium"}));
    let r = a.next();
    assert_eq!((&r["id"], &r["success"]), (&json!("m"), &json!(true)));
    assert_eq!(a.request(json!({"id":"s","type":"get_state"}))["data"]["thinkingLevel"], "medium");
    prompt(&mut a, "p", "Think");
    assert_eq!(fake.seen()[0].body["reasoning_effort"], "medium");
}

#[test]
fn rate_limits_honour_retry_after_and_500s_retry_until_success() {
    let fake = FakeLlm::start(vec![
        status(429, &[("retry-after", "0.3")], "slow down"),
        status(500, &[], "boom"),
        openai_text(&["finally"]),
    ]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    let started = Instant::now();
    let frames = prompt(&mut a, "p", "x");
    let retries: Vec<&Value> = frames.iter().filter(|f| f["type"] == "auto_retry_start").collect();
    assert_eq!(retries.len(), 2);
    assert_eq!((&retries[0]["attempt"], &retries[0]["maxAttempts"], &retries[0]["errorMessage"]), (&json!(1), &json!(3), &json!("429 slow down")));
    assert!(retries[0]["delayMs"].as_f64().unwrap() >= 300.0, "Retry-After is honoured");
    assert!(started.elapsed() >= Duration::from_millis(300));
    let end = frames.iter().find(|f| f["type"] == "auto_retry_end").unwrap();
    assert_eq!((&end["success"], &end["attempt"]), (&json!(true), &json!(2)));
    assert_eq!(frames.last().unwrap()["status"], "completed");
    assert_eq!(fake.seen().len(), 3, "one retry layer: exactly one request per attempt");
    let t = types(&frames);
    let first_retry = t.iter().position(|t| t == "auto_retry_start").unwrap();
    assert_eq!(t[first_retry - 1], "turn_end", "the failed attempt's turn ends before the retry");
    assert_eq!(t[first_retry + 1], "turn_start");
    // Failed attempts are not kept in the conversation.
    assert_eq!(a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].as_array().unwrap().len(), 2);
}

/// Issue 15, defect 5: a provider that quotes the key back ("Incorrect API key provided: …")
/// reaches no frame, no session file and no export with it; the message stays readable.
#[test]
fn a_key_quoted_in_a_provider_error_is_redacted_everywhere() {
    let fake = FakeLlm::start(vec![status(401, &[], "Incorrect API key provided: sk-fake-secret-123. Also saw sk-other0123456789abcdef.")]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    let frames = prompt(&mut a, "p", "x");
    let result = frames.last().unwrap();
    assert_eq!(result["error"]["message"], "401 Incorrect API key provided: [redacted]. Also saw sk-[redacted].");
    let export = a.request(json!({"id":"e","type":"export_html","outputPath":"out.html"}));
    let mut everything = serde_json::to_string(&frames).unwrap();
    everything.push_str(&std::fs::read_to_string(export["data"]["path"].as_str().unwrap()).unwrap());
    let file = a.request(json!({"id":"s","type":"get_state"}))["data"]["sessionFile"].as_str().map(|p| std::fs::read_to_string(p).unwrap());
    everything.push_str(&file.unwrap_or_default());
    assert!(!everything.contains("sk-fake-secret-123") && !everything.contains("sk-other0123456789abcdef"), "no key anywhere");
}

#[test]
fn client_errors_are_not_retried_and_say_what_the_server_answered() {
    let fake = FakeLlm::start(vec![status(400, &[], "max_tokens is too large")]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    let frames = prompt(&mut a, "p", "x");
    assert!(!frames.iter().any(|f| f["type"] == "auto_retry_start"));
    let m = assistant_end(&frames);
    assert_eq!((&m["stopReason"], &m["errorMessage"], &m["errorStatus"]), (&json!("error"), &json!("400 max_tokens is too large"), &json!(400)));
    let result = frames.last().unwrap();
    // The detail of newer omp (notes §2.9.10): the HTTP status, and a 400 is not retryable.
    assert_eq!(result["error"], json!({"message":"400 max_tokens is too large","httpStatus":400,"retryable":false}));
    assert_eq!(fake.seen().len(), 1);
    assert!(!serde_json::to_string(&frames).unwrap().contains("sk-fake-secret"), "the key never appears");
}

#[test]
fn a_server_error_left_unretried_is_reported_retryable_with_its_status() {
    let fake = FakeLlm::start(vec![status(500, &[], "boom")]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    a.request(json!({"id":"r","type":"set_auto_retry","enabled":false}));
    let frames = prompt(&mut a, "p", "x");
    assert_eq!(frames.last().unwrap()["error"], json!({"message":"500 boom","httpStatus":500,"retryable":true}));
    assert_eq!(fake.seen().len(), 1);
}

#[test]
fn a_stream_cut_mid_way_is_an_error_never_a_finished_message() {
    let fake = FakeLlm::start(vec![openai_cut(&["partial ", "answer"]), openai_cut(&["again"])]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    a.request(json!({"id":"r","type":"set_auto_retry","enabled":false}));
    let frames = prompt(&mut a, "p", "x");
    let m = assistant_end(&frames);
    assert_eq!(m["stopReason"], "error");
    assert!(m["errorMessage"].as_str().unwrap().contains("cut off"), "{m}");
    assert_eq!(frames.last().unwrap()["status"], "error");
    assert_eq!(fake.seen().len(), 1, "auto-retry off: no second request");
}

#[test]
fn abort_cancels_a_slow_stream_at_once() {
    let fake = FakeLlm::start(vec![openai_slow(100, Duration::from_millis(100))]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    a.until(|f| f["assistantMessageEvent"]["type"] == "text_delta");
    let sent = Instant::now();
    a.send(json!({"id":"ab","type":"abort"}));
    a.until(|f| f["type"] == "agent_end");
    let latency = sent.elapsed();
    a.until(|f| f["id"] == "ab");
    assert!(latency < Duration::from_millis(500), "abort → agent_end took {latency:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(fake.disconnected(), "the HTTP request was dropped, not read to its end");
}

#[test]
fn abort_retry_cancels_the_back_off() {
    let fake = FakeLlm::start(vec![status(503, &[], "unavailable")]).unwrap();
    let (mut a, _c) = start(&fake, &["--retry-base-delay-ms", "10000"]);
    a.send(json!({"id":"p","type":"prompt","message":"x"}));
    a.until(|f| f["type"] == "auto_retry_start");
    a.send(json!({"id":"ar","type":"abort_retry"}));
    let frames = a.until_prompt_result("p");
    let t = types(&frames);
    let end = t.iter().position(|t| t == "auto_retry_end").unwrap();
    let response = frames.iter().position(|f| f["id"] == "ar").unwrap();
    assert!(end < response, "auto_retry_end precedes the abort_retry response: {t:?}");
    assert_eq!(frames[end]["finalError"], "Retry cancelled");
    assert_eq!(frames.last().unwrap()["status"], "aborted");
}

#[test]
fn anthropic_streams_thinking_signatures_tool_use_and_cache_usage() {
    let fake = FakeLlm::start(vec![anthropic_full(), anthropic_text("Two entries.")]).unwrap();
    let (mut a, _c) = start(&fake, &["--provider", "fakeclaude", "--model", "claude-fake"]);
    a.request(json!({"id":"t","type":"set_thinking_level","level":"medium"}));
    let frames = prompt(&mut a, "p", "List");
    let first = frames.iter().find(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant").unwrap()["message"].clone();
    assert_eq!(first["content"][0], json!({"type":"thinking","thinking":"Let me think.","thinkingSignature":"sig-abc"}));
    assert_eq!(first["content"][1]["text"], "Listing.");
    assert_eq!((&first["content"][2]["name"], &first["content"][2]["arguments"]), (&json!("ls"), &json!({"path":"."})));
    assert_eq!((&first["usage"]["input"], &first["usage"]["cacheRead"], &first["usage"]["cacheWrite"], &first["usage"]["output"]), (&json!(50), &json!(10), &json!(5), &json!(30)));
    assert_eq!(first["stopReason"], "toolUse");
    assert_eq!(assistant_end(&frames)["content"][0]["text"], "Two entries.");

    let seen = fake.seen();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!((seen[0].headers["x-api-key"].to_str().unwrap(), seen[0].headers["anthropic-version"].to_str().unwrap()), ("sk-ant-fake-456", "2023-06-01"));
    let b = &seen[0].body;
    assert_eq!(b["thinking"], json!({"type":"enabled","budget_tokens":8192}));
    assert!(b["max_tokens"].as_u64().unwrap() > 8192);
    assert!(b["system"].as_str().unwrap().contains("agentwire"));
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    let second = &seen[1].body["messages"];
    assert_eq!(second[1]["content"][0], json!({"type":"thinking","thinking":"Let me think.","signature":"sig-abc"}));
    assert_eq!(second[1]["content"][2], json!({"type":"tool_use","id":"toolu_1","name":"ls","input":{"path":"."}}));
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(second[2]["content"][0]["tool_use_id"], "toolu_1");
}

#[test]
fn anthropic_overloaded_errors_are_retried() {
    let fake = FakeLlm::start(vec![anthropic_overloaded(), anthropic_text("ok")]).unwrap();
    let (mut a, _c) = start(&fake, &["--provider", "fakeclaude", "--model", "claude-fake"]);
    let frames = prompt(&mut a, "p", "x");
    assert_eq!(frames.iter().filter(|f| f["type"] == "auto_retry_start").count(), 1);
    assert_eq!(assistant_end(&frames)["content"][0]["text"], "ok");
}

#[test]
fn model_commands_cover_configured_providers() {
    let fake = FakeLlm::start(vec![]).unwrap();
    let (mut a, _c) = start(&fake, &[]);
    let models = a.request(json!({"id":1,"type":"get_available_models"}))["data"]["models"].clone();
    let names: Vec<String> = models.as_array().unwrap().iter().map(|m| format!("{}/{}", m["provider"].as_str().unwrap(), m["id"].as_str().unwrap())).collect();
    assert_eq!(names, ["agentwire/offline", "fake/fake-model", "fake/fake-reasoner", "fakeclaude/claude-fake"]);
    assert_eq!(a.request(json!({"id":2,"type":"get_state"}))["data"]["model"]["id"], "fake-model");
    assert_eq!(a.request(json!({"id":3,"type":"cycle_thinking_level"}))["data"], json!(null), "no reasoning on fake-model");
    let nf = a.request(json!({"id":4,"type":"set_model","provider":"fake","modelId":"nope"}));
    assert_eq!(nf["error"], "Model not found: fake/nope");
    let cycled = a.request(json!({"id":5,"type":"cycle_model"}))["data"].clone();
    assert_eq!((&cycled["model"]["id"], &cycled["isScoped"]), (&json!("fake-reasoner"), &json!(false)));
    assert_eq!(a.request(json!({"id":6,"type":"set_model","provider":"agentwire","modelId":"offline"}))["data"]["id"], "offline");
}

#[test]
fn built_in_providers_appear_when_their_key_is_set_and_bad_selections_fail_at_start() {
    let config = tempfile::tempdir().unwrap();
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"));
        cmd.args(["--mode", "rpc", "--config-dir"]).arg(config.path()).args(args);
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"{\"id\":1,\"type\":\"get_available_models\"}\n").unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(&[("OPENAI_API_KEY", "sk-from-env")], &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\"gpt-4.1-mini\"") && !text.contains("claude-sonnet"), "{text}");
    assert!(!text.contains("sk-from-env"));
    let out = run(&[], &["--provider", "openai", "--model", "gpt-4.1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Model not found: openai/gpt-4.1"));
}

/// Runs `agentwire --mode rpc` once with `models` (when given) as the models file of a fresh
/// config dir, asks for the models, and returns the exit code, stdout, stderr and the models
/// file's path.
fn run_with_models(models: Option<&Value>, env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String, String, String) {
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("models.json");
    if let Some(models) = models {
        std::fs::write(&file, models.to_string()).unwrap();
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"));
    cmd.args(["--mode", "rpc", "--config-dir"]).arg(config.path()).args(args);
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let mut child = cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    use std::io::Write;
    // The agent may exit before reading: a failed write is fine, the exit code tells.
    let _ = child.stdin.take().unwrap().write_all(b"{\"id\":1,\"type\":\"get_available_models\"}\n");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "a configuration error must never panic: {stderr}");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), stderr, file.display().to_string())
}

#[test]
fn an_unknown_api_in_the_models_file_stops_the_start_naming_the_file_and_the_key() {
    let models = json!({"providers": {"gem": {"api": "gemini-generate", "baseUrl": "http://127.0.0.1:9", "models": [{"id": "g"}]}}});
    let (code, stdout, stderr, file) = run_with_models(Some(&models), &[], &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains(&file) && stderr.contains("/providers/gem/api") && stderr.contains("gemini-generate"), "{stderr}");
    assert!(!stdout.contains("\"gem\""), "the provider was not quietly made an OpenAI one: {stdout}");
}

#[test]
fn an_empty_literal_api_key_stops_the_start_naming_the_file_and_the_key() {
    let models = json!({"providers": {
        "local": {"api": "openai-completions", "baseUrl": "http://127.0.0.1:9/v1", "models": [{"id": "m"}]},
        "my/proxy": {"api": "anthropic-messages", "baseUrl": "http://127.0.0.1:9", "apiKey": "", "models": [{"id": "c"}]}
    }});
    // Whether or not the provider is selected: the file itself is wrong.
    for args in [&[][..], &["--provider", "local", "--model", "m"][..]] {
        let (code, stdout, stderr, file) = run_with_models(Some(&models), &[], args);
        assert_eq!(code, Some(1), "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains(&file) && stderr.contains("/providers/my~1proxy/apiKey") && stderr.contains("empty"), "{stderr}");
    }
    // Leaving the key out is how a keyless server is configured, and still works.
    let keyless = json!({"providers": {"local": {"api": "openai-completions", "baseUrl": "http://127.0.0.1:9/v1", "models": [{"id": "m"}]}}});
    let (code, stdout, stderr, _) = run_with_models(Some(&keyless), &[], &["--provider", "local"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("\"provider\":\"local\""), "{stdout}");
}

#[test]
fn an_empty_api_key_flag_is_an_error_and_an_empty_key_variable_means_not_configured() {
    let models = json!({"providers": {"local": {"api": "openai-completions", "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-file", "models": [{"id": "m"}]}}});
    let (code, stdout, stderr, _) = run_with_models(Some(&models), &[], &["--provider", "local", "--model", "m", "--api-key", ""]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("--api-key is empty"), "{stderr}");

    // An empty variable: the built-in provider is simply not listed, and the start succeeds.
    let (code, stdout, stderr, _) = run_with_models(None, &[("OPENAI_API_KEY", ""), ("ANTHROPIC_API_KEY", " ")], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("\"offline\"") && !stdout.contains("gpt-4.1") && !stdout.contains("claude-sonnet"), "{stdout}");
    // Asking for that provider says which variable it needs, instead of starting offline.
    let (code, _, stderr, _) = run_with_models(None, &[("OPENAI_API_KEY", "")], &["--provider", "openai"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("Provider not found: openai") && stderr.contains("$OPENAI_API_KEY"), "{stderr}");
    let (code, _, stderr, _) = run_with_models(None, &[("OPENAI_API_KEY", "")], &["--provider", "openai", "--model", "gpt-4.1"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("Model not found: openai/gpt-4.1") && stderr.contains("$OPENAI_API_KEY"), "{stderr}");
}

#[test]
fn the_models_file_input_kinds_decide_whether_images_are_sent() {
    let fake = FakeLlm::start(vec![openai_text(&["a cat"])]).unwrap();
    let config = tempfile::tempdir().unwrap();
    let mut models = fake.models_file();
    models["providers"]["fake"]["models"][1]["input"] = json!(["text", "image"]);
    std::fs::write(config.path().join("models.json"), models.to_string()).unwrap();
    let dir = config.path().to_str().unwrap().to_owned();
    let image = json!({"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"});
    // fake-model declares no input: text only, refused.
    let mut a = Agent::start(&["--config-dir", dir.as_str(), "--provider", "fake", "--model", "fake-model"], &[]);
    a.send(json!({"id":"p","type":"prompt","message":"what is this?","images":[image]}));
    let result = a.until_prompt_result("p").pop().unwrap();
    assert_eq!(result["error"]["message"], "LLM model 'fake-model' does not support required capability: image_in.");
    assert!(fake.seen().is_empty(), "nothing was sent to the model");
    // fake-reasoner declares images: sent on as an image part.
    let mut a = Agent::start(&["--config-dir", dir.as_str(), "--provider", "fake", "--model", "fake-reasoner"], &[]);
    a.send(json!({"id":"p","type":"prompt","message":"what is this?","images":[image]}));
    assert_eq!(a.until_prompt_result("p").last().unwrap()["status"], "completed");
    let user = fake.seen()[0].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap().clone();
    assert_eq!(user["content"][1]["image_url"]["url"], "data:image/png;base64,iVBORw0KGgo=", "{user}");
}
