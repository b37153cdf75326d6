"""One module per command (several closely related commands may share one)."""
