//! The `agentwire-tools` binary: `agentwire conformance | schema | codegen`, which the `agentwire`
//! binary runs (`agentwire::cli::tools`).

use clap::Parser;

fn main() -> std::process::ExitCode {
    agentwire::cli::run_tools(agentwire::cli::ToolsCli::parse())
}
