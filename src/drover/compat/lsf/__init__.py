"""IBM Spectrum LSF's commands (bsub, bjobs, bkill...), backed by Drover."""
