"""Upkeep beside the decisions: the controller's own mail, purges of old history, jobs' event logs."""
