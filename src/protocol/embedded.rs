//! The schema texts built into the binary: the schema files, the examples, their bundle and its
//! defs, and the vendored ACP schema.
//!
//! Only the tools read them (`agentwire schema`, `agentwire codegen`, the tests): no frame does,
//! since the validators and types are generated code. So `build.rs` deflates the 1.2 MB of JSON
//! into one stream of about 0.1 MB (`embedded.deflate`, with `embedded_index.rs` giving each
//! text's place), and the first call here inflates it once for the life of the process
//! (docs/performance.md, "Binary size").

use std::ops::Range;
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/embedded_index.rs"));

static PACKED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/embedded.deflate"));

/// All the texts, inflated on the first call.
fn whole() -> &'static str {
    static WHOLE: OnceLock<String> = OnceLock::new();
    WHOLE.get_or_init(|| {
        // The stream was written by build.rs into this very binary: failing to inflate it
        // means the file is corrupt, not that an input was bad.
        let bytes = miniz_oxide::inflate::decompress_to_vec_with_limit(PACKED, INFLATED_LEN).expect("the embedded schema texts inflate");
        String::from_utf8(bytes).expect("the embedded schema texts are UTF-8")
    })
}

fn text(range: Range<usize>) -> &'static str {
    &whole()[range]
}

fn files(table: &'static [(&'static str, Range<usize>)], cell: &'static OnceLock<Vec<(&'static str, &'static str)>>) -> &'static [(&'static str, &'static str)] {
    cell.get_or_init(|| table.iter().map(|(name, range)| (*name, text(range.clone()))).collect())
}

/// The schema files the types were generated from: (file name, text), sorted by name.
pub fn schema_files() -> &'static [(&'static str, &'static str)] {
    static FILES: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    files(SCHEMA_FILE_RANGES, &FILES)
}

/// The example frames of `schema/examples/`: (file name, JSONL text), sorted by name.
pub fn example_files() -> &'static [(&'static str, &'static str)] {
    static FILES: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    files(EXAMPLE_FILE_RANGES, &FILES)
}

/// All schema files bundled into one document (`crate::codegen::bundle`), as JSON text.
pub fn bundle_json() -> &'static str {
    text(BUNDLE_RANGE)
}

/// The bundle's defs, one per line as `Name<TAB>json`.
pub fn defs_tsv() -> &'static str {
    text(DEFS_RANGE)
}

/// The vendored ACP v1 schema (`schema/acp/schema.json`), as shipped in `@agentclientprotocol/sdk`.
pub fn acp_schema_json() -> &'static str {
    text(ACP_SCHEMA_RANGE)
}

/// The vendored ACP v2 schema (`schema/acp/v2/schema.json`), as shipped in `@agentclientprotocol/sdk`.
pub fn acp_v2_schema_json() -> &'static str {
    text(ACP_V2_SCHEMA_RANGE)
}

/// The vendored ACP v2 unstable schema (`schema/acp/v2/schema.unstable.json`), as shipped in `@agentclientprotocol/sdk`.
pub fn acp_v2_unstable_schema_json() -> &'static str {
    text(ACP_V2_UNSTABLE_SCHEMA_RANGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each text is whole and where the index says: every schema file and the bundle parse as
    /// JSON, and every example line does.
    #[test]
    fn every_text_inflates_whole() {
        assert_eq!(whole().len(), INFLATED_LEN);
        for (name, text) in schema_files().iter().chain([("bundle", bundle_json()), ("acp", acp_schema_json())].iter()) {
            serde_json::from_str::<serde_json::Value>(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(schema_files().iter().any(|(name, _)| *name == "commands.schema.json"));
        for (name, text) in example_files() {
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"));
            }
        }
        assert!(defs_tsv().lines().all(|line| line.split_once('\t').is_some()));
    }

    #[test]
    fn the_texts_are_the_files_in_the_checkout() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(acp_schema_json(), std::fs::read_to_string(root.join("schema/acp/schema.json")).unwrap());
        for (name, text) in schema_files() {
            assert_eq!(*text, std::fs::read_to_string(root.join("schema").join(name)).unwrap(), "{name}");
        }
        for (name, text) in example_files() {
            assert_eq!(*text, std::fs::read_to_string(root.join("schema/examples").join(name)).unwrap(), "{name}");
        }
    }
}
