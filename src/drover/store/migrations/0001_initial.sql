-- Jobs: one row per submission, whatever its number of tasks. Tasks that were never dispatched
-- are the positions from fresh_from on in the job's indices (fresh_state says their state).
CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    owner         TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    submitted_at  REAL    NOT NULL,
    priority      INTEGER NOT NULL,
    cpus          INTEGER NOT NULL,
    memory_mib    INTEGER NOT NULL,
    indices       TEXT    NOT NULL,          -- JSON [[first, last, step], ...]
    is_array      INTEGER NOT NULL,
    max_running   INTEGER,
    after_ok      TEXT    NOT NULL,          -- JSON [job id, ...]
    spec          TEXT    NOT NULL,          -- JSON: script, workdir, output, environment, ...
    fresh_from    INTEGER NOT NULL DEFAULT 0,
    fresh_state   TEXT    NOT NULL DEFAULT 'pending',
    fresh_skip    TEXT    NOT NULL DEFAULT '[]',
    ended_at      REAL,                      -- set when every task is final
    state         TEXT                       -- the job as a whole, set when it ends
);
CREATE INDEX jobs_active ON jobs (ended_at) WHERE ended_at IS NULL;
CREATE INDEX jobs_ended ON jobs (ended_at);

CREATE TABLE tasks (
    job_id            INTEGER NOT NULL REFERENCES jobs (id),
    idx               INTEGER NOT NULL,
    state             TEXT    NOT NULL,
    state_since       REAL    NOT NULL,
    attempt           INTEGER NOT NULL,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    exit_status       INTEGER,
    PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;

CREATE TABLE attempts (
    job_id         INTEGER NOT NULL,
    idx            INTEGER NOT NULL,
    number         INTEGER NOT NULL,
    node           TEXT    NOT NULL,
    cpu_ids        TEXT    NOT NULL,         -- JSON [cpu id, ...]
    dispatched_at  REAL    NOT NULL,
    started_at     REAL,
    ended_at       REAL,
    exit           TEXT,                     -- JSON exit record, once the attempt ended
    usage          TEXT,                     -- JSON usage record
    PRIMARY KEY (job_id, idx, number)
) WITHOUT ROWID;
CREATE INDEX attempts_ended ON attempts (ended_at);

CREATE TABLE nodes (
    name           TEXT PRIMARY KEY,
    cpus           INTEGER NOT NULL,
    memory_mib     INTEGER NOT NULL,
    state          TEXT    NOT NULL,
    registered_at  REAL    NOT NULL,
    last_seen      REAL
);

-- Every state change, appended in the transaction that makes it.
CREATE TABLE events (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    time     REAL    NOT NULL,
    job_id   INTEGER,
    idx      INTEGER,
    attempt  INTEGER,
    kind     TEXT    NOT NULL,
    detail   TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX events_job ON events (job_id, seq);
