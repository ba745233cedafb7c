//! The interpreter: one `#[d1_retry]` method runs any per-call program, making each D1
//! execution directly in its body (so the attribute rewrites them), beside plain and
//! annotated helpers and a `#[d1_retry(read_only)]` read-program runner.
//!
//! Every execution is given a fresh tag, bound as its first parameter (or written into
//! its `exec` text), so the kit's journal tells which calls belong to which execution.
//! Write ids come from a counter local to `run`'s body: if the body ever ran twice, the
//! same ids would be inserted again, and the table would show it.

use core::cell::{Cell, RefCell};

use d1_retry::testing::{D1Database, D1PreparedStatement, Error, Value};
use d1_retry::{RetryPolicy, d1_retry};

use crate::program::{Op, ReadKind, ReadOp, WriteKind, flatten_reads};

pub const POLICY: RetryPolicy = RetryPolicy::DEFAULT.without_budget();

const INSERT: &str = "INSERT INTO items (tag, id) VALUES (?1, ?2)";

/// What the oracle expects of an execution's retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only SQL: retried after a not-executed or maybe-executed failure.
    Read,
    /// SQL that may write (seen, or unseen): retried only when not executed.
    Write,
    /// SQL that may write, through `first` or `raw`, which decode the rows in the same
    /// call (its error may be a row's text): never retried.
    DecodedWrite,
    /// An execution inside a plain helper: made once, as written.
    Plain,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// A `#[d1_retry]` call: its executions share one schedule.
    PerCall,
    /// A `#[d1_retry(read_only)]` call: its whole body is retried.
    WholeBody,
}

/// One call of an annotated function, created by its caller before the call.
#[derive(Debug)]
pub struct Scope {
    pub kind: ScopeKind,
    pub name: &'static str,
    /// The calling scope, its attempt and its leaf at the time of the call.
    pub parent: Option<(usize, u32, usize)>,
    /// Body entries: 1 for a per-call function, one per attempt for a whole-body one.
    pub entries: u32,
    /// The leaf the body is at (set by the interpreter; 0 for the small helpers).
    pub leaf: usize,
    /// For each leaf of the scope's program, whether it is an `Effect`.
    pub flat: Vec<bool>,
}

/// One execution as the body saw it.
#[derive(Debug)]
pub struct Exec {
    pub tag: i64,
    pub scope: usize,
    pub attempt: u32,
    pub leaf: usize,
    pub access: Access,
    pub ids: Vec<i64>,
    /// The body got `Ok` from it.
    pub done: bool,
}

/// A leaf the interpreter reached.
#[derive(Debug)]
pub struct Leaf {
    pub scope: usize,
    pub attempt: u32,
    pub index: usize,
}

#[derive(Default, Debug)]
pub struct Trace {
    pub scopes: Vec<Scope>,
    pub execs: Vec<Exec>,
    pub leaves: Vec<Leaf>,
}

pub struct Runner {
    pub db: D1Database,
    /// `Effect` ops that ran.
    pub effects: Cell<u32>,
    pub trace: RefCell<Trace>,
}

#[derive(serde::Deserialize)]
struct Row {
    #[allow(dead_code)]
    n: i64,
    #[allow(dead_code)]
    tag: i64,
}

#[derive(serde::Deserialize)]
struct IdRow {
    #[allow(dead_code)]
    id: i64,
}

/// A plain helper that writes: not annotated, so its execution is made once.
async fn write_plain(db: &D1Database, tag: i64, id: i64) -> Result<(), Error> {
    db.prepare(INSERT)
        .bind(&[tag.into(), id.into()])?
        .run()
        .await?;
    Ok(())
}

/// A plain helper that reads.
async fn read_plain(db: &D1Database, tag: i64) -> Result<(), Error> {
    db.prepare("SELECT count(*) AS n, ?1 AS tag FROM items")
        .bind(&[tag.into()])?
        .all()
        .await?;
    Ok(())
}

/// A statement built out of the attribute's sight.
fn build_insert(db: &D1Database, tag: i64, id: i64) -> Result<D1PreparedStatement, Error> {
    db.prepare(INSERT).bind(&[tag.into(), id.into()])
}

impl Runner {
    pub fn new(db: D1Database) -> Self {
        Runner {
            db,
            effects: Cell::new(0),
            trace: RefCell::default(),
        }
    }

    /// A scope for a call about to be made from `parent` (or from the test).
    pub fn scope(
        &self,
        kind: ScopeKind,
        name: &'static str,
        parent: Option<usize>,
        flat: Vec<bool>,
    ) -> usize {
        let mut trace = self.trace.borrow_mut();
        let parent = parent.map(|p| (p, trace.scopes[p].entries, trace.scopes[p].leaf));
        trace.scopes.push(Scope {
            kind,
            name,
            parent,
            entries: 0,
            leaf: 0,
            flat,
        });
        trace.scopes.len() - 1
    }

    fn enter(&self, scope: usize) {
        let mut trace = self.trace.borrow_mut();
        trace.scopes[scope].entries += 1;
        trace.scopes[scope].leaf = 0;
    }

    fn leaf(&self, scope: usize, index: usize) {
        let mut trace = self.trace.borrow_mut();
        let attempt = trace.scopes[scope].entries;
        trace.scopes[scope].leaf = index;
        trace.leaves.push(Leaf {
            scope,
            attempt,
            index,
        });
    }

    /// Registers an execution about to be made; its tag.
    fn begin(&self, scope: usize, access: Access, ids: Vec<i64>) -> i64 {
        let mut trace = self.trace.borrow_mut();
        let tag = i64::try_from(trace.execs.len()).unwrap_or(i64::MAX) + 1;
        let attempt = trace.scopes[scope].entries;
        let leaf = trace.scopes[scope].leaf;
        trace.execs.push(Exec {
            tag,
            scope,
            attempt,
            leaf,
            access,
            ids,
            done: false,
        });
        tag
    }

    fn done(&self, tag: i64) {
        let index = usize::try_from(tag - 1).unwrap_or(usize::MAX);
        self.trace.borrow_mut().execs[index].done = true;
    }

    fn effect(&self) {
        self.effects.set(self.effects.get() + 1);
    }

    /// The per-call program runner: every execution below is written in this body.
    #[d1_retry(policy = POLICY)]
    pub async fn run(&self, scope: usize, program: &[Op]) -> Result<(), Error> {
        self.enter(scope);
        let mut next_id: i64 = 1;
        let mut leaf: usize = 0;
        let mut stack: Vec<&Op> = program.iter().rev().collect();
        while let Some(op) = stack.pop() {
            match op {
                Op::Loop(n, inner) => {
                    for _ in 0..*n {
                        stack.push(inner);
                    }
                    continue;
                }
                Op::Branch(taken, yes, no) => {
                    stack.push(if *taken { yes } else { no });
                    continue;
                }
                _ => {}
            }
            self.leaf(scope, leaf);
            leaf += 1;
            match op {
                Op::Loop(..) | Op::Branch(..) => unreachable!("unrolled above"),
                Op::Effect => self.effect(),
                Op::Read(ReadKind::First) => {
                    let tag = self.begin(scope, Access::Read, Vec::new());
                    self.db
                        .prepare("SELECT count(*) AS n, ?1 AS tag FROM items")
                        .bind(&[tag.into()])?
                        .first::<Row>(None)
                        .await?;
                    self.done(tag);
                }
                Op::Read(ReadKind::All) => {
                    let tag = self.begin(scope, Access::Read, Vec::new());
                    self.db
                        .prepare("SELECT id, ?1 AS tag FROM items ORDER BY id")
                        .bind(&[tag.into()])?
                        .all()
                        .await?;
                    self.done(tag);
                }
                Op::Read(ReadKind::Raw) => {
                    let tag = self.begin(scope, Access::Read, Vec::new());
                    self.db
                        .prepare("SELECT ?1 AS tag, count(*) FROM items")
                        .bind(&[tag.into()])?
                        .raw::<Value>()
                        .await?;
                    self.done(tag);
                }
                Op::Write(WriteKind::Run) => {
                    let id = next_id;
                    next_id += 1;
                    let tag = self.begin(scope, Access::Write, vec![id]);
                    self.db
                        .prepare("INSERT INTO items (tag, id) VALUES (?1, ?2)")
                        .bind(&[tag.into(), id.into()])?
                        .run()
                        .await?;
                    self.done(tag);
                }
                Op::Write(WriteKind::Await) => {
                    let id = next_id;
                    next_id += 1;
                    let tag = self.begin(scope, Access::Write, vec![id]);
                    self.db
                        .prepare("INSERT INTO items (tag, id) VALUES (?1, ?2)")
                        .bind(&[tag.into(), id.into()])?
                        .await?;
                    self.done(tag);
                }
                Op::Write(WriteKind::Returning) => {
                    let id = next_id;
                    next_id += 1;
                    let tag = self.begin(scope, Access::DecodedWrite, vec![id]);
                    self.db
                        .prepare("INSERT INTO items (tag, id) VALUES (?1, ?2) RETURNING id")
                        .bind(&[tag.into(), id.into()])?
                        .first::<IdRow>(None)
                        .await?;
                    self.done(tag);
                }
                Op::Write(WriteKind::Unseen) => {
                    let id = next_id;
                    next_id += 1;
                    let tag = self.begin(scope, Access::Write, vec![id]);
                    let built = build_insert(&self.db, tag, id)?;
                    built.run().await?;
                    self.done(tag);
                }
                Op::WriteViaPlainHelper => {
                    let id = next_id;
                    next_id += 1;
                    let tag = self.begin(scope, Access::Plain, vec![id]);
                    write_plain(&self.db, tag, id).await?;
                    self.done(tag);
                }
                Op::WriteViaAnnotatedHelper => {
                    let id = next_id;
                    next_id += 1;
                    let child = self.scope(
                        ScopeKind::PerCall,
                        "write_annotated",
                        Some(scope),
                        Vec::new(),
                    );
                    self.write_annotated(child, id).await?;
                }
                Op::ReadViaPlainHelper => {
                    let tag = self.begin(scope, Access::Plain, Vec::new());
                    read_plain(&self.db, tag).await?;
                    self.done(tag);
                }
                Op::ReadViaAnnotatedHelper => {
                    let child = self.scope(
                        ScopeKind::PerCall,
                        "read_annotated",
                        Some(scope),
                        Vec::new(),
                    );
                    self.read_annotated(child).await?;
                }
                Op::ReadBlock(reads) => {
                    let child = self.scope(
                        ScopeKind::WholeBody,
                        "read_block",
                        Some(scope),
                        flatten_reads(reads),
                    );
                    self.read_block(child, reads).await?;
                }
                Op::ReadPair => {
                    let child =
                        self.scope(ScopeKind::WholeBody, "read_pair", Some(scope), Vec::new());
                    self.read_pair(child).await?;
                }
                Op::Batch(count) => {
                    let ids: Vec<i64> = (0..i64::from(*count)).map(|i| next_id + i).collect();
                    next_id += i64::from(*count);
                    let tag = self.begin(scope, Access::Write, ids.clone());
                    let mut statements = Vec::new();
                    for id in ids {
                        statements.push(
                            self.db
                                .prepare("INSERT INTO items (tag, id) VALUES (?1, ?2)")
                                .bind(&[tag.into(), id.into()])?,
                        );
                    }
                    self.db.batch(statements).await?;
                    self.done(tag);
                }
                Op::Dynamic { sql, read } => {
                    let (access, ids) = if *read {
                        (Access::Read, Vec::new())
                    } else {
                        next_id += 1;
                        (Access::Write, vec![next_id - 1])
                    };
                    let tag = self.begin(scope, access, ids.clone());
                    let mut params: Vec<Value> = vec![tag.into()];
                    params.extend(ids.iter().map(|id| Value::from(*id)));
                    self.db.prepare(*sql).bind(&params)?.run().await?;
                    self.done(tag);
                }
                Op::Exec { read } => {
                    let (access, ids) = if *read {
                        (Access::Read, Vec::new())
                    } else {
                        next_id += 1;
                        (Access::Write, vec![next_id - 1])
                    };
                    let tag = self.begin(scope, access, ids.clone());
                    let text = match ids.first() {
                        None => format!("/* tag {tag} */ SELECT {tag} AS tag"),
                        Some(id) => {
                            format!(
                                "/* tag {tag} */ INSERT INTO items (tag, id) VALUES ({tag}, {id})"
                            )
                        }
                    };
                    self.db.exec(text.as_str()).await?;
                    self.done(tag);
                }
            }
        }
        Ok(())
    }

    /// The read-program runner: its whole body is retried, and nothing inside an attempt
    /// retries on its own.
    #[d1_retry(read_only, policy = POLICY)]
    pub async fn read_block(&self, scope: usize, program: &[ReadOp]) -> Result<(), Error> {
        self.enter(scope);
        let mut leaf: usize = 0;
        let mut stack: Vec<&ReadOp> = program.iter().rev().collect();
        while let Some(op) = stack.pop() {
            match op {
                ReadOp::Loop(n, inner) => {
                    for _ in 0..*n {
                        stack.push(inner);
                    }
                    continue;
                }
                ReadOp::Branch(taken, yes, no) => {
                    stack.push(if *taken { yes } else { no });
                    continue;
                }
                _ => {}
            }
            self.leaf(scope, leaf);
            leaf += 1;
            match op {
                ReadOp::Loop(..) | ReadOp::Branch(..) => unreachable!("unrolled above"),
                ReadOp::Effect => self.effect(),
                ReadOp::Read(ReadKind::First) => {
                    let tag = self.begin(scope, Access::Read, Vec::new());
                    self.db
                        .prepare("SELECT count(*) AS n, ?1 AS tag FROM items")
                        .bind(&[tag.into()])?
                        .first::<Row>(None)
                        .await?;
                    self.done(tag);
                }
                ReadOp::Read(ReadKind::All) => {
                    let tag = self.begin(scope, Access::Read, Vec::new());
                    self.db
                        .prepare("SELECT id, ?1 AS tag FROM items ORDER BY id")
                        .bind(&[tag.into()])?
                        .all()
                        .await?;
                    self.done(tag);
                }
                ReadOp::Read(ReadKind::Raw) => {
                    let tag = self.begin(scope, Access::Read, Vec::new());
                    self.db
                        .prepare("SELECT ?1 AS tag, count(*) FROM items")
                        .bind(&[tag.into()])?
                        .raw::<Value>()
                        .await?;
                    self.done(tag);
                }
                ReadOp::ViaPlainHelper => {
                    let tag = self.begin(scope, Access::Plain, Vec::new());
                    read_plain(&self.db, tag).await?;
                    self.done(tag);
                }
                ReadOp::ViaAnnotatedHelper => {
                    let child = self.scope(
                        ScopeKind::PerCall,
                        "read_annotated",
                        Some(scope),
                        Vec::new(),
                    );
                    self.read_annotated(child).await?;
                }
                ReadOp::Pair => {
                    let child =
                        self.scope(ScopeKind::WholeBody, "read_pair", Some(scope), Vec::new());
                    self.read_pair(child).await?;
                }
                ReadOp::Dynamic(sql) => {
                    let tag = self.begin(scope, Access::Read, Vec::new());
                    self.db.prepare(*sql).bind(&[tag.into()])?.all().await?;
                    self.done(tag);
                }
            }
        }
        Ok(())
    }

    /// An annotated write: a call of its own, with its own schedule.
    #[d1_retry(policy = POLICY)]
    pub async fn write_annotated(&self, scope: usize, id: i64) -> Result<(), Error> {
        self.enter(scope);
        let tag = self.begin(scope, Access::Write, vec![id]);
        self.db
            .prepare("INSERT INTO items (tag, id) VALUES (?1, ?2)")
            .bind(&[tag.into(), id.into()])?
            .run()
            .await?;
        self.done(tag);
        Ok(())
    }

    /// An annotated read.
    #[d1_retry(policy = POLICY)]
    pub async fn read_annotated(&self, scope: usize) -> Result<(), Error> {
        self.enter(scope);
        let tag = self.begin(scope, Access::Read, Vec::new());
        self.db
            .prepare("SELECT count(*) AS n, ?1 AS tag FROM items")
            .bind(&[tag.into()])?
            .first::<Row>(None)
            .await?;
        self.done(tag);
        Ok(())
    }

    /// A whole-body read that calls an annotated read, then reads.
    #[d1_retry(read_only, policy = POLICY)]
    pub async fn read_pair(&self, scope: usize) -> Result<(), Error> {
        self.enter(scope);
        let child = self.scope(
            ScopeKind::PerCall,
            "read_annotated",
            Some(scope),
            Vec::new(),
        );
        self.read_annotated(child).await?;
        let tag = self.begin(scope, Access::Read, Vec::new());
        self.db
            .prepare("SELECT count(*) AS n, ?1 AS tag FROM items")
            .bind(&[tag.into()])?
            .first::<Row>(None)
            .await?;
        self.done(tag);
        Ok(())
    }
}
