//! A `read_only` body that is one D1 call: retried as that call, on its own, rather than
//! by the whole-body loop.
//!
//! Why the two are the same: the whole-body loop runs the body again after a transient
//! failure unless the attempt ran SQL that may write; the per-call loop makes the failed
//! call again unless its SQL may write (and also after a failure that did not reach D1,
//! which ran nothing). When the body awaits nothing but that call, what runs again in the
//! whole body besides the call is its receiver chain and arguments (`db.prepare(sql)`,
//! `.bind(..)?`), which only build the statement, and code without an `.await`, which
//! makes no D1 call; the per-call loop keeps the statement it built and makes the call
//! again. SQL is judged alike: a literal or a constant at compile time (a write is still
//! the `read_only` compile error: `valid.rs` for a literal, `Names::read_only` for a
//! constant), dynamic SQL as it is prepared, a statement out of sight
//! by the SQL it holds as the call begins, anything else as a write; a nested scope (an
//! enclosing `read_only` or `idempotent` attempt, a `Retry`) is read by both. The
//! per-call path never runs anything twice that the whole-body one would not, and it
//! costs a method one state machine instead of two: about half the compile time of such a
//! method (BENCHMARKS.md, section 4) and no `async` block's future per call.
//!
//! A body is taken only when nothing can hide an await from the count: one `.await` in all
//! its tokens, and no macro but those whose arguments are all they await (std's printing,
//! assertion and panicking macros, logging events, `vec!`, `format!`, `matches!`: the count
//! reads their arguments too).

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::Block;
use syn::visit::Visit;

use crate::executions::{Found, awaits_only_in_its_tokens};

/// Whether `block` may be one D1 call: a single `.await` in its tokens, and no macro but
/// those that await only what their tokens show (`awaits_only_in_its_tokens`). Read before
/// the body is rewritten.
pub(crate) fn may_be(block: &Block) -> bool {
    let mut macros = Macros { plain: true };
    macros.visit_block(block);
    macros.plain && awaits(block.to_token_stream()) == 1
}

/// Whether the per-call analysis of such a body found one execution, rewritten to be
/// retried on its own (not left as written: returned, in a `move` closure, one type with
/// another future). A constant's SQL is checked read-only at compile time there too
/// (`Names::read_only`).
pub(crate) fn is(found: &Found) -> bool {
    matches!(found.executions.as_slice(), [execution] if execution.rewritten())
}

/// The `.await`s in `tokens`, in groups (a macro's arguments) too.
fn awaits(tokens: TokenStream) -> usize {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Ident(ident) => usize::from(ident == "await"),
            TokenTree::Group(group) => awaits(group.stream()),
            TokenTree::Punct(_) | TokenTree::Literal(_) => 0,
        })
        .sum()
}

/// Whether every macro called awaits only what its tokens show, by its last name: a macro
/// of the user's may await what it does not show.
struct Macros {
    plain: bool,
}

impl Visit<'_> for Macros {
    fn visit_macro(&mut self, mac: &syn::Macro) {
        if !awaits_only_in_its_tokens(mac) {
            self.plain = false;
        }
    }
}
