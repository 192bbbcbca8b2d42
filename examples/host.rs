//! A minimal host: `host [--dialect rpc|wire|acp] -- <agent command…>` starts the agent, reads
//! prompts from stdin (one per line) and prints each reply as it streams.
//!
//! ```sh
//! echo hello | cargo run --example host -- -- target/debug/agentwire --mode rpc --no-session
//! ```
//!
//! Without `--dialect` the agent's dialect is detected. The Rust client drives the pi/omp
//! JSONL dialect; an agent found speaking another is refused with the reason.

use std::io::Write;

use agentwire::client::detect::{connect, DETECT_TIMEOUT};
use agentwire::client::rpc::MAX_AGENT_LINE_BYTES;
use agentwire::client::{AgentProcess, Detected, Dialect, Handshake, NoHost, RpcClient, DEFAULT_EXIT_GRACE};
use agentwire::protocol::acp::{InitializeRequest, ProtocolVersion};
use agentwire::protocol::{PromptCommand, WireInitializeParams};
use agentwire::transport::{spawn_writer, LineReader};
use tokio::io::{AsyncBufReadExt, BufReader};

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
    let (out, _writer) = spawn_writer(agent.take_stdin().expect("piped"), 1 << 20);
    let mut lines = LineReader::new(BufReader::new(agent.take_stdout().expect("piped")), MAX_AGENT_LINE_BYTES);
    let wire = WireInitializeParams { protocol_version: "1.10".into(), client: None, external_tools: None, hooks: None, capabilities: None, extra: Default::default() };
    let handshake = Handshake::new(InitializeRequest::new(ProtocolVersion(1)), wire);
    let detected = connect(&mut lines, &out, &handshake, dialect, DETECT_TIMEOUT).await;
    match detected {
        Ok(Detected::Rpc { .. }) => {}
        Ok(other) => {
            eprintln!("host: the agent speaks {}; this example drives the pi/omp JSONL dialect only", other.dialect().name());
            return 1.into();
        }
        Err(e) => {
            eprintln!("host: {e}");
            return 1.into();
        }
    }
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
    drop(client);
    match agent.shutdown(DEFAULT_EXIT_GRACE).await {
        Ok(status) if status.success() => code.into(),
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
