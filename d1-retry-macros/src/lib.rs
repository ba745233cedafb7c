//! The `#[d1_retry]` attribute. Use it through the `d1-retry` crate, which re-exports it
//! together with the runtime its expansion calls.
//!
//! The modules, in the order the attribute runs them: `attr` reads the options, `item` the
//! function and the shape it takes, `executions` finds the D1 executions of its body (with
//! `sql` judging their SQL) and rewrites each to be retried on its own, `one_call` tells a
//! `read_only` body that is one D1 call (retried as that call), `valid` refuses what is
//! certainly wrong, `doc` writes the verdict as a doc paragraph, `expand` renders it all,
//! and on a mistake `fallback` emits the function unchanged with one error. Each module
//! imports only those before it: no circle.

mod attr;
mod by_value;
mod doc;
mod executions;
mod expand;
mod fallback;
mod item;
mod one_call;
mod pointer_call;
mod sql;
mod valid;

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
