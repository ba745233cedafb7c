//! The walk over a body that finds its executions: what it knows of the body's statement
//! variables and what it found so far. The walk itself is in [`walk`]; what it does at a
//! statement, an execution and, in a `read_only` body, a call it cannot judge, is in
//! [`statements`], [`execution`] and [`read_only`].

use std::collections::{HashMap, HashSet};

use proc_macro2::{Span, TokenStream};
use quote::format_ident;
use syn::{Block, Ident};

use super::bindings::Bindings;
use super::meeting::Meeting;
use super::{Execution, Found, Mode, Names};
use crate::sql::Sql;

pub(super) mod execution;
pub(super) mod read_only;
pub(super) mod statements;
pub(super) mod walk;

/// Finds the executions of `block`, whose names `bindings` counted, and, in per-call
/// mode, rewrites them.
pub(super) fn find(
    block: &mut Block,
    mode: Mode,
    names: &Names,
    bindings: Bindings,
    meeting: Meeting,
    params: &[Ident],
    statements_in: &[Ident],
) -> Found {
    let observing = mode == (Mode::WholeBody { read_only: true });
    let mut finder = Finder {
        mode,
        names,
        bindings,
        meeting,
        statements: HashMap::new(),
        sighted: HashSet::new(),
        // A `read_only` body's statement parameters, handed on as its copies are.
        copies: if observing {
            statements_in.iter().map(super::bindings::name).collect()
        } else {
            HashSet::new()
        },
        roots: if observing {
            params
                .iter()
                .map(super::bindings::name)
                .chain([String::from("self")])
                .collect()
        } else {
            HashSet::new()
        },
        called: HashSet::new(),
        pending: HashSet::new(),
        executions: Vec::new(),
        all_sql: Vec::new(),
        in_move_closure: false,
        in_return_position: false,
        unify_next: false,
        unify_tail: false,
        in_unifying_position: false,
        next_slot: 0,
        probes_errors: false,
        types_columns: false,
        observes_held: false,
        in_foreign_macro: false,
        beyond_attempt: false,
        observing_made: false,
        ahead: Vec::new(),
    };
    finder.visit_body(block);
    Found {
        executions: finder.executions,
        sql: finder.all_sql,
        probes_errors: finder.probes_errors,
        types_columns: finder.types_columns,
        observes_held: finder.observes_held,
    }
}

/// What is known of a statement variable's SQL.
#[derive(Clone)]
pub(super) struct Known {
    /// One text, or one per arm of an `if` or a `match` that chose the statement.
    sql: Vec<Sql>,
    /// Its `Access` parts taken where it was bound, from `Copy` locals, so that `async move`
    /// blocks may each take a copy: what its slot recorded (dynamic SQL, a receiver probed
    /// as it was evaluated), and its `prepare`'s receiver probed by type.
    verdicts: Vec<TokenStream>,
}

pub(super) struct Finder<'a> {
    mode: Mode,
    names: &'a Names,
    bindings: Bindings,
    /// The names of futures that must have one type with another site's.
    meeting: Meeting,
    /// `let stmt = db.prepare(..)` bindings seen so far.
    statements: HashMap<String, Known>,
    /// In a `read_only` body, the names bound once to a statement made in sight
    /// ([`Finder::made_in_sight`]).
    sighted: HashSet<String>,
    /// In a `read_only` body, the names that mean a statement's copy where the walk stands
    /// (`let copy = stmt.clone();`, a part of one bound by a pattern): handed on by value,
    /// such a name is observed as the copy would be. Followed in the order the body binds
    /// them, scope by scope ([`Finder::copies_bound`], [`Finder::scoped`]).
    copies: HashSet<String>,
    /// In a `read_only` body, `self` and the parameters not bound again where the walk
    /// stands: names whose types are declared, so that a place reached from one (`&self.insert`,
    /// `params.stmt`) has a type known where it stands, and may be observed as lent
    /// ([`Finder::lent_observation`]). Followed as `copies` are.
    roots: HashSet<String>,
    /// In a `read_only` body, the names bound where the walk stands to what a call that
    /// makes no copy returned (`let deadline = sleep(d);`, `let pending = stmt.first(None);`):
    /// a future, or a statement of a helper's, which the README leaves out of sight.
    called: HashSet<String>,
    /// The names bound once to an execution's future (`let pending = stmt.first(None);`):
    /// `pending.await` awaits that future, not a statement ([`Finder::awaited_statement`]).
    pending: HashSet<String>,
    executions: Vec<Execution>,
    all_sql: Vec<Sql>,
    in_move_closure: bool,
    /// Inside the function's returned value (its tail, a `return`, an `Ok(..)` of either).
    in_return_position: bool,
    /// The next expression visited is a value that must have one type with another
    /// site's: an `if`'s or a `match`'s arm value, a method call's argument
    /// (`futures.push(a.run())`). Taken as the expression's visit begins, so nothing
    /// inside it sees it.
    unify_next: bool,
    /// The next block visited is an `if`'s branch: its tail is such a value.
    unify_tail: bool,
    /// The execution being handled is such a value: a stored one there is left as
    /// written, since the future the runtime makes of it has a type of its own per site,
    /// where D1's futures of one method have one type (`if c { a.all() } else { b.all() }`
    /// compiles without the attribute).
    in_unifying_position: bool,
    next_slot: usize,
    /// See [`Found::probes_errors`].
    probes_errors: bool,
    /// See [`Found::types_columns`].
    types_columns: bool,
    /// See [`Found::observes_held`].
    observes_held: bool,
    /// Inside the arguments of a macro not known to take expressions (not one of the
    /// [`EXPRESSION_MACROS`](super::vocabulary::EXPRESSION_MACROS)): its tokens may be matched as
    /// they are written, so nothing is rewritten there but the SQL `read_only` must judge.
    in_foreign_macro: bool,
    /// Inside an `async` block or a closure, which may have to own all it holds (a spawned
    /// task's future) or become a `fn` pointer: a `read_only` body's observation there does
    /// not borrow the attempt's record, it counts on the thread ([`Finder::observed`]).
    beyond_attempt: bool,
    /// Set while a `read_only` body's `prepare` argument is judged by the caller that hands
    /// the statement it makes to the runtime's `made_statement`
    /// ([`whole_body_sql`](Finder::whole_body_sql)): only then may SQL that is not text be
    /// left to that statement rather than count as a write.
    observing_made: bool,
    /// Observations to make before the statement being visited: a foreign macro's in
    /// expression position ([`Finder::foreign_macro_observation`]), told as a statement of
    /// its own rather than around the macro, which would end the life of a temporary the
    /// macro's value holds (`let fut = pin!(stmt.run());`).
    ahead: Vec<TokenStream>,
}

/// The statements an execution runs, and the dynamic SQL to scan on the way.
#[derive(Default)]
pub(super) struct Statements {
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

impl Statements {
    /// Whether their access may be `Access::Unseen` when it is read: a statement out of
    /// sight, or one whose SQL or `prepare` is judged as it runs.
    fn may_be_unseen(&self) -> bool {
        self.scans > 0
            || !self.checks.is_empty()
            || !self.known_verdicts.is_empty()
            || self
                .sql
                .iter()
                .any(|sql| matches!(sql, Sql::Unseen | Sql::Dynamic))
    }
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
}
