//! Helpers shared by the tests and benches of the d1-retry workspace (never published).
//!
//! - [`CountingAllocator`] and [`allocations_of`]: how many allocations a call makes, for
//!   the tests that prove the happy path allocates nothing. A test binary installs the
//!   allocator itself (`#[global_allocator]`), so only the binaries that count pay for it.
//! - [`block_on`]: polls a future that never waits, without a runtime that could allocate.
//! - [`join_all`]: awaits several futures in one task, as `futures::future::join_all`.
//! - [`Logs`]: captures the log lines of one test thread.
//! - [`lose_once_after_running`], [`lose_call_after_running`], [`count`], [`calls_with`],
//!   [`orders_with_archive`] and [`Archive`]: a statement failed once after it ran, a
//!   number read back, the calls D1 was sent, and a table of orders with an empty archive
//!   that a statement builder of the user's own fills, on the testing kit's database.
//! - [`fake_db`]: a stand-in D1 whose statements fail from a script, for the attribute's
//!   tests.
//! - `shared/happy_path.rs`, beside `src/` and not a module of this crate: the repository
//!   methods that `benches/happy_path.rs` times and `tests/happy_path_alloc.rs` checks, with
//!   the sizes of their futures. Both include it with `#[path]`, so that `#[d1_retry]`
//!   expands in their own crate, which depends on the `d1_retry` facade.

mod counting_alloc;
pub mod fake_db;
mod faults;
mod join;
mod log_capture;

pub use counting_alloc::{CountingAllocator, allocations, allocations_of, block_on};
pub use faults::{
    Archive, calls_with, count, fail_once, lose_call_after_running, lose_once_after_running,
    orders_and_audit, orders_with_archive,
};
pub use join::join_all;
pub use log_capture::{CaptureGuard, Logs};
