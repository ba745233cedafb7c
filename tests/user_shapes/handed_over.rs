//! A statement a `read_only` body does not run itself but hands on to what runs it out of
//! sight: an element of `join!` or `try_join!`, a copy handed to `tokio::time::timeout` or
//! collected in an array or `vec!` for a `join_all`, handed to a method of the user's,
//! `IntoFuture::into_future` called by its path, and an execution's path handed on as a
//! function under a name of the user's (`type Stmt = D1PreparedStatement`). Each is
//! observed as it is handed over (a statement's SQL read as if it ran there; a path the
//! attribute cannot name, a write). Before, a held `INSERT` run in any of these ways ran
//! again with the body after a later read failed "maybe executed", and the caller got `Ok`.

use core::future::IntoFuture;
use core::time::Duration;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error};

use crate::harness::{NO_BUDGET, count_fails_once_after_running, count_orders, database, rows};

/// A name of the user's for D1's statement type, as `use ... as Stmt` gives too.
type Stmt = D1PreparedStatement;

const INSERT: &str = "INSERT INTO orders (item) VALUES ('handed')";

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn in_join(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    let (ran, _) = tokio::join!(held.clone(), async { 1 });
    ran?;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn in_try_join(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    let (_, n) = tokio::try_join!(held.clone(), async { Ok::<_, Error>(1) })?;
    Ok(count_orders(db).await? + n - 1)
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn in_timeout(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    tokio::time::timeout(Duration::from_secs(5), held.clone())
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn into_future_by_path(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    IntoFuture::into_future(held.clone()).await?;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn into_future_by_qself(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    <D1PreparedStatement as IntoFuture>::into_future(held.clone()).await?;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn alias_path_handed_on(db: &D1Database, held: &[D1PreparedStatement]) -> Result<i64, Error> {
    let pending: Vec<_> = held.iter().map(Stmt::run).collect();
    for ran in pending {
        ran.await?;
    }
    count_orders(db).await
}

/// As `futures::future::join_all`: awaits every element it is handed.
async fn join_all<I>(items: I) -> Vec<<I::Item as IntoFuture>::Output>
where
    I: IntoIterator,
    I::Item: IntoFuture,
{
    let mut out = Vec::new();
    for item in items {
        out.push(item.await);
    }
    out
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn in_a_vec(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    for ran in join_all(vec![held.clone()]).await {
        ran?;
    }
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn in_an_array(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    for ran in join_all([held.clone()]).await {
        ran?;
    }
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn to_owned_in_timeout(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    tokio::time::timeout(Duration::from_secs(5), held.to_owned())
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn clone_path_in_timeout(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    tokio::time::timeout(Duration::from_secs(5), Clone::clone(held))
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A helper of the user's that runs the statement it is given.
struct Sender;

impl Sender {
    async fn send(&self, statement: D1PreparedStatement) -> Result<(), Error> {
        statement.run().await.map(drop)
    }
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn to_a_method(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    Sender.send(held.clone()).await?;
    count_orders(db).await
}

/// A copy handed on after a `while let` that bound its name to something else: that name
/// is the loop's alone, so after the loop the copy is still a copy.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_after_a_while_let(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    let copy = held.clone();
    let mut names = vec!["queued"];
    while let Some(copy) = names.pop() {
        assert_eq!(copy, "queued");
    }
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy made by the type's path, bound to a name, then handed on.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn path_copy_bound(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    let copy = D1PreparedStatement::clone(held);
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A statement a repository keeps in an `Option` (made on first use), copied out of it.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_out_of_an_option(
    db: &D1Database,
    held: &Option<D1PreparedStatement>,
) -> Result<i64, Error> {
    let copy = held.clone().unwrap();
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A job of the user's, built and taken apart where it stands.
struct Job {
    statement: D1PreparedStatement,
    tries: u32,
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_taken_out_of_a_job(
    db: &D1Database,
    held: &D1PreparedStatement,
) -> Result<i64, Error> {
    let Job { statement, tries } = Job {
        statement: held.clone(),
        tries: 1,
    };
    assert_eq!(tries, 1);
    tokio::time::timeout(Duration::from_secs(5), statement)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// The same, the job built on another's fields (`..template`): the field written out is the
/// copy, whatever the template gives.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_taken_out_of_a_job_built_on_another(
    db: &D1Database,
    held: &D1PreparedStatement,
    template: &Job,
) -> Result<i64, Error> {
    let Job { statement, .. } = Job {
        statement: held.clone(),
        ..*template
    };
    tokio::time::timeout(Duration::from_secs(5), statement)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A tuple struct of the user's that holds a statement beside a borrow.
struct Pair<'a>(D1PreparedStatement, &'a mut Vec<u8>);

/// A copy taken apart from a value built beside a `&mut` (which makes the value as a whole
/// no copy): under a type, in parentheses, out of an array beside a statement made there,
/// and out of a tuple struct.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn typed_copy_beside_a_borrow(
    db: &D1Database,
    held: &D1PreparedStatement,
) -> Result<i64, Error> {
    let mut out = Vec::new();
    let (copy, sink): (D1PreparedStatement, &mut Vec<u8>) = (held.clone(), &mut out);
    sink.push(0);
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
#[allow(unused_parens)]
async fn copy_in_parentheses_beside_a_borrow(
    db: &D1Database,
    held: &D1PreparedStatement,
) -> Result<i64, Error> {
    let mut out = Vec::new();
    let ((copy, sink)) = (held.clone(), &mut out);
    sink.push(1);
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_out_of_an_array(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    let [copy, fresh] = [held.clone(), db.prepare("SELECT 2")];
    drop(fresh);
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_out_of_a_tuple_struct(
    db: &D1Database,
    held: &D1PreparedStatement,
) -> Result<i64, Error> {
    let mut out = Vec::new();
    let Pair(copy, sink) = Pair(held.clone(), &mut out);
    sink.push(3);
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy taken apart by a pattern with `..` (the parts it skips: a borrow, a number, a
/// statement made there, or none), from the start, from the end, and out of an array.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_beside_skipped_parts(
    db: &D1Database,
    held: &D1PreparedStatement,
    from: u8,
) -> Result<i64, Error> {
    let mut out: Vec<u8> = Vec::new();
    let copy = match from {
        0 => {
            let (copy, ..) = (held.clone(), &mut out, 1);
            copy
        }
        1 => {
            let (.., copy) = (&mut out, 1, held.clone());
            copy
        }
        // A `..` that skips nothing.
        2 => {
            let (copy, .., sink) = (held.clone(), &mut out);
            sink.push(2);
            copy
        }
        _ => {
            let [.., copy] = [db.prepare("SELECT 2"), held.clone()];
            copy
        }
    };
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy that is a part of a tuple or a struct written out where it is handed on.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn part_of_a_value_written_out(
    db: &D1Database,
    held: &D1PreparedStatement,
    tuple: bool,
) -> Result<i64, Error> {
    let mut out: Vec<u8> = Vec::new();
    let ran = if tuple {
        tokio::time::timeout(Duration::from_secs(5), (held.clone(), &mut out).0).await
    } else {
        let job = Job {
            statement: held.clone(),
            tries: 1,
        }
        .statement;
        tokio::time::timeout(Duration::from_secs(5), job).await
    };
    ran.map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy a `match` gives, each arm taking it apart from a value built beside a borrow: the
/// tuple struct's arm hands its copy to `Pair(..)`, a call, and the walk observes it there
/// before the `match` is read, which must still read as giving a copy in every arm.
#[d1_retry(read_only, policy = NO_BUDGET)]
#[allow(unused_parens)]
async fn copy_given_by_arms_that_take_it_apart(
    db: &D1Database,
    held: &D1PreparedStatement,
    arm: u8,
) -> Result<i64, Error> {
    let mut out = Vec::new();
    let copy = match arm {
        0 => {
            let (copy, sink): (D1PreparedStatement, &mut Vec<u8>) = (held.clone(), &mut out);
            sink.push(0);
            copy
        }
        1 => {
            let ((copy, sink)) = (held.clone(), &mut out);
            sink.push(1);
            copy
        }
        2 => {
            let [copy, fresh] = [held.clone(), db.prepare("SELECT 2")];
            drop(fresh);
            copy
        }
        _ => {
            let Pair(copy, sink) = Pair(held.clone(), &mut out);
            sink.push(3);
            copy
        }
    };
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy an `if` gives in its one branch that does not leave: the other panics, is
/// unreachable, or returns (in a block of its own too).
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_given_where_the_other_branch_leaves(
    db: &D1Database,
    held: &D1PreparedStatement,
    leaves: u8,
) -> Result<i64, Error> {
    let copy = match leaves {
        0 => held.clone(),
        1 => panic!("no statement"),
        2 => unreachable!(),
        3 => return Ok(-1),
        _ => {
            return Ok(-2);
        }
    };
    tokio::time::timeout(Duration::from_secs(5), copy)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy given by a branch where the other leaves in a way that is not `return`, `Err(..)?`
/// or a panic (`loop {}`, `std::process::exit`), or gives a statement made out of sight,
/// bound to a name or handed on where it is written.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_given_beside_another_way_out(
    db: &D1Database,
    held: &D1PreparedStatement,
    shape: u8,
) -> Result<i64, Error> {
    let go = shape < 8;
    let ran = match shape % 4 {
        0 => {
            let copy = if go {
                held.clone()
            } else {
                std::process::exit(3)
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        1 => {
            let copy = match go {
                true => held.clone(),
                false => loop {
                    tokio::task::yield_now().await;
                },
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        2 => {
            let copy = if go {
                held.clone()
            } else {
                db.prepare("SELECT 2")
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        _ => {
            tokio::time::timeout(
                Duration::from_secs(5),
                if go {
                    held.clone()
                } else {
                    std::process::abort()
                },
            )
            .await
        }
    };
    ran.map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy a loop gives by `break`, or a labelled block by its value or by `break 'label`,
/// bound to a name or handed on where it is written; a labelled loop's `break` from a loop
/// within it, and a `break` of a name the loop binds.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_given_by_break(
    db: &D1Database,
    held: &D1PreparedStatement,
    shape: u8,
) -> Result<i64, Error> {
    let early = shape > 1;
    let ran = match shape {
        0 | 2 => {
            let copy = 'made: {
                if early {
                    break 'made held.clone();
                }
                held.clone()
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        1 | 3 => {
            let mut tries = 0;
            let copy = loop {
                tries += 1;
                if early || tries > 1 {
                    break held.clone();
                }
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        4 => {
            let mut tries = 0;
            tokio::time::timeout(
                Duration::from_secs(5),
                loop {
                    tries += 1;
                    if tries > 1 {
                        break held.clone();
                    }
                },
            )
            .await
        }
        // An outer loop's `break` out of a loop within it.
        6 => {
            let copy = 'outer: loop {
                for _ in 0..2 {
                    if early {
                        break 'outer held.clone();
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        // A `break` of a name bound in the loop.
        7 => {
            let copy = loop {
                let made = held.clone();
                if early {
                    break made;
                }
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        _ => {
            tokio::time::timeout(Duration::from_secs(5), 'made: {
                if early {
                    break 'made held.clone();
                }
                db.prepare("SELECT 2")
            })
            .await
        }
    };
    ran.map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// What a branch beside the copy gives, of a type inferred from the copy's: an `into()`, a
/// generic function's value, a loop's other `break`. The value is observed whole, after its
/// branches have given it their one type.
#[d1_retry(read_only, policy = NO_BUDGET)]
#[allow(clippy::useless_conversion)]
async fn copy_beside_a_branch_of_inferred_type(
    db: &D1Database,
    held: &D1PreparedStatement,
    shape: u8,
) -> Result<i64, Error> {
    let other = db.prepare("SELECT 2");
    let go = shape < 8;
    let ran = match shape {
        0 => {
            let copy = if go { held.clone() } else { other.into() };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
        1 => {
            tokio::time::timeout(
                Duration::from_secs(5),
                match go {
                    false => never(),
                    true => held.clone(),
                },
            )
            .await
        }
        _ => {
            let mut tries = 0;
            let copy = loop {
                tries += 1;
                if go && tries > 1 {
                    break held.clone();
                }
                if tries > 3 {
                    break never();
                }
            };
            tokio::time::timeout(Duration::from_secs(5), copy).await
        }
    };
    ran.map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A value of any type, never given.
fn never<T>() -> T {
    unreachable!("a branch not taken")
}

/// Runs the statement in a value it is handed whole, as a helper of the user's would.
async fn run_first<T>(parts: (D1PreparedStatement, T)) -> Result<(), Error> {
    parts.0.run().await.map(drop)
}

/// A statement beside a borrow, sent as a whole.
struct Lent<'a> {
    statement: D1PreparedStatement,
    sink: &'a mut Vec<u8>,
}

impl Lent<'_> {
    async fn send(self) -> Result<(), Error> {
        self.sink.push(0);
        self.statement.run().await.map(drop)
    }
}

/// A value written out of a copy and other parts, bound whole to a name (or assigned) and
/// handed on whole by that name: a tuple with a number or a borrow, an array, a struct.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_in_a_value_handed_on_by_name(
    db: &D1Database,
    held: &D1PreparedStatement,
    shape: u8,
) -> Result<i64, Error> {
    let mut out: Vec<u8> = Vec::new();
    match shape {
        0 => {
            let pair = (held.clone(), 1);
            run_first(pair).await?;
        }
        1 => {
            let pair = (held.clone(), &mut out);
            run_first(pair).await?;
        }
        2 => {
            let list = [held.clone()];
            for ran in join_all(list).await {
                ran?;
            }
        }
        3 => {
            let lent = Lent {
                statement: held.clone(),
                sink: &mut out,
            };
            lent.send().await?;
        }
        _ => {
            let mut list = [db.prepare("SELECT 2")];
            if list.len() == 1 {
                list = [held.clone()];
            }
            for ran in join_all(list).await {
                ran?;
            }
        }
    }
    out.push(shape);
    count_orders(db).await
}

/// A trait of the user's on D1's statement whose methods run it.
trait RunTimed {
    async fn timed(self) -> Result<(), Error>;
    async fn timed_in_place(&self) -> Result<(), Error>;
}

impl RunTimed for D1PreparedStatement {
    async fn timed(self) -> Result<(), Error> {
        let ran = tokio::time::timeout(Duration::from_secs(5), self).await;
        ran.map_err(|_| Error::from("timed out"))?.map(drop)
    }

    async fn timed_in_place(&self) -> Result<(), Error> {
        self.clone().timed().await
    }
}

/// A copy that is the receiver of a method of the user's: made there, bound to a name (by
/// value, or borrowed and used again after), a field of a name, bound after `.bind(..)?`.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_as_a_receiver(
    db: &D1Database,
    held: &D1PreparedStatement,
    shape: u8,
) -> Result<i64, Error> {
    match shape {
        0 => held.clone().timed().await?,
        1 => {
            let copy = held.clone();
            copy.timed().await?;
        }
        2 => {
            let copy = held.clone();
            copy.timed_in_place().await?;
            let _kept = &copy;
        }
        3 => {
            let pair = (held.clone(), 1);
            pair.0.timed_in_place().await?;
            assert_eq!(pair.1, 1);
        }
        _ => {
            let bound = held.clone().bind(&[])?;
            bound.timed().await?;
        }
    }
    count_orders(db).await
}

/// An item taken out of a copy of a list handed in, or of an iterator of copies: by
/// `next()`, by `pop()` from a copy bound to a name, by `next_back()` from an iterator bound
/// to a name, by `remove(0)`, by `swap_remove(0)` bound to a name; by `pop()` and
/// `swap_remove(0)` where it is handed on.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn item_of_a_copied_list(
    db: &D1Database,
    list: &[D1PreparedStatement],
    shape: u8,
) -> Result<i64, Error> {
    let item = match shape {
        0 => {
            let copies = list.to_vec();
            copies.into_iter().next()
        }
        1 => {
            let mut copies = list.to_vec();
            copies.pop()
        }
        2 => {
            let mut items = list.iter().cloned();
            items.next_back()
        }
        3 => Some(list.to_vec().remove(0)),
        4 => {
            let removed = list.to_vec().swap_remove(0);
            let ran = tokio::time::timeout(Duration::from_secs(5), removed);
            ran.await.map_err(|_| Error::from("timed out"))??;
            return count_orders(db).await;
        }
        // Handed on where it is taken out.
        5 => {
            let ran = tokio::time::timeout(Duration::from_secs(5), list.to_vec().pop().unwrap());
            ran.await.map_err(|_| Error::from("timed out"))??;
            return count_orders(db).await;
        }
        _ => {
            let ran = tokio::time::timeout(Duration::from_secs(5), list.to_vec().swap_remove(0));
            ran.await.map_err(|_| Error::from("timed out"))??;
            return count_orders(db).await;
        }
    };
    let Some(item) = item else {
        return Ok(-1);
    };
    tokio::time::timeout(Duration::from_secs(5), item)
        .await
        .map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// A copy in a struct literal at the edge of what the attribute rewrites, where the
/// literal's brace must not be read as a `match`'s arms: a field handed on, the receiver of
/// a method of the user's, of D1's `run`, awaited. None of them compiled before.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_in_a_struct_literal_at_the_edge(
    db: &D1Database,
    held: &D1PreparedStatement,
    shape: u8,
) -> Result<i64, Error> {
    match shape {
        0 => tokio::time::timeout(
            Duration::from_secs(5),
            Job {
                statement: held.clone(),
                tries: 1,
            }
            .statement,
        )
        .await
        .map_err(|_| Error::from("timed out"))?
        .map(drop)?,
        1 => {
            Job {
                statement: held.clone(),
                tries: 1,
            }
            .statement
            .timed()
            .await?
        }
        2 => {
            Job {
                statement: held.clone(),
                tries: 1,
            }
            .statement
            .run()
            .await?;
        }
        _ => {
            Job {
                statement: held.clone(),
                tries: 1,
            }
            .statement
            .await?;
        }
    }
    count_orders(db).await
}

/// A copy a block gives after a statement macro that only reads it (`println!`), and a
/// field of a copy of a pair handed in, handed on.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_read_by_a_macro_or_in_a_copied_pair(
    db: &D1Database,
    pair: &(D1PreparedStatement, u8),
    shape: u8,
) -> Result<i64, Error> {
    let ran = if shape == 0 {
        let copy = {
            let made = pair.0.clone();
            println!("handing on a statement of {} bytes", size_of_val(&made));
            made
        };
        tokio::time::timeout(Duration::from_secs(5), copy).await
    } else {
        let copied = pair.clone();
        tokio::time::timeout(Duration::from_secs(5), copied.0).await
    };
    ran.map_err(|_| Error::from("timed out"))??;
    count_orders(db).await
}

/// Runs the statement it is lent, as a helper of the user's would.
async fn run_lent(statement: &D1PreparedStatement) -> Result<(), Error> {
    statement.run().await.map(drop)
}

/// A copy lent to a helper that runs it: bound to a name, or a field of a copy of a pair.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_lent(db: &D1Database, held: &D1PreparedStatement, shape: u8) -> Result<i64, Error> {
    if shape == 0 {
        let copy = held.clone();
        run_lent(&copy).await?;
    } else {
        let pair = (held.clone(), String::from("tag")).clone();
        run_lent(&pair.0).await?;
        assert_eq!(pair.1, "tag");
    }
    count_orders(db).await
}

/// A statement a helper of the user's makes, out of sight.
fn made_by_a_helper(held: &D1PreparedStatement) -> D1PreparedStatement {
    held.clone()
}

/// An element of `join!` that is an `if` giving a copy in one branch and a helper's
/// statement in the other, which runs: `join!` awaits whatever the element is, so the whole
/// value is observed, not its copies alone.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn joined_if_of_a_copy_or_a_helpers_statement(
    db: &D1Database,
    held: &D1PreparedStatement,
    copy: bool,
) -> Result<i64, Error> {
    let (ran, _) = tokio::join!(
        if copy {
            held.clone()
        } else {
            made_by_a_helper(held)
        },
        async { 1 }
    );
    ran?;
    count_orders(db).await
}

/// A parameter declared to be D1's statement, handed to a helper that runs it: as it is,
/// lent again, or as the receiver of a method of the user's.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn parameter_handed_on(
    db: &D1Database,
    held: &D1PreparedStatement,
    shape: u8,
) -> Result<i64, Error> {
    match shape {
        0 => run_lent(held).await?,
        1 => run_lent(&held).await?,
        _ => held.timed_in_place().await?,
    }
    count_orders(db).await
}

/// A repository that keeps its statement in a field.
struct Kept {
    db: D1Database,
    insert: D1PreparedStatement,
}

impl Kept {
    /// The field lent to a helper that runs it, or the receiver of a method of the user's;
    /// a parameter's field lent.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn kept_statement_handed_on(&self, job: &Job, shape: u8) -> Result<i64, Error> {
        match shape {
            0 => run_lent(&self.insert).await?,
            1 => self.insert.timed_in_place().await?,
            2 => run_lent(&job.statement).await?,
            // The same in an `async` block and in a closure, which may have to own what
            // they hold: the observation is counted on the thread instead.
            3 => async { run_lent(&self.insert).await }.await?,
            _ => (|| self.insert.timed_in_place())().await?,
        }
        count_orders(&self.db).await
    }
}

/// A block's copy, handed on and awaited where the block stands.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn block_copy_handed_on(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), {
        seen.push("handed");
        held.clone()
    })
    .await
    .map_err(|_| Error::from("timed out"))??;
    assert_eq!(seen, ["handed"]);
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
#[allow(unused_braces)]
async fn block_copy_awaited(db: &D1Database, held: &D1PreparedStatement) -> Result<i64, Error> {
    { held.clone() }.await?;
    count_orders(db).await
}

/// Runs `body` with a held statement of `sql` while the count at its end fails once after
/// it ran; returns whether the caller got an error, and the rows in `orders`.
async fn run<F, Fut>(sql: &str, body: F) -> (usize, i64)
where
    F: FnOnce(D1Database, D1PreparedStatement) -> Fut,
    Fut: Future<Output = Result<i64, Error>>,
{
    let db = database();
    count_fails_once_after_running(&db);
    let held = db.prepare(sql);
    let result = body(db.clone(), held).await;
    // Whether the body ran again or not, the caller has its count: run again, or not run
    // again and the read after the statement retried on its own.
    assert!(result.is_ok(), "{sql}: {result:?}");
    (test_support::calls_with(&db, sql), rows(&db, "orders"))
}

#[tokio::test(start_paused = true)]
async fn a_statement_handed_on_to_what_runs_it_stops_a_read_only_body() {
    macro_rules! each {
        ($($name:literal => |$db:ident, $held:ident| $call:expr),+ $(,)?) => {$(
            // A write handed over: the body is not run again, and the row lands once.
            let sent = run(INSERT, |$db, $held| async move { $call }).await;
            assert_eq!(sent, (1, 1), "{} with a write", $name);
            // A read handed over: the body is run again, the read sent twice.
            let sent = run("SELECT 1", |$db, $held| async move { $call }).await;
            assert_eq!(sent, (2, 0), "{} with a read", $name);
        )+};
    }
    each!(
        "join!" => |db, held| in_join(&db, &held).await,
        "try_join!" => |db, held| in_try_join(&db, &held).await,
        "timeout" => |db, held| in_timeout(&db, &held).await,
        "IntoFuture::into_future" => |db, held| into_future_by_path(&db, &held).await,
        "<_ as IntoFuture>::into_future" => |db, held| into_future_by_qself(&db, &held).await,
        "join_all(vec![..])" => |db, held| in_a_vec(&db, &held).await,
        "join_all([..])" => |db, held| in_an_array(&db, &held).await,
        "to_owned()" => |db, held| to_owned_in_timeout(&db, &held).await,
        "Clone::clone" => |db, held| clone_path_in_timeout(&db, &held).await,
        "a method of the user's" => |db, held| to_a_method(&db, &held).await,
        "a copy after a while let" => |db, held| copy_after_a_while_let(&db, &held).await,
        "a copy by the type's path, bound" => |db, held| path_copy_bound(&db, &held).await,
        "a copy out of an Option" => |db, held| copy_out_of_an_option(&db, &Some(held)).await,
        "a copy taken out of a struct" => |db, held| copy_taken_out_of_a_job(&db, &held).await,
        "a typed copy beside a borrow" => |db, held| typed_copy_beside_a_borrow(&db, &held).await,
        "a copy in parentheses beside a borrow" => |db, held| {
            copy_in_parentheses_beside_a_borrow(&db, &held).await
        },
        "a copy out of an array" => |db, held| copy_out_of_an_array(&db, &held).await,
        "a copy out of a tuple struct" => |db, held| copy_out_of_a_tuple_struct(&db, &held).await,
        "a tuple's part written out" => |db, held| part_of_a_value_written_out(&db, &held, true).await,
        "a struct's part written out, bound" => |db, held| {
            part_of_a_value_written_out(&db, &held, false).await
        },
        "a copy before a .." => |db, held| copy_beside_skipped_parts(&db, &held, 0).await,
        "a copy after a .." => |db, held| copy_beside_skipped_parts(&db, &held, 1).await,
        "a copy before a .. that skips nothing" => |db, held| {
            copy_beside_skipped_parts(&db, &held, 2).await
        },
        "a copy after a .. in an array" => |db, held| {
            copy_beside_skipped_parts(&db, &held, 3).await
        },
        "a copy an arm gives where the others leave" => |db, held| {
            copy_given_where_the_other_branch_leaves(&db, &held, 0).await
        },
        "a block's copy handed on" => |db, held| block_copy_handed_on(&db, &held).await,
        "a block's copy awaited" => |db, held| block_copy_awaited(&db, &held).await,
        "a copy given by a match's first arm" => |db, held| {
            copy_given_by_arms_that_take_it_apart(&db, &held, 0).await
        },
        "a copy given by a match's last arm" => |db, held| {
            copy_given_by_arms_that_take_it_apart(&db, &held, 3).await
        },
        "a copy beside a branch that exits" => |db, held| {
            copy_given_beside_another_way_out(&db, &held, 0).await
        },
        "a copy beside an arm that loops forever" => |db, held| {
            copy_given_beside_another_way_out(&db, &held, 1).await
        },
        "a copy beside a statement made there" => |db, held| {
            copy_given_beside_another_way_out(&db, &held, 2).await
        },
        "a copy beside a branch that aborts, handed on" => |db, held| {
            copy_given_beside_another_way_out(&db, &held, 3).await
        },
        "a labelled block's value, bound" => |db, held| copy_given_by_break(&db, &held, 0).await,
        "a loop's break, bound" => |db, held| copy_given_by_break(&db, &held, 1).await,
        "a labelled block's break, bound" => |db, held| copy_given_by_break(&db, &held, 2).await,
        "a loop's first break, bound" => |db, held| copy_given_by_break(&db, &held, 3).await,
        "a loop's break, handed on" => |db, held| copy_given_by_break(&db, &held, 4).await,
        "a labelled block's break, handed on" => |db, held| {
            copy_given_by_break(&db, &held, 5).await
        },
        "a copy beside an into()" => |db, held| {
            copy_beside_a_branch_of_inferred_type(&db, &held, 0).await
        },
        "a copy after a generic value, handed on" => |db, held| {
            copy_beside_a_branch_of_inferred_type(&db, &held, 1).await
        },
        "a loop's break before a generic break" => |db, held| {
            copy_beside_a_branch_of_inferred_type(&db, &held, 2).await
        },
        "an outer loop's break from within" => |db, held| copy_given_by_break(&db, &held, 6).await,
        "a loop's break of a name bound there" => |db, held| {
            copy_given_by_break(&db, &held, 7).await
        },
        "a tuple of a copy and a number, handed on by name" => |db, held| {
            copy_in_a_value_handed_on_by_name(&db, &held, 0).await
        },
        "a tuple of a copy and a borrow, handed on by name" => |db, held| {
            copy_in_a_value_handed_on_by_name(&db, &held, 1).await
        },
        "an array of a copy, handed on by name" => |db, held| {
            copy_in_a_value_handed_on_by_name(&db, &held, 2).await
        },
        "a struct of a copy and a borrow, sent whole" => |db, held| {
            copy_in_a_value_handed_on_by_name(&db, &held, 3).await
        },
        "an array of a copy assigned, handed on by name" => |db, held| {
            copy_in_a_value_handed_on_by_name(&db, &held, 4).await
        },
        "a copy as a method's receiver" => |db, held| copy_as_a_receiver(&db, &held, 0).await,
        "a copy's name as a method's receiver" => |db, held| {
            copy_as_a_receiver(&db, &held, 1).await
        },
        "a copy's name borrowed by a method" => |db, held| {
            copy_as_a_receiver(&db, &held, 2).await
        },
        "a copy's field borrowed by a method" => |db, held| {
            copy_as_a_receiver(&db, &held, 3).await
        },
        "a copy bound, as a method's receiver" => |db, held| {
            copy_as_a_receiver(&db, &held, 4).await
        },
        "an iterator's next copy" => |db, held| item_of_a_copied_list(&db, &[held], 0).await,
        "a copy popped from a copied list" => |db, held| {
            item_of_a_copied_list(&db, &[held], 1).await
        },
        "an iterator's last copy, bound" => |db, held| {
            item_of_a_copied_list(&db, &[held], 2).await
        },
        "a copy removed from a copied list" => |db, held| {
            item_of_a_copied_list(&db, &[held], 3).await
        },
        "a copy removed from a copied list, bound" => |db, held| {
            item_of_a_copied_list(&db, &[held], 4).await
        },
        "a copy popped where it is handed on" => |db, held| {
            item_of_a_copied_list(&db, &[held], 5).await
        },
        "a copy removed where it is handed on" => |db, held| {
            item_of_a_copied_list(&db, &[held], 6).await
        },
        "a struct literal's field handed on" => |db, held| {
            copy_in_a_struct_literal_at_the_edge(&db, &held, 0).await
        },
        "a struct literal's field as a method's receiver" => |db, held| {
            copy_in_a_struct_literal_at_the_edge(&db, &held, 1).await
        },
        "a struct literal's field run" => |db, held| {
            copy_in_a_struct_literal_at_the_edge(&db, &held, 2).await
        },
        "a struct literal's field awaited" => |db, held| {
            copy_in_a_struct_literal_at_the_edge(&db, &held, 3).await
        },
        "a block's copy after a println! of it" => |db, held| {
            copy_read_by_a_macro_or_in_a_copied_pair(&db, &(held, 1), 0).await
        },
        "a field of a copied pair" => |db, held| {
            copy_read_by_a_macro_or_in_a_copied_pair(&db, &(held, 1), 1).await
        },
        "a copy lent to a helper" => |db, held| copy_lent(&db, &held, 0).await,
        "a copy's field lent to a helper" => |db, held| copy_lent(&db, &held, 1).await,
        "join! of an if whose other branch is a helper's statement" => |db, held| {
            joined_if_of_a_copy_or_a_helpers_statement(&db, &held, false).await
        },
        "a statement parameter handed to a helper" => |db, held| {
            parameter_handed_on(&db, &held, 0).await
        },
        "a statement parameter lent to a helper" => |db, held| {
            parameter_handed_on(&db, &held, 1).await
        },
        "a statement parameter as a method's receiver" => |db, held| {
            parameter_handed_on(&db, &held, 2).await
        },
        "a field of self lent to a helper" => |db, held| {
            let job = Job { statement: held.clone(), tries: 0 };
            Kept { db, insert: held }.kept_statement_handed_on(&job, 0).await
        },
        "a field of self as a method's receiver" => |db, held| {
            let job = Job { statement: held.clone(), tries: 0 };
            Kept { db, insert: held }.kept_statement_handed_on(&job, 1).await
        },
        "a parameter's field lent to a helper" => |db, held| {
            let job = Job { statement: held.clone(), tries: 0 };
            Kept { db, insert: held }.kept_statement_handed_on(&job, 2).await
        },
        "a field of self lent to a helper in an async block" => |db, held| {
            let job = Job { statement: held.clone(), tries: 0 };
            Kept { db, insert: held }.kept_statement_handed_on(&job, 3).await
        },
        "a field of self as a method's receiver in a closure" => |db, held| {
            let job = Job { statement: held.clone(), tries: 0 };
            Kept { db, insert: held }.kept_statement_handed_on(&job, 4).await
        },
        "a copy taken out of a struct built on another" => |db, held| {
            let template = Job { statement: db.prepare("SELECT 2"), tries: 0 };
            copy_taken_out_of_a_job_built_on_another(&db, &held, &template).await
        },
    );
}

/// An execution's path under a name the attribute cannot tell is D1's: a write out of
/// sight as the statement begins, whatever the statements hold (the price: a read handed
/// on that way costs the body its retries).
#[tokio::test(start_paused = true)]
async fn an_execution_path_under_another_name_counts_as_a_write() {
    for sql in [INSERT, "SELECT 1"] {
        let (sent, rows) = run(sql, |db, held| async move {
            alias_path_handed_on(&db, &[held]).await
        })
        .await;
        // Not run again, the read as the write.
        assert_eq!(sent, 1, "{sql}");
        assert_eq!(rows, i64::from(sql == INSERT), "{sql}");
    }
}
