//! A prompt as the core answers it: work started for it (a handle that starts it and resolves
//! to its outcome), queued into the running work, or handled without a run; and the queues a
//! message can go to.

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
    /// It started work: runs (`RunStart` … `RunEnd`, more than one when queued messages are
    /// left when one ends) and then exactly one `PromptSettled` with its id. Nothing happens
    /// until the dialect calls [`Prompt::start`].
    Started(Prompt),
    /// It joined the work in progress: that work's one `PromptSettled` covers it (none of its
    /// own).
    Queued,
    /// It was consumed without a run (a slash command): once started, it settles with
    /// `PromptSettled { model_invoked: false }` and no `RunStart`, unless the command itself
    /// prompts the model (`/compose`), whose runs then settle it.
    Handled(Prompt),
}

/// What lets work held for an answer go: the dialect calls [`Start::go`] once the answer that
/// must come first is queued. Dropping it lets the work go too (a dialect that went away must
/// not leave the agent waiting for ever); an empty one holds nothing.
#[derive(Debug, Default)]
pub struct Start(Option<oneshot::Sender<()>>);

impl Start {
    /// A start and what the held work waits on.
    pub(crate) fn pair() -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (Self(Some(tx)), rx)
    }

    /// A start holding nothing.
    pub fn none() -> Self {
        Self(None)
    }

    /// Lets the work go. Idempotent.
    pub fn go(&mut self) {
        if let Some(start) = self.0.take() {
            let _ = start.send(());
        }
    }
}

/// A prompt the core accepted and has not started yet: its id, the start, and its outcome once
/// it settles. The core keeps the one map of prompts waiting for their outcome and resolves it
/// right after the dialect has queued the `PromptSettled` frames, so a dialect that answers
/// with the outcome (wire `prompt`, ACP `session/prompt`) keeps no map of its own.
///
/// The start is explicit so a dialect can tell the host "accepted" before anything the work
/// does: it calls [`Prompt::start`] once that answer is queued. Dropping the handle starts the
/// work too (a dialect that went away must not leave the agent busy for ever).
#[derive(Debug)]
pub struct Prompt {
    id: PromptId,
    start: Start,
    settled: oneshot::Receiver<RunOutcome>,
}

impl Prompt {
    pub(crate) fn new(id: PromptId, start: Start, settled: oneshot::Receiver<RunOutcome>) -> Self {
        Self { id, start, settled }
    }

    /// The id its `RunStart` and `PromptSettled` carry.
    pub fn id(&self) -> PromptId {
        self.id
    }

    /// Lets the work go: its first event follows. Idempotent.
    pub fn start(&mut self) {
        self.start.go();
    }

    /// Its start alone, for a dialect that does not wait for the outcome.
    pub fn into_start(self) -> Start {
        self.start
    }

    /// Starts the work (if it was not) and returns its outcome once it settled; `None` when the
    /// agent went away first.
    pub async fn outcome(mut self) -> Option<RunOutcome> {
        self.start();
        (&mut self.settled).await.ok()
    }
}
