//! Generates the protocol types from `schema/*.schema.json` into `$OUT_DIR/protocol.rs`.
//! Beyond code, it adds only two link arguments to the release binaries, each when the linker
//! takes it: packed relative relocations and identical code folding (both below).
//!
//! The schema files are bundled first (so a duplicate name or a dangling `$ref` is a readable
//! build error naming the file and pointer, not a typify panic), then handed to the generator
//! in `src/codegen/rust_types.rs`.

#[path = "src/codegen/bundle.rs"]
#[allow(dead_code)]
mod bundle;
#[path = "src/codegen/rust_types.rs"]
mod rust_types;
#[path = "src/codegen/acp_types.rs"]
mod acp_types;
#[path = "src/codegen/handlers.rs"]
mod handlers;
#[path = "src/codegen/validators.rs"]
mod validators;

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let schema_dir = manifest.join("schema");
    println!("cargo:rerun-if-changed=schema");
    println!("cargo:rerun-if-changed=src/codegen/bundle.rs");
    println!("cargo:rerun-if-changed=src/codegen/rust_types.rs");
    println!("cargo:rerun-if-changed=src/codegen/acp_types.rs");
    println!("cargo:rerun-if-changed=src/codegen/handlers.rs");
    println!("cargo:rerun-if-changed=src/codegen/validators.rs");
    for part in ["typify_driver", "syn_fixups", "unions", "constructors", "tables", "tagged_enums"] {
        println!("cargo:rerun-if-changed=src/codegen/{part}.rs");
    }

    pack_relative_relocations();
    fold_identical_code();

    let files = match files_ending_in(&schema_dir, ".schema.json") {
        Ok(files) => files,
        Err(e) => fail(&e.to_string()),
    };
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|(name, path)| {
            println!("cargo:rerun-if-changed={}", path.display());
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
            (name.clone(), text)
        })
        .collect();
    let set = bundle::SchemaSet::from_texts(texts.iter().map(|(n, t)| (n.as_str(), t.as_str())))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let bundled = set.bundle().unwrap_or_else(|e| fail(&e.to_string()));
    let examples: Vec<(String, String)> = files_ending_in(&schema_dir.join("examples"), ".jsonl")
        .unwrap_or_else(|e| fail(&e.to_string()))
        .into_iter()
        .map(|(name, path)| {
            println!("cargo:rerun-if-changed={}", path.display());
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
            (name, text)
        })
        .collect();
    let code = rust_types::generate(&bundled).unwrap_or_else(|e| fail(&e.to_string()));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // The Agent Client Protocol: the vendored official schema, generated into its own module.
    let acp_dir = schema_dir.join("acp");
    let read = |name: &str| {
        let path = acp_dir.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        std::fs::read_to_string(&path).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())))
    };
    let acp_schema = read("schema.json");
    let acp = acp_types::generate(&acp_schema, None, &read("meta.json"), &read("methods.json"), "schema/acp").unwrap_or_else(|e| fail(&e.to_string()));
    // ACP v2 beside it, from its own vendored schema (`schema/acp/v2/`), into its own module;
    // the unstable methods and fields v2's `methods.json` names come from the unstable schema
    // vendored beside the stable one.
    let acp_v2_schema = read("v2/schema.json");
    let acp_v2_unstable_schema = read("v2/schema.unstable.json");
    let acp_v2 = acp_types::generate(&acp_v2_schema, Some(&acp_v2_unstable_schema), &read("v2/meta.json"), &read("v2/methods.json"), "schema/acp/v2").unwrap_or_else(|e| fail(&e.to_string()));
    // The validators, one generator for both schemas.
    let no_defs = serde_json::Map::new();
    let bundle_defs = bundled.get("$defs").and_then(serde_json::Value::as_object).unwrap_or(&no_defs);
    let checks = validators::generate(bundle_defs, &[]).unwrap_or_else(|e| fail(&e.to_string()));
    let acp_doc: serde_json::Value = serde_json::from_str(&acp_schema).unwrap_or_else(|e| fail(&format!("schema/acp/schema.json: {e}")));
    let acp_defs = acp_doc.get("$defs").and_then(serde_json::Value::as_object).unwrap_or(&no_defs);
    // The schema's root is `anyOf [agent messages, client messages, …]`: each side is a root.
    let side = |i: usize| acp_doc.pointer(&format!("/anyOf/{i}")).unwrap_or_else(|| fail("schema/acp/schema.json: no root message union"));
    let acp_checks = validators::generate(acp_defs, &[("#agent-message", side(0)), ("#client-message", side(1))]).unwrap_or_else(|e| fail(&e.to_string()));
    let acp_v2_doc: serde_json::Value = serde_json::from_str(&acp_v2_schema).unwrap_or_else(|e| fail(&format!("schema/acp/v2/schema.json: {e}")));
    let acp_v2_defs = acp_v2_doc.get("$defs").and_then(serde_json::Value::as_object).unwrap_or(&no_defs);
    let side_v2 = |i: usize| acp_v2_doc.pointer(&format!("/anyOf/{i}")).unwrap_or_else(|| fail("schema/acp/v2/schema.json: no root message union"));
    let acp_v2_checks = validators::generate(acp_v2_defs, &[("#agent-message", side_v2(0)), ("#client-message", side_v2(1))]).unwrap_or_else(|e| fail(&e.to_string()));
    // The unstable schema's own validators: frames of the unstable methods are checked against it.
    let acp_v2u_doc: serde_json::Value = serde_json::from_str(&acp_v2_unstable_schema).unwrap_or_else(|e| fail(&format!("schema/acp/v2/schema.unstable.json: {e}")));
    let acp_v2u_defs = acp_v2u_doc.get("$defs").and_then(serde_json::Value::as_object).unwrap_or(&no_defs);
    let side_v2u = |i: usize| acp_v2u_doc.pointer(&format!("/anyOf/{i}")).unwrap_or_else(|| fail("schema/acp/v2/schema.unstable.json: no root message union"));
    // A def the unstable schema states as the stable one does is checked by the stable
    // schema's function: generated once, not twice (-0.3 MB of binary).
    let acp_v2u_checks = validators::generate_extending(acp_v2u_defs, &[("#agent-message", side_v2u(0)), ("#client-message", side_v2u(1))], acp_v2_defs, "crate::protocol::acp_v2_checks").unwrap_or_else(|e| fail(&e.to_string()));
    // Each def on a line of its own (`Name<TAB>json`), so the validator parses only the defs a
    // frame needs instead of the whole bundle on the first frame.
    let defs_lines: String = bundled
        .get("$defs")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, def)| format!("{name}\t{def}\n"))
        .collect();
    let (packed, index) = pack_texts(&bundled.to_string(), &defs_lines, &acp_schema, &acp_v2_schema, &acp_v2_unstable_schema, &texts, &examples);
    let write = |name: &str, bytes: &[u8]| {
        let out = out_dir.join(name);
        std::fs::write(&out, bytes).unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
    };
    // The items naming the JSON-RPC runtime (the dispatch) go to files of their own, included
    // above it (`src/jsonrpc/dispatch.rs`); the protocol layer includes the rest.
    let split = |code: &str, from: &str| handlers::split_runtime(code, &format!("// @generated by build.rs from {from}. Do not edit.")).unwrap_or_else(|e| fail(&e.to_string()));
    let (code, wire_dispatch) = split(&code, "schema/*.schema.json");
    let (acp, acp_dispatch) = split(&acp, "schema/acp/ (src/codegen/acp_types.rs)");
    let (acp_v2, acp_v2_dispatch) = split(&acp_v2, "schema/acp/v2/ (src/codegen/acp_types.rs)");
    for (name, text) in [("protocol.rs", code), ("wire_dispatch.rs", wire_dispatch), ("acp.rs", acp), ("acp_dispatch.rs", acp_dispatch), ("acp_v2.rs", acp_v2), ("acp_v2_dispatch.rs", acp_v2_dispatch), ("validators.rs", checks), ("acp_validators.rs", acp_checks), ("acp_v2_validators.rs", acp_v2_checks), ("acp_v2_unstable_validators.rs", acp_v2u_checks), ("embedded_index.rs", index)] {
        write(name, text.as_bytes());
    }
    write("embedded.deflate", &packed);
}

/// The texts only the tools read (`agentwire schema`, `codegen`, the tests): the schema files,
/// the examples, the bundle, its defs and the vendored ACP schemas (v1, v2 and v2 unstable), 2 MB of JSON, deflated into
/// one stream of about a tenth of that (`src/protocol/embedded.rs` inflates it on first use;
/// no frame needs it). Returns the stream and the Rust source of its index: each text's byte
/// range in the inflated whole.
fn pack_texts(bundle: &str, defs: &str, acp_schema: &str, acp_v2_schema: &str, acp_v2_unstable_schema: &str, schema_files: &[(String, String)], examples: &[(String, String)]) -> (Vec<u8>, String) {
    let mut whole = String::new();
    let mut push = |text: &str| {
        let start = whole.len();
        whole.push_str(text);
        format!("{start}..{}", whole.len())
    };
    let mut index = String::from("// @generated by build.rs: where each embedded text lies in the inflated `embedded.deflate`.\n");
    index += &format!("const BUNDLE_RANGE: core::ops::Range<usize> = {};\n", push(bundle));
    index += &format!("const DEFS_RANGE: core::ops::Range<usize> = {};\n", push(defs));
    index += &format!("const ACP_SCHEMA_RANGE: core::ops::Range<usize> = {};\n", push(acp_schema));
    index += &format!("const ACP_V2_SCHEMA_RANGE: core::ops::Range<usize> = {};\n", push(acp_v2_schema));
    index += &format!("const ACP_V2_UNSTABLE_SCHEMA_RANGE: core::ops::Range<usize> = {};\n", push(acp_v2_unstable_schema));
    let mut table = |name: &str, files: &[(String, String)]| {
        let rows: String = files.iter().map(|(file, text)| format!("    ({file:?}, {}),\n", push(text))).collect();
        format!("const {name}: &[(&str, core::ops::Range<usize>)] = &[\n{rows}];\n")
    };
    index += &table("SCHEMA_FILE_RANGES", schema_files);
    index += &table("EXAMPLE_FILE_RANGES", examples);
    index += &format!("const INFLATED_LEN: usize = {};\n", whole.len());
    (miniz_oxide::deflate::compress_to_vec(whole.as_bytes(), 10), index)
}

/// Links the `agentwire` binary with its relative relocations packed (`-z pack-relative-relocs`,
/// `DT_RELR`). The binary is position-independent, so its image is randomized like the rest of
/// the process (it runs model-chosen commands and reads untrusted frames), and it has about
/// 40,000 relative relocations. Packed, they take about 11 KB of the file instead of 1 MB of
/// 24-byte `.rela.dyn` entries; the dynamic loader still writes each pointer at start
/// (docs/performance.md, "Release profile"). Only on Linux/glibc, and only when the C toolchain
/// links a program with it (binutils >= 2.38 and glibc >= 2.36); otherwise the binary is linked
/// without it.
fn pack_relative_relocations() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os != "linux" || env != "gnu" || std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        return;
    }
    let mut cc = std::process::Command::new("cc");
    cc.args(["-Wl,-z,pack-relative-relocs", "-x", "c"]);
    if links(cc, b"int main(void) { return 0; }\n") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Links the binaries with identical code folding (`--icf=all`): the linker keeps one copy of
/// functions whose machine code and relocations are the same, which generic code produces by
/// the thousand (`drop_in_place` and serde instances that differ only in a type nobody looks at
/// at run time; Rust does not promise distinct addresses for distinct functions). Only when the
/// linker rustc uses accepts it — LLD, rustc's own linker on x86_64 Linux since 1.90 — found by
/// linking an empty program with the same `rustc` and flags; otherwise linked as before.
fn fold_identical_code() {
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() || std::env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    let Some(probe) = rustc_probe("link-arg=-Wl,--icf=all") else { return };
    if links(probe, b"fn main() {}\n") {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}

/// `rustc` with the build's flags and linker, ready to link a probe program with the codegen
/// option `extra` (`-C extra`); `None` when cargo did not say which rustc builds.
fn rustc_probe(extra: &str) -> Option<std::process::Command> {
    let rustc = std::env::var_os("RUSTC")?;
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let mut probe = std::process::Command::new(rustc);
    probe.args(flags.split('\x1f').filter(|f| !f.is_empty())).args(["--crate-type=bin", "--crate-name=link_probe", "-C", extra]);
    // A linker set in cargo's config (`[target.<triple>] linker`) links the real binaries: probe that one.
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        probe.arg("-C").arg({
            let mut arg = std::ffi::OsString::from("linker=");
            arg.push(linker);
            arg
        });
    }
    Some(probe)
}

/// Whether `driver` (a compiler with the flags under test) links `program`, read from stdin,
/// into a throw-away executable in `OUT_DIR`.
fn links(mut driver: std::process::Command, program: &[u8]) -> bool {
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return false };
    let probe = out_dir.join("link-probe");
    let linked = driver
        .arg("-o")
        .arg(&probe)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .and_then(|mut child| {
            if let Some(mut stdin) = child.stdin.take() {
                std::io::Write::write_all(&mut stdin, program)?;
            }
            child.wait()
        })
        .is_ok_and(|status| status.success());
    let _ = std::fs::remove_file(&probe);
    linked
}

/// `(file name, path)` of the files in `dir` whose name ends in `suffix`, sorted.
fn files_ending_in(dir: &Path, suffix: &str) -> std::io::Result<Vec<(String, PathBuf)>> {
    let in_dir = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display()));
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(in_dir)? {
        let path = entry.map_err(in_dir)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if name.ends_with(suffix) {
            files.push((name, path));
        }
    }
    files.sort();
    Ok(files)
}

fn fail(message: &str) -> ! {
    // A panic message is hard to read in cargo's output; print the problem and exit instead.
    eprintln!("error: schema codegen failed: {message}");
    println!("cargo:warning=schema codegen failed: {message}");
    std::process::exit(1);
}
