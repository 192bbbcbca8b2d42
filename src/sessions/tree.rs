//! The entry tree: the branch from the root to the leaf, the messages the model sees on it
//! (rebuilt when the leaf moves or the branch is compacted), what the branch records (name,
//! settings, custom data), moving the leaf, and the whole tree as `get_tree` shows it.

use std::collections::HashMap;
use std::sync::Arc;

use super::{ContextItem, EntryKind, MessagesJson, Role, Session, StoredEntry};
use crate::protocol::*;

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
        AgentMessage::System(s) => crate::providers::offline::user_text(&s.content),
    }
}

/// The most generations one `get_tree` node nests. Each generation is two levels of JSON (the
/// node and its `children`), and readers bound nesting: serde_json refuses more than 128 levels
/// by default, Python's `json` about 1,000; encoding and dropping a node recurse per generation
/// too. 50 generations keep a message's own content well inside serde_json's limit.
pub const TREE_NODE_DEPTH: usize = 50;

/// A message with the id of its entry.
pub type IdentifiedMessage = (String, AgentMessage);

impl Session {
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
    pub(super) fn rebuild_context(&mut self) {
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
        SessionTree { entries, leaf_id: self.leaf.clone(), tree: self.tree_nodes() }
    }

    /// pi's `SessionTreeNode`s: each entry with its children, roots first. Built from the
    /// last entry back (an entry's children come after it in append order), so building
    /// depends on no recursion. An entry whose parent is missing, or is of a type this build
    /// does not know, is a root, as pi shows orphans. A chain longer than [`TREE_NODE_DEPTH`]
    /// goes on as a new root (its entry's `parentId` still names its parent): a long
    /// conversation is answered whole, and every JSON reader can parse it (nested whole, 20,000
    /// messages overflowed the stack encoding it).
    fn tree_nodes(&self) -> Vec<SessionTreeNode> {
        let typed: Vec<Option<SessionEntry>> = self.entries.iter().map(|e| e.typed()).collect();
        let parent_of = |i: usize| -> Option<usize> {
            let p = self.entries[i].parent()?;
            self.index.get(p).copied().filter(|&pi| pi < i && typed[pi].is_some())
        };
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.entries.len()];
        let mut depth = vec![0usize; self.entries.len()];
        let mut roots = Vec::new();
        for i in 0..self.entries.len() {
            if typed[i].is_none() {
                continue;
            }
            match parent_of(i).filter(|&p| depth[p] + 1 < TREE_NODE_DEPTH) {
                Some(p) => {
                    depth[i] = depth[p] + 1;
                    children[p].push(i);
                }
                None => roots.push(i),
            }
        }
        let mut built: Vec<Option<SessionTreeNode>> = (0..self.entries.len()).map(|_| None).collect();
        for i in (0..self.entries.len()).rev() {
            let Some(entry) = typed[i].clone() else { continue };
            let kids = children[i].iter().filter_map(|&c| built[c].take()).collect();
            built[i] = Some(SessionTreeNode { entry, children: kids, label: None, label_timestamp: None });
        }
        roots.into_iter().filter_map(|r| built[r].take()).collect()
    }

    /// The entries after the entry `since` (all without it), typed ones only; `None` when no
    /// entry has the id `since`.
    pub fn entries_since(&self, since: Option<&str>) -> Option<SessionEntries> {
        let start = match since {
            Some(id) => self.index.get(id)? + 1,
            None => 0,
        };
        let entries = self.entries[start..].iter().filter_map(|e| e.typed()).collect();
        Some(SessionEntries { entries, leaf_id: self.leaf.clone() })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::super::entry;
    use super::super::test_messages::user;
    use crate::protocol::AgentMessage;
    use crate::sessions::{message_text, ContextItem, MessagesPageJson, Payload, Session};

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
}
