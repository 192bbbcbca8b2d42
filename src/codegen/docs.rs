//! Renders `docs/protocol.md`.

/// The protocol reference in Markdown.
pub fn protocol_markdown() -> Result<String, String> {
    Err("not yet".into())
}
