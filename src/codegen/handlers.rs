//! Build-time generator of the handler layer of every dialect, for both schemas (ours under
//! `schema/*.schema.json`, ACP's vendored one under `schema/acp/`): one `Send`-bound handler
//! trait per dialect side whose methods return the generated result types, the dispatch that
//! calls it, and the method-typing impls (`RpcMethod`, `WireMethod`, and for ACP one
//! uninhabited type per method implementing `jsonrpc::Request` / `jsonrpc::Notification`).
//!
//! The JSON-RPC dialects (wire, ACP) share [`jsonrpc_handler`]: their dispatch hands the typed
//! result to the runtime's `Responder`, which serializes it once, straight into the response
//! frame, and a blanket `jsonrpc::Dispatch` impl lets the runtime's serve loop drive any type
//! that implements the trait. The JSONL dialect keeps its own framing (`RpcReply`). Compiled
//! only into `build.rs`.
//!
//! The handler traits and the method types name only the protocol layer (the error object and
//! the method traits are `crate::protocol::envelope`'s); the dispatch names the JSON-RPC
//! runtime. [`split_runtime`] takes every generated item that names the runtime out of a
//! module's code, so the protocol layer includes the types and `crate::jsonrpc::dispatch` the
//! rest.

use heck::{ToSnakeCase, ToUpperCamelCase};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::{Map, Value};

use crate::rust_types::{doc_of, ref_name};

/// Why the handler layer could not be generated: the schema lacks what it is generated from.
#[derive(Debug)]
pub enum HandlerError {
    /// The schema has no union of this name (`RpcCommand`, `WireRequest`, …).
    NoUnion(String),
    /// A member of the union is not a `$ref` to a def.
    MemberNotRef(String),
    /// A member def has no `const` for its tag property: (member, tag property).
    NoTag(String, String),
    /// A wire member def names no `x-result`.
    NoResult(String),
    /// Generated code that does not parse (a generator bug): what, and syn's message.
    Parse(&'static str, String),
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoUnion(union) => write!(f, "the schema has no union `{union}`"),
            Self::MemberNotRef(union) => write!(f, "{union}: members must be $refs"),
            Self::NoTag(member, tag) => write!(f, "{member}: no {tag}"),
            Self::NoResult(member) => write!(f, "{member}: no x-result"),
            Self::Parse(what, e) => write!(f, "{what} does not parse: {e}"),
        }
    }
}

impl std::error::Error for HandlerError {}

/// Splits one generated module's code in two: the items that name the JSON-RPC runtime
/// (`crate::jsonrpc`: the dispatch functions and their `Dispatch` impls) and the rest (the
/// types, tables, handler traits and method types, which the protocol layer includes). Both
/// are returned formatted, `header` (a `//` comment) on top of each.
pub fn split_runtime(code: &str, header: &str) -> Result<(String, String), HandlerError> {
    let mut file = syn::parse_file(code).map_err(|e| HandlerError::Parse("a generated module", e.to_string()))?;
    let (runtime, protocol): (Vec<syn::Item>, Vec<syn::Item>) = std::mem::take(&mut file.items).into_iter().partition(names_runtime);
    let unparse = |items: Vec<syn::Item>| {
        let mut part = file.clone();
        part.items = items;
        format!("{header}\n\n{}", prettyplease::unparse(&part))
    };
    Ok((unparse(protocol), unparse(runtime)))
}

/// Whether `item` names a path under `crate::jsonrpc`.
fn names_runtime(item: &syn::Item) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        let mut last: Vec<String> = Vec::new();
        for tree in tokens {
            match tree {
                proc_macro2::TokenTree::Group(g) => {
                    if walk(g.stream()) {
                        return true;
                    }
                    last.clear();
                }
                other => {
                    last.push(other.to_string());
                    if last.len() > 4 {
                        last.remove(0);
                    }
                    if last == ["crate", ":", ":", "jsonrpc"] {
                        return true;
                    }
                }
            }
        }
        false
    }
    walk(quote::ToTokens::to_token_stream(item))
}

/// One request a handler trait answers.
pub struct HandlerMethod {
    /// The trait method's name (`session_new`).
    pub function: String,
    /// The request enum's variant (`SessionNew`).
    pub variant: String,
    /// The parameter type (the typed params, or the whole request frame).
    pub params: TokenStream,
    /// The success type.
    pub result: TokenStream,
    /// The method's documentation.
    pub doc: String,
    /// The default body (an expression of the result type, `request` in scope), when the
    /// trait gives the method one; `None`: every implementation writes it.
    pub default: Option<TokenStream>,
}

/// The trait's method declarations, each returning `Result<result, error>` from a `Send`
/// future (implementations write `async fn`).
fn trait_methods(methods: &[HandlerMethod], error: &TokenStream) -> Vec<TokenStream> {
    methods
        .iter()
        .map(|m| {
            let (function, params, result, doc) = (format_ident!("{}", m.function), &m.params, &m.result, &m.doc);
            match &m.default {
                None => quote! {
                    #[doc = #doc]
                    fn #function(&self, request: #params)
                        -> impl ::std::future::Future<Output = ::std::result::Result<#result, #error>> + Send;
                },
                Some(body) => quote! {
                    #[doc = #doc]
                    fn #function(&self, request: #params)
                        -> impl ::std::future::Future<Output = ::std::result::Result<#result, #error>> + Send {
                        async move { #body }
                    }
                },
            }
        })
        .collect()
}

/// A JSON-RPC handler trait `name` for the request enum `requests`, its dispatch function
/// `dispatch` and the runtime's `Dispatch` impl for every implementor.
pub fn jsonrpc_handler(name: &str, requests: &str, dispatch: &str, doc: &str, methods: &[HandlerMethod]) -> TokenStream {
    let (name, requests, dispatch) = (format_ident!("{}", name), format_ident!("{}", requests), format_ident!("{}", dispatch));
    let declarations = trait_methods(methods, &quote!(crate::protocol::envelope::Error));
    let arms = methods.iter().map(|m| {
        let (function, variant) = (format_ident!("{}", m.function), format_ident!("{}", m.variant));
        quote! { #requests::#variant(request) => responder.answer(handler.#function(request).await) }
    });
    let dispatch_doc = format!("Runs one request on a [`{name}`] and encodes its answer (the typed result, serialized once).");
    quote! {
        #[doc = #doc]
        pub trait #name: Send + Sync {
            #(#declarations)*
        }
        #[doc = #dispatch_doc]
        pub async fn #dispatch<H: #name + ?Sized>(
            handler: &H,
            request: #requests,
            responder: crate::jsonrpc::Responder,
        ) -> crate::jsonrpc::Answer {
            match request { #(#arms,)* }
        }
        impl<H: #name + ?Sized> crate::jsonrpc::Dispatch<#requests> for H {
            fn dispatch(&self, request: #requests, responder: crate::jsonrpc::Responder)
                -> impl ::std::future::Future<Output = crate::jsonrpc::Answer> + Send + '_ {
                #dispatch(self, request, responder)
            }
        }
    }
}

/// One uninhabited type per method of a JSON-RPC schema, implementing the envelope's
/// `Request` (with a result) or `Notification` (without): (type name, method, params, result).
pub fn method_types(methods: &[(String, String, String, Option<String>)]) -> TokenStream {
    let items = methods.iter().map(|(ty, method, params, result)| {
        let (ident, params) = (format_ident!("{}", ty), format_ident!("{}", params));
        let doc = format!("`{method}`.");
        let (kind, result) = match result {
            Some(result) => {
                let result = format_ident!("{}", result);
                (quote!(Request), quote!(type Result = super::#result;))
            }
            None => (quote!(Notification), quote!()),
        };
        quote! {
            #[doc = #doc]
            #[derive(Debug)]
            pub enum #ident {}
            impl crate::protocol::envelope::#kind for #ident {
                const METHOD: &'static str = #method;
                type Params = super::#params;
                #result
            }
        }
    });
    quote! { #(#items)* }
}
/// The JSONL dialect: `RpcMethod` impls, the `RpcHandler` trait and `dispatch_rpc_command`.
pub fn rpc_layer(defs: &Map<String, Value>) -> Result<TokenStream, HandlerError> {
    let commands = union_members(defs, "RpcCommand")?;
    let mut impls = Vec::new();
    let mut methods = Vec::new();
    let mut arms = Vec::new();
    let mut normalize_arms = Vec::new();
    let mut table = Vec::new();
    for member in &commands {
        let def = &defs[member];
        let tag = def.pointer("/properties/type/const").and_then(Value::as_str).ok_or_else(|| HandlerError::NoTag(member.clone(), "type".to_owned()))?;
        let ty = format_ident!("{}", member);
        let method = format_ident!("{}", tag.to_snake_case());
        let variant = format_ident!("{}", tag.to_upper_camel_case());
        let doc = doc_of(def);
        let nullable = def.get("x-response-nullable").and_then(Value::as_bool).unwrap_or(false);
        let optional = def.get("x-response-optional").and_then(Value::as_bool).unwrap_or(false);
        let (data_ty, to_data) = match def.get("x-response").and_then(ref_name) {
            None => (quote!(()), quote!(|()| ::std::option::Option::None::<()>)),
            Some(r) => {
                let r = format_ident!("{}", r);
                if optional {
                    // `None` leaves `data` out of the response.
                    (quote!(::std::option::Option<#r>), quote!(|d| d))
                } else if nullable {
                    // `None` is written as `"data": null`.
                    (quote!(::std::option::Option<#r>), quote!(|d| ::std::option::Option::Some(d)))
                } else {
                    (quote!(#r), quote!(|d| ::std::option::Option::Some(d)))
                }
            }
        };
        if let Some(r) = def.get("x-response").and_then(ref_name) {
            let r = format_ident!("{}", r);
            normalize_arms.push(quote! { #tag => roundtrip::<#r>(data) });
        }
        let response = match def.get("x-response").and_then(ref_name) {
            Some(r) => quote! { ::std::option::Option::Some(#r) },
            None => quote! { ::std::option::Option::None },
        };
        table.push(quote! {
            crate::protocol::CommandInfo { command: #tag, request: #member, response: #response, nullable: #nullable, optional: #optional }
        });
        impls.push(quote! {
            impl crate::protocol::RpcMethod for #ty {
                const COMMAND: &'static str = #tag;
                type Data = #data_ty;
            }
        });
        methods.push(HandlerMethod { function: method.to_string(), variant: variant.to_string(), params: quote!(#ty), result: data_ty, doc, default: None });
        arms.push(quote! {
            RpcCommand::#variant(cmd) => answer.answer(id, #tag, handler.#method(cmd).await.map(#to_data))
        });
    }
    let methods = trait_methods(&methods, &quote!(crate::protocol::RpcError));
    Ok(quote! {
        #(#impls)*
        /// What a JSONL-dialect server implements: one method per command, returning that
        /// command's response data (`x-response`). Implement with `async fn`.
        pub trait RpcHandler: Send + Sync {
            #(#methods)*
        }
        /// Runs one parsed command on `handler` and builds its response frame (`id` is echoed
        /// verbatim, whatever JSON value the request carried).
        pub async fn dispatch_rpc_command<H: RpcHandler + ?Sized>(
            handler: &H,
            id: ::std::option::Option<::serde_json::Value>,
            command: RpcCommand,
        ) -> crate::protocol::rpc_reply::RpcReply {
            dispatch_rpc_command_to(handler, id, command, crate::protocol::rpc_reply::ToReply).await
        }
        /// Runs one parsed command on `handler` and hands its typed outcome to `answer` (which
        /// may serialize it straight into the output, with no intermediate text).
        pub async fn dispatch_rpc_command_to<H: RpcHandler + ?Sized, A: crate::protocol::rpc_reply::RpcAnswer>(
            handler: &H,
            id: ::std::option::Option<::serde_json::Value>,
            command: RpcCommand,
            answer: A,
        ) -> A::Output {
            match command { #(#arms,)* }
        }
        /// Every command: its request def and response data def (`x-response`).
        pub const RPC_COMMANDS: &[crate::protocol::CommandInfo] = &[#(#table),*];
        /// Parses a command's success `data` into its typed form and serializes it back (the
        /// typed round trip the tests and the harness use); `data` of unknown commands and
        /// `null` data are returned unchanged.
        pub fn normalize_rpc_response_data(
            command: &str,
            data: ::serde_json::Value,
        ) -> ::std::result::Result<::serde_json::Value, ::serde_json::Error> {
            if data.is_null() {
                return Ok(data);
            }
            match command {
                #(#normalize_arms,)*
                _ => Ok(data),
            }
        }
        fn roundtrip<T: ::serde::Serialize + ::serde::de::DeserializeOwned>(
            value: ::serde_json::Value,
        ) -> ::std::result::Result<::serde_json::Value, ::serde_json::Error> {
            ::serde_json::to_value(crate::protocol::decode::from_value::<T>(value)?)
        }
    })
}

/// The wire dialect: `WireMethod` impls, agent request kinds, `WireHandler` and its dispatch.
pub fn wire_layer(defs: &Map<String, Value>) -> Result<TokenStream, HandlerError> {
    let mut impls = Vec::new();
    let mut methods = Vec::new();
    let mut normalize_arms = Vec::new();
    let mut methods_table = Vec::new();
    let mut requests_table = Vec::new();
    for member in union_members(defs, "WireRequest")? {
        let (def, name, result) = wire_member(defs, &member, "method")?;
        let (ty, res) = (format_ident!("{}", member), format_ident!("{}", result));
        let method = format_ident!("{}", name.to_snake_case());
        let variant = format_ident!("{}", name.to_upper_camel_case());
        let doc = doc_of(def);
        normalize_arms.push(quote! { #name => roundtrip::<#res>(result) });
        methods_table.push(quote! { crate::protocol::WireMethodInfo { name: #name, request: #member, result: #result } });
        impls.push(quote! {
            impl crate::protocol::WireMethod for #ty {
                const METHOD: &'static str = #name;
                type Result = #res;
            }
        });
        methods.push(HandlerMethod { function: method.to_string(), variant: variant.to_string(), params: quote!(#ty), result: quote!(#res), doc, default: None });
    }
    for member in union_members(defs, "WireAgentRequestParams")? {
        let (_, name, result) = wire_member(defs, &member, "type")?;
        let (ty, res) = (format_ident!("{}", member), format_ident!("{}", result));
        normalize_arms.push(quote! { #name => roundtrip::<#res>(result) });
        requests_table.push(quote! { crate::protocol::WireMethodInfo { name: #name, request: #member, result: #result } });
        impls.push(quote! {
            impl crate::protocol::WireAgentRequestKind for #ty {
                const TYPE: &'static str = #name;
                type Result = #res;
            }
        });
    }
    let handler = jsonrpc_handler(
        "WireHandler",
        "WireRequest",
        "dispatch_wire_request",
        "What a wire-dialect server implements: one method per client method, returning its result (`x-result`). Implement with `async fn`.",
        &methods,
    );
    Ok(quote! {
        #(#impls)*
        #handler
        /// The JSON-RPC method table: every client method with its request and result defs.
        pub const WIRE_METHODS: &[crate::protocol::WireMethodInfo] = &[#(#methods_table),*];
        /// Every agent request type (`params.type` of `method:"request"`) with the result the
        /// client answers with.
        pub const WIRE_AGENT_REQUESTS: &[crate::protocol::WireMethodInfo] = &[#(#requests_table),*];
        /// Typed round trip of a `result`: of a client method (`prompt`, …) or of the client's
        /// answer to an agent request (`ApprovalRequest`, …). Unknown names pass through.
        pub fn normalize_wire_result(
            method_or_request: &str,
            result: ::serde_json::Value,
        ) -> ::std::result::Result<::serde_json::Value, ::serde_json::Error> {
            match method_or_request {
                #(#normalize_arms,)*
                _ => Ok(result),
            }
        }
    })
}

/// A wire union member's def, its tag (the const of `tag`) and its result def (`x-result`).
fn wire_member<'a>(defs: &'a Map<String, Value>, member: &str, tag: &str) -> Result<(&'a Value, &'a str, &'a str), HandlerError> {
    let def = &defs[member];
    let name = def.pointer(&format!("/properties/{tag}/const")).and_then(Value::as_str).ok_or_else(|| HandlerError::NoTag(member.to_owned(), tag.to_owned()))?;
    let result = def.get("x-result").and_then(ref_name).ok_or_else(|| HandlerError::NoResult(member.to_owned()))?;
    Ok((def, name, result))
}

fn union_members(defs: &Map<String, Value>, union: &str) -> Result<Vec<String>, HandlerError> {
    defs.get(union)
        .and_then(|d| d["oneOf"].as_array())
        .ok_or_else(|| HandlerError::NoUnion(union.to_owned()))?
        .iter()
        .map(|m| ref_name(m).map(str::to_owned).ok_or_else(|| HandlerError::MemberNotRef(union.to_owned())))
        .collect()
}

