-- Why a node is in ERROR (a failing prolog or epilog), shown by `drover nodes`.
ALTER TABLE nodes ADD COLUMN reason TEXT;
