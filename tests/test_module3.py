"""Module 3: contract details, refused bad inputs, and notebook behaviour the contracts do not cover.

The notebook's definitions are loaded without running its cells (``tests.support.notebook``); notebook
execution is tested elsewhere, the named bugs in tests/test_bug_catalog.py, the random-input
properties in tests/test_properties.py.
"""

import pytest
import torch

from builder import cli, exits
from tools import cli as tools_cli
from builder.contracts import attention, gqa, decoding, heads, norms, positions
from builder.contracts.style import shown_text_pt
from builder.contracts.violations import ContractViolation
from tests.support import ROOT, notebook


@pytest.fixture(scope="module")
def nb():
    """The notebook's imports, functions, classes and constants."""
    return notebook("module3")


# --- Contract checks: what the bug catalog (tests/test_bug_catalog.py) does not cover ---------------------

CONTRACTS = [
    positions.check_positional_encoding_contract,
    positions.check_causal_mask_contract,
    attention.check_attention_contract,
    heads.check_split_heads_contract,
    heads.check_merge_heads_contract,
    heads.check_multi_head_attention_contract,
    gqa.check_kv_repeat_contract,
    norms.check_layer_norm_contract,
    decoding.check_token_distribution_contract,
    decoding.check_greedy_trace_contract,
]


def test_attention_contract_errors_are_tiny(nb):
    summary = attention.check_attention_contract(nb["scaled_dot_product_attention"])
    assert summary["output_max_error"] < 1e-12 and summary["gradient_max_error"] < 1e-11
    assert summary["wrong_cache_mask_max_error"] > 1e-3


def test_a_stub_still_raises_not_implemented():
    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise 1: write me")

    for contract in CONTRACTS:
        with pytest.raises(NotImplementedError):
            contract(stub)


def test_a_crash_on_valid_input_becomes_a_named_violation():
    def crashes(*args, **kwargs):
        raise IndexError("index 4 is out of bounds")

    with pytest.raises(ContractViolation) as caught:
        decoding.check_greedy_trace_contract(crashes)
    assert "IndexError" in str(caught.value) and "raised on a valid input" in str(caught.value)


def test_an_attention_that_returns_a_tuple_fails_by_name():
    with pytest.raises(ContractViolation, match="a result with tensor attributes .output and .weights"):
        attention.check_attention_contract(lambda q, k, v, allowed=None, **kw: (q, k))


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
    args = tools_cli.parse_args(["bench", "speed", "module3", "--repeats", "2"])
    assert (args.command, args.what, args.names, args.repeats) == ("bench", "speed", ["module3"], 2)
    with pytest.raises(SystemExit):
        tools_cli.parse_args(["bench", "nonsense"])


def test_notebook_ratio_rejects_zero_repeats():
    from tools import bench
    from builder.config import load_course

    with pytest.raises(ValueError, match="repeats"):
        course = load_course(ROOT)
        bench.notebook_ratio(course, course.notebooks[0], repeats=0)


def test_committed_text_reads_a_file_at_a_revision_and_names_what_is_missing():
    from tools import bench

    path = ROOT / "README.md"
    assert bench.committed_text(ROOT, "HEAD", path).splitlines()[0] == path.read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(ValueError, match="nosuchrev"):
        bench.committed_text(ROOT, "nosuchrev", path)


def test_against_applies_to_the_speed_bench_only(capsys):
    from builder import cli

    assert tools_cli.main(["bench", "tiled", "--against", "HEAD"]) == 2
    assert "applies to `bench speed` only" in capsys.readouterr().err


def test_bench_speed_on_the_colab_kernel_needs_its_environment_and_times_on_its_kernel(monkeypatch, tmp_path, capsys):
    import json

    from builder import colab
    from tools import bench

    assert tools_cli.main(["bench", "tiled", "--colab"]) == 2
    assert "applies to `bench speed` only" in capsys.readouterr().err
    monkeypatch.setattr(colab, "pins_file", lambda venv: tmp_path / "missing.json")
    assert tools_cli.main(["bench", "speed", "module3", "--colab"]) == 2
    assert "run `python -m builder colab` once" in capsys.readouterr().err
    pins = tmp_path / "colab-pins.json"
    pins.write_text(json.dumps({"versions": {"ipython": "7.34.0", "ipykernel": "6.17.1"}}), encoding="utf-8")
    monkeypatch.setattr(colab, "pins_file", lambda venv: pins)
    monkeypatch.setenv("JUPYTER_PATH", "")  # use_kernel points Jupyter at the environment; restored after the test
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    asked = {}
    monkeypatch.setitem(bench.BENCHES, "speed", lambda course, names, **options: asked.update(options) or [{"ok": True}])
    assert tools_cli.main(["bench", "speed", "module3", "--colab", "--repeats", "2"]) == 0
    assert asked == {"repeats": 2, "kernel_name": colab.KERNEL_NAME}
    assert "colab-pinned kernel: ipython 7.34.0, ipykernel 6.17.1" in capsys.readouterr().out


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
        "plot_sentence_attention": ({(c, t): torch.eye(3) for c in (False, True) for t in (0.5, 1.0)}, ["a", "b", "c"], (0.5, 1.0), 1),
        "plot_saturation": (nb["saturation_experiment"]((2, 8), trials=5),),
        "plot_query_gradients": (nb["query_gradient_experiment"]((2, 8), trials=5), (2, 8)),
        "plot_head_sharing": (),
        "plot_split_merge": (),
        "plot_cost": (lengths, lengths ** 2, lengths * 1e3, 4096),
        "plot_decoder_block": (),
        "plot_leakage": ({"causal": np.zeros(5), "no mask": np.ones(5)},),
        "plot_ablation": ([2.1, 0.5, 0.01], [2.1, 2.1, 2.08], 8),
        "plot_copy_attention": (np.full((2, 3, 3), 1 / 3), [4, 1, 4]),
        "plot_policies": ({"T = 1": [0.7, 0.3], "T = 2": [0.6, 0.4], "k": [1.0, 0.0], "p": [1.0, 0.0]}, [1.0, 0.0]),
        "plot_induction_heads": ((np.full((18, 18), 1 / 18), np.eye(18)), 8),
    }
    assert set(cases) == {name for name in nb if name.startswith("plot_")}, "a new plot function needs a case here"
    too_small = []
    for name, args in cases.items():
        for language in ("en", "ru"):
            fig = nb[name](*args, language=language)
            fig.savefig(io.BytesIO(), format="png")
            if shown_text_pt(fig) < 9:
                too_small.append(f"{name} ({language}): {shown_text_pt(fig):.1f} pt")
            plt.close(fig)
    assert not too_small, f"figures whose smallest text is under 9 pt as shown (at most 800 px wide): {too_small}"


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


def test_bench_with_bad_arguments_is_a_usage_error(capsys):
    assert tools_cli.main(["bench", "speed", "--repeats", "0"]) == exits.USAGE
    assert tools_cli.main(["bench", "tiled", "module3"]) == exits.USAGE
    err = capsys.readouterr().err
    assert "repeats must be at least 1" in err and "takes no notebook names" in err


# --- The capstone (section 15): the exercises' solutions are the reference; builder/contracts/capstone.py is held equal ---

def test_the_notebooks_capstone_equals_the_shared_capstone(nb):
    """Module 3's solutions and builder/contracts/capstone.py (which 5.1 and 5.2 inline) are one model, piece by piece."""
    from builder.contracts import capstone

    config = capstone.CapstoneConfig(n_heads=4, n_kv_heads=2, n_layers=2)
    x, positions = torch.randn(2, 3, 7, 8, dtype=torch.float64), torch.tensor([0, 3, 4, 9, 10, 11, 40])
    assert torch.equal(nb["apply_rope"](x, positions, 500.0), capstone.apply_rope(x, positions, 500.0))
    torch.manual_seed(4)
    ours = nb["CapstoneLM"](config).eval()
    torch.manual_seed(4)
    theirs = capstone.CapstoneLM(config).eval()
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()))  # same init order
    tokens = torch.randint(16, (3, 20))
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens), theirs(tokens), atol=1e-5, rtol=1e-5)
    assert torch.equal(nb["generate"](ours, tokens[:, :6], 12), capstone.generate(theirs, tokens[:, :6], 12))
    batches = [capstone.induction_batch(8, torch.Generator().manual_seed(s)) for s in range(3)]
    losses = [[step(model, torch.optim.AdamW(model.parameters(), lr=1e-2), *batch) for batch in batches]
              for step, model in ((nb["train_step"], ours), (capstone.train_step, theirs))]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    for a, b in zip(nb["induction_batch"](16, torch.Generator().manual_seed(2)), capstone.induction_batch(16, torch.Generator().manual_seed(2))):
        assert torch.equal(a, b)
    one_layer = capstone.CapstoneConfig(n_layers=1)
    torch.manual_seed(5)
    ours = nb["CapstoneLM"](one_layer)
    ours_losses = nb["fit_induction"](ours, nb["train_step"], 6, 3)
    torch.manual_seed(5)
    theirs = capstone.CapstoneLM(one_layer)
    assert ours_losses == pytest.approx(capstone.fit_induction(theirs, capstone.train_step, 6, 3), rel=1e-4)
    assert nb["induction_accuracy"](ours, batch=64) == pytest.approx(capstone.induction_accuracy(theirs, batch=64), abs=1e-6)


def test_the_notebooks_kv_cache_counts_its_bytes_and_refuses_gaps(nb):
    config = nb["CapstoneConfig"](n_layers=3, n_kv_heads=2, n_heads=2)
    cache = nb["KVCache"](config, 4)
    keys = torch.zeros(4, 2, 5, 16)
    for layer in cache.layers:
        layer.append(keys, keys, 0)
    assert cache.length == 5 and cache.nbytes() == 2 * 3 * 4 * 2 * 5 * 16 * 4
    with pytest.raises(ValueError, match="cannot write"):
        cache.layers[0].append(keys, keys, 7)


def test_the_capstone_refuses_bad_tokens_and_lengths(nb):
    model = nb["CapstoneLM"](nb["CapstoneConfig"](max_len=10))
    with pytest.raises(TypeError, match="torch.long"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="ids from 0 to 15"):
        model(torch.tensor([[0, 16]]))
    with pytest.raises(ValueError, match="n_new"):
        nb["generate"](model, torch.zeros(1, 4, dtype=torch.long), 7)
    with pytest.raises(ValueError, match="even"):
        nb["apply_rope"](torch.zeros(2, 3), torch.arange(2))
    with pytest.raises(ValueError, match="positions must be an integer CPU tensor"):
        nb["apply_rope"](torch.zeros(2, 4), torch.arange(3))
