"""The nodes' side: their channels, what they say, users' reads relayed to them, their files and tasks."""
