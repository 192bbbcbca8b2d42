//! A prompt as the core answers it: started (a handle resolving to its run's outcome) or queued
//! into the running run, and the queues a message can go to.

use tokio::sync::oneshot;

use super::events::{PromptId, RunOutcome};

/// Which queue a message goes to while a run is in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Delivered at the next turn boundary.
    Steer,
    /// Delivered when the agent would otherwise stop.
    FollowUp,
}

/// What became of a submitted message.
#[derive(Debug)]
pub enum Submitted {
    /// It started a run (or a slash command); a `PromptSettled` with its id will follow.
    Started(Prompt),
    /// It was queued into the running run (no `PromptSettled` of its own).
    Queued,
}

/// A prompt the core started a run (or a slash command) for: its id, and the run's outcome
/// once it settles. The core keeps the one map of prompts waiting for their outcome and
/// resolves it right after the dialect has queued the `PromptSettled` frames, so a dialect
/// that answers with the outcome (wire `prompt`, ACP `session/prompt`) keeps no map of its own.
#[derive(Debug)]
pub struct Prompt {
    id: PromptId,
    settled: oneshot::Receiver<RunOutcome>,
}

impl Prompt {
    pub(crate) fn new(id: PromptId, settled: oneshot::Receiver<RunOutcome>) -> Self {
        Self { id, settled }
    }

    /// The id its `RunStart` and `PromptSettled` carry.
    pub fn id(&self) -> PromptId {
        self.id
    }

    /// The run's outcome once it settled; `None` when the agent went away first.
    pub async fn outcome(self) -> Option<RunOutcome> {
        self.settled.await.ok()
    }
}

