//! The scenarios the scripted ACP agent plays to a client, one client run each, and the
//! requirements each one judges.

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
}

impl AcpScenario {
    /// Every scenario, in run order.
    pub const ALL: [AcpScenario; 7] = [Self::Initialize, Self::EarlyUpdate, Self::Extensions, Self::Permission, Self::Cancel, Self::FsTerminal, Self::AgentExit];

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
            Self::Initialize => &["ACP-CLIENT-INIT-1", "ACP-CLIENT-SCHEMA-1", "ACP-CLIENT-EOF-2"],
            Self::EarlyUpdate => &["ACP-CLIENT-ORDER-1"],
            Self::Extensions => &["ACP-CLIENT-EXT-1", "ACP-CLIENT-EXT-2", "ACP-CLIENT-EXT-3"],
            Self::Permission => &["ACP-CLIENT-PERM-1", "ACP-CLIENT-PERM-2"],
            Self::Cancel => &["ACP-CLIENT-CANCEL-1", "ACP-CLIENT-CANCEL-2"],
            Self::FsTerminal => &["ACP-CLIENT-FS-1", "ACP-CLIENT-FS-2", "ACP-CLIENT-TERM-1"],
            Self::AgentExit => &["ACP-CLIENT-EOF-1"],
        }
    }
}
