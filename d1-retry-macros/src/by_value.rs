//! The check that a `prepare` the attribute judges by its argument is not one of the
//! user's that takes a D1 database by value (the runtime's `by_value_prepare.rs` says why
//! such a method would run instead of D1's, and how the check finds it).
//!
//! The check repeats the user's method lookup in code that never runs:
//!
//! ```text
//! if false {
//!     use ::d1_retry::__private::{PrepareTakingTheDatabaseByValue as _, ViaD1Database as _, ViaOtherDatabase as _};
//!     let _ = (&&ByValue::of(&db)).database().prepare(());
//! }
//! ```
//!
//! When the lookup is ambiguous, rustc's error (E0034) is at the user's `prepare`, and it
//! offers to write the call through each trait's path, in place of the call, quoting the
//! receiver and the argument: the check's call spans the user's from its receiver to its
//! parentheses, and its receiver and argument the user's, so that the call offered for the
//! user's trait, `MyTrait::prepare(db, "SELECT ..")`, is the user's call as it should be
//! written (a statement made that way is judged by the SQL it holds when it runs).

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{ToTokens, quote_spanned};
use syn::Ident;

/// Where the user's `prepare` call stands, for the check's spans.
#[derive(Clone, Copy)]
pub(crate) struct PrepareCall {
    /// The method's name, where the error is.
    method: Span,
    /// The receiver's first and last tokens.
    receiver: (Span, Span),
    /// The SQL argument's first token.
    sql: Span,
    /// The parentheses around the arguments.
    parens: Span,
}

impl PrepareCall {
    /// `call`, `receiver.prepare(sql)` as written.
    pub(crate) fn of(call: &syn::ExprMethodCall, sql: &syn::Expr) -> Self {
        PrepareCall {
            method: call.method.span(),
            receiver: ends(call.receiver.to_token_stream()),
            sql: ends(sql.to_token_stream()).0,
            parens: call.paren_token.span.join(),
        }
    }
}

/// The check for `call`, looking up on what `borrowed` borrows (the receiver itself, or the
/// local a value was moved into). `private` is the path to the runtime's hidden module.
pub(crate) fn check(
    private: &TokenStream,
    call: PrepareCall,
    borrowed: TokenStream,
) -> TokenStream {
    let site = Span::mixed_site();
    let (first, last) = call.receiver;
    let mut database = Group::new(
        Delimiter::Parenthesis,
        quote_spanned!(site=> &&#private::ByValue::of(#borrowed)),
    );
    database.set_span(first);
    let mut no_arguments = Group::new(Delimiter::Parenthesis, TokenStream::new());
    no_arguments.set_span(last);
    let mut unit = Group::new(Delimiter::Parenthesis, TokenStream::new());
    unit.set_span(call.sql);
    let mut arguments = Group::new(Delimiter::Parenthesis, unit.into_token_stream());
    arguments.set_span(call.parens);
    let prepare = Ident::new("prepare", call.method);
    quote_spanned! {site=>
        if false {
            #[allow(unused_imports)]
            use #private::{
                PrepareTakingTheDatabaseByValue as _, ViaD1Database as _, ViaOtherDatabase as _,
            };
            let _ = #database.database #no_arguments.#prepare #arguments;
        }
    }
}

/// The spans of the first and the last token of `tokens`.
pub(crate) fn ends(tokens: TokenStream) -> (Span, Span) {
    let mut tokens = tokens.into_iter();
    let first = tokens
        .next()
        .map_or_else(Span::call_site, |token| token.span());
    let last = tokens.last().map_or(first, |token| token.span());
    (first, last)
}
