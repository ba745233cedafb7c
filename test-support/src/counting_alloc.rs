//! A global allocator that counts allocations per thread, and a runtime-free `block_on`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Counts the allocations of each thread, then defers to [`System`].
///
/// Install it in the test binary that counts:
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: test_support::CountingAllocator = test_support::CountingAllocator;
///
/// let (allocated, boxed) = test_support::allocations_of(async { Box::new(7) });
/// assert_eq!((allocated, *boxed), (1, 7));
/// ```
pub struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: defers every call to `System`; the counter is a const-initialised thread local,
// which does not allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations made on this thread so far (always 0 where [`CountingAllocator`] is not the
/// global allocator).
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Polls a future that never waits to completion, without a runtime that could allocate.
///
/// It spins on a future that returns `Pending`: only for futures that complete without
/// waiting for anything.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// How many allocations running `future` to completion with [`block_on`] makes on this
/// thread, and its output.
pub fn allocations_of<F: Future>(future: F) -> (u64, F::Output) {
    let before = allocations();
    let output = block_on(future);
    (allocations() - before, output)
}
