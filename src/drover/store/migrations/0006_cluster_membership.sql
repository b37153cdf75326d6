-- Join tokens (`drover token create`): only the secret's SHA-256 is kept, with the token's
-- expiry and the joins it has left; a revoked token keeps its row, so `token list` says so.
CREATE TABLE join_tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    created_at REAL NOT NULL,
    created_by TEXT NOT NULL,
    expires_at REAL NOT NULL,
    uses_left INTEGER NOT NULL,
    revoked_at REAL
);
-- Node certificates the controller issued at `drover join`, by serial (lowercase hex). A node
-- that leaves, or joins again under the same name, has its older certificates revoked: the
-- controller refuses a revoked certificate on the node channel.
CREATE TABLE node_certificates (
    serial TEXT PRIMARY KEY,
    node TEXT NOT NULL,
    issued_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    token_id TEXT,
    revoked_at REAL
);
CREATE INDEX node_certificates_by_node ON node_certificates (node);
