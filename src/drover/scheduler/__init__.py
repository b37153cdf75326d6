"""The planner: which pending tasks start where. Pure: no I/O, no clock reads, no globals."""
