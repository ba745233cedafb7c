//! A grammar of the SQL the scanner judges, and a seeded generator that expands it.
//!
//! Every statement kind SQLite has is a rule of [`GRAMMAR`] (reads, writes behind `WITH` and
//! `EXPLAIN`, DDL, maintenance, `PRAGMA`, transactions, `ATTACH`, several statements in one
//! text), and so is every lexical trap the scanner must read the way SQLite does: comments
//! holding write keywords, strings and quoted names holding them, keywords used as names
//! after `.` and `AS`, `replace(`, parameters, numbers and blobs, byte-order marks,
//! full-width letters, line breaks where D1's `exec()` would cut, NUL bytes, case.
//!
//! A template is SQL with three kinds of marks:
//!
//! - `{name}` expands the rule `name`;
//! - a space outside quotes is a separator: it expands the rule `_`, which is usually a
//!   space and sometimes a line break, a tab, or a comment holding a write;
//! - quotes (`'...'`, `"..."`, `` `...` ``, `[...]`) are copied as they are.
//!
//! Rules whose name starts with `_` are raw: their alternatives are copied as they are.
//!
//! The generator draws every alternative of every rule once before it draws by weight, so
//! that the corpus covers the whole grammar whatever the seed; then it follows the weights.
//! It is deterministic: its random numbers come from a fixed seed through SplitMix64.

/// One rule of the grammar: its name and its weighted alternatives.
pub struct Rule {
    /// How templates refer to the rule: `{name}`.
    pub name: &'static str,
    /// Each alternative with its weight. The first must not lead back to the rule itself:
    /// it is the one drawn when the expansion is too deep.
    pub alternatives: &'static [(u32, &'static str)],
}

const fn rule(name: &'static str, alternatives: &'static [(u32, &'static str)]) -> Rule {
    Rule { name, alternatives }
}

/// The statement kinds of the corpus and how many distinct texts of each are drawn.
pub const KINDS: &[(&str, usize)] = &[
    ("select", 400),
    ("compound", 150),
    ("values", 150),
    ("with_read", 250),
    ("explain", 250),
    ("lexical", 300),
    ("insert", 200),
    ("replace_into", 100),
    ("update", 200),
    ("delete", 150),
    ("with_write", 150),
    ("create", 150),
    ("drop", 100),
    ("alter", 100),
    ("maintenance", 100),
    ("pragma", 200),
    ("transaction", 150),
    ("attach", 60),
    ("multi", 300),
    ("keyword_names", 300),
    ("line_start", 200),
];

/// Nesting beyond which every rule takes its first alternative.
const MAX_DEPTH: usize = 12;

/// The grammar. Its SQL runs against the schema of [`super::oracle::SCHEMA`]; a text that
/// does not prepare fails the corpus test, so the grammar cannot drift from valid SQL.
pub const GRAMMAR: &[Rule] = &[
    // ---- Around and between tokens. -----------------------------------------------------
    rule(
        "_",
        &[
            (200, " "),
            (4, "  "),
            (6, "\n"),
            (3, "\t"),
            (2, "\r\n  "),
            (1, "\u{c}"),
            (2, " /* c */ "),
            (2, "/**/"),
            (2, " /* DELETE FROM users; */ "),
            (2, " -- DROP TABLE users; INSERT INTO posts VALUES (1)\n"),
            (1, " --\n"),
            (1, " /* PRAGMA user_version = 1 */\n"),
            (1, "\n-- ; UPDATE users SET name = 1\n"),
            // Read-only for SQLite as one text; D1's exec() would run the inner lines.
            (1, " /* two\nlines */ "),
            (1, " /* x\n; UPDATE users SET name = 'x'; */ "),
        ],
    ),
    // Where SQLite reads ahead past spaces but not comments (`WINDOW w AS`, `OVER (`,
    // `FILTER (`): a comment there is a syntax error, so only spaces and line breaks.
    rule(
        "_ws",
        &[(8, " "), (1, "\n"), (1, "\t"), (1, "\r\n  "), (1, "\u{c}")],
    ),
    rule(
        "_lead",
        &[
            (20, ""),
            (1, "\u{FEFF}"),
            (1, ";"),
            (1, " ; "),
            (1, "\n"),
            (1, "-- a comment first\n"),
            (1, "/* DROP TABLE users */"),
        ],
    ),
    rule(
        "_trail",
        &[
            (20, ""),
            (3, ";"),
            (1, " ;; "),
            (1, ";\n"),
            (1, " -- DELETE FROM users"),
            (1, " /* unterminated; DROP TABLE users"),
            (1, "; -- ; UPDATE users SET name = 1"),
        ],
    ),
    // ---- Reads. -------------------------------------------------------------------------
    rule(
        "select",
        &[
            (1, "SELECT {value_items}"),
            (
                6,
                "SELECT{distinct} {items} FROM {from}{where}{group}{order}{limit}",
            ),
            (1, "SELECT{distinct} * FROM {from}{where}{order}{limit}"),
            (1, "SELECT u.* FROM users AS u{where}{limit}"),
            (1, "SELECT count(*) FROM users AS u{where}"),
            (
                1,
                "SELECT {expr} FROM users AS u WINDOW{_ws}w{_ws}AS (ORDER BY u.id)",
            ),
        ],
    ),
    rule("distinct", &[(6, ""), (1, " DISTINCT"), (1, " ALL")]),
    rule(
        "value_items",
        &[(3, "{value}{alias}"), (1, "{value}{alias}, {value_items}")],
    ),
    rule("items", &[(3, "{item}"), (2, "{item}, {items}")]),
    rule("item", &[(4, "{expr}"), (2, "{expr}{alias}")]),
    rule(
        "alias",
        &[
            (1, " AS x"),
            (8, " AS {alias_name}"),
            (1, " as {alias_name}"),
            (1, " {bare_alias}"),
        ],
    ),
    rule(
        "alias_name",
        &[
            (4, "total"),
            (1, "reindex"),
            (1, "\"delete\""),
            (1, "[update]"),
            (1, "`drop`"),
            (1, "'insert'"),
            (1, "vacuum"),
            (1, "analyze"),
            (1, "pragma"),
            (1, "replace"),
            (1, "begin"),
            (1, "savepoint"),
            (1, "release"),
            (1, "rollback"),
            (1, "attach"),
            (1, "detach"),
            (1, "explain"),
            (1, "plan"),
            (1, "query"),
            (1, "temp"),
            (1, "view"),
            (1, "trigger"),
            (1, "with"),
            (1, "deleted"),
            (1, "update_at"),
            (1, "ünïcödé"),
            (1, "délete"),
            (1, "\u{FF24}\u{FF25}\u{FF2C}\u{FF25}\u{FF34}\u{FF25}"),
            (1, "\"a\"\"DROP\""),
        ],
    ),
    // An alias without `AS`: a keyword here is a name to SQLite, a write to the scanner.
    rule(
        "bare_alias",
        &[
            (2, "x"),
            (1, "reindex"),
            (1, "analyze"),
            (1, "replace"),
            (1, "vacuum"),
            (1, "pragma"),
            (1, "savepoint"),
        ],
    ),
    rule(
        "from",
        &[
            (6, "users AS u"),
            (2, "users u"),
            (1, "main.users AS u"),
            (1, "active_users AS u"),
            (1, "users AS u NOT INDEXED"),
            (2, "users AS u JOIN posts AS p ON p.user_id = u.id"),
            (1, "users AS u LEFT JOIN posts AS p USING (id)"),
            (1, "users AS u CROSS JOIN tags AS t"),
            (1, "(SELECT * FROM users) AS u"),
            (1, "users AS u, json_each('[1, 2]') AS j"),
        ],
    ),
    rule(
        "where",
        &[
            (3, ""),
            (4, " WHERE {cond}"),
            (1, " WHERE {cond} AND {cond}"),
            (1, " WHERE {cond} OR NOT {cond}"),
        ],
    ),
    rule(
        "cond",
        &[
            (2, "u.id = ?1"),
            (1, "u.name = 'DROP TABLE users'"),
            (1, "u.deleted_at IS NULL"),
            (1, "u.id IN (SELECT p.user_id FROM posts AS p)"),
            (1, "replace(u.name, 'a', '') = ?"),
            (1, "u.email LIKE '%; DELETE FROM users; --%' ESCAPE '\\'"),
            (1, "u.\"delete\" = 0"),
            (1, "EXISTS (SELECT 1 FROM tags WHERE tags.post_id = u.id)"),
            (1, "u.id BETWEEN 1 AND 10"),
            (1, "u.name GLOB '[A-Z]*'"),
            (1, "u.name = :name"),
            (1, "u.pragma IS NOT NULL"),
            (1, "u.[update] <> 'x'"),
            (1, "NOT u.analyze"),
            (1, "u.id IN ({value}, {value})"),
            (1, "{value} IS NOT NULL"),
            (1, "u.replace = u.`update`"),
        ],
    ),
    rule(
        "group",
        &[
            (6, ""),
            (1, " GROUP BY u.id"),
            (1, " GROUP BY u.name HAVING count(*) > 1"),
        ],
    ),
    rule(
        "order",
        &[
            (5, ""),
            (1, " ORDER BY u.id DESC"),
            (1, " ORDER BY 1"),
            (1, " ORDER BY u.name COLLATE NOCASE ASC NULLS LAST"),
        ],
    ),
    rule(
        "limit",
        &[
            (5, ""),
            (1, " LIMIT 10"),
            (1, " LIMIT ?2 OFFSET ?3"),
            (1, " LIMIT 5, 10"),
        ],
    ),
    // An expression over `users AS u`.
    rule(
        "expr",
        &[
            (4, "u.id"),
            (2, "u.name"),
            (1, "u.email"),
            (1, "u.created_at"),
            (1, "u.deleted_at"),
            (1, "u.\"update\""),
            (1, "u.[delete]"),
            (1, "u.`replace`"),
            (1, "u.replace"),
            (1, "u.analyze"),
            (1, "u.pragma"),
            (1, "u.ünïcödé"),
            (1, "\"delete\""),
            (1, "[update]"),
            (1, "deleted_at"),
            // Bare columns named like write keywords: names to SQLite, writes to the scanner.
            (1, "replace"),
            (1, "analyze"),
            (1, "pragma"),
            (6, "{value}"),
            (2, "replace(u.name, 'a', 'b')"),
            (1, "REPLACE (u.email, '@', ' at ')"),
            (1, "Replace/* a comment */(u.name, ';', '')"),
            (1, "upper(replace(u.name, 'x', ''))"),
            (1, "u.id + 1"),
            (1, "u.name || '; DROP TABLE users'"),
            (1, "-u.id % 3"),
            (1, "coalesce(u.deleted_at, 'never')"),
            (1, "CAST(u.id AS TEXT)"),
            (1, "CASE WHEN u.id > 1 THEN 'update' ELSE 'delete' END"),
            (
                1,
                "(SELECT count(*) FROM posts AS p WHERE p.user_id = u.id)",
            ),
            (1, "row_number() OVER{_ws}(ORDER BY u.id)"),
            (1, "count(*) OVER{_ws}()"),
            (1, "json_extract(u.email, '$.a')"),
            (1, "u.email -> '$.a'"),
            (1, "u.email ->> '$.delete'"),
            (1, "u.name COLLATE NOCASE"),
            (1, "typeof(u.replace)"),
            (1, "iif(u.analyze, 1, 0)"),
            (1, "EXISTS (SELECT 1 FROM tags AS t WHERE t.post_id = u.id)"),
        ],
    ),
    // An expression that needs no table.
    rule(
        "value",
        &[
            (4, "1"),
            (1, "-2.5"),
            (1, "1.5e3"),
            (1, ".5E-2"),
            (1, "0x1F"),
            (1, "NULL"),
            (1, "TRUE"),
            (1, "x'00ff'"),
            (1, "X''"),
            (2, "'DROP TABLE users'"),
            (1, "'it''s; DELETE FROM users; --'"),
            (1, "'INSERT INTO users VALUES (1)'"),
            (1, "'/* not a comment */'"),
            (1, "'-- not a comment'"),
            (1, "'ДРОП ТАБЛЕ'"),
            (2, "?1"),
            (1, "?"),
            (1, "?3"),
            (1, ":name"),
            (1, "@id"),
            (1, "$v"),
            (1, "$v::w"),
            (1, "#p"),
            (1, "random()"),
            (1, "changes()"),
            (1, "last_insert_rowid()"),
            (1, "sqlite_version()"),
            (1, "json_set('{}', '$.delete', 1)"),
            (1, "json('{\"update\": [1, 2]}')"),
            (1, "printf('%d; DELETE', 3)"),
            (1, "date('now')"),
            (1, "(SELECT 1)"),
            (1, "(VALUES (2))"),
            (1, "hex(randomblob(4))"),
            (1, "char(68, 69)"),
            (1, "'a' || 'b'"),
            (1, "abs(-1)"),
        ],
    ),
    rule(
        "compound",
        &[
            (4, "{single_column} {compound_op} {single_column}"),
            (
                1,
                "{single_column} {compound_op} {single_column} {compound_op} {single_column}",
            ),
            // ORDER BY cannot follow a VALUES.
            (
                1,
                "{single_column} {compound_op} SELECT {value} ORDER BY 1 LIMIT 3",
            ),
        ],
    ),
    rule(
        "single_column",
        &[
            (2, "SELECT {value}"),
            (2, "SELECT u.id FROM users AS u{where}"),
            (1, "SELECT name FROM active_users"),
            (1, "VALUES ({value})"),
            (1, "SELECT replace(name, 'a', 'b') FROM users"),
            (1, "SELECT tag FROM tags"),
        ],
    ),
    rule(
        "compound_op",
        &[
            (2, "UNION"),
            (2, "UNION ALL"),
            (1, "INTERSECT"),
            (1, "EXCEPT"),
        ],
    ),
    rule("values", &[(2, "VALUES {rows}"), (1, "VALUES {pairs}")]),
    rule("rows", &[(2, "({value})"), (1, "({value}), {rows}")]),
    rule(
        "pairs",
        &[
            (2, "({value}, {value})"),
            (1, "({value}, {value}), {pairs}"),
        ],
    ),
    rule(
        "with_read",
        &[
            (4, "WITH {recursive}c AS {materialized}({cte}) {with_tail}"),
            (
                1,
                "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5) SELECT x FROM n",
            ),
            (
                1,
                "WITH a AS (SELECT 1 AS v), b AS (SELECT v + 1 AS v FROM a) SELECT * FROM b",
            ),
            (
                1,
                "WITH c(k, v) AS (VALUES (1, 'DELETE'), (2, 'x')) SELECT v FROM c",
            ),
        ],
    ),
    rule("recursive", &[(4, ""), (1, "RECURSIVE ")]),
    rule(
        "materialized",
        &[(4, ""), (1, "MATERIALIZED "), (1, "NOT MATERIALIZED ")],
    ),
    rule("cte", &[(3, "SELECT u.id, u.name FROM users AS u{where}")]),
    rule(
        "with_tail",
        &[
            (3, "SELECT * FROM c"),
            (1, "SELECT count(*) FROM c"),
            (1, "SELECT c.name AS replace FROM c ORDER BY 1"),
            (1, "VALUES (1)"),
            (1, "SELECT * FROM c JOIN posts AS p ON p.user_id = c.id"),
            (
                1,
                "SELECT * FROM c UNION ALL SELECT u.id, u.name FROM users AS u",
            ),
        ],
    ),
    rule(
        "explain",
        &[
            (1, "EXPLAIN {explained}"),
            (1, "EXPLAIN QUERY PLAN {explained}"),
            (1, "explain query plan {explained}"),
        ],
    ),
    rule(
        "explained",
        &[
            (4, "{select}"),
            (1, "{values}"),
            (2, "{with_read}"),
            (1, "{insert}"),
            (1, "{update}"),
            (1, "{delete}"),
            (1, "{with_write}"),
            (3, "{pragma}"),
            (1, "{create}"),
            (3, "{transaction}"),
            (1, "{maintenance}"),
            (1, "{attach}"),
        ],
    ),
    // Reads with write keywords in the places of names, all over the statement.
    rule(
        "keyword_names",
        &[
            (1, "SELECT {kw_column} FROM users"),
            (
                1,
                "SELECT id, {kw_column} FROM users WHERE {kw_column} IS NOT NULL",
            ),
            (1, "SELECT {kw_column} AS {alias_name} FROM users"),
            (1, "SELECT id {kw_name}, name {kw_name} FROM users"),
            (1, "SELECT max({kw_column}) FROM users GROUP BY {kw_column}"),
            (
                1,
                "SELECT * FROM users ORDER BY {kw_column} DESC, {kw_column}",
            ),
            (1, "{kw_qualified}"),
            (
                1,
                "SELECT count(*) FROM users WHERE {kw_column} IN (SELECT {kw_column} FROM users)",
            ),
            (1, "SELECT \"x\" AS a, {kw_column} FROM users"),
            (1, "SELECT 'x' {kw_name}, {kw_column} FROM users"),
            (
                1,
                "SELECT replace({kw_column}, 'a', 'b') AS {kw_name} FROM users",
            ),
            (
                1,
                "SELECT CASE {kw_column} WHEN 1 THEN {kw_column} ELSE {kw_column} END FROM users",
            ),
            (1, "VALUES (1) UNION ALL SELECT {kw_column} FROM users"),
            (
                1,
                "WITH c AS (SELECT {kw_column} FROM users) SELECT * FROM c",
            ),
            (1, "WITH c({kw_name}) AS (SELECT 1) SELECT * FROM c"),
            (1, "WITH {kw_name} AS (SELECT 1 AS x) SELECT 1"),
            (1, "SELECT * FROM users JOIN posts AS {kw_name} USING (id)"),
            (
                1,
                "SELECT * FROM (SELECT {kw_column} FROM users) AS {kw_name}",
            ),
            (1, "EXPLAIN SELECT {kw_column} FROM users"),
            (1, "EXPLAIN QUERY PLAN SELECT id {kw_name} FROM users"),
            (1, "SELECT {kw_column} FROM users; {write_statement}"),
        ],
    ),
    // A keyword as a table's alias, and the same keyword qualifying its columns.
    rule(
        "kw_qualified",
        &[
            (
                1,
                "SELECT vacuum.id FROM users AS vacuum WHERE vacuum.replace = 1",
            ),
            (1, "SELECT begin.id, begin.analyze FROM users AS begin"),
            (
                1,
                "SELECT explain.pragma FROM users explain ORDER BY explain.id",
            ),
            (
                1,
                "SELECT * FROM users JOIN posts AS savepoint ON savepoint.user_id = users.id",
            ),
            (
                1,
                "SELECT * FROM users AS attach JOIN posts AS detach ON detach.user_id = attach.id",
            ),
            (1, "SELECT reindex.replace FROM users reindex"),
            (
                1,
                "SELECT count(plan.id) FROM users AS plan GROUP BY plan.pragma",
            ),
            (
                1,
                "WITH release AS (SELECT 1 AS x) SELECT release.x FROM release",
            ),
            (1, "WITH c(query) AS (SELECT 1) SELECT query FROM c"),
        ],
    ),
    // Columns of `users` named like write keywords.
    rule(
        "kw_column",
        &[
            (1, "replace"),
            (1, "analyze"),
            (1, "pragma"),
            (1, "REPLACE"),
        ],
    ),
    // Write keywords SQLite also takes for names: aliases, tables, CTEs.
    rule(
        "kw_name",
        &[
            (1, "replace"),
            (1, "analyze"),
            (1, "pragma"),
            (1, "reindex"),
            (1, "vacuum"),
            (1, "attach"),
            (1, "detach"),
            (1, "begin"),
            (1, "savepoint"),
            (1, "release"),
            (1, "explain"),
            (1, "plan"),
            (1, "query"),
            (1, "Vacuum"),
        ],
    ),
    // Statements cut into lines: D1's exec() runs each line on its own, so a line's first
    // word starts a statement.
    rule(
        "line_start",
        &[
            (1, "SELECT id,\n  {kw_column}\nFROM users"),
            (1, "SELECT id,\n{kw_column} FROM users"),
            (1, "SELECT id\n{kw_name}\nFROM users"),
            (
                1,
                "SELECT id,\n  replace(name, 'a', 'b') AS n\nFROM users\nWHERE id = 1",
            ),
            (1, "SELECT CASE WHEN id > 1 THEN 'a'\nEND AS e\nFROM users"),
            (
                1,
                "SELECT *\nFROM (\n  WITH x AS (SELECT 1 AS v)\n  SELECT v FROM x\n)",
            ),
            (1, "WITH a AS (\n  SELECT id FROM users\n)\nSELECT * FROM a"),
            (
                1,
                "WITH a AS (\n  WITH b AS (SELECT 1 AS v) SELECT v FROM b\n)\nSELECT * FROM a",
            ),
            (
                1,
                "WITH a AS (\n  SELECT id FROM users\n)\nDELETE FROM users WHERE id IN (SELECT id FROM a)",
            ),
            (
                1,
                "WITH a AS (\n  WITH b AS (SELECT 1 AS v) SELECT v FROM b\n) DELETE FROM users",
            ),
            (1, "SELECT 1 AS\n{alias_name}"),
            (1, "SELECT u.\n{kw_column} FROM users AS u"),
            (1, "EXPLAIN\nSELECT 1"),
            (1, "EXPLAIN\n{transaction}"),
            (1, "EXPLAIN {transaction}"),
            (1, "EXPLAIN QUERY PLAN\n{pragma}"),
            (1, "SELECT 1;\n{write_statement}"),
            (1, "SELECT 1\n;{write_statement}"),
            (1, "SELECT 1 AS x;\n  -- c\n  {write_statement}"),
        ],
    ),
    // Reads written to meet a lexical trap head on.
    rule(
        "lexical",
        &[
            (1, "SELECT 1 -- ; DELETE FROM users"),
            (1, "SELECT 1 /* ; DELETE FROM users */"),
            (1, "SELECT/**/1"),
            (1, "SELECT 'a''; DELETE FROM users; --' AS s"),
            (1, "SELECT \"a\"\"b\" FROM (SELECT 1 AS \"a\"\"b\")"),
            (1, "SELECT `x``DROP` FROM (SELECT 1 AS `x``DROP`)"),
            (1, "SELECT [a''UPDATE] FROM (SELECT 1 AS [a''UPDATE])"),
            (1, "SELECT 1 AS \"UPDATE\", 'DELETE' AS [INSERT]"),
            (1, "SELECT {expr} AS {alias_name} FROM users AS u"),
            (1, "SELECT u.{keyword_column} FROM users AS u"),
            (1, "SELECT {keyword_column} FROM users"),
            (1, "SELECT {expr}, {value} FROM users AS u{where}"),
            (
                1,
                "SELECT count(*) FILTER{_ws}(WHERE u.id > 1) FROM users AS u",
            ),
            (
                1,
                "SELECT title FROM docs WHERE docs MATCH 'delete OR update'",
            ),
            (1, "SELECT value FROM json_each('[\"DROP\", \"UPDATE\"]')"),
            (1, "SELECT name FROM pragma_table_info('users')"),
            (1, "SELECT name FROM sqlite_schema WHERE type = 'trigger'"),
            (1, "SELECT $a(1)"),
            (1, "SELECT $a(x); DELETE FROM users"),
            (1, "SELECT :a::b, @c, #d"),
            (1, "SELECT {_line_trap}"),
            (1, "SELECT 1\0"),
            (1, "SELECT 1\0; DELETE FROM users"),
            (1, "SELECT CAST(?1 AS INTEGER) AS id"),
            (
                1,
                "SELECT 1 AS updated, 2 AS deletes, 3 AS inserted, 4 AS dropped",
            ),
            (1, "SELECT u.id FROM users AS u ORDER BY u.id {collate}"),
        ],
    ),
    rule(
        "keyword_column",
        &[
            (1, "replace"),
            (1, "analyze"),
            (1, "pragma"),
            (1, "\"update\""),
            (1, "[delete]"),
        ],
    ),
    rule(
        "collate",
        &[(1, "COLLATE NOCASE"), (1, "COLLATE \"binary\"")],
    ),
    // Line breaks where D1's exec() would cut a read into lines that mean something else.
    rule(
        "_line_trap",
        &[
            (1, "1 AS\nreindex"),
            (1, "u.\nreplace FROM users AS u"),
            (1, "replace\n(name, 'a', 'b') FROM users"),
            (1, "'multi\nline'"),
            (1, "1 AS \"a\nb\""),
            (1, "1 /* two\nlines */"),
            (1, "'a\n; DELETE FROM users; '"),
            (1, "1 AS [x\nDROP TABLE users]"),
            (1, "1\nFROM users\nWHERE id = 1"),
        ],
    ),
    // ---- Writes. ------------------------------------------------------------------------
    rule(
        "insert",
        &[
            (
                4,
                "INSERT{or_conflict} INTO users (name, email) VALUES ({value}, {value}){upsert}{returning}",
            ),
            (
                2,
                "INSERT INTO users (name) SELECT u.name FROM users AS u{where}{returning}",
            ),
            (1, "INSERT INTO users DEFAULT VALUES{returning}"),
            (
                1,
                "INSERT INTO tags (post_id, tag) VALUES (1, 'x'), (2, 'y'){tags_returning}",
            ),
            (
                1,
                "INSERT INTO main.kv VALUES ('k', {value}) ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE kv.value IS NOT excluded.value",
            ),
            (
                1,
                "INSERT INTO users AS u (id, name) VALUES (1, 'x') ON CONFLICT DO UPDATE SET name = u.name || excluded.name",
            ),
            (1, "INSERT INTO docs (title, body) VALUES ('SELECT', 'a')"),
            (1, "insert into kv (key, value) values (:key, :value)"),
        ],
    ),
    rule(
        "or_conflict",
        &[
            (6, ""),
            (1, " OR IGNORE"),
            (1, " OR REPLACE"),
            (1, " OR ABORT"),
            (1, " OR FAIL"),
            (1, " OR ROLLBACK"),
        ],
    ),
    rule(
        "upsert",
        &[
            (4, ""),
            (1, " ON CONFLICT (email) DO UPDATE SET name = excluded.name"),
            (1, " ON CONFLICT DO NOTHING"),
            (1, " ON CONFLICT (email) DO NOTHING"),
        ],
    ),
    rule(
        "returning",
        &[
            (4, ""),
            (1, " RETURNING id"),
            (1, " RETURNING *"),
            (1, " RETURNING \"delete\", replace AS r"),
            (1, " returning id AS \"update\""),
        ],
    ),
    rule(
        "tags_returning",
        &[
            (3, ""),
            (1, " RETURNING post_id"),
            (1, " RETURNING *"),
            (1, " RETURNING tag AS \"delete\""),
        ],
    ),
    rule(
        "replace_into",
        &[
            (
                2,
                "REPLACE INTO tags (post_id, tag) VALUES ({value}, 'a'){tags_returning}",
            ),
            (
                1,
                "REPLACE INTO users (id, name) SELECT id, name FROM users WHERE id = 1",
            ),
            (1, "replace into kv values ('a', replace('b', 'c', 'd'))"),
            (1, "REPLACE INTO main.kv (key, value) VALUES (?1, ?2)"),
        ],
    ),
    rule(
        "update",
        &[
            (
                4,
                "UPDATE{or_conflict} users SET {assignments}{plain_where}{returning}",
            ),
            (
                1,
                "UPDATE users SET name = p.title FROM posts AS p WHERE p.user_id = users.id",
            ),
            (
                1,
                "UPDATE posts SET title = 'x' WHERE id IN (SELECT id FROM posts LIMIT 1)",
            ),
            (1, "UPDATE users AS u SET name = 'y' WHERE u.id = 1"),
            (1, "update kv set value = replace(value, 'a', 'b')"),
        ],
    ),
    rule(
        "assignments",
        &[
            (3, "name = {value}"),
            (1, "\"update\" = 'x', replace = replace(replace, 'a', 'b')"),
            (1, "analyze = analyze + 1"),
            (1, "(name, email) = ('a', 'b')"),
            (1, "pragma = NULL, [delete] = 1"),
        ],
    ),
    rule(
        "plain_where",
        &[
            (2, ""),
            (3, " WHERE id = ?1"),
            (1, " WHERE name = 'SELECT'"),
            (1, " WHERE \"delete\" = 1"),
            (1, " WHERE deleted_at IS NOT NULL AND email LIKE '%UPDATE%'"),
        ],
    ),
    rule(
        "delete",
        &[
            (4, "DELETE FROM users{plain_where}{returning}"),
            (
                1,
                "DELETE FROM posts WHERE id IN (SELECT post_id FROM tags)",
            ),
            (1, "DELETE FROM main.tags"),
            (1, "delete from kv where key = 'SELECT'"),
            (1, "DELETE FROM docs WHERE docs MATCH 'x'"),
        ],
    ),
    rule(
        "with_write",
        &[(
            1,
            "WITH {recursive}c AS (SELECT id FROM users WHERE name = 'x') {write_after_with}",
        )],
    ),
    rule(
        "write_after_with",
        &[
            (1, "INSERT INTO tags (post_id, tag) SELECT id, 'x' FROM c"),
            (1, "DELETE FROM posts WHERE user_id IN (SELECT id FROM c)"),
            (
                1,
                "UPDATE users SET name = 'y' WHERE id IN (SELECT id FROM c)",
            ),
            (1, "REPLACE INTO tags (post_id, tag) SELECT id, 'z' FROM c"),
            (
                1,
                "INSERT OR REPLACE INTO tags SELECT id, 'w' FROM c RETURNING tag",
            ),
            (
                1,
                "DELETE FROM users WHERE id IN (SELECT id FROM c) RETURNING name",
            ),
        ],
    ),
    rule(
        "create",
        &[
            (1, "CREATE TABLE audit (id INTEGER PRIMARY KEY, at TEXT)"),
            (1, "CREATE TABLE IF NOT EXISTS audit (id)"),
            (1, "CREATE TABLE IF NOT EXISTS users (id)"),
            (1, "CREATE TEMP TABLE scratch (a, b)"),
            (1, "CREATE TEMPORARY TABLE IF NOT EXISTS scratch (a)"),
            (1, "CREATE TABLE copy AS SELECT * FROM users"),
            (1, "CREATE TABLE strict_t (a INTEGER) STRICT"),
            (1, "CREATE TABLE wr (k TEXT PRIMARY KEY) WITHOUT ROWID"),
            (1, "CREATE TABLE \"select\" (\"from\" TEXT, replace TEXT)"),
            (1, "CREATE INDEX users_name ON users (name)"),
            (
                1,
                "CREATE UNIQUE INDEX IF NOT EXISTS users_live_email ON users (email) WHERE deleted_at IS NULL",
            ),
            (
                1,
                "CREATE INDEX IF NOT EXISTS posts_user ON posts (user_id)",
            ),
            (1, "CREATE VIEW names AS SELECT name FROM users"),
            (1, "CREATE TEMP VIEW one AS SELECT 1"),
            (1, "CREATE VIEW IF NOT EXISTS active_users AS SELECT 1"),
            (
                1,
                "CREATE TRIGGER users_ai AFTER INSERT ON users BEGIN INSERT INTO kv VALUES ('last', new.name); END",
            ),
            (
                1,
                "CREATE TRIGGER IF NOT EXISTS posts_bd BEFORE DELETE ON posts FOR EACH ROW WHEN old.id > 0 BEGIN DELETE FROM tags WHERE post_id = old.id; END",
            ),
            (1, "CREATE VIRTUAL TABLE notes USING fts5(body)"),
        ],
    ),
    rule(
        "drop",
        &[
            (1, "DROP TABLE users"),
            (1, "DROP TABLE IF EXISTS users"),
            (1, "DROP TABLE IF EXISTS nowhere"),
            (1, "DROP INDEX posts_user"),
            (1, "DROP INDEX IF EXISTS nowhere_idx"),
            (1, "DROP VIEW active_users"),
            (1, "DROP VIEW IF EXISTS nowhere_view"),
            (1, "DROP TRIGGER posts_touch"),
            (1, "DROP TRIGGER IF EXISTS nowhere_trigger"),
            (1, "DROP TABLE main.kv"),
            (1, "DROP TABLE docs"),
        ],
    ),
    rule(
        "alter",
        &[
            (1, "ALTER TABLE posts ADD COLUMN extra TEXT"),
            (1, "ALTER TABLE posts ADD extra2 INTEGER DEFAULT 0"),
            (1, "ALTER TABLE posts RENAME TO articles"),
            (1, "ALTER TABLE posts RENAME COLUMN body TO content"),
            (1, "ALTER TABLE posts RENAME body TO text"),
            (1, "ALTER TABLE posts DROP COLUMN \"drop\""),
            (1, "ALTER TABLE main.kv RENAME TO kv2"),
        ],
    ),
    rule(
        "maintenance",
        &[
            (1, "VACUUM"),
            (1, "VACUUM main"),
            (1, "VACUUM INTO ?1"),
            (1, "ANALYZE"),
            (1, "ANALYZE users"),
            (1, "ANALYZE main.posts_user"),
            (1, "REINDEX"),
            (1, "REINDEX users"),
            (1, "REINDEX NOCASE"),
            (1, "REINDEX main.posts_user"),
        ],
    ),
    rule(
        "pragma",
        &[
            (3, "PRAGMA {pragma_body}"),
            (1, "PRAGMA main.{pragma_body}"),
            (1, "pragma {pragma_body}"),
        ],
    ),
    rule(
        "pragma_body",
        &[
            (1, "table_info(users)"),
            (1, "table_info('posts')"),
            (1, "index_list(posts)"),
            (1, "foreign_keys"),
            (1, "foreign_keys = ON"),
            (1, "foreign_keys = off"),
            (1, "user_version"),
            (1, "user_version = 7"),
            (1, "user_version(8)"),
            (1, "application_id = 1"),
            (1, "schema_version"),
            (1, "journal_mode"),
            (1, "journal_mode = WAL"),
            (1, "journal_mode = DELETE"),
            (1, "page_count"),
            (1, "freelist_count"),
            (1, "cache_size = -2000"),
            (1, "defer_foreign_keys = true"),
            (1, "recursive_triggers = 1"),
            (1, "optimize"),
            (1, "wal_checkpoint"),
            (1, "wal_checkpoint(TRUNCATE)"),
            (1, "incremental_vacuum"),
            (1, "integrity_check"),
            (1, "quick_check"),
            (1, "foreign_key_check"),
            (1, "table_list"),
            (1, "compile_options"),
            (1, "busy_timeout = 100"),
            (1, "secure_delete = ON"),
            (1, "auto_vacuum"),
            (1, "synchronous = NORMAL"),
            (1, "temp_store = MEMORY"),
            (1, "data_version"),
        ],
    ),
    rule(
        "transaction",
        &[
            (1, "BEGIN"),
            (1, "BEGIN TRANSACTION"),
            (1, "BEGIN DEFERRED"),
            (1, "BEGIN IMMEDIATE"),
            (1, "BEGIN EXCLUSIVE TRANSACTION"),
            (1, "COMMIT"),
            (1, "COMMIT TRANSACTION"),
            (1, "END"),
            (1, "END TRANSACTION"),
            (1, "ROLLBACK"),
            (1, "ROLLBACK TRANSACTION"),
            (1, "SAVEPOINT sp"),
            (1, "SAVEPOINT \"delete\""),
            (1, "RELEASE sp"),
            (1, "RELEASE SAVEPOINT sp"),
            (1, "ROLLBACK TO sp"),
            (1, "ROLLBACK TRANSACTION TO SAVEPOINT sp"),
        ],
    ),
    rule(
        "attach",
        &[
            (1, "ATTACH ':memory:' AS aux"),
            (1, "ATTACH DATABASE 'file:other?mode=memory' AS other"),
            (1, "attach ? as third"),
            (1, "DETACH aux"),
            (1, "DETACH DATABASE other"),
        ],
    ),
    // ---- Several statements in one text. -------------------------------------------------
    rule(
        "multi",
        &[
            (3, "{read_statement}; {read_statement}"),
            (2, "{read_statement}; {write_statement}"),
            (1, "{write_statement}; {read_statement}"),
            (1, "{read_statement};; {read_statement}"),
            (1, "{read_statement}; {read_statement}; {read_statement}"),
            (1, "{write_statement}; {write_statement}"),
        ],
    ),
    rule(
        "read_statement",
        &[
            (4, "{select}"),
            (1, "{values}"),
            (1, "{compound}"),
            (2, "{with_read}"),
            (1, "EXPLAIN {select}"),
        ],
    ),
    rule(
        "write_statement",
        &[
            (2, "{insert}"),
            (2, "{update}"),
            (1, "{delete}"),
            (1, "{replace_into}"),
            (1, "{with_write}"),
            (1, "{pragma}"),
            (1, "{transaction}"),
            (1, "{create}"),
            (1, "{maintenance}"),
            (1, "{attach}"),
        ],
    ),
];

/// SplitMix64: small, fast and the same on every platform and version.
pub struct Rng(u64);

impl Rng {
    /// A generator that starts from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Expands [`GRAMMAR`] from a seed.
pub struct Generator {
    rng: Rng,
    /// How many times each alternative of each rule of [`GRAMMAR`] was drawn.
    pub uses: Vec<Vec<usize>>,
}

impl Generator {
    /// A generator drawing from `seed`.
    pub fn new(seed: u64) -> Self {
        Generator {
            rng: Rng::new(seed),
            uses: GRAMMAR
                .iter()
                .map(|rule| vec![0; rule.alternatives.len()])
                .collect(),
        }
    }

    /// One text of the statement kind `kind` (a rule name), with what may come before and
    /// after it, in a random case style.
    pub fn text(&mut self, kind: &str) -> String {
        let mut sql = String::new();
        self.expand("_lead", 0, &mut sql);
        self.expand(kind, 0, &mut sql);
        self.expand("_trail", 0, &mut sql);
        self.recase(&sql)
    }

    /// Keywords, names and functions are case-insensitive in SQLite (for ASCII letters):
    /// most texts keep the grammar's case, some are upper-cased, lower-cased or mixed.
    fn recase(&mut self, sql: &str) -> String {
        match self.rng.below(10) {
            0..=5 => sql.to_owned(),
            6 => sql.to_ascii_uppercase(),
            7 => sql.to_ascii_lowercase(),
            _ => sql
                .chars()
                .map(|c| {
                    if self.rng.below(2) == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c.to_ascii_lowercase()
                    }
                })
                .collect(),
        }
    }

    fn expand(&mut self, name: &str, depth: usize, out: &mut String) {
        let index = rule_index(name);
        let rule = &GRAMMAR[index];
        let chosen = self.choose(index, depth);
        self.uses[index][chosen] += 1;
        let template = rule.alternatives[chosen].1;
        if name.starts_with('_') {
            out.push_str(template);
        } else {
            self.template(template, depth + 1, out);
        }
    }

    /// An alternative not drawn yet if there is one, else one drawn by weight; the first
    /// when the expansion is too deep.
    fn choose(&mut self, rule: usize, depth: usize) -> usize {
        if depth > MAX_DEPTH {
            return 0;
        }
        if let Some(unused) = self.uses[rule].iter().position(|&n| n == 0) {
            return unused;
        }
        let alternatives = GRAMMAR[rule].alternatives;
        let total: u32 = alternatives.iter().map(|(weight, _)| weight).sum();
        let mut pick = u32::try_from(self.rng.below(u64::from(total))).unwrap_or(0);
        for (index, (weight, _)) in alternatives.iter().enumerate() {
            if pick < *weight {
                return index;
            }
            pick -= weight;
        }
        alternatives.len() - 1
    }

    fn template(&mut self, template: &str, depth: usize, out: &mut String) {
        for piece in pieces(template) {
            match piece {
                Piece::Rule(name) => self.expand(name, depth, out),
                Piece::Separator => self.expand("_", depth, out),
                Piece::Text(text) => out.push_str(text),
            }
        }
    }
}

/// A part of a template.
#[derive(Debug, PartialEq)]
pub enum Piece<'t> {
    /// `{name}`.
    Rule(&'t str),
    /// A space outside quotes and comments.
    Separator,
    /// Anything else, copied as it is: quotes and comments whole.
    Text(&'t str),
}

/// Cuts a template into its pieces.
pub fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        let (piece, len) = match c {
            '{' => {
                let end = rest.find('}').expect("a `{` is closed");
                (Piece::Rule(&rest[1..end]), end + 1)
            }
            ' ' => (Piece::Separator, 1),
            '\'' | '"' | '`' | '[' => {
                let len = quoted_len(rest);
                (Piece::Text(&rest[..len]), len)
            }
            '/' if rest.starts_with("/*") => {
                let len = rest.find("*/").map_or(rest.len(), |end| end + 2);
                (Piece::Text(&rest[..len]), len)
            }
            '-' if rest.starts_with("--") => {
                let len = rest.find('\n').unwrap_or(rest.len());
                (Piece::Text(&rest[..len]), len)
            }
            c => (Piece::Text(&rest[..c.len_utf8()]), c.len_utf8()),
        };
        pieces.push(piece);
        rest = &rest[len..];
    }
    pieces
}

/// The length of the quoted token at the start of `text` (a doubled quote is an escaped one;
/// `[...]` has no escape).
fn quoted_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let open = bytes[0];
    let close = if open == b'[' { b']' } else { open };
    let mut index = 1;
    while index < bytes.len() {
        if bytes[index] == close {
            if open != b'[' && bytes.get(index + 1) == Some(&close) {
                index += 2;
                continue;
            }
            return index + 1;
        }
        index += 1;
    }
    panic!("unterminated quote in the grammar: {text:?}")
}

/// The index in [`GRAMMAR`] of the rule `name`.
pub fn rule_index(name: &str) -> usize {
    GRAMMAR
        .iter()
        .position(|rule| rule.name == name)
        .unwrap_or_else(|| panic!("no rule `{name}` in the grammar"))
}

/// The rules a template refers to.
pub fn references(template: &str) -> impl Iterator<Item = &str> {
    pieces(template)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Rule(name) => Some(name),
            _ => None,
        })
}
