//! Session operations: new, switch, branch / fork, clone, naming, compaction, statistics,
//! messages, listings, tree and HTML export.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::events::{AgentEvent, CompactionReason};
use super::compaction;
use super::{nonempty, Agent, CoreError, CoreResult};
use crate::protocol::*;
use crate::sessions::{self, ContextItem, MessagesJson, MessagesPageJson, Payload, Role, Session};

impl Agent {
    /// Starts a new session (aborting the run); `parent` is recorded in its header.
    pub async fn new_session(&self, parent: Option<String>) {
        self.abort_run().await;
        let session = Session::create(self.inner.config.session_dir.as_deref(), &self.inner.config.cwd, parent);
        self.adopt_session(session);
    }

    /// Loads another session file (relative paths against the working directory).
    pub async fn switch_session(&self, path: &str) -> CoreResult<()> {
        let path = self.inner.config.cwd.join(path);
        if !path.exists() {
            return Err(CoreError::NotFound(format!("Session file not found: {}", path.display())));
        }
        let limit = self.inner.config.max_session_bytes;
        let read = path.clone();
        // A whole file read and parsed: on the blocking pool, so that a run streaming meanwhile
        // (rpc and wire serve on one thread) is not held up by it.
        let loaded = blocking(move || Session::load_limited(&read, limit)).await?;
        let (session, warnings) = loaded.map_err(|e| match e {
            sessions::SessionError::TooLarge { .. } => CoreError::InvalidParams(format!("Session file too large: {e}")),
            _ => CoreError::InvalidParams(format!("Not a session file: {e}")),
        })?;
        for w in warnings {
            tracing::warn!("{}:{}: {}", path.display(), w.line, w.reason);
        }
        self.abort_run().await;
        self.adopt_session(session);
        Ok(())
    }

    /// Moves the session's leaf to just before the user message `entry_id` (the old branch
    /// stays in the tree); returns that message's text. `verb` names the operation in errors.
    pub async fn branch(&self, entry_id: &str, verb: &str) -> CoreResult<String> {
        let valid = self.state().session.is_branch_user_message(entry_id);
        if !valid {
            return Err(CoreError::InvalidParams(format!("Invalid entry ID for {verb}: {entry_id} is not a user message of this session")));
        }
        self.abort_run().await;
        let mut st = self.state();
        Ok(st.session.branch_before(entry_id).unwrap_or_default())
    }

    /// Copies the session into a new file and continues there.
    pub async fn clone_session(&self) -> CoreResult<()> {
        self.abort_run().await;
        let copy = self.state().session.clone_into(self.inner.config.session_dir.as_deref());
        // The whole file written on the blocking pool (see `switch_session`).
        let copy = blocking(move || {
            let mut copy = copy;
            copy.write_all_now().map(|()| copy)
        })
        .await?
        .map_err(|e| CoreError::SessionWrite(e.to_string()))?;
        self.adopt_session(copy);
        Ok(())
    }

    /// The user messages of the branch, as points to branch from.
    pub fn branch_points(&self) -> BranchMessages {
        let st = self.state();
        let messages = st
            .session
            .branch_messages()
            .into_iter()
            .filter(|(_, m)| matches!(m, AgentMessage::User(_)))
            .map(|(id, m)| BranchPoint { entry_id: nonempty(&id), text: sessions::message_text(&m) })
            .collect();
        BranchMessages { messages }
    }

    /// The text of the last assistant message that had any.
    pub fn last_assistant_text(&self) -> Option<String> {
        let st = self.state();
        // Assistant messages are parsed from the last back, until one has text.
        st.session.context().iter().rev().filter(|m| m.role() == Some(Role::Assistant)).find_map(|m| {
            let Some(AgentMessage::Assistant(a)) = m.message() else { return None };
            let text: String = a.content.iter().filter_map(|c| if let AssistantContent::Text(t) = c { Some(t.text.as_str()) } else { None }).collect();
            let text = text.trim_end().to_owned();
            (!text.is_empty()).then_some(text)
        })
    }

    /// Names the session (saved, and reported as `SessionNameChanged`).
    pub async fn set_session_name(&self, name: &str) -> CoreResult<()> {
        let name = name.trim().to_owned();
        if name.is_empty() {
            return Err(CoreError::InvalidParams("Session name cannot be empty".into()));
        }
        self.state().session_name = Some(name.clone());
        let saved = self.record_setting(Payload::Name(name.clone()));
        self.emit(AgentEvent::SessionNameChanged { name }).await;
        saved
    }

    /// The branch's messages, parsed.
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.state().session.messages()
    }

    /// The branch's messages as `get_messages` data, serialized from the stored text when
    /// written (a snapshot: one reference per message).
    pub fn messages_json(&self) -> MessagesJson {
        self.state().session.messages_json()
    }

    /// A page of the branch's messages, parsed: `cursor` is the index to start at.
    pub fn messages_page(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPage> {
        let (page, total, next_cursor) = self.context_page(cursor, limit)?;
        let messages = page.iter().filter_map(ContextItem::message).collect();
        Ok(MessagesPage { messages, total_messages: total, next_cursor })
    }

    /// A page of the branch's messages as stored (serialized from their text when written):
    /// `cursor` is the index to start at. Costs the page, not the branch.
    pub fn messages_page_json(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPageJson> {
        let (page, total_messages, next_cursor) = self.context_page(cursor, limit)?;
        Ok(MessagesPageJson { messages: page.into_iter().map(Into::into).collect(), total_messages, next_cursor })
    }

    /// The branch's messages from `cursor` (the index to start at), at most `limit` of them; the
    /// whole branch's count and the next page's cursor.
    fn context_page(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<(Vec<ContextItem>, u64, Option<String>)> {
        let st = self.state();
        let start = match cursor {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| CoreError::InvalidParams(format!("Invalid message cursor: {c}")))?,
        };
        let limit = limit.map_or(100, |l| usize::try_from(l).unwrap_or(usize::MAX)).max(1);
        let total = st.session.context().len();
        let end = start.saturating_add(limit).min(total);
        let messages = st.session.context_page(start..end).to_vec();
        Ok((messages, total as u64, (end < total).then(|| end.to_string())))
    }

    /// Token, cost and message counts of the branch.
    pub fn session_stats(&self) -> SessionStats {
        let st = self.state();
        let (mut user, mut assistant, mut calls, mut results) = (0, 0, 0, 0);
        let mut tokens = SessionTokens { input: 0, output: 0, cache_read: 0, cache_write: 0, reasoning: None, total: 0 };
        let mut cost = 0.0;
        let messages = st.session.context();
        // One message parsed at a time: the statistics never hold the whole branch typed.
        for m in messages.iter().filter_map(ContextItem::message) {
            match m {
                AgentMessage::User(_) => user += 1,
                AgentMessage::Assistant(a) => {
                    assistant += 1;
                    calls += a.content.iter().filter(|c| matches!(c, AssistantContent::ToolCall(_))).count() as u64;
                    tokens.input += a.usage.input;
                    tokens.output += a.usage.output;
                    tokens.cache_read += a.usage.cache_read;
                    tokens.cache_write += a.usage.cache_write;
                    tokens.total += a.usage.total_tokens;
                    cost += a.usage.cost.total;
                }
                AgentMessage::ToolResult(_) => results += 1,
                AgentMessage::BashExecution(_) | AgentMessage::Custom(_) | AgentMessage::BranchSummary(_) | AgentMessage::CompactionSummary(_) | AgentMessage::System(_) => {}
            }
        }
        SessionStats {
            session_file: Self::session_file(&st),
            session_id: nonempty(st.session.id()),
            user_messages: user,
            assistant_messages: assistant,
            tool_calls: calls,
            tool_results: results,
            total_messages: messages.len() as u64,
            tokens,
            cost,
            context_usage: Some(Self::context_usage(&st, self.inner.models[st.current_model].info.context_window)),
            premium_requests: None,
        }
    }

    /// Writes the branch as a self-contained HTML page: to `output` (relative to the working
    /// directory) or beside the session file. Returns the absolute path. The page is rendered
    /// and written on the blocking pool (see `switch_session`).
    pub async fn export_html(&self, output: Option<&str>) -> CoreResult<PathBuf> {
        let (title, messages, default_path) = {
            let st = self.state();
            let title = st.session_name.clone().unwrap_or_else(|| format!("agentwire session {}", st.session.id()));
            let default = st.session.path().map(|p| p.with_extension("html"));
            (title, st.session.branch_messages().into_iter().map(|(_, m)| m).collect::<Vec<_>>(), default)
        };
        let output = output.map(|p| self.inner.config.cwd.join(p));
        blocking(move || write_html(&title, &messages, output, default_path)).await?
    }

    /// Sessions of this working directory (or of every directory), newest first. Every file is
    /// read, on the blocking pool (see `switch_session`).
    pub async fn list_sessions(&self, all: bool) -> CoreResult<SessionList> {
        let root = if all { self.inner.config.sessions_root.clone() } else { None };
        let dir = self.inner.config.session_dir.clone();
        let limit = self.inner.config.max_session_bytes;
        blocking(move || {
            let dirs: Vec<PathBuf> = match root {
                Some(root) => std::fs::read_dir(root).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect(),
                None => dir.into_iter().collect(),
            };
            let mut sessions = sessions::listings_in(&dirs, limit);
            sessions.sort_by(|a, b| b.modified.cmp(&a.modified));
            SessionList { sessions }
        })
        .await
    }

    /// The session's entry tree.
    pub fn tree(&self) -> SessionTree {
        self.state().session.tree()
    }

    /// The session's entries in append order, after the entry `since` when given (pi's
    /// `get_entries`).
    pub fn entries(&self, since: Option<&str>) -> CoreResult<SessionEntries> {
        self.state().session.entries_since(since).ok_or_else(|| CoreError::NotFound(format!("Unknown entries cursor: {}", since.unwrap_or_default())))
    }

    /// Compacts the branch now (refused while a run is in progress), with its events. A run
    /// that has already reported its end (`agent_end`) is over for the host: compaction waits
    /// the moment it takes to settle instead of being refused, as a prompt does.
    pub async fn compact(&self, custom_instructions: Option<&str>) -> CoreResult<CompactionResult> {
        self.finish_ending_run().await;
        if self.state().run.is_some() {
            return Err(CoreError::Busy("Cannot compact while the agent is running; abort or wait for prompt_result".into()));
        }
        self.state().compacting = true;
        let reason = CompactionReason::Manual;
        self.emit(AgentEvent::CompactionStart { reason }).await;
        let outcome = compaction::compact(self, custom_instructions, &CancellationToken::new()).await.map_err(CoreError::from);
        self.state().compacting = false;
        self.emit(AgentEvent::CompactionEnd { reason, result: outcome.clone(), aborted: false, will_retry: false }).await;
        outcome
    }
}

/// Runs `work` (file I/O, parsing a whole session) on the blocking pool: rpc and wire serve on
/// one thread, where it would hold up every other task (a run streaming its events) meanwhile.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> CoreResult<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| CoreError::Internal(format!("session file work failed: {e}")))
}

/// Renders the branch's `messages` as a page titled `title` and writes it to `output` (already
/// joined to the working directory) or beside the session file (`default_path`).
fn write_html(title: &str, messages: &[AgentMessage], output: Option<PathBuf>, default_path: Option<PathBuf>) -> CoreResult<PathBuf> {
    let html = sessions::html::render(title, messages);
    let path = match (output, default_path) {
        (Some(p), _) => p,
        (None, Some(p)) => {
            // Beside the session file, in our own session directory.
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).map_err(|e| CoreError::Internal(format!("could not create {}: {e}", dir.display())))?;
            }
            p
        }
        (None, None) => return Err(CoreError::InvalidParams("This session is in memory only (--no-session): give outputPath".into())),
    };
    // An explicit outputPath is written as given: a missing directory fails as in pi (no
    // directories are created on the host's behalf).
    std::fs::write(&path, html).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => CoreError::NotFound(format!("ENOENT: no such file or directory, open '{}'", path.display())),
        _ => CoreError::Internal(format!("could not write {}: {e}", path.display())),
    })?;
    Ok(path.canonicalize().unwrap_or(path))
}
