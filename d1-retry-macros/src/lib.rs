//! The `#[d1_retry]` attribute. Use it through the `d1-retry` crate, which re-exports it
//! together with the runtime its expansion calls.
//!
//! The modules, in the order the attribute runs them: `attr` reads the options, `item` the
//! function and the shape it takes, `sites` the statements of its body and what is known of
//! their SQL, `rules` applies the compile-time half of the retry table, `expand` writes the
//! retry loop, and on a mistake `fallback` emits the function unchanged with one error.

mod attr;
mod expand;
mod fallback;
mod item;
mod rules;
mod sites;

use proc_macro::TokenStream;

#[cfg_attr(not(doctest), doc = include_str!("d1_retry.md"))]
#[proc_macro_attribute]
pub fn d1_retry(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    match expand::expand(args.into(), item.clone()) {
        Ok(expanded) => expanded.into(),
        Err(error) => fallback::unchanged_with(item, &error).into(),
    }
}
