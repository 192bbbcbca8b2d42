//! The messages the model sees on the current branch, as references to stored entries (and the
//! compaction summary that stands for older ones), and their JSON as `get_messages` answers it:
//! each stored message's text goes into the answer as it is, no typed value in between.

use std::sync::Arc;

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::entry::{EntryKind, Role, StoredEntry};
use crate::protocol::AgentMessage;

/// One message of the model's context.
#[derive(Debug, Clone)]
pub enum ContextItem {
    /// A message entry of the session.
    Entry(Arc<StoredEntry>),
    /// The summary of the last compaction, standing for the messages before it.
    Summary(Arc<AgentMessage>),
}

impl ContextItem {
    /// The message's role.
    pub fn role(&self) -> Option<Role> {
        match self {
            Self::Entry(e) => match e.kind() {
                EntryKind::Message(role) => Some(role),
                EntryKind::ModelChange
                | EntryKind::ThinkingLevelChange
                | EntryKind::SessionInfo
                | EntryKind::Compaction
                | EntryKind::Custom
                | EntryKind::Unknown => None,
            },
            Self::Summary(m) => Some(Role::of(m)),
        }
    }

    /// The message, typed (parsed from the entry's text).
    pub fn message(&self) -> Option<AgentMessage> {
        match self {
            Self::Entry(e) => e.message(),
            Self::Summary(m) => Some((**m).clone()),
        }
    }

    /// Bytes of JSON this message takes (a stored message's text, as it is; the summary's
    /// serialization), for size estimates that need not parse anything.
    pub fn json_len(&self) -> usize {
        match self {
            Self::Entry(e) => e.message_json().map_or(0, str::len),
            Self::Summary(m) => serde_json::to_string(&**m).map_or(0, |s| s.len()),
        }
    }
}

impl Serialize for ContextItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Entry(e) => {
                let json = e.message_json().ok_or_else(|| S::Error::custom(format!("entry {} holds no message", e.id())))?;
                // Borrowing a `&RawValue` checks the text is one JSON value (it was parsed when
                // loaded); serializing it copies the text.
                let raw: &RawValue = serde_json::from_str(json).map_err(S::Error::custom)?;
                raw.serialize(serializer)
            }
            Self::Summary(m) => m.serialize(serializer),
        }
    }
}

/// The `get_messages_page` answer's data (`MessagesPage`), its messages serialized straight from
/// the stored text like [`MessagesJson`]'s.
#[derive(Debug, Clone)]
pub struct MessagesPageJson {
    /// The page's messages.
    pub messages: Vec<ContextItem>,
    /// How many messages the whole branch has.
    pub total_messages: u64,
    /// Cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

impl Serialize for MessagesPageJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("messages", &Messages(&self.messages))?;
        map.serialize_entry("totalMessages", &self.total_messages)?;
        if let Some(cursor) = &self.next_cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        map.end()
    }
}

/// A list of messages, serialized as a JSON array.
struct Messages<'a>(&'a [ContextItem]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for m in self.0 {
            seq.serialize_element(m)?;
        }
        seq.end()
    }
}

/// The `get_messages` answer's data (`MessagesResult`: `{"messages":[…]}`) for a snapshot of the
/// context, serialized straight from the stored text.
#[derive(Debug, Clone)]
pub struct MessagesJson(pub Vec<ContextItem>);

impl MessagesJson {
    /// How many bytes the JSON takes (to size the buffer it is written into once: growing a
    /// buffer of tens of MiB may copy it, holding it twice for a moment).
    pub fn json_len(&self) -> usize {
        self.0.iter().map(|m| m.json_len() + 1).sum::<usize>() + r#"{"messages":[]}"#.len()
    }
}

impl Serialize for MessagesJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("messages", &Messages(&self.0))?;
        map.end()
    }
}
