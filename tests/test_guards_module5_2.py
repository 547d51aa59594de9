"""Issue 12's table rows for Module 5.2 (the second half of the former Module 5): each failed on main (431f0ca) and passes now."""

import numpy as np
import pytest

from tests.support import notebook



@pytest.fixture(scope="module")
def nb():
    return notebook("module5_2")


def test_a_window_longer_than_the_sequence_allocates_only_for_the_data(nb):
    import tracemalloc

    gen = np.random.default_rng(0)
    Q, K, V = (gen.standard_normal((6, 4)) for _ in range(3))
    tracemalloc.start()
    try:
        outputs, largest = nb["rolling_window_decode"](Q, K, V, 10**9)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert largest == 6
    assert peak < 1 << 20, f"a 6-token stream took {peak:,} bytes"
    full, _ = nb["rolling_window_decode"](Q, K, V, 6)
    np.testing.assert_allclose(outputs, full, atol=1e-12)


def test_parallel_scan_refuses_states_past_float64_instead_of_returning_nan(nb):
    with np.errstate(over="ignore", invalid="ignore"), pytest.raises(FloatingPointError, match="float64"):
        nb["parallel_scan"](np.full(6, 1e200), np.ones(6))


def test_shortlist_experiment_with_an_overflowing_sharpness_raises_instead_of_nan(nb):
    with pytest.raises(FloatingPointError, match="sharpness"):
        nb["shortlist_experiment"](sharpness=1e308)


def test_ssm_kernel_refuses_an_unstable_decay_whose_powers_overflow(nb):
    with pytest.raises(FloatingPointError, match="unstable"):
        nb["ssm_kernel"](2.0, 1.0, 0.0, 2000)


def test_linear_attention_weights_refuses_queries_and_keys_of_different_lengths(nb):
    gen = np.random.default_rng(1)
    with pytest.raises(ValueError, match="same shape"):
        nb["linear_attention_weights"](gen.standard_normal((5, 3)), gen.standard_normal((7, 3)))


def test_hybrid_cache_bytes_refuses_a_string_context(nb):
    with pytest.raises(TypeError, match="context"):
        nb["hybrid_cache_bytes"]("abc", attention_layers=0)
    with pytest.raises(TypeError, match="context"):
        nb["hybrid_cache_bytes"]("abc")


def test_quantized_attention_error_refuses_key_axis_minus_one(nb):
    with pytest.raises(ValueError, match="key_axis"):
        nb["quantized_attention_error"](4, -1)


def test_pairs_computed_refuses_an_all_nan_mask(nb):
    with pytest.raises(ValueError, match="NaN"):
        nb["pairs_computed"](np.full((4, 4), np.nan))


def test_linear_attention_refuses_an_overflow_instead_of_returning_nan(nb):
    huge = np.full((3, 2), 1e200)
    for call in (lambda: nb["linear_attention_weights"](huge, huge), lambda: nb["linear_attention_quadratic"](huge, huge, np.ones((3, 2)))):
        with pytest.raises(FloatingPointError, match="scale Q and K down"):
            call()


def test_exercise_functions_refuse_products_past_float64_instead_of_returning_nan(nb):
    huge = np.full((3, 2), 1e200)
    calls = (lambda: nb["rolling_window_decode"](huge, huge, huge, 2), lambda: nb["linear_attention_recurrent"](huge, huge, huge),
             lambda: nb["rolling_buffer_step"](huge, huge, 0, huge[0], huge[0], huge[0]),
             lambda: nb["linear_attention_step"](huge[:2], huge[0], huge[0], huge[0], huge[0]),
             lambda: nb["selective_step"](1e300, 1e300, 10.0, -1.0, 1e300, 1.0))
    for call in calls:
        with pytest.raises(FloatingPointError, match="float64"):
            call()


def test_the_designs_table_names_a_source_a_date_and_a_status_for_every_row(nb):
    for design in nb["DESIGNS"]:
        assert design["source"] and design["checked"] and design["status"], design["name"]
        if design["parts"] is None:
            assert "not sized" in design["status"], design["name"]


# ---- issue 37: an answer that gives the right numbers without the exercise's technique fails its check ----


def _violation(nb, contract, function):
    """The ContractViolation the contract raises on ``function`` (the test fails when it passes)."""
    with pytest.raises(nb["ContractViolation"]) as caught:
        nb[contract](function)
    return caught.value


def test_a_rolling_step_that_keeps_the_whole_history_and_masks_it_fails(nb):
    """Exercise 1's shortcut, sdpa over every token with a window mask, moved into the step: it ignores the buffer."""
    history = {"K": [], "V": []}

    def shortcut(keys, values, t, q, k, v):
        if t == 0:
            history["K"], history["V"] = [], []
        history["K"].append(k), history["V"].append(v)
        K, V, window = np.array(history["K"]), np.array(history["V"]), len(keys)
        out = nb["sdpa"](q[None, :], K, V, nb["make_mask"](len(K), window)[-1:])[0]
        keys[t % window], values[t % window] = k, v
        return keys, values, out

    violation = _violation(nb, "check_rolling_buffer_contract", shortcut)
    assert "buffer it was given" in violation.property


def test_a_rolling_step_that_grows_its_buffer_fails_on_the_slots_it_allocated(nb):
    def grows(keys, values, t, q, k, v):
        keys, values = np.vstack([keys, k]), np.vstack([values, v])
        window = len(keys) - 1
        held = keys[-min(t + 1, window):]
        scores = held @ q / np.sqrt(len(q))
        w = np.exp(scores - scores.max())
        return keys, values, w @ values[-len(held):] / w.sum()

    assert "never grows" in _violation(nb, "check_rolling_buffer_contract", grows).property


def test_a_rolling_step_that_shifts_every_slot_fails_on_the_slots_it_touched(nb):
    def shifts(keys, values, t, q, k, v):
        keys, values = np.roll(keys, -1, axis=0), np.roll(values, -1, axis=0)
        keys[-1], values[-1] = k, v
        held = min(t + 1, len(keys))
        scores = keys[-held:] @ q / np.sqrt(len(q))
        w = np.exp(scores - scores.max())
        return keys, values, w @ values[-held:] / w.sum()

    violation = _violation(nb, "check_rolling_buffer_contract", shifts)
    assert "touches no other slot" in violation.property


def test_a_linear_attention_step_that_keeps_the_tokens_and_forms_the_quadratic_form_fails(nb):
    """Exercise 2's shortcut: the n x n form over a private history, with S and z recomputed from it."""
    history = {"Q": [], "K": [], "V": []}

    def quadratic(S, z, q, k, v):
        if not S.any() or (history["K"] and len(history["K"][0]) != len(k)):  # a new stream
            history["Q"], history["K"], history["V"] = [], [], []
        for name, x in zip("QKV", (q, k, v)):
            history[name].append(x)
        Q, K, V = (np.array(history[name]) for name in "QKV")
        out = nb["linear_attention_quadratic"](Q, K, V)[-1]
        phi_K = nb["feature_map"](K)
        return phi_K.T @ V, phi_K.sum(axis=0), out

    violation = _violation(nb, "check_linear_attention_contract", quadratic)
    assert "continues the sums it is given" in violation.property


def test_latent_attention_that_returns_the_expanded_form_fails(nb):
    """Exercise 4's shortcut, named in issue 37: return mla_expanded_attention(...)."""

    def expanded(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask=None):
        return nb["mla_expanded_attention"](q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask)

    with np.errstate(over="ignore", invalid="ignore"):
        violation = _violation(nb, "check_latent_absorption_contract", expanded)
    assert "never formed" in violation.property and "latent @ W_uk" in violation.hint


def test_the_reference_solutions_pass_their_sharpened_checks(nb):
    for contract, function in (("check_rolling_buffer_contract", "rolling_buffer_step"), ("check_linear_attention_contract", "linear_attention_step"),
                               ("check_latent_absorption_contract", "mla_absorbed_attention")):
        assert nb[contract](nb[function])


# ---- the fuzz's findings in section 16's memories: named errors, never NaN or AttributeError from inside ----


@pytest.fixture(scope="module")
def capstone_attention(nb):
    import torch

    torch.manual_seed(0)
    config = nb["CapstoneConfig"](vocab=16, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=64, max_len=64)
    return nb["CapstoneLM"](config).eval()


def test_a_memory_refuses_huge_inputs_whose_scores_overflow_instead_of_returning_nan(nb, capstone_attention):
    import torch

    attn = capstone_attention.blocks[0].attn
    for memory in (nb["FullMemory"](attn), nb["LatentMemory"](attn, 8)):
        with torch.no_grad(), pytest.raises(FloatingPointError, match="attn_norm|too large"):
            memory.attend(attn, torch.full((2, 1, 32), 1e30), torch.tensor([0]))


def test_a_memory_names_a_wrong_attention_input_or_position(nb, capstone_attention):
    import torch

    attn, h = capstone_attention.blocks[0].attn, torch.zeros(2, 1, 32)
    memory = nb["FullMemory"](attn)
    with pytest.raises(TypeError, match="CapstoneAttention"):
        memory.attend(None, h, torch.tensor([0]))
    with pytest.raises(ValueError, match="d_model = 32"):
        memory.attend(attn, torch.zeros(2, 1, 33), torch.tensor([0]))
    with pytest.raises(TypeError, match="integer tensor"):
        memory.attend(attn, h, np.array([0]))
    with torch.no_grad():
        memory.attend(attn, h, torch.tensor([0]))
    with pytest.raises(ValueError, match="batch of 2 rows"):
        memory.attend(attn, torch.zeros(3, 1, 32), torch.tensor([1]))
    with pytest.raises(TypeError, match="k must be a torch.Tensor"):
        memory.keep(None, torch.zeros(2, 1, 1, 16))
    with pytest.raises(ValueError, match=r"\[2, 1, 1, 16\]"):
        memory.keep(torch.zeros(2, 1, 1, 16), torch.zeros(2, 1, 2, 16))
    with pytest.raises(ValueError, match="rank must be at most 32"):
        nb["LatentMemory"](attn, 33)
    assert nb["KiviMemory"](attn, 4).nbytes() == 0  # an empty memory holds nothing


def test_decode_with_and_measure_design_refuse_what_is_not_a_capstone(nb, capstone_attention):
    import torch

    with pytest.raises(TypeError, match="CapstoneLM"):
        nb["measure_design"](None, nb["FullMemory"])
    with pytest.raises(TypeError, match="memory must be a function"):
        nb["decode_with"](capstone_attention, torch.zeros(1, 3, dtype=torch.long), "full")
    with pytest.raises(ValueError, match="vocab = 16"):
        nb["decode_with"](capstone_attention, torch.full((1, 3), 16), nb["FullMemory"])
    with pytest.raises(TypeError, match="integer token ids"):
        nb["decode_with"](capstone_attention, torch.zeros(1, 3), nb["FullMemory"])
