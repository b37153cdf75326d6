"""What differs between the SQL of SQLite and of PostgreSQL, in one place: the store's queries
are written once, with `?` placeholders, and take the few phrases below from their backend's
dialect. Pure: no I/O, no driver imports."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    begin_write: str  # a transaction that writes; SQLite takes the write lock at once
    begin_snapshot: str  # a read transaction whose statements all see the same commits
    greatest: str  # the larger of two values (SQLite's scalar MAX)
    glob: str  # `column GLOB ?`, with the argument made by glob_argument()
    day: str  # the local calendar day of a Unix time, as YYYY-MM-DD; {} is the time
    total: str  # the sum of a column as a float, 0.0 for no rows; {} is the column
    # The other columns of each job's lowest-index unfinished task: SQLite takes them from the row
    # of a MIN() aggregate; PostgreSQL says so with DISTINCT ON. {} is the list of job ids.
    first_unfinished: str
    binary_order: str  # sorts text by its bytes, as SQLite does ({} is the column)

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        """Insert a whole row, or replace the one with the same key."""
        marks = ", ".join("?" * len(columns))
        if self.name == "sqlite":
            return f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({marks})"
        updates = ", ".join(f"{column} = EXCLUDED.{column}" for column in columns if column not in key)
        return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) "
                f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}")

    def glob_argument(self, pattern: str) -> str:
        return pattern if self.name == "sqlite" else glob_to_regex(pattern)


SQLITE = Dialect(
    name="sqlite",
    begin_write="BEGIN IMMEDIATE",
    begin_snapshot="BEGIN",
    greatest="MAX",
    glob="{} GLOB ?",
    day="date({}, 'unixepoch', 'localtime')",
    total="TOTAL({})",
    first_unfinished=("SELECT job_id, MIN(idx), state, exit_status FROM tasks WHERE job_id IN ({}) "
                      "AND state != 'completed' GROUP BY job_id"),
    binary_order="{}",
)

POSTGRES = Dialect(
    name="postgresql",
    begin_write="BEGIN",
    begin_snapshot="BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    greatest="GREATEST",
    glob="{} ~ ?",
    # The session's time zone is the controller's own (postgres.py sets it), as 'localtime' is.
    day="to_char(to_timestamp({}), 'YYYY-MM-DD')",
    total="CAST(COALESCE(SUM({}), 0) AS DOUBLE PRECISION)",
    first_unfinished=("SELECT DISTINCT ON (job_id) job_id, idx, state, exit_status FROM tasks "
                      "WHERE job_id IN ({}) AND state != 'completed' ORDER BY job_id, idx"),
    binary_order='{} COLLATE "C"',
)


@functools.lru_cache(maxsize=256)
def glob_to_regex(pattern: str) -> str:
    """SQLite's GLOB as an anchored POSIX regular expression: `*`, `?`, `[...]` and `[^...]`,
    case-sensitive; everything else matches itself."""
    out = ["^"]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[" and (end := _class_end(pattern, i)) > 0:
            body = pattern[i + 1:end]
            negated = body.startswith("^")
            body = body[1:] if negated else body
            # Inside a bracket expression PostgreSQL's regular expressions read `\` as an escape, and
            # `[` before `.`, `:` or `=` as the start of a collating element or class: both escaped.
            out.append("[" + ("^" if negated else "") + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end
        else:
            out.append(char if char.isalnum() or char in " _-/,:=@" else "\\" + char)
        i += 1
    out.append("$")
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Where the bracket expression opened at `start` closes (a `]` first in it is a member), or -1."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    end = pattern.find("]", i)
    return end


@functools.lru_cache(maxsize=1024)
def to_format_style(sql: str) -> str:
    """`?` placeholders as psycopg's `%s` (and a literal `%` as `%%`), outside quoted text and
    identifiers; what is quoted keeps its `?` but still doubles `%`, which psycopg reads there too."""
    out: list[str] = []
    quote = ""
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
            out.append("%%" if char == "%" else char)
        elif char in "'\"":
            quote = char
            out.append(char)
        elif char == "?":
            out.append("%s")
        elif char == "%":
            out.append("%%")
        else:
            out.append(char)
    return "".join(out)
