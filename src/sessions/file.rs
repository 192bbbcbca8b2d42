//! The session file on disk: opening a file to read without blocking and within the size
//! limit, appending entries (one write each, the header first), repairing a torn last line
//! before the next append, and the errors of both.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::Session;
use crate::protocol::now_ms;

/// Why a session file could not be loaded. The messages start with the file's path and never
/// quote the file's content (a file that is not a session may hold anything, secrets included).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The file cannot be opened or read (missing, unreadable).
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// The path names a directory, a FIFO, a device or a socket: only regular files are read
    /// (a FIFO would block the agent, a device such as `/dev/zero` would never end).
    #[error("{}: not a regular file ({kind})", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file is larger than the size limit (`--max-session-bytes`).
    #[error("{}: {size} bytes is more than the {limit}-byte session size limit", path.display())]
    TooLarge { path: PathBuf, size: u64, limit: u64 },
    /// The file has no lines at all.
    #[error("{}: empty file, not a session", path.display())]
    Empty { path: PathBuf },
    /// Line 1 is not a `session` header: the file is something else.
    #[error("{}: line 1 is not a session header ({reason})", path.display())]
    NotASession { path: PathBuf, reason: String },
}

/// A session entry could not be written. The entry stays in memory and is written, in order and
/// before anything newer, by the next write that succeeds.
#[derive(Debug, thiserror::Error)]
#[error("could not save the session to {}: {source}", path.display())]
pub struct SessionWriteError {
    /// The session file (or the directory that could not be created).
    pub path: PathBuf,
    /// The operating system's reason (ENOSPC, EFBIG, ENOTDIR, EACCES, …).
    pub source: std::io::Error,
}

/// The default size limit for reading a session file: generous (a long session with tool output
/// is a few MiB), but a bound, so a wrong path cannot exhaust memory.
pub const DEFAULT_MAX_SESSION_BYTES: u64 = 256 * 1024 * 1024;

/// Why a JSON text failed to parse, without quoting any of it (serde_json's data errors quote
/// the offending value).
pub(super) fn parse_reason(e: &serde_json::Error) -> String {
    let what = match e.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "not JSON",
        serde_json::error::Category::Data => "JSON of the wrong shape",
        serde_json::error::Category::Eof => "JSON cut short",
    };
    format!("{what} at column {}", e.column())
}

/// The kind of a non-regular file, for error messages.
fn file_kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Opens `path` for reading without ever blocking (a FIFO with no writer would block `open`)
/// and checks that it is a regular file no larger than `limit`; returns the file and its size.
pub fn open_regular(path: &Path, limit: u64) -> Result<(std::fs::File, u64), SessionError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|source| SessionError::Read { path: path.to_path_buf(), source })?;
    let meta = file.metadata().map_err(|source| SessionError::Read { path: path.to_path_buf(), source })?;
    if !meta.file_type().is_file() {
        return Err(SessionError::NotRegular { path: path.to_path_buf(), kind: file_kind(meta.file_type()) });
    }
    if meta.len() > limit {
        return Err(SessionError::TooLarge { path: path.to_path_buf(), size: meta.len(), limit });
    }
    Ok((file, meta.len()))
}

/// Reads a whole regular file, at most `limit` bytes (a file growing while read is cut at the
/// limit and reported as too large).
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, SessionError> {
    use std::io::Read;
    let (file, size) = open_regular(path, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|source| SessionError::Read { path: path.to_path_buf(), source })?;
    if bytes.len() as u64 > limit {
        return Err(SessionError::TooLarge { path: path.to_path_buf(), size: bytes.len() as u64, limit });
    }
    Ok(bytes)
}

/// Callers that report errors as strings (the server's start-up path uses `?` into `String`)
/// keep working unchanged.
impl From<SessionError> for String {
    fn from(e: SessionError) -> String {
        e.to_string()
    }
}

impl Session {
    /// Whether every entry is on disk (always true in memory-only sessions).
    pub fn is_saved(&self) -> bool {
        self.path.is_none() || self.unsaved == 0
    }

    /// Whether the session's file exists (`false` before the first entry and in memory).
    pub fn file_exists(&self) -> bool {
        self.path.as_deref().is_some_and(|p| self.header_saved && p.is_file())
    }

    /// Writes the entries not on disk yet, oldest first.
    pub(super) fn flush_unsaved(&mut self) -> Result<(), SessionWriteError> {
        if self.path.is_none() {
            self.unsaved = 0;
            return Ok(());
        }
        while self.unsaved > 0 {
            let entry = self.entries[self.entries.len() - self.unsaved].clone();
            self.write_line(entry.line())?;
            self.unsaved -= 1;
        }
        Ok(())
    }

    /// Opens the file for appending: creates its directory and the file with its header, and
    /// repairs a torn last line left by an earlier failed write or a crash.
    fn open_for_append(&mut self) -> Result<(), SessionWriteError> {
        let Some(path) = self.path.clone() else { return Ok(()) };
        let fail = |path: &Path, source| SessionWriteError { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).read(true).append(true).open(&path).map_err(|e| fail(&path, e))?;
        repair_torn_tail(&path, &mut file).map_err(|e| fail(&path, e))?;
        if !self.header_saved || file.metadata().map_err(|e| fail(&path, e))?.len() == 0 {
            let header = serde_json::to_string(&self.header).unwrap_or_default();
            if let Err(e) = file.write_all(format!("{header}\n").as_bytes()) {
                // Whatever part of the header got out is torn: the next open repairs it.
                return Err(fail(&path, e));
            }
            self.header_saved = true;
        }
        self.file = Some(file);
        Ok(())
    }

    fn write_line(&mut self, line: &str) -> Result<(), SessionWriteError> {
        let Some(path) = self.path.clone() else { return Ok(()) };
        if self.file.is_none() {
            self.open_for_append()?;
        }
        let file = self.file.as_mut().expect("opened above");
        // One write per entry: a crash tears at most this line.
        if let Err(source) = file.write_all(format!("{line}\n").as_bytes()).and_then(|()| file.flush()) {
            // Part of the line may be on disk: reopen (and repair) before the next write.
            self.file = None;
            return Err(SessionWriteError { path, source });
        }
        Ok(())
    }

    /// Writes the header and every entry to the file now (for clones).
    pub fn write_all_now(&mut self) -> Result<(), SessionWriteError> {
        self.unsaved = self.entries.len();
        // An empty clone still gets its header so it can be switched to.
        self.open_for_append()?;
        self.flush_unsaved()
    }
}

/// Truncates a torn last line (no final LF) and keeps the fragment beside the file in
/// `<file>.torn-<millis>`, saying so on stderr: appending after a fragment would merge it with
/// the next entry and break the parent chain.
fn repair_torn_tail(path: &Path, file: &mut std::fs::File) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Find the last LF, reading backwards in blocks.
    let mut end = len;
    let mut keep = 0;
    let mut block = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block[..n])?;
        if let Some(i) = memchr::memrchr(b'\n', &block[..n]) {
            keep = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    let mut fragment = Vec::new();
    file.seek(SeekFrom::Start(keep))?;
    file.take(len - keep).read_to_end(&mut fragment)?;
    let side = PathBuf::from(format!("{}.torn-{}", path.display(), now_ms()));
    std::fs::write(&side, &fragment)?;
    file.set_len(keep)?;
    tracing::warn!("{}: a torn last line ({} bytes) was cut off before appending; it is kept in {}", path.display(), fragment.len(), side.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::Path;

    use super::super::test_messages::user;
    use crate::sessions::{message_text, Payload, Session};

    #[test]
    fn a_torn_tail_is_cut_off_and_kept_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::create(Some(dir.path()), Path::new("/w"), None);
        s.append(Payload::Message(Box::new(user("a")))).unwrap();
        let path = s.path().unwrap().to_path_buf();
        drop(s);
        let (mut s, _) = Session::load(&path).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"type\":\"mess").unwrap();
        s.append(Payload::Message(Box::new(user("b")))).unwrap();
        let (loaded, warnings) = Session::load(&path).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(loaded.messages().iter().map(message_text).collect::<Vec<_>>(), ["a", "b"]);
        let side: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().contains(".torn-")).collect();
        assert_eq!(std::fs::read(side[0].path()).unwrap(), b"{\"type\":\"mess");
    }
}
