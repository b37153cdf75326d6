-- Every kind of dependency (core/dependencies.py) replaces the afterok-only list: a JSON object
-- {"any": bool, "on": [{"kind", "job", "task"?, "per_task"?}, ...]}, NULL for none. Rows written
-- before carry their after_ok ids over as afterok records; after_ok itself is no longer written.
ALTER TABLE jobs ADD COLUMN dependencies TEXT;
UPDATE jobs SET dependencies = json_object(
    'any', json('false'),
    'on', (SELECT json_group_array(json_object('kind', 'afterok', 'job', value)) FROM json_each(jobs.after_ok)))
WHERE after_ok NOT IN ('', '[]');
-- The earliest time a job may start (sbatch --begin, qsub -a), a Unix time; NULL: at once.
ALTER TABLE jobs ADD COLUMN begin_at REAL;
