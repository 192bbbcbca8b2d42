//! The session itself: its header, its entries in file order with the index and the leaf,
//! created new, loaded (tolerantly) from a file, appended to, cloned.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file::{parse_reason, read_regular, SessionError, SessionWriteError, DEFAULT_MAX_SESSION_BYTES};
use super::{ContextItem, EntryKind, StoredEntry};
use crate::protocol::*;

/// A problem found while loading a session file that did not stop the load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadWarning {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub reason: String,
}

/// What an entry records.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A conversation message.
    Message(Box<AgentMessage>),
    /// The model from here on.
    ModelChange {
        /// Provider.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// The thinking level from here on.
    ThinkingLevel(ThinkingLevel),
    /// The session name.
    Name(String),
    /// A compaction summary.
    Compaction {
        /// The summary.
        summary: String,
        /// First entry kept after it.
        first_kept_entry_id: String,
        /// Tokens before compaction.
        tokens_before: u64,
        /// Files touched.
        details: Option<CompactionDetails>,
    },
    /// An agentwire setting with no entry type of its own (a `custom` entry), e.g. the
    /// approval policy ([`APPROVAL_ENTRY`]).
    Custom {
        /// `customType`.
        custom_type: String,
        /// `data`.
        data: serde_json::Value,
    },
}

/// The `customType` of the entry recording the approval policy (`data: {"policy": "never" |
/// "dangerous" | "always"}`): ACP's session mode, restored with the session.
pub const APPROVAL_ENTRY: &str = "agentwire.approval";

/// RFC 3339 time, milliseconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

fn new_entry_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// A session: header, entries, leaf, and (when persisted) its file.
#[derive(Debug)]
pub struct Session {
    pub(super) header: SessionHeader,
    /// Every entry in file order, each its JSON line plus the fields the tree needs (shared with
    /// the context and with clones; an entry never changes once stored).
    pub(super) entries: Vec<Arc<StoredEntry>>,
    pub(super) index: HashMap<Box<str>, usize>,
    pub(super) leaf: Option<String>,
    /// The messages the model sees on the current branch: kept up to date as entries are
    /// appended, rebuilt when the leaf moves or the branch is compacted.
    pub(super) context: Vec<ContextItem>,
    /// Where the session is written; `None` for in-memory sessions (`--no-session`).
    pub(super) path: Option<PathBuf>,
    pub(super) file: Option<std::fs::File>,
    /// How many entries at the end of `entries` are not on disk yet (a write failed); the next
    /// write writes them first, so the file's parent chain never has a gap.
    pub(super) unsaved: usize,
    /// Whether the header is on disk.
    pub(super) header_saved: bool,
}

impl Session {
    /// A new, empty session whose file (if `dir` is given) will be created in `dir` on the
    /// first entry.
    pub fn create(dir: Option<&Path>, cwd: &Path, parent: Option<String>) -> Self {
        let id = uuid::Uuid::now_v7().to_string();
        let timestamp = now_rfc3339();
        let path = dir.map(|d| d.join(format!("{}_{id}.jsonl", timestamp.replace([':', '.'], "-"))));
        let header = SessionHeader { parent_session: parent, ..SessionHeader::new(3, nonempty(&id), nonempty(&timestamp), cwd.display().to_string()) };
        Self { header, entries: Vec::new(), index: HashMap::new(), leaf: None, context: Vec::new(), path, file: None, unsaved: 0, header_saved: false }
    }

    /// Loads a session file (at most [`DEFAULT_MAX_SESSION_BYTES`]); see [`Session::load_limited`].
    pub fn load(path: &Path) -> Result<(Self, Vec<LoadWarning>), SessionError> {
        Self::load_limited(path, DEFAULT_MAX_SESSION_BYTES)
    }

    /// Loads a session file of at most `limit` bytes. Only regular files are opened, without
    /// blocking. A torn last line and corrupt lines in the middle are skipped and reported; a
    /// missing file or a missing header is an error.
    pub fn load_limited(path: &Path, limit: u64) -> Result<(Self, Vec<LoadWarning>), SessionError> {
        let bytes = read_regular(path, limit)?;
        Self::parse_owned(path, bytes)
    }

    /// Parses a session file's bytes (the fuzz target's entry point: it must never panic).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<(Self, Vec<LoadWarning>), SessionError> {
        Self::parse_owned(path, bytes.to_vec())
    }

    /// [`Session::parse`] keeping `bytes` as the text every loaded entry lives in (valid UTF-8
    /// is not copied; invalid sequences are replaced as before).
    fn parse_owned(path: &Path, bytes: Vec<u8>) -> Result<(Self, Vec<LoadWarning>), SessionError> {
        let text = Arc::new(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()));
        let ends_with_newline = text.ends_with('\n');
        let lines: Vec<&str> = text.lines().collect();
        let mut warnings = Vec::new();
        let Some(first) = lines.first() else { return Err(SessionError::Empty { path: path.to_path_buf() }) };
        let header: SessionHeader = serde_json::from_str(first).map_err(|e| SessionError::NotASession { path: path.to_path_buf(), reason: parse_reason(&e) })?;
        let mut session = Self {
            header,
            entries: Vec::new(),
            index: HashMap::new(),
            leaf: None,
            context: Vec::new(),
            path: Some(path.to_path_buf()),
            file: None,
            unsaved: 0,
            header_saved: true,
        };
        for (i, line) in lines.iter().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            match StoredEntry::parse(&text, line) {
                Ok(entry) => session.push_loaded(Arc::new(entry)),
                Err(e) => {
                    let torn = i + 1 == lines.len() && !ends_with_newline;
                    let e = parse_reason(&e);
                    let reason = if torn { format!("torn last line skipped ({e})") } else { format!("corrupt line skipped: {e}") };
                    warnings.push(LoadWarning { line: i + 1, reason });
                }
            }
        }
        session.rebuild_context();
        Ok((session, warnings))
    }

    /// Adds an entry as the new leaf (the context is the caller's to update).
    fn push_loaded(&mut self, entry: Arc<StoredEntry>) {
        self.index.insert(entry.id().into(), self.entries.len());
        self.leaf = Some(entry.id().to_owned());
        self.entries.push(entry);
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The file, when persisted.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The parent session's path.
    pub fn parent(&self) -> Option<&str> {
        self.header.parent_session.as_deref()
    }

    /// When the session was created.
    pub fn created(&self) -> &str {
        &self.header.timestamp
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> &[Arc<StoredEntry>] {
        &self.entries
    }

    /// The current leaf.
    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Appends an entry under the leaf and writes it (creating the file with its header on the
    /// first entry). Returns the entry id. When the write fails the entry is still part of the
    /// session in memory (the conversation goes on) and is written with the next entry that can
    /// be; the error names the file and the OS reason.
    pub fn append(&mut self, payload: Payload) -> Result<String, SessionWriteError> {
        let id = new_entry_id();
        let parent_id = self.leaf.clone();
        let timestamp = now_rfc3339();
        let entry = match payload {
            Payload::Message(message) => SessionEntry::Message(MessageEntry::new(nonempty(&id), parent_id, nonempty(&timestamp), *message)),
            Payload::ModelChange { provider, model_id } => SessionEntry::ModelChange(ModelChangeEntry::new(
                nonempty(&id),
                parent_id,
                nonempty(&timestamp),
                nonempty(&provider),
                nonempty(&model_id),
            )),
            Payload::ThinkingLevel(level) => {
                SessionEntry::ThinkingLevelChange(ThinkingLevelChangeEntry::new(nonempty(&id), parent_id, nonempty(&timestamp), level))
            }
            Payload::Name(name) => SessionEntry::SessionInfo(SessionInfoEntry::new(nonempty(&id), parent_id, nonempty(&timestamp), name)),
            Payload::Compaction { summary, first_kept_entry_id, tokens_before, details } => SessionEntry::Compaction(CompactionEntry {
                details,
                ..CompactionEntry::new(nonempty(&id), parent_id, nonempty(&timestamp), summary, nonempty(&first_kept_entry_id), tokens_before)
            }),
            Payload::Custom { custom_type, data } => {
                SessionEntry::Custom(CustomEntry::new(nonempty(&id), parent_id, nonempty(&timestamp), nonempty(&custom_type)).with_data(data))
            }
        };
        let entry = Arc::new(StoredEntry::from_typed(&entry));
        self.push_loaded(entry.clone());
        match entry.kind() {
            // Under the leaf: the model sees it after everything it saw.
            EntryKind::Message(_) => self.context.push(ContextItem::Entry(entry)),
            EntryKind::Compaction => self.rebuild_context(),
            EntryKind::ModelChange | EntryKind::ThinkingLevelChange | EntryKind::SessionInfo | EntryKind::Custom | EntryKind::Unknown => {}
        }
        self.unsaved += 1;
        self.flush_unsaved()?;
        Ok(id)
    }

    /// A copy of this session (same entries and ids) as a new session in `dir`, whose header
    /// names this one as its parent.
    pub fn clone_into(&self, dir: Option<&Path>) -> Self {
        let mut copy = Self::create(dir, Path::new(&self.header.cwd), self.path.as_ref().map(|p| p.display().to_string()));
        for e in &self.entries {
            copy.push_loaded(e.clone());
        }
        copy.leaf.clone_from(&self.leaf);
        copy.context.clone_from(&self.context);
        copy
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_messages::user;
    use crate::sessions::{message_text, Payload, Session, SessionError};

    #[test]
    fn entries_are_appended_and_reload_with_their_tree() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::create(Some(dir.path()), Path::new("/work"), None);
        assert!(s.path().is_some_and(|p| !p.exists()), "created lazily");
        let first = s.append(Payload::Message(Box::new(user("one")))).unwrap();
        s.append(Payload::Name("named".into())).unwrap();
        let second = s.append(Payload::Message(Box::new(user("two")))).unwrap();
        let path = s.path().unwrap().to_path_buf();
        let (loaded, warnings) = Session::load(&path).unwrap();
        assert!(warnings.is_empty());
        assert_eq!((loaded.id(), loaded.leaf(), loaded.name().as_deref()), (s.id(), Some(second.as_str()), Some("named")));
        assert_eq!(loaded.messages().len(), 2);
        let mut loaded = loaded;
        assert_eq!(loaded.branch_before(&second).as_deref(), Some("two"));
        assert_eq!(loaded.messages().len(), 1);
        assert_eq!(loaded.branch_before(&first).as_deref(), Some("one"));
        assert!(loaded.messages().is_empty());
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            crate::protocol::validate::validator().validate_def("SessionFileLine", &v).unwrap();
        }
    }

    #[test]
    fn torn_and_corrupt_lines_are_skipped_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::create(Some(dir.path()), Path::new("/w"), None);
        s.append(Payload::Message(Box::new(user("a")))).unwrap();
        s.append(Payload::Message(Box::new(user("b")))).unwrap();
        let path = s.path().unwrap().to_path_buf();
        let mut text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        text = format!("{}\n{{garbage\n{}\n{}", lines[0], lines[1], &lines[2][..lines[2].len() / 2]);
        std::fs::write(&path, text).unwrap();
        let (loaded, warnings) = Session::load(&path).unwrap();
        assert_eq!(loaded.messages().len(), 1);
        assert_eq!(warnings.iter().map(|w| w.line).collect::<Vec<_>>(), [2, 4]);
        assert!(warnings[1].reason.starts_with("torn last line"));
        let missing = dir.path().join("missing.jsonl");
        assert!(matches!(Session::load(&missing), Err(SessionError::Read { path, source }) if path == missing && source.kind() == std::io::ErrorKind::NotFound));
        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        assert!(matches!(Session::load(&empty), Err(SessionError::Empty { .. })));
        let log = dir.path().join("x.wire.jsonl");
        std::fs::write(&log, "{\"type\":\"metadata\"}\n").unwrap();
        let err = Session::load(&log).unwrap_err();
        assert!(matches!(err, SessionError::NotASession { .. }));
        // The path and the reason, never the content; the column is the end of the wrong
        // `type` value (string constants are compared as they are read).
        assert_eq!(err.to_string(), format!("{}: line 1 is not a session header (JSON of the wrong shape at column 18)", log.display()));
    }

    /// Entries of types this build does not know keep their place in the tree and are written
    /// back byte for byte; lines that are not entries are still corrupt, wherever they are.
    #[test]
    fn unknown_entry_types_are_kept_verbatim_and_bad_lines_in_the_middle_are_skipped() {
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
        let message = |id: &str, parent: &str, text: &str| {
            format!(r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#)
        };
        let label = r#"{"type":"label","id":"l","parentId":"a","timestamp":"2026-01-01T00:00:01.000Z","label":" x ","n":1.50}"#;
        let lines = [
            header.to_owned(),
            message("a", "null", "one"),
            label.to_owned(),
            // A known type of the wrong shape (a field the schema does not have).
            r#"{"type":"message","id":"bad","parentId":"l","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"x","timestamp":1,"extra":1}}"#.to_owned(),
            // An unknown type without an id cannot be in the tree.
            r#"{"type":"label","parentId":"a"}"#.to_owned(),
            "{not json".to_owned(),
            r#"{"type":"","id":"e"}"#.to_owned(),
            message("b", r#""l""#, "two"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pi.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let (session, warnings) = Session::load(&path).unwrap();
        assert_eq!(warnings.iter().map(|w| w.line).collect::<Vec<_>>(), [4, 5, 6, 7]);
        assert!(warnings.iter().all(|w| w.reason.starts_with("corrupt line skipped: ")), "{warnings:?}");
        assert_eq!(warnings[0].reason, "corrupt line skipped: JSON of the wrong shape at column 0");
        assert_eq!(session.messages().iter().map(message_text).collect::<Vec<_>>(), ["one", "two"], "the unknown entry links the branch");
        let tree = session.tree();
        assert_eq!(tree.entries.iter().map(|e| (e.entry_type.as_str(), e.label.as_str())).collect::<Vec<_>>(), [("message", "user: one"), ("label", "label"), ("message", "user: two")]);
        assert_eq!(tree.entries[1].timestamp, "2026-01-01T00:00:01.000Z");
        let mut copy = session.clone_into(Some(dir.path()));
        copy.write_all_now().unwrap();
        let written = std::fs::read_to_string(copy.path().unwrap()).unwrap();
        assert_eq!(written.lines().skip(1).collect::<Vec<_>>(), [lines[1].as_str(), label, lines[7].as_str()], "every entry written back as it was read");
    }
}
