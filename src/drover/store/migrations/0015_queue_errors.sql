-- A node's queue instances in error (Grid Engine's queue@node in state E), as a JSON object of
-- queue → why: set by a failing prolog, epilog or PE method of a job of that queue, kept across
-- the node's disconnects and the controller's restarts until an operator clears it.
ALTER TABLE nodes ADD COLUMN queue_errors TEXT;
