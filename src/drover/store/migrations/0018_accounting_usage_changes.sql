-- An ended attempt's usage can change after it arrived: a parallel job's tasks that end after
-- its master are counted in it then (controller/pe_usage.py). The store writes an attempt whole
-- (INSERT OR REPLACE, which fires no UPDATE trigger), so its accounting row is made again also
-- when the CPU time or the memory peak its usage gives differs from the row's.
DROP TRIGGER accounting_attempt_written;
CREATE TRIGGER accounting_attempt_written AFTER INSERT ON attempts WHEN NEW.ended_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM accounting a WHERE a.job_id = NEW.job_id AND a.idx = NEW.idx
                    AND a.number = NEW.number AND a.ended_at = NEW.ended_at AND a.started_at IS NEW.started_at
                    AND (a.cpu_s IS NOT NULL) = (NEW.usage IS NOT NULL)
                    AND a.cpu_s IS (CASE WHEN NEW.usage IS NOT NULL THEN COALESCE(
                        json_extract(NEW.usage, '$.cgroup_cpu_s'),
                        COALESCE(json_extract(NEW.usage, '$.user_cpu_s'), 0)
                        + COALESCE(json_extract(NEW.usage, '$.sys_cpu_s'), 0)) END)
                    AND a.peak_bytes IS (CASE WHEN NEW.usage IS NOT NULL THEN MAX(
                        COALESCE(json_extract(NEW.usage, '$.cgroup_peak_memory_bytes'), 0),
                        COALESCE(json_extract(NEW.usage, '$.max_rss_kib'), 0) * 1024) END))
BEGIN
    INSERT OR REPLACE INTO accounting
    SELECT * FROM accounting_source WHERE job_id = NEW.job_id AND idx = NEW.idx AND number = NEW.number;
END;
