"""Handlers: (state, message, now) -> Outcome. They change the in-memory state and say what to
persist and what to tell whom; the service commits the changes before any effect happens."""
