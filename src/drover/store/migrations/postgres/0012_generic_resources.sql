-- As ../0012_generic_resources.sql: the devices each attempt holds, each node's devices and
-- features.
ALTER TABLE attempts ADD COLUMN gres TEXT;
ALTER TABLE nodes ADD COLUMN gres TEXT;
ALTER TABLE nodes ADD COLUMN features TEXT;
