"""Persistence: the only package that speaks SQL. Backends are picked by name (see `open_store`)."""
