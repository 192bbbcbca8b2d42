//! Bounded, LF-only line splitting for inbound frames (both dialects).
//!
//! - A line ends at LF (0x0A) only: U+2028 / U+2029 inside JSON strings are ordinary characters
//!   (Node's `readline` and Python's `splitlines` get this wrong).
//! - One CR before the LF is removed, so CRLF input works.
//! - A UTF-8 BOM is removed at the very start of the stream only.
//! - Lines that are empty after trimming ASCII whitespace are skipped (no frame, no error).
//! - A final line without LF is still returned at EOF.
//! - A line longer than the limit is consumed to its LF without being buffered whole and is
//!   reported as [`InboundLine::TooLong`], so memory stays bounded whatever the input.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One inbound line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboundLine {
    /// A complete line (without its LF and CR), possibly not valid UTF-8 or JSON.
    Line(Vec<u8>),
    /// A line over the limit; its bytes were discarded but for the head.
    TooLong {
        /// How many bytes the line had (up to, not including, its LF).
        bytes: u64,
        /// Its first bytes (at most [`TOO_LONG_HEAD_BYTES`]), enough to read a request id.
        head: Vec<u8>,
    },
}

/// How much of an oversized line is kept (so its error can carry the request id).
pub const TOO_LONG_HEAD_BYTES: usize = 4096;

/// Splits an async byte stream into lines of at most `max_line_bytes`.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max_line_bytes: usize,
    at_stream_start: bool,
    done: bool,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// A reader that accepts lines of up to `max_line_bytes` (excluding the LF).
    pub fn new(inner: R, max_line_bytes: usize) -> Self {
        Self { inner, max_line_bytes, at_stream_start: true, done: false }
    }

    /// The reader, to go on with it elsewhere (after dialect detection): nothing of a line
    /// is held here between lines, so what was not yet read is still in `inner`.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next non-blank line, or `None` at EOF.
    pub async fn next_line(&mut self) -> std::io::Result<Option<InboundLine>> {
        self.next_line_in(Vec::new()).await
    }

    /// [`LineReader::next_line`], its bytes read into `buf` (cleared first): a reader that
    /// hands each line's buffer back for the next one allocates once, not once per line.
    pub async fn next_line_in(&mut self, mut buf: Vec<u8>) -> std::io::Result<Option<InboundLine>> {
        loop {
            let Some(line) = self.read_raw(buf).await? else { return Ok(None) };
            match line {
                InboundLine::Line(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => buf = bytes,
                line => return Ok(Some(line)),
            }
        }
    }

    async fn read_raw(&mut self, mut line: Vec<u8>) -> std::io::Result<Option<InboundLine>> {
        if self.done {
            return Ok(None);
        }
        line.clear();
        let mut total: u64 = 0;
        let mut too_long = false;
        let mut ends_with_cr = false;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                self.done = true;
                if total == 0 {
                    return Ok(None);
                }
                break;
            }
            let (chunk, found_lf) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            total += chunk.len() as u64;
            if let Some(&last) = chunk.last() {
                ends_with_cr = last == b'\r';
            }
            if !too_long && line.len() + chunk.len() > self.max_line_bytes.saturating_add(1) {
                // +1 leaves room for a CR that belongs to a CRLF ending.
                too_long = true;
                line.truncate(TOO_LONG_HEAD_BYTES);
            }
            if too_long {
                // Only the head is kept, so memory stays bounded.
                let room = TOO_LONG_HEAD_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&chunk[..room.min(chunk.len())]);
            } else if line.capacity() < chunk.len() && line.is_empty() {
                // Most lines are whole in the buffer: one allocation of their size, no growth.
                line = chunk.to_vec();
            } else {
                line.extend_from_slice(chunk);
            }
            let used = chunk.len() + usize::from(found_lf);
            self.inner.consume(used);
            if found_lf {
                break;
            }
        }
        if ends_with_cr {
            // The CR is in `line` unless only a head of a longer line was kept.
            if line.len() as u64 == total {
                line.pop();
            }
            total -= 1;
        }
        let first_line = std::mem::replace(&mut self.at_stream_start, false);
        if too_long || line.len() > self.max_line_bytes {
            line.truncate(TOO_LONG_HEAD_BYTES);
            return Ok(Some(InboundLine::TooLong { bytes: total, head: line }));
        }
        if first_line && line.starts_with(&[0xEF, 0xBB, 0xBF]) {
            line.drain(..3);
        }
        Ok(Some(InboundLine::Line(line)))
    }
}

/// Reads `input` line by line on a task of its own and hands the lines over, in order, on a
/// channel. `LineReader` keeps a partial line across reads, so it must not be dropped mid-line
/// the way a future inside `select!` is; a channel's `recv` can be. Dropping the receiver ends
/// the task at its next line.
pub fn spawn_line_channel<R>(input: R, max_line_bytes: usize) -> (tokio::sync::mpsc::Receiver<InboundLine>, tokio::task::JoinHandle<()>)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel::<InboundLine>(64);
    let task = tokio::spawn(async move {
        let mut reader = LineReader::new(input, max_line_bytes);
        while let Ok(Some(line)) = reader.next_line().await {
            if tx.send(line).await.is_err() {
                break;
            }
        }
    });
    (rx, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<InboundLine> {
        // A tiny buffer makes lines span many reads.
        let mut r = LineReader::new(tokio::io::BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().await.unwrap() {
            out.push(l);
        }
        out
    }

    fn line(s: &str) -> InboundLine {
        InboundLine::Line(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn splits_on_lf_only_and_strips_one_cr() {
        let input = "{\"a\":\"x\u{2028}y\u{2029}z\"}\r\n{\"b\":1}\r\r\n";
        assert_eq!(lines(input.as_bytes(), 100).await, vec![line("{\"a\":\"x\u{2028}y\u{2029}z\"}"), line("{\"b\":1}\r")]);
    }

    #[tokio::test]
    async fn blank_lines_are_skipped_and_the_last_line_needs_no_lf() {
        assert_eq!(lines(b"\n  \t\n{}\n\r\n{\"last\":true}", 100).await, vec![line("{}"), line("{\"last\":true}")]);
        assert_eq!(lines(b"", 100).await, vec![]);
    }

    /// Reading into the previous line's buffer gives the same lines, and no new allocation
    /// while the lines fit in it (blank lines skipped, a line spanning reads, the BOM).
    #[tokio::test]
    async fn lines_read_into_a_reused_buffer_are_the_same_lines() {
        let input = b"\xEF\xBB\xBF{\"first\":\"a longer line\"}\r\n\n  \n{\"b\":1}\n{\"spans\":\"several reads\"}\nlast";
        // A tiny read buffer: lines span reads.
        let mut r = LineReader::new(tokio::io::BufReader::with_capacity(4, &input[..]), 100);
        let mut spare = Vec::with_capacity(64);
        let first = spare.as_ptr();
        let mut got = Vec::new();
        while let Some(InboundLine::Line(bytes)) = r.next_line_in(spare).await.unwrap() {
            assert_eq!(bytes.as_ptr(), first, "the one buffer holds every line");
            got.push(InboundLine::Line(bytes.clone()));
            spare = bytes;
        }
        assert_eq!(got, lines(input, 100).await);
    }

    #[tokio::test]
    async fn a_bom_is_stripped_at_stream_start_only() {
        let input = b"\xEF\xBB\xBF{}\n\xEF\xBB\xBF{}\n";
        assert_eq!(lines(input, 100).await, vec![line("{}"), InboundLine::Line(b"\xEF\xBB\xBF{}".to_vec())]);
    }

    #[tokio::test]
    async fn oversized_lines_are_reported_and_skipped_with_bounded_memory() {
        let mut input = b"{\"ok\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 10_000));
        input.extend_from_slice(b"\r\n{\"ok\":2}\n");
        input.extend(std::iter::repeat_n(b'y', 50));
        let got = lines(&input, 16).await;
        assert_eq!(got, vec![line("{\"ok\":1}"), InboundLine::TooLong { bytes: 10_000, head: vec![b'x'; TOO_LONG_HEAD_BYTES] }, line("{\"ok\":2}"), InboundLine::TooLong { bytes: 50, head: vec![b'y'; 50] }]);
        // Exactly at the limit is fine, with or without CR.
        assert_eq!(lines(b"0123456789abcdef\r\n0123456789abcdef", 16).await, vec![line("0123456789abcdef"), line("0123456789abcdef")]);
    }
}
