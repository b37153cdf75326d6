"""Wire types shared by the controller, the execd and the client: one schema, versioned."""

API_VERSION = "v1"
