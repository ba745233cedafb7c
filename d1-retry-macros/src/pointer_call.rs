//! The check that an execution the attribute judges by its receiver's type is not a
//! method of the user's for a pointer to a D1 type (the runtime's `pointer_call.rs` says why
//! such a method would run instead of D1's, and how the check finds it).
//!
//! The check repeats the user's method lookup in code that never runs:
//!
//! ```text
//! if false {
//!     use ::d1_retry::__private::{D1CallThroughAPointer as _, ViaPointer as _, ViaOtherPointer as _};
//!     (&&PointerOf(&db)).d1_retry_pointer().batch((0,).0);
//! }
//! ```
//!
//! When the lookup is ambiguous, rustc's error (E0034) is at the user's method, and it
//! offers to write the call through each trait's path, in place of the call, quoting the
//! receiver and the arguments: the check's call spans the user's from its receiver to its
//! parentheses, its receiver the user's receiver, and each argument the user's (a tuple's
//! field, from the argument's first token to its last), so that the call offered for the
//! user's trait, `ChunkedBatch::batch(&db, list)`, is the user's call as it should be
//! written. Only a call with D1's number of arguments is looked up, the stand-ins taking as
//! many as D1's calls do, and a `first()` without its column, handed a placeholder (its
//! offered call then shows `()` for it).

use proc_macro2::{Delimiter, Group, Literal, Span, TokenStream};
use quote::{ToTokens, quote_spanned};
use syn::Ident;

use crate::by_value::ends;

/// Where the user's execution call stands, for the check's spans.
#[derive(Clone)]
pub(crate) struct PointerCall {
    /// The method's name, spanned where the error is.
    method: Ident,
    /// The receiver's first and last tokens.
    receiver: (Span, Span),
    /// Each argument's first and last tokens.
    arguments: Vec<(Span, Span)>,
    /// The parentheses around the arguments.
    parens: Span,
}

impl PointerCall {
    /// `call`, `receiver.method(args)` as written (its turbofish, which names D1's type
    /// parameters, left out), if it is named like one of D1's calls and has as many
    /// arguments, or is a `first()` without its column, which D1's cannot be.
    pub(crate) fn of(call: &syn::ExprMethodCall) -> Option<Self> {
        let arity = match call.method.to_string().as_str() {
            "first" if call.args.is_empty() => 0,
            "first" | "batch" | "exec" => 1,
            "all" | "run" | "raw" | "raw_js_value" | "dump" => 0,
            _ => return None,
        };
        (call.args.len() == arity).then(|| PointerCall {
            method: call.method.clone(),
            receiver: ends(call.receiver.to_token_stream()),
            arguments: call
                .args
                .iter()
                .map(|argument| ends(argument.to_token_stream()))
                .collect(),
            parens: call.paren_token.span.join(),
        })
    }
}

/// The check for `call`, looking up on `receiver` (a place: the receiver itself, or the
/// local a value was moved into). `private` is the path to the runtime's hidden module.
pub(crate) fn check(
    private: &TokenStream,
    call: &PointerCall,
    receiver: &TokenStream,
) -> TokenStream {
    let site = Span::mixed_site();
    let (first, last) = call.receiver;
    let mut dispatch = Group::new(
        Delimiter::Parenthesis,
        quote_spanned!(site=> &&#private::PointerOf(&#receiver)),
    );
    dispatch.set_span(first);
    // `d1_retry_pointer()`'s parentheses end the lookup's receiver where the user's ends.
    let mut no_arguments = Group::new(Delimiter::Parenthesis, TokenStream::new());
    no_arguments.set_span(last);
    // A value that is not `()`, which Clippy would see handed to a function.
    let values = call.arguments.iter().map(|&(first, last)| {
        let mut tuple = Group::new(Delimiter::Parenthesis, quote_spanned!(site=> 0,));
        tuple.set_span(first);
        let mut index = Literal::usize_unsuffixed(0);
        index.set_span(last);
        quote_spanned!(site=> #tuple.#index)
    });
    // `first()`: the stand-ins' `first` takes a column, handed one there.
    let values = if call.method == "first" && call.arguments.is_empty() {
        quote_spanned!(site.located_at(call.parens)=> 0)
    } else {
        quote_spanned!(site=> #(#values),*)
    };
    let mut arguments = Group::new(Delimiter::Parenthesis, values);
    arguments.set_span(call.parens);
    let method = &call.method;
    quote_spanned! {site=>
        if false {
            #[allow(unused_imports)]
            use #private::{D1CallThroughAPointer as _, ViaOtherPointer as _, ViaPointer as _};
            #dispatch.d1_retry_pointer #no_arguments.#method #arguments;
        }
    }
}
