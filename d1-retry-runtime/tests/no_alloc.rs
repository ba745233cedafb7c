//! The happy path allocates nothing: a counting global allocator watches a successful call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use d1_retry_runtime::Retry;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Polls a future that never waits to completion, without a runtime that could allocate.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

#[test]
fn a_successful_first_attempt_allocates_nothing() {
    // Warm up anything lazily initialised by the test harness itself.
    let _ = block_on(async { Ok::<_, Never>(0) });
    let before = allocations();
    let value = block_on(
        Retry::new("users.find")
            .read_only(true)
            .run(|| async { Ok::<_, Never>(42) }),
    );
    let after = allocations();
    assert_eq!(value.unwrap(), 42);
    assert_eq!(after - before, 0, "the happy path allocated");
}

#[test]
fn the_counter_sees_allocations() {
    // Guards the test above: if the allocator were not counting, it would pass vacuously.
    let before = allocations();
    let boxed = std::hint::black_box(Box::new(7));
    assert_eq!(*boxed, 7);
    assert!(allocations() > before);
}
