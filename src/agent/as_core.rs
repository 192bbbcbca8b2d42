//! The built-in [`Agent`] as the core's interface: it controls its own runs and implements every
//! method of [`AgentCore`].

use std::path::PathBuf;
use std::time::Duration;

use super::Agent;
use crate::core::{AgentCore, ApprovalPolicy, BashOutput, Capabilities, CoreResult, QueueKind, RunControl, Start, StateExtras, StateVersion, Submitted};
use crate::mcp::{McpServerConfig, StartFailure};
use crate::protocol::*;
use crate::core::messages::{MessagesJson, MessagesPageJson};

/// The built-in agent controls its own runs.
impl RunControl for Agent {
    async fn abort(&self) {
        Agent::abort(self).await;
    }
    fn cancel_now(&self) {
        Agent::cancel_now(self);
    }
    fn is_running(&self) -> bool {
        Agent::is_running(self)
    }
    async fn settled(&self) {
        Agent::settled(self).await;
    }
    fn session_id(&self) -> String {
        Agent::session_id(self)
    }
}

/// The built-in agent implements every method.
impl AgentCore for Agent {
    type Control = Agent;
    fn control(&self) -> &Agent {
        self
    }
    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        Agent::prompt(self, text, images, queue).await
    }
    fn capabilities(&self) -> Capabilities {
        let images = self.current_model().input.contains(&InputKind::Image);
        Capabilities {
            sessions: Agent::session_path(self).is_some(),
            fork: Agent::session_path(self).is_some(),
            titles: Agent::session_path(self).is_some(),
            images,
            host_tools: true,
            dialogs: true,
            mcp: true,
            additional_directories: true,
            auth: true,
            approval: Some(self.config().approval),
        }
    }
    async fn shutdown(&self) {
        Agent::shutdown(self).await;
    }
    async fn steer(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        Agent::steer(self, text, images).await
    }
    async fn follow_up(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        Agent::follow_up(self, text, images).await
    }
    async fn abort_and_prompt(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        Ok(Agent::abort_and_prompt(self, text, images).await)
    }
    fn check_input(&self, images: &[ImageContent]) -> CoreResult<()> {
        Agent::check_input(self, images)
    }
    fn refuse_as_run(&self, reason: String) -> CoreResult<Submitted> {
        Agent::refuse_as_run(self, reason)
    }
    fn commands(&self) -> CommandsResult {
        Agent::commands(self)
    }
    fn state_snapshot(&self) -> SessionState {
        Agent::state_snapshot(self)
    }
    fn state_snapshot_with(&self, extras: StateExtras) -> CoreResult<SessionState> {
        Ok(Agent::state_snapshot_with(self, extras))
    }
    fn state_version(&self) -> Option<StateVersion> {
        Some(Agent::state_version(self))
    }
    fn versioned_state_snapshot(&self) -> (Option<StateVersion>, SessionState) {
        let (version, snapshot) = Agent::versioned_state_snapshot(self);
        (Some(version), snapshot)
    }
    fn current_model(&self) -> Option<Model> {
        Some(Agent::current_model(self))
    }
    fn available_models(&self) -> Vec<Model> {
        Agent::available_models(self)
    }
    async fn set_model(&self, provider: &str, model_id: &str) -> CoreResult<Model> {
        Agent::set_model(self, provider, model_id).await
    }
    async fn cycle_model(&self) -> CoreResult<Option<CycleModelResult>> {
        Ok(Agent::cycle_model(self).await)
    }
    fn thinking_level(&self) -> Option<ThinkingLevel> {
        Some(Agent::thinking_level(self))
    }
    fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        Agent::available_thinking_levels(self)
    }
    async fn set_thinking_level(&self, level: ThinkingLevel) -> CoreResult<ThinkingLevel> {
        Ok(Agent::set_thinking_level(self, level).await)
    }
    async fn cycle_thinking_level(&self) -> CoreResult<Option<ThinkingLevel>> {
        Ok(Agent::cycle_thinking_level(self).await)
    }
    fn set_steering_mode(&self, mode: QueueMode) -> CoreResult<()> {
        Agent::set_steering_mode(self, mode);
        Ok(())
    }
    fn set_follow_up_mode(&self, mode: QueueMode) -> CoreResult<()> {
        Agent::set_follow_up_mode(self, mode);
        Ok(())
    }
    fn set_interrupt_mode(&self, mode: InterruptMode) -> CoreResult<()> {
        Agent::set_interrupt_mode(self, mode);
        Ok(())
    }
    fn set_auto_compaction(&self, enabled: bool) -> CoreResult<()> {
        Agent::set_auto_compaction(self, enabled);
        Ok(())
    }
    fn set_auto_retry(&self, enabled: bool) -> CoreResult<()> {
        Agent::set_auto_retry(self, enabled);
        Ok(())
    }
    async fn abort_retry(&self) -> CoreResult<Start> {
        Ok(Agent::abort_retry(self).await)
    }
    async fn set_todos(&self, phases: Vec<TodoPhase>) -> CoreResult<()> {
        Agent::set_todos(self, phases).await;
        Ok(())
    }
    fn set_host_tools(&self, tools: Vec<HostToolDefinition>) -> CoreResult<Vec<String>> {
        Agent::set_host_tools(self, tools)
    }
    fn approval_policy(&self) -> Option<ApprovalPolicy> {
        Some(Agent::approval_policy(self))
    }
    fn set_approval_policy(&self, policy: ApprovalPolicy) -> CoreResult<()> {
        Agent::set_approval_policy(self, policy)
    }
    fn set_additional_roots(&self, roots: Vec<PathBuf>) -> CoreResult<()> {
        Agent::set_additional_roots(self, roots);
        Ok(())
    }
    async fn start_mcp(&self, configs: &[McpServerConfig], bound: Duration) -> Vec<StartFailure> {
        Agent::start_mcp(self, configs, bound).await
    }
    async fn compact(&self, custom_instructions: Option<&str>) -> CoreResult<CompactionResult> {
        Agent::compact(self, custom_instructions).await
    }
    async fn bash(&self, command: &str, timeout: Option<Duration>, output: BashOutput) -> CoreResult<BashResult> {
        Agent::bash(self, command, timeout, output).await
    }
    fn abort_bash(&self) -> CoreResult<()> {
        Agent::abort_bash(self);
        Ok(())
    }
    fn session_name(&self) -> Option<String> {
        Agent::session_name(self)
    }
    fn session_path(&self) -> Option<PathBuf> {
        Agent::session_path(self)
    }
    fn save_session(&self) -> CoreResult<()> {
        Agent::save_session(self)
    }
    async fn new_session(&self, parent: Option<String>) -> CoreResult<()> {
        Agent::new_session(self, parent).await;
        Ok(())
    }
    async fn switch_session(&self, path: &str) -> CoreResult<()> {
        Agent::switch_session(self, path).await
    }
    async fn branch(&self, entry_id: &str, verb: &str) -> CoreResult<String> {
        Agent::branch(self, entry_id, verb).await
    }
    async fn clone_session(&self) -> CoreResult<()> {
        Agent::clone_session(self).await
    }
    fn branch_points(&self) -> CoreResult<BranchMessages> {
        Ok(Agent::branch_points(self))
    }
    fn last_assistant_text(&self) -> CoreResult<Option<String>> {
        Ok(Agent::last_assistant_text(self))
    }
    async fn set_session_name(&self, name: &str) -> CoreResult<()> {
        Agent::set_session_name(self, name).await
    }
    fn session_stats(&self) -> CoreResult<SessionStats> {
        Ok(Agent::session_stats(self))
    }
    async fn export_html(&self, output: Option<&str>) -> CoreResult<PathBuf> {
        Agent::export_html(self, output).await
    }
    fn messages(&self) -> CoreResult<Vec<AgentMessage>> {
        Ok(Agent::messages(self))
    }
    fn messages_json(&self) -> CoreResult<MessagesJson> {
        Ok(Agent::messages_json(self))
    }
    fn messages_page(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPage> {
        Agent::messages_page(self, cursor, limit)
    }
    fn messages_page_json(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPageJson> {
        Agent::messages_page_json(self, cursor, limit)
    }
    async fn list_sessions(&self, all: bool) -> CoreResult<SessionList> {
        Agent::list_sessions(self, all).await
    }
    fn tree(&self) -> CoreResult<SessionTree> {
        Ok(Agent::tree(self))
    }
    fn entries(&self, since: Option<&str>) -> CoreResult<SessionEntries> {
        Agent::entries(self, since)
    }
    async fn clear_queue(&self) -> CoreResult<ClearedQueue> {
        Ok(Agent::clear_queue(self).await)
    }
}
