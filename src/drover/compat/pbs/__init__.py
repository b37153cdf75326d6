"""PBS Pro's and Torque's commands (qsub, qstat, qdel...), backed by Drover (docs/compat.md)."""
