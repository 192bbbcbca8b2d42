//! The generated [`RpcHandler`] trait, implemented by mapping each JSONL command onto the core.
//! Nothing here decides agent behaviour: it unpacks the command, calls the core and packs the
//! answer (errors through [`super::rpc_error`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::{rpc_error, RpcHost};
use crate::core::{AgentCore, AgentInfo, ApprovalPolicy, CoreError, QueueKind, StateExtras, StateVersion, Submitted};
use crate::protocol::rpc_reply::{self, RpcSuccess};
use crate::protocol::*;
use crate::transport::chunk::{MAX_FRAME_BYTES, MAX_REASSEMBLED_FRAME_BYTES};
use crate::transport::FrameBatch;

/// One JSONL session: the core (the built-in [`Agent`], or any [`AgentCore`]) and this
/// dialect's host side.
pub struct RpcSession<A> {
    agent: Arc<A>,
    host: Arc<RpcHost>,
    max_line_bytes: usize,
    info: Arc<AgentInfo>,
    /// The last plain `get_state` answer and the core's state version it was built at.
    state_cache: Arc<Mutex<Option<(StateVersion, KeptState)>>>,
}

/// A plain `get_state` answer kept while the state is unchanged: the frame's text after its
/// opening brace and `id` member (`"type":"response",…,"data":{…}}`), so that each answer is
/// its id and one copy, byte for byte what the typed [`RpcSuccess`] encodes (the test below).
#[derive(Debug)]
struct KeptState(Box<[u8]>);

impl KeptState {
    /// The answer's text for `data`, without an id.
    fn encode(data: &SessionState) -> Result<Self, serde_json::Error> {
        let mut text = Vec::with_capacity(1024);
        crate::transport::json::write_json(&mut text, &RpcSuccess { id: None, command: GetStateCommand::COMMAND, data: Some(data) })?;
        // `{` + the members: the brace is written again per answer, with the id after it.
        Ok(Self(text.get(1..).unwrap_or_default().into()))
    }

    /// Appends the answer to the request `id` (ids restored and LF added by `push_with`).
    fn write(&self, id: Option<&Value>, batch: &mut FrameBatch) {
        let _ = batch.push_with(|out| {
            out.reserve(self.0.len() + 24);
            match id {
                Some(id) => {
                    out.extend_from_slice(b"{\"id\":");
                    crate::transport::json::write_json(out, id)?;
                    out.push(b',');
                }
                None => out.push(b'{'),
            }
            out.extend_from_slice(&self.0);
            Ok(())
        });
    }
}

impl<A> Clone for RpcSession<A> {
    fn clone(&self) -> Self {
        Self { agent: self.agent.clone(), host: self.host.clone(), max_line_bytes: self.max_line_bytes, info: self.info.clone(), state_cache: self.state_cache.clone() }
    }
}

impl<A> std::fmt::Debug for RpcSession<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcSession").field("host", &self.host).field("max_line_bytes", &self.max_line_bytes).finish_non_exhaustive()
    }
}

fn id_value(id: Option<&RequestId>) -> Option<Value> {
    id.and_then(|id| serde_json::to_value(id).ok())
}

/// What a `get_state` asks for beyond the plain state.
fn state_extras(cmd: &GetStateCommand) -> StateExtras {
    StateExtras::default().with_tools(cmd.dump_tools == Some(true)).with_system_prompt(cmd.system_prompt == Some(true))
}

fn images(list: Option<Vec<ImageContent>>) -> Vec<ImageContent> {
    list.unwrap_or_default()
}

impl<A: AgentCore> RpcSession<A> {
    /// A session of `agent` whose host side is `host`; `max_line_bytes` (the inbound line
    /// limit) is advertised in `ready` as `maxLineBytes`.
    pub fn new(agent: A, host: Arc<RpcHost>, max_line_bytes: usize) -> Self {
        Self { agent: Arc::new(agent), host, max_line_bytes, info: Arc::default(), state_cache: Arc::default() }
    }

    /// The same, naming the agent `info` in `ready` (agentwire's own name by default).
    #[must_use]
    pub fn with_info(mut self, info: AgentInfo) -> Self {
        self.info = Arc::new(info);
        self
    }

    /// The core.
    pub fn agent(&self) -> &A {
        &self.agent
    }

    /// Answers `get_messages` straight into `batch`: the stored message text is copied into the
    /// frame, so a big session's answer exists once (the typed [`RpcHandler::get_messages`]
    /// would hold every message typed, then as text, then again in the batch). The frame is the
    /// one the typed answer would make, with each message as the session file holds it.
    pub fn write_messages(&self, id: Option<Value>, batch: &mut FrameBatch) {
        let data = match self.agent.messages_json() {
            Ok(data) => data,
            Err(e) => {
                let _ = batch.push(&rpc_reply::rpc_response::<()>(id, GetMessagesCommand::COMMAND, Err(rpc_error(e))));
                return;
            }
        };
        // The whole frame: the data, the id and the rest of the envelope (well under 128 bytes).
        let id_len = id.as_ref().and_then(|id| serde_json::to_string(id).ok()).map_or(0, |s| s.len());
        batch.reserve(data.json_len() + id_len + 128);
        let _ = batch.push(&RpcSuccess { id: id.as_ref(), command: GetMessagesCommand::COMMAND, data: Some(&data) });
    }

    /// Answers `get_state` straight into `batch`. The plain answer's JSON text is kept while the
    /// core's [`AgentCore::state_version`] stays the same (any change of the state moves it), so
    /// a host polling the state pays for a copy of the text, not for a new snapshot and its
    /// encoding each time. An answer with the tools or the system prompt (asked for with
    /// `dumpTools` / `systemPrompt`) is built afresh each time and never kept: it cannot be
    /// confused with the plain one. The frame is the typed answer's.
    pub fn write_state(&self, id: Option<Value>, cmd: &GetStateCommand, batch: &mut FrameBatch) {
        let extras = state_extras(cmd);
        if extras.any() {
            let _ = batch.push(&rpc_reply::rpc_response(id, GetStateCommand::COMMAND, self.agent.state_snapshot_with(extras).map(Some).map_err(rpc_error)));
            return;
        }
        let Some(version) = self.agent.state_version() else {
            // A core that keeps no version: every answer is built afresh.
            let _ = batch.push(&RpcSuccess { id: id.as_ref(), command: GetStateCommand::COMMAND, data: Some(&self.agent.state_snapshot()) });
            return;
        };
        let mut cache = self.state_cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.as_ref().is_none_or(|(at, _)| *at != version) {
            // Kept under the version it was built at (a change since `version` was read
            // makes it older than the state, and the next call builds it again).
            let (at, snapshot) = self.agent.versioned_state_snapshot();
            match (at, KeptState::encode(&snapshot)) {
                (Some(at), Ok(kept)) => *cache = Some((at, kept)),
                // Not expected (the snapshot always encodes, a versioned core versions its
                // snapshots): answered as the typed path would.
                _ => {
                    let _ = batch.push(&rpc_reply::rpc_response(id, GetStateCommand::COMMAND, Ok(Some(snapshot))));
                    return;
                }
            }
        }
        if let Some((_, kept)) = cache.as_ref() {
            kept.write(id.as_ref(), batch);
        }
    }

    /// Answers `get_messages_page` straight into `batch`, its messages as stored like
    /// [`RpcSession::write_messages`]'s (so both commands show a message the same way); only the
    /// page's messages are touched.
    pub fn write_messages_page(&self, id: Option<Value>, cmd: &GetMessagesPageCommand, batch: &mut FrameBatch) {
        let _ = match self.agent.messages_page_json(cmd.cursor.as_deref(), cmd.limit.map(u64::from)) {
            Ok(page) => batch.push(&RpcSuccess { id: id.as_ref(), command: GetMessagesPageCommand::COMMAND, data: Some(&page) }),
            Err(e) => batch.push(&rpc_reply::rpc_response::<()>(id, GetMessagesPageCommand::COMMAND, Err(rpc_error(e)))),
        };
    }

    /// The host side (sub-protocol answers go there).
    pub fn host(&self) -> &RpcHost {
        &self.host
    }

    /// The `ready` frame written first.
    pub fn ready_frame(&self) -> ReadyEvent {
        let can = self.agent.capabilities();
        let approval = can.approval.map(|policy| match policy {
            ApprovalPolicy::Never => ReadyCapabilitiesApproval::Never,
            ApprovalPolicy::Dangerous => ReadyCapabilitiesApproval::Dangerous,
            ApprovalPolicy::Always => ReadyCapabilitiesApproval::Always,
        });
        // `sessions`: whether this process keeps the session on disk (off with --no-session).
        // `extensionUi` is on whatever the core: its approvals reach this host as
        // `extension_ui_request` selects even when it has no dialogs of its own (a wire or ACP
        // agent behind the bridge).
        let capabilities = ReadyCapabilities { host_tools: can.host_tools, extension_ui: true, prompt_result: true, sessions: can.sessions, approval };
        // omp's figures: protocol 1 until `negotiate_protocol`, 1 MiB physical frames after it,
        // 64 MiB reassembled; the inbound line limit is a figure of its own.
        ReadyEvent::new(1, MAX_FRAME_BYTES as u64)
            .with_supported_protocol_versions(Some(vec![1, 2]))
            .with_max_reassembled_frame_bytes(Some(MAX_REASSEMBLED_FRAME_BYTES as u64))
            .with_max_line_bytes(Some(self.max_line_bytes as u64))
            .with_agent(Some(self.info.name.clone()))
            .with_agent_version(Some(self.info.version.clone()))
            .with_dialect(Some(ReadyEventDialect::Rpc))
            .with_capabilities(Some(capabilities))
    }

    fn started(&self, submitted: Submitted, id: Option<&RequestId>) {
        if let Submitted::Started(prompt) = submitted {
            self.host.expect_result(prompt.id(), id_value(id));
        }
        self.go_on_after_answer();
    }

    /// The run this command started (or the retry it cancelled) goes on once the command's
    /// answer is queued: the host hears "accepted" before the run's first event.
    fn go_on_after_answer(&self) {
        let agent = self.agent.clone();
        crate::jsonrpc::answer::on_answer(move |_| agent.release_gates());
    }
}

impl<A: AgentCore> RpcHandler for RpcSession<A> {
    async fn prompt(&self, cmd: PromptCommand) -> Result<Option<PromptAccepted>, RpcError> {
        let queue = cmd.streaming_behavior.map(|b| match b {
            PromptCommandStreamingBehavior::Steer => QueueKind::Steer,
            PromptCommandStreamingBehavior::FollowUp => QueueKind::FollowUp,
        });
        let submitted = match self.agent.prompt(cmd.message, images(cmd.images), queue).await {
            // Content the model cannot take (an image for a text-only model): the prompt is
            // accepted and its run fails at once with the reason, so a host waiting for
            // agent_end (pi's RpcClient ignores `success`) is not left hanging.
            Err(CoreError::Unsupported(reason)) if queue.is_none() => self.agent.refuse_as_run(reason).map_err(rpc_error)?,
            other => other.map_err(rpc_error)?,
        };
        self.started(submitted, cmd.id.as_ref());
        Ok(None)
    }

    async fn steer(&self, cmd: SteerCommand) -> Result<Option<QueuedInputAccepted>, RpcError> {
        let submitted = self.agent.steer(cmd.message, images(cmd.images)).await.map_err(rpc_error)?;
        self.started(submitted, cmd.id.as_ref());
        Ok(None)
    }

    async fn follow_up(&self, cmd: FollowUpCommand) -> Result<Option<QueuedInputAccepted>, RpcError> {
        let submitted = self.agent.follow_up(cmd.message, images(cmd.images)).await.map_err(rpc_error)?;
        self.started(submitted, cmd.id.as_ref());
        Ok(None)
    }

    async fn abort(&self, _cmd: AbortCommand) -> Result<(), RpcError> {
        self.agent.abort().await;
        Ok(())
    }

    async fn abort_and_prompt(&self, cmd: AbortAndPromptCommand) -> Result<(), RpcError> {
        let images = images(cmd.images);
        // Refused before anything is aborted: the running prompt is not lost to a bad one.
        self.agent.check_input(&images).map_err(rpc_error)?;
        let submitted = self.agent.abort_and_prompt(cmd.message, images).await.map_err(rpc_error)?;
        self.started(submitted, cmd.id.as_ref());
        Ok(())
    }

    async fn new_session(&self, cmd: NewSessionCommand) -> Result<CancelledResult, RpcError> {
        self.agent.new_session(cmd.parent_session).await.map_err(rpc_error)?;
        Ok(CancelledResult { cancelled: false })
    }

    async fn get_state(&self, cmd: GetStateCommand) -> Result<SessionState, RpcError> {
        self.agent.state_snapshot_with(state_extras(&cmd)).map_err(rpc_error)
    }

    async fn set_todos(&self, cmd: SetTodosCommand) -> Result<TodoPhasesResult, RpcError> {
        self.agent.set_todos(cmd.phases.clone()).await.map_err(rpc_error)?;
        Ok(TodoPhasesResult { todo_phases: cmd.phases })
    }

    async fn set_host_tools(&self, cmd: SetHostToolsCommand) -> Result<HostToolNames, RpcError> {
        let tool_names = self.agent.set_host_tools(cmd.tools).map_err(rpc_error)?;
        Ok(HostToolNames { tool_names })
    }

    async fn set_model(&self, cmd: SetModelCommand) -> Result<Model, RpcError> {
        self.agent.set_model(&cmd.provider, &cmd.model_id).await.map_err(rpc_error)
    }

    async fn cycle_model(&self, _cmd: CycleModelCommand) -> Result<Option<CycleModelResult>, RpcError> {
        self.agent.cycle_model().await.map_err(rpc_error)
    }

    async fn get_available_models(&self, _cmd: GetAvailableModelsCommand) -> Result<AvailableModels, RpcError> {
        Ok(AvailableModels { models: self.agent.available_models() })
    }

    async fn set_thinking_level(&self, cmd: SetThinkingLevelCommand) -> Result<(), RpcError> {
        self.agent.set_thinking_level(cmd.level).await.map_err(rpc_error)?;
        Ok(())
    }

    async fn cycle_thinking_level(&self, _cmd: CycleThinkingLevelCommand) -> Result<Option<ThinkingLevelResult>, RpcError> {
        Ok(self.agent.cycle_thinking_level().await.map_err(rpc_error)?.map(|level| ThinkingLevelResult { level }))
    }

    async fn get_available_thinking_levels(&self, _cmd: GetAvailableThinkingLevelsCommand) -> Result<AvailableThinkingLevels, RpcError> {
        Ok(AvailableThinkingLevels { levels: self.agent.available_thinking_levels() })
    }

    async fn set_steering_mode(&self, cmd: SetSteeringModeCommand) -> Result<(), RpcError> {
        self.agent.set_steering_mode(cmd.mode).map_err(rpc_error)?;
        Ok(())
    }

    async fn set_follow_up_mode(&self, cmd: SetFollowUpModeCommand) -> Result<(), RpcError> {
        self.agent.set_follow_up_mode(cmd.mode).map_err(rpc_error)?;
        Ok(())
    }

    async fn set_interrupt_mode(&self, cmd: SetInterruptModeCommand) -> Result<(), RpcError> {
        self.agent.set_interrupt_mode(cmd.mode).map_err(rpc_error)?;
        Ok(())
    }

    async fn compact(&self, cmd: CompactCommand) -> Result<CompactionResult, RpcError> {
        self.agent.compact(cmd.custom_instructions.as_deref()).await.map_err(rpc_error)
    }

    async fn set_auto_compaction(&self, cmd: SetAutoCompactionCommand) -> Result<(), RpcError> {
        self.agent.set_auto_compaction(cmd.enabled).map_err(rpc_error)?;
        Ok(())
    }

    async fn negotiate_protocol(&self, cmd: NegotiateProtocolCommand) -> Result<NegotiatedProtocol, RpcError> {
        // omp accepts 2 only; 1 is where every stream starts, not something to negotiate.
        if cmd.protocol_version != 2 {
            return Err(RpcError::new(RpcErrorCode::Unsupported, format!("Unsupported RPC protocol version: {}", cmd.protocol_version)));
        }
        self.host.outbox().split_large_frames(MAX_FRAME_BYTES);
        Ok(NegotiatedProtocol { protocol_version: 2 })
    }

    async fn set_event_options(&self, cmd: SetEventOptionsCommand) -> Result<(), RpcError> {
        self.host.set_partial_messages(cmd.partial_messages);
        Ok(())
    }

    async fn set_auto_retry(&self, cmd: SetAutoRetryCommand) -> Result<(), RpcError> {
        self.agent.set_auto_retry(cmd.enabled).map_err(rpc_error)?;
        Ok(())
    }

    async fn abort_retry(&self, _cmd: AbortRetryCommand) -> Result<(), RpcError> {
        self.agent.abort_retry().await.map_err(rpc_error)?;
        self.go_on_after_answer();
        Ok(())
    }

    async fn bash(&self, cmd: BashCommand) -> Result<BashResult, RpcError> {
        let timeout = cmd.timeout_ms.map(Duration::from_millis);
        if !self.host.profile().is_current() {
            return self.agent.bash(&cmd.command, timeout, Box::new(|_: &str| {})).await.map_err(rpc_error);
        }
        // The output is queued by whichever task runs the command and written from here, so
        // every `bash_execution_update` goes out before the response; the queue ends when the
        // command's callback is dropped with its run.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let run = self.agent.bash(
            &cmd.command,
            timeout,
            Box::new(move |delta: &str| {
                let _ = tx.send(delta.to_owned());
            }),
        );
        let id = cmd.id.clone();
        let out = self.host.outbox();
        let forward = async {
            while let Some(delta) = rx.recv().await {
                let _ = out.send(&BashExecutionUpdateEvent::new(crate::protocol::nonempty(&delta)).with_id(id.clone())).await;
            }
        };
        let (result, ()) = tokio::join!(run, forward);
        result.map_err(rpc_error)
    }

    async fn abort_bash(&self, _cmd: AbortBashCommand) -> Result<(), RpcError> {
        self.agent.abort_bash().map_err(rpc_error)?;
        Ok(())
    }

    async fn get_session_stats(&self, _cmd: GetSessionStatsCommand) -> Result<SessionStats, RpcError> {
        self.agent.session_stats().map_err(rpc_error)
    }

    async fn export_html(&self, cmd: ExportHtmlCommand) -> Result<ExportResult, RpcError> {
        let path = self.agent.export_html(cmd.output_path.as_deref()).await.map_err(rpc_error)?;
        Ok(ExportResult { path: crate::protocol::nonempty(&path.display().to_string()) })
    }

    async fn switch_session(&self, cmd: SwitchSessionCommand) -> Result<CancelledResult, RpcError> {
        self.agent.switch_session(cmd.session_path.as_str()).await.map_err(rpc_error)?;
        Ok(CancelledResult { cancelled: false })
    }

    async fn branch(&self, cmd: BranchCommand) -> Result<BranchResult, RpcError> {
        let text = self.agent.branch(&cmd.entry_id, "branching").await.map_err(rpc_error)?;
        Ok(BranchResult { text, cancelled: false })
    }

    async fn fork(&self, cmd: ForkCommand) -> Result<BranchResult, RpcError> {
        let text = self.agent.branch(&cmd.entry_id, "forking").await.map_err(rpc_error)?;
        Ok(BranchResult { text, cancelled: false })
    }

    async fn clone(&self, _cmd: CloneCommand) -> Result<CancelledResult, RpcError> {
        self.agent.clone_session().await.map_err(rpc_error)?;
        Ok(CancelledResult { cancelled: false })
    }

    async fn get_branch_messages(&self, _cmd: GetBranchMessagesCommand) -> Result<BranchMessages, RpcError> {
        self.agent.branch_points().map_err(rpc_error)
    }

    async fn get_fork_messages(&self, _cmd: GetForkMessagesCommand) -> Result<BranchMessages, RpcError> {
        self.agent.branch_points().map_err(rpc_error)
    }

    async fn get_last_assistant_text(&self, _cmd: GetLastAssistantTextCommand) -> Result<LastAssistantText, RpcError> {
        Ok(LastAssistantText { text: self.agent.last_assistant_text().map_err(rpc_error)? })
    }

    async fn set_session_name(&self, cmd: SetSessionNameCommand) -> Result<(), RpcError> {
        self.agent.set_session_name(&cmd.name).await.map_err(rpc_error)
    }

    async fn get_messages(&self, _cmd: GetMessagesCommand) -> Result<MessagesResult, RpcError> {
        Ok(MessagesResult { messages: self.agent.messages().map_err(rpc_error)? })
    }

    async fn get_messages_page(&self, cmd: GetMessagesPageCommand) -> Result<MessagesPage, RpcError> {
        self.agent.messages_page(cmd.cursor.as_deref(), cmd.limit.map(u64::from)).map_err(rpc_error)
    }

    async fn get_commands(&self, _cmd: GetCommandsCommand) -> Result<CommandsResult, RpcError> {
        Ok(self.agent.commands())
    }

    async fn get_available_commands(&self, _cmd: GetAvailableCommandsCommand) -> Result<CommandsResult, RpcError> {
        Ok(self.agent.commands())
    }

    async fn list_sessions(&self, cmd: ListSessionsCommand) -> Result<SessionList, RpcError> {
        self.agent.list_sessions(matches!(cmd.scope, Some(ListSessionsCommandScope::All))).await.map_err(rpc_error)
    }

    async fn get_tree(&self, _cmd: GetTreeCommand) -> Result<SessionTree, RpcError> {
        self.agent.tree().map_err(rpc_error)
    }

    async fn get_entries(&self, cmd: GetEntriesCommand) -> Result<SessionEntries, RpcError> {
        self.agent.entries(cmd.since.as_ref().map(|s| s.as_str())).map_err(rpc_error)
    }

    async fn clear_queue(&self, _cmd: ClearQueueCommand) -> Result<ClearedQueue, RpcError> {
        self.agent.clear_queue().await.map_err(rpc_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state as the examples show it, with a string that needs escapes.
    fn state() -> SessionState {
        let line = crate::protocol::embedded::example_files()
            .iter()
            .find(|(name, _)| *name == "rpc-responses.jsonl")
            .and_then(|(_, text)| text.lines().find(|l| l.contains(r#""command":"get_state","success":true"#)))
            .expect("rpc-responses.jsonl has a get_state answer");
        let frame: Value = serde_json::from_str(line).unwrap();
        let mut state: SessionState = serde_json::from_value(frame["data"].clone()).unwrap();
        state.session_name = Some("a \"quoted\" name\n\u{2028}".into());
        state
    }

    /// The kept answer is byte for byte what the typed answer encodes, for every kind of id:
    /// none, numbers, strings, and raw tokens a `Value` cannot hold (restored by the writer).
    #[test]
    fn kept_state_answers_as_the_typed_frame_does() {
        let state = state();
        let kept = KeptState::encode(&state).unwrap();
        let raw = ["18446744073709551616", "1.0e3", r#""\u0041""#, r#""\ud800""#];
        let ids: Vec<Option<Value>> = [None, Some(Value::from(7)), Some(Value::from(-1)), Some(Value::from("st1")), Some(Value::from("é \"q\""))]
            .into_iter()
            .chain(raw.iter().map(|r| Some(crate::transport::raw_id::exact_id(r))))
            .collect();
        for id in ids {
            let mut fast = FrameBatch::default();
            kept.write(id.as_ref(), &mut fast);
            let mut typed = FrameBatch::default();
            typed.push(&RpcSuccess { id: id.as_ref(), command: GetStateCommand::COMMAND, data: Some(&state) }).unwrap();
            assert_eq!(String::from_utf8_lossy(fast.as_bytes()), String::from_utf8_lossy(typed.as_bytes()), "id {id:?}");
        }
        let mut one = FrameBatch::default();
        kept.write(Some(&crate::transport::raw_id::exact_id("18446744073709551616")), &mut one);
        assert!(one.as_bytes().starts_with(b"{\"id\":18446744073709551616,\"type\":\"response\""), "the raw id is restored");
    }
}
