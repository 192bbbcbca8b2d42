//! The `agentwire` binary.

use clap::Parser;

// The unwinder linked into the binary (GCC's `libgcc_eh.a`, what `gcc -static-libgcc` links)
// instead of loaded as `libgcc_s.so.1`: one shared library fewer to map and relocate at every
// start, and its constructor, which runs CPUID (slow in a VM), is gone: -42k instructions and
// about -0.1 to -0.2 ms from spawn to the first answer (docs/performance.md,
// "Start-up").
// Panics unwind as before. The binary's own native libraries come first on the link line, so the
// linker takes `_Unwind_*` from here and drops `libgcc_s` (`--as-needed`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[link(name = "gcc_eh", kind = "static")]
unsafe extern "C" {}

fn main() -> std::process::ExitCode {
    agentwire::cli::run(agentwire::cli::Cli::parse())
}
