//! `cargo bench --bench wire_streaming`: a long reply streamed over `--mode wire`, as a kimi
//! client sees it. The offline model replays a script of N ten-character deltas; the time is
//! `prompt` written → its result read, and the bytes are what the client had to read. Run for
//! 10,000 and 20,000 deltas: a projection that costs a constant amount per delta doubles, one
//! that re-reads the growing message quadruples.
//!
//! Prints a Markdown table for docs/performance.md.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn stream(deltas: usize, dir: &std::path::Path) -> (Duration, usize) {
    let script = dir.join(format!("script-{deltas}.jsonl"));
    let chunks = vec!["0123456789"; deltas];
    std::fs::write(&script, format!("{}\n", serde_json::json!({"textChunks": chunks}))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", "wire", "--no-session", "--config-dir"])
        .arg(dir)
        .arg("--model-script")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agentwire");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = Instant::now();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"prompt\",\"params\":{\"user_input\":\"go\"}}\n").unwrap();
    let mut bytes = 0;
    loop {
        let line = lines.next().expect("the prompt's result").unwrap();
        bytes += line.len() + 1;
        if line.starts_with("{\"jsonrpc\":\"2.0\",\"id\":\"p\"") {
            break;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    let _ = child.wait();
    (elapsed, bytes)
}

fn median(mut v: Vec<(Duration, usize)>) -> (Duration, usize) {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let runs = 5;
    let (small_t, small_b) = median((0..runs).map(|_| stream(10_000, dir.path())).collect());
    let (large_t, large_b) = median((0..runs).map(|_| stream(20_000, dir.path())).collect());
    println!("| wire, reply of N × 10-char deltas (median of {runs}) | time | bytes read | bytes per delta |");
    println!("|---|---|---|---|");
    println!("| N = 10,000 | {:.0} ms | {small_b} | {:.0} |", small_t.as_secs_f64() * 1000.0, small_b as f64 / 10_000.0);
    println!("| N = 20,000 | {:.0} ms | {large_b} | {:.0} |", large_t.as_secs_f64() * 1000.0, large_b as f64 / 20_000.0);
    println!("| 20,000 / 10,000 | {:.2}× | {:.2}× | |", large_t.as_secs_f64() / small_t.as_secs_f64(), large_b as f64 / small_b as f64);
}
