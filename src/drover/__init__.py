"""Drover: a batch job scheduler for Linux. Importing this package does nothing else."""

__version__ = "0.1.0"
