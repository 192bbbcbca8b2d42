//! The `agentwire` binary.

use clap::Parser;

fn main() -> std::process::ExitCode {
    agentwire::cli::run(agentwire::cli::Cli::parse())
}
