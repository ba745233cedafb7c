//! What the `#[d1_retry]` expansion calls into, chosen at compile time by the types it
//! meets, since the attribute itself sees no types.
//!
//! - [`receiver`]: which method calls are D1 executions (the [`D1Receiver`](crate::D1Receiver)
//!   mark) and the site that retries them or makes them as written.
//! - [`d1_prepare`] and [`by_value_prepare`]: whose `prepare` is trusted to make a statement
//!   with the SQL handed to it.
//! - [`first_column`]: the column handed to D1's `first`, typed as `first` takes it where
//!   the arguments are evaluated before the call.
//! - [`pointer_call`]: that an execution on a pointer to a D1 type is D1's own, not a
//!   method of the user's for the pointer.
//! - [`statement_sql`] and [`batch_sql`]: the SQL a statement or a batch's list holds, read
//!   when its execution begins, for statements the attribute could not see being made.
//! - [`unseen_output`]: a `read_only` body's execution on a receiver of a type not marked
//!   D1's, judged by what it returned.

pub(crate) mod batch_sql;
pub(crate) mod by_value_prepare;
pub(crate) mod d1_prepare;
pub(crate) mod first_column;
pub(crate) mod pointer_call;
pub(crate) mod receiver;
pub(crate) mod statement_sql;
pub(crate) mod unseen_output;
