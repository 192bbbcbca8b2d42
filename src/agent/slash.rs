//! Built-in slash commands: a prompt `/name args` sent while idle runs one of these instead of
//! the model (its `prompt_result` says `agentInvoked: false`). They are how agentwire uses the
//! extension-UI sub-protocol besides approvals: `/model` a select, `/name` an input, `/compose`
//! an editor, `/new` a confirm, `/todos` a widget, `/status` a status entry, `/recall` the
//! host's editor text, `/help` a notification.
//!
//! A slash command holds the run slot while it waits for a dialog, so `abort` ends it (the
//! dialog is withdrawn with a `cancel` and the prompt ends `aborted`) and other prompts need a
//! `streamingBehavior` meanwhile.

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::events::{AgentEvent, NoticeLevel, RunOutcome};
use super::port::{DialogAsk, DialogKind, DialogOutcome, UiNotice};
use super::{Agent, Queued, RunState};
use crate::protocol::*;
use crate::sessions::{ContextItem, Role, Session};

/// Every built-in slash command: name, argument hint, description, and the description for a
/// host without dialogs, widgets or a status bar (ACP), where the command shows its result as
/// text; `None`: the command needs a dialog to do anything and is not offered there.
pub(super) const COMMANDS: &[(&str, Option<&str>, &str, Option<&str>)] = &[
    ("model", Some("[provider/id]"), "Switch the model: pick one in a select dialog, or name it", Some("Switch the model to the one named (provider/id)")),
    ("name", Some("[name]"), "Name the session: type it in an input dialog, or give it", Some("Name the session")),
    ("compose", None, "Write the next prompt in an editor dialog (prefilled with the last one) and send it", None),
    ("new", None, "Start a new session after a confirm dialog", None),
    ("todos", None, "Show the todo list in a widget", Some("Show the todo list")),
    ("status", None, "Show the model and the session's size in the status bar", Some("Show the model, the thinking level and the session's size")),
    ("recall", None, "Put the last prompt back into the host's editor", Some("Show the last prompt")),
    ("help", None, "List the slash commands in a notification", Some("List the slash commands")),
];

/// The slash commands as `get_commands` lists them: for a host with dialogs (`dialogs`) all of
/// them, otherwise those that work without one, described as they behave there.
pub fn listing(dialogs: bool) -> CommandsResult {
    let commands = COMMANDS
        .iter()
        .filter_map(|(name, hint, description, plain)| if dialogs { Some((name, hint, *description)) } else { plain.map(|d| (name, hint, d)) })
        .map(|(name, hint, description)| SlashCommand {
            name: nonempty(name),
            description: Some(description.to_owned()),
            source: Some(SlashCommandSource::Builtin),
            aliases: None,
            input: hint.map(|h| SlashCommandInput { hint: Some((*h).to_owned()) }),
            subcommands: None,
            source_info: None,
        })
        .collect();
    CommandsResult { commands }
}

/// What to do instead of a command's dialog on a host that shows none: `/model` and `/name`
/// take their input after the name; `/compose` and `/new` have nothing to take it.
fn instead_of_dialog(command: &str) -> String {
    match command {
        "compose" => "send the prompt itself as the message".into(),
        "new" => "start a new session from the client".into(),
        _ => match COMMANDS.iter().find(|(n, _, _, _)| *n == command).and_then(|(_, hint, _, _)| *hint) {
            Some(hint) => format!("give /{command} its input after its name: /{command} <{}>", hint.trim_start_matches('[').trim_end_matches(']')),
            None => format!("use /{command} in a host that shows dialogs"),
        },
    }
}

/// `/name rest` → (`name`, `rest`), for built-in names only.
fn parse(text: &str) -> Option<(&'static str, String)> {
    let body = text.trim().strip_prefix('/')?;
    let (name, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let known = COMMANDS.iter().find(|(n, _, _, _)| *n == name)?.0;
    Some((known, rest.trim().to_owned()))
}

/// How a slash command ended.
enum Outcome {
    Done,
    Aborted,
    /// Send this text as the prompt (`/compose`).
    Prompt(String),
}

impl Agent {
    /// Starts a built-in slash command if `text` is one (the agent must be idle); it runs once
    /// the prompt's answer is written. Returns the prompt it settles as.
    pub(super) fn start_slash(&self, text: &str) -> Option<super::Prompt> {
        let (name, arg) = parse(text)?;
        let cancel = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(false);
        let prompt = {
            let mut st = self.state();
            if st.run.is_some() {
                return None;
            }
            if st.shutting_down {
                cancel.cancel();
            }
            st.run = Some(RunState { cancel: cancel.clone(), done: done_rx, finishing: false });
            self.new_prompt()
        };
        let (handle, gate) = prompt;
        let prompt = handle.id();
        let agent = Clone::clone(self);
        tokio::spawn(async move {
            let _ = gate.await;
            let outcome = agent.run_slash(name, &arg, &cancel).await;
            match outcome {
                Outcome::Prompt(text) => {
                    let mut st = agent.state();
                    st.run = None;
                    // The command's own prompt: nothing is left to answer, so it starts at once.
                    let (start, go) = tokio::sync::oneshot::channel();
                    agent.start_run(&mut st, vec![Queued { text, images: Vec::new() }], prompt, go);
                    drop(st);
                    let _ = start.send(());
                }
                Outcome::Done | Outcome::Aborted => {
                    agent.state().run = None;
                    let outcome = if matches!(outcome, Outcome::Aborted) { RunOutcome::Aborted } else { RunOutcome::Completed };
                    agent.emit(AgentEvent::PromptSettled { prompt: Some(prompt), outcome, model_invoked: false }).await;
                }
            }
            let _ = done_tx.send(true);
        });
        Some(handle)
    }

    async fn notify(&self, level: NoticeLevel, message: String) {
        self.port().notify(UiNotice::Notify { level, message }).await;
    }

    fn last_user_text(&self) -> Option<String> {
        // Only the last user message is parsed.
        let last = self.state().session.context().iter().rev().find(|m| m.role() == Some(Role::User)).and_then(ContextItem::message);
        if let Some(AgentMessage::User(u)) = last { Some(crate::providers::offline::user_text(&u.content)) } else { None }
    }

    /// Shows the dialog of the command `command`; `Err(Outcome)` ends the command (aborted, or
    /// the host cannot show it: then it is told why and what to do instead).
    async fn ask(&self, command: &str, kind: DialogKind, cancel: &CancellationToken) -> Result<DialogOutcome, Outcome> {
        let ask = DialogAsk { kind, timeout: self.inner.config.approval_timeout, cancel };
        match self.port().dialog(ask).await {
            DialogOutcome::Abandoned => Err(Outcome::Aborted),
            DialogOutcome::Unsupported(reason) => {
                self.notify(NoticeLevel::Error, format!("{reason}; instead, {}", instead_of_dialog(command))).await;
                Err(Outcome::Done)
            }
            other => Ok(other),
        }
    }

    async fn run_slash(&self, name: &str, arg: &str, cancel: &CancellationToken) -> Outcome {
        match self.slash(name, arg, cancel).await {
            Ok(outcome) | Err(outcome) => outcome,
        }
    }

    async fn slash(&self, name: &str, arg: &str, cancel: &CancellationToken) -> Result<Outcome, Outcome> {
        match name {
            "model" => {
                let labels = self.model_labels();
                let chosen = if arg.is_empty() {
                    match self.ask("model", DialogKind::Select { title: "Model".into(), options: labels.clone() }, cancel).await? {
                        DialogOutcome::Value(v) => Some(v),
                        _ => None,
                    }
                } else {
                    Some(arg.to_owned())
                };
                let Some(chosen) = chosen else {
                    self.notify(NoticeLevel::Info, "Model unchanged".into()).await;
                    return Ok(Outcome::Done);
                };
                let index = labels.iter().position(|l| *l == chosen).or_else(|| self.inner.models.iter().position(|m| *m.info.id == chosen));
                match index {
                    Some(i) => {
                        match self.select_model(i).await {
                            Ok(_) => self.notify(NoticeLevel::Info, format!("Model: {}", labels[i])).await,
                            Err(e) => self.notify(NoticeLevel::Error, e.to_string()).await,
                        }
                    }
                    None => self.notify(NoticeLevel::Error, format!("Model not found: {chosen}")).await,
                }
                Ok(Outcome::Done)
            }
            "name" => {
                let name = if arg.is_empty() {
                    let placeholder = self.state().session_name.clone();
                    match self.ask("name", DialogKind::Input { title: "Session name".into(), placeholder }, cancel).await? {
                        DialogOutcome::Value(v) => Some(v),
                        _ => None,
                    }
                } else {
                    Some(arg.to_owned())
                };
                let Some(name) = name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()) else { return Ok(Outcome::Done) };
                let named = self.set_session_name(&name).await;
                if let Err(e) = &named {
                    self.notify(NoticeLevel::Error, e.to_string()).await;
                }
                self.port().notify(UiNotice::Title { title: format!("agentwire: {name}") }).await;
                // A host without dialogs shows notices as text: it says so there too (an ACP
                // client may ignore the session's new title).
                if named.is_ok() && !self.port().supports_dialogs() {
                    self.notify(NoticeLevel::Info, format!("Session named: {name}")).await;
                }
                Ok(Outcome::Done)
            }
            "compose" => {
                let prefill = self.last_user_text();
                match self.ask("compose", DialogKind::Editor { title: "Compose the prompt".into(), prefill }, cancel).await? {
                    DialogOutcome::Value(text) if !text.trim().is_empty() => Ok(Outcome::Prompt(text)),
                    _ => Ok(Outcome::Done),
                }
            }
            "new" => {
                let message = "Start a new session? The current one stays on disk.".to_owned();
                if self.ask("new", DialogKind::Confirm { title: "New session".into(), message }, cancel).await? == DialogOutcome::Confirmed(true) {
                    let session = Session::create(self.inner.config.session_dir.as_deref(), &self.inner.config.cwd, None);
                    self.adopt_session(session);
                    self.notify(NoticeLevel::Info, "New session started".into()).await;
                }
                Ok(Outcome::Done)
            }
            "todos" => {
                let lines: Vec<String> = self
                    .state()
                    .todos
                    .iter()
                    .flat_map(|phase| {
                        let header = phase.name.to_string();
                        std::iter::once(header).chain(phase.tasks.iter().map(|t| {
                            let mark = match t.status {
                                TodoStatus::Completed => "[x]",
                                TodoStatus::InProgress => "[>]",
                                TodoStatus::Abandoned => "[-]",
                                TodoStatus::Blocked => "[!]",
                                TodoStatus::Pending => "[ ]",
                            };
                            format!("  {mark} {}", *t.content)
                        }))
                    })
                    .collect();
                let lines = (!lines.is_empty()).then_some(lines);
                self.port().notify(UiNotice::Widget { key: "todos".into(), lines }).await;
                Ok(Outcome::Done)
            }
            "status" => {
                let (model, messages, level) = {
                    let st = self.state();
                    let m = &self.inner.models[st.current_model].info;
                    (format!("{}/{}", *m.provider, *m.id), st.session.context().len(), st.thinking)
                };
                let text = format!("{model} · thinking {level} · {messages} messages");
                self.port().notify(UiNotice::Status { key: "agentwire".into(), text: Some(text) }).await;
                Ok(Outcome::Done)
            }
            "recall" => {
                match self.last_user_text() {
                    Some(text) => self.port().notify(UiNotice::EditorText { text }).await,
                    None => self.notify(NoticeLevel::Warning, "Nothing to recall yet".into()).await,
                }
                Ok(Outcome::Done)
            }
            _ => {
                let list: Vec<String> = self
                    .commands()
                    .commands
                    .iter()
                    .map(|c| format!("/{}{} — {}", *c.name, c.input.as_ref().and_then(|i| i.hint.as_deref()).map(|h| format!(" {h}")).unwrap_or_default(), c.description.as_deref().unwrap_or_default()))
                    .collect();
                self.notify(NoticeLevel::Info, list.join("\n")).await;
                Ok(Outcome::Done)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_builtin_names_are_commands() {
        assert_eq!(parse("/model openai/gpt"), Some(("model", "openai/gpt".into())));
        assert_eq!(parse("  /help "), Some(("help", String::new())));
        assert_eq!(parse("/unknown x"), None);
        assert_eq!(parse("model"), None);
        assert_eq!(listing(true).commands.len(), COMMANDS.len());
        let plain: Vec<String> = listing(false).commands.iter().map(|c| c.name.to_string()).collect();
        assert_eq!(plain, ["model", "name", "todos", "status", "recall", "help"]);
    }

    #[test]
    fn a_refused_dialog_says_what_to_do_instead() {
        assert_eq!(instead_of_dialog("model"), "give /model its input after its name: /model <provider/id>");
        assert_eq!(instead_of_dialog("name"), "give /name its input after its name: /name <name>");
        assert!(!instead_of_dialog("compose").contains("after its name"));
        assert!(!instead_of_dialog("new").contains("after its name"));
    }
}
