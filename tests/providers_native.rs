//! The OpenAI Responses and Gemini providers against the scripted fake server on 127.0.0.1:
//! a streamed answer, a tool call round trip (the second request's body carries the result in
//! the API's own shape), thinking and usage, the encrypted reasoning item and thought signatures
//! carried to the next turn (and through a resumed session), visible retries of 500 and 429 and a
//! 400 reported with the provider's message and no key (on all four APIs), and selecting these
//! models over ACP.

mod common;

use common::fake_llm::*;
use common::{types, Agent};
use serde_json::{json, Value};

const RESPONSES_KEY: &str = "sk-resp-fake-0123456789";
const GEMINI_KEY: &str = "AIzaFakeGeminiKey0123456789";

/// The fake server's models file plus a Responses provider `fakeresponses` and a Gemini
/// provider `fakegemini`, each with the reasoning model `fake-model`.
fn models(fake: &FakeLlm) -> Value {
    let mut models = fake.models_file();
    let model = json!([{"id": FAKE_MODEL, "reasoning": true, "maxTokens": 4096, "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 0}}]);
    models["providers"]["fakeresponses"] = json!({"api": "openai-responses", "baseUrl": fake.base_url(), "apiKey": RESPONSES_KEY, "models": model});
    models["providers"]["fakegemini"] = json!({"api": "google-generative-ai", "baseUrl": fake.origin(), "apiKey": GEMINI_KEY, "models": model});
    models
}

fn config(fake: &FakeLlm) -> tempfile::TempDir {
    let config = tempfile::tempdir().unwrap();
    std::fs::write(config.path().join("models.json"), models(fake).to_string()).unwrap();
    config
}

/// agentwire in rpc mode on `provider`'s `fake-model` (`claude-fake` for `fakeclaude`), 50 ms
/// retry delay, thinking `medium`.
fn start(config: &tempfile::TempDir, provider: &str, extra: &[&str]) -> Agent {
    let dir = config.path().to_str().unwrap();
    let model = if provider == "fakeclaude" { "claude-fake" } else { FAKE_MODEL };
    let mut args = vec!["--config-dir", dir, "--provider", provider, "--model", model, "--retry-base-delay-ms", "50", "--thinking", "medium"];
    args.extend_from_slice(extra);
    Agent::start(&args, &[])
}

fn prompt(a: &mut Agent, id: &str, text: &str) -> Vec<Value> {
    a.send(json!({"id": id, "type": "prompt", "message": text}));
    a.until_prompt_result(id)
}

fn assistant_ends(frames: &[Value]) -> Vec<Value> {
    frames.iter().filter(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant").map(|f| f["message"].clone()).collect()
}

/// A reply with thinking and text, and one with a `bash` call, as the model script says.
fn thinking_text() -> Value {
    json!({"thinking": "Considering the greeting.", "text": "Hello from the script!", "chunkSize": 5, "usage": {"input": 42, "output": 17}})
}
fn bash_call() -> Value {
    json!({"thinking": "I should run it.", "toolCalls": [{"id": "call_7", "name": "bash", "arguments": {"command": "echo hello"}}]})
}

#[test]
fn responses_streams_thinking_text_and_usage() {
    let fake = FakeLlm::from_script(vec![thinking_text()]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakeresponses", &[]);
    let frames = prompt(&mut a, "p", "Say hello");
    let m = &assistant_ends(&frames)[0];
    assert_eq!((&m["api"], &m["provider"], &m["stopReason"]), (&json!("openai-responses"), &json!("fakeresponses"), &json!("stop")));
    assert_eq!(m["content"][0]["thinking"], "Considering the greeting.");
    assert_eq!(m["content"][1], json!({"type": "text", "text": "Hello from the script!"}));
    assert!(types(&frames).iter().filter(|t| *t == "mu:text_delta").count() >= 4, "the text streams in deltas");
    let u = &m["usage"];
    assert_eq!((&u["input"], &u["output"], &u["reasoning"], &u["totalTokens"]), (&json!(42), &json!(17), &json!(6), &json!(59)));
    assert!((u["cost"]["total"].as_f64().unwrap() - (42.0 + 17.0 * 2.0) / 1e6).abs() < 1e-12, "{u}");
    assert_eq!(m["responseId"], "resp_fake_1");

    let seen = &fake.seen()[0];
    assert_eq!(seen.path, "/v1/responses");
    assert_eq!(seen.headers["authorization"], format!("Bearer {RESPONSES_KEY}").as_str());
    let b = &seen.body;
    assert_eq!((&b["model"], &b["stream"], &b["store"], &b["max_output_tokens"]), (&json!(FAKE_MODEL), &json!(true), &json!(false), &json!(4096)));
    assert_eq!((&b["reasoning"], &b["include"]), (&json!({"effort": "medium", "summary": "auto"}), &json!(["reasoning.encrypted_content"])));
    assert!(b["instructions"].as_str().unwrap().contains("agentwire"));
    assert_eq!(b["input"], json!([{"role": "user", "content": [{"type": "input_text", "text": "Say hello"}]}]));
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["tools"][0]["parameters"]["required"], json!(["path"]));
}

#[test]
fn responses_tool_round_trip_sends_the_reasoning_item_the_call_and_its_output() {
    let fake = FakeLlm::from_script(vec![bash_call(), json!({"text": "It printed hello."})]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakeresponses", &[]);
    let frames = prompt(&mut a, "p", "Run echo hello");
    let ends = assistant_ends(&frames);
    let first = &ends[0];
    assert_eq!(first["stopReason"], "toolUse");
    // The encrypted reasoning item is kept whole as the thinking block's signature.
    let item: Value = serde_json::from_str(first["content"][0]["thinkingSignature"].as_str().unwrap()).unwrap();
    assert_eq!((&item["type"], &item["encrypted_content"]), (&json!("reasoning"), &json!("enc_resp_fake_1")));
    assert_eq!((&first["content"][1]["id"], &first["content"][1]["arguments"]), (&json!("call_7"), &json!({"command": "echo hello"})));
    assert_eq!(frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap()["result"]["content"][0]["text"], "hello\n");
    assert_eq!(ends[1]["content"][0]["text"], "It printed hello.");

    let input = fake.seen()[1].body["input"].clone();
    let input = input.as_array().unwrap();
    let n = input.len();
    assert_eq!(input[n - 3], item, "the reasoning item goes back as it came");
    assert_eq!(input[n - 2], json!({"type": "function_call", "call_id": "call_7", "name": "bash", "arguments": "{\"command\":\"echo hello\"}"}));
    assert_eq!(input[n - 1], json!({"type": "function_call_output", "call_id": "call_7", "output": "hello\n"}));
}

#[test]
fn the_encrypted_reasoning_item_survives_a_resumed_session() {
    let fake = FakeLlm::from_script(vec![bash_call(), json!({"text": "done"}), json!({"text": "again"})]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakeresponses", &[]);
    prompt(&mut a, "p", "Run echo hello");
    let file = a.request(json!({"id": "s", "type": "get_state"}))["data"]["sessionFile"].as_str().unwrap().to_owned();
    drop(a);
    let mut b = start(&config, "fakeresponses", &["--session", file.as_str()]);
    prompt(&mut b, "p2", "And again");
    let input = fake.seen()[2].body["input"].clone();
    let reasoning: Vec<&Value> = input.as_array().unwrap().iter().filter(|i| i["type"] == "reasoning").collect();
    assert_eq!(reasoning.len(), 1, "{input}");
    assert_eq!(reasoning[0]["encrypted_content"], "enc_resp_fake_1");
}

#[test]
fn gemini_streams_thinking_text_and_usage() {
    let fake = FakeLlm::from_script(vec![thinking_text()]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakegemini", &[]);
    let frames = prompt(&mut a, "p", "Say hello");
    let m = &assistant_ends(&frames)[0];
    assert_eq!((&m["api"], &m["provider"], &m["stopReason"]), (&json!("google-generative-ai"), &json!("fakegemini"), &json!("stop")));
    assert_eq!(m["content"][0]["thinking"], "Considering the greeting.");
    assert_eq!(m["content"][1], json!({"type": "text", "text": "Hello from the script!"}));
    assert!(types(&frames).iter().filter(|t| *t == "mu:thinking_delta").count() >= 4, "thinking streams in deltas");
    let u = &m["usage"];
    // Thought tokens are reported apart from the candidates' and counted as output.
    assert_eq!((&u["input"], &u["output"], &u["reasoning"], &u["totalTokens"]), (&json!(42), &json!(23), &json!(6), &json!(65)));
    assert_eq!(m["responseId"], "fake-1");

    let seen = &fake.seen()[0];
    assert_eq!(seen.path, "/v1beta/models/fake-model:streamGenerateContent");
    assert_eq!(seen.headers["x-goog-api-key"], GEMINI_KEY);
    let b = &seen.body;
    assert_eq!(b["contents"], json!([{"role": "user", "parts": [{"text": "Say hello"}]}]));
    assert!(b["systemInstruction"]["parts"][0]["text"].as_str().unwrap().contains("agentwire"));
    assert_eq!(b["generationConfig"], json!({"maxOutputTokens": 4096, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}}));
    let declarations = b["tools"][0]["functionDeclarations"].as_array().unwrap();
    assert_eq!((&declarations[0]["name"], &declarations[0]["parametersJsonSchema"]["required"]), (&json!("read"), &json!(["path"])));
}

#[test]
fn gemini_tool_round_trip_sends_the_signed_call_and_its_function_response() {
    let fake = FakeLlm::from_script(vec![bash_call(), json!({"text": "It printed hello."})]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakegemini", &[]);
    let frames = prompt(&mut a, "p", "Run echo hello");
    let ends = assistant_ends(&frames);
    let call = &ends[0]["content"][1];
    assert_eq!((&call["name"], &call["arguments"], &call["thoughtSignature"]), (&json!("bash"), &json!({"command": "echo hello"}), &json!("sig_fake-1")));
    assert_eq!(ends[1]["content"][0]["text"], "It printed hello.");

    let contents = fake.seen()[1].body["contents"].clone();
    let contents = contents.as_array().unwrap();
    let n = contents.len();
    assert_eq!(contents[n - 2], json!({"role": "model", "parts": [{"functionCall": {"name": "bash", "args": {"command": "echo hello"}}, "thoughtSignature": "sig_fake-1"}]}));
    assert_eq!(contents[n - 1], json!({"role": "user", "parts": [{"functionResponse": {"name": "bash", "response": {"output": "hello\n"}}}]}));
}

/// 500 then 429 (with `Retry-After`) are retried visibly, then the scripted answer.
fn retried_visibly(provider: &str) {
    let fake = FakeLlm::start(vec![status(500, &[], "boom"), status(429, &[("retry-after", "0.1")], "slow down"), Reply::Script(json!({"text": "finally"}))]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, provider, &[]);
    let frames = prompt(&mut a, "p", "x");
    let retries: Vec<&Value> = frames.iter().filter(|f| f["type"] == "auto_retry_start").collect();
    let messages: Vec<&Value> = retries.iter().map(|r| &r["errorMessage"]).collect();
    assert_eq!(messages, [&json!("500 boom"), &json!("429 slow down")], "{provider}");
    assert!(retries[1]["delayMs"].as_f64().unwrap() >= 100.0, "{provider}: Retry-After is honoured");
    let end = frames.iter().find(|f| f["type"] == "auto_retry_end").unwrap();
    assert_eq!((&end["success"], &end["attempt"]), (&json!(true), &json!(2)));
    assert_eq!(assistant_ends(&frames).last().unwrap()["content"][0]["text"], "finally");
    assert_eq!(fake.seen().len(), 3, "{provider}: one request per attempt");
}

#[test]
fn server_errors_and_rate_limits_are_retried_visibly() {
    for provider in ["fakeresponses", "fakegemini", "fakeclaude", "fake"] {
        retried_visibly(provider);
    }
}

/// A 400 quoting the key: reported once, with the provider's message, and no key.
fn bad_request(provider: &str, key: &str) {
    let message = format!("API key not valid: {key}. Please pass a valid API key.");
    let fake = FakeLlm::from_script(vec![json!({"error": message})]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, provider, &[]);
    let frames = prompt(&mut a, "p", "x");
    assert!(!frames.iter().any(|f| f["type"] == "auto_retry_start"), "{provider}");
    let result = frames.last().unwrap();
    assert_eq!((&result["error"]["httpStatus"], &result["error"]["retryable"]), (&json!(400), &json!(false)), "{provider}: {result}");
    let reported = result["error"]["message"].as_str().unwrap();
    assert!(reported.starts_with("400 API key not valid: ") && reported.ends_with("Please pass a valid API key."), "{provider}: {reported}");
    assert!(!serde_json::to_string(&frames).unwrap().contains(key), "{provider}: the key appears");
    assert_eq!(fake.seen().len(), 1);
}

#[test]
fn a_bad_request_is_reported_with_the_providers_message_and_no_key() {
    bad_request("fakeresponses", RESPONSES_KEY);
    bad_request("fakegemini", GEMINI_KEY);
    bad_request("fakeclaude", "sk-ant-fake-456");
    bad_request("fake", "sk-fake-secret-123");
}

#[test]
fn an_error_event_mid_stream_is_an_error_with_the_providers_message() {
    let events = vec![
        (Some("response.created".to_owned()), json!({"type": "response.created", "response": {"id": "resp_x"}}).to_string()),
        (Some("error".to_owned()), json!({"type": "error", "code": "invalid_prompt", "message": "Invalid prompt: refused."}).to_string()),
    ];
    let fake = FakeLlm::start(vec![Reply::Sse { events, delay: std::time::Duration::ZERO }]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakeresponses", &[]);
    let frames = prompt(&mut a, "p", "x");
    assert!(!frames.iter().any(|f| f["type"] == "auto_retry_start"));
    assert_eq!(frames.last().unwrap()["error"]["message"], "invalid_prompt: Invalid prompt: refused.");
}

#[test]
fn built_in_google_provider_is_listed_when_either_key_variable_is_set() {
    let models_with = |env: &[(&str, &str)]| {
        let config = tempfile::tempdir().unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"));
        cmd.args(["--mode", "rpc", "--config-dir"]).arg(config.path());
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTWIRE_CONFIG_DIR"] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"{\"id\":1,\"type\":\"get_available_models\"}\n").unwrap();
        let out = child.wait_with_output().unwrap();
        let frame = out.stdout.split(|b| *b == b'\n').filter_map(|l| serde_json::from_slice::<Value>(l).ok()).find(|f| f["id"] == 1).unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&out.stdout)));
        frame["data"]["models"].as_array().unwrap().iter().map(|m| format!("{}/{}/{}", m["provider"].as_str().unwrap(), m["id"].as_str().unwrap(), m["api"].as_str().unwrap())).collect::<Vec<_>>()
    };
    assert!(!models_with(&[]).iter().any(|m| m.starts_with("google/")));
    for var in ["GEMINI_API_KEY", "GOOGLE_API_KEY"] {
        let listed = models_with(&[(var, "AIza-from-env")]);
        assert!(listed.contains(&"google/gemini-2.5-flash/google-generative-ai".to_owned()), "{var}: {listed:?}");
    }
    let openai = models_with(&[("OPENAI_API_KEY", "sk-x")]);
    assert!(openai.contains(&"openai/gpt-5/openai-responses".to_owned()), "{openai:?}");
}

#[test]
fn a_key_stored_with_login_makes_the_google_provider_usable() {
    let config = tempfile::tempdir().unwrap();
    let mut login = std::process::Command::new(env!("CARGO_BIN_EXE_agentwire"));
    login.arg("--config-dir").arg(config.path()).args(["login", "google"]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut child = login.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"AIza-stored-key-0123456789\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = config.path().to_str().unwrap();
    let mut a = Agent::start(&["--config-dir", dir, "--provider", "google"], &[]);
    let state = a.request(json!({"id": "s", "type": "get_state"}));
    assert_eq!((&state["data"]["model"]["provider"], &state["data"]["model"]["api"]), (&json!("google"), &json!("google-generative-ai")), "{state}");
}

#[test]
fn acp_config_options_and_slash_model_switch_to_both_apis() {
    use common::acp::*;
    let fake = FakeLlm::from_script(vec![json!({"text": "via gemini"}), json!({"text": "via responses"})]).unwrap();
    let config = config(&fake);
    let dir = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]);
    let session = acp.init_and_new(dir.path());
    let id = acp.request("session/set_config_option", json!({"sessionId": session, "configId": "model", "value": "fakegemini/fake-model"}));
    let (_, r) = acp.until_response(&id);
    let values: Vec<String> = r["result"]["configOptions"].as_array().unwrap().iter().find(|o| o["id"] == "model").unwrap()["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap().to_owned()).collect();
    assert!(values.contains(&"fakeresponses/fake-model".to_owned()) && values.contains(&"fakegemini/fake-model".to_owned()), "{values:?}");
    let ask = |acp: &mut Acp, text: &str| {
        let id = acp.request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}));
        let (frames, r) = acp.until_response(&id);
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        updates(&frames).iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned()).collect::<String>()
    };
    assert_eq!(ask(&mut acp, "hi"), "via gemini");
    ask(&mut acp, "/model fakeresponses/fake-model");
    assert_eq!(ask(&mut acp, "hi again"), "via responses");
    let paths: Vec<String> = fake.seen().iter().map(|s| s.path.clone()).collect();
    assert_eq!(paths, ["/v1beta/models/fake-model:streamGenerateContent", "/v1/responses"]);
}

#[test]
fn a_reasoning_item_without_a_summary_is_an_empty_thinking_block_that_goes_back() {
    let ev = |v: Value| (Some(v["type"].as_str().unwrap().to_owned()), v.to_string());
    let reasoning = json!({"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "gAAAA-opaque"});
    let events = vec![
        ev(json!({"type": "response.created", "response": {"id": "resp_9"}})),
        ev(json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_9", "summary": []}})),
        ev(json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning})),
        ev(json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_9", "role": "assistant", "content": []}})),
        ev(json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Quiet thoughts."})),
        ev(json!({"type": "response.completed", "response": {"id": "resp_9", "usage": {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 10}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 16}}}})),
    ];
    let fake = FakeLlm::start(vec![Reply::Sse { events, delay: std::time::Duration::ZERO }, Reply::Script(json!({"text": "ok"}))]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakeresponses", &[]);
    let frames = prompt(&mut a, "p", "x");
    let m = &assistant_ends(&frames)[0];
    assert_eq!(m["content"][0], json!({"type": "thinking", "thinking": "", "thinkingSignature": reasoning.to_string()}));
    assert_eq!(m["content"][1]["text"], "Quiet thoughts.");
    let u = &m["usage"];
    assert_eq!((&u["input"], &u["cacheRead"], &u["output"], &u["reasoning"]), (&json!(20), &json!(10), &json!(20), &json!(16)));
    let t = types(&frames);
    assert!(t.contains(&"mu:thinking_start".to_owned()) && !t.contains(&"mu:thinking_delta".to_owned()), "no empty delta: {t:?}");
    prompt(&mut a, "p2", "y");
    let input = fake.seen()[1].body["input"].clone();
    assert_eq!(input[1], reasoning, "{input}");
    assert_eq!(input[2], json!({"role": "assistant", "content": "Quiet thoughts."}));
}

#[test]
fn gemini_stream_errors_are_retried_when_transient_and_a_safety_stop_is_an_error() {
    let chunk = |v: Value| (None, v.to_string());
    let overloaded = vec![chunk(json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}))];
    let blocked = vec![chunk(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Part"}]}, "finishReason": "SAFETY", "index": 0}]}))];
    let sse = |events| Reply::Sse { events, delay: std::time::Duration::ZERO };
    let fake = FakeLlm::start(vec![sse(overloaded), Reply::Script(json!({"text": "ok"})), sse(blocked)]).unwrap();
    let config = config(&fake);
    let mut a = start(&config, "fakegemini", &[]);
    let frames = prompt(&mut a, "p", "x");
    let retry = frames.iter().find(|f| f["type"] == "auto_retry_start").expect("a visible retry");
    assert_eq!(retry["errorMessage"], "503 The model is overloaded.");
    assert_eq!(assistant_ends(&frames).last().unwrap()["content"][0]["text"], "ok");
    let frames = prompt(&mut a, "p2", "y");
    assert!(!frames.iter().any(|f| f["type"] == "auto_retry_start"));
    assert_eq!(frames.last().unwrap()["error"]["message"], "the model stopped: SAFETY");
}
