//! A session's settings as ACP config options (`configOptions` in the `session/new`,
//! `session/load` and `session/resume` answers; `session/set_config_option` changes one and
//! answers them all; a change made another way goes out as `config_option_update`).
//!
//! | id | category | values |
//! |---|---|---|
//! | `model` | `model` | every model of the catalogue, as `provider/id` |
//! | `thought_level` | `thought_level` | the model's thinking levels (only for a model with levels) |
//! | `mode` | `mode` | the session modes of [`super::modes`] |
//!
//! An agent that names its settings itself ([`AgentCore::settings`]: an ACP agent behind the
//! bridge) has those instead, each a select as it gave it, and a change goes to it.

use super::modes;
use crate::core::{AgentCore, Setting};
use crate::jsonrpc::Error;
use crate::protocol::acp::{SessionConfigId, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionConfigSelectOptions, SessionConfigValueId};
use crate::protocol::ThinkingLevel;

/// The model selector's id.
pub const MODEL: &str = "model";
/// The thinking level selector's id.
pub const THOUGHT_LEVEL: &str = "thought_level";
/// The approval mode selector's id.
pub const MODE: &str = "mode";

fn value(value: &str, name: &str, description: Option<String>) -> SessionConfigSelectOption {
    let option = SessionConfigSelectOption::new(name, SessionConfigValueId(value.to_owned()));
    match description {
        Some(description) => option.with_description(description),
        None => option,
    }
}

fn select(id: &str, name: &str, description: &str, current: String, options: Vec<SessionConfigSelectOption>) -> SessionConfigOption {
    SessionConfigOption::Variant0 {
        category: Some(SessionConfigOptionCategory(id.to_owned())),
        current_value: SessionConfigValueId(current),
        description: Some(description.to_owned()),
        id: SessionConfigId(id.to_owned()),
        meta: None,
        name: name.to_owned(),
        options: SessionConfigSelectOptions::Ungrouped(options),
        type_: "select".to_owned(),
    }
}

/// A setting the agent names itself, as the select it was.
pub(crate) fn setting(s: &Setting) -> SessionConfigOption {
    let values = s.values.iter().map(|v| value(&v.value, &v.name, v.description.clone())).collect();
    SessionConfigOption::Variant0 {
        category: s.category.clone().map(SessionConfigOptionCategory),
        current_value: SessionConfigValueId(s.current.clone()),
        description: s.description.clone(),
        id: SessionConfigId(s.id.clone()),
        meta: None,
        name: s.name.clone(),
        options: SessionConfigSelectOptions::Ungrouped(values),
        type_: "select".to_owned(),
    }
}

/// `provider/id`, the model selector's value for a model.
fn model_value(model: &crate::protocol::Model) -> String {
    format!("{}/{}", *model.provider, *model.id)
}

/// The session's config options with their current values.
/// An agent that names no model, no thinking level or no approval mode has no such option.
pub fn options(agent: &impl AgentCore) -> Vec<SessionConfigOption> {
    if let Some(settings) = agent.settings() {
        return settings.iter().map(setting).collect();
    }
    let mut out = Vec::new();
    if let Some(current) = agent.current_model() {
        let models = agent.available_models().iter().map(|m| value(&model_value(m), &m.name, Some(model_value(m)))).collect();
        out.push(select(MODEL, "Model", "The model that answers the prompts", model_value(&current), models));
    }
    let levels = agent.available_thinking_levels();
    if let Some(level) = agent.thinking_level().filter(|_| levels.len() > 1) {
        let values = levels.iter().map(|l| value(&l.to_string(), &l.to_string(), None)).collect();
        out.push(select(THOUGHT_LEVEL, "Thinking", "How much the model reasons before it answers", level.to_string(), values));
    }
    if let Some(policy) = agent.approval_policy() {
        let mode = modes::state(policy);
        let values = mode.available_modes.iter().map(|m| value(&m.id.0, &m.name, m.description.clone())).collect();
        out.push(select(MODE, "Mode", "When tool calls ask for permission", mode.current_mode_id.0, values));
    }
    out
}

fn unknown_value(config: &str, given: &str) -> Error {
    Error::invalid_params(format!("{given:?} is not a value of the config option {config:?}")).at("/value", "unknown value")
}

/// What `session/set_config_option` changes.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The model (`provider`, `id`).
    Model(String, String),
    /// The thinking level.
    ThoughtLevel(ThinkingLevel),
    /// The approval mode.
    Mode(crate::core::ApprovalPolicy),
    /// A setting the agent names itself (its id, the value).
    Setting(String, String),
}

/// Makes `change` in `agent`'s session (the model's context window goes to `context_window`);
/// returns the approval policy when the mode changed (v1 also tells the client of the mode).
pub async fn apply(agent: &impl AgentCore, context_window: &std::sync::Mutex<Option<u64>>, change: Change) -> Result<Option<crate::core::ApprovalPolicy>, Error> {
    match change {
        Change::Model(provider, id) => {
            agent.set_model(&provider, &id).await.map_err(|e| Error::internal(e.to_string()))?;
            *context_window.lock().unwrap_or_else(|e| e.into_inner()) = agent.current_model().map(|m| m.context_window);
        }
        Change::ThoughtLevel(level) => {
            agent.set_thinking_level(level).await.map_err(super::handler::core_error)?;
        }
        Change::Mode(policy) => {
            agent.set_approval_policy(policy).map_err(super::handler::core_error)?;
            return Ok(Some(policy));
        }
        Change::Setting(id, value) => {
            agent.set_setting(&id, &value).await.map_err(super::handler::core_error)?;
        }
    }
    Ok(None)
}

/// The change `config` = `given` stands for in `agent`'s session; -32602 naming `/configId`
/// or `/value` for an option or value the session does not have.
pub fn change(agent: &impl AgentCore, config: &str, given: &str) -> Result<Change, Error> {
    if let Some(settings) = agent.settings() {
        let setting = settings.iter().find(|s| s.id == config).ok_or_else(|| Error::invalid_params(format!("Unknown config option {config:?}")).at("/configId", "unknown config option"))?;
        if !setting.values.iter().any(|v| v.value == given) {
            return Err(unknown_value(config, given));
        }
        return Ok(Change::Setting(config.to_owned(), given.to_owned()));
    }
    let offered = options(agent).into_iter().any(|o| matches!(&o, SessionConfigOption::Variant0 { id, .. } if id.0 == config));
    if !offered {
        return Err(Error::invalid_params(format!("Unknown config option {config:?}")).at("/configId", "unknown config option"));
    }
    match config {
        MODEL => agent
            .available_models()
            .iter()
            .find(|m| model_value(m) == given)
            .map(|m| Change::Model(m.provider.to_string(), m.id.to_string()))
            .ok_or_else(|| unknown_value(config, given)),
        THOUGHT_LEVEL => given
            .parse::<ThinkingLevel>()
            .ok()
            .filter(|l| agent.available_thinking_levels().contains(l))
            .map(Change::ThoughtLevel)
            .ok_or_else(|| unknown_value(config, given)),
        _ => modes::policy(given).map(Change::Mode).map_err(|_| unknown_value(config, given)),
    }
}
