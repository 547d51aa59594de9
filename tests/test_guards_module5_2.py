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
             lambda: nb["selective_step"](1e300, 1e300, 10.0, -1.0, 1e300, 1.0))
    for call in calls:
        with pytest.raises(FloatingPointError, match="float64"):
            call()


def test_the_designs_table_names_a_source_a_date_and_a_status_for_every_row(nb):
    for design in nb["DESIGNS"]:
        assert design["source"] and design["checked"] and design["status"], design["name"]
        if design["parts"] is None:
            assert "not sized" in design["status"], design["name"]
