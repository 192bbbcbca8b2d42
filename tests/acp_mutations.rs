//! 60 000 mutated ACP lines in one stream (issue 25, done-when 5): the process neither dies nor
//! hangs, answers every request exactly once (no id twice), and exits 0 once stdin ends. The
//! lines are valid requests and notifications of a real session, then mutated: bytes flipped,
//! cut short, params of the wrong type, unknown methods, ids removed or retyped, garbage. The
//! mutations are seeded, so a failure reproduces.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use common::spawn_piped;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const LINES: usize = 60_000;

/// A hang guard for the whole stream (it takes a few seconds).
const HANG_GUARD: Duration = Duration::from_secs(240);

/// An id no single-byte change turns into another line's id.
fn id_of(n: usize) -> String {
    format!("r{n}_{}", n * 7919 % 10007)
}

/// One valid line (request or notification) of `session`.
fn template(rng: &mut StdRng, n: usize, session: &str, cwd: &str) -> Value {
    let id = id_of(n);
    let request = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    match rng.random_range(0..100) {
        0 => request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})),
        1..=10 => json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
        11..=25 => request("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})),
        26..=40 => request("session/set_mode", json!({"sessionId": session, "modeId": "auto"})),
        41..=50 => request("session/load", json!({"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []})),
        51..=60 => request("session/prompt", json!({"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "x"}]})),
        61..=70 => request("authenticate", json!({"methodId": "none"})),
        71..=80 => json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}}),
        _ => request("session/set_mode", json!({"sessionId": session, "modeId": "no-such-mode"})),
    }
}

/// `line`, mutated (or not).
fn mutate(rng: &mut StdRng, n: usize, mut frame: Value) -> Vec<u8> {
    match rng.random_range(0..100) {
        0..=29 => {}
        30..=39 => frame["params"] = json!(rng.random_range(0..3)),
        40..=44 => frame["method"] = json!(format!("x/{n}")),
        45..=49 => {
            frame.as_object_mut().unwrap().remove("id");
        }
        50..=54 => frame["id"] = json!(1_000_000_000 + n as u64),
        55..=57 => frame["jsonrpc"] = json!("1.0"),
        58..=59 => frame["id"] = json!({"nested": n}),
        _ => {}
    }
    let mut bytes = frame.to_string().into_bytes();
    match rng.random_range(0..100) {
        0..=19 => {
            let at = rng.random_range(0..bytes.len());
            bytes[at] = rng.random_range(0x20..0x7f);
        }
        20..=29 => bytes.truncate(rng.random_range(0..bytes.len())),
        30..=32 => {
            // Garbage, invalid UTF-8 included (never a newline: that would split the line).
            let len = rng.random_range(1..200);
            bytes = (0..len).map(|_| rng.random::<u8>()).map(|b| if b == b'\n' { b'?' } else { b }).collect();
        }
        33..=34 => bytes.splice(0..0, b"\xEF\xBB\xBF".iter().copied()).for_each(drop),
        _ => {}
    }
    bytes
}

/// The request id a line must be answered with, if it is a request whose id is one of ours.
fn expected_id(line: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let object = v.as_object()?;
    object.get("method")?;
    let id = object.get("id")?;
    (id.is_string() || id.is_u64()).then(|| id.clone())
}

#[test]
fn sixty_thousand_mutated_acp_lines_are_each_answered_once_and_the_process_lives() {
    let (dir, config) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = spawn_piped("acp", config.path(), |cmd| {
        cmd.args(["--approval", "never", "--cwd"]).arg(dir.path());
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let cwd = dir.path().display().to_string();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})).unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": "new", "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})).unwrap();
    let session = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout closed before session/new was answered");
        let f: Value = serde_json::from_str(&line).unwrap();
        if f["id"] == "new" {
            break f["result"]["sessionId"].as_str().unwrap().to_owned();
        }
    };

    // Everything the agent writes from here, read on its own thread so that neither side blocks.
    let reader = std::thread::spawn(move || {
        let mut frames = Vec::new();
        for line in stdout.lines() {
            let line = line.unwrap();
            frames.push(serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}")));
        }
        frames
    });
    let mut rng = StdRng::seed_from_u64(25);
    let mut expected = Vec::new();
    let mut stream = Vec::new();
    for n in 0..LINES {
        let frame = template(&mut rng, n, &session, &cwd);
        let line = mutate(&mut rng, n, frame);
        expected.extend(expected_id(&line));
        stream.extend_from_slice(&line);
        stream.push(b'\n');
    }
    let t = Instant::now();
    stdin.write_all(&stream).unwrap();
    drop(stdin);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t.elapsed() > HANG_GUARD {
            let _ = child.kill();
            panic!("the agent hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "the process lives to exit 0 at EOF");
    let frames = reader.join().unwrap();
    let mut answers: HashMap<String, usize> = HashMap::new();
    for f in frames.iter().filter(|f| f.get("method").is_none()) {
        if let Some(id) = f.get("id").filter(|id| !id.is_null()) {
            *answers.entry(id.to_string()).or_default() += 1;
        }
    }
    let twice: Vec<_> = answers.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "ids answered more than once: {twice:?}");
    let unanswered: Vec<_> = expected.iter().filter(|id| !answers.contains_key(&id.to_string())).collect();
    assert!(unanswered.is_empty(), "{} of {} requests unanswered, e.g. {:?}", unanswered.len(), expected.len(), &unanswered[..unanswered.len().min(5)]);
    assert!(expected.len() > LINES / 3, "only {} requests survived the mutations", expected.len());
}
