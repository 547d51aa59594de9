"""The capstone model of builder/contracts/capstone.py: its pieces, its KV cache, the induction task it must learn
with two layers and not with one, and its equivalence with `transformers`' LlamaForCausalLM."""

import pytest
import torch
import torch.nn.functional as F

from builder.contracts import capstone
from builder.contracts.capstone import (
    CapstoneConfig,
    CapstoneLM,
    KVCache,
    apply_rope,
    causal_attention,
    generate,
    induction_accuracy,
    induction_batch,
    train_capstone,
)


@pytest.fixture(scope="module")
def trained():
    """The 2-layer and the 1-layer model after the default recipe (seed 0), with their training losses."""
    return {layers: train_capstone(CapstoneConfig(n_layers=layers), seed=0) for layers in (2, 1)}


def untrained(**changes):
    """A seeded, untrained model with the default config changed by ``changes``."""
    torch.manual_seed(3)
    return CapstoneLM(CapstoneConfig().replace(**changes)).eval()


# --- The pieces -------------------------------------------------------------------------------------------

def test_rope_scores_depend_only_on_the_offset():
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(8, dtype=torch.float64, generator=gen), torch.randn(8, dtype=torch.float64, generator=gen)

    def score(m, n):
        return float(apply_rope(q[None], torch.tensor([m])) @ apply_rope(k[None], torch.tensor([n]))[0])

    assert score(5, 2) == pytest.approx(score(103, 100), abs=1e-10)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)
    assert score(0, 0) == pytest.approx(float(q @ k), abs=1e-12)  # position 0 is no rotation


def test_rope_rotates_interleaved_pairs_by_position_times_frequency():
    x = torch.randn(2, 3, 4, 6, dtype=torch.float64)
    positions = torch.tensor([0, 7, 2, 30])
    z = torch.view_as_complex(x.reshape(2, 3, 4, 3, 2).contiguous())  # pairs (2i, 2i+1) as complex numbers
    angle = positions[:, None].double() * 50.0 ** (-torch.arange(3, dtype=torch.float64) * 2 / 6)
    expected = torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).reshape(x.shape)
    torch.testing.assert_close(apply_rope(x, positions, 50.0), expected, atol=1e-12, rtol=0)


def test_rmsnorm_matches_torch_and_swiglu_is_gated():
    norm = capstone.RMSNorm(5, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, -1.0, 0.5, 3.0]))
    x = torch.randn(4, 5) * 3 + 1
    torch.testing.assert_close(norm(x), F.rms_norm(x, (5,), norm.weight, eps=1e-5))
    ffn = capstone.SwiGLU(5, 7)
    torch.testing.assert_close(ffn(x), ffn.w_down(F.silu(ffn.w_gate(x)) * ffn.w_up(x)))


def test_causal_attention_matches_sdpa_with_lower_right_mask_and_shared_kv_heads():
    q = torch.randn(2, 4, 3, 8, dtype=torch.float64)
    k, v = torch.randn(2, 2, 5, 8, dtype=torch.float64), torch.randn(2, 2, 5, 8, dtype=torch.float64)
    out, weights = causal_attention(q, k, v, query_offset=2)
    expected = F.scaled_dot_product_attention(
        q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=torch.ones(3, 5, dtype=torch.bool).tril(2)
    )
    torch.testing.assert_close(out, expected)
    assert weights.shape == (2, 4, 3, 5) and float(weights[..., 0, 3:].abs().max()) == 0.0


def test_a_decode_loop_through_qkv_and_merge_equals_forward():
    """The per-block recipe 5.1 and 5.2 use to swap in their own cache gives the model's own logits."""
    model = untrained(n_heads=4, n_kv_heads=2)
    tokens = torch.randint(16, (2, 9))
    x, positions = model.embed(tokens), torch.arange(9)
    with torch.no_grad():
        for block in model.blocks:
            q, k, v = block.attn.qkv(block.attn_norm(x), positions)
            x = x + block.attn.merge(causal_attention(q, k, v)[0])
            x = x + block.ffn(block.ffn_norm(x))
        torch.testing.assert_close(model.head(model.norm(x)), model(tokens))


def test_attention_maps_are_the_weights_forward_uses():
    model = untrained()
    maps = capstone.attention_maps(model, torch.randint(16, (1, 6)))
    assert [tuple(m.shape) for m in maps] == [(1, 2, 6, 6)] * 2
    torch.testing.assert_close(maps[0].sum(-1), torch.ones(1, 2, 6))
    assert float(maps[1].triu(1).abs().max()) == 0.0


# --- The KV cache and generation --------------------------------------------------------------------------

def test_cached_generation_equals_uncached_token_for_token(trained):
    model = trained[2][0]
    prompts = induction_batch(8, torch.Generator().manual_seed(9))[0][:, :14]
    cached, uncached = generate(model, prompts, 30, cache=True), generate(model, prompts, 30, cache=False)
    assert cached.shape == (8, 44) and torch.equal(cached, uncached)
    grouped = untrained(n_heads=4, n_kv_heads=2, n_layers=3)
    assert torch.equal(generate(grouped, prompts[:, :5], 20), generate(grouped, prompts[:, :5], 20, cache=False))


def test_cached_logits_equal_the_full_forward_pass():
    model = untrained(n_heads=4, n_kv_heads=1)
    tokens = torch.randint(16, (3, 12))
    cache = KVCache(model.config, 3)
    with torch.no_grad():
        steps = [model(tokens[:, :5], cache)] + [model(tokens[:, t:t + 1], cache) for t in range(5, 12)]
        torch.testing.assert_close(torch.cat(steps, dim=1), model(tokens), atol=1e-5, rtol=1e-5)
    config = model.config
    assert cache.length == 12
    assert cache.nbytes() == 2 * config.n_layers * 3 * config.n_kv_heads * 12 * config.head_dim * 4
    assert cache.nbytes(used=False) == cache.nbytes() * config.max_len // 12


def test_the_trained_model_continues_a_repeat():
    """After one full repeat a trained model keeps copying: the induction head needs no fixed offset."""
    model, _ = train_capstone(CapstoneConfig(), seed=0)
    segment = torch.tensor([[3, 9, 1, 14, 6, 0, 11]])
    out = generate(model, torch.cat((segment, segment[:, :2]), 1), 5)
    assert out[0, 9:].tolist() == segment[0, 2:].tolist()


def test_bad_inputs_are_refused_with_value_errors():
    with pytest.raises(ValueError, match="n_heads by n_kv_heads"):
        CapstoneConfig(n_heads=2, n_kv_heads=3)
    with pytest.raises(ValueError, match="even head_dim"):
        CapstoneConfig(d_model=6, n_heads=2)
    with pytest.raises(ValueError, match="vocab must be an int"):
        CapstoneConfig(vocab=True)
    model = untrained(max_len=10)
    with pytest.raises(ValueError, match="n_new must be at most 6"):
        generate(model, torch.zeros(1, 4, dtype=torch.long), 7)
    cache = KVCache(model.config, 1)
    with pytest.raises(ValueError, match="append in order"):
        cache.layers[0].append(torch.zeros(1, 1, 2, 16), torch.zeros(1, 1, 2, 16), 3)
    with pytest.raises(ValueError, match="k_max must be at most 8"):
        induction_batch(2, torch.Generator(), vocab=8, k_max=12)


# --- The induction task -----------------------------------------------------------------------------------

def test_induction_batches_repeat_distinct_tokens_and_score_the_findable_repeat():
    inputs, targets, scored = induction_batch(64, torch.Generator().manual_seed(4), vocab=16, k_min=4, k_max=12)
    sequences = torch.cat((inputs, targets[:, -1:]), dim=1)
    assert torch.equal(inputs[:, 1:], targets[:, :-1]) and inputs.shape == (64, 23)
    lengths = scored.sum(1) + 1
    assert set(lengths.tolist()) <= set(range(4, 13)) and len(set(lengths.tolist())) > 4
    for row, k in zip(sequences, lengths.tolist()):
        assert len(set(row[:k].tolist())) == k and torch.equal(row[:k], row[k:2 * k])
    position = torch.arange(23)[None, :]
    assert torch.equal(scored, (position >= lengths[:, None]) & (position <= 2 * lengths[:, None] - 2))
    assert torch.equal(targets[scored], inputs.gather(1, (position - lengths[:, None] + 1).clamp(min=0))[scored])


def test_two_layers_learn_the_induction_task_and_one_layer_does_not(trained):
    two, one = induction_accuracy(trained[2][0]), induction_accuracy(trained[1][0])
    assert two >= 0.95, f"2 layers reached only {two:.3f} held-out accuracy"
    assert one <= 0.85, f"1 layer reached {one:.3f}: the task does not need an induction head"
    assert trained[2][1][-1] < 0.2 and trained[1][1][-1] > 1.0  # nats per scored token (chance: ln 16 = 2.77)


def test_training_is_deterministic():
    first = train_capstone(CapstoneConfig(n_layers=1), steps=5, seed=7)[1]
    assert first == train_capstone(CapstoneConfig(n_layers=1), steps=5, seed=7)[1]
    assert first != train_capstone(CapstoneConfig(n_layers=1), steps=5, seed=8)[1]


# --- The library people use -------------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [{}, {"n_heads": 4, "n_kv_heads": 2, "n_layers": 3, "rope_base": 500.0}])
def test_logits_equal_transformers_llama_for_causal_lm(changes):
    model = untrained(**changes)
    tokens = torch.randint(16, (3, 20))
    with torch.no_grad():
        ours, theirs = model(tokens), capstone.to_transformers_llama(model)(tokens).logits
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def test_the_inlined_sources_run_on_their_own():
    """Inlined in __all__'s order into an empty namespace, as a notebook's hidden cell holds them, the pieces train."""
    from builder import inline
    from builder.contracts import validation

    namespace = {}
    for name in validation.__all__:  # the argument checks every notebook inlines first
        exec(compile(inline.source_of(name), f"<inline {name}>", "exec"), namespace)  # noqa: S102 - our own source
    for name in capstone.__all__:
        assert inline.dependencies(name) <= set(capstone.__all__[:capstone.__all__.index(name)]) | set(validation.__all__), name
        exec(compile(inline.source_of(name), f"<inline {name}>", "exec"), namespace)  # noqa: S102 - our own source
    model, losses = namespace["train_capstone"](namespace["CapstoneConfig"](n_layers=1), steps=3, seed=7)
    assert losses == train_capstone(CapstoneConfig(n_layers=1), steps=3, seed=7)[1]
