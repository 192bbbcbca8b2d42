//! Built-in slash commands: a prompt `/name args` sent while idle runs one of these instead of
//! the model (its `prompt_result` says `agentInvoked: false`). They are how agentwire uses the
//! extension-UI sub-protocol besides approvals: `/model` a select, `/name` an input, `/compose`
//! an editor, `/new` a confirm, `/todos` a widget, `/status` a status entry, `/recall` the
//! host's editor text, `/help` a notification.
//!
//! A slash command holds the run slot while it waits for a dialog, so `abort` ends it (the
//! dialog is withdrawn with a `cancel` and the prompt ends `aborted`) and other prompts need a
//! `streamingBehavior` meanwhile.

use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::ui::Dialog;
use super::{nonempty, Agent, Queued, RunState};
use crate::protocol::*;
use crate::sessions::Session;

/// Every built-in slash command: name, argument hint, description.
pub(super) const COMMANDS: &[(&str, Option<&str>, &str)] = &[
    ("model", Some("[provider/id]"), "Switch the model: pick one in a select dialog, or name it"),
    ("name", Some("[name]"), "Name the session: type it in an input dialog, or give it"),
    ("compose", None, "Write the next prompt in an editor dialog (prefilled with the last one) and send it"),
    ("new", None, "Start a new session after a confirm dialog"),
    ("todos", None, "Show the todo list in a widget"),
    ("status", None, "Show the model and the session's size in the status bar"),
    ("recall", None, "Put the last prompt back into the host's editor"),
    ("help", None, "List the slash commands in a notification"),
];

/// The slash commands as `get_commands` lists them.
pub(super) fn listing() -> CommandsResult {
    let commands = COMMANDS
        .iter()
        .map(|(name, hint, description)| {
            serde_json::from_value(serde_json::json!({
                "name": name, "description": description, "source": "builtin",
                "input": hint.map(|h| serde_json::json!({"hint": h}))
            }))
            .map(|mut c: SlashCommand| {
                if hint.is_none() {
                    c.input = None;
                }
                c
            })
            .expect("valid slash command")
        })
        .collect();
    CommandsResult { commands }
}

/// `/name rest` → (`name`, `rest`), for built-in names only.
fn parse(text: &str) -> Option<(&'static str, String)> {
    let body = text.trim().strip_prefix('/')?;
    let (name, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let known = COMMANDS.iter().find(|(n, _, _)| *n == name)?.0;
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
    /// the prompt's response is written.
    pub(super) fn start_slash(&self, text: &str, prompt_id: Option<Value>) -> bool {
        let Some((name, arg)) = parse(text) else { return false };
        let cancel = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(false);
        let (gate_tx, gate_rx) = oneshot::channel();
        {
            let mut st = self.state();
            if st.run.is_some() {
                return false;
            }
            st.run = Some(RunState { cancel: cancel.clone(), done: done_rx });
        }
        self.inner.gates.lock().unwrap_or_else(|e| e.into_inner()).push(gate_tx);
        let agent = Clone::clone(self);
        tokio::spawn(async move {
            let _ = gate_rx.await;
            let outcome = agent.run_slash(name, &arg, &cancel).await;
            match outcome {
                Outcome::Prompt(text) => {
                    let mut st = agent.state();
                    st.run = None;
                    agent.start_run(&mut st, vec![Queued { text, images: Vec::new() }], prompt_id);
                    drop(st);
                    agent.release_gates();
                }
                Outcome::Done | Outcome::Aborted => {
                    agent.state().run = None;
                    let status = if matches!(outcome, Outcome::Aborted) { PromptResultEventStatus::Aborted } else { PromptResultEventStatus::Completed };
                    agent.emit(&PromptResultEvent { type_: Default::default(), id: prompt_id, status, agent_invoked: false, error: None }).await;
                }
            }
            let _ = done_tx.send(true);
        });
        true
    }

    async fn notify(&self, level: UiNotifyRequestNotifyType, message: String) {
        self.inner
            .ui
            .fire(&self.inner.out, |id| {
                ExtensionUiRequest::from(UiNotifyRequest { type_: Default::default(), id: nonempty(id), method: Default::default(), message, notify_type: Some(level) })
            })
            .await;
    }

    fn last_user_text(&self) -> Option<String> {
        self.state().messages.iter().rev().find_map(|m| match m {
            AgentMessage::User(u) => Some(crate::providers::offline::user_text(&u.content)),
            _ => None,
        })
    }

    async fn run_slash(&self, name: &str, arg: &str, cancel: &CancellationToken) -> Outcome {
        let timeout = self.inner.config.approval_timeout;
        let timeout_ms = u64::try_from(timeout.as_millis()).ok();
        let out = &self.inner.out;
        let ui = &self.inner.ui;
        match name {
            "model" => {
                let labels: Vec<String> = self.inner.models.iter().map(|m| format!("{}/{}", *m.info.provider, *m.info.id)).collect();
                let chosen = if arg.is_empty() {
                    let build = |id: &str| {
                        ExtensionUiRequest::from(UiSelectRequest {
                            type_: Default::default(),
                            id: nonempty(id),
                            method: Default::default(),
                            title: "Model".into(),
                            options: labels.clone(),
                            option_details: None,
                            timeout: timeout_ms,
                        })
                    };
                    match ui.dialog(out, build, timeout, cancel).await {
                        Dialog::Answered(r) => r.value.filter(|_| r.cancelled != Some(true)),
                        Dialog::TimedOut => None,
                        Dialog::Abandoned => return Outcome::Aborted,
                    }
                } else {
                    Some(arg.to_owned())
                };
                let Some(chosen) = chosen else {
                    self.notify(UiNotifyRequestNotifyType::Info, "Model unchanged".into()).await;
                    return Outcome::Done;
                };
                let index = labels.iter().position(|l| *l == chosen).or_else(|| self.inner.models.iter().position(|m| *m.info.id == chosen));
                match index {
                    Some(i) => {
                        self.select_model(i).await;
                        self.notify(UiNotifyRequestNotifyType::Info, format!("Model: {}", labels[i])).await;
                    }
                    None => self.notify(UiNotifyRequestNotifyType::Error, format!("Model not found: {chosen}")).await,
                }
                Outcome::Done
            }
            "name" => {
                let name = if arg.is_empty() {
                    let current = self.state().session_name.clone();
                    let build = |id: &str| {
                        ExtensionUiRequest::from(UiInputRequest {
                            type_: Default::default(),
                            id: nonempty(id),
                            method: Default::default(),
                            title: "Session name".into(),
                            placeholder: current,
                            timeout: timeout_ms,
                        })
                    };
                    match ui.dialog(out, build, timeout, cancel).await {
                        Dialog::Answered(r) if r.cancelled != Some(true) => r.value,
                        Dialog::Answered(_) | Dialog::TimedOut => None,
                        Dialog::Abandoned => return Outcome::Aborted,
                    }
                } else {
                    Some(arg.to_owned())
                };
                let Some(name) = name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()) else { return Outcome::Done };
                let cmd: SetSessionNameCommand = serde_json::from_value(serde_json::json!({"type": "set_session_name", "name": name})).expect("valid command");
                let _ = RpcHandler::set_session_name(self, cmd).await;
                ui.fire(out, |id| {
                    ExtensionUiRequest::from(UiSetTitleRequest { type_: Default::default(), id: nonempty(id), method: Default::default(), title: format!("agentwire: {name}") })
                })
                .await;
                Outcome::Done
            }
            "compose" => {
                let prefill = self.last_user_text();
                let build = |id: &str| {
                    ExtensionUiRequest::from(UiEditorRequest {
                        type_: Default::default(),
                        id: nonempty(id),
                        method: Default::default(),
                        title: "Compose the prompt".into(),
                        prefill,
                        prompt_style: Some(true),
                        timeout: timeout_ms,
                    })
                };
                match ui.dialog(out, build, timeout, cancel).await {
                    Dialog::Answered(r) if r.cancelled != Some(true) => match r.value.filter(|v| !v.trim().is_empty()) {
                        Some(text) => Outcome::Prompt(text),
                        None => Outcome::Done,
                    },
                    Dialog::Answered(_) | Dialog::TimedOut => Outcome::Done,
                    Dialog::Abandoned => Outcome::Aborted,
                }
            }
            "new" => {
                let message = "Start a new session? The current one stays on disk.";
                match ui.confirm(out, "New session", message, timeout, cancel).await {
                    super::ui::Confirmation::Yes => {
                        let session = Session::create(self.inner.config.session_dir.as_deref(), &self.inner.config.cwd, None);
                        self.adopt_session(session);
                        self.notify(UiNotifyRequestNotifyType::Info, "New session started".into()).await;
                        Outcome::Done
                    }
                    super::ui::Confirmation::Abandoned => Outcome::Aborted,
                    super::ui::Confirmation::No | super::ui::Confirmation::TimedOut => Outcome::Done,
                }
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
                ui.fire(out, |id| {
                    ExtensionUiRequest::from(UiSetWidgetRequest {
                        type_: Default::default(),
                        id: nonempty(id),
                        method: Default::default(),
                        widget_key: nonempty("todos"),
                        widget_lines: lines,
                        widget_placement: None,
                    })
                })
                .await;
                Outcome::Done
            }
            "status" => {
                let (model, messages, level) = {
                    let st = self.state();
                    let m = &self.inner.models[st.current_model].info;
                    (format!("{}/{}", *m.provider, *m.id), st.messages.len(), st.thinking)
                };
                let text = format!("{model} · thinking {level} · {messages} messages");
                ui.fire(out, |id| {
                    ExtensionUiRequest::from(UiSetStatusRequest {
                        type_: Default::default(),
                        id: nonempty(id),
                        method: Default::default(),
                        status_key: nonempty("agentwire"),
                        status_text: Some(text),
                    })
                })
                .await;
                Outcome::Done
            }
            "recall" => {
                match self.last_user_text() {
                    Some(text) => {
                        ui.fire(out, |id| {
                            ExtensionUiRequest::from(UiSetEditorTextRequest { type_: Default::default(), id: nonempty(id), method: Default::default(), text })
                        })
                        .await;
                    }
                    None => self.notify(UiNotifyRequestNotifyType::Warning, "Nothing to recall yet".into()).await,
                }
                Outcome::Done
            }
            _ => {
                let list: Vec<String> = COMMANDS.iter().map(|(n, hint, d)| format!("/{n}{} — {d}", hint.map(|h| format!(" {h}")).unwrap_or_default())).collect();
                self.notify(UiNotifyRequestNotifyType::Info, list.join("\n")).await;
                Outcome::Done
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
        assert_eq!(listing().commands.len(), COMMANDS.len());
    }
}
