//! omp protocol v2 framing: a logical frame longer than the physical
//! frame limit travels as `rpc_chunk` frames — `{type, chunkId, index, count, byteLength, data}`,
//! `data` the base64 of at most [`CHUNK_DATA_BYTES`] of the frame's UTF-8 text — sent in order
//! and back to back. Only used after `negotiate_protocol` with `protocolVersion: 2`.
//!
//! - [`Splitter`]: outbound; turns every over-long line of an encoded batch into its chunk lines.
//! - [`Reassembler`]: inbound; collects one sequence at a time into the logical frame's bytes,
//!   with every rule a host can break checked (order, counts, declared length, the reassembly
//!   limit, base64) and one [`ChunkError`] per broken sequence.
//!
//! Pure logic: no I/O, no protocol beyond the chunk frame itself, which is defined here
//! ([`Chunk`]) rather than taken from the protocol layer so that the transport names no layer
//! above it; `tests/chunk_frame.rs` checks it against the schema's `RpcChunk`.

use std::sync::atomic::{AtomicU64, Ordering};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use serde::{Deserialize, Serialize};

/// One `rpc_chunk` frame, `{"type":"rpc_chunk","chunkId","index","count","byteLength","data"}`:
/// the schema's `RpcChunk` (`schema/frames.schema.json`) as the framing reads and writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "rpc_chunk", rename_all = "camelCase")]
pub struct Chunk {
    /// Names one chunked frame (`rpc-1`, `rpc-2`, … for the frames we split).
    pub chunk_id: String,
    /// The slice's place in the sequence, from 0.
    pub index: u32,
    /// How many chunks the frame travels in.
    pub count: u32,
    /// The whole frame's length in bytes.
    pub byte_length: u64,
    /// The base64 of this slice of the frame.
    pub data: String,
}

/// Longest physical frame written once protocol v2 is negotiated (omp's `maxFrameBytes`),
/// counted without the LF.
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// Bytes of the logical frame carried by one chunk (omp: ≤ 256 KiB; base64 makes the chunk
/// line about 350 KB, well under [`MAX_FRAME_BYTES`]).
pub const CHUNK_DATA_BYTES: usize = 256 * 1024;

/// Longest logical frame reassembled from inbound chunks (omp's `maxReassembledFrameBytes`).
pub const MAX_REASSEMBLED_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// How much of a failed sequence's frame is kept for its error (enough to read a request id).
const HEAD_BYTES: usize = 4096;

/// The chunk frames of one logical frame (`frame`: its UTF-8 JSON text without LF).
pub fn split(frame: &[u8], chunk_id: &str, data_bytes: usize) -> Vec<Chunk> {
    let data_bytes = data_bytes.max(1);
    let count = frame.len().div_ceil(data_bytes).max(1);
    let count_u32 = u32::try_from(count).unwrap_or(u32::MAX);
    (0..count)
        .map(|i| {
            let slice = &frame[(i * data_bytes).min(frame.len())..((i + 1) * data_bytes).min(frame.len())];
            Chunk { chunk_id: chunk_id.to_owned(), index: i as u32, count: count_u32, byte_length: frame.len() as u64, data: BASE64.encode(slice) }
        })
        .collect()
}

/// Splits the over-long frames of outbound batches; shared by every sender once negotiated, so
/// chunk ids are unique in the stream.
#[derive(Debug)]
pub struct Splitter {
    max_frame_bytes: usize,
    issued: AtomicU64,
}

impl Splitter {
    /// Splits frames longer than `max_frame_bytes` (without their LF).
    pub fn new(max_frame_bytes: usize) -> Self {
        Self { max_frame_bytes, issued: AtomicU64::new(0) }
    }

    /// `lines` (whole frames, each ending in LF) with every frame longer than the limit replaced
    /// by its chunk lines; returned untouched when no frame is over the limit.
    pub fn split_lines(&self, lines: Vec<u8>) -> Vec<u8> {
        // A batch no longer than the limit holds no frame over it.
        if lines.len() <= self.max_frame_bytes + 1 || !self.any_over_limit(&lines) {
            return lines;
        }
        let mut out = Vec::with_capacity(lines.len() / 3 * 4 + 1024);
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &lines) {
            let frame = &lines[start..end];
            if frame.len() > self.max_frame_bytes {
                let id = format!("rpc-{}", self.issued.fetch_add(1, Ordering::Relaxed) + 1);
                for chunk in split(frame, &id, CHUNK_DATA_BYTES) {
                    // A chunk frame always serializes (strings and integers only).
                    if serde_json::to_writer(&mut out, &chunk).is_ok() {
                        out.push(b'\n');
                    }
                }
            } else {
                out.extend_from_slice(&lines[start..=end]);
            }
            start = end + 1;
        }
        out
    }

    fn any_over_limit(&self, lines: &[u8]) -> bool {
        let mut start = 0;
        memchr::memchr_iter(b'\n', lines).any(|end| {
            let long = end - start > self.max_frame_bytes;
            start = end + 1;
            long
        })
    }
}

/// A chunk sequence the reassembler gave up on: what was wrong, and the start of the frame it
/// was carrying (when its first chunk arrived) so the error can name the request id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ChunkError {
    /// What was wrong, naming the chunk id and index.
    pub message: String,
    /// Up to 4 KiB of the logical frame received so far (empty when none was).
    pub head: Vec<u8>,
    /// Whether the sequence was refused for its size (`maxReassembledFrameBytes`).
    pub too_large: bool,
}

/// What one inbound chunk did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reassembled {
    /// Part of a sequence still open.
    Pending,
    /// The last chunk: the whole logical frame.
    Frame(Vec<u8>),
    /// A leftover chunk of a sequence already refused with an error; dropped silently.
    Dropped,
}

#[derive(Debug)]
struct Open {
    chunk_id: String,
    count: u32,
    byte_length: u64,
    next: u32,
    bytes: Vec<u8>,
}

impl Open {
    fn head(&self) -> Vec<u8> {
        self.bytes[..self.bytes.len().min(HEAD_BYTES)].to_vec()
    }
}

/// Reassembles inbound chunk sequences, one at a time.
///
/// A broken sequence (wrong index, `count` or `byteLength` changing, more or less data than
/// declared, over the limit, bad base64, another `chunkId` starting before it ended) is
/// discarded whole with one error; its remaining chunks (same id, index above 0) are then
/// dropped without more errors, until its last index or another id comes.
/// A chunk with a new `chunkId` and index 0 that interrupts an open sequence fails the open
/// one and starts its own.
#[derive(Debug)]
pub struct Reassembler {
    limit: usize,
    open: Option<Open>,
    /// The id of the sequence last refused, while chunks of it may still come.
    dropping: Option<String>,
}

impl Reassembler {
    /// Reassembles frames of up to `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self { limit, open: None, dropping: None }
    }

    /// Takes one chunk. `errors` receives one error per sequence this chunk broke (at most
    /// two: an interrupted sequence and the interrupting chunk's own).
    pub fn push(&mut self, chunk: Chunk, errors: &mut Vec<ChunkError>) -> Reassembled {
        let last = chunk.index.saturating_add(1) >= chunk.count;
        // Index 0 under a refused id is a new sequence (hosts may reuse ids).
        if chunk.index > 0 && self.dropping.as_deref() == Some(chunk.chunk_id.as_str()) {
            if last {
                self.dropping = None;
            }
            return Reassembled::Dropped;
        }
        self.dropping = None;
        // Another id before the open sequence ended: that sequence is abandoned.
        let interrupted = self.open.take_if(|open| open.chunk_id != chunk.chunk_id).map(|open| {
            errors.push(ChunkError {
                message: format!(
                    "rpc_chunk {}: interrupted by rpc_chunk {} after {} of {} chunks; the frame was discarded",
                    open.chunk_id, chunk.chunk_id, open.next, open.count
                ),
                head: open.head(),
                too_large: false,
            });
            open.chunk_id
        });
        match self.accept(chunk) {
            Ok(step) => {
                self.dropping = interrupted;
                step
            }
            Err((error, chunk_id)) => {
                self.open = None;
                self.dropping = Some(chunk_id);
                errors.push(error);
                Reassembled::Dropped
            }
        }
    }

    /// At end of input: the error for a sequence left unfinished, which is discarded.
    pub fn finish(&mut self) -> Option<ChunkError> {
        self.dropping = None;
        self.open.take().map(|open| ChunkError {
            message: format!("rpc_chunk {}: input ended after {} of {} chunks; the frame was discarded", open.chunk_id, open.next, open.count),
            head: open.head(),
            too_large: false,
        })
    }

    fn accept(&mut self, chunk: Chunk) -> Result<Reassembled, (ChunkError, String)> {
        let Chunk { chunk_id, index, count, byte_length, data } = chunk;
        let decoded = BASE64.decode(data.as_bytes());
        // What an error can show of the frame: the sequence so far, or this first slice.
        let head = match (&self.open, &decoded) {
            (Some(open), _) => open.head(),
            (None, Ok(bytes)) if index == 0 => bytes[..bytes.len().min(HEAD_BYTES)].to_vec(),
            (None, _) => Vec::new(),
        };
        let fail = |message: String, too_large: bool| (ChunkError { message, head: head.clone(), too_large }, chunk_id.clone());
        let mut open = match self.open.take() {
            Some(open) => {
                if count != open.count || byte_length != open.byte_length {
                    let message = format!(
                        "rpc_chunk {chunk_id} index {index}: count {count} / byteLength {byte_length} differ from the sequence's {} / {}; the frame was discarded",
                        open.count, open.byte_length
                    );
                    return Err(fail(message, false));
                }
                if index != open.next {
                    return Err(fail(format!("rpc_chunk {chunk_id}: index {index} where {} was expected; the frame was discarded", open.next), false));
                }
                open
            }
            None => {
                if index >= count {
                    return Err(fail(format!("rpc_chunk {chunk_id}: index {index} is not below count {count}; the frame was discarded"), false));
                }
                if index != 0 {
                    return Err(fail(format!("rpc_chunk {chunk_id}: a sequence starts at index 0, not {index}; the frame was discarded"), false));
                }
                if byte_length > self.limit as u64 {
                    let message = format!(
                        "rpc_chunk {chunk_id}: byteLength {byte_length} exceeds the {}-byte reassembly limit (maxReassembledFrameBytes); the frame was discarded",
                        self.limit
                    );
                    return Err(fail(message, true));
                }
                Open { chunk_id: chunk_id.clone(), count, byte_length, next: 0, bytes: Vec::new() }
            }
        };
        let decoded = match decoded {
            Ok(bytes) => bytes,
            Err(e) => return Err(fail(format!("rpc_chunk {chunk_id} index {index}: `data` is not valid base64 ({e}); the frame was discarded"), false)),
        };
        if open.bytes.len() as u64 + decoded.len() as u64 > open.byte_length {
            let message = format!("rpc_chunk {chunk_id} index {index}: more data than byteLength {byte_length}; the frame was discarded");
            return Err(fail(message, false));
        }
        open.bytes.extend_from_slice(&decoded);
        open.next = index + 1;
        if open.next < open.count {
            self.open = Some(open);
            return Ok(Reassembled::Pending);
        }
        if open.bytes.len() as u64 != open.byte_length {
            let message = format!("rpc_chunk {chunk_id}: the chunks carry {} bytes but byteLength is {byte_length}; the frame was discarded", open.bytes.len());
            return Err(fail(message, false));
        }
        Ok(Reassembled::Frame(open.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chunk(id: &str, index: u32, count: u32, byte_length: u64, data: &[u8]) -> Chunk {
        Chunk { chunk_id: id.to_owned(), index, count, byte_length, data: BASE64.encode(data) }
    }

    fn push_all(r: &mut Reassembler, chunks: Vec<Chunk>) -> (Vec<Reassembled>, Vec<ChunkError>) {
        let mut errors = Vec::new();
        let steps = chunks.into_iter().map(|c| r.push(c, &mut errors)).collect();
        (steps, errors)
    }

    #[test]
    fn chunks_have_omps_shape_and_field_order() {
        let frame = br#"{"id":"big","type":"response"}"#;
        let chunks = split(frame, "rpc-1", 16);
        assert_eq!(chunks.len(), 2);
        let line = serde_json::to_string(&chunks[0]).unwrap();
        assert_eq!(line, format!(r#"{{"type":"rpc_chunk","chunkId":"rpc-1","index":0,"count":2,"byteLength":{},"data":"{}"}}"#, frame.len(), BASE64.encode(&frame[..16])));
    }

    #[test]
    fn only_frames_over_the_limit_are_split_and_ids_count_up() {
        let splitter = Splitter::new(10);
        let small = b"{\"a\":1}\n{\"b\":2}\n".to_vec();
        assert_eq!(splitter.split_lines(small.clone()), small, "a batch under the limit is untouched");
        let many_small = b"{\"a\":111}\n".repeat(5);
        assert_eq!(splitter.split_lines(many_small.clone()), many_small, "a long batch of short frames is untouched");
        let mixed = b"{\"a\":1}\n{\"long\":\"0123456789\"}\n{\"b\":2}\n{\"long\":\"abcdefghij\"}\n".to_vec();
        let out = String::from_utf8(splitter.split_lines(mixed)).unwrap();
        let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[0], serde_json::json!({"a": 1}));
        assert_eq!((&lines[1]["type"], &lines[1]["chunkId"], &lines[1]["index"], &lines[1]["count"]), (&serde_json::json!("rpc_chunk"), &serde_json::json!("rpc-1"), &serde_json::json!(0), &serde_json::json!(1)));
        assert_eq!(lines[2], serde_json::json!({"b": 2}));
        assert_eq!(lines[3]["chunkId"], "rpc-2");
        assert_eq!(BASE64.decode(lines[3]["data"].as_str().unwrap()).unwrap(), br#"{"long":"abcdefghij"}"#);
    }

    #[test]
    fn a_split_frame_reassembles() {
        let frame = "{\"text\":\"é—ü\"}".repeat(100).into_bytes();
        let mut r = Reassembler::new(1 << 20);
        let chunks = split(&frame, "c", 7);
        let n = chunks.len();
        let (steps, errors) = push_all(&mut r, chunks);
        assert!(errors.is_empty());
        assert!(steps[..n - 1].iter().all(|s| *s == Reassembled::Pending));
        assert_eq!(steps[n - 1], Reassembled::Frame(frame));
        assert_eq!(r.finish(), None);
    }

    #[test]
    fn broken_sequences_get_one_error_each_and_their_leftovers_are_dropped() {
        let frame = br#"{"id":"req-9","type":"set_todos","todos":[]}"#;
        let n = frame.len() as u64;
        // Wrong index: one error carrying the frame's head; the rest of the sequence is dropped.
        let mut r = Reassembler::new(1 << 20);
        let (steps, errors) = push_all(&mut r, vec![chunk("a", 0, 3, n, &frame[..10]), chunk("a", 2, 3, n, &frame[20..]), chunk("a", 1, 3, n, &frame[10..20])]);
        assert_eq!(steps, [Reassembled::Pending, Reassembled::Dropped, Reassembled::Dropped]);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].message, "rpc_chunk a: index 2 where 1 was expected; the frame was discarded");
        assert_eq!(errors[0].head, &frame[..10]);
        // A later sequence works again, even under the same id (index 0 starts afresh).
        let (steps, errors) = push_all(&mut r, split(frame, "a", 16));
        assert!(errors.is_empty());
        assert_eq!(steps.last(), Some(&Reassembled::Frame(frame.to_vec())));

        let cases: Vec<(Vec<Chunk>, String)> = vec![
            (vec![chunk("x", 1, 2, n, frame)], "rpc_chunk x: a sequence starts at index 0, not 1; the frame was discarded".into()),
            (vec![chunk("x", 2, 2, n, frame)], "rpc_chunk x: index 2 is not below count 2; the frame was discarded".into()),
            (vec![chunk("x", 0, 2, n, &frame[..5]), chunk("x", 1, 3, n, &frame[5..])], format!("rpc_chunk x index 1: count 3 / byteLength {n} differ from the sequence's 2 / {n}; the frame was discarded")),
            (vec![chunk("x", 0, 1, n - 1, frame)], format!("rpc_chunk x index 0: more data than byteLength {}; the frame was discarded", n - 1)),
            (vec![chunk("x", 0, 1, n + 1, frame)], format!("rpc_chunk x: the chunks carry {n} bytes but byteLength is {}; the frame was discarded", n + 1)),
            (vec![chunk("x", 0, 1, 1 << 21, frame)], "rpc_chunk x: byteLength 2097152 exceeds the 1048576-byte reassembly limit (maxReassembledFrameBytes); the frame was discarded".into()),
            (
                vec![Chunk { chunk_id: "x".into(), index: 0, count: 1, byte_length: n, data: "not base64!".into() }],
                "rpc_chunk x index 0: `data` is not valid base64 (Invalid symbol 32, offset 3.); the frame was discarded".into(),
            ),
        ];
        for (chunks, message) in cases {
            let mut r = Reassembler::new(1 << 20);
            let (_, errors) = push_all(&mut r, chunks);
            assert_eq!(errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>(), [message]);
            assert_eq!(r.finish(), None, "nothing stays open after an error");
        }
    }

    #[test]
    fn an_interleaved_sequence_fails_the_open_one_and_an_unfinished_one_fails_at_the_end() {
        let frame = br#"{"id":"one","type":"get_state"}"#;
        let n = frame.len() as u64;
        let mut r = Reassembler::new(1 << 20);
        let (steps, errors) = push_all(&mut r, vec![chunk("a", 0, 2, n, &frame[..8]), chunk("b", 0, 1, n, frame), chunk("a", 1, 2, n, &frame[8..])]);
        assert_eq!(errors.len(), 1, "one error for the interrupted sequence: {errors:?}");
        assert_eq!(errors[0].message, "rpc_chunk a: interrupted by rpc_chunk b after 1 of 2 chunks; the frame was discarded");
        assert_eq!(errors[0].head, &frame[..8]);
        assert_eq!(steps[1], Reassembled::Frame(frame.to_vec()), "the interrupting sequence is taken on its own");
        assert_eq!(steps[2], Reassembled::Dropped, "the abandoned sequence's leftovers are dropped silently");

        let mut r = Reassembler::new(1 << 20);
        push_all(&mut r, vec![chunk("c", 0, 3, n, &frame[..4])]);
        let e = r.finish().unwrap();
        assert_eq!(e.message, "rpc_chunk c: input ended after 1 of 3 chunks; the frame was discarded");
        assert_eq!(e.head, &frame[..4]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn split_then_reassemble_is_the_identity(text in prop::collection::vec(any::<char>(), 0..400).prop_map(String::from_iter), data_bytes in 1usize..64, limit in 11usize..200) {
            let frame = serde_json::to_vec(&serde_json::json!({"type": "x", "text": text})).unwrap();
            let mut r = Reassembler::new(1 << 20);
            let (steps, errors) = push_all(&mut r, split(&frame, "p", data_bytes));
            prop_assert!(errors.is_empty());
            prop_assert_eq!(steps.last(), Some(&Reassembled::Frame(frame.clone())));
            // Through the splitter's batches too: every line comes back whole, in order.
            let mut batch = frame.clone();
            batch.push(b'\n');
            batch.extend_from_slice(b"{\"small\":1}\n");
            let out = Splitter::new(limit).split_lines(batch);
            let mut rebuilt = Vec::new();
            for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                prop_assert!(line.len() <= limit.max(CHUNK_DATA_BYTES * 4 / 3 + 200));
                match serde_json::from_slice::<Chunk>(line) {
                    Ok(c) if line.starts_with(b"{\"type\":\"rpc_chunk\"") => {
                        if let Reassembled::Frame(f) = r.push(c, &mut Vec::new()) {
                            rebuilt.push(f);
                        }
                    }
                    _ => rebuilt.push(line.to_vec()),
                }
            }
            prop_assert_eq!(rebuilt, vec![frame, b"{\"small\":1}".to_vec()]);
        }
    }
}
