//! The committed client layers emitted by `agentwire codegen` are current with the schema.
//!
//! The type declarations made by json-schema-to-typescript and datamodel-code-generator are
//! checked by the clients' own suites (they need node / python); the layers emitted by this
//! crate are checked here, so `cargo test` alone catches a schema change that was not
//! regenerated. `AGENTWIRE_UPDATE_CLIENTS=1 cargo test --test clients_generated` rewrites them
//! (or run `clients/generate`, which also reruns the type generators).

use std::path::Path;

use agentwire::codegen::clients;

fn check(path: &str, expected: &str) {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("AGENTWIRE_UPDATE_CLIENTS").is_some() {
        std::fs::write(&full, expected).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&full).unwrap_or_default();
    assert!(
        current == expected,
        "{path} is stale: the schema changed; run `clients/generate` \
         (or AGENTWIRE_UPDATE_CLIENTS=1 cargo test --test clients_generated for this file alone)"
    );
}

fn bundle() -> serde_json::Value {
    serde_json::from_str(agentwire::protocol::embedded::bundle_json()).unwrap()
}

#[test]
fn typescript_protocol_layer_is_current() {
    check("clients/typescript/src/generated/protocol.ts", &clients::typescript_protocol(&bundle()));
}

#[test]
fn python_protocol_layer_is_current() {
    check("clients/python/src/agentwire_client/protocol.py", &clients::python_protocol(&bundle()));
}

#[test]
fn typescript_wire_layer_is_current() {
    check("clients/typescript/src/generated/wire.ts", &clients::typescript_wire(&bundle()));
}

#[test]
fn python_wire_layer_is_current() {
    check("clients/python/src/agentwire_client/wire_protocol.py", &clients::python_wire(&bundle()));
}
