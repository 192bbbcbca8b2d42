//! The wire dialect as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]):
//! cheap requests answer at once, a `prompt` answers when its turn ends, and the loop keeps
//! serving `steer`, `cancel` and the client's answers meanwhile.
//!
//! stdin EOF: the run is aborted (its turn ends `cancelled`), requests in flight are answered
//! (bounded by a grace period), and the loop returns.

use std::convert::Infallible;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::io::AsyncBufRead;

use super::{WireSession, WireSide};
use crate::dialect::SHUTDOWN_GRACE;
use crate::jsonrpc::{Connection, Service};

impl Service for WireSession {
    type Side = WireSide;

    fn connection(&self) -> &Connection {
        self.host().connection()
    }

    fn notified(&self, notification: Infallible) {
        match notification {}
    }

    fn end_of_input(&self) -> BoxFuture<'static, ()> {
        let agent = self.agent().clone();
        async move { agent.shutdown().await }.boxed()
    }
}

/// Serves the wire dialect on `input` until it ends and everything in flight is answered.
pub async fn serve_wire<R>(session: WireSession, input: R, max_line_bytes: usize)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::jsonrpc::serve(&session, input, max_line_bytes, SHUTDOWN_GRACE).await;
}
