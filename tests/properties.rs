//! Property tests (proptest) that run with the normal suite on every change (issue 15, "fuzzing
//! as a habit"; the long fuzz runs live in `fuzz/`). Each property runs 256 cases:
//!
//! - decoding (rpc and wire) never panics, yields exactly one outcome per non-blank line, and
//!   echoes a readable string or integer id byte for byte, as the writer puts it on the wire;
//! - `LineReader` splits any byte stream, however it is chunked, exactly like a reference model;
//! - session files round-trip (append → load → the same messages), and a torn tail is skipped
//!   on load and repaired before the next append, losing nothing that was written whole;
//! - the writer never interleaves frames, whatever the budget, the frame sizes and the senders.

use std::collections::VecDeque;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use agentwire::dialect::rpc::{decode_line, Inbound};
use agentwire::dialect::wire::{decode_wire_line, WireInbound};
use agentwire::protocol::AgentMessage;
use agentwire::sessions::{Payload, Session};
use agentwire::transport::raw_id::{id_kind, restore, IdKind};
use agentwire::transport::{spawn_writer, InboundLine, LineReader};
use proptest::prelude::*;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

const CASES: u32 = 256;
const TOO_LONG_HEAD_BYTES: usize = agentwire::transport::lines::TOO_LONG_HEAD_BYTES;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// An async reader that hands out `chunks` one read at a time (a chunk larger than the caller's
/// buffer is handed out over several reads), so a `BufReader` over it sees exactly these
/// boundaries.
struct Chunked(VecDeque<Vec<u8>>);

impl AsyncRead for Chunked {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if let Some(chunk) = self.0.front_mut() {
            let n = chunk.len().min(buf.remaining());
            buf.put_slice(&chunk[..n]);
            chunk.drain(..n);
            if chunk.is_empty() {
                self.0.pop_front();
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// Cuts `bytes` at the given (sorted, deduplicated) positions.
fn chunks_of(bytes: &[u8], cuts: &[usize]) -> VecDeque<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).filter(|c| !c.is_empty()).collect()
}

/// All lines of `chunks` through a real `LineReader`, with `capacity` as the `BufReader` size.
fn read_lines(chunks: VecDeque<Vec<u8>>, capacity: usize, max: usize) -> Vec<InboundLine> {
    runtime().block_on(async {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(capacity, Chunked(chunks)), max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(line);
        }
        out
    })
}

/// The reference model of `transport::lines`: split at LF; drop one CR before the LF; a line
/// longer than `max` (CR excluded) is `TooLong` with its first bytes; a BOM is removed from the
/// first line only; blank lines are skipped; a final line without LF still counts.
fn model_lines(bytes: &[u8], max: usize) -> Vec<InboundLine> {
    let mut segments: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if segments.last().is_some_and(|s| s.is_empty()) {
        segments.pop();
    }
    let mut out = Vec::new();
    for (i, segment) in segments.into_iter().enumerate() {
        let line = segment.strip_suffix(b"\r").unwrap_or(segment);
        if line.len() > max {
            out.push(InboundLine::TooLong { bytes: line.len() as u64, head: line[..line.len().min(TOO_LONG_HEAD_BYTES)].to_vec() });
            continue;
        }
        let line = if i == 0 { line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line) } else { line };
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.push(InboundLine::Line(line.to_vec()));
        }
    }
    out
}

/// Bytes drawn mostly from the characters that matter to line splitting, with long runs so
/// that lines beyond the kept head (4096 bytes) occur too.
fn stream_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![Just(b'\n'), Just(b'\r'), Just(b' '), Just(b'\t'), Just(b'{'), Just(b'a'), any::<u8>()];
    let run = (byte, prop_oneof![8 => 1usize..4, 1 => 4000usize..4200]).prop_map(|(b, n)| vec![b; n]);
    let piece = prop_oneof![6 => run, 1 => Just(b"\xEF\xBB\xBF".to_vec()), 1 => Just(b"\r\n".to_vec())];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// A JSON id token as a host might write it: plain and escaped strings, small and huge integers,
/// floats, and things that are not ids at all.
fn id_token() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 _-]{0,12}".prop_map(|s| format!("\"{s}\"")),
        Just("\"\\u0041\\/b\"".to_owned()),
        Just("\"\\ud800\"".to_owned()),
        Just("\"\u{2028}é\"".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just("18446744073709551616".to_owned()),
        Just("-99999999999999999999999".to_owned()),
        Just("1.0e3".to_owned()),
        Just("1e400".to_owned()),
        Just("null".to_owned()),
        Just("{\"a\":[1]}".to_owned()),
    ]
}

/// One inbound line — a frame with an id and a body that may be valid, invalid for the schema,
/// unparseable (too deep, `1e400`, a lone surrogate, a missing value, cut short), or arbitrary
/// bytes — with the id token the answer must carry byte for byte: a string or integer id in a
/// frame that is whole and whose syntax is JSON's (the full parser may still reject it).
fn inbound_line(bodies: &'static [&'static str]) -> impl Strategy<Value = (Vec<u8>, Option<String>)> {
    let body = prop::sample::select(bodies);
    let spoiler = prop_oneof![
        Just((String::new(), true)),
        Just((",\"x\":1e400".to_owned(), true)),
        Just((",\"x\":\"\\ud800\"".to_owned(), true)),
        Just((format!(",\"x\":{}{}", "[".repeat(200), "]".repeat(200)), true)),
        Just((",\"x\":".to_owned(), false)),
    ];
    let frame = (id_token(), body, spoiler, any::<bool>(), 0usize..8).prop_map(|(id, body, (spoiler, syntax_ok), id_first, cut)| {
        let text = if id_first { format!("{{\"id\":{id},{body}{spoiler}}}") } else { format!("{{{body}{spoiler},\"id\":{id}}}") };
        // Sometimes the line is cut short (a torn write).
        let whole = cut != 0;
        let keep = if whole { text.len() } else { text.len() - 3 };
        let readable = whole && syntax_ok && id_kind(&id) != IdKind::Other;
        (text.into_bytes()[..keep].to_vec(), readable.then_some(id))
    });
    prop_oneof![4 => frame, 1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| (b, None))]
}

const RPC_BODIES: &[&str] = &[
    "\"type\":\"get_state\"",
    "\"type\":\"prompt\",\"message\":\"hi\"",
    "\"type\":\"prompt\"",
    "\"type\":\"set_model\",\"provider\":\"p\"",
    "\"type\":\"no_such_command\"",
    "\"type\":7",
    "\"command\":\"abort\"",
    "\"type\":\"extension_ui_response\",\"value\":\"Approve\"",
];

const WIRE_BODIES: &[&str] = &[
    "\"jsonrpc\":\"2.0\",\"method\":\"prompt\",\"params\":{\"user_input\":\"hi\"}",
    "\"jsonrpc\":\"2.0\",\"method\":\"cancel\"",
    "\"jsonrpc\":\"2.0\",\"method\":\"set_plan_mode\",\"params\":{\"enabled\":\"maybe\"}",
    "\"jsonrpc\":\"1.0\",\"method\":\"cancel\"",
    "\"jsonrpc\":\"2.0\",\"method\":\"no_such_method\"",
    "\"jsonrpc\":\"2.0\",\"result\":{}",
    "\"jsonrpc\":\"2.0\",\"error\":{\"code\":1}",
    "\"method\":5",
];

/// The id token of `frame` as the writer encodes it (`None`: no `id`, or not a string or an
/// integer).
fn written_id(frame: &impl serde::Serialize) -> Option<String> {
    let text = restore(serde_json::to_string(frame).unwrap());
    let raw = agentwire::dialect::raw_id(text.as_bytes())?;
    (id_kind(&raw) != IdKind::Other).then_some(raw)
}

/// Joins lines into one stream, each ended by LF.
fn stream_of(lines: &[(Vec<u8>, Option<String>)]) -> Vec<u8> {
    lines.iter().flat_map(|(l, _)| l.iter().copied().chain([b'\n'])).collect()
}

/// A user or assistant message with `text`.
fn message(assistant: bool, text: &str, at: u64) -> AgentMessage {
    let value = if assistant {
        json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"offline","provider":"agentwire","model":"offline",
            "usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},
            "stopReason":"stop","timestamp":at})
    } else {
        json!({"role":"user","content":[{"type":"text","text":text}],"timestamp":at})
    };
    serde_json::from_value(value).unwrap()
}

fn as_json(messages: &[AgentMessage]) -> Vec<Value> {
    messages.iter().map(|m| serde_json::to_value(m).unwrap()).collect()
}

/// Appends `texts` as alternating user / assistant messages to a new session in `dir`.
fn write_session(dir: &Path, texts: &[String]) -> (std::path::PathBuf, Vec<AgentMessage>) {
    let mut session = Session::create(Some(dir), dir, None);
    let messages: Vec<AgentMessage> = texts.iter().enumerate().map(|(i, t)| message(i % 2 == 1, t, i as u64)).collect();
    for m in &messages {
        session.append(Payload::Message(Box::new(m.clone()))).unwrap();
    }
    (session.path().unwrap().to_path_buf(), messages)
}

/// Message texts with the characters that trouble JSONL: newlines, CR, U+2028/9, quotes, NUL.
fn texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z \\n\\r\"\\\\\u{2028}\u{2029}\u{0}é😀]{0,40}", 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn rpc_decoding_answers_every_line_once_and_echoes_ids_exactly(lines in prop::collection::vec(inbound_line(RPC_BODIES), 1..12), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let bytes = stream_of(&lines);
        let read = read_lines(chunks_of(&bytes, &cuts), 64, 1 << 20);
        prop_assert_eq!(read.len(), model_lines(&bytes, 1 << 20).len(), "one outcome per non-blank line");
        let expectations = lines.iter().filter(|(l, _)| !l.iter().all(u8::is_ascii_whitespace) && !l.contains(&b'\n')).map(|(_, id)| id.clone());
        let single_lines = lines.iter().all(|(l, _)| !l.contains(&b'\n') && !l.contains(&b'\r') && !l.starts_with(b"\xEF\xBB\xBF"));
        for (line, expected) in read.into_iter().zip(expectations.chain(std::iter::repeat(None))) {
            let expected = expected.filter(|_| single_lines);
            let echoed = match decode_line(&line, 1 << 20) {
                Err(response) => written_id(&response),
                Ok(Inbound::Command { id, .. }) => id.and_then(|id| written_id(&json!({ "id": id }))),
                Ok(Inbound::UiResponse(_) | Inbound::HostToolUpdate(_) | Inbound::HostToolResult(_) | Inbound::Chunk(_)) => continue,
            };
            if let Some(raw) = expected {
                prop_assert_eq!(echoed, Some(raw));
            }
        }
    }

    #[test]
    fn wire_decoding_answers_every_line_once_and_echoes_ids_exactly(lines in prop::collection::vec(inbound_line(WIRE_BODIES), 1..12), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let bytes = stream_of(&lines);
        let read = read_lines(chunks_of(&bytes, &cuts), 64, 1 << 20);
        prop_assert_eq!(read.len(), model_lines(&bytes, 1 << 20).len(), "one outcome per non-blank line");
        let expectations = lines.iter().filter(|(l, _)| !l.iter().all(u8::is_ascii_whitespace) && !l.contains(&b'\n')).map(|(_, id)| id.clone());
        let single_lines = lines.iter().all(|(l, _)| !l.contains(&b'\n') && !l.contains(&b'\r') && !l.starts_with(b"\xEF\xBB\xBF"));
        for (line, expected) in read.into_iter().zip(expectations.chain(std::iter::repeat(None))) {
            let expected = expected.filter(|_| single_lines);
            let echoed = match decode_wire_line(line) {
                Err(response) => written_id(&response),
                Ok(WireInbound::Request { id, .. } | WireInbound::Response { id, .. }) => written_id(&json!({ "id": id })),
                Ok(WireInbound::Notification(never)) => match never {},
                Ok(WireInbound::Ignored { .. }) => None,
            };
            if let Some(raw) = expected {
                prop_assert_eq!(echoed, Some(raw));
            }
        }
    }

    #[test]
    fn line_reader_matches_the_model_for_any_chunking(bytes in stream_bytes(), cuts in prop::collection::vec(any::<usize>(), 0..16), capacity in 1usize..9000, max in 1usize..5000) {
        prop_assert_eq!(read_lines(chunks_of(&bytes, &cuts), capacity, max), model_lines(&bytes, max));
    }

    #[test]
    fn sessions_round_trip_and_survive_a_torn_tail(texts in texts(), more in texts(), tear in any::<prop::sample::Index>()) {
        let dir = tempfile::tempdir().unwrap();
        let (path, messages) = write_session(dir.path(), &texts);
        let (loaded, warnings) = Session::load(&path).unwrap();
        prop_assert!(warnings.is_empty());
        prop_assert_eq!(as_json(&loaded.messages()), as_json(&messages));

        // A crash mid-write leaves part of the next entry without its LF.
        let next = serde_json::to_string(&json!({"type":"message","id":"deadbeef","parentId":loaded.leaf(),"timestamp":"2026-01-01T00:00:00.000Z","message":message(false, "lost", 9)})).unwrap();
        let torn = &next.as_bytes()[..tear.index(next.len() - 1) + 1];
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(torn);
        std::fs::write(&path, &bytes).unwrap();
        let (mut reloaded, warnings) = Session::load(&path).unwrap();
        prop_assert_eq!(as_json(&reloaded.messages()), as_json(&messages), "every whole entry survives");
        prop_assert_eq!(warnings.len(), 1, "the torn line is reported");

        // Appending repairs the tail first, so the new entries chain on from the last whole one.
        let mut all = messages;
        for (i, t) in more.iter().enumerate() {
            let m = message(i % 2 == 1, t, 100 + i as u64);
            reloaded.append(Payload::Message(Box::new(m.clone()))).unwrap();
            all.push(m);
        }
        let (last, warnings) = Session::load(&path).unwrap();
        prop_assert!(warnings.is_empty(), "{warnings:?}");
        prop_assert_eq!(as_json(&last.messages()), as_json(&all));
    }

    #[test]
    fn the_writer_never_interleaves_frames(senders in prop::collection::vec(prop::collection::vec(0usize..3000, 1..8), 1..5), budget in 1usize..4096, pipe in 1usize..512) {
        let plan = senders.clone();
        let written = runtime().block_on(async move {
            let (sink, mut source) = tokio::io::duplex(pipe);
            let (outbox, writer) = spawn_writer(sink, budget);
            let reader = tokio::spawn(async move {
                let mut all = Vec::new();
                source.read_to_end(&mut all).await.unwrap();
                all
            });
            let tasks: Vec<_> = plan.iter().enumerate().map(|(s, sizes)| {
                let outbox = outbox.clone();
                let sizes = sizes.clone();
                tokio::spawn(async move {
                    for (n, size) in sizes.into_iter().enumerate() {
                        outbox.send(&json!({"sender": s, "n": n, "pad": "x".repeat(size)})).await.unwrap();
                        tokio::task::yield_now().await;
                    }
                })
            }).collect();
            for t in tasks {
                t.await.unwrap();
            }
            drop(outbox);
            writer.await.unwrap().unwrap();
            reader.await.unwrap()
        });
        let text = String::from_utf8(written).unwrap();
        prop_assert!(text.ends_with('\n') || text.is_empty());
        let mut next = vec![0u64; senders.len()];
        for line in text.lines() {
            let frame: Value = serde_json::from_str(line).unwrap();
            let s = usize::try_from(frame["sender"].as_u64().unwrap()).unwrap();
            prop_assert_eq!(frame["n"].as_u64(), Some(next[s]), "each sender's frames arrive whole and in order");
            prop_assert_eq!(frame["pad"].as_str().unwrap().len(), senders[s][usize::try_from(next[s]).unwrap()]);
            next[s] += 1;
        }
        prop_assert_eq!(next, senders.iter().map(|s| s.len() as u64).collect::<Vec<_>>(), "nothing is dropped");
    }
}
