"""HTCondor's commands (condor_submit, condor_q, condor_rm...) and its job event log, backed by Drover."""
