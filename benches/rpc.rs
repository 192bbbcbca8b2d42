//! `cargo bench --bench rpc`: the release binary measured from outside, the way a host sees it.
//!
//! - cold start: spawn → the response to a `get_state` written immediately (median of 30);
//! - throughput: 200,000 pipelined `get_state` commands → responses per second;
//! - abort latency: `abort` sent while an OpenAI-compatible stream trickles from a local
//!   server → `agent_end` on stdout (median of 20).
//!
//! With `AGENTWIRE_BENCH_PI=/path/to/pi` (npm `@mariozechner/pi-coding-agent`) the same cold-start
//! and throughput measurements run against pi in the same run, side by side.
//!
//! Prints a Markdown table for docs/performance.md.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to start an agent in RPC mode.
#[derive(Clone)]
struct Target {
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Target {
    fn spawn(&self) -> std::process::Child {
        Command::new(&self.program)
            .args(&self.args)
            .envs(self.env.iter().cloned())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the agent")
    }
}

fn cold_start(target: &Target) -> Duration {
    let started = Instant::now();
    let mut child = target.spawn();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"id\":1,\"type\":\"get_state\"}\n").unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("a response").unwrap();
        if line.contains("\"type\":\"response\"") {
            break;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    let _ = child.wait();
    elapsed
}

fn throughput(target: &Target, n: usize) -> f64 {
    let mut child = target.spawn();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut batch = String::new();
        for i in 0..n {
            batch.push_str(&format!("{{\"id\":{i},\"type\":\"get_state\"}}\n"));
            if batch.len() > 1 << 16 {
                stdin.write_all(batch.as_bytes()).unwrap();
                batch.clear();
            }
        }
        stdin.write_all(batch.as_bytes()).unwrap();
    });
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        if line.unwrap().contains("\"type\":\"response\"") {
            seen += 1;
            if seen == n {
                break;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    writer.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    n as f64 / secs
}

/// The fake LLM server streaming one SSE chunk every 50 ms for ~10 s, once per abort run.
fn slow_server(runs: usize) -> agentwire::conformance::fake_llm::FakeLlm {
    use agentwire::conformance::fake_llm::{openai_slow, FakeLlm};
    FakeLlm::start(vec![openai_slow(200, Duration::from_millis(50)); runs]).expect("start the fake LLM server")
}

fn abort_latency(config_dir: &std::path::Path) -> Duration {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc", "--provider", "slow", "--model", "m", "--config-dir"])
        .arg(config_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agentwire");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n").unwrap();
    for line in lines.by_ref() {
        if line.unwrap().contains("\"text_delta\"") {
            break;
        }
    }
    let sent = Instant::now();
    stdin.write_all(b"{\"id\":\"a\",\"type\":\"abort\"}\n").unwrap();
    for line in lines.by_ref() {
        if line.unwrap().contains("\"type\":\"agent_end\"") {
            break;
        }
    }
    let elapsed = sent.elapsed();
    drop(stdin);
    let _ = child.wait();
    elapsed
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let scratch = tempfile::tempdir().unwrap();
    let agentwire = Target {
        program: env!("CARGO_BIN_EXE_agentwire").to_owned(),
        args: ["--mode", "rpc", "--no-session", "--config-dir"].iter().map(|s| (*s).to_owned()).chain([scratch.path().display().to_string()]).collect(),
        env: Vec::new(),
    };
    let median_start = median((0..30).map(|_| cold_start(&agentwire)).collect());
    let rate = throughput(&agentwire, 200_000);
    let pi = std::env::var("AGENTWIRE_BENCH_PI").ok().map(|program| {
        let home = scratch.path().join("pi-home");
        std::fs::create_dir_all(home.join("agent")).unwrap();
        let target = Target {
            program,
            args: vec!["--mode".into(), "rpc".into(), "--no-session".into()],
            env: vec![
                ("HOME".into(), home.display().to_string()),
                ("PI_CODING_AGENT_DIR".into(), home.join("agent").display().to_string()),
                ("PI_OFFLINE".into(), "1".into()),
            ],
        };
        (median((0..10).map(|_| cold_start(&target)).collect()), throughput(&target, 20_000))
    });
    let server = slow_server(20);
    let base = server.base_url();
    let config = tempfile::tempdir().unwrap();
    let models = format!(r#"{{"providers":{{"slow":{{"api":"openai-completions","baseUrl":"{base}","models":[{{"id":"m"}}]}}}}}}"#);
    std::fs::write(config.path().join("models.json"), models).unwrap();
    let mut aborts: Vec<Duration> = (0..20).map(|_| abort_latency(config.path())).collect();
    aborts.sort();
    match pi {
        Some((pi_start, pi_rate)) => {
            println!("| measurement | agentwire | pi (same run) | ratio |");
            println!("|---|---|---|---|");
            println!(
                "| spawn → first response (median; 30 runs / 10 for pi) | {:.2} ms | {:.0} ms | {:.0}× faster |",
                median_start.as_secs_f64() * 1000.0,
                pi_start.as_secs_f64() * 1000.0,
                pi_start.as_secs_f64() / median_start.as_secs_f64()
            );
            println!("| pipelined get_state (200k / 20k for pi) | {rate:.0}/s | {pi_rate:.0}/s | {:.1}× |", rate / pi_rate);
        }
        None => {
            println!("| measurement | agentwire | pi (shared/peer-measurements.md) |");
            println!("|---|---|---|");
            println!("| spawn → first response (median of 30) | {:.2} ms | ~1 s |", median_start.as_secs_f64() * 1000.0);
            println!("| pipelined get_state | {rate:.0} responses/s | ~40,000/s |");
        }
    }
    println!("| abort → agent_end, slow OpenAI-compatible stream (median of 20) | {:.2} ms | — |", aborts[aborts.len() / 2].as_secs_f64() * 1000.0);
}
