//! The MCP servers a host hands an agent (ACP `mcpServers`, `--mcp-config`), as plain values:
//! which servers to connect ([`McpServerConfig`]) and which could not start ([`StartFailure`]).
//! Connecting them is the built-in agent's (`crate::mcp`, through rmcp).

use std::path::PathBuf;

/// One MCP server to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerConfig {
    /// A local process spoken to over its stdin/stdout.
    Stdio(StdioServer),
    /// A remote server over MCP's streamable HTTP transport.
    Http(HttpServer),
}

impl McpServerConfig {
    /// The server's name (the `<server>` of `mcp__<server>__<tool>`).
    pub fn name(&self) -> &str {
        match self {
            Self::Stdio(s) => &s.name,
            Self::Http(h) => &h.name,
        }
    }
}

/// A stdio server: the program, its arguments and extra environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioServer {
    /// The server's name.
    pub name: String,
    /// The program (a path, or a name looked up on `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the agent's environment.
    pub env: Vec<(String, String)>,
    /// Where it runs (`None`: the session's working directory).
    pub cwd: Option<PathBuf>,
}

/// A streamable HTTP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpServer {
    /// The server's name.
    pub name: String,
    /// The endpoint (e.g. `http://127.0.0.1:3001/mcp`).
    pub url: String,
    /// Headers sent with every request (e.g. `Authorization`).
    pub headers: Vec<(String, String)>,
}

/// A server that could not be connected, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFailure {
    /// The server's name.
    pub server: String,
    /// What went wrong (spawn error, crash with its last stderr line, timeout).
    pub reason: String,
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MCP server \"{}\" is not available: {}", self.server, self.reason)
    }
}

