//! What a `read_only` body has observed as it runs: a statement it did not make in sight,
//! a `batch` of a list out of sight, and all SQL handed to `prepare`, so that a write in a
//! body declared read-only stops it from running again.

use std::collections::HashSet;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, ExprMethodCall, Local, Macro, Pat, Token};

use super::{Finder, Statements};
use crate::executions::Mode;
use crate::executions::bindings::keeps_the_sql;
use crate::executions::bindings::name;
use crate::executions::generated::{held_batch_access, own_call};
use crate::executions::syntax::{
    Database, bound_idents, is_d1_path, is_place, is_place_expression, path_type, scrutinee,
    strip_parens, strip_parens_mut,
};
use crate::executions::vocabulary::{
    EXECUTIONS, STATEMENT_EXECUTIONS, binds_nothing, execution_path, is_expression_macro,
    macro_name, may_make_d1_call,
};
use crate::pointer_call::{self, PointerCall};
use crate::sql::{Handed, Sql};

impl Finder<'_> {
    /// Whether a `read_only` body made the statement `expr` in sight: a `prepare(..)` on a
    /// receiver probed by type where the call stands ([`observe_prepare`](Self::observe_prepare)),
    /// `D1Database::prepare(db, ..)` (whose SQL `whole_body_sql` judges), through
    /// `.bind(..)`, `?`, a borrow, or a name bound once to one of them
    /// ([`sighted_binding`](Self::sighted_binding)). Anything else (a parameter, a field, a
    /// helper's statement, one chosen by `if`) is read where it runs
    /// ([`observed`](Self::observed)), which judges it exactly, at the price of reading its
    /// text.
    pub(super) fn made_in_sight(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Paren(inner) => self.made_in_sight(&inner.expr),
            Expr::Group(inner) => self.made_in_sight(&inner.expr),
            Expr::Try(inner) => self.made_in_sight(&inner.expr),
            Expr::Reference(inner) => self.made_in_sight(&inner.expr),
            // A `prepare` already observed (`observe_prepare`).
            Expr::Field(field) => self
                .observed_value(field)
                .is_some_and(|value| self.made_in_sight(value)),
            Expr::MethodCall(call) if keeps_the_sql(call) => self.made_in_sight(&call.receiver),
            // Made in sight if its receiver can be probed where the call stands: the probe
            // tells the attempt of a `prepare` that is not D1's (`observe_prepare`).
            Expr::MethodCall(call) => {
                call.method == "prepare"
                    && call.args.len() == 1
                    && !matches!(Database::of(strip_parens(&call.receiver)), Database::Unseen)
            }
            Expr::Call(made) if is_made(made) => made
                .args
                .first()
                .is_some_and(|value| self.made_in_sight(value)),
            Expr::Call(call) => is_d1_path(&call.func, "prepare") && call.args.len() == 2,
            // Only names bound once are ever sighted (`sighted_binding`).
            Expr::Path(path) if path.qself.is_none() => path
                .path
                .get_ident()
                .is_some_and(|ident| self.sighted.contains(&name(ident))),
            _ => false,
        }
    }

    /// Whether `call` is a `read_only` body's execution of a statement made out of sight,
    /// which can be rewritten to be observed ([`observed`](Self::observed)).
    ///
    /// `into_future()` counts too: awaiting what it returns runs the statement, as awaiting
    /// the statement does, and the `.await` is then on a future, not on the statement.
    pub(super) fn observes(&self, call: &ExprMethodCall) -> bool {
        let method = call.method.to_string();
        self.observing()
            && (STATEMENT_EXECUTIONS.contains(&method.as_str())
                || (method == "into_future" && call.args.is_empty()))
            && !self.made_in_sight(&call.receiver)
    }

    /// In a `read_only` body, a macro call whose tokens are not rewritten (any macro but
    /// the expression macros it walks, `tokio::select!` among them) and may make a D1 call
    /// ([`may_make_d1_call`]): what it runs cannot be observed, so the attempt is told of
    /// a statement out of sight whose SQL cannot be read, a write, as the macro begins
    /// (`Access::Unseen`), and the body is not run again. A read made there costs the body
    /// its retries; a write made there ran twice before.
    pub(super) fn foreign_macro_observation(&self, mac: &Macro) -> Option<TokenStream> {
        if !self.observing()
            || is_expression_macro(mac)
            || !(may_make_d1_call(mac.tokens.clone())
                || selects_a_statement(mac, &self.copies, &self.called))
        {
            return None;
        }
        let private = &self.names.private;
        let span = mac.path.span();
        Some(self.observe_access(quote_spanned!(span=> #private::Access::Unseen), span))
    }

    /// Whether SQL out of sight can be observed here: in a `read_only` body, outside a
    /// foreign macro's tokens, which are not rewritten.
    pub(super) fn observing(&self) -> bool {
        self.mode == (Mode::WholeBody { read_only: true }) && !self.in_foreign_macro
    }

    /// How an observation here hands the attempt an `Access`: through its record, borrowed,
    /// in the body itself; in an `async` block or a closure, which must not gain a borrow
    /// (it may have to own all it holds, or become a `fn` pointer), through the count of
    /// writes on the thread (`scope::record_held`), which the attempt reads after each poll.
    pub(super) fn observe_access(&self, access: TokenStream, span: Span) -> TokenStream {
        let private = &self.names.private;
        if self.beyond_attempt {
            let operation = &self.names.operation;
            quote_spanned!(span=> #private::record_held(#access, #operation))
        } else {
            let attempt = &self.names.attempt;
            quote_spanned!(span=> #attempt.observe_held(#access))
        }
    }

    /// In a `read_only` body, a `batch` whose list is not written out of statements made in
    /// sight: the list is moved through an observation of its statements' SQL
    /// (`batch_sql.rs`, `Attempt::observe_held`) on its way to the call, which keeps its
    /// type and its order of evaluation.
    pub(super) fn observe_list(&mut self, call: &mut ExprMethodCall) {
        let observing = self.observing();
        let Some(list) = call.args.first_mut() else {
            return;
        };
        if observing {
            self.observe_list_argument(list);
        }
    }

    /// `list`, a `batch`'s argument, moved through an observation of its statements' SQL,
    /// unless it is written out of statements made in sight.
    fn observe_list_argument(&self, list: &mut Expr) {
        if self.list_in_sight(list) {
            return;
        }
        let private = &self.names.private;
        let span = list.span();
        let held = Ident::new("__d1_retry_list", Span::mixed_site());
        let access = held_batch_access(private, &held.to_token_stream(), span);
        let observe = self.observe_access(access, span);
        let value = scrutinee(list);
        *list = Expr::Verbatim(quote_spanned! {span=>
            match #value {
                #held => (#observe, #held).1
            }
        });
    }

    /// A `batch`'s list written out (`vec![..]` or `[..]`) of statements made in sight.
    pub(super) fn list_in_sight(&self, list: &Expr) -> bool {
        match list {
            Expr::Paren(inner) => self.list_in_sight(&inner.expr),
            Expr::Group(inner) => self.list_in_sight(&inner.expr),
            Expr::Array(array) => array.elems.iter().all(|e| self.made_in_sight(e)),
            Expr::Macro(mac) if mac.mac.path.is_ident("vec") => {
                Punctuated::<Expr, Token![,]>::parse_terminated
                    .parse2(mac.mac.tokens.clone())
                    .is_ok_and(|elements| elements.iter().all(|e| self.made_in_sight(e)))
            }
            _ => false,
        }
    }

    /// In a `read_only` body, `let stmt = <a statement made in sight>;`: executions of
    /// `stmt` need no reading. As in per-call mode, only a name bound once and not `mut`.
    /// Then the names the `let` binds, as copies or not ([`copies_bound`](Self::copies_bound)).
    pub(super) fn sighted_binding(&mut self, local: &Local) {
        let Some(init) = &local.init else {
            self.copies_bound(&local.pat, None);
            return;
        };
        let single = match &local.pat {
            Pat::Type(typed) => &*typed.pat,
            pattern => pattern,
        };
        if let Pat::Ident(ident) = single
            && ident.subpat.is_none()
            && ident.mutability.is_none()
            && ident.by_ref.is_none()
            && init.diverge.is_none()
            && self.bindings.unique(&ident.ident)
            && self.made_in_sight(&init.expr)
        {
            self.sighted.insert(name(&ident.ident));
        }
        self.copies_bound(&local.pat, Some(&init.expr));
    }

    /// In a `read_only` body, a value written out of parts (an array, a tuple, a struct
    /// literal) that a `let` binds whole (`let pair = (stmt.clone(), &mut out)`, `pattern`)
    /// or that is assigned (`pattern` `None`): each copy in it is observed where it is bound,
    /// as `vec!`'s elements are where they are collected, since the name may be handed on
    /// whole to what runs the copy out of sight (`run_pair(pair)`), where a value built
    /// beside a borrow cannot be moved through an observation. A pattern that takes the
    /// value apart binds the copies themselves ([`copies_bound`](Self::copies_bound)), each
    /// observed where it is handed on.
    pub(super) fn observe_bound_parts(&mut self, pattern: Option<&Pat>, value: &mut Expr) {
        if !matches!(
            strip_parens(value),
            Expr::Array(_) | Expr::Tuple(_) | Expr::Struct(_)
        ) || pattern.is_some_and(|pattern| taken_apart(pattern, value).is_some())
        {
            return;
        }
        self.observed_hand_over(value, false);
    }

    /// In a `read_only` body, the names `pattern` binds: to a statement's copy or to parts
    /// of one when `value` is an owned copy ([`owned_copy`]: `let copy = stmt.clone()`,
    /// `let Some(s) = opt.clone() else ..`, `for s in list.clone()`, `if let Some(s) =
    /// list.first().cloned()`, a `match` arm's), else to something else, which ends what the
    /// name meant before. The names are followed in the order the body binds them, each
    /// scope's forgotten where it ends ([`scoped`](Self::scoped)), so that a name bound in
    /// two places is a copy where it is one. Each copy is owned (a copy holds no `&mut`), so
    /// handed on by value it is moved as the call would move it. Not a `ref` binding, nor a
    /// name written like a constant or a unit variant (`None`), which no pattern binds.
    pub(super) fn copies_bound(&mut self, pattern: &Pat, value: Option<&Expr>) {
        if !self.observing() {
            return;
        }
        for pat in bound_idents(pattern) {
            self.roots.remove(&name(&pat.ident));
        }
        bind_names(&mut self.copies, &mut self.called, pattern, value);
    }

    /// A macro called as a statement that is not known to bind nothing of the caller's
    /// (`lend!(sink = &mut out);`) may bind again any name in its tokens, to anything: none
    /// of them is a copy after it, nor another function's value ([`Finder::called`]), which
    /// it may now be a statement in place of (`lend!(s = stmt.clone())`).
    pub(super) fn macro_may_rebind(&mut self, mac: &Macro) {
        if self.observing() && !binds_nothing(mac) {
            forget_names_in(&mut self.copies, mac.tokens.clone());
            forget_names_in(&mut self.called, mac.tokens.clone());
            forget_names_in(&mut self.roots, mac.tokens.clone());
        }
    }

    /// Runs `visit` in a scope of its own: the copies it binds ([`copies_bound`](Self::copies_bound))
    /// are forgotten after it, and the names it binds again are copies again if they were.
    pub(super) fn scoped(&mut self, visit: impl FnOnce(&mut Self)) {
        let outer = (self.copies.clone(), self.called.clone(), self.roots.clone());
        visit(self);
        (self.copies, self.called, self.roots) = outer;
    }

    /// A `read_only` body's execution of a statement made out of sight, with the
    /// attempt told what its SQL is first (`Retrying::observe`, nothing on a receiver that
    /// is not D1's; `observe_unborrowed` in an `async` block or a closure, for the reason
    /// [`observe_access`](Self::observe_access) gives). The receiver is evaluated once, as
    /// written: a variable or a field is read in place twice (the observation borrows it,
    /// then the call as written); a place reached through an index, a deref or a call is
    /// borrowed once for both; a value is moved through the observation to the call. Where
    /// the receiver allows, the observation and the call are one tuple, not a block or a
    /// `match` arm, so that the call's temporaries live as long as they did; a place
    /// borrowed by a `match` is awaited in its arm, with the temporaries.
    pub(super) fn observed(&mut self, call: &ExprMethodCall, awaited: bool) -> TokenStream {
        self.observes_held = true;
        let private = &self.names.private;
        let span = call.method.span();
        let whole = call.span();
        let own = own_call(private, &call.method.to_string(), span);
        let beyond = self.beyond_attempt;
        // The observation trusts the receiver's type to say whether the call is D1's
        // (`D1Receiver::D1_CALLS`): on a pointer to a D1 type, a method of the user's for the
        // pointer is refused first (`pointer_call.rs`), in code that never runs.
        let pointer_call = PointerCall::of(call);
        let observe = |receiver: &TokenStream| {
            let observation = self.observation(receiver, Observed::Call(&own), span, beyond);
            match &pointer_call {
                Some(pointer_call) => {
                    let check = pointer_call::check(private, pointer_call, receiver);
                    quote_spanned!(span=> { #check #observation })
                }
                None => observation,
            }
        };
        let awaiting = awaited.then(|| quote_spanned!(whole=> .await));
        let recv = Ident::new(HANDED_OVER, Span::mixed_site());
        let with_receiver = |receiver: TokenStream| {
            let mut call = call.clone();
            call.receiver = Box::new(Expr::Verbatim(receiver));
            call
        };
        let receiver = strip_parens(&call.receiver);
        // Only a call with D1's arguments can be D1's (`first(col)`, `run()`, ...): a
        // `first()` of the user's, whose result type may be inferred later, is left alone.
        let d1_shaped = call.method != "first" || call.args.len() == 1 || awaited;
        let judged = |call: TokenStream| {
            if d1_shaped {
                self.judged_output(call, whole)
            } else {
                call
            }
        };
        if is_place(receiver) {
            let observe = observe(&receiver.to_token_stream());
            let call = judged(quote_spanned!(whole=> (#observe, #call).1));
            quote_spanned!(whole=> #call #awaiting)
        } else if is_place_expression(receiver) {
            let observe = observe(&quote!(*#recv));
            let call = with_receiver(quote!(#recv));
            let call = judged(quote_spanned!(whole=> (#observe, #call).1));
            let receiver = scrutinee(receiver);
            quote_spanned! {whole=>
                match &#receiver {
                    #recv => #call #awaiting
                }
            }
        } else {
            let observe = observe(&recv.to_token_stream());
            let receiver = scrutinee(receiver);
            let call = with_receiver(quote_spanned! {whole=>
                (match #receiver {
                    #recv => (#observe, #recv).1
                })
            });
            let call = judged(call.to_token_stream());
            quote_spanned!(whole=> #call #awaiting)
        }
    }

    /// An observed execution `call`, judged a second time by its output when its receiver
    /// turned out not to be D1's (`unseen_output.rs`): a type that derefs to D1's statement
    /// (`Pin<Box<_>>`, a newtype of the user's) reaches D1's own call, and a future of a
    /// `Result` is then taken for a write. The call is an argument of a function, whose
    /// temporaries live to the end of the statement, as the call's own did; the closure is
    /// called, with the output's type known, only when the receiver was not D1's.
    fn judged_output(&self, call: TokenStream, span: Span) -> TokenStream {
        let private = &self.names.private;
        let output = Ident::new("__d1_retry_output", Span::mixed_site());
        let access = quote_spanned! {span=>
            {
                #[allow(unused_imports)]
                use #private::{ViaResultFuture as _, ViaOtherOutput as _};
                (&&#private::Output::of(#output)).d1_retry_output()
            }
        };
        let tell = self.observe_access(access, span);
        quote_spanned! {span=>
            #private::unseen_output(#private::unseen_mark(), #call, |#output| #tell)
        }
    }

    /// In whole-body mode, SQL handed to `prepare` anywhere in the body (a `let`, a
    /// helper's argument) is judged, so that `read_only` is checked against all of it.
    pub(super) fn whole_body_sql(&mut self, expr: &mut Expr) {
        let mut statements = Statements::default();
        // The statement a `prepare` makes is handed to `made_statement` below wherever its
        // SQL is dynamic.
        let mut prepares = false;
        self.observing_made = true;
        match expr {
            Expr::MethodCall(call) if call.method == "prepare" && call.args.len() == 1 => {
                prepares = true;
                if let Some(sql) = call.args.first_mut() {
                    self.sql_argument(sql, Handed::Prepare, None, &mut statements);
                }
            }
            // `D1Database::prepare(&db, sql)`.
            Expr::Call(call) if is_d1_path(&call.func, "prepare") && call.args.len() == 2 => {
                prepares = true;
                if let Some(sql) = call.args.iter_mut().nth(1) {
                    self.sql_argument(sql, Handed::Prepare, None, &mut statements);
                }
            }
            // `D1Database::exec(&db, sql)`; `db.exec(sql)` is judged as an execution.
            Expr::Call(call) if is_d1_path(&call.func, "exec") && call.args.len() == 2 => {
                if let Some(sql) = call.args.iter_mut().nth(1) {
                    self.sql_argument(sql, Handed::Exec, None, &mut statements);
                }
            }
            _ => {}
        }
        self.observing_made = false;
        // The path-form `batch`'s list first (`D1Database::batch(&db, list)`), inside the
        // call, which the probe of its type then wraps whole.
        self.observe_path_call(expr);
        self.observe_prepare(expr);
        // Dynamic SQL in a `read_only` body is observed as it is handed over
        // (`sql_argument`); where it is not text, by the statement made of it.
        if prepares
            && self.mode == (Mode::WholeBody { read_only: true })
            && matches!(statements.sql.last(), Some(Sql::Dynamic))
        {
            self.observe_made(expr);
        }
    }

    /// `recv.prepare(sql)` of dynamic `sql`, its statement handed through the runtime's
    /// `made_statement`: where `sql` was not text (a generic `impl Into<String>`, a query
    /// type `prepare` converts), the statement is observed by the SQL it holds
    /// (`Retrying::observe_made`), as one made out of sight is where it runs, instead of
    /// counting as a write. A call of the expansion's own, which
    /// [`made_in_sight`](Self::made_in_sight) sees through. The observation is a closure
    /// handed the statement, not a `match` on it: a `prepare` of the user's whose output
    /// type is inferred from where it goes (`takes(b.prepare(q))`) has it known by the
    /// time the closure's dispatch is resolved.
    fn observe_made(&mut self, expr: &mut Expr) {
        let private = &self.names.private;
        let span = expr.span();
        let statement = Ident::new("__d1_retry_statement", Span::mixed_site());
        let by = Ident::new("__d1_retry_by", Span::mixed_site());
        let site = quote_spanned!(span=> (&&#private::Receiver::of(#statement)).d1_retry_site());
        // The record or the name the observation goes to is handed in, not captured, so
        // that the closure is a `fn` pointer and `made_statement` one function per
        // statement type rather than one per site.
        let (observe, context) = if self.beyond_attempt {
            let operation = &self.names.operation;
            let observe = quote_spanned!(span=> #site.observe_made_unborrowed(#statement, #by));
            (observe, operation.to_token_stream())
        } else {
            let attempt = &self.names.attempt;
            let observe = quote_spanned!(span=> #site.observe_made(#by, #statement));
            (observe, attempt.to_token_stream())
        };
        self.observes_held = true;
        // Built as syntax, not parsed from tokens: the statement's expression keeps the
        // expansion's own `Verbatim` parts, which `made_in_sight` reads.
        let func: Expr = syn::parse_quote_spanned!(span=> #private::made_statement);
        let mut args = Punctuated::new();
        args.push(expr.clone());
        args.push(Expr::Verbatim(context));
        args.push(Expr::Verbatim(
            quote_spanned!(span=> |#statement, #by| #observe),
        ));
        *expr = Expr::Call(syn::ExprCall {
            attrs: Vec::new(),
            func: Box::new(func),
            paren_token: syn::token::Paren(span),
            args,
        });
    }

    /// The observation of `receiver`'s statement, by a call (`calls::Run`, `.await`) or lent
    /// ([`Observed`]): by the attempt's record, or, `unborrowed`, by the thread's count of
    /// writes (in an `async` block or a closure, see [`observe_access`](Self::observe_access)).
    /// Nothing on a receiver that is not D1's (`Plain`).
    fn observation(
        &self,
        receiver: &TokenStream,
        observed: Observed<'_>,
        span: Span,
        unborrowed: bool,
    ) -> TokenStream {
        let private = &self.names.private;
        let site = quote_spanned!(span=> (&&#private::Receiver::of(&#receiver)).d1_retry_site());
        let operation = &self.names.operation;
        let attempt = &self.names.attempt;
        match (observed, unborrowed) {
            (Observed::Call(own), true) => {
                quote_spanned!(span=> #site.observe_unborrowed(&#receiver, #own, #operation))
            }
            (Observed::Call(own), false) => {
                quote_spanned!(span=> #site.observe(#attempt, &#receiver, #own))
            }
            (Observed::Lent, true) => {
                quote_spanned!(span=> #site.observe_lent_unborrowed(&#receiver, #operation))
            }
            (Observed::Lent, false) => {
                quote_spanned!(span=> #site.observe_lent(#attempt, &#receiver))
            }
        }
    }

    /// In a `read_only` body, `recv.exec(sql)` and `recv.batch(list)` too: on D1's own
    /// database they run what they are handed, judged where it is written; on any other
    /// receiver, or one that cannot be probed where it stands (`archivers[i]`, a macro's
    /// value), they may write whatever they are handed, and count as a write.
    ///
    /// In a `read_only` body, `recv.prepare(sql)` with `sql` judged where it is written
    /// ([`whole_body_sql`](Self::whole_body_sql)): that vouches for the statement only if
    /// `recv` is D1's database or session (a `D1Prepare`). Any other `prepare` (a builder of
    /// the user's that wraps the text it is handed in an `INSERT`, a wrapper's) may make a
    /// statement that writes from a text that reads, so the attempt is told of it as a
    /// statement out of sight: a write, and the body is not run again. Its receiver's type
    /// is probed where the call stands, before it runs, as per-call mode probes it
    /// ([`Finder::database_check`]): a variable or a field of one borrowed, any other place
    /// inside a closure that is never called, a value moved through a `match` on its way
    /// to the call. A receiver that can be neither (a macro, a place reached through a
    /// call) leaves the statement out of sight ([`made_in_sight`](Self::made_in_sight)),
    /// read where it runs. On D1's own `prepare` the probe is a constant read-only access,
    /// and the observation nothing.
    pub(super) fn observe_prepare(&self, expr: &mut Expr) -> bool {
        if let Expr::Call(_) = expr {
            return self.observe_prepare_by_path(expr);
        }
        let Expr::MethodCall(call) = expr else {
            return false;
        };
        let runs = call.method == "exec" || call.method == "batch";
        if !self.observing() || !(call.method == "prepare" || runs) || call.args.len() != 1 {
            return false;
        }
        let private = &self.names.private;
        let span = call.receiver.span();
        let probe = |receiver: TokenStream| {
            let access = quote_spanned! {span=>
                {
                    #[allow(unused_imports)]
                    use #private::{ViaD1Prepare as _, ViaOtherPrepare as _};
                    (&&#receiver).d1_retry_prepare()
                }
            };
            self.observe_access(access, span)
        };
        match Database::of(strip_parens(&call.receiver)) {
            Database::Place { borrowed, variable } => {
                let receiver = if variable {
                    quote_spanned!(span=> #private::Receiver::of(#borrowed))
                } else {
                    quote_spanned!(span=> #private::probed(|| #private::Receiver::of(#borrowed)))
                };
                let observe = probe(receiver);
                *expr = observed_first(observe, expr.clone());
                true
            }
            Database::Value => {
                let value = Ident::new("__d1_retry_database", Span::mixed_site());
                let observe = probe(quote_spanned!(span=> #private::Receiver::of(&#value)));
                let receiver = scrutinee(&call.receiver);
                *call.receiver = Expr::Verbatim(quote_spanned! {span=>
                    (match #receiver {
                        #value => (#observe, #value).1
                    })
                });
                true
            }
            // A statement `prepare` makes is read where it runs; an `exec` or a `batch` runs
            // at once, and one that is not D1's may write whatever it is handed (`archiver.exec(
            // "SELECT ..")` that copies the rows it selects).
            Database::Unseen if runs => {
                let observe =
                    self.observe_access(quote_spanned!(span=> #private::Access::Unseen), span);
                *expr = observed_first(observe, expr.clone());
                true
            }
            Database::Unseen => false,
        }
    }

    /// [`observe_prepare`](Self::observe_prepare) of `D1Database::prepare(&db, sql)` or
    /// `D1Database::exec(&db, sql)`: the path names a type `D1Database` (or
    /// `D1DatabaseSession`), which may be a type of the user's by that name, so that type
    /// itself is probed (`Receiver::named`), whatever the first argument is (`&Arc<_>`,
    /// `&mut`, which the call derefs or reborrows): nothing is moved or evaluated twice.
    /// An `exec` by any other path (an alias, a renamed import, a trait's) may be anyone's,
    /// and its text is not judged: a statement out of sight, a write.
    fn observe_prepare_by_path(&self, expr: &mut Expr) -> bool {
        let Expr::Call(call) = expr else {
            return false;
        };
        if !self.observing() || call.args.len() != 2 {
            return false;
        }
        let private = &self.names.private;
        let span = call.func.span();
        let runs = |method: &str| {
            matches!(&*call.func, Expr::Path(path)
                if path.path.segments.len() >= 2
                    && path.path.segments.last().is_some_and(|last| last.ident == method))
        };
        let access = if ["prepare", "exec", "batch"]
            .iter()
            .any(|method| is_d1_path(&call.func, method))
        {
            let Some(named) = path_type(&call.func) else {
                return false;
            };
            quote_spanned! {span=>
                {
                    #[allow(unused_imports)]
                    use #private::{ViaD1Prepare as _, ViaOtherPrepare as _};
                    (&&#private::Receiver::<#named>::named()).d1_retry_prepare()
                }
            }
        } else if runs("exec") || runs("batch") {
            quote_spanned!(span=> #private::Access::Unseen)
        } else {
            return false;
        };
        let observe = self.observe_access(access, span);
        *expr = observed_first(observe, expr.clone());
        true
    }

    /// In a `read_only` body, `base.await` on what may be a statement made out of sight (a
    /// field's clone, a helper's statement, a parameter): awaiting a D1 statement runs it,
    /// so it is observed as its `.await` begins, as an execution is ([`observed`](Self::observed)).
    /// Anything else that is awaited (a future, another function's call) is not D1's
    /// statement, and its observation is nothing (`Plain`); an execution's own future was
    /// observed where it was made ([`awaits_pending`](Self::awaits_pending)). The value is
    /// moved through a `match` to its `.await`, which takes it by value anyway; the
    /// scrutinee's temporaries live to the end of the statement, as the `.await`'s did.
    pub(super) fn observed_await(&mut self, base: &Expr) -> Option<TokenStream> {
        if !self.observing() || self.made_in_sight(base) || self.awaits_pending(base) {
            return None;
        }
        match strip_parens(base) {
            // A `Verbatim` was rewritten here already (an observed `into_future()`). A block
            // or a macro is observed as any other value: what it gives may be a statement
            // (`{ stmt.clone() }.await`, `stmt_of!(db, sql).await`).
            Expr::Async(_) | Expr::Closure(_) | Expr::Verbatim(_) => return None,
            // `D1PreparedStatement::run(&stmt).await`: its statement was observed as the
            // call began (`observe_path_call`).
            Expr::Call(call) if execution_path(&call.func).is_some() => return None,
            _ => {}
        }
        let handed = self.handed_over(base);
        let span = base.span();
        Some(quote_spanned!(span=> (#handed).await))
    }

    /// `value` moved through an observation of it as a statement that is run where it
    /// goes: awaited ([`observed_await`](Self::observed_await)), or handed by value to
    /// what may await it (an element of `join!`, a clone handed to a function:
    /// [`observed_hand_over`](Self::observed_hand_over)). Nothing is observed of a value
    /// that is not D1's statement.
    fn handed_over(&mut self, value: &Expr) -> TokenStream {
        // A block's value is observed where the block gives it, so that no block is a
        // `match`'s scrutinee, which clippy would lay at the user's door. (An `if`, a
        // `match` or a `loop` is observed whole here: awaited, or handed to `join!`, it has
        // one type. Handed to a call, its copies are observed branch by branch:
        // `hand_over_copies`.)
        if matches!(strip_parens(value), Expr::Block(block) if gives_in_place(block)) {
            let mut value = value.clone();
            self.hand_over_in_place(&mut value);
            return value.into_token_stream();
        }
        let span = value.span();
        let recv = Ident::new(HANDED_OVER, Span::mixed_site());
        let observe = self.observed_as_awaited(&recv.to_token_stream(), span);
        // A labelled block gives its value by `break` too: it is bound whole (its own
        // temporaries end with it), not a `match`'s scrutinee.
        if matches!(strip_parens(value), Expr::Block(block) if block.label.is_some()) {
            return quote_spanned! {span=>
                {
                    let #recv = #value;
                    (#observe, #recv).1
                }
            };
        }
        let value = scrutinee(value);
        quote_spanned! {span=>
            match #value {
                #recv => (#observe, #recv).1
            }
        }
    }

    /// [`handed_over`](Self::handed_over) of `value`, a block's value observed where the block
    /// gives it, the block kept as syntax (a block handed back as tokens would be one inside
    /// an invisible group, which rustc's `unused_braces` lays at the user's door).
    fn hand_over_in_place(&mut self, value: &mut Expr) {
        if diverges(value) {
            return;
        }
        match strip_parens_mut(value) {
            Expr::Block(block) if gives_in_place(block) => {
                self.hand_over_tail(&mut block.block);
            }
            value => *value = Expr::Verbatim(self.handed_over(value)),
        }
    }

    /// [`hand_over_in_place`](Self::hand_over_in_place) of the value `block` gives.
    fn hand_over_tail(&mut self, block: &mut syn::Block) {
        if block_diverges(block) {
            return;
        }
        if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
            self.hand_over_in_place(tail);
        }
    }

    /// [`observed_hand_over`](Self::observed_hand_over) of a block, an `if`, a `match` or a
    /// `loop` handed to a call that gives a copy in a branch or a `break` at least
    /// ([`branches_give`]): each copy observed where its branch gives it, with the copies
    /// the branch's own `let`s and patterns bind (`copies`), the other branches left as
    /// written. The call's parameter type still reaches each branch: two types it coerces
    /// to one (`Box<dyn Display>`), or a value whose type it decides (`x.into()`), which an
    /// observation of the whole value, or of that branch, would need known first.
    fn hand_over_copies(&mut self, value: &mut Expr, copies: &HashSet<String>) {
        match strip_parens_mut(value) {
            Expr::Block(block) => {
                if let Some(label) = block.label.as_ref().map(|label| label.name.ident.clone()) {
                    self.hand_over_breaks(&mut block.block, Some(label), false, copies);
                }
                self.hand_over_copies_in_tail(&mut block.block, copies);
            }
            Expr::If(branch) => {
                let mut bound = copies.clone();
                bind_lets(&mut bound, &branch.cond);
                self.hand_over_copies_in_tail(&mut branch.then_branch, &bound);
                if let Some((_, otherwise)) = &mut branch.else_branch {
                    self.hand_over_copies(otherwise, copies);
                }
            }
            Expr::Match(choice) => {
                for arm in &mut choice.arms {
                    let mut bound = copies.clone();
                    bind_copies(&mut bound, &arm.pat, Some(&choice.expr));
                    self.hand_over_copies(&mut arm.body, &bound);
                }
            }
            Expr::Loop(looped) => {
                let label = looped.label.as_ref().map(|label| label.name.ident.clone());
                self.hand_over_breaks(&mut looped.body, label, true, copies);
            }
            value => {
                if hands_a_statement_on(value, copies) {
                    *value = Expr::Verbatim(self.handed_over(value));
                }
            }
        }
    }

    /// [`hand_over_copies`](Self::hand_over_copies) of the value `block` gives, with the
    /// copies its `let`s bind.
    fn hand_over_copies_in_tail(&mut self, block: &mut syn::Block, copies: &HashSet<String>) {
        let inner = copies_in(block, copies);
        if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
            self.hand_over_copies(tail, &inner);
        }
    }

    /// Each copy a `break` gives the loop or the labelled block whose body is `body`
    /// ([`BreaksHandedOver`]), handed over as [`hand_over_copies`](Self::hand_over_copies)
    /// hands it.
    fn hand_over_breaks(
        &mut self,
        body: &mut syn::Block,
        label: Option<Ident>,
        unlabelled: bool,
        copies: &HashSet<String>,
    ) {
        let mut breaks = BreaksHandedOver {
            finder: self,
            label,
            unlabelled,
            copies: copies.clone(),
        };
        breaks.visit_block_mut(body);
    }

    /// In a `read_only` body, a value handed on to what may run it as a statement, out of
    /// sight: an element of `join!` or `try_join!`, which await each element, and a
    /// statement's clone handed to a function or a method (`timeout(d, stmt.clone())`,
    /// `tasks.push(stmt.clone())`). A statement is observed as it is handed over, as if it
    /// ran there; other values are not. Only a copy ([`hands_a_statement_on`], a name bound
    /// to one, and each such element of an array or `vec!` handed on) is taken from a
    /// call's arguments: any other name handed on may be a `&mut` the call reborrows, which
    /// a move through a `match` would not, and any other value's type may be inferred from
    /// the call, which the observation's dispatch needs known first.
    pub(super) fn observed_hand_over(&mut self, value: &mut Expr, any_value: bool) {
        if !self.observing() || self.made_in_sight(value) || self.awaits_pending(value) {
            return;
        }
        match strip_parens(value) {
            // Its branches observed where each gives a copy, each keeping its own type.
            Expr::Block(_) | Expr::If(_) | Expr::Match(_) | Expr::Loop(_)
                if !any_value && hands_a_statement_on(value, &self.copies) =>
            {
                let copies = self.copies.clone();
                self.hand_over_copies(value, &copies);
                return;
            }
            // A name bound to a copy is owned (or a shared reference), and moved as it
            // would be by the call.
            _ if hands_a_statement_on(value, &self.copies) => {}
            // A copy lent (`audit(&copy)`): the borrow is moved, a shared reference of a
            // type known where it stands.
            Expr::Reference(lent)
                if lent.mutability.is_none() && hands_a_statement_on(&lent.expr, &self.copies) => {}
            // A place reached from `self` or a parameter, lent (`audit(&self.insert)`).
            Expr::Reference(lent)
                if lent.mutability.is_none() && self.reached_from_a_root(&lent.expr) =>
            {
                let span = value.span();
                let observe = self.lent_observation(&lent.expr.to_token_stream(), span);
                let lent = value.clone();
                *value = Expr::Verbatim(quote_spanned!(span=> (#observe, #lent).1));
                return;
            }
            Expr::Async(_)
            | Expr::Block(_)
            | Expr::Macro(_)
            | Expr::Closure(_)
            | Expr::Verbatim(_)
            | Expr::Reference(_)
            | Expr::Lit(_) => return,
            // A list of copies handed on: each element is one (`join_all(vec![s.clone()])`);
            // so is each part of a tuple or a struct written out (`run((s.clone(), id))`).
            Expr::Array(_) | Expr::Tuple(_) | Expr::Struct(_) if !any_value => {
                match strip_parens_mut(value) {
                    Expr::Array(array) => array.elems.iter_mut().for_each(|element| {
                        self.observed_hand_over(element, false);
                    }),
                    Expr::Tuple(tuple) => tuple.elems.iter_mut().for_each(|element| {
                        self.observed_hand_over(element, false);
                    }),
                    Expr::Struct(built) => built.fields.iter_mut().for_each(|field| {
                        self.observed_hand_over(&mut field.expr, false);
                    }),
                    _ => {}
                }
                return;
            }
            _ if any_value => {}
            _ => return,
        }
        *value = Expr::Verbatim(self.handed_over(value));
    }

    /// In a `read_only` body, a statement's copy that is the receiver of a method other
    /// than D1's and those that make or pass on a copy ([`PASSES_A_COPY`]):
    /// `stmt.clone().timed()`, `copy.send_to(&queue)`. A method of the user's may run it out
    /// of sight, so it is observed as the call begins, as a copy handed to a function is
    /// ([`observed_hand_over`](Self::observed_hand_over)). A name or its field is observed
    /// in place and left there (the method may borrow it); any other copy is a value,
    /// moved through the observation to the method, which takes it by value or borrows the
    /// temporary.
    pub(super) fn observed_receiver(&mut self, call: &ExprMethodCall) -> Option<TokenStream> {
        let method = call.method.to_string();
        if !self.observing()
            || PASSES_A_COPY.contains(&method.as_str())
            || EXECUTIONS.contains(&method.as_str())
            || self.made_in_sight(&call.receiver)
        {
            return None;
        }
        let receiver = strip_parens(&call.receiver);
        let span = call.method.span();
        let copy = hands_a_statement_on(receiver, &self.copies);
        let observe = if copy && !is_place(receiver) {
            let handed = self.handed_over(receiver);
            let mut call = call.clone();
            call.receiver = Box::new(Expr::Verbatim(quote!((#handed))));
            return Some(call.into_token_stream());
        } else if copy {
            self.observed_as_awaited(&receiver.to_token_stream(), span)
        } else if is_place(receiver) && self.reached_from_a_root(receiver) {
            // A place reached from `self` or a parameter (`self.insert.timed()`).
            self.lent_observation(&receiver.to_token_stream(), span)
        } else {
            return None;
        };
        let private = &self.names.private;
        Some(quote_spanned!(call.span()=> #private::observed_then(#observe, #call)))
    }

    /// The observation of `place`, reached from `self` or a parameter ([`reached_from_a_root`](Self::reached_from_a_root)),
    /// lent to code of the user's that may run it: a statement of D1's there is observed as
    /// one awaited is, nothing else (`Retrying::observe_lent`: a database of the user's
    /// marked `D1Receiver` is not taken for a statement). Its type is declared, so the
    /// observation needs nothing inferred.
    fn lent_observation(&mut self, place: &TokenStream, span: Span) -> TokenStream {
        self.observes_held = true;
        self.observation(place, Observed::Lent, span, self.beyond_attempt)
    }

    /// Whether `expr` is `self`, a parameter not bound again where the walk stands
    /// ([`Finder::roots`]), or a field of one, at any depth.
    fn reached_from_a_root(&self, expr: &Expr) -> bool {
        match strip_parens(expr) {
            Expr::Path(path) => {
                path.qself.is_none()
                    && path
                        .path
                        .get_ident()
                        .is_some_and(|ident| self.roots.contains(&name(ident)))
            }
            Expr::Field(field) => self.reached_from_a_root(&field.base),
            _ => false,
        }
    }

    /// The observation of `receiver` as a statement awaited where it goes
    /// ([`observation`](Self::observation) by `.await`), what a statement handed on is.
    fn observed_as_awaited(&mut self, receiver: &TokenStream, span: Span) -> TokenStream {
        self.observes_held = true;
        let own = own_call(&self.names.private, ".await", span);
        self.observation(receiver, Observed::Call(&own), span, self.beyond_attempt)
    }

    /// In a `read_only` body, an execution called by its path (`D1PreparedStatement::run(
    /// &stmt)`, `<D1PreparedStatement>::first(&stmt, None)`): its first argument, the
    /// statement, is observed as the call begins, as a method call's receiver is
    /// ([`observed`](Self::observed)), moved through a `match` on its way to the call.
    /// Nothing on an argument that is not D1's statement (`Iterator::all(it, f)`).
    pub(super) fn observe_path_call(&mut self, expr: &mut Expr) {
        let Expr::Call(call) = expr else {
            return;
        };
        if !self.observing() {
            return;
        }
        let Some(method) = execution_path(&call.func) else {
            return;
        };
        let private = &self.names.private;
        if method == "batch" {
            // `D1Database::batch(&db, list)`: the list, as `observe_list` observes a method
            // call's.
            if let Some(list) = call.args.iter_mut().nth(1) {
                self.observe_list_argument(list);
            }
            return;
        }
        let Some(statement) = call.args.first_mut() else {
            return;
        };
        self.observes_held = true;
        let span = statement.span();
        let own = own_call(private, &method, span);
        let recv = Ident::new(HANDED_OVER, Span::mixed_site());
        let observe = self.observation(
            &recv.to_token_stream(),
            Observed::Call(&own),
            span,
            self.beyond_attempt,
        );
        let value = scrutinee(statement);
        *statement = Expr::Verbatim(quote_spanned! {span=>
            match #value {
                #recv => (#observe, #recv).1
            }
        });
        // D1's own function, reached with a statement of a type not marked D1's (a newtype
        // or a `Pin<Box<_>>` coerced by `Deref`): judged by its output, a write.
        let whole = expr.span();
        *expr = Expr::Verbatim(self.judged_output(expr.to_token_stream(), whole));
    }

    /// In a `read_only` body, an execution's path handed on as a function
    /// (`stmts.iter().map(D1PreparedStatement::run)`): a closure that makes the same call
    /// after observing its statement, by the thread's count of writes, which borrows
    /// nothing, so that the closure captures nothing and is still a `fn` pointer where one
    /// is needed. The call is made first, which only builds its future and fixes the
    /// statement's type for the observation; nothing runs before the future is polled.
    pub(super) fn observed_path(&mut self, expr: &Expr) -> Option<TokenStream> {
        if !self.observing() {
            return None;
        }
        let method = execution_path(expr).filter(|method| method != "batch")?;
        // The closure's parameters must be the function's: only D1's own statement type's
        // executions are known to take the statement and (`first`) a column. Any other
        // type's function of such a name (`Iterator::all`, a module's `run`) is left as
        // written, a function the attempt cannot see into, as a helper is.
        let Expr::Path(path) = expr else {
            return None;
        };
        let statement_type = match &path.qself {
            Some(qself) => matches!(&*qself.ty, syn::Type::Path(ty)
                if ty.path.segments.last().is_some_and(|s| s.ident == "D1PreparedStatement")),
            None => {
                let segments = &path.path.segments;
                segments.len() >= 2 && segments[segments.len() - 2].ident == "D1PreparedStatement"
            }
        };
        if !statement_type {
            // Another type's function of such a name may be D1's own under another name
            // (`type Stmt = D1PreparedStatement;`, `IntoFuture::into_future`): a statement
            // out of sight, a write, as the enclosing statement begins.
            let private = &self.names.private;
            let span = expr.span();
            let observe =
                self.observe_access(quote_spanned!(span=> #private::Access::Unseen), span);
            self.ahead.push(observe);
            return None;
        }
        self.observes_held = true;
        let private = &self.names.private;
        let span = expr.span();
        let own = own_call(private, &method, span);
        let statement = Ident::new("__d1_retry_statement", Span::mixed_site());
        let future = Ident::new("__d1_retry_future", Span::mixed_site());
        let observe = self.observation(
            &statement.to_token_stream(),
            Observed::Call(&own),
            span,
            true,
        );
        let (params, args) = if method == "first" {
            let column = Ident::new("__d1_retry_column", Span::mixed_site());
            (quote!(#statement, #column), quote!(#statement, #column))
        } else {
            (quote!(#statement), quote!(#statement))
        };
        // A type of the user's named `D1PreparedStatement` is no D1 receiver: its call's
        // output is judged, as a method's on such a receiver is (`judged_output`), in the
        // closure, which must not borrow the attempt.
        let outer = core::mem::replace(&mut self.beyond_attempt, true);
        let call = self.judged_output(
            quote_spanned! {span=>
                {
                    let #future = #expr(#args);
                    #observe;
                    #future
                }
            },
            span,
        );
        self.beyond_attempt = outer;
        Some(quote_spanned!(span=> |#params| #call))
    }
    /// The value of an [`observed_first`] tuple, whose observation is tokens the expansion
    /// made: `Expr::Verbatim`, or, once a macro's arguments were rewritten and read again
    /// (`vec![..]`), a call of the attempt's `observe_held` or of `record_held`, names the
    /// user's code cannot write (the attempt's is mixed-site).
    fn observed_value<'e>(&self, field: &'e syn::ExprField) -> Option<&'e Expr> {
        let Expr::Tuple(tuple) = &*field.base else {
            return None;
        };
        let syn::Member::Unnamed(index) = &field.member else {
            return None;
        };
        if index.index != 1 || tuple.elems.len() != 2 {
            return None;
        }
        let observation = match tuple.elems.first()? {
            Expr::Verbatim(_) => true,
            Expr::MethodCall(call) => {
                call.method == "observe_held"
                    && matches!(&*call.receiver, Expr::Path(path)
                        if path.path.is_ident(&self.names.attempt))
            }
            Expr::Call(call) => matches!(&*call.func, Expr::Path(path)
                if path.path.segments.last().is_some_and(|s| s.ident == "record_held")),
            _ => false,
        };
        observation.then(|| tuple.elems.last()).flatten()
    }
}

/// What an observation tells the attempt of a statement ([`Finder::observation`]).
#[derive(Clone, Copy)]
enum Observed<'t> {
    /// That a call of D1's (`calls::Run`, `.await`) runs it, if it is the receiver's own.
    Call(&'t TokenStream),
    /// That it is lent to code of the user's that may run it: counted on D1's statement alone.
    Lent,
}

/// Methods that make a statement's copy, bind it, or pass a copy on through a `Result`,
/// and run nothing: the forms [`hands_a_statement_on`] follows, and `prepare` and
/// `into_future`, which the walk reads on their own. Any other method on a copy may run it
/// ([`Finder::observed_receiver`]).
const PASSES_A_COPY: [&str; 22] = [
    "clone",
    "cloned",
    "to_owned",
    "to_vec",
    "into_iter",
    "next",
    "next_back",
    "last",
    "pop",
    "take",
    "nth",
    "remove",
    "swap_remove",
    "bind",
    "bind_refs",
    "unwrap",
    "expect",
    "map_err",
    "context",
    "with_context",
    "prepare",
    "into_future",
];

/// Whether `value`, handed to a function or a method, is a statement's copy or a statement
/// bound there: `.clone()`, `.cloned()`, `.to_owned()`, `Clone::clone(..)`, `.bind(..)` and
/// `.bind_refs(..)` through `?`, `.unwrap()`, `.expect(..)`, `.map_err(..)`, `.context(..)`
/// or `.with_context(..)` (a `Result`, whose type is known there), any of these, an item
/// taken out of one (`.to_vec()`, `.iter().cloned()`, `.into_iter()`, then `.next()`,
/// `.pop()`, ..), a name
/// bound to one or to a value built of them (`copies`), a field of such a name (`pair.0`) or
/// of a tuple or a struct written out there (`(s.clone(), &mut out).0`),
/// or a block, an `if`, a `match` or a `loop` giving one in a branch or a `break`
/// ([`branches_give`]).
/// Each has a type of its own, known without the call it is handed to, so moving it
/// through an observation neither changes what the call is given nor needs the call to
/// infer it (a `bind` of the user's generic in its output would).
fn hands_a_statement_on(value: &Expr, copies: &HashSet<String>) -> bool {
    let on = |value: &Expr| hands_a_statement_on(value, copies);
    let through = |value: &Expr| on(value) || is_bind(value);
    match strip_parens(value) {
        Expr::MethodCall(call) => match call.method.to_string().as_str() {
            "clone" | "cloned" | "to_owned" | "to_vec" => call.args.is_empty(),
            "unwrap" => call.args.is_empty() && through(&call.receiver),
            // An item taken out of a copy, a list's or an iterator's of copies
            // (`list.iter().cloned().next()`, `list.to_vec().pop()`).
            "into_iter" | "next" | "next_back" | "last" | "pop" | "take" => {
                call.args.is_empty() && on(&call.receiver)
            }
            "nth" | "remove" | "swap_remove" => call.args.len() == 1 && on(&call.receiver),
            "expect" | "map_err" | "context" | "with_context" => {
                call.args.len() == 1 && through(&call.receiver)
            }
            _ => false,
        },
        Expr::Call(call) => {
            call.args.len() == 1
                && matches!(&*call.func, Expr::Path(path)
                    if path.path.segments.last().is_some_and(|s| s.ident == "clone" || s.ident == "to_owned"))
        }
        Expr::Path(path) => {
            path.qself.is_none()
                && path
                    .path
                    .get_ident()
                    .is_some_and(|ident| copies.contains(&name(ident)))
        }
        Expr::Try(tried) => through(&tried.expr),
        Expr::Verbatim(tokens) => handed_over_value(tokens).is_some_and(|value| on(&value)),
        // A part of a name bound to a value built of copies (`pair.0`, `holder.stmt`),
        // moved out of it as the call would move it.
        Expr::Field(field) => match (strip_parens(&field.base), &field.member) {
            (Expr::Path(_) | Expr::Field(_), _) => on(&field.base),
            // A part of a tuple or a struct written out there (`(s.clone(), 1).0`), moved out
            // of it alone: the others are dropped where they stand.
            (Expr::Tuple(tuple), syn::Member::Unnamed(index)) => {
                tuple.elems.iter().nth(index.index as usize).is_some_and(on)
            }
            (Expr::Struct(built), member) => written_field(built, member).is_some_and(on),
            _ => false,
        },
        branches => branches_give(branches, copies, hands_a_statement_on).unwrap_or(false),
    }
}

/// For a block, an `if`, a `match` or a `loop`, whether what it gives may be what `gives`
/// takes: a block's value, a branch's, or a value a `break` gives a loop or a labelled block,
/// one of them at least. Its branches and breaks give one type, so where one gives a copy the
/// value is a statement owned as the copy is, whatever the others give: a statement made out
/// of sight, or nothing where a branch leaves in a way not read as leaving (`loop {}`,
/// `std::process::exit`). `None` for any other expression.
fn branches_give(
    value: &Expr,
    copies: &HashSet<String>,
    gives: fn(&Expr, &HashSet<String>) -> bool,
) -> Option<bool> {
    Some(match strip_parens(value) {
        Expr::Block(block) => {
            block_gives(&block.block, copies, gives)
                || block.label.as_ref().is_some_and(|label| {
                    breaks_give(&block.block, Some(&label.name.ident), false, copies, gives)
                })
        }
        Expr::If(branch) => {
            let Some((_, otherwise)) = &branch.else_branch else {
                return Some(false);
            };
            // The then-block with the names its condition's `let`s bind.
            let mut bound = copies.clone();
            bind_lets(&mut bound, &branch.cond);
            block_gives(&branch.then_branch, &bound, gives) || gives(otherwise, copies)
        }
        Expr::Match(choice) => choice
            .arms
            .iter()
            .any(|arm| arm_gives(arm, &choice.expr, copies, gives)),
        Expr::Loop(looped) => {
            let label = looped.label.as_ref().map(|label| &label.name.ident);
            breaks_give(&looped.body, label, true, copies, gives)
        }
        _ => return None,
    })
}

/// Whether a `match` arm's value is one `gives` takes, with the names its pattern binds.
fn arm_gives(
    arm: &syn::Arm,
    scrutinee: &Expr,
    copies: &HashSet<String>,
    gives: fn(&Expr, &HashSet<String>) -> bool,
) -> bool {
    let mut bound = copies.clone();
    bind_copies(&mut bound, &arm.pat, Some(scrutinee));
    gives(&arm.body, &bound)
}

/// Whether a `break` that leaves `body`, a loop's or a labelled block's, gives a value
/// `gives` takes: `break 'label value`, and for a loop (`unlabelled`) `break value` outside
/// the loops within it, with the copies the `let`s and arms before it bind.
fn breaks_give(
    body: &syn::Block,
    label: Option<&Ident>,
    unlabelled: bool,
    copies: &HashSet<String>,
    gives: fn(&Expr, &HashSet<String>) -> bool,
) -> bool {
    let mut breaks = BreakValues {
        label,
        unlabelled,
        copies: copies.clone(),
        gives,
        found: false,
    };
    syn::visit::Visit::visit_block(&mut breaks, body);
    breaks.found
}

/// [`breaks_give`]'s walk. It does not enter closures, `async` blocks or items, whose
/// `break` cannot leave the body.
struct BreakValues<'l> {
    label: Option<&'l Ident>,
    unlabelled: bool,
    copies: HashSet<String>,
    gives: fn(&Expr, &HashSet<String>) -> bool,
    found: bool,
}

impl<'a> syn::visit::Visit<'a> for BreakValues<'_> {
    fn visit_block(&mut self, block: &'a syn::Block) {
        let outer = self.copies.clone();
        for stmt in &block.stmts {
            self.visit_stmt(stmt);
            bind_statement(&mut self.copies, stmt);
        }
        self.copies = outer;
    }

    fn visit_arm(&mut self, arm: &'a syn::Arm) {
        // The scrutinee is not at hand here: the names the pattern binds are no copies.
        let outer = self.copies.clone();
        bind_copies(&mut self.copies, &arm.pat, None);
        syn::visit::visit_arm(self, arm);
        self.copies = outer;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Break(leave) => {
                if leaves(leave, self.label, self.unlabelled)
                    && let Some(value) = &leave.expr
                {
                    self.found |= (self.gives)(value, &self.copies);
                }
                syn::visit::visit_expr_break(self, leave);
            }
            Expr::Loop(_) | Expr::While(_) | Expr::ForLoop(_) => {
                let unlabelled = std::mem::replace(&mut self.unlabelled, false);
                syn::visit::visit_expr(self, expr);
                self.unlabelled = unlabelled;
            }
            Expr::Closure(_) | Expr::Async(_) => {}
            _ => syn::visit::visit_expr(self, expr),
        }
    }

    fn visit_item(&mut self, _: &'a syn::Item) {}
}

/// The names the `let`s of an `if`'s condition bind (`if let P = v && let Q = w`), as
/// [`bind_copies`] binds them.
fn bind_lets(copies: &mut HashSet<String>, cond: &Expr) {
    match strip_parens(cond) {
        Expr::Let(bound) => bind_copies(copies, &bound.pat, Some(&bound.expr)),
        Expr::Binary(both) if matches!(both.op, syn::BinOp::And(_)) => {
            bind_lets(copies, &both.left);
            bind_lets(copies, &both.right);
        }
        _ => {}
    }
}

/// Whether a `select!` (tokio's or futures') may run a statement out of sight, since its
/// tokens are not rewritten: a branch's future that may be one ([`may_be_a_statement`]),
/// which `select!` awaits, an expression of it that may run one ([`may_run_a_statement`]),
/// or branches that do not read as `pattern = future[, if condition] => handler`.
fn selects_a_statement(mac: &Macro, copies: &HashSet<String>, called: &HashSet<String>) -> bool {
    if macro_name(mac).as_deref() != Some("select") {
        return false;
    }
    // Each branch's future, then every expression the macro holds (conditions, handlers).
    let futures = |input: syn::parse::ParseStream<'_>| -> syn::Result<(Vec<Expr>, Vec<Expr>)> {
        let mut futures = Vec::new();
        let mut written = Vec::new();
        let biased = input
            .fork()
            .parse::<Ident>()
            .is_ok_and(|word| word == "biased");
        if biased {
            input.parse::<Ident>()?;
            input.parse::<Token![;]>()?;
        }
        while !input.is_empty() {
            // `else => ..` (tokio), `complete => ..` and `default => ..` (futures).
            if input.peek(Token![else]) || input.peek(syn::Ident) && input.peek2(Token![=>]) {
                input.parse::<proc_macro2::TokenTree>()?;
            } else {
                Pat::parse_multi_with_leading_vert(input)?;
                input.parse::<Token![=]>()?;
                futures.push(input.parse::<Expr>()?);
                if input.peek(Token![,]) {
                    input.parse::<Token![,]>()?;
                    input.parse::<Token![if]>()?;
                    written.push(input.parse::<Expr>()?);
                }
            }
            input.parse::<Token![=>]>()?;
            written.push(input.parse::<Expr>()?);
            input.parse::<Option<Token![,]>>()?;
        }
        Ok((futures, written))
    };
    let Ok((futures, written)) = futures.parse2(mac.tokens.clone()) else {
        return true;
    };
    futures
        .iter()
        .any(|future| may_be_a_statement(future, copies, called))
        || futures
            .iter()
            .chain(&written)
            .any(|expr| may_run_a_statement(expr, copies, called))
}

/// Whether `future`, awaited where the walk cannot observe it, may be a statement: a copy,
/// a name, a place, a block's or a macro's value; not a call of another function, a name
/// bound to one's value (`called`: `let deadline = sleep(d);`), an `async` block, a
/// closure or a borrow (`&mut sleep`), which no statement is awaited through.
fn may_be_a_statement(future: &Expr, copies: &HashSet<String>, called: &HashSet<String>) -> bool {
    match strip_parens(future) {
        Expr::Async(_) | Expr::Closure(_) | Expr::Reference(_) | Expr::Lit(_) => false,
        Expr::Path(path) if path.qself.is_none() => !path
            .path
            .get_ident()
            .is_some_and(|ident| called.contains(&name(ident))),
        Expr::Call(_) | Expr::MethodCall(_) => owned_copy(future, copies),
        _ => true,
    }
}

/// Whether `expr`, written where the walk does not rewrite it (a `select!`'s branches),
/// may run a statement there: an `.await` on what may be one ([`may_be_a_statement`]), or
/// a copy handed to a function or a method ([`hands_a_statement_on`]), at any depth.
fn may_run_a_statement(expr: &Expr, copies: &HashSet<String>, called: &HashSet<String>) -> bool {
    // The names are followed as the walk follows them, without scopes: a name bound in a
    // branch stays a copy after it, which can only count more as a write.
    struct Runs {
        copies: HashSet<String>,
        called: HashSet<String>,
        found: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Runs {
        fn visit_expr(&mut self, expr: &'a Expr) {
            let handed = |args: &Punctuated<Expr, Token![,]>| {
                args.iter().any(|arg| {
                    hands_a_statement_on(arg, &self.copies) || owned_copy(arg, &self.copies)
                })
            };
            self.found |= match expr {
                Expr::Await(awaited) => {
                    may_be_a_statement(&awaited.base, &self.copies, &self.called)
                }
                Expr::Call(call) => handed(&call.args),
                Expr::MethodCall(call) => handed(&call.args),
                _ => false,
            };
            syn::visit::visit_expr(self, expr);
        }

        fn visit_local(&mut self, local: &'a Local) {
            syn::visit::visit_local(self, local);
            bind_names(
                &mut self.copies,
                &mut self.called,
                &local.pat,
                local.init.as_ref().map(|init| &*init.expr),
            );
        }

        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut runs = Runs {
        copies: copies.clone(),
        called: called.clone(),
        found: false,
    };
    syn::visit::Visit::visit_expr(&mut runs, expr);
    runs.found
}

/// Takes every name in `tokens` out of `copies`.
fn forget_names_in(copies: &mut HashSet<String>, tokens: TokenStream) {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => {
                copies.remove(&name(&ident));
            }
            proc_macro2::TokenTree::Group(group) => forget_names_in(copies, group.stream()),
            _ => {}
        }
    }
}

/// `.bind(x)` or `.bind_refs(x)`: a statement bound, on whatever receiver.
fn is_bind(value: &Expr) -> bool {
    matches!(strip_parens(value), Expr::MethodCall(call)
        if (call.method == "bind" || call.method == "bind_refs") && call.args.len() == 1)
}

/// Whether evaluating `value` leaves where it stands, giving nothing: `return`, `break`,
/// `continue`, `Err(..)?`, std's panicking macros, or a block ending in one.
fn diverges(value: &Expr) -> bool {
    match strip_parens(value) {
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        Expr::Try(tried) => matches!(strip_parens(&tried.expr), Expr::Call(call)
            if matches!(&*call.func, Expr::Path(path) if path.path.is_ident("Err"))),
        Expr::Macro(mac) => is_panicking(&mac.mac),
        Expr::Block(block) => block.label.is_none() && block_diverges(&block.block),
        _ => false,
    }
}

/// Whether a block ends in what [`diverges`].
fn block_diverges(block: &syn::Block) -> bool {
    match block.stmts.last() {
        Some(syn::Stmt::Expr(last, _)) => diverges(last),
        Some(syn::Stmt::Macro(mac)) => is_panicking(&mac.mac),
        _ => false,
    }
}

fn is_panicking(mac: &Macro) -> bool {
    ["panic", "unreachable", "todo", "unimplemented"]
        .iter()
        .any(|name| mac.path.is_ident(name))
}

/// [`Finder::hand_over_breaks`]'s walk: the values a `break` gives the body it leaves (as
/// [`breaks_give`] reads them), each copy handed over where it is given, with the copies
/// bound before it. Not in closures, `async` blocks or items, whose `break` cannot leave.
struct BreaksHandedOver<'f, 'n> {
    finder: &'f mut Finder<'n>,
    label: Option<Ident>,
    unlabelled: bool,
    copies: HashSet<String>,
}

impl VisitMut for BreaksHandedOver<'_, '_> {
    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        let outer = self.copies.clone();
        for stmt in &mut block.stmts {
            self.visit_stmt_mut(stmt);
            bind_statement(&mut self.copies, stmt);
        }
        self.copies = outer;
    }

    fn visit_arm_mut(&mut self, arm: &mut syn::Arm) {
        let outer = self.copies.clone();
        bind_copies(&mut self.copies, &arm.pat, None);
        syn::visit_mut::visit_arm_mut(self, arm);
        self.copies = outer;
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Break(leave) if leaves(leave, self.label.as_ref(), self.unlabelled) => {
                if let Some(value) = &mut leave.expr {
                    let copies = self.copies.clone();
                    self.finder.hand_over_copies(value, &copies);
                }
            }
            Expr::Loop(_) | Expr::While(_) | Expr::ForLoop(_) => {
                let unlabelled = std::mem::replace(&mut self.unlabelled, false);
                syn::visit_mut::visit_expr_mut(self, expr);
                self.unlabelled = unlabelled;
            }
            Expr::Closure(_) | Expr::Async(_) => {}
            _ => syn::visit_mut::visit_expr_mut(self, expr),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Whether `leave` leaves the body of a loop or a block labelled `label`: by that label, or,
/// `unlabelled`, without one (a loop's, outside the loops within it).
fn leaves(leave: &syn::ExprBreak, label: Option<&Ident>, unlabelled: bool) -> bool {
    match &leave.label {
        Some(named) => label == Some(&named.ident),
        None => unlabelled,
    }
}

/// Whether `block` is unlabelled and has a value, which [`Finder::hand_over_in_place`]
/// observes where the block gives it (a labelled block gives by `break` too).
fn gives_in_place(block: &syn::ExprBlock) -> bool {
    block.label.is_none() && block.block.stmts.last().is_some_and(is_tail)
}

/// Whether `stmt` is a block's value: an expression without a semicolon.
fn is_tail(stmt: &syn::Stmt) -> bool {
    matches!(stmt, syn::Stmt::Expr(_, None))
}

/// Whether `value` is a copy it owns: a `.clone()`, `.cloned()`, `.to_owned()` or
/// `Clone::clone(..)`,
/// then bound, unwrapped or through `?` ([`hands_a_statement_on`]'s forms), or a name bound
/// to one. Only such a name is moved through an observation: a builder's `bind(&mut self)
/// -> &mut Self` bound to a name is a `&mut` the calls it is handed to reborrow.
fn owned_copy(value: &Expr, copies: &HashSet<String>) -> bool {
    let on = |value: &Expr| owned_copy(value, copies);
    match strip_parens(value) {
        Expr::MethodCall(call) => match call.method.to_string().as_str() {
            "clone" | "cloned" | "to_owned" | "to_vec" => call.args.is_empty(),
            "unwrap" => call.args.is_empty() && on(&call.receiver),
            "into_iter" | "next" | "next_back" | "last" | "pop" | "take" => {
                call.args.is_empty() && on(&call.receiver)
            }
            "nth" | "remove" | "swap_remove" => call.args.len() == 1 && on(&call.receiver),
            "bind" | "bind_refs" | "expect" | "map_err" | "context" | "with_context" => {
                call.args.len() == 1 && on(&call.receiver)
            }
            _ => false,
        },
        // A value built of copies owns them (`[s.clone()]`, `(s.clone(), "x")`,
        // `Holder { stmt: s.clone() }`, `Some(s.clone())`): a name bound to it, or to a part
        // of it, holds a copy.
        Expr::Array(array) => built_of_copies(array.elems.iter(), copies),
        Expr::Tuple(tuple) => built_of_copies(tuple.elems.iter(), copies),
        Expr::Struct(built) => {
            built.rest.is_none()
                && built_of_copies(built.fields.iter().map(|field| &field.expr), copies)
        }
        Expr::Call(call) if is_constructor(&call.func) => built_of_copies(call.args.iter(), copies),
        Expr::Call(_) | Expr::Path(_) | Expr::Field(_) => hands_a_statement_on(value, copies),
        Expr::Try(tried) => on(&tried.expr),
        Expr::Verbatim(tokens) => handed_over_value(tokens).is_some_and(|value| on(&value)),
        // `let s = if c { a.clone() } else { b.clone() };`, `let s = { .. ; copy };`,
        // `let s = loop { break a.clone() };`
        branches => branches_give(branches, copies, owned_copy).unwrap_or(false),
    }
}

/// Whether `parts`, the parts of a value built of them, are copies ([`owned_copy`]) and
/// literals, one copy at least: every part of it is owned, so a part moved out of it by
/// an observation (`pair.1`) is moved as the call would move it. A part of another kind
/// may be a `&mut` the call reborrows (`(s.clone(), &mut out)`): a value built with one is
/// no copy, and only a pattern that takes it apart where it is built binds its copies
/// ([`bind_copies`]).
fn built_of_copies<'e>(parts: impl Iterator<Item = &'e Expr>, copies: &HashSet<String>) -> bool {
    let mut any = false;
    for part in parts {
        if owned_copy(part, copies) {
            any = true;
        } else if !matches!(strip_parens(part), Expr::Lit(_)) {
            return false;
        }
    }
    any
}

/// Whether `name` starts with an upper-case letter, as Rust names types, variants and
/// constants, and no variable.
fn written_like_a_type(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
}

/// A tuple struct's or an enum variant's name, called to build one (`Some`, `Ok`,
/// `Wrapper`): a path whose last segment starts with an upper-case letter, by Rust's naming.
fn is_constructor(func: &Expr) -> bool {
    matches!(func, Expr::Path(path) if path.qself.is_none()
    && path.path.segments.last().is_some_and(|last| {
        written_like_a_type(&last.ident.to_string())
    }))
}

/// Whether a block's value is one `gives` takes, with the copies its own `let`s bind
/// (`{ let bound = stmt.clone().bind(..)?; bound }`), which the walk forgot as the block
/// ended ([`Finder::scoped`]).
fn block_gives(
    block: &syn::Block,
    copies: &HashSet<String>,
    gives: fn(&Expr, &HashSet<String>) -> bool,
) -> bool {
    let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last() else {
        return false;
    };
    gives(tail, &copies_in(block, copies))
}

/// The copies at the end of `block`: `copies` with those its statements bind
/// ([`bind_statement`]).
fn copies_in(block: &syn::Block, copies: &HashSet<String>) -> HashSet<String> {
    let mut inner = copies.clone();
    for stmt in &block.stmts {
        bind_statement(&mut inner, stmt);
    }
    inner
}

/// The copies `stmt`, a statement of a block, binds ([`bind_copies`]) for those after it, or
/// forgets: a `let`, and a macro that may bind names again, as the walk does
/// ([`Finder::macro_may_rebind`]).
fn bind_statement(copies: &mut HashSet<String>, stmt: &syn::Stmt) {
    match stmt {
        syn::Stmt::Local(local) => bind_copies(
            copies,
            &local.pat,
            local.init.as_ref().map(|init| &*init.expr),
        ),
        syn::Stmt::Macro(statement) if !binds_nothing(&statement.mac) => {
            forget_names_in(copies, statement.mac.tokens.clone());
        }
        _ => {}
    }
}

/// The names `pattern` binds to `value`: in `called` if it is one name bound to a call's
/// value that makes no copy ([`Finder::called`]: `let deadline = sleep(d);`), in `copies`
/// as [`bind_copies`] binds them, and out of each where not.
fn bind_names(
    copies: &mut HashSet<String>,
    called: &mut HashSet<String>,
    pattern: &Pat,
    value: Option<&Expr>,
) {
    for pat in bound_idents(pattern) {
        called.remove(&name(&pat.ident));
    }
    let single = match pattern {
        Pat::Type(typed) => &*typed.pat,
        pattern => pattern,
    };
    if let (Pat::Ident(ident), Some(value)) = (single, value)
        && ident.subpat.is_none()
        && matches!(strip_parens(value), Expr::Call(_) | Expr::MethodCall(_))
        && !owned_copy(value, copies)
    {
        called.insert(name(&ident.ident));
    }
    bind_copies(copies, pattern, value);
}

/// [`Finder::copies_bound`]: the names `pattern` binds to `value`, in `copies` if it is an
/// owned copy ([`owned_copy`]), out of it if not. A pattern that takes apart a value where
/// it is built (`let (s, sink) = (stmt.clone(), &mut out)`, `Some(s)` of `Some(..)`, a
/// struct's fields of its literal) binds each part's names by that part alone.
fn bind_copies(copies: &mut HashSet<String>, pattern: &Pat, value: Option<&Expr>) {
    if let Some(value) = value
        && let Some(pairs) = taken_apart(pattern, value)
    {
        for (pattern, part) in pairs {
            bind_copies(copies, pattern, part);
        }
        return;
    }
    let copy = value.is_some_and(|value| owned_copy(value, copies));
    for pat in bound_idents(pattern) {
        let bound = name(&pat.ident);
        if written_like_a_type(&bound) {
            continue;
        }
        if copy && pat.by_ref.is_none() {
            copies.insert(bound);
        } else {
            copies.remove(&bound);
        }
    }
}

/// The parts of `value` each part of `pattern` binds, where the pattern takes apart a value
/// built where it stands, part by part: a tuple, an array, a tuple struct or a variant
/// (`Some(..)`), a struct literal. `None` where it does not (a name bound to the whole). A
/// `..` in a tuple's or an array's pattern stands for the parts between those before it and
/// those after it (`let (s, ..) = (stmt.clone(), &mut out, 1)`). A part `None` is a field a
/// struct literal's `..base` gives: a part of a value the body may share, which binds no
/// copy (`let Job { stmt, .. } = Job { stmt: s.clone(), ..template }` binds `stmt` to the
/// copy all the same).
fn taken_apart<'p, 'e>(
    pattern: &'p Pat,
    value: &'e Expr,
) -> Option<Vec<(&'p Pat, Option<&'e Expr>)>> {
    let in_order = |patterns: Vec<&'p Pat>, parts: Vec<&'e Expr>| {
        let rest = patterns
            .iter()
            .position(|pattern| matches!(pattern, Pat::Rest(_)));
        let (before, after) = match rest {
            Some(at) => (&patterns[..at], &patterns[at + 1..]),
            None => (&patterns[..], &[][..]),
        };
        let skipped = parts.len().checked_sub(before.len() + after.len())?;
        if rest.is_none() && skipped > 0 {
            return None;
        }
        let from_the_end = &parts[before.len() + skipped..];
        Some(
            before
                .iter()
                .zip(&parts)
                .chain(after.iter().zip(from_the_end))
                .map(|(pattern, part)| (*pattern, Some(*part)))
                .collect(),
        )
    };
    match (pattern, strip_parens(value)) {
        (Pat::Type(typed), _) => taken_apart(&typed.pat, value),
        (Pat::Paren(inner), _) => taken_apart(&inner.pat, value),
        (Pat::Tuple(patterns), Expr::Tuple(parts)) => in_order(
            patterns.elems.iter().collect(),
            parts.elems.iter().collect(),
        ),
        (Pat::Slice(patterns), Expr::Array(parts)) => in_order(
            patterns.elems.iter().collect(),
            parts.elems.iter().collect(),
        ),
        (Pat::TupleStruct(patterns), Expr::Call(call)) if is_constructor(&call.func) => {
            in_order(patterns.elems.iter().collect(), call.args.iter().collect())
        }
        (Pat::Struct(patterns), Expr::Struct(built)) => patterns
            .fields
            .iter()
            .map(|field| match written_field(built, &field.member) {
                Some(part) => Some((&*field.pat, Some(part))),
                None => built.rest.as_ref().map(|_| (&*field.pat, None)),
            })
            .collect(),
        _ => None,
    }
}

/// The value a struct literal writes out for `member`; `None` for a field its `..base` gives.
fn written_field<'e>(built: &'e syn::ExprStruct, member: &syn::Member) -> Option<&'e Expr> {
    built
        .fields
        .iter()
        .find(|part| part.member == *member)
        .map(|part| &part.expr)
}

/// `(observation, value).1`: `value`, once `observation` ran, as a tuple of syntax, not of
/// tokens, so that what the value is can still be read
/// ([`Finder::observed_value`]).
fn observed_first(observation: TokenStream, value: Expr) -> Expr {
    let span = value.span();
    let mut elems = Punctuated::new();
    elems.push(Expr::Verbatim(observation));
    elems.push(value);
    Expr::Field(syn::ExprField {
        attrs: Vec::new(),
        base: Box::new(Expr::Tuple(syn::ExprTuple {
            attrs: Vec::new(),
            paren_token: syn::token::Paren(span),
            elems,
        })),
        dot_token: Token![.](span),
        member: syn::Member::Unnamed(syn::Index { index: 1, span }),
    })
}

/// The name an observation binds the value it moves through to: a statement handed over
/// ([`Finder::handed_over`]), a path call's statement ([`Finder::observe_path_call`]), a
/// method call's receiver ([`Finder::observed`]).
const HANDED_OVER: &str = "__d1_retry_recv";

/// The value `tokens` yield where they are such an observation of one (`match value {
/// __d1_retry_recv => (observation, __d1_retry_recv).1 }`): the value itself, moved
/// through. The walk rewrites a copy handed to a call as it goes (`Pair(s.
/// clone(), &mut out)`), before a `let` that binds a part of that call's value, or a block
/// that gives it, is read, so a copy's observation is still a copy. Only the expansion makes
/// such tokens: no source the user wrote parses to `Expr::Verbatim`.
fn handed_over_value(tokens: &TokenStream) -> Option<Expr> {
    let handed: syn::ExprMatch = syn::parse2(tokens.clone()).ok()?;
    let [arm] = handed.arms.as_slice() else {
        return None;
    };
    let is_bound =
        |expr: &Expr| matches!(expr, Expr::Path(path) if path.path.is_ident(HANDED_OVER));
    let named = matches!(&arm.pat, Pat::Ident(bound) if bound.ident == HANDED_OVER);
    // `(observation, __d1_retry_recv).1`: the bound value, after its observation.
    let yielded = matches!(&*arm.body, Expr::Field(field)
        if matches!(field.member, syn::Member::Unnamed(syn::Index { index: 1, .. }))
            && matches!(strip_parens(&field.base), Expr::Tuple(pair)
                if pair.elems.len() == 2 && pair.elems.last().is_some_and(is_bound)));
    (named && yielded).then_some(*handed.expr)
}

/// [`Finder::observe_made`]'s call: the runtime's `made_statement`, reached through the
/// hidden `__private` module, and handed tokens the expansion made (`Expr::Verbatim`,
/// which no source the user wrote parses to).
fn is_made(made: &syn::ExprCall) -> bool {
    let runtime = matches!(&*made.func, Expr::Path(path)
        if path.path.segments.last().is_some_and(|s| s.ident == "made_statement")
            && path.path.segments.iter().any(|s| s.ident == "__private"));
    runtime && made.args.len() == 3 && matches!(made.args.last(), Some(Expr::Verbatim(_)))
}
