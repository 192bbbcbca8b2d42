//! The agent's MCP servers behind a small API: [`Agent::start_mcp`] connects them (bounded,
//! concurrently), the run offers their tools and calls them (`run.rs`), and
//! [`Agent::close_mcp`] — called by [`Agent::shutdown`], and by the process runner once the
//! runs settled after stdin EOF — shuts them down, so whatever ends an agent (a closed or replaced ACP session, stdin EOF, a
//! signal) ends its servers too.

use std::sync::Arc;
use std::time::Duration;

use super::Agent;
use crate::mcp::{McpServerConfig, McpServers, McpTool, StartFailure};

impl Agent {
    /// Connects `configs` (stdio servers run in the agent's working directory unless their
    /// entry says otherwise), each within `bound`, replacing (and shutting down) the servers
    /// connected before. Returns the servers that could not be connected, for the dialect to
    /// tell its host; the agent works on without them.
    pub async fn start_mcp(&self, configs: &[McpServerConfig], bound: Duration) -> Vec<StartFailure> {
        if configs.is_empty() {
            return Vec::new();
        }
        let (servers, failures) = McpServers::start(configs, &self.inner.config.cwd, bound).await;
        let servers = Arc::new(servers);
        let old = {
            let mut st = self.state();
            // The agent was shut down while they started: they go at once.
            if st.mcp_closed { servers.clone() } else { std::mem::replace(&mut st.mcp, servers) }
        };
        old.shutdown().await;
        failures
    }

    /// The tools of the connected MCP servers, as listed last.
    pub fn mcp_tools(&self) -> Vec<McpTool> {
        self.state().mcp.tools()
    }

    /// The names of the connected MCP servers.
    pub fn mcp_servers(&self) -> Vec<String> {
        self.state().mcp.names()
    }

    /// Shuts the MCP servers down (connections closed, stdio process groups killed). Their
    /// tools are no longer offered, and servers still starting are shut down once up.
    pub async fn close_mcp(&self) {
        let servers = {
            let mut st = self.state();
            st.mcp_closed = true;
            std::mem::take(&mut st.mcp)
        };
        servers.shutdown().await;
    }

    /// The connected servers, for a call that must outlive the state lock.
    pub(super) fn mcp(&self) -> Arc<McpServers> {
        self.state().mcp.clone()
    }
}
