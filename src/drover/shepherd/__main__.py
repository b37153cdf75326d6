"""`python -m drover.shepherd SPOOL_DIR`: run one attempt without a fork server (tests, debugging)."""

import sys

from drover.shepherd.main import run

if len(sys.argv) != 2:
    sys.exit("usage: python -m drover.shepherd SPOOL_DIR")
sys.exit(run(sys.argv[1]))
