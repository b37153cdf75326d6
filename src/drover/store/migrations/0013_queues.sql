-- Queues at run time: what operators and owners changed of drover.toml's [queues.NAME]
-- (`drover queue stop|start|drain|set`), and the queues users made (`drover queue create`).
-- starting: its jobs may start (0: stopped); accepting: it takes new jobs (0: draining).
-- settings: the changed settings as JSON, KEY → the text given (core/queues.py).
CREATE TABLE queues (
    name TEXT PRIMARY KEY,
    starting INTEGER NOT NULL DEFAULT 1,
    accepting INTEGER NOT NULL DEFAULT 1,
    reason TEXT,
    settings TEXT,
    created_by TEXT,
    changed_at REAL NOT NULL DEFAULT 0
);
