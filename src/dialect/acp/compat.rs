//! Every translation between ACP v1 and v2 values, in one place (as the ACP SDK keeps its
//! `protocol_compat`). v1 and v2 share many wire shapes — content blocks, tool kinds and
//! locations, session listings, error objects — each generated twice from its own schema; the
//! few that differ (v2 names a config option's id `configId` and an auth method's `methodId`,
//! tags stdio MCP servers `"type": "stdio"`, and gives every terminal auth method an `env`) are
//! renamed here on their wire form, so what each version writes stays what its schema says.
//!
//! Nothing else converts between the versions: a front or remote agent of one version that
//! reuses the other's projection goes through these functions.

use serde_json::Value;

use crate::jsonrpc::Error;
use crate::protocol::{acp as v1, acp_v2 as v2};

/// A value of one version's generated type as the same wire shape in the other's (`None` when
/// the shape has no equivalent there).
fn same_shape<T: serde::Serialize, U: serde::de::DeserializeOwned>(value: &T) -> Option<U> {
    serde_json::to_value(value).ok().and_then(|v| crate::protocol::decode::from_value(v).ok())
}

/// A v1 value's wire form, changed by `edit` (a rename), read as the v2 type.
fn renamed<T: serde::Serialize, U: serde::de::DeserializeOwned>(value: &T, edit: impl FnOnce(&mut serde_json::Map<String, Value>) -> Option<()>) -> Option<U> {
    let mut v = serde_json::to_value(value).ok()?;
    edit(v.as_object_mut()?)?;
    crate::protocol::decode::from_value(v).ok()
}

/// A v1 config option in v2's shape (v2 names the id `configId`).
pub fn config_option(option: &v1::SessionConfigOption) -> Option<v2::SessionConfigOption> {
    renamed(option, |o| {
        let id = o.remove("id")?;
        o.insert("configId".into(), id);
        Some(())
    })
}

/// A v2 config option in v1's shape (v1 names the id `id`).
pub fn config_option_v1(option: &v2::SessionConfigOption) -> Option<v1::SessionConfigOption> {
    renamed(option, |o| {
        let id = o.remove("configId")?;
        o.insert("id".into(), id);
        Some(())
    })
}

/// A v1 auth method in v2's shape: the id is `methodId`, an agent method says its `type`, a
/// terminal one carries its `env` (empty), and neither has a description.
pub fn auth_method(method: &v1::AuthMethod) -> Option<v2::AuthMethod> {
    renamed(method, |o| {
        let id = o.remove("id")?;
        o.insert("methodId".into(), id);
        o.entry("type").or_insert_with(|| Value::String("agent".into()));
        if o.get("type").and_then(Value::as_str) == Some("terminal") {
            o.insert("env".into(), Value::Array(Vec::new()));
        }
        o.remove("description");
        Some(())
    })
}

/// A v1 MCP server in v2's shape (v2 tags stdio servers, v1 leaves them untagged).
pub fn mcp_server(server: &v1::McpServer) -> Option<v2::McpServer> {
    renamed(server, |o| {
        o.entry("type").or_insert_with(|| Value::String("stdio".into()));
        Some(())
    })
}

/// The MCP servers of a v2 request in v1's shape, or -32602 naming the first that has none.
pub fn mcp_servers_v1(servers: &[v2::McpServer]) -> Result<Vec<v1::McpServer>, Error> {
    servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut v = serde_json::to_value(s).unwrap_or_default();
            if let Some(o) = v.as_object_mut().filter(|o| o.get("type").and_then(Value::as_str) == Some("stdio")) {
                o.remove("type");
            }
            crate::protocol::decode::from_value(v).map_err(|e| Error::invalid_params(format!("MCP server {i}: {e}")).at(format!("/mcpServers/{i}"), "not a server agentwire can start"))
        })
        .collect()
}

/// A v2 prompt's content blocks in v1's shape, or -32602 when one has none.
pub fn content_blocks_v1(blocks: &[v2::ContentBlock]) -> Result<Vec<v1::ContentBlock>, Error> {
    blocks.iter().map(same_shape).collect::<Option<_>>().ok_or_else(|| Error::invalid_params("A prompt block has no ACP v1 equivalent"))
}

/// v1 content blocks in v2's shape (those that have one).
pub fn content_blocks(blocks: &[v1::ContentBlock]) -> Vec<v2::ContentBlock> {
    blocks.iter().filter_map(same_shape).collect()
}

/// A v1 tool call content (text or an image; a v1 diff has no v2 equivalent: v2 diffs are
/// patches) in v2's shape.
pub fn tool_call_content(content: &v1::ToolCallContent) -> Option<v2::ToolCallContent> {
    same_shape(content)
}

/// A v1 tool kind in v2's shape.
pub fn tool_kind(kind: &v1::ToolKind) -> Option<v2::ToolKind> {
    same_shape(kind)
}

/// v1 tool call locations in v2's shape.
pub fn tool_locations(locations: &[v1::ToolCallLocation]) -> Option<Vec<v2::ToolCallLocation>> {
    same_shape(&locations)
}

/// v1 plan entries in v2's shape (those that have one).
pub fn plan_entries(entries: &[v1::PlanEntry]) -> Vec<v2::PlanEntry> {
    entries.iter().filter_map(same_shape).collect()
}

/// A JSON-RPC error as v2's error object (the `error` of an `idle` state update).
pub fn error(error: &Error) -> Option<v2::Error> {
    same_shape(error)
}

/// v1 session listings in v2's shape (those that have one).
pub fn session_infos(sessions: &[v1::SessionInfo]) -> Vec<v2::SessionInfo> {
    sessions.iter().filter_map(same_shape).collect()
}
