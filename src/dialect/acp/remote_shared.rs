//! The pieces of the ACP remote agent ([`super::remote`]) that its versions' projections
//! ([`super::remote::RemoteVersion`]) call too: the refusals of a queue, the agent's
//! `thought_level` select as the core's thinking level, the approval asked of the host for a
//! permission request and the option it picks, the prompt's content blocks, and the text of a
//! tool call's arguments.

use serde_json::{Map, Value};

use crate::core::port::{Decision, FileChange};
use super::router::Router;
use crate::core::{AgentCore, CoreError, CoreResult, Setting, Submitted};
use crate::dialect::remote::approve;
use crate::protocol::{ImageContent, ThinkingLevel};

/// Why a queued prompt, a steer or a follow-up is refused.
const NO_QUEUE: &str = "ACP has no message queue: a prompt runs alone (cancel it, then prompt)";

/// The refusal of a prompt queued behind a run (`steer`, `follow_up`, a queued `prompt`).
pub(crate) fn no_queue() -> CoreResult<Submitted> {
    Err(CoreError::Unsupported(NO_QUEUE.into()))
}

/// A queued prompt is refused while a run works (a prompt alone starts one).
pub(crate) fn check_queue(queue: bool, running: bool) -> CoreResult<()> {
    if queue && running {
        return no_queue().map(drop);
    }
    Ok(())
}

/// The agent refused to open a session.
pub(crate) fn session_refused(e: impl std::fmt::Display) -> CoreError {
    CoreError::Internal(format!("the agent refused `session/new`: {e}"))
}

/// The agent's error answer to a request of ours.
pub(crate) fn agent_error(e: impl std::fmt::Display) -> CoreError {
    CoreError::Internal(format!("agent: {e}"))
}

/// The prompt's text, then its images, as one version's content blocks (`text` and `image`
/// build a block of each kind).
pub(crate) fn prompt_blocks<B>(text: &str, images: &[ImageContent], text_block: impl FnOnce(String) -> B, image_block: impl Fn(String, String) -> B) -> Vec<B> {
    let mut blocks = vec![text_block(text.to_owned())];
    blocks.extend(images.iter().map(|i| image_block(i.data.clone(), String::from(i.mime_type.clone()))));
    blocks
}

/// The agent's `thought_level` select config option: its id, current value and values.
pub(crate) struct Thinking {
    pub(crate) id: String,
    pub(crate) current: String,
    pub(crate) values: Vec<String>,
}

impl Thinking {
    /// The `thought_level` select among the session's settings (its select config options).
    pub(crate) fn of(settings: impl IntoIterator<Item = Setting>) -> Option<Self> {
        settings.into_iter().find(|s| s.category.as_deref() == Some("thought_level")).map(|s| Self { id: s.id, current: s.current, values: s.values.into_iter().map(|v| v.value).collect() })
    }

    /// The level it is at, if the core knows it.
    pub(crate) fn level(&self) -> Option<ThinkingLevel> {
        self.current.parse().ok()
    }

    /// The levels it offers that the core knows.
    pub(crate) fn levels(&self) -> Vec<ThinkingLevel> {
        self.values.iter().filter_map(|v| v.parse().ok()).collect()
    }

    /// The value to set for `level`, refused when the agent does not offer it.
    pub(crate) fn value(&self, level: ThinkingLevel) -> CoreResult<String> {
        let value = level.to_string();
        if !self.values.contains(&value) {
            return Err(CoreError::InvalidParams(format!("Thinking level {value} is not offered by the agent (it offers {})", self.values.join(", "))));
        }
        Ok(value)
    }

    /// `thinking`, or the refusal of an agent that has no `thought_level` option.
    pub(crate) fn required(thinking: Option<Self>) -> CoreResult<Self> {
        thinking.ok_or_else(|| CoreError::Unsupported("thinking levels are not available: the ACP agent offers no `thought_level` config option".into()))
    }
}

/// The next of the agent's thinking levels (`None` when it offers fewer than two).
pub(crate) async fn cycle_thinking_level<A: AgentCore>(agent: &A) -> CoreResult<Option<ThinkingLevel>> {
    let levels = agent.available_thinking_levels();
    if levels.len() < 2 {
        return Ok(None);
    }
    let current = agent.thinking_level();
    let at = levels.iter().position(|l| Some(*l) == current).map_or(0, |i| i + 1);
    agent.set_thinking_level(levels[at % levels.len()]).await.map(Some)
}

/// A tool call's raw input as the core's arguments (anything but an object under `input`).
pub(crate) fn arguments(raw_input: Option<&Value>) -> Option<Map<String, Value>> {
    match raw_input {
        Some(Value::Object(args)) => Some(args.clone()),
        Some(other) => Some(Map::from_iter([("input".to_owned(), other.clone())])),
        None => None,
    }
}

/// What the agent's permission request is about, as the host is asked it (public: a version's
/// [`super::remote::RemoteVersion`] reads it off its request).
#[derive(Debug)]
pub struct Asked {
    /// The tool call the request is about.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// What it does, in a line.
    pub summary: String,
    /// The change it would make to a file, when the agent shows it.
    pub change: Option<FileChange>,
}

/// Asks the host of `session` (routed by `router`, once the tool call the request is about has
/// reached it) about the agent's permission request, and returns the kinds of option to pick,
/// best first (`None`: answer `cancelled`, nobody decided).
pub(crate) async fn decide<U, C, O>(router: &std::sync::OnceLock<Router<U, C, O>>, session: &str, asked: Asked) -> Option<&'static [&'static str]>
where
    U: Send + 'static,
    C: Clone + Send + 'static,
    O: Clone + Send + 'static,
{
    let (host, cancel) = router.get()?.caught_up(session).await?;
    let decision = approve(&host, &asked.call_id, &asked.name, asked.arguments, asked.summary, asked.change, &cancel).await;
    match decision {
        Decision::Approve => Some(&["allow_once"]),
        Decision::ApproveForSession => Some(&["allow_always", "allow_once"]),
        Decision::Reject { .. } | Decision::RejectAndStop => Some(&["reject_once", "reject_always"]),
        Decision::TimedOut | Decision::Abandoned | Decision::Unanswerable => None,
    }
}
