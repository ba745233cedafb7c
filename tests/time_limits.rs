//! Stalls: the attempt timeout and the call deadline of `#[d1_retry]`, on tokio's paused
//! clock (virtual time, so bounds hold to the millisecond).

use core::time::Duration;
use std::cell::RefCell;
use std::collections::VecDeque;

use d1_retry::{RetryPolicy, TimeLimit, TimedOut, d1_retry};
use test_support::Logs;
use tokio::time::Instant;

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const LOST: &str = "D1_ERROR: Network connection lost.";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The timeout a call failed with; any other error fails the test.
fn timed_out(error: DbError) -> TimedOut {
    match error {
        DbError::TimedOut(timed_out) => timed_out,
        error => panic!("expected a timeout, got {error}"),
    }
}

/// The call failed with a timeout of `limit`, reported as `after`, exactly `after` since
/// `start`: the caller has its error the moment the limit passes.
fn cut_at(error: DbError, start: Instant, limit: TimeLimit, after: Duration) -> TimedOut {
    assert_eq!(start.elapsed(), after);
    let timed_out = timed_out(error);
    assert_eq!((timed_out.limit(), timed_out.after()), (limit, after));
    timed_out
}

#[derive(Debug)]
pub enum DbError {
    D1(&'static str),
    TimedOut(TimedOut),
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::D1(message) => f.write_str(message),
            DbError::TimedOut(timed_out) => timed_out.fmt(f),
        }
    }
}

impl std::error::Error for DbError {}

impl From<TimedOut> for DbError {
    fn from(error: TimedOut) -> Self {
        DbError::TimedOut(error)
    }
}

/// What one statement run does.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Hangs this long, then answers.
    Stall(Duration),
    /// Hangs forever.
    Hang,
    /// Fails at once.
    Fail(&'static str),
}

/// A D1 stand-in whose statements follow a script, then answer at once; it records when
/// each run started and which ones completed.
#[derive(Default)]
struct Db {
    script: RefCell<VecDeque<Step>>,
    started: RefCell<Vec<Duration>>,
    completed: RefCell<u32>,
    origin: RefCell<Option<Instant>>,
}

#[derive(Clone)]
struct Statement<'db> {
    db: &'db Db,
}

impl d1_retry::D1Receiver for Statement<'_> {}
// The database too, and `D1Prepare` for it and a reference to it: its `prepare` stands for
// D1's, so the attribute judges the SQL given to it (a `prepare` on another type is out of
// sight, and this kit's statements cannot tell their SQL: a write).
impl d1_retry::D1Receiver for Db {}
impl d1_retry::D1Prepare for Db {}
impl d1_retry::D1Prepare for &Db {}

impl Db {
    fn new(script: impl IntoIterator<Item = Step>) -> Self {
        Db {
            script: RefCell::new(script.into_iter().collect()),
            origin: RefCell::new(Some(Instant::now())),
            ..Db::default()
        }
    }

    fn prepare(&self, _sql: &str) -> Statement<'_> {
        Statement { db: self }
    }

    fn starts(&self) -> Vec<Duration> {
        self.started.borrow().clone()
    }
}

impl Statement<'_> {
    async fn run(&self) -> Result<u32, DbError> {
        let origin = self.db.origin.borrow().unwrap_or_else(Instant::now);
        self.db.started.borrow_mut().push(origin.elapsed());
        let step = self.db.script.borrow_mut().pop_front();
        match step {
            Some(Step::Stall(time)) => tokio::time::sleep(time).await,
            Some(Step::Hang) => std::future::pending::<()>().await,
            Some(Step::Fail(message)) => return Err(DbError::D1(message)),
            None => {}
        }
        *self.db.completed.borrow_mut() += 1;
        Ok(*self.db.completed.borrow())
    }
}

#[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000)]
async fn read(db: &Db) -> Result<u32, DbError> {
    db.prepare("SELECT count(*) FROM users").run().await
}

#[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000)]
async fn write(db: &Db) -> Result<u32, DbError> {
    db.prepare("INSERT INTO users (name) VALUES ('ada')")
        .run()
        .await
}

#[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 5000)]
async fn read_by_5s(db: &Db) -> Result<u32, DbError> {
    db.prepare("SELECT count(*) FROM users").run().await
}

/// Check, then insert: two executions of one call under one deadline.
#[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 5000)]
async fn count_then_insert_by_5s(db: &Db) -> Result<u32, DbError> {
    db.prepare("SELECT count(*) FROM users").run().await?;
    db.prepare("INSERT INTO users (name) VALUES ('ada')")
        .run()
        .await
}

/// A statement prepared once and run in a loop, under one deadline.
#[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 5000)]
async fn insert_each_by_5s(db: &Db, times: u32) -> Result<u32, DbError> {
    let insert = db.prepare("INSERT INTO users (name) VALUES ('ada')");
    let mut inserted = 0;
    for _ in 0..times {
        inserted = insert.run().await?;
    }
    Ok(inserted)
}

#[d1_retry(policy = NO_BUDGET, deadline_ms = 300)]
async fn read_by_300ms(db: &Db) -> Result<u32, DbError> {
    db.prepare("SELECT count(*) FROM users").run().await
}

#[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000)]
async fn whole_read(db: &Db) -> Result<u32, DbError> {
    // A second `.await`: a body of one D1 call is retried as that call.
    core::future::ready(()).await;
    db.prepare("SELECT count(*) FROM users").run().await
}

#[tokio::test(start_paused = true)]
async fn a_stalled_read_is_cut_and_retried() {
    let (logs, _guard) = Logs::capture();
    let db = Db::new([Step::Stall(ms(60_000))]);
    let start = Instant::now();
    assert_eq!(read(&db).await.ok(), Some(1));
    let starts = db.starts();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0], Duration::ZERO);
    // Cut at exactly 2 s, then the first retry's wait (160-240 ms).
    let second = starts[1];
    assert!((ms(2160)..=ms(2240)).contains(&second), "{second:?}");
    assert_eq!(start.elapsed(), second);
    logs.assert_contains("d1.failure_class=\"maybe_executed\"");
    logs.assert_contains("D1 call timed out: read passed its attempt timeout of 2000 ms");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_write_is_not_retried_and_the_caller_gets_the_timeout() {
    let (logs, _guard) = Logs::capture();
    let db = Db::new([Step::Hang]);
    let start = Instant::now();
    let error = write(&db).await.unwrap_err();
    let timed_out = cut_at(error, start, TimeLimit::Attempt, ms(2000));
    assert_eq!(timed_out.operation(), "write");
    assert_eq!(db.starts().len(), 1);
    logs.assert_contains("d1.withheld=\"maybe_executed_write\"");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_met_to_the_millisecond() {
    let db = Db::new([Step::Hang, Step::Hang, Step::Hang, Step::Hang]);
    let start = Instant::now();
    let error = read_by_5s(&db).await.unwrap_err();
    // Attempts at 0 and about 2.2 s are cut by the attempt timeout; the third, about
    // 4.6 s in, by what is left of the deadline: the caller has its error at 5 s sharp.
    cut_at(error, start, TimeLimit::Deadline, ms(5000));
    assert_eq!(db.starts().len(), 3);
}

/// The deadline is the call's, not each execution's: a later execution gets what the
/// earlier ones left of it, and a write cut there is not made again.
#[tokio::test(start_paused = true)]
async fn a_later_execution_is_cut_by_what_is_left_of_the_calls_deadline() {
    let (logs, _guard) = Logs::capture();
    // The count hangs and is cut at 2 s, then is made again after its wait (160-240 ms) and
    // answers 1.5 s later; the insert then starts with about 1.3 s of the deadline left,
    // less than its 2 s attempt timeout, and hangs.
    let db = Db::new([Step::Hang, Step::Stall(ms(1500)), Step::Hang]);
    let start = Instant::now();
    let error = count_then_insert_by_5s(&db).await.unwrap_err();
    cut_at(error, start, TimeLimit::Deadline, ms(5000));
    let starts = db.starts();
    assert_eq!(starts.len(), 3, "{starts:?}");
    assert!((ms(2160)..=ms(2240)).contains(&starts[1]), "{starts:?}");
    assert_eq!(starts[2], starts[1] + ms(1500));
    // Only the count's second attempt answered; the insert ran once.
    assert_eq!(*db.completed.borrow(), 1);
    logs.assert_contains("d1.withheld=\"maybe_executed_write\"");
}

/// The same in a loop: each run of the statement gets what the runs before it left of the
/// deadline, and none that answered is made again.
#[tokio::test(start_paused = true)]
async fn a_statement_run_in_a_loop_shares_the_calls_deadline() {
    // Three inserts answer after 1.5 s each; the fourth starts 4.5 s in and hangs, with
    // 0.5 s of the deadline left.
    let stall = Step::Stall(ms(1500));
    let db = Db::new([stall, stall, stall, Step::Hang]);
    let start = Instant::now();
    let error = insert_each_by_5s(&db, 4).await.unwrap_err();
    cut_at(error, start, TimeLimit::Deadline, ms(5000));
    assert_eq!(db.starts(), [ms(0), ms(1500), ms(3000), ms(4500)]);
    assert_eq!(*db.completed.borrow(), 3);
}

#[tokio::test(start_paused = true)]
async fn no_retry_starts_whose_wait_would_end_after_the_deadline() {
    let (logs, _guard) = Logs::capture();
    let db = Db::new([Step::Fail(LOST), Step::Fail(LOST), Step::Fail(LOST)]);
    let start = Instant::now();
    let error = read_by_300ms(&db).await.unwrap_err();
    assert!(matches!(error, DbError::D1(LOST)), "{error}");
    // The first wait (160-240 ms) fits in 300 ms; the second (320-480 ms) cannot, so the
    // call stops at the second failure instead of waiting past its deadline.
    let starts = db.starts();
    assert_eq!(starts.len(), 2);
    assert!(start.elapsed() < ms(300));
    assert_eq!(start.elapsed(), starts[1]);
    logs.assert_contains("d1.withheld=\"deadline\"");
}

#[tokio::test(start_paused = true)]
async fn a_whole_body_attempt_is_cut_too() {
    let db = Db::new([Step::Hang]);
    let start = Instant::now();
    assert_eq!(whole_read(&db).await.ok(), Some(1));
    assert_eq!(db.starts().len(), 2);
    assert!(start.elapsed() >= ms(2160));
}

/// Time-limit options without `policy`: the default policy with its limits set. (The
/// expansion borrows `RetryPolicy::DEFAULT` as it is only for a function without any
/// option; one with time-limit options alone must not take that path.) The stalls spend a
/// token of the shared default budget each, which no other test here reads.
#[tokio::test(start_paused = true)]
async fn time_limit_options_alone_set_limits_on_the_default_policy() {
    #[d1_retry(attempt_timeout_ms = 2000)]
    async fn cut_at_2s(db: &Db) -> Result<u32, DbError> {
        db.prepare("SELECT 1").run().await
    }
    #[d1_retry(deadline_ms = 3000)]
    async fn due_in_3s(db: &Db) -> Result<u32, DbError> {
        db.prepare("SELECT 1").run().await
    }
    let db = Db::new([Step::Stall(ms(60_000))]);
    let start = Instant::now();
    assert_eq!(cut_at_2s(&db).await.ok(), Some(1));
    let starts = db.starts();
    assert_eq!(starts.len(), 2);
    assert!(
        (ms(2160)..=ms(2240)).contains(&starts[1]),
        "{:?}",
        starts[1]
    );
    assert_eq!(start.elapsed(), starts[1]);

    let db = Db::new([Step::Hang]);
    let start = Instant::now();
    let error = due_in_3s(&db).await.unwrap_err();
    assert_eq!(start.elapsed(), ms(3000));
    let timed_out = timed_out(error);
    assert_eq!(timed_out.limit(), TimeLimit::Deadline);
    assert_eq!(db.starts().len(), 1);
}

/// Limits carried by a policy constant alone, without time-limit options: the attribute
/// cannot read the constant, and the compiler picks the time-limited loop from its value
/// (`Limits<true>`). A call and a whole body are each cut at the constant's attempt timeout;
/// a stored execution under such a constant is cut in `user_shapes/time_limits.rs`.
#[tokio::test(start_paused = true)]
async fn a_policy_constant_with_limits_cuts_a_call_and_a_whole_body() {
    const LIMITED: RetryPolicy = NO_BUDGET.with_attempt_timeout(Duration::from_millis(2000));
    #[d1_retry(policy = LIMITED)]
    async fn call(db: &Db) -> Result<u32, DbError> {
        db.prepare("SELECT 1").run().await
    }
    #[d1_retry(read_only, policy = LIMITED)]
    async fn whole_body(db: &Db) -> Result<u32, DbError> {
        core::future::ready(()).await;
        db.prepare("SELECT 1").run().await
    }
    #[d1_retry(idempotent, policy = LIMITED)]
    async fn idempotent_body(db: &Db) -> Result<u32, DbError> {
        db.prepare("INSERT INTO users (id) VALUES (1) ON CONFLICT DO NOTHING")
            .run()
            .await
    }
    type Attempted<'a> = std::pin::Pin<Box<dyn Future<Output = Result<u32, DbError>> + 'a>>;
    type Shape = fn(&Db) -> Attempted<'_>;
    let shapes: [(&str, Shape); 3] = [
        ("call", |db| Box::pin(call(db))),
        ("read_only", |db| Box::pin(whole_body(db))),
        ("idempotent", |db| Box::pin(idempotent_body(db))),
    ];
    for (shape, function) in shapes {
        let db = Db::new([Step::Hang]);
        let start = Instant::now();
        // Without the limit the hang is forever: an hour on the paused clock fails the test.
        let result = tokio::time::timeout(Duration::from_secs(3600), function(&db))
            .await
            .unwrap_or_else(|_| panic!("{shape}: not cut"));
        assert_eq!(result.ok(), Some(1), "{shape}");
        let starts = db.starts();
        assert_eq!(starts.len(), 2, "{shape}");
        // Cut at exactly 2 s, then the first retry's wait (160-240 ms).
        assert!(
            (ms(2160)..=ms(2240)).contains(&starts[1]),
            "{shape}: {:?}",
            starts[1]
        );
        assert_eq!(start.elapsed(), starts[1], "{shape}");
    }
}

#[tokio::test(start_paused = true)]
async fn without_time_limits_a_stall_is_waited_out() {
    #[d1_retry(policy = NO_BUDGET)]
    async fn patient(db: &Db) -> Result<u32, DbError> {
        db.prepare("SELECT 1").run().await
    }
    let db = Db::new([Step::Stall(ms(60_000))]);
    let start = Instant::now();
    assert_eq!(patient(&db).await.ok(), Some(1));
    assert_eq!(start.elapsed(), ms(60_000));
    assert_eq!(db.starts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_takes_a_token_from_the_retry_budget() {
    static TOKENS: d1_retry::RetryTokens = d1_retry::RetryTokens::new();
    const TINY: RetryPolicy =
        RetryPolicy::DEFAULT.with_budget(d1_retry::RetryBudget::new(&TOKENS).with_max_tokens(2));
    #[d1_retry(policy = TINY, attempt_timeout_ms = 1000)]
    async fn budgeted(db: &Db) -> Result<u32, DbError> {
        db.prepare("SELECT 1").run().await
    }
    let (logs, _guard) = Logs::capture();
    let db = Db::new([Step::Hang]);
    // 2 tokens -> 1 after the timeout: at or below half, so no retry.
    assert!(budgeted(&db).await.is_err());
    assert_eq!(db.starts().len(), 1);
    logs.assert_contains("d1.withheld=\"budget\"");
}
