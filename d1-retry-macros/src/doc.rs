//! The verdict, shown where users look: a doc paragraph added to the function, which
//! rustdoc and an editor's hover display.

use crate::executions::{Execution, Found, Left, Mode};
use crate::sql::Sql;

/// The paragraph for a function whose executions are `found`, declared in the mode
/// `declared` and expanded in `mode` (a `read_only` body that is one D1 call is expanded
/// per call); `retries` is the number of retries a call may make in all, as the user would
/// say it.
pub(crate) fn paragraph(found: &Found, declared: Mode, mode: Mode, retries: &str) -> String {
    if declared != mode
        && let [execution] = found.executions.as_slice()
    {
        return format!(
            "\n\n**Retries** (`#[d1_retry(read_only)]`): the body is one D1 call, retried \
             on its own after any transient D1 failure, {retries} in all, unless its SQL may \
             write, when only a failure that did not reach D1 is: {}",
            line(execution)
        );
    }
    match mode {
        Mode::WholeBody { read_only } => {
            let option = if read_only { "read_only" } else { "idempotent" };
            let why = if read_only {
                "the function only reads"
            } else {
                "running the body twice is declared safe"
            };
            // What stops a `read_only` body from running again, as the attempt learns it.
            let unless = if read_only {
                " An attempt that ran SQL that may write is not run again: dynamic SQL, a \
                 statement or a batch's list made out of sight (read when it runs), or a \
                 nested call that may have written."
            } else {
                ""
            };
            format!(
                "\n\n**Retries** (`#[d1_retry({option})]`): the whole body is run again after \
                 any transient D1 failure ({why}), {retries} in all; D1 calls inside it do \
                 not retry on their own.{unless}"
            )
        }
        Mode::PerCall => {
            let count = found.executions.len();
            let plural = if count == 1 { "" } else { "s" };
            let mut text = format!(
                "\n\n**Retries** (`#[d1_retry]`): {count} call{plural} named like D1 \
                 executions, each retried on its own if its receiver is a `D1Receiver` (a D1 \
                 statement, session or database) whose type has that call, its SQL judged \
                 where D1's own `prepare` made it, else read from D1's statement \
                 when it runs (any other statement counts as a write):"
            );
            for execution in &found.executions {
                text.push_str("\n- ");
                text.push_str(&line(execution));
            }
            text.push_str(&format!(
                "\n\nThey share {retries} in all; nothing else in the body runs twice."
            ));
            text
        }
    }
}

fn line(execution: &Execution) -> String {
    // A statement's own execution, rewritten, reads SQL out of sight from the statement
    // when it runs, and so does a rewritten `batch` from the statements of its list; an
    // `exec` or `dump` on a database has none to read.
    let held = execution.held;
    // Each text once: the arms of an `if` that binds a statement again to itself
    // (`if a { stmt.bind(..)? } else { stmt.clone() }`) each carry its SQL.
    let mut described: Vec<String> = Vec::new();
    let batch = execution.method == "batch";
    for text in execution.sql.iter().map(|sql| match sql {
        Sql::Unseen if held && batch => {
            "a list out of sight (each statement's SQL read when the batch runs)".to_owned()
        }
        sql => describe(sql, held),
    }) {
        if !described.contains(&text) {
            described.push(text);
        }
    }
    let what = described.join(", ");
    // A `dump` reads the whole database: its only "SQL" is its own name.
    let what = if what.is_empty() || execution.method == "dump" {
        String::new()
    } else {
        format!(" {what}")
    };
    let method = &execution.method;
    if !execution.rewritten() {
        let why = match execution.left {
            Left::Meets => {
                "it must have one type with another site's future, which a retried call's \
                 cannot"
            }
            Left::Outlives => {
                "returned from the function or made in a `move` closure, it may outlive the \
                 calls' schedule"
            }
            Left::NotAPlace | Left::No | Left::WholeBody => {
                "neither awaited where it is written nor called on a variable or field"
            }
        };
        return format!("`{method}`{what}: not retried ({why})");
    }
    // `first` and `raw` decode the rows: a write's error may be a row's text, so a write
    // through them is never retried (`Access::DecodedWrite`).
    let decodes = matches!(method.as_str(), "first" | "raw");
    format!(
        "`{method}`{what} ({})",
        verdict(&execution.sql, held, decodes)
    )
}

/// `held`: SQL out of sight is read from the statement when it runs.
fn describe(sql: &Sql, held: bool) -> String {
    match sql {
        Sql::Literal { text, .. } => format!("`{}`", summary(text)),
        Sql::Const(expr, _) | Sql::Bound(expr, _) => {
            let text = quote::ToTokens::to_token_stream(expr)
                .to_string()
                .replace(' ', "");
            format!("`{text}` (a constant)")
        }
        Sql::Dynamic => "dynamic SQL (scanned when it is prepared)".to_owned(),
        Sql::Unseen if held => "SQL out of sight (read from the statement when it runs)".to_owned(),
        Sql::Unseen => "SQL out of sight (counted as a write)".to_owned(),
    }
}

fn verdict(sql: &[Sql], held: bool, decodes: bool) -> &'static str {
    let all_read = sql.iter().all(|sql| {
        matches!(
            sql,
            Sql::Literal {
                read_only: true,
                ..
            }
        )
    });
    let writes = sql.iter().any(|sql| {
        matches!(sql, Sql::Unseen if !held)
            || matches!(
                sql,
                Sql::Literal {
                    read_only: false,
                    ..
                }
            )
    });
    match (all_read, writes, decodes) {
        (true, _, _) => "read-only: retried after any transient failure",
        (false, true, false) => "may write: retried only when D1 was not reached",
        (false, true, true) => "may write: never retried, since its error may be a row's text",
        (false, false, false) => {
            "retried after any transient failure if its SQL is read-only, else only when D1 \
             was not reached"
        }
        (false, false, true) => {
            "retried after any transient failure if its SQL is read-only, else never"
        }
    }
}

/// The SQL's words, blanks collapsed, cut after about 40 characters.
fn summary(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = String::new();
    for word in words {
        if out.len() + word.len() > 40 {
            out.push_str(" ..");
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-call paragraph says what is retried and when SQL is judged; the whole-body
    /// one names the option.
    #[test]
    fn the_paragraph_names_the_mode() {
        let found = Found {
            executions: Vec::new(),
            sql: Vec::new(),
            probes_errors: false,
            types_columns: false,
            observes_held: false,
        };
        let per_call = paragraph(&found, Mode::PerCall, Mode::PerCall, "4 retries");
        assert!(
            per_call.contains("0 calls named like D1 executions"),
            "{per_call}"
        );
        assert!(per_call.contains("its SQL judged where D1's own `prepare` made it"));
        assert!(per_call.contains("else read from D1's statement when it runs"));
        assert!(per_call.contains("They share 4 retries in all"));
        let read_only = paragraph(
            &found,
            Mode::WholeBody { read_only: true },
            Mode::WholeBody { read_only: true },
            "4 retries",
        );
        assert!(
            read_only.contains("`#[d1_retry(read_only)]`"),
            "{read_only}"
        );
        assert!(read_only.contains("the function only reads"));
        assert!(read_only.contains("made out of sight (read when it runs)"));
        let idempotent = paragraph(
            &found,
            Mode::WholeBody { read_only: false },
            Mode::WholeBody { read_only: false },
            "2 retries",
        );
        assert!(!idempotent.contains("not run again"), "{idempotent}");
        assert!(
            idempotent.contains("`#[d1_retry(idempotent)]`"),
            "{idempotent}"
        );
        assert!(idempotent.contains("2 retries in all"));
    }

    /// A `read_only` body expanded per call (one D1 call) names the option and the call.
    #[test]
    fn a_read_only_body_of_one_call_says_it_is_retried_as_that_call() {
        let found = Found {
            executions: vec![Execution {
                method: "first".to_owned(),
                sql: vec![Sql::Dynamic],
                left: Left::No,
                held: true,
            }],
            sql: Vec::new(),
            probes_errors: false,
            types_columns: false,
            observes_held: false,
        };
        let text = paragraph(
            &found,
            Mode::WholeBody { read_only: true },
            Mode::PerCall,
            "4 retries",
        );
        assert!(text.contains("`#[d1_retry(read_only)]`"), "{text}");
        assert!(text.contains("the body is one D1 call"), "{text}");
        assert!(text.contains("4 retries in all"), "{text}");
        assert!(
            text.contains("`first` dynamic SQL (scanned when it is prepared)"),
            "{text}"
        );
        // Declared and expanded alike, the paragraph is the mode's own.
        let whole = paragraph(
            &found,
            Mode::WholeBody { read_only: true },
            Mode::WholeBody { read_only: true },
            "4 retries",
        );
        assert!(!whole.contains("one D1 call"), "{whole}");
    }

    /// Each execution's line names its SQL as the attribute saw it.
    #[test]
    fn each_kind_of_sql_is_described() {
        let literal = crate::sql::judge(
            &syn::parse_str("\"SELECT id FROM users\"").unwrap(),
            crate::sql::Handed::Prepare,
        );
        assert_eq!(describe(&literal, false), "`SELECT id FROM users`");
        let constant = crate::sql::judge(
            &syn::parse_str("queries :: FIND").unwrap(),
            crate::sql::Handed::Exec,
        );
        assert_eq!(describe(&constant, false), "`queries::FIND` (a constant)");
        assert_eq!(
            describe(&Sql::Dynamic, false),
            "dynamic SQL (scanned when it is prepared)"
        );
        assert_eq!(
            describe(&Sql::Unseen, false),
            "SQL out of sight (counted as a write)"
        );
        assert_eq!(
            describe(&Sql::Unseen, true),
            "SQL out of sight (read from the statement when it runs)"
        );
    }

    /// Out of sight, a statement's own execution is judged by what the statement holds
    /// when it runs, and a rewritten `batch` by what its list's statements hold; an `exec`,
    /// or a `batch` whose list cannot be read, may write.
    #[test]
    fn sql_out_of_sight_is_read_from_a_statement_only() {
        let execution = |method: &str, rewritten| Execution {
            method: method.to_owned(),
            sql: vec![Sql::Unseen],
            left: if rewritten { Left::No } else { Left::NotAPlace },
            held: rewritten && matches!(method, "first" | "run"),
        };
        let first = line(&execution("first", true));
        assert!(
            first.contains("read from the statement when it runs"),
            "{first}"
        );
        assert!(
            first.contains("if its SQL is read-only, else never"),
            "{first}"
        );
        let run = line(&execution("run", true));
        assert!(
            run.contains("if its SQL is read-only, else only when D1 was not reached"),
            "{run}"
        );
        for method in ["batch", "exec"] {
            let batch = line(&execution(method, true));
            assert!(batch.contains("(counted as a write)"), "{batch}");
            assert!(batch.contains("may write"), "{batch}");
        }
        let listed = line(&Execution {
            held: true,
            ..execution("batch", true)
        });
        assert!(listed.contains("each statement's SQL read"), "{listed}");
        assert!(listed.contains("if its SQL is read-only"), "{listed}");
        let stored = line(&execution("first", false));
        assert!(stored.contains("(counted as a write)"), "{stored}");
        assert!(stored.contains("neither awaited"), "{stored}");
    }

    /// A call left as written says why; a write through `first` or `raw` is never retried.
    #[test]
    fn each_line_says_why_and_what_a_decoded_write_gets() {
        let write = crate::sql::judge(
            &syn::parse_str(r#""INSERT INTO t VALUES (1) RETURNING id""#).unwrap(),
            crate::sql::Handed::Prepare,
        );
        let execution = |method: &str, left: Left| Execution {
            method: method.to_owned(),
            sql: vec![write.clone()],
            left,
            held: true,
        };
        assert!(line(&execution("first", Left::No)).contains("may write: never retried"));
        assert!(line(&execution("raw", Left::No)).contains("may write: never retried"));
        assert!(
            line(&execution("run", Left::No))
                .contains("may write: retried only when D1 was not reached")
        );
        assert!(line(&execution("run", Left::Meets)).contains("one type with another site's"));
        assert!(line(&execution("run", Left::Outlives)).contains("may outlive"));
        let dump = Execution {
            method: "dump".to_owned(),
            sql: vec![Sql::Literal {
                text: "dump".to_owned(),
                read_only: true,
                span: proc_macro2::Span::call_site(),
            }],
            left: Left::No,
            held: false,
        };
        assert_eq!(
            line(&dump),
            "`dump` (read-only: retried after any transient failure)"
        );
    }

    /// A statement bound again to itself in two arms carries its SQL twice: named once.
    #[test]
    fn each_text_is_named_once() {
        let read = |text: &str| {
            crate::sql::judge(
                &syn::parse_str(&format!("{text:?}")).unwrap(),
                crate::sql::Handed::Prepare,
            )
        };
        let execution = Execution {
            method: "run".to_owned(),
            sql: vec![read("SELECT 1"), read("SELECT 2"), read("SELECT 1")],
            left: Left::No,
            held: true,
        };
        assert_eq!(
            line(&execution),
            "`run` `SELECT 1`, `SELECT 2` (read-only: retried after any transient failure)"
        );
    }

    #[test]
    fn long_sql_is_cut_between_words() {
        assert_eq!(
            summary("SELECT id,\n  name FROM users"),
            "SELECT id, name FROM users"
        );
        assert_eq!(
            summary("SELECT id, name, email, created_at, updated_at FROM users WHERE id = ?1"),
            "SELECT id, name, email, created_at, ..",
        );
    }
}
