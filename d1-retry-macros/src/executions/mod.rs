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
//!
//! The parts, in the order the work is done:
//! - [`bindings`]: which names the body binds once, so that a statement variable's SQL can
//!   be followed from its `let` to its executions;
//! - [`finder`]: the walk over the body ([`finder::walk`]) that finds each execution,
//!   judges the statements it runs ([`finder::statements`]), rewrites it
//!   ([`finder::execution`]), or, in a `read_only` body, has what it runs observed
//!   ([`finder::read_only`]);
//! - [`meeting`]: the names of futures that must have one type with another site's, whose
//!   executions are left as written;
//! - [`vocabulary`]: the names of D1's executions and of the macros whose arguments are
//!   walked; [`syntax`]: what an expression is, read from its tokens alone;
//!   [`generated`]: the pieces of generated code shared by the rewrites.

use proc_macro2::{Ident, TokenStream};
use syn::Block;
use syn::visit::Visit;

use crate::sql::Sql;

use bindings::Bindings;

mod bindings;
mod finder;
mod generated;
mod meeting;
mod syntax;

pub(crate) use syntax::bound_idents;
pub(crate) use vocabulary::awaits_only_in_its_tokens;
#[cfg(test)]
mod tests;
mod vocabulary;

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
    /// Whether the call was rewritten to be retried, or why it was left as written (for the
    /// doc paragraph).
    pub(crate) left: Left,
    /// Whether SQL out of sight is read from the statements when the execution begins: a
    /// statement's own rewritten execution, or a rewritten `batch` of a list out of sight
    /// (`batch_sql.rs`); else it counts as a write.
    pub(crate) held: bool,
}

/// Why an execution is left as written (not retried on its own), as the doc paragraph
/// tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// Rewritten to be retried (per-call mode).
    No,
    /// In a whole-body function, whose body is what runs again.
    WholeBody,
    /// Neither awaited where it is written nor called on a variable or field.
    NotAPlace,
    /// Returned from the function or made in a `move` closure: it may outlive the calls'
    /// schedule.
    Outlives,
    /// It must have one type with another site's future (an arm's value, a `vec!`'s
    /// element, a future handed to a storing method).
    Meets,
}

impl Execution {
    /// Whether the call was rewritten to be retried (per-call mode only).
    pub(crate) fn rewritten(&self) -> bool {
        self.left == Left::No
    }
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
    /// The function is declared `read_only`: a constant's SQL is checked read-only at compile
    /// time, whether the body is retried whole or is one call retried as that call
    /// (`one_call.rs`).
    pub(crate) read_only: bool,
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
    /// A `first(col_name)` retried on its own hands its column through the traits of the
    /// runtime's `first_column.rs`, which the function must then import.
    pub(crate) types_columns: bool,
    /// A `read_only` body runs a statement made out of sight, which the attempt is told of through
    /// the receiver probe's traits ([`Finder::observed`](finder::Finder::observed)), which the
    /// function must then import.
    pub(crate) observes_held: bool,
}

/// Finds the executions of `block` and, in per-call mode, rewrites them. `statements_in`:
/// the parameters declared to be D1's statement, which a `read_only` body hands on as it
/// hands on its copies ([`Finder::copies_bound`](finder::Finder::copies_bound)).
pub(crate) fn rewrite(
    block: &mut Block,
    mode: Mode,
    names: &Names,
    params: &[Ident],
    statements_in: &[Ident],
) -> Found {
    let mut bindings = Bindings::default();
    for param in params {
        bindings.parameter(param);
    }
    bindings.visit_block(block);
    let meeting = if mode == Mode::PerCall {
        meeting::Meeting::of(block)
    } else {
        meeting::Meeting::default()
    };
    finder::find(block, mode, names, bindings, meeting, params, statements_in)
}
