-- As ../0014_accounting.sql: one row per ended attempt with what its job and task were when it
-- ended, kept by triggers as the store writes attempts and tasks. The view is the one definition
-- of a row; JSON is read with jsonb's operators, and SQLite's two-argument MAX is GREATEST (its
-- arguments are never NULL here, where the two differ). Whole numbers read from JSON go through
-- numeric, so that 7200 and 7200.0 both land as the integer SQLite would keep.
CREATE TABLE accounting (
    job_id        BIGINT           NOT NULL,
    idx           BIGINT           NOT NULL,
    number        BIGINT           NOT NULL,
    ended_at      DOUBLE PRECISION NOT NULL,
    owner         TEXT             NOT NULL,
    queue         TEXT             NOT NULL,
    node          TEXT             NOT NULL,
    name          TEXT             NOT NULL,
    state         TEXT             NOT NULL,
    submitted_at  DOUBLE PRECISION NOT NULL,
    eligible_at   DOUBLE PRECISION NOT NULL,
    started_at    DOUBLE PRECISION,
    cpus          BIGINT           NOT NULL,
    memory_mib    BIGINT           NOT NULL,
    time_limit_s  BIGINT,
    cpu_s         DOUBLE PRECISION,
    peak_bytes    BIGINT,
    PRIMARY KEY (owner, ended_at, job_id, idx, number)
);
CREATE UNIQUE INDEX accounting_attempt ON accounting (job_id, idx, number);
CREATE INDEX accounting_ended ON accounting (ended_at);
CREATE INDEX accounting_queue ON accounting (queue, ended_at, node, state, started_at, eligible_at, cpus, cpu_s,
                                             peak_bytes, memory_mib);
CREATE INDEX accounting_node ON accounting (node, ended_at, queue, state, started_at, eligible_at, cpus, cpu_s,
                                            peak_bytes, memory_mib);

CREATE VIEW accounting_source AS
SELECT a.job_id, a.idx, a.number, a.ended_at, j.owner, COALESCE(j.spec::jsonb ->> 'queue', 'default') AS queue,
       a.node, j.name,
       CASE WHEN t.attempt > a.number OR t.state IN ('pending', 'held') THEN 'requeued'
            ELSE COALESCE(t.state, 'unknown') END AS state,
       j.submitted_at,
       GREATEST(j.submitted_at, COALESCE(j.begin_at, 0), COALESCE((SELECT MAX(p.ended_at) FROM attempts p
           WHERE p.job_id = a.job_id AND p.idx = a.idx AND p.number < a.number), 0)) AS eligible_at,
       a.started_at, j.cpus, j.memory_mib, (j.spec::jsonb ->> 'time_limit_s')::numeric::bigint AS time_limit_s,
       CASE WHEN a.usage IS NOT NULL THEN COALESCE((a.usage::jsonb ->> 'cgroup_cpu_s')::double precision,
           COALESCE((a.usage::jsonb ->> 'user_cpu_s')::double precision, 0)
           + COALESCE((a.usage::jsonb ->> 'sys_cpu_s')::double precision, 0)) END AS cpu_s,
       CASE WHEN a.usage IS NOT NULL THEN GREATEST(COALESCE((a.usage::jsonb ->> 'cgroup_peak_memory_bytes')::numeric, 0),
           COALESCE((a.usage::jsonb ->> 'max_rss_kib')::numeric, 0) * 1024)::bigint END AS peak_bytes
FROM attempts a JOIN jobs j ON j.id = a.job_id LEFT JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx
WHERE a.ended_at IS NOT NULL;

-- SQLite's accounting_attempt_written and accounting_attempt_changed in one function. The store
-- writes an attempt as an upsert, which PostgreSQL runs as an UPDATE: the row here is made again
-- when what it is made of changed, or when it is missing or stale, not for each cleanup step.
CREATE FUNCTION accounting_attempt_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.ended_at IS NULL THEN
        RETURN NULL;
    END IF;
    IF (TG_OP = 'INSERT' OR (NEW.ended_at IS NOT DISTINCT FROM OLD.ended_at
                             AND NEW.started_at IS NOT DISTINCT FROM OLD.started_at
                             AND NEW.exit IS NOT DISTINCT FROM OLD.exit
                             AND NEW.usage IS NOT DISTINCT FROM OLD.usage))
       AND EXISTS (SELECT 1 FROM accounting a WHERE a.job_id = NEW.job_id AND a.idx = NEW.idx
                   AND a.number = NEW.number AND a.ended_at = NEW.ended_at
                   AND a.started_at IS NOT DISTINCT FROM NEW.started_at
                   AND (a.cpu_s IS NOT NULL) = (NEW.usage IS NOT NULL)) THEN
        RETURN NULL;
    END IF;
    DELETE FROM accounting WHERE job_id = NEW.job_id AND idx = NEW.idx AND number = NEW.number;
    INSERT INTO accounting
    SELECT * FROM accounting_source WHERE job_id = NEW.job_id AND idx = NEW.idx AND number = NEW.number;
    RETURN NULL;
END;
$$;
CREATE TRIGGER accounting_attempt_written AFTER INSERT OR UPDATE ON attempts
    FOR EACH ROW EXECUTE FUNCTION accounting_attempt_written();

CREATE FUNCTION accounting_attempt_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM accounting WHERE job_id = OLD.job_id AND idx = OLD.idx AND number = OLD.number;
    RETURN NULL;
END;
$$;
CREATE TRIGGER accounting_attempt_removed AFTER DELETE ON attempts
    FOR EACH ROW EXECUTE FUNCTION accounting_attempt_removed();

-- A task's state, as its attempts' rows show it: SQLite's accounting_task_written, on the
-- upsert's UPDATE as well as on INSERT.
CREATE FUNCTION accounting_task_written() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    latest TEXT := CASE WHEN NEW.state IN ('pending', 'held') THEN 'requeued' ELSE NEW.state END;
BEGIN
    UPDATE accounting
    SET state = CASE WHEN number < NEW.attempt THEN 'requeued' ELSE latest END
    WHERE job_id = NEW.job_id AND idx = NEW.idx AND number <= NEW.attempt
      AND state != CASE WHEN number < NEW.attempt THEN 'requeued' ELSE latest END;
    RETURN NULL;
END;
$$;
CREATE TRIGGER accounting_task_written AFTER INSERT OR UPDATE ON tasks
    FOR EACH ROW EXECUTE FUNCTION accounting_task_written();

-- The attempts that ended before this version.
INSERT INTO accounting SELECT * FROM accounting_source;
