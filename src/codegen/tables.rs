//! The tables of the generated module: unions, commands and wire methods. Part of the
//! build-time generator (`rust_types.rs`). The schema and example texts are embedded apart,
//! deflated (`crate::protocol::embedded`).

use super::*;

pub(super) fn tables(unions: &[Union]) -> TokenStream {
    let union_infos = unions.iter().map(|u| {
        let (name, prop) = (&u.name, &u.tag_property);
        let members = u.members.iter().flat_map(|(m, tags)| tags.iter().map(move |t| quote! { (#t, #m) }));
        quote! { crate::protocol::UnionInfo { name: #name, tag_property: #prop, members: &[#(#members),*] } }
    });
    quote! {
        /// Every tagged union: its discriminator and (tag, member def) pairs.
        pub const UNIONS: &[crate::protocol::UnionInfo] = &[#(#union_infos),*];
    }
}
