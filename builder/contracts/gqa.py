"""Contract check for grouped-query attention's head repetition."""

from .calls import contract_call
from .violations import ContractViolation, contract_assert

__all__ = ["check_kv_repeat_contract"]


def check_kv_repeat_contract(repeat_kv_heads):
    """Judge ``repeat_kv_heads(x, n_query_heads)``: KV heads on axis -3 repeated so query head h reads h // group.

    Returns a summary; raises ContractViolation naming the first property that fails.
    """
    import numpy as np

    gen = np.random.default_rng(707)
    for shape, n_query in (((3, 4, 2), 6), ((2, 2, 5, 3), 8), ((1, 4, 2), 5), ((4, 3, 2), 4)):
        x = gen.standard_normal(shape) + 10.0 * np.arange(shape[-3]).reshape(-1, 1, 1)  # head k sits near 10 k
        case = f"x of shape {shape} (KV heads on axis -3), n_query_heads={n_query}"
        out = np.asarray(contract_call(
            "a head count that is a multiple of the KV heads is accepted", case,
            "only counts that are not positive multiples of the KV heads are invalid", repeat_kv_heads, x, n_query,
        ))
        want_shape = shape[:-3] + (n_query,) + shape[-2:]
        contract_assert(
            out.shape == want_shape, "the output has one head per query head on axis -3", case,
            f"shape {want_shape}", f"shape {out.shape}", "repeat along axis -3 (the head axis), not along tokens or features",
        )
        group = n_query // shape[-3]
        for h in range(n_query):
            if not np.array_equal(out[..., h, :, :], x[..., h // group, :, :]):
                read = [k for k in range(shape[-3]) if np.array_equal(out[..., h, :, :], x[..., k, :, :])]
                raise ContractViolation(
                    "query head h reads KV head h // group (repeat, not tile)", case,
                    f"query head {h} -> KV head {h // group}",
                    f"query head {h} -> KV head {read[0] if read else 'none (values changed)'}",
                    "np.tile / torch.Tensor.repeat lay heads out as kv0, kv1, kv0, kv1: consecutive query heads must share "
                    "a KV head, so use np.repeat / torch.repeat_interleave",
                )
    for bad in (((3, 4, 2), 7), ((3, 4, 2), 0), ((4, 2), 4)):
        try:
            repeat_kv_heads(np.zeros(bad[0]), bad[1])
        except (TypeError, ValueError):
            continue
        raise ContractViolation(
            "a head count that is not a positive multiple of the KV heads is rejected", f"x of shape {bad[0]}, n_query_heads={bad[1]}",
            "TypeError or ValueError", "returned normally", "keep the argument checks at the top of the function",
        )
    return {"mapping": "PASS", "mqa": "PASS", "identity": "PASS"}
