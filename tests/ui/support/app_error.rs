//! The usual application error, built from D1's: what the pass cases whose functions return
//! their own error type return. Needs the stand-in database as `crate::db`.

use std::fmt;

use crate::db::DbError;

/// The usual application error, built from D1's.
#[derive(Debug)]
pub enum AppError {
    Db(DbError),
    NotFound,
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Db(error) => write!(f, "database error: {error}"),
            AppError::NotFound => f.write_str("not found"),
        }
    }
}

impl std::error::Error for AppError {}

impl From<DbError> for AppError {
    fn from(error: DbError) -> Self {
        AppError::Db(error)
    }
}
