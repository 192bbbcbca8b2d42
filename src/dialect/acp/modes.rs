//! The core's approval policy as ACP session modes (`modes` in the `session/new`,
//! `session/load` and `session/resume` answers; `session/set_mode` switches it at run time).
//!
//! | mode id | approval policy | asks before |
//! |---|---|---|
//! | `ask` | `always` | every tool call |
//! | `default` | `dangerous` | `bash`, `write`, `edit`, MCP tools not annotated `readOnlyHint` |
//! | `auto` | `never` | nothing |

use crate::core::ApprovalPolicy;
use crate::jsonrpc::Error;
use crate::protocol::acp::{SessionMode, SessionModeId, SessionModeState};

/// Every mode: its id, the policy it stands for, its name and description.
const MODES: [(&str, ApprovalPolicy, &str, &str); 3] = [
    ("ask", ApprovalPolicy::Always, "Ask", "Ask before every tool call"),
    ("default", ApprovalPolicy::Dangerous, "Ask before changes", "Ask before bash, write, edit and MCP tools not marked read-only; reading and searching run at once"),
    ("auto", ApprovalPolicy::Never, "Auto", "Run every tool call without asking"),
];

/// The mode id of `policy`.
pub fn mode_id(policy: ApprovalPolicy) -> &'static str {
    MODES.iter().find(|(_, p, _, _)| *p == policy).map_or("default", |(id, _, _, _)| id)
}

/// The policy of the mode `id`; -32602 naming `/modeId` for a mode agentwire does not have.
pub fn policy(id: &str) -> Result<ApprovalPolicy, Error> {
    MODES.iter().find(|(m, _, _, _)| *m == id).map(|(_, p, _, _)| *p).ok_or_else(|| {
        let known: Vec<_> = MODES.iter().map(|(m, _, _, _)| *m).collect();
        Error::invalid_params(format!("Unknown mode {id:?}; the modes are {}", known.join(", "))).with_details([("path", "/modeId"), ("reason", "unknown mode")])
    })
}

/// The `modes` of a session whose policy is `current`.
pub fn state(current: ApprovalPolicy) -> SessionModeState {
    let available_modes = MODES.iter().map(|(id, _, name, description)| SessionMode::new(SessionModeId((*id).to_owned()), *name).with_description((*description).to_owned())).collect();
    SessionModeState::new(available_modes, SessionModeId(mode_id(current).to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_has_one_mode_and_back() {
        for p in [ApprovalPolicy::Never, ApprovalPolicy::Dangerous, ApprovalPolicy::Always] {
            assert_eq!(policy(mode_id(p)).unwrap(), p);
        }
        assert_eq!(policy("yolo").unwrap_err().data.unwrap()["path"], "/modeId");
    }
}
