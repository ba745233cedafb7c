//! Generates the retry loop around the function's body.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Block, Ident, Type};

use crate::attr::Options;
use crate::item::{Checked, Function, Shape, is_method};
use crate::{rules, sites};

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options = Options::parse(args)?;
    let function: Function = syn::parse2(item).map_err(|error| {
        syn::Error::new(
            error.span(),
            format!(
                "#[d1_retry] goes on an `async fn` returning `Result` (a free function, a \
                 method, or a trait method with a body): {error}"
            ),
        )
    })?;
    let mut function = function.check()?;
    let krate = options.krate();

    // Locals of the expansion: invisible to the user's code, which cannot clash with them.
    let local = |name: &str| Ident::new(name, Span::mixed_site());
    let attempt = local("__d1_retry_attempt");
    let observe = (!options.idempotent()).then_some(&attempt);
    let output = erase_impl_trait(&function.output);
    let block = match &mut function.shape {
        Shape::Async { block, .. } | Shape::Boxed { block, .. } => block,
    };
    let found = sites::find(block, observe);
    let attempt_body = attempt_body(block, &output);
    let verdict = rules::decide(&found, &options, &function.sig, &krate)?;

    let name = operation_name(&function, &options, &krate);
    let policy = options.policy(&krate);
    let policy_check = options.policy_check(&krate, &function.sig);
    let read_only = options.read_only();
    let idempotent = options.idempotent();
    let many_sites = verdict.many_sites;
    let static_write = &verdict.static_write;
    let const_checks = &verdict.const_checks;
    let error_span = function.error_span;

    let driver = local("__d1_retry_driver");
    let record = local("__d1_retry_record");
    let plan = local("__d1_retry_plan");
    let result = local("__d1_retry_result");
    let error = local("__d1_retry_error");
    let delay = local("__d1_retry_delay");
    let operation = local("__d1_retry_operation");
    let value = local("__d1_retry_value");

    // Spanned at the error type, so an error type the runtime cannot read is reported there.
    let failure = quote_spanned! {error_span=>
        (&&&#krate::__private::Probe(&#error)).d1_retry_failure()
    };
    let retry_loop = quote! {
        #(#const_checks)*
        #policy_check
        #name
        let #plan = #krate::__private::Plan {
            idempotent: #idempotent,
            many_sites: #many_sites,
            static_write: #static_write,
        };
        let mut #driver = #krate::__private::Driver::new(
            #policy,
            #operation,
            <#krate::__private::DefaultSleeper as ::core::default::Default>::default(),
        );
        loop {
            let #record = #krate::__private::Attempt::new(#operation, #read_only);
            let #attempt = &#record;
            let #result: #output = #attempt_body.await;
            // The error lives in this block only, so it is dropped before the wait and an
            // error that is not `Send` never makes the future `!Send`.
            let #delay = {
                #[allow(unused_imports)]
                use #krate::__private::{ViaAsRefError as _, ViaDisplay as _, ViaError as _};
                let #error = match #result {
                    ::core::result::Result::Ok(#value) => {
                        #driver.succeeded();
                        return ::core::result::Result::Ok(#value);
                    }
                    ::core::result::Result::Err(#error) => #error,
                };
                match #driver.next_delay(&#failure, #plan.access(#attempt)) {
                    ::core::option::Option::Some(#delay) => #delay,
                    ::core::option::Option::None => return ::core::result::Result::Err(#error),
                }
            };
            #driver.sleep(#delay).await;
        }
    };

    let Checked {
        attrs, vis, sig, ..
    } = &function;
    Ok(match &function.shape {
        Shape::Async { inner_attrs, .. } => quote! {
            #(#attrs)*
            #vis #sig {
                #(#inner_attrs)*
                #retry_loop
            }
        },
        Shape::Boxed {
            callee,
            future,
            rebindings,
            ..
        } => {
            let ExprAsyncParts {
                attrs: future_attrs,
                async_token,
                capture,
                brace,
            } = ExprAsyncParts::of(future);
            let mut boxed_future = TokenStream::new();
            brace.surround(&mut boxed_future, |tokens| {
                tokens.extend(quote!(#(#rebindings)* #retry_loop));
            });
            quote! {
                #(#attrs)*
                #vis #sig {
                    #callee(#(#future_attrs)* #async_token #capture #boxed_future)
                }
            }
        }
    })
}

struct ExprAsyncParts<'a> {
    attrs: &'a [syn::Attribute],
    async_token: &'a syn::Token![async],
    capture: &'a Option<syn::Token![move]>,
    brace: &'a syn::token::Brace,
}

impl<'a> ExprAsyncParts<'a> {
    fn of(future: &'a syn::ExprAsync) -> Self {
        ExprAsyncParts {
            attrs: &future.attrs,
            async_token: &future.async_token,
            capture: &future.capture,
            brace: &future.block.brace_token,
        }
    }
}

/// `async { <fake return> <the user's block> }`, a non-`move` block so that it borrows
/// the arguments afresh on every attempt.
fn attempt_body(block: &Block, output: &Type) -> TokenStream {
    // Gives the block its return type before the body is checked, so `?` converts into
    // the declared error type and mistakes are reported against the user's code.
    let fake_return = quote_spanned! {output.span()=>
        #[allow(
            unknown_lints,
            unreachable_code,
            clippy::diverging_sub_expression,
            clippy::empty_loop,
            clippy::needless_return
        )]
        if false {
            let __d1_retry_fake_return: #output = loop {};
            return __d1_retry_fake_return;
        }
    };
    let stmts = &block.stmts;
    let mut body = TokenStream::new();
    block.brace_token.surround(&mut body, |tokens| {
        tokens.extend(quote!(#fake_return #(#stmts)*));
    });
    quote!(async #body)
}

/// `let __d1_retry_operation = Operation::...;` - the `d1.operation` log field.
fn operation_name(function: &Checked, options: &Options, krate: &TokenStream) -> TokenStream {
    let operation = Ident::new("__d1_retry_operation", Span::mixed_site());
    if let Some(name) = options.name() {
        return quote!(let #operation = #krate::__private::Operation::Named(#name););
    }
    let fn_name = function.sig.ident.unraw().to_string();
    if is_method(&function.sig) {
        // Kept as two parts and joined only when a line is logged: naming costs nothing
        // on the happy path.
        quote! {
            let #operation = #krate::__private::Operation::Method {
                type_name: ::core::any::type_name::<Self>(),
                method: #fn_name,
            };
        }
    } else {
        quote!(let #operation = #krate::__private::Operation::Named(#fn_name);)
    }
}

/// `impl Trait` cannot be named in a `let`; `_` lets the compiler infer it.
fn erase_impl_trait(ty: &Type) -> Type {
    struct Erase;
    impl VisitMut for Erase {
        fn visit_type_mut(&mut self, ty: &mut Type) {
            if let Type::ImplTrait(impl_trait) = ty {
                *ty = Type::Infer(syn::TypeInfer {
                    underscore_token: syn::Token![_](impl_trait.impl_token.span),
                });
                return;
            }
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
    let mut ty = ty.clone();
    Erase.visit_type_mut(&mut ty);
    ty
}

/// `tokens` as if written at `span`, so that an expression built from them and the
/// user's tokens is reported at the user's token.
pub(crate) fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(group) = &tree {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(&group.stream(), span));
                inner.set_span(span);
                tree = proc_macro2::TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}
