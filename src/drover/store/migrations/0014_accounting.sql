-- Accounting: one row per ended attempt, with what its job and task were when it ended (owner,
-- name, queue, request, final state), so that `drover history`, qacct and sacct filter and
-- summarise from these indexes alone, never by decoding jobs' specs or joining the whole history.
-- Kept by the triggers below as the store writes attempts and tasks: an attempt's row is
-- written when it ends (and again if its record is rewritten), its state follows its task's (an
-- earlier attempt, or one whose task waits again, is `requeued`), and it goes with its attempt.
-- eligible_at: the later of submission, the begin time and the end of the task's previous attempt.
-- cpu_s: the cgroup's CPU time where one measured it, else user + system; peak_bytes: the larger
-- of the cgroup's peak and the largest RSS. Both NULL when no usage was recorded.
CREATE TABLE accounting (
    job_id        INTEGER NOT NULL,
    idx           INTEGER NOT NULL,
    number        INTEGER NOT NULL,
    ended_at      REAL    NOT NULL,
    owner         TEXT    NOT NULL,
    queue         TEXT    NOT NULL,
    node          TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    state         TEXT    NOT NULL,
    submitted_at  REAL    NOT NULL,
    eligible_at   REAL    NOT NULL,
    started_at    REAL,
    cpus          INTEGER NOT NULL,
    memory_mib    INTEGER NOT NULL,
    time_limit_s  INTEGER,
    cpu_s         REAL,
    peak_bytes    INTEGER,
    -- Clustered by owner and end time: a user's history (all a user may see) is one range.
    PRIMARY KEY (owner, ended_at, job_id, idx, number)
) WITHOUT ROWID;
CREATE UNIQUE INDEX accounting_attempt ON accounting (job_id, idx, number);
-- Newest first, by end time; a queue's and a node's hold what a summary reads, so that a queue's
-- week or a node's month is read from the index alone. A page or a month costs its rows.
CREATE INDEX accounting_ended ON accounting (ended_at);
CREATE INDEX accounting_queue ON accounting (queue, ended_at, node, state, started_at, eligible_at, cpus, cpu_s,
                                             peak_bytes, memory_mib);
CREATE INDEX accounting_node ON accounting (node, ended_at, queue, state, started_at, eligible_at, cpus, cpu_s,
                                            peak_bytes, memory_mib);

-- What an ended attempt's accounting row is made of: the one definition the triggers and the
-- back-fill below read (a trigger selects its attempt's row by key, which SQLite pushes down).
CREATE VIEW accounting_source AS
SELECT a.job_id, a.idx, a.number, a.ended_at, j.owner, COALESCE(json_extract(j.spec, '$.queue'), 'default'),
       a.node, j.name,
       CASE WHEN t.attempt > a.number OR t.state IN ('pending', 'held') THEN 'requeued' ELSE COALESCE(t.state, 'unknown') END,
       j.submitted_at,
       MAX(j.submitted_at, COALESCE(j.begin_at, 0), COALESCE((SELECT MAX(p.ended_at) FROM attempts p
           WHERE p.job_id = a.job_id AND p.idx = a.idx AND p.number < a.number), 0)),
       a.started_at, j.cpus, j.memory_mib, json_extract(j.spec, '$.time_limit_s'),
       CASE WHEN a.usage IS NOT NULL THEN COALESCE(json_extract(a.usage, '$.cgroup_cpu_s'),
           COALESCE(json_extract(a.usage, '$.user_cpu_s'), 0) + COALESCE(json_extract(a.usage, '$.sys_cpu_s'), 0)) END,
       CASE WHEN a.usage IS NOT NULL THEN MAX(COALESCE(json_extract(a.usage, '$.cgroup_peak_memory_bytes'), 0),
           COALESCE(json_extract(a.usage, '$.max_rss_kib'), 0) * 1024) END
FROM attempts a JOIN jobs j ON j.id = a.job_id LEFT JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx
WHERE a.ended_at IS NOT NULL;

-- The store rewrites an attempt's row whole as its cleanup goes on (INSERT OR REPLACE): the row
-- here is made again only when what it is made of changed (its end, start, or usage arriving),
-- not for every step of the cleanup, which would read the job's spec each time.
CREATE TRIGGER accounting_attempt_written AFTER INSERT ON attempts WHEN NEW.ended_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM accounting a WHERE a.job_id = NEW.job_id AND a.idx = NEW.idx
                    AND a.number = NEW.number AND a.ended_at = NEW.ended_at AND a.started_at IS NEW.started_at
                    AND (a.cpu_s IS NOT NULL) = (NEW.usage IS NOT NULL))
BEGIN
    INSERT OR REPLACE INTO accounting
    SELECT * FROM accounting_source WHERE job_id = NEW.job_id AND idx = NEW.idx AND number = NEW.number;
END;

CREATE TRIGGER accounting_attempt_changed AFTER UPDATE OF ended_at, started_at, exit, usage ON attempts
WHEN NEW.ended_at IS NOT NULL
BEGIN
    INSERT OR REPLACE INTO accounting
    SELECT * FROM accounting_source WHERE job_id = NEW.job_id AND idx = NEW.idx AND number = NEW.number;
END;

CREATE TRIGGER accounting_attempt_removed AFTER DELETE ON attempts
BEGIN
    DELETE FROM accounting WHERE job_id = OLD.job_id AND idx = OLD.idx AND number = OLD.number;
END;

CREATE TRIGGER accounting_task_written AFTER INSERT ON tasks
BEGIN
    UPDATE accounting
    SET state = CASE WHEN number < NEW.attempt OR NEW.state IN ('pending', 'held') THEN 'requeued' ELSE NEW.state END
    WHERE job_id = NEW.job_id AND idx = NEW.idx AND number <= NEW.attempt
      AND state != CASE WHEN number < NEW.attempt OR NEW.state IN ('pending', 'held') THEN 'requeued' ELSE NEW.state END;
END;

-- The attempts that ended before this version.
INSERT INTO accounting SELECT * FROM accounting_source;
