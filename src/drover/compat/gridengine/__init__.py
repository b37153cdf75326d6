"""Grid Engine's commands, as far as scripts and programs can see: qsub, qstat, qdel, qhold,
qrls, qacct."""
