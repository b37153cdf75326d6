-- As ../0011_job_dependencies.sql: every kind of dependency, as a JSON object that replaces the
-- afterok-only list; rows written before carry their after_ok ids over as afterok records.
ALTER TABLE jobs ADD COLUMN dependencies TEXT;
UPDATE jobs SET dependencies = jsonb_build_object(
    'any', false,
    'on', (SELECT jsonb_agg(jsonb_build_object('kind', 'afterok', 'job', value))
           FROM jsonb_array_elements(jobs.after_ok::jsonb)))::text
WHERE after_ok NOT IN ('', '[]');
ALTER TABLE jobs ADD COLUMN begin_at DOUBLE PRECISION;
