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
//!
//! Once omp protocol v2 is negotiated ([`Outbox::split_large_frames`]), every frame longer than
//! the physical limit is replaced by its `rpc_chunk` frames as it is queued (see
//! [`super::chunk`]); the chunks of one frame are one queue item, so they go out back to back.

use std::sync::{Arc, OnceLock};

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
    /// Set once protocol v2 is negotiated: splits over-long frames into `rpc_chunk` frames.
    chunks: Arc<OnceLock<super::chunk::Splitter>>,
}

/// Serializes a frame as one compact line with its LF, escaping U+2028 and U+2029.
pub fn encode_frame<T: Serialize + ?Sized>(frame: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = Vec::with_capacity(256);
    encode_frame_into(&mut bytes, frame)?;
    Ok(bytes)
}

/// Appends one frame to `buf` as [`encode_frame`] encodes it, in one pass straight into `buf`
/// ([`super::json`]: the separators are escaped while the strings are written, no intermediate
/// `String`). On error `buf` is left as it was.
pub fn encode_frame_into<T: Serialize + ?Sized>(buf: &mut Vec<u8>, frame: &T) -> Result<(), serde_json::Error> {
    let start = buf.len();
    if let Err(e) = super::json::write_json(buf, frame) {
        buf.truncate(start);
        return Err(e);
    }
    super::raw_id::restore_in(buf, start);
    buf.push(b'\n');
    Ok(())
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
        // Same reasoning as in `Outbox::send`: a serialization failure is a bug, not a panic.
        encode_frame_into(&mut self.bytes, frame).map_err(|_| WriterClosed)
    }

    /// Appends one frame whose compact JSON text `write` appends itself (a frame of a fixed
    /// shape written from its parts, with [`super::json`]'s `write_str` / `write_json` for
    /// what varies): ids restored and LF added as [`FrameBatch::push`] does. The writer must
    /// produce exactly what `push` would for the frame's typed form; its tests say so. On
    /// error the batch is left as it was.
    pub fn push_with(&mut self, write: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>) -> Result<(), WriterClosed> {
        let start = self.bytes.len();
        if write(&mut self.bytes).is_err() {
            self.bytes.truncate(start);
            return Err(WriterClosed);
        }
        super::raw_id::restore_in(&mut self.bytes, start);
        self.bytes.push(b'\n');
        Ok(())
    }

    /// Appends every frame of `other`, in order.
    pub fn append(&mut self, other: FrameBatch) {
        self.bytes.extend_from_slice(&other.bytes);
    }

    /// The frames as one frame: a JSON array of them (a JSON-RPC 2.0 batch's answer), on one
    /// line. Empty when there is no frame. A frame's text holds no raw LF (compact JSON), so
    /// each LF is exactly one frame's end.
    pub fn into_array(self) -> FrameBatch {
        let Some(frames) = self.bytes.strip_suffix(b"\n") else { return FrameBatch::default() };
        let mut bytes = Vec::with_capacity(frames.len() + 3);
        bytes.push(b'[');
        bytes.extend(frames.iter().map(|&b| if b == b'\n' { b',' } else { b }));
        bytes.extend_from_slice(b"]\n");
        FrameBatch { bytes }
    }

    /// Makes room for `additional` more bytes at once (a frame whose size is known ahead).
    pub fn reserve(&mut self, additional: usize) {
        self.bytes.reserve(additional);
    }

    /// The encoded frames, each ending in LF.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
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
        // The next batch starts with room for one like this (a pipelined burst fills batch
        // after batch: growing each from nothing copied every byte once more).
        // At most 128 KiB is kept: a batch that held one huge answer does not pin its size.
        let room = batch.bytes.len().min(128 * 1024);
        self.send_bytes(std::mem::replace(&mut batch.bytes, Vec::with_capacity(room))).await
    }

    /// From now on, frames longer than `max_frame_bytes` (without LF) go out as `rpc_chunk`
    /// frames (omp protocol v2). There is no way back, as in omp.
    pub fn split_large_frames(&self, max_frame_bytes: usize) {
        let _ = self.chunks.set(super::chunk::Splitter::new(max_frame_bytes));
    }

    /// Whether [`Outbox::split_large_frames`] was called (protocol v2 is in use).
    pub fn splits_large_frames(&self) -> bool {
        self.chunks.get().is_some()
    }

    async fn send_bytes(&self, bytes: Vec<u8>) -> Result<(), WriterClosed> {
        // Protocol 1 pays this one branch per queued item, nothing more.
        let bytes = match self.chunks.get() {
            Some(splitter) => splitter.split_lines(bytes),
            None => bytes,
        };
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
    let (outbox, rx, budget) = outbox(budget_bytes);
    (outbox, tokio::spawn(write_frames(sink, rx, budget)))
}

/// [`spawn_writer`] for a blocking sink (the process's stdout), written from a thread of the
/// blocking pool that owns it for the life of the writer. tokio's own `Stdout` copies every
/// write into a buffer of its own and hands it to the blocking pool, one hop per write; here
/// the queued frames go from the queue to `write(2)` with one copy into a 64 KiB buffer, and
/// the thread sleeps in the queue, not in the pool. Must be called inside a tokio runtime.
pub fn spawn_blocking_writer<W>(sink: W, budget_bytes: usize) -> (Outbox, tokio::task::JoinHandle<std::io::Result<u64>>)
where
    W: std::io::Write + Send + 'static,
{
    let (outbox, rx, budget) = outbox(budget_bytes);
    let writer = tokio::task::spawn_blocking(move || {
        let result = write_queued_blocking(sink, rx);
        budget.close();
        result
    });
    (outbox, writer)
}

/// The writer of a piped stdout (`fd`, a duplicate of it; see [`super::stdio`]): queued frames
/// are gathered up to 64 KiB and written on the runtime's thread with `RWF_NOWAIT` while the
/// pipe takes them; the first time it is full, what is left and every later frame are written
/// from a thread of the blocking pool with plain blocking `write(2)`s
/// ([`spawn_blocking_writer`]'s loop), so a burst is encoded on one core and written on the
/// other. A session whose host keeps up (any interactive one) starts no thread. Must be called
/// inside a tokio runtime.
pub fn spawn_piped_writer(fd: std::os::fd::OwnedFd, budget_bytes: usize) -> (Outbox, tokio::task::JoinHandle<std::io::Result<u64>>) {
    let (outbox, rx, budget) = outbox(budget_bytes);
    let writer = tokio::spawn(async move {
        let result = write_piped(fd, rx).await;
        budget.close();
        result
    });
    (outbox, writer)
}

async fn write_piped(fd: std::os::fd::OwnedFd, mut rx: mpsc::UnboundedReceiver<Queued>) -> std::io::Result<u64> {
    use std::os::fd::AsFd;
    const GATHER: usize = 64 * 1024;
    let mut buf = Vec::with_capacity(GATHER);
    let mut written = 0;
    while let Some((frame, permit)) = rx.recv().await {
        // As the other writers: what is queued goes in one write; a frame's share of the budget
        // is released once its bytes are in the (bounded) buffer. A frame larger than the buffer
        // is written from its own bytes: copied, a `get_messages` of a big session would be held
        // twice (30 MB more at the peak of a 50,000-message resume).
        if frame.len() >= GATHER {
            buf = frame;
        } else {
            buf.extend_from_slice(&frame);
        }
        written += 1;
        drop(permit);
        while buf.len() < GATHER {
            let Ok((frame, _permit)) = rx.try_recv() else { break };
            buf.extend_from_slice(&frame);
            written += 1;
        }
        let mut done = 0;
        while done < buf.len() {
            match super::stdio::write_nowait(fd.as_fd(), &buf[done..]) {
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || super::stdio::nowait_unsupported(&e) => {
                    buf.drain(..done);
                    let sink = std::fs::File::from(fd);
                    let blocking = tokio::task::spawn_blocking(move || {
                        let mut sink = sink;
                        if let Err(e) = std::io::Write::write_all(&mut sink, &buf) {
                            rx.close();
                            return Err(e);
                        }
                        write_queued_blocking(sink, rx)
                    });
                    return match blocking.await {
                        Ok(result) => result.map(|later| written + later),
                        Err(e) => Err(std::io::Error::other(e)),
                    };
                }
                Err(e) => {
                    rx.close();
                    return Err(e);
                }
            }
        }
        if buf.capacity() > GATHER {
            // A big frame's own buffer: given back, not kept for the next small ones.
            buf = Vec::with_capacity(GATHER);
        } else {
            buf.clear();
        }
    }
    Ok(written)
}

/// A stdout the blocking writer can own: a duplicate of file descriptor 1 (std's `Stdout`
/// flushes at every LF, a `write(2)` per frame).
pub fn stdout_sink() -> std::io::Result<std::fs::File> {
    use std::os::fd::AsFd;
    Ok(std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?))
}

fn outbox(budget_bytes: usize) -> (Outbox, mpsc::UnboundedReceiver<Queued>, Arc<Semaphore>) {
    let limit = u32::try_from(budget_bytes).unwrap_or(u32::MAX).clamp(1, Semaphore::MAX_PERMITS as u32);
    let budget = Arc::new(Semaphore::new(limit as usize));
    let (tx, rx) = mpsc::unbounded_channel();
    (Outbox { tx, budget: budget.clone(), limit, chunks: Arc::default() }, rx, budget)
}

fn write_queued_blocking<W: std::io::Write>(sink: W, mut rx: mpsc::UnboundedReceiver<Queued>) -> std::io::Result<u64> {
    use std::io::Write;
    // As in `write_queued`: gather what is queued, flush when the queue runs dry.
    let mut sink = std::io::BufWriter::with_capacity(64 * 1024, sink);
    let mut written = 0;
    while let Some((frame, _permit)) = rx.blocking_recv() {
        let mut result = sink.write_all(&frame);
        written += 1;
        while let (Ok(()), Ok((frame, _permit))) = (&result, rx.try_recv()) {
            result = sink.write_all(&frame);
            written += 1;
        }
        if let Err(e) = result.and_then(|()| sink.flush()) {
            rx.close();
            return Err(e);
        }
    }
    sink.flush()?;
    Ok(written)
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
        // In keys, in pre-serialized data (a response's `data`), next to other multi-byte
        // characters (U+2027 and U+202A share the lead bytes) and appended to a batch buffer.
        let data = serde_json::value::to_raw_value(&json!({"k\u{2028}": "\u{2027}\u{2029}\u{202A}"})).unwrap();
        let mut buf = b"prev\n".to_vec();
        #[derive(Serialize)]
        struct Frame {
            data: Box<serde_json::value::RawValue>,
        }
        encode_frame_into(&mut buf, &Frame { data }).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "prev\n{\"data\":{\"k\\u2028\":\"\u{2027}\\u2029\u{202A}\"}}\n");
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

    /// A host that stops reading must not make the agent grow without bound: it holds the agent
    /// to its byte budget however large the frames; nothing is dropped once it reads again.
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

    /// The writer of a piped stdout keeps every frame whole and in order across its move to a
    /// thread (a reader that starts late makes the pipe full, and a write short), and stops with
    /// the error when the reader goes away.
    #[tokio::test(flavor = "current_thread")]
    async fn the_piped_writer_keeps_frames_whole_when_it_moves_to_a_thread() {
        use std::io::Read;
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: `pipe2` writes two descriptors into `fds`, which we then own.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let (mut read_end, write_end) = unsafe { (std::fs::File::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
        let (outbox, writer) = spawn_piped_writer(write_end, 1 << 20);
        // 600 frames of ~1.7 KB: 1 MB through a 64 KiB pipe nobody reads yet.
        let producer = tokio::spawn(async move {
            for n in 0..600 {
                outbox.send(&json!({"n": n, "pad": "y".repeat(1700)})).await.unwrap();
            }
        });
        let reader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let mut out = Vec::new();
            read_end.read_to_end(&mut out).unwrap();
            out
        });
        producer.await.unwrap();
        assert_eq!(writer.await.unwrap().unwrap(), 600);
        let text = String::from_utf8(reader.join().unwrap()).unwrap();
        let ns: Vec<u64> = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["n"].as_u64().unwrap()).collect();
        assert_eq!(ns, (0..600).collect::<Vec<_>>(), "every frame, whole and in order");

        // The reader gone: the writer stops with the error and later sends fail.
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let (read_end, write_end) = unsafe { (std::fs::File::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
        drop(read_end);
        let (outbox, writer) = spawn_piped_writer(write_end, 1 << 20);
        let _ = outbox.send(&json!({"n": 0})).await;
        assert_eq!(writer.await.unwrap().unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
        assert!(outbox.send(&json!({"n": 1})).await.is_err());
    }

    /// The blocking writer (stdout's) keeps every frame whole and in order, and stops when its
    /// sink fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_blocking_writer_writes_whole_frames_in_order_and_stops_on_failure() {
        #[derive(Clone, Default)]
        struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Shared::default();
        let (outbox, writer) = spawn_blocking_writer(sink.clone(), 4096);
        for n in 0..500 {
            outbox.send(&json!({"n": n, "pad": "x".repeat(n % 300)})).await.unwrap();
        }
        drop(outbox);
        assert_eq!(writer.await.unwrap().unwrap(), 500);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let ns: Vec<u64> = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["n"].as_u64().unwrap()).collect();
        assert_eq!(ns, (0..500).collect::<Vec<_>>());

        struct Broken;
        impl std::io::Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
        }
        let (outbox, writer) = spawn_blocking_writer(Broken, 64);
        let _ = outbox.send(&json!({"type": "ready"})).await;
        assert!(writer.await.unwrap().is_err());
        assert_eq!(outbox.send(&json!({"type": "late"})).await, Err(WriterClosed));
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
