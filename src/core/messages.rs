//! A conversation's messages as JSON, for hosts that read it whole (rpc `get_messages`,
//! `get_messages_page`): an agent that keeps its messages as text (the built-in one, from its
//! session file) hands them over as they are, and they are written into the answer without being
//! parsed; an agent that keeps them typed hands those.

use std::sync::Arc;

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::protocol::AgentMessage;

/// A message kept as the JSON text it was stored as.
pub trait StoredMessage: Send + Sync + std::fmt::Debug {
    /// The message's JSON text; `None` when what is stored holds no message.
    fn message_json(&self) -> Option<&str>;
    /// What names it in an error (an entry id).
    fn describe(&self) -> String;
}

/// One message, as text kept or typed.
#[derive(Debug, Clone)]
pub enum MessageJson {
    /// Kept as text: written as it is.
    Stored(Arc<dyn StoredMessage>),
    /// Typed: serialized when written.
    Typed(Arc<AgentMessage>),
}

impl MessageJson {
    /// Bytes of JSON this message takes (a kept message's text, as it is; a typed one's
    /// serialization), for size estimates that need not parse anything.
    pub fn json_len(&self) -> usize {
        match self {
            Self::Stored(m) => m.message_json().map_or(0, str::len),
            Self::Typed(m) => serde_json::to_string(&**m).map_or(0, |s| s.len()),
        }
    }
}

impl Serialize for MessageJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Stored(m) => {
                let json = m.message_json().ok_or_else(|| S::Error::custom(format!("{} holds no message", m.describe())))?;
                // Borrowing a `&RawValue` checks the text is one JSON value (it was parsed when
                // loaded); serializing it copies the text.
                let raw: &RawValue = serde_json::from_str(json).map_err(S::Error::custom)?;
                raw.serialize(serializer)
            }
            Self::Typed(m) => m.serialize(serializer),
        }
    }
}

/// The `get_messages_page` answer's data (`MessagesPage`), its messages written like
/// [`MessagesJson`]'s.
#[derive(Debug, Clone)]
pub struct MessagesPageJson {
    /// The page's messages.
    pub messages: Vec<MessageJson>,
    /// How many messages the whole conversation has.
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
struct Messages<'a>(&'a [MessageJson]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for m in self.0 {
            seq.serialize_element(m)?;
        }
        seq.end()
    }
}

/// The `get_messages` answer's data (`MessagesResult`: `{"messages":[…]}`).
#[derive(Debug, Clone)]
pub struct MessagesJson(pub Vec<MessageJson>);

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
