//! What `agentwire conformance client` asks of a client (an editor, a host, an orchestrator):
//! each requirement with the document and the sentence that ask it, and a tier that sentence
//! supports. The agent-side registry (`tests/conformance/requirements.json`) judges agents; this
//! one judges the other end of the pipe, so it lives beside the harness that checks it.
//!
//! `CAPABILITY` requirements apply when the client advertised the capability (ACP's
//! `clientCapabilities`) or showed it (`cancel`: the client sent `session/cancel` when
//! interrupted).

use crate::protocol::{ConformanceRequirementTier, Dialect};

/// JSON-RPC 2.0, the framing ACP and kimi's wire share.
pub const JSONRPC: &str = "https://www.jsonrpc.org/specification";

/// One requirement on clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientRequirement {
    /// Stable id, `<DIALECT>-CLIENT-<AREA>-<n>`.
    pub id: &'static str,
    /// The dialect whose clients it judges.
    pub dialect: Dialect,
    /// How binding the quoted sentence is.
    pub tier: ConformanceRequirementTier,
    /// For `CAPABILITY`: the capability that makes it apply.
    pub capability: Option<&'static str>,
    /// The upstream document (a URL, or the schema with the definition named).
    pub source: &'static str,
    /// The sentence of that document, verbatim.
    pub quote: &'static str,
    /// One line: what the harness checks.
    pub text: &'static str,
}

const fn req(id: &'static str, dialect: Dialect, tier: ConformanceRequirementTier, source: &'static str, quote: &'static str, text: &'static str) -> ClientRequirement {
    ClientRequirement { id, dialect, tier, capability: None, source, quote, text }
}

const fn cap(id: &'static str, capability: &'static str, source: &'static str, quote: &'static str, text: &'static str) -> ClientRequirement {
    ClientRequirement { id, dialect: Dialect::Acp, tier: ConformanceRequirementTier::Capability, capability: Some(capability), source, quote, text }
}

use ConformanceRequirementTier::{Advisory, Mandatory};

/// Every client requirement, in report order.
pub const CLIENT_REQUIREMENTS: &[ClientRequirement] = &[
    req(
        "ACP-CLIENT-INIT-1",
        Dialect::Acp,
        Mandatory,
        "ACP v1 schema, InitializeRequest (https://agentclientprotocol.com/protocol/v1/initialization)",
        "Sent by the client to establish connection and negotiate capabilities.",
        "the client's first message is an `initialize` request with its protocol version and capabilities, before any session",
    ),
    req(
        "ACP-CLIENT-SCHEMA-1",
        Dialect::Acp,
        Mandatory,
        JSONRPC,
        "The value of this member is determined by the method invoked on the Server.",
        "every frame the client writes validates against the ACP schema: its requests' params and its results typed by the method they answer",
    ),
    req(
        "ACP-CLIENT-ORDER-1",
        Dialect::Acp,
        Advisory,
        "ACP v1 schema, SessionNotification (https://agentclientprotocol.com/protocol/v1/prompt-turn)",
        "Used to stream real-time progress and results during prompt processing.",
        "a `session/update` that arrives before the `session/new` response does not stall the client: it goes on to prompt",
    ),
    req(
        "ACP-CLIENT-EXT-1",
        Dialect::Acp,
        Mandatory,
        JSONRPC,
        "The Server MUST reply with a Response, except for in the case of Notifications.",
        "an extension request the client does not know (`_agentwire/probe`) gets a response (a `Method not found` error will do)",
    ),
    req(
        "ACP-CLIENT-EXT-2",
        Dialect::Acp,
        Mandatory,
        JSONRPC,
        "The Server MUST NOT reply to a Notification, including those that are within a batch request.",
        "an unknown extension notification is not answered",
    ),
    req(
        "ACP-CLIENT-EXT-3",
        Dialect::Acp,
        Advisory,
        "ACP v1 schema, ExtNotification and `_meta` (https://agentclientprotocol.com/protocol/v1/extensibility)",
        "Extension notifications provide a way to send one-way messages for custom functionality while maintaining protocol compatibility.",
        "unknown notifications, unknown fields and `_meta` in the agent's frames leave the turn going: the client waits for the prompt's answer",
    ),
    req(
        "ACP-CLIENT-PERM-1",
        Dialect::Acp,
        Mandatory,
        "ACP v1 schema, RequestPermissionOutcome (https://agentclientprotocol.com/protocol/v1/tool-calls#requesting-permission)",
        "The user selected one of the provided options.",
        "`session/request_permission` is answered, `cancelled` or `selected` with an `optionId` the request offered",
    ),
    req(
        "ACP-CLIENT-PERM-2",
        Dialect::Acp,
        Advisory,
        "ACP v1 schema, PermissionOptionKind (https://agentclientprotocol.com/protocol/v1/tool-calls#permission-options)",
        "The type of permission option being presented to the user.",
        "the choice follows the options' kinds, not their position: offered in reverse order, the same kind is chosen (choosing the first option fails open)",
    ),
    cap(
        "ACP-CLIENT-CANCEL-1",
        "cancel",
        "ACP v1 schema, RequestPermissionOutcome `cancelled` (https://agentclientprotocol.com/protocol/v1/prompt-turn#cancellation)",
        "When a client sends a `session/cancel` notification to cancel an ongoing prompt turn, it MUST respond to all pending `session/request_permission` requests with this `cancelled` outcome.",
        "after `session/cancel`, the pending permission request is answered `cancelled`",
    ),
    cap(
        "ACP-CLIENT-CANCEL-2",
        "cancel",
        "ACP v1 prompt turn, Cancellation (https://agentclientprotocol.com/protocol/v1/prompt-turn#cancellation)",
        "Clients SHOULD continue accepting tool call updates even after sending a session/cancel notification, as the agent may send final updates before responding with the cancelled stop reason.",
        "after `session/cancel` the client keeps reading until the prompt's answer (updates that follow the cancel included)",
    ),
    cap(
        "ACP-CLIENT-FS-1",
        "fs.readTextFile",
        "ACP v1 schema, FileSystemCapabilities and ReadTextFileResponse (https://agentclientprotocol.com/protocol/v1/file-system)",
        "Whether the Client supports `fs/read_text_file` requests.",
        "`fs/read_text_file` is answered with a schema-valid result (`content`) or an error",
    ),
    cap(
        "ACP-CLIENT-FS-2",
        "fs.writeTextFile",
        "ACP v1 schema, FileSystemCapabilities and WriteTextFileResponse (https://agentclientprotocol.com/protocol/v1/file-system)",
        "Whether the Client supports `fs/write_text_file` requests.",
        "`fs/write_text_file` is answered with an object (`{}`), or an error; `null` is not a `WriteTextFileResponse`",
    ),
    cap(
        "ACP-CLIENT-TERM-1",
        "terminal",
        "ACP v1 schema, ClientCapabilities `terminal` (https://agentclientprotocol.com/protocol/v1/terminals)",
        "Whether the Client support all `terminal/*` methods.",
        "`terminal/create`, `terminal/wait_for_exit`, `terminal/output` and `terminal/release` are answered with schema-valid results (`{}` for release, not `null`)",
    ),
    req(
        "ACP-CLIENT-EOF-1",
        Dialect::Acp,
        Advisory,
        "ACP v1 overview (https://agentclientprotocol.com/protocol/v1/overview)",
        "Agents are programs that use generative AI to autonomously modify code. They typically run as subprocesses of the Client.",
        "when the agent's output ends (the agent exited mid-turn), the client ends too instead of waiting forever",
    ),
    req(
        "ACP-CLIENT-EOF-2",
        Dialect::Acp,
        Advisory,
        "ACP v1 overview (https://agentclientprotocol.com/protocol/v1/overview)",
        "Agents are programs that use generative AI to autonomously modify code. They typically run as subprocesses of the Client.",
        "when the client is done it closes the agent's input, so the agent it started does not outlive it",
    ),
];

/// One requirement by id.
pub fn client_requirement(id: &str) -> Option<&'static ClientRequirement> {
    CLIENT_REQUIREMENTS.iter().find(|r| r.id == id)
}

/// `conformance requirements --format json` lines for the client requirements (`"side":
/// "client"`; the scenario names stand where agent requirements list transcripts).
pub fn json_lines() -> String {
    let mut out = String::new();
    for r in CLIENT_REQUIREMENTS {
        let scenarios: Vec<&str> = super::scenarios::AcpScenario::ALL.iter().filter(|s| s.requirements().contains(&r.id)).map(|s| s.name()).collect();
        let line = serde_json::json!({"requirement": r.id, "side": "client", "dialect": r.dialect.name(), "tier": super::super::requirements::tier_name(r.tier),
                                      "capability": r.capability, "source": r.source, "quote": r.quote, "text": r.text, "scenarios": scenarios});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The text form, after the agent requirements.
pub fn text() -> String {
    use std::fmt::Write as _;
    let mut out = String::from("CLIENT requirements (agentwire conformance client)\n");
    for r in CLIENT_REQUIREMENTS {
        let tier = super::super::requirements::tier_name(r.tier);
        let capability = r.capability.map(|c| format!(" [needs {c}]")).unwrap_or_default();
        let _ = writeln!(out, "  {:<20} {tier}: {}{capability}", r.id, r.text);
        let _ = writeln!(out, "  {:<20} {} · \"{}\"", "", r.source, r.quote);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_requirement_is_checked_by_a_scenario() {
        for (i, r) in CLIENT_REQUIREMENTS.iter().enumerate() {
            assert!(CLIENT_REQUIREMENTS[..i].iter().all(|o| o.id != r.id), "{} twice", r.id);
            assert_eq!(r.tier == ConformanceRequirementTier::Capability, r.capability.is_some(), "{}", r.id);
            assert!(super::super::scenarios::AcpScenario::ALL.iter().any(|s| s.requirements().contains(&r.id)), "no scenario checks {}", r.id);
        }
    }
}
