//! The walk over the body: statement by statement, so that a statement variable is known
//! from its `let` on, and expression by expression, where executions are found.

use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, Local, Macro, Pat, Stmt};

use super::{Finder, Known, Statements};
use crate::executions::bindings::name;
use crate::executions::generated::const_access;
use crate::executions::syntax::{
    chosen, method_by_path, statement_like, strip_parens, strip_parens_mut,
};
use crate::executions::vocabulary::{
    MacroArguments, execution_path, is_execution, is_expression_macro, macro_name,
};
use crate::executions::{Execution, Left, Mode};
use crate::sql::Sql;

impl Finder<'_> {
    /// A `let stmt = <statement>;` whose SQL later executions of `stmt` can be judged by:
    /// the statements to place before the `let` and after it.
    pub(super) fn statement_binding(
        &mut self,
        local: &mut Local,
    ) -> Option<(Vec<Stmt>, Vec<Stmt>)> {
        // A `mut` binding can be reassigned, replaced through `&mut` or destructured into,
        // so its name no longer means one statement: it is not followed (out of sight).
        let plain = |pat: &syn::PatIdent| {
            (pat.subpat.is_none() && pat.mutability.is_none() && pat.by_ref.is_none())
                .then(|| pat.ident.clone())
        };
        let ident = match &local.pat {
            Pat::Ident(pat) => plain(pat)?,
            Pat::Type(typed) => match &*typed.pat {
                Pat::Ident(pat) => plain(pat)?,
                _ => return None,
            },
            _ => return None,
        };
        let init = local.init.as_mut()?;
        if init.diverge.is_some()
            || !self.bindings.unique(&ident)
            || !(statement_like(&init.expr) || chosen(&init.expr))
        {
            return None;
        }
        if matches!(&*init.expr, Expr::Path(_)) {
            return None;
        }
        // `r#type` names its slot `type`: a hint is a part of an identifier, not one.
        let name = name(&ident);
        let slot = self.fresh_slot(&name);
        let mut statements = Statements::default();
        self.statement(&mut init.expr, Some(&slot), &mut statements);
        let private = self.names.private.clone();
        let mut before: Vec<Stmt> = Vec::new();
        let mut after: Vec<Stmt> = Vec::new();
        let mut verdicts = statements.known_verdicts;
        // One SQL text, or one per arm of an `if` or a `match` (see `alternatives`).
        let mut sql = statements.sql;
        for sql in &mut sql {
            if let Sql::Const(expr, handed) = sql {
                // Judged here, before the binding and in its scope, where the name in
                // `expr` means what it means to `prepare`; the statement may run where it
                // does not.
                let verdict = self.fresh_slot(&format!("{name}_judged"));
                let access = const_access(&private, expr, *handed);
                before.push(syn::parse_quote_spanned! {expr.span()=> let #verdict = #access;});
                *sql = Sql::Bound(expr.clone(), verdict);
            }
        }
        for (check, probe) in statements.checks {
            before.push(syn::parse_quote!(let #check = #probe;));
            verdicts.push(quote!(#check));
        }
        if statements.scans > 0 {
            // Read once the statement is made: an `Access` is `Copy`, so each `async move`
            // block that runs the statement takes a copy, where the slot could be moved
            // into one block only.
            let verdict = self.fresh_slot(&format!("{name}_scanned"));
            before.push(syn::parse_quote!(let #slot = #private::SqlSlot::new();));
            after.push(syn::parse_quote!(let #verdict = (&#slot).access();));
            verdicts.push(verdict.into_token_stream());
        }
        self.statements.insert(name, Known { sql, verdicts });
        // The declarations name what the `let` names (a field, a variable, a constant):
        // under its `#[cfg]`, they are compiled exactly when it is.
        let cfgs: Vec<syn::Attribute> = local
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("cfg"))
            .cloned()
            .collect();
        for stmt in before.iter_mut().chain(&mut after) {
            if let Stmt::Local(declaration) = stmt {
                declaration.attrs.extend(cfgs.iter().cloned());
            }
        }
        Some((before, after))
    }
}

impl Finder<'_> {
    /// The function's body: its tail expression is the returned value.
    pub(super) fn visit_body(&mut self, block: &mut Block) {
        let tail = match block.stmts.last() {
            Some(Stmt::Expr(_, None)) => block.stmts.len() - 1,
            _ => block.stmts.len(),
        };
        self.visit_stmts(block, Some(tail));
    }

    fn visit_stmts(&mut self, block: &mut Block, tail: Option<usize>) {
        let unify_tail = core::mem::take(&mut self.unify_tail);
        let last = block.stmts.len().checked_sub(1);
        let outer_ahead = core::mem::take(&mut self.ahead);
        let mut stmts = Vec::with_capacity(block.stmts.len());
        for (index, stmt) in core::mem::take(&mut block.stmts).into_iter().enumerate() {
            // A macro whose tokens may make a D1 call out of sight, told as it begins: the
            // statement itself, or one inside it (`Expr::Macro`, in `visit_expr_mut`).
            if let Stmt::Macro(statement) = &stmt {
                if let Some(observe) = self.foreign_macro_observation(&statement.mac) {
                    self.ahead.push(observe);
                }
                self.macro_may_rebind(&statement.mac);
            }
            let at = stmts.len();
            if unify_tail && Some(index) == last && matches!(stmt, Stmt::Expr(_, None)) {
                self.unify_next = true;
            }
            self.visit_one(stmt, index, tail, &mut stmts);
            self.unify_next = false;
            let ahead = self
                .ahead
                .drain(..)
                .map(|observe| -> Stmt { syn::parse_quote!(#observe;) });
            stmts.splice(at..at, ahead.collect::<Vec<_>>());
        }
        block.stmts = stmts;
        self.ahead = outer_ahead;
    }

    /// Visits one statement of a block into `stmts`, with those it adds around it.
    fn visit_one(
        &mut self,
        mut stmt: Stmt,
        index: usize,
        tail: Option<usize>,
        stmts: &mut Vec<Stmt>,
    ) {
        if Some(index) == tail {
            let outer = core::mem::replace(&mut self.in_return_position, true);
            self.visit_stmt_mut(&mut stmt);
            self.in_return_position = outer;
            stmts.push(stmt);
            return;
        }
        if let Stmt::Local(local) = &mut stmt {
            if let Some(name) = pending_binding(local) {
                self.pending.insert(name);
            }
            // The initialiser first: executions inside it are its own. A future bound to a
            // name that meets another site's must keep D1's type (`meeting.rs`).
            // Only a name bound once (it may be assigned): names are matched without
            // scopes, and a name bound again (`let row = n(row.await?); out.push(row)`) may
            // meet as another value.
            let meets = bound_ident(local).is_some_and(|ident| {
                self.bindings.one_variable(ident) && self.meeting.contains(ident)
            });
            if let Some(init) = &mut local.init {
                self.unify_next = meets;
                self.visit_expr_mut(&mut init.expr);
                if let Some((_, diverge)) = &mut init.diverge {
                    self.visit_expr_mut(diverge);
                }
            }
            let (before, after) = match self.mode {
                Mode::PerCall => self.statement_binding(local).unwrap_or_default(),
                Mode::WholeBody { read_only } => {
                    if read_only {
                        if let Some(init) = &mut local.init {
                            self.observe_bound_parts(Some(&local.pat), &mut init.expr);
                        }
                        self.sighted_binding(local);
                    }
                    Default::default()
                }
            };
            stmts.extend(before);
            stmts.push(stmt);
            stmts.extend(after);
            return;
        }
        self.visit_stmt_mut(&mut stmt);
        stmts.push(stmt);
    }
}

impl VisitMut for Finder<'_> {
    fn visit_block_mut(&mut self, block: &mut Block) {
        self.scoped(|finder| finder.visit_stmts(block, None));
    }

    fn visit_expr_return_mut(&mut self, node: &mut syn::ExprReturn) {
        let outer = core::mem::replace(&mut self.in_return_position, true);
        visit_mut::visit_expr_return_mut(self, node);
        self.in_return_position = outer;
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        let unifying = core::mem::take(&mut self.unify_next);
        match expr {
            Expr::Await(awaited) => {
                // What is awaited is consumed here, not returned: a call inside it
                // (`timeout(d, stmt.first(None)).await` in the tail) does not outlive the
                // function, and is rewritten as anywhere else.
                let returned = core::mem::replace(&mut self.in_return_position, false);
                let base = strip_parens_mut(&mut awaited.base);
                if let Expr::MethodCall(call) = base
                    && is_execution(call)
                {
                    visit_mut::visit_expr_method_call_mut(self, call);
                    self.in_return_position = returned;
                    if let Some(rewritten) = self.execution(call, true) {
                        *expr = Expr::Verbatim(rewritten);
                    }
                    return;
                }
                self.visit_expr_mut(base);
                self.in_return_position = returned;
                if let Some(rewritten) = self.awaited_statement(base) {
                    *expr = Expr::Verbatim(rewritten);
                } else if let Some(rewritten) = self.observed_await(base) {
                    *expr = Expr::Verbatim(rewritten);
                }
            }
            Expr::MethodCall(call) if is_execution(call) => {
                visit_mut::visit_expr_method_call_mut(self, call);
                self.in_unifying_position = unifying;
                let rewritten = self.execution(call, false);
                self.in_unifying_position = false;
                if let Some(rewritten) = rewritten {
                    *expr = Expr::Verbatim(rewritten);
                }
            }
            // Arm values of an `if` with an `else` and of a `match`, and a method call's
            // arguments, must have one type across sites (see `in_unifying_position`).
            Expr::If(branch) if self.mode == Mode::PerCall && branch.else_branch.is_some() => {
                self.visit_expr_mut(&mut branch.cond);
                self.unify_tail = true;
                self.visit_block_mut(&mut branch.then_branch);
                if let Some((_, otherwise)) = &mut branch.else_branch {
                    self.unify_next = true;
                    self.visit_expr_mut(otherwise);
                }
            }
            Expr::Match(choice) if self.mode == Mode::PerCall => {
                self.visit_expr_mut(&mut choice.expr);
                for arm in &mut choice.arms {
                    self.visit_pat_mut(&mut arm.pat);
                    if let Some((_, guard)) = &mut arm.guard {
                        self.visit_expr_mut(guard);
                    }
                    self.unify_next = true;
                    self.visit_expr_mut(&mut arm.body);
                }
            }
            Expr::MethodCall(call) if self.mode == Mode::PerCall => {
                self.visit_expr_mut(&mut call.receiver);
                for arg in &mut call.args {
                    self.unify_next = true;
                    self.visit_expr_mut(arg);
                }
            }
            // An assigned value must have the place's type.
            Expr::Assign(assign) if self.mode == Mode::PerCall => {
                self.visit_expr_mut(&mut assign.left);
                self.unify_next = true;
                self.visit_expr_mut(&mut assign.right);
            }
            // A value that must have one type passes that on to what it is made of:
            // `(a.all())`, `{ a.all() }`, `Some(a.all())`, `Box::pin(a.all())`, `(a.all(), 1)`.
            Expr::Paren(_) | Expr::Group(_) if unifying => {
                self.unify_next = true;
                visit_mut::visit_expr_mut(self, expr);
            }
            Expr::Block(block) if unifying => {
                self.unify_tail = true;
                self.visit_block_mut(&mut block.block);
            }
            Expr::Call(call) if unifying && self.mode == Mode::PerCall => {
                self.visit_expr_mut(&mut call.func);
                for arg in &mut call.args {
                    self.unify_next = true;
                    self.visit_expr_mut(arg);
                }
            }
            // `Vec::push(&mut v, a.run())`, which `v.push(a.run())` is (above).
            Expr::Call(call) if self.mode == Mode::PerCall && method_by_path(call) => {
                self.visit_expr_mut(&mut call.func);
                for (i, arg) in call.args.iter_mut().enumerate() {
                    self.unify_next = i > 0;
                    self.visit_expr_mut(arg);
                }
            }
            Expr::Tuple(tuple) if unifying => {
                for element in &mut tuple.elems {
                    self.unify_next = true;
                    self.visit_expr_mut(element);
                }
            }
            // An execution called by its path: its arguments are visited, not the path, which
            // would be observed as a function handed on (below).
            Expr::Call(call)
                if self.mode != Mode::PerCall && execution_path(&call.func).is_some() =>
            {
                for arg in &mut call.args {
                    self.visit_expr_mut(arg);
                }
                self.whole_body_sql(expr);
            }
            Expr::MethodCall(_) | Expr::Call(_) if self.mode != Mode::PerCall => {
                visit_mut::visit_expr_mut(self, expr);
                self.whole_body_sql(expr);
                // A statement's clone handed on, to what may run it out of sight; not SQL or
                // values handed to make a statement.
                let args = match expr {
                    Expr::MethodCall(call)
                        if !matches!(call.method.to_string().as_str(), "prepare" | "bind") =>
                    {
                        Some(&mut call.args)
                    }
                    Expr::Call(call) => Some(&mut call.args),
                    _ => None,
                };
                for arg in args.into_iter().flatten() {
                    self.observed_hand_over(arg, false);
                }
                // `stmt.into_future()`, which a `read_only` body observes as it would the
                // statement's `.await`.
                if let Expr::MethodCall(call) = expr
                    && call.method == "into_future"
                    && self.observes(call)
                {
                    let call = call.clone();
                    *expr = Expr::Verbatim(self.observed(&call, false));
                } else if let Expr::MethodCall(call) = expr
                    && let Some(rewritten) = self.observed_receiver(call)
                {
                    *expr = Expr::Verbatim(rewritten);
                }
            }
            Expr::Macro(mac) => {
                if let Some(observe) = self.foreign_macro_observation(&mac.mac) {
                    self.ahead.push(observe);
                }
                visit_mut::visit_expr_macro_mut(self, mac);
            }
            Expr::Path(_) => {
                if let Some(rewritten) = self.observed_path(expr) {
                    *expr = Expr::Verbatim(rewritten);
                }
            }
            Expr::Array(array) => {
                // An element's type must stay the plain call's: `[a.run(), b.run()]`.
                for element in &mut array.elems {
                    self.visit_element(element);
                }
            }
            Expr::Async(block) => {
                let before = self.executions.len();
                // The block gets a schedule of its own, so it may outlive the function: a
                // `move` block, and one without `move` too, which may outlive it as well
                // when what it captures does (`async { self.db.prepare(..).first(..).await }`
                // returned, or pushed into a `Vec` the caller lent).
                let outer = core::mem::replace(&mut self.in_move_closure, false);
                let returned = core::mem::replace(&mut self.in_return_position, false);
                let beyond = core::mem::replace(&mut self.beyond_attempt, true);
                visit_mut::visit_expr_async_mut(self, block);
                self.in_move_closure = outer;
                self.in_return_position = returned;
                self.beyond_attempt = beyond;
                if self.executions[before..].iter().any(Execution::rewritten) {
                    let call = &self.names.call;
                    let init = &self.names.call_init;
                    block
                        .block
                        .stmts
                        .insert(0, syn::parse_quote!(let #call = #init;));
                }
            }
            Expr::Closure(closure) => {
                let outer = self.in_move_closure;
                self.in_move_closure = if closure.asyncness.is_some() {
                    closure.capture.is_none() && outer
                } else {
                    outer || closure.capture.is_some()
                };
                let before = self.executions.len();
                let beyond = core::mem::replace(&mut self.beyond_attempt, true);
                // The closure's parameters are names of its own, copies or not as they are
                // handed in.
                self.scoped(|finder| {
                    for input in &closure.inputs {
                        finder.copies_bound(input, None);
                    }
                    visit_mut::visit_expr_closure_mut(finder, closure);
                });
                self.in_move_closure = outer;
                self.beyond_attempt = beyond;
                if closure.capture.is_some()
                    && closure.asyncness.is_some()
                    && self.executions[before..].iter().any(Execution::rewritten)
                {
                    let call = &self.names.call;
                    let init = &self.names.call_init;
                    let body = &closure.body;
                    *closure.body = syn::parse_quote!({ let #call = #init; #body });
                }
            }
            Expr::Assign(assign) if self.observing() => {
                visit_mut::visit_expr_assign_mut(self, assign);
                self.observe_bound_parts(None, &mut assign.right);
            }
            // The loop's or the condition's value first, then the names its pattern binds,
            // before the body that may hand them on (`copies_bound`).
            Expr::ForLoop(each) if self.observing() => {
                self.visit_expr_mut(&mut each.expr);
                self.scoped(|finder| {
                    finder.copies_bound(&each.pat, Some(&each.expr));
                    finder.visit_block_mut(&mut each.body);
                });
            }
            // An `if let`'s names are bound in its block alone, not in its `else`, which
            // sees the names as they were before the condition.
            Expr::If(branch) if self.observing() => {
                self.scoped(|finder| {
                    finder.visit_expr_mut(&mut branch.cond);
                    finder.visit_block_mut(&mut branch.then_branch);
                });
                if let Some((_, otherwise)) = &mut branch.else_branch {
                    self.visit_expr_mut(otherwise);
                }
            }
            // A `while let`'s, in its block.
            Expr::While(_) if self.observing() => {
                self.scoped(|finder| visit_mut::visit_expr_mut(finder, expr));
            }
            Expr::Let(bound) if self.observing() => {
                self.visit_expr_mut(&mut bound.expr);
                self.copies_bound(&bound.pat, Some(&bound.expr));
            }
            // `match stmt.clone().bind(..) { Ok(s) => .., Err(e) => .. }`: each arm's names,
            // as an `if let`'s.
            Expr::Match(choice) if self.observing() => {
                self.visit_expr_mut(&mut choice.expr);
                for arm in &mut choice.arms {
                    self.scoped(|finder| {
                        finder.copies_bound(&arm.pat, Some(&choice.expr));
                        finder.visit_pat_mut(&mut arm.pat);
                        if let Some((_, guard)) = &mut arm.guard {
                            finder.visit_expr_mut(guard);
                        }
                        finder.visit_expr_mut(&mut arm.body);
                    });
                }
            }
            _ => visit_mut::visit_expr_mut(self, expr),
        }
    }

    fn visit_macro_mut(&mut self, mac: &mut Macro) {
        // Only macros known to evaluate each argument once, as an expression, are rewritten.
        // Any other macro's tokens are its own business: calls inside run as written (in
        // whole-body mode they are still judged, so `read_only` is checked against them).
        let arguments = match self.mode {
            Mode::PerCall => MacroArguments::of_expression_macro(mac),
            Mode::WholeBody { .. } => MacroArguments::of_macro(mac),
        };
        let name = macro_name(mac);
        let is_vec = name.as_deref() == Some("vec");
        // `join!` and `try_join!` await each element: one that is a statement runs there.
        let awaits_each = matches!(name.as_deref(), Some("join" | "try_join"));
        let foreign = !is_expression_macro(mac);
        let outer = self.in_foreign_macro;
        self.in_foreign_macro |= foreign;
        match arguments {
            Some(MacroArguments::List(mut args)) => {
                for arg in &mut args {
                    if is_vec {
                        self.visit_element(arg);
                        // A copy collected, to be handed on (`join_all(vec![s.clone()])`).
                        self.observed_hand_over(arg, false);
                    } else {
                        self.visit_expr_mut(arg);
                    }
                    if awaits_each {
                        self.observed_hand_over(arg, true);
                    }
                }
                mac.tokens = args.into_token_stream();
            }
            Some(MacroArguments::Repeat(mut element, semi, count)) => {
                self.visit_element(&mut element);
                mac.tokens = quote!(#element #semi #count);
            }
            Some(MacroArguments::Scrutinee(mut scrutinee, comma, pattern)) => {
                self.visit_expr_mut(&mut scrutinee);
                mac.tokens = quote!(#scrutinee #comma #pattern);
            }
            None => {}
        }
        self.in_foreign_macro = outer;
    }

    // Nested items (fns, impls, consts) are not run by this body.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

impl Finder<'_> {
    /// Visits an element of an array or `vec!`, whose non-awaited executions stay as
    /// written so that all elements keep one type.
    fn visit_element(&mut self, element: &mut Expr) {
        let Expr::MethodCall(call) = strip_parens_mut(element) else {
            return self.visit_expr_mut(element);
        };
        if !is_execution(call) {
            return self.visit_expr_mut(element);
        }
        visit_mut::visit_expr_method_call_mut(self, call);
        self.executions.push(Execution {
            method: call.method.to_string(),
            sql: vec![Sql::Unseen],
            left: Left::Meets,
            held: false,
        });
        // The observed call has the call's own type (see `observed`).
        if self.observes(call) {
            let call = call.clone();
            *element = Expr::Verbatim(self.observed(&call, false));
        }
    }
}

/// `let name = <an execution, not awaited>;`: the name a future of it is bound to. A
/// `mut` or typed binding counts too: the value is a future either way.
fn pending_binding(local: &Local) -> Option<String> {
    let pat = match &local.pat {
        Pat::Type(typed) => &*typed.pat,
        pat => pat,
    };
    let (Pat::Ident(ident), Some(init)) = (pat, &local.init) else {
        return None;
    };
    let Expr::MethodCall(call) = strip_parens(&init.expr) else {
        return None;
    };
    (ident.subpat.is_none() && init.diverge.is_none() && is_execution(call))
        .then(|| name(&ident.ident))
}

/// The name a `let` binds, when its pattern is one name (`f`, `mut f`, `f: T`).
fn bound_ident(local: &Local) -> Option<&syn::Ident> {
    match &local.pat {
        Pat::Type(typed) => match &*typed.pat {
            Pat::Ident(ident) => Some(&ident.ident),
            _ => None,
        },
        Pat::Ident(ident) => Some(&ident.ident),
        _ => None,
    }
}
