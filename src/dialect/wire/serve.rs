//! The wire dialect as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]):
//! cheap requests answer at once, a `prompt` answers when its turn ends, and the loop keeps
//! serving `steer`, `cancel` and the client's answers meanwhile.
//!
//! stdin EOF means "no more requests", not "cancel": requests waiting for the client's answer
//! fail closed, the requests in flight are answered — a `prompt` when its turn ends, as it would
//! have — and the loop returns. Bounding that wait (`--eof-timeout`, a signal) is the process
//! runner's (`crate::server`): it cancels the run.

use std::convert::Infallible;

use tokio::io::AsyncBufRead;

use super::{WireSession, WireSide};
use crate::core::AgentCore;
use crate::jsonrpc::{Connection, Service};

impl<A: AgentCore> Service for WireSession<A> {
    type Side = WireSide;

    fn connection(&self) -> &Connection {
        self.host().connection()
    }

    fn notified(&self, notification: Infallible) {
        match notification {}
    }
}

/// Serves the wire dialect on `input` until it ends and every request read is answered.
pub async fn serve_wire<A, R>(session: WireSession<A>, input: R, max_line_bytes: usize)
where
    A: AgentCore,
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::jsonrpc::serve(&session, input, max_line_bytes).await;
}
