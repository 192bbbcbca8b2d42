//! The validator generator (`src/codegen/validators.rs`), compiled here as `build.rs` compiles
//! it, so its own unit tests run; and what its output decides for ACP v2's two schemas, whose
//! unstable checks call the stable ones where a def constrains alike.

#[path = "../src/codegen/validators.rs"]
#[allow(dead_code)]
mod validators;

use agentwire::protocol::acp_v2::{acp_v2_unstable_validator, acp_v2_validator};
use serde_json::json;

#[test]
fn a_def_the_unstable_schema_changed_is_checked_by_its_own_rules() {
    // `usage` on `idle` is unstable: the stable schema lets any extra property through, the
    // unstable one types it. A check shared with the stable schema would accept the bad one.
    let bad = json!({"state": "idle", "stopReason": "end_turn", "usage": "lots"});
    let good = json!({"state": "idle", "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}});
    assert!(acp_v2_validator().validate_def("IdleStateUpdate", &bad).is_ok());
    assert!(acp_v2_unstable_validator().validate_def("IdleStateUpdate", &bad).is_err());
    assert_eq!(acp_v2_unstable_validator().validate_def("IdleStateUpdate", &good), Ok(()));
}

#[test]
fn a_def_both_schemas_state_alike_decides_alike() {
    for (def, value, ok) in [
        ("ContentBlock", json!({"type": "text", "text": "hi"}), true),
        ("ContentBlock", json!({"type": "text"}), false),
        ("SessionId", json!("s1"), true),
        ("SessionId", json!(7), false),
    ] {
        assert_eq!(acp_v2_validator().validate_def(def, &value).is_ok(), ok, "{def} {value}");
        assert_eq!(acp_v2_unstable_validator().validate_def(def, &value), acp_v2_validator().validate_def(def, &value), "{def} {value}");
    }
}
