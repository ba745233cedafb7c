use d1_retry::{D1Receiver, d1_retry};

#[derive(Debug)]
struct Opaque;

#[derive(Clone)]
struct Statement;

// Marked as a D1 statement, so its calls are retried, and their error must be readable.
impl D1Receiver for Statement {}

impl Statement {
    async fn run(&self) -> Result<u64, Opaque> {
        Ok(1)
    }
}

#[d1_retry]
async fn touch(statement: &Statement) -> Result<u64, String> {
    statement.run().await.map_err(|_| "failed".to_owned())
}

fn main() {
    let _ = touch;
}
