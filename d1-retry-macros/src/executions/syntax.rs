//! What an expression is, read from its tokens alone: a place, a variable, a path to D1's
//! own `prepare`, something that may be a statement.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Block, Expr, Ident, Stmt};

use super::bindings::{arm_values, name};

pub(super) fn strip_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(inner) => strip_parens(&inner.expr),
        other => other,
    }
}

/// `expr` as a `match`'s scrutinee, in parentheses: a struct literal at its edge, enclosed
/// by no delimiter (`Job { .. }.stmt`, `a == Job { .. }`), would otherwise be read as the
/// start of the arms. Parentheses the user does not need are the expansion's own, on which
/// rustc's `unused_parens` stays quiet, as on any lint in another crate's macro.
pub(crate) fn scrutinee(expr: &Expr) -> TokenStream {
    quote!((#expr))
}

/// How the receiver of a `prepare` can be probed
/// ([`Finder::database_check`](super::finder::Finder::database_check)) without changing what the
/// code does.
pub(super) enum Database {
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
    pub(super) fn of(expr: &Expr) -> Database {
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
pub(super) fn rooted_at_self(expr: &Expr) -> bool {
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
pub(super) fn is_variable(expr: &Expr) -> bool {
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
pub(super) fn is_plain_place(expr: &Expr) -> bool {
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
pub(super) fn is_place_expression(expr: &Expr) -> bool {
    match expr {
        Expr::Index(_) => true,
        Expr::Unary(unary) => matches!(unary.op, syn::UnOp::Deref(_)),
        Expr::Field(_) => true,
        Expr::Group(inner) => is_place_expression(&inner.expr),
        Expr::Paren(inner) => is_place_expression(&inner.expr),
        _ => false,
    }
}

pub(super) fn strip_parens_mut(expr: &mut Expr) -> &mut Expr {
    match expr {
        Expr::Paren(inner) => strip_parens_mut(&mut inner.expr),
        Expr::Group(inner) => strip_parens_mut(&mut inner.expr),
        other => other,
    }
}

/// Any function path ending in `prepare`: a call that may make a statement.
pub(super) fn is_prepare_path(func: &Expr) -> bool {
    matches!(func, Expr::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "prepare"))
}

/// The type a path to a function names, as written: `D1Database` in
/// `worker::D1Database::prepare` (`worker::D1Database`), or `<D1Database>::prepare`.
pub(super) fn path_type(func: &Expr) -> Option<TokenStream> {
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

/// Whether `func` is a path to `D1Database::<method>` or `D1DatabaseSession::<method>`, by
/// any path (`worker::D1Database::prepare`, `<D1Database>::exec`): a free
/// `prepare(db, sql)`, a `module::exec` or a trait's `<D1Database as Mine>::prepare` may be
/// the user's own, build any statement, or take something else than SQL
/// (`Tasks::exec(&tasks, TIMEOUT_MS)`).
pub(super) fn is_d1_path(func: &Expr, method: &str) -> bool {
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
pub(super) fn is_worker_query(path: &syn::Path) -> bool {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    names == ["worker", "query"]
}

/// A variable, `self`, or a field of one: used in place, never moved by the rewrite.
pub(super) fn is_place(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => path.qself.is_none() && path.path.segments.len() == 1,
        Expr::Field(field) => is_place(&field.base),
        Expr::Paren(inner) => is_place(&inner.expr),
        Expr::Group(inner) => is_place(&inner.expr),
        _ => false,
    }
}

/// An expression that may be a statement: a variable, a field, or a `prepare(..)`,
/// `.bind(..)`, `query!(..)` chain, a `.clone()` of one (how a statement kept for later is
/// awaited, since awaiting takes it by value), or a shared borrow of one.
pub(super) fn statement_like(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(inner) => statement_like(&inner.expr),
        Expr::Group(inner) => statement_like(&inner.expr),
        Expr::Try(inner) => statement_like(&inner.expr),
        // Not `&mut`: the statement may be replaced through it (`*stmt = ..`, a helper).
        Expr::Reference(inner) if inner.mutability.is_none() => statement_like(&inner.expr),
        Expr::MethodCall(call) if call.method == "clone" && call.args.is_empty() => {
            statement_like(&call.receiver)
        }
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

/// A field of a struct or a tuple written out where it stands (`Job { stmt }.stmt`,
/// `(stmt, id).0`): a value that may be a statement, awaited there
/// ([`Finder::awaited_statement`](super::finder::Finder::awaited_statement)).
pub(super) fn part_written_out(expr: &Expr) -> bool {
    matches!(strip_parens(expr), Expr::Field(field)
        if matches!(strip_parens(&field.base), Expr::Struct(_) | Expr::Tuple(_)))
}

/// An `if`/`else`, a `match` or a block whose value may be a statement chosen by it
/// ([`Finder::alternatives`](super::finder::Finder::alternatives)): one of its arms is
/// [`statement_like`].
pub(super) fn chosen(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(inner) => chosen(&inner.expr),
        _ => arm_values(expr).is_some_and(|arms| {
            arms.into_iter()
                .flatten()
                .any(|value| statement_like(value) || chosen(value))
        }),
    }
}

/// The value of a block that has nothing but its value (`{ db.prepare(A) }`).
pub(super) fn only_tail(block: &mut Block) -> Option<&mut Expr> {
    match block.stmts.as_mut_slice() {
        [Stmt::Expr(value, None)] => Some(value),
        _ => None,
    }
}

/// Methods that keep what they are handed in their receiver, so that it must have the
/// type of what the receiver holds: a collection's, an `Option`'s, a cell's.
pub(super) const STORING_METHODS: [&str; 7] = [
    "push",
    "push_back",
    "push_front",
    "insert",
    "replace",
    "set",
    "get_or_insert",
];

/// One of the [`STORING_METHODS`] called by its path on a type (`Vec::push(&mut v, fa)`,
/// `Vec::push(v, fa)`, `<Vec<_>>::push(..)`, `HashMap::insert(&mut m, k, fa)`,
/// `Option::replace(&mut slot, fb)`), and `mem::replace`/`mem::swap`: what it is handed is
/// stored with the place, so it must have the place's type, as a method call's arguments
/// must (`v.push(fa)`). Not any other function, even one that borrows a place mutably
/// (`Repo::timed(&mut self.calls, fa)`, `metrics::timed(&mut n, fa)`,
/// `Poller::drive(&mut fa, 1)`): it may only run what it is handed, and a read handed there
/// stays retried. Nor a function of `Self`, whose name says nothing of what it does.
pub(super) fn method_by_path(call: &syn::ExprCall) -> bool {
    let Expr::Path(func) = &*call.func else {
        return false;
    };
    if call.args.len() < 2 {
        return false;
    }
    let mut names = func.path.segments.iter().rev().map(|s| s.ident.to_string());
    let (Some(method), owner) = (names.next(), names.next()) else {
        return false;
    };
    let owner = owner.as_deref().unwrap_or_default();
    if owner == "mem" && matches!(method.as_str(), "replace" | "swap") {
        return true;
    }
    let on_a_type = func.qself.is_some()
        || (owner != "Self" && owner.starts_with(|c: char| c.is_ascii_uppercase()));
    on_a_type && STORING_METHODS.contains(&method.as_str())
}

/// The names a pattern binds, each with how it binds it (`ref`, `mut`): a function's
/// parameters (`expand.rs`), and the parts of a copy a `read_only` body binds
/// (`Finder::copies_bound`).
pub(crate) fn bound_idents(pattern: &syn::Pat) -> Vec<&syn::PatIdent> {
    struct Bound<'p>(Vec<&'p syn::PatIdent>);
    impl<'p> syn::visit::Visit<'p> for Bound<'p> {
        fn visit_pat_ident(&mut self, pat: &'p syn::PatIdent) {
            self.0.push(pat);
            syn::visit::visit_pat_ident(self, pat);
        }
    }
    let mut bound = Bound(Vec::new());
    syn::visit::Visit::visit_pat(&mut bound, pattern);
    bound.0
}
