//! The tagged unions (`oneOf` + `discriminator`) as enums that read the tag first and parse the
//! member directly, nested unions included. Part of the build-time generator (`rust_types.rs`).

use super::*;

/// A tagged union found in the schema.
pub(super) struct Union {
    pub(super) name: String,
    pub(super) tag_property: String,
    pub(super) doc: String,
    /// (member def, tags it accepts), in schema order.
    pub(super) members: Vec<(String, Vec<String>)>,
}

/// A def's `description` (empty when it has none).
pub fn doc_of(def: &Value) -> String {
    def.get("description").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// The def name a `$ref` points at.
pub fn ref_name(v: &Value) -> Option<&str> {
    v.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

pub(super) fn find_unions(defs: &Map<String, Value>) -> Result<Vec<Union>, CodegenError> {
    let mut unions = Vec::new();
    for (name, def) in defs {
        let Some(prop) = def.pointer("/discriminator/propertyName").and_then(Value::as_str) else { continue };
        let one_of = def["oneOf"].as_array().ok_or_else(|| CodegenError::Schema { at: name.clone(), reason: "discriminator without oneOf".into() })?;
        let mut members = Vec::new();
        for m in one_of {
            let member = ref_name(m).ok_or_else(|| CodegenError::Schema { at: name.clone(), reason: "oneOf members must be $refs".into() })?;
            let tags = tags_of(defs, member, prop)?;
            members.push((member.to_owned(), tags));
        }
        unions.push(Union { name: name.clone(), tag_property: prop.to_owned(), doc: doc_of(def), members });
    }
    Ok(unions)
}

/// The values of `prop` a member accepts: its own `const`, or those of its members.
pub(super) fn tags_of(defs: &Map<String, Value>, member: &str, prop: &str) -> Result<Vec<String>, CodegenError> {
    let def = defs.get(member).ok_or_else(|| CodegenError::UnknownMember(member.to_owned()))?;
    if let Some(one_of) = def.get("oneOf").and_then(Value::as_array) {
        let mut tags = Vec::new();
        for m in one_of {
            for t in tags_of(defs, ref_name(m).unwrap_or_default(), prop)? {
                if !tags.contains(&t) {
                    tags.push(t);
                }
            }
        }
        return Ok(tags);
    }
    def.pointer(&format!("/properties/{prop}/const"))
        .and_then(Value::as_str)
        .map(|t| vec![t.to_owned()])
        .ok_or_else(|| CodegenError::NoTag { member: member.to_owned(), prop: prop.to_owned() })
}

pub(super) fn variant_ident(member: &str, tags: &[String], defs: &Map<String, Value>) -> proc_macro2::Ident {
    let is_union = defs[member].get("oneOf").is_some();
    if is_union || tags.len() != 1 {
        format_ident!("{}", member)
    } else {
        format_ident!("{}", tags[0].replace('.', "_").to_upper_camel_case())
    }
}

/// The unions that also get `from_tagged_str` (the typed parse straight from a line's text,
/// once the caller has read the tag): only those a decoder reads that way. Every union reads
/// its members from text through `from_text`, which finds the tag itself; a `from_tagged_str`
/// for the others would be code no decoder runs.
const FROM_TEXT: &[&str] = &["RpcCommand"];

/// `buffered`: the union can be read from serde's buffers (inside an untagged enum or a
/// flattened field), which hold no text.
pub(super) fn union_enum(u: &Union, defs: &Map<String, Value>, unions: &[Union], buffered: bool) -> TokenStream {
    let name = format_ident!("{}", u.name);
    let prop = &u.tag_property;
    let doc = &u.doc;
    let all_tags: Vec<&String> = u.members.iter().flat_map(|(_, t)| t).collect();
    let mut variants = Vec::new();
    let mut tag_arms = Vec::new();
    let mut parse_arms = Vec::new();
    let mut text_arms = Vec::new();
    let mut object_arms = Vec::new();
    let mut ser_arms = Vec::new();
    let mut froms = Vec::new();
    for (member, tags) in &u.members {
        let v = variant_ident(member, tags, defs);
        let ty = format_ident!("{}", member);
        let mdoc = doc_of(&defs[member]);
        variants.push(quote! { #[doc = #mdoc] #v(#ty) });
        let nested = unions.iter().find(|n| &n.name == member);
        let tag_expr = match (nested, tags.as_slice()) {
            (_, [single]) => quote! { #single },
            (Some(n), _) if &n.tag_property == prop => quote! { inner.tag() },
            _ => quote! { "" },
        };
        let binding = if tags.len() == 1 { quote!(_) } else { quote!(inner) };
        tag_arms.push(quote! { Self::#v(#binding) => #tag_expr });
        let parse = if nested.is_some() {
            quote! { #ty::from_value(value).map(Self::#v) }
        } else {
            quote! { crate::protocol::decode::from_value::<#ty>(value).map(Self::#v) }
        };
        parse_arms.push(quote! { #(#tags)|* => |value| #parse });
        // The member from `text` once its tag (`tag`) is known.
        let text_parse = match nested {
            Some(n) if &n.tag_property == prop && FROM_TEXT.contains(&n.name.as_str()) => quote! { #ty::from_tagged_str(tag, text).map(Self::#v) },
            // A union member without the tag-given parse reads its own tag.
            Some(_) => quote! { #ty::from_text(text).map(Self::#v) },
            None => quote! { crate::protocol::decode::from_str::<#ty>(text).map(Self::#v) },
        };
        text_arms.push(quote! { #(#tags)|* => #text_parse });
        object_arms.push(quote! { #(#tags)|* => (#text_parse).ok() });
        ser_arms.push(quote! { Self::#v(inner) => inner.serialize(s) });
        froms.push(quote! {
            impl ::std::convert::From<#ty> for #name {
                fn from(value: #ty) -> Self { Self::#v(value) }
            }
        });
    }
    // A union with `from_tagged_str` reads its member through it.
    let read_member = if FROM_TEXT.contains(&u.name.as_str()) {
        quote! { Self::from_tagged_str(tag, text).ok() }
    } else {
        quote! { match tag { #(#object_arms,)* _ => None } }
    };
    let expected = format!("{all_tags:?}");
    let from_text = FROM_TEXT.contains(&u.name.as_str()).then(|| {
        // The members' optional `id` (a `RequestId`), for a decoder that reuses a parsed frame
        // under another id.
        let id_arms = u.members.iter().map(|(member, tags)| {
            let v = variant_ident(member, tags, defs);
            let def = &defs[member];
            let has_id = def.get("oneOf").is_none()
                && def.pointer("/properties/id/$ref").and_then(Value::as_str).is_some_and(|r| r.ends_with("/RequestId"))
                && !def.get("required").and_then(Value::as_array).is_some_and(|req| req.iter().any(|r| r == "id"));
            if has_id {
                quote! { Self::#v(inner) => Some(&mut inner.id) }
            } else {
                quote! { Self::#v(_) => None }
            }
        });
        quote! {
            /// The member's optional `id` field; `None` for a member without one.
            pub fn id_mut(&mut self) -> Option<&mut Option<RequestId>> {
                match self { #(#id_arms,)* }
            }
            /// Parses the frame `text` whose tag the caller already read (`tag`), straight into
            /// the member: no `Value` tree. A key repeated in `text` is an error here where
            /// [`Self::from_value`] takes the last value, and error texts name the line and
            /// column; callers wanting `from_value`'s answers fall back to it on `Err`.
            pub fn from_tagged_str(tag: &str, text: &str) -> ::std::result::Result<Self, ::serde_json::Error> {
                use ::serde::de::Error as _;
                match tag {
                    #(#text_arms,)*
                    other => Err(::serde_json::Error::custom(format!(
                        "unknown {} `{}`, expected one of {}", #prop, other, #expected
                    ))),
                }
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq)]
        pub enum #name { #(#variants,)* }
        impl #name {
            /// Name of the discriminator property.
            pub const TAG_PROPERTY: &'static str = #prop;
            /// Every discriminator value this union accepts, in schema order.
            pub const TAGS: &'static [&'static str] = &[#(#all_tags),*];
            /// The discriminator value of this frame.
            pub fn tag(&self) -> &'static str {
                match self { #(#tag_arms,)* }
            }
            /// Parses a JSON value: reads the discriminator first, then the member directly, so
            /// errors name the member's field instead of listing every variant.
            pub fn from_value(value: ::serde_json::Value) -> ::std::result::Result<Self, ::serde_json::Error> {
                use ::serde::de::Error as _;
                // The member's parser is chosen while the tag is borrowed, so the tag is not
                // copied out of the value before the value moves into the parse.
                let parse: fn(::serde_json::Value) -> ::std::result::Result<Self, ::serde_json::Error> = match value.get(#prop) {
                    Some(::serde_json::Value::String(tag)) => match tag.as_str() {
                        #(#parse_arms,)*
                        other => return Err(::serde_json::Error::custom(format!(
                            "unknown {} `{}`, expected one of {}", #prop, other, #expected
                        ))),
                    },
                    Some(_) => return Err(::serde_json::Error::custom(concat!("`", #prop, "` must be a string"))),
                    None => return Err(::serde_json::Error::missing_field(#prop)),
                };
                parse(value)
            }
            /// Parses one JSON value's text, answering as [`Self::from_value`]: the tag is read
            /// without reading the other members, then the member straight from the text (no
            /// `Value` tree, nothing written back). A text that path refuses (a repeated key,
            /// an invalid member, whose error a text parse words otherwise) is answered by
            /// `from_value`; a member declares its tag, so a text it accepts has the tag once.
            pub fn from_text(text: &str) -> ::std::result::Result<Self, ::serde_json::Error> {
                let read = match crate::protocol::decode::tag_in(text, #prop) {
                    Ok(Some(tag)) => {
                        let tag: &str = &tag;
                        #read_member
                    }
                    _ => None,
                };
                match read {
                    Some(read) => Ok(read),
                    None => Self::from_value(::serde_json::from_str(text)?),
                }
            }
            #from_text
        }
        impl ::serde::Serialize for #name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                match self { #(#ser_arms,)* }
            }
        }
        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let text = crate::protocol::decode::object_text(d, #buffered)?;
                Self::from_text(&text).map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }
        #(#froms)*
    }
}
