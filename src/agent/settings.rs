//! Settings: models, thinking levels, host tools, todos, automatic compaction and retry, and the
//! state snapshot.

use serde_json::Value;

use super::events::{AgentEvent, NoticeLevel};
use super::{nonempty, Agent, CoreError, CoreResult, State, StateExtras, StateVersion};
use crate::protocol::*;
use crate::providers::ModelSpec;
use crate::sessions::{ContextItem, Payload, Role};
use crate::tools::BUILTIN_TOOLS;

impl Agent {
    /// The state snapshot (`get_state`), without the tools and the system prompt.
    pub fn state_snapshot(&self) -> SessionState {
        self.versioned_state_snapshot().1
    }

    /// The state snapshot with the [`Agent::state_version`] it belongs to.
    pub fn versioned_state_snapshot(&self) -> (StateVersion, SessionState) {
        let st = self.state_for_reading();
        // Read before the snapshot: a change racing with it moves the version past this one.
        let version = self.version_of(&st);
        (version, self.snapshot_of(&st, StateExtras::default()))
    }

    /// The state snapshot with the `extras` asked for: the tools the model is offered
    /// (built-ins, host tools, MCP tools) and the system prompt, read under the same lock as
    /// the rest, so they belong to the same moment.
    pub fn state_snapshot_with(&self, extras: StateExtras) -> SessionState {
        self.snapshot_of(&self.state_for_reading(), extras)
    }

    fn snapshot_of(&self, st: &State, extras: StateExtras) -> SessionState {
        let queued = (st.steering.len() + st.follow_up.len()) as u64;
        let model = self.inner.models[st.current_model].info.clone();
        let window = model.context_window;
        SessionState {
            model: Some(model),
            thinking_level: Some(st.thinking),
            is_streaming: st.run.as_ref().is_some_and(|r| !r.finishing),
            is_compacting: st.compacting,
            steering_mode: st.steering_mode,
            follow_up_mode: st.follow_up_mode,
            interrupt_mode: Some(st.interrupt_mode),
            session_file: Self::session_file(st),
            session_id: nonempty(st.session.id()),
            session_name: st.session_name.clone(),
            auto_compaction_enabled: st.auto_compaction,
            auto_retry_enabled: Some(st.auto_retry),
            message_count: st.session.context().len() as u64,
            pending_message_count: Some(queued),
            queued_message_count: Some(queued),
            todo_phases: Some(st.todos.clone()),
            fast_mode_enabled: None,
            fast_mode_active: None,
            tokens_per_second: None,
            // Only on request: omp sends both in every answer (~70 KB).
            system_prompt: extras.system_prompt.then(|| vec![super::run::system_prompt(self)]),
            dump_tools: extras.tools.then(|| super::run::offered_tools(self, st)),
            context_usage: Some(Self::context_usage(st, window)),
        }
    }

    /// The model the agent uses now.
    pub fn current_model(&self) -> Model {
        self.current().info
    }

    /// Replaces the todo list.
    pub async fn set_todos(&self, phases: Vec<TodoPhase>) {
        self.state().todos.clone_from(&phases);
        self.emit(AgentEvent::TodosChanged { phases: &phases }).await;
    }

    /// Replaces the host's tools; every definition is checked first (names unique and not a
    /// built-in's, parameters an object JSON Schema). Returns the names.
    pub fn set_host_tools(&self, tools: Vec<HostToolDefinition>) -> CoreResult<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        for (i, tool) in tools.iter().enumerate() {
            let name = tool.name.to_string();
            if BUILTIN_TOOLS.contains(&name.as_str()) || (name == super::run::QUESTION_TOOL && self.port().supports_questions()) {
                return Err(CoreError::InvalidParams(format!("Host tool \"{name}\" conflicts with the built-in tool of that name")));
            }
            if names.contains(&name) {
                return Err(CoreError::InvalidParams(format!("Host tool names must be unique: \"{name}\" appears twice")));
            }
            if tool.parameters.get("type").and_then(Value::as_str) != Some("object") {
                return Err(CoreError::InvalidParams(format!("Host tool at index {i} (\"{name}\"): parameters must be a JSON Schema with \"type\": \"object\"")));
            }
            if let Err(e) = crate::tools::schema::ParameterSchema::compile(&tool.parameters) {
                return Err(CoreError::InvalidParams(format!("Host tool \"{name}\": parameters is not a valid JSON Schema: {e}")));
            }
            names.push(name);
        }
        self.state().host_tools = tools;
        Ok(names)
    }

    /// Selects a model by provider and id.
    pub async fn set_model(&self, provider: &str, model_id: &str) -> CoreResult<Model> {
        let index = self
            .inner
            .models
            .iter()
            .position(|m| *m.info.provider == *provider && *m.info.id == *model_id)
            .ok_or_else(|| CoreError::NotFound(format!("Model not found: {provider}/{model_id}")))?;
        self.select_model(index).await?;
        Ok(self.inner.models[index].info.clone())
    }

    /// Selects the next model; `None` when there is only one.
    pub async fn cycle_model(&self) -> Option<CycleModelResult> {
        if self.inner.models.len() < 2 {
            return None;
        }
        let next = (self.state().current_model + 1) % self.inner.models.len();
        let level = match self.select_model(next).await {
            Ok(level) => level,
            Err(e) => {
                let level = self.state().thinking;
                self.report_unsaved(e, level).await
            }
        };
        Some(CycleModelResult { model: self.inner.models[next].info.clone(), thinking_level: Some(level), is_scoped: false })
    }

    /// Every model the agent can use.
    pub fn available_models(&self) -> Vec<Model> {
        self.inner.models.iter().map(|m| m.info.clone()).collect()
    }

    /// Every model as `provider/id`, for pickers.
    pub(super) fn model_labels(&self) -> Vec<String> {
        self.inner.models.iter().map(|m| format!("{}/{}", *m.info.provider, *m.info.id)).collect()
    }

    /// Selects the model at `index` of [`Agent::available_models`]. Switching to a reasoning
    /// model while thinking is off turns it on at `medium`, as pi and omp do, so a host
    /// sees the same level after the switch as it would with them.
    /// The model is selected even when the change cannot be saved; the error says so.
    pub(super) async fn select_model(&self, index: usize) -> CoreResult<ThinkingLevel> {
        let spec = &self.inner.models[index];
        let requested = {
            let mut st = self.state();
            st.current_model = index;
            match st.thinking {
                ThinkingLevel::Off if spec.info.reasoning => ThinkingLevel::Medium,
                level => level,
            }
        };
        let saved = self.record_setting(Payload::ModelChange { provider: spec.info.provider.to_string(), model_id: spec.info.id.to_string() });
        let level = self.change_thinking(requested).await;
        saved.map(|()| level)
    }

    /// Tells the host that a change holds in memory but could not be saved (commands whose
    /// answer has no error form); returns `value`.
    pub(super) async fn report_unsaved<T>(&self, e: CoreError, value: T) -> T {
        self.emit(AgentEvent::Notice { level: NoticeLevel::Error, message: e.to_string() }).await;
        value
    }

    /// Sets the thinking level (clamped to what the model supports); returns the level set.
    pub async fn set_thinking_level(&self, level: ThinkingLevel) -> ThinkingLevel {
        self.change_thinking(level).await
    }

    /// The next thinking level of the model's cycle; `None` for models without reasoning.
    pub async fn cycle_thinking_level(&self) -> Option<ThinkingLevel> {
        let spec = self.current();
        if !spec.info.reasoning {
            return None;
        }
        let order = Self::levels(&spec);
        let current = self.state().thinking;
        let next = order.iter().position(|l| *l == current).map_or(ThinkingLevel::Off, |i| order[(i + 1) % order.len()]);
        Some(self.change_thinking(next).await)
    }

    /// The thinking level in force.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.state().thinking
    }

    /// The thinking levels of the current model, in cycling order.
    pub fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        Self::levels(&self.current())
    }

    /// Turns automatic compaction on or off.
    pub fn set_auto_compaction(&self, enabled: bool) {
        self.state().auto_compaction = enabled;
    }

    /// Turns automatic retry on or off.
    pub fn set_auto_retry(&self, enabled: bool) {
        self.state().auto_retry = enabled;
    }

    /// Ends a retry back-off in progress; returns once `RetryEnd` is out (the run then ends
    /// aborted). Nothing to do otherwise.
    /// Cancels the retry back-off in progress (if any) and returns once `RetryEnd` is out;
    /// the run goes on to its end once the returned start goes (after this command's answer).
    pub async fn abort_retry(&self) -> crate::core::Start {
        let wait = self.state().retry.clone();
        let Some(mut wait) = wait else { return crate::core::Start::none() };
        let resume = wait.resume.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
        wait.cancel.cancel();
        let _ = wait.ended.wait_for(|e| *e).await;
        resume
    }

    /// `level` clamped to what `spec` supports (`xhigh` only where the model accepts it;
    /// `auto` is `medium`; models without reasoning are always `off`).
    pub(super) fn effective_level(spec: &ModelSpec, level: ThinkingLevel) -> ThinkingLevel {
        if !spec.info.reasoning {
            return ThinkingLevel::Off;
        }
        match level {
            ThinkingLevel::Xhigh | ThinkingLevel::Max if spec.supports_xhigh => ThinkingLevel::Xhigh,
            ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
            ThinkingLevel::Auto => ThinkingLevel::Medium,
            other => other,
        }
    }

    async fn change_thinking(&self, level: ThinkingLevel) -> ThinkingLevel {
        let level = Self::effective_level(&self.current(), level);
        let changed = {
            let mut st = self.state();
            let changed = st.thinking != level;
            st.thinking = level;
            changed
        };
        if changed {
            if let Err(e) = self.record_setting(Payload::ThinkingLevel(level)) {
                self.report_unsaved(e, ()).await;
            }
            self.emit(AgentEvent::ThinkingLevelChanged { level }).await;
        }
        level
    }

    fn levels(spec: &ModelSpec) -> Vec<ThinkingLevel> {
        if !spec.info.reasoning {
            return vec![ThinkingLevel::Off];
        }
        let mut levels = vec![ThinkingLevel::Off, ThinkingLevel::Minimal, ThinkingLevel::Low, ThinkingLevel::Medium, ThinkingLevel::High];
        if spec.supports_xhigh {
            levels.push(ThinkingLevel::Xhigh);
        }
        levels
    }

    pub(super) fn context_usage(st: &State, window: u64) -> ContextUsage {
        // Only the last assistant message is parsed.
        let last = st.session.context().iter().rev().find(|m| m.role() == Some(Role::Assistant)).and_then(ContextItem::message);
        let tokens = if let Some(AgentMessage::Assistant(a)) = last { Some(a.usage.total_tokens) } else { None };
        ContextUsage { tokens, context_window: window, percent: tokens.map(|t| t as f64 * 100.0 / window.max(1) as f64) }
    }
}
