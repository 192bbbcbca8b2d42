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
use crate::protocol::{ExtensionUiResponse, UiCancelRequest, UiConfirmRequest};
use crate::transport::Outbox;

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
    /// Delivers a host answer; unknown or expired ids are ignored.
    pub fn answer(&self, response: ExtensionUiResponse) {
        let id = response.id.to_string();
        if let Some(tx) = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id) {
            let _ = tx.send(response);
        }
    }

    /// Asks a yes/no question.
    pub async fn confirm(&self, out: &Outbox, title: &str, message: &str, timeout: Duration, cancel: &CancellationToken) -> Confirmation {
        let id = new_id();
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), tx);
        let request = UiConfirmRequest {
            type_: Default::default(),
            id: nonempty(&id),
            method: Default::default(),
            title: title.to_owned(),
            message: message.to_owned(),
            timeout: Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
        };
        let _ = out.send(&request).await;
        let outcome = tokio::select! {
            answer = rx => match answer {
                Ok(r) if r.confirmed == Some(true) => Confirmation::Yes,
                Ok(_) => Confirmation::No,
                Err(_) => Confirmation::Abandoned,
            },
            () = tokio::time::sleep(timeout) => Confirmation::TimedOut,
            () = cancel.cancelled() => Confirmation::Abandoned,
        };
        if matches!(outcome, Confirmation::TimedOut | Confirmation::Abandoned) {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            let cancel_frame = UiCancelRequest { type_: Default::default(), id: nonempty(&new_id()), method: Default::default(), target_id: nonempty(&id) };
            let _ = out.send(&cancel_frame).await;
        }
        outcome
    }
}
