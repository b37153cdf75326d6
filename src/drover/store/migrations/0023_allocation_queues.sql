-- Allocation queues (`drover alloc add`): what to ask an outer scheduler (Slurm, ...) for, as
-- core/allocations.QueueParams in JSON, and the queue's standing: paused, removed, the
-- failures in a row and the back-off they set, the last error. A removed queue keeps its row,
-- so `drover alloc info` still says what became of it.
CREATE TABLE alloc_queues (
    id INTEGER PRIMARY KEY,
    params TEXT NOT NULL,
    created_at REAL NOT NULL,
    created_by TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    removed INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    backoff_until REAL,
    last_error TEXT,
    last_error_at REAL
);
-- Each allocation asked for, by its queue and its id in the outer scheduler, with the join
-- token made for it (revoked when it ends).
CREATE TABLE allocations (
    queue_id INTEGER NOT NULL,
    outer_id TEXT NOT NULL,
    workers INTEGER NOT NULL,
    state TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    token_id TEXT,
    started_at REAL,
    ended_at REAL,
    reason TEXT,
    PRIMARY KEY (queue_id, outer_id)
);
