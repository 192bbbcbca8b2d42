//! The protocol layer: generated types, the JSONL replies and validators. No I/O, no async
//! runtime.
//!
//! Everything here comes from `schema/`: [`generated`] is written by `build.rs`, and so are the
//! compiled schemas [`validate`] checks frames against ([`program`] is their interpreter). The hand-written parts are the
//! JSONL dialect's command replies and their error ([`rpc_reply`]), the JSON-RPC envelope
//! ([`envelope`]: the error object, the frames and the method traits the generated ACP method
//! types implement), the [`Dialect`] names, and the method traits below, which the generated
//! code implements for every command and wire method. Nothing here, generated code included,
//! names a layer above (`tests/layering.rs`): the generated dispatch onto the JSON-RPC runtime
//! is included by `crate::jsonrpc::dispatch`.

pub mod generated;
pub mod rpc_reply;
pub mod check;
pub mod program;
pub mod doc;
pub mod validate;
pub mod acp;
pub mod acp_v2;
pub mod embedded;
pub mod envelope;
pub mod decode;

/// The compiled schema `build.rs` writes from the rpc/wire bundle (`src/codegen/validators.rs`).
#[allow(missing_docs, non_snake_case, clippy::all, clippy::pedantic)]
pub(crate) mod bundle_checks {
    include!(concat!(env!("OUT_DIR"), "/validators.rs"));
}

/// The compiled schema `build.rs` writes from the vendored ACP schema.
#[allow(missing_docs, non_snake_case, clippy::all, clippy::pedantic)]
pub(crate) mod acp_checks {
    include!(concat!(env!("OUT_DIR"), "/acp_validators.rs"));
}

/// The compiled schema `build.rs` writes from the vendored ACP v2 schema.
#[allow(missing_docs, non_snake_case, clippy::all, clippy::pedantic)]
pub(crate) mod acp_v2_checks {
    include!(concat!(env!("OUT_DIR"), "/acp_v2_validators.rs"));
}

/// The compiled schema `build.rs` writes from the vendored ACP v2 unstable schema.
#[allow(missing_docs, non_snake_case, clippy::all, clippy::pedantic)]
pub(crate) mod acp_v2_unstable_checks {
    include!(concat!(env!("OUT_DIR"), "/acp_v2_unstable_validators.rs"));
}

pub use rpc_reply::RpcError;
pub use generated::*;

/// A stdio agent dialect: what the server side serves (`server::serve`) and the
/// client side drives or detects (`crate::client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// The pi / oh-my-pi JSONL RPC dialect (`--mode rpc`).
    Rpc,
    /// The kimi-cli JSON-RPC 2.0 wire dialect (`--mode wire`).
    Wire,
    /// The Agent Client Protocol v1 (`--mode acp`).
    Acp,
}

impl Dialect {
    /// The dialect's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rpc => "rpc",
            Self::Wire => "wire",
            Self::Acp => "acp",
        }
    }
}

/// A minLength:1 string newtype from text. Values from a model or a host may be empty; they
/// become `-` rather than a panic.
pub fn nonempty<T: std::str::FromStr>(s: &str) -> T {
    // One parse: an empty value is the only one a minLength:1 newtype refuses.
    let s = if s.is_empty() { "-" } else { s };
    s.parse().ok().expect("a non-empty string satisfies minLength 1")
}

/// The text of a user message's content.
pub fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::String(s) => s.clone(),
        UserContent::Array(blocks) => blocks
            .iter()
            .filter_map(|b| if let TextOrImageContent::Text(t) = b { Some(t.text.as_str()) } else { None })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// Milliseconds since the Unix epoch (message timestamps).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A JSONL-dialect command type tied to its response data (lsp-types' `Request` pattern).
pub trait RpcMethod {
    /// The command's `type`.
    const COMMAND: &'static str;
    /// The success `data`: `()` when the response has none, `Option<T>` when it may be `null`
    /// (`x-response-nullable`) or absent (`x-response-optional`).
    type Data;
}

/// A wire-dialect request type tied to its result.
pub trait WireMethod {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// The success `result`.
    type Result;
}

/// A request the agent sends to a wire client, tied to the result the client answers with.
pub trait WireAgentRequestKind {
    /// The `params.type` of the request.
    const TYPE: &'static str;
    /// What the client answers with.
    type Result;
}

/// A JSONL command: its request def and the def of its success `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    /// The command's `type`.
    pub command: &'static str,
    /// The request's `$defs` name.
    pub request: &'static str,
    /// The `data` def (`x-response`), or `None` when the response has no data.
    pub response: Option<&'static str>,
    /// `data` may be `null` (`x-response-nullable`).
    pub nullable: bool,
    /// `data` may be absent (`x-response-optional`).
    pub optional: bool,
}

/// A wire method (or agent request type) with its request and result defs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireMethodInfo {
    /// Method name (or `params.type` for agent requests).
    pub name: &'static str,
    /// The request's `$defs` name.
    pub request: &'static str,
    /// The result's `$defs` name (`x-result`).
    pub result: &'static str,
}

/// A tagged union of the schema: discriminator property and (tag, member def) pairs.
#[derive(Debug, Clone, Copy)]
pub struct UnionInfo {
    /// The union's `$defs` name.
    pub name: &'static str,
    /// The discriminator property.
    pub tag_property: &'static str,
    /// Every accepted tag value with the def that handles it (itself possibly a union).
    pub members: &'static [(&'static str, &'static str)],
}

impl UnionInfo {
    /// The union with this `$defs` name.
    pub fn get(name: &str) -> Option<&'static UnionInfo> {
        generated::UNIONS.iter().find(|u| u.name == name)
    }
    /// The member def for a tag.
    pub fn member(&self, tag: &str) -> Option<&'static str> {
        self.members.iter().find(|(t, _)| *t == tag).map(|(_, m)| *m)
    }
}
