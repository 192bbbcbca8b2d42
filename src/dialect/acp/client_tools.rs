//! The built-in tools' file and command access through the ACP client, for what it advertised
//! in `initialize`'s `clientCapabilities`: `fs/read_text_file` and `fs/write_text_file` (the
//! editor's buffers, unsaved edits included) for `read`, `write` and `edit`, and
//! `terminal/create` → `terminal/wait_for_exit` → `terminal/output` → `terminal/release` for
//! `bash` (`terminal/kill` first when the run is cancelled or the command times out).
//!
//! Every answer is checked against the vendored schema's response def (a `null` for a void one,
//! as Toad answers `fs/write_text_file`, is read as `{}` with a warning); an error answer, or
//! one that does not fit, becomes the tool's error, never the process's.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{Connection, Reply, Request};
use crate::protocol::acp::methods::{FsReadTextFile, FsWriteTextFile, TerminalCreate, TerminalKill, TerminalOutput, TerminalRelease, TerminalWaitForExit};
use crate::protocol::acp::{
    acp_validator, CreateTerminalRequest, KillTerminalRequest, ReadTextFileRequest, ReleaseTerminalRequest, SessionId, TerminalId, TerminalOutputRequest, WaitForTerminalExitRequest,
    WriteTextFileRequest,
};
use crate::core::tools::{HostCommandOutcome, HostError, HostTools};

/// The most output a terminal keeps for one `bash` call (the client truncates from the start).
const OUTPUT_BYTE_LIMIT: u64 = 256 * 1024;
/// How long `terminal/kill`, `terminal/output` and `terminal/release` may take: once the
/// command is over (or given up on) a client that stops answering must not hold the run.
const CLEANUP_WAIT: Duration = Duration::from_secs(10);

/// Why a call to the client's `fs/*` or `terminal/*` methods has no usable answer (the tool
/// reports it as its error, to the model).
#[derive(Debug, thiserror::Error)]
pub enum ClientCallError {
    /// The client answered with a JSON-RPC error.
    #[error("the client answered {method} with an error: {message}")]
    Refused { method: &'static str, message: String },
    /// No answer within the call's bound.
    #[error("the client did not answer {method} within {timeout:?}")]
    TimedOut { method: &'static str, timeout: Duration },
    /// The run was cancelled while the call waited.
    #[error("{method} was abandoned: the run was cancelled")]
    Abandoned { method: &'static str },
    /// The client's input ended before it answered.
    #[error("the client closed its input (stdin EOF) before it answered {method}, so nobody can")]
    InputEnded { method: &'static str },
    /// The answer does not fit the vendored schema's result def.
    #[error("the client's answer to {method} does not fit the schema: {reason}")]
    Unfit { method: &'static str, reason: String },
}

/// What the client offered, for one session.
#[derive(Debug)]
pub struct ClientTools {
    conn: Arc<Connection>,
    session_id: String,
    read: bool,
    write: bool,
    terminal: bool,
}

impl ClientTools {
    /// The client's tools for `session_id`: `None` when it offers none of them.
    pub fn offered(conn: Arc<Connection>, session_id: String, read: bool, write: bool, terminal: bool) -> Option<Self> {
        (read || write || terminal).then_some(Self { conn, session_id, read, write, terminal })
    }

    fn session(&self) -> SessionId {
        SessionId(self.session_id.clone())
    }

    /// Calls the client method `M` and waits for its answer (at most `timeout`; `cancel`
    /// abandons it). The answer is checked against the vendored schema's result def before it
    /// is read.
    async fn call<M>(&self, params: &M::Params, timeout: Option<Duration>, cancel: Option<&CancellationToken>) -> Result<M::Result, ClientCallError>
    where
        M: Request,
        M::Params: Serialize,
        M::Result: DeserializeOwned,
    {
        let method = M::METHOD;
        let value = match self.conn.peer().request::<M>(params).await.wait(timeout, cancel).await {
            Reply::Answered(Ok(v)) => v,
            Reply::Answered(Err(e)) => return Err(ClientCallError::Refused { method, message: e.message }),
            Reply::TimedOut => return Err(ClientCallError::TimedOut { method, timeout: timeout.unwrap_or_default() }),
            Reply::Abandoned => return Err(ClientCallError::Abandoned { method }),
            Reply::InputEnded => return Err(ClientCallError::InputEnded { method }),
        };
        let unfit = |e: &dyn std::fmt::Display| ClientCallError::Unfit { method, reason: e.to_string() };
        let value = acp_validator().check_client_result(method, value).map_err(|e| unfit(&e))?;
        crate::protocol::decode::from_value(value).map_err(|e| unfit(&e))
    }

    async fn run(&self, command: &str, cwd: &Path, timeout: Option<Duration>, cancel: CancellationToken) -> Result<HostCommandOutcome, ClientCallError> {
        let mut create = CreateTerminalRequest::new("bash", self.session()).with_cwd(cwd.display().to_string()).with_output_byte_limit(OUTPUT_BYTE_LIMIT);
        create.args = vec!["-c".to_owned(), format!("exec 2>&1\n{command}")];
        let terminal: TerminalId = self.call::<TerminalCreate>(&create, None, Some(&cancel)).await?.terminal_id;
        let (session_id, terminal_id) = (self.session(), terminal.clone());
        let deadline = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let waiting = WaitForTerminalExitRequest::new(session_id, terminal_id);
        let wait = self.call::<TerminalWaitForExit>(&waiting, None, None);
        let (mut cancelled, mut timed_out) = (false, false);
        let exited = tokio::select! {
            exited = wait => Some(exited),
            () = cancel.cancelled() => { cancelled = true; None }
            () = deadline => { timed_out = true; None }
        };
        let (session_id, terminal_id) = (self.session(), terminal.clone());
        if exited.is_none() {
            // The command goes on in the editor until killed; its output so far is still read.
            let _ = self.call::<TerminalKill>(&KillTerminalRequest::new(session_id.clone(), terminal_id.clone()), Some(CLEANUP_WAIT), None).await;
        }
        let output = self.call::<TerminalOutput>(&TerminalOutputRequest::new(session_id.clone(), terminal_id.clone()), Some(CLEANUP_WAIT), None).await;
        let _ = self.call::<TerminalRelease>(&ReleaseTerminalRequest::new(session_id, terminal_id), Some(CLEANUP_WAIT), None).await;
        let output = output?;
        let (exit_code, signal) = match exited {
            Some(exited) => {
                let status = exited?;
                (status.exit_code.and_then(|c| i32::try_from(c).ok()), status.signal)
            }
            None => (None, None),
        };
        Ok(HostCommandOutcome { output: output.output, truncated: output.truncated, exit_code, signal, cancelled, timed_out })
    }
}

impl HostTools for ClientTools {
    fn read_text_file<'a>(&'a self, path: &'a Path, cancel: &'a CancellationToken) -> Option<BoxFuture<'a, Result<String, HostError>>> {
        self.read.then(|| {
            async move {
                let params = ReadTextFileRequest::new(path.display().to_string(), self.session());
                Ok(self.call::<FsReadTextFile>(&params, None, Some(cancel)).await.map_err(HostError::new)?.content)
            }
            .boxed()
        })
    }

    fn write_text_file<'a>(&'a self, path: &'a Path, content: &'a str, cancel: &'a CancellationToken) -> Option<BoxFuture<'a, Result<(), HostError>>> {
        self.write.then(|| {
            async move {
                let params = WriteTextFileRequest::new(content, path.display().to_string(), self.session());
                self.call::<FsWriteTextFile>(&params, None, Some(cancel)).await.map(drop).map_err(HostError::new)
            }
            .boxed()
        })
    }

    fn run_command<'a>(&'a self, command: &'a str, cwd: &'a Path, timeout: Option<Duration>, cancel: CancellationToken) -> Option<BoxFuture<'a, Result<HostCommandOutcome, HostError>>> {
        self.terminal.then(|| self.run(command, cwd, timeout, cancel).map(|r| r.map_err(HostError::new)).boxed())
    }
}
