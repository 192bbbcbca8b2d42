//! syn passes over typify's output: struct fields back in schema order, optional arrays as
//! `Option<Vec<_>>`, explicit `null`s kept, and a one-look `Deserialize` for untagged unions of
//! scalars (ids). Part of the build-time generator (`rust_types.rs`).

use super::*;

/// The JSON kinds a scalar variant of an untagged union accepts, in the order serde's derive
/// would try them.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Scalar {
    Null,
    String,
    I64,
    U64,
    F64,
    Bool,
}

pub(super) fn scalar_of(variant: &syn::Variant) -> Option<Scalar> {
    match &variant.fields {
        syn::Fields::Unit => Some(Scalar::Null),
        syn::Fields::Unnamed(f) if f.unnamed.len() == 1 => {
            let ty = &f.unnamed[0].ty;
            match quote!(#ty).to_string().replace(' ', "").as_str() {
                "::std::string::String" | "String" => Some(Scalar::String),
                "i64" => Some(Scalar::I64),
                "u64" => Some(Scalar::U64),
                "f64" => Some(Scalar::F64),
                "bool" => Some(Scalar::Bool),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Drops `Deserialize` from an item's derive list (its own impl replaces it); whether it was
/// there.
pub(super) fn drop_derived_deserialize(attrs: &mut [syn::Attribute]) -> bool {
    let mut derived = false;
    for attr in attrs {
        if attr.path().is_ident("derive") {
            let derives: syn::punctuated::Punctuated<syn::Path, syn::Token![,]> =
                attr.parse_args_with(syn::punctuated::Punctuated::parse_terminated).expect("a derive list");
            derived |= derives.iter().any(|p| p.segments.last().is_some_and(|s| s.ident == "Deserialize"));
            let kept = derives.into_iter().filter(|p| p.segments.last().is_none_or(|s| s.ident != "Deserialize"));
            *attr = syn::parse_quote!(#[derive(#(#kept),*)]);
        }
    }
    derived
}

/// For every `#[serde(untagged)]` enum whose variants are all scalars, drops the derived
/// `Deserialize` and returns a visitor-based one that accepts exactly what the derive accepts
/// (the first variant, in declaration order, that takes the token).
pub(super) fn scalar_untagged_deserializers(file: &mut syn::File) -> TokenStream {
    let mut out = TokenStream::new();
    for item in &mut file.items {
        let syn::Item::Enum(e) = item else { continue };
        let untagged = e.attrs.iter().any(|a| a.path().is_ident("serde") && quote!(#a).to_string().contains("untagged"));
        let kinds: Option<Vec<Scalar>> = e.variants.iter().map(scalar_of).collect();
        let (true, Some(kinds)) = (untagged, kinds) else { continue };
        drop_derived_deserialize(&mut e.attrs);
        let name = &e.ident;
        let variants: Vec<(&syn::Ident, Scalar)> = e.variants.iter().map(|v| &v.ident).zip(kinds.iter().copied()).collect();
        // Each visit method: the first variant that accepts the token, converting numbers the
        // way serde's primitive impls do (an integer fits i64/u64 only in range; f64 takes any).
        let first = |accepts: &dyn Fn(Scalar) -> Option<TokenStream>| -> Option<TokenStream> {
            variants.iter().find_map(|(ident, kind)| accepts(*kind).map(|conv| (ident, conv))).map(|(ident, conv)| quote! { #name::#ident #conv })
        };
        let mut methods = Vec::new();
        if let Some(make) = first(&|k| (k == Scalar::String).then(TokenStream::new)) {
            methods.push(quote! {
                fn visit_str<E: ::serde::de::Error>(self, v: &str) -> ::std::result::Result<#name, E> { let v = v.to_owned(); Ok(#make(v)) }
                fn visit_string<E: ::serde::de::Error>(self, v: ::std::string::String) -> ::std::result::Result<#name, E> { Ok(#make(v)) }
            });
        }
        if let Some(make) = first(&|k| (k == Scalar::Bool).then(TokenStream::new)) {
            methods.push(quote! { fn visit_bool<E: ::serde::de::Error>(self, v: bool) -> ::std::result::Result<#name, E> { Ok(#make(v)) } });
        }
        if let Some(make) = first(&|k| (k == Scalar::Null).then(TokenStream::new)) {
            methods.push(quote! {
                fn visit_unit<E: ::serde::de::Error>(self) -> ::std::result::Result<#name, E> { Ok(#make) }
                fn visit_none<E: ::serde::de::Error>(self) -> ::std::result::Result<#name, E> { Ok(#make) }
            });
        }
        let numeric = |token: TokenStream, from: TokenStream| {
            let arms = variants.iter().filter_map(|(ident, kind)| {
                let conv = match kind {
                    Scalar::I64 => quote! { <i64 as ::std::convert::TryFrom<_>>::try_from(v).ok() },
                    Scalar::U64 => quote! { <u64 as ::std::convert::TryFrom<_>>::try_from(v).ok() },
                    Scalar::F64 => quote! { Some(v as f64) },
                    _ => return None,
                };
                Some(quote! { if let Some(x) = #conv { return Ok(#name::#ident(x)); } })
            });
            quote! {
                #[allow(irrefutable_let_patterns, clippy::cast_precision_loss, clippy::unnecessary_fallible_conversions)]
                fn #token<E: ::serde::de::Error>(self, v: #from) -> ::std::result::Result<#name, E> {
                    #(#arms)*
                    Err(E::invalid_type(::serde::de::Unexpected::Other(stringify!(#from)), &self))
                }
            }
        };
        if kinds.iter().any(|k| matches!(k, Scalar::I64 | Scalar::U64 | Scalar::F64)) {
            methods.push(numeric(quote!(visit_i64), quote!(i64)));
            methods.push(numeric(quote!(visit_u64), quote!(u64)));
        }
        if let Some(make) = first(&|k| (k == Scalar::F64).then(TokenStream::new)) {
            methods.push(quote! { fn visit_f64<E: ::serde::de::Error>(self, v: f64) -> ::std::result::Result<#name, E> { Ok(#make(v)) } });
        }
        let expecting = format!("data matching a variant of untagged enum {name}");
        out.extend(quote! {
            impl<'de> ::serde::Deserialize<'de> for #name {
                fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                    struct Visitor;
                    impl<'de> ::serde::de::Visitor<'de> for Visitor {
                        type Value = #name;
                        fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result { f.write_str(#expecting) }
                        #(#methods)*
                    }
                    d.deserialize_any(Visitor)
                }
            }
        });
    }
    out
}

/// Puts fields in schema order and makes optional arrays `Option<Vec<_>>`.
pub(super) fn fix_structs(file: &mut syn::File, defs: &Map<String, Value>) {
    for item in &mut file.items {
        let syn::Item::Struct(s) = item else { continue };
        let Some(props) = defs.get(&s.ident.to_string()).and_then(|d| d.get("properties")).and_then(Value::as_object) else {
            continue;
        };
        let order: Vec<&String> = props.keys().collect();
        let syn::Fields::Named(named) = &mut s.fields else { continue };
        let mut fields: Vec<syn::Field> = named.named.iter().cloned().collect();
        for f in &mut fields {
            optional_vec_to_option(f);
            keep_explicit_null(f);
            if props.get(&wire_name(f)).and_then(|p| p.get("x-emit-null")) == Some(&Value::Bool(true)) {
                emit_null(f);
            }
        }
        fields.sort_by_key(|f| {
            let wire = wire_name(f);
            order.iter().position(|k| **k == wire).unwrap_or(usize::MAX)
        });
        named.named = fields.into_iter().collect();
    }
}

pub(super) fn is_option(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

pub(super) fn is_string(ty: &syn::Type) -> bool {
    let text = quote!(#ty).to_string().replace(' ', "");
    text == "::std::string::String" || text == "String"
}

/// A field's `serde(default)`: `Some(None)` for the plain one and for the `flatten`ed map of
/// additional properties (empty), `Some(Some(path))` for `default = "path"`, `None` when it has
/// none.
pub(super) fn serde_default(f: &syn::Field) -> Option<Option<String>> {
    for attr in &f.attrs {
        let text = quote!(#attr).to_string();
        if !text.starts_with("# [serde") {
            continue;
        }
        if let Some(rest) = text.split("default = \"").nth(1) {
            return Some(Some(rest.split('"').next().unwrap_or_default().to_owned()));
        }
        let inner = text.split_once('(').map_or("", |(_, r)| r);
        if inner.split(',').any(|part| matches!(part.trim().trim_end_matches([')', ']']).trim(), "default" | "flatten")) {
            return Some(None);
        }
    }
    None
}

pub(super) fn wire_name(f: &syn::Field) -> String {
    for attr in &f.attrs {
        let text = quote!(#attr).to_string();
        if let Some(rest) = text.split("rename = \"").nth(1) {
            return rest.split('"').next().unwrap_or_default().to_owned();
        }
    }
    f.ident.as_ref().map(|i| i.to_string().trim_start_matches("r#").to_owned()).unwrap_or_default()
}

pub(super) fn optional_vec_to_option(f: &mut syn::Field) {
    let is_vec = matches!(&f.ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec"));
    if !is_vec {
        return;
    }
    let mut changed = false;
    for attr in &mut f.attrs {
        let text = quote!(#attr).to_string();
        if text.contains("\"::std::vec::Vec::is_empty\"") {
            *attr = reparse_attr(&text.replace("\"::std::vec::Vec::is_empty\"", "\"::std::option::Option::is_none\""));
            changed = true;
        }
    }
    if changed {
        let ty = &f.ty;
        f.ty = syn::parse_quote!(::std::option::Option<#ty>);
    }
}

/// An optional any-value field (`Option<serde_json::Value>`): serde reads `null` as `None`,
/// which would drop an explicit `"data": null`. Read it as `Some(Null)` instead.
pub(super) fn keep_explicit_null(f: &mut syn::Field) {
    let ty = &f.ty;
    if quote!(#ty).to_string().replace(' ', "") != "::std::option::Option<::serde_json::Value>" {
        return;
    }
    for attr in &mut f.attrs {
        let text = quote!(#attr).to_string();
        if text.contains("skip_serializing_if") && !text.contains("deserialize_with") {
            let patched = text.replacen("serde (", "serde (default , deserialize_with = \"crate::protocol::rpc_reply::deserialize_present\" , ", 1);
            *attr = reparse_attr(&patched);
        }
    }
}

/// A field marked `x-emit-null`: the peer always writes it, as `null` when it has no value
/// (kimi's pydantic models do), so `None` is written as `null` instead of leaving the key out.
pub(super) fn emit_null(f: &mut syn::Field) {
    for attr in &mut f.attrs {
        let text = quote!(#attr).to_string();
        if text.contains("skip_serializing_if") {
            let patched = text
                .replace(", skip_serializing_if = \"::std::option::Option::is_none\"", "")
                .replace("skip_serializing_if = \"::std::option::Option::is_none\" ,", "")
                .replace("skip_serializing_if = \"::std::option::Option::is_none\"", "");
            *attr = reparse_attr(&patched);
        }
    }
}

pub(super) fn reparse_attr(text: &str) -> syn::Attribute {
    let tokens: TokenStream = text.parse().expect("a patched attribute still tokenizes");
    syn::parse_quote!(#tokens)
}
