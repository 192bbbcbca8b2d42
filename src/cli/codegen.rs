//! `agentwire codegen`: the client bindings' generator inputs and protocol layers.

use std::process::ExitCode;

use super::{CodegenAction, CodegenTarget};

/// Writes what `action` generates to `out` (stdout when `None`).
pub(super) fn run(action: &CodegenAction, out: Option<&std::path::Path>) -> ExitCode {
    use crate::codegen::clients;
    let bundle: serde_json::Value =
        serde_json::from_str(crate::protocol::embedded::bundle_json()).expect("the embedded bundle is JSON");
    let text = match action {
        CodegenAction::Input { target } => {
            let target = match target {
                CodegenTarget::Typescript => clients::Target::TypeScript,
                CodegenTarget::Python => clients::Target::Python,
            };
            let mut text = serde_json::to_string_pretty(&clients::generator_input(&bundle, target)).expect("JSON");
            text.push('\n');
            text
        }
        CodegenAction::Typescript => clients::typescript_protocol(&bundle),
        CodegenAction::Python => clients::python_protocol(&bundle),
        CodegenAction::TypescriptWire => clients::typescript_wire(&bundle),
        CodegenAction::PythonWire => clients::python_wire(&bundle),
    };
    let written = match out {
        Some(path) => std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display())),
        None => super::emit(&text).map_err(|e| e.to_string()),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("codegen: {e}");
            ExitCode::FAILURE
        }
    }
}
