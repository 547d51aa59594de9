"""Contract checks for KV-cache sizing and for the rolling buffer of sliding-window decoding."""

from .calls import contract_call, contract_parts
from .violations import ContractViolation, contract_assert, contract_close

__all__ = ["check_kv_cache_contract", "check_rolling_buffer_contract", "check_paged_cache_contract"]


def check_kv_cache_contract(kv_cache_bytes):
    """Judge ``kv_cache_bytes(context, layer_windows, kv_heads, head_dim, bytes_per_value=2)``.

    ``layer_windows`` holds one entry per layer: None for full attention, or the number of most
    recent tokens a windowed layer keeps. Returns a summary; raises ContractViolation on failure.
    """
    import numbers

    def expected(context, windows, kv_heads, head_dim, b=2):
        kept = sum(context if w is None else min(context, w) for w in windows)
        return 2 * kept * kv_heads * head_dim * b

    gpt_oss = [128 if layer % 2 == 0 else None for layer in range(36)]
    cases = [
        ("a full-attention layer keeps a key and a value per KV head for every token", 131072, [None] * 36, 8, 64, 2,
         "bytes = 2 (key and value) x tokens x KV heads x head_dim x bytes per value, summed over layers"),
        ("bytes_per_value scales the cache", 4096, [None] * 32, 8, 128, 1,
         "multiply by bytes_per_value instead of assuming 2 bytes"),
        ("a windowed layer keeps min(context, window) tokens", 100, [128] * 4, 8, 64, 2,
         "a short context does not fill the window: keep min(context, window) tokens, not window"),
        ("a windowed layer stops growing at its window", 131072, [128] * 4, 8, 64, 2,
         "beyond the window the oldest tokens are evicted: keep window tokens, not context"),
        ("each layer is sized by its own entry (gpt-oss: even layers windowed)", 131072, gpt_oss, 8, 64, 2,
         "sum over the layers; do not apply one layer's window to every layer"),
        ("mixed layers add up", 50, [None, 4, 16, 64, None], 2, 16, 2,
         "sum over the layers; a window larger than the context keeps the whole context"),
    ]
    for prop, context, windows, kv_heads, head_dim, b, hint in cases:
        case = f"context={context}, layer_windows={windows if len(windows) < 8 else f'{len(windows)} entries'}, kv_heads={kv_heads}, head_dim={head_dim}, bytes_per_value={b}"
        got = contract_call(prop, case, hint, kv_cache_bytes, context, windows, kv_heads, head_dim, bytes_per_value=b)
        want = expected(context, windows, kv_heads, head_dim, b)
        contract_assert(
            isinstance(got, numbers.Integral) and not isinstance(got, bool), "the size is an exact integer number of bytes", case,
            f"int {want}", f"{type(got).__name__} {got!r}", "use integer arithmetic (// not /); floats lose bytes above 2**53",
        )
        contract_assert(got == want, prop, case, f"{want} bytes", f"{got} bytes", hint)
    for bad in ((0, [None], 1, 1), (10, [], 1, 1), (10, [None, 0], 1, 1), (10, [None], 1.5, 1)):
        try:
            kv_cache_bytes(*bad)
        except (TypeError, ValueError):
            continue
        raise ContractViolation(
            "invalid sizes are rejected with TypeError or ValueError", f"kv_cache_bytes{bad}", "an error naming the argument",
            "returned normally", "keep the argument checks at the top of the function",
        )
    return {"cases": len(cases), "windows": "PASS", "exact_integers": "PASS"}


def check_rolling_buffer_contract(rolling_buffer_step):
    """Judge ``rolling_buffer_step(keys, values, t, q, k, v) -> (keys, values, output)``: one decode step.

    The buffer holds ``len(keys)`` slots (the window); token t overwrites slot t % window with k and v, touches no
    other slot, grows nothing, then attends over the min(t + 1, window) filled slots. The step sees only the buffer,
    so what it allocated and touched is read from the buffer it returns. Returns a summary.
    """
    import math

    import numpy as np

    def attend(keys, q, values):
        scores = keys @ q / math.sqrt(len(q))
        e = np.exp(scores - scores.max())
        return e @ values / e.sum()

    def step(case, keys, values, t, q, k, v, hint):
        prop = "a valid step gives (keys, values, output)"
        new_keys, new_values, output = contract_parts(prop, case, contract_call(
            prop, case, hint, rolling_buffer_step, keys.copy(), values.copy(), t, q, k, v), ("keys", "values", "output"))
        new_keys, new_values = np.asarray(new_keys, dtype=float), np.asarray(new_values, dtype=float)
        contract_assert(
            new_keys.shape == keys.shape and new_values.shape == values.shape, "the buffer never grows: it keeps its window of slots", case,
            f"keys {keys.shape}, values {values.shape}", f"keys {new_keys.shape}, values {new_values.shape}",
            "overwrite one slot in place; appending (np.vstack, np.concatenate) or keeping a list of every token is full attention's cache",
        )
        slot = t % len(keys)
        touched = sorted({int(i) for i in np.nonzero((new_keys != keys).any(axis=1) | (new_values != values).any(axis=1))[0]} - {slot})
        contract_assert(
            not touched and np.array_equal(new_keys[slot], k) and np.array_equal(new_values[slot], v),
            "token t writes its key and value into slot t % window and touches no other slot", case,
            f"slot {slot} = (k, v), every other slot as it was", f"slots changed: {sorted(set(touched) | {slot})}",
            "slot = t % len(keys): the slot of token t - window, which has just left the window; move nothing else",
        )
        return new_keys, new_values, output

    gen = np.random.default_rng(606)
    worst = 0.0
    # Steps on buffers the check fills itself: the step must read the buffer it is given, and only its filled slots.
    for window, t in ((1, 0), (1, 5), (3, 0), (3, 1), (4, 2), (4, 4), (4, 10), (5, 123)):
        keys, values = gen.standard_normal((window, 4)), gen.standard_normal((window, 3))
        keys[t + 1:], values[t + 1:] = 50.0, 1e6  # slots not yet filled hold stale data that must not be read
        q, k, v = gen.standard_normal(4), gen.standard_normal(4), gen.standard_normal(3)
        case = f"a {window}-slot buffer, token t={t}, d_k=4, d_v=3" + (" (slots after t hold stale data)" if t + 1 < window else "")
        new_keys, new_values, output = step(case, keys, values, t, q, k, v, "nothing here is invalid")
        held = min(t + 1, window)
        hint = ("attend over the filled slots only, keys[:min(t + 1, window)], after writing token t: a token reads its own key"
                if t + 1 < window else "softmax(keys @ q / sqrt(d_k)) @ values over every slot, after writing token t")
        worst = max(worst, contract_close(
            "token t attends over the filled slots of the buffer it was given, itself included", case, output,
            attend(new_keys[:held], q, new_values[:held]), hint,
        ))
    # Whole streams through the step: token t then reads exactly the last `window` tokens.
    n = 11
    Q, K, V = gen.standard_normal((n, 4)), gen.standard_normal((n, 4)), gen.standard_normal((n, 3))
    for window in (1, 3, 4, 11):
        keys, values = np.zeros((window, 4)), np.zeros((window, 3))
        case = f"11 tokens through a {window}-slot buffer, d_k=4, d_v=3"
        for t in range(n):
            keys, values, output = step(case + f", token {t}", keys, values, t, Q[t], K[t], V[t], "nothing here is invalid")
            first = max(0, t - window + 1)
            worst = max(worst, contract_close(
                "each token attends to exactly the last `window` tokens, itself included", case + f", token {t}", output,
                attend(K[first:t + 1], Q[t], V[first:t + 1]), "the buffer must hold tokens t - window + 1 .. t when token t attends; slot = t % window",
            ))
    # Scores of +1000 and -1000: exp(1000) overflows float64, so only a softmax shifted by its max survives.
    keys, values = np.array([[-1.0], [1.0]]), np.array([[2.0], [1.0]])
    prop, case = "scores of +-1000 give the same softmax as small ones, with no NaN", "q = 1000 (d_k=1), buffer keys (-1, 1), token t=2 with k = 1, v = 3"
    hint = "subtract the largest score before np.exp: exp(1000) is inf in float64, and inf / inf is NaN"
    new_keys, new_values, output = step(case, keys, values, 2, np.array([1000.0]), np.array([1.0]), np.array([3.0]), hint)
    contract_close(prop, case, output, attend(new_keys, np.array([1000.0]), new_values), hint)
    return {"max_error": worst, "slots_touched": "PASS", "buffer_never_grows": "PASS", "wide_scores": "PASS"}


def check_paged_cache_contract(reserve_slots):
    """Judge ``reserve_slots(book, sequence, n_tokens) -> (book, slots, copies)``, the bookkeeping of a paged KV cache.

    ``book`` is {"block_size", "refs" (a reference count per physical block), "tables" (sequence -> block list),
    "lengths" (sequence -> tokens)}. Each token goes to slot (table[p // block_size], p % block_size); a new block
    (the lowest free one) is taken only when the last is full; a block that another sequence shares is copied to a
    free block before the first token that diverges is written there (copy-on-write), and ``copies`` lists
    (source, destination) so the caller copies its keys and values. Returns a summary.
    """
    import copy
    import numbers

    def fresh(n_blocks=8, block_size=4):
        return {"block_size": block_size, "refs": [0] * n_blocks, "tables": {}, "lengths": {}}

    def fork(book, parent, child):
        book = copy.deepcopy(book)
        book["tables"][child], book["lengths"][child] = list(book["tables"][parent]), book["lengths"][parent]
        for block in book["tables"][child]:
            book["refs"][block] += 1
        return book

    def pairs(items):
        return isinstance(items, (list, tuple)) and all(
            isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(i, numbers.Integral) for i in x) for x in items)

    def reserve(prop, case, hint, book, sequence, n_tokens):
        book, slots, copies = contract_parts(prop, case, contract_call(prop, case, hint, reserve_slots, copy.deepcopy(book), sequence, n_tokens),
                                             ("book", "slots", "copies"))
        contract_assert(
            isinstance(book, dict) and {"block_size", "refs", "tables", "lengths"} <= set(book) and isinstance(book["refs"], (list, tuple))
            and isinstance(book["tables"], dict) and all(isinstance(t, (list, tuple)) for t in book["tables"].values())
            and isinstance(book["lengths"], dict) and pairs(slots) and pairs(copies),
            "reserve_slots returns (book, slots, copies): the book's four fields, and (block, offset) and (old, new) pairs", case,
            "a dict with block_size, refs, tables, lengths; a list of (block, offset); a list of (old, new)",
            f"{type(book).__name__} {book!r}"[:120], "return the updated book, the slots of the new tokens and the blocks to copy",
        )
        return book, slots, copies

    def same(prop, case, got, want, hint):
        contract_assert(got == want, prop, case, repr(want)[:160], repr(got)[:160], hint)

    as_pairs = lambda slots: [tuple(int(x) for x in s) for s in slots]  # noqa: E731 - tuples may cross as lists
    grow = "take a new block only when the last one is full (offset p % block_size == 0); otherwise write into the last block"
    case = "a fresh pool of 8 blocks of 4 slots; sequence 'A' reserves 6 tokens, then 3 more"
    book, slots, copies = reserve("a growing sequence takes blocks as it fills them", case, grow, fresh(), "A", 6)
    same("a growing sequence takes blocks as it fills them", case, (book["tables"], as_pairs(slots), list(copies)),
         ({"A": [0, 1]}, [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)], []), grow + "; the lowest free block comes first")
    book, slots, copies = reserve("a growing sequence takes blocks as it fills them", case, grow, book, "A", 3)
    same("a growing sequence takes blocks as it fills them", case, (book["tables"]["A"], as_pairs(slots), book["lengths"]["A"]),
         ([0, 1, 2], [(1, 2), (1, 3), (2, 0)], 9), grow)
    same("each block in use is counted once per sequence that holds it", case, list(book["refs"]), [1, 1, 1, 0, 0, 0, 0, 0],
         "set a new block's reference count to 1")

    shared = fork(book, "A", "B")
    case = "'A' holds 9 tokens in blocks [0, 1, 2]; 'B' is forked from it (blocks shared, counts 2); 'B' reserves 1 token"
    cow = ("the last block is shared (count 2): take a free block, list (old, new) in copies, point B's table at the new "
           "block, lower the old block's count and write the token there; A keeps its block")
    book_b, slots, copies = reserve("copy-on-write at the first divergent token", case, cow, shared, "B", 1)
    same("copy-on-write at the first divergent token", case,
         (book_b["tables"]["B"], book_b["tables"]["A"], as_pairs(slots), [tuple(int(x) for x in c) for c in copies]),
         ([0, 1, 3], [0, 1, 2], [(3, 1)], [(2, 3)]), cow)
    same("copy-on-write moves one reference from the shared block to its copy", case, list(book_b["refs"]),
         [2, 2, 1, 1, 0, 0, 0, 0], "after the copy the old block is held by A alone (count 1) and the copy by B (count 1)")
    case = "the state above, then 'A' reserves 1 token in its block 2, which B no longer shares"
    book_a, slots, copies = reserve("a block held by one sequence is written in place", case, cow, book_b, "A", 1)
    same("a block held by one sequence is written in place", case, (as_pairs(slots), list(copies)), ([(2, 1)], []),
         "copy only when the block's count is above 1; a block A holds alone is written in place")

    aligned = fresh()
    aligned, _, _ = reserve("a growing sequence takes blocks as it fills them", "'C' reserves 8 tokens", grow, aligned, "C", 8)
    case = "'C' holds 8 tokens in blocks [0, 1], both full; 'D' is forked from it and reserves 1 token"
    book_d, slots, copies = reserve("a fork at a block boundary copies nothing", case, grow, fork(aligned, "C", "D"), "D", 1)
    same("a fork at a block boundary copies nothing", case, (book_d["tables"]["D"], as_pairs(slots), list(copies), list(book_d["refs"][:3])),
         ([0, 1, 2], [(2, 0)], [], [2, 2, 1]), "full shared blocks are only read: the next token starts a new block of its own")

    released = fresh(4, 2)
    released["refs"], released["tables"], released["lengths"] = [1, 0, 1, 0], {"E": [0], "F": [2]}, {"E": 2, "F": 1}
    case = "4 blocks of 2: 'E' holds block 0 (full), 'F' block 2 (1 token), blocks 1 and 3 free; 'E' reserves 3 tokens"
    book_e, slots, _ = reserve("free blocks are reused, lowest first", case, "take the lowest block whose count is 0", released, "E", 3)
    same("free blocks are reused, lowest first", case, (book_e["tables"]["E"], as_pairs(slots)), ([0, 1, 3], [(1, 0), (1, 1), (3, 0)]),
         "take the lowest block whose count is 0")
    case = "4 blocks of 2, all held; 'E' asks for 1 more token in a full block"
    full = {"block_size": 2, "refs": [1, 1, 1, 1], "tables": {"E": [0, 1], "F": [2, 3]}, "lengths": {"E": 4, "F": 4}}
    try:
        reserve_slots(copy.deepcopy(full), "E", 1)
    except ValueError:
        pass
    else:
        raise ContractViolation("a full pool refuses with ValueError", case, "ValueError naming the free blocks", "returned normally",
                                "check that enough blocks are free before taking any")
    return {"growth": "PASS", "copy_on_write": "PASS", "reference_counts": "PASS", "reuse": "PASS"}
