-- As ../0023_allocation_queues.sql: allocation queues and the allocations asked for.
CREATE TABLE alloc_queues (
    id BIGINT PRIMARY KEY,
    params TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    created_by TEXT NOT NULL,
    paused BIGINT NOT NULL DEFAULT 0,
    removed BIGINT NOT NULL DEFAULT 0,
    failures BIGINT NOT NULL DEFAULT 0,
    backoff_until DOUBLE PRECISION,
    last_error TEXT,
    last_error_at DOUBLE PRECISION
);
CREATE TABLE allocations (
    queue_id BIGINT NOT NULL,
    outer_id TEXT NOT NULL,
    workers BIGINT NOT NULL,
    state TEXT NOT NULL,
    submitted_at DOUBLE PRECISION NOT NULL,
    token_id TEXT,
    started_at DOUBLE PRECISION,
    ended_at DOUBLE PRECISION,
    reason TEXT,
    PRIMARY KEY (queue_id, outer_id)
);
