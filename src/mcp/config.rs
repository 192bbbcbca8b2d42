//! Which MCP servers to connect: the common config file (`--mcp-config FILE`, the format Claude
//! Code, Cursor and kimi-cli read) and the typed server entries every dialect hands the manager.
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"K": "v"}, "cwd": "/tmp"},
//!   "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}},
//!   "short": {"url": "https://example.com/mcp"}
//! }}
//! ```
//!
//! Every error names the server and the field, so a host can say exactly what to fix.

use std::path::Path;

use serde_json::{Map, Value};

pub use crate::core::mcp::{HttpServer, McpServerConfig, StdioServer};


/// Why an MCP configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpConfigError {
    /// The config file could not be read.
    #[error("{path}: {reason}")]
    Read { path: String, reason: String },
    /// The config file is not JSON.
    #[error("{path}: not JSON: {reason}")]
    Json { path: String, reason: String },
    /// The file has no `mcpServers` object.
    #[error("{path}: expected {{\"mcpServers\": {{\"<name>\": {{…}}}}}}: {reason}")]
    Shape { path: String, reason: String },
    /// One server's entry is wrong.
    #[error("MCP server \"{server}\": field \"{field}\": {reason}")]
    Field { server: String, field: String, reason: String },
}

impl McpConfigError {
    fn field(server: &str, field: &str, reason: impl Into<String>) -> Self {
        Self::Field { server: server.to_owned(), field: field.to_owned(), reason: reason.into() }
    }
}

/// Reads a config file in the common format. Relative `cwd`s resolve against the file's folder.
pub fn read_config_file(path: &Path) -> Result<Vec<McpServerConfig>, McpConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| McpConfigError::Read { path: shown.clone(), reason: e.to_string() })?;
    let value: Value = serde_json::from_str(&text).map_err(|e| McpConfigError::Json { path: shown.clone(), reason: e.to_string() })?;
    let servers = value
        .get("mcpServers")
        .ok_or_else(|| McpConfigError::Shape { path: shown.clone(), reason: "no \"mcpServers\" field".into() })?
        .as_object()
        .ok_or_else(|| McpConfigError::Shape { path: shown.clone(), reason: "\"mcpServers\" is not an object".into() })?;
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    servers.iter().map(|(name, entry)| parse_entry(name, entry, base)).collect()
}

/// One entry of `mcpServers`.
fn parse_entry(name: &str, entry: &Value, base: &Path) -> Result<McpServerConfig, McpConfigError> {
    if name.is_empty() {
        return Err(McpConfigError::field(name, "name", "must not be empty"));
    }
    let Some(entry) = entry.as_object() else {
        return Err(McpConfigError::field(name, "(entry)", "must be an object"));
    };
    let kind = match entry.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err(McpConfigError::field(name, "type", "must be a string")),
    };
    let is_http = match kind {
        Some("stdio") => false,
        Some("http" | "streamable-http" | "streamableHttp") => true,
        Some("sse") => return Err(McpConfigError::field(name, "type", "\"sse\" is not supported (the legacy SSE transport; use streamable HTTP)")),
        Some(other) => return Err(McpConfigError::field(name, "type", format!("unknown transport \"{other}\" (expected \"stdio\" or \"http\")"))),
        None => !entry.contains_key("command") && entry.contains_key("url"),
    };
    if is_http {
        let url = string(name, entry, "url")?.ok_or_else(|| McpConfigError::field(name, "url", "is required for an HTTP server"))?;
        let headers = string_map(name, entry, "headers")?;
        Ok(McpServerConfig::Http(HttpServer { name: name.to_owned(), url, headers }))
    } else {
        let command = string(name, entry, "command")?.ok_or_else(|| McpConfigError::field(name, "command", "is required (or give \"url\" for an HTTP server)"))?;
        let args = match entry.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| v.as_str().map(str::to_owned).ok_or_else(|| McpConfigError::field(name, &format!("args[{i}]"), "must be a string")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(McpConfigError::field(name, "args", "must be an array of strings")),
        };
        let env = string_map(name, entry, "env")?;
        let cwd = string(name, entry, "cwd")?.map(|c| base.join(c));
        Ok(McpServerConfig::Stdio(StdioServer { name: name.to_owned(), command, args, env, cwd }))
    }
}

fn string(server: &str, entry: &Map<String, Value>, field: &str) -> Result<Option<String>, McpConfigError> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Err(McpConfigError::field(server, field, "must not be empty")),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(McpConfigError::field(server, field, "must be a string")),
    }
}

fn string_map(server: &str, entry: &Map<String, Value>, field: &str) -> Result<Vec<(String, String)>, McpConfigError> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())).ok_or_else(|| McpConfigError::field(server, &format!("{field}.{k}"), "must be a string")))
            .collect(),
        Some(_) => Err(McpConfigError::field(server, field, "must be an object of strings")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<McpServerConfig>, McpConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, text).unwrap();
        read_config_file(&path).map_err(|e| match e {
            McpConfigError::Shape { reason, .. } => McpConfigError::Shape { path: "-".into(), reason },
            other => other,
        })
    }

    #[test]
    fn the_common_format_gives_stdio_and_http_servers() {
        let servers = parse(r#"{"mcpServers": {"a": {"command": "node", "args": ["x.js"], "env": {"K": "v"}}, "b": {"type": "http", "url": "http://h/mcp", "headers": {"X": "1"}}, "c": {"url": "http://c/mcp"}}}"#).unwrap();
        assert_eq!(servers.len(), 3);
        assert!(matches!(&servers[0], McpServerConfig::Stdio(s) if s.command == "node" && s.args == ["x.js"] && s.env == [("K".to_owned(), "v".to_owned())] && s.cwd.is_none()));
        assert!(matches!(&servers[1], McpServerConfig::Http(h) if h.url == "http://h/mcp" && h.headers == [("X".to_owned(), "1".to_owned())]));
        assert!(matches!(&servers[2], McpServerConfig::Http(h) if h.name == "c"));
    }

    #[test]
    fn errors_name_the_server_and_the_field() {
        let err = parse(r#"{"mcpServers": {"srv": {"command": "x", "args": ["ok", 3]}}}"#).unwrap_err();
        assert_eq!(err.to_string(), "MCP server \"srv\": field \"args[1]\": must be a string");
        let err = parse(r#"{"mcpServers": {"web": {"type": "http"}}}"#).unwrap_err();
        assert!(matches!(&err, McpConfigError::Field { server, field, .. } if server == "web" && field == "url"), "{err}");
        let err = parse(r#"{"mcpServers": {"old": {"type": "sse", "url": "http://x"}}}"#).unwrap_err();
        assert!(err.to_string().contains("\"old\"") && err.to_string().contains("sse"), "{err}");
        assert!(matches!(parse(r#"{"servers": {}}"#).unwrap_err(), McpConfigError::Shape { .. }));
        assert!(matches!(parse("{not json").unwrap_err(), McpConfigError::Json { .. }));
    }
}
