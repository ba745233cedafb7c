//! A stand-in for `worker::D1Database`, enough for the expansion to type-check.
#![allow(dead_code)]

use std::fmt;

pub struct Db;

pub struct Statement;

#[derive(Debug)]
pub struct DbError;

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("D1_ERROR: Network connection lost.")
    }
}

impl std::error::Error for DbError {}

impl Db {
    pub fn prepare(&self, _sql: impl Into<String>) -> Statement {
        Statement
    }

    pub async fn exec(&self, _sql: &str) -> Result<u64, DbError> {
        Ok(0)
    }

    pub async fn batch(&self, statements: Vec<Statement>) -> Result<Vec<u64>, DbError> {
        Ok(statements.iter().map(|_| 1).collect())
    }
}

impl Statement {
    pub fn bind(self, _values: &[i64]) -> Result<Self, DbError> {
        Ok(self)
    }

    pub async fn run(self) -> Result<u64, DbError> {
        Ok(1)
    }

    pub async fn first(self) -> Result<Option<i64>, DbError> {
        Ok(Some(1))
    }
}
