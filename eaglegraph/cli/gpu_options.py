"""`--gpu-memory` and `--capability`: describe a GPU the table lacks, or another SKU of one.

Parsed here into the typed values `PlanChoices` takes (GiB as a float, capability as a
(major, minor) pair); the plan resolves the card with them (`rig.gpus.get_gpu`).
"""

from __future__ import annotations

import re
from typing import Any

import click

from eaglegraph.errors import BadInput

_CAPABILITY = re.compile(r"^(?:sm_?)?(\d{1,2})\.(\d)$|^(?:sm_?)?(\d{1,2})(\d)$", re.IGNORECASE)


def gpu_description_options() -> list[Any]:
    return [
        click.option(
            "--gpu-memory",
            type=click.FloatRange(min=0, min_open=True, max=10_000),
            default=None,
            metavar="GIB",
            help="The GPU's memory in GiB as torch reports it (e.g. 79.2): overrides --gpu's, "
            "or describes a card the table lacks.",
        ),
        click.option(
            "--capability",
            default=None,
            metavar="X.Y",
            help="The GPU's compute capability (e.g. 9.0, 8.9, 12.0; sm_90 works too): "
            "overrides --gpu's, or describes a card the table lacks (with --gpu-memory).",
        ),
    ]


def parse_capability(text: str | None) -> tuple[int, int] | None:
    """'9.0', 'sm_90', '90' or '12.0' as (major, minor); None when not given."""
    if text is None:
        return None
    m = _CAPABILITY.match(text.strip())
    if m is None:
        raise BadInput(f"--capability {text!r}: write it as MAJOR.MINOR, e.g. 9.0 or 12.0")
    major, minor = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    if not 3 <= int(major) <= 15:
        raise BadInput(f"--capability {text!r}: no NVIDIA GPU has compute capability {major}.x")
    return int(major), int(minor)
