-- As ../0006_cluster_membership.sql: join tokens (the secret's SHA-256 only) and the node
-- certificates issued at `drover join`.
CREATE TABLE join_tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    created_by TEXT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    uses_left BIGINT NOT NULL,
    revoked_at DOUBLE PRECISION
);
CREATE TABLE node_certificates (
    serial TEXT PRIMARY KEY,
    node TEXT NOT NULL,
    issued_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    token_id TEXT,
    revoked_at DOUBLE PRECISION
);
CREATE INDEX node_certificates_by_node ON node_certificates (node);
