//! A `Deserialize` for typify's internally tagged enums (`#[serde(tag = "…")]`, the ACP
//! schemas' unions) that reads the tag first and then the one variant the tag names. Part of the
//! build-time generator (`rust_types.rs`).
//!
//! serde's derive for an internally tagged enum buffers the object in its private `Content`
//! and reads every variant's fields from there: one more deserializer compiled for every
//! variant of every such enum (0.85 MB of the release binary for ACP v1 and v2). Here the enum
//! takes its object's text (a `RawValue`: serde_json reads protocol types from text, and a
//! `Value` gives its text too), reads the tag from it, then reads the variant's fields from the
//! same text as a plain struct, through the text deserializer every protocol type already has.
//! What it accepts is what the derive accepts: members the variant does not name are ignored
//! (no enum here denies unknown fields), a missing tag is "missing field", an unknown one
//! "unknown variant".
//!
//! serde's own buffers (`Content`, for untagged enums and flattened fields) have no text to
//! give: an enum reachable from inside one reads its value whole and writes it back to text
//! (`protocol::decode::object_text`), decided here from the types.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// For every enum of `file` with `#[serde(tag = "…")]` and no other container attribute,
/// drops the derived `Deserialize` and returns the impls that replace it.
pub fn read_by_tag(file: &mut syn::File) -> TokenStream {
    let buffered = read_from_buffers(file, &Default::default());
    let mut out = TokenStream::new();
    for item in &mut file.items {
        let syn::Item::Enum(e) = item else { continue };
        let Some(tag) = tag_of(&e.attrs) else { continue };
        let from_buffer = buffered.contains(&e.ident.to_string());
        // A variant attribute other than `rename` (`other`, `alias`, …) keeps serde's derive.
        if e.variants.iter().any(|v| !only_rename(&v.attrs)) {
            continue;
        }
        if !super::syn_fixups::drop_derived_deserialize(&mut e.attrs) {
            continue;
        }
        let name = &e.ident;
        let mut shadows = Vec::new();
        let mut arms = Vec::new();
        let mut names = Vec::new();
        for (i, v) in e.variants.iter().enumerate() {
            let ident = &v.ident;
            let wire = rename_of(&v.attrs).unwrap_or_else(|| ident.to_string());
            names.push(wire.clone());
            let parse = match &v.fields {
                syn::Fields::Unit => quote! { Ok(#name::#ident) },
                syn::Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                    let ty = &f.unnamed[0].ty;
                    quote! { crate::protocol::decode::from_str::<#ty>(text).map(#name::#ident) }
                }
                syn::Fields::Unnamed(_) => panic!("{name}::{ident}: a tuple variant of an internally tagged enum"),
                syn::Fields::Named(f) => {
                    let shadow = format_ident!("V{i}");
                    let fields: Vec<TokenStream> = f
                        .named
                        .iter()
                        .map(|field| {
                            let attrs = field.attrs.iter().filter(|a| a.path().is_ident("serde"));
                            let (fname, ty) = (&field.ident, &field.ty);
                            quote! { #(#attrs)* #fname: #ty }
                        })
                        .collect();
                    let idents: Vec<_> = f.named.iter().map(|field| &field.ident).collect();
                    shadows.push(quote! {
                        #[derive(::serde::Deserialize)]
                        struct #shadow { #(#fields,)* }
                    });
                    quote! { crate::protocol::decode::from_str::<#shadow>(text).map(|#shadow { #(#idents),* }| #name::#ident { #(#idents),* }) }
                }
            };
            arms.push(quote! { #wire => #parse });
        }
        out.extend(quote! {
            impl<'de> ::serde::Deserialize<'de> for #name {
                fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                    use ::serde::de::Error as _;
                    #(#shadows)*
                    const VARIANTS: &[&str] = &[#(#names),*];
                    let text = crate::protocol::decode::object_text(d, #from_buffer)?;
                    let text = &*text;
                    if !text.starts_with('{') {
                        return Err(D::Error::custom(concat!("invalid type: ", stringify!(#name), " is an object")));
                    }
                    let tag = match crate::protocol::decode::tag_in(text, #tag) {
                        Ok(Some(tag)) => tag,
                        Ok(None) => return Err(D::Error::missing_field(#tag)),
                        Err(_) => return Err(D::Error::custom(concat!("`", #tag, "` must be a string"))),
                    };
                    let read: ::std::result::Result<#name, ::serde_json::Error> = match &*tag {
                        #(#arms,)*
                        other => return Err(D::Error::unknown_variant(other, VARIANTS)),
                    };
                    read.map_err(D::Error::custom)
                }
            }
        });
    }
    out
}

/// The types a serde buffer can hand to a `Deserialize`: those named in the variants of an
/// untagged enum, in a flattened field, or in an internally tagged enum serde still reads,
/// and every type those name, to the end. `more` names the types of types generated outside
/// `file` (the bundle's tagged unions and their members).
pub fn read_from_buffers(file: &syn::File, more: &std::collections::BTreeMap<String, Vec<String>>) -> std::collections::BTreeSet<String> {
    use std::collections::{BTreeMap, BTreeSet};
    // Each type's field types, and the roots serde buffers.
    let mut names: BTreeMap<String, Vec<String>> = more.clone();
    let mut roots = Vec::new();
    for item in &file.items {
        let (ident, fields, attrs): (String, Vec<&syn::Field>, &[syn::Attribute]) = match item {
            syn::Item::Struct(st) => (st.ident.to_string(), st.fields.iter().collect(), &st.attrs),
            syn::Item::Enum(e) => (e.ident.to_string(), e.variants.iter().flat_map(|v| v.fields.iter()).collect(), &e.attrs),
            syn::Item::Type(alias) => {
                names.insert(alias.ident.to_string(), idents_in(&alias.ty));
                continue;
            }
            _ => continue,
        };
        let mut named = Vec::new();
        for field in &fields {
            let types = idents_in(&field.ty);
            if has_serde_word(&field.attrs, "flatten") {
                roots.extend(types.iter().cloned());
            }
            named.extend(types);
        }
        let untagged = has_serde_word(attrs, "untagged");
        let kept_tagged = tag_of(attrs).is_some() && matches!(item, syn::Item::Enum(e) if e.variants.iter().any(|v| !only_rename(&v.attrs)));
        if untagged || kept_tagged {
            roots.extend(named.iter().cloned());
        }
        names.insert(ident, named);
    }
    let mut reached = BTreeSet::new();
    while let Some(name) = roots.pop() {
        if reached.insert(name.clone()) {
            roots.extend(names.get(&name).into_iter().flatten().cloned());
        }
    }
    reached
}

/// Every identifier in a type (`Option<Vec<ContentBlock>>` names `Option`, `Vec`, `ContentBlock`).
fn idents_in(ty: &syn::Type) -> Vec<String> {
    quote!(#ty).into_iter().flat_map(flatten_tokens).collect()
}

fn flatten_tokens(tree: proc_macro2::TokenTree) -> Vec<String> {
    match tree {
        proc_macro2::TokenTree::Ident(i) => vec![i.to_string()],
        proc_macro2::TokenTree::Group(g) => g.stream().into_iter().flat_map(flatten_tokens).collect(),
        _ => Vec::new(),
    }
}

/// The entries of an item's `#[serde(…)]` attributes, each with its string value when it has
/// one (`tag = "type"`, `rename = "x"`, `untagged`, `flatten`).
fn serde_entries(attrs: &[syn::Attribute]) -> Vec<(String, Option<String>)> {
    let mut entries = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            let mut value = None;
            if meta.input.peek(syn::Token![=]) {
                let expr: syn::Expr = meta.value()?.parse()?;
                if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(lit), .. }) = expr {
                    value = Some(lit.value());
                }
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.parse_nested_meta(|_| Ok(()));
            }
            entries.push((key, value));
            Ok(())
        });
    }
    entries
}

/// Whether the serde attributes hold the bare word `word` (`flatten`, `untagged`).
fn has_serde_word(attrs: &[syn::Attribute], word: &str) -> bool {
    serde_entries(attrs).iter().any(|(key, _)| key == word)
}

/// The tag of `#[serde(tag = "…")]` when that is the enum's only serde attribute.
fn tag_of(attrs: &[syn::Attribute]) -> Option<String> {
    match serde_entries(attrs).as_slice() {
        [(key, Some(tag))] if key == "tag" => Some(tag.clone()),
        _ => None,
    }
}

/// Whether the serde attributes are at most a `rename`.
fn only_rename(attrs: &[syn::Attribute]) -> bool {
    serde_entries(attrs).iter().all(|(key, _)| key == "rename")
}

/// The name of `#[serde(rename = "…")]`.
fn rename_of(attrs: &[syn::Attribute]) -> Option<String> {
    serde_entries(attrs).into_iter().find_map(|(key, value)| if key == "rename" { value } else { None })
}
