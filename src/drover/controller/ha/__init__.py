"""High availability: a standby waiting for the leadership of a shared store, and the store's checks."""
