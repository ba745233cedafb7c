//! What a mistake expands to: the function exactly as written, plus one error.
//!
//! Emitting the function keeps every caller compiling, so the user sees the error that
//! explains the mistake rather than a cascade of "cannot find function" errors.

use proc_macro2::TokenStream;

pub(crate) fn unchanged_with(item: TokenStream, error: &syn::Error) -> TokenStream {
    let mut tokens = item;
    tokens.extend(error.to_compile_error());
    tokens
}
