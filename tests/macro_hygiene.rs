//! The expansion in a hostile caller: its own `core` and `std` modules, `Result`, `Ok`,
//! `Option`, `Some`, `None` and `Default` of its own, locals named like the expansion's,
//! and the strictest lints (`cargo clippy --all-targets -- -D warnings` checks this file
//! with `clippy::pedantic` denied). Every shape of the expansion appears once.
#![deny(warnings, clippy::pedantic)]

mod hostile {
    #![allow(dead_code)]

    use ::std::fmt;

    use d1_retry::{RetryPolicy, d1_retry};

    mod core {}
    mod std {}

    struct Result;
    struct Ok;
    struct Option;
    struct Some;
    struct None;
    struct Default;

    #[derive(Debug)]
    pub struct DbError(pub &'static str);

    impl fmt::Display for DbError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl ::std::error::Error for DbError {}

    pub struct Db {
        pub calls: ::std::cell::Cell<u32>,
        pub fail_first: &'static str,
    }

    impl d1_retry::D1Receiver for Db {}
    impl d1_retry::D1Prepare for Db {}

    impl Db {
        fn prepare(&self, _sql: &str) -> &Self {
            self
        }

        #[allow(clippy::unused_async)]
        async fn run(&self) -> ::core::result::Result<u32, DbError> {
            self.calls.set(self.calls.get() + 1);
            if self.calls.get() == 1 {
                return ::core::result::Result::Err(DbError(self.fail_first));
            }
            ::core::result::Result::Ok(self.calls.get())
        }

        async fn batch(&self, _statements: Vec<&Self>) -> ::core::result::Result<u32, DbError> {
            self.run().await
        }
    }

    const FAST: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(2).without_budget();
    const FIND: &str = "SELECT 1";

    pub struct Repo {
        pub db: Db,
    }

    impl Repo {
        #[d1_retry(policy = FAST)]
        pub async fn literal(&self) -> ::core::result::Result<u32, DbError> {
            let __d1_retry_attempt = 1;
            let __d1_retry_error = __d1_retry_attempt;
            let _ = __d1_retry_error;
            self.db.prepare("SELECT 1").run().await
        }

        #[d1_retry(read_only, max_attempts = 2, base_delay_ms = 1, max_delay_ms = 2)]
        pub async fn dynamic(&mut self, sql: &str) -> ::core::result::Result<u32, DbError> {
            self.db.prepare(sql).run().await
        }

        /// The same in a whole body: a second `.await` keeps it from being one D1 call.
        #[d1_retry(read_only, max_attempts = 2, base_delay_ms = 1, max_delay_ms = 2)]
        pub async fn dynamic_whole(&mut self, sql: &str) -> ::core::result::Result<u32, DbError> {
            ::core::future::ready(()).await;
            self.db.prepare(sql).run().await
        }

        #[d1_retry(policy = FAST, name = "repo.constant")]
        pub async fn constant(&self) -> ::core::result::Result<u32, String> {
            self.db.prepare(FIND).run().await.map_err(|e| e.to_string())
        }

        #[d1_retry(policy = FAST)]
        pub async fn several(&self) -> ::core::result::Result<u32, DbError> {
            self.db.prepare(FIND).run().await?;
            self.db.prepare("SELECT 2").run().await
        }

        #[d1_retry(idempotent, policy = FAST)]
        pub async fn batch(&self) -> ::core::result::Result<u32, DbError> {
            self.db
                .batch(vec![self.db.prepare("INSERT OR IGNORE INTO t VALUES (1)")])
                .await
        }
    }
}

use hostile::{Db, Repo};

fn repo() -> Repo {
    Repo {
        db: Db {
            calls: std::cell::Cell::new(0),
            fail_first: "D1_ERROR: Network connection lost.",
        },
    }
}

#[tokio::test(start_paused = true)]
async fn every_shape_retries_in_a_hostile_caller() {
    assert_eq!(repo().literal().await.ok(), Some(2));
    assert_eq!(repo().dynamic("SELECT 1").await.ok(), Some(2));
    assert_eq!(repo().dynamic_whole("SELECT 1").await.ok(), Some(2));
    assert_eq!(repo().constant().await.ok(), Some(2));
    assert_eq!(repo().several().await.ok(), Some(3));
    assert_eq!(repo().batch().await.ok(), Some(2));
}
