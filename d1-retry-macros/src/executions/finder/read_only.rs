//! What a `read_only` body has observed as it runs: a statement it did not make in sight,
//! a `batch` of a list out of sight, and all SQL handed to `prepare`, so that a write in a
//! body declared read-only stops it from running again.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprMethodCall, Local, Pat, Token};

use super::{Finder, Statements};
use crate::executions::Mode;
use crate::executions::bindings::keeps_the_sql;
use crate::executions::bindings::name;
use crate::executions::generated::{held_batch_access, own_call};
use crate::executions::syntax::{is_d1_path, is_place, is_place_expression, strip_parens};
use crate::executions::vocabulary::STATEMENT_EXECUTIONS;
use crate::sql::Handed;

impl Finder<'_> {
    /// Whether a `read_only` body made the statement `expr` in sight: a `prepare(..)`,
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
            Expr::MethodCall(call) if keeps_the_sql(call) => self.made_in_sight(&call.receiver),
            Expr::MethodCall(call) => call.method == "prepare" && call.args.len() == 1,
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
    pub(super) fn observes(&self, call: &ExprMethodCall) -> bool {
        self.observing()
            && STATEMENT_EXECUTIONS.contains(&call.method.to_string().as_str())
            && !self.made_in_sight(&call.receiver)
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
        if !observing || self.list_in_sight(list) {
            return;
        }
        let private = &self.names.private;
        let span = list.span();
        let held = Ident::new("__d1_retry_list", Span::mixed_site());
        let access = held_batch_access(private, &held.to_token_stream(), span);
        let observe = self.observe_access(access, span);
        *list = Expr::Verbatim(quote_spanned! {span=>
            match #list {
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
    pub(super) fn sighted_binding(&mut self, local: &Local) {
        let ident = match &local.pat {
            Pat::Ident(pat) => pat,
            Pat::Type(typed) => match &*typed.pat {
                Pat::Ident(pat) => pat,
                _ => return,
            },
            _ => return,
        };
        if ident.subpat.is_some() || ident.mutability.is_some() || ident.by_ref.is_some() {
            return;
        }
        if let Some(init) = &local.init
            && init.diverge.is_none()
            && self.bindings.unique(&ident.ident)
            && self.made_in_sight(&init.expr)
        {
            self.sighted.insert(name(&ident.ident));
        }
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
        let attempt = &self.names.attempt;
        let span = call.method.span();
        let whole = call.span();
        let own = own_call(private, &call.method.to_string(), span);
        let beyond = self.beyond_attempt;
        let operation = &self.names.operation;
        let observe = |receiver: &TokenStream| {
            let site = quote_spanned!(span=> (&&#private::Receiver::of(&#receiver)).d1_site());
            if beyond {
                quote_spanned!(span=> #site.observe_unborrowed(&#receiver, #own, #operation))
            } else {
                quote_spanned!(span=> #site.observe(#attempt, &#receiver, #own))
            }
        };
        let awaiting = awaited.then(|| quote_spanned!(whole=> .await));
        let recv = Ident::new("__d1_retry_recv", Span::mixed_site());
        let with_receiver = |receiver: TokenStream| {
            let mut call = call.clone();
            call.receiver = Box::new(Expr::Verbatim(receiver));
            call
        };
        let receiver = strip_parens(&call.receiver);
        if is_place(receiver) {
            let observe = observe(&receiver.to_token_stream());
            quote_spanned!(whole=> (#observe, #call).1 #awaiting)
        } else if is_place_expression(receiver) {
            let observe = observe(&quote!(*#recv));
            let call = with_receiver(quote!(#recv));
            quote_spanned! {whole=>
                match &#receiver {
                    #recv => (#observe, #call).1 #awaiting
                }
            }
        } else {
            let observe = observe(&recv.to_token_stream());
            let call = with_receiver(quote_spanned! {whole=>
                (match #receiver {
                    #recv => (#observe, #recv).1
                })
            });
            quote_spanned!(whole=> #call #awaiting)
        }
    }

    /// In whole-body mode, SQL handed to `prepare` anywhere in the body (a `let`, a
    /// helper's argument) is judged, so that `read_only` is checked against all of it.
    pub(super) fn whole_body_sql(&mut self, expr: &mut Expr) {
        let mut statements = Statements::default();
        match expr {
            Expr::MethodCall(call) if call.method == "prepare" && call.args.len() == 1 => {
                if let Some(sql) = call.args.first_mut() {
                    self.sql_argument(sql, Handed::Prepare, None, &mut statements);
                }
            }
            // `D1Database::prepare(&db, sql)`.
            Expr::Call(call) if is_d1_path(&call.func, "prepare") && call.args.len() == 2 => {
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
    }
}
