"""The upstream changes and issues eaglegraph cites, looked up by short ref or by id.

The records come from two places: the table of `known.upstream_records`, and the engine flags
that declare the change which set them beside themselves (`known.profiles` `Flag.record`), so
adding a flag with its pull request touches the profiles alone. A ref or id given twice across
both is refused at import.
"""

from __future__ import annotations

from collections.abc import Iterable

from eaglegraph.known.profiles import FLAGS, Flag
from eaglegraph.known.tables import keyed
from eaglegraph.known.upstream_records import RECORDS, REPOS, Upstream

__all__ = ["BY_ID", "REPOS", "UPSTREAM", "Upstream", "cite", "flag_records", "upstream"]


def flag_records(flags: Iterable[Flag]) -> tuple[Upstream, ...]:
    """The records flags declare, once each (flags set by one change share its record)."""
    return tuple(dict.fromkeys(f.record for f in flags if f.record is not None))


_ALL = (*RECORDS, *flag_records(FLAGS.values()))

UPSTREAM: dict[str, Upstream] = keyed(lambda u: u.ref, *_ALL)
BY_ID: dict[str, Upstream] = keyed(lambda u: u.id, *_ALL)


def upstream(ref: str) -> Upstream:
    """The record for a short ref; a KeyError here is a typo in eaglegraph's own tables."""
    return UPSTREAM[ref]


def cite(change_id: str) -> Upstream:
    """The upstream change or issue with this id: how code outside `known` names one."""
    return BY_ID[change_id]
