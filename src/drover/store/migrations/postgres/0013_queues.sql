-- As ../0013_queues.sql: queues at run time (what operators changed, and users' own queues).
CREATE TABLE queues (
    name TEXT PRIMARY KEY,
    starting BIGINT NOT NULL DEFAULT 1,
    accepting BIGINT NOT NULL DEFAULT 1,
    reason TEXT,
    settings TEXT,
    created_by TEXT,
    changed_at DOUBLE PRECISION NOT NULL DEFAULT 0
);
