//! The built-in tools' file and command access through the ACP client, for what it advertised
//! in `initialize`'s `clientCapabilities`: `fs/read_text_file` and `fs/write_text_file` (the
//! editor's buffers, unsaved edits included) for `read`, `write` and `edit`, and
//! `terminal/create` → `terminal/wait_for_exit` → `terminal/output` → `terminal/release` for
//! `bash` (`terminal/kill` first when the run is cancelled or the command times out).
//!
//! Every answer is checked against the vendored schema's response def; an error answer, or
//! one that does not fit, becomes the tool's error, never the process's.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::AcpConn;
use crate::protocol::acp::acp_validator;
use crate::tools::host::{HostCommandOutcome, HostTools};

/// The most output a terminal keeps for one `bash` call (the client truncates from the start).
const OUTPUT_BYTE_LIMIT: u64 = 256 * 1024;
/// How long `terminal/kill`, `terminal/output` and `terminal/release` may take: once the
/// command is over (or given up on) a client that stops answering must not hold the run.
const CLEANUP_WAIT: Duration = Duration::from_secs(10);

/// What the client offered, for one session.
#[derive(Debug)]
pub struct ClientTools {
    conn: Arc<AcpConn>,
    session_id: String,
    read: bool,
    write: bool,
    terminal: bool,
}

impl ClientTools {
    /// The client's tools for `session_id`: `None` when it offers none of them.
    pub fn offered(conn: Arc<AcpConn>, session_id: String, read: bool, write: bool, terminal: bool) -> Option<Self> {
        (read || write || terminal).then_some(Self { conn, session_id, read, write, terminal })
    }

    /// Calls a client method and waits for its answer (`cancel` abandons it); `Err` is readable.
    async fn call(&self, method: &str, params: Value, result_def: &str, cancel: Option<&CancellationToken>) -> Result<Value, String> {
        let (id, rx) = self.conn.request(method, &params).await;
        let answer = match cancel {
            Some(cancel) => tokio::select! {
                answer = rx => answer,
                () = cancel.cancelled() => {
                    self.conn.withdraw(&id);
                    return Err(format!("{method} was abandoned: the run was cancelled"));
                }
            },
            None => rx.await,
        };
        let value = match answer {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Err(format!("the client answered {method} with an error: {}", e.message)),
            Err(_) => return Err(format!("the connection closed before the client answered {method}")),
        };
        acp_validator().validate_def(result_def, &value).map_err(|e| format!("the client's answer to {method} does not fit the schema: {e}"))?;
        Ok(value)
    }

    /// A terminal call after the command, bounded by [`CLEANUP_WAIT`].
    async fn cleanup(&self, method: &str, params: Value, result_def: &str) -> Result<Value, String> {
        tokio::time::timeout(CLEANUP_WAIT, self.call(method, params, result_def, None)).await.unwrap_or_else(|_| Err(format!("the client did not answer {method} within {CLEANUP_WAIT:?}")))
    }

    async fn run(&self, command: &str, cwd: &Path, timeout: Option<Duration>, cancel: CancellationToken) -> Result<HostCommandOutcome, String> {
        let create = json!({
            "sessionId": self.session_id, "command": "bash", "args": ["-c", format!("exec 2>&1\n{command}")],
            "cwd": cwd.display().to_string(), "outputByteLimit": OUTPUT_BYTE_LIMIT,
        });
        let created = self.call("terminal/create", create, "CreateTerminalResponse", Some(&cancel)).await?;
        let terminal = json!({"sessionId": self.session_id, "terminalId": created["terminalId"]});
        let deadline = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let wait = self.call("terminal/wait_for_exit", terminal.clone(), "WaitForTerminalExitResponse", None);
        let (mut cancelled, mut timed_out) = (false, false);
        let exited = tokio::select! {
            exited = wait => Some(exited),
            () = cancel.cancelled() => { cancelled = true; None }
            () = deadline => { timed_out = true; None }
        };
        if exited.is_none() {
            // The command goes on in the editor until killed; its output so far is still read.
            let _ = self.cleanup("terminal/kill", terminal.clone(), "KillTerminalResponse").await;
        }
        let output = self.cleanup("terminal/output", terminal.clone(), "TerminalOutputResponse").await;
        let _ = self.cleanup("terminal/release", terminal, "ReleaseTerminalResponse").await;
        let output = output?;
        let status = match exited {
            Some(exited) => exited?,
            None => Value::Null,
        };
        Ok(HostCommandOutcome {
            output: output["output"].as_str().unwrap_or_default().to_owned(),
            truncated: output["truncated"].as_bool().unwrap_or(false),
            exit_code: status["exitCode"].as_u64().and_then(|c| i32::try_from(c).ok()),
            signal: status["signal"].as_str().map(str::to_owned),
            cancelled,
            timed_out,
        })
    }
}

impl HostTools for ClientTools {
    fn read_text_file<'a>(&'a self, path: &'a Path, cancel: &'a CancellationToken) -> Option<BoxFuture<'a, Result<String, String>>> {
        self.read.then(|| {
            async move {
                let params = json!({"sessionId": self.session_id, "path": path.display().to_string()});
                let v = self.call("fs/read_text_file", params, "ReadTextFileResponse", Some(cancel)).await?;
                Ok(v["content"].as_str().unwrap_or_default().to_owned())
            }
            .boxed()
        })
    }

    fn write_text_file<'a>(&'a self, path: &'a Path, content: &'a str, cancel: &'a CancellationToken) -> Option<BoxFuture<'a, Result<(), String>>> {
        self.write.then(|| {
            async move {
                let params = json!({"sessionId": self.session_id, "path": path.display().to_string(), "content": content});
                self.call("fs/write_text_file", params, "WriteTextFileResponse", Some(cancel)).await.map(drop)
            }
            .boxed()
        })
    }

    fn run_command<'a>(&'a self, command: &'a str, cwd: &'a Path, timeout: Option<Duration>, cancel: CancellationToken) -> Option<BoxFuture<'a, Result<HostCommandOutcome, String>>> {
        self.terminal.then(|| self.run(command, cwd, timeout, cancel).boxed())
    }
}
