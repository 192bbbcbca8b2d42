//! What builds the agents a front serves, for the process serving them: an agent per ACP
//! session (for its working directory, new or resuming a session file), the one agent of an
//! rpc or wire connection, what they can do, and where session files are. Every method but
//! [`SessionFactory::create`] has a default: an agent without session files, provider keys or
//! authentication of its own.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use super::events::NoticeLevel;
use super::{AuthMethod, Capabilities, CoreError, CoreResult, Host};
use crate::protocol::acp::SessionInfo;

/// What [`SessionFactory::agent_authenticate`] and [`SessionFactory::agent_logout`] return
/// (boxed: the factory is a trait object).
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = CoreResult<()>> + Send + 'a>>;

/// What [`SessionFactory::start`] returns: the notices for the host.
pub type StartFuture<'a> = Pin<Box<dyn Future<Output = Vec<(NoticeLevel, String)>> + Send + 'a>>;

/// Why a factory built no agent.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A session file was to be resumed by a factory that keeps none.
    #[error("this agent does not load session files ({})", .0.display())]
    NoSessionFiles(PathBuf),
    /// The agent refused (an agent with one session, asked for a second).
    #[error(transparent)]
    Refused(#[from] CoreError),
    /// What the agent needs could not be read (its models, its session file).
    #[error(transparent)]
    Startup(Box<dyn std::error::Error + Send + Sync>),
}

/// The fronts answer a failed build with a JSON-RPC error carrying this text.
impl From<SessionError> for String {
    fn from(e: SessionError) -> Self {
        e.to_string()
    }
}

/// What the process provides to build the agents it serves (see the module docs).
pub trait SessionFactory<A>: Send + Sync {
    /// A new agent for `cwd` reporting to `host` (the front's projection and port), continuing
    /// the session file `resume` if given.
    fn create(&self, cwd: &Path, resume: Option<&Path>, host: Host) -> Result<A, SessionError>;

    /// The one agent of an rpc or wire connection, reporting to `host`. Default: a new agent
    /// for the process's working directory.
    fn make(&self, host: Host) -> Result<A, SessionError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        self.create(&cwd, None, host)
    }

    /// The session file the agent of [`SessionFactory::make`] keeps, known before it is built
    /// (the wire's log lives next to it). Default: none.
    fn session_file(&self) -> Option<PathBuf> {
        None
    }

    /// What the agent of [`SessionFactory::make`] does before its connection's first request
    /// is read (the `agentwire` process starts `--mcp-config`'s servers); returns what the host
    /// is to be told. Default: nothing.
    fn start<'a>(&'a self, agent: &'a A) -> StartFuture<'a> {
        let _ = agent;
        Box::pin(async { Vec::new() })
    }

    /// What the sessions' agents can do (ACP's `initialize` advertises it before any session
    /// exists). Default: nothing beyond prompting and cancelling.
    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
    }

    /// The file of the stored session `session`, looked for among those of `cwd` first (among
    /// all of them without one); `None` when there is none. Default: sessions are not stored.
    fn find_session_file(&self, session: &str, cwd: Option<&Path>) -> Option<PathBuf> {
        let _ = (session, cwd);
        None
    }

    /// The stored sessions, newest first; only those of `cwd` when given. Reads files: called
    /// on the blocking pool. Default: none stored.
    fn list_sessions(&self, cwd: Option<&Path>) -> Vec<SessionInfo> {
        let _ = cwd;
        Vec::new()
    }

    /// Whether a provider other than the offline model can be used: its key is in the
    /// environment, `models.json` or the key store (`agentwire login`), or it needs none.
    /// Default: no provider of agentwire's is used.
    fn provider_configured(&self) -> bool {
        false
    }

    /// Forgets the keys stored with `agentwire login`; whether there were any. Default: none
    /// are kept.
    fn forget_stored_keys(&self) -> std::io::Result<bool> {
        Ok(false)
    }

    /// How long one MCP server may take to start (`--mcp-startup-timeout-ms`).
    fn mcp_startup_timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    /// The agents' own authentication methods (an agent behind the bridge offers its own),
    /// advertised when [`Capabilities::auth`] (agentwire's provider keys) is off. Default: none.
    fn agent_auth_methods(&self) -> Vec<AuthMethod> {
        Vec::new()
    }

    /// Authenticates with the agents' own `method`.
    fn agent_authenticate<'a>(&'a self, method: &'a str) -> AuthFuture<'a> {
        let _ = method;
        Box::pin(async { Err(super::unsupported("authenticate")) })
    }

    /// Whether the agents log out themselves.
    fn agent_can_logout(&self) -> bool {
        false
    }

    /// Logs out of the agents' own authentication.
    fn agent_logout(&self) -> AuthFuture<'_> {
        Box::pin(async { Err(super::unsupported("logout")) })
    }
}
