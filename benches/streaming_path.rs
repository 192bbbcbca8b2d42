//! `cargo bench --bench streaming_path`: what agentwire adds between a provider and its host.
//!
//! - Latency: the fake model server (`agentwire conformance serve-model`, run in-process here)
//!   streams N text deltas 1 ms apart and records when it wrote each SSE event; the host side
//!   records when it read the frame carrying that delta (rpc `message_update` / ACP
//!   `agent_message_chunk`). Same process, same clock: p50 and p99 of read − written, per API.
//! - Throughput: N deltas with no delay; deltas per second as a plain socket reader sees the
//!   fake server's stream, and as the host sees agentwire's frames (first to last delta).
//! - MCP: one `echo` call of `@modelcontextprotocol/server-everything` (tests/mcp-server), over
//!   stdio and streamable HTTP: called directly (JSON-RPC lines on the pipes; HTTP POSTs with
//!   reqwest), through rmcp's client alone (HTTP), and through agentwire (rpc `--mcp-config`,
//!   the offline model calling the tool: `tool_execution_start` → `tool_execution_end`).
//!   Skipped when node or tests/mcp-server/node_modules is missing.
//!
//! Prints Markdown tables for docs/performance.md.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use agentwire::conformance::fake_llm::{FakeLlm, FAKE_MODEL};
use serde_json::{json, Value};

/// An agent process whose stdout lines are read, with the instant each was read, on a thread.
struct Host {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<(Instant, Value)>,
}

impl Host {
    fn start(mode: &str, config: &Path, extra: &[&str]) -> Host {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
            .args(["--mode", mode, "--no-session", "--config-dir"])
            .arg(config)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn agentwire");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let at = Instant::now();
                if let Ok(v) = serde_json::from_str(&line) {
                    if tx.send((at, v)).is_err() {
                        break;
                    }
                }
            }
        });
        Host { child, stdin, lines }
    }

    fn send(&mut self, frame: Value) -> Instant {
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
        Instant::now()
    }

    fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<(Instant, Value)> {
        let mut seen = Vec::new();
        loop {
            let (at, v) = self.lines.recv_timeout(Duration::from_secs(60)).expect("a frame within 60 s");
            let last = done(&v);
            seen.push((at, v));
            if last {
                return seen;
            }
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Rpc,
    Acp,
}

/// Runs one prompt whose reply is `entry`; the instants at which the host read each text delta.
fn delta_frames(mode: Mode, config: &Path, provider: &str) -> Vec<Instant> {
    let args = ["--provider", provider, "--model", FAKE_MODEL];
    match mode {
        Mode::Rpc => {
            let mut host = Host::start("rpc", config, &args);
            host.send(json!({"id": "s", "type": "get_state"}));
            host.until(|f| f["id"] == "s");
            host.send(json!({"id": "p", "type": "prompt", "message": "go"}));
            let frames = host.until(|f| f["type"] == "prompt_result");
            frames.into_iter().filter(|(_, f)| f["type"] == "message_update" && f["assistantMessageEvent"]["type"] == "text_delta").map(|(at, _)| at).collect()
        }
        Mode::Acp => {
            let mut host = Host::start("acp", config, &args);
            host.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
            host.until(|f| f["id"] == 1);
            host.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": config.display().to_string(), "mcpServers": []}}));
            let session = host.until(|f| f["id"] == 2).pop().unwrap().1["result"]["sessionId"].clone();
            host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}));
            let frames = host.until(|f| f["id"] == 3);
            frames.into_iter().filter(|(_, f)| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk").map(|(at, _)| at).collect()
        }
    }
}

/// The SSE events a stream of each API writes before its first text delta.
fn events_before_text(api: &str) -> usize {
    match api {
        "openai-completions" => 1,  // the role chunk
        "openai-responses" => 3,    // response.created, output_item.added, content_part.added
        "anthropic-messages" => 2,  // message_start, content_block_start
        "google-generative-ai" => 0,
        other => panic!("{other}"),
    }
}

fn config_for(fake: &FakeLlm, dir: &Path) {
    let mut models = fake.models_file();
    models["providers"]["fakeresponses"] = json!({"api": "openai-responses", "baseUrl": fake.base_url(), "models": [{"id": FAKE_MODEL}]});
    models["providers"]["fakegemini"] = json!({"api": "google-generative-ai", "baseUrl": fake.origin(), "models": [{"id": FAKE_MODEL}]});
    models["providers"]["fakeclaude"]["models"] = json!([{"id": FAKE_MODEL}]);
    std::fs::write(dir.join("models.json"), models.to_string()).unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Latency of each delta: the host's read − the server's write.
fn latency(mode: Mode, provider: &str, api: &str, n: usize, runs: usize) -> Vec<Duration> {
    let chunks: Vec<String> = (0..n).map(|i| format!("d{i:05} ")).collect();
    let mut all = Vec::new();
    for _ in 0..runs {
        let fake = FakeLlm::from_script(vec![json!({"textChunks": chunks, "delayMs": 1})]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        config_for(&fake, dir.path());
        let read = delta_frames(mode, dir.path(), provider);
        let skip = events_before_text(api);
        let written = wait_written(&fake, skip + n);
        assert_eq!(read.len(), n, "{provider}: every delta reaches the host as a frame of its own");
        all.extend(read.iter().zip(&written[skip..skip + n]).map(|(r, w)| r.saturating_duration_since(*w)));
    }
    all.sort();
    all
}

fn wait_written(fake: &FakeLlm, at_least: usize) -> Vec<Instant> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let w = fake.written();
        if w.len() >= at_least || Instant::now() > deadline {
            return w;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Deltas per second a plain socket reader gets from the fake server (first to last event).
fn server_rate(n: usize) -> f64 {
    let chunks: Vec<String> = (0..n).map(|i| format!("d{i:05} ")).collect();
    let fake = FakeLlm::from_script(vec![json!({"textChunks": chunks})]).unwrap();
    let body = json!({"model": FAKE_MODEL, "stream": true, "tools": [{"type": "function"}], "messages": [{"role": "user", "content": "go"}]}).to_string();
    let mut s = std::net::TcpStream::connect(fake.addr()).unwrap();
    write!(s, "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut first = None;
    let mut last = Instant::now();
    let mut count = 0;
    for line in BufReader::new(s).lines() {
        let line = line.unwrap();
        if line.starts_with("data: {") && line.contains("\"content\":\"d") {
            let now = Instant::now();
            first.get_or_insert(now);
            last = now;
            count += 1;
        }
    }
    assert_eq!(count, n);
    (n - 1) as f64 / (last - first.unwrap()).as_secs_f64()
}

/// Deltas per second the host reads from agentwire (first to last delta frame).
fn agentwire_rate(mode: Mode, n: usize) -> f64 {
    let chunks: Vec<String> = (0..n).map(|i| format!("d{i:05} ")).collect();
    let fake = FakeLlm::from_script(vec![json!({"textChunks": chunks})]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    config_for(&fake, dir.path());
    let read = delta_frames(mode, dir.path(), "fake");
    assert_eq!(read.len(), n);
    (n - 1) as f64 / (read[n - 1] - read[0]).as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn median_duration(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

// ---- MCP ----

fn mcp_server() -> Option<(String, PathBuf)> {
    let entry = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-server/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = which("node")?;
    entry.exists().then_some((node, entry))
}

fn which(program: &str) -> Option<String> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file()).map(|p| p.display().to_string())
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn echo_call(id: usize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"}}}).to_string()
}

/// `calls` echo calls straight over the server's stdio, one after the other.
fn stdio_direct(node: &str, entry: &Path, calls: usize) -> Vec<Duration> {
    let mut child = Command::new(node).arg(entry).arg("stdio").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let answer = |id: usize, lines: &mut dyn Iterator<Item = std::io::Result<String>>| loop {
        let line = lines.next().expect("an answer").unwrap();
        if serde_json::from_str::<Value>(&line).is_ok_and(|v| v["id"] == id) {
            return line;
        }
    };
    writeln!(stdin, "{INIT}").unwrap();
    answer(0, &mut lines);
    writeln!(stdin, "{INITIALIZED}").unwrap();
    let mut times = Vec::new();
    for i in 1..=calls {
        let started = Instant::now();
        writeln!(stdin, "{}", echo_call(i)).unwrap();
        stdin.flush().unwrap();
        let line = answer(i, &mut lines);
        times.push(started.elapsed());
        assert!(line.contains("Echo: hi"), "{line}");
    }
    let _ = child.kill();
    let _ = child.wait();
    times
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_server(node: &str, entry: &Path) -> (Server, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Server(Command::new(node).arg(entry).arg("streamableHttp").env("PORT", port.to_string()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP MCP server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// `calls` echo calls as plain HTTP POSTs (one keep-alive reqwest client).
fn http_direct(url: &str, calls: usize) -> Vec<Duration> {
    // reqwest is built without a crypto provider of its own (Cargo.toml).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        let post = |body: String, session: Option<String>| {
            let mut b = client.post(url).header("content-type", "application/json").header("accept", "application/json, text/event-stream").body(body);
            if let Some(s) = session {
                b = b.header("mcp-session-id", s);
            }
            b.send()
        };
        let r = post(INIT.to_owned(), None).await.unwrap();
        let session = r.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        r.text().await.unwrap();
        post(INITIALIZED.to_owned(), session.clone()).await.unwrap().text().await.unwrap();
        let mut times = Vec::new();
        for i in 1..=calls {
            let started = Instant::now();
            let text = post(echo_call(i), session.clone()).await.unwrap().text().await.unwrap();
            times.push(started.elapsed());
            assert!(text.contains("Echo: hi"), "{text}");
        }
        times
    })
}

/// `calls` echo calls through rmcp's streamable HTTP client alone.
fn http_rmcp(url: &str, calls: usize) -> Vec<Duration> {
    use rmcp::ServiceExt;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
        let client = ().serve(transport).await.unwrap();
        let mut times = Vec::new();
        for _ in 0..calls {
            let mut params = rmcp::model::CallToolRequestParams::new("echo");
            params.arguments = Some(json!({"message": "hi"}).as_object().unwrap().clone());
            let started = Instant::now();
            let result = client.peer().call_tool(params).await.unwrap();
            times.push(started.elapsed());
            assert!(format!("{result:?}").contains("Echo: hi"));
        }
        let _ = client.cancel().await;
        times
    })
}

/// `calls` echo calls made by the offline model through agentwire (rpc): each call's
/// `tool_execution_start` → `tool_execution_end` as the host reads them.
fn through_agentwire(server: Value, calls: usize) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let mcp = dir.path().join("mcp.json");
    std::fs::write(&mcp, json!({"mcpServers": {"srv": server}}).to_string()).unwrap();
    let script = dir.path().join("script.jsonl");
    let mut lines = String::new();
    for i in 0..calls {
        lines.push_str(&format!("{}\n", json!({"toolCalls": [{"id": format!("c{i}"), "name": "mcp__srv__echo", "arguments": {"message": "hi"}}]})));
    }
    lines.push_str(&format!("{}\n", json!({"text": "done"})));
    std::fs::write(&script, lines).unwrap();
    let mut host = Host::start("rpc", dir.path(), &["--mcp-config", mcp.to_str().unwrap(), "--model-script", script.to_str().unwrap()]);
    host.send(json!({"id": "p", "type": "prompt", "message": "go"}));
    let frames = host.until(|f| f["type"] == "prompt_result");
    let starts: Vec<Instant> = frames.iter().filter(|(_, f)| f["type"] == "tool_execution_start").map(|(at, _)| *at).collect();
    let ends: Vec<(Instant, &Value)> = frames.iter().filter(|(_, f)| f["type"] == "tool_execution_end").map(|(at, f)| (*at, f)).collect();
    assert_eq!(ends.len(), calls, "{:?}", frames.last());
    for (_, end) in &ends {
        assert_eq!(end["isError"], false, "{end}");
    }
    starts.iter().zip(&ends).map(|(s, (e, _))| *e - *s).collect()
}

fn mcp_tables() {
    let Some((node, entry)) = mcp_server() else {
        println!("\n(MCP skipped: node or tests/mcp-server/node_modules is missing; run `cd tests/mcp-server && npm ci`)");
        return;
    };
    let calls = 30;
    // The first call of each path warms up (connections, JIT); the median is of the rest.
    let rest = |v: Vec<Duration>| median_duration(v[1..].to_vec());
    let stdio = rest(stdio_direct(&node, &entry, calls));
    let stdio_aw = rest(through_agentwire(json!({"command": node, "args": [entry.display().to_string(), "stdio"]}), calls));
    let (_server, url) = http_server(&node, &entry);
    let http = rest(http_direct(&url, calls));
    let http_rmcp = rest(http_rmcp(&url, calls));
    let http_aw = rest(through_agentwire(json!({"type": "http", "url": url}), calls));
    println!("\n| one MCP `echo` call (median of {} after the first) | time |", calls - 1);
    println!("|---|---|");
    println!("| stdio, directly (JSON-RPC lines) | {} |", ms(stdio));
    println!("| stdio, through agentwire (rpc, start → end frame) | {} |", ms(stdio_aw));
    println!("| streamable HTTP, directly (reqwest POST) | {} |", ms(http));
    println!("| streamable HTTP, rmcp client alone | {} |", ms(http_rmcp));
    println!("| streamable HTTP, through agentwire (rpc, start → end frame) | {} |", ms(http_aw));
}

fn main() {
    let n = 500;
    let runs = 3;
    println!("| SSE event written → host frame read ({n} deltas 1 ms apart × {runs}) | p50 | p99 |");
    println!("|---|---|---|");
    for (mode, label, provider, api) in [
        (Mode::Rpc, "rpc, Chat Completions", "fake", "openai-completions"),
        (Mode::Rpc, "rpc, Responses", "fakeresponses", "openai-responses"),
        (Mode::Rpc, "rpc, Anthropic Messages", "fakeclaude", "anthropic-messages"),
        (Mode::Rpc, "rpc, Gemini", "fakegemini", "google-generative-ai"),
        (Mode::Acp, "ACP, Chat Completions", "fake", "openai-completions"),
    ] {
        let l = latency(mode, provider, api, n, runs);
        println!("| {label} | {} | {} |", ms(percentile(&l, 0.5)), ms(percentile(&l, 0.99)));
    }

    // rpc frames carry the message so far (pi's `message_update`), so their size grows with the
    // reply: two lengths show how the rate depends on it.
    println!("\n| N deltas, no delay (median of 3) | N = 2,000 | N = 20,000 |");
    println!("|---|---|---|");
    let row = |label: &str, rate: &dyn Fn(usize) -> f64| {
        let [short, long] = [2_000, 20_000].map(|n| median((0..3).map(|_| rate(n)).collect()));
        println!("| {label} | {short:.0}/s | {long:.0}/s |");
    };
    row("the fake server, read from its socket", &server_rate);
    row("through agentwire, rpc frames", &|n| agentwire_rate(Mode::Rpc, n));
    row("through agentwire, ACP frames", &|n| agentwire_rate(Mode::Acp, n));

    mcp_tables();
}
