-- The tasks a parallel job started on the hosts of its allocation (qrsh -inherit, drover task
-- start), kept with the attempt that started them: their hosts, commands, ends and usage, as
-- [{"petask": "1", "host": "n2", ...}, ...]; NULL for an attempt that started none.
ALTER TABLE attempts ADD COLUMN pe_tasks TEXT;
