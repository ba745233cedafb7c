//! What `#[d1_retry]` expands into. Not a public API: names and signatures here change
//! without notice; only the attribute may use them.

use core::sync::atomic::{AtomicU32, Ordering};

pub use crate::driver::{Access, Driver};
pub use crate::failure::{Failure, Probe, ViaAsRefError, ViaDisplay, ViaError};
pub use crate::read_only::is_read_only;
pub use crate::{DefaultSleeper, PolicyError, RetryPolicy};

/// What the macro learned about the function's statement sites at compile time.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// `#[d1_retry(idempotent)]`.
    pub idempotent: bool,
    /// More than one site, or a site that may run several times (loops, closures).
    pub many_sites: bool,
    /// A site whose SQL is known at compile time and may write.
    pub static_write: bool,
}

impl Plan {
    /// The access of the attempt that just ran, given the dynamic SQL it observed.
    pub fn access(&self, attempt: &Attempt<'_>) -> Access {
        if self.idempotent {
            return Access::Idempotent;
        }
        if !self.static_write && attempt.dynamic_writes() == 0 {
            return Access::ReadOnly;
        }
        if self.many_sites {
            Access::Unretryable
        } else {
            Access::Write
        }
    }
}

/// Per-attempt record of the dynamic SQL the attempt ran.
///
/// An atomic rather than a `Cell` so the user's future stays `Send` when it was.
pub struct Attempt<'a> {
    operation: &'a str,
    declared_read_only: bool,
    dynamic_writes: AtomicU32,
}

impl<'a> Attempt<'a> {
    /// A fresh record for one attempt of `operation`.
    pub const fn new(operation: &'a str, declared_read_only: bool) -> Self {
        Attempt {
            operation,
            declared_read_only,
            dynamic_writes: AtomicU32::new(0),
        }
    }

    /// Scans dynamic SQL as it is passed to a statement site, and hands it on unchanged.
    pub fn observe<S: AsRef<str>>(&self, sql: S) -> S {
        let text = sql.as_ref();
        if !is_read_only(text) {
            self.dynamic_writes.fetch_add(1, Ordering::Relaxed);
            if self.declared_read_only {
                crate::log::write_in_read_only(self.operation, text);
            }
        }
        sql
    }

    /// How many dynamic statements of this attempt may write.
    pub fn dynamic_writes(&self) -> u32 {
        self.dynamic_writes.load(Ordering::Relaxed)
    }
}

/// Validates a policy given as `#[d1_retry(policy = PATH)]`; the macro calls it in a
/// `const` block, so an invalid constant policy is a compile error with this message.
pub const fn checked_policy(policy: RetryPolicy) -> RetryPolicy {
    match policy.validate() {
        Ok(()) => policy,
        Err(error) => panic!("{}", error.message()),
    }
}

/// The default `d1.operation` of a method, `Type::method`, built on the stack so that
/// naming costs no allocation.
///
/// An attribute on a method cannot see the `impl` it sits in, so the expansion passes
/// `core::any::type_name::<Self>()` (a `&'static str` with the full path and generic
/// arguments) and the method's name; the type is shortened to its last path segment.
pub struct MethodName {
    bytes: [u8; MethodName::CAPACITY],
    len: usize,
    method: &'static str,
}

impl MethodName {
    /// Longer names fall back to the method name alone rather than being cut mid-word.
    const CAPACITY: usize = 64;

    /// `UserRepo::find` from `("app::repo::UserRepo<app::Db>", "find")`.
    pub fn new(type_name: &'static str, method: &'static str) -> Self {
        let mut name = MethodName {
            bytes: [0; Self::CAPACITY],
            len: 0,
            method,
        };
        let short = short_type_name(type_name);
        let parts = [short, "::", method];
        let total: usize = parts.iter().map(|part| part.len()).sum();
        if short.is_empty() || total > Self::CAPACITY {
            return name;
        }
        for part in parts {
            let end = name.len + part.len();
            if let Some(slot) = name.bytes.get_mut(name.len..end) {
                slot.copy_from_slice(part.as_bytes());
                name.len = end;
            }
        }
        name
    }

    /// The name to log.
    pub fn as_str(&self) -> &str {
        self.bytes
            .get(..self.len)
            .and_then(|bytes| core::str::from_utf8(bytes).ok())
            .filter(|name| !name.is_empty())
            .unwrap_or(self.method)
    }
}

/// `app::repo::UserRepo<app::Db>` -> `UserRepo`; `&app::Repo` -> `Repo`.
fn short_type_name(full: &str) -> &str {
    let path = full.split('<').next().unwrap_or(full);
    let last = path.rsplit("::").next().unwrap_or(path);
    last.trim_start_matches(['&', '*'])
        .trim_start_matches("mut ")
        .trim_start_matches("dyn ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_use_the_short_type_name() {
        let name = |ty, method| MethodName::new(ty, method).as_str().to_owned();
        assert_eq!(name("app::repo::UserRepo", "find"), "UserRepo::find");
        assert_eq!(name("app::Repo<app::Db, u8>", "save"), "Repo::save");
        assert_eq!(name("UserRepo", "find"), "UserRepo::find");
        assert_eq!(name("&app::Repo", "find"), "Repo::find");
        assert_eq!(name("dyn app::Repo", "find"), "Repo::find");
        assert_eq!(name("", "find"), "find");
        let long = "a::TypeWithAVeryLongNameThatDoesNotFitInTheBufferAtAllReally";
        assert_eq!(name(long, "find_everything"), "find_everything");
    }
}
