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


def check_rolling_buffer_contract(rolling_window_decode):
    """Judge ``rolling_window_decode(Q, K, V, window) -> (outputs, largest)``.

    Token t attends to the last ``window`` tokens (itself included) held in a buffer of ``window``
    slots; ``largest`` is the most keys the buffer ever held. Returns a summary.
    """
    import math
    import numbers

    import numpy as np

    def windowed(Q, K, V, window):
        scores = Q @ K.T / math.sqrt(Q.shape[1])
        distance = np.arange(len(Q))[:, None] - np.arange(len(K))[None, :]
        scores = np.where((distance >= 0) & (distance < window), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V

    gen = np.random.default_rng(606)
    n = 11
    Q, K, V = gen.standard_normal((n, 4)), gen.standard_normal((n, 4)), gen.standard_normal((n, 3))
    worst = 0.0
    for window in (1, 3, 4, 11, 20, 10**12):
        case = f"Q, K [11 tokens, d_k=4], V [11, 3], window={window:,}"
        prop = "any window of at least 1 is accepted"
        outputs, largest = contract_parts(prop, case, contract_call(
            prop, case, "a window longer than the sequence simply never fills: allocate min(window, T) slots, never `window` of them",
            rolling_window_decode, Q, K, V, window,
        ), ("outputs", "largest"))
        contract_assert(
            isinstance(largest, numbers.Integral) and largest == min(n, window), "the buffer never holds more than `window` keys", case,
            f"largest buffer {min(n, window)}", f"largest buffer {largest}",
            "a rolling buffer that keeps window + 1 keys: overwrite slot t % window before attending, not after",
        )
        worst = max(worst, contract_close(
            "each token attends to exactly the last `window` tokens, itself included", case, outputs, windowed(Q, K, V, window),
            "the buffer must hold tokens t - window + 1 .. t when token t attends; slot = t % window",
        ))
    prop, hint = "a window of 1 returns each token's own value", "with one slot the only key is the token itself, whose weight is 1"
    outputs, _ = contract_parts(prop, "window=1", contract_call(prop, "window=1", hint, rolling_window_decode, Q, K, V, 1), ("outputs", "largest"))
    contract_close(prop, "window=1", outputs, V, hint)
    # Scores of +1000 and -1000: exp(1000) overflows float64, so only a softmax shifted by its row's max survives.
    Q_wide, K_wide, V_wide = np.full((3, 1), 1000.0), np.array([[1.0], [-1.0], [1.0]]), np.array([[1.0], [2.0], [3.0]])
    prop, case = "scores of +-1000 give the same softmax as small ones, with no NaN", "Q = 1000 [3 tokens, d_k=1], K = (1, -1, 1), V = (1, 2, 3), window=2"
    hint = "subtract each row's largest score before np.exp: exp(1000) is inf in float64, and inf / inf is NaN"
    outputs, _ = contract_parts(prop, case, contract_call(prop, case, hint, rolling_window_decode, Q_wide, K_wide, V_wide, 2), ("outputs", "largest"))
    contract_close(prop, case, outputs, windowed(Q_wide, K_wide, V_wide, 2), hint)
    return {"max_error": worst, "largest_buffer": "PASS", "wide_scores": "PASS"}


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
