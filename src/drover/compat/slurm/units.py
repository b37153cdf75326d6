"""Slurm's convert_num_unit (src/common/slurm_protocol_api.c): sizes with a unit letter. Pure."""

from __future__ import annotations

UNITS = "\0KMGTP"
NONE, KILO, MEGA = 0, 1, 2


def convert(number: float, unit: int, exact: bool = True, keep: bool = False, target: str | None = None) -> str:
    """`number` of `unit` (NONE, KILO, MEGA...) as Slurm prints it: converted up while no
    precision is lost (`exact`, sacct's default: 4356K, 2.50G), or as it is (`keep`, the
    --noconvert option), or to the `target` unit letter (the --units option)."""
    if int(number) == 0:
        return "0"
    if target is not None:
        wanted = UNITS.index(target.upper())
        while wanted < unit:
            number *= 1024
            unit -= 1
        while wanted > unit:
            number /= 1024
            unit += 1
    elif keep:
        pass
    elif exact:
        while number >= 1024 and int(number) % 512 == 0:
            number /= 1024
            unit += 1
    else:
        while number >= 1024:
            number /= 1024
            unit += 1
    letter = UNITS[unit] if 0 <= unit < len(UNITS) else "?"
    letter = "" if letter == "\0" else letter
    whole = int(number)
    return f"{whole}{letter}" if whole == number else f"{number:.2f}{letter}"
