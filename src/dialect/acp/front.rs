//! The agent side both ACP versions serve: one connection, the process's [`SessionFactory`],
//! and the live sessions, each one core with its session host. The v1 and v2 fronts
//! ([`super::AcpServer`], [`crate::dialect::acp_v2::AcpV2Server`]) are this front with a
//! version's [`Projection`]: its session host, and what else the version keeps per connection.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncBufRead;

use super::{lock, SessionFactory};
use crate::core::{AgentCore, AgentInfo};
use crate::jsonrpc::{Connection, Dispatch, Error, Service, Side};

/// What one ACP version adds to the front.
pub trait Projection: Sized + Send + Sync + 'static {
    /// The front's name (in `Debug`).
    const NAME: &'static str;
    /// One session's side of the core in this version: its event sink and host port.
    type Host: Send + Sync + 'static;
    /// What the version keeps per connection beside its sessions.
    type Extra: Default + Send + Sync;
    /// The version's agent side: its decoding rules and typed frames.
    type Side: Side;
    /// Acts on the client's notification (`session/cancel`, `$/cancel_request`).
    fn notified<A: AgentCore>(front: &Front<Self, A>, notification: <Self::Side as Side>::Notification);
}

/// One live session: its core and its host.
pub(crate) struct Live<A, H> {
    pub(crate) agent: Arc<A>,
    pub(crate) host: Arc<H>,
}

impl<A, H> Clone for Live<A, H> {
    fn clone(&self) -> Self {
        Self { agent: self.agent.clone(), host: self.host.clone() }
    }
}

/// An ACP agent: the connection, the session factory and the live sessions, each served by one
/// core (the built-in agent, or any [`AgentCore`]), projected onto the version `V`.
pub struct Front<V: Projection, A> {
    pub(crate) conn: Arc<Connection>,
    pub(crate) factory: Arc<dyn SessionFactory<A>>,
    pub(crate) sessions: Mutex<HashMap<String, Live<A, V::Host>>>,
    /// The name `initialize` gives.
    pub(crate) info: AgentInfo,
    pub(crate) extra: V::Extra,
}

impl<V: Projection, A> std::fmt::Debug for Front<V, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(V::NAME).finish_non_exhaustive()
    }
}

impl<V: Projection, A: AgentCore> Front<V, A> {
    /// A server on `conn` building sessions with `factory`.
    pub fn new(conn: Arc<Connection>, factory: Arc<dyn SessionFactory<A>>) -> Self {
        Self { conn, factory, sessions: Mutex::new(HashMap::new()), info: AgentInfo::default(), extra: V::Extra::default() }
    }

    /// The same, naming the agent `info` in `initialize` (agentwire's own name by default).
    #[must_use]
    pub fn with_info(mut self, info: AgentInfo) -> Self {
        self.info = info;
        self
    }

    /// The connection (client responses go there).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Every live session's agent.
    pub fn agents(&self) -> Vec<Arc<A>> {
        lock(&self.sessions).values().map(|l| l.agent.clone()).collect()
    }

    /// The live session `session`, if there is one.
    pub(crate) fn session(&self, session: &str) -> Option<Live<A, V::Host>> {
        lock(&self.sessions).get(session).cloned()
    }

    /// Ends a live session: it is no longer live, its run is cancelled and its agent shut down.
    /// `ending` (given the session before) returns what turns `true` once the run's end has
    /// gone out to the client (v1: the prompt's answer; v2: the `idle` update), which this
    /// waits for.
    pub(crate) async fn end_with(&self, session: &str, ending: impl FnOnce(&Live<A, V::Host>) -> Option<tokio::sync::watch::Receiver<bool>>) -> Option<Live<A, V::Host>> {
        let live = lock(&self.sessions).remove(session)?;
        let out = ending(&live);
        live.agent.cancel_now();
        live.agent.shutdown().await;
        if let Some(mut out) = out {
            // An error means nothing is owed any more (the request went away unanswered).
            let _ = out.wait_for(|out| *out).await;
        }
        Some(live)
    }

    /// `authenticate` (v1) or `auth/login` (v2, `name`) with `method`: the agents' own
    /// method where they have some and agentwire's provider keys are not in use, else one of
    /// agentwire's (its keys must be configured), else -32601.
    pub(crate) async fn authenticate_with(&self, name: &str, method: &str) -> Result<(), Error> {
        let can = self.factory.capabilities();
        if !can.auth && !self.factory.agent_auth_methods().is_empty() {
            return self.factory.agent_authenticate(method).await.map_err(super::handler::core_error);
        }
        if !can.auth {
            return Err(super::handler::unsupported_method(name));
        }
        super::auth::check_method(method)?;
        if self.factory.provider_configured() {
            Ok(())
        } else {
            Err(super::auth::required())
        }
    }

    /// `logout` (v1) or `auth/logout` (v2, `name`): the agents' own when `agents` (they log out
    /// themselves) and agentwire's provider keys are not in use, else the keys stored with
    /// `agentwire login` are forgotten, else -32601.
    pub(crate) async fn logout_with(&self, name: &str, agents: bool) -> Result<(), Error> {
        let can = self.factory.capabilities();
        if !can.auth && agents {
            return self.factory.agent_logout().await.map_err(super::handler::core_error);
        }
        if !can.auth {
            return Err(super::handler::unsupported_method(name));
        }
        self.factory.forget_stored_keys().map(drop).map_err(|e| Error::internal(format!("Cannot forget the stored keys: {e}")))
    }

    /// `session/list`'s sessions, newest first (only those of `cwd` when given): every file is
    /// read whole, on the blocking pool, not on a worker other sessions share.
    pub(crate) async fn stored_sessions(&self, cwd: Option<PathBuf>) -> Result<Vec<crate::protocol::acp::SessionInfo>, Error> {
        let factory = self.factory.clone();
        tokio::task::spawn_blocking(move || factory.list_sessions(cwd.as_deref())).await.map_err(|e| Error::internal(format!("listing the sessions failed: {e}")))
    }

    /// Deletes the stored file of `session` (`live`, just ended, or found by the factory when
    /// `stored`); whether there was one.
    pub(crate) fn delete_file(&self, session: &str, live: Option<&Live<A, V::Host>>, stored: bool) -> Result<bool, Error> {
        let path = match live.and_then(|l| l.agent.session_path()) {
            Some(path) => Some(path).filter(|p| p.exists()),
            None if stored => self.factory.find_session_file(session, None),
            None => None,
        };
        let Some(path) = path else { return Ok(false) };
        std::fs::remove_file(&path).map_err(|e| Error::internal(format!("Cannot delete {}: {e}", path.display())))?;
        Ok(true)
    }
}

/// The front as a service of the JSON-RPC runtime's serve loop ([`crate::jsonrpc::serve`]).
impl<V: Projection, A: AgentCore> Service for Front<V, A>
where
    Self: Dispatch<<V::Side as Side>::Request>,
{
    type Side = V::Side;

    fn connection(&self) -> &Connection {
        self.conn()
    }

    fn notified(&self, notification: <V::Side as Side>::Notification) {
        V::notified(self, notification);
    }
}

/// Serves ACP (the version of `front`) on `input` until it ends and every request read is
/// answered.
pub async fn serve<V, A, R>(front: &Front<V, A>, input: R, max_line_bytes: usize)
where
    V: Projection,
    A: AgentCore,
    Front<V, A>: Service,
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::jsonrpc::serve(front, input, max_line_bytes).await;
}

/// `$/cancel_request` naming `request` (serialized: the id as it was sent): the request in
/// flight on `conn` is cancelled; one not in flight (answered, or never sent) is ignored.
pub fn cancel_request(conn: &Connection, request: &impl serde::Serialize) {
    let id = serde_json::to_value(request).unwrap_or_default();
    if !conn.cancel_request(&id) {
        tracing::debug!("$/cancel_request for {id}, which is not in flight");
    }
}
