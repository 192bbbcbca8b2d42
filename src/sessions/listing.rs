//! Sessions as found on disk: the directory of a working directory's sessions, which files in
//! it are sessions, and their listings for `list_sessions`.

use std::path::{Path, PathBuf};

use super::{message_text, EntryKind, Role, Session, DEFAULT_MAX_SESSION_BYTES};
use crate::protocol::*;

/// The directory holding the sessions of `cwd` under `root` (pi's naming).
pub fn cwd_dir(root: &Path, cwd: &Path) -> PathBuf {
    let encoded = cwd.display().to_string().trim_start_matches('/').replace(['/', '\\', ':'], "-");
    root.join(format!("--{encoded}--"))
}

impl Session {
    /// The last name set in the file, on any branch (for listings).
    fn name_anywhere(&self) -> Option<String> {
        let Some(SessionEntry::SessionInfo(i)) = self.entries.iter().rev().find(|e| e.kind() == EntryKind::SessionInfo).and_then(|e| e.typed()) else { return None };
        Some(i.name)
    }
}

/// A session file found on disk, for `list_sessions` (at most [`DEFAULT_MAX_SESSION_BYTES`]).
pub fn listing(path: &Path) -> Option<SessionListing> {
    listing_limited(path, DEFAULT_MAX_SESSION_BYTES)
}

/// A session file of at most `limit` bytes found on disk, for `list_sessions`; `None` when it
/// cannot be read as a session (too large included).
pub fn listing_limited(path: &Path, limit: u64) -> Option<SessionListing> {
    let (session, _) = Session::load_limited(path, limit).ok()?;
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok().map(|t| humantime::format_rfc3339_millis(t).to_string()).unwrap_or_default();
    let messages = session.entries.iter().filter(|e| matches!(e.kind(), EntryKind::Message(_))).count();
    let first = session.entries.iter().find(|e| e.kind() == EntryKind::Message(Role::User)).and_then(|e| e.message()).map(|m| message_text(&m));
    let name = session.name_anywhere();
    Some(SessionListing {
        path: nonempty(&path.canonicalize().unwrap_or_else(|_| path.to_path_buf()).display().to_string()),
        id: nonempty(session.id()),
        name,
        cwd: session.header.cwd.clone(),
        created: session.created().to_owned(),
        modified,
        message_count: messages as u64,
        first_message: first,
    })
}

/// The session files directly in each of `dirs` of at most `limit` bytes, as listed
/// ([`listing_limited`]), in no particular order. Reads every file whole: call it off the
/// runtime's thread.
pub fn listings_in(dirs: &[PathBuf], limit: u64) -> Vec<SessionListing> {
    dirs.iter().flat_map(|d| files_in(d)).filter_map(|p| listing_limited(&p, limit)).collect()
}

/// Whether a file name is a session file's: `<name>.jsonl` where `<name>` is not empty, does not
/// start with a dot and has no dot in it. Session files are named `<time>_<id>.jsonl` with the
/// time's dots replaced, so they never have one; files kept beside a session are named
/// `<session>.<kind>.jsonl` (the wire log, `<session>.wire.jsonl`) and must never be taken for
/// one (`--continue` would pick the newest of them and fail on its first line). Other names, such
/// as HTML exports or hidden files, are not sessions either.
pub fn is_session_file_name(name: &str) -> bool {
    name.strip_suffix(".jsonl").is_some_and(|stem| !stem.is_empty() && !stem.contains('.'))
}

/// Session files directly in `dir` (see [`is_session_file_name`]), sorted by name.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        // `is_file` follows symlinks: a linked session is still a session; a directory is not.
        .filter(|p| p.is_file() && p.file_name().and_then(|n| n.to_str()).is_some_and(is_session_file_name))
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_messages::user;
    use super::{files_in, is_session_file_name};
    use crate::sessions::{Payload, Session};

    #[test]
    fn only_session_files_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::create(Some(dir.path()), Path::new("/work"), None);
        s.append(Payload::Message(Box::new(user("hi")))).unwrap();
        let session = s.path().unwrap().to_path_buf();
        let name = session.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(is_session_file_name(&name), "the names agentwire gives sessions are session names: {name}");
        for other in [session.with_extension("wire.jsonl"), session.with_extension("html"), dir.path().join(".model-script.jsonl"), dir.path().join("notes.txt")] {
            std::fs::write(&other, "{}\n").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.jsonl")).unwrap();
        assert_eq!(files_in(dir.path()), [session]);
        assert!(is_session_file_name("2025-01-01T00-00-00-000Z_0193a3c8-uuid.jsonl"), "pi's names too");
        assert!(!is_session_file_name(".jsonl") && !is_session_file_name("x.wire.jsonl") && !is_session_file_name("x.jsonl.bak"));
    }
}
