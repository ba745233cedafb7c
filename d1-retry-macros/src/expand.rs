//! Renders what the analysis decided: the per-call schedule and the rewritten executions,
//! or the whole-body loop, and the doc paragraph.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Block, Ident, Type};

use crate::attr::Options;
use crate::executions::{self, Mode, Names};
use crate::item::{Checked, Function, Shape, is_method};
use crate::{doc, one_call, valid};

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
    // A path of the user's (`crate = "..."`) is imported once, at the top of the body, and
    // named through that import: a path that does not resolve is then one error, at the
    // user's string, rather than one per use in the expansion.
    let (krate, crate_import) = match options.krate() {
        Some(path) => {
            let at = Span::mixed_site().located_at(path.span());
            let alias = Ident::new("__d1_retry_crate", at);
            let import = quote_spanned!(at=> use #path as #alias;);
            (alias.to_token_stream(), Some(import))
        }
        None => (quote!(::d1_retry), None),
    };
    let private = quote!(#krate::__private);
    // The mode the options declare; `mode` below is the one the body is expanded in.
    let declared = if options.read_only() {
        Mode::WholeBody { read_only: true }
    } else if options.idempotent() {
        Mode::WholeBody { read_only: false }
    } else {
        Mode::PerCall
    };

    // Locals of the expansion: invisible to the user's code, which cannot clash with them.
    let local = |name: &str| Ident::new(name, Span::mixed_site());
    let call = local("__d1_retry_call");
    let operation = operation_name(&function, &options, &private);
    // A `policy = PATH` that can be named outside the body is read once, into a constant
    // of the expansion (see `policy_check`), which the policy, its check and the loop's
    // choice all read: decided here, once, so that none of them names a constant the
    // others did not make.
    let held = options
        .policy()
        .filter(|path| nameable_outside(path, &function.sig));
    let policy = policy(&options, &krate, held);
    // Time limits need a clock and a timer: only a function whose policy may have them
    // (time-limit options, or a `policy = PATH` the macro cannot read) is written with the
    // time-limited loop's steps.
    let timed = options.has_time_limits() || options.policy().is_some();
    // A `policy = PATH` without time-limit options: which loop those steps take is chosen
    // from the constant's value, by the compiler (the runtime's `retry/limits.rs`), so that
    // a policy without limits pays for no clock or timer.
    let limits = limits(&options, &private, held);
    // The name is a constant (see `OperationName`), borrowed as a `'static`.
    let call_init = match &limits {
        Some(limits) => quote!(&#limits.call(#policy, &#operation)),
        None if timed => quote!(&#private::TimedCall::new(#policy, &#operation)),
        None => quote!(&#private::Call::new(#policy, &#operation)),
    };
    let names = Names {
        private: private.clone(),
        call: call.clone(),
        call_init,
        attempt: local("__d1_retry_attempt"),
        operation: operation.clone(),
        timed,
        self_borrowed: function
            .sig
            .receiver()
            .is_some_and(|receiver| matches!(*receiver.ty, syn::Type::Reference(_))),
        read_only: options.read_only(),
    };
    let params = parameters(&function.sig);
    let statements_in = statement_parameters(&function.sig);
    let time_limit_check = time_limit_check(&options, &private, &function);
    let output = erase_impl_trait(&function.output);
    let block = match &mut function.shape {
        Shape::Async { block, .. } | Shape::Boxed { block, .. } => block,
    };
    // A `read_only` body that is one D1 call is that call retried on its own (`one_call.rs`).
    let one_call = (options.read_only() && one_call::may_be(block))
        .then(|| {
            let mut per_call = block.clone();
            let found = executions::rewrite(
                &mut per_call,
                Mode::PerCall,
                &names,
                &params,
                &statements_in,
            );
            (per_call, found)
        })
        .filter(|(_, found)| one_call::is(found));
    let (mode, found) = match one_call {
        Some((per_call, found)) => {
            *block = per_call;
            (Mode::PerCall, found)
        }
        None => (
            declared,
            executions::rewrite(block, declared, &names, &params, &statements_in),
        ),
    };
    valid::check(&found, declared, &function.sig.ident)?;
    let doc = doc::paragraph(&found, declared, mode, &retries(&options));
    let policy_check = policy_check(&options, &krate, held);

    let body = match mode {
        Mode::PerCall => {
            let stmts = &block.stmts;
            let call_init = &names.call_init;
            // Only the traits the sites need: every trait in scope is one more candidate
            // for each method call of the body to be checked against.
            let timed_traits = timed.then(|| quote!(ViaFromTimedOut as _, ViaNoTimedOut as _,));
            let probe_traits = found.probes_errors.then(|| {
                quote!(
                    ViaAsRefError as _,
                    ViaAsRefLocalError as _,
                    ViaDisplay as _,
                    ViaError as _,
                )
            });
            let column_traits = found
                .types_columns
                .then(|| quote!(ViaFirstColumn as _, ViaOtherColumn as _,));
            quote! {
                #policy_check
                #[allow(unused_imports)]
                use #private::{ViaD1Receiver as _, ViaOtherReceiver as _, ViaD1Prepare as _, ViaOtherPrepare as _, #timed_traits #probe_traits #column_traits};
                #time_limit_check
                let #call = #call_init;
                #(#stmts)*
            }
        }
        Mode::WholeBody { read_only } => {
            let attempt_body = attempt_body(block, &output);
            let error_type = error_type(&private, &function);
            whole_body_loop(&WholeBody {
                private: &private,
                names: &names,
                policy: &policy,
                policy_check: &quote!(#policy_check #time_limit_check),
                // An error type that cannot be named (`impl Error`) cannot be told to
                // receive a `TimedOut` (a time-limit option on it is a compile error).
                timed: options.has_time_limits()
                    || (options.policy().is_some() && names_a_type(&error_type)),
                limits: limits.as_ref(),
                error_type: &error_type,
                operation: &operation,
                read_only,
                observes_held: found.observes_held,
                attempt_body: &attempt_body,
                error_span: function.error_span,
            })
        }
    };

    let body = quote!(#crate_import #body);
    let Checked {
        attrs, vis, sig, ..
    } = &function;
    Ok(match &function.shape {
        Shape::Async { inner_attrs, .. } => quote! {
            #(#attrs)*
            #[doc = #doc]
            #vis #sig {
                #(#inner_attrs)*
                #body
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
                tokens.extend(quote!(#(#rebindings)* #body));
            });
            quote! {
                #(#attrs)*
                #[doc = #doc]
                #vis #sig {
                    #callee(#(#future_attrs)* #async_token #capture #boxed_future)
                }
            }
        }
    })
}

/// What the whole-body loop is made of.
struct WholeBody<'a> {
    private: &'a TokenStream,
    names: &'a Names,
    policy: &'a TokenStream,
    policy_check: &'a TokenStream,
    /// The attribute gives time limits or a policy, which may have some: each attempt is
    /// raced against them when the error type can receive a `TimedOut`.
    timed: bool,
    /// The loop chosen from a `policy = PATH` constant's value (see [`limits`]).
    limits: Option<&'a TokenStream>,
    /// The function's error type.
    error_type: &'a TokenStream,
    operation: &'a TokenStream,
    read_only: bool,
    /// See [`executions::Found::observes_held`].
    observes_held: bool,
    attempt_body: &'a TokenStream,
    error_span: Span,
}

/// `#[d1_retry(read_only)]` / `#[d1_retry(idempotent)]`: the user vouched that the whole
/// body may run again, so each attempt runs it, inside the scope that keeps the D1 calls
/// within from retrying on their own.
fn whole_body_loop(parts: &WholeBody<'_>) -> TokenStream {
    let WholeBody {
        private,
        names,
        policy,
        policy_check,
        operation,
        read_only,
        ..
    } = parts;
    let attempt = &names.attempt;
    let record = local("__d1_retry_record");
    let name = local("__d1_retry_operation");
    let driver = local("__d1_retry_driver");
    let plan = local("__d1_retry_plan");
    // What decides whether a failed attempt runs again. Under `read_only`, the record of
    // the dynamic SQL the attempts ran, observed as it is prepared: one for the call, as
    // no attempt follows one that ran a write.
    let (record, plan_init) = if *read_only {
        (
            quote! {
                let #record = #private::Attempt::new(*#name);
                let #attempt = &#record;
            },
            quote!(#private::Plan::ReadOnly(#attempt)),
        )
    } else {
        (TokenStream::new(), quote!(#private::Plan::Idempotent))
    };
    // The function's error type's classifier, found once, by type: a function shared by
    // every function with that error type, not a closure per function. An error type that
    // cannot be named in the body (`impl Error`) is found from the error value instead.
    // Spanned at the error type, so an error type the runtime cannot read is reported there.
    let classify = if names_a_type(parts.error_type) {
        let error_type = respan(parts.error_type, parts.error_span);
        quote_spanned! {parts.error_span=>
            (&&&&#private::Probe::<#error_type>::NEW).d1_retry_classifier()
        }
    } else {
        let error = local("__d1_retry_error");
        quote_spanned! {parts.error_span=>
            |#error| (&&&&#private::Probe::of(#error)).d1_retry_classifier()(#error)
        }
    };
    let receiver_traits = parts.observes_held.then(|| {
        quote! {
            #[allow(unused_imports)]
            use #private::{ViaD1Receiver as _, ViaOtherReceiver as _};
        }
    });
    let each_attempt = if parts.timed {
        timed_attempt(parts, &plan, &classify)
    } else {
        untimed_attempt(parts, &plan, &classify)
    };
    quote! {
        #policy_check
        let #name = &#operation;
        let mut #driver = #private::Driver::new(
            #policy,
            #name,
            <#private::DefaultSleeper as ::core::default::Default>::default(),
        );
        #record
        let #plan = #plan_init;
        #receiver_traits
        #[allow(unused_imports)]
        use #private::{ViaAsRefError as _, ViaAsRefLocalError as _, ViaDisplay as _, ViaError as _};
        loop {
            #each_attempt
        }
    }
}

/// Whether `ty` can be written in the body as it is: no `impl Trait` in it, and no `_`
/// where one was erased (see [`erase_impl_trait`]).
fn names_a_type(ty: &TokenStream) -> bool {
    let mut lifetime = false;
    ty.clone().into_iter().all(|tree| {
        // `'_` (`Box<dyn Error + '_>`) is an elided lifetime, which a path in the body may
        // write too; only a `_` type was erased.
        let after_quote = core::mem::replace(
            &mut lifetime,
            matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == '\''),
        );
        match tree {
            proc_macro2::TokenTree::Ident(ident) => {
                ident != "impl" && (ident != "_" || after_quote)
            }
            proc_macro2::TokenTree::Group(group) => names_a_type(&group.stream()),
            _ => true,
        }
    })
}

/// A local of the expansion, invisible to the user's code.
fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// One turn of the loop without time limits: the wait before the attempt, if any, the
/// attempt, and the decision after it are one runtime future (`Turn`), so the function
/// holds one await point per attempt and no decision code of its own.
fn untimed_attempt(parts: &WholeBody<'_>, plan: &Ident, classify: &TokenStream) -> TokenStream {
    let attempt_body = parts.attempt_body;
    let driver = local("__d1_retry_driver");
    let result = local("__d1_retry_result");
    // A `policy = PATH` whose function's error type cannot be named still goes through
    // `limits`, whose const argument is the policy's check, with no way to hand a
    // `TimedOut` on: no limit applies.
    let turn = match parts.limits {
        Some(limits) => quote! {
            #limits.turn(
                &mut #driver, #attempt_body, #plan, #classify, ::core::option::Option::None,
            )
        },
        None => quote!((&mut #driver).turn(#attempt_body, #plan, #classify)),
    };
    quote! {
        if let ::core::option::Option::Some(#result) = #turn.await {
            return #result;
        }
    }
}

/// One turn of the loop with time limits: as [`untimed_attempt`], with the attempt raced
/// against them (`TimedTurn`), and a cut attempt failing as maybe executed. Without a
/// `From<TimedOut>` for the error type (which a time-limit option makes a compile error at
/// the option; a `policy = PATH` cannot tell whether its policy has limits), no limit
/// applies, as on a D1 call's attempt.
fn timed_attempt(parts: &WholeBody<'_>, plan: &Ident, classify: &TokenStream) -> TokenStream {
    let WholeBody {
        private,
        error_type,
        attempt_body,
        ..
    } = parts;
    let driver = local("__d1_retry_driver");
    let result = local("__d1_retry_result");
    let timed_out = quote! {
        {
            #[allow(unused_imports)]
            use #private::{ViaFromTimedOut as _, ViaNoTimedOut as _};
            (&&#private::TimeoutInto::<#error_type>::new()).d1_retry_timeout()
        }
    };
    let turn = match parts.limits {
        Some(limits) => {
            quote!(#limits.turn(&mut #driver, #attempt_body, #plan, #classify, #timed_out))
        }
        None => quote!((&mut #driver).turn_timed(#attempt_body, #plan, #classify, #timed_out)),
    };
    quote! {
        if let ::core::option::Option::Some(#result) = #turn.await {
            return #result;
        }
    }
}

/// For a `policy = PATH` without time-limit options, `Limits::<{ limited(PATH) }>` (read
/// through [`policy_check`]'s constant): the
/// type whose methods make the call and the whole-body turn with time limits or without, as
/// the constant has them or not, which only the compiler can read. `None` for a path that
/// names the function's generics or `Self` (not `held`), which a const argument may not
/// use: those keep the time-limited loop.
fn limits(
    options: &Options,
    private: &TokenStream,
    held: Option<&syn::Path>,
) -> Option<TokenStream> {
    let path = held?;
    if options.has_time_limits() {
        return None;
    }
    let private = respan(private, path.span());
    let checked = policy_constant();
    Some(quote_spanned! {path.span()=>
        #private::Limits::<{ #private::limited(&#checked) }>
    })
}

/// The `RetryPolicy` expression the function runs with; `held`: the path read into
/// [`policy_check`]'s constant.
fn policy(options: &Options, krate: &TokenStream, held: Option<&syn::Path>) -> TokenStream {
    let timed_options = options.has_time_limits();
    let checked = held.map(|path| (path, policy_constant()));
    if let Some((path, checked)) = &checked
        && !timed_options
    {
        // `policy_check`'s constant, validated once there, then borrowed as it is (a
        // reference to a constant is promoted to a `'static`): a second const block would
        // be one more body per method for rustc to check and evaluate (BENCHMARKS.md
        // section 4, seventh round).
        return quote_spanned!(path.span()=> &#checked);
    }
    let defaults = options.max_attempts().is_none()
        && options.base_delay_ms().is_none()
        && options.max_delay_ms().is_none();
    if options.policy().is_none() && defaults && !timed_options {
        // The default policy, borrowed as it is: no const block to check and evaluate.
        return quote!(&#krate::__private::RetryPolicy::DEFAULT);
    }
    let mut policy = if let Some((path, checked)) = &checked {
        // Read from `policy_check`'s constant, so that the path is read in one place and a
        // misuse of it is one error.
        quote_spanned!(path.span()=> #checked)
    } else if let Some(path) = options.policy() {
        // A const block, so an invalid policy constant is a compile error at `path`.
        let krate = respan(krate, path.span());
        quote_spanned! {path.span()=>
            #krate::__private::checked_policy(#path)
        }
    } else {
        let mut policy = quote!(#krate::__private::RetryPolicy::DEFAULT);
        if let Some(value) = options.max_attempts() {
            policy = quote!(#policy.with_max_attempts(#value));
        }
        if let Some(value) = options.base_delay_ms() {
            policy = quote!(#policy.with_base_delay(::core::time::Duration::from_millis(#value)));
        }
        if let Some(value) = options.max_delay_ms() {
            policy = quote!(#policy.with_max_delay(::core::time::Duration::from_millis(#value)));
        }
        policy
    };
    if let Some((value, _)) = options.attempt_timeout_ms() {
        policy = quote!(#policy.with_attempt_timeout(::core::time::Duration::from_millis(#value)));
    }
    if let Some((value, _)) = options.deadline_ms() {
        policy = quote!(#policy.with_deadline(::core::time::Duration::from_millis(#value)));
    }
    // Evaluated by the compiler (an invalid constant policy is a compile error at `path`)
    // and promoted to a `'static`: the call holds a reference, not a 72-byte copy.
    quote!(&const { #policy })
}

/// With a time-limit option, a check at the option that the function's error type can
/// receive a `TimedOut`: the one error a user without `From<TimedOut>` sees.
fn time_limit_check(options: &Options, private: &TokenStream, function: &Checked) -> TokenStream {
    let Some(span) = options
        .attempt_timeout_ms()
        .or(options.deadline_ms())
        .map(|(_, span)| span)
    else {
        return TokenStream::new();
    };
    // The type is respanned too: rustc reports an unmet bound at the type argument.
    let error = respan(&error_type(private, function), span);
    let private = respan(private, span);
    quote_spanned! {span=>
        #private::receives_timed_out::<#error>();
    }
}

/// The function's error type: `E` of `Result<T, E>`, or read through the output type when
/// it is behind an alias (`worker::Result<T>`).
fn error_type(private: &TokenStream, function: &Checked) -> TokenStream {
    match &function.error_type {
        Some(error) => error.to_token_stream(),
        None => {
            let output = erase_impl_trait(&function.output);
            quote!(<#output as #private::IsResult>::Err)
        }
    }
}

/// For `policy = PATH`, when the path can be named outside the body (`held`): a constant
/// holding it ([`policy_constant`]), the one place the expansion reads the path, so that a
/// path that is not a `RetryPolicy` is one error, at the path. The rest of the expansion
/// reads the constant. It is validated where it is read, by a constant evaluated under
/// `cargo check` too (an inline `const` block is not): the const argument of [`limits`], or
/// with time-limit options a `const _` here. The constant is not the check itself: a policy
/// that failed it would make every use of the constant a note under the error.
fn policy_check(options: &Options, krate: &TokenStream, held: Option<&syn::Path>) -> TokenStream {
    let Some(path) = held else {
        return TokenStream::new();
    };
    let krate = respan(krate, path.span());
    let checked = policy_constant();
    // Without time-limit options, the const argument of `limits` validates the policy as
    // it reads it: one constant evaluation fewer per function.
    let check = options.has_time_limits().then(|| {
        // `checked_policy` is `#[track_caller]`, so its error points at `path`.
        quote_spanned! {path.span()=>
            const _: #krate::__private::RetryPolicy = #krate::__private::checked_policy(#checked);
        }
    });
    quote_spanned! {path.span()=>
        const #checked: #krate::__private::RetryPolicy = #path;
        #check
    }
}

/// The name of [`policy_check`]'s constant. An item, so it resolves as the user's items do:
/// a name no one writes.
fn policy_constant() -> Ident {
    Ident::new("__D1_RETRY_POLICY", Span::mixed_site())
}

/// "4 retries", as the doc paragraph says it.
fn retries(options: &Options) -> String {
    if let Some(path) = options.policy() {
        let path = path.to_token_stream().to_string().replace(' ', "");
        return format!("the `max_attempts - 1` retries of `{path}`");
    }
    let attempts = options
        .max_attempts()
        .unwrap_or(d1_retry_runtime::RetryPolicy::DEFAULT.max_attempts());
    match attempts.saturating_sub(1) {
        0 => "no retries".to_owned(),
        1 => "1 retry".to_owned(),
        n => format!("{n} retries"),
    }
}

/// Whether `path` means the same in an item nested in the body: no `Self`, no generic
/// parameter of the function.
fn nameable_outside(path: &syn::Path, sig: &syn::Signature) -> bool {
    path.segments.first().is_none_or(|first| {
        first.ident != "Self"
            && !sig.generics.params.iter().any(|param| match param {
                syn::GenericParam::Type(ty) => ty.ident == first.ident,
                syn::GenericParam::Const(c) => c.ident == first.ident,
                syn::GenericParam::Lifetime(_) => false,
            })
    })
}

/// The names the function's parameters bind.
fn parameters(sig: &syn::Signature) -> Vec<Ident> {
    let mut names = Vec::new();
    for input in &sig.inputs {
        if let syn::FnArg::Typed(typed) = input {
            names.extend(
                executions::bound_idents(&typed.pat)
                    .into_iter()
                    .map(|pat| pat.ident.clone()),
            );
        }
    }
    names
}

/// The parameters declared to be D1's statement, by value or by shared reference (`held:
/// &D1PreparedStatement`, worker's or the testing kit's): a `read_only` body hands them on
/// as it hands on its copies, a shared reference or a value moved as the call would move
/// it. Read from the type as written, so an alias of the user's is not among them; a
/// `&mut` is not either, which a call reborrows and a move would not.
fn statement_parameters(sig: &syn::Signature) -> Vec<Ident> {
    sig.inputs
        .iter()
        .filter_map(|input| {
            let syn::FnArg::Typed(typed) = input else {
                return None;
            };
            let syn::Pat::Ident(ident) = &*typed.pat else {
                return None;
            };
            let mut ty = &*typed.ty;
            if let Type::Reference(reference) = ty {
                if reference.mutability.is_some() {
                    return None;
                }
                ty = &reference.elem;
            }
            let statement = matches!(ty, Type::Path(path) if path.qself.is_none()
            && path.path.segments.last().is_some_and(|last| {
                last.ident == "D1PreparedStatement" && last.arguments.is_none()
            }));
            (statement && ident.subpat.is_none() && ident.by_ref.is_none())
                .then(|| ident.ident.clone())
        })
        .collect()
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

/// The `d1.operation` log field: `name = ".."`, the function's name, or `Type::method`.
fn operation_name(function: &Checked, options: &Options, private: &TokenStream) -> TokenStream {
    if let Some(name) = options.name() {
        return quote!(#private::OperationName::Named(#name));
    }
    let fn_name = function.sig.ident.unraw().to_string();
    if is_method(&function.sig) {
        // Kept as two parts and joined only when a line is logged: naming costs nothing
        // on the happy path.
        quote! {
            #private::OperationName::Method {
                type_name: ::core::any::type_name::<Self>,
                method: #fn_name,
            }
        }
    } else {
        quote!(#private::OperationName::Named(#fn_name))
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
