//! The scenarios the scripted agents play to a client, one client run each, and the
//! requirements each one judges.

use crate::protocol::Dialect;

/// One scenario of `agentwire conformance client --dialect acp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcpScenario {
    /// A plain turn: `initialize`, `session/new`, a prompt answered with one text chunk.
    Initialize,
    /// A `session/update` for the new session before the `session/new` response.
    EarlyUpdate,
    /// `_meta` and unknown fields everywhere, an unknown notification and an unknown request.
    Extensions,
    /// Two permission requests, the same options in reverse order.
    Permission,
    /// A permission request left pending while the harness interrupts the client (SIGINT).
    Cancel,
    /// `fs/*` and `terminal/*` requests, for what the client advertised.
    FsTerminal,
    /// The agent exits in the middle of the turn.
    AgentExit,
    /// The agent advertises `loadSession`; a `session/load` is answered as the v1 schema's
    /// `LoadSessionResponse` is, without a `sessionId`.
    Load,
    /// A client that asks for v2 is answered v1 (the agent's latest), as an agent that knows
    /// only v1 answers.
    Downgrade,
}

impl AcpScenario {
    /// Every scenario, in run order.
    pub const ALL: [AcpScenario; 9] = [Self::Initialize, Self::EarlyUpdate, Self::Extensions, Self::Permission, Self::Cancel, Self::FsTerminal, Self::AgentExit, Self::Load, Self::Downgrade];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::EarlyUpdate => "early-update",
            Self::Extensions => "extensions",
            Self::Permission => "permission",
            Self::Cancel => "cancel",
            Self::FsTerminal => "fs-terminal",
            Self::AgentExit => "agent-exit",
            Self::Load => "load",
            Self::Downgrade => "version-downgrade",
        }
    }

    /// The scenario of a name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The requirements it judges (every scenario also judges the frames' schema and the
    /// handshake).
    pub fn requirements(self) -> &'static [&'static str] {
        match self {
            Self::Initialize => &["ACP-CLIENT-INIT-1", "ACP-CLIENT-SCHEMA-1", "ACP-CLIENT-ORDER-2", "ACP-CLIENT-RPC-1", "ACP-CLIENT-EOF-2"],
            Self::EarlyUpdate => &["ACP-CLIENT-ORDER-1"],
            Self::Extensions => &["ACP-CLIENT-EXT-1", "ACP-CLIENT-EXT-2", "ACP-CLIENT-EXT-3", "ACP-CLIENT-EXT-4", "ACP-CLIENT-EXT-5"],
            Self::Permission => &["ACP-CLIENT-PERM-1", "ACP-CLIENT-PERM-2", "ACP-CLIENT-PERM-3"],
            Self::Cancel => &["ACP-CLIENT-CANCEL-1", "ACP-CLIENT-CANCEL-2", "ACP-CLIENT-CANCEL-3"],
            Self::FsTerminal => &["ACP-CLIENT-FS-1", "ACP-CLIENT-FS-2", "ACP-CLIENT-TERM-1"],
            Self::AgentExit => &["ACP-CLIENT-EOF-1"],
            Self::Load => &["ACP-CLIENT-LOAD-1"],
            Self::Downgrade => &["ACP-CLIENT-VERSION-1"],
        }
    }
}


/// One scenario of `agentwire conformance client --dialect rpc`: the scripted agent plays pi's
/// JSONL rpc (the events of a pi 1.6 run, `agent_end` then `agent_settled`, so a 0.73-era host
/// and a 1.6 host both see their turn end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcScenario {
    /// A plain turn: the client prompts, the agent answers with one text message.
    Turn,
    /// The turn's text, and so its `message_end`, `turn_end` and `agent_end` records, carries
    /// U+2028 and U+2029 inside JSON strings.
    Framing,
    /// An event type and a field the client does not know, in the middle of the turn.
    Extensions,
    /// An extension's dialog (`confirm`) and a fire-and-forget `notify` in the middle of the turn.
    ExtensionUi,
    /// The agent exits in the middle of the turn.
    AgentExit,
}

impl RpcScenario {
    /// Every scenario, in run order.
    pub const ALL: [RpcScenario; 5] = [Self::Turn, Self::Framing, Self::Extensions, Self::ExtensionUi, Self::AgentExit];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::Framing => "framing",
            Self::Extensions => "extensions",
            Self::ExtensionUi => "extension-ui",
            Self::AgentExit => "agent-exit",
        }
    }

    /// The requirements it judges.
    pub fn requirements(self) -> &'static [&'static str] {
        match self {
            Self::Turn => &["RPC-CLIENT-FRAME-1", "RPC-CLIENT-EOF-2"],
            Self::Framing => &["RPC-CLIENT-FRAME-2"],
            Self::Extensions => &["RPC-CLIENT-EVENT-1"],
            Self::ExtensionUi => &["RPC-CLIENT-UI-1", "RPC-CLIENT-UI-2"],
            Self::AgentExit => &["RPC-CLIENT-EOF-1"],
        }
    }
}

/// One scenario of `agentwire conformance client --dialect wire`: the scripted agent plays kimi
/// 1.50's JSON-RPC wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireScenario {
    /// `initialize` (when the host sends it), then a plain turn on `prompt`.
    Turn,
    /// An `ApprovalRequest` request in the middle of the turn.
    Approval,
    /// An event type the host does not know, in the middle of the turn.
    Extensions,
}

impl WireScenario {
    /// Every scenario, in run order.
    pub const ALL: [WireScenario; 3] = [Self::Turn, Self::Approval, Self::Extensions];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::Approval => "approval",
            Self::Extensions => "extensions",
        }
    }

    /// The requirements it judges.
    pub fn requirements(self) -> &'static [&'static str] {
        match self {
            Self::Turn => &["WIRE-CLIENT-FRAME-1"],
            Self::Approval => &["WIRE-CLIENT-REQ-1"],
            Self::Extensions => &["WIRE-CLIENT-EVENT-1"],
        }
    }
}

/// A scenario of any dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// ACP (v1 or v2, as the client's `initialize` asks).
    Acp(AcpScenario),
    /// pi's JSONL rpc.
    Rpc(RpcScenario),
    /// kimi's JSON-RPC wire.
    Wire(WireScenario),
}

impl Scenario {
    /// Every scenario of a dialect, in run order.
    pub fn all(dialect: Dialect) -> Vec<Scenario> {
        match dialect {
            Dialect::Acp => AcpScenario::ALL.into_iter().map(Self::Acp).collect(),
            Dialect::Rpc => RpcScenario::ALL.into_iter().map(Self::Rpc).collect(),
            Dialect::Wire => WireScenario::ALL.into_iter().map(Self::Wire).collect(),
        }
    }

    /// The scenario of a dialect by name.
    pub fn parse(dialect: Dialect, name: &str) -> Option<Self> {
        Self::all(dialect).into_iter().find(|s| s.name() == name)
    }

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Acp(s) => s.name(),
            Self::Rpc(s) => s.name(),
            Self::Wire(s) => s.name(),
        }
    }

    /// The dialect it is played in.
    pub fn dialect(self) -> Dialect {
        match self {
            Self::Acp(_) => Dialect::Acp,
            Self::Rpc(_) => Dialect::Rpc,
            Self::Wire(_) => Dialect::Wire,
        }
    }

    /// The requirements it judges.
    pub fn requirements(self) -> &'static [&'static str] {
        match self {
            Self::Acp(s) => s.requirements(),
            Self::Rpc(s) => s.requirements(),
            Self::Wire(s) => s.requirements(),
        }
    }
}
