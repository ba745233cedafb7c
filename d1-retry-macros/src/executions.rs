//! The D1 executions of a body: found by name, judged by their SQL, and rewritten so that
//! each is retried on its own.
//!
//! An execution is a call of `first`, `all`, `run`, `raw`, `raw_js_value`, `batch`,
//! `exec` or `dump`, or an `.await` on a statement. The attribute cannot see types, so a
//! rewritten call goes through the runtime's receiver dispatch, which retries it only if
//! the receiver is a `D1Receiver` and otherwise makes the call exactly as written.
//!
//! A call is rewritten only where the rewrite cannot break code that compiles: awaited
//! where it is written (its receiver is bound in a `match`, whose temporaries live as long
//! as the original ones), or with a variable or field as receiver (used in place). Its
//! receiver chain and arguments are evaluated once, as written; only the call is made
//! again, with clones of the arguments.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, ExprMethodCall, Ident, Local, Macro, Pat, Stmt, Token};

use crate::by_value::{self, PrepareCall};
use crate::sql::{Handed, Sql, judge};

/// The executions of a statement (not of a database), which hold their SQL.
const STATEMENT_EXECUTIONS: [&str; 5] = ["first", "all", "run", "raw", "raw_js_value"];

/// Method names that run SQL on a D1 statement, session or database.
const EXECUTIONS: [&str; 8] = [
    "first",
    "all",
    "run",
    "raw",
    "raw_js_value",
    "batch",
    "exec",
    "dump",
];

/// Macros whose arguments are expressions evaluated once, where executions are found as
/// anywhere else. `assert!` and `dbg!` are not among them: they print their argument's
/// tokens, which would show the rewrite.
const EXPRESSION_MACROS: [&str; 11] = [
    "vec",
    "format",
    "format_args",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "join",
    "try_join",
];

/// Macros that, called as a statement, bind no name of the caller's but those in their
/// tokens (which [`Bindings`] counts): std's printing, assertion and panicking macros,
/// `tracing`'s and `log`'s events, workers-rs's `console_*!`, anyhow's and eyre's
/// `ensure!` and `bail!`, and the [`EXPRESSION_MACROS`]. A `macro_rules!` macro can only
/// bind a name it is handed, but a procedural one may expand to a `let` of any name with
/// the caller's hygiene: in a body that calls any other macro as a statement, no
/// statement variable is followed.
const STATEMENT_MACROS: [&str; 24] = [
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "panic",
    "todo",
    "unimplemented",
    "unreachable",
    "dbg",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
    "event",
    "log",
    "console_log",
    "console_debug",
    "console_warn",
    "console_error",
    "ensure",
    "bail",
];

/// The arguments of a macro call read as expressions: a comma-separated list, or
/// `vec!`'s `element; count`.
enum MacroArguments {
    List(Punctuated<Expr, Token![,]>),
    Repeat(Box<Expr>, Token![;], Box<Expr>),
}

impl MacroArguments {
    /// The arguments of a call of one of the [`EXPRESSION_MACROS`], when they parse.
    fn of_expression_macro(mac: &Macro) -> Option<Self> {
        let name = macro_name(mac)?;
        if !EXPRESSION_MACROS.contains(&name.as_str()) {
            return None;
        }
        Self::parse(mac.tokens.clone())
    }

    fn parse(tokens: TokenStream) -> Option<Self> {
        if let Ok(args) = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(tokens.clone()) {
            return Some(MacroArguments::List(args));
        }
        let repeat = |input: syn::parse::ParseStream<'_>| {
            Ok(MacroArguments::Repeat(
                input.parse()?,
                input.parse()?,
                input.parse()?,
            ))
        };
        repeat.parse2(tokens).ok()
    }
}

/// The macro's name, the last segment of its path (`join` for `tokio::join!`).
fn macro_name(mac: &Macro) -> Option<String> {
    mac.path.segments.last().map(|last| last.ident.to_string())
}

/// How the body is retried.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Each execution on its own (the default).
    PerCall,
    /// The whole body, which the user vouched for: executions are found and judged but
    /// not rewritten; under `read_only`, dynamic SQL is observed by the attempt.
    WholeBody { read_only: bool },
}

/// One execution found in the body.
pub(crate) struct Execution {
    /// `first`, `batch`, ... or `.await` for a statement awaited directly.
    pub(crate) method: String,
    /// The SQL of the statements it runs (a `batch` runs several).
    pub(crate) sql: Vec<Sql>,
    /// Whether the call was rewritten to be retried (per-call mode only).
    pub(crate) rewritten: bool,
    /// Whether SQL out of sight is read from the statements when the execution begins: a
    /// statement's own rewritten execution, or a rewritten `batch` of a list out of sight
    /// (`batch_sql.rs`); else it counts as a write.
    pub(crate) held: bool,
}

/// What the expansion's generated code is called and where the runtime is.
pub(crate) struct Names {
    /// `::d1_retry::__private`, or the `crate = ".."` path's.
    pub(crate) private: TokenStream,
    /// The `&Call` every rewritten execution shares.
    pub(crate) call: Ident,
    /// `&Call::new(..)`: a schedule of its own for an async block, which may have to outlive
    /// the function.
    pub(crate) call_init: TokenStream,
    /// The whole-body attempt record that observes dynamic SQL under `read_only`.
    pub(crate) attempt: Ident,
    /// The function's `OperationName`, by value: what a `read_only` body's observation
    /// logs where it cannot borrow the attempt's record, which holds it.
    pub(crate) operation: TokenStream,
    /// The policy may have time limits (time-limit options, or a `policy = PATH` the macro
    /// cannot read): executions are raced against them. Otherwise they hold no timer.
    pub(crate) timed: bool,
    /// The function takes `self` by reference, so nothing reached from `self` can be moved
    /// out: a `prepare` that takes a database by value cannot be called on `self.db`, and
    /// the lookup that refuses one (`by_value.rs`) is not made there, where most databases
    /// are, and where it cost rustc an eighth more of a read's work for nothing (section 4
    /// of BENCHMARKS.md, twenty-first round).
    pub(crate) self_borrowed: bool,
}

/// What the body holds.
pub(crate) struct Found {
    pub(crate) executions: Vec<Execution>,
    /// Every SQL text handed to `prepare` or `exec` in the body, judged.
    pub(crate) sql: Vec<Sql>,
    /// A time-limited execution not awaited where it is made reads its error through the
    /// `Probe` traits, which the function must then import (an import that is not needed
    /// is one more candidate for every method call of the body to be checked against).
    pub(crate) probes_errors: bool,
    /// A `read_only` body runs a statement made out of sight, which the attempt is told of
    /// through the receiver probe's traits ([`Finder::observed`]), which the function must
    /// then import.
    pub(crate) observes_held: bool,
}

/// Finds the executions of `block` and, in per-call mode, rewrites them.
pub(crate) fn rewrite(block: &mut Block, mode: Mode, names: &Names, params: &[Ident]) -> Found {
    let mut bindings = Bindings::default();
    for param in params {
        bindings.bound(param);
    }
    bindings.visit_block(block);
    let mut finder = Finder {
        mode,
        names,
        bindings,
        statements: HashMap::new(),
        sighted: HashSet::new(),
        pending: HashSet::new(),
        executions: Vec::new(),
        all_sql: Vec::new(),
        in_move_closure: false,
        in_return_position: false,
        next_slot: 0,
        probes_errors: false,
        observes_held: false,
        in_foreign_macro: false,
        beyond_attempt: false,
    };
    finder.visit_body(block);
    Found {
        executions: finder.executions,
        sql: finder.all_sql,
        probes_errors: finder.probes_errors,
        observes_held: finder.observes_held,
    }
}

/// The name `ident` binds or reads: `r#stmt` and `stmt` are one name to rustc, so they
/// must be one to the attribute, or a statement shadowed through the other spelling would
/// be judged by the SQL it shadows (a write retried as the read it replaced).
fn name(ident: &Ident) -> String {
    syn::ext::IdentExt::unraw(ident).to_string()
}

/// How often each name is bound or assigned in the body: a statement variable is
/// followed only when its name is bound once and never assigned.
#[derive(Default)]
struct Bindings {
    counts: HashMap<String, usize>,
    /// The body calls a macro as a statement that may bind names out of sight
    /// ([`STATEMENT_MACROS`]): no name counts as bound once.
    opaque: bool,
}

impl Bindings {
    fn bound(&mut self, ident: &Ident) {
        *self.counts.entry(name(ident)).or_default() += 1;
    }

    /// Whether the body binds `ident` anywhere: then it may name a local, even when it is
    /// written like a constant.
    fn any(&self, ident: &Ident) -> bool {
        self.counts.contains_key(&name(ident))
    }

    fn unique(&self, ident: &Ident) -> bool {
        !self.opaque && self.counts.get(&name(ident)) == Some(&1)
    }

    /// Counts every name in a macro's tokens as bound twice: a statement macro may expand
    /// to `let $name = ..;`, which binds the caller's name (`bind!(stmt = db.prepare(..))`
    /// shadows `stmt` after it), and the attribute cannot see what a macro expands to.
    fn bound_in(&mut self, tokens: TokenStream) {
        for token in tokens {
            match token {
                TokenTree::Ident(ident) => {
                    self.bound(&ident);
                    self.bound(&ident);
                }
                TokenTree::Group(group) => self.bound_in(group.stream()),
                TokenTree::Punct(_) | TokenTree::Literal(_) => {}
            }
        }
    }
}

impl Visit<'_> for Bindings {
    fn visit_pat_ident(&mut self, pat: &syn::PatIdent) {
        self.bound(&pat.ident);
        visit::visit_pat_ident(self, pat);
    }

    /// `let stmt = &stmt;`, `let stmt = stmt.clone();` (how a statement is handed to the
    /// `async move` blocks of a `join_all`) and `let stmt = stmt.bind(..)?;` do not count
    /// their name: each binds it to a statement with the SQL the name already means, so
    /// while every other binding is counted, all of them mean one SQL. The names bound
    /// inside the initialiser (a block among `bind`'s arguments) are counted.
    fn visit_local(&mut self, local: &Local) {
        match &local.init {
            Some(init) if same_statement_again(local) => self.visit_expr(&init.expr),
            _ => visit::visit_local(self, local),
        }
    }

    fn visit_stmt_macro(&mut self, stmt: &syn::StmtMacro) {
        let known = macro_name(&stmt.mac).is_some_and(|name| {
            STATEMENT_MACROS.contains(&name.as_str()) || EXPRESSION_MACROS.contains(&name.as_str())
        });
        self.opaque |= !known;
        visit::visit_stmt_macro(self, stmt);
    }

    /// An expression macro's arguments are visited as the finder visits them (their
    /// blocks and closures bind names like any other); any other macro's names are all
    /// taken as bound twice.
    fn visit_macro(&mut self, mac: &Macro) {
        match MacroArguments::of_expression_macro(mac) {
            Some(MacroArguments::List(args)) => {
                for arg in &args {
                    self.visit_expr(arg);
                }
            }
            Some(MacroArguments::Repeat(element, _, count)) => {
                self.visit_expr(&element);
                self.visit_expr(&count);
            }
            None => self.bound_in(mac.tokens.clone()),
        }
    }

    fn visit_expr_assign(&mut self, assign: &syn::ExprAssign) {
        if let Expr::Path(path) = &*assign.left
            && let Some(ident) = path.path.get_ident()
        {
            // Counted as a second binding: the name no longer means one statement.
            self.bound(ident);
            self.bound(ident);
        }
        visit::visit_expr_assign(self, assign);
    }

    fn visit_item(&mut self, _: &syn::Item) {}
}

/// Whether `local` binds a name again to a statement derived from what the name already
/// means (`let stmt = &stmt;`, `let stmt = stmt.clone();`,
/// `let stmt = stmt.bind(&[id.into()])?;`): the same SQL under the same name, bound
/// immutably and with no `else`.
fn same_statement_again(local: &Local) -> bool {
    let pat = match &local.pat {
        Pat::Ident(pat) => pat,
        Pat::Type(typed) => match &*typed.pat {
            Pat::Ident(pat) => pat,
            _ => return false,
        },
        _ => return false,
    };
    if pat.mutability.is_some() || pat.by_ref.is_some() || pat.subpat.is_some() {
        return false;
    }
    match &local.init {
        Some(init) if init.diverge.is_none() => derived_in_every_arm(&init.expr, &pat.ident),
        _ => false,
    }
}

/// Whether `expr` is derived from `name` ([`derived_from`]), or chooses among arms that
/// each are or leave (`let stmt = if let Some(id) = id { stmt.bind(&[id])? } else {
/// stmt.clone() };`).
fn derived_in_every_arm(expr: &Expr, name: &Ident) -> bool {
    match expr {
        Expr::Return(_) | Expr::Continue(_) | Expr::Break(_) => true,
        _ => match arm_values(expr) {
            Some(arms) => arms
                .into_iter()
                .all(|value| value.is_some_and(|value| derived_in_every_arm(value, name))),
            None => derived_from(expr).is_some_and(|from| from == name),
        },
    }
}

/// The values an `if`/`else`, a `match` or an unlabelled block chooses among, one per arm:
/// the arm's expression, or `None` for a block with statements before its value. `None`
/// for any other expression (an `if` without `else` chooses no value).
fn arm_values(expr: &Expr) -> Option<Vec<Option<&Expr>>> {
    fn tail(block: &Block) -> Option<&Expr> {
        match block.stmts.as_slice() {
            [Stmt::Expr(value, None)] => Some(value),
            _ => None,
        }
    }
    match expr {
        Expr::If(branch) => {
            let (_, otherwise) = branch.else_branch.as_ref()?;
            Some(vec![tail(&branch.then_branch), Some(&**otherwise)])
        }
        Expr::Match(choice) => Some(choice.arms.iter().map(|arm| Some(&*arm.body)).collect()),
        Expr::Block(block) if block.label.is_none() => Some(vec![tail(&block.block)]),
        _ => None,
    }
}

/// The variable a statement expression is derived from, through what [`Finder::statement`]
/// passes through to its receiver: `?`, parentheses, `&` and [`keeps_the_sql`]'s calls.
fn derived_from(expr: &Expr) -> Option<&Ident> {
    match expr {
        Expr::Paren(inner) => derived_from(&inner.expr),
        Expr::Group(inner) => derived_from(&inner.expr),
        Expr::Try(inner) => derived_from(&inner.expr),
        Expr::Reference(reference) if reference.mutability.is_none() => {
            derived_from(&reference.expr)
        }
        Expr::MethodCall(call) if call.turbofish.is_none() && keeps_the_sql(call) => {
            derived_from(&call.receiver)
        }
        // `get_ident` is `None` for `<T>::s` too: a qualified path has a leading `::`.
        Expr::Path(path) => path.path.get_ident(),
        _ => None,
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

/// `.bind(..)`, `.bind_refs(..)` or `.clone()`: a statement with its receiver's SQL.
fn keeps_the_sql(call: &ExprMethodCall) -> bool {
    matches!(call.method.to_string().as_str(), "bind" | "bind_refs")
        || (call.method == "clone" && call.args.is_empty())
}

/// What is known of a statement variable's SQL.
#[derive(Clone)]
struct Known {
    /// One text, or one per arm of an `if` or a `match` that chose the statement.
    sql: Vec<Sql>,
    /// Its `Access` parts taken where it was bound, from `Copy` locals, so that `async move`
    /// blocks may each take a copy: what its slot recorded (dynamic SQL, a receiver probed
    /// as it was evaluated), and its `prepare`'s receiver probed by type.
    verdicts: Vec<TokenStream>,
}

struct Finder<'a> {
    mode: Mode,
    names: &'a Names,
    bindings: Bindings,
    /// `let stmt = db.prepare(..)` bindings seen so far.
    statements: HashMap<String, Known>,
    /// In a `read_only` body, the names bound once to a statement made in sight
    /// ([`Finder::made_in_sight`]).
    sighted: HashSet<String>,
    /// The names bound once to an execution's future (`let pending = stmt.first(None);`):
    /// `pending.await` awaits that future, not a statement ([`Finder::awaited_statement`]).
    pending: HashSet<String>,
    executions: Vec<Execution>,
    all_sql: Vec<Sql>,
    in_move_closure: bool,
    /// Inside the function's returned value (its tail, a `return`, an `Ok(..)` of either).
    in_return_position: bool,
    next_slot: usize,
    /// See [`Found::probes_errors`].
    probes_errors: bool,
    /// See [`Found::observes_held`].
    observes_held: bool,
    /// Inside the arguments of a macro not known to take expressions (not one of the
    /// [`EXPRESSION_MACROS`]): its tokens may be matched as they are written, so nothing is
    /// rewritten there but the SQL `read_only` must judge.
    in_foreign_macro: bool,
    /// Inside an `async` block or a closure, which may have to own all it holds (a spawned
    /// task's future) or become a `fn` pointer: a `read_only` body's observation there does
    /// not borrow the attempt's record, it counts on the thread ([`Finder::observed`]).
    beyond_attempt: bool,
}

/// The statements an execution runs, and the dynamic SQL to scan on the way.
#[derive(Default)]
struct Statements {
    sql: Vec<Sql>,
    /// Verdicts of statement variables ([`Known::verdicts`]), read at the execution.
    known_verdicts: Vec<TokenStream>,
    /// Dynamic SQL arguments and receivers of `prepare` inside the execution's own
    /// expression, recorded into the execution's slot as they are evaluated.
    scans: usize,
    /// Receivers of `prepare` that are places, probed by type before the statement is
    /// evaluated ([`Finder::database_check`]): each a local holding the verdict the
    /// dispatch picked (an `Access`, one `Copy` byte, read where the execution begins and
    /// not after, so no future keeps it across an await: the happy path's futures are the
    /// sizes they were), and its initialiser.
    checks: Vec<(Ident, TokenStream)>,
    /// A `batch`'s list is out of sight (collected, passed in): its statements can be read
    /// where the execution begins, if the list is evaluated before it.
    held_list: bool,
}

impl Finder<'_> {
    fn fresh_slot(&mut self, hint: &str) -> Ident {
        self.next_slot += 1;
        format_ident!(
            "__d1_retry_sql_{}_{}",
            hint,
            self.next_slot,
            span = Span::mixed_site()
        )
    }

    /// What a statement expression runs: follows `prepare(..)`, `Type::prepare(db, ..)`,
    /// `query!(db, ..)`, `.bind(..)`, `?` and statement variables. In per-call mode the
    /// dynamic SQL met on the way is wrapped to be scanned into `slot`.
    fn statement(&mut self, expr: &mut Expr, slot: Option<&Ident>, out: &mut Statements) {
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
    fn alternatives(&mut self, expr: &mut Expr, slot: &Ident, out: &mut Statements) {
        let before = out.sql.len();
        match expr {
            Expr::If(branch) => match &mut branch.else_branch {
                Some((_, otherwise)) => {
                    match only_tail(&mut branch.then_branch) {
                        Some(value) => self.arm(value, slot, out),
                        None => {
                            // Out of sight, as `out_of_sight` makes an arm.
                            let private = &self.names.private;
                            let record = syn::parse_quote!(#slot.join(#private::Access::Unseen););
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
    fn arm(&mut self, arm: &mut Expr, slot: &Ident, out: &mut Statements) {
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
                            #slot.join(#private::Access::ReadOnly #(.and(#accesses))*);
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
    fn out_of_sight(&mut self, arm: &mut Expr, slot: &Ident, out: &mut Statements) {
        let span = arm.span();
        let private = &self.names.private;
        *arm = Expr::Verbatim(quote_spanned! {span=>
            {
                #slot.join(#private::Access::Unseen);
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
    fn database_check(
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
        let dispatch = |receiver: TokenStream| quote_spanned!(span=> (&&#receiver).d1_prepare());
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
            Database::Value => bare.to_token_stream(),
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
                    #slot.join(#probe);
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
    fn type_check(&mut self, ty: TokenStream, out: &mut Statements) -> bool {
        let private = &self.names.private;
        let site = Ident::new("__d1_retry_site", Span::mixed_site());
        let check = quote_spanned! {ty.span()=>
            {
                let #site = (&&#private::Receiver::<#ty>::named()).d1_prepare();
                #site
            }
        };
        out.checks.push((self.fresh_slot("db"), check));
        true
    }

    /// Judges SQL handed to `prepare` or `exec` (`handed`), wrapping dynamic SQL to be
    /// scanned (per-call) or observed (whole-body `read_only`), and constant SQL to be
    /// checked (whole-body `read_only`).
    fn sql_argument(
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
                    *sql = Expr::Verbatim(scanned(private, sql, &quote!(#slot.#scan), None, span));
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
                let (record, operation) = if self.beyond_attempt {
                    let record = handed.recorder("record_sql", span);
                    let operation = &self.names.operation;
                    (quote!(#private::#record), Some(quote!(, #operation)))
                } else {
                    let attempt = &self.names.attempt;
                    let observe = handed.recorder("observe", span);
                    (quote!(#attempt.#observe), None)
                };
                *sql = Expr::Verbatim(scanned(private, sql, &record, operation, span));
            }
            (Sql::Const(expr, handed), Mode::WholeBody { read_only: true }) => {
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
    fn access(&self, statements: &Statements, slot: Option<&Ident>) -> TokenStream {
        let private = &self.names.private;
        let mut parts: Vec<TokenStream> = statements
            .sql
            .iter()
            .filter_map(|sql| match sql {
                Sql::Literal { read_only, .. } => {
                    Some(quote!(#private::Access::judged(#read_only)))
                }
                Sql::Const(expr, handed) => Some(const_access(private, expr, *handed)),
                Sql::Bound(_, verdict) => Some(quote!(#verdict)),
                Sql::Unseen => Some(quote!(#private::Access::Unseen)),
                // Read from the slots below.
                Sql::Dynamic => None,
            })
            .collect();
        for known in &statements.known_verdicts {
            parts.push(quote!(#known));
        }
        for (check, _) in &statements.checks {
            parts.push(quote!(#check));
        }
        if statements.scans > 0
            && let Some(slot) = slot
        {
            parts.push(quote!(#slot.access()));
        }
        let mut parts = parts.into_iter();
        let first = parts
            .next()
            .unwrap_or_else(|| quote!(#private::Access::ReadOnly));
        parts.fold(first, |access, part| quote!(#access.and(#part)))
    }

    /// Reads a `batch(..)` argument: `vec![..]` or `[..]` of statements is seen through;
    /// anything else (a `Vec` built elsewhere) is out of sight.
    fn batch_statements(&mut self, arg: &mut Expr, slot: Option<&Ident>, out: &mut Statements) {
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

    /// Handles an execution call; `awaited` when `.await` follows it where it is written.
    /// Returns the rewritten expression (without the `.await`), or `None` to leave it.
    fn execution(&mut self, call: &mut ExprMethodCall, awaited: bool) -> Option<TokenStream> {
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
            // the SQL it holds, as its execution begins, and so is a batch's list.
            let observed = self.observes(call).then(|| self.observed(call, awaited));
            if method == "batch" {
                self.observe_list(call);
            }
            self.executions.push(Execution {
                method,
                sql: statements.sql,
                rewritten: false,
                held: false,
            });
            return observed;
        }
        let place = is_place(&call.receiver);
        // A future returned from the function, or made in a `move` closure, may outlive the
        // call's schedule: left as written unless awaited here.
        let rewritable = awaited || (place && !self.in_move_closure && !self.in_return_position);
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
        // A `batch` of a list out of sight: its one argument is bound (`kept`, or the first
        // of the stored execution's tuple) before the execution begins, so the statements it
        // holds can be read there.
        let held_list = method == "batch" && statements.held_list;
        let held = match method.as_str() {
            "batch" => held_list && rewritable,
            "exec" | "dump" => false,
            _ => rewritable,
        };
        self.executions.push(Execution {
            method,
            sql: statements.sql.clone(),
            rewritten: rewritable,
            held,
        });
        if !rewritable {
            return None;
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
        let values: Vec<&Expr> = call.args.iter().collect();
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
        let site = |receiver: &TokenStream| {
            // A stored execution's access: the site's answer about the call joins it
            // before the closure is made, so that a method of another type taking
            // `&mut self` is borrowed mutably by the closure alone.
            let stored_access = |access: &TokenStream| {
                quote_spanned! {span=>
                    (&&#private::Receiver::of(&#receiver)).d1_site().access(#access, &#receiver, #own)
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
                let begin = quote_spanned! {span=>
                    (&&#private::Receiver::of(&#receiver)).d1_site()
                        .#begin_method(#call_ident, #access, &#receiver, #own)
                };
                let attempt = quote_spanned! {span=>
                    #execution.#attempt_method(#receiver #dot #name #turbofish (#(#args),*) #timeouts).await
                };
                // On a receiver that is not D1 the loop never turns (see `PlainExecution`).
                let arms = if values.is_empty() {
                    quote_spanned! {span=>
                        {
                            #[allow(clippy::never_loop)]
                            mut #execution => loop {
                                match #attempt {
                                    ::core::ops::ControlFlow::Break(#result) => break #result,
                                    ::core::ops::ControlFlow::Continue(#again) => #execution.again(#again),
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
                        quote_spanned!(span=> let #(#args)* = #execution.take(&mut #kept);)
                    } else {
                        quote_spanned!(span=> let (#(#args,)*) = #execution.take(&mut #kept);)
                    };
                    quote_spanned! {span=>
                        {
                            #kept => match #begin {
                                #[allow(clippy::never_loop)]
                                mut #execution => {
                                    let mut #kept = #execution.keep(#kept);
                                    loop {
                                        #take
                                        match #attempt {
                                            ::core::ops::ControlFlow::Break(#result) => break #result,
                                            ::core::ops::ControlFlow::Continue(#again) => #execution.again(#again),
                                        }
                                    }
                                }
                            }
                        }
                    }
                };
                if values.is_empty() {
                    quote_spanned!(whole=> match #begin #arms)
                } else if values.len() == 1 {
                    quote_spanned!(whole=> match #(#values)* #arms)
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
                let site = if let Some(classify) = &timed {
                    quote_spanned! {span=>
                        (&&#private::Receiver::of(&#receiver)).d1_site()
                            .execute(#call_ident, #arguments, #access, |(#(#args,)*)| #receiver #dot #name #turbofish (#(#args),*))
                            #classify
                    }
                } else {
                    quote_spanned! {span=>
                        (&&#private::Receiver::of(&#receiver)).d1_site()
                            .run(#call_ident, #arguments, #access, |(#(#args,)*)| #receiver #dot #name #turbofish (#(#args),*))
                    }
                };
                match read_list {
                    Some(read_list) => quote_spanned! {span=>
                        match (#(#values,)*) {
                            #kept => {
                                #read_list
                                #site
                            }
                        }
                    },
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
            quote_spanned! {whole=>
                match &#receiver {
                    #recv => #site
                }
            }
        } else {
            let site = site(&recv.to_token_stream());
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

    /// Whether a `read_only` body made the statement `expr` in sight: a `prepare(..)`,
    /// `D1Database::prepare(db, ..)` (whose SQL `whole_body_sql` judges), through
    /// `.bind(..)`, `?`, a borrow, or a name bound once to one of them
    /// ([`sighted_binding`](Self::sighted_binding)). Anything else (a parameter, a field, a
    /// helper's statement, one chosen by `if`) is read where it runs
    /// ([`observed`](Self::observed)), which judges it exactly, at the price of reading its
    /// text.
    fn made_in_sight(&self, expr: &Expr) -> bool {
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
    fn observes(&self, call: &ExprMethodCall) -> bool {
        self.observing()
            && STATEMENT_EXECUTIONS.contains(&call.method.to_string().as_str())
            && !self.made_in_sight(&call.receiver)
    }

    /// Whether SQL out of sight can be observed here: in a `read_only` body, outside a
    /// foreign macro's tokens, which are not rewritten.
    fn observing(&self) -> bool {
        self.mode == (Mode::WholeBody { read_only: true }) && !self.in_foreign_macro
    }

    /// How an observation here hands the attempt an `Access`: through its record, borrowed,
    /// in the body itself; in an `async` block or a closure, which must not gain a borrow
    /// (it may have to own all it holds, or become a `fn` pointer), through the count of
    /// writes on the thread (`scope::record_held`), which the attempt reads after each poll.
    fn observe_access(&self, access: TokenStream, span: Span) -> TokenStream {
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
    fn observe_list(&mut self, call: &mut ExprMethodCall) {
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
    fn list_in_sight(&self, list: &Expr) -> bool {
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
    fn sighted_binding(&mut self, local: &Local) {
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
    fn observed(&mut self, call: &ExprMethodCall, awaited: bool) -> TokenStream {
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
    fn whole_body_sql(&mut self, expr: &mut Expr) {
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

    /// `statement.await`: the statement is `IntoFuture`, and a retry awaits a clone.
    fn awaited_statement(&mut self, base: &mut Expr) -> Option<TokenStream> {
        if self.mode != Mode::PerCall || !statement_like(base) || self.awaits_pending(base) {
            return None;
        }
        let slot = self.fresh_slot("await");
        let mut statements = Statements::default();
        self.statement(base, Some(&slot), &mut statements);
        self.executions.push(Execution {
            method: ".await".to_owned(),
            sql: statements.sql.clone(),
            rewritten: true,
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
        let (begin_method, attempt_method, timeouts) = self.loop_methods(span);
        let body = quote_spanned! {span=>
            match #base {
                #recv => match (&&#private::Receiver::of(&#recv)).d1_site()
                    .#begin_method(#call_ident, #access, &#recv, #own)
                {
                    #[allow(clippy::never_loop)]
                    mut #execution => {
                        let mut #recv = #execution.keep(#recv);
                        loop {
                            match #execution
                                .#attempt_method(::core::future::IntoFuture::into_future(
                                    #execution.take(&mut #recv),
                                ) #timeouts)
                                .await
                            {
                                ::core::ops::ControlFlow::Break(#result) => break #result,
                                ::core::ops::ControlFlow::Continue(#again) => #execution.again(#again),
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
    fn awaits_pending(&self, base: &Expr) -> bool {
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
    fn loop_methods(&self, span: Span) -> (Ident, Ident, Option<TokenStream>) {
        if !self.names.timed {
            let begin = Ident::new("begin_on", span);
            return (begin, Ident::new("attempt", span), None);
        }
        let private = &self.names.private;
        let marker = Ident::new("__d1_retry_marker", Span::mixed_site());
        let timeouts = quote_spanned! {span=>
            , |#marker| (&&#private::TimeoutInto::of(#marker)).d1_timeout()
        };
        let begin = Ident::new("begin_timed_on", span);
        (begin, Ident::new("attempt_timed", span), Some(timeouts))
    }

    /// `.classify_timed(..)`, for an execution not awaited where it is made (a future
    /// stored, joined or returned) in a function whose policy may have time limits: how the
    /// execution reads its error, and how it turns a `TimedOut` into that error. (Awaited
    /// sites go through the loop, `Execution::attempt` or `TimedExecution::attempt_timed`,
    /// and untimed stored ones through `Retrying::run`, which classify on their own.)
    fn classify_timed(&self, span: Span) -> TokenStream {
        let private = &self.names.private;
        let error = Ident::new("__d1_retry_error", Span::mixed_site());
        let marker = Ident::new("__d1_retry_marker", Span::mixed_site());
        // Spanned at the method, so an error type the runtime cannot read is reported there.
        quote_spanned! {span=>
            .classify_timed(
                |#error| (&&&&#private::Probe::of(#error)).d1_retry_classifier()(#error),
                |#marker| (&&#private::TimeoutInto::of(#marker)).d1_timeout(),
            )
        }
    }

    fn with_slot(&self, body: TokenStream, slot: &Ident, scans: usize) -> TokenStream {
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

    /// A `let stmt = <statement>;` whose SQL later executions of `stmt` can be judged by:
    /// the statements to place before the `let` and after it.
    fn statement_binding(&mut self, local: &mut Local) -> Option<(Vec<Stmt>, Vec<Stmt>)> {
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
            after.push(syn::parse_quote!(let #verdict = #slot.access();));
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
    fn visit_body(&mut self, block: &mut Block) {
        let tail = match block.stmts.last() {
            Some(Stmt::Expr(_, None)) => block.stmts.len() - 1,
            _ => block.stmts.len(),
        };
        self.visit_stmts(block, Some(tail));
    }

    fn visit_stmts(&mut self, block: &mut Block, tail: Option<usize>) {
        let mut stmts = Vec::with_capacity(block.stmts.len());
        for (index, mut stmt) in core::mem::take(&mut block.stmts).into_iter().enumerate() {
            if Some(index) == tail {
                let outer = core::mem::replace(&mut self.in_return_position, true);
                self.visit_stmt_mut(&mut stmt);
                self.in_return_position = outer;
                stmts.push(stmt);
                continue;
            }
            if let Stmt::Local(local) = &mut stmt {
                if let Some(name) = pending_binding(local) {
                    self.pending.insert(name);
                }
                // The initialiser first: executions inside it are its own.
                if let Some(init) = &mut local.init {
                    self.visit_expr_mut(&mut init.expr);
                    if let Some((_, diverge)) = &mut init.diverge {
                        self.visit_expr_mut(diverge);
                    }
                }
                let (before, after) = match self.mode {
                    Mode::PerCall => self.statement_binding(local).unwrap_or_default(),
                    Mode::WholeBody { read_only } => {
                        if read_only {
                            self.sighted_binding(local);
                        }
                        Default::default()
                    }
                };
                stmts.extend(before);
                stmts.push(stmt);
                stmts.extend(after);
                continue;
            }
            self.visit_stmt_mut(&mut stmt);
            stmts.push(stmt);
        }
        block.stmts = stmts;
    }
}

impl VisitMut for Finder<'_> {
    fn visit_block_mut(&mut self, block: &mut Block) {
        self.visit_stmts(block, None);
    }

    fn visit_expr_return_mut(&mut self, node: &mut syn::ExprReturn) {
        let outer = core::mem::replace(&mut self.in_return_position, true);
        visit_mut::visit_expr_return_mut(self, node);
        self.in_return_position = outer;
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Await(awaited) => {
                let base = strip_parens_mut(&mut awaited.base);
                if let Expr::MethodCall(call) = base
                    && is_execution(call)
                {
                    visit_mut::visit_expr_method_call_mut(self, call);
                    if let Some(rewritten) = self.execution(call, true) {
                        *expr = Expr::Verbatim(rewritten);
                    }
                    return;
                }
                self.visit_expr_mut(base);
                if let Some(rewritten) = self.awaited_statement(base) {
                    *expr = Expr::Verbatim(rewritten);
                }
            }
            Expr::MethodCall(call) if is_execution(call) => {
                visit_mut::visit_expr_method_call_mut(self, call);
                if let Some(rewritten) = self.execution(call, false) {
                    *expr = Expr::Verbatim(rewritten);
                }
            }
            Expr::MethodCall(_) | Expr::Call(_) if self.mode != Mode::PerCall => {
                visit_mut::visit_expr_mut(self, expr);
                self.whole_body_sql(expr);
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
                if self.executions[before..].iter().any(|e| e.rewritten) {
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
                visit_mut::visit_expr_closure_mut(self, closure);
                self.in_move_closure = outer;
                self.beyond_attempt = beyond;
                if closure.capture.is_some()
                    && closure.asyncness.is_some()
                    && self.executions[before..].iter().any(|e| e.rewritten)
                {
                    let call = &self.names.call;
                    let init = &self.names.call_init;
                    let body = &closure.body;
                    *closure.body = syn::parse_quote!({ let #call = #init; #body });
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
            Mode::WholeBody { .. } => MacroArguments::parse(mac.tokens.clone()),
        };
        let name = macro_name(mac);
        let is_vec = name.as_deref() == Some("vec");
        let foreign = !name.is_some_and(|name| EXPRESSION_MACROS.contains(&name.as_str()));
        let outer = self.in_foreign_macro;
        self.in_foreign_macro |= foreign;
        match arguments {
            Some(MacroArguments::List(mut args)) => {
                for arg in &mut args {
                    if is_vec {
                        self.visit_element(arg);
                    } else {
                        self.visit_expr_mut(arg);
                    }
                }
                mac.tokens = args.into_token_stream();
            }
            Some(MacroArguments::Repeat(mut element, semi, count)) => {
                self.visit_element(&mut element);
                mac.tokens = quote!(#element #semi #count);
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
            rewritten: false,
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

/// The value of a block that has nothing but its value (`{ db.prepare(A) }`).
fn only_tail(block: &mut Block) -> Option<&mut Expr> {
    match block.stmts.as_mut_slice() {
        [Stmt::Expr(value, None)] => Some(value),
        _ => None,
    }
}

/// `body`, once the receivers of its `prepare` calls are probed ([`Statements::checks`]):
/// before the statement is evaluated, while each place still holds what it will be
/// prepared on (a `prepare` of the user's own may consume its receiver).
/// Spanned at the execution (`span`), the expression whose type diagnostics name.
fn with_checks(body: TokenStream, checks: &[(Ident, TokenStream)], span: Span) -> TokenStream {
    if checks.is_empty() {
        return body;
    }
    let locals = checks.iter().map(|(local, _)| local);
    let probes = checks.iter().map(|(_, probe)| probe);
    quote_spanned! {span=>
        match (#(#probes,)*) {
            (#(#locals,)*) => #body
        }
    }
}

/// The `Access` of the statements a `batch`'s list holds, read when it runs
/// (`batch_sql.rs`): the probe's traits imported in a block of their own, so that no other
/// call of the body is checked against them.
fn held_batch_access(private: &TokenStream, list: &TokenStream, span: Span) -> TokenStream {
    quote_spanned! {span=>
        {
            #[allow(unused_imports)]
            use #private::{ViaD1Statements as _, ViaOtherStatements as _};
            (&&#private::HeldBatch(&#list)).d1_batch_access()
        }
    }
}

/// The `Access` of constant SQL handed to `handed`, judged by the compiler where this
/// expression stands (spanned at the constant, so its errors point there).
fn const_access(private: &TokenStream, expr: &Expr, handed: Handed) -> TokenStream {
    let scanner = handed.scanner(expr.span());
    quote_spanned! {expr.span()=>
        #private::Access::judged(const { #private::#scanner(#expr) })
    }
}

/// `sql`, evaluated once, handed on unchanged after `record` saw its text (or `None` when
/// it is not text), followed by the arguments `more` holds (`, operation`).
fn scanned(
    private: &TokenStream,
    sql: &Expr,
    record: &TokenStream,
    more: Option<TokenStream>,
    span: Span,
) -> TokenStream {
    let value = Ident::new("__d1_retry_sql_value", Span::mixed_site());
    quote_spanned! {span=>
        match #sql {
            #value => {
                #[allow(unused_imports)]
                use #private::{ViaSqlOther as _, ViaSqlText as _};
                #record((&&#private::SqlProbe(&#value)).d1_text() #more);
                #value
            }
        }
    }
}

fn strip_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(inner) => strip_parens(&inner.expr),
        other => other,
    }
}

/// How the receiver of a `prepare` can be probed ([`Finder::database_check`]) without
/// changing what the code does.
enum Database {
    /// A place reached without a call, or a reference to one (`db`, `self.db`, `*db`,
    /// `dbs[0]`, `&self.db`, `store::DB`, a constant): probed by type before the statement
    /// is made. `borrowed` borrows it; a `variable` (a local or `self`, or a field of one)
    /// is borrowed where it stands, any other place inside a closure that is never called,
    /// since borrowing it would run code (`Index`, `Deref`, a constant's `Drop`).
    Place {
        borrowed: TokenStream,
        variable: bool,
    },
    /// A value (`env.d1("DB")?`, `self.db()`): moved through a `match` where it is
    /// evaluated, as the method call would take it.
    Value,
    /// A macro (a place or a value, the attribute cannot tell); a place reached through a
    /// call (`self.state().db`), which could be neither moved nor borrowed without
    /// changing what the call's temporaries live for; an element at an index that is not
    /// a literal (`dbs[i]`), which a closure would take by value (it may not be `Copy`),
    /// and a borrow would make immutable (its `prepare` may take `&mut self`).
    Unseen,
}

impl Database {
    /// How `expr`, the receiver of a `prepare` (parentheses stripped), can be probed.
    fn of(expr: &Expr) -> Database {
        match expr {
            Expr::Macro(_) => Database::Unseen,
            Expr::Reference(reference)
                if reference.mutability.is_none() && is_plain_place(&reference.expr) =>
            {
                Database::Place {
                    borrowed: expr.to_token_stream(),
                    variable: is_variable(&reference.expr),
                }
            }
            place if is_plain_place(place) => Database::Place {
                borrowed: quote!(&#place),
                variable: is_variable(place),
            },
            place if is_place_expression(place) => Database::Unseen,
            _ => Database::Value,
        }
    }
}

/// A place reached from `self` (`self.db`, `&self.db`, `self.dbs[0]`, `*self.db`), which
/// cannot be rebound.
fn rooted_at_self(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => path.qself.is_none() && path.path.is_ident("self"),
        Expr::Field(field) => rooted_at_self(&field.base),
        Expr::Index(index) => rooted_at_self(&index.expr),
        Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Deref(_)) => {
            rooted_at_self(&unary.expr)
        }
        Expr::Reference(reference) => rooted_at_self(&reference.expr),
        Expr::Paren(inner) => rooted_at_self(&inner.expr),
        Expr::Group(inner) => rooted_at_self(&inner.expr),
        _ => false,
    }
}

/// A local variable or `self` (a one-name path not written like a constant or a type), or
/// a field of one.
fn is_variable(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => {
            path.qself.is_none()
                && path.path.get_ident().is_some_and(|ident| {
                    name(ident).starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                })
        }
        Expr::Field(field) => is_variable(&field.base),
        Expr::Paren(inner) => is_variable(&inner.expr),
        Expr::Group(inner) => is_variable(&inner.expr),
        _ => false,
    }
}

/// A path, or a field, dereference or element of one (at a literal index, or at an index
/// that is itself borrowed), reached without a call: a closure that borrows it evaluates
/// nothing and moves nothing.
fn is_plain_place(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => path.qself.is_none(),
        Expr::Field(field) => is_plain_place(&field.base),
        Expr::Index(index) => {
            is_plain_place(&index.expr)
                && match &*index.index {
                    Expr::Lit(_) => true,
                    Expr::Reference(key) => key.mutability.is_none() && is_plain_place(&key.expr),
                    _ => false,
                }
        }
        Expr::Unary(unary) => {
            matches!(unary.op, syn::UnOp::Deref(_)) && is_plain_place(&unary.expr)
        }
        Expr::Paren(inner) => is_plain_place(&inner.expr),
        Expr::Group(inner) => is_plain_place(&inner.expr),
        _ => false,
    }
}

/// A place expression other than a variable or a field of one: indexing, a dereference, a
/// field of something computed. Moving out of it would not compile.
fn is_place_expression(expr: &Expr) -> bool {
    match expr {
        Expr::Index(_) => true,
        Expr::Unary(unary) => matches!(unary.op, syn::UnOp::Deref(_)),
        Expr::Field(_) => true,
        Expr::Group(inner) => is_place_expression(&inner.expr),
        Expr::Paren(inner) => is_place_expression(&inner.expr),
        _ => false,
    }
}

fn strip_parens_mut(expr: &mut Expr) -> &mut Expr {
    match expr {
        Expr::Paren(inner) => strip_parens_mut(&mut inner.expr),
        Expr::Group(inner) => strip_parens_mut(&mut inner.expr),
        other => other,
    }
}

/// The runtime's name of an execution's method, for the check that the receiver's type
/// has it as its own: a unit struct of `calls`, whose `D1Call::CALL` is its bit.
fn own_call(private: &TokenStream, method: &str, span: Span) -> TokenStream {
    let name = match method {
        "first" => "First",
        "all" => "All",
        "run" => "Run",
        "raw" => "Raw",
        "raw_js_value" => "RawJsValue",
        "batch" => "Batch",
        "exec" => "Exec",
        "dump" => "Dump",
        _ => "Await",
    };
    let name = Ident::new(name, span);
    quote_spanned!(span=> #private::calls::#name)
}

fn is_execution(call: &ExprMethodCall) -> bool {
    let method = call.method.to_string();
    if !EXECUTIONS.contains(&method.as_str()) {
        return false;
    }
    match method.as_str() {
        "batch" | "exec" => call.args.len() == 1,
        "first" => call.args.len() <= 1,
        _ => call.args.is_empty(),
    }
}

/// Any function path ending in `prepare`: a call that may make a statement.
fn is_prepare_path(func: &Expr) -> bool {
    matches!(func, Expr::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "prepare"))
}

/// `D1Database::<method>` or `D1DatabaseSession::<method>`, by any path
/// (`worker::D1Database::prepare`, `<D1Database>::exec`): a free `prepare(db, sql)`, a
/// `module::exec` or a trait's `<D1Database as Mine>::prepare` may be the user's own, build
/// any statement, or take something else than SQL (`Tasks::exec(&tasks, TIMEOUT_MS)`).
/// The type a path to a function names, as written: `D1Database` in
/// `worker::D1Database::prepare` (`worker::D1Database`), or `<D1Database>::prepare`.
fn path_type(func: &Expr) -> Option<TokenStream> {
    let Expr::Path(path) = func else {
        return None;
    };
    if let Some(qself) = &path.qself {
        return Some(qself.ty.to_token_stream());
    }
    let mut ty = path.path.clone();
    ty.segments.pop()?;
    // `pop` leaves the `::` that followed the type.
    let last = ty.segments.pop()?.into_value();
    ty.segments.push(last);
    Some(ty.to_token_stream())
}

fn is_d1_path(func: &Expr, method: &str) -> bool {
    let Expr::Path(path) = func else {
        return false;
    };
    let segments = &path.path.segments;
    let Some(last) = segments.last() else {
        return false;
    };
    if last.ident != method {
        return false;
    }
    let is_database = |ident: &Ident| ident == "D1Database" || ident == "D1DatabaseSession";
    match &path.qself {
        // `<D1Database>::prepare`, not `<D1Database as Trait>::prepare`.
        Some(qself) => {
            qself.position == 0
                && segments.len() == 1
                && matches!(&*qself.ty, syn::Type::Path(ty)
                    if ty.qself.is_none()
                        && ty.path.segments.last().is_some_and(|s| is_database(&s.ident)))
        }
        None => segments.len() >= 2 && is_database(&segments[segments.len() - 2].ident),
    }
}

/// `worker::query!` (or `::worker::query!`): a bare `query!` may be the user's own macro,
/// which may build any statement from its arguments.
fn is_worker_query(path: &syn::Path) -> bool {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    names == ["worker", "query"]
}

/// A variable, `self`, or a field of one: used in place, never moved by the rewrite.
fn is_place(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => path.qself.is_none() && path.path.segments.len() == 1,
        Expr::Field(field) => is_place(&field.base),
        Expr::Paren(inner) => is_place(&inner.expr),
        Expr::Group(inner) => is_place(&inner.expr),
        _ => false,
    }
}

/// An expression that may be a statement: a variable, a field, or a `prepare(..)`,
/// `.bind(..)`, `query!(..)` chain, or a shared borrow of one.
fn statement_like(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(inner) => statement_like(&inner.expr),
        Expr::Group(inner) => statement_like(&inner.expr),
        Expr::Try(inner) => statement_like(&inner.expr),
        // Not `&mut`: the statement may be replaced through it (`*stmt = ..`, a helper).
        Expr::Reference(inner) if inner.mutability.is_none() => statement_like(&inner.expr),
        Expr::MethodCall(call) => {
            matches!(
                call.method.to_string().as_str(),
                "bind" | "bind_refs" | "prepare"
            )
        }
        Expr::Call(call) => is_prepare_path(&call.func),
        Expr::Macro(mac) => mac
            .mac
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "query"),
        other => is_place(other),
    }
}

/// An `if`/`else`, a `match` or a block whose value may be a statement chosen by it
/// ([`Finder::alternatives`]): one of its arms is [`statement_like`].
fn chosen(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(inner) => chosen(&inner.expr),
        _ => arm_values(expr).is_some_and(|arms| {
            arms.into_iter()
                .flatten()
                .any(|value| statement_like(value) || chosen(value))
        }),
    }
}

const READ_ONLY_CONST_WRITE: &str = "#[d1_retry(read_only)]: this SQL constant may write; \
     remove `read_only` (each execution is then retried on its own, a write only when D1 \
     was not reached), or, if running the whole body twice is safe, write \
     #[d1_retry(idempotent)] instead";

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            private: quote!(::d1_retry::__private),
            call: Ident::new("call", Span::call_site()),
            call_init: quote!(&CALL),
            attempt: Ident::new("attempt", Span::call_site()),
            operation: quote!(NAME),
            timed: false,
            self_borrowed: true,
        }
    }

    /// One line per execution: method, whether rewritten, and what its SQL is.
    fn found_in(body: &str, mode: Mode, params: &[&str]) -> (Vec<String>, String) {
        let mut block: Block = syn::parse_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let params: Vec<Ident> = params
            .iter()
            .map(|p| Ident::new(p, Span::call_site()))
            .collect();
        let found = rewrite(&mut block, mode, &names(), &params);
        let lines = found
            .executions
            .iter()
            .map(|execution| {
                let sql: Vec<&str> = execution
                    .sql
                    .iter()
                    .map(|sql| match sql {
                        Sql::Literal {
                            read_only: true, ..
                        } => "read",
                        Sql::Literal { .. } => "write",
                        Sql::Const(..) => "const",
                        Sql::Bound(..) => "bound const",
                        Sql::Dynamic => "dynamic",
                        Sql::Unseen => "unseen",
                    })
                    .collect();
                let rewritten = if execution.rewritten {
                    "retried"
                } else {
                    "as written"
                };
                format!("{} {rewritten} {}", execution.method, sql.join("+"))
            })
            .collect();
        (lines, block.into_token_stream().to_string())
    }

    fn per_call(body: &str) -> Vec<String> {
        found_in(body, Mode::PerCall, &[]).0
    }

    #[test]
    fn executions_and_their_sql() {
        assert_eq!(
            per_call(
                r#"{
                db.prepare("SELECT 1").bind(&[a])?.first::<Row>(None).await?;
                db.prepare("DELETE FROM t").run().await?;
                db.prepare(SQL).all().await?;
                db.prepare(sql).raw::<Row>().await?;
                D1Database::prepare(&db, "SELECT 2").first(None).await?;
                db.exec("SELECT 3").await?;
                db.exec(&text).await?;
                db.dump().await?;
                helper(&db).run().await?;
            }"#
            ),
            [
                "first retried read",
                "run retried write",
                "all retried const",
                "raw retried dynamic",
                "first retried read",
                "exec retried read",
                "exec retried dynamic",
                "dump retried read",
                "run retried unseen",
            ]
        );
    }

    #[test]
    fn statement_variables_are_followed_unless_rebound() {
        assert_eq!(
            per_call(
                r#"{
                let find = db.prepare("SELECT 1");
                find.bind(&[a])?.first(None).await?;
                let insert = db.prepare("INSERT INTO t VALUES (1)");
                insert.clone().run().await?;
                let dynamic = db.prepare(sql);
                dynamic.await?;
                let twice = db.prepare("SELECT 2");
                let twice = db.prepare("DELETE FROM t");
                twice.run().await?;
                let mut assigned = db.prepare("SELECT 3");
                assigned = other;
                assigned.run().await?;
            }"#
            ),
            [
                "first retried read",
                "run retried write",
                ".await retried dynamic",
                "run retried unseen",
                "run retried unseen",
            ]
        );
        // A parameter named like the variable makes the name ambiguous too.
        let (found, _) = found_in(
            r#"{ let stmt = db.prepare("SELECT 1"); stmt.run().await }"#,
            Mode::PerCall,
            &["stmt"],
        );
        assert_eq!(found, ["run retried unseen"]);
    }

    #[test]
    fn names_a_macro_may_bind_are_not_followed() {
        // A known statement macro binds no name but those in its tokens: a name in them is
        // not followed, others are.
        assert_eq!(
            per_call(
                r#"{
                let s = db.prepare("SELECT 1");
                tracing::info!(?s, "bound");
                s.run().await?;
                let t = db.prepare("SELECT 2");
                info!(other);
                let n = my_count!(t);
                t.run().await?;
            }"#
            ),
            ["run retried unseen", "run retried unseen"]
        );
        assert_eq!(
            per_call(
                r#"{
                let t = db.prepare("SELECT 2");
                info!(other);
                let n = my_count!(other);
                t.run().await?;
            }"#
            ),
            ["run retried read"]
        );
        // Any other statement macro (`bind!(s = db.prepare(..))` may expand to
        // `let s = ..;`, a procedural one to a `let` of any name): nothing is followed.
        assert_eq!(
            per_call(
                r#"{
                let s = db.prepare("SELECT 1");
                let t = db.prepare("SELECT 2");
                bind!(x);
                s.run().await?;
                t.run().await?;
            }"#
            ),
            ["run retried unseen", "run retried unseen"]
        );
        assert_eq!(
            per_call(r#"{ let s = db.prepare("SELECT 1"); bind! { x } s.run().await?; }"#),
            ["run retried unseen"]
        );
        // An expression macro's arguments bind names as any expression does: a `let` in a
        // `join!` argument's block is a second binding.
        assert_eq!(
            per_call(
                r#"{
                let s = db.prepare("DELETE FROM t");
                join!(async { let s = db.prepare("SELECT 1"); s.first(None).await });
                s.run().await?;
                let t = db.prepare("SELECT 2");
                join!(t.first(None), async { let u = 1; u });
                t.all().await?;
            }"#
            ),
            [
                "first retried unseen",
                "run retried unseen",
                "first retried read",
                "all retried read",
            ]
        );
    }

    #[test]
    fn a_statement_bound_again_to_itself_is_followed() {
        assert_eq!(
            per_call(
                r#"{
                let s = db.prepare("SELECT 1");
                let s = &s;
                s.first(None).await?;
                let t = db.prepare("SELECT 2");
                let runs = ids.iter().map(|id| { let t = t.clone(); async move { t.all().await } });
                let u = db.prepare("SELECT 3");
                let u = &other;
                u.run().await?;
                let v = db.prepare("SELECT 4");
                let v = &mut v;
                v.run().await?;
                let w = db.prepare("SELECT 5");
                let w: &Statement = &w;
                w.run().await?;
            }"#
            ),
            [
                "first retried read",
                "all retried read",
                "run retried unseen",
                "run retried unseen",
                "run retried read",
            ]
        );
        // Through a reference, the statement is the one referred to.
        assert_eq!(
            per_call(r#"{ let s = db.prepare("SELECT 1"); (&s).first(None).await?; }"#),
            ["first retried read"]
        );
        // Bound to its own parameters under its own name: still its SQL, read or write.
        assert_eq!(
            per_call(
                r#"{
                let s = db.prepare("SELECT 1");
                let s = s.bind(&[a])?;
                s.first(None).await?;
                let d = db.prepare("DELETE FROM t WHERE id = ?1");
                let d = d.clone().bind(&[b])?.bind_refs(&c)?;
                d.run().await?;
            }"#
            ),
            ["first retried read", "run retried write"]
        );
        // A name bound inside the arguments is counted.
        assert_eq!(
            per_call(
                r#"{
                let s = db.prepare("DELETE FROM t WHERE id = ?1");
                let s = s.bind(&[{ let s = db.prepare("SELECT 1"); s.first(None).await?.id }])?;
                s.run().await?;
            }"#
            ),
            ["first retried unseen", "run retried unseen"]
        );
        // Only those forms: any other `let` of the name is a second binding.
        for rebinding in [
            "let mut s = &s;",
            "let ref s = &s;",
            "let s @ _ = &s;",
            "let s = s.to_owned();",
            "let s = other.clone();",
            "let s = s.clone(x);",
            "let s = s.clone::<X>();",
            "let s = &s else { return };",
        ] {
            let body =
                format!(r#"{{ let s = db.prepare("SELECT 1"); {rebinding} s.run().await?; }}"#);
            assert_eq!(per_call(&body), ["run retried unseen"], "{rebinding}");
        }
    }

    #[test]
    fn statements_named_by_raw_identifiers_are_followed() {
        assert_eq!(
            per_call(
                r#"{
                let r#type = db.prepare(sql);
                r#type.run().await?;
                let r#match = db.prepare(QUERY);
                r#match.first(None).await?;
            }"#
            ),
            ["run retried dynamic", "first retried bound const"]
        );
    }

    #[test]
    fn derived_from_sees_through_what_the_finder_does() {
        let name = |expr: Expr| derived_from(&expr).map(ToString::to_string);
        let parse = |text: &str| syn::parse_str::<Expr>(text).unwrap();
        assert_eq!(name(parse("(s).bind(&[a])?")), Some("s".into()));
        assert_eq!(name(parse("&(s.clone())")), Some("s".into()));
        // A macro's `$s:expr` reaches the attribute in an invisible group.
        let grouped = Expr::Group(syn::ExprGroup {
            attrs: Vec::new(),
            group_token: Default::default(),
            expr: Box::new(parse("s")),
        });
        assert_eq!(name(grouped), Some("s".into()));
        assert_eq!(name(parse("<T>::s")), None);
        assert_eq!(name(parse("a::s")), None);
        assert_eq!(name(parse("s.run()")), None);
    }

    #[test]
    fn a_bound_statement_s_constant_is_judged_where_it_is_bound() {
        let mut block: Block = syn::parse_str(
            r#"{
                let s = db.prepare(QUERY);
                { const QUERY: &str = "SELECT 1"; s.run().await?; }
            }"#,
        )
        .unwrap();
        let found = rewrite(&mut block, Mode::PerCall, &names(), &[]);
        let kinds: Vec<_> = found.executions[0]
            .sql
            .iter()
            .map(|sql| matches!(sql, Sql::Bound(..)))
            .collect();
        assert_eq!(kinds, [true]);
        let code = block.to_token_stream().to_string();
        // The verdict is taken before the binding, in its scope, and read where `s` runs.
        let judged = code.find("is_read_only_prepared (QUERY)").expect(&code);
        let bound = code.find("let s =").expect(&code);
        let inner = code.find("const QUERY").expect(&code);
        assert!(judged < bound && bound < inner, "{code}");
        assert_eq!(code.matches("is_read_only_prepared").count(), 1, "{code}");
    }

    /// The SQL handed to a `prepare` is judged only where the receiver's type can be
    /// probed, and `D1Database::prepare` and `worker::query!` only by those names: any other
    /// `prepare` or `query!` may be the project's own.
    #[test]
    fn prepare_is_judged_only_where_its_database_is_probed() {
        assert_eq!(
            per_call(
                r#"{
                self.db.prepare("SELECT 1").run().await?;
                dbs[0].prepare("SELECT 1").run().await?;
                (*self.db).prepare("SELECT 1").run().await?;
                env.d1("DB")?.prepare("SELECT 1").run().await?;
                self.state().db.prepare("SELECT 1").run().await?;
                D1Database::prepare(&self.db, "SELECT 1").run().await?;
                worker::D1DatabaseSession::prepare(session, "SELECT 1").run().await?;
                <D1Database>::prepare(db(), "SELECT 1").run().await?;
                <D1Database as Mine>::prepare(&db, "SELECT 1").run().await?;
                prepare(&db, "SELECT 1").run().await?;
                archive::prepare(&db, "SELECT 1").run().await?;
                worker::query!(&db, "SELECT 1").run().await?;
                query!(&db, "SELECT 1").run().await?;
                worker::query!(db(), "SELECT 1").run().await?;
                db_of!(self).prepare("SELECT 1").run().await?;
                store::DB.prepare("SELECT 1").run().await?;
                dbs[i].prepare("SELECT 1").run().await?;
                self.dbs()[i].prepare("SELECT 1").run().await?;
                let bound = D1Database::prepare(&self.db, "SELECT 1");
                bound.run().await?;
            }"#
            ),
            [
                "run retried read",
                "run retried read",
                "run retried read",
                "run retried read",
                "run retried unseen",
                "run retried read",
                "run retried read",
                "run retried read",
                "run retried unseen",
                "run retried unseen",
                "run retried unseen",
                "run retried read",
                "run retried unseen",
                "run retried unseen",
                "run retried unseen",
                "run retried read",
                "run retried unseen",
                "run retried unseen",
                "run retried read",
            ]
        );
    }

    /// A statement chosen by `if`/`else` or `match` is judged by every arm: read-only only
    /// if each arm's SQL is; an arm that leaves makes none, and an `if` without `else`, a
    /// labelled block or an arm with statements before its value is out of sight. Each
    /// arm's receiver is probed in the arm, where its pattern's names are in scope, and
    /// recorded into the slot: nothing is hoisted before the `let`.
    #[test]
    fn a_statement_chosen_by_its_arms_is_judged_by_all_of_them() {
        let run = |choose: &str| {
            let body = format!("{{ let stmt = {choose}; stmt.run().await?; }}");
            let (lines, code) = found_in(&body, Mode::PerCall, &[]);
            (lines.join(", "), code)
        };
        for (choose, verdict) in [
            (
                r#"if a { db.prepare("SELECT 1") } else { db.prepare("SELECT 2") }"#,
                "read+read",
            ),
            (
                r#"if a { db.prepare("SELECT 1") } else { db.prepare("DELETE FROM t") }"#,
                "read+write",
            ),
            (
                r#"if a { db.prepare("INSERT INTO t VALUES (1)") } else { db.prepare("SELECT 2") }"#,
                "write+read",
            ),
            (
                r#"if a { db.prepare("SELECT 1") } else if b { db.prepare("SELECT 2").bind(&[x])? } else { return Ok(()) }"#,
                "read+read",
            ),
            (
                r#"match kind { Kind::A => db.prepare("SELECT 1"), Kind::B { db } => { db.prepare("SELECT 2") } _ => continue }"#,
                "read+read",
            ),
            (r#"{ db.prepare("SELECT 1") }"#, "read"),
            (
                r#"(if a { db.prepare("SELECT 1") } else { break })"#,
                "read",
            ),
            (
                r#"match a { A => &db.prepare("SELECT 1"), _ => &db.prepare("SELECT 2") }"#,
                "read+read",
            ),
            (
                r#"if a { db.prepare("SELECT 1") } else { db.prepare(sql) }"#,
                "read+dynamic",
            ),
            (r#"if a { db.prepare("SELECT 1") } else { other }"#, "read"),
            (r#"match a { _ => return Ok(()) }"#, "unseen"),
            (
                r#"match a { A => db.prepare("SELECT 1"), _ => unreachable!("no {a}") }"#,
                "read",
            ),
            (
                r#"match a { A => db.prepare("SELECT 1"), _ => my::unreachable!() }"#,
                "read",
            ),
            (
                r#"if a { let db = &x; db.prepare("SELECT 1") } else { db.prepare("SELECT 2") }"#,
                "read",
            ),
            (r#"'found: { db.prepare("SELECT 1") }"#, "unseen"),
            (r#"&mut db.prepare("SELECT 1")"#, "unseen"),
            (
                r#"match a { A => &mut db.prepare("SELECT 1"), _ => &mut db.prepare("SELECT 2") }"#,
                "unseen",
            ),
            (
                r#"match a { Some(s) => break s, None => db.prepare("SELECT 1") }"#,
                "read",
            ),
        ] {
            let (lines, code) = run(choose);
            assert_eq!(lines, format!("run retried {verdict}"), "{choose}");
            // Probed in the arms, after the `let` begins: no probe is hoisted before it.
            let before_let = &code[..code.find("let stmt").unwrap()];
            assert!(!before_let.contains("d1_site"), "{choose}: {code}");
        }
        // An arm out of sight records so into the slot before its value (the runtime then
        // reads the SQL the statement holds), one that leaves by `return` nothing; a
        // statement with no other arm is out of sight.
        for (choose, writes) in [
            (r#"if a { db.prepare("SELECT 1") } else { helper() }"#, 1),
            (
                r#"match a { A => other, B => unreachable!(), _ => return Ok(()) }"#,
                2,
            ),
            (
                r#"match a { A => { let b = &x; b.prepare("SELECT 1") } B => db.prepare("SELECT 2"), _ => Err(e)? }"#,
                2,
            ),
        ] {
            let (_, code) = run(choose);
            let unseen = code.matches(". join (:: d1_retry :: __private :: Access :: Unseen)");
            assert_eq!(unseen.count(), writes, "{code}");
            assert!(!code.contains(". record (false)"), "{code}");
        }
        let (lines, _) = run(r#"if a { helper() } else { return Ok(()) }"#);
        assert_eq!(lines, "run retried unseen");
        // Each arm joins its receiver's verdict into the statement's slot.
        let (_, code) =
            run(r#"if a { db.prepare("SELECT 1") } else { self.db.prepare("SELECT 2") }"#);
        assert_eq!(code.matches(". join (").count(), 2, "{code}");
        assert_eq!(code.matches("d1_prepare ()").count(), 2, "{code}");
        // A borrowed statement is followed, its receiver probed before the `let` as usual.
        let (lines, code) = run(r#"&db.prepare("SELECT 1")"#);
        assert_eq!(lines, "run retried read");
        assert!(code.starts_with("{ let __d1_retry_sql_db"), "{code}");
        // Bound again to itself in every arm, the name keeps its statement.
        let (lines, _) = found_in(
            r#"{
                let stmt = db.prepare("SELECT 1");
                let stmt = if let Some(id) = id { stmt.bind(&[id])? } else { stmt.clone() };
                stmt.run().await?;
                let other = db.prepare("SELECT 2");
                let other = match id { Some(_) => other.clone(), None => break };
                other.run().await?;
                let last = db.prepare("SELECT 3");
                let last = if a { last.clone() } else { db.prepare("DELETE FROM t") };
                last.run().await?;
            }"#,
            Mode::PerCall,
            &[],
        );
        assert_eq!(
            lines,
            [
                "run retried read+read",
                "run retried read",
                "run retried unseen"
            ]
        );
        // A labelled block may `break` another statement out: it binds the name again.
        let (lines, _) = found_in(
            r#"{ let s = db.prepare("SELECT 1"); let s = 'a: { s.clone() }; s.run().await?; }"#,
            Mode::PerCall,
            &[],
        );
        assert_eq!(lines, ["run retried unseen"]);
        // An `if` without `else` is no statement.
        let (lines, _) = found_in(
            r#"{ let stmt = if a { db.prepare("SELECT 1") }; stmt.run().await?; }"#,
            Mode::PerCall,
            &[],
        );
        assert_eq!(lines, ["run retried unseen"]);
        // The same arms as an execution's receiver.
        let (lines, code) = found_in(
            r#"{ (if a { db.prepare("SELECT 1") } else { db.prepare("SELECT 2") }).run().await?; }"#,
            Mode::PerCall,
            &[],
        );
        assert_eq!(lines, ["run retried read+read"]);
        assert_eq!(code.matches(". join (").count(), 2, "{code}");
    }

    /// A literal that may write is a write whatever prepares it: its receiver is not
    /// probed, in any of the three forms, and it stays a write (a user's own `prepare` of
    /// it is not made a read); a read's receiver still is.
    #[test]
    fn a_written_literal_needs_no_probe() {
        for write in [
            r#"{ self.db.prepare("INSERT INTO t VALUES (1)").run().await?; }"#,
            r#"{ env.d1("DB")?.prepare("DELETE FROM t").run().await?; }"#,
            r#"{ D1Database::prepare(&self.db, concat!("UPDATE t ", "SET a = 1")).run().await?; }"#,
            r#"{ worker::query!(&db, "INSERT INTO t VALUES (1)").run().await?; }"#,
            r#"{ archive.prepare("REPLACE INTO t VALUES (1)").run().await?; }"#,
        ] {
            let (lines, code) = found_in(write, Mode::PerCall, &[]);
            assert_eq!(lines, ["run retried write"], "{write}");
            assert!(!code.contains("d1_prepare"), "{code}");
            assert!(!code.contains("__d1_retry_site"), "{code}");
            assert!(!code.contains("record"), "{code}");
        }
        for read in [
            r#"{ self.db.prepare("SELECT 1").run().await?; }"#,
            r#"{ env.d1("DB")?.prepare("SELECT 1").run().await?; }"#,
            r#"{ worker::query!(&db, "SELECT 1").run().await?; }"#,
        ] {
            let (lines, code) = found_in(read, Mode::PerCall, &[]);
            assert_eq!(lines, ["run retried read"], "{read}");
            assert!(code.contains("d1_prepare"), "{code}");
        }
    }

    /// Only D1's types' `prepare` by path, and only `worker::query!`; only a place reached
    /// without a call is probed by a closure.
    #[test]
    fn d1_paths_and_plain_places_are_told_apart() {
        let expr = |text: &str| syn::parse_str::<Expr>(text).unwrap();
        for (path, d1) in [
            ("D1Database::prepare", true),
            ("worker::D1DatabaseSession::prepare", true),
            ("<D1Database>::prepare", true),
            ("<worker::D1Database>::prepare", true),
            ("<D1Database as Mine>::prepare", false),
            ("<Other>::prepare", false),
            ("<D1Database>::exec", false),
            ("D1Database::exec", false),
            ("prepare", false),
            ("archive::prepare", false),
            ("D1Database", false),
        ] {
            assert_eq!(is_d1_path(&expr(path), "prepare"), d1, "{path}");
        }
        for (path, d1) in [
            ("D1Database::exec", true),
            ("<worker::D1DatabaseSession>::exec", true),
            ("Tasks::exec", false),
            ("exec", false),
            ("D1Database::prepare", false),
        ] {
            assert_eq!(is_d1_path(&expr(path), "exec"), d1, "{path}");
        }
        for (path, worker) in [
            ("worker::query", true),
            ("::worker::query", true),
            ("query", false),
            ("mine::query", false),
            ("worker::queries", false),
        ] {
            let parsed: syn::Path = syn::parse_str(path).unwrap();
            assert_eq!(is_worker_query(&parsed), worker, "{path}");
        }
        for (place, plain) in [
            ("db", true),
            ("self.db", true),
            ("(self.db)", true),
            ("dbs[0]", true),
            ("dbs[&key]", true),
            ("*self.db", true),
            ("store::DB", true),
            ("dbs[i]", false),
            ("dbs[&f()]", false),
            ("<T>::DB", false),
            ("dbs[f()]", false),
            ("f()[0]", false),
            ("self.f().db", false),
            ("*f()", false),
            ("!db", false),
        ] {
            assert_eq!(is_plain_place(&expr(place)), plain, "{place}");
        }
        let grouped = Expr::Group(syn::ExprGroup {
            attrs: Vec::new(),
            group_token: Default::default(),
            expr: Box::new(expr("self.db")),
        });
        assert!(is_plain_place(&grouped));
        // A variable is borrowed where it stands; a constant, a static, a unit struct, an
        // element or a dereference only in a closure.
        assert!(is_variable(&grouped));
        for (place, variable) in [
            ("db", true),
            ("_db", true),
            ("db.inner", true),
            ("(db).inner", true),
            ("(db)", true),
            ("DB", false),
            ("Scratch", false),
            ("store::DB", false),
            ("dbs[0]", false),
            ("*db", false),
            ("db.inner[0]", false),
        ] {
            assert_eq!(is_variable(&expr(place)), variable, "{place}");
        }
    }

    /// A method named otherwise that takes one argument is no `prepare`; a local named
    /// like a constant is dynamic; in whole-body mode, `D1Database`'s `prepare` and `exec`
    /// are judged by path, and no other function's: it may take something else than SQL.
    #[test]
    fn what_is_taken_for_sql() {
        assert_eq!(
            per_call(
                r#"{
                self.statement_for("SELECT 1").run().await?;
                let INSERT_SQL = format!("INSERT INTO t VALUES ({})", 1);
                db.prepare(INSERT_SQL).run().await?;
                db.prepare(FIND_SQL).run().await?;
            }"#
            ),
            [
                "run retried unseen",
                "run retried dynamic",
                "run retried const"
            ]
        );
        let mut block: Block = syn::parse_str(
            r#"{
                D1Database::exec(db, "DELETE FROM t").await?;
                <D1Database>::prepare(db, "INSERT INTO t VALUES (1)").run().await?;
                Tasks::exec(&tasks, "rebuild-cache").await?;
                exec(db, "UPDATE t SET n = 1").await?;
                Tasks::prepare(&tasks, TIMEOUT_MS);
                D1Database::exec(db).await?;
                D1Database::run(db, "DELETE FROM t").await?;
            }"#,
        )
        .unwrap();
        let found = rewrite(
            &mut block,
            Mode::WholeBody { read_only: true },
            &names(),
            &[],
        );
        let judged: Vec<Option<Span>> = found.sql.iter().map(Sql::literal_write).collect();
        assert_eq!(judged.len(), 2);
        assert!(judged.iter().all(Option::is_some));
    }

    #[test]
    fn places_reached_from_self() {
        for (place, from_self) in [
            ("self", true),
            ("self.db", true),
            ("self.dbs[0]", true),
            ("*self.db", true),
            ("&self.db", true),
            ("(self.db)", true),
            ("self.inner.db", true),
            ("db", false),
            ("this.db", false),
            ("self.db()", false),
            ("make(self).db", false),
            ("!self.db", false),
        ] {
            let expr: Expr = syn::parse_str(place).unwrap();
            assert_eq!(rooted_at_self(&expr), from_self, "{place}");
        }
        // In an invisible group, as a `macro_rules!` hands over an `$e:expr`.
        let grouped = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote!(self.db));
        let expr: Expr = syn::parse2(grouped.into_token_stream()).unwrap();
        assert!(matches!(expr, Expr::Group(_)), "{}", expr.to_token_stream());
        assert!(rooted_at_self(&expr));
    }

    /// A variable is borrowed, and a constant probed by a closure that is never called,
    /// before the statement is made (a `prepare` of the project's own may consume it); a
    /// value, where it is evaluated, into the slot; a bound statement's verdicts are read
    /// once it is made, into `Copy` locals that `async move` blocks may each take.
    #[test]
    fn receivers_are_probed_before_or_as_they_are_evaluated() {
        let flat = |code: &str| code.replace(' ', "");
        // A local is probed before the statement is made (it may consume it), and so is a
        // field of `self`: the statement's own chain and arguments may move or borrow it
        // mutably.
        for (body, receiver) in [
            (r#"{ db.prepare("SELECT 1").run().await?; }"#, "db"),
            (
                r#"{ self.db.prepare("SELECT 1").first(Some(self.col())).await?; }"#,
                "self.db",
            ),
        ] {
            let (_, code) = found_in(body, Mode::PerCall, &[]);
            let probed = flat(&code)
                .find(&format!(
                    "let__d1_retry_site=(&&::d1_retry::__private::Receiver::of(&{receiver}))"
                ))
                .expect(&code);
            let made = flat(&code)
                .find(&format!("{receiver}.prepare"))
                .expect(&code);
            assert!(probed < made, "{code}");
            // Before it, in code that never runs, the lookup that refuses a `prepare` of
            // the user's taking the database by value (`by_value.rs`); not on a place
            // reached from `self` taken by reference, which could not be moved.
            if receiver.starts_with("self") {
                assert!(!code.contains("ByValue"), "{code}");
            } else {
                let looked_up = flat(&code)
                    .find(&format!(
                        "iffalse{{#[allow(unused_imports)]use::d1_retry::__private::{{\
                         PrepareTakingTheDatabaseByValueas_,ViaD1Databaseas_,ViaOtherDatabaseas_,}};\
                         let_=(&&::d1_retry::__private::ByValue::of(&({receiver}))).database().prepare(());}}"
                    ))
                    .expect(&code);
                assert!(looked_up < probed, "{code}");
            }
            assert!(code.contains(". d1_prepare ()"), "{code}");
            assert!(code.contains(". and (__d1_retry_sql_db_2)"), "{code}");
            assert!(!code.contains("SqlSlot"), "{code}");
        }

        // A constant is borrowed only inside a closure that is never called: borrowing it
        // would make it, and drop it.
        let (_, code) = found_in(
            r#"{ ARCHIVER.prepare("SELECT 1").run().await?; }"#,
            Mode::PerCall,
            &[],
        );
        let probed = flat(&code).find(
            "(&&::d1_retry::__private::probed(||::d1_retry::__private::Receiver::of(&ARCHIVER))).d1_prepare()",
        );
        assert!(probed.is_some(), "{code}");

        let (_, code) = found_in(
            r#"{ self.db().prepare("SELECT 1").run().await?; }"#,
            Mode::PerCall,
            &[],
        );
        assert!(!code.contains("probed"), "{code}");
        let record = code.find(". join ((&& ").expect(&code);
        let made = code.find(". prepare (\"SELECT 1\")").expect(&code);
        assert!(record < made, "{code}");
        // The value's lookup is made on the local it was moved into, where it is evaluated.
        let looked_up = flat(&code)
            .find("ByValue::of(&__d1_retry_database)).database().prepare(());}")
            .expect(&code);
        assert!(
            looked_up < flat(&code).find(".join((&&").expect(&code),
            "{code}"
        );
        assert!(code.contains("SqlSlot :: new ()"), "{code}");
        // ...and the slot is read into the execution's access.
        assert!(
            code.contains(". and (__d1_retry_sql_call_1 . access ())"),
            "{code}"
        );

        let (_, code) = found_in(
            r#"{
                let s = self.db().prepare(sql);
                let t = self.db.prepare("SELECT 1");
                join(async move { s.run().await }, async move { t.run().await }).await;
            }"#,
            Mode::PerCall,
            &[],
        );
        // `s`'s verdict is read right after `s` is made (its SQL and database were recorded
        // into its slot), and `t`, probed by type, has no slot.
        let bound = code.find("let s =").expect(&code);
        let read = code.find(". access () ;").expect(&code);
        let next = code.find("let t =").expect(&code);
        assert!(bound < read && read < next, "{code}");
        assert_eq!(
            code.matches("__d1_retry_sql_s_1 . access ()").count(),
            1,
            "{code}"
        );
        assert!(!code.contains("__d1_retry_sql_t"), "{code}");
        // A field of `self` is probed before the `let` too: `t` may run after the field
        // was given another value.
        let probed = flat(&code)
            .find("Receiver::of(&self.db)).d1_prepare();__d1_retry_site};lett=")
            .expect(&code);
        let made = flat(&code).find("lett=").expect(&code);
        assert!(probed < made, "{code}");
        // A statement bound with visible SQL on a probed place records nothing at run time.
        assert_eq!(code.matches("SqlSlot :: new").count(), 1, "{code}");

        // `&value`: probed where it is evaluated, not by a closure, which would return a
        // reference to a temporary.
        let (_, code) = found_in(
            r#"{ (&make_db()).prepare("SELECT 1").run().await?; }"#,
            Mode::PerCall,
            &[],
        );
        assert!(!code.contains("probed"), "{code}");
        assert!(code.contains(". join ("), "{code}");

        // A path's function is its type's, whatever the argument is: the type named is
        // probed (one of the user's named `D1Database` is not trusted), the argument not.
        for (path, ty) in [
            ("D1Database::prepare", "D1Database"),
            ("worker::D1Database::prepare", "worker::D1Database"),
            (
                "::worker::D1DatabaseSession::prepare",
                "::worker::D1DatabaseSession",
            ),
            ("<D1Database>::prepare", "D1Database"),
        ] {
            let body = format!(r#"{{ {path}(&make_db(), "SELECT 1").run().await?; }}"#);
            let (lines, code) = found_in(&body, Mode::PerCall, &[]);
            assert_eq!(lines, ["run retried read"], "{code}");
            let probe =
                format!("(&&::d1_retry::__private::Receiver::<{ty}>::named()).d1_prepare()");
            assert!(flat(&code).contains(&flat(&probe)), "{probe}: {code}");
            assert!(!code.contains("make_db ())"), "{code}");
            assert!(!code.contains(". record ("), "{code}");
        }
    }

    /// A `let` under `#[cfg]` keeps its declarations under the same `#[cfg]`: they name
    /// what it names, which may not exist when it is compiled out.
    #[test]
    fn a_bound_statement_s_declarations_share_its_cfg() {
        let (_, code) = found_in(
            r#"{
                #[cfg(feature = "audit")]
                let audit = self.audit.prepare(AUDIT);
                #[cfg(feature = "audit")]
                audit.run().await?;
            }"#,
            Mode::PerCall,
            &[],
        );
        let flat = code.replace(' ', "");
        let cfg = "#[cfg(feature=\"audit\")]";
        assert!(
            flat.contains(&format!("{cfg}let__d1_retry_sql_audit_judged_")),
            "{code}"
        );
        assert!(
            flat.contains(&format!("{cfg}let__d1_retry_sql_db_")),
            "{code}"
        );
        assert!(flat.contains(&format!("{cfg}letaudit=")), "{code}");
    }

    #[test]
    fn batches_are_read_only_only_if_every_statement_reads() {
        assert_eq!(
            per_call(
                r#"{
                db.batch(vec![db.prepare("SELECT 1"), db.prepare("SELECT 2")]).await?;
                db.batch(vec![db.prepare("SELECT 1"), db.prepare("DELETE FROM t")]).await?;
                db.batch(statements).await?;
                db.batch([db.prepare("SELECT 3")]).await?;
                db.batch((vec![db.prepare("SELECT 4")])).await?;
                db.batch(vec![]).await?;
                db.batch(other![db.prepare("SELECT 5")]).await?;
            }"#
            ),
            [
                "batch retried read+read",
                "batch retried read+write",
                "batch retried unseen",
                "batch retried read",
                "batch retried read",
                "batch retried unseen",
                "batch retried unseen",
            ]
        );
    }

    /// A batch of a list out of sight reads the list's statements where it begins, awaited
    /// where it is written or stored (from the stored execution's arguments); one in sight
    /// does not.
    #[test]
    fn a_batch_of_a_list_out_of_sight_reads_its_statements() {
        let reads = |body: &str| {
            let (_, code) = found_in(body, Mode::PerCall, &[]);
            code.matches("HeldBatch (& __d1_retry_kept)").count()
        };
        assert_eq!(reads("{ db.batch(statements).await }"), 1);
        assert_eq!(reads("{ db.batch(helper()?).await }"), 1);
        assert_eq!(reads("{ db.batch((list)).await }"), 1);
        assert_eq!(reads("{ db.batch(vec![stmt; 3]).await }"), 1);
        assert_eq!(
            reads(r#"{ db.batch(vec![db.prepare("SELECT 1")]).await }"#),
            0
        );
        assert_eq!(reads("{ let f = db.batch(statements); f.await }"), 0);
        let stored = |body: &str| {
            let (_, code) = found_in(body, Mode::PerCall, &[]);
            code.matches("HeldBatch (& __d1_retry_kept . 0)").count()
        };
        assert_eq!(stored("{ let f = db.batch(statements); f.await }"), 1);
        assert_eq!(stored("{ join!(db.batch(a), db.batch(b)); Ok(()) }"), 2);
        assert_eq!(
            stored(r#"{ let f = db.batch(vec![db.prepare("SELECT 1")]); f.await }"#),
            0
        );
        assert_eq!(stored("{ db.batch(statements).await }"), 0);
        assert_eq!(reads("{ db.exec(sql).await; stmt.run().await }"), 0);
    }

    /// What the doc paragraph says is read when it runs: a statement's own rewritten
    /// execution, a rewritten batch of a list out of sight; not a batch written out, an
    /// `exec`, a `dump` or a call left as written.
    #[test]
    fn an_execution_records_whether_its_sql_out_of_sight_is_read() {
        let held = |body: &str| {
            let mut block: Block = syn::parse_str(body).unwrap();
            let found = rewrite(&mut block, Mode::PerCall, &names(), &[]);
            found.executions.iter().map(|e| e.held).collect::<Vec<_>>()
        };
        assert_eq!(
            held(
                r#"{
                stmt.run().await;
                db.batch(list).await;
                db.batch(vec![db.prepare("SELECT 1")]).await;
                db.exec(sql).await;
                db.dump().await;
                let f = self.make().run();
            }"#
            ),
            [true, true, false, false, false, false]
        );
    }

    #[test]
    fn only_calls_that_cannot_break_are_rewritten() {
        assert_eq!(
            per_call(
                r#"{
                let later = db.prepare("SELECT 1").first(None);
                let place = stmt.run();
                let both = [a.run(), b.run()];
                let f = move || stmt.run();
                let g = async move { stmt.run().await };
                items.iter().all(|x| x > 0);
            }"#
            ),
            [
                "first as written read",
                "run retried unseen",
                "run as written unseen",
                "run as written unseen",
                "run as written unseen",
                "run retried unseen",
            ]
        );
    }

    #[test]
    fn an_async_move_block_gets_its_own_schedule() {
        let (_, body) = found_in(
            "{ spawn(async move { stmt.run().await }); }",
            Mode::PerCall,
            &[],
        );
        assert!(body.contains("async move { let call = & CALL ;"), "{body}");
        let (_, body) = found_in(
            "{ spawn(async move { other().await }); }",
            Mode::PerCall,
            &[],
        );
        assert!(!body.contains("CALL"), "{body}");
    }

    #[test]
    fn dynamic_sql_is_scanned_where_it_is_prepared() {
        let (_, body) = found_in("{ db.prepare(sql).run().await }", Mode::PerCall, &[]);
        assert!(body.contains("d1_text"), "{body}");
        assert!(body.contains("SqlSlot :: new ()"), "{body}");
        let (_, body) = found_in(
            r#"{ db.prepare("SELECT 1").run().await }"#,
            Mode::PerCall,
            &[],
        );
        assert!(!body.contains("d1_text"), "{body}");
    }

    #[test]
    fn whole_body_mode_rewrites_nothing_but_observes_dynamic_sql() {
        let (found, body) = found_in(
            r#"{ let s = db.prepare(sql); helper(db.prepare("DELETE FROM t")); s.run().await }"#,
            Mode::WholeBody { read_only: true },
            &[],
        );
        assert_eq!(found, ["run as written "]);
        assert!(body.contains("attempt . observe"), "{body}");
        assert!(!body.contains("d1_site"), "{body}");

        // In an `async` block or a closure, the record is not borrowed: the thread counts.
        let recorded = |body: &str| {
            let (_, body) = found_in(body, Mode::WholeBody { read_only: true }, &[]);
            [
                "attempt . observe_prepared (",
                "attempt . observe (",
                "record_sql_prepared (",
                "record_sql (",
            ]
            .map(|call| body.matches(call).count())
        };
        assert_eq!(recorded("{ db.prepare(sql).run().await }"), [1, 0, 0, 0]);
        assert_eq!(recorded("{ db.exec(sql).await }"), [0, 1, 0, 0]);
        assert_eq!(
            recorded("{ spawn(async move { db.prepare(sql).run().await }) }"),
            [0, 0, 1, 0]
        );
        assert_eq!(recorded("{ (|| db.exec(sql))().await }"), [0, 0, 0, 1]);
        assert_eq!(
            recorded("{ let f = |s| async { db.exec(s).await }; db.exec(sql).await }"),
            [0, 1, 0, 1]
        );
    }

    #[test]
    fn a_read_only_body_reads_the_sql_of_statements_made_out_of_sight() {
        let read_only = Mode::WholeBody { read_only: true };
        let observed = |body: &str| {
            let (_, body) = found_in(body, read_only, &[]);
            body.matches("d1_site () . observe (").count()
                + body.matches("d1_site () . observe_unborrowed (").count()
        };
        // Made in sight: a `prepare` chain, a name bound once to one, `D1Database::prepare`.
        assert_eq!(
            observed(r#"{ db.prepare("SELECT 1").bind(&[])?.first(None).await }"#),
            0
        );
        assert_eq!(
            observed(r#"{ let s = db.prepare(SQL); s.run().await; (&s).all().await }"#),
            0
        );
        assert_eq!(
            observed(r#"{ D1Database::prepare(&db, "SELECT 1").raw().await }"#),
            0
        );
        assert_eq!(
            observed(r#"{ let s: Statement = db.prepare("SELECT 1"); s.run().await }"#),
            0
        );
        // Out of sight: a parameter, a field, a helper's, an index, a `mut` binding, a name
        // bound twice, a statement chosen by `if`, each execution of it.
        assert_eq!(observed("{ stmt.run().await }"), 1);
        assert_eq!(observed("{ self.stmt.first(None).await }"), 1);
        assert_eq!(observed("{ helper(db)?.all().await }"), 1);
        assert_eq!(observed("{ stmts[0].raw().await }"), 1);
        assert_eq!(
            observed(r#"{ let mut s = db.prepare("SELECT 1"); s.run().await }"#),
            1
        );
        assert_eq!(
            observed(r#"{ let s = db.prepare("SELECT 1"); let s = other(s); s.run().await }"#),
            1
        );
        assert_eq!(
            observed(r#"{ let s = if a { db.prepare("SELECT 1") } else { x }; s.run().await }"#),
            1
        );
        assert_eq!(
            observed("{ stmt.run().await; let f = stmt.first(None); f.await }"),
            2
        );
        assert_eq!(observed("{ make(db, SQL).run().await }"), 1);
        assert_eq!(observed("{ self.made(SQL).run().await }"), 1);
        assert_eq!(observed("{ db.prepare(SQL, extra).run().await }"), 1);
        assert_eq!(
            observed(r#"{ let s = db.prepare("SELECT 1"); <T>::s.run().await }"#),
            1
        );
        assert_eq!(observed("{ join!(a.run(), b.first(None)) }"), 2);
        assert_eq!(observed("{ join_all(vec![a.run(), b.run()]).await }"), 2);
        assert_eq!(observed("{ [a.run()] }"), 1);
        // A macro not known to take expressions keeps its tokens as written.
        assert_eq!(observed("{ my_macro!(stmt.run().await) }"), 0);
        // A batch's list not written out of statements made in sight.
        let batches = |body: &str| {
            let (_, body) = found_in(body, read_only, &[]);
            body.matches("HeldBatch (& __d1_retry_list)").count()
        };
        assert_eq!(batches("{ db.batch(statements).await }"), 1);
        assert_eq!(
            batches("{ db.batch(vec![stmt, db.prepare(SQL)]).await }"),
            1
        );
        assert_eq!(batches("{ db.batch([helper()]).await }"), 1);
        assert_eq!(
            batches(r#"{ db.batch(vec![db.prepare("SELECT 1")]).await }"#),
            0
        );
        assert_eq!(
            batches("{ let s = db.prepare(SQL); db.batch([s.clone()]).await }"),
            0
        );
        assert_eq!(batches("{ spawn(async move { db.batch(list).await }) }"), 1);
        assert_eq!(
            batches(r#"{ db.batch((vec![db.prepare("SELECT 1")])).await }"#),
            0
        );
        assert_eq!(
            batches(r#"{ db.batch(other![db.prepare("SELECT 1")]).await }"#),
            1
        );
        let (_, body) = found_in("{ db.batch(list).await }", Mode::PerCall, &[]);
        assert!(!body.contains("__d1_retry_list"), "{body}");
        // An `async` block or a closure may have to own all it holds, or become a `fn`
        // pointer: it must not borrow the attempt's record, so it counts on the thread.
        let borrowing = |body: &str| {
            let (_, body) = found_in(body, read_only, &[]);
            (
                body.matches("d1_site () . observe (").count(),
                body.matches("d1_site () . observe_unborrowed (").count(),
                body.matches("observe_held (").count(),
                body.matches("record_held (").count(),
            )
        };
        assert_eq!(borrowing("{ stmt.run().await }"), (1, 0, 0, 0));
        assert_eq!(
            borrowing("{ async { stmt.run().await }.await }"),
            (0, 1, 0, 0)
        );
        assert_eq!(
            borrowing("{ spawn(async move { stmt.run().await }) }"),
            (0, 1, 0, 0)
        );
        assert_eq!(borrowing("{ spawn(move || stmt.run()) }"), (0, 1, 0, 0));
        assert_eq!(
            borrowing("{ let f = |s| s.run(); f(stmt).await }"),
            (0, 1, 0, 0)
        );
        assert_eq!(
            borrowing("{ stmt.run().await; (|| stmt.run())().await }"),
            (1, 1, 0, 0)
        );
        assert_eq!(borrowing("{ db.batch(list).await }"), (0, 0, 1, 0));
        assert_eq!(
            borrowing("{ spawn(async move { db.batch(list).await }) }"),
            (0, 0, 0, 1)
        );
        assert_eq!(
            borrowing("{ (|list| async move { db.batch(list).await })(l).await }"),
            (0, 0, 0, 1)
        );
        // Not a statement's execution, or not `read_only`.
        assert_eq!(
            observed("{ db.batch(statements).await; db.exec(sql).await }"),
            0
        );
        let (_, body) = found_in(
            "{ stmt.run().await }",
            Mode::WholeBody { read_only: false },
            &[],
        );
        assert!(!body.contains("observe"), "{body}");
    }

    /// A statement or a batch's list a `macro_rules!` macro hands over as `$e:expr` comes in
    /// an invisible group: it is seen through.
    #[test]
    fn invisible_groups_are_seen_through() {
        let observed = |receiver: TokenStream| {
            let group = proc_macro2::Group::new(proc_macro2::Delimiter::None, receiver);
            let mut block: Block = syn::parse2(quote!({ #group.run().await })).unwrap();
            let mode = Mode::WholeBody { read_only: true };
            rewrite(&mut block, mode, &names(), &[]);
            block
                .to_token_stream()
                .to_string()
                .matches("d1_site () . observe (")
                .count()
        };
        assert_eq!(observed(quote!(db.prepare("SELECT 1"))), 0);
        assert_eq!(observed(quote!(stmt)), 1);
        // A batch's list in an invisible group: written out, so not read where it runs.
        let batch = |mode: Mode, list: TokenStream| {
            let group = proc_macro2::Group::new(proc_macro2::Delimiter::None, list);
            let mut block: Block = syn::parse2(quote!({ db.batch(#group).await })).unwrap();
            rewrite(&mut block, mode, &names(), &[]);
            let code = block.to_token_stream().to_string();
            code.contains("HeldBatch")
        };
        let read_only = Mode::WholeBody { read_only: true };
        assert!(!batch(read_only, quote!(vec![db.prepare("SELECT 1")])));
        assert!(batch(read_only, quote!(statements)));
        assert!(!batch(Mode::PerCall, quote!(vec![db.prepare("SELECT 1")])));
        assert!(batch(Mode::PerCall, quote!(statements)));
    }

    #[test]
    fn nested_items_and_foreign_macros_are_skipped() {
        assert_eq!(
            per_call(
                r#"{
                fn helper(db: &Db) { db.prepare("DELETE FROM t").run(); }
                my_macro!(db.prepare("DELETE FROM t").run().await);
                dbg!(db.prepare("DELETE FROM t").run().await);
                println!("{:?}", db.prepare("SELECT 1").first(None).await);
            }"#
            ),
            ["first retried read"]
        );
    }

    #[test]
    fn mut_statement_bindings_are_not_followed() {
        // `mem::replace(&mut s, ..)`, `(s, n) = ..` or `*r = ..` could swap in a write.
        assert_eq!(
            per_call(
                r#"{
                let mut s = db.prepare("SELECT 1");
                std::mem::replace(&mut s, db.prepare("DELETE FROM t"));
                s.run().await?;
            }"#
            ),
            ["run retried unseen"]
        );
    }

    #[test]
    fn returned_futures_are_left_as_written() {
        assert_eq!(
            per_call(
                r#"{
                let early = stmt.first(None);
                if done { return Ok(stmt.run()); }
                Ok(stmt.all())
            }"#
            ),
            [
                "first retried unseen",
                "run as written unseen",
                "all as written unseen",
            ]
        );
        // An async block in the returned value, `move` or not, has a schedule of its own.
        for returned in [
            "{ Ok(async move { stmt.run().await }) }",
            "{ Ok(async { stmt.run().await }) }",
        ] {
            assert_eq!(per_call(returned), ["run retried unseen"], "{returned}");
            let (_, code) = found_in(returned, Mode::PerCall, &[]);
            let own = code.find("let call = & CALL ;").expect(&code);
            assert!(own < code.find("d1_site").expect(&code), "{code}");
        }
    }

    /// A name bound once to an execution's future is awaited as it is: the execution was
    /// retried where it was made, and the future is not a statement.
    #[test]
    fn an_execution_s_future_is_awaited_as_it_is() {
        assert_eq!(
            per_call("{ let pending = stmt.first(None); pending.await }"),
            ["first retried unseen"]
        );
        assert_eq!(
            per_call("{ let mut pending: F = (stmt.run()); (pending).await }"),
            ["run retried unseen"]
        );
        // A statement, or a name bound again, is still awaited as a statement.
        assert_eq!(
            per_call("{ let s = stmt.bind(&[])?; s.await }"),
            [".await retried unseen"]
        );
        assert_eq!(
            per_call("{ let p = stmt.run(); let p = other; p.await }"),
            ["run retried unseen", ".await retried unseen"]
        );
        assert_eq!(
            per_call("{ let p = stmt.run().await; p.await }"),
            ["run retried unseen", ".await retried unseen"]
        );
    }

    #[test]
    fn borrowed_places_are_borrowed_not_moved() {
        let (found, body) = found_in(
            "{ v[0].run().await?; (*r).run().await?; self.state().db.exec(sql).await }",
            Mode::PerCall,
            &[],
        );
        assert_eq!(
            found,
            [
                "run retried unseen",
                "run retried unseen",
                "exec retried dynamic"
            ]
        );
        assert_eq!(body.matches("match & ").count(), 3, "{body}");
        assert!(!body.contains("match (* r)"), "{body}");
    }
}
