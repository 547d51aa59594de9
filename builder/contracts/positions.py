"""Module 3 contracts for where tokens sit: the sinusoidal position table and the causal mask."""

from .calls import contract_call
from .messages import say
from .violations import ContractViolation, contract_assert, contract_close

__all__ = ["check_positional_encoding_contract", "check_causal_mask_contract"]


def check_positional_encoding_contract(sinusoidal_encoding):
    """Judge ``sinusoidal_encoding(length, d_model, *, base=10000.0)`` against a table worked out with ``math``.

    Returns the largest error; raises ContractViolation naming the first property that fails and,
    when the table matches a well-known mistake, which mistake.
    """
    import math

    import torch

    def table(length, d_model, base, *, swap=False, concatenated=False, per_pair=False, first=0):
        """The sinusoidal table, or one of its usual wrong variants."""
        rows = []
        for position in range(first, first + length):
            sines, cosines = [], []
            for pair in range(d_model // 2):
                exponent = pair / d_model if per_pair else 2 * pair / d_model
                angle = position / base ** exponent
                sines.append(math.sin(angle))
                cosines.append(math.cos(angle))
            if swap:
                sines, cosines = cosines, sines
            rows.append(sines + cosines if concatenated else [x for pair in zip(sines, cosines) for x in pair])
        return torch.tensor(rows, dtype=torch.float64)

    def judge(length, d_model, base, prop, case):
        extra = {} if base == 10_000.0 else {"base": base}
        result = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", sinusoidal_encoding, length, d_model, **extra)
        contract_assert(
            isinstance(result, torch.Tensor), prop, case, "a torch.Tensor", type(result).__name__,
            "return the table as a tensor (torch.empty / torch.stack), not a list or an array",
        )
        contract_assert(
            tuple(result.shape) == (length, d_model), prop + ": shape is (length, d_model)", case,
            f"shape {(length, d_model)}", f"shape {tuple(result.shape)}",
            "positions go down the rows and coordinates across the columns; a transposed table has them swapped",
        )
        expected = table(length, d_model, base)
        if torch.allclose(result.double(), expected, atol=1e-6, rtol=0):
            return float((result.double() - expected).abs().max())
        mistakes = (
            (dict(swap=True), "sine and cosine are swapped: sine goes on the even coordinates 0, 2, ... and cosine on the odd ones"),
            (dict(concatenated=True), "sine and cosine must interleave (sin, cos, sin, cos, ...), not all sines followed by all cosines"),
            (dict(per_pair=True), "pair i has frequency base^(-2i/d_model): the exponent counts coordinates (2i), not pairs (i)"),
            (dict(first=1), "positions start at 0, so row 0 is (0, 1, 0, 1, ...)"),
        )
        hint = "angle = position / base^(2i/d_model) for pair i; sin goes in column 2i and cos in column 2i+1"
        for variant, explanation in mistakes:
            if torch.allclose(result.double(), table(length, d_model, base, **variant), atol=1e-6, rtol=0):
                hint = explanation
                break
        return contract_close(prop, case, result, expected, hint, atol=1e-6, rtol=0)

    raised = "the function raised on a valid input; the traceback above this message shows where"
    errors = [0.0]

    def position_zero():
        prop, zero_case = "position 0 is (0, 1, 0, 1, ...)", "sinusoidal_encoding(1, 6)"
        row = contract_call(prop, zero_case, raised, sinusoidal_encoding, 1, 6)
        contract_assert(
            isinstance(row, torch.Tensor) and tuple(row.shape) == (1, 6), prop + ": shape is (length, d_model)", zero_case,
            "a torch.Tensor of shape (1, 6)", f"{type(row).__name__} {tuple(getattr(row, 'shape', ()))}",
            "positions go down the rows and coordinates across the columns; a transposed table has them swapped",
        )
        values = [round(float(x), 6) for x in row[0]]
        if values == [1.0, 0.0] * 3:
            hint = "sine and cosine are swapped: sin(0) = 0 belongs on the even coordinates, cos(0) = 1 on the odd ones"
        elif values == [0.0] * 3 + [1.0] * 3:
            hint = "sine and cosine must interleave (sin, cos, sin, cos, ...), not all sines followed by all cosines"
        else:
            hint = "row 0 is position 0: sin(0) = 0 on the even coordinates and cos(0) = 1 on the odd ones"
        contract_close(prop, zero_case, row[0], torch.tensor([0.0, 1.0] * 3), hint, atol=1e-6, rtol=0)

    def table_matches():
        errors.append(judge(7, 8, 10_000.0, "table equals sin/cos of position / 10000^(2i/d_model)", "sinusoidal_encoding(7, 8)"))

    def base_sets_frequencies():
        errors.append(judge(5, 6, 100.0, "the base argument sets the frequencies", "sinusoidal_encoding(5, 6, base=100.0)"))

    found = ContractViolation.run_properties((
        ("position 0 is (0, 1, 0, 1, ...)", position_zero),
        ("table equals sin/cos of position / 10000^(2i/d_model)", table_matches),
        ("the base argument sets the frequencies", base_sets_frequencies),
    ))
    return {"table_max_error": max(errors), **found}


def check_causal_mask_contract(causal_allowed):
    """Judge ``causal_allowed(t_q, t_k, *, query_offset=0)``: True where a query may read a key.

    Returns the number of cases checked; raises ContractViolation naming the first property that fails.
    """
    import torch

    def expected(t_q, t_k, offset):
        return torch.tensor([[key <= offset + query for key in range(t_k)] for query in range(t_q)], dtype=torch.bool)

    def judge(t_q, t_k, offset, prop):
        case = f"causal_allowed({t_q}, {t_k}, query_offset={offset})"
        mask = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", causal_allowed, t_q, t_k, query_offset=offset)
        contract_assert(
            isinstance(mask, torch.Tensor) and mask.dtype == torch.bool, prop + ": a bool tensor", case,
            "a torch.Tensor of dtype torch.bool", f"{type(mask).__name__} {getattr(mask, 'dtype', '')}",
            "compare positions (key <= query) to get booleans; do not return 0/1 floats or -inf scores",
        )
        contract_assert(
            tuple(mask.shape) == (t_q, t_k), prop + ": shape is (t_q, t_k)", case, f"shape {(t_q, t_k)}",
            f"shape {tuple(mask.shape)}", "queries go down the rows and keys across the columns",
        )
        want = expected(t_q, t_k, offset)
        if torch.equal(mask, want):
            return
        if torch.equal(mask, ~want):
            hint = "the mask is inverted: True must mean 'may attend' (PyTorch's convention for bool attn_mask)"
        elif torch.equal(mask, expected(t_q, t_k, offset - 1)):
            hint = "off by one: a query may read its own key (key <= query), not only strictly earlier ones"
        elif torch.equal(mask, expected(t_q, t_k, offset + 1)):
            hint = "off by one: the query one step ahead of this one is still in the future (use key <= query)"
        elif offset and torch.equal(mask, expected(t_q, t_k, 0)):
            hint = "query_offset was ignored: row r is the query at absolute position query_offset + r"
        else:
            hint = "allowed[r, j] = (j <= query_offset + r)"
        bad = (mask != want).nonzero()[0].tolist()
        raise ContractViolation(
            prop, case, f"{want.int().tolist()}", say("wrong mask entry", mask=mask.int().tolist(), where=tuple(bad)), hint,
        )

    def sees_the_past():
        judge(4, 4, 0, "a token sees itself and the past, never the future")
        judge(1, 1, 0, "a token sees itself and the past, never the future")

    def keeps_absolute_positions():
        for t_q, t_k, offset in ((2, 6, 4), (1, 5, 4), (3, 7, 2)):  # cached queries, the newest token, a block in the middle
            judge(t_q, t_k, offset, "cached queries keep their absolute positions (query_offset)")

    def decodes_in_steps():
        for t_q, t_k in ((1, 6), (3, 6), (6, 6)):
            offset = t_k - t_q
            full = expected(t_k, t_k, 0)
            case = f"causal_allowed({t_q}, {t_k}, query_offset={offset}) against the last {t_q} rows of causal_allowed({t_k}, {t_k})"
            mask = contract_call("decoding in steps gives the rows of the full mask", case, "the function raised on a valid input; the traceback above this message shows where", causal_allowed, t_q, t_k, query_offset=offset)
            contract_assert(
                torch.equal(mask, full[offset:]), "decoding in steps gives the rows of the full mask", case,
                f"{full[offset:].int().tolist()}", f"{mask.int().tolist()}",
                "the mask for queries query_offset..query_offset+t_q-1 must be exactly those rows of the full causal mask",
            )

    return {"cases": 8, **ContractViolation.run_properties((
        ("a token sees itself and the past, never the future", sees_the_past),
        ("cached queries keep their absolute positions (query_offset)", keeps_absolute_positions),
        ("decoding in steps gives the rows of the full mask", decodes_in_steps),
    ))}
