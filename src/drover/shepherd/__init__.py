"""The shepherd: one process per attempt, the parent of the job. Standard library and
drover.spool only; single-threaded; safe to fork from the fork server."""
