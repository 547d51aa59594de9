"""Module 3 contract for LayerNorm written by hand."""

from .calls import contract_call
from .violations import ContractViolation, contract_assert, contract_close

__all__ = ["check_layer_norm_contract"]


def check_layer_norm_contract(layer_norm):
    """Judge ``layer_norm(x, weight=None, bias=None, eps=1e-5)`` over the last axis against a float64 recomputation.

    Returns the largest error against ``F.layer_norm``; raises ContractViolation naming the first
    property that fails and, where it can tell, which usual mistake it is.
    """
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(11)
    # Rows with very different means and spreads, so every wrong axis or estimator shows.
    x = torch.randn(3, 5, dtype=torch.float64, generator=gen) * torch.tensor([[0.1], [1.0], [4.0]], dtype=torch.float64)
    x = x + torch.tensor([[3.0], [-1.0], [0.5]], dtype=torch.float64)
    case = "x of shape (3, 5) float64, rows with means 3, -1, 0.5 and spreads 0.1, 1, 4"

    def by_hand(t, eps, *, unbiased=False, eps_outside=False, axis=-1):
        mean = t.mean(axis, keepdim=True)
        variance = t.var(axis, keepdim=True, unbiased=unbiased)
        scale = variance.sqrt() + eps if eps_outside else (variance + eps).sqrt()
        return (t - mean) / scale

    def judge(prop, eps, kwargs, expected, label):
        result = contract_call(prop, label, "the function raised on a valid input; the traceback above this message shows where", layer_norm, x, eps=eps, **kwargs)
        contract_assert(
            isinstance(result, torch.Tensor) and result.shape == x.shape, prop + ": same shape as x", label,
            f"shape {tuple(x.shape)}", f"shape {tuple(getattr(result, 'shape', ()))}",
            "LayerNorm keeps the shape: reduce with keepdim=True and broadcast back",
        )
        if torch.allclose(result, expected, atol=1e-9, rtol=1e-9):
            return float((result - expected).abs().max())
        hint = "subtract the mean of the last axis, divide by sqrt(biased variance + eps), then scale and shift"
        plain = by_hand(x, eps)
        if torch.allclose(result, by_hand(x, eps, unbiased=True), atol=1e-9, rtol=1e-9) or (
            kwargs and torch.allclose(result, by_hand(x, eps, unbiased=True) * kwargs["weight"] + kwargs["bias"], atol=1e-9, rtol=1e-9)
        ):
            hint = "the variance is unbiased (divides by n - 1); LayerNorm uses the biased one (n): var(unbiased=False)"
        elif torch.allclose(result, by_hand(x, eps, axis=0), atol=1e-9, rtol=1e-9):
            hint = "normalised over the wrong axis: LayerNorm averages over the features of each token, the last axis"
        elif eps and torch.allclose(result, by_hand(x, eps, eps_outside=True), atol=1e-9, rtol=1e-9):
            hint = "eps goes inside the square root: sqrt(variance + eps), not sqrt(variance) + eps"
        elif kwargs and torch.allclose(result, plain, atol=1e-9, rtol=1e-9):
            hint = "weight and bias were ignored: return normalised * weight + bias"
        elif kwargs and torch.allclose(result, plain * kwargs["bias"] + kwargs["weight"], atol=1e-9, rtol=1e-9):
            hint = "weight and bias are swapped: the weight multiplies, the bias adds"
        return contract_close(prop, label, result, expected, hint, atol=1e-9, rtol=1e-9)

    raised = "the function raised on a valid input; the traceback above this message shows where"
    weight = torch.tensor([1.0, 2.0, -1.0, 0.5, 3.0], dtype=torch.float64)
    bias = torch.tensor([0.0, -1.0, 2.0, 0.25, 1.0], dtype=torch.float64)
    errors = [0.0]

    def normalises():
        errors.append(judge("each row has mean 0 and biased variance 1", 0.0, {}, by_hand(x, 0.0), case + ", eps=0"))

    def eps_inside():
        errors.append(judge("eps sits inside the square root", 0.5, {}, by_hand(x, 0.5), case + ", eps=0.5"))
        # A constant token has zero variance: eps keeps the result finite (and zero).
        flat = torch.full((2, 4), 7.0, dtype=torch.float64)
        constant = contract_call("a constant token maps to zeros", "x = 7 everywhere, shape (2, 4), eps=1e-5", raised, layer_norm, flat, eps=1e-5)
        contract_close(
            "a constant token maps to zeros", "x = 7 everywhere, shape (2, 4), eps=1e-5", constant, torch.zeros(2, 4, dtype=torch.float64),
            "0 / sqrt(0) is NaN: add eps inside the square root before dividing", atol=1e-12, rtol=0,
        )

    def affine():
        errors.append(judge(
            "weight scales and bias shifts each feature", 1e-5, {"weight": weight, "bias": bias}, by_hand(x, 1e-5) * weight + bias,
            case + ", eps=1e-5, weight and bias of length 5",
        ))

    def matches_the_library():
        # The library agrees, and gradients flow through the hand-written version.
        xg = x.clone().requires_grad_()
        ours = contract_call("gradients match F.layer_norm", case, raised, layer_norm, xg, weight, bias, eps=1e-5)
        theirs = F.layer_norm(x.clone().requires_grad_(), (5,), weight, bias, eps=1e-5)
        errors.append(contract_close(
            "output matches F.layer_norm", case + ", eps=1e-5 with weight and bias", ours, theirs,
            "compare your mean, variance and eps with F.layer_norm's definition", atol=1e-9, rtol=1e-9,
        ))
        contract_assert(
            ours.requires_grad, "gradients flow through layer_norm", case, "an output that requires grad",
            "an output detached from x", "no .detach(), .item(), numpy round trip or in-place edit of the input",
        )
        probe = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
        grad_ours = torch.autograd.grad((ours * probe).sum(), xg)[0]
        xl = x.clone().requires_grad_()
        grad_lib = torch.autograd.grad((F.layer_norm(xl, (5,), weight, bias, eps=1e-5) * probe).sum(), xl)[0]
        contract_close(
            "gradients match F.layer_norm", case, grad_ours, grad_lib,
            "the mean or variance was detached, so the gradient misses their dependence on x", atol=1e-9, rtol=1e-9,
        )

    found = ContractViolation.run_properties((
        ("each row has mean 0 and biased variance 1", normalises),
        ("eps sits inside the square root", eps_inside),
        ("weight scales and bias shifts each feature", affine),
        ("gradients match F.layer_norm", matches_the_library),
    ))
    return {"max_error": max(errors), **found}
