//! The single writer that owns stdout (or any sink) for outbound frames.
//!
//! Every task that wants to emit a frame goes through an [`Outbox`]: frames are serialized by
//! the sender (compact JSON, one object per line, U+2028/U+2029 escaped so hosts that split on
//! them stay safe), then queued on a bounded channel. One task writes them whole, in queue
//! order, and flushes whenever the queue runs dry, so frames never interleave and a slow reader
//! slows the senders down instead of growing a buffer. When the sink fails (EPIPE: the host went
//! away) the writer stops, and every later send reports [`WriterClosed`].

use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The writer has stopped (the sink failed or was closed); no more frames can be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the output stream is closed")]
pub struct WriterClosed;

/// A handle for queueing frames; cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
}

/// Serializes a frame as one compact line with its LF, escaping U+2028 and U+2029.
pub fn encode_frame<T: Serialize + ?Sized>(frame: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut text = serde_json::to_string(frame)?;
    // These two characters can only occur inside JSON strings, where `\u2028` means the same.
    if text.contains(['\u{2028}', '\u{2029}']) {
        text = text.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029");
    }
    let mut bytes = text.into_bytes();
    bytes.push(b'\n');
    Ok(bytes)
}

impl Outbox {
    /// Queues one frame, waiting while the queue is full (backpressure).
    pub async fn send<T: Serialize + ?Sized>(&self, frame: &T) -> Result<(), WriterClosed> {
        // Our frame types always serialize (string keys only); a failure here is a bug we
        // report as a closed writer rather than a panic in a protocol task.
        let bytes = encode_frame(frame).map_err(|_| WriterClosed)?;
        self.tx.send(bytes).await.map_err(|_| WriterClosed)
    }

    /// Whether the writer has stopped.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Starts the writer task on `sink` with room for `capacity` queued frames. The returned
/// handle resolves when every queued frame is written and all [`Outbox`]es are dropped (or
/// the sink failed), with the number of frames written.
pub fn spawn_writer<W>(sink: W, capacity: usize) -> (Outbox, tokio::task::JoinHandle<std::io::Result<u64>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (Outbox { tx }, tokio::spawn(write_frames(sink, rx)))
}

async fn write_frames<W: AsyncWrite + Unpin>(sink: W, mut rx: mpsc::Receiver<Vec<u8>>) -> std::io::Result<u64> {
    // Frames are gathered in a buffer and flushed when the queue runs dry: one write(2) (and,
    // for tokio's stdout, one blocking-pool hop) per burst instead of per frame.
    let mut sink = tokio::io::BufWriter::with_capacity(64 * 1024, sink);
    let mut written = 0;
    while let Some(frame) = rx.recv().await {
        let result = async {
            sink.write_all(&frame).await?;
            written += 1;
            // Write whatever else is already queued before paying for a flush.
            while let Ok(frame) = rx.try_recv() {
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

    #[tokio::test]
    async fn concurrent_senders_never_interleave_and_keep_per_sender_order() {
        let (client, mut server) = tokio::io::duplex(64);
        let (outbox, writer) = spawn_writer(client, 4);
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

    #[tokio::test]
    async fn a_closed_sink_ends_the_writer_and_fails_later_sends() {
        let (client, server) = tokio::io::duplex(16);
        drop(server); // the host went away: writes fail with BrokenPipe
        let (outbox, writer) = spawn_writer(client, 2);
        let _ = outbox.send(&json!({"type": "ready"})).await;
        assert!(writer.await.unwrap().is_err());
        assert_eq!(outbox.send(&json!({"type": "late"})).await, Err(WriterClosed));
        assert!(outbox.is_closed());
    }
}
