//! `new` for every struct with a constant field (its required fields as arguments, the
//! markers and absent optional fields filled in), `with_*` setters, and the marker types
//! themselves. Part of the build-time generator (`rust_types.rs`).

use super::*;

/// `impl X { pub fn new(..) }` for every struct with at least one constant field: the
/// constants get their marker, the schema's required fields come from the arguments (in schema
/// order; a `String` as `impl Into<String>`), optional fields are `None` or, when typify gave
/// them a `serde(default)`, that default, the value reading the frame without them would give.
/// A struct that already has an inherent `new` keeps it and gets none. With `every_struct`
/// (ACP's schema, which has no constant markers) every struct gets one.
pub fn constructors(file: &syn::File, defs: &Map<String, Value>, lits: &BTreeMap<String, String>, every_struct: bool) -> Result<TokenStream, CodegenError> {
    let lit_values: BTreeMap<&str, &str> = lits.iter().map(|(value, name)| (name.as_str(), value.as_str())).collect();
    let has_new: BTreeSet<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Impl(i) if i.trait_.is_none() => {
                let defines_new = i.items.iter().any(|it| matches!(it, syn::ImplItem::Fn(f) if f.sig.ident == "new"));
                let syn::Type::Path(p) = &*i.self_ty else { return None };
                defines_new.then(|| p.path.segments.last().map(|s| s.ident.to_string())).flatten()
            }
            _ => None,
        })
        .collect();
    let mut out = TokenStream::new();
    for item in &file.items {
        let syn::Item::Struct(s) = item else { continue };
        let syn::Fields::Named(named) = &s.fields else { continue };
        let name = s.ident.to_string();
        let constants: Vec<(String, &str)> = named
            .named
            .iter()
            .filter_map(|f| Some((wire_name(f), *lit_values.get(lit_marker(&f.ty)?.as_str())?)))
            .collect();
        if (constants.is_empty() && !every_struct) || has_new.contains(&name) {
            continue;
        }
        let def = defs.get(&name);
        let required: Vec<&str> = def
            .and_then(|d| d.get("required"))
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut params = Vec::new();
        let mut setters = Vec::new();
        let mut inits = Vec::new();
        for f in &named.named {
            let ident = f.ident.as_ref().expect("named fields have idents");
            let ty = &f.ty;
            let wire = wire_name(f);
            let default = serde_default(f);
            let is_required = match def {
                Some(_) => required.contains(&wire.as_str()),
                // A struct typify made up for an inline schema: what serde requires.
                None => default.is_none() && !is_option(ty),
            };
            if lit_marker(ty).is_some() {
                inits.push(quote! { #ident: #ty });
            } else if is_required && is_string(ty) {
                params.push(quote! { #ident: impl ::std::convert::Into<::std::string::String> });
                inits.push(quote! { #ident: #ident.into() });
            } else if is_required {
                params.push(quote! { #ident: #ty });
                inits.push(quote! { #ident });
            } else if is_option(ty) {
                inits.push(quote! { #ident: ::std::option::Option::None });
                setters.push(setter(ident, ty, &wire));
            } else {
                match default {
                    Some(Some(path)) => {
                        let path: syn::Path = syn::parse_str(&path).map_err(|e| CodegenError::Schema { at: format!("{name}.{wire}"), reason: format!("default `{path}`: {e}") })?;
                        inits.push(quote! { #ident: #path() });
                    }
                    Some(None) => inits.push(quote! { #ident: ::std::default::Default::default() }),
                    None => return Err(CodegenError::Schema { at: format!("{name}.{wire}"), reason: "optional, but neither an Option nor defaulted; no `new` can leave it out".into() }),
                }
            }
        }
        let tags: Vec<String> = constants.iter().map(|(field, value)| format!("`{field}` = `\"{value}\"`")).collect();
        let doc = match tags.is_empty() {
            true => format!("`{name}` from its required fields, every optional field absent (or at its schema default)."),
            false => format!("`{name}` with {} set and every optional field absent (or at its schema default).", tags.join(", ")),
        };
        let ident = &s.ident;
        out.extend(quote! {
            impl #ident {
                #[doc = #doc]
                pub fn new(#(#params),*) -> Self {
                    Self { #(#inits),* }
                }
                #(#setters)*
            }
        });
    }
    Ok(out)
}

/// `with_<field>(value)` for an optional field: builds on `new` without struct literals. Takes
/// the value or an `Option` of it, so optional values pass straight through.
pub(super) fn setter(ident: &syn::Ident, ty: &syn::Type, wire: &str) -> TokenStream {
    let name = format_ident!("with_{}", ident.to_string().trim_start_matches("r#"));
    let doc = format!("The same value with `{wire}` set (`None` leaves it out).");
    let inner = match ty {
        syn::Type::Path(p) => match &p.path.segments.last().expect("an Option path").arguments {
            syn::PathArguments::AngleBracketed(args) => args.args.first().cloned(),
            _ => None,
        },
        _ => None,
    };
    match inner {
        Some(inner) => quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #name(mut self, value: impl ::std::convert::Into<::std::option::Option<#inner>>) -> Self {
                self.#ident = value.into();
                self
            }
        },
        None => TokenStream::new(),
    }
}

/// The marker name (`LitConfirm`) when `ty` is one of the `lit` markers.
pub(super) fn lit_marker(ty: &syn::Type) -> Option<String> {
    let syn::Type::Path(p) = ty else { return None };
    let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
    match segments.as_slice() {
        [.., module, last] if module.ident == "lit" && last.ident.to_string().starts_with("Lit") => Some(last.ident.to_string()),
        _ => None,
    }
}

pub(super) fn lit_types(lits: &BTreeMap<String, String>) -> TokenStream {
    let items = lits.iter().map(|(value, name)| {
        let ident = format_ident!("{}", name);
        let doc = format!("The string `\"{value}\"` and nothing else (a tag or other constant).");
        quote! {
            #[doc = #doc]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct #ident;
            impl #ident {
                /// The constant's value.
                pub const VALUE: &'static str = #value;
            }
            impl ::serde::Serialize for #ident {
                fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                    s.serialize_str(#value)
                }
            }
            impl<'de> ::serde::Deserialize<'de> for #ident {
                fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                    read(d, #value).map(|()| #ident)
                }
            }
        }
    });
    quote! {
        /// Zero-sized markers for the schema's string constants (discriminator tags and the like).
        pub mod lit {
            /// Reads the string constant `value`, compared where the deserializer holds it (a
            /// line's text, a `Value`'s string) instead of copied into a `String` first. The
            /// errors are a `String`'s: `invalid type: …, expected a string`, or
            /// `invalid value: string "x", expected the string "value"`.
            fn read<'de, D: ::serde::Deserializer<'de>>(d: D, value: &'static str) -> ::std::result::Result<(), D::Error> {
                struct Expect(&'static str);
                /// What a wrong string is compared against (a visitor is its own `Expected`,
                /// which says "a string").
                struct Quoted(&'static str);
                impl ::serde::de::Expected for Quoted {
                    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        write!(f, "the string \"{}\"", self.0)
                    }
                }
                impl<'de> ::serde::de::Visitor<'de> for Expect {
                    type Value = ();
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: ::serde::de::Error>(self, s: &str) -> ::std::result::Result<(), E> {
                        if s == self.0 { Ok(()) } else { Err(E::invalid_value(::serde::de::Unexpected::Str(s), &Quoted(self.0))) }
                    }
                }
                d.deserialize_string(Expect(value))
            }
            #(#items)*
        }
    }
}
