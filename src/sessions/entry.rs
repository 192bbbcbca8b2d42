//! One session entry, held compactly: the entry's JSON line exactly as it was read or written,
//! plus the few fields the tree needs (id, parent id, kind, the message's role and where the
//! message lies in the line). A 50 000-message session then costs about its file size in
//! memory instead of a tree of typed values per message; a message is parsed into its typed
//! form only when something uses it (the model context, a page of `get_messages_page`, a tree
//! label), and `get_messages` copies the message slices into its answer as they are.
//!
//! Loading accepts exactly what the typed [`SessionEntry`] accepts (every known entry type is
//! parsed once, typed, to check it, and the typed value is dropped), so a line that was corrupt
//! before is corrupt now, with the same reason. An entry of a type this build does not know
//! (pi writes `label`, `branch_summary`, `custom_message`, …) is kept verbatim when it has an
//! `id`: it links the tree (a child's `parentId` may name it) and a clone writes it back
//! unchanged.

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::protocol::*;

/// The `type`s of [`SessionEntry`]; any other `type` is an entry kept verbatim.
const KNOWN_TYPES: [&str; 6] = ["message", "model_change", "thinking_level_change", "session_info", "compaction", "custom"];

/// Which message a message entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `toolResult`.
    ToolResult,
    /// `bashExecution`.
    BashExecution,
    /// `compactionSummary`.
    CompactionSummary,
    /// `branchSummary`.
    BranchSummary,
    /// `custom`.
    Custom,
}

impl Role {
    /// The role of `message`.
    pub fn of(message: &AgentMessage) -> Self {
        match message {
            AgentMessage::User(_) => Self::User,
            AgentMessage::Assistant(_) => Self::Assistant,
            AgentMessage::ToolResult(_) => Self::ToolResult,
            AgentMessage::BashExecution(_) => Self::BashExecution,
            AgentMessage::CompactionSummary(_) => Self::CompactionSummary,
            AgentMessage::BranchSummary(_) => Self::BranchSummary,
            AgentMessage::Custom(_) => Self::Custom,
        }
    }
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A conversation message.
    Message(Role),
    /// A model change.
    ModelChange,
    /// A thinking level change.
    ThinkingLevelChange,
    /// The session's name.
    SessionInfo,
    /// A compaction summary.
    Compaction,
    /// An extension's custom entry.
    Custom,
    /// An entry of a type this build does not know, kept verbatim.
    Unknown,
}

/// The fields every entry line has, borrowed from the line (the message is located, not parsed).
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", borrow, default)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
}

/// Where `raw`, borrowed from `line`, lies in it.
fn range_in(line: &str, raw: &RawValue) -> Range<usize> {
    let start = raw.get().as_ptr() as usize - line.as_ptr() as usize;
    start..start + raw.get().len()
}

#[cfg(test)]
thread_local! {
    /// Typed parses of stored entries and messages on this thread: lets the tests check that an
    /// operation parses only what it uses (a page, not the whole session).
    pub static TYPED_PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn count_typed_parse() {
    #[cfg(test)]
    TYPED_PARSES.with(|c| c.set(c.get() + 1));
}

/// One entry: its JSON line and the fields the tree needs.
#[derive(Debug)]
pub struct StoredEntry {
    line: Box<str>,
    id: Box<str>,
    parent: Option<Box<str>>,
    kind: EntryKind,
    /// Where the `message` object lies in `line` (message entries only).
    message: Option<Range<usize>>,
}

impl StoredEntry {
    /// Reads one entry line: a known entry type must parse as its typed form (the error is the
    /// typed parse's); an unknown type is kept verbatim when it has a string `id`.
    pub fn parse(line: &str) -> Result<Self, serde_json::Error> {
        let head = serde_json::from_str::<Head<'_>>(line).ok();
        let mut message = None;
        if let Some(head) = head {
            if !KNOWN_TYPES.contains(&&*head.kind) {
                // An unknown type needs a non-empty type and id to be an entry of the tree.
                if let Some(id) = head.id.filter(|id| !id.is_empty() && !head.kind.is_empty()) {
                    return Ok(Self { line: line.into(), id: id.into(), parent: head.parent_id.map(Into::into), kind: EntryKind::Unknown, message: None });
                }
            }
            message = head.message.map(|raw| range_in(line, raw));
        }
        let typed: SessionEntry = serde_json::from_str(line)?;
        Ok(Self::with_line(line.into(), &typed, message))
    }

    /// A new entry, written as the typed entry serializes.
    pub fn from_typed(entry: &SessionEntry) -> Self {
        // Our entry types always serialize (string keys only).
        let line = serde_json::to_string(entry).unwrap_or_default();
        let message = serde_json::from_str::<Head<'_>>(&line).ok().and_then(|h| h.message).map(|raw| range_in(&line, raw));
        Self::with_line(line.into_boxed_str(), entry, message)
    }

    /// The entry for `line`, whose typed form is `typed` and whose `message` lies at `message`.
    fn with_line(line: Box<str>, typed: &SessionEntry, message: Option<Range<usize>>) -> Self {
        let (id, parent, kind) = match typed {
            SessionEntry::Message(x) => (x.id.as_str(), &x.parent_id, EntryKind::Message(Role::of(&x.message))),
            SessionEntry::ModelChange(x) => (x.id.as_str(), &x.parent_id, EntryKind::ModelChange),
            SessionEntry::ThinkingLevelChange(x) => (x.id.as_str(), &x.parent_id, EntryKind::ThinkingLevelChange),
            SessionEntry::SessionInfo(x) => (x.id.as_str(), &x.parent_id, EntryKind::SessionInfo),
            SessionEntry::Compaction(x) => (x.id.as_str(), &x.parent_id, EntryKind::Compaction),
            SessionEntry::Custom(x) => (x.id.as_str(), &x.parent_id, EntryKind::Custom),
        };
        let (line, message) = match (kind, message) {
            (EntryKind::Message(_), Some(range)) => (line, Some(range)),
            // A line the typed parse accepts but the field scan does not (a duplicate key): the
            // entry is kept as it serializes, so its message can always be found.
            (EntryKind::Message(_), None) => {
                let line = serde_json::to_string(typed).unwrap_or_default();
                let message = serde_json::from_str::<Head<'_>>(&line).ok().and_then(|h| h.message).map(|raw| range_in(&line, raw));
                (line.into_boxed_str(), message)
            }
            (EntryKind::ModelChange | EntryKind::ThinkingLevelChange | EntryKind::SessionInfo | EntryKind::Compaction | EntryKind::Custom | EntryKind::Unknown, _) => (line, None),
        };
        Self { id: id.into(), parent: parent.as_deref().map(Into::into), kind, message, line }
    }

    /// The entry's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The parent entry's id (`None` for a root).
    pub fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }

    /// What the entry is.
    pub fn kind(&self) -> EntryKind {
        self.kind
    }

    /// The entry's JSON line (no LF), as read or written.
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The message's JSON text, for message entries.
    pub fn message_json(&self) -> Option<&str> {
        self.message.clone().and_then(|r| self.line.get(r))
    }

    /// The message, parsed (message entries only).
    pub fn message(&self) -> Option<AgentMessage> {
        let json = self.message_json()?;
        count_typed_parse();
        serde_json::from_str(json).inspect_err(|e| tracing::error!("stored message {} no longer parses: {e}", self.id)).ok()
    }

    /// The typed entry (`None` for an unknown type).
    pub fn typed(&self) -> Option<SessionEntry> {
        if self.kind == EntryKind::Unknown {
            return None;
        }
        count_typed_parse();
        serde_json::from_str(&self.line).inspect_err(|e| tracing::error!("stored entry {} no longer parses: {e}", self.id)).ok()
    }

    /// The compaction this entry records (compaction entries only).
    pub fn compaction(&self) -> Option<CompactionEntry> {
        if self.kind != EntryKind::Compaction {
            return None;
        }
        let Some(SessionEntry::Compaction(c)) = self.typed() else { return None };
        Some(c)
    }

    /// The `type` written in the line (an unknown type's own name).
    pub fn type_name(&self) -> String {
        serde_json::from_str::<Head<'_>>(&self.line).map(|h| h.kind.into_owned()).unwrap_or_default()
    }
}
