-- As ../0018_accounting_usage_changes.sql. Here the store's upsert is an UPDATE, and
-- accounting_attempt_written (0014) makes the row again whenever the attempt's usage changed:
-- nothing to change.
SELECT 1;
