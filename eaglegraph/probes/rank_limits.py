"""The supervisor's two limits of a multi-rank run, one record from the command line to the
supervisor (`probes.ranks`): a command declares them once (`--rank-deadline`,
`--rank-timeout`) and passes the record on, never its fields one by one."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class RankLimits:
    """`deadline_s`: no progress this long while a rank waits in a collective, and the ranks
    are stuck; `timeout_s`: the whole run (then every rank is ended, what was measured kept)."""

    deadline_s: float = 60.0
    timeout_s: float = 3600.0

    def within(self, seconds: float) -> RankLimits:
        """The same limits with the whole run also bounded by `seconds` (memdiff: each
        policy's set of ranks within the --timeout of one capture; the smaller wins)."""
        return replace(self, timeout_s=min(self.timeout_s, seconds))
