//! The `d1.operation` log field, formatted only when a line is logged.

use core::fmt;

/// What a retried call is called in the logs.
///
/// A method's default name, `Type::method`, is kept as its two `&'static str` parts and
/// joined only when a line is written: the happy path never builds it.
#[derive(Clone, Copy, Debug)]
pub enum OperationName<'a> {
    /// A name given in full (`name = "..."`, a free function, `Retry::new`).
    Named(&'a str),
    /// A method: the full `core::any::type_name::<Self>()` and the method's name.
    Method {
        /// `app::repo::UserRepo<app::Db>`; only its last path segment is logged.
        type_name: &'static str,
        /// `find`.
        method: &'static str,
    },
}

impl fmt::Display for OperationName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OperationName::Named(name) => f.write_str(name),
            OperationName::Method { type_name, method } => match short_type_name(type_name) {
                "" => f.write_str(method),
                short => write!(f, "{short}::{method}"),
            },
        }
    }
}

impl<'a> From<&'a str> for OperationName<'a> {
    fn from(name: &'a str) -> Self {
        OperationName::Named(name)
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
        let name = |type_name, method| OperationName::Method { type_name, method }.to_string();
        assert_eq!(name("app::repo::UserRepo", "find"), "UserRepo::find");
        assert_eq!(name("app::Repo<app::Db, u8>", "save"), "Repo::save");
        assert_eq!(name("UserRepo", "find"), "UserRepo::find");
        assert_eq!(name("&app::Repo", "find"), "Repo::find");
        assert_eq!(name("&mut app::Repo", "find"), "Repo::find");
        assert_eq!(name("dyn app::Repo", "find"), "Repo::find");
        assert_eq!(name("", "find"), "find");
        assert_eq!(OperationName::from("users.find").to_string(), "users.find");
    }
}
