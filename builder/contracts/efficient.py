"""Contract checks for the efficient designs: linear attention, the parallel scan and latent (MLA) absorption."""

from .calls import contract_call, contract_parts
from .violations import ContractViolation, contract_assert, contract_close

__all__ = [
    "check_linear_attention_contract", "check_parallel_scan_contract", "check_latent_absorption_contract",
    "check_kivi_axes_contract", "check_selective_step_contract", "check_work_efficient_scan_contract",
]


def check_linear_attention_contract(linear_attention_step):
    """Judge ``linear_attention_step(S, z, q, k, v) -> (S, z, output)``: one token of causal linear attention.

    With phi(x) = elu(x) + 1, the step adds phi(k) v^T to S (d_k, d_v) and phi(k) to z (d_k,), then outputs
    phi(q)^T S / phi(q)^T z. It sees only the state, so no n x n matrix can be formed; a stream through it must
    equal the quadratic causal form. Returns a summary; raises ContractViolation on the first failure.
    """
    import numpy as np

    def phi(x):
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))

    def quadratic(Q, K, V):
        weights = np.tril(phi(Q) @ phi(K).T)
        return (weights / weights.sum(axis=1, keepdims=True)) @ V

    def step(case, S, z, q, k, v, hint="nothing here is invalid"):
        """(S, z, output) of the judged step, the state of the shape it must keep."""
        prop = "a valid step gives (S, z, output)"
        S_new, z_new, out = contract_parts(prop, case, contract_call(
            prop, case, hint, linear_attention_step, S.copy(), z.copy(), q, k, v), ("S", "z", "output"))
        contract_assert(
            np.shape(S_new) == S.shape and np.shape(z_new) == z.shape, "the state keeps its size: S (d_k, d_v) and z (d_k,)", case,
            f"S {S.shape}, z {z.shape}", f"S {np.shape(S_new)}, z {np.shape(z_new)}", "add to the sums; never keep a list of tokens",
        )
        contract_assert(
            np.shape(out) == (len(v),), "one output of d_v numbers per step", case, f"shape {(len(v),)}", f"shape {np.shape(out)}",
            "return phi(q)^T S / phi(q)^T z, a vector of d_v numbers",
        )
        return np.asarray(S_new, dtype=float), np.asarray(z_new, dtype=float), np.asarray(out, dtype=float)

    def stream(case, Q, K, V):
        S, z, outs = np.zeros((K.shape[1], V.shape[1])), np.zeros(K.shape[1]), []
        for i in range(len(Q)):
            S, z, out = step(f"{case}, token {i}", S, z, Q[i], K[i], V[i])
            outs.append(out)
        return np.array(outs), S, z

    Qw = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    Kw = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    Vw = np.array([[2.0], [4.0], [6.0]])
    case = "keys (1, 0), (0, 1), (1, 1); values 2, 4, 6; third query (1, 0); the state starts at zero"
    out, S, z = stream(case, Qw, Kw, Vw)
    contract_close(
        "the running sums after 3 tokens are S = (20, 22) and z = (5, 5)", case,
        np.concatenate([np.ravel(S), np.ravel(z)]), [20.0, 22.0, 5.0, 5.0],
        "S adds phi(k) v^T and z adds phi(k) for every token, with phi(x) = x + 1 for x > 0 and e^x otherwise",
    )
    third = out[2, 0]
    if np.isclose(third, 26.0 / 9.0, rtol=1e-12, atol=0):  # the sums of tokens 0 and 1 only
        hint = "query i read S and z before token i was added: add phi(k_i) v_i^T and phi(k_i) first, so a token sees itself"
    else:
        hint = "divide phi(q)^T S by phi(q)^T z; without the normaliser z the output is not a weighted average"
    contract_close("the third output is 62 / 15", case, [third], [62.0 / 15.0], hint)
    gen = np.random.default_rng(404)
    worst = 0.0
    # A state the check builds itself: the step must continue from the sums it is given, not from its own past.
    for dk, dv, earlier in ((3, 2, 5), (1, 4, 1), (4, 1, 40)):
        past_K, past_V = gen.standard_normal((earlier, dk)), gen.standard_normal((earlier, dv))
        S0, z0 = phi(past_K).T @ past_V, phi(past_K).sum(axis=0)
        q, k, v = gen.standard_normal(dk), gen.standard_normal(dk), gen.standard_normal(dv)
        case = f"the state of {earlier} earlier random tokens, d_k={dk}, d_v={dv}, then one more token"
        S1, z1, out = step(case, S0, z0, q, k, v)
        S_want, z_want = S0 + np.outer(phi(k), v), z0 + phi(k)
        contract_close("the step continues the sums it is given: S + phi(k) v^T and z + phi(k)", case,
                       np.concatenate([S1.ravel(), z1]), np.concatenate([S_want.ravel(), z_want]),
                       "read the past only from S and z as passed in; add this token's phi(k) v^T and phi(k) to them")
        worst = max(worst, contract_close("the output reads the updated state: phi(q)^T S / phi(q)^T z", case, out,
                                          phi(q) @ S_want / (phi(q) @ z_want), "update S and z with this token first, then read them with phi(q)"))
    for n, dk, dv in ((9, 3, 2), (1, 4, 4), (16, 2, 5)):
        Q, K, V = gen.standard_normal((n, dk)), gen.standard_normal((n, dk)), gen.standard_normal((n, dv))
        case = f"random Q, K [{n}, {dk}], V [{n}, {dv}] streamed through the step from a zero state"
        out, S, z = stream(case, Q, K, V)
        worst = max(worst, contract_close(
            "a stream of steps equals the quadratic causal form", case, out, quadratic(Q, K, V),
            "update S and z with token i BEFORE reading them for query i (token i sees itself)",
        ))
    return {"max_error": worst, "worked_example": "PASS", "continues_given_state": "PASS"}


def check_parallel_scan_contract(parallel_scan):
    """Judge ``parallel_scan(a, b) -> (states, rounds)`` for h_t = a_t h_(t-1) + b_t with h_0 = 0.

    States must equal the sequential loop, in ceil(log2 T) rounds of merges. Returns a summary.
    """
    import math
    import numbers

    import numpy as np

    def loop(a, b):
        h, states = 0.0, []
        for a_t, b_t in zip(a, b):
            h = a_t * h + b_t
            states.append(h)
        return np.array(states)

    case = "steps (a, b) = (0.5, 1), (0.5, 0), (0.5, 0), (0.5, 2)"
    def run(case, a, b):
        prop = "valid steps give (states, rounds)"
        result = contract_call(prop, case, "return the states and the number of rounds", parallel_scan, a, b)
        states, rounds = contract_parts(prop, case, result, ("states", "rounds"))
        contract_assert(
            isinstance(rounds, numbers.Integral), "rounds is a whole number", case, "an int", f"{type(rounds).__name__} {rounds!r}",
            "count the rounds with an int counter",
        )
        return states, rounds

    states, rounds = run(case, [0.5, 0.5, 0.5, 0.5], [1.0, 0.0, 0.0, 2.0])
    contract_close(
        "the states equal the loop 1, 0.5, 0.25, 2.125", case, states, [1.0, 0.5, 0.25, 2.125],
        "merge (a1, b1) then (a2, b2) into (a1 a2, a2 b1 + b2); use the old a on both right-hand sides",
    )
    contract_assert(rounds == 2, "4 steps take log2(4) = 2 rounds", case, "2 rounds", f"{rounds} rounds", "double the merge distance each round")
    gen = np.random.default_rng(303)
    worst = 0.0
    for T in (1, 2, 3, 5, 8, 13, 64, 100):
        a, b = gen.uniform(-1.0, 1.0, T), gen.standard_normal(T)
        a_copy, b_copy = a.copy(), b.copy()
        case = f"{T} random steps"
        states, rounds = run(case, a, b)
        worst = max(worst, contract_close(
            "every state equals the sequential loop", case, states, loop(a, b),
            "before the start the step is the do-nothing map (1, 0); combine with the step 2^r places earlier in round r",
        ))
        want = math.ceil(math.log2(T)) if T > 1 else 0
        contract_assert(
            rounds == want, "T steps take ceil(log2 T) rounds", case, f"{want} rounds", f"{rounds} rounds",
            "one round per doubling of the merge distance, stopping when the distance reaches T",
        )
        contract_assert(
            np.array_equal(a, a_copy) and np.array_equal(b, b_copy), "the inputs are left unchanged", case,
            "a and b as passed in", "they were modified in place", "work on copies (np.array(a, dtype=float))",
        )
    return {"max_error": worst, "rounds": "PASS"}


def check_latent_absorption_contract(mla_absorbed_attention):
    """Judge ``mla_absorbed_attention(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask=None)``.

    The absorbed form must equal expanded multi-head latent attention: keys [latent W_uk | k_rope],
    values latent W_uv, scores scaled by sqrt(d_nope + d_rope), heads summed through W_o.
    """
    import math

    import numpy as np

    def expanded(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask):
        total = 0.0
        for h in range(len(q_nope)):
            keys = latent @ W_uk[h]  # (T_k, d_nope): rebuilt from the cache
            scores = (q_nope[h] @ keys.T + q_rope[h] @ k_rope.T) / math.sqrt(q_nope.shape[-1] + q_rope.shape[-1])
            scores = scores + mask
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            total = total + (e / e.sum(axis=1, keepdims=True)) @ (latent @ W_uv[h]) @ W_o[h]
        return total

    gen = np.random.default_rng(506)
    H, Tq, Tk, dc, dn, dr, dv, dm = 2, 3, 6, 4, 5, 2, 3, 7
    q_nope, q_rope = gen.standard_normal((H, Tq, dn)), gen.standard_normal((H, Tq, dr))
    latent, k_rope = gen.standard_normal((Tk, dc)), gen.standard_normal((Tk, dr))
    W_uk, W_uv, W_o = gen.standard_normal((H, dc, dn)), gen.standard_normal((H, dc, dv)), gen.standard_normal((H, dv, dm))
    distance = (Tk - Tq + np.arange(Tq))[:, None] - np.arange(Tk)[None, :]
    mask = np.where(distance >= 0, 0.0, -np.inf)
    case = "2 heads, 3 queries at positions 3..5 over 6 cached latents (d_c=4), d_nope=5, d_rope=2, d_v=3, d_model=7"

    no_rope = (np.zeros_like(q_rope), np.zeros_like(k_rope))
    prop, zero_case = "absorbed attention equals expanded attention (position branch zero)", case + ", q_rope = k_rope = 0"
    hint = ("score the latent with q W_uk^T (shape (T_q, d_c)), mix latents with the weights, then apply W_uv and W_o per "
            "head and sum the heads; scale by sqrt(d_nope + d_rope), the full key width")
    got = contract_call(prop, zero_case, hint, mla_absorbed_attention, q_nope, no_rope[0], latent, no_rope[1], W_uk, W_uv, W_o, mask)
    narrow = expanded(q_nope * math.sqrt((dn + dr) / dn), no_rope[0], latent, no_rope[1], W_uk, W_uv, W_o, mask)
    if np.shape(got) == narrow.shape and np.allclose(got, narrow, rtol=1e-9, atol=1e-12):
        hint = "the scores were scaled by sqrt(d_nope); a key is d_nope + d_rope wide, so scale by sqrt(d_nope + d_rope)"
    contract_close(prop, zero_case, got, expanded(q_nope, no_rope[0], latent, no_rope[1], W_uk, W_uv, W_o, mask), hint)
    prop = "the RoPE branch q_rope . k_rope is added to the latent scores"
    hint = ("latent absorption that forgets the RoPE branch: position lives only in the small decoupled key, "
            "so add q_rope @ k_rope^T to the absorbed scores before the softmax")
    got = contract_call(prop, case, hint, mla_absorbed_attention, q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask)
    error = contract_close(prop, case, got, expanded(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask), hint)
    prop, hint = "mask=None attends to every cached latent", "treat a missing mask as all zeros"
    unmasked = contract_call(prop, case + ", mask=None", hint, mla_absorbed_attention, q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o)
    contract_close(prop, case + ", mask=None", unmasked, expanded(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, np.zeros((Tq, Tk))), hint)
    # Latents and W_uk near 1e155, queries near 1e-300: the expanded key latent @ W_uk (about 1e310) passes float64's
    # largest number, while the absorbed query q_nope W_uk^T (about 1e-145) scores a latent at about 1e10, finite.
    huge = (q_nope * 1e-300, q_rope, latent * 1e155, k_rope, W_uk * 1e155, W_uv, W_o)
    prop = "the expanded key latent @ W_uk is never formed (absorbed scores stay finite where expanded keys overflow)"
    huge_case = case + "; latent and W_uk times 1e155, q_nope times 1e-300"
    hint = ("here latent @ W_uk is about 1e310, past float64's largest number (1.8e308), while q_nope @ W_uk^T is about 1e-145 "
            "and its score against a latent about 1e10: your function built the expanded key (mla_expanded_attention does). "
            "Move the query into latent space first, q_nope @ W_uk^T, and score it against the latents")
    got = contract_call(prop, huge_case, hint, mla_absorbed_attention, *huge, mask)
    q_latent = huge[0] @ np.swapaxes(huge[4], 1, 2)  # (H, T_q, d_c): the judge's own absorbed form
    scores = (q_latent @ huge[2].T + q_rope @ k_rope.T) / math.sqrt(dn + dr) + mask
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    absorbed = np.einsum("hqc,hcm->qm", (e / e.sum(axis=-1, keepdims=True)) @ huge[2], W_uv @ W_o)
    contract_close(prop, huge_case, got, absorbed, hint)
    try:
        mla_absorbed_attention(q_nope, q_rope[:, :, :1], latent, k_rope, W_uk, W_uv, W_o, mask)
    except (TypeError, ValueError):
        pass
    else:
        raise ContractViolation(
            "mismatched RoPE widths are rejected", case + ", q_rope width 1 against k_rope width 2", "ValueError",
            "returned normally", "keep the shape checks at the top of the function",
        )
    return {"max_error": error, "rope_branch": "PASS", "never_expanded": "PASS"}


def check_kivi_axes_contract(kivi_cache):
    """Judge ``kivi_cache(K, V, bits) -> (K_hat, V_hat)``: K and V [T, d] read back after symmetric quantization with
    KIVI's axes, one key scale per channel (shared over the tokens) and one value scale per token (shared over the
    channels), each scale the group's largest magnitude over the top code 2**(bits - 1) - 1. Returns a summary.
    """
    import numpy as np

    def reference(x, bits, shared_axis):
        top = 2 ** (bits - 1) - 1
        scale = np.abs(x).max(axis=shared_axis, keepdims=True) / top
        scale = np.where(scale > 0, scale, 1.0)
        return np.round(x / scale) * scale

    def run(prop, case, hint, K, V, bits):
        return contract_parts(prop, case, contract_call(prop, case, hint, kivi_cache, K, V, bits), ("K_hat", "V_hat"))

    # Keys whose first channel is large for every token; values whose first token is large in every channel.
    K = np.array([[8.0, 0.3, -0.2], [-7.0, 0.1, 0.25], [6.0, -0.3, 0.05]])
    V = np.array([[9.0, -8.0, 7.0], [0.2, -0.1, 0.3], [-0.3, 0.15, 0.1]])
    case = "K with a large first channel, V with a large first token, 4 bits"
    K_hat, V_hat = run("valid K, V and bits give (K_hat, V_hat)", case, "return the two read-back arrays", K, V, 4)
    contract_close(
        "keys get one scale per channel, so a large channel leaves the small ones readable", case, K_hat, reference(K, 4, 0),
        "keys share a scale over the tokens: np.abs(K).max(axis=0) (one per channel), not axis=1 (one per token)",
    )
    contract_close(
        "values get one scale per token, so a large token leaves the others readable", case, V_hat, reference(V, 4, 1),
        "values share a scale over the channels: np.abs(V).max(axis=1) (one per token), not axis=0",
    )
    gen = np.random.default_rng(707)
    worst = 0.0
    for T, d, bits in ((1, 1, 2), (5, 4, 3), (16, 8, 4), (7, 32, 8)):
        K, V = gen.standard_normal((T, d)), gen.standard_normal((T, d))
        case = f"random K, V [{T}, {d}] at {bits} bits"
        K_hat, V_hat = run("valid K, V and bits give (K_hat, V_hat)", case, "return the two read-back arrays", K, V, bits)
        worst = max(worst, contract_close("keys per channel, values per token, at any size and bit width", case, np.concatenate([K_hat, V_hat]),
                                          np.concatenate([reference(K, bits, 0), reference(V, bits, 1)]),
                                          "top code 2**(bits - 1) - 1, scale = largest magnitude of the group / top code, round(x / scale) * scale"))
    case = "an all-zero K and V"
    K_hat, V_hat = run("valid K, V and bits give (K_hat, V_hat)", case, "return the two read-back arrays", np.zeros((2, 3)), np.zeros((2, 3)), 4)
    contract_close("an all-zero group reads back as zeros, not NaN", case, np.concatenate([K_hat, V_hat]), np.zeros((4, 3)),
                   "a group whose largest magnitude is 0 needs any nonzero scale (1.0), or 0 / 0 gives NaN")
    return {"max_error": worst, "axes": "PASS"}


def check_selective_step_contract(selective_step):
    """Judge ``selective_step(h, x, delta, a, b, c) -> (h_new, y)``: one selective-SSM step with the zero-order hold,
    keep = e^(delta a), write = (keep - 1) / a * b, h_new = keep h + write x, y = c h_new. Returns a summary.
    """
    import math

    def reference(h, x, delta, a, b, c):
        keep = math.exp(delta * a)
        h_new = keep * h + (keep - 1.0) / a * b * x
        return h_new, c * h_new

    def run(prop, case, hint, *args):
        return contract_parts(prop, case, contract_call(prop, case, hint, selective_step, *args), ("h_new", "y"))

    marked = (0.0, 7.0, math.log1p(math.exp(5.0)), -1.0, 1.0, 1.0)
    case = "the marked 7 of the recall task: h = 0, x = 7, delta = softplus(5), a = -1, b = c = 1"
    got = run("a valid step gives (h_new, y)", case, "return the new state and the output", *marked)
    contract_close("the marked token writes almost all of itself: h_new = 0.9933 x 7", case, list(got), list(reference(*marked)),
                   "discretise with the zero-order hold: keep = exp(delta * a), write = (keep - 1) / a * b, not delta * b")
    plain = (6.953, 0.4, math.log1p(math.exp(-5.0)), -1.0, 1.0, 1.0)
    case = "an ordinary token after it: h = 6.953, x = 0.4, delta = softplus(-5)"
    got = run("a valid step gives (h_new, y)", case, "return the new state and the output", *plain)
    contract_close("an ordinary token keeps 0.9933 of the state", case, list(got), list(reference(*plain)),
                   "keep = exp(delta * a) multiplies the OLD state; the output reads the NEW state")
    worst = 0.0
    for args in ((1.5, -2.0, 0.3, -0.5, 2.0, 3.0), (0.0, 1.0, 1e-6, -1.0, 1.0, 1.0), (-3.0, 4.0, 20.0, -2.0, 0.5, -1.0), (2.0, 0.0, 0.7, -4.0, 1.0, 0.5)):
        case = "h, x, delta, a, b, c = " + ", ".join(f"{v:g}" for v in args)
        got = run("a valid step gives (h_new, y)", case, "return the new state and the output", *args)
        worst = max(worst, contract_close("one step with any decay rate, write and read factor", case, list(got), list(reference(*args)),
                                          "h_new = exp(delta a) h + (exp(delta a) - 1) / a * b * x, and y = c * h_new", atol=1e-12, rtol=1e-12))
    return {"max_error": worst, "zero_order_hold": "PASS"}


def check_work_efficient_scan_contract(work_efficient_rounds):
    """Judge ``work_efficient_rounds(T) -> rounds``: a plan of merges that scans T steps with O(T) work.

    Each round is a list of merges (i, j), i < j: position j takes step i's (a, b) then its own, every merge of a round
    reading the values from before the round. The check runs the plan on h_t = a_t h_(t-1) + b_t itself, so the states,
    the work (merges) and the depth (rounds) are those of the plan returned, never numbers the plan reports.
    """
    import math
    import numbers

    import numpy as np

    def loop(a, b):
        h, states = 0.0, []
        for a_t, b_t in zip(a, b):
            h = a_t * h + b_t
            states.append(h)
        return np.array(states)

    def merges(case, T):
        prop = "the plan is a list of rounds, each a list of merges (i, j) with 0 <= i < j < T, each j at most once per round"
        hint = "return [[(i, j), ...], ...]: one inner list per round; a round writes each position once and reads only earlier ones"
        rounds = contract_call(prop, case, hint, work_efficient_rounds, T)
        contract_assert(isinstance(rounds, (list, tuple)), prop, case, "a list of rounds", f"{type(rounds).__name__}", hint)
        plan = []
        for number, merged in enumerate(rounds):
            pairs = [tuple(pair) for pair in merged] if isinstance(merged, (list, tuple)) and all(
                isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in pair)
                for pair in merged) else None
            targets = [j for _, j in pairs] if pairs is not None else []
            contract_assert(
                pairs is not None and all(0 <= i < j < T for i, j in pairs) and len(set(targets)) == len(targets), prop, case,
                "merges (i, j) of positions 0 <= i < j < T, no j twice in a round", f"round {number}: {merged!r}"[:160], hint,
            )
            plan.append(pairs)
        return plan

    def run(plan, a, b):
        a, b = a.copy(), b.copy()
        for pairs in plan:
            i, j = np.array([p[0] for p in pairs], dtype=int), np.array([p[1] for p in pairs], dtype=int)
            a_new, b_new = a.copy(), b.copy()
            a_new[j], b_new[j] = a[i] * a[j], a[j] * b[i] + b[j]  # step i, then step j, from the values before the round
            a, b = a_new, b_new
        return b

    gen = np.random.default_rng(909)
    case = "T = 8 steps (a, b) = (0.5, 1), (0.5, 0), ..., (0.5, 0), (0.5, 2)"
    plan = merges(case, 8)
    a, b = np.full(8, 0.5), np.array([1.0, 0, 0, 0, 0, 0, 0, 2.0])
    contract_close("running the plan gives every state of the loop", case, run(plan, a, b), loop(a, b),
                   "up-sweep: merge j - d into j for j = 2d - 1, 4d - 1, ... (d = 1, 2, 4, ...); down-sweep: fill in the positions still "
                   "missing the block before them, j - d into j for j = 3d - 1, 5d - 1, ... (d halving)")
    worst, largest = 0.0, None
    for T in (1, 2, 3, 5, 8, 13, 64, 100, 1024):
        case = f"T = {T} random steps"
        plan = merges(case, T)
        a, b = gen.uniform(-1.0, 1.0, T), gen.standard_normal(T)
        worst = max(worst, contract_close("running the plan gives every state of the loop", case, run(plan, a, b), loop(a, b),
                                          "every position j must end up merged with all of 0 .. j - 1, each once, in order"))
        work, depth, levels = sum(len(p) for p in plan), len(plan), math.ceil(math.log2(T)) if T > 1 else 0
        contract_assert(
            work <= max(0, 2 * T - 2), "the work grows like T: at most 2T - 2 merges", case, f"at most {max(0, 2 * T - 2)} merges",
            f"{work} merges in {depth} rounds",
            "each round of the Hillis-Steele scan merges almost every position (T log2 T in all); a work-efficient round merges only the "
            "last position of each block of 2d",
        )
        contract_assert(
            depth <= max(0, 2 * levels - 1), "the depth grows like log T: at most 2 ceil(log2 T) - 1 rounds", case,
            f"at most {max(0, 2 * levels - 1)} rounds", f"{depth} rounds",
            "a round per merge is the sequential loop; merge every block of a level in the same round",
        )
        largest = (T, work, depth)
    return {"max_error": worst, "work_1024": largest[1], "depth_1024": largest[2]}
