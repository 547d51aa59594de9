"""Module 3 contracts for turning logits into tokens: sampling policies and a greedy trace."""

from .calls import contract_call
from .violations import ContractViolation, contract_assert

__all__ = ["check_token_distribution_contract", "check_greedy_trace_contract"]


def check_token_distribution_contract(token_distribution):
    """Judge ``token_distribution(logits, temperature=1.0, top_k=None, top_p=None)`` against a fsum recomputation.

    The policy: divide the logits by the temperature, keep the top_k largest (ties: lower id first),
    then keep the shortest prefix of those whose renormalised mass reaches top_p (the token that
    crosses the threshold stays), and renormalise. Returns the largest error.
    """
    import itertools
    import math

    def policy(logits, temperature=1.0, top_k=None, top_p=None, *, drop_crossing=False):
        top = max(logits)
        weights = [math.exp((z - top) / temperature) for z in logits]
        order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))[:top_k]  # top_k=None keeps all
        if top_p is not None and top_p < 1:
            mass = math.fsum(weights[i] for i in order)
            shares = list(itertools.accumulate(weights[i] / mass for i in order))
            crossing = next((j for j, share in enumerate(shares) if share >= top_p), len(order) - 1)
            order = order[: crossing if drop_crossing and crossing > 0 else crossing + 1]
        total = math.fsum(weights[i] for i in order)
        return [weights[i] / total if i in order else 0.0 for i in range(len(logits))]

    worst = [0.0]

    def judge(prop, logits, hint, *, variants=(), **kwargs):
        case = f"token_distribution({logits}" + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")"
        result = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", token_distribution, logits, **kwargs)
        try:
            got = [float(p) for p in result]
        except (TypeError, ValueError):
            raise ContractViolation(prop, case, "a sequence of probabilities", repr(result), "return a list of floats, one per token") from None
        want = policy(logits, **kwargs)
        contract_assert(
            len(got) == len(want), prop + ": one probability per token", case, f"{len(want)} entries", f"{len(got)} entries",
            "return a probability for every token id, with 0.0 for the ones a filter removed",
        )
        contract_assert(
            all(math.isfinite(p) and p >= 0 for p in got), prop + ": finite, non-negative probabilities", case,
            "finite values >= 0", f"{got}", "subtract the largest logit before exp() so large logits cannot overflow",
        )
        contract_assert(
            abs(math.fsum(got) - 1.0) <= 1e-9, prop + ": probabilities sum to 1", case, "sum 1", f"sum {math.fsum(got)!r}",
            "renormalise over the kept tokens after filtering; a temperature applied after the softmax also breaks the sum",
        )
        error = max(abs(a - b) for a, b in zip(got, want))
        if error > 1e-9:
            for variant, explanation in variants:
                alternative = variant()
                if max(abs(a - b) for a, b in zip(got, alternative)) <= 1e-9:
                    hint = explanation
                    break
            raise ContractViolation(prop, case, [round(p, 6) for p in want], [round(p, 6) for p in got], hint)
        worst[0] = max(worst[0], error)

    z = [3.0, 2.0, 1.0, 0.0]
    softmax_hint = "softmax(logits): exp(z - max z) / sum"
    judge("temperature 1 is the plain softmax", z, softmax_hint)
    judge(
        "temperature divides the logits before the softmax", z,
        "divide the logits by the temperature, then take the softmax",
        temperature=2.0, variants=((lambda: policy(z), "the temperature was ignored or applied to the probabilities after the softmax"),
                                   (lambda: policy([2 * v for v in z]), "the logits were multiplied by the temperature instead of divided")),
    )
    judge("a temperature below 1 sharpens", z, "divide the logits by the temperature, then take the softmax", temperature=0.5)
    judge(
        "top_k keeps exactly the k most likely tokens", z, "sort by logit (largest first), keep the first k, renormalise",
        top_k=2, variants=((lambda: policy(z, top_k=3), "off by one: top_k=2 kept three tokens"),
                           (lambda: policy(z, top_k=1), "off by one: top_k=2 kept one token")),
    )
    judge(
        "top_k picks the largest logits, wherever they sit", [0.0, 3.0, 1.0, 2.0],
        "rank tokens by logit, not by position in the vector", top_k=2,
        variants=((lambda: policy([0.0, 3.0]) + [0.0, 0.0], "the first k ids were kept instead of the k largest logits"),),
    )
    judge(
        "top_p keeps the token that crosses the threshold", z,
        "keep adding tokens (most likely first) until the kept mass reaches top_p; the token that reaches it stays",
        top_p=0.9, variants=((lambda: policy(z, top_p=0.9, drop_crossing=True), "the token that crosses the threshold was dropped: "
                              "stop after adding the token whose cumulative mass reaches top_p, not before it"),),
    )
    judge("top_p = 1 keeps every token", z, "top_p=1 is no filter at all", top_p=1.0)
    judge("ties in top_p go to the lower token id", [0.0, 0.0, 0.0, 0.0],
          "sort by (-logit, id) so equal logits keep their order; with mass 0.25 each, top_p=0.5 keeps ids 0 and 1", top_p=0.5)
    judge("ties in top_k go to the lower token id", [0.0, 0.0], "a stable sort keeps id 0 before id 1", top_k=1)
    judge(
        "temperature, then top_k, then top_p measured on the kept mass", z,
        "apply the temperature first, then top_k, then top_p on the probabilities renormalised over the top_k survivors",
        temperature=2.0, top_k=3, top_p=0.8,
        variants=((lambda: policy(z, 1.0, 3, 0.8), "the temperature was applied after the filters (or not at all)"),
                  (lambda: policy(z, 2.0, 4, 0.8), "top_p was measured on the mass of all tokens, not of the top_k survivors")),
    )
    judge("large logits do not overflow", [1000.0, 999.0, 0.0], "subtract the largest logit before exp()")
    return {"max_error": worst[0]}


def check_greedy_trace_contract(greedy_trace):
    """Judge ``greedy_trace(prepared_logits, eos_id, max_new_tokens)`` -> (tokens, reason).

    Greedy decoding takes the most likely token (ties: lower id) at each step and stops right after
    emitting ``eos_id`` (reason 'eos', EOS included) or after ``max_new_tokens`` tokens (reason
    'length_limit'); EOS wins when both happen at once. A trace that ends first is a ValueError.
    """
    cases = (
        ("EOS stops the trace and is kept", ([[3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 3.0], [3.0, 0.0, 0.0, 0.0]], 3, 3), ([0, 3], "eos"),
         "append the token first, then stop if it is eos_id; the EOS token belongs to the output"),
        ("the length limit stops the trace", ([[3.0, 2.0, 1.0, 0.0]] * 5, 3, 3), ([0, 0, 0], "length_limit"),
         "stop as soon as max_new_tokens tokens have been generated, even if more logits are available"),
        ("EOS on the last allowed step reports 'eos'", ([[3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 3.0]], 3, 2), ([0, 3], "eos"),
         "check for EOS before checking the length limit"),
        ("a single step", ([[0.0, 5.0, 1.0]], 0, 1), ([1], "length_limit"), "one step emits one token"),
        ("greedy ties go to the lower token id", ([[1.0, 1.0, 0.0]], 2, 1), ([0], "length_limit"),
         "take the first index of the maximum (max over range with a key, or argmax)"),
        ("greedy takes the largest logit, not the first", ([[0.0, 1.0, 7.0, 2.0], [9.0, 0.0, 0.0, 0.0]], 3, 2), ([2, 0], "length_limit"),
         "argmax over the whole score vector of each step"),
    )
    for prop, (logits, eos_id, limit), (want_tokens, want_reason), hint in cases:
        case = f"greedy_trace({logits}, eos_id={eos_id}, max_new_tokens={limit})"
        result = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", greedy_trace, logits, eos_id, limit)
        try:
            tokens, reason = result
            tokens = [int(t) for t in tokens]
        except (TypeError, ValueError):
            raise ContractViolation(prop, case, "(tokens, reason)", repr(result), "return a pair: the list of token ids and 'eos' or 'length_limit'") from None
        for step, (token, scores) in enumerate(zip(tokens, logits)):
            contract_assert(
                0 <= token < len(scores) and scores[token] == max(scores), "greedy takes the largest logit at every step",
                case, f"step {step}: a token with logit {max(scores)}",
                f"token {token}" + (f" with logit {scores[token]}" if 0 <= token < len(scores) else ", not a token id"),
                "take the argmax of each step's scores; an ascending sort (or argmin) takes the least likely token",
            )
        contract_assert(
            (tokens, reason) == (want_tokens, want_reason), prop, case, f"({want_tokens}, {want_reason!r})", f"({tokens}, {reason!r})", hint,
        )
    short = "greedy_trace([[3, 2, 1, 0]] * 2, eos_id=3, max_new_tokens=3)"
    try:
        outcome = greedy_trace([[3.0, 2.0, 1.0, 0.0]] * 2, 3, 3)
    except ValueError:
        outcome = None
    except NotImplementedError:
        raise
    except Exception as exc:
        outcome = f"{type(exc).__name__}: {exc}"
    contract_assert(
        outcome is None, "a trace that ends before any stop condition raises ValueError", short, "ValueError",
        repr(outcome), "after the loop, raise ValueError: the prepared logits ran out before EOS or the length limit",
    )
    return {"cases": len(cases) + 1}
