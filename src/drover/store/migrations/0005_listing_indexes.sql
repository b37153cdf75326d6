-- Listings of ended jobs, newest first, paged by id: answered from these indexes alone (the
-- filters a listing takes are in them), so a page costs its rows, not the whole history.
CREATE INDEX jobs_ended_by_id ON jobs (id, owner, name, state, ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX jobs_ended_by_owner ON jobs (owner, id, name, state, ended_at) WHERE ended_at IS NOT NULL;
