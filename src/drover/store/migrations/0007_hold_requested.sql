-- A task held while its prolog ran (drover hold, before its job started): its attempt is
-- stopped, and the task waits again, held, when the attempt reports, like a requeue request.
ALTER TABLE tasks ADD COLUMN hold_requested INTEGER NOT NULL DEFAULT 0;
