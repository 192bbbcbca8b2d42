//! Build-time generator: bundled schema → Rust protocol types. Used only by `build.rs`
//! (it needs typify, which is a build dependency), never compiled into the library.
//!
//! What comes from where:
//! - **typify 0.8** generates the leaf types: structs, string enums, constrained newtypes,
//!   untagged unions of distinct JSON types (`x-untagged`).
//! - **this file** generates what typify gets wrong or cannot know:
//!   - every tagged union (`oneOf` + `discriminator`) as an enum that reads the tag first and
//!     parses the member directly (typify would emit an untagged enum that silently picks the
//!     wrong variant), including unions nested inside unions;
//!   - one zero-sized marker per string `const` (`LitSetModel` always writes `"set_model"`
//!     and accepts nothing else), so a member struct used on its own still writes and checks
//!     its tag;
//!   - (through `handlers.rs`) `RpcMethod` / `WireMethod` impls tying each command to its
//!     response type (`x-response`, `x-result`), the `RpcHandler` / `WireHandler` traits and
//!     their dispatch functions;
//!   - tables (unions, commands, wire methods) and the embedded schema texts.
//! - A syn pass puts struct fields back in schema order (typify sorts them alphabetically;
//!   schema order keeps `type` first and matches the peers' key order) and turns optional
//!   arrays into `Option<Vec<_>>` (typify collapses `[]` and absent).
//! - A third syn pass replaces serde's derived `Deserialize` of untagged unions of scalars
//!   (ids: a string or an integer, or `null`) with one that looks at the JSON token once:
//!   the derive buffers the value and tries each variant in turn, so every integer id cost a
//!   failed string attempt and a formatted error message.
//! - A second syn pass gives every struct with a constant field (a tag such as `type`, `method`,
//!   `role`, `jsonrpc`) a `new` taking its required fields, so code builds frames without
//!   spelling out the markers and the absent optional fields.
//!
//! One file per job, beside this one: `typify_driver.rs`, `syn_fixups.rs`, `unions.rs`,
//! `constructors.rs`, `tables.rs`; the validators come from `validators.rs` (called by
//! `build.rs` for this bundle and the vendored ACP schema alike), the handler/dispatch layers
//! (`rpc_layer`, `wire_layer`) from `handlers.rs`. This file keeps `generate`.

use std::collections::{BTreeMap, BTreeSet};

use heck::ToUpperCamelCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::{Map, Value};

#[path = "typify_driver.rs"]
mod typify_driver;
#[path = "syn_fixups.rs"]
mod syn_fixups;
#[path = "unions.rs"]
mod unions;
#[path = "constructors.rs"]
mod constructors;
#[path = "tables.rs"]
mod tables;
#[path = "tagged_enums.rs"]
pub mod tagged_enums;

use constructors::*;
/// Shared with `acp_types.rs` and `handlers.rs`.
pub use constructors::constructors;
pub use unions::{doc_of, ref_name};
use syn_fixups::*;
use tables::*;
use typify_driver::*;
use unions::*;

/// Absolute path of the generated module inside the crate.
const MODULE: &str = "crate::protocol::generated";

/// Why a build-time generator (this one or `acp_types.rs`) refused a schema, or its own
/// output. Written out by hand: `build.rs` compiles this file, and its dependencies are the
/// build dependencies, which leave thiserror out.
#[derive(Debug)]
pub enum CodegenError {
    /// The bundle has no `$defs`.
    NoDefs,
    /// A schema file is not JSON.
    Json { file: String, source: serde_json::Error },
    /// The schema is not one the generator handles: where, and why.
    Schema { at: String, reason: String },
    /// A file names a def it does not have.
    MissingDef { file: String, def: String },
    /// ACP's `methods.json` names unstable methods or fields, and no unstable schema came with it.
    NoUnstableSchema { dir: String },
    /// A union names a member no def has.
    UnknownMember(String),
    /// A union's member has no constant tag.
    NoTag { member: String, prop: String },
    /// A def (`ACP Name` for ACP's) typify cannot read as a schema.
    NotTypifiable { def: String, source: serde_json::Error },
    /// typify refused the defs (`typify`, or `typify (ACP)`).
    Typify { context: &'static str, source: typify::Error },
    /// Code generated here does not parse: which, and syn's reason.
    Parse { what: &'static str, source: syn::Error },
    /// The handler generator (`handlers.rs`, compiled beside this one) refused.
    Handlers(Box<dyn std::error::Error + Send + Sync>),
}

impl std::fmt::Display for CodegenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoDefs => write!(f, "bundle has no $defs"),
            Self::Json { file, source } => write!(f, "{file}: {source}"),
            Self::Schema { at, reason } => write!(f, "{at}: {reason}"),
            Self::MissingDef { file, def } => write!(f, "{file} has no $defs `{def}`"),
            Self::NoUnstableSchema { dir } => write!(f, "{dir}/methods.json names unstable methods or fields, and there is no {dir}/schema.unstable.json with $defs"),
            Self::UnknownMember(member) => write!(f, "unknown union member {member}"),
            Self::NoTag { member, prop } => write!(f, "union member {member} has no `{prop}` const"),
            Self::NotTypifiable { def, source } => write!(f, "{def}: not a schema typify understands: {source}"),
            Self::Typify { context, source } => write!(f, "{context}: {source}"),
            Self::Parse { what, source } => write!(f, "{what} does not parse: {source}"),
            Self::Handlers(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CodegenError {}

/// Generates the whole `protocol.rs` source from the bundled schema.
pub fn generate(bundle: &Value) -> Result<String, CodegenError> {
    let defs = bundle["$defs"].as_object().ok_or(CodegenError::NoDefs)?;
    let unions = find_unions(defs)?;
    let lits = collect_lits(defs);

    let leaf = typify_leaf_types(defs, &unions, &lits)?;
    let mut file: syn::File = syn::parse2(leaf).map_err(|source| CodegenError::Parse { what: "typify output", source })?;
    fix_structs(&mut file, defs);
    let constructors = constructors(&file, defs, &lits, false)?;
    let scalar_unions = scalar_untagged_deserializers(&mut file);

    let mut out = TokenStream::new();
    out.extend(quote! { #file });
    out.extend(constructors);
    out.extend(scalar_unions);
    out.extend(lit_types(&lits));
    // A union inside an untagged enum (or a flattened field) is handed serde's buffer, which
    // has no text: those read a `Value` (`protocol::decode::object_text`).
    let members = unions.iter().map(|u| (u.name.clone(), u.members.iter().map(|(m, _)| m.clone()).collect())).collect();
    let buffered = tagged_enums::read_from_buffers(&file, &members);
    for u in &unions {
        out.extend(union_enum(u, defs, &unions, buffered.contains(&u.name)));
    }
    out.extend(crate::handlers::rpc_layer(defs).map_err(|e| CodegenError::Handlers(e.into()))?);
    out.extend(crate::handlers::wire_layer(defs).map_err(|e| CodegenError::Handlers(e.into()))?);
    out.extend(tables(&unions));

    let file: syn::File = syn::parse2(out).map_err(|source| CodegenError::Parse { what: "generated code", source })?;
    // typify checks a `pattern` with regress; the regex crate is the one already linked (boon,
    // grep, globset), and the validators' compiler admits only patterns both read alike
    // (`validators::portable`), so the same `Regex::new(…).find(…)` means the same.
    let code = prettyplease::unparse(&file).replace("::regress::Regex", "::regex::Regex");
    Ok(format!("// @generated by build.rs from schema/*.schema.json. Do not edit.\n\n{code}"))
}
