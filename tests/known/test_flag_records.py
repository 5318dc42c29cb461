"""An engine flag can carry its upstream record and its hazard (issue 23's flag seam):
`known.upstream` and `known.hazards` collect them, so a flag is one row of the profiles."""

from __future__ import annotations

import pytest

from eaglegraph.known.hazard_spec import HazardSpec
from eaglegraph.known.hazards import HAZARDS, flag_hazards
from eaglegraph.known.profiles import FLAGS, Flag
from eaglegraph.known.upstream import UPSTREAM, flag_records
from eaglegraph.known.upstream_records import TABLE, pr

pytestmark = pytest.mark.fast

_CHANGE = pr("test-change", "vllm#1", "a change read for this test", "0.30")
_SPEC = HazardSpec(
    "test-hazard",
    "a buffer read before the change wrote it",
    fix="the change writes it",
    buffers=(("test.buffer", "draft_decode"),),
)


def test_flags_of_one_change_share_one_record() -> None:
    flags = [
        Flag("a", "vllm#1", "first", record=_CHANGE),
        Flag("b", "vllm#1", "second", record=_CHANGE),
        Flag("c", "vllm#2", "third"),
    ]
    assert flag_records(flags) == (_CHANGE,)


def test_a_record_must_be_the_flags_own_ref() -> None:
    with pytest.raises(ValueError, match="not its ref"):
        Flag("a", "vllm#2", "meaning", record=_CHANGE)


def test_a_flags_hazard_takes_its_engine_change_and_name() -> None:
    flag = Flag("padded_buffer", "vllm#1", "meaning", record=_CHANGE, hazard=_SPEC)
    (h,) = flag_hazards([flag, Flag("other", "sglang#3", "no hazard")])
    assert (h.id, h.engine, h.fixed_by, h.flag) == ("test-hazard", "vllm", "vllm#1", flag.name)
    assert (h.mechanism, h.fix, h.buffers) == (_SPEC.mechanism, _SPEC.fix, _SPEC.buffers)


def test_the_registries_hold_the_table_and_every_flags_own_records() -> None:
    assert set(TABLE) <= set(UPSTREAM)
    for f in FLAGS.values():
        assert f.ref in UPSTREAM, f.name  # every flag's change is findable, wherever declared
        if f.hazard is not None:
            assert HAZARDS[f.hazard.id].flag == f.name
