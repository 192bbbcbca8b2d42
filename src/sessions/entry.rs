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
use std::sync::Arc;

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
    /// `system` (pi 1.6's prompt declaration).
    System,
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
            AgentMessage::System(_) => Self::System,
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

/// Where a piece of an entry lies in the text it lives in (32-bit offsets: a text past 4 GiB
/// is not shared, each line gets its own copy).
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// Where `inner`, a slice of `outer`, lies in it; `None` when it is not a slice of it.
    fn of(outer: &str, inner: &str) -> Option<Self> {
        let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
        if start + inner.len() > outer.len() {
            return None;
        }
        Some(Self { start: u32::try_from(start).ok()?, len: u32::try_from(inner.len()).ok()? })
    }

    fn get(self, text: &str) -> &str {
        let start = self.start as usize;
        text.get(start..start + self.len as usize).unwrap_or_default()
    }
}

/// An id: where it is written in the text, or its own copy when the text spells it with escapes.
#[derive(Debug)]
enum Field {
    In(Span),
    Own(Box<str>),
}

impl Field {
    /// `value` as a span of `text` when it is a slice of it (written without escapes), else its
    /// own copy.
    fn new(text: &str, value: &str) -> Self {
        Span::of(text, value).map_or_else(|| Self::Own(value.into()), Self::In)
    }

    fn get<'a>(&'a self, text: &'a str) -> &'a str {
        match self {
            Self::In(span) => span.get(text),
            Self::Own(s) => s,
        }
    }
}

/// The kind of a typed entry.
fn kind_of(typed: &SessionEntry) -> EntryKind {
    match typed {
        SessionEntry::Message(x) => EntryKind::Message(Role::of(&x.message)),
        SessionEntry::ModelChange(_) => EntryKind::ModelChange,
        SessionEntry::ThinkingLevelChange(_) => EntryKind::ThinkingLevelChange,
        SessionEntry::SessionInfo(_) => EntryKind::SessionInfo,
        SessionEntry::Compaction(_) => EntryKind::Compaction,
        SessionEntry::Custom(_) => EntryKind::Custom,
    }
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
    /// The text the line lives in: the whole session file for loaded entries (read once, shared
    /// by all of them, never copied line by line), the line itself for appended ones.
    text: Arc<String>,
    line: Span,
    id: Field,
    parent: Option<Field>,
    /// Where the `message` object lies in `text` (message entries only).
    message: Option<Span>,
    kind: EntryKind,
}

impl StoredEntry {
    /// Reads the entry `line`, a slice of `text` (a loaded file): a known entry type must parse
    /// as its typed form (the error is the typed parse's); an unknown type is kept verbatim when
    /// it has a non-empty `type` and `id`.
    pub fn parse(text: &Arc<String>, line: &str) -> Result<Self, serde_json::Error> {
        let Some(span) = Span::of(text, line) else {
            // Past the 32-bit offsets (or not a slice of `text`): the line gets its own text.
            let own = Arc::new(line.to_owned());
            return Self::parse(&own, own.as_str());
        };
        let head = serde_json::from_str::<Head<'_>>(line).ok();
        if let Some(h) = &head {
            if !KNOWN_TYPES.contains(&&*h.kind) && !h.kind.is_empty() && h.id.as_ref().is_some_and(|id| !id.is_empty()) {
                return Ok(Self::from_head(text.clone(), span, h, EntryKind::Unknown));
            }
        }
        let typed: SessionEntry = serde_json::from_str(line)?;
        let kind = kind_of(&typed);
        match head {
            Some(h) if h.id.is_some() && (h.message.is_some() || !matches!(kind, EntryKind::Message(_))) => Ok(Self::from_head(text.clone(), span, &h, kind)),
            // A line the typed parse accepts but the field scan does not (a duplicate key): the
            // entry is kept as it serializes, so its fields can always be found.
            Some(_) | None => Ok(Self::from_typed(&typed)),
        }
    }

    /// A new entry, written as the typed entry serializes.
    pub fn from_typed(entry: &SessionEntry) -> Self {
        // Our entry types always serialize (string keys only), with `type`, `id` and `parentId`.
        let text = Arc::new(serde_json::to_string(entry).unwrap_or_default());
        let line = Span { start: 0, len: u32::try_from(text.len()).unwrap_or(u32::MAX) };
        let head = serde_json::from_str::<Head<'_>>(&text).ok();
        match head {
            Some(h) => Self::from_head(text.clone(), line, &h, kind_of(entry)),
            None => Self { text: text.clone(), line, id: Field::Own("".into()), parent: None, message: None, kind: kind_of(entry) },
        }
    }

    /// The entry whose line lies at `line` in `text`, with the fields `head` (borrowed from
    /// `text`) found.
    fn from_head(text: Arc<String>, line: Span, head: &Head<'_>, kind: EntryKind) -> Self {
        let id = head.id.as_ref().map_or_else(|| Field::Own("".into()), |id| Field::new(&text, id));
        let parent = head.parent_id.as_ref().map(|p| Field::new(&text, p));
        let message = if matches!(kind, EntryKind::Message(_)) { head.message.and_then(|raw| Span::of(&text, raw.get())) } else { None };
        Self { text, line, id, parent, message, kind }
    }

    /// The entry's id.
    pub fn id(&self) -> &str {
        self.id.get(&self.text)
    }

    /// The parent entry's id (`None` for a root).
    pub fn parent(&self) -> Option<&str> {
        self.parent.as_ref().map(|p| p.get(&self.text))
    }

    /// What the entry is.
    pub fn kind(&self) -> EntryKind {
        self.kind
    }

    /// The entry's JSON line (no LF), as read or written.
    pub fn line(&self) -> &str {
        self.line.get(&self.text)
    }

    /// The message's JSON text, for message entries.
    pub fn message_json(&self) -> Option<&str> {
        self.message.map(|span| span.get(&self.text))
    }

    /// The message, parsed (message entries only).
    pub fn message(&self) -> Option<AgentMessage> {
        let json = self.message_json()?;
        count_typed_parse();
        serde_json::from_str(json).inspect_err(|e| tracing::error!("stored message {} no longer parses: {e}", self.id())).ok()
    }

    /// The typed entry (`None` for an unknown type).
    pub fn typed(&self) -> Option<SessionEntry> {
        if self.kind == EntryKind::Unknown {
            return None;
        }
        count_typed_parse();
        serde_json::from_str(self.line()).inspect_err(|e| tracing::error!("stored entry {} no longer parses: {e}", self.id())).ok()
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
        serde_json::from_str::<Head<'_>>(self.line()).map(|h| h.kind.into_owned()).unwrap_or_default()
    }
}
