"""The knowledge package: profiles by version, one id per hazard, and consistent references."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.known import (
    FLAGS,
    HAZARDS,
    PROFILES,
    UPSTREAM,
    engine_profiles,
    get_profile,
    hazard,
    hazard_for_buffer,
    hazards_affecting,
    parse_engine,
    parse_version,
    profile_for_engine,
    profile_for_version,
    resolve_profile,
)
from eaglegraph.known.profiles import FLAG_FIELDS, RELEASES, Profile, Release, predecessors
from eaglegraph.known.upstream import BY_ID, cite

PACKAGE = Path(__file__).resolve().parents[2] / "eaglegraph"


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("vllm==0.24.0", "vllm-0.23"),
        ("vllm 0.24.0", "vllm-0.23"),
        ("vllm==0.25.1", "vllm-0.25"),
        ("vllm==0.26.0", "vllm-0.26"),
        ("vllm==0.27.0", "vllm-0.27"),
        ("vllm==0.28.0", "vllm-0.28"),
        ("vllm==0.29.0", "vllm-0.29"),
        ("vllm==0.31.0", "vllm-0.30"),
        ("vllm==0.32.0", "vllm-0.32"),
        ("vllm==0.33.0", "vllm-current"),
        ("vLLM==0.22.1rc1.dev23+g6bdabbad5", "vllm-0.22"),
        ("vllm==0.21.0", "vllm-0.22"),
        ("vllm=0.20.2", "vllm-0.20"),
        ("vllm==0.19.1", "vllm-pre-39773"),
        ("sglang==0.5.9", "sglang-0.5.8"),
        ("sglang v0.5.4.post1", "sglang-0.5.4"),
        ("sglang==0.5.14", "sglang-0.5.14"),
        ("sglang==0.5.20", "sglang-0.5.20"),
        ("sglang==0.5.23", "sglang-current"),
        ("sglang==0.5.3", "sglang-0.5.3"),
        ("sglang==0.4.5", "sglang-pre-10892"),
    ],
)
def test_engine_versions_pick_the_profile_that_reproduces_them(spec: str, name: str) -> None:
    choice = profile_for_engine(spec)
    assert choice.name == name
    assert parse_version(spec.split("=")[-1].split()[-1]) in choice.profile.versions
    assert resolve_profile(spec).name == name


def test_bare_versions_need_their_engine() -> None:
    assert profile_for_engine("0.20.1", engine="vllm").name == "vllm-0.20"
    assert profile_for_engine("0.5.2", engine="sglang").name == "sglang-pre-10892"
    assert parse_engine("v0.5.9", "sglang").text == "0.5.9"
    for bad in ("0.24.0", "tensorrt==1.0", "vllm==latest", ""):
        with pytest.raises(BadInput):
            profile_for_engine(bad)
    with pytest.raises(BadInput, match="is vllm, not sglang"):
        parse_engine("vllm==0.24.0", "sglang")
    with pytest.raises(BadInput, match="unknown behavior"):
        resolve_profile("vllm-0.99")


def test_unknown_versions_and_engines_fall_back_to_current_semantics() -> None:
    assert profile_for_version("vllm", None).name == "vllm-current"
    assert profile_for_version("sglang", "garbage").name == "sglang-current"
    assert profile_for_version("trtllm", "1.0").name == "vllm-current"
    old = profile_for_version("vllm", "0.19.1", runner="mrv2")
    assert old.name == "vllm-pre-39773" and old.why.endswith("(MRV2)")
    assert "closest modelled" in profile_for_version("vllm", "0.19.1").why


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_each_engine_profiles_cover_every_release_once(engine: str) -> None:
    profiles = sorted(engine_profiles(engine), key=lambda p: p.versions.since or (0, 0, 0))
    assert profiles[0].versions.since is None and profiles[-1].versions.until is None
    for older, newer in itertools.pairwise(profiles):
        assert older.versions.until == newer.versions.since, (older.name, newer.name)
        assert not older.versions.overlaps(newer.versions)
    assert get_profile(None, engine) is profiles[-1]


def test_seed_profiles_keep_their_semantics() -> None:
    """The named profiles reproduce the seed bugs: their flags must not drift."""
    want = {
        "vllm-pre-39773": (False, False, False, True, True, True),
        "vllm-0.20": (True, True, False, True, True, True),
        "vllm-0.22": (True, True, True, True, True, True),
        "vllm-pre-50065": (True, True, True, False, False, True),
        "vllm-current": (True, True, True, False, True, True),
        "sglang-pre-10892": (True, True, True, False, True, False),
        "sglang-current": (True, True, True, False, True, True),
    }
    seed = (
        "draft_decode_mode_clamp",
        "pad_last_token_indices",
        "reuse_target_attn_state",
        "dedicated_eagle_pool",
        "dflash_padded_query_buffers",
        "reset_positions_on_padded_replay",
    )
    for name, flags in want.items():
        assert tuple(PROFILES[name].flags()[f] for f in seed) == flags, name
    assert {p.name for p in PROFILES.values() if p.default_pool == "dedicated"} == {
        "vllm-pre-39773",
        "vllm-0.20",
        "vllm-0.22",
    }


CURRENT_SEMANTICS = {f.name: f.default for f in dataclasses.fields(Profile) if f.name in FLAGS}


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.name)
def test_each_profile_is_its_predecessor_plus_its_declared_delta(release: Release) -> None:
    """A release entry names exactly the flags that differ from its predecessor, each one of
    its own engine: no silent carry-over, no no-op delta, no vLLM release moving an SGLang flag."""
    before = predecessors()[release.name]
    base = PROFILES[before].flags() if before else CURRENT_SEMANTICS
    profile = PROFILES[release.name]
    changed = {f: on for f, on in profile.flags().items() if on != base[f]}
    assert changed == release.delta, release.name
    assert all(FLAGS[f].engine == release.engine for f in release.delta), release.name
    assert profile.engine == release.engine and profile.refs == release.refs
    assert before is None or PROFILES[before].engine == release.engine


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_each_engine_mainline_runs_in_release_order_to_current_semantics(engine: str) -> None:
    """Replaying an engine's deltas from its oldest profile ends at the `Profile` defaults, the
    newest profile, with each release starting where its predecessor ends."""
    before = predecessors()
    mainline = [r.name for r in RELEASES if r.engine == engine and r.branch_of is None]
    assert before[mainline[0]] is None
    for older, newer in itertools.pairwise(mainline):
        assert before[newer] == older
        assert PROFILES[older].versions.until == PROFILES[newer].versions.since, newer
    assert PROFILES[mainline[-1]].flags() == CURRENT_SEMANTICS
    assert get_profile(None, engine).name == mainline[-1]


def test_a_release_delta_names_real_flags_once() -> None:
    with pytest.raises(ValueError, match="no_such_flag"):
        Release("x", "vllm", "", PROFILES["vllm-current"].versions, (), "", on=("no_such_flag",))
    with pytest.raises(ValueError, match="fa4_full_graphs"):
        Release(
            "x",
            "vllm",
            "",
            PROFILES["vllm-current"].versions,
            (),
            "",
            on=("fa4_full_graphs",),
            off=("fa4_full_graphs",),
        )


def test_every_flag_is_a_profile_field_tied_to_a_known_change() -> None:
    assert set(FLAGS) == set(FLAG_FIELDS)
    for flag in FLAGS.values():
        assert flag.ref in UPSTREAM and flag.engine in ("vllm", "sglang")
    for profile in PROFILES.values():
        assert all(ref in UPSTREAM for ref in profile.refs), profile.name
        assert profile.version_note


def test_hazards_have_one_id_and_resolve_their_references() -> None:
    for h in HAZARDS.values():
        assert h.ref in UPSTREAM, h.id
        assert all(r in UPSTREAM for r in h.refs)
        assert h.flag is None or h.flag in FLAGS
        assert h.fix_text or h.fixed_by is None, h.id
    # the plan's prediction and the probe's observation of one mechanism are one hazard
    decode = hazard("piecewise-draft-decode")
    assert hazard_for_buffer("eagle.kv_indptr", "draft_decode") is decode
    assert hazard_for_buffer("eagle.last_page_len", "draft_decode") is decode
    assert hazard_for_buffer("target.kv_indptr", "target") is None
    assert hazard_for_buffer("eagle.last_token_indices", "draft_prefill") is hazard(
        "unpadded-last-token-indices"
    )
    assert decode.fix_text is not None and decode.fix_text.startswith("use vLLM ≥ 0.20 (PR #")
    assert decode.affected is not None and parse_version("0.19.9") in decode.affected
    assert parse_version("0.20.0") not in decode.affected
    assert decode.affects(parse_version("0.19.1")) is True
    assert decode.affects(parse_version("0.22.0")) is False
    assert decode.affects(None) is None and hazard("mode-downgraded").affects((0, 22, 0)) is None
    assert decode.fixed_in == "vLLM ≥ 0.20"
    old = {h.id for h in hazards_affecting("vllm", (0, 19, 1))}
    assert {"piecewise-draft-decode", "unpadded-last-token-indices"} <= old
    assert {h.id for h in hazards_affecting("vllm", (0, 22, 0))} == {"dedicated-eagle-pool"}
    assert hazards_affecting("vllm", (0, 33, 0)) == []
    assert [h.id for h in hazards_affecting("sglang", (0, 5, 3))] == ["stale-padded-positions"]


def test_upstream_ids_and_refs_are_unique() -> None:
    assert len(BY_ID) == len(UPSTREAM)
    for u in UPSTREAM.values():
        assert cite(u.id) is u
        assert re.fullmatch(r"(vllm|sglang)(#\d+|@\d+\.\d+\.\d+)", u.ref)
        assert u.full_ref.endswith(re.split("[#@]", u.ref)[1]) and "/" in u.full_ref
        assert u.kind != "release" or u.released_in is not None


def test_nothing_outside_known_spells_an_upstream_reference() -> None:
    pattern = re.compile(r"#\d{4,5}\b|\bPR #|vllm#|sglang#", re.IGNORECASE)
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "known" in path.relative_to(PACKAGE).parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_known_is_the_bottom_layer() -> None:
    pattern = re.compile(r"^\s*(?:from|import)\s+eaglegraph\.(\w+)", re.MULTILINE)
    for path in (PACKAGE / "known").glob("*.py"):
        used = set(pattern.findall(path.read_text(encoding="utf-8")))
        assert used <= {"known", "errors"}, (path.name, used)
