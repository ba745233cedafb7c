//! Which names the body binds, and how often: a statement variable is followed from its
//! `let` to its executions only when its name means one statement throughout the body.

use std::collections::HashMap;

use proc_macro2::{Ident, TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Block, Expr, ExprMethodCall, Local, Macro, Pat, Stmt};

use super::vocabulary::{MacroArguments, binds_nothing};

/// The name `ident` binds or reads: `r#stmt` and `stmt` are one name to rustc, so they
/// must be one to the attribute, or a statement shadowed through the other spelling would
/// be judged by the SQL it shadows (a write retried as the read it replaced).
pub(super) fn name(ident: &Ident) -> String {
    syn::ext::IdentExt::unraw(ident).to_string()
}

/// How often each name is bound or assigned in the body: a statement variable is
/// followed only when its name is bound once and never assigned.
#[derive(Default)]
pub(super) struct Bindings {
    counts: HashMap<String, usize>,
    /// How often each name is bound by a pattern (a `let`, a parameter, an arm, a closure's
    /// parameter), assignments not counted.
    patterns: HashMap<String, usize>,
    /// The body calls a macro as a statement that may bind names out of sight
    /// (any but those [`binds_nothing`] knows): no name counts as bound once.
    opaque: bool,
}

impl Bindings {
    pub(super) fn bound(&mut self, ident: &Ident) {
        *self.counts.entry(name(ident)).or_default() += 1;
    }

    /// A parameter of the function: bound once, by a pattern.
    pub(super) fn parameter(&mut self, ident: &Ident) {
        self.bound(ident);
        *self.patterns.entry(name(ident)).or_default() += 1;
    }

    /// Whether the body binds `ident` anywhere: then it may name a local, even when it is
    /// written like a constant.
    pub(super) fn any(&self, ident: &Ident) -> bool {
        self.counts.contains_key(&name(ident))
    }

    pub(super) fn unique(&self, ident: &Ident) -> bool {
        !self.opaque && self.counts.get(&name(ident)) == Some(&1)
    }

    /// Whether `ident` is bound by one pattern only, though it may be assigned: it names
    /// one variable throughout the body (`let mut slot = a.run(); slot = b.run();`).
    pub(super) fn one_variable(&self, ident: &Ident) -> bool {
        !self.opaque && self.patterns.get(&name(ident)) == Some(&1)
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
        *self.patterns.entry(name(&pat.ident)).or_default() += 1;
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
        self.opaque |= !binds_nothing(&stmt.mac);
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
            // The pattern's names are bound inside the macro's own `match` only.
            Some(MacroArguments::Scrutinee(scrutinee, _, _)) => self.visit_expr(&scrutinee),
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
pub(super) fn same_statement_again(local: &Local) -> bool {
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
pub(super) fn derived_in_every_arm(expr: &Expr, name: &Ident) -> bool {
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
pub(super) fn arm_values(expr: &Expr) -> Option<Vec<Option<&Expr>>> {
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

/// The variable a statement expression is derived from, through what
/// [`Finder::statement`](super::finder::Finder::statement) passes through to its receiver: `?`,
/// parentheses, `&` and [`keeps_the_sql`]'s calls.
pub(super) fn derived_from(expr: &Expr) -> Option<&Ident> {
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

/// `.bind(..)`, `.bind_refs(..)` or `.clone()`: a statement with its receiver's SQL.
pub(super) fn keeps_the_sql(call: &ExprMethodCall) -> bool {
    matches!(call.method.to_string().as_str(), "bind" | "bind_refs")
        || (call.method == "clone" && call.args.is_empty())
}
