//! The two binaries find each other: `agentwire conformance | schema | codegen` runs the tools'
//! binary (`agentwire-tools`, beside it), and the harness in the tools' binary starts the agent's
//! binary (`agentwire`, beside it) as the agent under test.
//!
//! The tools are a binary of their own so that the conformance harness, the schema tools and the
//! client generators (1.5 MB) are not in the binary every editor and host starts
//! (docs/performance.md, "Binary size"). `cargo build` and `cargo install` build both.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use super::fail;

/// The tools' binary's file name.
pub const TOOLS_BINARY: &str = "agentwire-tools";
/// The agent's binary's file name.
pub const AGENT_BINARY: &str = "agentwire";

/// `name` in the directory of the running binary.
fn beside(name: &str) -> std::io::Result<PathBuf> {
    Ok(std::env::current_exe()?.with_file_name(name))
}

/// The agent's binary: the running binary's sibling `agentwire`.
pub(super) fn agent_binary() -> Result<PathBuf, ExitCode> {
    let path = beside(AGENT_BINARY).map_err(|e| fail(&format!("cannot find this binary's directory: {e}")))?;
    if path.is_file() {
        Ok(path)
    } else {
        Err(fail(&format!("{} not found: the harness starts the agent's binary from beside its own (cargo build and cargo install build both)", path.display())))
    }
}

/// Replaces this process with the tools' binary, given this process's arguments unchanged (the
/// global flags the tools take, such as `--log-level`, among them). Returns only on failure.
pub(super) fn exec_tools() -> ExitCode {
    use std::os::unix::process::CommandExt as _;
    let path = match beside(TOOLS_BINARY) {
        Ok(path) => path,
        Err(e) => return fail(&format!("cannot find this binary's directory: {e}")),
    };
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let error = std::process::Command::new(&path).args(args).exec();
    if error.kind() == std::io::ErrorKind::NotFound {
        fail(&format!(
            "{} not found: conformance, schema and codegen are the tools' binary, built beside agentwire by `cargo build` and installed with it by `cargo install` (`cargo run --bin agentwire` builds only the agent)",
            path.display()
        ))
    } else {
        fail(&format!("cannot run {}: {error}", path.display()))
    }
}
