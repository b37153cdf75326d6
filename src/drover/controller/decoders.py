"""Every type the controller decodes or converts on a thread, worked out as this module is
imported (protocol/primed.py says why): the reading threads (reads/read_worker.py) convert the
usage records of attempts to the API's Usage (reads/views.py, reads/history_views.py). The stored
job specs they read are decoded by the store's own decoder, made as store/rows.py is imported;
the node channel's and the API's requests are decoded on the event loop alone."""

from __future__ import annotations

from drover.protocol.api import Usage
from drover.protocol.primed import Primed

READS = Primed(Usage)
