"""Issue 12's guards in Module 5.1 (masks, sdpa, GQA, the cache calculator, the tiled kernels).

Each test is one row of the issue's table: it failed before the guards and passes after.
"""

import contextlib
import resource
import tracemalloc

import numpy as np
import pytest
import torch

from tests.support import notebook


GIB = 1 << 30


@contextlib.contextmanager
def address_space_limit(extra_bytes=2 * GIB):
    """Cap the address space at its current size plus ``extra_bytes``: an allocation past it fails fast."""
    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + extra_bytes if hard == resource.RLIM_INFINITY else min(hard, current + extra_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture(scope="module")
def nb():
    return notebook("module5_1")


def test_make_mask_131072_is_refused_by_the_budget_not_the_allocator(nb):
    with address_space_limit(), pytest.raises(ValueError, match="ALLOCATION_BUDGET_BYTES") as refused:
        nb["make_mask"](131_072)
    assert "(131072, 131072)" in str(refused.value)


@pytest.mark.parametrize("call", [
    lambda nb: nb["sdpa"](*(np.ones((2**17, 1)),) * 3),
    lambda nb: nb["repeat_kv_heads"](np.ones((2, 4, 2)), 10**9),
    lambda nb: nb["torch_sdpa_explicit"](*(torch.ones(2**17, 1),) * 3),
], ids=["sdpa scores", "repeat_kv_heads", "torch_sdpa_explicit scores"])
def test_sizes_over_the_budget_are_refused_before_allocating(nb, call):
    with address_space_limit(), pytest.raises(ValueError, match="budget"):
        call(nb)


def test_sdpa_accepts_tensors_that_require_grad(nb):
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((5, 4)) for _ in range(3))
    mask = nb["make_mask"](5)
    expected = nb["sdpa"](Q, K, V, mask)
    as_tensors = nb["sdpa"](torch.tensor(Q, requires_grad=True), K, V)
    np.testing.assert_allclose(as_tensors, nb["sdpa"](Q, K, V), rtol=0, atol=0)
    with_mask = nb["sdpa"](*(torch.tensor(a, requires_grad=True) for a in (Q, K, V)), torch.tensor(mask, requires_grad=True),
                           sink=torch.tensor(0.5, requires_grad=True))
    np.testing.assert_allclose(with_mask, nb["sdpa"](Q, K, V, mask, sink=0.5), rtol=0, atol=0)
    assert not np.allclose(with_mask, expected)  # the sink was used


def _tensor_calls(nb, make):
    """(name, call) for every function of this part that accepts tensors, each tensor argument built by ``make``."""
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((6, 4)) for _ in range(3))
    heads = rng.standard_normal((2, 6, 4))
    mask = nb["make_mask"](6)
    allowed = np.tril(np.ones((6, 6), dtype=bool))
    t = make
    return [
        ("sdpa Q", lambda: nb["sdpa"](t(Q), K, V)),
        ("sdpa mask", lambda: nb["sdpa"](Q, K, V, t(mask))),
        ("sdpa sink", lambda: nb["sdpa"](Q, K, V, sink=t(np.array(0.5)))),
        ("gqa_attention", lambda: nb["gqa_attention"](t(np.concatenate([heads, heads])), heads, t(heads), t(mask))),
        ("repeat_kv_heads", lambda: nb["repeat_kv_heads"](t(heads), 2)),
        ("online_softmax_dot", lambda: nb["online_softmax_dot"]([t(Q[0])], [t(K[0])])),
        ("tiled_attention_plain", lambda: nb["tiled_attention_plain"](t(Q), K, t(V), tile_size=4)),
        ("causal_tiled_attention", lambda: nb["causal_tiled_attention"](Q, t(K), V, tile_size=4)),
        ("tiled_attention", lambda: nb["tiled_attention"](t(Q), t(K), t(V), t(mask), tile_size=4)),
        ("torch_sdpa_explicit", lambda: nb["torch_sdpa_explicit"](t(Q), t(K), t(V))),
    ], [
        ("additive_mask", lambda: nb["additive_mask"](t(allowed))),
        ("block_kinds", lambda: nb["block_kinds"](t(allowed), 2)),
        ("torch_sdpa_explicit allowed", lambda: nb["torch_sdpa_explicit"](*(torch.tensor(a) for a in (Q, K, V)), t(allowed))),
    ]


def test_tensors_that_require_grad_work_wherever_tensors_are_accepted(nb):
    def grad(a):
        return torch.tensor(a, requires_grad=a.dtype.kind == "f")

    floats, booleans = _tensor_calls(nb, grad)
    for name, call in floats + booleans:
        result = call()
        assert result is not None, name


def test_meta_device_tensors_are_refused_with_type_error(nb):
    floats, booleans = _tensor_calls(nb, lambda a: torch.tensor(a).to("meta"))
    for name, call in floats + booleans:
        with pytest.raises(TypeError, match="CPU"):
            call()


@pytest.mark.parametrize("call", [
    lambda nb, Q, K, V: nb["tiled_attention"](Q, K, V, tile_size=10**12),
    lambda nb, Q, K, V: nb["tiled_attention"](Q, K, V, tile_size=2**40, causal=True, window=10**12),
    lambda nb, Q, K, V: nb["tiled_attention_plain"](Q, K, V, tile_size=10**12),
    lambda nb, Q, K, V: nb["causal_tiled_attention"](Q, K, V, tile_size=10**12),
    lambda nb, Q, K, V: nb["make_mask"](len(Q), window=10**12),
    lambda nb, Q, K, V: nb["block_kinds"](np.ones((len(Q), len(K)), dtype=bool), 10**12),
], ids=["tiled tile", "tiled window", "plain tile", "causal tile", "mask window", "block_kinds tile"])
def test_a_tile_or_window_larger_than_the_data_allocates_only_the_data(nb, call):
    rng = np.random.default_rng(2)
    Q, K, V = (rng.standard_normal((64, 4)) for _ in range(3))
    tracemalloc.start()
    try:
        call(nb, Q, K, V)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 64 * 8 * 8, f"peak {peak} bytes for 64 x 4 inputs"  # a few 64 x 64 float64 arrays at most


def test_plot_head_mapping_refuses_heads_that_do_not_group(nb):
    for bad in ((8, 0), (8, 3), (8, -1), (2**17, 1), (4, 8)):
        with pytest.raises(ValueError):
            nb["plot_head_mapping"](*bad)


def test_block_kinds_equals_its_per_block_definition_without_a_loop_over_blocks(nb):
    """Issue 25: a 2,000 x 2,000 mask in tiles of 1 took seconds in a Python loop; the whole-array form must agree with the loop."""
    rng = np.random.default_rng(25)
    for shape, tile in (((7, 5), 2), ((9, 9), 3), ((4, 11), 4), ((6, 6), 1), ((3, 8), 100)):
        allowed = rng.random(shape) < 0.5
        rows, cols = -(-shape[0] // tile), -(-shape[1] // tile)
        expected = [[2 if allowed[b * tile:(b + 1) * tile, c * tile:(c + 1) * tile].all()
                     else int(allowed[b * tile:(b + 1) * tile, c * tile:(c + 1) * tile].any()) for c in range(cols)] for b in range(rows)]
        assert nb["block_kinds"](allowed, tile).tolist() == expected, (shape, tile)
    assert nb["block_kinds"](np.tri(2000, dtype=bool), 1).shape == (2000, 2000)


def test_reserve_slots_leaves_the_given_book_alone_and_refuses_before_changing_anything(nb):
    book = {"block_size": 2, "refs": [1, 0], "tables": {"A": [0]}, "lengths": {"A": 1}}
    snapshot = {"block_size": 2, "refs": [1, 0], "tables": {"A": [0]}, "lengths": {"A": 1}}
    new, slots, copies = nb["reserve_slots"](book, "A", 3)
    assert book == snapshot and (new["tables"]["A"], slots, copies) == ([0, 1], [(0, 1), (1, 0), (1, 1)], [])
    with pytest.raises(ValueError, match="needs 2 free blocks for 4 tokens, 1 are free"):
        nb["reserve_slots"](book, "A", 4)
    assert book == snapshot


def test_paged_cache_reads_back_what_it_wrote_across_blocks(nb):
    config = nb["CapstoneConfig"](n_heads=4, n_kv_heads=2)
    cache = nb["PagedKVCache"](config, 6, 3)
    k, v = torch.randn(2, 7, config.head_dim), torch.randn(2, 7, config.head_dim)
    slots = cache.reserve("A", 7)
    cache.write(0, slots, k, v)
    keys, values = cache.read(0, "A")
    assert torch.equal(keys, k) and torch.equal(values, v) and cache.slots_held() == 9
