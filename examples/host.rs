//! A minimal host: `host [--dialect rpc|wire|acp] -- <agent command…>` starts the agent, reads
//! prompts from stdin (one per line) and prints each reply as it streams.
//!
//! ```sh
//! echo hello | cargo run --example host -- -- target/debug/agentwire --mode rpc --no-session
//! ```
//!
//! Without `--dialect` the agent's dialect is detected. The Rust clients drive the pi/omp JSONL
//! dialect ([`RpcClient`]), ACP ([`AcpClient`]: one session in the current directory, the
//! agent's permission requests answered `cancelled`, the handler's default) and kimi's wire
//! ([`WireClient`]: approvals rejected, the handler's default).

use std::io::Write;

use agentwire::client::detect::{connect, DETECT_TIMEOUT};
use agentwire::client::rpc::MAX_AGENT_LINE_BYTES;
use agentwire::client::{spawn_closable_writer, AcpClient, AgentProcess, Detected, Dialect, Handshake, NoAcpHost, NoHost, NoWireHost, Notifications, RpcClient, WireClient, DEFAULT_EXIT_GRACE};
use agentwire::protocol::acp::{ContentBlock, InitializeRequest, InitializeResponse, NewSessionRequest, PromptRequest, ProtocolVersion, SessionNotification, SessionUpdate};
use agentwire::protocol::{PromptCommand, WireContentPart, WireEvent, WireInitializeParams, WirePromptParams, WirePromptRequest, WireUserInput};
use agentwire::client::InputCloser;
use agentwire::transport::{LineReader, Outbox};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStdout;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: host [--dialect rpc|wire|acp] -- <agent command…>");
        return 2.into();
    };
    let dialect = match args[..split] {
        [] => None,
        [ref flag, ref name] if flag == "--dialect" => match name.as_str() {
            "rpc" => Some(Dialect::Rpc),
            "wire" => Some(Dialect::Wire),
            "acp" => Some(Dialect::Acp),
            other => {
                eprintln!("host: unknown dialect {other}");
                return 2.into();
            }
        },
        _ => {
            eprintln!("usage: host [--dialect rpc|wire|acp] -- <agent command…>");
            return 2.into();
        }
    };
    let mut agent = match AgentProcess::spawn_argv(&args[split + 1..]) {
        Ok(agent) => agent,
        Err(e) => {
            eprintln!("host: {e}");
            return 2.into();
        }
    };
    let (out, closer) = spawn_closable_writer(agent.take_stdin().expect("piped"), 1 << 20);
    let mut lines = LineReader::new(BufReader::new(agent.take_stdout().expect("piped")), MAX_AGENT_LINE_BYTES);
    let wire_params = WireInitializeParams { protocol_version: "1.10".into(), client: None, external_tools: None, hooks: None, capabilities: None, extra: Default::default() };
    let handshake = Handshake::new(InitializeRequest::new(ProtocolVersion(1)), wire_params);
    let detected = connect(&mut lines, &out, &handshake, dialect, DETECT_TIMEOUT).await;
    let code: u8 = match detected {
        Ok(Detected::Rpc { .. }) => {
            // The JSONL client closes the agent's input by dropping the last outbox.
            drop(closer);
            rpc(lines, out).await
        }
        Ok(Detected::Acp(initialized)) => acp(lines, out, closer, *initialized).await,
        Ok(Detected::Wire(_)) => wire(lines, out, closer).await,
        Ok(other) => {
            eprintln!("host: the agent speaks {}, which this example does not drive", other.dialect().name());
            closer.close().await;
            1
        }
        Err(e) => {
            eprintln!("host: {e}");
            closer.close().await;
            1
        }
    };
    match agent.shutdown(DEFAULT_EXIT_GRACE).await {
        Ok(status) if status.success() || code != 0 => code.into(),
        Ok(status) => {
            eprintln!("host: the agent exited with {status}");
            1.into()
        }
        Err(e) => {
            eprintln!("host: {e}");
            1.into()
        }
    }
}

/// Prompts from stdin to a JSONL agent; 0 when every prompt was answered.
async fn rpc(lines: LineReader<BufReader<ChildStdout>>, out: Outbox) -> u8 {
    let (client, mut events) = RpcClient::over(lines, out, NoHost);
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut code = 0u8;
    while let Ok(Some(line)) = stdin.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        if let Err(e) = client.request(&PromptCommand::new(line)).await {
            eprintln!("host: {e}");
            code = 1;
            break;
        }
        // The reply streams as `message_update` text deltas; `agent_end` closes the run.
        while let Some(frame) = events.next().await {
            match frame.kind() {
                "message_update" if frame.json()["assistantMessageEvent"]["type"] == "text_delta" => {
                    print!("{}", frame.json()["assistantMessageEvent"]["delta"].as_str().unwrap_or_default());
                    let _ = std::io::stdout().flush();
                }
                "agent_end" => break,
                _ => {}
            }
        }
        println!();
    }
    client.close();
    code
}

/// Prompts from stdin to an ACP agent (initialized during detection), in one session.
async fn acp(lines: LineReader<BufReader<ChildStdout>>, out: Outbox, closer: InputCloser, initialized: InitializeResponse) -> u8 {
    let (client, mut updates) = AcpClient::over(lines.into_inner(), out, closer, NoAcpHost, Some(initialized));
    let cwd = std::env::current_dir().map_or_else(|_| "/".to_owned(), |d| d.to_string_lossy().into_owned());
    let session = match client.new_session(&NewSessionRequest::new(cwd, Vec::new())).await {
        Ok(session) => session.session_id,
        Err(e) => {
            eprintln!("host: {e}");
            client.close().await;
            return 1;
        }
    };
    let print = |update: SessionNotification| {
        if let SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { text, .. }, .. } = update.update {
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
    };
    let code = each_prompt(|line| {
        let request = PromptRequest::new(vec![ContentBlock::Text { annotations: None, meta: None, text: line }], session.clone());
        let client = client.clone();
        async move { client.prompt(&request).await }
    }, &mut updates, print)
    .await;
    client.close().await;
    code
}

/// Prompts from stdin to a kimi-wire agent (initialized during detection).
async fn wire(lines: LineReader<BufReader<ChildStdout>>, out: Outbox, closer: InputCloser) -> u8 {
    let (client, mut events) = WireClient::over(lines.into_inner(), out, closer, NoWireHost);
    let print = |event: WireEvent| {
        if let WireEvent::ContentPart(part) = event {
            if let WireContentPart::Text(text) = part.payload {
                print!("{}", text.text);
                let _ = std::io::stdout().flush();
            }
        }
    };
    let code = each_prompt(|line| {
        let request = WirePromptRequest::new(WirePromptParams { user_input: WireUserInput::String(line) });
        let client = client.clone();
        async move { client.request(&request).await }
    }, &mut events, print)
    .await;
    client.close().await;
    code
}

/// Runs `ask` for each prompt read from stdin, printing with `print` what the agent streams
/// meanwhile (every notification of a prompt is queued before its answer); 1 at the first
/// failure, else 0.
async fn each_prompt<T, A, E, F, Fut>(mut ask: F, stream: &mut Notifications<T>, print: impl Fn(T)) -> u8
where
    E: std::fmt::Display,
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Result<A, E>>,
{
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = stdin.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let prompt = ask(line);
        tokio::pin!(prompt);
        let answer = loop {
            tokio::select! {
                answer = &mut prompt => break answer,
                Some(item) = stream.next() => print(item),
            }
        };
        while let Some(item) = stream.try_next() {
            print(item);
        }
        println!();
        if let Err(e) = answer {
            eprintln!("host: {e}");
            return 1;
        }
    }
    0
}
