//! What a streamed reply costs on stdout, per profile, through a real provider (the fake
//! OpenAI-compatible server on 127.0.0.1 streams one SSE chunk per delta). In the default
//! profile `message_update` is delta-only (pi 1.6), so doubling the deltas at most about
//! doubles the bytes; under `--rpc-profile pi-0.73` every update repeats the message so far
//! twice, so the bytes grow with the square. Byte counts, not timings. The figures in
//! docs/performance.md come from
//! `cargo test --release --test stream_size -- --nocapture`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use agentwire::protocol::validate::{validator, Direction, SchemaDialect};
use common::fake_llm::*;
use serde_json::Value;

/// What one prompt's reply put on stdout: bytes from the prompt's response to its
/// `prompt_result` (both included) and the `message_update` frames among them.
#[derive(Debug, Clone, Copy)]
struct Cost {
    bytes: usize,
    updates: usize,
}

/// Streams a reply of `deltas` ten-character deltas from the fake server to agentwire in
/// `profile` and counts what reaches stdout. Every frame of the default profile is validated
/// (the legacy stream's frames are the same shapes, only larger).
fn stream(profile: &str, deltas: usize) -> Cost {
    let parts: Vec<String> = (0..deltas).map(|i| format!("{i:>9} ")).collect();
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let fake = FakeLlm::start(vec![openai_text(&refs)]).unwrap();
    let config = tempfile::tempdir().unwrap();
    fake.write_models(config.path()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--no-session", "--provider", "fake", "--model", FAKE_MODEL, "--rpc-profile", profile, "--cwd"])
        .arg(config.path())
        .arg("--config-dir")
        .arg(config.path())
        .env("TMPDIR", config.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n").unwrap();
    stdin.flush().unwrap();
    let validate = profile == "current";
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut cost, mut counting, mut line, mut text) = (Cost { bytes: 0, updates: 0 }, false, String::new(), String::new());
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "stdout ended before prompt_result");
        let head = &line[..line.len().min(64)];
        if head.starts_with("{\"id\":\"p\",\"type\":\"response\"") {
            counting = true;
        }
        if counting {
            cost.bytes += line.len();
        }
        if head.starts_with("{\"type\":\"message_update\"") {
            cost.updates += 1;
        }
        if validate || !head.starts_with("{\"type\":\"message_update\"") {
            let frame: Value = serde_json::from_str(&line).unwrap();
            if validate {
                validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &frame, None).unwrap_or_else(|e| panic!("{e}: {line}"));
                if frame["type"] == "message_update" && frame["assistantMessageEvent"]["type"] == "text_delta" {
                    text.push_str(frame["assistantMessageEvent"]["delta"].as_str().unwrap());
                }
            }
            if frame["type"] == "prompt_result" {
                assert_eq!(frame["status"], "completed", "{line}");
                break;
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    if validate {
        assert_eq!(text, parts.concat(), "the deltas are the whole reply");
    }
    cost
}

#[test]
fn doubling_the_deltas_at_most_doubles_the_bytes_in_the_default_profile() {
    let (small, large) = (stream("current", 2_000), stream("current", 4_000));
    println!("current: 2000 deltas {} bytes ({} updates); 4000 deltas {} bytes ({} updates); ratio {:.3}", small.bytes, small.updates, large.bytes, large.updates, large.bytes as f64 / small.bytes as f64);
    assert!(small.updates >= 2_000 && large.updates >= 4_000, "one update per delta: {small:?} {large:?}");
    assert!(large.bytes as f64 <= 2.2 * small.bytes as f64, "{small:?} {large:?}");
}

#[test]
fn the_pi_073_profile_keeps_the_snapshots_and_their_square_growth() {
    let (small, large) = (stream("pi-0.73", 2_000), stream("pi-0.73", 4_000));
    println!("pi-0.73: 2000 deltas {} bytes ({} updates); 4000 deltas {} bytes ({} updates); ratio {:.3}", small.bytes, small.updates, large.bytes, large.updates, large.bytes as f64 / small.bytes as f64);
    assert!(large.bytes as f64 >= 3.5 * small.bytes as f64, "each update repeats the message so far: {small:?} {large:?}");
}
