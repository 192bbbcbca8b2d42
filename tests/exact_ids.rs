//! Ids echoed byte for byte through the binary (issue 15, defect 7): integers beyond u64 (rpc)
//! and i64 (wire), escaped strings and lone surrogates, and the id of a frame the full parser
//! rejects (nested deeper than 128, `1e400`, a lone surrogate elsewhere) whenever its top-level
//! `id` can be read. Raw stdout lines are compared, since a parsed value would hide the bytes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// Runs the binary in `mode` on `lines` (stdin then closed); returns its stdout lines.
fn run(mode: &str, lines: &[String]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["--mode", mode, "--no-session", "--cwd"])
        .arg(dir.path())
        .arg("--config-dir")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out: Vec<String> = BufReader::new(child.stdout.take().unwrap()).lines().map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success());
    out
}

fn deep(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// One answer per line, carrying `id` exactly.
fn assert_echoed(out: &[String], ids: &[&str]) {
    for id in ids {
        let needle = format!("\"id\":{id}");
        let n = out.iter().filter(|l| l.contains(&needle)).count();
        assert_eq!(n, 1, "one answer with {needle}:\n{}", out.join("\n"));
    }
}

#[test]
fn rpc_echoes_ids_byte_for_byte_even_for_frames_the_parser_rejects() {
    let ids = ["18446744073709551616", "-99999999999999999999", "\"\\u0041b\"", "\"\\ud800\"", "\"x1\"", "\"d1\"", "\"s1\""];
    let lines: Vec<String> = vec![
        format!("{{\"id\":{},\"type\":\"get_state\"}}", ids[0]),
        format!("{{\"id\":{},\"type\":\"get_state\"}}", ids[1]),
        format!("{{\"id\":{},\"type\":\"get_state\"}}", ids[2]),
        format!("{{\"id\":{},\"type\":\"get_state\"}}", ids[3]),
        format!("{{\"id\":{},\"type\":\"prompt\",\"message\":\"x\",\"n\":1e400}}", ids[4]),
        format!("{{\"id\":{},\"type\":\"prompt\",\"message\":\"x\",\"d\":{}}}", ids[5], deep(200)),
        format!("{{\"id\":{},\"type\":\"prompt\",\"message\":\"\\udc00\"}}", ids[6]),
    ];
    let out = run("rpc", &lines);
    assert_echoed(&out, &ids);
}

#[test]
fn wire_echoes_ids_byte_for_byte_even_for_frames_the_parser_rejects() {
    let ids = ["9223372036854775808", "18446744073709551616", "\"\\ud800\"", "\"w1\"", "\"w2\""];
    let lines: Vec<String> = vec![
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"nope\"}}", ids[0]),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"nope\"}}", ids[1]),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"nope\"}}", ids[2]),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"prompt\",\"params\":{{\"x\":1e400}}}}", ids[3]),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"prompt\",\"params\":{}}}", ids[4], deep(200)),
    ];
    let out = run("wire", &lines);
    assert_echoed(&out, &ids);
}

#[test]
fn acp_echoes_ids_byte_for_byte_through_the_shared_runtime() {
    // Beyond u64 and escaped strings: ACP decodes ids with the same runtime as the wire.
    let ids = ["18446744073709551616", "-99999999999999999999", "\"\\u0041b\"", "\"a1\""];
    let lines: Vec<String> = vec![
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"nope/nope\"}}", ids[0]),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"session/list\",\"params\":{{}}}}", ids[1]),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"nope/nope\"}}", ids[2]),
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"session/prompt\",\"params\":{}}}", ids[3], deep(200)),
    ];
    let out = run("acp", &lines);
    assert_echoed(&out, &ids[..3]);
    // ACP answers a frame the parser rejects with `id: null` (its SDKs do the same).
    assert!(out.iter().any(|l| l.contains("\"id\":null") && l.contains("-32700")), "{}", out.join("\n"));
}
