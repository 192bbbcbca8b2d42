//! The tables of the generated module: unions, commands, wire methods, and the embedded
//! schema and example texts. Part of the build-time generator (`rust_types.rs`).

use super::*;

pub(super) fn tables(unions: &[Union], schema_files: &[(String, String)], example_files: &[(String, String)]) -> TokenStream {
    let union_infos = unions.iter().map(|u| {
        let (name, prop) = (&u.name, &u.tag_property);
        let members = u.members.iter().flat_map(|(m, tags)| tags.iter().map(move |t| quote! { (#t, #m) }));
        quote! { crate::protocol::UnionInfo { name: #name, tag_property: #prop, members: &[#(#members),*] } }
    });
    let files = schema_files.iter().map(|(name, path)| quote! { (#name, include_str!(#path)) });
    let examples = example_files.iter().map(|(name, path)| quote! { (#name, include_str!(#path)) });
    quote! {
        /// Every tagged union: its discriminator and (tag, member def) pairs.
        pub const UNIONS: &[crate::protocol::UnionInfo] = &[#(#union_infos),*];
        /// The schema files the types were generated from, embedded: (file name, text).
        pub const SCHEMA_FILES: &[(&str, &str)] = &[#(#files),*];
        /// The example frames of `schema/examples/`, embedded: (file name, JSONL text).
        pub const EXAMPLE_FILES: &[(&str, &str)] = &[#(#examples),*];
        /// All schema files bundled into one document (`crate::codegen::bundle`), as JSON text.
        pub const BUNDLE_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/bundle.json"));
        /// The bundle's defs, one per line as `Name<TAB>json` (what the validator reads).
        pub const DEFS_TSV: &str = include_str!(concat!(env!("OUT_DIR"), "/defs.tsv"));
    }
}
