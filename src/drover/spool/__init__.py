"""The on-disk contract between the execd and a shepherd. Standard library only."""
