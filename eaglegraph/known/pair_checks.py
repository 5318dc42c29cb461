"""What each engine does with a draft/target mismatch on disk, and what to change: one row per
pair check, each with the public source it was read from (an engine release's file, or an
issue/PR), plus the thresholds the checks compare against.

`pair/checks.py` and the draft kinds build their findings from these rows; `engine` says which
engine's plan a finding belongs on (None: both engines load the pair the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.tables import keyed

# the releases the rows below were read in (their files, at those tags)
VLLM_SRC = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/"
SGLANG_SRC = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/"

VLLM_EAGLE3 = VLLM_SRC + "model_executor/models/llama_eagle3.py"
SGLANG_EAGLE3 = SGLANG_SRC + "models/llama_eagle3.py"
VLLM_SPEC_CONFIG = VLLM_SRC + "config/speculative.py"
SPECFORGE_CONFIGS = "https://github.com/sgl-project/SpecForge/tree/main/configs"
SPECULATORS_CONFIG = (
    "https://github.com/vllm-project/speculators/blob/main/src/speculators/config.py"
)


@dataclass(frozen=True)
class PairCheck:
    id: str
    engine: str | None  # the engine whose plan shows it; None: both
    engine_does: str  # what the engine does with the mismatch
    change: str  # what the user changes
    # public sources, URLs of an engine release's files, issues or docs; the first is the one a
    # finding cites (one link, so views can show and link it), the others were read beside it
    refs: tuple[str, ...]

    @property
    def ref_text(self) -> str:
        return self.refs[0]


PAIR_CHECKS: dict[str, PairCheck] = keyed(
    lambda c: c.id,
    PairCheck(
        "vocab-mismatch",
        None,
        "both engines feed the draft the target's token ids and, without its own "
        "embed_tokens, the target's embedding: a draft trained on another tokenizer "
        "proposes wrong tokens (acceptance near 0) or indexes past its vocabulary",
        "use the draft trained for this target (same tokenizer and vocab_size)",
        (VLLM_EAGLE3, SGLANG_EAGLE3),
    ),
    PairCheck(
        "t2d-length-mismatch",
        None,
        "both engines skip t2d when loading, so nothing fails; its length is the "
        "vocabulary the draft was trained against, and it is not this target's",
        "use the draft trained for this target's vocabulary",
        (VLLM_EAGLE3, SGLANG_EAGLE3),
    ),
    PairCheck(
        "d2t-length-mismatch",
        None,
        "vLLM loads d2t into draft_id_to_target_id, a parameter of draft_vocab_size "
        "entries, and fails the load on another length; SGLang builds hot_token_id = "
        "d2t + arange(len(d2t)) unchecked, so draft ids past the map read out of range",
        "make draft_vocab_size, lm_head rows and the d2t length agree (re-export the "
        "draft with the map it was trained with)",
        (VLLM_EAGLE3, SGLANG_EAGLE3),
    ),
    PairCheck(
        "d2t-missing",
        None,
        "with draft_vocab_size below the vocabulary and no d2t, vLLM keeps "
        "draft_id_to_target_id at zeros and SGLang has no hot_token_id: draft token i is "
        "taken for target token i, so almost no proposal is accepted",
        "add the d2t map saved at training to the draft checkpoint",
        (VLLM_EAGLE3, SGLANG_EAGLE3),
    ),
    PairCheck(
        "draft-vocab-larger",
        None,
        "vLLM scatters the draft's logits into a vocabulary-sized tensor at "
        "arange(draft_vocab_size) + d2t, so draft ids past vocab_size index out of "
        "range; SGLang sizes the draft head and logits by draft_vocab_size",
        "draft_vocab_size must be at most vocab_size: set it to the lm_head rows and d2t "
        "length of the checkpoint",
        (VLLM_EAGLE3, SGLANG_EAGLE3),
    ),
    PairCheck(
        "tied-head-reduced-vocab",
        "sglang",
        "with tie_word_embeddings true SGLang makes the draft's lm_head its embed_tokens "
        "(the full vocabulary) and never loads the checkpoint's reduced lm_head, while the "
        "logits processor and d2t are sized for draft_vocab_size: the draft proposes from "
        "the wrong rows (vLLM builds its own lm_head of draft_vocab_size rows and ignores "
        "the tie)",
        'set "tie_word_embeddings": false in the draft config',
        (SGLANG_EAGLE3, VLLM_EAGLE3),
    ),
    PairCheck(
        "rope-theta-differs",
        None,
        "both engines build the draft's rotary table from the draft config and the "
        "target's from its own, then give the draft the target's positions: the draft "
        "runs with its own θ, right only if it was trained with it",
        "keep the θ the draft was trained with; if the draft config was rewritten (a key "
        "dropped or copied from another model), restore its training value",
        (VLLM_EAGLE3, SGLANG_EAGLE3),
    ),
    PairCheck(
        "rope-scaling-differs",
        None,
        "both engines apply the draft config's rope scaling to the draft, not the "
        "target's; vLLM raises a smaller draft max_position_embeddings to the target's "
        "only for default/linear/llama3 rope and otherwise limits max_model_len to the "
        "draft's (SpeculativeConfig._maybe_override_draft_max_position_embeddings)",
        "keep the scaling the draft was trained with; past the draft's trained context "
        "expect lower acceptance, or serve with a max_model_len within it",
        (VLLM_SPEC_CONFIG, SGLANG_EAGLE3),
    ),
    PairCheck(
        "rms-eps-differs",
        None,
        "both engines build the draft's RMSNorms with the draft config's rms_norm_eps; a "
        "different value from the target's is harmless if the draft was trained with it",
        "only if the draft config was copied from another model: restore the rms_norm_eps "
        "it was trained with",
        (VLLM_EAGLE3, SGLANG_EAGLE3),
    ),
    PairCheck(
        "draft-layers-implausible",
        None,
        "both engines build as many draft layers as num_hidden_layers says, so a full "
        "model's config given as the draft loads as a slow, untrained head",
        "check that the folder given as the draft is the draft head (published EAGLE heads "
        "have 1 layer) and not a copy of a target config",
        (SPECFORGE_CONFIGS, VLLM_EAGLE3),
    ),
    PairCheck(
        "verifier-mismatch",
        None,
        "neither engine compares the verifier a draft config names (or the "
        "target_model_type it was trained for) with the target it serves; a draft trained "
        "for another target loads and its proposals are rarely accepted",
        "serve the draft with the verifier it names, or use a draft trained for this target",
        (SPECULATORS_CONFIG,),
    ),
    PairCheck(
        "implausible-value",
        None,
        "the engines size weights, KV cache and rotary tables from these fields without "
        "a plausibility check, so the load fails or runs out of memory far from the cause",
        "correct the field in config.json",
        ("https://huggingface.co/docs/transformers/main_classes/configuration",),
    ),
    PairCheck(
        "aux-ids-out-of-range",
        None,
        "the target captures aux hidden states only at the layer ids it runs; an id "
        "outside its layers is never captured, so fc receives fewer states than it was "
        "built for (shape error at the first draft step)",
        "set eagle_aux_hidden_state_layer_ids to layers of this target",
        (VLLM_SRC + "model_executor/models/interfaces.py",),
    ),
    PairCheck(
        "aux-ids-sglang-shift",
        "sglang",
        "SGLang's set_eagle3_layers_to_capture adds 1 to explicit aux ids, so an id at "
        "the last layer taps past the end of the target",
        "use ids counted as SGLang counts them (one less), or the defaults",
        (SGLANG_SRC + "models/llama.py",),
    ),
    PairCheck(
        "aux-convention",
        None,
        "vLLM uses explicit aux ids as given (the stream entering layer i); SGLang adds "
        "1 (the output of layer i): the same config taps layers one apart",
        "check which engine the draft was trained against before serving it on the other",
        (
            VLLM_SRC + "model_executor/models/interfaces.py",
            SGLANG_SRC + "models/llama.py",
        ),
    ),
    PairCheck(
        "eaglegraph-needs-safetensors",
        None,
        "vLLM and SGLang load .bin checkpoints (EAGLE releases ship them); only eaglegraph "
        "reads shapes from safetensors headers, so inspect checks this side from "
        "config.json alone and capture/probe need --random-weights",
        "nothing for the engines; for eaglegraph's tensor checks, save a safetensors copy "
        "(safetensors.torch.save_file(state_dict, 'model.safetensors'))",
        ("https://huggingface.co/docs/safetensors/index",),
    ),
)


def pair_check(check_id: str) -> PairCheck:
    """The row by id; a KeyError here is a typo in eaglegraph's own code."""
    return PAIR_CHECKS[check_id]


# Draft layer counts past which a folder is unlikely to be a head of that kind (published
# EAGLE-1/EAGLE-3 heads have 1 layer, SpecForge's DFlash drafts 5; see SPECFORGE_CONFIGS).
MAX_DRAFT_LAYERS: dict[str, int] = {"eagle1": 4, "eagle3": 4, "dflash": 8}

# Upper bounds no published model reaches (the largest seen: hidden 16384 and 126 layers in
# Llama-3.1-405B, 10,485,760 positions in Llama-4-Scout, vocabularies of ~262k): a value past
# one is a typo or a corrupted config.
PLAUSIBLE_MAX: dict[str, float] = {
    "hidden_size": 65_536,
    "intermediate_size": 262_144,
    "num_hidden_layers": 1_024,
    "num_attention_heads": 1_024,
    "num_key_value_heads": 1_024,
    "head_dim": 2_048,
    "vocab_size": 4_194_304,
    "draft_vocab_size": 4_194_304,
    "max_position_embeddings": 134_217_728,
    "rope_theta": 1e12,
}

# rms_norm_eps values closer than this (relative) are the same value written differently
RMS_EPS_RTOL = 1e-3
