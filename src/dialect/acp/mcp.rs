//! The `mcpServers` of `session/new`, `session/load` and `session/resume` as the core's server
//! configs, and the `session/update` that tells the client which server could not start.
//!
//! stdio entries (with or without `"type": "stdio"`) and `http` entries are connected; `sse`
//! is refused with -32602 naming the server: rmcp, the MCP client we use, has no client for
//! the legacy SSE transport, and `initialize` says so (`mcpCapabilities.sse: false`).

use super::project::text_block;
use super::AcpSessionHost;
use crate::jsonrpc::Error;
use crate::core::mcp::{HttpServer, StdioServer};
use crate::core::mcp::{McpServerConfig, StartFailure};
use crate::protocol::acp::{McpServer, SessionUpdate};

/// -32602 with `data.path` pointing at the entry's field.
fn refused(index: usize, field: &str, message: String) -> Error {
    let path = format!("/mcpServers/{index}/{field}");
    Error::invalid_params(message).with_details([("path", path.as_str())])
}

/// The servers to connect, or the error naming the entry and field that cannot be.
pub(crate) fn configs(servers: &[McpServer]) -> Result<Vec<McpServerConfig>, Error> {
    let mut out: Vec<McpServerConfig> = Vec::with_capacity(servers.len());
    for (i, server) in servers.iter().enumerate() {
        let config = match server {
            McpServer::Variant0 { headers, name, type_, url, .. } | McpServer::Variant1 { headers, name, type_, url, .. } => match type_.as_str() {
                "http" => McpServerConfig::Http(HttpServer { name: name.clone(), url: url.clone(), headers: headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect() }),
                "sse" => return Err(refused(i, "type", format!("MCP server \"{name}\": the sse transport is not supported (mcpCapabilities.sse is false); use http"))),
                other => return Err(refused(i, "type", format!("MCP server \"{name}\": unknown transport \"{other}\""))),
            },
            McpServer::Variant2(s) => {
                if s.command.is_empty() {
                    return Err(refused(i, "command", format!("MCP server \"{}\": command must not be empty", s.name)));
                }
                McpServerConfig::Stdio(StdioServer {
                    name: s.name.clone(),
                    command: s.command.clone(),
                    args: s.args.clone(),
                    env: s.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect(),
                    cwd: None,
                })
            }
        };
        if config.name().is_empty() {
            return Err(refused(i, "name", "MCP server name must not be empty".into()));
        }
        if out.iter().any(|known| known.name() == config.name()) {
            return Err(refused(i, "name", format!("MCP server \"{}\" appears twice", config.name())));
        }
        out.push(config);
    }
    Ok(out)
}

impl AcpSessionHost {
    /// One agent message per server that could not start, naming it and why.
    pub(super) async fn report_mcp_failures(&self, failures: &[StartFailure]) {
        for failure in failures {
            let content = text_block(format!("{failure}; the session goes on without its tools.\n"));
            self.update(SessionUpdate::AgentMessageChunk { content, message_id: None, meta: None }).await;
        }
    }
}
