"""Security: who may do what, and hosts joining and leaving the cluster."""
