//! The generated Rust, printed on demand in the form the build includes it (docs/architecture.md,
//! "Generated code"): `AGENTWIRE_GENERATED_OUT=DIR cargo test --test generated_code` copies every
//! generated file the sources include into DIR. The files are read from the `OUT_DIR` this test
//! was compiled against, i.e. the very files the crate it links was built from.

use std::path::{Path, PathBuf};

/// Every `include!(concat!(env!("OUT_DIR"), "/name.rs"))` under `src/`, as (including file, name).
fn included() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let marker = "include!(concat!(env!(\"OUT_DIR\"), \"/";
                for (at, _) in text.match_indices(marker) {
                    let rest = &text[at + marker.len()..];
                    out.push((path.clone(), rest[..rest.find('"').unwrap()].to_owned()));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out.sort();
    out
}

#[test]
fn every_generated_file_is_included_and_says_so() {
    let out_dir = Path::new(env!("OUT_DIR"));
    let included = included();
    let names: Vec<&str> = included.iter().map(|(_, name)| name.as_str()).collect();
    for name in ["protocol.rs", "acp.rs", "acp_v2.rs", "wire_dispatch.rs", "acp_dispatch.rs", "acp_v2_dispatch.rs"] {
        assert!(names.contains(&name), "{name} is not included by any source: {names:?}");
    }
    for (source, name) in &included {
        let text = std::fs::read_to_string(out_dir.join(name)).unwrap_or_else(|e| panic!("{name} (included by {}): {e}", source.display()));
        let first = text.lines().next().unwrap_or_default();
        assert!(first.starts_with("// ") && first.contains("enerated by"), "{name} does not open with its generator's header: {first:?}");
    }
    // No generated Rust left behind that nothing includes (a stale or orphaned output).
    for entry in std::fs::read_dir(out_dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        if file.ends_with(".rs") {
            assert!(names.contains(&file.as_str()), "OUT_DIR/{file} is generated but no source includes it");
        }
    }
    if let Some(dir) = std::env::var_os("AGENTWIRE_GENERATED_OUT") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (source, name) in &included {
            std::fs::copy(out_dir.join(name), dir.join(name)).unwrap();
            let module = source.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(source);
            eprintln!("{} (included by {})", dir.join(name).display(), module.display());
        }
    }
}
