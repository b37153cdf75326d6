"""What a front end's submit command (Grid Engine's qsub, PBS's qsub, ...) knows besides its
options: where, when and as whom it runs. Given as plain data, so that the options are made into
a Drover job by a pure function, tested on plain data."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Context:
    cwd: str
    home: str
    user: str
    host: str
    environ: dict[str, str]
    now: float = field(default_factory=time.time)  # when it submits (PBS's -a dates are read against it)
    is_dir: Callable[[str], bool] = os.path.isdir
