//! STUB: replaced by the scanner work. Conservative: everything writes.

/// Whether `sql` is read-only.
pub const fn is_read_only(_sql: &str) -> bool {
    false
}
