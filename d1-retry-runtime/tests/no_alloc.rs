//! The happy path allocates nothing: a counting global allocator watches a successful call.

use d1_retry_runtime::Retry;

use test_support::{CountingAllocator, allocations_of, block_on};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

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
    let (allocated, value) = allocations_of(
        Retry::new("users.find")
            .read_only(true)
            .run(|| async { Ok::<_, Never>(42) }),
    );
    assert_eq!(value.unwrap(), 42);
    assert_eq!(allocated, 0, "the happy path allocated");
}

#[test]
fn the_counter_sees_allocations() {
    // Guards the test above: if the allocator were not counting, it would pass vacuously.
    let (allocated, boxed) = allocations_of(async { std::hint::black_box(Box::new(7)) });
    assert_eq!(*boxed, 7);
    assert!(allocated > 0);
}
