//! The statements an execution runs, followed from the execution back to their `prepare`
//! (through `bind`, `?`, borrows, statement variables and the arms that chose them), and
//! the `Access` their SQL gives the execution: judged at compile time, probed by the
//! receiver's type, or scanned as it is evaluated.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Token};

use super::{Finder, Known, Statements};
use crate::by_value::{self, PrepareCall};
use crate::executions::Mode;
use crate::executions::bindings::{keeps_the_sql, name};
use crate::executions::generated::{const_access, scanned};
use crate::executions::syntax::{
    Database, is_d1_path, is_worker_query, only_tail, path_type, rooted_at_self, scrutinee,
    strip_parens,
};
use crate::sql::{Handed, Sql, judge};

impl Finder<'_> {
    /// What a statement expression runs: follows `prepare(..)`, `Type::prepare(db, ..)`,
    /// `query!(db, ..)`, `.bind(..)`, `?` and statement variables. In per-call mode the
    /// dynamic SQL met on the way is wrapped to be scanned into `slot`.
    pub(super) fn statement(
        &mut self,
        expr: &mut Expr,
        slot: Option<&Ident>,
        out: &mut Statements,
    ) {
        match expr {
            Expr::Paren(inner) => self.statement(&mut inner.expr, slot, out),
            Expr::Group(inner) => self.statement(&mut inner.expr, slot, out),
            Expr::Try(inner) => self.statement(&mut inner.expr, slot, out),
            Expr::Reference(inner) => self.statement(&mut inner.expr, slot, out),
            Expr::MethodCall(call) if keeps_the_sql(call) => {
                self.statement(&mut call.receiver, slot, out);
            }
            Expr::MethodCall(call) if call.method == "prepare" && call.args.len() == 1 => {
                let site = call.args.first().map(|sql| PrepareCall::of(call, sql));
                if let Some(sql) = call.args.first_mut()
                    && (writes(sql) || self.database_check(&mut call.receiver, site, slot, out))
                {
                    self.sql_argument(sql, Handed::Prepare, slot, out);
                } else {
                    out.sql.push(Sql::Unseen);
                }
            }
            // `D1Database::prepare(&db, sql)`: the SQL comes after the database. The function
            // is the named type's, whatever `db` is, so the type is probed (a type of the
            // user's named `D1Database` may prepare anything).
            Expr::Call(call) if is_d1_path(&call.func, "prepare") && call.args.len() == 2 => {
                let named = path_type(&call.func);
                if let Some(sql) = call.args.iter_mut().nth(1)
                    && (writes(sql) || named.is_some_and(|ty| self.type_check(ty, out)))
                {
                    self.sql_argument(sql, Handed::Prepare, slot, out);
                } else {
                    out.sql.push(Sql::Unseen);
                }
            }
            Expr::Macro(mac) if is_worker_query(&mac.mac.path) => {
                // workers-rs's `query!(db, sql, args..)`: its SQL is the second argument,
                // out of reach for a rewrite, so only literals and constants are known,
                // and only when the database is a place whose type can be probed.
                let args =
                    Punctuated::<Expr, Token![,]>::parse_terminated.parse2(mac.mac.tokens.clone());
                let mut args = args.into_iter().flatten();
                let sql = match (args.next(), args.next()) {
                    (Some(mut db), Some(sql)) => {
                        if writes(&sql) || self.database_check(&mut db, None, None, out) {
                            match judge(&sql, Handed::Prepare) {
                                Sql::Dynamic => Sql::Unseen,
                                known => known,
                            }
                        } else {
                            Sql::Unseen
                        }
                    }
                    _ => Sql::Unseen,
                };
                out.sql.push(sql);
            }
            Expr::Path(path) if path.qself.is_none() => {
                let known = path
                    .path
                    .get_ident()
                    .filter(|ident| self.bindings.unique(ident))
                    .and_then(|ident| self.statements.get(&name(ident)))
                    .cloned();
                match known {
                    Some(Known { sql, verdicts }) => {
                        out.sql.extend(sql);
                        out.known_verdicts.extend(verdicts);
                    }
                    None => out.sql.push(Sql::Unseen),
                }
            }
            Expr::If(_) | Expr::Match(_) | Expr::Block(_) => match slot {
                Some(slot) => self.alternatives(expr, slot, out),
                None => out.sql.push(Sql::Unseen),
            },
            _ => out.sql.push(Sql::Unseen),
        }
    }

    /// A statement chosen by `if`/`else` or `match` (`let stmt = if active { db.prepare(A)
    /// } else { db.prepare(B) };`), or made in a block: it is one of the arms', so every
    /// arm's SQL is judged, and the statement is read-only only if each is. An arm that
    /// leaves (`return`, `continue`, `break`) makes none; one whose
    /// statement is out of sight (a helper's, a macro's, a labelled block or a block with
    /// statements before its value, which may bind the names it uses) makes the statement
    /// out of sight when it runs, which is recorded into `slot`: the runtime then judges it
    /// by the SQL it holds (`Retrying::access`), a write if it cannot read it. An `if`
    /// without `else` is out of sight.
    ///
    /// Each arm's `prepare` receivers are probed in the arm, right before its value, where
    /// the names the arm's pattern binds are in scope: hoisted before the `let`, a probe
    /// would name another variable, or none. Their verdicts are recorded into `slot` (by
    /// the arm that runs), as a receiver probed where it is evaluated is.
    pub(super) fn alternatives(&mut self, expr: &mut Expr, slot: &Ident, out: &mut Statements) {
        let before = out.sql.len();
        match expr {
            Expr::If(branch) => match &mut branch.else_branch {
                Some((_, otherwise)) => {
                    match only_tail(&mut branch.then_branch) {
                        Some(value) => self.arm(value, slot, out),
                        None => {
                            // Out of sight, as `out_of_sight` makes an arm.
                            let private = &self.names.private;
                            let record =
                                syn::parse_quote!((&#slot).join(#private::Access::Unseen););
                            branch.then_branch.stmts.insert(0, record);
                            out.scans += 1;
                        }
                    }
                    self.arm(otherwise, slot, out);
                }
                None => out.sql.push(Sql::Unseen),
            },
            Expr::Match(choice) => {
                for arm in &mut choice.arms {
                    self.arm(&mut arm.body, slot, out);
                }
            }
            block => self.arm(block, slot, out),
        }
        // Every arm leaving makes no statement; none is out of sight too, never read-only.
        if out.sql.len() == before {
            out.sql.push(Sql::Unseen);
        }
    }

    /// One arm of [`Finder::alternatives`]: a block's value, nothing if it leaves, or a
    /// statement whose receivers are probed where it stands. An arm whose statement is out
    /// of sight (a helper's, a macro's, a block with statements before its value) records
    /// so into `slot` before it is evaluated: if it leaves instead (`unreachable!()`,
    /// `bail!(..)`, `Err(e)?`), no statement is made by this `let`, and the record is moot.
    pub(super) fn arm(&mut self, arm: &mut Expr, slot: &Ident, out: &mut Statements) {
        match arm {
            Expr::Block(block) if block.label.is_none() => match only_tail(&mut block.block) {
                Some(value) => self.arm(value, slot, out),
                None => self.out_of_sight(arm, slot, out),
            },
            // A `break`, with a value or not, leaves the `let`: no loop or labelled block
            // lies between it and the arms followed here.
            Expr::Return(_) | Expr::Continue(_) | Expr::Break(_) => {}
            Expr::Block(_) => self.out_of_sight(arm, slot, out),
            arm => {
                let mut own = Statements::default();
                self.statement(arm, Some(slot), &mut own);
                out.scans += own.scans;
                if own.sql.iter().any(|sql| matches!(sql, Sql::Unseen)) {
                    // Its probes and verdicts do not matter: if it runs, the statement is
                    // judged by the SQL it holds.
                    self.out_of_sight(arm, slot, out);
                    return;
                }
                if !own.checks.is_empty() {
                    let private = &self.names.private;
                    let locals = own.checks.iter().map(|(local, _)| local);
                    let probes = own.checks.iter().map(|(_, probe)| probe);
                    // Each local holds its receiver's verdict, an `Access`.
                    let accesses = locals.clone();
                    let span = arm.span();
                    *arm = Expr::Verbatim(quote_spanned! {span=>
                        {
                            #(let #locals = #probes;)*
                            (&#slot).join(#private::Access::ReadOnly #(.and(#accesses))*);
                            #arm
                        }
                    });
                    out.scans += 1;
                }
                out.sql.extend(own.sql);
                out.known_verdicts.extend(own.known_verdicts);
            }
        }
    }

    /// An arm whose statement is out of sight, recorded into `slot` where it begins (see
    /// [`Finder::arm`]), before its value, so a temporary the value borrows is still
    /// extended as the block's tail. Out of sight, not a write: the execution reads the SQL
    /// of the statement it runs, which is the arm's when this arm ran, so a read made there
    /// keeps its retries (`Access::Unseen` outranks every other verdict in the slot and
    /// in `Access::and`, and the runtime counts a statement it cannot read as a write).
    pub(super) fn out_of_sight(&mut self, arm: &mut Expr, slot: &Ident, out: &mut Statements) {
        let span = arm.span();
        let private = &self.names.private;
        *arm = Expr::Verbatim(quote_spanned! {span=>
            {
                (&#slot).join(#private::Access::Unseen);
                #arm
            }
        });
        out.scans += 1;
    }

    /// Whether the SQL handed to a `prepare` on `db` (its receiver, or the first argument of
    /// `D1Database::prepare`) may be judged: only D1's own `prepare`, on its database or
    /// session or a reference to one (the runtime's `D1Prepare`), is known to be the one
    /// called and to prepare its argument as it is, and one of the user's may build any statement
    /// from it (`self.archive.prepare("SELECT ..")` inserting the rows it selects). The
    /// attribute cannot see types, so the expansion asks the runtime's receiver dispatch,
    /// whose verdict joins the statement's access; how depends on the receiver
    /// ([`Database::of`]):
    ///
    /// - a place is probed by type before the statement is made, while nothing has moved
    ///   or borrowed it (a `prepare` of the user's own may consume it or take `&mut self`,
    ///   the execution's arguments may borrow it): a variable or a field of one is
    ///   borrowed where it stands, any other place inside a closure that is never called;
    ///   so nothing is read, moved or evaluated twice ([`Statements::checks`]);
    /// - a value is probed where it is evaluated, and the verdict recorded into `slot` as
    ///   dynamic SQL's is;
    /// - with no slot (a call left as written), inside a macro's arguments, which are not
    ///   rewritten, or for a receiver of [`Database::Unseen`], nothing is probed: false,
    ///   and the statement is out of sight.
    ///
    /// [`D1Receiver`]: https://docs.rs/d1-retry/latest/d1_retry/trait.D1Receiver.html
    pub(super) fn database_check(
        &mut self,
        db: &mut Expr,
        call: Option<PrepareCall>,
        slot: Option<&Ident>,
        out: &mut Statements,
    ) -> bool {
        let private = &self.names.private;
        let span = db.span();
        let receiver =
            |receiver: TokenStream| quote_spanned!(span=> #private::Receiver::of(#receiver));
        let dispatch =
            |receiver: TokenStream| quote_spanned!(span=> (&&#receiver).d1_retry_prepare());
        let bare = strip_parens(db);
        // The user's method lookup repeated in code that never runs, to refuse a `prepare`
        // of the user's that takes a D1 database by value (`by_value.rs`).
        let call = call.filter(|_| !(self.names.self_borrowed && rooted_at_self(bare)));
        let by_value =
            |borrowed: TokenStream| call.map(|call| by_value::check(private, call, borrowed));
        let scrutinee = match Database::of(bare) {
            Database::Place { borrowed, variable } => {
                // The verdict the dispatch picks, taken by a `let` whose temporaries (the
                // closure, the borrows) end with it: in a `match` scrutinee they would be
                // kept across the execution's await, and make its future larger.
                let site = Ident::new("__d1_retry_site", Span::mixed_site());
                // A variable or a field of one is borrowed as it is, which runs no code; any
                // other place (a constant, a static, an element, a dereference) only inside
                // the closure, which is never called. A closure per site is a type more for
                // rustc to check: nearly every receiver is a variable or a field.
                let probe = if variable {
                    dispatch(receiver(borrowed))
                } else {
                    let inside = receiver(borrowed);
                    dispatch(quote_spanned!(span=> #private::probed(|| #inside)))
                };
                let by_value = by_value(quote_spanned!(Span::mixed_site()=> &(#bare)));
                let check = quote_spanned! {span=>
                    {
                        #by_value
                        let #site = #probe;
                        #site
                    }
                };
                out.checks.push((self.fresh_slot("db"), check));
                return true;
            }
            Database::Value => scrutinee(bare),
            Database::Unseen => return false,
        };
        let Some(slot) = slot else {
            return false;
        };
        let value = Ident::new("__d1_retry_database", Span::mixed_site());
        let probe = dispatch(receiver(quote!(&#value)));
        let by_value = by_value(quote!(&#value));
        *db = Expr::Verbatim(quote_spanned! {span=>
            (match #scrutinee {
                #value => {
                    #by_value
                    (&#slot).join(#probe);
                    #value
                }
            })
        });
        out.scans += 1;
        true
    }

    /// Probes the type a `prepare` path names (`D1Database` in `D1Database::prepare`)
    /// before the statement is made: only a [`D1Receiver`]'s is trusted, as with
    /// [`Finder::database_check`]. Evaluates nothing.
    ///
    /// [`D1Receiver`]: https://docs.rs/d1-retry/latest/d1_retry/trait.D1Receiver.html
    pub(super) fn type_check(&mut self, ty: TokenStream, out: &mut Statements) -> bool {
        let private = &self.names.private;
        let site = Ident::new("__d1_retry_site", Span::mixed_site());
        let check = quote_spanned! {ty.span()=>
            {
                let #site = (&&#private::Receiver::<#ty>::named()).d1_retry_prepare();
                #site
            }
        };
        out.checks.push((self.fresh_slot("db"), check));
        true
    }

    /// Judges SQL handed to `prepare` or `exec` (`handed`), wrapping dynamic SQL to be
    /// scanned (per-call) or observed (whole-body `read_only`), and constant SQL to be
    /// checked (whole-body `read_only`).
    pub(super) fn sql_argument(
        &mut self,
        sql: &mut Expr,
        handed: Handed,
        slot: Option<&Ident>,
        out: &mut Statements,
    ) {
        let judged = match judge(sql, handed) {
            // `let INSERT_SQL = format!(..)`: a local named like a constant, which a
            // `const` block could not read. Scanned as dynamic SQL, which a constant of
            // that name would be judged the same by.
            Sql::Const(Expr::Path(path), _)
                if path
                    .path
                    .get_ident()
                    .is_some_and(|name| self.bindings.any(name)) =>
            {
                Sql::Dynamic
            }
            judged => judged,
        };
        let span = sql.span();
        let private = &self.names.private;
        match (&judged, self.mode) {
            (Sql::Dynamic, Mode::PerCall) => match slot {
                Some(slot) => {
                    let scan = handed.recorder("scan", span);
                    *sql =
                        Expr::Verbatim(scanned(private, sql, &quote!((&#slot).#scan), None, span));
                    out.scans += 1;
                }
                None => {
                    // Not rewritten: the SQL is not scanned, so it counts as a write.
                    self.all_sql.push(judged);
                    out.sql.push(Sql::Unseen);
                    return;
                }
            },
            (Sql::Dynamic, Mode::WholeBody { read_only: true }) => {
                // Where the attempt's record cannot be borrowed, counted on the thread (see
                // `observe_access`).
                // SQL handed to `prepare` that is not text is judged by the statement it
                // becomes, where the caller observes it once made (`Finder::observe_made`);
                // anywhere else it counts as a write.
                let made_observed = self.observing_made && handed == Handed::Prepare;
                let named = |base: &str| {
                    let recorder = handed.recorder(base, span);
                    if made_observed {
                        Ident::new(&format!("{recorder}_text"), span)
                    } else {
                        recorder
                    }
                };
                let (record, operation) = if self.beyond_attempt {
                    let record = named("record_sql");
                    let operation = &self.names.operation;
                    (quote!(#private::#record), Some(quote!(, #operation)))
                } else {
                    let attempt = &self.names.attempt;
                    let observe = named("observe");
                    (quote!(#attempt.#observe), None)
                };
                *sql = Expr::Verbatim(scanned(private, sql, &record, operation, span));
            }
            // In a `read_only` function, whatever its mode: a body of one call is expanded
            // per call (`one_call.rs`), and its constant is checked all the same.
            (Sql::Const(expr, handed), _) if self.names.read_only => {
                let message = READ_ONLY_CONST_WRITE;
                let scanner = handed.scanner(expr.span());
                *sql = Expr::Verbatim(quote_spanned! {expr.span()=>
                    {
                        const {
                            if !#private::#scanner(#expr) {
                                ::core::panic!(#message);
                            }
                        };
                        #sql
                    }
                });
            }
            _ => {}
        }
        self.all_sql.push(judged.clone());
        out.sql.push(judged);
    }

    /// The `Access` expression of statements: known at compile time where the SQL is
    /// visible, read from slots where it was scanned.
    ///
    /// The literals' verdicts are joined here, into one `Access::Write` if any of them
    /// writes and nothing if all read (`ReadOnly.and(access)` is `access`): each call the
    /// expansion makes in the user's function is a call rustc and LLVM compile there, with
    /// its unwind edge through the state machine, and two for every literal (`judged`, then
    /// `and`) cost a read about 4 % of the instructions rustc spends on it.
    pub(super) fn access(&self, statements: &Statements, slot: Option<&Ident>) -> TokenStream {
        let private = &self.names.private;
        let literal_writes = statements.sql.iter().any(|sql| {
            matches!(
                sql,
                Sql::Literal {
                    read_only: false,
                    ..
                }
            )
        });
        let mut parts: Vec<TokenStream> = literal_writes
            .then(|| quote!(#private::Access::Write))
            .into_iter()
            .collect();
        parts.extend(statements.sql.iter().filter_map(|sql| match sql {
            Sql::Literal { .. } => None,
            Sql::Const(expr, handed) => Some(const_access(private, expr, *handed)),
            Sql::Bound(_, verdict) => Some(quote!(#verdict)),
            Sql::Unseen => Some(quote!(#private::Access::Unseen)),
            // Read from the slots below.
            Sql::Dynamic => None,
        }));
        for known in &statements.known_verdicts {
            parts.push(quote!(#known));
        }
        for (check, _) in &statements.checks {
            parts.push(quote!(#check));
        }
        if statements.scans > 0
            && let Some(slot) = slot
        {
            parts.push(quote!((&#slot).access()));
        }
        let mut parts = parts.into_iter();
        let first = parts
            .next()
            .unwrap_or_else(|| quote!(#private::Access::ReadOnly));
        parts.fold(first, |access, part| quote!(#access.and(#part)))
    }

    /// Reads a `batch(..)` argument: `vec![..]` or `[..]` of statements is seen through;
    /// anything else (a `Vec` built elsewhere) is out of sight.
    pub(super) fn batch_statements(
        &mut self,
        arg: &mut Expr,
        slot: Option<&Ident>,
        out: &mut Statements,
    ) {
        match arg {
            Expr::Array(array) => {
                for element in &mut array.elems {
                    self.statement(element, slot, out);
                }
            }
            Expr::Macro(mac) if mac.mac.path.is_ident("vec") => {
                let parsed =
                    Punctuated::<Expr, Token![,]>::parse_terminated.parse2(mac.mac.tokens.clone());
                match parsed {
                    Ok(mut elements) if !elements.is_empty() => {
                        for element in &mut elements {
                            self.statement(element, slot, out);
                        }
                        mac.mac.tokens = elements.into_token_stream();
                    }
                    _ => {
                        out.sql.push(Sql::Unseen);
                        out.held_list = true;
                    }
                }
            }
            Expr::Paren(inner) => self.batch_statements(&mut inner.expr, slot, out),
            Expr::Group(inner) => self.batch_statements(&mut inner.expr, slot, out),
            _ => {
                out.sql.push(Sql::Unseen);
                out.held_list = true;
            }
        }
    }
}

/// Whether `sql`, handed to a `prepare`, is a literal that may write. Such a statement
/// counts as a write whatever prepares it, so its receiver is not probed
/// ([`Finder::database_check`]): a probe could only make it out of sight, which is retried
/// alike, and it is a dispatch less for rustc to resolve (most statements that write are
/// literals).
fn writes(sql: &Expr) -> bool {
    judge(sql, Handed::Prepare).literal_write().is_some()
}

const READ_ONLY_CONST_WRITE: &str = "#[d1_retry(read_only)]: this SQL constant may write; \
     remove `read_only` (each execution is then retried on its own, a write only when D1 \
     was not reached), or, if running the whole body twice is safe, write \
     #[d1_retry(idempotent)] instead";
