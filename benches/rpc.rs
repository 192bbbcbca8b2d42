//! `cargo bench --bench rpc`: the release binary measured from outside, the way a host sees it.
//!
//! - cold start: spawn → the response to a `get_state` written immediately (median of 30);
//! - throughput: 200,000 pipelined `get_state` commands → responses per second.
//!
//! Prints a Markdown table for docs/performance.md.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn spawn() -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "rpc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agentwire")
}

fn cold_start() -> Duration {
    let started = Instant::now();
    let mut child = spawn();
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

fn throughput(n: usize) -> f64 {
    let mut child = spawn();
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

fn main() {
    let mut starts: Vec<Duration> = (0..30).map(|_| cold_start()).collect();
    starts.sort();
    let median = starts[starts.len() / 2];
    let rate = throughput(200_000);
    println!("| measurement | agentwire | pi (shared/peer-measurements.md) |");
    println!("|---|---|---|");
    println!("| spawn → first response (median of 30) | {:.2} ms | ~1 s |", median.as_secs_f64() * 1000.0);
    println!("| pipelined get_state | {:.0} responses/s | ~40,000/s |", rate);
}
