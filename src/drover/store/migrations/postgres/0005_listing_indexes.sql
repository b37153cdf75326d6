-- As ../0005_listing_indexes.sql: listings of ended jobs answered from these indexes alone.
CREATE INDEX jobs_ended_by_id ON jobs (id, owner, name, state, ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX jobs_ended_by_owner ON jobs (owner, id, name, state, ended_at) WHERE ended_at IS NOT NULL;
