"""What the API reads: the queries, the read models, paging, the reading threads. Read-only."""
