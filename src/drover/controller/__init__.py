"""The controller: owns the truth (jobs, tasks, attempts, nodes, events) and decides what runs."""
