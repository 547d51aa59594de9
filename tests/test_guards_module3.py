"""Issue 12's table, Module 3 rows: each input here broke a public function of the notebook before its guards."""

import math

import matplotlib
import numpy as np
import pytest
import torch

from tests.support import notebook

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def nb():
    return notebook("module3")


def _finite_or_refused(call):
    """Run ``call``: it must raise FloatingPointError/ValueError or return a NaN-free, finite tensor."""
    try:
        result = call()
    except (FloatingPointError, ValueError):
        return
    result = result[0] if isinstance(result, tuple) else result
    assert bool(torch.isfinite(result).all()), f"NaN or infinity from finite input: {result}"


@pytest.mark.parametrize("call", [
    lambda nb: nb["causal_allowed"](131072, 131072),  # a 16 GiB mask
    lambda nb: nb["MultiHeadSelfAttention"](65536, 1),  # four 65,536 x 65,536 weight matrices: 64 GiB
], ids=["causal_allowed(131072, 131072)", "MultiHeadSelfAttention(65536, 1)"])
def test_huge_sizes_are_refused_by_the_budget_before_allocating(nb, call):
    with pytest.raises(ValueError) as caught:
        call(nb)
    message = str(caught.value)
    assert "ALLOCATION_BUDGET_BYTES" in message and "bytes" in message, message


def test_the_budget_message_names_the_shape_and_the_bytes(nb):
    with pytest.raises(ValueError, match=r"\(131072, 131072\) would take 17,179,869,184 bytes"):
        nb["causal_allowed"](131072, 131072)


@pytest.mark.parametrize("dtype, bytes_needed", [(torch.float64, "9,600,000,000"), (torch.float32, "4,800,000,000")])
def test_attention_budgets_scores_exponentials_and_weights_at_its_dtype(nb, dtype, bytes_needed):
    """T = 20,000: three (T, T) tensors of 8 (float64) or 4 (float32) bytes an entry, refused before any is allocated."""
    q = torch.zeros(20_000, 4, dtype=dtype)
    with pytest.raises(ValueError, match=rf"\(20000, 20000\) would take {bytes_needed} bytes"):
        nb["scaled_dot_product_attention"](q, q, q)


def test_layer_norm_with_eps_zero_gives_no_nan(nb):
    _finite_or_refused(lambda: nb["layer_norm"](torch.full((2, 4), 3.0, dtype=torch.float64), eps=0.0))
    spread = nb["layer_norm"](torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64), eps=0.0)  # still allowed
    assert torch.allclose(spread.mean(), torch.tensor(0.0, dtype=torch.float64), atol=1e-15)


def test_multi_head_attention_on_inputs_of_1e20_gives_no_nan(nb):
    torch.manual_seed(0)
    layer = nb["MultiHeadSelfAttention"](8, 2)
    _finite_or_refused(lambda: layer(torch.randn(1, 4, 8) * 1e20))


def test_jacobian_norm_of_1e30_gives_no_nan(nb):
    _finite_or_refused(lambda: nb["jacobian_norm"](torch.tensor([1e30, 1.0])))
    assert float(nb["jacobian_norm"](torch.tensor([0.5, 0.5], dtype=torch.float64))) == 0.5


def test_return_weights_must_be_a_flag(nb):
    layer = nb["MultiHeadSelfAttention"](8, 2)
    with pytest.raises(TypeError, match="return_weights"):
        layer(torch.zeros(1, 3, 8), return_weights="no")


@pytest.mark.parametrize("name, make_args", [
    ("plot_scores_and_weights", lambda: (torch.zeros(3, 3, requires_grad=True), torch.full((3, 3), 1 / 3, requires_grad=True))),
    ("plot_positions", lambda: (torch.rand(10, 8, requires_grad=True),)),
    ("plot_copy_attention", lambda: (torch.full((2, 3, 3), 1 / 3, requires_grad=True), [1, 2, 3])),
    ("plot_cost", lambda: (torch.tensor([10.0, 100.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True),
                           torch.tensor([2.0, 3.0], requires_grad=True), 64)),
], ids=["plot_scores_and_weights", "plot_positions", "plot_copy_attention", "plot_cost"])
def test_tensors_that_require_grad_are_accepted_where_tensors_are(nb, name, make_args):
    import matplotlib.pyplot as plt

    figure = nb[name](*make_args())
    assert isinstance(figure, matplotlib.figure.Figure)
    plt.close(figure)


def test_a_huge_diagram_is_refused_not_drawn(nb):
    with pytest.raises(ValueError, match="n_heads"):
        nb["plot_head_sharing"](n_heads=10**9)


def test_a_segment_longer_than_the_inputs_is_refused_not_nan(nb):
    model = nb["TinyLM"](vocab_size=6, d_model=8, n_heads=2, d_ff=16, max_length=8, use_attention=True)
    inputs = torch.zeros(2, 7, dtype=torch.long)
    with pytest.raises(ValueError, match="segment_length"):
        nb["copy_loss_and_accuracy"](model, inputs, inputs, 2**17)
    loss, accuracy = nb["copy_loss_and_accuracy"](model, inputs, inputs, 4)
    assert math.isfinite(float(loss.detach())) and 0.0 <= accuracy <= 1.0


def test_softmax_over_a_wide_score_range_is_exact(nb):
    weights = nb["softmax"](torch.tensor([-1000.0, 0.0, 1000.0], dtype=torch.float64))
    assert weights.tolist() == [0.0, 0.0, 1.0]
    assert np.isfinite(weights.numpy()).all()
