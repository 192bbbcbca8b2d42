//! The extension-UI service: sends `extension_ui_request` dialogs and waits for the host's
//! `extension_ui_response`. A dialog that times out or is abandoned (abort, EOF) resolves to its
//! default and the host gets a `cancel` frame so it can close it; answers with unknown ids are
//! ignored.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{new_id, nonempty};
use crate::protocol::{ExtensionUiRequest, ExtensionUiResponse, UiCancelRequest, UiConfirmRequest, UiSelectRequest};
use crate::transport::Outbox;

/// How a dialog ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Dialog {
    /// The host answered (`value`, `confirmed` or `cancelled`).
    Answered(ExtensionUiResponse),
    /// Nobody answered in time; the host was sent a `cancel`.
    TimedOut,
    /// The run was aborted (or stdin closed) while waiting; the host was sent a `cancel`.
    Abandoned,
}

/// How a confirm dialog ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// The host answered `confirmed: true`.
    Yes,
    /// The host answered `confirmed: false` or `cancelled`.
    No,
    /// Nobody answered in time.
    TimedOut,
    /// The run was aborted (or stdin closed) while waiting.
    Abandoned,
}

/// Pending dialogs by request id.
#[derive(Debug, Default)]
pub struct UiService {
    pending: Mutex<HashMap<String, oneshot::Sender<ExtensionUiResponse>>>,
}

impl UiService {
    /// Delivers a host answer; `false` when no dialog with that id is waiting (never sent,
    /// already answered, timed out or withdrawn).
    pub fn answer(&self, response: ExtensionUiResponse) -> bool {
        match self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(response.id.as_str()) {
            Some(tx) => tx.send(response).is_ok(),
            None => false,
        }
    }

    /// Sends a fire-and-forget request (notify, setStatus, setWidget, setTitle,
    /// set_editor_text); `build` gets the new request id.
    pub async fn fire(&self, out: &Outbox, build: impl FnOnce(&str) -> ExtensionUiRequest) {
        let _ = out.send(&build(&new_id())).await;
    }

    /// Sends a dialog (select, confirm, input, editor) and waits for the answer, the timeout or
    /// `cancel`. `build` gets the new request id.
    pub async fn dialog(
        &self,
        out: &Outbox,
        build: impl FnOnce(&str) -> ExtensionUiRequest,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Dialog {
        let id = new_id();
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), tx);
        let _ = out.send(&build(&id)).await;
        let outcome = tokio::select! {
            answer = rx => answer.map_or(Dialog::Abandoned, Dialog::Answered),
            () = tokio::time::sleep(timeout) => Dialog::TimedOut,
            () = cancel.cancelled() => Dialog::Abandoned,
        };
        if !matches!(outcome, Dialog::Answered(_)) {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            let cancel_frame = UiCancelRequest { type_: Default::default(), id: nonempty(&new_id()), method: Default::default(), target_id: nonempty(&id) };
            let _ = out.send(&cancel_frame).await;
        }
        outcome
    }

    /// Asks a yes/no question; anything but an explicit yes is a no (fail closed).
    pub async fn confirm(&self, out: &Outbox, title: &str, message: &str, timeout: Duration, cancel: &CancellationToken) -> Confirmation {
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let build = |id: &str| {
            ExtensionUiRequest::from(UiConfirmRequest {
                type_: Default::default(),
                id: nonempty(id),
                method: Default::default(),
                title: title.to_owned(),
                message: message.to_owned(),
                timeout: Some(timeout_ms),
            })
        };
        match self.dialog(out, build, timeout, cancel).await {
            Dialog::Answered(r) if r.confirmed == Some(true) => Confirmation::Yes,
            Dialog::Answered(_) => Confirmation::No,
            Dialog::TimedOut => Confirmation::TimedOut,
            Dialog::Abandoned => Confirmation::Abandoned,
        }
    }

    /// Asks the user to pick one of `options`; `None` when cancelled, expired or abandoned.
    pub async fn select(&self, out: &Outbox, title: &str, options: &[String], timeout: Duration, cancel: &CancellationToken) -> Option<String> {
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let build = |id: &str| {
            ExtensionUiRequest::from(UiSelectRequest {
                type_: Default::default(),
                id: nonempty(id),
                method: Default::default(),
                title: title.to_owned(),
                options: options.to_vec(),
                option_details: None,
                timeout: Some(timeout_ms),
            })
        };
        match self.dialog(out, build, timeout, cancel).await {
            Dialog::Answered(r) if r.cancelled != Some(true) => r.value.filter(|v| options.contains(v)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::UiNotifyRequest;
    use crate::transport::spawn_writer;
    use tokio::io::AsyncBufReadExt;

    #[tokio::test]
    async fn dialogs_resolve_on_answers_timeouts_and_aborts() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (out, _writer) = spawn_writer(client, 16);
        let mut lines = tokio::io::BufReader::new(server).lines();
        let ui = std::sync::Arc::new(UiService::default());
        let cancel = CancellationToken::new();

        let options = vec!["main".to_owned(), "dev".to_owned()];
        let asking = {
            let (ui, out, cancel, options) = (ui.clone(), out.clone(), cancel.clone(), options.clone());
            tokio::spawn(async move { ui.select(&out, "Branch", &options, Duration::from_secs(5), &cancel).await })
        };
        let request: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!((&request["method"], &request["options"]), (&serde_json::json!("select"), &serde_json::json!(["main", "dev"])));
        let answer: ExtensionUiResponse =
            serde_json::from_value(serde_json::json!({"type":"extension_ui_response","id":request["id"],"value":"dev"})).unwrap();
        assert!(ui.answer(answer.clone()));
        assert!(!ui.answer(answer), "a late duplicate finds no dialog");
        assert_eq!(asking.await.unwrap(), Some("dev".to_owned()));

        let expired = ui.confirm(&out, "Sure?", "Really?", Duration::from_millis(30), &cancel).await;
        assert_eq!(expired, Confirmation::TimedOut);
        let request: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        let cancel_frame: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!((&cancel_frame["method"], &cancel_frame["targetId"]), (&serde_json::json!("cancel"), &request["id"]));

        ui.fire(&out, |id| {
            ExtensionUiRequest::from(UiNotifyRequest { type_: Default::default(), id: nonempty(id), method: Default::default(), message: "saved".into(), notify_type: None })
        })
        .await;
        let notify: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!((&notify["method"], &notify["message"]), (&serde_json::json!("notify"), &serde_json::json!("saved")));

        cancel.cancel();
        assert_eq!(ui.confirm(&out, "t", "m", Duration::from_secs(5), &cancel).await, Confirmation::Abandoned);
    }
}
