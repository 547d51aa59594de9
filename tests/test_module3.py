"""Module 3: the notebook's own functions pass their contracts, realistic bugs fail them by name, bad inputs are refused.

The notebook's definitions are loaded without running its cells (``builder.notebook_code.definitions``);
notebook execution itself is tested elsewhere.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from builder import cli
from builder.contracts import attention, module3_decoding, module3_heads, module3_norms, module3_positions
from builder.contracts.violations import ContractViolation
from builder.notebook_code import definitions

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "module3_basic_transformer.py"


@pytest.fixture(scope="module")
def nb():
    """The notebook's imports, functions, classes and constants."""
    torch.set_num_threads(1)
    return definitions(NOTEBOOK)


# --- The notebook's own functions pass every contract -------------------------------------------------

CONTRACTS = [
    ("sinusoidal_encoding", module3_positions.check_positional_encoding_contract),
    ("causal_allowed", module3_positions.check_causal_mask_contract),
    ("scaled_dot_product_attention", attention.check_attention_contract),
    ("split_heads", module3_heads.check_split_heads_contract),
    ("merge_heads", module3_heads.check_merge_heads_contract),
    ("repeat_kv_heads", module3_heads.check_repeat_kv_contract),
    ("layer_norm", module3_norms.check_layer_norm_contract),
    ("token_distribution", module3_decoding.check_token_distribution_contract),
    ("greedy_trace", module3_decoding.check_greedy_trace_contract),
]


@pytest.mark.parametrize(("name", "contract"), CONTRACTS, ids=[name for name, _ in CONTRACTS])
def test_notebook_function_passes_its_contract(nb, name, contract):
    summary = contract(nb[name])
    assert isinstance(summary, dict) and summary


def test_attention_contract_errors_are_tiny(nb):
    summary = attention.check_attention_contract(nb["scaled_dot_product_attention"])
    assert summary["output_max_error"] < 1e-12 and summary["gradient_max_error"] < 1e-11
    assert summary["wrong_cache_mask_max_error"] > 1e-3


def test_a_stub_still_raises_not_implemented():
    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise 1: write me")

    for _, contract in CONTRACTS:
        with pytest.raises(NotImplementedError):
            contract(stub)


# --- Realistic bugs fail, and the message names the broken property ----------------------------------


def fails(contract, implementation, *phrases):
    """Run ``contract`` on a buggy ``implementation``; it must raise ContractViolation mentioning every phrase."""
    with pytest.raises(ContractViolation) as caught:
        contract(implementation)
    message = str(caught.value)
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} not in:\n{message}"
    return message


def sinusoidal(length, d_model, *, base=10_000.0, swap=False, per_pair=False, concatenated=False, first=0, transpose=False):
    """A sinusoidal table with one optional, realistic mistake."""
    position = torch.arange(first, first + length, dtype=torch.float64)[:, None]
    pair = torch.arange(d_model // 2, dtype=torch.float64)
    exponent = pair / d_model if per_pair else 2 * pair / d_model
    angle = position / base ** exponent
    sin, cos = (torch.cos(angle), torch.sin(angle)) if swap else (torch.sin(angle), torch.cos(angle))
    table = torch.cat((sin, cos), -1) if concatenated else torch.stack((sin, cos), -1).reshape(length, d_model)
    return table.T if transpose else table


@pytest.mark.parametrize(
    ("bug", "phrases"),
    [
        ({"swap": True}, ("position 0 is (0, 1, 0, 1, ...)", "swapped")),
        ({"per_pair": True}, ("table equals sin/cos", "exponent counts coordinates")),
        ({"concatenated": True}, ("position 0", "interleave")),
        ({"first": 1}, ("position 0",)),
        ({"transpose": True}, ("shape is (length, d_model)",)),
    ],
    ids=["sin-cos-swapped", "exponent-per-pair", "not-interleaved", "positions-from-1", "transposed"],
)
def test_positional_encoding_bugs(bug, phrases):
    fails(module3_positions.check_positional_encoding_contract, lambda n, d, base=10_000.0: sinusoidal(n, d, base=base, **bug), *phrases)


def test_positional_encoding_ignoring_base_fails():
    fails(module3_positions.check_positional_encoding_contract, lambda n, d, base=10_000.0: sinusoidal(n, d), "the base argument")


def causal(t_q, t_k, *, query_offset=0, shift=0, ignore_offset=False, invert=False, as_float=False):
    """A causal mask with one optional mistake."""
    offset = 0 if ignore_offset else query_offset
    mask = torch.arange(t_k)[None, :] <= (offset + shift + torch.arange(t_q))[:, None]
    if invert:
        mask = ~mask
    return mask.float() if as_float else mask


@pytest.mark.parametrize(
    ("bug", "phrases"),
    [
        ({"shift": -1}, ("never the future", "off by one", "its own key")),
        ({"shift": 1}, ("never the future", "off by one")),
        ({"ignore_offset": True}, ("absolute positions", "query_offset was ignored")),
        ({"invert": True}, ("inverted",)),
        ({"as_float": True}, ("a bool tensor",)),
    ],
    ids=["strict-triangle", "one-ahead", "offset-ignored", "inverted", "float-mask"],
)
def test_causal_mask_bugs(bug, phrases):
    fails(module3_positions.check_causal_mask_contract, lambda t_q, t_k, query_offset=0: causal(t_q, t_k, query_offset=query_offset, **bug), *phrases)


@dataclass(frozen=True)
class Result:
    output: torch.Tensor
    weights: torch.Tensor
    scores: torch.Tensor
    empty_rows: torch.Tensor


def buggy_attention(bug):
    """An attention with one realistic mistake, otherwise correct."""

    def attend(q, k, v, allowed=None, *, empty_row="error"):
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        if bug == "batch-from-qk":
            batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
        q, k = (t.expand(*batch, *t.shape[-2:]) for t in (q, k))
        v = v if bug == "batch-from-qk" else v.expand(*batch, *v.shape[-2:])
        shape = (*batch, q.shape[-2], k.shape[-2])
        allowed = torch.ones(shape, dtype=torch.bool) if allowed is None else torch.broadcast_to(allowed, shape)
        empty = ~allowed.any(-1)
        if empty_row == "error" and bool(empty.any()) and bug != "no-empty-error":
            raise ValueError("fully masked")
        scale = {"scale-by-dk": q.shape[-1], "no-scale": 1.0}.get(bug, math.sqrt(q.shape[-1]))
        scores = q @ k.transpose(-2, -1) / scale
        masked = scores if bug == "mask-after-softmax" else scores.masked_fill(~allowed, float("-inf"))
        if bug == "large-negative":
            masked = scores.masked_fill(~allowed, -1e9)
        if bug in ("nan-empty-rows", "large-negative"):
            weights = torch.softmax(masked, dim=-1)
        elif bug == "softmax-query-axis":
            weights = torch.softmax(masked, dim=-2).nan_to_num(0.0)
        else:
            top = masked.amax(-1, keepdim=True).masked_fill(empty[..., None], 0.0)
            exps = torch.exp(masked - top)
            weights = exps / exps.sum(-1, keepdim=True).masked_fill(empty[..., None], 1.0)
        if bug == "mask-after-softmax":
            weights = weights.masked_fill(~allowed, 0.0)
        if bug == "detach":
            weights = weights.detach()
        if bug == "uniform-empty-rows":
            weights = torch.where(empty[..., None], torch.full_like(weights, 1.0 / weights.shape[-1]), weights)
        output = weights @ v
        if bug == "position-leak":
            output = output + 1e-3 * torch.arange(output.shape[-2], dtype=output.dtype)[:, None]
        return Result(output, weights, masked, empty)

    return attend


@pytest.mark.parametrize(
    ("bug", "phrases"),
    [
        ("scale-by-dk", ("output matches F.scaled_dot_product_attention", "divided by d_k")),
        ("no-scale", ("output matches", "not scaled")),
        ("softmax-query-axis", ("output matches",)),
        ("mask-after-softmax", ("output matches",)),
        ("detach", ("gradient with respect to",)),
        ("batch-from-qk", ("a batch axis carried only by V",)),
        ("no-empty-error", ("raises ValueError by default",)),
        ("nan-empty-rows", ("zero output row",)),
        ("uniform-empty-rows", ("zero output row",)),
        ("large-negative", ("-inf where the mask blocks",)),
        ("position-leak", ("output matches",)),
    ],
)
def test_attention_bugs(bug, phrases):
    fails(attention.check_attention_contract, buggy_attention(bug), *phrases)


def test_attention_that_ignores_the_mask_fails():
    correct = buggy_attention(None)
    fails(attention.check_attention_contract, lambda q, k, v, allowed=None, **kw: correct(q, k, v, None, **kw), "output matches")


def test_split_heads_without_transpose_fails():
    def split(x, n_heads):
        *lead, t, width = x.shape
        return x.reshape(*lead, n_heads, t, width // n_heads)

    fails(module3_heads.check_split_heads_contract, split, "head h of token t", "reshape to (B, T, H, d) first")


def test_split_heads_on_the_wrong_axis_fails():
    fails(module3_heads.check_split_heads_contract, lambda x, n_heads: x.reshape(x.shape[0], n_heads, -1, x.shape[-1]), "shape")


@pytest.mark.parametrize(
    ("merge", "phrase"),
    [
        (lambda x: x.reshape(*x.shape[:-3], x.shape[-2], -1), "without moving the head axis back"),
        (lambda x: x.transpose(-2, -1).reshape(*x.shape[:-3], x.shape[-2], -1), "the wrong axes were transposed"),
        (lambda x: x.transpose(-3, -2).view(*x.shape[:-3], x.shape[-2], -1), "RuntimeError"),
    ],
    ids=["no-transpose", "wrong-transpose", "view-on-non-contiguous"],
)
def test_merge_heads_bugs(merge, phrase):
    fails(module3_heads.check_merge_heads_contract, merge, "merging undoes the split", phrase)


def test_gqa_that_tiles_fails():
    def tile(x, group):
        return x.repeat(*([1] * (x.ndim - 3)), group, 1, 1)

    fails(module3_heads.check_repeat_kv_contract, tile, "h // group", "repeat_interleave, not repeat")


def test_gqa_on_the_wrong_axis_fails():
    fails(module3_heads.check_repeat_kv_contract, lambda x, group: x.repeat_interleave(group, dim=-2), "shape")


def layer_norm_bug(bug):
    """A hand-written LayerNorm with one realistic mistake."""

    def norm(x, weight=None, bias=None, eps=1e-5):
        axis = 0 if bug == "axis" else -1
        mean = x.mean(axis, keepdim=True)
        variance = x.var(axis, keepdim=True, unbiased=(bug == "unbiased"))
        if bug == "detach":
            mean, variance = mean.detach(), variance.detach()
        scale = variance.sqrt() + eps if bug == "eps-outside" else (variance + eps).sqrt()
        if bug == "no-eps":
            scale = variance.sqrt()
        y = (x - mean) / scale
        if bug == "ignore-affine":
            return y
        if bug == "swap-affine":
            weight, bias = bias, weight
        if weight is not None:
            y = y * weight
        if bias is not None:
            y = y + bias
        return y

    return norm


@pytest.mark.parametrize(
    ("bug", "phrases"),
    [
        ("unbiased", ("biased variance", "unbiased (divides by n - 1)")),
        ("axis", ("wrong axis",)),
        ("eps-outside", ("eps sits inside the square root", "eps goes inside the square root")),
        ("ignore-affine", ("weight scales and bias shifts", "ignored")),
        ("swap-affine", ("weight scales", "swapped")),
        ("detach", ("gradients match F.layer_norm",)),
        ("no-eps", ("eps sits inside",)),
    ],
)
def test_layer_norm_bugs(bug, phrases):
    fails(module3_norms.check_layer_norm_contract, layer_norm_bug(bug), *phrases)


def token_distribution_bug(bug):
    """A sampling policy with one realistic mistake."""

    def policy(logits, temperature=1.0, top_k=None, top_p=None):
        logits = list(logits)
        top = 0.0 if bug == "no-max-shift" else max(logits)
        if bug == "temperature-after-softmax":
            weights = [math.exp(z - top) for z in logits]
            total = math.fsum(weights)
            weights = [w / total / temperature for w in weights]
        elif bug == "temperature-multiplies":
            weights = [math.exp((z - top) * temperature) for z in logits]
        else:
            try:
                weights = [math.exp((z - top) / temperature) for z in logits]
            except OverflowError:
                weights = [math.inf] * len(logits)
        ranked = list(range(len(logits))) if bug == "first-k-ids" else sorted(range(len(logits)), key=lambda i: (-logits[i], i))
        if bug == "unstable-ties":
            ranked = sorted(range(len(logits)), key=lambda i: (-logits[i], -i))
        kept = ranked if top_k is None else ranked[: top_k + (1 if bug == "top-k-plus-one" else 0)]
        if top_p is not None and top_p < 1 and bug != "ignore-top-p":
            mass = math.fsum(weights[i] for i in (ranked if bug == "top-p-on-full-mass" else kept))
            prefix, running = [], 0.0
            for i in kept:
                if bug == "drop-crossing" and running + weights[i] / mass >= top_p and prefix:
                    break
                prefix.append(i)
                running += weights[i] / mass
                if running >= top_p:
                    break
            kept = prefix
        if bug == "temperature-after-softmax":
            return [weights[i] if i in kept else 0.0 for i in range(len(logits))]
        total = math.fsum(weights[i] for i in kept)
        return [weights[i] / total if i in kept else 0.0 for i in range(len(logits))]

    return policy


@pytest.mark.parametrize(
    ("bug", "phrases"),
    [
        ("temperature-after-softmax", ("temperature divides the logits",)),
        ("temperature-multiplies", ("temperature divides the logits", "multiplied by the temperature")),
        ("top-k-plus-one", ("top_k keeps exactly the k", "off by one")),
        ("first-k-ids", ("wherever they sit", "first k ids")),
        ("drop-crossing", ("keeps the token that crosses", "was dropped")),
        ("ignore-top-p", ("keeps the token that crosses",)),
        ("unstable-ties", ("ties",)),
        ("no-max-shift", ("large logits do not overflow",)),
        ("top-p-on-full-mass", ("then top_p measured on the kept mass",)),
    ],
)
def test_token_distribution_bugs(bug, phrases):
    fails(module3_decoding.check_token_distribution_contract, token_distribution_bug(bug), *phrases)


def greedy_bug(bug):
    """Greedy decoding with one realistic mistake."""

    def trace(prepared_logits, eos_id, max_new_tokens):
        tokens = []
        for scores in prepared_logits:
            best = max(range(len(scores)), key=lambda i: (scores[i], i if bug == "ties-to-last" else -i))
            if bug == "first-token":
                best = 0
            if bug == "eos-dropped" and best == eos_id:
                return tokens, "eos"
            tokens.append(best)
            if bug == "limit-first" and len(tokens) == max_new_tokens:
                return tokens, "length_limit"
            if best == eos_id:
                return tokens, "eos"
            if len(tokens) == max_new_tokens + (1 if bug == "one-extra" else 0):
                return tokens, "length_limit"
        if bug == "silent-end":
            return tokens, "length_limit"
        raise ValueError("ran out")

    return trace


@pytest.mark.parametrize(
    ("bug", "phrase"),
    [
        ("eos-dropped", "EOS stops the trace and is kept"),
        ("one-extra", "the length limit stops the trace"),
        ("limit-first", "EOS on the last allowed step"),
        ("ties-to-last", "ties go to the lower token id"),
        ("first-token", "greedy"),
        ("silent-end", "raises ValueError"),
    ],
)
def test_greedy_trace_bugs(bug, phrase):
    fails(module3_decoding.check_greedy_trace_contract, greedy_bug(bug), phrase)


def test_violation_message_names_input_expected_actual_and_hint():
    message = fails(module3_positions.check_causal_mask_contract, lambda t_q, t_k, query_offset=0: causal(t_q, t_k))
    for part in ("contract property", "on input:", "expected:", "actual:", "usual cause:"):
        assert part in message


def test_a_crash_on_valid_input_becomes_a_named_violation():
    def crashes(*args, **kwargs):
        raise IndexError("index 4 is out of bounds")

    message = fails(module3_decoding.check_greedy_trace_contract, crashes, "IndexError")
    assert "raised on a valid input" in message


# --- Bad inputs are refused with a message that names the problem -----------------------------------

BAD_INPUTS = [
    ("sinusoidal_encoding", (5, 7), {}, ValueError, "even"),
    ("sinusoidal_encoding", (5, 4), {"base": 0.5}, ValueError, "base"),
    ("sinusoidal_encoding", (5.0, 4), {}, TypeError, "integer"),
    ("causal_allowed", (1, 5), {"query_offset": -1}, ValueError, "query_offset"),
    ("causal_allowed", (3, 2), {}, ValueError, "t_k"),
    ("causal_allowed", (False, 2), {}, TypeError, "integer"),
    ("split_heads", (torch.zeros(2, 5, 6), 4), {}, ValueError, "evenly"),
    ("merge_heads", (torch.zeros(4, 4),), {}, ValueError, "dimensions"),
    ("repeat_kv_heads", (torch.zeros(1, 2, 3, 4), 1.5), {}, TypeError, "group"),
    ("layer_norm", (torch.zeros(2, 4),), {"bias": torch.zeros(5)}, ValueError, "bias"),
    ("layer_norm", ([1.0, 2.0],), {}, TypeError, "torch.Tensor"),
    ("token_distribution", ([1.0, 2.0],), {"temperature": -1.0}, ValueError, "temperature"),
    ("token_distribution", ([1.0, 2.0],), {"top_k": 0}, ValueError, "top_k"),
    ("token_distribution", ([float("inf"), 1.0],), {}, ValueError, "finite"),
    ("token_distribution", (None,), {}, ValueError, "non-empty"),
    ("greedy_trace", ([[1.0, 2.0]], 0, True), {}, TypeError, "max_new_tokens"),
    ("greedy_trace", ([[1.0, 2.0]], 2, 1), {}, ValueError, "eos_id"),
    ("attention_cost", (-5, 64), {}, ValueError, "n_tokens"),
    ("transformer_parameter_floor", (512, 0), {}, ValueError, "d_ff"),
    ("saturation_experiment", ((4,),), {"trials": 0}, ValueError, "trials"),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "error", "phrase"), BAD_INPUTS, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_INPUTS)])
def test_bad_inputs_are_refused(nb, name, args, kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        nb[name](*args, **kwargs)


def test_attention_refuses_bad_inputs(nb):
    attend = nb["scaled_dot_product_attention"]
    q = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="d_k"):
        attend(q, torch.zeros(3, 4), torch.zeros(3, 2))
    with pytest.raises(TypeError, match="bool"):
        attend(q, q, q, torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="broadcast"):
        attend(q, q, q, torch.ones(4, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="fully masked"):
        attend(q, q, q, torch.zeros(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="empty_row"):
        attend(q, q, q, empty_row="ignore")
    with pytest.raises(ValueError, match="finite"):
        attend(torch.full((3, 2), float("nan")), q, q)


def test_modules_refuse_bad_shapes(nb):
    mha_class = nb["MultiHeadSelfAttention"]
    with pytest.raises(ValueError, match="evenly"):
        mha_class(10, 3)
    with pytest.raises(ValueError, match="multiple"):
        mha_class(12, 4, 3)
    layer = mha_class(8, 2)
    with pytest.raises(ValueError, match="shape"):
        layer(torch.zeros(1, 3, 4))
    model = nb["TinyLM"]()
    with pytest.raises(ValueError, match="max_length"):
        model(torch.zeros(1, 33, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.long"):
        model(torch.zeros(1, 3, dtype=torch.int32))


# --- Notebook behaviour that the contracts do not cover ----------------------------------------------


def test_gqa_equals_mha_with_repeated_heads(nb):
    torch.manual_seed(0)
    gqa = nb["MultiHeadSelfAttention"](16, 4, 2)
    mha = nb["MultiHeadSelfAttention"](16, 4, 4)
    with torch.no_grad():
        mha.q_proj.weight.copy_(gqa.q_proj.weight)
        mha.out_proj.weight.copy_(gqa.out_proj.weight)
        for name in ("k_proj", "v_proj"):
            getattr(mha, name).weight.copy_(getattr(gqa, name).weight.unflatten(0, (2, 4)).repeat_interleave(2, 0).flatten(0, 1))
        x = torch.randn(2, 5, 16)
        assert torch.allclose(gqa(x), mha(x), atol=1e-6)
    assert gqa.kv_parameter_count() * 2 == mha.kv_parameter_count()


def test_causal_block_does_not_read_the_future(nb):
    torch.manual_seed(0)
    block = nb["DecoderBlock"](16, 4, 32, 2).eval()
    x = torch.randn(1, 6, 16)
    changed = x.clone()
    changed[0, -1] += 5.0
    with torch.no_grad():
        assert torch.allclose(block(x)[0, :-1], block(changed)[0, :-1], atol=1e-6)


def test_sampling_reference_matches_the_notebook_policy(nb):
    reference = __import__("builder.refgen.module3", fromlist=["sampling"]).sampling()
    policy = nb["token_distribution"]
    z = reference["logits"]
    assert policy(z) == pytest.approx(reference["temperature_1"], abs=1e-15)
    assert policy(z, temperature=2.0) == pytest.approx(reference["temperature_2"], abs=1e-15)
    assert policy(z, top_k=2) == pytest.approx(reference["top_k_2"], abs=1e-15)
    assert policy(z, top_p=0.9) == pytest.approx(reference["top_p_09"], abs=1e-15)


def test_plots_refuse_unknown_languages_before_drawing(nb):
    for name, function in nb.items():
        if name.startswith("plot_"):
            with pytest.raises(ValueError, match="language"):
                function(language="de") if name in ("plot_attention_flow", "plot_head_sharing", "plot_decoder_block") else \
                    function(*([None] * (function.__code__.co_argcount - 1)), language="de")


# --- The speed benchmark's command line -------------------------------------------------------------


def test_bench_takes_a_benchmark_name_and_notebooks():
    args = cli.parse_args(["bench", "speed", "module3", "--repeats", "2"])
    assert (args.command, args.what, args.names, args.repeats) == ("bench", "speed", ["module3"], 2)
    with pytest.raises(SystemExit):
        cli.parse_args(["bench", "nonsense"])


def test_notebook_ratio_rejects_zero_repeats():
    from builder import bench
    from builder.config import load_course

    with pytest.raises(ValueError, match="repeats"):
        bench.notebook_ratio(load_course(ROOT), "module3", repeats=0)


def test_every_plot_draws_in_english_and_russian(nb):
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ones = torch.ones(5, 5, dtype=torch.bool).tril()
    lengths = np.logspace(2, 6, 9)
    cases = {
        "plot_it_weights": (("animal", "tired", "street"), [2.0, 1.0, 0.5], [0.63, 0.23, 0.14]),
        "plot_attention_flow": (),
        "plot_positions": (nb["sinusoidal_encoding"](20, 8).numpy(),),
        "plot_masks": ([ones] * 6, ["title"] * 6),
        "plot_scores_and_weights": (np.array([[0.7, -np.inf], [0.0, 0.7]]), np.array([[1.0, 0.0], [0.33, 0.67]])),
        "plot_contract_errors": ({"output_max_error": 0.0, "gradient_max_error": 1e-16, "wrong_cache_mask_max_error": 0.5},),
        "plot_saturation": (nb["saturation_experiment"]((2, 8), trials=5),),
        "plot_head_sharing": (),
        "plot_cost": (lengths, lengths ** 2, lengths * 1e3, 4096),
        "plot_decoder_block": (),
        "plot_leakage": ({"causal": np.zeros(5), "no mask": np.ones(5)},),
        "plot_loss": ([1.8, 0.5, 0.01], 0.02),
        "plot_policies": ({"T = 1": [0.7, 0.3], "T = 2": [0.6, 0.4], "k": [1.0, 0.0], "p": [1.0, 0.0]}, [1.0, 0.0]),
    }
    assert set(cases) == {name for name in nb if name.startswith("plot_")}, "a new plot function needs a case here"
    for name, args in cases.items():
        for language in ("en", "ru"):
            fig = nb[name](*args, language=language)
            fig.savefig(io.BytesIO(), format="png")
            plt.close(fig)


def test_hand_written_adamw_matches_torch_optim(nb):
    torch.manual_seed(0)
    ours_model, theirs_model = nb["TinyLM"](), nb["TinyLM"]()
    theirs_model.load_state_dict(ours_model.state_dict())
    ours = nb["AdamW"](ours_model.parameters(), lr=0.03, weight_decay=0.1)
    theirs = torch.optim.AdamW(theirs_model.parameters(), lr=0.03, weight_decay=0.1)
    ids = torch.tensor([[0, 1, 2, 3, 4, 5, 0, 1]])
    for _ in range(15):
        for model, optimizer in ((ours_model, ours), (theirs_model, theirs)):
            loss = torch.nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, 6), ids[0, 1:])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    for a, b in zip(ours_model.parameters(), theirs_model.parameters()):
        assert torch.allclose(a, b, atol=1e-5), "the hand-written AdamW drifted from torch.optim.AdamW"
