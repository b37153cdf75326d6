"""The transaction shell: runs a handler, commits its outcome, carries out its effects, undoes a failure."""
