//! The messages the model sees on the current branch, as references to stored entries (and the
//! compaction summary that stands for older ones). As the core's [`MessageJson`] each stored
//! message's text goes into a `get_messages` answer as it is, no typed value in between.

use std::sync::Arc;

use super::entry::{EntryKind, Role, StoredEntry};
use crate::core::messages::{MessageJson, StoredMessage};
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

impl StoredMessage for StoredEntry {
    fn message_json(&self) -> Option<&str> {
        StoredEntry::message_json(self)
    }

    fn describe(&self) -> String {
        format!("entry {}", self.id())
    }
}

impl From<ContextItem> for MessageJson {
    fn from(item: ContextItem) -> Self {
        match item {
            ContextItem::Entry(e) => MessageJson::Stored(e),
            ContextItem::Summary(m) => MessageJson::Typed(m),
        }
    }
}
