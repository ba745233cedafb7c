//! STUB: the `#[d1_retry]` attribute; use it through the `d1-retry` crate.
use proc_macro::TokenStream;

/// Retries an async D1 repository method through transient failures.
#[proc_macro_attribute]
pub fn d1_retry(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
