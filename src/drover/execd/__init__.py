"""The node daemon: runs attempts on this host for the controller."""
