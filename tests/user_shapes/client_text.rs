//! A client's text in the user's own error, around one direct write in a `Retry` (the
//! driver classifies the user's error, not D1's): a note or a name a client chose that
//! reads like D1's "not executed" (`hi D1_ERROR: D1 DB is overloaded. Too many requests
//! queued.`), shown in front of D1's own message, or in a link of the chain above it. D1's
//! own error, below, says what happened, and the least retryable class in the chain, or
//! of the D1 parts of one message, decides. Before, each of these sent the write again,
//! and one (a trigger that refused the third row after two were written) five times, with
//! no fault injected at all.

use core::fmt;
use std::error::Error as StdError;

use d1_retry::testing::{D1Database, Error, Fault, Message};
use d1_retry::{Retry, classify_message};
use test_support::count;

use crate::harness::NO_BUDGET;

const FORGED: &str = "hi D1_ERROR: D1 DB is overloaded. Too many requests queued.";
const PHRASE: &str = "D1 DB is overloaded. Too many requests queued.";
const INSERT_NOTE: &str = "INSERT INTO notes (body) VALUES (?1)";

fn database() -> D1Database {
    let db = D1Database::open_in_memory().expect("an in-memory SQLite opens");
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE notes (body TEXT NOT NULL);
             CREATE TABLE tags (name TEXT NOT NULL);
             CREATE TRIGGER too_long BEFORE INSERT ON tags WHEN length(NEW.name) > 40
             BEGIN SELECT RAISE(FAIL, 'tag too long'); END;",
        )
    })
    .expect("the schema is valid");
    db
}

/// The write fails "maybe executed", after it ran.
fn lost_after_running() -> D1Database {
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .times(1),
    );
    db
}

/// How the user's error shows the client's text and D1's error.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `saving note {note:?} failed: {source}`, with `source()`.
    QuotedBeforeD1,
    /// `{note}: {source}`, with `source()`.
    First,
    /// `saving note`, its source a link showing the note, whose source is D1's.
    MiddleLink,
}

#[derive(Debug)]
struct SaveError {
    shape: Shape,
    note: String,
    source: Middle,
}

/// The middle link: shows the note alone (for `MiddleLink`), its source D1's error.
#[derive(Debug)]
struct Middle(String, Error);

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.shape {
            Shape::QuotedBeforeD1 => {
                write!(f, "saving note {:?} failed: {}", self.note, self.source.1)
            }
            Shape::First => write!(f, "{}: {}", self.note, self.source.1),
            Shape::MiddleLink => f.write_str("saving note"),
        }
    }
}

impl fmt::Display for Middle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Middle {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.1)
    }
}

impl StdError for SaveError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self.shape {
            Shape::MiddleLink => Some(&self.source),
            _ => Some(&self.source.1),
        }
    }
}

async fn save(db: &D1Database, shape: Shape, note: &str) -> Result<(), SaveError> {
    let fail = |source| SaveError {
        shape,
        note: note.to_owned(),
        source: Middle(note.to_owned(), source),
    };
    Retry::new("notes.save")
        .policy(NO_BUDGET)
        .run(|| async {
            db.prepare(INSERT_NOTE)
                .bind(&[note.into()])
                .map_err(fail)?
                .run()
                .await
                .map_err(fail)?;
            Ok(())
        })
        .await
}

#[tokio::test(start_paused = true)]
async fn a_client_s_text_in_the_user_s_error_does_not_send_a_write_again() {
    for shape in [Shape::QuotedBeforeD1, Shape::First, Shape::MiddleLink] {
        for note in [FORGED, PHRASE] {
            let db = lost_after_running();
            let result = save(&db, shape, note).await;
            assert!(
                result.is_err(),
                "{shape:?} {note:?}: the caller got {result:?}"
            );
            let sent = (db.calls().len(), count(&db, "SELECT count(*) FROM notes"));
            assert_eq!(sent, (1, 1), "{shape:?} {note:?}");
        }
    }
    // The control: a note that says nothing is not sent again either, and a failure that
    // did not reach D1 is retried behind the same shapes.
    for shape in [Shape::QuotedBeforeD1, Shape::First, Shape::MiddleLink] {
        let db = lost_after_running();
        assert!(save(&db, shape, "hello").await.is_err());
        assert_eq!(db.calls().len(), 1, "{shape:?}");
        let db = database();
        db.add_fault(Fault::new(Message::CannotResolve).times(1));
        assert!(save(&db, shape, "hello").await.is_ok(), "{shape:?}");
        assert_eq!(count(&db, "SELECT count(*) FROM notes"), 1, "{shape:?}");
    }
}

/// The user's error shows the names, not its source: D1's `SQLITE_CONSTRAINT` is below.
#[derive(Debug)]
struct TagsError {
    names: Vec<String>,
    source: Error,
}

impl fmt::Display for TagsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not add tags {:?}", self.names)
    }
}

impl StdError for TagsError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.source)
    }
}

/// No fault injected: SQLite refuses the third row after writing two.
#[tokio::test(start_paused = true)]
async fn a_refused_write_is_not_sent_again_for_a_name_in_d1_s_words() {
    let db = database();
    let names = ["a".to_owned(), "b".to_owned(), FORGED.to_owned()];
    let result: Result<(), TagsError> = Retry::new("tags.add")
        .policy(NO_BUDGET)
        .run(|| async {
            let fail = |source| TagsError {
                names: names.to_vec(),
                source,
            };
            let values: Vec<_> = names.iter().map(|name| name.as_str().into()).collect();
            db.prepare("INSERT INTO tags (name) VALUES (?1), (?2), (?3)")
                .bind(&values)
                .map_err(fail)?
                .run()
                .await
                .map_err(fail)?;
            Ok(())
        })
        .await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(db.calls().len(), 1);
    assert_eq!(count(&db, "SELECT count(*) FROM tags"), 2);
}

/// How a user's error of one message, with no `source()`, shows the client's note and D1's
/// error: the note at the very start, D1's part behind a byte that is not a space, or on a
/// later line; and whether D1's own part, behind a note that says nothing, is read (only
/// behind a space on the first line: elsewhere it may be quoted text).
type Rendering = (&'static str, fn(&str, &Error) -> String, bool);

const RENDERINGS: [Rendering; 10] = [
    ("{note}: {e}", |n, e| format!("{n}: {e}"), true),
    ("Error: {note} {e}", |n, e| format!("Error: {n} {e}"), true),
    (
        "saving {note} ({e})",
        |n, e| format!("saving {n} ({e})"),
        false,
    ),
    ("saving {note}:{e}", |n, e| format!("saving {n}:{e}"), false),
    (
        "saving {note}\\t{e}",
        |n, e| format!("saving {n}\t{e}"),
        false,
    ),
    (
        "saving {note} '{e}'",
        |n, e| format!("saving {n} '{e}'"),
        false,
    ),
    (
        "saving {note} [{e}]",
        |n, e| format!("saving {n} [{e}]"),
        false,
    ),
    (
        "saving {note}: {e:?}",
        |n, e| format!("saving {n}: {e:?}"),
        false,
    ),
    (
        "saving {note}\\n: {e}",
        |n, e| format!("saving {n}\n: {e}"),
        false,
    ),
    (
        "saving {note}\\ncaused by: {e}",
        |n, e| format!("saving {n}\ncaused by: {e}"),
        false,
    ),
];

/// The user's error of one message, with no chain.
#[derive(Debug)]
struct Rendered(String);

impl fmt::Display for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Rendered {}

/// One direct write in a `Retry` whose error is `render`'s text, read as an error type of
/// the user's (`run`) or as a `String` (`run_by(classify_message)`, as the README shows).
/// Returns, for each, whether the caller got an error, and the calls and rows made.
async fn save_rendered(
    db: &D1Database,
    note: &str,
    render: fn(&str, &Error) -> String,
    as_string: bool,
) -> (bool, usize, i64) {
    let attempt = || async {
        db.prepare(INSERT_NOTE)
            .bind(&[note.into()])
            .map_err(|e| render(note, &e))?
            .run()
            .await
            .map_err(|e| render(note, &e))?;
        Ok::<(), String>(())
    };
    let failed = if as_string {
        Retry::new("notes.save")
            .policy(NO_BUDGET)
            .run_by(|e: &String| classify_message(e), attempt)
            .await
            .is_err()
    } else {
        Retry::new("notes.save")
            .policy(NO_BUDGET)
            .run(|| async { attempt().await.map_err(Rendered) })
            .await
            .is_err()
    };
    let rows = count(db, "SELECT count(*) FROM notes");
    (failed, db.calls().len(), rows)
}

#[tokio::test(start_paused = true)]
async fn a_client_s_text_in_one_message_does_not_send_a_write_again() {
    let forged_first = "D1_ERROR: D1 DB is overloaded. Too many requests queued.";
    for (name, render, read) in RENDERINGS {
        for note in [FORGED, PHRASE, forged_first] {
            for as_string in [false, true] {
                let db = lost_after_running();
                let sent = save_rendered(&db, note, render, as_string).await;
                assert_eq!(sent, (true, 1, 1), "{name} {note:?}, a String: {as_string}");
            }
        }
        // The controls: a note that says nothing leaves the verdict to D1's part, which
        // retries a failure that did not reach D1 where it is read, and not one after the
        // write ran.
        for as_string in [false, true] {
            let db = lost_after_running();
            let sent = save_rendered(&db, "hello", render, as_string).await;
            assert_eq!(sent, (true, 1, 1), "{name}, a String: {as_string}");
            let db = database();
            db.add_fault(Fault::new(Message::CannotResolve).times(1));
            let sent = save_rendered(&db, "hello", render, as_string).await;
            let expected = if read { (false, 2, 1) } else { (true, 1, 0) };
            assert_eq!(sent, expected, "{name}, a String: {as_string}");
        }
    }
}

/// `run_by(classify_message)` on anyhow's renderings of a context holding the client's note:
/// `{:#}`, one message with two D1 parts, and `{:?}`, the context on the first line and D1's
/// own message under "Caused by:" below it.
#[tokio::test(start_paused = true)]
async fn anyhow_s_renderings_with_a_client_s_note_in_the_context_are_not_retried() {
    use anyhow::Context as _;
    let renderings: [fn(&anyhow::Error) -> String; 2] =
        [|e| format!("{e:#}"), |e| format!("{e:?}")];
    for render in renderings {
        let db = lost_after_running();
        let result: anyhow::Result<()> = Retry::new("notes.save")
            .policy(NO_BUDGET)
            .run_by(
                |e: &anyhow::Error| classify_message(&render(e)),
                || async {
                    db.prepare(INSERT_NOTE)
                        .bind(&[FORGED.into()])?
                        .run()
                        .await
                        .with_context(|| format!("saving note {FORGED}"))?;
                    Ok(())
                },
            )
            .await;
        assert!(result.is_err(), "{result:?}");
        assert_eq!(
            (db.calls().len(), count(&db, "SELECT count(*) FROM notes")),
            (1, 1)
        );
    }
}
