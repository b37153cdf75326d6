"""The cluster across hosts: its certificate authority, the controller's and the nodes'
certificates, join tokens, and the TLS set-up each side uses. Imported by the controller, the
execd and the commands that set a cluster up (`drover cluster init`, `token`, `join`, `leave`)."""
