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

/// pi's rpc reference: what a host of `pi --mode rpc` is told to do.
pub const PI_RPC: &str = "pi 1.6.0 docs/rpc.md (https://github.com/earendil-works/pi/blob/main/packages/coding-agent/docs/rpc.md)";

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
        "ACP v1 prompt turn (https://agentclientprotocol.com/protocol/v1/prompt-turn), and the InitializeRequest schema (https://agentclientprotocol.com/protocol/v1/initialization)",
        "Before sending prompts, Clients MUST first complete the initialization phase and session setup.",
        "the client's first message is an `initialize` request with an integer protocol version, before any session (`clientCapabilities` may be left out: the schema defaults it)",
    ),
    req(
        "ACP-CLIENT-ORDER-2",
        Dialect::Acp,
        Mandatory,
        "ACP v1 prompt turn (https://agentclientprotocol.com/protocol/v1/prompt-turn)",
        "Before sending prompts, Clients MUST first complete the initialization phase and session setup.",
        "no `session/prompt` before the `session/new` response (the agent holds that response back 300 ms to see)",
    ),
    req(
        "ACP-CLIENT-RPC-1",
        Dialect::Acp,
        Mandatory,
        JSONRPC,
        "When a rpc call is made, the Server MUST reply with a Response, except for in the case of Notifications.",
        "one response per request of the agent: no second response to a request already answered, none to an id the agent never used",
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
        "ACP-CLIENT-EXT-4",
        Dialect::Acp,
        Advisory,
        "ACP v2 schema, AuthMethod `other` (https://agentclientprotocol.com/protocol/v2/initialization); v1's AuthMethod leaves `type` open the same way",
        "Clients that do not understand this method type should preserve the raw payload when storing, replaying, proxying, or forwarding initialization data, and otherwise ignore the method or display it generically.",
        "an `authMethods` entry of a `type` the client does not know (a later kind, valid as the schema's open `agent` branch) does not stop it: it goes on to `session/new` (a client crashed on one, codex-acp#230)",
    ),
    req(
        "ACP-CLIENT-EXT-5",
        Dialect::Acp,
        Advisory,
        "ACP v1 schema, ToolCallContent `terminal` (https://agentclientprotocol.com/protocol/v1/tool-calls#content)",
        "Embed a terminal created with `terminal/create` by its id.",
        "a `session/update` whose tool call embeds a terminal id the client never created leaves the turn going: the client stays for the prompt's answer (Zed dropped such whole updates, zed#64538)",
    ),
    req(
        "ACP-CLIENT-PERM-1",
        Dialect::Acp,
        Mandatory,
        JSONRPC,
        "When a rpc call is made, the Server MUST reply with a Response, except for in the case of Notifications.",
        "`session/request_permission` is answered; a result is `cancelled` or `selected` with an `optionId` the request offered",
    ),
    req(
        "ACP-CLIENT-PERM-3",
        Dialect::Acp,
        Advisory,
        "ACP v1 schema, RequestPermissionResponse `outcome` (https://agentclientprotocol.com/protocol/v1/tool-calls#requesting-permission)",
        "The user's decision on the permission request.",
        "`session/request_permission` is answered with an outcome, not an error (an error is no decision: an agent cannot read it as `cancelled`)",
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
        "ACP-CLIENT-CANCEL-3",
        "cancel",
        "ACP v1 prompt turn, Cancellation (https://agentclientprotocol.com/protocol/v1/prompt-turn#cancellation)",
        "Clients MAY cancel an ongoing prompt turn at any time by sending a session/cancel notification.",
        "`session/cancel` is a notification (no `id`), not a request",
    ),
    req(
        "ACP-CLIENT-VERSION-1",
        Dialect::Acp,
        Advisory,
        "ACP v1 schema, InitializeResponse `protocolVersion` (https://agentclientprotocol.com/protocol/v1/initialization#version-negotiation)",
        "The client should disconnect, if it doesn't support this version.",
        "a client that asked for v2 and was answered v1 speaks v1 from then on (every frame validates as v1) or disconnects: v2-only frames do not reach a v1 peer (the mirror of v2 updates closing a v1 client, crab#263)",
    ),
    cap(
        "ACP-CLIENT-LOAD-1",
        "loadSession",
        "ACP v1 schema, LoadSessionResponse (https://agentclientprotocol.com/protocol/v1/session-setup#loading-sessions)",
        "Response from loading an existing session.",
        "a `session/load` answered with a `LoadSessionResponse`, which has no `sessionId` (`{}`), is accepted: the client prompts the session it loaded (a client rejected it, opencode#42442)",
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
    req(
        "RPC-CLIENT-FRAME-1",
        Dialect::Rpc,
        Mandatory,
        PI_RPC,
        "Write one complete JSON object per record and terminate it with LF (`\\n`).",
        "every record the client writes is one JSON object ending in LF, a command (or `extension_ui_response`) the rpc schema knows",
    ),
    req(
        "RPC-CLIENT-FRAME-2",
        Dialect::Rpc,
        Mandatory,
        PI_RPC,
        "Read stdout as a byte or UTF-8 stream and split records only on LF.",
        "records whose strings hold U+2028 and U+2029 are read whole: the turn whose `agent_end` carries them ends for the client (a host that waits only for `agent_settled` is not tested by this)",
    ),
    req(
        "RPC-CLIENT-EVENT-1",
        Dialect::Rpc,
        Advisory,
        PI_RPC,
        "Continue consuming [events](json.md) after that response.",
        "an event type the client does not know (pi adds them: `agent_settled` is new in 1.6) leaves the turn going: the client finishes it",
    ),
    req(
        "RPC-CLIENT-UI-1",
        Dialect::Rpc,
        Mandatory,
        "pi 1.6.0 docs/rpc-extension-ui.md (https://github.com/earendil-works/pi/blob/main/packages/coding-agent/docs/rpc-extension-ui.md)",
        "Responses are sent for dialog methods only (`select`, `confirm`, `input`, `editor`). The `id` must match the request.",
        "no `extension_ui_response` to a fire-and-forget request (`notify`), none naming an id the agent never sent",
    ),
    req(
        "RPC-CLIENT-UI-2",
        Dialect::Rpc,
        Advisory,
        "pi 1.6.0 docs/rpc-extension-ui.md (https://github.com/earendil-works/pi/blob/main/packages/coding-agent/docs/rpc-extension-ui.md)",
        "Dialog methods with a `timeout` field include the timeout in milliseconds; the agent auto-resolves with `undefined` if the client doesn't respond in time.",
        "an extension's `confirm` dialog is answered (with its id) before its timeout",
    ),
    req(
        "RPC-CLIENT-EOF-1",
        Dialect::Rpc,
        Mandatory,
        PI_RPC,
        "Clients must also handle child-process startup failures, unexpected exits, stderr diagnostics, cancellation, and their own deadlines.",
        "when the agent exits mid-turn the client notices: it ends before the harness's timeout instead of waiting for events that cannot come",
    ),
    req(
        "RPC-CLIENT-EOF-2",
        Dialect::Rpc,
        Advisory,
        PI_RPC,
        "Close the child's stdin to request an orderly shutdown.",
        "when done the client ends its agent as documented: it closes the agent's input (or sends SIGTERM, which pi's docs also name an orderly shutdown)",
    ),
    req(
        "WIRE-CLIENT-FRAME-1",
        Dialect::Wire,
        Mandatory,
        JSONRPC,
        "A String specifying the version of the JSON-RPC protocol. MUST be exactly \"2.0\".",
        "every frame the host writes is a JSON-RPC 2.0 object the wire schema knows: its requests (`initialize`, `prompt`, …) and its answers to the agent's requests",
    ),
    req(
        "WIRE-CLIENT-REQ-1",
        Dialect::Wire,
        Mandatory,
        JSONRPC,
        "When a rpc call is made, the Server MUST reply with a Response, except for in the case of Notifications.",
        "the agent's `request` (an `ApprovalRequest`) gets exactly one response with its id (no second one)",
    ),
    req(
        "WIRE-CLIENT-EVENT-1",
        Dialect::Wire,
        Advisory,
        JSONRPC,
        "A Request object that is a Notification signifies the Client's lack of interest in the corresponding Response object, and as such no Response object needs to be returned to the client.",
        "an `event` of a type the host does not know (kimi adds them between versions) is not answered and leaves the turn going: the host finishes it",
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
        let scenarios: Vec<&str> = super::scenarios::Scenario::all(r.dialect).into_iter().filter(|s| s.requirements().contains(&r.id)).map(|s| s.name()).collect();
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
            assert!(super::super::scenarios::Scenario::all(r.dialect).iter().any(|s| s.requirements().contains(&r.id)), "no scenario checks {}", r.id);
        }
    }
}
