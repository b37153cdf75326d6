"""The `drover` command. Each subcommand lives in its own module, imported only when run."""
