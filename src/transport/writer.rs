//! The single writer that owns stdout (or any sink) for outbound frames.
//!
//! Every task that wants to emit a frame goes through an [`Outbox`]: frames are serialized by
//! the sender (compact JSON, one object per line, U+2028/U+2029 escaped so hosts that split on
//! them stay safe), then queued. One task writes them whole, in queue order, and flushes
//! whenever the queue runs dry, so frames never interleave. The queue is bounded in bytes, not
//! frames (a streaming reply's `message_update` carries the whole partial message, so a frame
//! count bounds nothing): a sender waits until its frame fits in the budget, so a slow reader
//! slows the senders down, nothing is dropped, and memory stays within the budget (a frame
//! larger than the whole budget waits for an empty queue and goes alone). When the sink fails (EPIPE: the host went
//! away) the writer stops, and every later send reports [`WriterClosed`].

use std::sync::Arc;

use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// The default outbound byte budget (`--max-outbound-bytes`).
pub const DEFAULT_OUTBOUND_BYTES: usize = 8 * 1024 * 1024;

/// A queued frame and the part of the byte budget it holds until it is written.
type Queued = (Vec<u8>, OwnedSemaphorePermit);

/// The writer has stopped (the sink failed or was closed); no more frames can be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the output stream is closed")]
pub struct WriterClosed;

/// A handle for queueing frames; cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Queued>,
    budget: Arc<Semaphore>,
    /// The budget's size in bytes (permits).
    limit: u32,
}

/// Serializes a frame as one compact line with its LF, escaping U+2028 and U+2029.
pub fn encode_frame<T: Serialize + ?Sized>(frame: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = finish_frame(serde_json::to_string(frame)?).into_bytes();
    bytes.push(b'\n');
    Ok(bytes)
}

/// One serialized frame with its marked ids restored and U+2028 / U+2029 escaped.
fn finish_frame(text: String) -> String {
    let text = super::raw_id::restore(text);
    // These two characters can only occur inside JSON strings, where `\u2028` means the same.
    if text.contains(['\u{2028}', '\u{2029}']) {
        text.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")
    } else {
        text
    }
}

/// Whether a serialized frame needs [`finish_frame`]: it holds a marked id, or U+2028 / U+2029
/// (both are encoded `E2 80 A8` / `E2 80 A9`).
fn needs_finishing(bytes: &[u8]) -> bool {
    super::raw_id::in_use() || memchr::memmem::find(bytes, "\u{2028}".as_bytes()).is_some() || memchr::memmem::find(bytes, "\u{2029}".as_bytes()).is_some()
}

/// Frames encoded by one task and queued as one item: a reader answering a pipelined burst of
/// cheap commands pays for one queue hand-off (and at most one wake-up of the writer) per batch
/// instead of per frame. The frames stay whole and in order; the batch holds its bytes against
/// the byte budget like any frame once queued.
#[derive(Debug, Default)]
pub struct FrameBatch {
    bytes: Vec<u8>,
}

impl FrameBatch {
    /// Appends one frame (encoded as [`encode_frame`] does). The frame is serialized straight
    /// into the batch: a large answer (a whole session's messages) exists once, not also as an
    /// intermediate string.
    pub fn push<T: Serialize + ?Sized>(&mut self, frame: &T) -> Result<(), WriterClosed> {
        let start = self.bytes.len();
        // Same reasoning as in `Outbox::send`: a serialization failure is a bug, not a panic.
        if serde_json::to_writer(&mut self.bytes, frame).is_err() {
            self.bytes.truncate(start);
            return Err(WriterClosed);
        }
        if needs_finishing(&self.bytes[start..]) {
            let tail = self.bytes.split_off(start);
            // serde_json writes UTF-8 only.
            let text = String::from_utf8(tail).map_err(|_| WriterClosed)?;
            self.bytes.extend_from_slice(finish_frame(text).as_bytes());
        }
        self.bytes.push(b'\n');
        Ok(())
    }

    /// Makes room for `additional` more bytes at once (a frame whose size is known ahead).
    pub fn reserve(&mut self, additional: usize) {
        self.bytes.reserve(additional);
    }

    /// Bytes gathered so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether no frame is gathered.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl Outbox {
    /// Queues one frame, waiting while the queue is full (backpressure).
    pub async fn send<T: Serialize + ?Sized>(&self, frame: &T) -> Result<(), WriterClosed> {
        // Our frame types always serialize (string keys only); a failure here is a bug we
        // report as a closed writer rather than a panic in a protocol task.
        let bytes = encode_frame(frame).map_err(|_| WriterClosed)?;
        self.send_bytes(bytes).await
    }

    /// Queues every frame of `batch` (leaving it empty), waiting while the queue is full.
    pub async fn send_batch(&self, batch: &mut FrameBatch) -> Result<(), WriterClosed> {
        if batch.is_empty() {
            return Ok(());
        }
        self.send_bytes(std::mem::take(&mut batch.bytes)).await
    }

    async fn send_bytes(&self, bytes: Vec<u8>) -> Result<(), WriterClosed> {
        let cost = u32::try_from(bytes.len()).unwrap_or(u32::MAX).clamp(1, self.limit);
        // Fails only when the writer closed the budget (it stopped).
        let permit = self.budget.clone().acquire_many_owned(cost).await.map_err(|_| WriterClosed)?;
        self.tx.send((bytes, permit)).map_err(|_| WriterClosed)
    }

    /// Bytes of the budget not held by queued frames (for tests and diagnostics).
    pub fn available_bytes(&self) -> usize {
        self.budget.available_permits()
    }

    /// Whether the writer has stopped.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Starts the writer task on `sink` with a budget of `budget_bytes` queued bytes. The returned
/// handle resolves when every queued frame is written and all [`Outbox`]es are dropped (or
/// the sink failed), with the number of frames written.
pub fn spawn_writer<W>(sink: W, budget_bytes: usize) -> (Outbox, tokio::task::JoinHandle<std::io::Result<u64>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let limit = u32::try_from(budget_bytes).unwrap_or(u32::MAX).clamp(1, Semaphore::MAX_PERMITS as u32);
    let budget = Arc::new(Semaphore::new(limit as usize));
    let (tx, rx) = mpsc::unbounded_channel();
    (Outbox { tx, budget: budget.clone(), limit }, tokio::spawn(write_frames(sink, rx, budget)))
}

async fn write_frames<W: AsyncWrite + Unpin>(sink: W, rx: mpsc::UnboundedReceiver<Queued>, budget: Arc<Semaphore>) -> std::io::Result<u64> {
    let result = write_queued(sink, rx).await;
    // Senders waiting for room learn that the writer is gone.
    budget.close();
    result
}

async fn write_queued<W: AsyncWrite + Unpin>(sink: W, mut rx: mpsc::UnboundedReceiver<Queued>) -> std::io::Result<u64> {
    // Frames are gathered in a buffer and flushed when the queue runs dry: one write(2) (and,
    // for tokio's stdout, one blocking-pool hop) per burst instead of per frame.
    let mut sink = tokio::io::BufWriter::with_capacity(64 * 1024, sink);
    let mut written = 0;
    // A frame's permit is released once its bytes are in the sink's buffer (bounded, 64 KiB).
    while let Some((frame, _permit)) = rx.recv().await {
        let result = async {
            sink.write_all(&frame).await?;
            written += 1;
            // Write whatever else is already queued before paying for a flush.
            while let Ok((frame, _permit)) = rx.try_recv() {
                sink.write_all(&frame).await?;
                written += 1;
            }
            sink.flush().await
        }
        .await;
        if let Err(e) = result {
            // Dropping the receiver makes every pending and later send fail with WriterClosed.
            rx.close();
            return Err(e);
        }
    }
    sink.flush().await?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_compact_lines_with_separators_escaped() {
        let bytes = encode_frame(&json!({"type": "x", "text": "a\u{2028}b\u{2029}c é"})).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), "{\"type\":\"x\",\"text\":\"a\\u2028b\\u2029c é\"}\n");
    }

    /// A batch serializes in place (no intermediate string) and still writes exactly what
    /// `encode_frame` does: separators escaped, in typed text and in text that goes in raw.
    #[test]
    fn a_batch_holds_the_same_bytes_as_encoded_frames() {
        #[derive(Serialize)]
        struct Raw<'a> {
            raw: &'a serde_json::value::RawValue,
        }
        let raw = serde_json::value::RawValue::from_string("{\"text\":\"a\u{2028}b\"}".to_owned()).unwrap();
        let mut batch = FrameBatch::default();
        batch.push(&json!({"type": "x", "n": 1})).unwrap();
        batch.push(&Raw { raw: &raw }).unwrap();
        batch.push(&json!({"type": "z", "text": "c\u{2029}d"})).unwrap();
        let expected = [encode_frame(&json!({"type": "x", "n": 1})).unwrap(), encode_frame(&Raw { raw: &raw }).unwrap(), encode_frame(&json!({"type": "z", "text": "c\u{2029}d"})).unwrap()].concat();
        assert_eq!(String::from_utf8(batch.bytes).unwrap(), String::from_utf8(expected).unwrap());
        assert!(!String::from_utf8(encode_frame(&Raw { raw: &raw }).unwrap()).unwrap().contains('\u{2028}'));
    }

    #[tokio::test]
    async fn concurrent_senders_never_interleave_and_keep_per_sender_order() {
        let (client, mut server) = tokio::io::duplex(64);
        let (outbox, writer) = spawn_writer(client, 4096);
        let mut tasks = Vec::new();
        for sender in 0..4 {
            let outbox = outbox.clone();
            tasks.push(tokio::spawn(async move {
                for n in 0..200 {
                    outbox.send(&json!({"sender": sender, "n": n, "pad": "x".repeat(100)})).await.unwrap();
                }
            }));
        }
        drop(outbox);
        let mut out = Vec::new();
        let reader = tokio::spawn(async move {
            tokio::io::AsyncReadExt::read_to_end(&mut server, &mut out).await.unwrap();
            out
        });
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(writer.await.unwrap().unwrap(), 800);
        let text = String::from_utf8(reader.await.unwrap()).unwrap();
        let mut next = [0; 4];
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("every line is one whole frame");
            let s = v["sender"].as_u64().unwrap() as usize;
            assert_eq!(v["n"], next[s], "frames of one sender stay in order");
            next[s] += 1;
        }
        assert_eq!(next, [200; 4]);
    }

    /// Issue 15, defect 8: a host that stops reading holds the agent to its byte budget however
    /// large the frames; nothing is dropped once it reads again.
    #[tokio::test]
    async fn a_paused_reader_bounds_queued_bytes_and_loses_nothing() {
        const BUDGET: usize = 64 * 1024;
        let (client, mut server) = tokio::io::duplex(1024);
        let (outbox, writer) = spawn_writer(client, BUDGET);
        let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let producer = {
            let (outbox, sent) = (outbox.clone(), sent.clone());
            tokio::spawn(async move {
                for n in 0..200 {
                    // Like message_update: each frame carries the whole text so far.
                    let frame = json!({"n": n, "partial": "x".repeat(n * 1000)});
                    outbox.send(&frame).await.unwrap();
                    sent.fetch_add(encode_frame(&frame).unwrap().len(), std::sync::atomic::Ordering::SeqCst);
                }
            })
        };
        // Nobody reads: let the producer run as far as it can.
        for _ in 0..1000 {
            tokio::task::yield_now().await;
        }
        // At most the budget, the pipe, the writer's 64 KiB buffer and the frame being written
        // (~200 KB) are out of the producer's hands; all 200 frames would be ~20 MB.
        let queued = sent.load(std::sync::atomic::Ordering::SeqCst);
        assert!(queued <= BUDGET + 1024 + 64 * 1024 + 210_000, "{queued} bytes queued");
        assert!(!producer.is_finished(), "the producer waits for the reader");
        drop(outbox);
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut server, &mut out).await.unwrap();
            out
        });
        producer.await.unwrap();
        assert_eq!(writer.await.unwrap().unwrap(), 200);
        let text = String::from_utf8(reader.await.unwrap()).unwrap();
        let ns: Vec<u64> = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["n"].as_u64().unwrap()).collect();
        assert_eq!(ns, (0..200).collect::<Vec<_>>(), "every frame, in order");
    }

    #[tokio::test]
    async fn a_closed_sink_ends_the_writer_and_fails_later_sends() {
        let (client, server) = tokio::io::duplex(16);
        drop(server); // the host went away: writes fail with BrokenPipe
        let (outbox, writer) = spawn_writer(client, 64);
        let _ = outbox.send(&json!({"type": "ready"})).await;
        assert!(writer.await.unwrap().is_err());
        assert_eq!(outbox.send(&json!({"type": "late"})).await, Err(WriterClosed));
        assert!(outbox.is_closed());
    }
}
