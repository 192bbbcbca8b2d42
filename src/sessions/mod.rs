//! Sessions on disk: one JSONL file per session (`schema/session-file.schema.json`), a
//! `session` header then entries linked by `parentId` into a tree; the current position is the
//! leaf. Entries are appended whole, one `write` each, before the frame that reports them, so a
//! `kill -9` loses at most the line being written; loading skips a torn last line (and reports
//! a corrupt line in the middle with its number) instead of failing.
//!
//! Files live in `<sessions dir>/--<cwd with / replaced by ->--/<time>_<id>.jsonl` (pi's
//! layout) unless `--session-dir` names the directory; a file is created on the first entry.

pub mod context;
pub mod entry;
pub mod html;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use context::ContextItem;
pub use crate::core::messages::{MessagesJson, MessagesPageJson};
pub use entry::{EntryKind, Role, StoredEntry};

use crate::protocol::*;

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
fn parse_reason(e: &serde_json::Error) -> String {
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

fn entry_timestamp(e: &SessionEntry) -> String {
    match e {
        SessionEntry::Message(x) => x.timestamp.to_string(),
        SessionEntry::ModelChange(x) => x.timestamp.to_string(),
        SessionEntry::ThinkingLevelChange(x) => x.timestamp.to_string(),
        SessionEntry::SessionInfo(x) => x.timestamp.to_string(),
        SessionEntry::Compaction(x) => x.timestamp.to_string(),
        SessionEntry::Custom(x) => x.timestamp.to_string(),
    }
}

/// The first text of a message, for labels and listings.
pub fn message_text(m: &AgentMessage) -> String {
    match m {
        AgentMessage::User(u) => crate::providers::offline::user_text(&u.content),
        AgentMessage::Assistant(a) => a.content.iter().filter_map(|c| if let AssistantContent::Text(t) = c { Some(t.text.as_str()) } else { None }).collect(),
        AgentMessage::ToolResult(r) => r.content.iter().filter_map(|c| if let TextOrImageContent::Text(t) = c { Some(t.text.as_str()) } else { None }).collect(),
        AgentMessage::BashExecution(b) => format!("$ {}", b.command),
        AgentMessage::CompactionSummary(c) => c.summary.clone(),
        AgentMessage::BranchSummary(b) => b.summary.clone(),
        AgentMessage::Custom(c) => crate::providers::offline::user_text(&c.content),
    }
}

/// A message with the id of its entry.
pub type IdentifiedMessage = (String, AgentMessage);

/// A session: header, entries, leaf, and (when persisted) its file.
#[derive(Debug)]
pub struct Session {
    header: SessionHeader,
    /// Every entry in file order, each its JSON line plus the fields the tree needs (shared with
    /// the context and with clones; an entry never changes once stored).
    entries: Vec<Arc<StoredEntry>>,
    index: HashMap<Box<str>, usize>,
    leaf: Option<String>,
    /// The messages the model sees on the current branch: kept up to date as entries are
    /// appended, rebuilt when the leaf moves or the branch is compacted.
    context: Vec<ContextItem>,
    /// Where the session is written; `None` for in-memory sessions (`--no-session`).
    path: Option<PathBuf>,
    file: Option<std::fs::File>,
    /// How many entries at the end of `entries` are not on disk yet (a write failed); the next
    /// write writes them first, so the file's parent chain never has a gap.
    unsaved: usize,
    /// Whether the header is on disk.
    header_saved: bool,
}

/// The directory holding the sessions of `cwd` under `root` (pi's naming).
pub fn cwd_dir(root: &Path, cwd: &Path) -> PathBuf {
    let encoded = cwd.display().to_string().trim_start_matches('/').replace(['/', '\\', ':'], "-");
    root.join(format!("--{encoded}--"))
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

    /// Whether every entry is on disk (always true in memory-only sessions).
    pub fn is_saved(&self) -> bool {
        self.path.is_none() || self.unsaved == 0
    }

    /// Whether the session's file exists (`false` before the first entry and in memory).
    pub fn file_exists(&self) -> bool {
        self.path.as_deref().is_some_and(|p| self.header_saved && p.is_file())
    }

    /// Writes the entries not on disk yet, oldest first.
    fn flush_unsaved(&mut self) -> Result<(), SessionWriteError> {
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

    /// The entries from the root to the leaf.
    pub fn branch(&self) -> Vec<&Arc<StoredEntry>> {
        let mut path = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut at = self.leaf.as_deref();
        while let Some(id) = at {
            let Some(&i) = self.index.get(id) else { break };
            if !seen.insert(i) {
                // A cycle in a hand-edited file: each entry once (found by the `session_parse`
                // fuzz target: the old length check let one entry in twice).
                break;
            }
            let e = &self.entries[i];
            at = e.parent();
            path.push(e);
        }
        path.reverse();
        path
    }

    /// Recomputes the model's messages from the branch: after a compaction, its summary, then
    /// the kept messages and everything after it.
    fn rebuild_context(&mut self) {
        let branch = self.branch();
        let last_compaction = branch.iter().rposition(|e| e.kind() == EntryKind::Compaction);
        let mut context = Vec::new();
        let start = match last_compaction.and_then(|ci| Some((ci, branch[ci].compaction()?))) {
            Some((ci, c)) => {
                context.push(ContextItem::Summary(Arc::new(AgentMessage::CompactionSummary(CompactionSummaryMessage::new(c.summary, c.tokens_before, now_ms())))));
                // A kept entry after the compaction (a hand-edited file; found by the
                // `session_parse` fuzz target, it panicked here) keeps nothing.
                let kept = branch.iter().position(|e| e.id() == c.first_kept_entry_id.as_str()).filter(|&k| k <= ci).unwrap_or(ci);
                context.extend(branch[kept..ci].iter().filter(|e| matches!(e.kind(), EntryKind::Message(_))).map(|&e| ContextItem::Entry(e.clone())));
                ci + 1
            }
            None => 0,
        };
        context.extend(branch[start..].iter().filter(|e| matches!(e.kind(), EntryKind::Message(_))).map(|&e| ContextItem::Entry(e.clone())));
        self.context = context;
    }

    /// The messages the model sees on the current branch, parsed (every one: for the model's
    /// request; use [`Session::context`] to look at them one by one).
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.context.iter().filter_map(ContextItem::message).collect()
    }

    /// The model's messages as stored: index them, count them, parse only those used.
    pub fn context(&self) -> &[ContextItem] {
        &self.context
    }

    /// The model's messages `range` (clamped to the context) as stored: a page costs its own
    /// messages only.
    pub fn context_page(&self, range: std::ops::Range<usize>) -> &[ContextItem] {
        let end = range.end.min(self.context.len());
        self.context.get(range.start.min(end)..end).unwrap_or_default()
    }

    /// A snapshot of the model's messages that serializes as `get_messages`'s data straight
    /// from the stored text.
    pub fn messages_json(&self) -> MessagesJson {
        MessagesJson(self.context.iter().cloned().map(Into::into).collect())
    }

    /// What a new compaction would summarise: the previous summary (if the branch was compacted
    /// before) and the message entries the model still sees in full, with their ids. `None`
    /// when the branch's last entry is already a compaction.
    pub fn compactable(&self) -> Option<(Option<String>, Vec<IdentifiedMessage>)> {
        let branch = self.branch();
        if branch.last().is_some_and(|e| e.kind() == EntryKind::Compaction) {
            return None;
        }
        let last_compaction = branch.iter().rposition(|e| e.kind() == EntryKind::Compaction);
        let (previous, start) = match last_compaction.and_then(|ci| Some((ci, branch[ci].compaction()?))) {
            Some((ci, c)) => {
                let kept = branch.iter().position(|e| e.id() == c.first_kept_entry_id.as_str()).unwrap_or(ci + 1);
                (Some(c.summary), kept)
            }
            None => (None, 0),
        };
        let list = branch[start..].iter().filter_map(|e| Some((e.id().to_owned(), e.message()?))).collect();
        Some((previous, list))
    }

    /// Message entries on the current branch with their ids.
    pub fn branch_messages(&self) -> Vec<(String, AgentMessage)> {
        self.branch().into_iter().filter_map(|e| Some((e.id().to_owned(), e.message()?))).collect()
    }

    /// Whether `entry_id` is a user message on the current branch (nothing is parsed).
    pub fn is_branch_user_message(&self, entry_id: &str) -> bool {
        self.branch().iter().any(|e| e.id() == entry_id && e.kind() == EntryKind::Message(Role::User))
    }

    /// The last name set in the file, on any branch (for listings).
    fn name_anywhere(&self) -> Option<String> {
        let Some(SessionEntry::SessionInfo(i)) = self.entries.iter().rev().find(|e| e.kind() == EntryKind::SessionInfo).and_then(|e| e.typed()) else { return None };
        Some(i.name)
    }

    /// The last entry of `kind` on the current branch, typed.
    fn last_on_branch(&self, kind: EntryKind) -> Option<SessionEntry> {
        self.branch().iter().rev().find(|e| e.kind() == kind).and_then(|e| e.typed())
    }

    /// The last name set on the current branch.
    pub fn name(&self) -> Option<String> {
        let Some(SessionEntry::SessionInfo(i)) = self.last_on_branch(EntryKind::SessionInfo) else { return None };
        Some(i.name)
    }

    /// The `data` of the last `custom` entry of `custom_type` on the current branch.
    pub fn custom_data(&self, custom_type: &str) -> Option<serde_json::Value> {
        self.branch().iter().rev().filter(|e| e.kind() == EntryKind::Custom).filter_map(|e| e.typed()).find_map(|e| match e {
            SessionEntry::Custom(c) if *c.custom_type == custom_type => c.data,
            _ => None,
        })
    }

    /// The last model and thinking level recorded on the current branch.
    pub fn settings(&self) -> (Option<(String, String)>, Option<ThinkingLevel>) {
        let model = if let Some(SessionEntry::ModelChange(m)) = self.last_on_branch(EntryKind::ModelChange) { Some((m.provider.to_string(), m.model_id.to_string())) } else { None };
        let level = if let Some(SessionEntry::ThinkingLevelChange(t)) = self.last_on_branch(EntryKind::ThinkingLevelChange) { Some(t.thinking_level) } else { None };
        (model, level)
    }

    /// Moves the leaf to just before the user message `entry_id`; returns its text.
    pub fn branch_before(&mut self, entry_id: &str) -> Option<String> {
        let &i = self.index.get(entry_id)?;
        let entry = self.entries[i].clone();
        let AgentMessage::User(u) = entry.message()? else { return None };
        let text = crate::providers::offline::user_text(&u.content);
        self.leaf = entry.parent().map(str::to_owned);
        self.rebuild_context();
        Some(text)
    }

    /// All entries as a tree.
    pub fn tree(&self) -> SessionTree {
        let mut children: HashMap<&str, Vec<String>> = HashMap::new();
        for e in &self.entries {
            if let Some(p) = e.parent() {
                children.entry(p).or_default().push(e.id().to_owned());
            }
        }
        let entries = self
            .entries
            .iter()
            .map(|e| {
                let (kind, label, timestamp) = match e.typed() {
                    Some(typed) => {
                        let (kind, label) = match &typed {
                            SessionEntry::Message(m) => {
                                let role = serde_json::to_value(&m.message).ok().and_then(|v| v["role"].as_str().map(str::to_owned)).unwrap_or_default();
                                let text: String = message_text(&m.message).chars().take(60).collect();
                                ("message".to_owned(), format!("{role}: {}", text.replace('\n', " ")))
                            }
                            SessionEntry::ModelChange(c) => ("model_change".to_owned(), format!("model {}/{}", *c.provider, *c.model_id)),
                            SessionEntry::ThinkingLevelChange(t) => (
                                "thinking_level_change".to_owned(),
                                format!("thinking {}", serde_json::to_value(t.thinking_level).unwrap_or_default().as_str().unwrap_or_default()),
                            ),
                            SessionEntry::SessionInfo(i) => ("session_info".to_owned(), format!("name {}", i.name)),
                            SessionEntry::Compaction(c) => ("compaction".to_owned(), format!("compaction ({} tokens before)", c.tokens_before)),
                            SessionEntry::Custom(c) => ("custom".to_owned(), format!("custom {}", *c.custom_type)),
                        };
                        (kind, label, entry_timestamp(&typed))
                    }
                    // An entry of a type this build does not know: its own type names it.
                    None => {
                        let kind = e.type_name();
                        let timestamp = serde_json::from_str::<serde_json::Value>(e.line()).ok().and_then(|v| v["timestamp"].as_str().map(str::to_owned)).unwrap_or_default();
                        (kind.clone(), kind, timestamp)
                    }
                };
                TreeEntry {
                    id: nonempty(e.id()),
                    parent_id: e.parent().map(str::to_owned),
                    entry_type: nonempty(&kind),
                    label,
                    timestamp,
                    children: children.get(e.id()).cloned().unwrap_or_default(),
                }
            })
            .collect();
        SessionTree { entries, leaf_id: self.leaf.clone() }
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
    use super::*;

    /// Found by the `session_parse` fuzz target: a compaction whose first kept entry comes after
    /// it on the branch made `messages` slice backwards and panic.
    #[test]
    fn a_compaction_keeping_a_later_entry_does_not_panic() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#, "\n",
            r#"{"type":"compaction","id":"c","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","summary":"S","firstKeptEntryId":"m","tokensBefore":1}"#, "\n",
            r#"{"type":"message","id":"m","parentId":"c","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"after"}],"timestamp":1}}"#, "\n",
        );
        let (session, _) = Session::parse(Path::new("odd.jsonl"), text.as_bytes()).unwrap();
        let messages = session.messages();
        assert_eq!(messages.len(), 2, "the summary, then the message after the compaction");
    }

    /// Found by the `session_parse` fuzz target: a parent cycle put an entry on the branch twice.
    #[test]
    fn a_parent_cycle_puts_each_entry_on_the_branch_once() {
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
        let entry = |id: &str, parent: &str, text: &str| {
            format!(r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#)
        };
        // a → c (the cycle a → c → b → a), leaf c; and a cycle of two under a longer chain.
        for lines in [vec![entry("a", "c", "A"), entry("b", "a", "B"), entry("c", "b", "C")], vec![entry("a", "b", "A"), entry("b", "a", "B"), entry("c", "b", "C"), entry("d", "c", "D")]] {
            let text = format!("{header}\n{}\n", lines.join("\n"));
            let (session, _) = Session::parse(Path::new("cycle.jsonl"), text.as_bytes()).unwrap();
            let ids: Vec<&str> = session.branch().iter().map(|e| e.id()).collect();
            let unique: std::collections::HashSet<&&str> = ids.iter().collect();
            assert_eq!(unique.len(), ids.len(), "{ids:?}");
            assert_eq!(session.messages().len(), ids.len());
        }
    }
    use serde_json::json;

    fn user(text: &str) -> AgentMessage {
        serde_json::from_value(json!({"role":"user","content":[{"type":"text","text":text}],"timestamp":1})).unwrap()
    }

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

    #[test]
    fn compaction_replaces_older_messages_with_the_summary() {
        let mut s = Session::create(None, Path::new("/w"), None);
        s.append(Payload::Message(Box::new(user("old")))).unwrap();
        let kept = s.append(Payload::Message(Box::new(user("kept")))).unwrap();
        s.append(Payload::Compaction { summary: "sum".into(), first_kept_entry_id: kept, tokens_before: 10, details: None }).unwrap();
        s.append(Payload::Message(Box::new(user("new")))).unwrap();
        let texts: Vec<String> = s.messages().iter().map(message_text).collect();
        assert_eq!(texts, ["sum", "kept", "new"]);
    }

    fn assistant(text: &str) -> AgentMessage {
        serde_json::from_value(json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"openai-completions","provider":"p","model":"m",
            "usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
            "stopReason":"stop","timestamp":2}))
        .unwrap()
    }

    fn typed_parses() -> usize {
        entry::TYPED_PARSES.with(std::cell::Cell::get)
    }

    /// The O(page) guarantee, structurally: a page parses its own messages and nothing else,
    /// and the whole-branch JSON of `get_messages` parses none (it copies the stored text).
    #[test]
    fn a_page_parses_only_its_messages_and_get_messages_parses_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::create(Some(dir.path()), Path::new("/w"), None);
        for i in 0..1000 {
            let m = if i % 2 == 0 { user(&format!("q{i}")) } else { assistant(&format!("a{i}")) };
            s.append(Payload::Message(Box::new(m))).unwrap();
        }
        let (loaded, warnings) = Session::load(s.path().unwrap()).unwrap();
        assert!(warnings.is_empty());
        let before = typed_parses();
        let page = loaded.context_page(950..1000);
        assert_eq!(typed_parses(), before, "a page is a slice of the stored context");
        let typed: Vec<AgentMessage> = page.iter().filter_map(ContextItem::message).collect();
        assert_eq!(typed_parses() - before, 50, "the page's 50 messages, not the session's 1000");
        assert_eq!(typed.iter().map(message_text).collect::<Vec<_>>(), (950..1000).map(|i| if i % 2 == 0 { format!("q{i}") } else { format!("a{i}") }).collect::<Vec<_>>());
        assert!(loaded.context_page(990..5000).len() == 10 && loaded.context_page(2000..2100).is_empty(), "ranges past the end are clamped");
        let before = typed_parses();
        let page_json = MessagesPageJson { messages: page.iter().cloned().map(Into::into).collect(), total_messages: 1000, next_cursor: None };
        let page_value: serde_json::Value = serde_json::from_str(&serde_json::to_string(&page_json).unwrap()).unwrap();
        assert_eq!(typed_parses(), before, "the page's JSON is the stored text");
        assert_eq!(page_value, json!({"messages": typed, "totalMessages": 1000}));
        let before = typed_parses();
        let json = serde_json::to_string(&loaded.messages_json()).unwrap();
        assert_eq!(typed_parses(), before, "no message was parsed into its typed form");
        let all: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(all, json!({"messages": loaded.messages()}));
    }

    /// A message stored as pi wrote it (its key order, its spelling of numbers and strings)
    /// goes into `get_messages` as written.
    #[test]
    fn get_messages_copies_the_stored_text() {
        let message = r#"{"timestamp":1,"role":"user","content":[{"text":"caf\u00e9 \/ 1.50","type":"text"}]}"#;
        let text = format!(
            "{}\n{}\n",
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
            format_args!(r#"{{"type":"message","id":"m","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#)
        );
        let (session, warnings) = Session::parse(Path::new("pi.jsonl"), text.as_bytes()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(serde_json::to_string(&session.messages_json()).unwrap(), format!(r#"{{"messages":[{message}]}}"#));
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

    /// Loaded entries live in the file's text; an id the file spells with an escape is kept as
    /// its own copy and still links the tree.
    #[test]
    fn ids_spelled_with_escapes_link_the_tree() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#, "\n",
            r#"{"type":"message","id":"\u0061","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"one","timestamp":1}}"#, "\n",
            r#"{"type":"message","id":"b","parentId":"\u0061","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"two","timestamp":1}}"#, "\n",
        );
        let (session, warnings) = Session::parse(Path::new("escaped.jsonl"), text.as_bytes()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(session.branch().iter().map(|e| (e.id(), e.parent())).collect::<Vec<_>>(), [("a", None), ("b", Some("a"))]);
        assert_eq!(session.messages().iter().map(message_text).collect::<Vec<_>>(), ["one", "two"]);
        assert_eq!(session.entries()[0].line(), text.lines().nth(1).unwrap(), "the line as written");
    }

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
