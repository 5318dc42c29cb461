"""Issue 29, sixth round: what a ticket's title and the reporter's acceptance sentences name.

Each test reads a report written for the test (no dev-set text), so it checks the class of
evidence, not one report.
"""

from __future__ import annotations

from eaglegraph.known.triage_categories import Category
from eaglegraph.triage.diagnose import triage_text
from eaglegraph.triage.ticket import read_ticket

LAUNCH = '```\nvllm serve Qwen/Qwen3-8B --speculative-config \'{"method": "eagle3"}\'\n```\n'


def _ticket(title: str, body: str = LAUNCH) -> str:
    return f"{title}\n\n{body}"


def test_a_title_about_the_acceptance_metric_names_an_acceptance_report() -> None:
    """The title is the reporter's one-line subject: about the drafts' acceptance rate or
    length, with no failure named, the report is an acceptance report whatever its verb."""
    for title in (
        "[Bugfix] Fix Foo-2 MTP acceptance rate by keeping the trained head",
        "[Bug]: eagle acceptance length on H100 with the new image",
        "[Bug]: mtp accept rate < 10% on image B7",
        "[Bug]: eagle3 with sp causes an accuracy problem in the drafter model",
    ):
        r = triage_text(_ticket(title))
        assert r.category == Category.ACCEPT, (title, r.scores)
        assert "titled-acceptance" in r.evidence_kinds, (title, r.evidence_kinds)


def test_a_title_that_names_a_failure_beside_the_metric_is_about_the_failure() -> None:
    """A crash, an index error or a deadlock in the title is the subject; `accept_length` as a
    variable is no metric."""
    for title in (
        "[Bug] EAGLE crash from missing accept length handling",
        "[Bug] index out of bounds when accept rate is 0 under DP",
        "[Bug] deadlock: ranks diverge on acceptance length",
        "[Fix] handle accept_length == 0 in the drafter",
    ):
        t = read_ticket(_ticket(title))
        assert "says.acceptance-titled" not in t.facts, title


def test_the_acceptance_metric_in_the_body_is_not_the_title_statement() -> None:
    """Body sentences are context: the title-only statement is read in the title alone."""
    body = "Some context: the acceptance rate was fine before.\n\n" + LAUNCH
    t = read_ticket(_ticket("[Bug]: server does not start with eagle3", body))
    assert "says.acceptance-titled" not in t.facts


def test_an_acceptance_sentence_inside_a_fence_is_the_reporters_statement() -> None:
    """A pasted PR description fenced whole: its bullet saying acceptance fell from 97 % to
    4 % is a sentence (the acceptance-prose signal is narrative), not a log line."""
    body = (
        "```\n- Fix Foo MTP speculative decoding acceptance rate dropping from ~97% to ~4%\n"
        "- Skip weight sharing when the MTP module has its own head\n```\n"
    )
    t = read_ticket(_ticket("[Bugfix] keep the draft's own head", body))
    assert "says.acceptance-drop" in t.facts
    assert triage_text(_ticket("[Bugfix] keep the draft's own head", body)).category == (
        Category.ACCEPT
    )


def test_a_regression_in_the_acceptance_with_words_between_is_a_drop() -> None:
    said = "A refactor introduced a regression in MTP speculative decoding acceptance rates."
    assert "says.acceptance-drop" in read_ticket(_ticket("[Bugfix] chained MTP", said)).facts
    decays = "[Performance]: draft acceptance rate decays with context length"
    assert "says.acceptance-drop" in read_ticket(_ticket(decays)).facts


def test_a_fix_that_steers_spec_decode_off_a_full_graph_names_the_mode() -> None:
    """A fix titled "do not FULL-capture spec-decode batches in backend X" says backend X
    cannot run that mode with speculative decoding: a mode incompatibility, as the engine's own
    refusal would; so does "cannot enable FULL_DECODE_ONLY with mtp" said in Chinese."""
    for title in (
        "[Bugfix] Do not FULL-capture spec-decode batches in the Foo attention backend",
        "Coerce hybrid speculative decode off full decode CUDAGraphs on Bar",
        "[Bug]: 运行Foo时不能同时开启FULL_DECODE_ONLY和mtp投机",
    ):
        assert "says.mode" in read_ticket(_ticket(title)).facts, title
    assert "says.mode" not in read_ticket(_ticket("[Bug]: do not crash on FULL batches")).facts


def test_torchs_expand_error_is_a_shape_error_read_by_its_sizes() -> None:
    """torch's "expanded size of the tensor (A) must match the existing size (B)" is the same
    family as "size of tensor a must match tensor b": widths or a vocabulary name a config
    mismatch (round 5's shape rule), small token counts do not."""
    wide = (
        "```\nRuntimeError: The expanded size of the tensor (1024) must match the existing "
        "size (4096) at non-singleton dimension 1.  Target sizes: [5, 1024].\n```\n"
    )
    r = triage_text(_ticket("[Bug]: draft model run fails", wide))
    assert r.category == Category.CONFIG and "log-shape" in r.evidence_kinds, r.evidence_kinds
    tokens = wide.replace("(1024)", "(5)").replace("(4096)", "(7)")
    assert triage_text(_ticket("[Bug]: draft model run fails", tokens)).category != (
        Category.CONFIG
    )


def test_one_number_of_speculative_tokens_beside_a_crash_is_no_gating() -> None:
    """ "num_spec_tokens=3 | IMA" says what was run; a threshold or two values contrasted say
    the failure depends on the number of speculative tokens."""
    one = "| TP=2 + MTP `num_spec_tokens=3` | `cudaErrorIllegalAddress` on first request |\n"
    assert "says.k-gated" not in read_ticket(_ticket("[Bug]: TP=2 MTP crash", one)).facts
    threshold = "[Bug] EAGLE speculative-num-steps >= 2 crash-loops the scheduler"
    assert "says.k-gated" in read_ticket(_ticket(threshold)).facts
