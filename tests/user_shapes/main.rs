//! User shapes: `#[d1_retry]` on repository code written the ways Workers code is really
//! written (traits and generics, statements kept in fields and chosen in loops and labelled
//! blocks, futures joined and raced, SQL chosen by `match` or built by `format!`, error
//! types of the user's own), each swept with a failure at every D1 call it makes.
//!
//! Every shape runs once without failures, then once per call index and per failure: "not
//! executed" before the call ran, "maybe executed" before it ran and after it ran. Each run
//! starts from a fresh local D1 (the testing kit's SQLite), and [`harness::sweep`] holds it to
//! the retry table of the README:
//! - no write is executed twice, and a write that failed "maybe executed" is never sent
//!   again: its caller gets the error;
//! - a side effect of the body outside D1 (a queue send, a counter) happens at most once:
//!   only the failed call is made again, never the code around it;
//! - a "not executed" failure, and a "maybe executed" failure of a read, are retried to the
//!   clean run's outcome: same result, same rows, same side effects;
//! - a call the README says is left as written (inside a macro other than the expression
//!   macros it knows, inside a plain helper) is not retried: it is sent once and its
//!   caller gets the failure.
//!
//! By concept: [`harness`] is the sweep, its schema and helpers; [`generic_repos`] traits,
//! generics and smart pointers; [`statements_kept`] statements held in fields, options,
//! containers and names bound in loops, labelled blocks and patterns; [`concurrency`]
//! joined, raced, boxed futures and closures; [`sql_forms`] the forms SQL takes in the
//! source and the D1 calls it goes to; [`errors`] the user's own error types;
//! [`read_only`] `#[d1_retry(read_only)]` bodies; [`one_call`] such bodies that are one D1
//! call, retried as that call; [`scanner_traps`] SQL meant to fool the
//! read-only scanner, judged by SQLite itself; [`time_limits`] the same kinds of shapes
//! under an attempt timeout and a deadline (options, or a policy constant), swept with
//! stalls as well as failures by [`harness::sweep_timed`]; [`nested_read_only`] `read_only`
//! functions that wrote, called from bodies that run again; [`decoded_rows`] a row's text
//! in the error of a write through `first` or `raw`; [`wrapped_statements`] statements run
//! through types that deref to D1's in a `read_only` body; [`client_text`] a client's text
//! in the user's own error around a `Retry`'s write; [`handed_over`] statements a `read_only`
//! body hands on to what runs them (`join!`, `timeout`, a path under another name);
//! [`std_macros`] executions inside `matches!`; [`invalid_inner_policies`] a call under a
//! policy `validate()` refuses, inside an attempt that runs again; [`deref_fields`]
//! statements reached through a field behind a `Deref` of the user's, which may name another
//! statement by the time the call is retried; [`written_receivers`] receivers in parentheses
//! or pasted by a `macro_rules!` of the user's; [`extension_traits`] an extension trait of the
//! user's for every type, with methods named like those the expansion calls.
//!
//! The waits run on tokio's paused clock: virtual, so the retry schedules cost no time.

mod client_text;
mod concurrency;
mod decoded_rows;
mod deref_fields;
mod errors;
mod extension_traits;
mod generic_repos;
mod handed_over;
mod harness;
mod invalid_inner_policies;
mod nested_idempotent;
mod nested_read_only;
mod nested_unseen_writes;
mod one_call;
mod read_only;
mod scanner_traps;
mod sql_forms;
mod statements_kept;
mod std_macros;
mod time_limits;
mod wrapped_statements;
mod written_receivers;
