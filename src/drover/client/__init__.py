"""The Python client of the controller's API. `from drover.client import Client`."""

from drover.client.client import Client

__all__ = ["Client"]
