"""Allocation queues: nodes inside an outer scheduler's allocations (`drover alloc`)."""
