//! What both ACP remote agents (v1 and v2) do with an agent's `session/update` stream: each
//! update goes to its session's run, the session's slash commands and config options are kept
//! as the agent last reported them, and the agent's requests about a session (a permission)
//! wait until that session's run has forwarded what came before them. Config options the agent
//! reports on its own (`config_option_update`: it switched its model or mode itself) are told to
//! the session's host, in the order they came.
//!
//! The updates arrive on the connection's one stream, in the agent's order; a prompt's answer or
//! the agent's request can overtake them on the extra hop to the run, so a run or a request
//! first asks for a flush (every update received so far routed) and a catch-up (the run
//! forwarded what it was sent).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::client::Notifications;
use crate::core::events::AgentEvent;
use crate::core::{Host, Setting};
use crate::dialect::remote::HostSlot;

/// How long a run or a request waits for a flush or a catch-up.
pub const CATCH_UP: Duration = Duration::from_secs(1);

/// Answered once a flush or a catch-up is done.
pub type Catch = oneshot::Sender<()>;

/// What one notification of the agent is, for the router.
#[derive(Debug)]
pub enum Sorted<U, C, O> {
    /// The session's slash commands, kept.
    Commands(Vec<C>),
    /// The session's config options, kept.
    Config(Vec<O>),
    /// An update for the session's run.
    Update(U),
}

#[derive(Debug)]
struct Route<U> {
    updates: mpsc::UnboundedSender<U>,
    catch_up: mpsc::UnboundedSender<Catch>,
    host: HostSlot,
}

#[derive(Debug)]
struct Routes<U, C, O> {
    by_session: HashMap<String, Route<U>>,
    commands: HashMap<String, Vec<C>>,
    config: HashMap<String, Vec<O>>,
}

/// A session's receiving ends: its updates and catch-up requests (a run holds them while it
/// streams), and the slot of its host and run.
#[derive(Debug)]
pub struct Streams<U> {
    /// The updates and catch-up requests.
    pub streams: tokio::sync::Mutex<(mpsc::UnboundedReceiver<U>, mpsc::UnboundedReceiver<Catch>)>,
    /// The session's host and its run in progress.
    pub slot: HostSlot,
}

/// The router of one agent connection. Cheap to clone.
#[derive(Debug)]
pub struct Router<U, C, O> {
    routes: Arc<Mutex<Routes<U, C, O>>>,
    flush: mpsc::UnboundedSender<Catch>,
}

impl<U, C, O> Clone for Router<U, C, O> {
    fn clone(&self) -> Self {
        Self { routes: self.routes.clone(), flush: self.flush.clone() }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<U: Send + 'static, C: Clone + Send + 'static, O: Clone + Send + 'static> Router<U, C, O> {
    /// Routes `updates` (the connection's notifications), each sorted by `sort` into its
    /// session and what it is; until the agent's output ends. `setting` reads a config option
    /// as the core's setting (for the host, when the agent changes them on its own).
    pub fn start<N: Send + 'static>(mut updates: Notifications<N>, sort: impl Fn(N) -> (String, Sorted<U, C, O>) + Send + Sync + 'static, setting: fn(&O) -> Option<Setting>) -> Self {
        let routes = Arc::new(Mutex::new(Routes { by_session: HashMap::new(), commands: HashMap::new(), config: HashMap::new() }));
        let (flush, mut flushes) = mpsc::unbounded_channel::<Catch>();
        let shared = routes.clone();
        tokio::spawn(async move {
            // Returns the host to tell of config options the agent changed on its own, told by
            // this loop before it routes anything later: a flush (a run ending on the prompt's
            // answer) then finds them told, so they reach the host before the run's end, in
            // the agent's order with what came before.
            let deliver = |notification: N| -> Option<(Host, Vec<Setting>)> {
                let (session, sorted) = sort(notification);
                let mut routes = lock(&shared);
                let mut told = None;
                match sorted {
                    Sorted::Commands(commands) => {
                        routes.commands.insert(session, commands);
                    }
                    Sorted::Config(options) => {
                        if let Some(host) = routes.by_session.get(&session).and_then(|r| r.host.get()) {
                            told = Some((host, options.iter().filter_map(setting).collect()));
                        }
                        routes.config.insert(session, options);
                    }
                    Sorted::Update(update) => {
                        if let Some(route) = routes.by_session.get(&session) {
                            let _ = route.updates.send(update);
                        }
                    }
                }
                told
            };
            let tell = |told: Option<(Host, Vec<Setting>)>| async move {
                if let Some((host, settings)) = told {
                    host.sink().emit(AgentEvent::SettingsChanged { settings: &settings }).await;
                }
            };
            loop {
                tokio::select! {
                    biased;
                    Some(done) = flushes.recv() => {
                        while let Some(notification) = updates.try_next() {
                            tell(deliver(notification)).await;
                        }
                        let _ = done.send(());
                    }
                    notification = updates.next() => match notification {
                        Some(notification) => tell(deliver(notification)).await,
                        None => break,
                    },
                }
            }
            // The agent is gone: every run's stream ends, and flushes find nothing more.
            lock(&shared).by_session.clear();
            flushes.close();
            while let Some(done) = flushes.recv().await {
                let _ = done.send(());
            }
        });
        Self { routes, flush }
    }

    /// Routes the updates of the agent session `session` from now on, which starts with
    /// `commands` and `config`; returns its receiving ends.
    pub fn open(&self, session: &str, commands: Vec<C>, config: Vec<O>) -> Streams<U> {
        let (updates, received) = mpsc::unbounded_channel();
        let (catch_up, catch_ups) = mpsc::unbounded_channel();
        let slot = HostSlot::default();
        let mut routes = lock(&self.routes);
        routes.by_session.insert(session.to_owned(), Route { updates, catch_up, host: slot.clone() });
        routes.commands.insert(session.to_owned(), commands);
        routes.config.insert(session.to_owned(), config);
        Streams { streams: tokio::sync::Mutex::new((received, catch_ups)), slot }
    }

    /// Stops routing `session` (its run's stream ends).
    pub fn close(&self, session: &str) {
        lock(&self.routes).by_session.remove(session);
    }

    /// `host` speaks for `session` from now on.
    pub fn set_host(&self, session: &str, host: &Host) {
        if let Some(route) = lock(&self.routes).by_session.get(session) {
            route.host.set(host);
        }
    }

    /// The session's slash commands, as the agent last reported them.
    pub fn commands(&self, session: &str) -> Vec<C> {
        lock(&self.routes).commands.get(session).cloned().unwrap_or_default()
    }

    /// The session's config options, as the agent last reported them.
    pub fn config(&self, session: &str) -> Vec<O> {
        lock(&self.routes).config.get(session).cloned().unwrap_or_default()
    }

    /// The session's config options, as an answer of the agent gave them.
    pub fn set_config(&self, session: &str, options: Vec<O>) {
        lock(&self.routes).config.insert(session.to_owned(), options);
    }

    /// Waits until every update received so far is routed.
    pub async fn flushed(&self) {
        let (done, routed) = oneshot::channel();
        if self.flush.send(done).is_ok() {
            let _ = tokio::time::timeout(CATCH_UP, routed).await;
        }
    }

    /// For the agent's request about `session`: once the session's run has forwarded every
    /// update that came before it, the host to ask and the token of the run in progress (what
    /// the request asks is withdrawn with it); `None` when nobody can be asked.
    pub async fn caught_up(&self, session: &str) -> Option<(Host, CancellationToken)> {
        let (host, catch_up, cancel) = {
            let routes = lock(&self.routes);
            let route = routes.by_session.get(session)?;
            (route.host.get()?, route.catch_up.clone(), route.host.run_token())
        };
        self.flushed().await;
        let (done, caught) = oneshot::channel();
        if catch_up.send(done).is_ok() {
            let _ = tokio::time::timeout(CATCH_UP, caught).await;
        }
        Some((host, cancel))
    }
}
