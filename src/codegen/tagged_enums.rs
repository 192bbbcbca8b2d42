//! A `Deserialize` for typify's internally tagged enums (`#[serde(tag = "…")]`, the ACP
//! schemas' unions) that reads the tag first and then the one variant the tag names. Part of the
//! build-time generator (`rust_types.rs`).
//!
//! serde's derive for an internally tagged enum buffers the object in its private `Content`
//! and reads every variant's fields from there: one more deserializer compiled for every
//! variant of every such enum (0.85 MB of the release binary for ACP v1 and v2). Here each
//! struct variant's fields are a plain struct, read through `crate::protocol::decode` like every
//! other protocol type; the enum reads its object once into a `serde_json::Value` (the same
//! buffering `Content` did), looks at the tag and reads that variant. What it accepts is what
//! the derive accepts: other members are ignored as the derive ignores them (no enum here
//! denies unknown fields), a missing tag is "missing field", an unknown one "unknown variant".

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// For every enum of `file` with `#[serde(tag = "…")]` and no other container attribute,
/// drops the derived `Deserialize` and returns the impls that replace it.
pub fn read_by_tag(file: &mut syn::File) -> TokenStream {
    let mut out = TokenStream::new();
    for item in &mut file.items {
        let syn::Item::Enum(e) = item else { continue };
        let Some(tag) = tag_of(&e.attrs) else { continue };
        // A variant attribute other than `rename` (`other`, `alias`, …) keeps serde's derive.
        if e.variants.iter().any(|v| !only_rename(&v.attrs)) {
            continue;
        }
        let mut derived = false;
        for attr in &mut e.attrs {
            if attr.path().is_ident("derive") {
                let derives: syn::punctuated::Punctuated<syn::Path, syn::Token![,]> = attr.parse_args_with(syn::punctuated::Punctuated::parse_terminated).expect("a derive list");
                derived |= derives.iter().any(|p| p.segments.last().is_some_and(|s| s.ident == "Deserialize"));
                let kept = derives.into_iter().filter(|p| p.segments.last().is_none_or(|s| s.ident != "Deserialize"));
                *attr = syn::parse_quote!(#[derive(#(#kept),*)]);
            }
        }
        if !derived {
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
                syn::Fields::Unit => quote! { |_| Ok(#name::#ident) },
                syn::Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                    let ty = &f.unnamed[0].ty;
                    quote! { |v| crate::protocol::decode::from_value::<#ty>(v).map(#name::#ident) }
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
                    quote! { |v| crate::protocol::decode::from_value::<#shadow>(v).map(|#shadow { #(#idents),* }| #name::#ident { #(#idents),* }) }
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
                    let value = <::serde_json::Value as ::serde::Deserialize>::deserialize(d)?;
                    // The variant's reader is chosen while the tag is borrowed; the value then
                    // moves into it.
                    let parse: fn(::serde_json::Value) -> ::std::result::Result<#name, ::serde_json::Error> = match value.get(#tag) {
                        Some(::serde_json::Value::String(tag)) => match tag.as_str() {
                            #(#arms,)*
                            other => return Err(D::Error::unknown_variant(other, VARIANTS)),
                        },
                        Some(_) => return Err(D::Error::custom(concat!("`", #tag, "` must be a string"))),
                        None if value.is_object() => return Err(D::Error::missing_field(#tag)),
                        None => return Err(D::Error::custom(concat!("invalid type: ", stringify!(#name), " is an object"))),
                    };
                    parse(value).map_err(D::Error::custom)
                }
            }
        });
    }
    out
}

/// The tag of `#[serde(tag = "…")]` when that is the enum's only serde attribute.
fn tag_of(attrs: &[syn::Attribute]) -> Option<String> {
    let mut tag = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let mut other = false;
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("tag") {
                let lit: syn::LitStr = meta.value()?.parse()?;
                tag = Some(lit.value());
            } else {
                other = true;
            }
            Ok(())
        });
        if other {
            return None;
        }
    }
    tag
}

/// Whether the serde attributes are at most a `rename`.
fn only_rename(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("serde")).all(|attr| {
        let mut only = true;
        let _ = attr.parse_nested_meta(|meta| {
            only &= meta.path.is_ident("rename");
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
        only
    })
}

/// The name of `#[serde(rename = "…")]`.
fn rename_of(attrs: &[syn::Attribute]) -> Option<String> {
    let mut name = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let lit: syn::LitStr = meta.value()?.parse()?;
                name = Some(lit.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    name
}
