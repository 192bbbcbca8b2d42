//! Sessions on disk: one JSONL file per session (`schema/session-file.schema.json`), a
//! `session` header then entries linked by `parentId` into a tree; the current position is the
//! leaf. Entries are appended whole, one `write` each, before the frame that reports them, so a
//! `kill -9` loses at most the line being written; loading skips a torn last line (and reports
//! a corrupt line in the middle with its number) instead of failing.
//!
//! Files live in `<sessions dir>/--<cwd with / replaced by ->--/<time>_<id>.jsonl` (pi's
//! layout) unless `--session-dir` names the directory; a file is created on the first entry.
//!
//! One file a job: [`file`] (opening, appending, repairing a torn tail, the size limit),
//! [`session`] (the [`Session`] type: created, loaded, appended to, cloned), [`tree`] (the
//! branch, the model's context, leaf moves, the tree view), [`listing`] (the directory per
//! working directory, which files are sessions, their listings); [`entry`] and [`context`]
//! hold an entry as stored and a context item. Everything is re-exported here.

pub mod context;
pub mod entry;
mod file;
pub mod html;
mod listing;
mod session;
mod tree;

pub use context::ContextItem;
pub use crate::core::messages::{MessagesJson, MessagesPageJson};
pub use entry::{EntryKind, Role, StoredEntry};
pub use file::{open_regular, read_regular, SessionError, SessionWriteError, DEFAULT_MAX_SESSION_BYTES};
pub use listing::{cwd_dir, files_in, is_session_file_name, listing, listing_limited, listings_in};
pub use session::{now_rfc3339, LoadWarning, Payload, Session, APPROVAL_ENTRY};
pub use tree::{message_text, IdentifiedMessage};

/// A user message, for the tests of the files above.
#[cfg(test)]
mod test_messages {
    use serde_json::json;

    use crate::protocol::AgentMessage;

    pub(super) fn user(text: &str) -> AgentMessage {
        serde_json::from_value(json!({"role":"user","content":[{"type":"text","text":text}],"timestamp":1})).unwrap()
    }
}
