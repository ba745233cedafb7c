//! What the attribute refuses at compile time: only what is certainly wrong.
//!
//! Writes in several statements or in loops are not refused: each execution is retried on
//! its own, so nothing that completed runs again.

use crate::executions::{Found, Mode};

/// Checks the body's executions against the options.
pub(crate) fn check(found: &Found, mode: Mode, function: &syn::Ident) -> syn::Result<()> {
    if let Mode::WholeBody { read_only: true } = mode
        && let Some(span) = found.sql.iter().find_map(crate::sql::Sql::literal_write)
    {
        return Err(syn::Error::new(span, READ_ONLY_WRITE));
    }
    if mode == Mode::PerCall && found.executions.is_empty() {
        return Err(syn::Error::new(
            function.span(),
            no_execution(&function.to_string()),
        ));
    }
    Ok(())
}

fn no_execution(name: &str) -> String {
    format!(
        "#[d1_retry] found no D1 execution in `{name}`, so it would retry nothing: it \
         retries each call of `first`, `all`, `run`, `raw`, `raw_js_value`, `batch`, `exec` \
         and `dump`, and each `.await` on a statement, written in the body (not in the \
         functions or macros it calls). If `{name}` only reads, write \
         #[d1_retry(read_only)] to retry its whole body; if running the whole body twice is \
         safe, write #[d1_retry(idempotent)]"
    )
}

const READ_ONLY_WRITE: &str = "this SQL may write, but the function is marked \
     #[d1_retry(read_only)], whose whole body is retried, and retrying after D1 may have run \
     it would run the write twice; remove `read_only` (each execution is then retried on its \
     own, a write only when D1 was not reached), or, if running the whole body twice is safe \
     (an upsert, INSERT OR IGNORE), write #[d1_retry(idempotent)] instead";
