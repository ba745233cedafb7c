//! The rewrite of one execution: its receiver bound where the call stood, its statements
//! judged, and the call made in the runtime's loop, so that only the call runs again.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprMethodCall};

use super::{Finder, Statements};
use crate::executions::bindings::name;
use crate::executions::generated::{held_batch_access, own_call, with_checks};
use crate::executions::syntax::{
    is_place, is_place_expression, part_written_out, scrutinee, statement_like, strip_parens,
};
use crate::executions::{Execution, Left, Mode};
use crate::pointer_call::{self, PointerCall};
use crate::sql::{Handed, Sql};

impl Finder<'_> {
    /// Handles an execution call; `awaited` when `.await` follows it where it is written.
    /// Returns the rewritten expression (without the `.await`), or `None` to leave it.
    pub(super) fn execution(
        &mut self,
        call: &mut ExprMethodCall,
        awaited: bool,
    ) -> Option<TokenStream> {
        let method = call.method.to_string();
        let span = call.method.span();
        let mut statements = Statements::default();
        if self.mode != Mode::PerCall {
            // The whole body is retried: `prepare` and `exec` SQL is judged where it is
            // passed (see `whole_body_sql`), and the call stays as written.
            if method == "exec"
                && let Some(arg) = call.args.first_mut()
            {
                self.sql_argument(arg, Handed::Exec, None, &mut statements);
            }
            // Under `read_only`, a statement the body did not make in sight is judged by
            // the SQL it holds, as its execution begins, and so is a batch's list; an
            // `exec` of a receiver that is not D1's database may write whatever its text.
            let mut observed = self.observes(call).then(|| self.observed(call, awaited));
            if method == "batch" {
                self.observe_list(call);
            }
            // An `exec` or a `batch` whose receiver is not D1's database (a type of the
            // user's with such a method) may write whatever it is handed.
            if method == "exec" || method == "batch" {
                let mut exec = Expr::MethodCall(call.clone());
                if self.observe_prepare(&mut exec) {
                    let awaiting = awaited.then(|| quote_spanned!(span=> .await));
                    observed = Some(quote!(#exec #awaiting));
                }
            }
            self.executions.push(Execution {
                method,
                sql: statements.sql,
                left: Left::WholeBody,
                held: false,
            });
            return observed;
        }
        // Where the call stands, for the check that it is not a method of the user's for a
        // pointer to a D1 type (`pointer_call.rs`), taken before its arguments are rewritten.
        let pointer_call = PointerCall::of(call);
        let place = is_place(&call.receiver);
        // A future returned from the function, or made in a `move` closure, may outlive the
        // call's schedule, and one that must have one type with another site's cannot take
        // the runtime's: left as written unless awaited here.
        let rewritable = awaited
            || (place
                && !self.in_move_closure
                && !self.in_return_position
                && !self.in_unifying_position);
        let slot = self.fresh_slot("call");
        let scan_into = rewritable.then_some(&slot);
        match method.as_str() {
            "batch" => {
                if let Some(arg) = call.args.first_mut() {
                    self.batch_statements(arg, scan_into, &mut statements);
                }
            }
            "exec" => {
                if let Some(arg) = call.args.first_mut() {
                    self.sql_argument(arg, Handed::Exec, scan_into, &mut statements);
                }
            }
            // Dumping reads the whole database.
            "dump" => statements.sql.push(Sql::Literal {
                text: "dump".to_owned(),
                read_only: true,
                span,
            }),
            _ => self.statement(&mut call.receiver, scan_into, &mut statements),
        }
        let own = own_call(&self.names.private, &method, span);
        // The calls whose SQL the receiver holds (a statement's), not the arguments (a
        // database's `batch`, `exec`, `dump`).
        let sql_in_receiver = matches!(
            method.as_str(),
            "first" | "all" | "run" | "raw" | "raw_js_value"
        );
        // A `batch` of a list out of sight: its one argument is bound (`kept`, or the first
        // of the stored execution's tuple) before the execution begins, so the statements it
        // holds can be read there.
        let batch = method == "batch";
        let held_list = batch && statements.held_list;
        let held = match method.as_str() {
            "batch" => held_list && rewritable,
            "exec" | "dump" => false,
            _ => rewritable,
        };
        let left = if rewritable {
            Left::No
        } else if !place {
            Left::NotAPlace
        } else if self.in_unifying_position {
            Left::Meets
        } else {
            Left::Outlives
        };
        self.executions.push(Execution {
            method,
            sql: statements.sql.clone(),
            left,
            held,
        });
        if !rewritable {
            return self.left_as_written(call, &statements);
        }
        let private = &self.names.private;
        let kept = Ident::new("__d1_retry_kept", Span::mixed_site());
        // Where it is `Unseen`, the runtime judges a statement by the SQL it holds, read
        // where the execution begins (`Retrying::access`); a batch's list out of sight, by
        // the SQL of every statement in it (`held_batch_access`). The list is the batch's
        // only SQL.
        let list_access = |list: TokenStream| held_batch_access(private, &list, span);
        let listed = Ident::new("__d1_retry_listed", Span::mixed_site());
        let access = if held_list && awaited {
            list_access(kept.to_token_stream())
        } else if held_list {
            // Read into `listed` once the stored execution's arguments are made (below).
            listed.to_token_stream()
        } else if batch && awaited && statements.may_be_unseen() {
            // A list written out, one of whose statements is out of sight or made of SQL
            // that is not text: where that leaves the batch `Unseen`, every statement the
            // list holds is read, as for a list out of sight (the database holds no SQL).
            let seen = self.access(&statements, Some(&slot));
            let held = list_access(kept.to_token_stream());
            let access = Ident::new("__d1_retry_access", Span::mixed_site());
            quote_spanned! {span=>
                match #seen {
                    #private::Access::Unseen => #held,
                    #access => #access,
                }
            }
        } else {
            self.access(&statements, Some(&slot))
        };
        let call_ident = &self.names.call;
        let recv = Ident::new("__d1_retry_recv", Span::mixed_site());
        // Each argument's name carries its value's span, so a type error in it points there.
        let args: Vec<Ident> = call
            .args
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let span = Span::mixed_site().located_at(value.span());
                format_ident!("__d1_retry_arg{}", i, span = span)
            })
            .collect();
        let whole = call.span();
        // D1's `first(col_name: Option<&str>)`: its argument, evaluated before the call,
        // is handed through a method with `first`'s parameter type, picked by the
        // receiver's type, so that `Some(&column)` coerces there as it would in the call
        // (the runtime's `first_column.rs`). The receiver is probed, not evaluated.
        let column = call.method == "first" && call.args.len() == 1;
        self.types_columns |= column;
        let typed = |receiver: &TokenStream| -> Vec<Expr> {
            call.args
                .iter()
                .map(|value| {
                    if !column {
                        return value.clone();
                    }
                    let span = value.span();
                    Expr::Verbatim(quote_spanned! {span=>
                        (&&#private::probed(|| #private::Receiver::of(&#receiver)))
                            .d1_retry_column(#value)
                    })
                })
                .collect()
        };
        let name = &call.method;
        let turbofish = &call.turbofish;
        let dot = call.dot_token;
        // An awaited call is retried by a loop written here (see the runtime's
        // `execution.rs`, and `timed_execution.rs` under time limits): each attempt is the
        // call as written, and the site instantiates no closure. A stored one, by the
        // runtime's `run` or, under time limits, `execute`, which classifies its errors.
        let timed = (self.names.timed && !awaited).then(|| self.classify_timed(span));
        self.probes_errors |= timed.is_some();
        let (begin_method, attempt_method, timeouts) = self.loop_methods(span);
        let execution = Ident::new("__d1_retry_execution", Span::mixed_site());
        let result = Ident::new("__d1_retry_result", Span::mixed_site());
        let again = Ident::new("__d1_retry_again", Span::mixed_site());
        let at = Ident::new("__d1_retry_at", Span::mixed_site());
        let rebinds =
            sql_in_receiver && place && matches!(strip_parens(&call.receiver), Expr::Field(_));
        // The expansion's own values are called on the exact type each method takes
        // (`(&mut #execution).again(..)`, `(&#slot).join(..)`): Rust's lookup tries a
        // trait's method taking `&self` before an inherent one taking `&mut self`, and one
        // taking `self` before one taking `&self`, so an extension trait of the user's for
        // every type, with a method of the same name, would be called instead
        // (`tests/user_shapes/extension_traits.rs`).
        // The receiver's type decides whether the call is D1's (`D1Receiver::D1_CALLS`), which
        // a pointer passes on from the type it points to: the user's method lookup repeated
        // on it, in code that never runs, refuses a method of the user's for the pointer
        // (`pointer_call.rs`).
        let site = |receiver: &TokenStream| {
            let values = typed(receiver);
            let values: Vec<&Expr> = values.iter().collect();
            let check = pointer_call
                .as_ref()
                .map(|pointer_call| pointer_call::check(private, pointer_call, receiver));
            // A stored execution's access: the site's answer about the call joins it
            // before the closure is made, so that a method of another type taking
            // `&mut self` is borrowed mutably by the closure alone.
            let stored_access = |access: &TokenStream| {
                quote_spanned! {span=>
                    (&&#private::Receiver::of(&#receiver)).d1_retry_site().access(#access, &#receiver, #own)
                }
            };
            // The site is also told the call and given the receiver, so that a method of
            // the user's named like a D1 call, on a D1 type that has none of that name, is
            // made once (the runtime's `Retrying::own`), in the same one call per site.
            if awaited {
                // Spanned at the method, so an error type the runtime cannot read is
                // reported there. The outer `match` runs from the receiver to the method,
                // as the call written with its `.await` would, for diagnostics about the
                // value (`?` on it).
                // A statement in a field (`self.jobs.stmt`) is evaluated again by each
                // attempt, and through a `Deref` of the user's on the way it may name
                // another statement by then: the site is begun on one evaluation, whose
                // address the loop keeps, and the statement a later one names, if another,
                // is judged anew (the runtime's `again_at`). Bound in a block, so that no
                // borrow of it is held across the loop's await. A database in a field
                // needs none of it: its calls' SQL is in their arguments, evaluated once.
                let (begin, begun, again_call) = if rebinds {
                    let place = Ident::new("__d1_retry_place", Span::mixed_site());
                    (
                        quote_spanned! {span=>
                            {
                                let #place = &#receiver;
                                (
                                    (&&#private::Receiver::of(#place)).d1_retry_site()
                                        .#begin_method(#call_ident, #access, #place, #own),
                                    ::core::ptr::from_ref(#place).addr(),
                                )
                            }
                        },
                        quote_spanned!(span=> (mut #execution, mut #at)),
                        quote_spanned!(span=> (&mut #execution).again_at(#again, &mut #at, &#receiver, #own)),
                    )
                } else {
                    (
                        quote_spanned! {span=>
                            (&&#private::Receiver::of(&#receiver)).d1_retry_site()
                                .#begin_method(#call_ident, #access, &#receiver, #own)
                        },
                        quote_spanned!(span=> mut #execution),
                        quote_spanned!(span=> (&mut #execution).again(#again)),
                    )
                };
                let attempt = quote_spanned! {span=>
                    (&mut #execution).#attempt_method(#receiver #dot #name #turbofish (#(#args),*) #timeouts).await
                };
                // On a receiver that is not D1 the loop never turns (see `PlainExecution`).
                // The pointer check opens the loop's arm: a statement there costs rustc and
                // LLVM less than a tuple around the site (as a stored site has, below), and
                // the arm's tail, the loop, keeps its temporaries where they were.
                let arms = if values.is_empty() {
                    quote_spanned! {span=>
                        {
                            #[allow(clippy::never_loop)]
                            #begun => {
                                #check
                                loop {
                                    match #attempt {
                                        ::core::ops::ControlFlow::Break(#result) => break #result,
                                        ::core::ops::ControlFlow::Continue(#again) => #again_call,
                                    }
                                }
                            }
                        }
                    }
                } else {
                    // The arguments are evaluated once, before the access (which may read
                    // the SQL they hold); the loop keeps them, each attempt takes a clone
                    // (`take`), and a plain call takes them once, as they are. Kept in
                    // place rather than moved out and back each attempt: a value moved
                    // around the loop's await costs rustc a drop flag and more state.
                    let take = if args.len() == 1 {
                        quote_spanned!(span=> let #(#args)* = (&#execution).take(&mut #kept);)
                    } else {
                        quote_spanned!(span=> let (#(#args,)*) = (&#execution).take(&mut #kept);)
                    };
                    quote_spanned! {span=>
                        {
                            #kept => match #begin {
                                #[allow(clippy::never_loop)]
                                #begun => {
                                    #check
                                    let mut #kept = (&#execution).keep(#kept);
                                    loop {
                                        #take
                                        match #attempt {
                                            ::core::ops::ControlFlow::Break(#result) => break #result,
                                            ::core::ops::ControlFlow::Continue(#again) => #again_call,
                                        }
                                    }
                                }
                            }
                        }
                    }
                };
                if values.is_empty() {
                    quote_spanned!(whole=> match #begin #arms)
                } else if let [value] = values[..] {
                    let value = scrutinee(value);
                    quote_spanned!(whole=> match #value #arms)
                } else {
                    quote_spanned!(whole=> match (#(#values,)*) #arms)
                }
            } else {
                let access = stored_access(&access);
                // A batch's list out of sight is read once its arguments are made, before
                // they are handed over (the argument is moved into the execution).
                let (arguments, read_list) = if held_list {
                    let read = list_access(quote!(#kept.0));
                    (
                        kept.to_token_stream(),
                        Some(quote_spanned!(span=> let #listed = #read;)),
                    )
                } else {
                    (quote!((#(#values,)*)), None)
                };
                // A statement in a field: each attempt hands the runtime the receiver it is
                // made on, to follow it to another statement the field may name by then
                // (the awaited loop's `again_at`, above).
                let (execute, run, attempt) = if rebinds {
                    let follow = Ident::new("__d1_retry_follow", Span::mixed_site());
                    (
                        Ident::new("execute_following", span),
                        Ident::new("run_following", span),
                        quote_spanned! {span=>
                            |(#(#args,)*), #follow| {
                                (&&#private::Receiver::of(&#receiver)).d1_retry_site()
                                    .follow(#follow, &#receiver, #own);
                                #receiver #dot #name #turbofish (#(#args),*)
                            }
                        },
                    )
                } else {
                    (
                        Ident::new("execute", span),
                        Ident::new("run", span),
                        quote_spanned! {span=>
                            |(#(#args,)*)| #receiver #dot #name #turbofish (#(#args),*)
                        },
                    )
                };
                let site = if let Some(classify) = &timed {
                    quote_spanned! {span=>
                        (&&#private::Receiver::of(&#receiver)).d1_retry_site()
                            .#execute(#call_ident, #arguments, #access, #attempt)
                            #classify
                    }
                } else {
                    quote_spanned! {span=>
                        (&&#private::Receiver::of(&#receiver)).d1_retry_site()
                            .#run(#call_ident, #arguments, #access, #attempt)
                    }
                };
                let site = match read_list {
                    Some(read_list) => quote_spanned! {span=>
                        match (#(#values,)*) {
                            #kept => {
                                #read_list
                                #site
                            }
                        }
                    },
                    None => site,
                };
                // The check and the site are a tuple, so that the site's temporaries live
                // as long as they did, spanned as the site is, from the receiver to the
                // method, where diagnostics about its value point.
                match check {
                    Some(check) => {
                        let mut second = proc_macro2::Literal::usize_unsuffixed(1);
                        second.set_span(span);
                        quote_spanned!(whole=> (#check, #site).#second)
                    }
                    None => site,
                }
            }
        };
        let receiver = strip_parens(&call.receiver);
        // An awaited site is its loop, which awaits each attempt itself.
        let body = if place {
            site(&receiver.to_token_stream())
        } else if awaited && is_place_expression(receiver) {
            // `v[0]`, `*r`, `self.state().db`: a place that must not be moved out of;
            // borrowed for the execution's `&self` calls.
            let site = site(&recv.to_token_stream());
            let receiver = scrutinee(receiver);
            quote_spanned! {whole=>
                match &#receiver {
                    #recv => #site
                }
            }
        } else {
            let site = site(&recv.to_token_stream());
            let receiver = scrutinee(receiver);
            quote_spanned! {whole=>
                match #receiver {
                    #[allow(unused_mut)]
                    mut #recv => #site
                }
            }
        };
        let body = self.with_slot(body, &slot, statements.scans);
        Some(with_checks(body, &statements.checks, whole))
    }

    /// `statement.await`: the statement is `IntoFuture`, and a retry awaits a clone.
    pub(super) fn awaited_statement(&mut self, base: &mut Expr) -> Option<TokenStream> {
        if self.mode != Mode::PerCall
            || !(statement_like(base) || part_written_out(base))
            || self.awaits_pending(base)
        {
            return None;
        }
        let slot = self.fresh_slot("await");
        let mut statements = Statements::default();
        self.statement(base, Some(&slot), &mut statements);
        self.executions.push(Execution {
            method: ".await".to_owned(),
            sql: statements.sql.clone(),
            left: Left::No,
            held: true,
        });
        let access = self.access(&statements, Some(&slot));
        let private = &self.names.private;
        let call_ident = &self.names.call;
        let recv = Ident::new("__d1_retry_recv", Span::mixed_site());
        let span = base.span();
        let own = own_call(private, ".await", span);

        // The loop of `execution` (see there), each attempt awaiting a clone of the
        // statement, kept by the loop; on a receiver that is not D1, the statement itself,
        // once.
        let execution = Ident::new("__d1_retry_execution", Span::mixed_site());
        let result = Ident::new("__d1_retry_result", Span::mixed_site());
        let again = Ident::new("__d1_retry_again", Span::mixed_site());
        let taken = Ident::new("__d1_retry_taken", Span::mixed_site());
        let (begin_method, attempt_method, timeouts) = self.loop_methods(span);
        let base = scrutinee(base);
        let body = quote_spanned! {span=>
            match #base {
                #recv => match (&&#private::Receiver::of(&#recv)).d1_retry_site()
                    .#begin_method(#call_ident, #access, &#recv, #own)
                {
                    #[allow(clippy::never_loop)]
                    mut #execution => {
                        let mut #recv = (&#execution).keep(#recv);
                        loop {
                            // Taken before the attempt borrows the execution: a `&mut`
                            // written out has no two-phase borrow.
                            let #taken = (&#execution).take(&mut #recv);
                            match (&mut #execution)
                                .#attempt_method(::core::future::IntoFuture::into_future(#taken) #timeouts)
                                .await
                            {
                                ::core::ops::ControlFlow::Break(#result) => break #result,
                                ::core::ops::ControlFlow::Continue(#again) => (&mut #execution).again(#again),
                            }
                        }
                    }
                }
            }
        };
        let body = self.with_slot(body, &slot, statements.scans);
        Some(with_checks(body, &statements.checks, span))
    }

    /// Whether `base` names an execution's future ([`Finder::pending`]), bound once: its
    /// `.await` is left as written, and not listed. The execution was, where it was made.
    pub(super) fn awaits_pending(&self, base: &Expr) -> bool {
        let Expr::Path(path) = strip_parens(base) else {
            return false;
        };
        path.qself.is_none()
            && path.path.get_ident().is_some_and(|ident| {
                self.bindings.unique(ident) && self.pending.contains(&name(ident))
            })
    }

    /// The loop's `begin` and `attempt` methods, and what `attempt` is given besides the
    /// call: under time limits, how a `TimedOut` becomes the call's error type.
    pub(super) fn loop_methods(&self, span: Span) -> (Ident, Ident, Option<TokenStream>) {
        if !self.names.timed {
            let begin = Ident::new("begin_on", span);
            return (begin, Ident::new("attempt", span), None);
        }
        let private = &self.names.private;
        let marker = Ident::new("__d1_retry_marker", Span::mixed_site());
        let timeouts = quote_spanned! {span=>
            , |#marker| (&&#private::TimeoutInto::of(#marker)).d1_retry_timeout()
        };
        let begin = Ident::new("begin_timed_on", span);
        (begin, Ident::new("attempt_timed", span), Some(timeouts))
    }

    /// `.classify_timed(..)`, for an execution not awaited where it is made (a future
    /// stored, joined or returned) in a function whose policy may have time limits: how the
    /// execution reads its error, and how it turns a `TimedOut` into that error. (Awaited
    /// sites go through the loop, `Execution::attempt` or `TimedExecution::attempt_timed`,
    /// and untimed stored ones through `Retrying::run`, which classify on their own.)
    pub(super) fn classify_timed(&self, span: Span) -> TokenStream {
        let private = &self.names.private;
        let error = Ident::new("__d1_retry_error", Span::mixed_site());
        let marker = Ident::new("__d1_retry_marker", Span::mixed_site());
        // Spanned at the method, so an error type the runtime cannot read is reported there.
        quote_spanned! {span=>
            .classify_timed(
                |#error| (&&&&#private::Probe::of(#error)).d1_retry_classifier()(#error),
                |#marker| (&&#private::TimeoutInto::of(#marker)).d1_retry_timeout(),
            )
        }
    }

    pub(super) fn with_slot(&self, body: TokenStream, slot: &Ident, scans: usize) -> TokenStream {
        // A `match`, whose scrutinee lives as long as the body's temporaries: a block's
        // `let` would not.
        if scans == 0 {
            return body;
        }
        let private = &self.names.private;
        quote! {
            match #private::SqlSlot::new() {
                #slot => #body
            }
        }
    }
}

impl Finder<'_> {
    /// An execution left as written (see `rewritable` in [`execution`](Self::execution)):
    /// D1's own future, made once and not retried. An attempt around the function (a
    /// `read_only` body, a `Retry`) runs it again with the rest of its attempt, so it is
    /// told, as the future is made, of the access its SQL was judged to have
    /// (`scope::left_as_written`: a write unless it reads); the call keeps its type
    /// (`(told, call).1`). SQL read at run time is not read here: the execution has no
    /// slot to scan it into, and counts as a write.
    fn left_as_written(
        &self,
        call: &ExprMethodCall,
        statements: &Statements,
    ) -> Option<TokenStream> {
        let reads = !statements.sql.is_empty()
            && statements.sql.iter().all(|sql| {
                matches!(
                    sql,
                    Sql::Literal {
                        read_only: true,
                        ..
                    }
                )
            });
        if reads {
            return None;
        }
        let private = &self.names.private;
        let unjudged = statements.sql.is_empty()
            || statements.scans > 0
            || !statements.checks.is_empty()
            || statements.sql.iter().any(|sql| matches!(sql, Sql::Dynamic));
        let access = if unjudged {
            quote!(#private::Access::Unseen)
        } else {
            self.access(statements, None)
        };
        let whole = call.span();
        Some(quote_spanned!(whole=> (#private::left_as_written(#access), #call).1))
    }
}
