//! omp protocol v2 through the real binary (issue 17, goal 4): `ready` advertises omp's limits,
//! `negotiate_protocol` accepts 2 only, and after it frames longer than 1 MiB travel as
//! `rpc_chunk` frames both ways — outbound split into ≤ 256 KiB slices that reassemble into the
//! original frame, inbound reassembled into the command they carry, every broken sequence
//! answered with one error while the server keeps serving. Without negotiation nothing changes.

mod common;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use common::Agent;
use serde_json::{json, Value};

const MIB: usize = 1024 * 1024;

/// The `rpc_chunk` frames of `frame`, as a host splits it (slices of `slice` bytes).
fn chunks_of(frame: &Value, chunk_id: &str, slice: usize) -> Vec<Value> {
    let bytes = frame.to_string().into_bytes();
    let count = bytes.len().div_ceil(slice);
    (0..count)
        .map(|i| {
            let data = BASE64.encode(&bytes[i * slice..((i + 1) * slice).min(bytes.len())]);
            json!({"type": "rpc_chunk", "chunkId": chunk_id, "index": i, "count": count, "byteLength": bytes.len(), "data": data})
        })
        .collect()
}

/// A `set_todos` command whose frame (and so its response and `todo_update`) is about `bytes`.
fn big_todos(id: &str, bytes: usize) -> (Value, Value) {
    // Multi-byte characters, so slices end inside characters.
    let phases = json!([{"id": "p1", "name": "Big", "tasks": [{"id": "t1", "content": "é—".repeat(bytes / 5), "status": "pending"}]}]);
    (json!({"id": id, "type": "set_todos", "phases": phases}), phases)
}

/// Reads frames until a whole logical frame is at hand: a plain frame as it came, or a chunk
/// sequence reassembled (checked against omp's shape on the way). Returns it and its chunks.
fn next_logical(a: &mut Agent) -> (Value, Vec<Value>) {
    let first = a.next();
    if first["type"] != "rpc_chunk" {
        return (first, Vec::new());
    }
    let mut chunks = vec![first];
    while chunks.len() < chunks[0]["count"].as_u64().unwrap() as usize {
        chunks.push(a.next());
    }
    let mut bytes = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["type", "chunkId", "index", "count", "byteLength", "data"], "omp's fields, in omp's order");
        assert_eq!((&c["chunkId"], &c["index"], &c["count"], &c["byteLength"]), (&chunks[0]["chunkId"], &json!(i), &chunks[0]["count"], &chunks[0]["byteLength"]));
        assert!(c.to_string().len() <= MIB, "a physical frame stays within maxFrameBytes");
        let data = BASE64.decode(c["data"].as_str().unwrap()).unwrap();
        assert!(data.len() <= 256 * 1024, "≤ 256 KiB of the frame per chunk");
        bytes.extend(data);
    }
    assert_eq!(bytes.len() as u64, chunks[0]["byteLength"].as_u64().unwrap());
    assert_eq!(chunks.len(), bytes.len().div_ceil(256 * 1024), "full 256 KiB slices but the last");
    assert!(bytes.len() > MIB, "only frames over the limit are chunked");
    (serde_json::from_slice(&bytes).expect("the chunks reassemble into one JSON frame"), chunks)
}

fn negotiated(script: &[Value]) -> Agent {
    let mut a = Agent::start(&[], script);
    let r = a.request(json!({"id": "np", "type": "negotiate_protocol", "protocolVersion": 2}));
    assert_eq!(r["success"], true, "{r}");
    a
}

/// The agent still answers after whatever came before (a command with a small answer: the
/// state would carry the big todo lists some tests set, and come chunked).
fn still_serving(a: &mut Agent, id: &str) {
    let r = a.request(json!({"id": id, "type": "get_last_assistant_text"}));
    assert_eq!(r["success"], true);
}

#[test]
fn ready_advertises_omps_limits_and_the_line_limit_apart() {
    let a = Agent::start(&["--max-line-bytes", "5000000"], &[]);
    let ready = &a.seen[0];
    assert_eq!(
        (&ready["protocolVersion"], &ready["supportedProtocolVersions"], &ready["maxFrameBytes"], &ready["maxReassembledFrameBytes"], &ready["maxLineBytes"]),
        (&json!(1), &json!([1, 2]), &json!(1_048_576), &json!(67_108_864), &json!(5_000_000))
    );
}

#[test]
fn negotiate_protocol_accepts_version_2_only_with_omps_answers() {
    let mut a = Agent::start(&[], &[]);
    // The recorded exchange (omp/protocol.jsonl), plus our `code`.
    for v in [3, 1] {
        let r = a.request(json!({"id": format!("np-{v}"), "type": "negotiate_protocol", "protocolVersion": v}));
        assert_eq!(
            r,
            json!({"id": format!("np-{v}"), "type": "response", "command": "negotiate_protocol", "success": false, "error": format!("Unsupported RPC protocol version: {v}"), "code": "unsupported"})
        );
    }
    let r = a.request(json!({"id": "np-2", "type": "negotiate_protocol", "protocolVersion": 2}));
    assert_eq!(r, json!({"id": "np-2", "type": "response", "command": "negotiate_protocol", "success": true, "data": {"protocolVersion": 2}}));
    for bad in [json!({"id": "x", "type": "negotiate_protocol"}), json!({"id": "x", "type": "negotiate_protocol", "protocolVersion": "2"}), json!({"id": "x", "type": "negotiate_protocol", "protocolVersion": 2, "chunk": true})] {
        let r = a.request(bad);
        assert_eq!((&r["success"], &r["code"]), (&json!(false), &json!("invalid_params")), "{r}");
    }
}

#[test]
fn large_outbound_frames_are_chunked_only_after_negotiation_and_reassemble_whole() {
    let mut a = Agent::start(&[], &[]);
    // Protocol 1: the 1.5 MB response and event come as single lines, as before.
    let (cmd, phases) = big_todos("before", 3 * MIB / 2);
    a.send(cmd);
    assert_eq!(a.next(), json!({"type": "todo_update", "todoPhases": phases}));
    assert_eq!(a.next(), json!({"id": "before", "type": "response", "command": "set_todos", "success": true, "data": {"todoPhases": phases}}));

    let r = a.request(json!({"id": "np", "type": "negotiate_protocol", "protocolVersion": 2}));
    assert_eq!(r["success"], true);
    let (cmd, phases) = big_todos("after", 3 * MIB / 2);
    a.send(cmd);
    let (event, chunks) = next_logical(&mut a);
    assert_eq!(event, json!({"type": "todo_update", "todoPhases": phases}));
    assert_eq!(chunks[0]["chunkId"], "rpc-1");
    let (response, chunks) = next_logical(&mut a);
    assert_eq!(response, json!({"id": "after", "type": "response", "command": "set_todos", "success": true, "data": {"todoPhases": phases}}));
    assert_eq!(chunks[0]["chunkId"], "rpc-2", "chunk ids count up");
    // Small frames are not chunked; the state now carries the big list, so it is.
    still_serving(&mut a, "small");
    a.send(json!({"id": "state", "type": "get_state"}));
    let (state, chunks) = next_logical(&mut a);
    assert_eq!((&state["id"], &state["data"]["todoPhases"], &chunks[0]["chunkId"]), (&json!("state"), &phases, &json!("rpc-3")));
}

#[test]
fn inbound_chunks_are_reassembled_into_the_command_they_carry() {
    let mut a = negotiated(&[]);
    // A command over the 1 MiB frame limit, as omp's hosts send it.
    let (cmd, phases) = big_todos("big-in", 3 * MIB / 2);
    for c in chunks_of(&cmd, "host-1", 256 * 1024) {
        a.send(c);
    }
    assert_eq!(next_logical(&mut a).0, json!({"type": "todo_update", "todoPhases": phases}));
    let (response, _) = next_logical(&mut a);
    assert_eq!((&response["id"], &response["success"]), (&json!("big-in"), &json!(true)));
    // Any frame may be chunked, in slices of any size, cut inside UTF-8 characters.
    for c in chunks_of(&json!({"id": "tiny-é", "type": "set_session_name", "name": "ünïcode"}), "host-2", 3) {
        a.send(c);
    }
    assert_eq!(a.next(), json!({"type": "session_info_changed", "name": "ünïcode"}));
    assert_eq!(a.next(), json!({"id": "tiny-é", "type": "response", "command": "set_session_name", "success": true}));
    // Plain frames between two sequences are fine.
    still_serving(&mut a, "plain");
}

#[test]
fn broken_chunk_sequences_get_one_error_each_and_the_server_keeps_serving() {
    let mut a = negotiated(&[]);
    // 50-byte slices: the first holds `{"id":"req-7","type":"set_session_name",…`, so errors can
    // name the request.
    let cmd = json!({"id": "req-7", "type": "set_session_name", "name": "x".repeat(200)});
    let good = chunks_of(&cmd, "s", 50);
    let n = good.len();
    assert_eq!(n, 5);
    let with = |mut c: Value, key: &str, v: Value| {
        c[key] = v;
        c
    };
    let bytes = &good[0]["byteLength"];
    let cases: Vec<(&str, Vec<Value>, &str, String)> = vec![
        ("wrong index", vec![good[0].clone(), good[2].clone(), good[1].clone(), good[3].clone()], "invalid_request", "rpc_chunk s: index 2 where 1 was expected; the frame was discarded".into()),
        (
            "count mismatch",
            vec![good[0].clone(), with(good[1].clone(), "count", json!(n + 1))],
            "invalid_request",
            format!("rpc_chunk s index 1: count {} / byteLength {bytes} differ from the sequence's {n} / {bytes}; the frame was discarded", n + 1),
        ),
        ("bad base64", vec![good[0].clone(), with(good[1].clone(), "data", json!("@@@@"))], "invalid_request", "rpc_chunk s index 1: `data` is not valid base64 (Invalid symbol 64, offset 0.); the frame was discarded".into()),
        (
            "over the reassembly limit",
            vec![with(with(good[0].clone(), "byteLength", json!(64 * MIB + 1)), "count", json!(300))],
            "frame_too_large",
            "rpc_chunk s: byteLength 67108865 exceeds the 67108864-byte reassembly limit (maxReassembledFrameBytes); the frame was discarded".into(),
        ),
        ("interleaved ids", vec![good[0].clone(), good[1].clone(), with(good[0].clone(), "chunkId", json!("t"))], "invalid_request", "rpc_chunk s: interrupted by rpc_chunk t after 2 of 5 chunks; the frame was discarded".into()),
    ];
    for (i, (what, chunks, code, message)) in cases.into_iter().enumerate() {
        let start = a.seen.len();
        for c in &chunks {
            a.send(c.clone());
        }
        // The broken sequence's leftovers are dropped without more errors.
        for c in good.iter().skip(chunks.len()) {
            if what != "interleaved ids" {
                a.send(c.clone());
            }
        }
        let marker = format!("after-{i}");
        still_serving(&mut a, &marker);
        let answers: Vec<&Value> = a.seen[start..].iter().filter(|f| f["type"] == "response" && f["id"] != json!(marker)).collect();
        assert_eq!(answers.len(), 1, "{what}: exactly one answer: {answers:?}");
        assert_eq!(
            answers[0],
            &json!({"id": "req-7", "type": "response", "command": "set_session_name", "success": false, "error": message, "code": code}),
            "{what}: the request id and command are read from the frame's start"
        );
        if what == "interleaved ids" {
            // The interrupting sequence stands on its own: its remaining chunks complete it.
            let mut rest = good[1..].to_vec();
            for c in &mut rest {
                c["chunkId"] = json!("t");
            }
            for c in rest {
                a.send(c);
            }
            assert_eq!(a.next(), json!({"type": "session_info_changed", "name": "x".repeat(200)}));
            assert_eq!(a.next()["id"], "req-7");
        }
    }
    // A chunk carrying a chunk is refused; the name was never changed by the broken sequences.
    let inner = chunks_of(&json!({"id": "inner", "type": "get_state"}), "in", 1000).remove(0);
    for c in chunks_of(&inner, "outer", 1000) {
        a.send(c);
    }
    let r = a.next();
    assert_eq!((&r["command"], &r["code"], &r["error"]), (&json!("rpc_chunk"), &json!("invalid_request"), &json!("An rpc_chunk frame cannot carry another rpc_chunk frame")));
    still_serving(&mut a, "end");
}

#[test]
fn a_sequence_left_open_at_end_of_input_is_answered_and_chunks_need_negotiation() {
    // Protocol 1: a chunk is an unknown command, every time, and nothing else changes.
    let mut a = Agent::start(&[], &[]);
    let cmd = json!({"id": "open-1", "type": "set_session_name", "name": "abcdefghijklmnopqrstuvwxyz"});
    let chunks = chunks_of(&cmd, "u", 30);
    assert_eq!(chunks.len(), 3);
    for c in &chunks[..2] {
        a.send(c.clone());
    }
    for _ in 0..2 {
        let r = a.next();
        assert_eq!(
            r,
            json!({"type": "response", "command": "rpc_chunk", "success": false, "error": "Unknown command: rpc_chunk (chunked frames are accepted only after negotiate_protocol with protocolVersion 2)", "code": "unknown_command"})
        );
    }
    still_serving(&mut a, "v1");
    drop(a);

    let mut a = negotiated(&[]);
    for c in &chunks[..2] {
        a.send(c.clone());
    }
    a.close_stdin();
    let (frames, code) = a.finish();
    assert_eq!(code, 0);
    let answers: Vec<&Value> = frames.iter().filter(|f| f["type"] == "response").collect();
    assert_eq!(
        answers.last().unwrap(),
        &&json!({"id": "open-1", "type": "response", "command": "set_session_name", "success": false, "error": "rpc_chunk u: input ended after 2 of 3 chunks; the frame was discarded", "code": "invalid_request"})
    );
}
