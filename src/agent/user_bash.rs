//! The host's own `bash` command (not the model's tool): runs a command in the working
//! directory and records it in the session as a `bashExecution` message.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{now_ms, Agent, CoreError, CoreResult};
use crate::protocol::*;
use crate::tools;

impl Agent {
    /// Runs `command`. Several may run at once, as in pi and omp, where every command is its
    /// own task: a host can start a second while the first runs; `abort_bash` cancels all of them.
    pub async fn bash(&self, command: &str, timeout: Option<Duration>, mut output: crate::core::BashOutput) -> CoreResult<BashResult> {
        let cancel = CancellationToken::new();
        let key = {
            let mut st = self.state();
            if st.shutting_down {
                cancel.cancel();
            }
            st.next_bash += 1;
            let key = st.next_bash;
            st.bash.insert(key, cancel.clone());
            key
        };
        let outcome = tools::shell::run_shell(command, &self.inner.config.cwd, timeout, cancel, |progress| {
            if !progress.delta.is_empty() {
                output(progress.delta);
            }
        })
        .await;
        self.state().bash.remove(&key);
        let o = outcome.map_err(|e| CoreError::Internal(format!("could not run the command: {e}")))?;
        let result = BashResult {
            output: o.output.clone(),
            exit_code: o.exit_code,
            cancelled: o.cancelled || o.timed_out,
            truncated: o.truncated,
            full_output_path: o.full_output_path.as_ref().map(|p| p.display().to_string()),
            working_dir: Some(self.inner.config.cwd.display().to_string()),
            total_lines: Some(o.total_lines),
            total_bytes: Some(o.total_bytes),
            output_lines: Some(o.output.lines().count() as u64),
            output_bytes: Some(o.output.len() as u64),
            elided_lines: o.truncated.then(|| o.total_lines.saturating_sub(o.output.lines().count() as u64)),
            elided_bytes: o.truncated.then(|| o.total_bytes.saturating_sub(o.output.len() as u64)),
        };
        let message = AgentMessage::BashExecution(BashExecutionMessage {
            role: Default::default(),
            command: command.to_owned(),
            output: result.output.clone(),
            exit_code: result.exit_code,
            cancelled: result.cancelled,
            truncated: result.truncated,
            full_output_path: result.full_output_path.clone(),
            exclude_from_context: None,
            timestamp: now_ms(),
            meta: serde_json::Map::new(),
        });
        // The command ran; if its record cannot be saved the host is told instead of a success.
        self.record(message)?;
        Ok(result)
    }

    /// Cancels every running `bash` command.
    pub fn abort_bash(&self) {
        for cancel in self.state().bash.values() {
            cancel.cancel();
        }
    }
}
