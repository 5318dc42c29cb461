"""Triage reasoning as data: what reporters say, and which facts point at which failure class.

Two tables. `STATEMENTS` turns a reporter's own words (an issue title, prose around the pasted
log, a table of what works and what fails) into named facts `says.*`. `RULES` weigh facts
into categories; a rule fires only when every fact in `needs` holds, at least one of `any_of`
holds (when given), and none of `unless` does. The facts a log itself yields are computed by
`eaglegraph.triage.facts` from the scan: `mech.*` (the kind of fault of the first root error),
`phase.*` (capture / serving / startup / stuck), `fw.*`, `draft.*`, `ctx.*`.

The rules describe mechanisms, not reports: an index assert is an out-of-bounds read whatever
the phase; an asynchronous fault takes its class from the phase and the context; a reporter's
A/B (works with graphs off, k=4 stable and k=5 crashes) moves the verdict the way the mechanism
says it should. `MISSING` says, per class, what evidence would make a weak verdict firm.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from eaglegraph.known.triage_categories import Category

STALE, OOB, OOM, CAPTURE, MODE, CONFIG, ACCEPT, HANG, OTHER = Category


@dataclass(frozen=True)
class Statement:
    """A reporter's claim, recognised by a case-insensitive regex over one line of prose.

    `title_only`: read in the issue title alone, the reporter's one-line summary of what the
    report is about; the same words in a sentence of the body may be context, not the subject.
    """

    id: str
    pattern: str
    why: str
    title_only: bool = False


# A statement preceded by one of these within a few words is a denial ("this isn't a hang").
NEGATION = (
    r"(?:\bnot?\b|n't|\bnever\b|\bwithout\b|\bnor\b|\bor\b|\brules? out\b|\bruled out\b|"
    r"\bexclud\w*)[\w\s,]{0,12}$"
)


@dataclass(frozen=True, kw_only=True)
class Conditions:
    """Facts that must hold: all of `needs`, one of `any_of` (when given), none of `unless`."""

    needs: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()

    def holds(self, facts: Set[str]) -> bool:
        return (
            all(f in facts for f in self.needs)
            and (not self.any_of or any(f in facts for f in self.any_of))
            and not any(f in facts for f in self.unless)
        )


@dataclass(frozen=True)
class Rule(Conditions):
    """Weight for `category` when its conditions hold."""

    id: str
    category: Category
    weight: float
    why: str = ""
    # A statement in the issue title weighs more (TITLE_BONUS) when it names the class; a rule
    # that rests on what a report lacks (no spec decode, no log) gains nothing from the title.
    titled: bool = True


def when(facts: str) -> Conditions:
    """Conditions as one string: `fact` must hold, `?fact` one of these must, `!fact` none may."""
    fields: dict[str, list[str]] = {"needs": [], "any_of": [], "unless": []}
    for fact in facts.split():
        field = {"?": "any_of", "!": "unless"}.get(fact[0], "needs")
        fields[field].append(fact.lstrip("?!"))
    return Conditions(**{k: tuple(v) for k, v in fields.items()})


def one_of(*facts: str) -> str:
    return " ".join(f"?{f}" for f in facts)


def none_of(*facts: str) -> str:
    return " ".join(f"!{f}" for f in facts)


# A rule that rests on what a report lacks: a statement in the title adds nothing to it.
UNTITLED = False
RuleHead = tuple[str, Category, float, str] | tuple[str, Category, float, str, bool]


def rule_table(*rows: RuleHead | str) -> tuple[Rule, ...]:
    """Rules written two entries each: `(id, category, weight, when[, titled])`, then the why.

    `when` lists the facts that must all hold, `?fact` those of which one must, `!fact` those
    that must not (see `when`)."""
    out: list[Rule] = []
    for head, why in zip(rows[::2], rows[1::2], strict=True):
        assert isinstance(head, tuple) and isinstance(why, str), (head, why)
        rid, category, weight, facts, *titled = head
        out.append(Rule(rid, category, weight, why, *titled, **vars(when(facts))))
    return tuple(out)


# "mismatch" that names a count of the step (a batch size, a token or sequence count) is
# bookkeeping between the engine's own tensors, not the draft's width disagreeing with the
# target's: sglang#17076's "the fa3 implementation will report a mismatch in input batch size"
# (padded inputs beside unpadded sequence lengths when the batch cannot run a graph) read as a
# config mismatch at 0.91, and its maintainers filed it under neither.
_COUNT = r"(?:batch(?:[_ ]size)?|bs|token(?:s|[_ ]count)?|num_tokens|seq_?lens?|length)"
_WIDTH_MISMATCH = (
    r"(?<!batch size )(?<!batch_size )(?<!batch )(?<!token )(?<!tokens )(?<!seqlen )"
    r"(?<!seq_len )(?<!seq_lens )(?<!length )(?<!shape )(?<!shapes )mismatch(?:es|ed)?"
    r"(?! (?:in|of|between) (?:the )?(?:input |padded |real )?" + _COUNT + r"\b)"
)
_FAULT = (
    r"illegal memory access|illegal ?address|cudaErrorIllegal\w*|CUDA_ERROR_ILLEGAL\w*|\bIMA\b|"
    r"segfault|segmentation fault|SIGSEGV|misaligned address|unspecified launch failure"
)
_NO_GRAPH = (
    r"(?:cudagraph_mode[\"'=: ]*NONE|disable[-_ ]cuda[-_ ]graphs?|without (?:cuda[- ]?)?graphs?|"
    r"(?:cuda[- ]?)?graphs? (?:disabled|off)|no[- ]cuda[- ]?graphs?)"
)
_OK = r"(?:works?|worked|fine|passes|pass|correct|stable|no crash|avoids?|goes away|absent)"
KNOB = (
    r"(?:\bk\b|num_speculative_tokens|num_spec_tokens|speculative[-_]num[-_]steps|num[-_]steps|"
    r"\bsteps\b|draft[- ](?:depth|len(?:gth)?)|\bdepth\b|max_draft_len)"
)

# A CUDA-graph capture, as reporters name it ("CUDA graph capture", "capture of the draft
# graphs", "draft decode capture", "stream capture"); "routed expert capture" is not one.
_CAPTURE_WORD = r"captur(?:e|es|ed|ing)?\b(?![ _-]sizes?)"
GRAPH_CAPTURE = (
    r"(?:(?:(?:cuda[- ]?)?graphs?|cudagraphs?)[- ](?:\w+[- ])?" + _CAPTURE_WORD + "|"
    r"captur\w* (?:of )?(?:the )?(?:\w+ )?(?:cuda[- ]?)?graphs?|stream " + _CAPTURE_WORD + "|"
    r"(?:draft|target|decode|prefill|verify|speculator)[- ](?:\w+[- ])?" + _CAPTURE_WORD + "|"
    # vllm-ascend's and xLLM's graph mode (aclgraph) and the Chinese "into the graph" (入图)
    r"\baclgraph\w*|AclGraph::capture|入图)"
)

# The drafts' acceptance as a metric, in words ("acceptance rate", "accept length", "35 %
# acceptance", Chinese 接受率), not a variable (`accept_length`) or "accepted tokens"; a
# draft's accuracy is the same measure (how often the target keeps its tokens), the target's
# accuracy is not.
ACCEPTANCE_METRIC = (
    r"(?<![\w])accept(?:[ae]nce)?[ -](?:rates?|lengths?|len)\b|\bdraft accept[ae]nce\b|"
    r"\d ?% (?:\w+ )?accept[ae]nce|接受率|\bdraft(?:er)?(?: model)?(?:'s)? accuracy|"
    r"accuracy (?:\w+ ){0,2}(?:in|of) (?:the )?draft(?:er)?\b"
)
# Words that name a failure: a title holding one is about that failure, not a metric.
_FAILURE_WORDS = (
    r"crash|error|fail|illegal|\bIMA\b|\bOOB\b|out[- ]of[- ]bounds|assert|deadlock|\bhangs?\b|"
    r"\bhung\b|segfault|fault|exception|\bOOM\b|out of memory|abort"
)

# Speculative decoding by the names reporters use for it, and the engine modes and features it
# meets (tests/triage/data/LABELLING.md: a failure that needs both together is a mode
# incompatibility; a feature that fails on its own is not).
_SPEC = (
    r"(?:spec\w*(?:[ -]decod\w*)?|eagle[- ]?\d?|\bmtp\b|nextn|draft(?: model)?s?|n-?gram|"
    r"medusa|dflash|speculators?)"
)
_FEATURE = (
    r"(?:pipeline[- ]parallel\w*|\bPP\b|context[- ]parallel\w*|\bCP\b|\bLoRA\b|"
    r"chunked[- ]prefill|disaggregat\w*|\bPD\b|DP[- ]atten\w*|attention[- ]DP|"
    r"expert[- ]parallel\w*|\bEP\b|structured[- ]output\w*|guided decoding|multimodal|backend|"
    r"AITER|ROCm|(?-i:\bFULL(?:_\w+)?\b)|PIECEWISE|cuda ?graphs?|torch\.compile|prefix[- ]caching)"
)
# "compatibility" as a problem's name ("fix MTP and CP compatibility"), never "is compatible".
_UNSUPPORTED = (
    r"(?:not (?:yet )?supported|unsupported|not compatible|incompatib\w*|compat[ai]bilit(?:y|ies))"
)
# Running out of memory in so many words: `says.oom` widens it to memory in general (a budget,
# a pool, a footprint), `says.out-of-memory` to a failed allocation only.
_OUT_OF_MEMORY = r"\bOOM(?:s|ed|ing)?\b|out of memory|OutOfMemory"

STATEMENTS: tuple[Statement, ...] = (
    Statement("says.fault", _FAULT, "the reporter names an asynchronous CUDA fault"),
    Statement(
        "says.oob",
        r"index out of bounds|out[- ]of[- ]bounds|\bOOB\b|out[- ]of[- ]range(?! address)|"
        r"index\s*<\s*\d+|(?<!enable )device[- ]side assert|IndexError|index overflow|"
        r"off[- ]by[- ]one|"
        r"invalid token(?: id)?\b|"
        r"(?:reads?|writes?|past|beyond) (?:one \w+ )?(?:beyond|past) (?:the end|\w+\.shape)",
        "an index checked against a bound: an out-of-bounds read",
    ),
    Statement(
        "says.oom",
        _OUT_OF_MEMORY + r"|excessive memory|"
        r"(?:extra|additional|peak) (?:peak )?(?:GPU )?memory|"
        r"(?:uses?|takes?|costs?|consum\w+|allocat\w+|reserv\w+)\s+(?:~|about |around )?"
        r"\d+(?:\.\d+)?\s*[GM]i?B\b|\d+(?:\.\d+)?\s*[GM]i?B (?:of )?(?:extra |more )?memory|memory (?:leak|usage|allocation|"
        r"over-?allocation|blow-?up|pressure|growth|footprint|estimat\w*)|"
        r"(?:graph )?memory pool|pool (?:conflict|aliasing)|KV cache (?:over-?allocation|"
        r"shr[iu]nk\w*|budget)|more memory than|(?:graph|pool) memory|waste\w* memory|"
        r"large[^.;]{0,20}memory|memory (?:consumption|overhead|waste)|"
        # a KV or draft pool sized or estimated wrong
        r"(?:KV[- ]?cache|KV pool|draft (?:KV )?pool)s? (?:estimat\w*|sizing|accounting)|"
        r"\bsiz(?:e|es|ing) (?:the )?(?:\w+ ){0,2}(?:KV[- ]?cache|KV pool|draft (?:KV )?pool)",
        "memory: an allocation failed, a budget was wrong, or a graph pool was shared badly",
    ),
    Statement(
        "says.out-of-memory",
        _OUT_OF_MEMORY + r"|(?:failed|unable) to allocate|"
        r"not enough (?:GPU |device )?memory|insufficient (?:GPU |device )?memory",
        "an allocation failed: the reporter names running out of memory, not memory in general "
        "(a graph's memory check, a pool's reservation)",
    ),
    Statement(
        "says.capture-failed",
        r"(?:fail|crash|error|abort|assert|illegal|\bIMA\b|exception|fault|OOM)\w*[^.;]{0,70}?"
        r"\b(?:during|while|in|at|when)\b[^.;]{0,40}?"
        + GRAPH_CAPTURE
        + "|"
        + GRAPH_CAPTURE
        + r"[^.;]{0,50}?(?:fails?|failed|failure|crash\w*|errors?\b|aborts?|报错|失败|崩溃)|"
        r"fails? (?:\w+ ){0,4}(?:cuda[- ]?)?graph (?:\w+ ){0,2}capture|"
        r"(?:cuda[- ]?)?graph (?:build|building|construction|creation|init\w*)[^.;]{0,20}"
        r"(?:fail\w*|error)|\bfix(?:es|ed)?\b[^.;]{0,50}" + GRAPH_CAPTURE,
        "the failure happens while graphs are captured",
    ),
    Statement("says.replay", r"\breplay", "the failure happens when a captured graph replays"),
    Statement(
        "says.shrink",
        r"batch(?: size)? (?:shrinks?|shrinking|drops?|decreases?)|running (?:batch|requests?)"
        r"[^.;]{0,30}(?:shrinks?|drops?|decreases?|falls?)|requests? finish|raw_bs|"
        r"padd(?:ed|ing) (?:rows?|replay|batch|positions?|slots?|requests?|entries)|"
        r"graph (?:bucket|bs)|(?:others?|requests?|some) (?:have )?(?:already )?finished|"
        r"does(?:n't| not) (?:exactly )?match (?:a|any) (?:cuda[- ]?graph )?captured? size",
        "the batch got smaller than the captured one: padding rows are replayed",
    ),
    Statement(
        "says.load-fails",
        r"(?:cannot|can't|can not|could not|couldn't|fail(?:s|ed)? to|unable to) load|"
        r"load(?:ing)? (?:error|fail\w*)|error (?:when |while )?loading|"
        r"fails? to (?:start|initiali[sz]e) (?:the )?(?:draft|eagle|mtp)|"
        # The draft's weights: a fix of their loading, a loading inconsistency, a weight the
        # checkpoint lacks (vllm#21941 "Fix MTP weight loading", a fork's "failed with a
        # missing serialized weight"): the draft does not load for this target.
        r"\bfix\w*[^.;]{0,20}\b(?:draft|eagle\d?|mtp|speculat\w*)\b[^.;]{0,10}weights? load\w*|"
        r"weights? load\w* (?:inconsisten\w*|bug|issue|problem|mismatch)|"
        r"missing (?:serialized |checkpoint )?(?:draft |mtp |eagle )?weights?\b",
        "the draft does not load for this target",
    ),
    Statement(
        "says.refused",
        r"\w*NotSupported\w*(?:Error|Exception)\b|"
        r"\b(?:is|are) not (?:yet )?supported (?:for|with|when|together|in combination)\b",
        "the engine refuses a combination of features by design (lmstudio#1519: speculative "
        "decoding 'is not supported for batched MLX models'): a load that stops there is no "
        "weight or width of the draft disagreeing with the target",
    ),
    Statement(
        "says.mismatch",
        _WIDTH_MISMATCH + r"|hidden[_ ]size|target_hidden_size|vocab(?:_size| size)|head_dim|"
        r"draft_vocab|does not match|doesn't match|"
        r"not a valid (?:\w+ )?draft|wrong draft|draft[^.;]{0,20}(?:not|in)compatible|"
        r"does(?:n't| not) fit (?:with |in(?:to)? )?(?:the )?(?:target|draft|model|buffer|logits)|"
        r"too (?:small|large) for|hidden[_ ]states?[_ ]size",
        "a width, vocabulary or shape of the draft disagrees with the target",
    ),
    Statement(
        "says.quoted-width-error",
        r"mat1 and mat2 shapes cannot be multiplied|size mismatch for [\w.]+|"
        r"copying a param with shape|Attempted to load weight \(|"
        r"expanded size of the tensor \(\d+\) must match the existing size",
        "the reporter quotes an engine error between a weight or width and what it meets: "
        "the draft's sizes are not the ones the engine built (the same lines "
        "`triage_signals` reads in a log, quoted in a title or a sentence)",
    ),
    Statement(
        "says.mode",
        r"downgrad\w*|silently (?:falls? back|disables?)|loses? (?:all )?(?:cuda[- ]?)?graphs|"
        r"(?:falls?|falling|fell) ?(?:back )?(?:in)?to (?:the )?(?:eager|PIECEWISE|NONE)|"
        r"fall-?back to (?:eager|PIECEWISE|NONE)|(?:cannot|can't|unable to|fails? to) "
        r"(?:reach|use|run|enable|get) (?:FULL|PIECEWISE|(?:cuda[- ]?)?graphs)|"
        r"(?:forced|falls?|falling) (?:onto|into|out of) (?:the )?(?:eager|captured|cuda)|"
        r"(?:out of|outside) the (?:captured )?(?:cuda[- ]?)?graph path|"
        r"(?:graph_mode|cudagraph_mode|graph mode)\W{0,4}(?:FULL\w*|PIECEWISE)[^.;]{0,40}"
        r"(?:fail\w*|error|crash\w*|not work)|(?:error|problem|fail\w*|crash\w*)[^.;]{0,40}"
        r"\bin (?:FULL\w*|PIECEWISE) mode|(?:only|hard-?coded to|pinned to|pins?|limited to|"
        r"restricted to)[^.;]{0,30}\b(?:PIECEWISE|FULL)\b|\b(?:PIECEWISE|FULL)[- ]only|"
        r"runs? eager\w*(?: every| each| on)|never dispatch\w*|"
        r"not supported with spec|(?:FULL|PIECEWISE|FULL_DECODE_ONLY|FULL_AND_PIECEWISE)"
        r"[^.;]{0,40}(?:not supported|unsupported|incompatible)|(?:unsupported|incompatible)"
        r"[^.;]{0,20}(?:cuda ?graph|cudagraph)[_ ]mode|"
        r"(?:full|piecewise)[- ](?:cuda[- ]?graphs?|cudagraphs?) support|"
        r"support (?:for )?(?:full|piecewise) (?:cuda[- ]?graphs?|cudagraphs?)|decode-only full|"
        r"(?:do not|don't|never|avoid|skip|coerce\w*)[^.;]{0,40}?\b(?:FULL|PIECEWISE)"
        r"(?:[- _](?:DECODE_ONLY|decode))?[- _](?:cuda[- ]?graphs?|cudagraphs?|captur\w*|dispatch)|"
        r"(?:不能|无法)(?:同时)?(?:开启|启用|使用|打开)?\s*(?:FULL\w*|PIECEWISE)|"
        # the engine resolves the wrong attention backend for spec decode (LABELLING.md's
        # narrow mode class: a mis-resolved backend)
        r"(?:attention|backend|attn|_mha)[^.;\n]{0,20}auto-?select\w*|"
        r"auto-?select\w*[^.;\n]{0,30}(?:attention|backend)|"
        # a fix that turns the draft's graphs on or off for a backend or a mode
        r"(?:skip|disabl|enabl)\w* (?:the )?(?:[\w-]+ ){0,2}(?:cuda[- ]?graphs?|cudagraphs?) "
        r"(?:for|on|when|under) [^.;\n]{0,30}(?:draft\w*|eagle|spec\w*|\bmtp\b|backend|"
        r"FlashAttention|FlashInfer|eager)",
        "the engine cannot run the requested graph mode for this backend or draft (a fix that "
        "steers spec decode off a FULL or PIECEWISE graph says the same)",
    ),
    Statement(
        "says.corruption",
        r"corrupt\w*|garbage|garbl\w*|gibberish|degenerat\w*|repetition loops?|token loops|"
        r"repeated tokens|wrong (?:outputs?|tokens|answers|results)|nonsense|"
        r"accuracy (?:drops?|degrad\w*)|output (?:truncat|quality)\w*|"
        # outputs that differ from the target's alone, or a benchmark's score that falls
        # (LABELLING.md: silent wrong output is an acceptance regression)
        r"\b(?:incorrect|inconsistent) (?:outputs?|results|responses|generations?|answers)|"
        r"\boutputs? (?:is|are|was|were) (?:inconsistent|incorrect)|"
        r"(?:lower|poor|degraded) quality|quality (?:drops?|degrad\w*|regress\w*)|"
        r"tokens? seems? (?:to be )?random|"
        r"accuracy (?:decreas\w*|dropped|declin\w*|regress\w*|falls|fell)|"
        # fourteenth round: the same silent failure in other words (greedy output changed by
        # spec decode, a silent wrong read, truncated output, an accuracy loss, a sampling
        # setting spec decode does not apply)
        r"(?<!without )(?:chang\w*|alter\w*) (?:the )?(?:greedy )?outputs?\b|"
        r"\boutputs? diverg\w*|"
        r"\bsilent(?:ly)? (?:\w+ ){0,3}(?:wrong|incorrect|corrupt\w*|torn|garbage)|"
        r"(?:wrong|incorrect) [^.\n]{0,60}(?:with no|without(?: an| any)?) (?:error|crash)|"
        r"truncat\w* (?:the )?(?:\w+ )?(?:output|reasoning|response)s?\b|"
        r"accura\w*y loss|accurcy loss|loss (?:of|in) accuracy|"
        r"(?:logit_bias|min_p|top_p|top_k|frequency[ _]penalty|presence[ _]penalty|"
        r"repetition[ _]penalty|sampling (?:settings|param\w*))[^.\n]{0,50}"
        r"(?:not (?:be |being )?appl\w*|ignored|(?:does not|doesn't|do not|don't) "
        r"(?:seem to )?(?:work|apply|take effect)|not respected)",
        "a silent failure: outputs are wrong, nothing crashes",
    ),
    Statement(
        "says.acceptance-drop",
        r"acceptance[^.;|]{0,20}\|?\s*\**0\.0+\b|"
        r"acceptance[- ]?(?:rate |length |len )?(?:drops?|fell|falls|collapses?|is (?:0|zero)|"
        r"cliff)|(?:regression|drop|decrease|decline)s? in (?:the )?(?:[\w-]+ ){0,4}acceptance|"
        r"acceptance[^.;]{0,40}"
        r"(?:lower than|regress\w*|worse than|decreas\w*)|accept_len\w* (?:drops|falls|is) "
        r"(?:to )?(?:exactly )?1\.0|"
        r"\b0 ?% (?:\w+ ){0,2}accept[ae]nce|(?:very )?low acceptance|"
        r"(?:worse|lower|poor|reduced|degraded)\w* (?:\w+ ){0,2}accept[ae]nce|"
        r"(?:shorter|smaller|lower) (?:\w+ ){0,2}accept(?:ed|ance)?[ _](?:length|len)\b|"
        r"(?:better|higher) accept[ae]nce[^.;]{0,40}\bthan\b|"
        r"accept[ae]nce (?:rate|length)s?[^.;]{0,20}(?:drops?|dropped|fell|falls|decreas\w*|"
        r"decay\w*|declin\w*)|"
        r"接受率[^。；,，]{0,6}(?:为\s*0|下降|降低|很低|低)|"
        r"accept[ae]nce (?:(?:rate|length)s? )?(?:is |are |was |were )?(?:very |too |extremely )?"
        r"low|"
        # A fix that raises acceptance ("... has increased from 10% to 50%") fixes a low one.
        r"accept[ae]nce (?:rate|length)s?[^.;]{0,40}\b(?:increas\w*|improv\w*|ris\w*|boost\w*) "
        r"from\b|"
        r"\bfix\w*\b[^.;]{0,30}\baccept(?:ance)?[ _](?:rate|length|len)\b|"
        r"(?:match\w*|accept\w*) tokens? (?:is |are )?(?:always )?(?:0|zero)\b|"
        r"no (?:draft )?tokens? (?:is |are )?ever accepted|"
        r"\baccept(?:ance)?[ _](?:rate|length|len)\b[^.;]{0,30}"
        r"(?:drops?|dropped|fell|falls|lower|decreas\w*|regress\w*|degrad\w*)",
        "the drafts are accepted less often than they were or should be, nothing crashes "
        "(the maintainers file it as an acceptance regression; 'garbage output' they file by "
        "its mechanism)",
    ),
    Statement(
        "says.acceptance-titled",
        r"^(?!.*(?:" + _FAILURE_WORDS + r")).*?(?:" + ACCEPTANCE_METRIC + r")",
        "the title is about the drafts' acceptance (its rate or length) and names no failure: "
        "the report is an acceptance report, whatever the verb (dev sets: 15 of 15 such titles "
        "were filed as acceptance regressions; the titles that named the metric beside a crash, "
        "an index error or a deadlock were filed by that failure)",
        title_only=True,
    ),
    Statement(
        "says.draft-config-titled",
        r"(?:draft|\bMTP\b|eagle\d?|speculat\w*)[^.\n]{0,40}(?:model mapping|architecture|"
        r"\barch\b|checkpoint|model path|n_predict)|"
        r"(?:model mapping|architecture|\barch\b|checkpoint)[^.\n]{0,30}(?:draft|\bMTP\b|eagle)|"
        # a draft's model_type missing from an allow-list, a draft config field missing
        r"model_type[^.\n]{0,40}(?:white-?list|allow-?list|not recogni[sz]ed)|"
        r"(?:missing|not in|absent from)[^.\n]{0,40}(?:model_type|allow-?list|white-?list)|"
        r"missing [`'\"]?\w+_config\b|\bspeculators? config\b",
        "the title is about how the engine finds or reads the draft (its architecture, model "
        "mapping, checkpoint, path or n_predict): a draft the engine does not recognise or read "
        "right is a config mismatch (LABELLING.md; 4 of 6 such titles were filed so, the other "
        "two beside stronger evidence of acceptance and capture)",
        title_only=True,
    ),
    Statement(
        "says.slowdown",
        r"(?:latency|throughput|decode speed|tok/s|tokens/s)[^.;]{0,30}"
        r"(?:regress\w*|drops?|dropped|worse|lower)|"
        r"(?:regress\w*|slower|slowdown|drops?)[^.;]{0,30}(?:latency|throughput|decode speed)|"
        r"slower than (?:without|no|the baseline)|\d+\s*%\s*(?:latency |throughput )?regression|"
        r"\bno speed-?up|(?:not|never) (?:provide|give|bring|get|see)s? (?:any |a )?speed-?up|"
        r"speed-?up[^.;]{0,40}(?:only|(?:does not|doesn't|did not|didn't|fails? to) reach)|"
        r"decreas\w* (?:the )?performance|performance (?:drops?|degrad\w*|regress\w*)|"
        r"(?:speed|throughput) (?:was |is )?significantly (?:lower|slower)|"
        r"\bno (?:acceleration|speed(?:-?up)? (?:gain|benefit|improvement))|"
        r"\d+(?:\.\d+)?\s*[x×]\s*slower|"
        r"slower than (?:the )?(?:vanilla|baseline|plain|non-?spec\w*|normal)|"
        r"discrepanc\w* (?:in|of|between) (?:the )?speed-?ups?|"
        r"(?:no|not|doesn'?t|does not|didn'?t|did not) (?:show |see |get |give |bring |provide )?"
        r"(?:any )?(?:throughput|speed|performance|latency) (?:improvement|gain|benefit|boost)",
        "speculative decoding runs but gains nothing or runs slower, and nothing fails: the "
        "drafts pay for less than they cost",
    ),
    Statement(
        "says.hang",
        r"\bhangs?\b|hanging|\bhung\b|deadlock\w*|\bstuck\b|freez\w*|\bfrozen\b|"
        r"never returns?|not responding|no response|stops? responding",
        "a step never returns",
    ),
    Statement(
        "says.eager-works",
        r"enforce[-_ ]eager[^.;]{0,40}?" + _OK + r"|" + _OK + r"[^.;]{0,30}?enforce[-_ ]eager|"
        r"eager (?:mode |draft )?(?:works|does not crash|is fine)",
        "the failure goes away without torch.compile and graphs",
    ),
    Statement(
        "says.nograph-works",
        _NO_GRAPH + r"[^.;|]{0,60}?" + _OK + r"|" + _OK + r"[^.;|]{0,40}?" + _NO_GRAPH,
        "the failure goes away with CUDA graphs off: the graphs are involved",
    ),
    Statement(
        "says.nograph-fails",
        _NO_GRAPH + r"[^.;]{0,40}?(?:still|also) (?:crash|fail|error)\w*",
        "the failure stays with CUDA graphs off: graphs are not the cause",
    ),
    Statement(
        "says.k-gated",
        KNOB + r"\s*(?:>=|>|≥)\s*\d[^.;]{0,60}?(?:crash|fail|error|IMA|illegal)|"
        r"(?:crash|fail|error|IMA|illegal)\w*[^.;]{0,40}?" + KNOB + r"\s*(?:>=|≥)\s*\d|"
        r"(?:gated on|depends on|only (?:with|for|when)) (?:the )?(?:draft )?"
        r"(?:depth|steps|num_speculative_tokens|k)\b|" + KNOB + r"\s*>\s*\d",
        "the failure depends on the number of speculative tokens (a threshold, `k >= 2 crashes`, "
        "or gating said outright; one value beside a crash, `num_spec_tokens=3 | IMA`, says "
        "only what was run: of the 8 dev reports that older reading matched, 1 was a mode "
        "incompatibility)",
    ),
    Statement(
        "says.under-load",
        r"under (?:sustained |heavy |high )?(?:load|concurrency)|concurren\w+|many requests",
        "only under load: more batch sizes, more padded replays",
    ),
    Statement(
        "says.intermittent",
        r"\bintermittent\w*|\boccasional(?:ly)?\b|\bsporadic\w*|non-?deterministic\w*|"
        r"from time to time|once in a while|long[- ]running",
        "the failure comes and goes for the same setup: what it reads depends on timing",
    ),
    Statement(
        "says.stale",
        r"\bstale\b|left ?over (?:values|data|rows)|(?:values?|data) from (?:a|the) previous "
        r"(?:replay|step|run|iteration|batch|round)|retains? (?:data|values) from|"
        r"uninitiali[sz]ed (?:memory|values|rows|entries)",
        "a buffer still holds values from an earlier step when a replay reads it",
    ),
    Statement(
        "says.race",
        r"race condition|\bdata race\b|missing (?:stream )?sync\w*|without synchroniz\w*|"
        r"(?:returns?|launch\w*) without (?:a )?sync\w*|cross-stream|wrong stream",
        "a race or a missing synchronisation between streams: the buffer is reused too early, "
        "not replayed with stale padding",
    ),
    Statement(
        "says.garbage-index",
        r"(?<![\w.])-?\d{12,}\b|weird (?:tensor|values?|indices)|garbage (?:values?|indices)",
        "indices with absurd values: the index buffer itself held stale or uninitialised memory",
    ),
    Statement(
        "says.crash",
        r"\bcrash\w*|\bfails?\b|\bfailed\b|\berrors?\b|exception",
        "something fails (no mechanism named)",
    ),
    Statement(
        "says.spec",
        r"speculat\w*|\beagle\w*|\bMTP\b|\bdraft\w*|dflash|medusa|nextn|\bngram",
        "the report is about speculative decoding at all",
    ),
    Statement(
        "says.long-context",
        r"long (?:sequences?|contexts?|prompts?)|context (?:length|limit)|"
        r"max_position_embeddings|prompts? (?:longer than|over|>)\s*\d|>\s*2048 tokens",
        "the failure depends on how long the sequence is: a position limit",
    ),
    Statement(
        "says.hidden",
        r"hidden[_ ](?:size|dim\w*|states?)\b[^.;]{0,40}(?:differ|mismatch|match|!=)|"
        r"target_hidden_size|hidden size mismatch|different hidden sizes?|"
        r"(?:same|different|target(?: model)?'s|draft(?: model)?'s) hidden(?:[_ ]states?)?[_ ]size",
        "the draft's hidden width is not the target's",
    ),
    Statement(
        "says.vocab",
        r"vocab\w*[^.;]{0,30}(?:differ|mismatch|match|!=|does not fit)|draft_vocab_size|"
        r"logits_buffer|lm_head",
        "the draft's vocabulary or logits buffer is not the one the engine sized",
    ),
    Statement(
        "says.launch-blocking",
        r"(?<!passing )CUDA_LAUNCH_BLOCKING=1",
        "the reporter ran synchronously: the failing frame is where the fault happened",
    ),
    Statement(
        "says.no-padding",
        r"enable_padding[\"':= ]+false|per-size (?:cuda )?graphs|(?:never|not) padded|"
        r"exact (?:per-size )?"
        r"(?:cuda[- ]?graph )?(?:capture|sizes)|no (?:graph )?padding|without padding",
        "every batch size has its own graph: there are no padding rows to read stale",
    ),
    Statement(
        "says.unsupported-combination",
        rf"\b(?:is|are) not (?:yet )?supported (?:with|when|together with|in combination with)"
        rf"[^.;\n]{{0,30}}{_SPEC}|"
        rf"{_FEATURE}\w*[^.;\n]{{0,30}}(?:does not|doesn't|do not|don't|cannot|can't) (?:yet )?"
        rf"support[^.;\n]{{0,30}}{_SPEC}|"
        rf"{_FEATURE}[^.;\n]{{0,40}}{_UNSUPPORTED}[^.;\n]{{0,20}}{_SPEC}|"
        rf"{_SPEC}[^.;\n]{{0,30}}(?:and|\+|with)[^.;\n]{{0,20}}{_FEATURE}[^.;\n]{{0,20}}"
        rf"{_UNSUPPORTED}|"
        rf"{_FEATURE}[^.;\n]{{0,20}} with {_SPEC}[^.;\n]{{0,40}}{_UNSUPPORTED}|"
        rf"^(?:\[[^\]]*\]\s*)*(?:support|enable)\w*\b[^.;\n]{{0,50}}\b(?:with|for|to work with)\s+"
        rf"{_SPEC}",
        "the report is about speculative decoding together with an engine mode or feature "
        "(a graph mode, an attention backend, a parallel layout, PD, LoRA, structured output) "
        "that the engine did not support with it: the failure needs both",
    ),
    Statement(
        "says.outside-feature",
        r"sleep[- ]mode|\bsleep\b|wake[_ ]up|tree (?:decoding|drafting|attention)|"
        r"long (?:sequences?|contexts?|prompts?)|\bLoRA\b|disaggregat\w*|attention[ -]DP|"
        r"DP[ -]attention|\bPD\b|structured[- ]outputs?|guided decoding|json_object|grammar|"
        r"logprobs|prompt[_ ]embeds|\bn-?gram\b|prompt[-_ ]lookup",
        "a feature whose own state, not graph padding, is the likelier culprit (an n-gram "
        "proposer has no draft model and no draft graph whose buffers could be replayed stale)",
    ),
)

# Facts a rule may need. `mech.*` and `phase.*` come from the log's first root error; `says.*`
# from the reporter; `ctx.replay` from padding lines or replay frames; `ctx.log-fault` when the
# log holds a root error at all.
# An asynchronous fault, stated by the reporter or found in the log.
_ASYNC_FAULT = one_of("says.fault", "mech.async")

RULES: tuple[Rule, ...] = rule_table(
    # -- what the reporter says about the mechanism ------------------------------------------
    ("stated-oob", OOB, 2.5, "says.oob !says.garbage-index"),
    "the reporter names an index assert or an out-of-bounds index",
    ("stated-memory", OOM, 2.5, "says.oom !mech.oob !mech.shape !says.hang"),
    "the reporter ties the failure to memory or to a graph memory pool",
    ("stated-corruption", ACCEPT, 2.5, "says.corruption !ctx.log-fault"),
    "silent wrong output, no crash",
    ("stated-acceptance-drop", ACCEPT, 2.5, "says.acceptance-drop !ctx.log-fault"),
    "drafts accepted less often, no crash",
    ("titled-acceptance", ACCEPT, 2.0, "says.acceptance-titled !ctx.log-fault"),
    "the title is about the drafts' acceptance rate or length and names no failure",
    ("titled-draft-config", CONFIG, 2.0, "says.draft-config-titled"),
    "the title is about how the engine finds or reads the draft's model",
    ("stated-hang", HANG, 2.0, "says.hang !ctx.log-fault"),
    "the reporter describes a step that never returns",
    ("stated-mode", MODE, 2.0, "says.mode"),
    "the engine changed or refused the graph mode",
    (
        "stated-combination",
        MODE,
        2.0,
        "says.unsupported-combination !says.load-fails !says.oom !mech.oom !says.hang",
    ),
    "speculative decoding together with a mode or feature the engine did not support with it",
    (
        "stated-slowdown",
        ACCEPT,
        1.5,
        "says.slowdown !says.corruption !says.acceptance-drop !ctx.log-fault",
    ),
    "slower with speculative decoding, or no faster, and nothing fails: the labelled sets file "
    "such reports as acceptance regressions (7 of 9 that say so; 2 other, no mode)",
    (
        "stated-load-mismatch",
        CONFIG,
        2.5,
        "?says.load-fails ?says.mismatch !says.oom !says.corruption !says.acceptance-drop !says.refused",
    ),
    "the draft does not load or does not fit the target",
    ("stated-load-and-mismatch", CONFIG, 1.0, "says.load-fails says.mismatch"),
    "both: a load failure that names a mismatching size",
    (
        "stated-width-error",
        CONFIG,
        2.5,
        "says.quoted-width-error !mech.oob !says.oob !mech.oom !says.capture-failed",
    ),
    "a weight or width error quoted from the engine: the draft's sizes are not the target's",
    (
        "stated-capture",
        CAPTURE,
        2.5,
        "says.capture-failed !says.out-of-memory !mech.oom !mech.shape !says.load-fails !mech.oob",
    ),
    "the reporter puts the failure inside graph capture",
    (
        "stated-k-gated",
        MODE,
        2.0,
        "says.k-gated !says.capture-failed !phase.capture !mech.oob !says.oob !says.oom",
    ),
    "works at one number of speculative tokens, fails above it: a kernel or graph "
    "configuration that does not support that K",
    # -- an asynchronous fault takes its class from phase and context ------------------------
    ("stated-shrink", STALE, 2.5, "says.shrink"),
    "padded replay after the batch shrank: stale padding rows",
    (
        "fault-on-replay",
        STALE,
        1.0,
        f"says.replay {_ASYNC_FAULT} !says.capture-failed !phase.startup",
    ),
    "a fault in graph replay during serving is most often a stale padded read",
    (
        "fault-gone-without-graphs",
        STALE,
        0.8,
        "?says.eager-works ?says.nograph-works !says.nograph-fails !says.capture-failed "
        "!phase.capture !says.k-gated",
    ),
    "graphs are involved and the run got past capture: stale replayed buffers",
    ("fault-stays-without-graphs", OTHER, 2.0, "says.nograph-fails !mech.oob !says.oob"),
    "the fault stays with graphs off: torch.compile or a kernel, not graphs",
    (
        "fault-with-outside-feature",
        OTHER,
        2.0,
        f"says.outside-feature {_ASYNC_FAULT} !says.shrink !ctx.replay !says.oob !mech.oob "
        "!says.capture-failed",
    ),
    "the fault comes with a feature whose own state is the likelier cause",
    (
        "crash-with-outside-feature",
        OTHER,
        1.0,
        "says.outside-feature ctx.serving-crash !ctx.log-fault !says.shrink !ctx.replay "
        "!says.oob !says.capture-failed",
    ),
    "a serving crash whose error line is not in the log, with a feature whose own state is "
    "the likelier cause",
    (
        "serving-graph-named",
        STALE,
        1.0,
        "says.serving-graph !says.capture-failed !phase.capture !says.oom !says.mismatch",
    ),
    "the reporter names a draft or verify step of serving together with its CUDA "
    "graph: a replayed graph's buffers",
    (
        "fault-without-padding",
        OTHER,
        1.5,
        f"says.no-padding {_ASYNC_FAULT} !phase.capture !says.capture-failed",
    ),
    "no padding rows exist, so a stale padded read cannot be the cause",
    (
        "sync-fault-at-index",
        OOB,
        3.5,
        "mech.async ctx.fault-at-index ?ctx.launch-blocking ?says.launch-blocking",
    ),
    "with CUDA_LAUNCH_BLOCKING=1 the fault is synchronous, and the faulting line "
    "indexes a buffer: an index past its end",
    (
        "fault-without-spec-decode",
        OTHER,
        1.5,
        f"{_ASYNC_FAULT} !ctx.spec !says.eager-works !says.nograph-works !ctx.replay "
        "!says.replay !says.shrink !phase.capture !says.capture-failed",
        UNTITLED,
    ),
    "nothing in the report involves speculative decoding or a graph replay: the "
    "padded-replay hazards do not apply",
    ("fault-after-piecewise-downgrade", STALE, 1.5, "ctx.mode-downgrade mech.async !phase.capture"),
    "the engine fell back to PIECEWISE for spec decode; PIECEWISE draft decodes pad "
    "num_tokens but not num_reqs, so FlashInfer-style metadata is read stale",
    ("fault-stated-only", STALE, 0.6, "says.fault !ctx.log-fault !says.capture-failed", UNTITLED),
    "a named async fault, no log: in spec decode with graphs most are stale reads",
    ("fault-stated-only-other", OTHER, 0.5, "says.fault !ctx.log-fault", UNTITLED),
    "a named async fault, no log: the cause may lie outside graphs",
    (
        "fault-without-known-replay-hazard",
        OTHER,
        1.5,
        f"fw.trtllm {_ASYNC_FAULT} !phase.capture !says.capture-failed !says.shrink !ctx.replay",
    ),
    "no padded-replay hazard is known for this engine: a fault there is not presumed stale",
    (
        "stated-stale",
        STALE,
        2.5,
        "says.stale !says.corruption !says.acceptance-drop !says.race !says.capture-failed !phase.capture",
    ),
    "the reporter finds a buffer read with values from an earlier step: a stale read",
    ("race-not-padding", OTHER, 2.5, "says.race !says.shrink !ctx.replay"),
    "a race or missing synchronisation between streams reuses a buffer too early: "
    "a kernel's ordering bug, not a padded graph replay",
    (
        "oob-from-replayed-buffer",
        STALE,
        3.0,
        "says.replay says.garbage-index !says.capture-failed !phase.capture",
    ),
    "the out-of-range indices hold absurd values left in a buffer by a graph replay: "
    "a stale read, whatever kernel finally trips on it",
    (
        "fault-under-load-with-graphs",
        STALE,
        1.5,
        f"says.under-load {_ASYNC_FAULT} !phase.capture !says.capture-failed "
        "!says.no-padding !says.race !says.outside-feature !says.k-gated",
    ),
    "a fault that needs concurrency: varying batch sizes are padded up to captured "
    "ones, and padded rows are replayed with stale metadata",
    (
        "crash-in-outside-feature",
        OTHER,
        1.5,
        "says.outside-feature ?says.crash ?mech.exception !says.replay !says.shrink !ctx.replay "
        "!says.capture-failed !phase.capture !says.nograph-works !says.eager-works !says.mode "
        "!says.oob !mech.oob !says.oom !mech.oom !says.hang !says.fault !mech.async "
        "!says.corruption !says.acceptance-drop !says.mismatch !mech.shape",
    ),
    "a crash in a feature with its own state (structured output, logprobs, LoRA, PD...) "
    "and nothing pointing at graphs",
    ("fault-at-startup-replay", OTHER, 1.0, "phase.startup ?says.replay !says.capture-failed"),
    "a replay before serving has no stale rows from larger batches to read",
)

# How a ticket names its engine when no log prefix does: command lines, module and class names.
ENGINE_MENTIONS: dict[str, str] = {
    "sglang": r"\bsglang\b|sgl[-_]kernel|launch_server|EAGLEWorker|eagle_worker|"
    r"--speculative-algo(?:rithm)?\b|--cuda-graph-max-bs|--disable-cuda-graph\b",
    "vllm": r"\bvllm\b|--speculative[-_]config|EngineCore|--enforce-eager|cudagraph_mode|"
    r"gpu_model_runner",
    "trtllm": r"tensorrt[-_ ]?llm|\btrtllm|TRT-LLM|trtllm-serve|py_executor",
}
# How a ticket names its draft kind when no config line does, most specific first. SGLang runs
# MTP heads under `--speculative-algorithm EAGLE`, so a named MTP/NEXTN/DFlash wins over a bare
# "EAGLE"; between the specific ones the most mentioned wins.
DRAFT_MENTIONS: tuple[tuple[str, str], ...] = (
    ("dflash", r"\bd-?flash\d?\b"),
    ("mtp", r"\bMTP\d?\b|\bnextn\b|_mtp\b|multi[- ]token predict\w*"),
    ("eagle3", r"\beagle[-_ ]?3\b"),
    ("eagle", r"\beagle(?:[-_ ]?[12])?\b(?![-_ ]?3)"),
)
# FlashInfer + spec decode keeps FULL graphs only through these decode paths (flags of
# known.profiles); in a profile with none of them the requested mode is downgraded to PIECEWISE
# for FlashInfer, as a mode-incompatibility report with no version shows.
FLASHINFER_FULL_FLAGS: tuple[str, ...] = (
    "flashinfer_xqa_sm90",
    "flashinfer_xqa_sm12x",
    "flashinfer_fa2_native_decode",
)

# Engine spec-decode method names to draft kinds (DraftKind values), for the names the draft
# registry does not list (vLLM's per-model MTP methods, SGLang's algorithm names).
METHOD_KINDS: dict[str, str] = {
    "mtp": "mtp",
    "nextn": "mtp",
    "deepseek_mtp": "mtp",
    "qwen3_next_mtp": "mtp",
    "glm4_moe_mtp": "mtp",
    "ernie_mtp": "mtp",
    "dflash": "dflash",
    "eagle": "eagle1",
    "eagle3": "eagle3",
}

# "vLLM 0.24.0", "sglang==0.5.9", "SGLang v0.5.15", "vllm:0.11.0": a version stated in prose.
ENGINE_VERSION = (
    r"\b(?P<engine>vllm|sglang|tensorrt[-_ ]?llm)(?:[-_ ]openai)?\s*(?:version\s*)?"
    r"(?:==|=|:|\s)\s*v?(?P<version>\d+\.\d+(?:\.\d+)?(?:(?:rc|\.post|\.dev)\d+)?)\b"
)

# A rule whose statement is in the issue title gains this much: the title is the reporter's
# own one-line verdict, read before anything else in the ticket.
TITLE_BONUS = 1.0

# Raw confidence (evidence saturation x share of the winner) to the probability of being right.
# The counts are verdicts on public reports that the rules had not been developed on when they
# ran (a calibration fitted on the reports the rules were tuned on would be right ~100 % of the
# time and mean nothing for the next report): the previous session's untuned held-out runs
# (benchmarks/triage_accuracy_heldout{1,2,3}_untuned.txt, 60 verdicts) and this session's runs of
# the rules before any change on tests/triage/data/gathered-{tune,holdout}.jsonl (40 verdicts,
# benchmarks/triage_accuracy_gathered_untuned.txt). Each row: (raw confidence below which it
# applies, right, verdicts); inputs with no evidence at all fall in the first row.
CALIBRATION_EVIDENCE: tuple[tuple[float, int, int], ...] = (
    (0.35, 6, 33),
    (0.5, 9, 14),
    (1.01, 48, 55),
)
# Laplace-smoothed: (upper bound of raw confidence, probability of being right).
CALIBRATION: tuple[tuple[float, float], ...] = tuple(
    (upper, round((right + 1) / (n + 2), 2)) for upper, right, n in CALIBRATION_EVIDENCE
)

# Raw confidence saturates with evidence as 1 - exp(-score / SATURATION): one decisive rule
# (weight 3) gives 0.7 on its own.
SATURATION = 2.5
# The raw confidence of a verdict no rule supports ("other" by default).
NO_EVIDENCE_CONFIDENCE = 0.1

# Below this calibrated confidence a verdict says what evidence it lacks.
WEAK = 0.5

# What would make a weak verdict firm, per class: the user is told this next to a low score.
MISSING: dict[Category, str] = {
    STALE: "the batch sizes around the crash (a padding line such as raw_bs=3 graph_bs=4, or "
    "#running-req falling) and an A/B with CUDA graphs off",
    OOB: "the device-side assert line naming the index and its bound (run with "
    "CUDA_LAUNCH_BLOCKING=1)",
    OOM: "the allocator's OutOfMemoryError line or the graph-memory estimate and KV budget lines",
    CAPTURE: "the capture progress lines (Capturing CUDA graphs ... i/n, Capture cuda graph "
    "begin/end) up to the error",
    MODE: "the engine's mode resolution line (... not supported with spec-decode ...; setting "
    "cudagraph_mode=...) and the requested mode",
    CONFIG: "the draft and target config.json (hidden_size, target_hidden_size, vocab sizes, "
    "max_position_embeddings) and the error naming the mismatching sizes",
    ACCEPT: "SpecDecoding metrics lines (acceptance rate and mean acceptance length) with graphs "
    "on and off",
    HANG: "a py-spy dump of the stuck process or the watchdog line",
    OTHER: "the first error line of the log with CUDA_LAUNCH_BLOCKING=1, and whether it stays "
    "with CUDA graphs off",
}
