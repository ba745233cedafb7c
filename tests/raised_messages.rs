//! A trigger's `RAISE(FAIL, ..)` message may carry the user's data, after the rows before it
//! were written: a name that reads like a D1 phrase must not make SQLite's refusal look like
//! a failure D1 sent before running the statement. The SQLite code in the message decides.

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error};

struct Tags {
    db: D1Database,
}

impl Tags {
    #[d1_retry]
    async fn add(&self, names: [&str; 3]) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO tags (name) VALUES (?1), (?2), (?3)")
            .bind(&names.map(Into::into))?
            .run()
            .await?;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_raised_message_that_reads_like_d1_s_runs_once() {
    let db = D1Database::open_in_memory().unwrap();
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE tags (name TEXT NOT NULL);
             CREATE TRIGGER too_long BEFORE INSERT ON tags WHEN length(NEW.name) > 40
             BEGIN SELECT RAISE(FAIL, NEW.name || ': tag too long'); END;",
        )
    })
    .unwrap();
    let tags = Tags { db: db.clone() };
    let user_data = "D1 DB is overloaded. Too many requests queued. (my tag)";
    let error = tags.add(["a", "b", user_data]).await.unwrap_err();
    assert!(error.to_string().contains("SQLITE_CONSTRAINT"), "{error}");
    assert_eq!(db.calls().len(), 1, "not made again");
    let written = test_support::count(&db, "SELECT count(*) FROM tags");
    assert_eq!(written, 2, "the rows before the refused one, once");
}
