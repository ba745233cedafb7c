//! Random repository programs: the ops the interpreter in `runner.rs` runs, and how they
//! are drawn.

use rand::Rng;
use rand::rngs::SmallRng;

/// How a read is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadKind {
    First,
    All,
    Raw,
}

/// How a write is made, directly in the annotated body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// `.run().await`
    Run,
    /// `.await` on the statement itself.
    Await,
    /// `INSERT .. RETURNING id` read with `.first`.
    Returning,
    /// A statement built by a plain function (SQL out of the attribute's sight), run in
    /// the body: counted as a write.
    Unseen,
}

/// One op of the per-call program run by `Runner::run` (`#[d1_retry]`).
#[derive(Clone, Debug)]
pub enum Op {
    Read(ReadKind),
    Write(WriteKind),
    WriteViaPlainHelper,
    WriteViaAnnotatedHelper,
    ReadViaPlainHelper,
    ReadViaAnnotatedHelper,
    /// A `#[d1_retry(read_only)]` call running its own read program (whole-body).
    ReadBlock(Vec<ReadOp>),
    /// A `#[d1_retry(read_only)]` call that reads and calls an annotated read.
    ReadPair,
    /// One `batch` of this many inserts, collected in a loop.
    Batch(u8),
    /// SQL known at run time, prepared and run; `read` is what the scanner must decide.
    Dynamic {
        sql: &'static str,
        read: bool,
    },
    /// Dynamic SQL through `exec`.
    Exec {
        read: bool,
    },
    /// A counter outside D1.
    Effect,
    Loop(u8, Box<Op>),
    Branch(bool, Box<Op>, Box<Op>),
}

/// One op of the read program run by `Runner::read_block` (`#[d1_retry(read_only)]`).
#[derive(Clone, Debug)]
pub enum ReadOp {
    Read(ReadKind),
    ViaPlainHelper,
    ViaAnnotatedHelper,
    /// A nested `#[d1_retry(read_only)]` call.
    Pair,
    Dynamic(&'static str),
    Effect,
    Loop(u8, Box<ReadOp>),
    Branch(bool, Box<ReadOp>, Box<ReadOp>),
}

/// Dynamic reads: one parameter, the tag.
pub const DYNAMIC_READS: [&str; 4] = [
    "SELECT count(*) AS n, ?1 AS tag FROM items WHERE id >= 0",
    "WITH c AS (SELECT count(*) AS n FROM items) SELECT n, ?1 AS tag FROM c",
    "  select ?1 as tag, 0 as n",
    "/* a comment with INSERT in it */ SELECT ?1 AS tag",
];

/// Dynamic writes: the tag, then the id.
pub const DYNAMIC_WRITES: [&str; 4] = [
    "INSERT INTO items (tag, id) VALUES (?1, ?2)",
    "insert into items (tag, id) select ?1, ?2",
    "WITH v AS (SELECT ?1 AS t, ?2 AS i) INSERT INTO items (tag, id) SELECT t, i FROM v",
    "-- leading comment\nINSERT INTO items (tag, id) VALUES (?1, ?2)",
];

fn read_kind(rng: &mut SmallRng) -> ReadKind {
    [ReadKind::First, ReadKind::All, ReadKind::Raw][rng.random_range(0..3)]
}

/// A program of 1 to 7 ops, loops and branches nested at most twice.
pub fn program(rng: &mut SmallRng) -> Vec<Op> {
    let len = rng.random_range(1..=7);
    (0..len).map(|_| op(rng, 2)).collect()
}

fn op(rng: &mut SmallRng, depth: u32) -> Op {
    let pick = rng.random_range(0..100);
    match pick {
        0..=13 => Op::Read(read_kind(rng)),
        14..=31 => Op::Write(
            [
                WriteKind::Run,
                WriteKind::Await,
                WriteKind::Returning,
                WriteKind::Unseen,
            ][rng.random_range(0..4)],
        ),
        32..=37 => Op::WriteViaPlainHelper,
        38..=45 => Op::WriteViaAnnotatedHelper,
        46..=49 => Op::ReadViaPlainHelper,
        50..=55 => Op::ReadViaAnnotatedHelper,
        56..=60 => Op::ReadBlock(read_program(rng)),
        61..=63 => Op::ReadPair,
        64..=69 => Op::Batch(rng.random_range(1..=3)),
        70..=75 => {
            let read = rng.random_bool(0.5);
            let texts = if read { DYNAMIC_READS } else { DYNAMIC_WRITES };
            Op::Dynamic {
                sql: texts[rng.random_range(0..texts.len())],
                read,
            }
        }
        76..=79 => Op::Exec {
            read: rng.random_bool(0.5),
        },
        80..=87 => Op::Effect,
        88..=93 if depth > 0 => Op::Loop(rng.random_range(0..=4), Box::new(op(rng, depth - 1))),
        94..=99 if depth > 0 => Op::Branch(
            rng.random_bool(0.5),
            Box::new(op(rng, depth - 1)),
            Box::new(op(rng, depth - 1)),
        ),
        _ => Op::Write(WriteKind::Run),
    }
}

/// A read program of 1 to 5 ops.
pub fn read_program(rng: &mut SmallRng) -> Vec<ReadOp> {
    let len = rng.random_range(1..=5);
    (0..len).map(|_| read_op(rng, 1)).collect()
}

fn read_op(rng: &mut SmallRng, depth: u32) -> ReadOp {
    match rng.random_range(0..100) {
        0..=29 => ReadOp::Read(read_kind(rng)),
        30..=39 => ReadOp::ViaPlainHelper,
        40..=54 => ReadOp::ViaAnnotatedHelper,
        55..=62 => ReadOp::Pair,
        63..=72 => ReadOp::Dynamic(DYNAMIC_READS[rng.random_range(0..DYNAMIC_READS.len())]),
        73..=84 => ReadOp::Effect,
        85..=92 if depth > 0 => {
            ReadOp::Loop(rng.random_range(0..=3), Box::new(read_op(rng, depth - 1)))
        }
        93..=99 if depth > 0 => ReadOp::Branch(
            rng.random_bool(0.5),
            Box::new(read_op(rng, depth - 1)),
            Box::new(read_op(rng, depth - 1)),
        ),
        _ => ReadOp::Read(ReadKind::First),
    }
}

/// The leaves the interpreter reaches, in order, loops unrolled and branches taken:
/// whether each is an `Effect`. Computed from the program alone, for the oracle.
pub fn flatten(program: &[Op]) -> Vec<bool> {
    fn walk(op: &Op, out: &mut Vec<bool>) {
        match op {
            Op::Loop(n, inner) => (0..*n).for_each(|_| walk(inner, out)),
            Op::Branch(taken, a, b) => walk(if *taken { a } else { b }, out),
            other => out.push(matches!(other, Op::Effect)),
        }
    }
    let mut out = Vec::new();
    program.iter().for_each(|op| walk(op, &mut out));
    out
}

/// [`flatten`] for a read program.
pub fn flatten_reads(program: &[ReadOp]) -> Vec<bool> {
    fn walk(op: &ReadOp, out: &mut Vec<bool>) {
        match op {
            ReadOp::Loop(n, inner) => (0..*n).for_each(|_| walk(inner, out)),
            ReadOp::Branch(taken, a, b) => walk(if *taken { a } else { b }, out),
            other => out.push(matches!(other, ReadOp::Effect)),
        }
    }
    let mut out = Vec::new();
    program.iter().for_each(|op| walk(op, &mut out));
    out
}
