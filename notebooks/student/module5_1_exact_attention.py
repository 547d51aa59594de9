# %% [markdown]
# <!-- builder:begin header -->
# # Module 5.1 · Exact Attention at Scale · Student edition
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/student/module5_1_exact_attention.ipynb)
#
# *Provenance: course builder 0.1.0; reference `references/module5_1.json`, SHA-256 `653ec9b8c75695ce2e4423f3ea167f695e7911fc24cb9df52a6c2f1b781f13c0`. Licence: text and figures CC BY-SA 4.0, code MIT.*
# <!-- builder:end sha256=256e5999a4667522c3133bd84d869d29a3866a70a08d90c7c634a669f650dab7 -->

# %% [markdown]
# **Student edition.** The functions below are stubs that raise `NotImplementedError`; replace the line `# Your code here.` and the `raise` under it with your code. The cell right after each exercise runs its contract check and tells you which property passes and which fails, on what input, with the expected and actual values.
#
# *Run all* reaches the end: an exercise you have not touched prints "not attempted yet" and the cells after it use the reference solution. An exercise you attempted that fails stops *Run all* at its check cell; the reference takes over there too, so *Runtime → Run after* on that cell (Colab) or *Run → Run Selected Cell and All Below* on the next one (JupyterLab) goes on. `show_reference("Exercise 1")` prints a solution; the last cell lists the exercises passed, failed and not attempted.
#
# **How this notebook is graded.** The grader finds your exercise cells and takes the functions, classes, imports and UPPER_CASE constants you define there and in cells of your own. It runs the same contract checks, one exercise at a time, on the reference solutions of earlier exercises, so one mistake costs one exercise. Your code runs in a separate process with a time limit; editing other cells changes nothing.
#
# - **Exercise 1:** `make_mask`
# - **Exercise 2:** `sdpa`
# - **Exercise 3:** `repeat_kv_heads`
# - **Exercise 4:** `kv_cache_bytes`
# - **Exercise 5:** `online_softmax_dot`
# - **Exercise 6:** `tiled_attention_plain`
# - **Exercise 7:** `causal_tiled_attention`
# - **Exercise 8:** `tiled_attention`
# - **Exercise 9:** `tiled_attention_backward`
# - **Exercise 10:** `reserve_slots`

# %% [markdown]
# **How to run this notebook.** Use *Runtime → Run all* (JupyterLab: *Run → Run All Cells*). A CPU runtime is enough. The first
# code cell installs only what is missing, and on Colab that is nothing. Every section ends
# with a check that stops the notebook loudly if a number is wrong.
#
# **When a check stops the notebook.** After every exercise a check cell judges your function: which
# property holds or breaks, on what input, the expected and actual values and the usual cause. An
# exercise you have not touched prints "not attempted yet", and *Run all* goes on with the reference
# solution. An exercise you attempted that fails stops *Run all* at its own check; the reference takes
# over there, so go on with *Runtime → Run after* on that cell (Colab) or *Run → Run Selected Cell and
# All Below* on the next one (JupyterLab). `show_reference("Exercise 3")` prints a solution; the last
# cell lists the exercises passed, failed and not attempted.

# %% tags=["hide-input"]
# @title Setup 1 of 5: install only the allow-listed packages that are missing, and report the versions.
# builder:begin inline ALLOWED_PACKAGES
# import name -> the pip arguments that install it; nothing outside this list is ever installed.
ALLOWED_PACKAGES = {
    "numpy": ["numpy>=1.26"],
    "matplotlib": ["matplotlib>=3.8"],
    "torch": ["torch>=2.1", "--index-url", "https://download.pytorch.org/whl/cpu"],
}
# builder:end sha256=af425060cccb602349f42ada708a396063ea0836be5d4dd0071ab9e26b56d887
# builder:begin inline install_missing
def install_missing(modules):
    """Pip-install the allow-listed ``modules`` that cannot be imported; return the ones installed (the cell says when none was)."""
    import importlib.util
    import subprocess
    import sys

    unknown = [m for m in modules if m not in ALLOWED_PACKAGES]
    if unknown:
        raise ValueError(f"not on the install allow-list: {unknown}; allowed: {sorted(ALLOWED_PACKAGES)}")
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    for module in missing:
        print(f"Installing {module} ...", flush=True)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *ALLOWED_PACKAGES[module]])
    return missing
# builder:end sha256=51bb8d10e463959eec8160187592ed24c962d8af9b09c6775405eb8520391aa0

# builder:begin inline report_environment
def report_environment():
    """Print Python, numpy, torch and matplotlib versions and whether this is Colab; warn on old torch."""
    import platform
    import sys

    import matplotlib
    import numpy
    import torch

    in_colab = "google.colab" in sys.modules
    print(
        f"Python {platform.python_version()} | numpy {numpy.__version__} | torch {torch.__version__} | "
        f"matplotlib {matplotlib.__version__} | running in Colab: {'yes' if in_colab else 'no'}"
    )
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    has_gqa = (major, minor) >= (2, 5)
    if not has_gqa:
        print(
            f"WARNING: torch {torch.__version__} is older than 2.5, so F.scaled_dot_product_attention has no "
            "enable_gqa argument. The cells that use it will say so and skip that path; everything else runs."
        )
    return {"colab": in_colab, "torch_has_enable_gqa": has_gqa}
# builder:end sha256=e7074f2ff5c04d29c8dedb93351d7398da01b63ee170f66a70d9750dc703a18d

installed = install_missing(["numpy", "torch", "matplotlib"])  # a name, so the cell prints no list
if not installed:
    print("All required packages are already installed.")

# %%
# Setup 2 of 5: imports, seeds and a plotting backend that also works as a plain script.
import gc
import json
import math
import os
import sys
import time
import tracemalloc
import types

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # one BLAS thread, set before NumPy loads: steady timings, identical sums on every run

import matplotlib

if "ipykernel" not in sys.modules:
    matplotlib.use("Agg")  # `python notebooks/module5_1_exact_attention.py` draws off-screen

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn  # the capstone model's layers (section 9; its inlined copy sets the same name)


SEED = 4
LANGUAGE = "en"  # figure labels: "en" or "ru"
torch.manual_seed(SEED)
torch.set_num_threads(1)  # one thread: identical numbers on every run
# No torch.use_deterministic_algorithms(True): on one CPU thread every op here is already deterministic,
# and that switch would import the compiler stack (about a second of start-up).
ENVIRONMENT = report_environment()
gc.freeze()  # the objects imported so far (torch's are many) are never garbage: later collections skip them


# %% tags=["hide-input"]
# @title Setup 3 of 5: the frozen reference metrics, verified against their SHA-256 before any use.
# builder:begin inline ReferenceChecksumError
class ReferenceChecksumError(RuntimeError):
    """Embedded reference text whose SHA-256 differs from the digest recorded beside it."""
# builder:end sha256=c5941bb6213edba37de15ac12fdb8f89fe15e5cbd1716b40dc2c448b150ab662
# builder:begin inline verify_sha256
def verify_sha256(text, expected_sha256, what):
    """Stop with both digests and the fixing command when ``text`` does not hash to ``expected_sha256``."""
    import hashlib

    for label, given in (("text", text), ("expected_sha256", expected_sha256), ("what", what)):
        if not isinstance(given, str):
            raise TypeError(f"verify_sha256: {label} must be a str, got {type(given).__name__}")
    actual = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if actual != expected_sha256:
        raise ReferenceChecksumError(
            f"SHA-256 checksum mismatch for {what}: the embedded text was changed after it was built.\n"
            f"  expected sha256: {expected_sha256}\n"
            f"  actual sha256:   {actual}\n"
            "Nothing below this cell can be trusted. Restore the embedded text with "
            "`python -m builder build` (or download the notebook again)."
        )
    return actual
# builder:end sha256=1542a30bcbe33fa1007c12f3f737cfa3c74e1e74218ba2a93b024d183590da19
# builder:begin inline Reference
class Reference:
    """Frozen reference values that remember which ones this notebook has used or checked."""

    def __init__(self, data, source):
        if not isinstance(data, dict) or not isinstance(source, str):
            raise TypeError(f"Reference needs a dict of values and a str naming their file, got {type(data).__name__} and {type(source).__name__}")
        self._data = data
        self.source = source
        self._used = set()

    def _lookup(self, path):
        if not isinstance(path, str) or not path:
            raise TypeError(f"a reference path must be a non-empty dotted str such as 'tiny_lm.seed', got {path!r}")
        node = self._data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                known = ", ".join(sorted(node)) if isinstance(node, dict) else "none (a leaf value)"
                raise ValueError(f"{self.source} has no value at {path!r}; at {part!r} the keys are: {known}")
            node = node[part]
        return node

    def value(self, path):
        """The leaf value at a dotted ``path`` such as ``"tiny_lm.seed"``, marked as used."""
        node = self._lookup(path)
        if isinstance(node, dict):
            raise TypeError(f"{path!r} is a group of values; ask for one of: {', '.join(sorted(node))}")
        self._used.add(path)
        return node

    def check(self, path, actual, *, atol=0.0, rtol=0.0):
        """Compare ``actual`` (number, nested list, array or tensor) with the value at ``path``.

        A ``null`` in the reference stands for a masked entry and matches ``None`` or ``-inf``. Returns None.
        """
        import math

        expected = self.value(path)
        if hasattr(actual, "detach"):
            if getattr(actual, "is_meta", False):
                raise TypeError(f"{self.source}:{path}: a meta tensor holds no values to compare; compute on the CPU")
            actual = actual.detach().cpu().tolist()
        elif hasattr(actual, "tolist"):
            actual = actual.tolist()

        def walk(exp, act, where):
            if isinstance(exp, list):
                if not isinstance(act, list) or len(act) != len(exp):
                    raise AssertionError(f"{self.source}:{path}{where}: expected a list of {len(exp)} entries, got {act!r}")
                for i, (e, a) in enumerate(zip(exp, act)):
                    walk(e, a, f"{where}[{i}]")
            elif exp is None:
                if not (act is None or act == -math.inf):
                    raise AssertionError(f"{self.source}:{path}{where}: expected a masked entry (null / -inf), got {act!r}")
            elif isinstance(exp, bool) or isinstance(exp, str):
                if act != exp:
                    raise AssertionError(f"{self.source}:{path}{where}: expected {exp!r}, got {act!r}")
            elif not math.isclose(act, exp, rel_tol=rtol, abs_tol=atol) and act != exp:
                raise AssertionError(
                    f"{self.source}:{path}{where}: expected {exp!r}, got {act!r} "
                    f"(|difference| {abs(act - exp):.3g} exceeds atol={atol}, rtol={rtol})"
                )

        walk(expected, actual, "")

    def unused(self):
        """Dotted paths of leaf values that no cell has asked for yet."""
        leaves = []

        def walk(node, prefix):
            for key, child in node.items():
                path = f"{prefix}.{key}" if prefix else key
                if isinstance(child, dict):
                    walk(child, path)
                else:
                    leaves.append(path)

        walk(self._data, "")
        return [p for p in leaves if p not in self._used]

    def assert_all_used(self):
        """Fail loudly when any reference value was never used or checked by a cell."""
        missing = self.unused()
        if missing:
            raise AssertionError(f"{len(missing)} value(s) of {self.source} were never checked: {', '.join(missing)}")
        return len(self._used)
# builder:end sha256=5c33ca4787ad91c722698d776959ce9259a19449af6edbd297a64a68a23d4ae5
# builder:begin inline load_reference
def load_reference(json_text, expected_sha256, source):
    """Verify the embedded JSON against its SHA-256, then wrap it as a ``Reference``."""
    import json

    verify_sha256(json_text, expected_sha256, f"the embedded {source}")
    return Reference(json.loads(json_text), source)
# builder:end sha256=0061ffa86fd4d809348099c915727b39e6fdaebd397b90e1e3be85304120014c
# builder:begin frozen module5_1
REFERENCE_SOURCE = "references/module5_1.json"
REFERENCE_SHA256 = "653ec9b8c75695ce2e4423f3ea167f695e7911fc24cb9df52a6c2f1b781f13c0"
REFERENCE_JSON = r"""{
  "context_tokens": 131072,
  "gpt_oss_hybrid": {
    "all_full_bytes": 9663676416,
    "full_bytes": 4831838208,
    "full_layers": 18,
    "hybrid_total_bytes": 4836556800,
    "layers": 36,
    "per_layer_bytes_per_token": 2048,
    "sliding_bytes": 4718592,
    "sliding_layers": 18,
    "window": 128
  },
  "kv_rows": {
    "gpt_oss_gqa_all_full_equivalent": 73728,
    "gpt_oss_mha_hypothetical": 294912,
    "gpt_oss_mqa_hypothetical": 4608
  },
  "mla": {
    "bytes_per_token": 70272,
    "expanded_192_bytes_per_token": 4997120,
    "expanded_192_ratio": 71.11111111111111,
    "mha_equivalent_bytes_per_token": 3997696,
    "raw_element_ratio": 56.888888888888886
  },
  "model_cards": {
    "gpt_oss_20b_growing_bytes_per_token": 24576,
    "llama_3_3_70b_bytes_per_token": 327680,
    "llama_3_3_70b_context_bytes": 42949672960,
    "qwen2_5_7b_bytes_per_token": 57344,
    "qwen2_5_7b_context_bytes": 7516192768
  },
  "online_softmax_trace": {
    "alpha": 0.36787944117144233,
    "l1": 1.3678794411714423,
    "l2": 1.5852997230319539,
    "output": 2.502296533903012,
    "u1": 1.7357588823428847,
    "u2": 3.966890002140263
  },
  "running_example": {
    "bytes_per_token": 131072
  },
  "schema_version": 4,
  "score_matrix": {
    "n_4096_fp32_bytes": 67108864,
    "n_8192_fp32_bytes": 268435456,
    "tile_128_fp32_bytes": 65536
  },
  "sink_share": {
    "logit_0": 0.007751937984496124,
    "logit_2": 0.054576465128255015,
    "logit_5": 0.5369250855654837
  },
  "tiled": {
    "blocks_causal_2048_128": 136,
    "blocks_window_256_2048_128": 45
  },
  "two_bills": {
    "cache_bytes": [1073741824, 17179869184, 137438953472],
    "contexts": [8192, 131072, 1048576],
    "pairs": [67108864, 17179869184, 1099511627776]
  },
  "window": {
    "mistral_v0_1_reach": 131072
  }
}
"""
# builder:end sha256=de48e638cd31ce703858eac065e417e25f1b70f9fbcd7c5ccdd1ae2962095cc2

REFERENCE = load_reference(REFERENCE_JSON, REFERENCE_SHA256, REFERENCE_SOURCE)
print(f"{REFERENCE_SOURCE} verified: sha256 {REFERENCE_SHA256}")

# %% tags=["hide-input"]
# @title Setup 4 of 5: argument checks, the bad-input helper, the figure style and the exercise runner.
# builder:begin inline ALLOCATION_BUDGET_BYTES
# The most memory one call of a notebook function may ask for (Colab's free runtime has about 12 GB in all):
# a size that would need more is refused, before anything is allocated, by require_budget.
ALLOCATION_BUDGET_BYTES = 1 << 30
# builder:end sha256=b6a7f404a1b2c9b8056091086c1c556eb0263bab650cbde30c0e1a1ff37df62d
# builder:begin inline require_budget
def require_budget(what, shape, *, itemsize=8):
    """Return the bytes an array of ``shape`` with ``itemsize``-byte entries takes; refuse more than ALLOCATION_BUDGET_BYTES."""
    count = 1
    for size in shape:
        count *= int(size)
    needed = count * int(itemsize)
    if needed > ALLOCATION_BUDGET_BYTES:
        raise ValueError(
            f"{what} of shape {tuple(int(s) for s in shape)} would take {needed:,} bytes ({needed / 2**30:.3g} GiB), "
            f"over the budget of {ALLOCATION_BUDGET_BYTES:,} bytes (ALLOCATION_BUDGET_BYTES); choose smaller sizes"
        )
    return needed
# builder:end sha256=95763127d2ac87d998cc927c232f9df3749d8d5735e8dea396ddf5fc606b6601
# builder:begin inline require_int
def require_int(name, value, *, minimum=None, maximum=None):
    """Return ``value`` as an int; reject bools, floats and anything outside [minimum, maximum]."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value
# builder:end sha256=e0bc19079e13df7e9c6b5371010cff7e9d324f0f4873672158afde1615404e9e
# builder:begin inline require_real
def require_real(name, value, *, minimum=None, maximum=None, strict_minimum=False):
    """Return ``value`` as a finite float; reject bools, NaN, infinities and out-of-range values."""
    import math
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and (value <= minimum if strict_minimum else value < minimum):
        relation = "greater than" if strict_minimum else "at least"
        raise ValueError(f"{name} must be {relation} {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value
# builder:end sha256=931c25544e7750e55c9c269345f6bce61868a8c357e406694f1321529291e74e
# builder:begin inline require_bool
def require_bool(name, value):
    """Return ``value`` when it is True or False; a flag given as 0/1, a string or an array is a TypeError."""
    import numpy as np

    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)
# builder:end sha256=de1e29865238c4938a5119b1a881796b6d76eb730a87732f2080239e486702d9
# builder:begin inline require_choice
def require_choice(name, value, choices):
    """Return ``value`` when it is one of ``choices``; otherwise list the allowed ones."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value
# builder:end sha256=1931013db9ba92dd045fd521ca44508a4609b827fff8402dede07b5a0ecc5f23
# builder:begin inline as_numpy
def as_numpy(name, value):
    """``value`` as a NumPy array of any dtype: a dense CPU tensor is detached first (so one that requires grad converts too), any other tensor is a TypeError."""
    import sys

    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu" or value.layout != torch.strided:
            raise TypeError(f"{name} must be a dense CPU tensor or array, got a {value.layout} tensor on {value.device}; use {name}.to_dense().cpu()")
        value = value.detach().numpy()
    return np.asarray(value)
# builder:end sha256=1728212782c2019bb062f13c536a4eba4fed694ac1081708fa2107bc0586d869
# builder:begin inline require_array
def require_array(name, value, *, ndim=None, min_ndim=None, finite=True):
    """Return ``value`` as a real NumPy array (see ``as_numpy`` for tensors) with the required rank, no empty axis and finite entries."""
    import numpy as np

    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}")
    array = as_numpy(name, value)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers (int or float), got dtype {array.dtype}; convert with np.asarray({name}, dtype=float)")
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {array.shape}")
    if min_ndim is not None and array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {array.shape}")
    if 0 in array.shape:
        raise ValueError(f"{name} must not have an empty axis, got shape {array.shape}")
    if finite and not np.isfinite(array).all():
        raise ValueError(f"{name} must contain only finite values; found NaN or infinity")
    return array
# builder:end sha256=fde8d84a5e7d270a305703d44443390dd66e599627f3dfaacfd5bffde9e43d1b
# builder:begin inline require_mask
def require_mask(name, value, *, ndim=2):
    """Return ``value`` as a boolean NumPy mask of rank ``ndim``: True/False entries, or the numbers 0 and 1."""
    import numpy as np

    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a boolean mask, got {type(value).__name__}")
    value = as_numpy(name, value)
    array = require_array(name, value.astype(np.uint8) if value.dtype == np.bool_ else value, ndim=ndim)
    if not np.isin(array, (0, 1)).all():
        raise ValueError(f"{name} must hold only True/False (or 0/1), got other values such as {array[~np.isin(array, (0, 1))].flat[0]!r}")
    return array.astype(bool)
# builder:end sha256=7e804e1ec2a9f02336621ffa4ac4065288f7f484d498403081266eeacd18435a
# builder:begin inline require_tensor
def require_tensor(name, value, *, ndim=None, min_ndim=None, floating=True, finite=True):
    """Return ``value`` when it is a torch.Tensor of the required rank, dtype kind and finiteness."""
    import math

    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}; convert with torch.as_tensor({name})")
    if value.device.type != "cpu" or value.layout != torch.strided:
        raise TypeError(f"{name} must be a dense tensor on the CPU, where this notebook computes; got a {value.layout} tensor on {value.device}; use {name}.to_dense().cpu()")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(value.shape)}")
    if min_ndim is not None and value.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {tuple(value.shape)}")
    if any(size == 0 for size in value.shape):
        raise ValueError(f"{name} must not have an empty axis, got shape {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}; use {name}.float()")
    # abs().amax() is NaN or inf exactly when an entry is (amax propagates NaN): one reduction, ~10x faster than isfinite
    if finite and floating and not math.isfinite(float(value.detach().abs().amax())):
        raise ValueError(f"{name} must contain only finite values; found NaN or infinity")
    return value
# builder:end sha256=a3a9c1b0f946c754183644176dbc8dfe69f8e7d36c9b0f7ddd19addb6b846809
# builder:begin inline require_finite_result
def require_finite_result(what, value, cause):
    """Return ``value`` when every entry is finite; otherwise raise FloatingPointError naming ``cause``."""
    import math

    import numpy as np

    if getattr(value, "is_meta", False):
        raise TypeError(f"{what} is a meta tensor, which holds no values to check; compute on the CPU")
    if hasattr(value, "detach"):  # a tensor: its largest magnitude is finite exactly when every entry is
        entries = value.detach().cpu()
        entries = entries if entries.is_floating_point() or entries.is_complex() else entries.double()
        finite = entries.numel() == 0 or math.isfinite(float(entries.abs().amax()))
    else:
        finite = bool(np.isfinite(np.asarray(value, dtype=float)).all())
    if not finite:
        raise FloatingPointError(f"{what} overflowed to NaN or infinity from finite input: {cause}")
    return value
# builder:end sha256=716c47883d3e7fdc0063cc738eaa572ce834b3ab1c8986d8feed201e854e451c
# builder:begin inline expect_raises
def expect_raises(expected, function, *args, match=None, **kwargs):
    """Call ``function`` on bad input and check that it raises ``expected``; returns None (a check cell shows no value).

    Fails loudly when it returns normally, raises another type, or (with ``match``) raises a
    message that does not mention ``match``.
    """
    label = getattr(function, "__name__", repr(function))
    names = expected.__name__ if isinstance(expected, type) else " or ".join(e.__name__ for e in expected)
    try:
        function(*args, **kwargs)
    except expected as exc:
        message = str(exc)
        if match is not None and match not in message:
            raise AssertionError(f"{label} raised {type(exc).__name__} as required, but its message {message!r} does not mention {match!r}") from exc
        return None
    except Exception as exc:
        raise AssertionError(f"{label} should raise {names} on this input, but raised {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{label} should raise {names} on this input, but returned normally")
# builder:end sha256=231e11d45879736f3629d933bfdc401aa68acadbd006ff2e4ba0877a5f9fc717
# builder:begin inline LANGUAGES
LANGUAGES = ("en", "ru")
# builder:end sha256=111d2b2ce51a59d64b38c3969edbeb40b8f8de6a86b9f6d9a34fa3305c296f84
# builder:begin inline Palette
class Palette:
    """The course colours, one name per role, shared by every figure.

    The six line colours (``LINES``, the default cycle, colour only) are Okabe and Ito's colour-blind-safe set,
    vermillion for orange, a deep red added, purple and grey darkened: each reaches 3:1 against
    white (WCAG's minimum for graphics) and stays apart from the others under simulated
    deuteranopia, protanopia and tritanopia (tests/test_a11y_palette.py). YELLOW, BORDER and
    PAPER are light fills and rules, never lines or text.
    """

    BLUE = "#0072B2"
    ORANGE = "#D55E00"
    GREEN = "#009E73"
    RED = "#A51C30"
    PURPLE = "#C0649A"
    GREY = "#636B78"
    YELLOW = "#EBCB8B"
    INK = "#2E3440"
    MUTED = "#4C566A"
    BORDER = "#D8DEE9"
    PAPER = "#ECEFF4"
    LINES = (BLUE, ORANGE, GREEN, RED, PURPLE, GREY)
    # A second cue, for a plot of several series to pass as marker= and linestyle= (the cycle gives colour only):
    # the n-th series differs from the others in marker and dash too, with a marker on every data point.
    MARKERS = ("o", "s", "^", "D", "v", "P")
    DASHES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)))
    # How figures are shown: an inch of figure is 96 CSS pixels (a matplotlib point is a CSS point),
    # at most 800 px wide (what Colab and the handout show), in PNGs of twice the shown pixels.
    DPI = 96
    SHOWN_WIDTH_PX = 800
    PIXEL_DENSITY = 2
# builder:end sha256=61a2bda4cfb6e12bb46c778eceb1b37613fa292d77eadd588cba1c4269cde948
# builder:begin inline apply_plot_style
def apply_plot_style():
    """Set matplotlib defaults once: fonts, colour-blind-safe line colours (markers and dashes are each plot's), grid, 96 dpi."""
    import matplotlib

    matplotlib.rcParams.update({
        "font.family": "DejaVu Sans",
        "font.size": 11,
        "text.hinting": "no_hinting",  # at twice the pixels hinting changes nothing visible; skipping it draws text a fifth faster
        "text.color": Palette.INK,
        "axes.labelcolor": Palette.INK,
        "axes.titlecolor": Palette.INK,
        "axes.titlesize": 13,
        "axes.titleweight": "bold",
        "axes.titlelocation": "left",
        "axes.titley": 1.0,  # a fixed title height: automatic placement lays out every tick label once more per draw
        "axes.labelsize": 11,
        "axes.edgecolor": Palette.MUTED,
        "axes.linewidth": 0.8,
        "axes.grid": True,
        "axes.axisbelow": True,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": matplotlib.cycler(color=Palette.LINES),  # colour only: a plot of several series sets its own markers and dashes
        "lines.linewidth": 1.8,
        "lines.markersize": 5,
        "grid.color": Palette.BORDER,
        "grid.linewidth": 0.6,
        "xtick.color": Palette.MUTED,
        "ytick.color": Palette.MUTED,
        "xtick.labelsize": 10,
        "ytick.labelsize": 10,
        "legend.frameon": False,
        "legend.fontsize": 10,
        "figure.facecolor": "white",
        "figure.dpi": Palette.DPI,
        "savefig.dpi": Palette.DPI * Palette.PIXEL_DENSITY,
        "savefig.facecolor": "white",
        "svg.hashsalt": "course",
    })
# builder:end sha256=210dd8ad88bc32197a039a729dcbcbf05ca67f083f9a0c4e98c3cc257faacd80
# builder:begin inline localized
def localized(language, en, ru):
    """Pick the English or the Russian text of a label."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    return en if language == "en" else ru
# builder:end sha256=5ba33b2629b6677ddc302d4fd950a0a00da69545901ef85d69b19898e728ed93
# builder:begin inline log_tick_label
def log_tick_label(value, base=10):
    """A log-axis tick label: plain from 0.001 up to 100,000 (2, 0.5, 50000), a power in superscripts outside (10⁻¹², 2¹⁷)."""
    import math

    base, value = require_int("base", base, minimum=2), require_real("value", value)
    if value <= 0:
        return ""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    power = round(math.log(value, base))
    if not math.isclose(float(base) ** power, value, rel_tol=1e-9):
        return f"{value:.3g}"
    return f"{base}" + str(power).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
# builder:end sha256=9f21deeb4b95fab25a7f338b8ae0636502c1965289f1719789acd29abb374c66
# builder:begin inline log_scale
def log_scale(ax, which="x", base=10):
    """Put the x, y or both axes of ``ax`` on a log scale with plain tick labels and no minor ticks.

    Call it after plotting and setting limits. Ticks sit at whole powers of ``base``, and also at 2 and
    5 times them when fewer than two powers are in view. Matplotlib's default (TeX-style labels, minor
    ticks at 2 to 9) costs more to draw than the data.
    """
    import math

    import matplotlib.ticker

    if not hasattr(ax, "set_xscale") or not hasattr(ax, "xaxis"):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    if which not in ("x", "y", "both"):
        raise ValueError(f"which must be 'x', 'y' or 'both', got {which!r}")
    base = require_int("base", base, minimum=2)
    for name in ("x", "y") if which == "both" else (which,):
        getattr(ax, f"set_{name}scale")("log", base=base)
        low, high = sorted(getattr(ax, f"get_{name}lim")())
        powers = math.floor(math.log(high, base) + 1e-9) - math.ceil(math.log(low, base) - 1e-9) + 1
        axis = getattr(ax, f"{name}axis")
        axis.set_major_locator(matplotlib.ticker.LogLocator(base, subs=(1.0,) if powers >= 2 else (1.0, 2.0, 5.0)))
        axis.set_minor_locator(matplotlib.ticker.NullLocator())
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _, base=base: log_tick_label(value, base)))
    return ax
# builder:end sha256=19fe7efeb9bc31ee247366658c32f0f0bb4d71397c8b1eaba9ecfec662692977
# builder:begin inline png_bytes
def png_bytes(rgba):
    """An RGBA image (height, width, 4) as PNG bytes: zlib level 1 and no row filters, half of Pillow's time."""
    import struct
    import zlib

    import numpy as np

    pixels = np.asarray(rgba)
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 4 or pixels.size == 0:
        raise ValueError(f"rgba must be a non-empty (height, width, 4) uint8 image, got {pixels.dtype} of shape {pixels.shape}")
    height, width = pixels.shape[:2]
    rows = np.empty((height, 1 + 4 * width), dtype=np.uint8)  # (height, 1 + 4 width): filter byte 0 ("none"), then RGBA
    rows[:, 0] = 0
    rows[:, 1:] = pixels.reshape(height, 4 * width)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA, deflate, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b"")
# builder:end sha256=7c618560546a66f06e3c7d96330ad4a01047f73adf896adadb26c519dd777cbf
# builder:begin inline shown_text_pt
def shown_text_pt(fig):
    """The smallest visible text of ``fig`` in points as shown, at most ``Palette.SHOWN_WIDTH_PX`` wide (readers need 9 or more)."""
    import matplotlib.axes
    import matplotlib.axis
    import matplotlib.figure
    import matplotlib.spines
    import matplotlib.text

    if not isinstance(fig, matplotlib.figure.Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    drawn = fig.get_figwidth() * Palette.DPI
    sizes, artists = [], [fig]
    while artists:  # only what is drawn: findobj would also make and visit every tick of every hidden axis
        artist = artists.pop()
        if not artist.get_visible():
            continue
        if isinstance(artist, matplotlib.text.Text):
            sizes += [artist.get_fontsize()] if artist.get_text().strip() else []
        elif isinstance(artist, matplotlib.axis.Axis):
            artists += [artist.label, artist.offsetText, *artist.get_ticklabels(which="both")]
        else:
            hidden_axes = isinstance(artist, matplotlib.axes.Axes) and not artist.axison
            artists += [c for c in artist.get_children() if not (hidden_axes and isinstance(c, (matplotlib.axis.Axis, matplotlib.spines.Spine)))]
    return min(sizes, default=0) * min(round(drawn), Palette.SHOWN_WIDTH_PX) / drawn
# builder:end sha256=70fdc9a125687efd47a34a7a7ef8cf3d6afac15365ef9af64ef945633ccbc209
# builder:begin inline show_figure
def show_figure(fig, caption, alt=None):
    """Show a figure at most 800 px wide, sharp at twice its pixels, with alt text and its how-to-read caption.

    ``alt`` is one short sentence saying what the figure shows, read by a screen reader before the
    caption; by default it is the caption's first sentence. In a plain script the figure is only closed.
    """
    import re

    import matplotlib.pyplot as plt

    if not isinstance(caption, str) or not caption.strip():
        raise ValueError("every figure needs a caption that says how to read it")
    if alt is not None and (not isinstance(alt, str) or not alt.strip()):
        raise ValueError("alt must be one short sentence saying what the figure shows, or None for the caption's first")
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
    except ImportError:
        kernel = None
    if kernel is not None:
        from IPython.display import Image, Markdown, display

        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig.set_dpi(Palette.DPI * Palette.PIXEL_DENSITY)
        canvas = FigureCanvasAgg(fig)  # draws off-screen whatever backend the kernel uses
        canvas.draw()
        png = png_bytes(canvas.buffer_rgba())
        width = min(round(fig.get_figwidth() * Palette.DPI), Palette.SHOWN_WIDTH_PX)
        # the caption's first sentence: up to a full stop, ? or ! followed by a capital
        alt = alt or re.split(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁ])", " ".join(caption.split()), maxsplit=1)[0]
        # the smallest text as shown, in CSS points (a test of the handouts reads it)
        display(Image(data=png, width=width), metadata={"image/png": {"alt": alt, "smallest_text_pt": round(shown_text_pt(fig), 1)}})
        display(Markdown(f"*{caption}*"))
    plt.close(fig)
# builder:end sha256=f95ed61838a4ebe98625defff2c2a82cae776a873d7b7d20d06046a2b9669527

apply_plot_style()
np.set_printoptions(precision=4, suppress=True)
KIB, MIB, GIB = 2**10, 2**20, 2**30  # binary units: KiB, MiB, GiB
GB = 10**9  # decimal gigabytes, as GPU memory is sold


def check_stated(what, computed, stated, digits):
    """Stop when a number the prose states differs from the cell's value rounded to ``digits`` places."""
    if not isinstance(what, str):
        raise TypeError(f"what names the stated number and must be a string, got {type(what).__name__}")
    computed, stated = require_real("computed", computed), require_real("stated", stated)
    digits = require_int("digits", digits, minimum=0)
    if round(computed, digits) != stated:
        raise ValueError(f"the text states {what} = {stated}, but the cell computes {computed!r} ({round(computed, digits)} at {digits} places); fix the text or the code")
    return computed


expect_raises(ValueError, check_stated, "pi to two places", math.pi, 3.15, 2, match="states pi to two places = 3.15")
expect_raises(ValueError, check_stated, "pi", math.pi, 3.0, -1, match="digits")
check_stated("pi rounded to 0 places", math.pi, 3, 0)  # digits = 0 is the smallest allowed
print("helpers ready; figures use the course style, labels in", LANGUAGE)

# %% tags=["hide-input"]
# @title Setup 5 of 5: the judges. Each exercise below is followed by one call that runs its contract check.
# builder:begin inline MESSAGES
MESSAGES = {
    # exercise labels and section names: the keys stay "Exercise N" for the grader, the reader sees these words
    "Exercise": "Exercise",
    "Module": "Module",
    # check_exercise
    "pass": "{label}: PASS, every contract property of {name} holds",
    "reference in place": "{label}: the reference solution of {name} is in place, not yours. Fix your cell, run it, then run this one.",
    "not attempted, reference": "{label}: not attempted yet; later cells use the reference solution",
    "not attempted, waiting": "{label}: not attempted yet; the cells that need {name} wait for it",
    "waits for": "{label}: waits for {waited}, which {name} uses; finish {waited} first, then run this cell again",
    "your frames": "Your code raised {error} here (the course's frames are left out):",
    "crash property": "the contract check runs to the end on this implementation",
    "crash input": "{label}'s contract inputs",
    "crash expected": "a result the contract can judge",
    "crash hint": "the traceback above this message shows the line of {name} that raised",
    "failed reason": "{name} failed '{property}'",
    "crash reason": "{name} broke its contract check ({error})",
    "go on, reference": ("{name} now names the reference solution of {label}, so the cells after this one run on it: click this "
                         "cell and choose Runtime → Run after (Colab), or select the next cell and choose Run → Run Selected Cell "
                         "and All Below (JupyterLab). show_reference('{label}') prints the solution; fix your cell and run it "
                         "again, which gives {name} back your own code, then run this one."),
    "go on, waiting": "fix {name}, run its cell and this one again; the cells that need {name} wait until it passes.",
    # a contract violation and a failed notebook check
    "violation": "contract property '{property}' failed",
    "on input": "on input",
    "expected": "expected",
    "actual": "actual",
    "usual cause": "usual cause",
    "to go on": "to go on",
    "check failed": "check failed: {claim}",
    "a true value": "a true value",
    "numbers of shape": "numbers of shape {shape}",
    "shape": "shape {shape}",
    "close expected": "{value} at index {index} (tolerance atol={atol}, rtol={rtol})",
    "close actual": "{value}; {count} of {size} entries disagree, largest |difference| {worst}",
    "not finite": "not finite (NaN or infinity)",
    "library error": "{error}: {message}",
    # report_section and exercise_summary
    "section pass": "{section}: PASS",
    "section waits": "{section}: not judged yet; some cells wait for {labels}",
    "section on reference": "{section}: the checks hold, but with the reference solution standing in for {labels}: not a pass of your own code yet",
    "and more": "{labels} and {count} more",
    "none": "none",
    "summary passed": "Exercises passed with your own code: {labels}",
    "summary failed": "Exercises failed: {labels}",
    "summary not attempted": "Exercises not attempted: {labels}",
    "summary first failure": "First failing check: the check cell of {label} ({reason}); fix that exercise first",
    "references used": "All {count} reference values of {source} were used or checked by a cell.",
    "references waiting": ("{used} of {count} reference values of {source} were used or checked; the other {left} wait with the "
                           "cells that wait for {labels}"),
    # judge_prediction: a predict-then-run exercise
    "prediction missing": ("{label}: no prediction yet (set it above and run that cell, then this one). The measured answer "
                           "is ({measured}): {explanation}"),
    "prediction right": "{label}: you predicted ({prediction}), right: {explanation}",
    "prediction wrong": "{label}: you predicted ({prediction}), not what the measurement says, which is ({measured}): {explanation}",
    # the header under a notebook's title (written by the builder, not printed by a check)
    "provenance": ("*Provenance: course builder {version}; reference `{path}`, SHA-256 `{sha256}`. "
                   "Licence: text and figures CC BY-SA 4.0, code MIT.*"),
    # the graded edition's waiting cells
    "cell waits": "This cell waits for {label}: run it again once {label} passes its check.",
    # a boolean mask a contract compares entry by entry
    "wrong mask entry": "{mask}; first wrong entry at (query, key) = {where}",
    # a contract judged as a table of properties (partial credit)
    "properties": "properties",
    "properties hold": "{held} of the {count} properties of this exercise hold",
    # the grader's feedback (builder/grade): one line each, in the submission's language
    "grade pass": "PASS: every contract property of {names} holds.",
    "grade not done": "NOT DONE: {names} still raises NotImplementedError, as the stub does: {error}",
    "grade fail": "FAIL: {names} breaks its contract.",
    "grade error": "ERROR: {names} raised {error}: {message}",
    "grade an exception": "an exception",
    "grade environment": ("NOT GRADED (grading environment): the process running your code could not import {module}, which "
                          "the course provides; this is the grading machine's fault, not yours, and the exercise will be graded again."),
    "grade properties": "each property of this exercise:",
    "grade property holds": "  holds: {property}",
    "grade property fails": "  fails: {property}",
    "grade where": "at line {line} of {cell}, in {name}",
    "grade own cell": "your own cell {number}",
    "grade exercise cell": "your {label} cell",
    "grade missing cell": "MISSING: the submission has no {label} cell, so {names} was not graded.",
    "grade missing names": "MISSING: your {label} cell does not define {names}.",
    "grade syntax": "ERROR: your {label} cell does not compile: SyntaxError at line {line}: {message}",
    "grade defining": "ERROR: defining your {label} code raised {error}: {message}",
    "grade defining failed": "ERROR: defining your {label} code failed; the process running it said:",
    "grade note skipped": "Note: line {line} of your own cell {number} raised {error} and was skipped.",
    "grade note shadows": ("Note: your {names} shares a name with the course's; your code used yours, and the course's own "
                           "code kept the course's."),
    "grade timed out": "TIMED OUT after {seconds} s: the check of {label} did not finish (an infinite loop, or code far too slow).",
    "grade ended": "ERROR: the process checking {label} ended ({how}) before it gave a verdict.",
    "grade check stopped": "ERROR: the check stopped with {error}: {message}",
    "grade killed parent": ("ERROR: your code killed the process that runs it (its parent, the course process), so {label} "
                            "could not be judged. Grading went on with the next exercise."),
    "grade not graded": "NOT GRADED: {reason}",
    "grade page title": "Feedback for {id}",
    "grade page score": "Score: {score} of {most} points",
    "grade page not graded": "Not graded",
    "grade page exercise": "Exercise",
    "grade page points": "Points",
    "grade page feedback": "Feedback",
}
# builder:end sha256=56f94851efce90e262c8ab12962d98a271132d690a1596e26b9dc0f3548cd3f0
# builder:begin inline say
def say(key, **fields):
    """The message ``key`` of ``MESSAGES`` in the notebook's language, its ``{fields}`` filled in."""
    if not isinstance(key, str) or key not in MESSAGES:
        raise ValueError(f"no message {key!r}: say() takes a key of MESSAGES, such as 'pass' or 'summary failed'")
    try:
        return MESSAGES[key].format(**fields)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"the message {key!r} needs the field {exc}; pass it as a keyword argument") from None
# builder:end sha256=798db956b4d3bff634a0a6dbe754e0723cefaee90ec4497429ef800b200ee591
# builder:begin inline in_language
def in_language(text, depth=0):
    """A contract's text (usual cause, property, input, value) in the notebook's language: its translation, or itself.

    A text is looked up whole, then as translated texts and templates (``"shape {tuple(x.shape)}"``, their
    fields matched and carried over) joined by ", ", "; " or ": ", so ``case + ", eps=0"`` is translated too; what no
    entry matches (code, numbers) stays as it is. A wrapped exception (``RuntimeError: ...``) keeps its own text.
    """
    import re

    if not isinstance(text, str):
        return text
    if text in MESSAGES:
        return MESSAGES[text]
    raised = re.fullmatch(r"([A-Z]\w*(?:Error|Exception|Warning)): (.+)", text, re.DOTALL)
    if raised and "library error" in MESSAGES:
        return say("library error", error=raised.group(1), message=raised.group(2))
    field = r"\{[^{}]*\}"
    if depth > 3 or not any("{" in key for key in MESSAGES if MESSAGES[key] != key and " " in key):
        return text  # an English edition: no translated templates, nothing to look up in parts

    def templates():
        """(English, its fields, pattern, translation) of each translated text of two words or more, compiled once per table."""
        cache = getattr(in_language, "cache", None)
        if cache is None or cache[0] != len(MESSAGES):
            found = []
            for english, translated in MESSAGES.items():
                if translated == english or (" " not in english.strip(",; ") and "{" not in english):
                    continue
                if english[:2] in (", ", "; ", ": ") and translated[:2] in (", ", "; ", ": "):
                    english, translated = english[2:], translated[2:]  # a clause the contract appends to an input
                pieces = re.split(f"({field})", english)
                pattern = "".join(re.escape(piece) if i % 2 == 0 else "(.+?)" if i < len(pieces) - 2 or pieces[-1]
                                  else r"((?:\([^()]*\)|\[(?:[^\[\]]|\[[^\[\]]*\])*\]|[^,;:\s])+)" for i, piece in enumerate(pieces))
                found.append((pieces[1::2], re.compile(pattern + r"(?=$|[,;:] | )", re.DOTALL), translated))
            cache = in_language.cache = (len(MESSAGES), found)
        return cache[1]

    def top_level(separator):
        """The first index of ``separator`` in ``text`` outside brackets and quoted values, or -1."""
        level, quote = 0, ""
        for i, char in enumerate(text):
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"" and (i == 0 or text[i - 1] in " =([{"):  # a quoted value, not an apostrophe
                quote = char
            elif char in "([{":
                level += 1
            elif char in ")]}":
                level -= 1
            elif level == 0 and text.startswith(separator, i):
                return i
        return -1

    best = None
    for fields, pattern, translated in templates():
        match = pattern.match(text)
        if match and (best is None or match.end() > best[0].end()):
            best = (match, fields, translated)
    if best is not None:
        match, fields, translated = best
        values = {}
        for name, value in zip(fields, match.groups()):
            values.setdefault(name, in_language(value, depth + 1))
        head = re.sub(field, lambda m: values.get(m.group(0), m.group(0)), translated)
        rest = text[match.end():]
        if rest[:2] in (", ", "; ", ": "):
            return head + rest[:2] + in_language(rest[2:], depth + 1)
        return head + in_language(rest, depth + 1)  # "" or a clause that opens with a space (" with logit 3.0")
    cuts = [at for at in (top_level(", "), top_level("; "), top_level(": ")) if at > 0]
    if not cuts:
        return text
    at = min(cuts)
    return in_language(text[:at], depth + 1) + text[at:at + 2] + in_language(text[at + 2:], depth + 1)
# builder:end sha256=22713538abd79876f5f13e3531a3c01faf71e3ba8abfb66732088e7f68031aea
# builder:begin inline shown_label
def shown_label(label):
    """An exercise or section label as the reader sees it: "Exercise 3" in the reader's word for "Exercise" (the table's)."""
    word, _, rest = str(label).partition(" ")
    return f"{MESSAGES[word]} {rest}" if word in ("Exercise", "Module") and rest else str(label)
# builder:end sha256=c18d973c9bab5d34e69e59d81a86865640ae33fe736b78c1fc8299eb7e9aac88
# builder:begin inline key_label
def key_label(label):
    """The grader's key of a label the reader may type in either language: the reader's word and N -> "Exercise N"."""
    word, _, rest = str(label).partition(" ") if isinstance(label, str) else ("", "", "")
    return f"Exercise {rest}" if rest and word == MESSAGES["Exercise"] else label
# builder:end sha256=59c0a253737a6b9e71a5415dd45d2a3a75aadbf0c251639b8d7f2d151e5c4846
# builder:begin inline ContractViolation
class ContractViolation(AssertionError):
    """A broken contract property: which one, on what input, expected against actual, and the usual cause."""

    def __init__(self, prop, on_input, expected, actual, hint):
        self.property, self.on_input, self.expected, self.actual, self.hint = prop, on_input, expected, actual, hint
        self.shown_property = in_language(prop)  # the property and the usual cause as the reader's language writes them
        super().__init__("\n".join([say("violation", property=self.shown_property)] + [self.line(name, value) for name, value in self._fields()]))

    def _fields(self):
        """(name, value in the reader's language) of each field under the property, "to go on" once a check has set it."""
        values = (("on input", self.on_input), ("expected", self.expected), ("actual", self.actual), ("usual cause", self.hint))
        later = (("properties", getattr(self, "tally", "")), ("to go on", getattr(self, "go_on", "")))  # set by the harness, the check
        return tuple((name, in_language(value)) for name, value in values) + tuple((name, value) for name, value in later if value)

    @staticmethod
    def line(name, value):
        """One field of the message: its name in the reader's language, padded so the values line up."""
        width = max(13, 2 + max(len(say(key)) for key in ("on input", "expected", "actual", "usual cause", "properties", "to go on")))
        return f"  {say(name) + ':':<{width}}{value}"

    def _render_traceback_(self):
        """What IPython and Jupyter show instead of a traceback: the student's own frames, then the message, one line a field."""

        import textwrap

        def one_line(text):
            return " ".join(str(text).split())

        def wrapped(line):  # a long value goes on under itself, cut between words, never inside one
            indent = " " * (len(line) - len(line.lstrip()) + (len(self.line("on input", "")) - 2 if line.startswith("  ") else 2))
            return textwrap.wrap(line, 400, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [line]

        message = [f"ContractViolation: {say('violation', property=one_line(self.shown_property))}"]
        lines = message + [self.line(name, one_line(value)) for name, value in self._fields()]
        return list(getattr(self, "frames", ())) + [part for line in lines for part in wrapped(line)]

    @staticmethod
    def run_properties(properties, *args):
        """Run a contract's table of named properties in order, each on ``args``; raise the first failure, saying how many hold.

        ``properties`` holds ``(name, check)`` or ``(name, check, weight)``: ``check(*args)`` raises (ContractViolation,
        or any error) when its property fails. Every property runs, so a grader can give credit for those that hold;
        a stub's NotImplementedError stops at once. Returns ``{"properties": [(name, holds, weight), ...]}``; the
        failure raised carries the same list as ``outcomes``.
        """
        outcomes, first = [], None
        for entry in properties:
            name, check, weight = (tuple(entry) + (1.0,))[:3]
            try:
                check(*args)
            except NotImplementedError:
                raise
            except Exception as error:
                outcomes.append((name, False, weight))
                first = first or error
            else:
                outcomes.append((name, True, weight))
        if first is None:
            return {"properties": outcomes}
        first.outcomes = outcomes
        if isinstance(first, ContractViolation) and len(outcomes) > 1:
            first.tally = say("properties hold", held=sum(holds for _, holds, _ in outcomes), count=len(outcomes))
            first.args = (f"{first.args[0]}\n{first.line('properties', first.tally)}",)
        raise first
# builder:end sha256=47053255625f430394c5c6e1d28e572714563581e5f0bc4d05667f0bf809af2c
# builder:begin inline contract_assert
def contract_assert(condition, prop, on_input, expected, actual, hint):
    """Raise ContractViolation when ``condition`` is false."""
    if not condition:
        raise ContractViolation(prop, on_input, expected, actual, hint)
# builder:end sha256=53166c43c208d4eb797cd3700488b6cdd32444ce08d55a7defd09bd00fc03ad8
# builder:begin inline contract_close
def contract_close(prop, on_input, actual, expected, hint, *, atol=1e-12, rtol=1e-12):
    """Require two arrays or tensors to agree entry by entry; return the largest absolute error.

    NaN never agrees with anything, so a hidden NaN fails here instead of passing silently.
    """
    import numpy as np

    def as_array(x):
        if hasattr(x, "detach"):
            x = x.detach().cpu().double().numpy()
        return np.asarray(x, dtype=np.float64)

    unreadable = (TypeError, ValueError, AttributeError, RuntimeError, NotImplementedError)  # NotImplementedError: a meta tensor
    try:
        want = as_array(expected)
    except unreadable:
        raise TypeError(f"contract_close: the expected value must be numbers on the CPU, got {type(expected).__name__}") from None
    try:
        got = as_array(actual)
    except unreadable:
        raise ContractViolation(
            prop, on_input, say("numbers of shape", shape=want.shape), f"{type(actual).__name__} {actual!r}"[:160], hint,
        ) from None
    if got.shape != want.shape:
        raise ContractViolation(prop, on_input, say("shape", shape=want.shape), say("shape", shape=got.shape), hint)
    with np.errstate(invalid="ignore"):
        error = np.abs(got - want)
        agree = (got == want) | (error <= atol + rtol * np.abs(want))
    if not agree.all():
        where = tuple(int(i) for i in np.argwhere(~agree)[0])
        finite_errors = error[~agree][np.isfinite(error[~agree])]
        worst = f"{finite_errors.max():.3g}" if finite_errors.size else say("not finite")
        raise ContractViolation(
            prop,
            on_input,
            say("close expected", value=repr(float(want[where])), index=where, atol=atol, rtol=rtol),
            say("close actual", value=repr(float(got[where])), count=int((~agree).sum()), size=agree.size, worst=worst),
            hint,
        )
    return float(error.max()) if error.size else 0.0
# builder:end sha256=174bfed6f581e89f89c141b0ed70c83565478a172487b1d3f7537e838ff334d2
# builder:begin inline contract_call
def contract_call(prop, on_input, hint, function, *args, **kwargs):
    """Return ``function(*args, **kwargs)``; an error it raises on valid input fails ``prop`` instead.

    NotImplementedError (an exercise stub) and ContractViolation pass through unchanged.
    """
    try:
        return function(*args, **kwargs)
    except (NotImplementedError, ContractViolation):
        raise
    except Exception as exc:
        raise ContractViolation(
            prop, on_input, "a result (the input is valid)", f"{type(exc).__name__}: {exc}", hint
        ) from exc
# builder:end sha256=77ce5847788864189f01cccf3c30cf734ec2a8d060af1324cd37495053d7cba1
# builder:begin inline contract_parts
def contract_parts(prop, on_input, result, names):
    """Split ``result`` into the parts called ``names``; a result of another form fails ``prop`` by name."""
    if isinstance(result, (tuple, list)) and len(result) == len(names):
        return tuple(result)
    expected = "(" + ", ".join(names) + ")"
    raise ContractViolation(
        prop, on_input, f"a tuple {expected}", f"{type(result).__name__} {result!r}"[:160], f"return {expected} together, as one tuple",
    )
# builder:end sha256=43f723e39abebfdc7192c1ffd81b27dc8df5334c90a5c8539afb486f6800d40a
# builder:begin inline CheckFailed
class CheckFailed(AssertionError):
    """A notebook check that does not hold: what should hold, and the value found against the one required."""

    @classmethod
    def of(cls, claim, expected, actual):
        """The failure of ``claim``: its expected and actual values, one line each, in the reader's language."""
        return cls(f"{say('check failed', claim=claim)}\n  {say('expected') + ':':<10}{expected}\n  {say('actual') + ':':<10}{actual}")

    def _render_traceback_(self):
        """What IPython and Jupyter show instead of a traceback: the message alone, at most 15 lines."""
        import textwrap

        lines = [part for line in f"CheckFailed: {self}".splitlines() if line.strip()  # wrapped between words, never cut
                 for part in textwrap.wrap(line, 400, subsequent_indent=" " * 12, break_long_words=False, break_on_hyphens=False)]
        return lines[:14] + ["  ..."] if len(lines) > 15 else lines
# builder:end sha256=270479f92d28a784d89583ce6f5e65a4ab03de45140010316e995276336212e1
# builder:begin inline expect
def expect(claim, actual, relation=None, expected=None):
    """Raise CheckFailed unless ``actual relation expected`` holds; with no relation, ``actual`` must be true.

    ``claim`` says in words what should hold. Unlike ``assert``, this check survives ``python -O``,
    and its message shows both values.
    """
    import operator

    relations = {
        "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "in": lambda a, b: a in b, "not in": lambda a, b: a not in b, "is": operator.is_, "is not": operator.is_not,
    }
    if relation is not None and relation not in relations:
        raise ValueError(f"relation must be one of {', '.join(relations)} or None, got {relation!r}")
    holds = bool(actual) if relation is None else bool(relations[relation](actual, expected))
    if not holds:

        def shown(value):
            text = repr(value)
            return text if len(text) <= 300 else text[:300] + " ..."

        want = say("a true value") if relation is None else f"{relation} {shown(expected)}"
        raise CheckFailed.of(claim, want, shown(actual))
# builder:end sha256=1894781fc48f3ddf5c9b03c71e0bf98b683ff62bf7f81f1e8ff2171fbf1f11b8
# builder:begin inline expect_close
def expect_close(claim, actual, expected, *, atol=1e-12, rtol=1e-12):
    """Raise CheckFailed unless two arrays or tensors agree entry by entry (``contract_close``'s rule); return the largest error.

    A light stand-in for ``torch.testing.assert_close``, whose first call (torch 2.13) imports torch.distributed,
    sympy and mpmath: about a second on a 2-core CPU.
    """
    try:
        return contract_close(claim, "", actual, expected, "", atol=atol, rtol=rtol)
    except ContractViolation as failed:
        raise CheckFailed.of(claim, failed.expected, failed.actual) from None
# builder:end sha256=ab56d8fab37117cc34b5a3228fa551bb4c6128d022cb27ecf50a4eedc08ebfe2
# builder:begin inline require_namespace
def require_namespace(namespace, label="Exercise"):
    """Return ``namespace`` when it is a notebook's globals (a dict) and ``label`` a str; else a TypeError naming the fix."""
    if not isinstance(namespace, dict):
        raise TypeError(f"namespace must be the notebook's globals() dict, got {type(namespace).__name__}; pass globals()")
    if not isinstance(label, str):
        raise TypeError(f"an exercise label must be a str such as 'Exercise 3', got {type(label).__name__} {label!r}")
    return namespace
# builder:end sha256=d36def9074e7be6460c42564f32e0e92c04e4362adb0889123dee3ed2b4886df
# builder:begin inline use_reference
def use_reference(label, namespace, reason):
    """Put the reference solution of ``label`` into ``namespace`` and record ``reason``; False when there is none."""
    require_namespace(namespace, label)
    filed = namespace.get("REFERENCE_SOLUTIONS", {}).get(label)
    source = namespace.get("REFERENCE_SOURCES", {}).get(label)
    if filed is not None:
        namespace.update(filed)
        names = list(filed)
    elif source is not None:
        before = dict(namespace)
        exec(compile(source, f"<reference solution of {label}>", "exec"), namespace)
        names = [n for n, v in namespace.items() if n not in before or before[n] is not v]
    else:
        return False
    for name in names:
        try:
            namespace[name].__reference_solution__ = label
        except (AttributeError, TypeError):
            pass  # a constant: nothing to mark
    namespace.setdefault("EXERCISE_OUTCOMES", {})[label] = reason
    return True
# builder:end sha256=c81b0d768806aefbb1c97ab691bfabcd9003eab88460afe582c39a932a2894e0
# builder:begin inline exercises_on_reference
def exercises_on_reference(namespace):
    """The labels of the exercises whose reference solution stands in for the student's, in order."""
    require_namespace(namespace)
    return [label for label, outcome in namespace.get("EXERCISE_OUTCOMES", {}).items() if outcome != "passed"]
# builder:end sha256=e8a18204ae78c060481ec8f39c5e5b1a235c5b997471ae54dbdc788414407c25
# builder:begin inline check_exercise
def check_exercise(label, contract, implementation, namespace):
    """Judge one exercise with its contract check; print PASS only when the student's own code passes. Returns None.

    An untouched stub prints one line and lets the notebook go on (on the reference solution when
    there is one). Any other failure puts the reference in place (see the module docstring) and is
    raised again, as a short message: the student's own frames, the property, the input, expected
    against actual, the usual cause and how to go on. Without a reference (the graded edition) the
    names of the exercise wait in ``namespace["EXERCISES_WAITING"]`` until the check passes.
    """
    import re
    import sys
    import traceback

    def own_frames(error, most=3):
        """The innermost frames of ``error`` in the student's code, formatted: none of the course's cells, none of a library's."""
        course = {getattr(getattr(f, "__code__", None), "co_filename", None) for f in (check_exercise, contract, namespace.get("contract_call"))}
        libraries = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
        frames = [f for f in traceback.extract_tb(getattr(error, "__traceback__", None))
                  if f.filename not in course and not f.filename.startswith(libraries) and "site-packages" not in f.filename]
        lines = [say("your frames", error=type(error).__name__)] if frames else []
        for frame in frames[-most:]:
            lines += [f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}'] + [f"    {frame.line.strip()}"] * bool(frame.line)
        return lines

    require_namespace(namespace, label)
    if not callable(contract):
        raise TypeError(f"{label}: contract must be the check function to run, got {type(contract).__name__}")
    name = getattr(implementation, "__name__", repr(implementation))
    outcomes = namespace.setdefault("EXERCISE_OUTCOMES", {})
    waiting = namespace.setdefault("EXERCISES_WAITING", {})
    if getattr(implementation, "__reference_solution__", None) == label:
        contract(implementation)
        if outcomes.get(label) != "not attempted":  # else the line that said so stands for every function of the exercise
            print(say("reference in place", label=shown_label(label), name=name))
        return None
    needs = namespace.get("EXERCISE_NEEDS")  # the graded edition's: the unfinished exercise an implementation uses
    waited = needs(implementation, label) if callable(needs) else None
    try:
        if not waited:
            contract(implementation)
    except Exception as error:
        stub = re.match(r"(Exercise \d+):", str(error)) if isinstance(error, NotImplementedError) else None
        if stub and stub.group(1) != label and stub.group(1) in waiting.values():
            waited = stub.group(1)
        elif stub and stub.group(1) == label:
            if use_reference(label, namespace, "not attempted"):
                print(say("not attempted, reference", label=shown_label(label)))
            else:
                outcomes[label], waiting[name] = "not attempted", label
                print(say("not attempted, waiting", label=shown_label(label), name=name))
            return None
        else:
            failure = error if isinstance(error, ContractViolation) else ContractViolation(
                say("crash property"), say("crash input", label=shown_label(label)),
                say("crash expected"), f"{type(error).__name__}: {error}", say("crash hint", name=name),
            )
            failure.frames = own_frames(error.__cause__ if failure is error else error)
            reason = (say("failed reason", name=name, property=failure.shown_property) if failure is error
                      else say("crash reason", name=name, error=type(error).__name__))
            if use_reference(label, namespace, reason):
                failure.go_on = say("go on, reference", label=shown_label(label), name=name)
            else:
                outcomes[label], waiting[name] = reason, label
                failure.go_on = say("go on, waiting", name=name)
            failure.args = (f"{failure.args[0]}\n{failure.line('to go on', failure.go_on)}",)
            if failure is error:
                raise
            raise failure from error
    if waited:
        outcomes[label], waiting[name] = f"waits for {waited}", label
        print(say("waits for", label=shown_label(label), waited=shown_label(waited), name=name))
        return None
    for waiter in [n for n, held in waiting.items() if held == label]:
        del waiting[waiter]
    outcomes[label] = "passed"
    print(say("pass", label=shown_label(label), name=name))
    return None  # the contract's summary stays unshown: a check cell prints its verdict, never an Out[] value
# builder:end sha256=511f229e32d9cf0932a72cf62893e27a9e79b7c6ed813e1dc852494ae097b56a
# builder:begin inline show_reference
def show_reference(label, namespace=None):
    """Print the solution edition of the exercise cell ``label``, for example ``show_reference("Exercise 3")`` (or «Упражнение 3»)."""
    label = key_label(label)
    sources = require_namespace(globals() if namespace is None else namespace, label).get("REFERENCE_SOURCES", {})
    if label not in sources:
        raise ValueError(f"no exercise is labelled {label!r}; the labels are {', '.join(sources) or '(none)'}")
    print(sources[label])
# builder:end sha256=961194d29c1f707feff62a1f5065e53319d456554899ef31485d51f35e4b0b2a
# builder:begin inline report_section
def report_section(section, namespace):
    """Print '<section>: PASS' only while every exercise so far runs on the student's own code."""
    require_namespace(namespace, section)
    standing_in = exercises_on_reference(namespace)
    waited = list(dict.fromkeys(namespace.get("EXERCISES_WAITING", {}).values()))
    section = shown_label(section)
    if waited:
        print(say("section waits", section=section, labels=", ".join(map(shown_label, waited))))
    elif not standing_in:
        print(say("section pass", section=section))
    else:
        named = ", ".join(map(shown_label, standing_in[:3]))
        named = say("and more", labels=named, count=len(standing_in) - 3) if len(standing_in) > 3 else named
        print(say("section on reference", section=section, labels=named))
# builder:end sha256=8ca689cc0603f77f26f44dad6086a00253cb608244f49da96c76aa3ca0984967
# builder:begin inline exercise_summary
def exercise_summary(namespace):
    """Print the exercises passed, failed and not attempted, and name the first failing check."""
    require_namespace(namespace)
    outcomes = namespace.get("EXERCISE_OUTCOMES", {})
    skipped = [label for label, outcome in outcomes.items() if outcome == "not attempted" or outcome.startswith("waits for")]
    failed = [label for label in exercises_on_reference(namespace) if label not in skipped]

    def listed(labels):
        """Labels as the reader sees them, or the word for none."""
        return ", ".join(map(shown_label, labels)) or say("none")

    print(say("summary passed", labels=listed(label for label, o in outcomes.items() if o == "passed")))
    print(say("summary failed", labels=listed(failed)))
    print(say("summary not attempted", labels=listed(skipped)))
    if failed:
        print(say("summary first failure", label=shown_label(failed[0]), reason=outcomes[failed[0]]))
# builder:end sha256=b83d917828f3325fbfd33b565677e33dd396d6f95c14a209749d86000963806b
# builder:begin inline report_references
def report_references(namespace):
    """Print how many reference values the cells used or checked, and return it; fail loudly on one left unchecked.

    While cells wait for an unfinished exercise (the graded edition), the values they would have
    checked are left unchecked: say how many, and for which exercises, instead of failing.
    """
    require_namespace(namespace)
    reference, waiting = namespace["REFERENCE"], namespace.get("EXERCISES_WAITING", {})
    source, left = namespace.get("REFERENCE_SOURCE", reference.source), reference.unused()
    if left and waiting:
        used = len(reference._used)
        labels = ", ".join(map(shown_label, dict.fromkeys(waiting.values())))
        print(say("references waiting", used=used, count=used + len(left), source=source, left=len(left), labels=labels))
        return used
    count = reference.assert_all_used()
    print(say("references used", count=count, source=source))
    return count
# builder:end sha256=6abe858b8fb9cd3346b86f78a5606b40c6a5d10bb9b491c71e67ad98f51af7fa
# builder:begin inline check_additive_mask_contract
def check_additive_mask_contract(make_mask):
    """Judge ``make_mask(n, window=None, n_sink=0)``: an additive causal mask with a window and sinks.

    The mask holds 0.0 where query i may read key j and -inf where it may not. Returns a summary;
    raises ContractViolation naming the first property that fails.
    """
    import numpy as np

    def rule(n, window, n_sink):
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        allowed = j <= i
        if window is not None:
            allowed = allowed & ((i - j < window) | (j < n_sink))
        return allowed

    cases = [(6, None, 0), (9, 3, 0), (9, 3, 2), (5, 1, 0), (4, 8, 0), (7, 2, 7), (10, 4, 1)]
    for n, window, n_sink in cases:
        case = f"make_mask({n}, window={window}, n_sink={n_sink})"
        mask = np.asarray(contract_call(
            "valid sizes give a mask", case, "only n < 1, window < 1 or n_sink outside 0..n are invalid",
            make_mask, n, window=window, n_sink=n_sink,
        ))
        contract_assert(
            mask.shape == (n, n), "one row per query and one column per key", case, f"shape {(n, n)}",
            f"shape {mask.shape}", "build the mask from query positions (rows) against key positions (columns)",
        )
        contract_assert(
            mask.dtype.kind == "f", "the mask is additive: floats that are added to the scores", case,
            "a float array of 0.0 and -inf", f"dtype {mask.dtype}",
            "a boolean mask was returned; convert with np.where(allowed, 0.0, -np.inf)",
        )
        contract_assert(
            bool(np.all((mask == 0) | np.isneginf(mask))), "every entry is exactly 0.0 (allowed) or -inf (blocked)", case,
            "only 0.0 and -inf", f"values {sorted(set(np.unique(mask).tolist()))[:6]}",
            "a blocked entry must be -inf (not a large negative number, not 1) so its softmax weight is exactly 0",
        )
        got, want = mask == 0, rule(n, window, n_sink)
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        if np.any(got & (j > i)):
            where = tuple(int(t) for t in np.argwhere(got & (j > i))[0])
            raise ContractViolation(
                "no query reads a future key (causal)", case, "-inf above the diagonal",
                f"query {where[0]} may read key {where[1]}", "compare key <= query, not key < query + 1 on the wrong axis; rows are queries",
            )
        if not np.all(np.diag(got)):
            raise ContractViolation(
                "every query reads its own key", case, "0.0 on the diagonal", f"diagonal {np.diag(mask).tolist()}",
                "the comparison excluded the diagonal (key < query instead of key <= query)",
            )
        recent = got[:, n_sink:].sum(axis=1).tolist()
        expected_recent = want[:, n_sink:].sum(axis=1).tolist()
        if window is not None and recent != expected_recent:
            raise ContractViolation(
                "the window keeps exactly `window` recent keys, the query's own included", case,
                f"allowed non-sink keys per row {expected_recent}", f"{recent}",
                "off by one: keep query - key < window (not <= window), which counts the query itself",
            )
        if not np.array_equal(got, want):
            where = tuple(int(t) for t in np.argwhere(got != want)[0])
            raise ContractViolation(
                "the first n_sink keys stay visible to every later query; nothing else outside the window",
                case, f"query {where[0]} {'may' if want[where] else 'may not'} read key {where[1]}",
                f"it {'may' if got[where] else 'may not'}",
                "sinks are keys j < n_sink, still only for j <= i; a window without sinks drops everything older than window - 1",
            )
    for bad in ({"n": 0}, {"n": 4, "window": 0}, {"n": 4, "window": 2, "n_sink": 5}):
        try:
            make_mask(**bad)
        except (TypeError, ValueError):
            continue
        raise ContractViolation(
            "invalid sizes are rejected with TypeError or ValueError", f"make_mask(**{bad})", "an error naming the argument",
            "returned normally", "keep the argument checks at the top of the function",
        )
    return {"cases": len(cases), "causal": "PASS", "window": "PASS", "sinks": "PASS"}
# builder:end sha256=b9d5bd8c87bdb3d424d57ff838aaec19a7656bab9b18ce9eb472000d1f6ef2ec
# builder:begin inline check_sink_attention_contract
def check_sink_attention_contract(sdpa):
    """Judge ``sdpa(Q, K, V, mask=None, *, sink=None, empty_row='error', return_weights=False)`` in NumPy.

    A sink is one extra logit per query head that joins the softmax's denominator and carries a zero
    value vector. Returns a summary of the largest errors; raises ContractViolation on the first failure.
    """
    import math

    import numpy as np

    def reference(Q, K, V, mask=None, sink=None):
        scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores + mask
        columns = [scores]
        if sink is not None:
            columns.append(np.broadcast_to(np.asarray(sink, dtype=float), scores.shape[:-1] + (1,)))
        extended = np.concatenate(columns, axis=-1)
        top = extended.max(axis=-1, keepdims=True)
        e = np.exp(extended - top)
        weights = (e / e.sum(axis=-1, keepdims=True))[..., : scores.shape[-1]]
        return weights @ V, weights

    def run(prop, case, hint, *args, **kwargs):
        return contract_call(prop, case, hint, sdpa, *args, **kwargs)

    def judge(prop, case, hint, expected, *args, atol=1e-12, rtol=1e-12, **kwargs):
        return contract_close(prop, case, run(prop, case, hint, *args, **kwargs), expected, hint, atol=atol, rtol=rtol)

    gen = np.random.default_rng(505)
    H, T, d, dv = 2, 5, 4, 3
    Q, K, V = gen.standard_normal((H, T, d)), gen.standard_normal((H, T, d)), gen.standard_normal((H, T, dv))
    causal = np.where(np.tri(T, dtype=bool), 0.0, -np.inf)
    case = "Q, K [2 heads, 5 tokens, d_k=4], V [2, 5, 3], float64"

    def run_with_weights(prop, case, hint, *args, **kwargs):
        out, weights = contract_parts(prop, case, run(prop, case, hint, *args, return_weights=True, **kwargs), ("output", "weights"))
        contract_assert(
            np.shape(weights) == (H, T, T), "return_weights=True also returns the token weights [..., T_q, T_k]", case,
            f"shape {(H, T, T)}", f"shape {np.shape(weights)}", "return (output, weights), the weights without the sink's column",
        )
        return out, np.asarray(weights, dtype=float)

    prop = "output equals softmax(Q K^T / sqrt(d_k)) V"
    hint = "divide the scores by sqrt(d_k) (not d_k), and take the softmax over the key axis (the last one)"
    out, weights = run_with_weights(prop, case + ", no mask", hint, Q, K, V)
    error = contract_close(prop, case + ", no mask", out, reference(Q, K, V)[0], hint)
    sums = weights.sum(axis=-1)
    contract_close(
        "without a sink every row of weights sums to 1", case + ", no mask", sums, np.ones_like(sums),
        "the softmax was normalised over the query axis instead of the key axis",
    )
    bias = causal + np.linspace(-1.5, 0.0, T)[None, :]
    judge(
        "a finite mask entry is added to the score, -inf blocks the key", case + ", causal mask with finite biases",
        "add the mask to the scaled scores before the softmax (do not multiply, do not apply it after)",
        reference(Q, K, V, bias)[0], Q, K, V, bias,
    )

    sink = 1.3
    prop, sink_case = "a sink is an extra logit whose value vector is zero", case + ", causal, sink=1.3"
    hint = ("the sink joins the denominator only: adding exp(sink) to the numerator, or adding the sink to every score "
            "(which softmax ignores), gives a different output")
    out, weights = run_with_weights(prop, sink_case, hint, Q, K, V, causal, sink=sink)
    want, want_w = reference(Q, K, V, causal, sink)
    sink_error = contract_close(prop, sink_case, out, want, hint)
    contract_close(
        "with a sink the token weights sum to 1 minus the sink's share", sink_case,
        weights.sum(axis=-1), want_w.sum(axis=-1), "return the token weights, without the sink's column",
    )
    per_head = np.array([-2.0, 3.0]).reshape(H, 1, 1)
    judge(
        "each query head uses its own sink logit", case + ", causal, sink shape (2, 1, 1) = [-2, 3]",
        "broadcast the sink to [..., T_q, 1]; do not use one head's sink (or their mean) for every head",
        reference(Q, K, V, causal, per_head)[0], Q, K, V, causal, sink=per_head,
    )
    judge(
        "a common shift of every score and the sink changes nothing", case + ", mask + 2 and sink + 2",
        "the sink must be compared with the scores inside one softmax, not normalised separately",
        want, Q, K, V, causal + 2.0, sink=sink + 2.0,
    )
    judge(
        "large scores and a large sink stay finite", case + ", Q and K scaled by 40, sink=900",
        "subtract the row maximum over the tokens AND the sink before exp, or exp overflows to inf and NaN",
        reference(40.0 * Q, 40.0 * K, V, causal, 900.0)[0], 40.0 * Q, 40.0 * K, V, causal, sink=900.0,
    )

    empty = causal.copy()
    empty[2] = -np.inf
    try:
        sdpa(Q, K, V, empty)
    except ValueError as exc:
        contract_assert(
            "empty_row='zero'" in str(exc), "the ValueError of a fully masked row names the way out, empty_row='zero'",
            case + ", row 2 fully masked", "a message containing empty_row='zero'", repr(str(exc))[:120],
            "say how to go on in the message: '... or pass empty_row='zero' to return zeros for them'",
        )
    else:
        raise ContractViolation(
            "a fully masked row raises ValueError by default", case + ", row 2 fully masked", "ValueError",
            "returned normally", "softmax over a row of -inf is 0/0 = NaN; detect rows with no allowed key before it",
        )
    prop, empty_case = "empty_row='zero' gives an exact zero row", case + ", row 2 fully masked"
    hint = "NaN on a fully masked row: use a safe max of 0 for empty rows and divide only where the sum > 0"
    zero = np.asarray(run(prop, empty_case, hint, Q, K, V, empty, empty_row="zero"))
    contract_assert(np.shape(zero) == (H, T, dv), prop, empty_case, f"shape {(H, T, dv)}", f"shape {np.shape(zero)}", hint)
    contract_close(prop, empty_case, zero[:, 2], np.zeros((H, dv)), hint, atol=0, rtol=0)
    keep = [0, 1, 3, 4]
    contract_close(
        "empty_row='zero' leaves the other rows unchanged", empty_case, zero[:, keep],
        reference(Q, K, V, causal)[0][:, keep], "the zero policy must act on the empty rows only",
    )
    prop, only_case = "with a sink, a fully masked row sends all its mass to the sink (output 0)", case + ", every key blocked, sink=1.3"
    hint = "a row with only the sink is not empty: its weights are 0 for every token and its output is the zero sink value"
    only_sink, only_sink_w = run_with_weights(prop, only_case, hint, Q, K, V, np.full((T, T), -np.inf), sink=sink)
    contract_close(prop, only_case, only_sink, np.zeros((H, T, dv)), hint, atol=0, rtol=0)
    contract_close(prop, only_case, only_sink_w, np.zeros((H, T, T)), hint, atol=0, rtol=0)
    return {"output_max_error": error, "sink_max_error": sink_error, "per_head_sink": "PASS", "empty_rows": "PASS"}
# builder:end sha256=3143e64dcffd3b6cc1e46f5b3ff960fb275a203ca824da54b44dffda0265423a
# builder:begin inline check_kv_repeat_contract
def check_kv_repeat_contract(repeat_kv_heads):
    """Judge ``repeat_kv_heads(x, group)``: each K/V head on axis -3 repeated ``group`` times in place.

    Query head h must read K/V head h // group. Inputs are float64 tensors; the result may be a
    tensor or an array. Returns a summary; raises ContractViolation naming the first property that fails.
    """
    import numpy as np
    import torch

    mapping = "query head h reads K/V head h // group (repeat, not tile)"
    raised = "the function raised on a valid input; the traceback above this message shows where"
    gen = torch.Generator().manual_seed(707)
    for shape, group in (((3, 4, 2), 2), ((2, 2, 5, 3), 4), ((1, 4, 2), 5), ((4, 3, 2), 1)):
        # Head k sits near 10 k, so every head is recognisable in the output.
        x = torch.randn(shape, dtype=torch.float64, generator=gen) + 10.0 * torch.arange(shape[-3], dtype=torch.float64)[:, None, None]
        case = f"x of shape {shape} (K/V heads on axis -3), group={group}"
        out = np.asarray(contract_call(mapping, case, raised, repeat_kv_heads, x, group))
        kv_heads, reference = shape[-3], x.numpy()
        want_shape = shape[:-3] + (kv_heads * group,) + shape[-2:]
        contract_assert(
            out.shape == want_shape, "shape (..., H_kv, T, d) -> (..., H_kv*group, T, d)", case,
            f"shape {want_shape}", f"shape {out.shape}", "repeat along axis -3 (the head axis), not along tokens or features",
        )
        for h in range(kv_heads * group):
            if not np.array_equal(out[..., h, :, :], reference[..., h // group, :, :]):
                read = [k for k in range(kv_heads) if np.array_equal(out[..., h, :, :], reference[..., k, :, :])]
                raise ContractViolation(
                    mapping, case, f"query head {h} -> K/V head {h // group}",
                    f"query head {h} -> K/V head {read[0] if read else 'none (values changed)'}",
                    "np.tile / torch.Tensor.repeat lay heads out as kv0, kv1, kv0, kv1: consecutive query heads must share "
                    "a K/V head, so use np.repeat / torch.repeat_interleave",
                )
    for bad in (0, -2, 1.5, True):
        try:
            repeat_kv_heads(torch.zeros(3, 4, 2, dtype=torch.float64), bad)
        except (TypeError, ValueError):
            continue
        raise ContractViolation(
            "a group that is not a positive integer is rejected", f"x of shape (3, 4, 2), group={bad!r}",
            "TypeError or ValueError", "returned normally", "keep the argument checks at the top of the function",
        )
    return {"mapping": "PASS", "identity": "PASS", "bad_group": "PASS"}
# builder:end sha256=5dfc7c3f70f5fae2a5f7888e78b48e287f82496312134c210c85d1eb5da104db
# builder:begin inline check_kv_cache_contract
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
# builder:end sha256=98ec4257b72aa797726a05d7ef3cd82b8e7b38b9aac601293fd5d1fb1960bfa1
# builder:begin inline check_online_softmax_contract
def check_online_softmax_contract(online_softmax_dot):
    """Judge ``online_softmax_dot(logit_tiles, value_tiles) -> (output, trace)``.

    ``trace`` has one dict per tile with the running max ``m``, the rescale factor ``alpha`` applied
    to the old sums, the running sum ``l`` and the running numerator ``n``. Returns a summary.
    """
    import math

    import numpy as np

    def direct(logits, values):
        top = max(logits)
        e = [math.exp(x - top) for x in logits]
        return math.fsum(w * v for w, v in zip(e, values)) / math.fsum(e)

    def run(prop, case, hint, *args):
        return contract_parts(prop, case, contract_call(prop, case, hint, online_softmax_dot, *args), ("output", "trace"))

    case = "logit tiles [[2, 1], [3, 0.5]], value tiles [[1, 2], [3, 4]]"
    output, trace = run("valid tiles give (output, trace)", case, "return the output and the list of per-tile dicts",
                        [[2.0, 1.0], [3.0, 0.5]], [[1.0, 2.0], [3.0, 4.0]])
    contract_assert(
        isinstance(trace, (list, tuple)) and len(trace) == 2 and all(isinstance(t, dict) for t in trace), "the trace has one dict per tile", case,
        "2 dicts with keys m, alpha, l, u", f"{trace!r}"[:120], "append {'m': ..., 'alpha': ..., 'l': ..., 'u': ...} after each tile",
    )
    e = math.exp
    expected = [
        {"m": 2.0, "alpha": 0.0, "l": 1.0 + e(-1.0), "u": 1.0 + 2.0 * e(-1.0)},
        {"m": 3.0, "alpha": e(-1.0), "l": e(-1.0) * (1.0 + e(-1.0)) + 1.0 + e(-2.5),
         "u": e(-1.0) * (1.0 + 2.0 * e(-1.0)) + 3.0 + 4.0 * e(-2.5)},
    ]
    hints = {
        "m": "the running max is the max of the old max and this tile's max",
        "alpha": "alpha = exp(m_old - m_new); before any tile m_old = -inf, so the first alpha is 0",
        "l": "online softmax without the alpha rescale: multiply the old running sum by alpha before adding the tile's exp(x - m_new)",
        "u": "multiply the old numerator by alpha as well, then add sum(exp(x - m_new) * v)",
    }
    for tile, (want, got) in enumerate(zip(expected, trace)):
        for key in ("m", "alpha", "l", "u"):
            contract_close(
                f"after tile {tile + 1} the running '{key}' is exact", case, [got.get(key, math.nan)], [want[key]], hints[key],
                atol=1e-12, rtol=1e-12,
            )
    contract_close(
        "the output is n / l and equals the direct softmax average", case, [output], [direct([2.0, 1.0, 3.0, 0.5], [1.0, 2.0, 3.0, 4.0])],
        "divide the final numerator by the final running sum", atol=1e-12, rtol=1e-12,
    )

    gen = np.random.default_rng(9)
    for sizes in ((1, 1, 1), (3, 1, 4), (2, 5), (6,), (1, 2, 3, 4)):
        logits = gen.normal(0.0, 3.0, sum(sizes)).tolist()
        values = gen.normal(0.0, 1.0, sum(sizes)).tolist()
        tiles, tile_values, start = [], [], 0
        for size in sizes:
            tiles.append(logits[start:start + size])
            tile_values.append(values[start:start + size])
            start += size
        prop, case = "any split into tiles gives the direct softmax average", f"random logits split into tiles of sizes {sizes}"
        hint = "the rescale must use the max over everything seen so far, in any order"
        got, _ = run(prop, case, hint, tiles, tile_values)
        contract_close(prop, case, [got], [direct(logits, values)], hint, atol=1e-12, rtol=1e-12)
    prop, case, hint = "logits near 1000 stay finite", "logit tiles [[1000, 999], [998]]", "subtract the running max inside exp; exp(1000) overflows"
    got, _ = run(prop, case, hint, [[1000.0, 999.0], [998.0]], [[1.0, 2.0], [3.0]])
    contract_close(prop, case, [got], [direct([1000.0, 999.0, 998.0], [1.0, 2.0, 3.0])], hint, atol=1e-12, rtol=1e-12)
    prop, case = "logits near -1000 stay finite", "logit tiles [[-1000], [-1001, -999]]"
    hint = "start the running max at -inf, not 0: exp(-1000 - 0) underflows to 0 and the output becomes 0/0"
    got, _ = run(prop, case, hint, [[-1000.0], [-1001.0, -999.0]], [[1.0], [2.0, 3.0]])
    contract_close(prop, case, [got], [direct([-1000.0, -1001.0, -999.0], [1.0, 2.0, 3.0])], hint, atol=1e-12, rtol=1e-12)
    return {"trace": "PASS", "random_tilings": 5, "extreme_logits": "PASS"}
# builder:end sha256=37fa229185c80385fb0557b011be111bafc236216f78b210f501b5777d6d5790
# builder:begin inline check_plain_tiled_contract
def check_plain_tiled_contract(tiled_attention_plain):
    """Judge ``tiled_attention_plain(Q, K, V, *, tile_size) -> output``: unmasked softmax attention in tiles.

    The output must equal dense float64 softmax attention for every tile size, stay finite for logits
    far beyond exp's range, leave its inputs alone and never hold a T_q x T_k score matrix.
    """
    import math
    import tracemalloc

    import numpy as np

    def dense(Q, K, V):
        scores = Q @ K.T / math.sqrt(Q.shape[1])
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V

    gen = np.random.default_rng(606)
    Q, K, V = gen.standard_normal((7, 4)), gen.standard_normal((10, 4)), gen.standard_normal((10, 3))
    case = "Q [7, d_k=4], K [10, 4], V [10, 3], float64"
    copies = [x.copy() for x in (Q, K, V)]
    worst = 0.0
    for tile in (1, 3, 4, 10, 64):
        got = contract_call("plain tiles run", f"{case}, tile_size={tile}", "nothing here is invalid",
                            tiled_attention_plain, Q, K, V, tile_size=tile)
        worst = max(worst, contract_close(
            "plain tiled output equals dense softmax attention for any tile size", f"{case}, tile_size={tile}", got, dense(Q, K, V),
            "when a key tile raises a row's max, multiply that row's running sum and accumulator by alpha = exp(m_old - m_new)",
        ))
    contract_assert(
        all(np.array_equal(a, b) for a, b in zip(copies, (Q, K, V))), "the inputs are left unchanged", f"{case}, after every call",
        "Q, K and V as given", "one of them was modified in place", "scale a copy (Q * scale), never Q itself",
    )
    huge = 300.0 * Q  # scores near 1,000: exp overflows unless the running max is subtracted first
    got = contract_call("logits far beyond exp's range run", f"{case}, Q times 300, tile_size=3", "nothing here is invalid",
                        tiled_attention_plain, huge, K, V, tile_size=3)
    contract_close(
        "large logits stay finite and exact (the running max is subtracted before exp)", f"{case}, Q times 300, tile_size=3",
        got, dense(huge, K, V), "subtract the running max m from the scores before exp, and rescale the old sums by exp(m_old - m_new)",
        atol=1e-9, rtol=1e-9,
    )
    big = 384
    Qb, Kb, Vb = gen.standard_normal((big, 8)), gen.standard_normal((big, 8)), gen.standard_normal((big, 8))
    tracemalloc.start()
    try:
        contract_call("a long input runs", f"{big} tokens, d=8, tile_size=32", "nothing here is invalid",
                      tiled_attention_plain, Qb, Kb, Vb, tile_size=32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    contract_assert(
        peak < big * big * 8 // 2, "plain tiled attention never holds a T_q x T_k score matrix", f"{big} tokens, d=8, tile_size=32",
        f"peak traced memory below half of one {big} x {big} float64 matrix ({big * big * 4} bytes)", f"{peak} bytes",
        "compute one (query block, key block) score tile at a time; keep only m, l and the accumulator per query block",
    )
    return {"max_error": worst, "large_logits": "PASS", "memory": "PASS"}
# builder:end sha256=1fbfae76485bb9dd6584064689a8e0501a36054116c2c7ce6f46d015a7dcda95
# builder:begin inline check_causal_tiled_contract
def check_causal_tiled_contract(causal_tiled_attention):
    """Judge ``causal_tiled_attention(Q, K, V, *, tile_size) -> (output, tiles_computed)``.

    Query i reads keys 0..i. The output must equal dense causal attention; the tiles skipped are judged by
    what the code read, not by the count it reports: keys after the last query are unwritten cache slots
    holding NaN, which any tile above the diagonal (or dense attention, 0 x NaN = NaN) turns into NaN; and
    the peak memory of a long input stays below one T x T score matrix.
    """
    import math
    import tracemalloc

    import numpy as np

    def dense_causal(Q, K, V):
        scores = Q @ K.T / math.sqrt(Q.shape[1])
        scores = np.where(np.tri(len(Q), len(K), dtype=bool), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V

    def needed(n, tile):
        starts = range(0, n, tile)
        return sum(1 for q0 in starts for k0 in starts if k0 <= min(q0 + tile, n) - 1)

    def run(where, *args, prop="causal tiles run", hint="nothing here is invalid", **kwargs):
        return contract_parts("causal tiles give (output, tiles_computed)", where, contract_call(
            prop, where, hint, causal_tiled_attention, *args, **kwargs,
        ), ("output", "tiles_computed"))

    gen = np.random.default_rng(707)
    n = 11
    Q, K, V = gen.standard_normal((n, 4)), gen.standard_normal((n, 4)), gen.standard_normal((n, 3))
    case = "Q, K [11 tokens, d_k=4], V [11, 3], float64"
    worst = 0.0
    for tile in (1, 3, 4, 64):
        where = f"{case}, tile_size={tile}"
        output, tiles = run(where, Q, K, V, tile_size=tile)
        worst = max(worst, contract_close(
            "causal tiled output equals dense causal attention: query i reads keys 0..i", where, output, dense_causal(Q, K, V),
            "inside a diagonal tile, block key > query with -inf before the max; never skip a tile that holds an allowed key",
        ))
        expected = needed(n, tile)
        contract_assert(
            int(tiles) == expected, "only the key tiles on or below the block diagonal are computed", where,
            f"{expected} score tiles", f"{tiles} score tiles",
            "for the query block [q0, q1), visit key tiles starting at k0 <= q1 - 1 only; later tiles are all in the future",
        )
    unwritten = np.full((8, 4), np.nan)  # a preallocated cache: slots 8..15 not written yet
    K_cache, V_cache = np.concatenate([K[:8], unwritten]), np.concatenate([V[:8], unwritten[:, :3]])
    where = "Q [8 tokens, d_k=4], K and V [16 slots] whose slots 8..15 are unwritten (NaN), tile_size=4"
    prop = "no key tile above the block diagonal is read (its keys lie in the future)"
    hint = ("the future tiles were computed: dense attention, or a loop over every key tile, multiplies their NaN values by weight 0 "
            "(0 x NaN = NaN); visit key tiles k0 <= q1 - 1 only, and count the tiles you computed, not a formula")
    output, _ = run(where, Q[:8], K_cache, V_cache, tile_size=4, prop=prop, hint=hint)
    contract_close(prop, where, output, dense_causal(Q[:8], K[:8], V[:8]), hint)
    big = 384
    Qb, Kb, Vb = gen.standard_normal((big, 8)), gen.standard_normal((big, 8)), gen.standard_normal((big, 8))
    where = f"{big} tokens, d=8, tile_size=32"
    tracemalloc.start()
    try:
        run(where, Qb, Kb, Vb, tile_size=32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    contract_assert(
        peak < big * big * 8 // 2, "causal tiled attention never holds a T_q x T_k score matrix", where,
        f"peak traced memory below half of one {big} x {big} float64 matrix ({big * big * 4} bytes)", f"{peak} bytes",
        "a dense causal softmax over the keys read is not tiling: compute one (query block, key block) tile at a time",
    )
    return {"max_error": worst, "tiles_2048_128": needed(2048, 128), "unwritten_slots": "never read", "memory": "PASS"}
# builder:end sha256=8511b5febbe82f45ce2e497131ce18ad6128b8eb5a65b68e881b50e54230d870
# builder:begin inline check_tiled_attention_contract
def check_tiled_attention_contract(tiled_attention):
    """Judge ``tiled_attention(Q, K, V, mask=None, *, tile_size, sink, empty_row, causal, window, query_start)``.

    Every result must equal dense float64 softmax attention with the same mask, window, sink and
    query positions, without ever holding a T_q x T_k score matrix. Returns a summary.
    """
    import math
    import tracemalloc

    import numpy as np

    def dense(Q, K, V, allowed=None, bias=None, sink=None):
        scores = np.asarray(Q, dtype=float) @ np.asarray(K, dtype=float).T / math.sqrt(Q.shape[1])
        if bias is not None:
            scores = scores + bias
        if allowed is not None:
            scores = np.where(allowed, scores, -np.inf)
        extended = scores if sink is None else np.concatenate([scores, np.full((len(Q), 1), float(sink))], axis=1)
        top = extended.max(axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.exp(extended - top)
        total = e.sum(axis=1, keepdims=True)
        weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)[:, : len(K)]
        return weights @ np.asarray(V, dtype=float)

    def positions(n_queries, n_keys, start, window):
        distance = (start + np.arange(n_queries))[:, None] - np.arange(n_keys)[None, :]
        allowed = distance >= 0
        if window is not None:
            allowed = allowed & (distance < window)
        return allowed

    def judge(prop, case, hint, expected, *args, atol=1e-12, **kwargs):
        got = contract_call(prop, case, hint, tiled_attention, *args, **kwargs)
        return contract_close(prop, case, got, expected, hint, atol=atol, rtol=1e-12)

    gen = np.random.default_rng(808)
    n, d, dv = 11, 4, 3
    Q, K, V = gen.standard_normal((n, d)), gen.standard_normal((n, d)), gen.standard_normal((n, dv))
    case = "Q, K [11 tokens, d_k=4], V [11, 3], float64"

    worst = 0.0
    for tile in (1, 3, 4, 64):
        worst = max(worst, judge(
            "tiled output equals dense softmax attention for any tile size", f"{case}, no mask, tile_size={tile}",
            "rescale the accumulator and the running sum by alpha = exp(m_old - m_new) when a tile raises the row max",
            dense(Q, K, V), Q, K, V, tile_size=tile,
        ))
    late = np.full((2, n), -np.inf)
    late[:, -1] = 0.0
    judge(
        "tiles with no allowed key are skipped without NaN", f"{case}, 2 queries whose only allowed key is the last, tile_size=2",
        "an all -inf tile gives exp(-inf - -inf) = NaN; skip it or use a safe max of 0",
        np.repeat(V[-1:], 2, axis=0), Q[:2], K, V, late, tile_size=2,
    )
    for tile in (1, 3, 4, 64):
        worst = max(worst, judge(
            "causal=True: query i reads keys 0..i", f"{case}, causal=True, tile_size={tile}",
            "a key is allowed when key <= query; blocks entirely above the diagonal are skipped, partial ones masked",
            dense(Q, K, V, positions(n, n, 0, None)), Q, K, V, tile_size=tile, causal=True,
        ))
    for tile in (1, 3, 4, 64):
        worst = max(worst, judge(
            "window=w keeps the last w keys, the query's own included", f"{case}, causal=True, window=3, tile_size={tile}",
            "off by one: allow query - key < window (not <= window), and do not skip a block that still holds an allowed key",
            dense(Q, K, V, positions(n, n, 0, 3)), Q, K, V, tile_size=tile, causal=True, window=3,
        ))
    bias = np.where(gen.random((n, n)) < 0.3, -np.inf, gen.normal(0.0, 1.0, (n, n)))
    np.fill_diagonal(bias, 0.0)
    judge(
        "an additive mask (finite biases and -inf) is added tile by tile", f"{case}, random additive mask, tile_size=3",
        "slice the mask with the same query and key ranges as the scores of the block",
        dense(Q, K, V, bias=bias), Q, K, V, bias, tile_size=3,
    )
    for start, window in ((5, None), (5, 3), (8, 2)):
        rows = slice(start, n)
        judge(
            "query_start places the first query at that absolute position (a cached prefix)",
            f"{case}, queries {start}..{n - 1} against all {n} keys, causal=True, window={window}, query_start={start}",
            "query offset ignored: query i sits at position query_start + i, so compare keys with query_start + i",
            dense(Q, K, V, positions(n, n, 0, window))[rows], Q[rows], K, V, tile_size=3, causal=True, window=window, query_start=start,
        )
    prop, decode_case = "decoding one query at a time equals attending all at once", f"{case}, 11 single-query steps, window=4"
    hint = "each decode step sees the keys cached so far; its query sits at position t"
    steps = [
        contract_call(prop, decode_case, hint, tiled_attention, Q[t:t + 1], K[: t + 1], V[: t + 1], tile_size=2, causal=True, window=4, query_start=t)
        for t in range(n)
    ]
    contract_close(prop, decode_case, np.concatenate(steps), dense(Q, K, V, positions(n, n, 0, 4)), hint)
    empty = np.zeros((n, n))
    empty[4] = -np.inf
    try:
        tiled_attention(Q, K, V, empty, tile_size=3)
    except ValueError:
        pass
    else:
        raise ContractViolation(
            "a fully masked row raises ValueError by default", f"{case}, row 4 fully masked", "ValueError", "returned normally",
            "after the last tile, a row whose running sum is 0 had no key at all",
        )
    judge(
        "empty_row='zero' gives an exact zero row and leaves the others alone", f"{case}, row 4 fully masked, empty_row='zero'",
        "NaN on a fully masked row: divide only where the running sum is positive",
        dense(Q, K, V, bias=empty), Q, K, V, empty, tile_size=3, empty_row="zero",
    )
    judge(
        "a sink joins the denominator with a zero value", f"{case}, causal=True, sink=0.7, tile_size=3",
        "start each row with m = sink and l = 1 (the sink's exp(sink - m)), and the accumulator at 0",
        dense(Q, K, V, positions(n, n, 0, None), sink=0.7), Q, K, V, tile_size=3, causal=True, sink=0.7,
    )
    Q16, K16, V16 = (x.astype(np.float16) for x in (Q, K, V))
    half_case = f"{case} cast to float16, causal=True"
    half = contract_call(
        "float16 inputs are accepted", half_case, "promote to float32 before any arithmetic", tiled_attention,
        Q16, K16, V16, tile_size=3, causal=True,
    )
    contract_assert(
        np.asarray(half).dtype == np.float32, "float16 inputs are accumulated and returned in float32", half_case,
        "dtype float32", f"dtype {np.asarray(half).dtype}",
        "promote with np.result_type(Q.dtype, K.dtype, V.dtype, np.float32) before any arithmetic",
    )
    contract_close(
        "float16 inputs give the float32 result", half_case, half, dense(Q16, K16, V16, positions(n, n, 0, None)),
        "accumulate in float32, never in float16", atol=2e-6, rtol=0,
    )
    f32_max = float(np.finfo(np.float32).max)
    q_over = np.array([[math.sqrt(0.75 * f32_max)]], dtype=np.float32)
    for sign in (1.0, -1.0):
        try:
            tiled_attention(q_over, sign * q_over, np.ones((1, 1), np.float32), np.array([[sign * 0.75 * f32_max]], np.float32))
        except FloatingPointError as exc:
            contract_assert(
                bool(str(exc).strip()), "an overflowing finite bias is rejected with a message that says what overflowed",
                f"score {sign * 0.75:+} * float32 max plus a bias of the same sign", "a non-empty message",
                repr(str(exc)), "say what overflowed so the reader knows to shrink the bias",
            )
        else:
            raise ContractViolation(
                "an overflowing finite bias is rejected", f"score {sign * 0.75:+} * float32 max plus a bias of the same sign",
                "FloatingPointError", "returned normally", "score + bias overflowed to +-inf; -inf would silently read as 'blocked'",
            )

    big = 384
    Qb, Kb, Vb = gen.standard_normal((big, 8)), gen.standard_normal((big, 8)), gen.standard_normal((big, 8))
    tracemalloc.start()
    try:
        contract_call(
            "a long causal input runs", f"{big} tokens, d=8, tile_size=32", "nothing here is invalid",
            tiled_attention, Qb, Kb, Vb, tile_size=32, causal=True,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    score_matrix = big * big * 8
    contract_assert(
        peak < score_matrix // 2, "tiled attention never holds a T_q x T_k score matrix", f"{big} tokens, d=8, tile_size=32",
        f"peak traced memory below half of one {big} x {big} float64 matrix ({score_matrix // 2} bytes)", f"{peak} bytes",
        "compute scores one (query block, key block) pair at a time and keep only the running max, sum and accumulator",
    )
    return {"max_error": worst, "offsets": "PASS", "empty_rows": "PASS", "float16": "PASS", "memory": "PASS"}
# builder:end sha256=bce58f820e3de4ccc08f81203a4f5c6e63e550ddbf2d317936f79018e8cd23de
# builder:begin inline check_tiled_backward_contract
def check_tiled_backward_contract(tiled_attention_backward):
    """Judge ``tiled_attention_backward(Q, K, V, O, dO, lse, *, tile_size, causal) -> (dQ, dK, dV)``.

    The gradients must equal autograd's on the dense path in float64 (to 1e-10), be computed from the saved
    output and log-sum-exp (a shifted lse must scale them as FlashAttention-2's formulas say), without autograd,
    and with a peak memory below one T x T score matrix.
    """
    import contextlib
    import math
    import tracemalloc

    import numpy as np
    import torch

    def dense(Q, K, V, dO, causal):
        q, k, v = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (Q, K, V))
        s = q @ k.T / math.sqrt(Q.shape[1])
        if causal:
            s = s.masked_fill(~torch.ones(len(Q), len(K), dtype=torch.bool).tril(), float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        o.backward(torch.tensor(dO, dtype=torch.float64))
        lse = torch.logsumexp(s, dim=-1)
        return o.detach().numpy(), lse.detach().numpy(), [x.grad.numpy() for x in (q, k, v)]

    class AutogradRefused(RuntimeError):
        """Raised when the code under judgement calls autograd, which is this check's oracle."""

    @contextlib.contextmanager
    def no_autograd():
        def refused(*args, **kwargs):
            raise AutogradRefused("autograd is the oracle of this check: write the backward pass yourself, tile by tile")
        saved = torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward
        torch.autograd.backward = torch.autograd.grad = torch.Tensor.backward = refused
        try:
            yield
        finally:
            torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward = saved

    hints = {
        "dQ": "dS = P * (dP - D) with dP = dO V^T and D = rowsum(dO * O); then dQ += dS K / sqrt(d_k)",
        "dK": "dK += dS^T Q / sqrt(d_k): the 1 / sqrt(d_k) of the scores appears in dQ and in dK",
        "dV": "dV += P^T dO, with P = exp(S - lse) recomputed from the score tile and the saved log-sum-exp",
    }

    def run(prop, case, hint, *args, **kwargs):
        try:
            with no_autograd():
                result = contract_call(prop, case, hint, tiled_attention_backward, *args, **kwargs)
        except ContractViolation as violation:
            if isinstance(violation.__cause__, AutogradRefused):
                raise ContractViolation(
                    "the backward pass is written by hand: autograd is never called", case, "no call to torch's autograd",
                    "a call to torch.autograd (backward or grad)", "compute dS = P * (dP - D) and the three products yourself, tile by tile",
                ) from None
            raise
        return contract_parts(prop, case, result, ("dQ", "dK", "dV"))

    gen = np.random.default_rng(909)
    n, d, dv = 11, 4, 3
    Q, K, V, dO = gen.standard_normal((n, d)), gen.standard_normal((n, d)), gen.standard_normal((n, dv)), gen.standard_normal((n, dv))
    worst = 0.0
    for causal in (False, True):
        O, lse, expected = dense(Q, K, V, dO, causal)
        for tile in (1, 3, 4, 64):
            case = f"Q, K [11 tokens, d_k=4], V and dO [11, 3], float64, causal={causal}, tile_size={tile}"
            got = run("the tiled backward pass runs", case, "nothing here is invalid", Q, K, V, O, dO, lse, tile_size=tile, causal=causal)
            for name, g, want in zip(("dQ", "dK", "dV"), got, expected):
                worst = max(worst, contract_close(
                    f"{name} equals autograd's on dense attention (float64, 1e-10)", case, g, want, hints[name], atol=1e-10, rtol=1e-10,
                ))
    O, lse, expected = dense(Q, K, V, dO, True)
    case = "the causal case above with tile_size=4, and the saved lse shifted by log 2 (so P = exp(S - lse) halves)"
    got = run("the backward pass reads the saved log-sum-exp", case, "nothing here is invalid", Q, K, V, O, dO, lse + math.log(2.0), tile_size=4, causal=True)
    for name, g, want in zip(("dQ", "dK", "dV"), got, expected):
        contract_close(
            f"{name} is computed from the saved lse and O: a shifted lse halves it", case, g, want / 2, "recompute P = exp(S - lse) "
            "from the lse you are given and take D = rowsum(dO * O) from the saved output; renormalising the rows yourself "
            "needs each whole row of P, which tiling never holds", atol=1e-10, rtol=1e-10,
        )
    big = 384
    Qb, Kb, Vb, dOb = (gen.standard_normal((big, 8)) for _ in range(4))
    Ob, lseb, _ = dense(Qb, Kb, Vb, dOb, True)
    where = f"{big} tokens, d=8, causal, tile_size=32"
    tracemalloc.start()
    try:
        run("a long input runs", where, "nothing here is invalid", Qb, Kb, Vb, Ob, dOb, lseb, tile_size=32, causal=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    contract_assert(
        peak < big * big * 8 // 2, "the backward pass never holds a T_q x T_k matrix (scores, P or dS)", where,
        f"peak traced memory below half of one {big} x {big} float64 matrix ({big * big * 4} bytes)", f"{peak} bytes",
        "recompute one (key block, query block) score tile at a time; keep only dQ, dK, dV and D = rowsum(dO * O)",
    )
    return {"max_error": worst, "uses_saved_lse": "PASS", "no_autograd": "PASS", "memory": "PASS"}
# builder:end sha256=272242e1a54f04475c65e630a728d65f8338131e0eac4f610e5704f2b848fe3e
# builder:begin inline check_paged_cache_contract
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
# builder:end sha256=025e6809f3643a3d790c25c984f98cea9a1e5b3cd5911f96789cbd244a8afe2b
print("10 contract checks loaded")

# %% tags=["hide-input", "remove-cell"]
# @title The solution edition of every exercise: a spoiler, there for show_reference and for check_exercise's fallback
# builder:begin solutions
# The solution edition of every exercise cell, base64-encoded so that no solution is read by accident:
# show_reference(label) prints one, and check_exercise runs it in place of an exercise not attempted or failed.
import base64

REFERENCE_SOURCES = {label: base64.b64decode("".join(packed)).decode("utf-8") for label, packed in {
    "Exercise 1": (
        "IyBFeGVyY2lzZSAxOiBCdWlsZCB0aGUgYWRkaXRpdmUgbWFzay4gUmV0dXJuIGFuIChuLCBuKSBmbG9hdCBhcnJheSB3aXRo",
        "IDAuMCB3aGVyZSBxdWVyeSBpIG1heQojIHJlYWQga2V5IGogYW5kIC1pbmYgd2hlcmUgaXQgbWF5IG5vdDogbmV2ZXIgYSBm",
        "dXR1cmUga2V5OyB3aXRoIGEgd2luZG93LCBvbmx5IGtleXMgd2l0aAojIGkgLSBqIDwgd2luZG93OyB3aXRoIG5fc2luayA+",
        "IDAsIHRoZSBmaXJzdCBuX3Npbmsga2V5cyBzdGF5IHJlYWRhYmxlIChidXQgc3RpbGwgbmV2ZXIgdGhlIGZ1dHVyZSkuCmRl",
        "ZiBtYWtlX21hc2sobiwgd2luZG93PU5vbmUsIG5fc2luaz0wKToKICAgICIiIkFkZGl0aXZlIGNhdXNhbCBtYXNrIFtuLCBu",
        "XTogMC4wIHdoZXJlIHF1ZXJ5IGkgbWF5IHJlYWQga2V5IGosIC1pbmYgZWxzZXdoZXJlOyBvcHRpb25hbCB3aW5kb3cgYW5k",
        "IHNpbmtzLiIiIgogICAgbiA9IHJlcXVpcmVfaW50KCJuIiwgbiwgbWluaW11bT0xKQogICAgaWYgd2luZG93IGlzIG5vdCBO",
        "b25lOgogICAgICAgIHdpbmRvdyA9IHJlcXVpcmVfaW50KCJ3aW5kb3ciLCB3aW5kb3csIG1pbmltdW09MSkKICAgIG5fc2lu",
        "ayA9IHJlcXVpcmVfaW50KCJuX3NpbmsiLCBuX3NpbmssIG1pbmltdW09MCwgbWF4aW11bT1uKQogICAgaWYgbl9zaW5rIGFu",
        "ZCB3aW5kb3cgaXMgTm9uZToKICAgICAgICByYWlzZSBWYWx1ZUVycm9yKCJuX3Npbmsgb25seSBtYXR0ZXJzIHdpdGggYSB3",
        "aW5kb3cgKHdpdGhvdXQgb25lIGV2ZXJ5IGVhcmxpZXIga2V5IGlzIHZpc2libGUpOyBwYXNzIHdpbmRvdz0uLi4iKQogICAg",
        "cmVxdWlyZV9idWRnZXQoInRoZSBhZGRpdGl2ZSBtYXNrIiwgKG4sIG4pKSAgIyBmbG9hdDY0IGVudHJpZXMsIHJlZnVzZWQg",
        "YmVmb3JlIGFueXRoaW5nIGlzIGFsbG9jYXRlZAogICAgcXVlcnkgPSBucC5hcmFuZ2UobilbOiwgTm9uZV0gICMgKG4sIDEp",
        "OiByb3dzIGFyZSBxdWVyaWVzCiAgICBrZXkgPSBucC5hcmFuZ2UobilbTm9uZSwgOl0gICMgKDEsIG4pOiBjb2x1bW5zIGFy",
        "ZSBrZXlzCiAgICBhbGxvd2VkID0ga2V5IDw9IHF1ZXJ5ICAjIGNhdXNhbDogbmV2ZXIgdGhlIGZ1dHVyZQogICAgaWYgd2lu",
        "ZG93IGlzIG5vdCBOb25lOgogICAgICAgIHJlY2VudCA9IHF1ZXJ5IC0ga2V5IDwgd2luZG93ICAjIHRoZSBxdWVyeSdzIG93",
        "biBrZXkgaXMgb25lIG9mIHRoZSB3aW5kb3cncyB3IGtleXMKICAgICAgICBzaW5rcyA9IGtleSA8IG5fc2luayAgIyBTdHJl",
        "YW1pbmdMTE06IHRoZSBmaXJzdCBuX3Npbmsga2V5cyBuZXZlciBsZWF2ZQogICAgICAgIGFsbG93ZWQgJj0gcmVjZW50IHwg",
        "c2lua3MKICAgIHJldHVybiBucC53aGVyZShhbGxvd2VkLCAwLjAsIC1ucC5pbmYp",
    ),
    "Exercise 2": (
        "IyBFeGVyY2lzZSAyOiBXcml0ZSBzb2Z0bWF4IGF0dGVudGlvbiB3aXRoIGEgc2luay4gVGhlIHNjb3JlcywgUSBLXlQgLyBz",
        "cXJ0KGRfaykgcGx1cyB0aGUgbWFzaywKIyBhcmUgY29tcHV0ZWQgZm9yIHlvdSB3aXRoIHRoZWlyIG92ZXJmbG93IGNoZWNr",
        "cy4gVGhlIHNpbmsgKGFscmVhZHkgYnJvYWRjYXN0IHRvIFsuLi4sIFRfcSwgMV0pCiMgam9pbnMgZWFjaCByb3cncyBzb2Z0",
        "bWF4IGFzIGFuIGV4dHJhIGxvZ2l0IHdob3NlIHZhbHVlIHZlY3RvciBpcyB6ZXJvLiBTdWJ0cmFjdCB0aGUgcm93IG1heAoj",
        "IChvdmVyIHRva2VucyBBTkQgc2luaykgYmVmb3JlIGV4cC4gQSByb3cgd2l0aCBubyBhbGxvd2VkIGtleSBhbmQgbm8gc2lu",
        "ayByYWlzZXMgVmFsdWVFcnJvciB3aGVuCiMgZW1wdHlfcm93ID09ICJlcnJvciIsIHdpdGggYSBtZXNzYWdlIHRoYXQgY29u",
        "dGFpbnMgZW1wdHlfcm93PSd6ZXJvJyAodGhlIHdheSBvdXQpLCBhbmQgaXMgYWxsIHplcm9zCiMgZm9yICJ6ZXJvIi4KZGVm",
        "IHNkcGEoUSwgSywgViwgbWFzaz1Ob25lLCAqLCBzaW5rPU5vbmUsIGVtcHR5X3Jvdz0iZXJyb3IiLCByZXR1cm5fd2VpZ2h0",
        "cz1GYWxzZSk6CiAgICAiIiJTb2Z0bWF4IGF0dGVudGlvbiBpbiBOdW1QeSB3aXRoIGFuIGFkZGl0aXZlIG1hc2ssIGFuIG9w",
        "dGlvbmFsIHNpbmsgbG9naXQgYW5kIGFuIGVtcHR5LXJvdyBwb2xpY3kuCgogICAgUSBbLi4uLCBUX3EsIGRfa10sIEsgWy4u",
        "LiwgVF9rLCBkX2tdLCBWIFsuLi4sIFRfaywgZF92XTsgdGhlIG1hc2sgYnJvYWRjYXN0cyB0byBbLi4uLCBUX3EsIFRfa10K",
        "ICAgICgwIG9yIGEgZmluaXRlIGJpYXMgPSBhbGxvd2VkLCAtaW5mID0gYmxvY2tlZCk7IHRoZSBzaW5rIGJyb2FkY2FzdHMg",
        "dG8gWy4uLiwgVF9xLCAxXS4KICAgIFJldHVybnMgdGhlIG91dHB1dCBbLi4uLCBUX3EsIGRfdl0sIGFuZCB0aGUgdG9rZW4g",
        "d2VpZ2h0cyB0b28gd2hlbiByZXR1cm5fd2VpZ2h0cyBpcyBUcnVlLgogICAgIiIiCiAgICBRLCBLLCBWID0gcmVxdWlyZV9h",
        "cnJheSgiUSIsIFEsIG1pbl9uZGltPTIpLCByZXF1aXJlX2FycmF5KCJLIiwgSywgbWluX25kaW09MiksIHJlcXVpcmVfYXJy",
        "YXkoIlYiLCBWLCBtaW5fbmRpbT0yKQogICAgcmVxdWlyZV9jaG9pY2UoImVtcHR5X3JvdyIsIGVtcHR5X3JvdywgKCJlcnJv",
        "ciIsICJ6ZXJvIikpCiAgICByZXR1cm5fd2VpZ2h0cyA9IHJlcXVpcmVfYm9vbCgicmV0dXJuX3dlaWdodHMiLCByZXR1cm5f",
        "d2VpZ2h0cykKICAgIGlmIFEuc2hhcGVbLTFdICE9IEsuc2hhcGVbLTFdOgogICAgICAgIHJhaXNlIFZhbHVlRXJyb3IoZiJR",
        "IGFuZCBLIG11c3Qgc2hhcmUgZF9rIChsYXN0IGF4aXMpOyBnb3Qge1Euc2hhcGVbLTFdfSBhbmQge0suc2hhcGVbLTFdfSIp",
        "CiAgICBpZiBLLnNoYXBlWy0yXSAhPSBWLnNoYXBlWy0yXToKICAgICAgICByYWlzZSBWYWx1ZUVycm9yKGYiSyBhbmQgViBt",
        "dXN0IGhvbGQgdGhlIHNhbWUgbnVtYmVyIG9mIGtleXMgKGF4aXMgLTIpOyBnb3Qge0suc2hhcGVbLTJdfSBhbmQge1Yuc2hh",
        "cGVbLTJdfSIpCiAgICB0cnk6CiAgICAgICAgYmF0Y2ggPSBucC5icm9hZGNhc3Rfc2hhcGVzKFEuc2hhcGVbOi0yXSwgSy5z",
        "aGFwZVs6LTJdKQogICAgICAgIG5wLmJyb2FkY2FzdF9zaGFwZXMoYmF0Y2gsIFYuc2hhcGVbOi0yXSkKICAgIGV4Y2VwdCBW",
        "YWx1ZUVycm9yOgogICAgICAgIHJhaXNlIFZhbHVlRXJyb3IoZiJiYXRjaCBheGVzIG9mIFEge1Euc2hhcGV9LCBLIHtLLnNo",
        "YXBlfSBhbmQgViB7Vi5zaGFwZX0gZG8gbm90IGJyb2FkY2FzdCIpIGZyb20gTm9uZQogICAgZHR5cGUgPSBucC5yZXN1bHRf",
        "dHlwZShRLmR0eXBlLCBLLmR0eXBlLCBWLmR0eXBlLCBucC5mbG9hdDMyKSAgIyBmbG9hdDE2IGlzIGNvbXB1dGVkIGluIGZs",
        "b2F0MzIKICAgIFEsIEssIFYgPSAoeC5hc3R5cGUoZHR5cGUsIGNvcHk9RmFsc2UpIGZvciB4IGluIChRLCBLLCBWKSkKICAg",
        "IHNoYXBlID0gYmF0Y2ggKyAoUS5zaGFwZVstMl0sIEsuc2hhcGVbLTJdKSAgIyAoLi4uLCBUX3EsIFRfaykKICAgIHJlcXVp",
        "cmVfYnVkZ2V0KCJ0aGUgc2NvcmUgbWF0cml4Iiwgc2hhcGUsIGl0ZW1zaXplPWR0eXBlLml0ZW1zaXplKSAgIyByZWZ1c2Vk",
        "IGJlZm9yZSBRIEAgS15UIGlzIGZvcm1lZAogICAgaWYgbWFzayBpcyBub3QgTm9uZToKICAgICAgICBtYXNrID0gX2FzX2Fk",
        "ZGl0aXZlKG1hc2ssIHNoYXBlLCBkdHlwZSkKICAgIGlmIHNpbmsgaXMgbm90IE5vbmU6CiAgICAgICAgc2luayA9IHJlcXVp",
        "cmVfYXJyYXkoInNpbmsiLCBzaW5rKS5hc3R5cGUoZHR5cGUsIGNvcHk9RmFsc2UpCiAgICAgICAgdHJ5OgogICAgICAgICAg",
        "ICBzaW5rID0gbnAuYnJvYWRjYXN0X3RvKHNpbmssIHNoYXBlWzotMV0gKyAoMSwpKSAgIyAoLi4uLCBUX3EsIDEpOiBvbmUg",
        "bG9naXQgcGVyIGhlYWQgYW5kIHF1ZXJ5CiAgICAgICAgZXhjZXB0IFZhbHVlRXJyb3I6CiAgICAgICAgICAgIHJhaXNlIFZh",
        "bHVlRXJyb3IoZiJzaW5rIG9mIHNoYXBlIHtzaW5rLnNoYXBlfSBkb2VzIG5vdCBicm9hZGNhc3QgdG8ge3NoYXBlWzotMV0g",
        "KyAoMSwpfTsgdXNlIHNoYXBlIChILCAxLCAxKSBwZXIgaGVhZCIpIGZyb20gTm9uZQogICAgd2l0aCBucC5lcnJzdGF0ZShv",
        "dmVyPSJpZ25vcmUiLCBpbnZhbGlkPSJpZ25vcmUiKToKICAgICAgICBzY29yZXMgPSAoUSBAIG5wLnN3YXBheGVzKEssIC0x",
        "LCAtMikpICogZHR5cGUudHlwZSgxLjAgLyBtYXRoLnNxcnQoUS5zaGFwZVstMV0pKSAgIyAoLi4uLCBUX3EsIFRfaykKICAg",
        "ICAgICBpZiBub3QgbnAuaXNmaW5pdGUoc2NvcmVzKS5hbGwoKToKICAgICAgICAgICAgcmFpc2UgRmxvYXRpbmdQb2ludEVy",
        "cm9yKCJRIEAgS15UIG92ZXJmbG93ZWQ7IHJlc2NhbGUgUSBhbmQgSyAob3IgY29tcHV0ZSBpbiBmbG9hdDY0KSIpCiAgICAg",
        "ICAgaWYgbWFzayBpcyBub3QgTm9uZToKICAgICAgICAgICAgYmlhc2VkID0gc2NvcmVzICsgbWFzawogICAgICAgICAgICBp",
        "ZiBucC5hbnkobnAuaXNmaW5pdGUobWFzaykgJiB+bnAuaXNmaW5pdGUoYmlhc2VkKSk6CiAgICAgICAgICAgICAgICByYWlz",
        "ZSBGbG9hdGluZ1BvaW50RXJyb3IoImFkZGluZyBhIGZpbml0ZSBtYXNrIGJpYXMgb3ZlcmZsb3dlZCB0aGUgc2NvcmU7IHVz",
        "ZSBhIHNtYWxsZXIgYmlhcyAob3IgLWluZiB0byBibG9jaykiKQogICAgICAgICAgICBzY29yZXMgPSBiaWFzZWQKICAgIGhh",
        "c19rZXkgPSBucC5pc2Zpbml0ZShzY29yZXMpLmFueShheGlzPS0xLCBrZWVwZGltcz1UcnVlKSAgIyAoLi4uLCBUX3EsIDEp",
        "CiAgICB0b3AgPSBzY29yZXMubWF4KGF4aXM9LTEsIGtlZXBkaW1zPVRydWUpICAjIC1pbmYgb24gYSByb3cgd2l0aCBub3Ro",
        "aW5nIHRvIHJlYWQKICAgIGlmIHNpbmsgaXMgbm90IE5vbmU6CiAgICAgICAgdG9wID0gbnAubWF4aW11bSh0b3AsIHNpbmsp",
        "ICAjIHRoZSBzaW5rIGNvbXBldGVzIGluc2lkZSB0aGUgc2FtZSBzb2Z0bWF4CiAgICBlbGlmIGVtcHR5X3JvdyA9PSAiZXJy",
        "b3IiIGFuZCBub3QgaGFzX2tleS5hbGwoKToKICAgICAgICBmaXJzdCA9IG5wLmFyZ3doZXJlKH5oYXNfa2V5Wy4uLiwgMF0p",
        "WzBdLnRvbGlzdCgpCiAgICAgICAgcmFpc2UgVmFsdWVFcnJvcigKICAgICAgICAgICAgZiJ7aW50KCh+aGFzX2tleSkuc3Vt",
        "KCkpfSBxdWVyeSByb3cocykgaGF2ZSBubyBhbGxvd2VkIGtleSAoZmlyc3QgYXQgaW5kZXgge2ZpcnN0fSk7ICIKICAgICAg",
        "ICAgICAgImZpeCB0aGUgbWFzaywgb3IgcGFzcyBlbXB0eV9yb3c9J3plcm8nIHRvIHJldHVybiB6ZXJvcyBmb3IgdGhlbSIK",
        "ICAgICAgICApCiAgICB0b3AgPSBucC53aGVyZShucC5pc2Zpbml0ZSh0b3ApLCB0b3AsIDAuMCkgICMgYW4gZW1wdHkgcm93",
        "IGtlZXBzIGEgaGFybWxlc3MgbWF4OiBubyAtaW5mIC0gLWluZgogICAgZXhwX3Njb3JlcyA9IG5wLmV4cChzY29yZXMgLSB0",
        "b3ApICAjIGJsb2NrZWQga2V5czogZXhwKC1pbmYpID0gMAogICAgZGVub21pbmF0b3IgPSBleHBfc2NvcmVzLnN1bShheGlz",
        "PS0xLCBrZWVwZGltcz1UcnVlKQogICAgaWYgc2luayBpcyBub3QgTm9uZToKICAgICAgICBkZW5vbWluYXRvciA9IGRlbm9t",
        "aW5hdG9yICsgbnAuZXhwKHNpbmsgLSB0b3ApICAjIHRoZSBzaW5rJ3MgbWFzczsgaXRzIHZhbHVlIHZlY3RvciBpcyB6ZXJv",
        "CiAgICB3ZWlnaHRzID0gbnAuZGl2aWRlKGV4cF9zY29yZXMsIGRlbm9taW5hdG9yLCBvdXQ9bnAuemVyb3NfbGlrZShleHBf",
        "c2NvcmVzKSwgd2hlcmU9ZGVub21pbmF0b3IgPiAwKQogICAgb3V0cHV0ID0gd2VpZ2h0cyBAIFYgICMgKC4uLiwgVF9xLCBk",
        "X3YpCiAgICByZXR1cm4gKG91dHB1dCwgd2VpZ2h0cykgaWYgcmV0dXJuX3dlaWdodHMgZWxzZSBvdXRwdXQ=",
    ),
    "Exercise 3": (
        "IyBFeGVyY2lzZSAzOiBSZXBlYXQgdGhlIEtWIGhlYWRzIGZvciBncm91cGVkLXF1ZXJ5IGF0dGVudGlvbi4geCBob2xkcyB0",
        "aGUgS1YgaGVhZHMgb24gYXhpcyAtMzsKIyByZXR1cm4gYW4gYXJyYXkgd2l0aCBncm91cCB0aW1lcyBhcyBtYW55IGhlYWRz",
        "IG9uIHRoYXQgYXhpcywgd2hlcmUgcXVlcnkgaGVhZCBoIGdldHMgS1YgaGVhZAojIGggLy8gZ3JvdXA6IGNvbnNlY3V0aXZl",
        "IHF1ZXJ5IGhlYWRzIHNoYXJlIGEgS1YgaGVhZC4KZGVmIHJlcGVhdF9rdl9oZWFkcyh4LCBncm91cCk6CiAgICAiIiJLViBo",
        "ZWFkcyBvbiBheGlzIC0zLCBlYWNoIHJlcGVhdGVkIGBgZ3JvdXBgYCB0aW1lcyBpbiBwbGFjZTogcXVlcnkgaGVhZCBoIHJl",
        "YWRzIEtWIGhlYWQgaCAvLyBncm91cC4iIiIKICAgIHgsIGdyb3VwID0gX3JlcGVhdF9rdl9hcmdzKHgsIGdyb3VwKQogICAg",
        "cmV0dXJuIG5wLnJlcGVhdCh4LCBncm91cCwgYXhpcz0tMykgICMga3YwLCBrdjAsIC4uLiwga3YxLCBrdjEsIC4uLjogZWFj",
        "aCBLViBoZWFkIHNlcnZlcyBhIGJsb2NrIG9mIHF1ZXJ5IGhlYWRz",
    ),
    "Exercise 4": (
        "IyBFeGVyY2lzZSA0OiBTaXplIGEgS1YgY2FjaGUgbGF5ZXIgYnkgbGF5ZXIuIGxheWVyX3dpbmRvd3MgaGFzIG9uZSBlbnRy",
        "eSBwZXIgbGF5ZXI6IE5vbmUgZm9yIGEKIyBmdWxsLWF0dGVudGlvbiBsYXllciAoaXQga2VlcHMgYWxsIGBjb250ZXh0YCB0",
        "b2tlbnMpIG9yIGFuIGludCB3aW5kb3cgdyAoaXQga2VlcHMgdGhlIG1vc3QKIyByZWNlbnQgbWluKGNvbnRleHQsIHcpIHRv",
        "a2VucykuIEVhY2gga2VwdCB0b2tlbiBjb3N0cyBhIGtleSBhbmQgYSB2YWx1ZSBwZXIgS1YgaGVhZC4gUmV0dXJuIGFuCiMg",
        "ZXhhY3QgaW50IG51bWJlciBvZiBieXRlcy4KZGVmIGt2X2NhY2hlX2J5dGVzKGNvbnRleHQsIGxheWVyX3dpbmRvd3MsIGt2",
        "X2hlYWRzLCBoZWFkX2RpbSwgYnl0ZXNfcGVyX3ZhbHVlPTIpOgogICAgIiIiRXhhY3QgS1YtY2FjaGUgYnl0ZXMgZm9yIGBj",
        "b250ZXh0YCB0b2tlbnMgd2hlbiBlYWNoIGxheWVyIGlzIGZ1bGwgKE5vbmUpIG9yIHdpbmRvd2VkIChpbnQpLiIiIgogICAg",
        "Y29udGV4dCA9IHJlcXVpcmVfaW50KCJjb250ZXh0IiwgY29udGV4dCwgbWluaW11bT0xKQogICAgd2luZG93cyA9IGxpc3Qo",
        "bGF5ZXJfd2luZG93cykKICAgIGlmIG5vdCB3aW5kb3dzOgogICAgICAgIHJhaXNlIFZhbHVlRXJyb3IoImxheWVyX3dpbmRv",
        "d3MgbmVlZHMgb25lIGVudHJ5IHBlciBsYXllciAoTm9uZSA9IGZ1bGwgYXR0ZW50aW9uLCBpbnQgPSB3aW5kb3cpIikKICAg",
        "IGZvciBsYXllciwgd2luZG93IGluIGVudW1lcmF0ZSh3aW5kb3dzKToKICAgICAgICBpZiB3aW5kb3cgaXMgbm90IE5vbmU6",
        "CiAgICAgICAgICAgIHJlcXVpcmVfaW50KGYibGF5ZXJfd2luZG93c1t7bGF5ZXJ9XSIsIHdpbmRvdywgbWluaW11bT0xKQog",
        "ICAgZm9yIG5hbWUsIHZhbHVlIGluICgoImt2X2hlYWRzIiwga3ZfaGVhZHMpLCAoImhlYWRfZGltIiwgaGVhZF9kaW0pLCAo",
        "ImJ5dGVzX3Blcl92YWx1ZSIsIGJ5dGVzX3Blcl92YWx1ZSkpOgogICAgICAgIHJlcXVpcmVfaW50KG5hbWUsIHZhbHVlLCBt",
        "aW5pbXVtPTEpCiAgICBrZXB0ID0gc3VtKGNvbnRleHQgaWYgd2luZG93IGlzIE5vbmUgZWxzZSBtaW4oY29udGV4dCwgd2lu",
        "ZG93KSBmb3Igd2luZG93IGluIHdpbmRvd3MpICAjIHRva2VuIHNsb3RzIG92ZXIgYWxsIGxheWVycwogICAgcmV0dXJuIDIg",
        "KiBrZXB0ICoga3ZfaGVhZHMgKiBoZWFkX2RpbSAqIGJ5dGVzX3Blcl92YWx1ZSAgIyBhIGtleSBhbmQgYSB2YWx1ZSBwZXIg",
        "S1YgaGVhZCBwZXIga2VwdCB0b2tlbg==",
    ),
    "Exercise 5": (
        "IyBFeGVyY2lzZSA1OiBTdHJlYW0gYSBzb2Z0bWF4LXdlaWdodGVkIGF2ZXJhZ2UuIEZvciBlYWNoIHRpbGUsIHVwZGF0ZSB0",
        "aGUgcnVubmluZyBtYXggbSAoc3RhcnQKIyBhdCAtaW5mKSwgdGhlIHJlc2NhbGUgZmFjdG9yIGFscGhhID0gZXhwKG1fb2xk",
        "IC0gbV9uZXcpLCB0aGUgcnVubmluZyBzdW0gbCBhbmQgbnVtZXJhdG9yIHUgYXMgaW4KIyB0aGUgZm9ybXVsYSwgYW5kIGFw",
        "cGVuZCB7Im0iOiBtLCAiYWxwaGEiOiBhbHBoYSwgImwiOiBsLCAidSI6IHV9IHRvIHRoZSB0cmFjZS4gUmV0dXJuICh1IC8g",
        "bCwgdHJhY2UpLgpkZWYgb25saW5lX3NvZnRtYXhfZG90KGxvZ2l0X3RpbGVzLCB2YWx1ZV90aWxlcyk6CiAgICAiIiJTb2Z0",
        "bWF4LXdlaWdodGVkIGF2ZXJhZ2Ugb2Ygc2NhbGFyIHZhbHVlcywgc3RyZWFtZWQgdGlsZSBieSB0aWxlOyByZXR1cm5zIChv",
        "dXRwdXQsIHBlci10aWxlIHRyYWNlKS4iIiIKICAgIHRpbGVzID0gX29ubGluZV9zb2Z0bWF4X3RpbGVzKGxvZ2l0X3RpbGVz",
        "LCB2YWx1ZV90aWxlcykgICMgWyhsb2dpdHMsIHZhbHVlcyksIC4uLl0gYXMgZmxvYXQgYXJyYXlzCiAgICBtLCBsLCB1ID0g",
        "LW1hdGguaW5mLCAwLjAsIDAuMAogICAgdHJhY2UgPSBbXQogICAgZm9yIGxvZ2l0cywgdmFsdWVzIGluIHRpbGVzOgogICAg",
        "ICAgIG1fbmV3ID0gbWF4KG0sIGZsb2F0KGxvZ2l0cy5tYXgoKSkpCiAgICAgICAgYWxwaGEgPSBtYXRoLmV4cChtIC0gbV9u",
        "ZXcpICAjIDAgYmVmb3JlIHRoZSBmaXJzdCB0aWxlLCBzaW5jZSBtID0gLWluZgogICAgICAgIHdlaWdodHMgPSBucC5leHAo",
        "bG9naXRzIC0gbV9uZXcpCiAgICAgICAgbCA9IGFscGhhICogbCArIGZsb2F0KHdlaWdodHMuc3VtKCkpCiAgICAgICAgdSA9",
        "IGFscGhhICogdSArIGZsb2F0KHdlaWdodHMgQCB2YWx1ZXMpCiAgICAgICAgbSA9IG1fbmV3CiAgICAgICAgdHJhY2UuYXBw",
        "ZW5kKHsibSI6IG0sICJhbHBoYSI6IGFscGhhLCAibCI6IGwsICJ1IjogdX0pCiAgICByZXR1cm4gdSAvIGwsIHRyYWNl",
    ),
    "Exercise 6": (
        "IyBFeGVyY2lzZSA2OiBQbGFpbiB0aWxlcy4gRm9yIGVhY2ggYmxvY2sgb2YgdGlsZV9zaXplIHF1ZXJpZXMga2VlcCBwZXIt",
        "cm93IG0gKHN0YXJ0IC1pbmYpLAojIGwgKHN0YXJ0IDApIGFuZCBhbiBhY2N1bXVsYXRvciBPICh6ZXJvcywgZF92IHdpZGUp",
        "LiBGb3IgZWFjaCBibG9jayBvZiB0aWxlX3NpemUga2V5czogY29tcHV0ZSB0aGUKIyBzY29yZSB0aWxlIFFfYiBLX2NeVCAv",
        "IHNxcnQoZF9rKSwgdGhlbiB0aGUgb25saW5lIHVwZGF0ZSBvZiB0aGUgZm9ybXVsYSBhYm92ZS4gQWZ0ZXIgdGhlIGxhc3QK",
        "IyBrZXkgYmxvY2ssIHJldHVybiBPIC8gbCBmb3IgZXZlcnkgcXVlcnkgYmxvY2suIE5ldmVyIGJ1aWxkIGEgVF9xIHggVF9r",
        "IGFycmF5LgpkZWYgdGlsZWRfYXR0ZW50aW9uX3BsYWluKFEsIEssIFYsICosIHRpbGVfc2l6ZT0xMjgpOgogICAgIiIiVW5t",
        "YXNrZWQgc29mdG1heCBhdHRlbnRpb24sIHN0cmVhbWVkIG92ZXIgKHF1ZXJ5IGJsb2NrLCBrZXkgYmxvY2spIHRpbGVzOiBv",
        "dXRwdXQgW1RfcSwgZF92XS4iIiIKICAgIFEsIEssIFYsIHRpbGVfc2l6ZSA9IF9wbGFpbl90aWxlX2FyZ3MoUSwgSywgViwg",
        "dGlsZV9zaXplKQogICAgKG5fcSwgZF9rKSwgKG5faywgZF92KSA9IFEuc2hhcGUsIFYuc2hhcGUKICAgIG91dCA9IG5wLmVt",
        "cHR5KChuX3EsIGRfdikpCiAgICBmb3IgcTAgaW4gcmFuZ2UoMCwgbl9xLCB0aWxlX3NpemUpOgogICAgICAgIFFfYiA9IFFb",
        "cTA6cTAgKyB0aWxlX3NpemVdIC8gbWF0aC5zcXJ0KGRfaykgICMgKEJfcSwgZF9rKSwgc2NhbGVkIG9uY2UgcGVyIGJsb2Nr",
        "CiAgICAgICAgbSA9IG5wLmZ1bGwobGVuKFFfYiksIC1ucC5pbmYpICAjIHJ1bm5pbmcgbWF4IHBlciByb3cKICAgICAgICBs",
        "ID0gbnAuemVyb3MobGVuKFFfYikpICAjIHJ1bm5pbmcgc3VtIHBlciByb3cKICAgICAgICBhY2MgPSBucC56ZXJvcygobGVu",
        "KFFfYiksIGRfdikpICAjIHJ1bm5pbmcgbnVtZXJhdG9yIE8KICAgICAgICBmb3IgazAgaW4gcmFuZ2UoMCwgbl9rLCB0aWxl",
        "X3NpemUpOgogICAgICAgICAgICBzID0gUV9iIEAgS1trMDprMCArIHRpbGVfc2l6ZV0uVCAgIyAoQl9xLCBCX2spOiB0aGUg",
        "b25seSBzY29yZSB0aWxlIGFsaXZlCiAgICAgICAgICAgIG1fbmV3ID0gbnAubWF4aW11bShtLCBzLm1heChheGlzPTEpKQog",
        "ICAgICAgICAgICBhbHBoYSA9IG5wLmV4cChtIC0gbV9uZXcpICAjIDAgb24gdGhlIGZpcnN0IHRpbGUsIHdoZXJlIG0gPSAt",
        "aW5mCiAgICAgICAgICAgIHAgPSBucC5leHAocyAtIG1fbmV3WzosIE5vbmVdKQogICAgICAgICAgICBsID0gYWxwaGEgKiBs",
        "ICsgcC5zdW0oYXhpcz0xKQogICAgICAgICAgICBhY2MgPSBhbHBoYVs6LCBOb25lXSAqIGFjYyArIHAgQCBWW2swOmswICsg",
        "dGlsZV9zaXplXQogICAgICAgICAgICBtID0gbV9uZXcKICAgICAgICBvdXRbcTA6cTAgKyB0aWxlX3NpemVdID0gYWNjIC8g",
        "bFs6LCBOb25lXSAgIyBGbGFzaEF0dGVudGlvbi0yOiBvbmUgZGl2aXNpb24sIGF0IHRoZSBlbmQKICAgIHJldHVybiBvdXQ=",
    ),
    "Exercise 7": (
        "IyBFeGVyY2lzZSA3OiBDYXVzYWwgc2tpcHBpbmcuIFNhbWUgYXMgRXhlcmNpc2UgNiwgYnV0IHF1ZXJ5IGkgcmVhZHMga2V5",
        "cyAwLi5pLiBLIGFuZCBWIG1heSBob2xkIG1vcmUKIyByb3dzIHRoYW4gUSwgYXMgYSBwcmVhbGxvY2F0ZWQgY2FjaGUgZG9l",
        "czogdGhlIHJvd3MgYWZ0ZXIgdGhlIGxhc3QgcXVlcnkgYXJlIHVud3JpdHRlbiBzbG90cyBhbmQgbWF5CiMgaG9sZCBhbnl0",
        "aGluZywgZXZlbiBOYU4sIHNvIG5ldmVyIHJlYWQgdGhlbS4gRm9yIHRoZSBxdWVyeSBibG9jayBbcTAsIHExKSB2aXNpdCBv",
        "bmx5IGtleSB0aWxlcyB0aGF0CiMgc3RhcnQgYXQgazAgPD0gcTEgLSAxIGFuZCBlbmQgYXQgb3IgYmVmb3JlIGtleSBxMSAt",
        "IDEgKGxhdGVyIGtleXMgYXJlIGFsbCBpbiB0aGUgZnV0dXJlKTsgaW5zaWRlIGEKIyB0aWxlIHRoYXQgc3RyYWRkbGVzIHRo",
        "ZSBkaWFnb25hbCwgc2V0IHRoZSBzY29yZXMgb2Yga2V5cyBhZnRlciB0aGUgcXVlcnkgdG8gLWluZiBiZWZvcmUgdGhlIG1h",
        "eC4KIyBSZXR1cm4gKG91dHB1dCwgdGlsZXNfY29tcHV0ZWQpLCB0aGUgbnVtYmVyIG9mIHNjb3JlIHRpbGVzIHlvdSBjb21w",
        "dXRlZC4KZGVmIGNhdXNhbF90aWxlZF9hdHRlbnRpb24oUSwgSywgViwgKiwgdGlsZV9zaXplPTEyOCk6CiAgICAiIiJDYXVz",
        "YWwgc29mdG1heCBhdHRlbnRpb24gb3ZlciB0aWxlcywgc2tpcHBpbmcgdGlsZXMgYWJvdmUgdGhlIGJsb2NrIGRpYWdvbmFs",
        "OiAob3V0cHV0LCB0aWxlc19jb21wdXRlZCkuIiIiCiAgICBRLCBLLCBWLCB0aWxlX3NpemUgPSBfY2F1c2FsX3RpbGVfYXJn",
        "cyhRLCBLLCBWLCB0aWxlX3NpemUpCiAgICAobl9xLCBkX2spLCBkX3YgPSBRLnNoYXBlLCBWLnNoYXBlWzFdCiAgICBvdXQs",
        "IHRpbGVzID0gbnAuZW1wdHkoKG5fcSwgZF92KSksIDAKICAgIGZvciBxMCBpbiByYW5nZSgwLCBuX3EsIHRpbGVfc2l6ZSk6",
        "CiAgICAgICAgcTEgPSBtaW4ocTAgKyB0aWxlX3NpemUsIG5fcSkKICAgICAgICBRX2IgPSBRW3EwOnExXSAvIG1hdGguc3Fy",
        "dChkX2spCiAgICAgICAgbSwgbCwgYWNjID0gbnAuZnVsbChxMSAtIHEwLCAtbnAuaW5mKSwgbnAuemVyb3MocTEgLSBxMCks",
        "IG5wLnplcm9zKChxMSAtIHEwLCBkX3YpKQogICAgICAgIGZvciBrMCBpbiByYW5nZSgwLCBxMSwgdGlsZV9zaXplKTogICMg",
        "a2V5IHRpbGVzIHN0YXJ0aW5nIGFmdGVyIHExIC0gMSBhcmUgYWxsIGluIHRoZSBmdXR1cmUKICAgICAgICAgICAgazEgPSBt",
        "aW4oazAgKyB0aWxlX3NpemUsIHExKSAgIyBhbmQgbm8gdGlsZSByZWFkcyBwYXN0IGtleSBxMSAtIDEKICAgICAgICAgICAg",
        "cyA9IFFfYiBAIEtbazA6azFdLlQKICAgICAgICAgICAgdGlsZXMgKz0gMQogICAgICAgICAgICBpZiBrMSAtIDEgPiBxMDog",
        "ICMgdGhlIHRpbGUgc3RyYWRkbGVzIHRoZSBkaWFnb25hbDogbWFzayB0aGUgZnV0dXJlIGluc2lkZSBpdAogICAgICAgICAg",
        "ICAgICAgc1tucC5hcmFuZ2UoazAsIGsxKVtOb25lLCA6XSA+IG5wLmFyYW5nZShxMCwgcTEpWzosIE5vbmVdXSA9IC1ucC5p",
        "bmYKICAgICAgICAgICAgbV9uZXcgPSBucC5tYXhpbXVtKG0sIHMubWF4KGF4aXM9MSkpICAjIGZpbml0ZToga2V5IGswIDw9",
        "IHEwIGlzIGFsbG93ZWQgZm9yIGV2ZXJ5IHJvdwogICAgICAgICAgICBhbHBoYSA9IG5wLmV4cChtIC0gbV9uZXcpCiAgICAg",
        "ICAgICAgIHAgPSBucC5leHAocyAtIG1fbmV3WzosIE5vbmVdKQogICAgICAgICAgICBsID0gYWxwaGEgKiBsICsgcC5zdW0o",
        "YXhpcz0xKQogICAgICAgICAgICBhY2MgPSBhbHBoYVs6LCBOb25lXSAqIGFjYyArIHAgQCBWW2swOmsxXQogICAgICAgICAg",
        "ICBtID0gbV9uZXcKICAgICAgICBvdXRbcTA6cTFdID0gYWNjIC8gbFs6LCBOb25lXQogICAgcmV0dXJuIG91dCwgdGlsZXM=",
    ),
    "Exercise 8": (
        "IyBFeGVyY2lzZSA4OiBPZmZzZXRzIGFuZCB3aW5kb3dzLiBFdmVyeXRoaW5nIGVsc2Ugb2YgdGlsZWQgYXR0ZW50aW9uIGlz",
        "IHdyaXR0ZW4gZm9yIHlvdTogdGhlIHNpbmssCiMgYW4gYWRkaXRpdmUgbWFzaywgb3ZlcmZsb3cgY2hlY2tzIGFuZCBlbXB0",
        "eSByb3dzLiBGaWxsIGluIHRoZSB0d28gbWFya2VkIHBsYWNlcy4gKDEpIFRoZSBrZXkgcmFuZ2UKIyBvZiBhIHF1ZXJ5IGJs",
        "b2NrIHdob3NlIHF1ZXJpZXMgc2l0IGF0IGFic29sdXRlIHBvc2l0aW9ucyBmaXJzdC4ubGFzdCAoPSBxdWVyeV9zdGFydCAr",
        "IHEwIC4uCiMgcXVlcnlfc3RhcnQgKyBxMSAtIDEpOiB3aXRoIGNhdXNhbD1UcnVlIG5vIGtleSBhZnRlciBsYXN0OyB3aXRo",
        "IGEgd2luZG93LCBubyBrZXkgYmVmb3JlCiMgZmlyc3QgLSB3aW5kb3cgKyAxLiAoMikgSW5zaWRlIGEgdGlsZSB0aGF0IHN0",
        "cmFkZGxlcyBhIGJvdW5kYXJ5LCBibG9jayB0aGUgZnV0dXJlIGFuZCwgd2l0aCBhCiMgd2luZG93LCB0aGUga2V5cyB3aXRo",
        "IHF1ZXJ5X3BvcyAtIGtleV9wb3MgPj0gd2luZG93LgpkZWYgdGlsZWRfYXR0ZW50aW9uKFEsIEssIFYsIG1hc2s9Tm9uZSwg",
        "KiwgdGlsZV9zaXplPTEyOCwgc2luaz1Ob25lLCBlbXB0eV9yb3c9ImVycm9yIiwgY2F1c2FsPUZhbHNlLCB3aW5kb3c9Tm9u",
        "ZSwgcXVlcnlfc3RhcnQ9MCk6CiAgICAiIiJFeGFjdCBzb2Z0bWF4IGF0dGVudGlvbiBzdHJlYW1lZCBvdmVyIChxdWVyeSBi",
        "bG9jaywga2V5IGJsb2NrKSBwYWlycywgbmV2ZXIgaG9sZGluZyBhIFRfcSB4IFRfayBtYXRyaXguCgogICAgUSBbVF9xLCBk",
        "X2tdLCBLIFtUX2ssIGRfa10sIFYgW1RfaywgZF92XTsgbWFzayBbVF9xLCBUX2tdIGFkZGl0aXZlIChvcHRpb25hbCkuIFdp",
        "dGggY2F1c2FsPVRydWUsIHF1ZXJ5IGkKICAgIHNpdHMgYXQgYWJzb2x1dGUgcG9zaXRpb24gcXVlcnlfc3RhcnQgKyBpIGFu",
        "ZCByZWFkcyBrZXlzIDAgLi4gdGhhdCBwb3NpdGlvbiAodGhlIGxhc3QgYHdpbmRvd2Agb2YgdGhlbQogICAgaWYgd2luZG93",
        "IGlzIHNldCkuIHNpbmsgaXMgb25lIHNjYWxhciBsb2dpdCB3aXRoIGEgemVybyB2YWx1ZS4gRmxvYXQxNiBpbnB1dHMgYXJl",
        "IGNvbXB1dGVkIGluIGZsb2F0MzIuCiAgICAiIiIKICAgIFEsIEssIFYsIG1hc2ssIHRpbGVfc2l6ZSwgc2luaywgY2F1c2Fs",
        "LCB3aW5kb3csIHF1ZXJ5X3N0YXJ0ID0gX3RpbGVkX2FyZ3MoUSwgSywgViwgbWFzaywgdGlsZV9zaXplLCBzaW5rLCBlbXB0",
        "eV9yb3csIGNhdXNhbCwgd2luZG93LCBxdWVyeV9zdGFydCkKICAgIGR0eXBlID0gUS5kdHlwZSAgIyBmbG9hdDMyIG9yIGZs",
        "b2F0NjQ6IGZsb2F0MTYgaW5wdXRzIGFycml2ZSBhcyBmbG9hdDMyCiAgICAobl9xLCBkX2spLCAobl9rLCBkX3YpID0gUS5z",
        "aGFwZSwgVi5zaGFwZQogICAgc2NhbGUgPSAxLjAgLyBtYXRoLnNxcnQoZF9rKQogICAgIyBFdmVyeSBlbnRyeSBvZiBRIEAg",
        "S15UIGlzIGF0IG1vc3QgZF9rIG1heHxxfCBtYXh8a3w6IHdoaWxlIHRoYXQgYm91bmQgaXMgZmluaXRlLCBubyB0aWxlIG5l",
        "ZWRzIHRoZSBmaW5pdGVuZXNzIGNoZWNrLgogICAgbWF5YmVfb3ZlcmZsb3cgPSBub3QgZF9rICogZmxvYXQobnAuYWJzKFEp",
        "Lm1heCgpKSAqIGZsb2F0KG5wLmFicyhLKS5tYXgoKSkgPCBmbG9hdChucC5maW5mbyhkdHlwZSkubWF4KQogICAgb3V0ID0g",
        "bnAuZW1wdHkoKG5fcSwgZF92KSwgZHR5cGU9ZHR5cGUpCiAgICB3aXRoIG5wLmVycnN0YXRlKG92ZXI9Imlnbm9yZSIsIGlu",
        "dmFsaWQ9Imlnbm9yZSIpOgogICAgICAgIGZvciBxMCBpbiByYW5nZSgwLCBuX3EsIHRpbGVfc2l6ZSk6CiAgICAgICAgICAg",
        "IHExID0gbWluKHEwICsgdGlsZV9zaXplLCBuX3EpCiAgICAgICAgICAgIGZpcnN0LCBsYXN0ID0gcXVlcnlfc3RhcnQgKyBx",
        "MCwgcXVlcnlfc3RhcnQgKyBxMSAtIDEgICMgYWJzb2x1dGUgcG9zaXRpb25zIG9mIHRoZSBibG9jaydzIHF1ZXJpZXMKICAg",
        "ICAgICAgICAga19sbywga19oaSA9IDAsIG5fawogICAgICAgICAgICBpZiBjYXVzYWw6CiAgICAgICAgICAgICAgICBrX2hp",
        "ID0gbWluKG5faywgbGFzdCArIDEpICAjIGxhdGVyIGtleXMgYXJlIGluIGV2ZXJ5IHJvdydzIGZ1dHVyZQogICAgICAgICAg",
        "ICAgICAgaWYgd2luZG93IGlzIG5vdCBOb25lOgogICAgICAgICAgICAgICAgICAgIGtfbG8gPSBtYXgoMCwgZmlyc3QgLSB3",
        "aW5kb3cgKyAxKSAgIyBlYXJsaWVyIGtleXMgYXJlIGJlaGluZCBldmVyeSByb3cncyB3aW5kb3cKICAgICAgICAgICAgbSA9",
        "IG5wLmZ1bGwocTEgLSBxMCwgLW5wLmluZiBpZiBzaW5rIGlzIE5vbmUgZWxzZSBzaW5rLCBkdHlwZT1kdHlwZSkgICMgcnVu",
        "bmluZyBtYXggcGVyIHJvdwogICAgICAgICAgICBsID0gbnAuZnVsbChxMSAtIHEwLCAwLjAgaWYgc2luayBpcyBOb25lIGVs",
        "c2UgMS4wLCBkdHlwZT1kdHlwZSkgICMgcnVubmluZyBzdW07IHRoZSBzaW5rIGFkZHMgZV4oc2luayAtIG0pID0gMQogICAg",
        "ICAgICAgICBhY2MgPSBucC56ZXJvcygocTEgLSBxMCwgZF92KSwgZHR5cGU9ZHR5cGUpICAjIHJ1bm5pbmcgbnVtZXJhdG9y",
        "IEEKICAgICAgICAgICAgZm9yIGswIGluIHJhbmdlKGtfbG8gLSBrX2xvICUgdGlsZV9zaXplLCBrX2hpLCB0aWxlX3NpemUp",
        "OgogICAgICAgICAgICAgICAgazEgPSBtaW4oazAgKyB0aWxlX3NpemUsIG5faykKICAgICAgICAgICAgICAgIHMgPSBRW3Ew",
        "OnExXSBAIEtbazA6azFdLlQgICMgKEJfcSwgQl9rKTogdGhlIG9ubHkgc2NvcmUgdGlsZSBhbGl2ZQogICAgICAgICAgICAg",
        "ICAgcyAqPSBzY2FsZQogICAgICAgICAgICAgICAgaWYgbWF5YmVfb3ZlcmZsb3cgYW5kIG5vdCBucC5pc2Zpbml0ZShzKS5h",
        "bGwoKToKICAgICAgICAgICAgICAgICAgICByYWlzZSBGbG9hdGluZ1BvaW50RXJyb3IoIlEgQCBLXlQgb3ZlcmZsb3dlZDsg",
        "cmVzY2FsZSBRIGFuZCBLIChvciBjb21wdXRlIGluIGZsb2F0NjQpIikKICAgICAgICAgICAgICAgIGlmIG1hc2sgaXMgbm90",
        "IE5vbmU6CiAgICAgICAgICAgICAgICAgICAgYmlhcyA9IG1hc2tbcTA6cTEsIGswOmsxXQogICAgICAgICAgICAgICAgICAg",
        "IHMgKz0gYmlhcwogICAgICAgICAgICAgICAgICAgIGlmIG5wLmFueShucC5pc2Zpbml0ZShiaWFzKSAmIH5ucC5pc2Zpbml0",
        "ZShzKSk6CiAgICAgICAgICAgICAgICAgICAgICAgIHJhaXNlIEZsb2F0aW5nUG9pbnRFcnJvcigiYWRkaW5nIGEgZmluaXRl",
        "IG1hc2sgYmlhcyBvdmVyZmxvd2VkIHRoZSBzY29yZTsgdXNlIGEgc21hbGxlciBiaWFzIChvciAtaW5mIHRvIGJsb2NrKSIp",
        "CiAgICAgICAgICAgICAgICBpZiBjYXVzYWwgYW5kIG5vdCAoazEgLSAxIDw9IGZpcnN0IGFuZCAod2luZG93IGlzIE5vbmUg",
        "b3IgbGFzdCAtIGswIDwgd2luZG93KSk6ICAjIHRoZSBibG9jayBzdHJhZGRsZXMgYSBib3VuZGFyeQogICAgICAgICAgICAg",
        "ICAgICAgIHF1ZXJ5X3Bvcywga2V5X3BvcyA9IG5wLmFyYW5nZShmaXJzdCwgbGFzdCArIDEpWzosIE5vbmVdLCBucC5hcmFu",
        "Z2UoazAsIGsxKVtOb25lLCA6XQogICAgICAgICAgICAgICAgICAgIGJsb2NrZWQgPSBrZXlfcG9zID4gcXVlcnlfcG9zICAj",
        "IHRoZSBmdXR1cmUKICAgICAgICAgICAgICAgICAgICBpZiB3aW5kb3cgaXMgbm90IE5vbmU6CiAgICAgICAgICAgICAgICAg",
        "ICAgICAgIGJsb2NrZWQgfD0ga2V5X3BvcyA8PSBxdWVyeV9wb3MgLSB3aW5kb3cgICMgcXVlcnlfcG9zIC0ga2V5X3BvcyA+",
        "PSB3aW5kb3c6IGJlaGluZCB0aGUgd2luZG93CiAgICAgICAgICAgICAgICAgICAgc1tibG9ja2VkXSA9IC1ucC5pbmYKICAg",
        "ICAgICAgICAgICAgIG1fbmV3ID0gbnAubWF4aW11bShtLCBzLm1heChheGlzPTEpKQogICAgICAgICAgICAgICAgc2FmZSA9",
        "IG5wLndoZXJlKG1fbmV3ID09IC1ucC5pbmYsIDAuMCwgbV9uZXcpICAjIHJvd3Mgd2l0aCBub3RoaW5nIGFsbG93ZWQgeWV0",
        "OiBubyAtaW5mIC0gLWluZgogICAgICAgICAgICAgICAgYWxwaGEgPSBucC5leHAobSAtIHNhZmUpICAjIHJlc2NhbGVzIHdo",
        "YXQgd2FzIGFjY3VtdWxhdGVkIHVuZGVyIHRoZSBvbGQgbWF4CiAgICAgICAgICAgICAgICBzIC09IHNhZmVbOiwgTm9uZV0K",
        "ICAgICAgICAgICAgICAgIG5wLmV4cChzLCBvdXQ9cykgICMgUCwgaW4gcGxhY2U6IGJsb2NrZWQgZW50cmllcyBiZWNvbWUg",
        "ZXhhY3RseSAwCiAgICAgICAgICAgICAgICBsID0gYWxwaGEgKiBsICsgcy5zdW0oYXhpcz0xKQogICAgICAgICAgICAgICAg",
        "YWNjICo9IGFscGhhWzosIE5vbmVdCiAgICAgICAgICAgICAgICBhY2MgKz0gcyBAIFZbazA6azFdCiAgICAgICAgICAgICAg",
        "ICBtID0gbV9uZXcKICAgICAgICAgICAgZmlsbGVkID0gbCA+IDAKICAgICAgICAgICAgaWYgZW1wdHlfcm93ID09ICJlcnJv",
        "ciIgYW5kIG5vdCBmaWxsZWQuYWxsKCk6CiAgICAgICAgICAgICAgICByYWlzZSBWYWx1ZUVycm9yKAogICAgICAgICAgICAg",
        "ICAgICAgIGYicXVlcnkge3EwICsgaW50KG5wLmFyZ21pbihmaWxsZWQpKX0gaGFzIG5vIGFsbG93ZWQga2V5OyBmaXggdGhl",
        "IG1hc2sgb3IgcGFzcyBlbXB0eV9yb3c9J3plcm8nIgogICAgICAgICAgICAgICAgKQogICAgICAgICAgICBucC5kaXZpZGUo",
        "YWNjLCBsWzosIE5vbmVdLCBvdXQ9YWNjLCB3aGVyZT1maWxsZWRbOiwgTm9uZV0pICAjIGFuIGVtcHR5IHJvdyBrZWVwcyBp",
        "dHMgYWNjdW11bGF0b3Igb2YgemVyb3MKICAgICAgICAgICAgb3V0W3EwOnExXSA9IGFjYwogICAgcmV0dXJuIG91dA==",
    ),
    "Exercise 9": (
        "IyBFeGVyY2lzZSA5OiBUaGUgYmFja3dhcmQgcGFzcywgRmxhc2hBdHRlbnRpb24tMidzIHdheS4gRnJvbSB0aGUgc2F2ZWQg",
        "b3V0cHV0IE8sIHRoZSBwZXItcm93CiMgbG9nLXN1bS1leHAgbHNlIGFuZCB0aGUgdXBzdHJlYW0gZ3JhZGllbnQgZE8sIHJl",
        "dHVybiAoZFEsIGRLLCBkVikuIENvbXB1dGUgRCA9IHJvd3N1bShkTyAqIE8pIG9uY2UuCiMgRm9yIGVhY2gga2V5IGJsb2Nr",
        "IChvdXRlciBsb29wKSBhbmQgZWFjaCBxdWVyeSBibG9jayB0aGF0IHJlYWRzIGl0IChpbm5lciBsb29wKTogcmVjb21wdXRl",
        "CiMgUyA9IFFfYiBLX2NeVCAvIHNxcnQoZF9rKSAod2l0aCAtaW5mIGZvciBrZXlzIGFmdGVyIHRoZSBxdWVyeSB3aGVuIGNh",
        "dXNhbCksIFAgPSBleHAoUyAtIGxzZV9iKSwgdGhlbgojIGRWX2MgKz0gUF5UIGRPX2IsIGRQID0gZE9fYiBWX2NeVCwgZFMg",
        "PSBQICogKGRQIC0gRF9iKSwgZFFfYiArPSBkUyBLX2MgLyBzcXJ0KGRfaykgYW5kCiMgZEtfYyArPSBkU15UIFFfYiAvIHNx",
        "cnQoZF9rKS4gTmV2ZXIgYnVpbGQgYSBUX3EgeCBUX2sgYXJyYXksIGFuZCBkbyBub3QgY2FsbCBhdXRvZ3JhZC4KZGVmIHRp",
        "bGVkX2F0dGVudGlvbl9iYWNrd2FyZChRLCBLLCBWLCBPLCBkTywgbHNlLCAqLCB0aWxlX3NpemU9MTI4LCBjYXVzYWw9VHJ1",
        "ZSk6CiAgICAiIiJHcmFkaWVudHMgb2Ygc29mdG1heCBhdHRlbnRpb24gZnJvbSB0aGUgc2F2ZWQgb3V0cHV0IGFuZCBsb2ct",
        "c3VtLWV4cCwgb3ZlciB0aWxlczogKGRRLCBkSywgZFYpLiIiIgogICAgUSwgSywgViwgTywgZE8sIGxzZSwgdGlsZV9zaXpl",
        "LCBjYXVzYWwgPSBfYmFja3dhcmRfYXJncyhRLCBLLCBWLCBPLCBkTywgbHNlLCB0aWxlX3NpemUsIGNhdXNhbCkKICAgIChu",
        "X3EsIGRfayksIG5fayA9IFEuc2hhcGUsIGxlbihLKQogICAgc2NhbGUgPSAxLjAgLyBtYXRoLnNxcnQoZF9rKQogICAgRCA9",
        "IChkTyAqIE8pLnN1bShheGlzPTEpICAjIChUX3EsKTogcm93c3VtKGRPICogTykgPSByb3dzdW0oUCAqIGRQKSwgb25jZSBm",
        "b3IgYWxsIHRpbGVzCiAgICBkUSwgZEssIGRWID0gbnAuemVyb3MoUS5zaGFwZSksIG5wLnplcm9zKEsuc2hhcGUpLCBucC56",
        "ZXJvcyhWLnNoYXBlKQogICAgZm9yIGswIGluIHJhbmdlKDAsIG5faywgdGlsZV9zaXplKTogICMga2V5IGJsb2NrcyBvdXRz",
        "aWRlOiB0aGVpciBkSyBhbmQgZFYgc3RheSBsb2NhbAogICAgICAgIGsxID0gbWluKGswICsgdGlsZV9zaXplLCBuX2spCiAg",
        "ICAgICAgS19jLCBWX2MgPSBLW2swOmsxXSwgVltrMDprMV0KICAgICAgICBmb3IgcTAgaW4gcmFuZ2UoazAgaWYgY2F1c2Fs",
        "IGVsc2UgMCwgbl9xLCB0aWxlX3NpemUpOiAgIyBjYXVzYWw6IGVhcmxpZXIgcXVlcnkgYmxvY2tzIG5ldmVyIHJlYWQgdGhl",
        "c2Uga2V5cwogICAgICAgICAgICBxMSA9IG1pbihxMCArIHRpbGVfc2l6ZSwgbl9xKQogICAgICAgICAgICBzID0gUVtxMDpx",
        "MV0gQCBLX2MuVCAqIHNjYWxlICAjIChCX3EsIEJfayk6IHRoZSBzY29yZSB0aWxlLCByZWNvbXB1dGVkCiAgICAgICAgICAg",
        "IGlmIGNhdXNhbCBhbmQgazEgLSAxID4gcTA6CiAgICAgICAgICAgICAgICBzW25wLmFyYW5nZShrMCwgazEpW05vbmUsIDpd",
        "ID4gbnAuYXJhbmdlKHEwLCBxMSlbOiwgTm9uZV1dID0gLW5wLmluZgogICAgICAgICAgICBwID0gbnAuZXhwKHMgLSBsc2Vb",
        "cTA6cTEsIE5vbmVdKSAgIyB0aGUgZm9yd2FyZCdzIHdlaWdodHMsIGV4YWN0bHksIGZyb20gdGhlIHNhdmVkIGxvZy1zdW0t",
        "ZXhwCiAgICAgICAgICAgIGRWW2swOmsxXSArPSBwLlQgQCBkT1txMDpxMV0KICAgICAgICAgICAgZHMgPSBwICogKGRPW3Ew",
        "OnExXSBAIFZfYy5UIC0gRFtxMDpxMSwgTm9uZV0pICAjIGRTID0gUCAqIChkUCAtIEQpCiAgICAgICAgICAgIGRRW3EwOnEx",
        "XSArPSBkcyBAIEtfYyAqIHNjYWxlCiAgICAgICAgICAgIGRLW2swOmsxXSArPSBkcy5UIEAgUVtxMDpxMV0gKiBzY2FsZQog",
        "ICAgcmV0dXJuIGRRLCBkSywgZFY=",
    ),
    "Exercise 10": (
        "IyBFeGVyY2lzZSAxMDogVGhlIGJvb2trZWVwaW5nIG9mIGEgcGFnZWQgS1YgY2FjaGUuIGJvb2sgaG9sZHMgYmxvY2tfc2l6",
        "ZSwgcmVmcyAoYSByZWZlcmVuY2UgY291bnQKIyBwZXIgcGh5c2ljYWwgYmxvY2ssIDAgPSBmcmVlKSwgdGFibGVzIChzZXF1",
        "ZW5jZSAtPiBpdHMgcGh5c2ljYWwgYmxvY2tzKSBhbmQgbGVuZ3RocyAoc2VxdWVuY2UgLT4KIyB0b2tlbnMgaGVsZCkuIFJl",
        "c2VydmUgc2xvdHMgZm9yIG5fdG9rZW5zIG1vcmUgdG9rZW5zIG9mIHNlcXVlbmNlLCBvbmUgdG9rZW4gYXQgYSB0aW1lOiB0",
        "b2tlbiBwIGdvZXMKIyB0byBzbG90ICh0YWJsZVtwIC8vIGJsb2NrX3NpemVdLCBwICUgYmxvY2tfc2l6ZSkuIFdoZW4gcCAl",
        "IGJsb2NrX3NpemUgPT0gMCwgYXBwZW5kIHRoZSBsb3dlc3QgZnJlZQojIGJsb2NrIChjb3VudCAxKS4gT3RoZXJ3aXNlLCBp",
        "ZiB0aGUgbGFzdCBibG9jayBpcyBzaGFyZWQgKGNvdW50ID4gMSksIGNvcHkgaXQgb24gd3JpdGUgZmlyc3Q6IHRha2UgdGhl",
        "CiMgbG93ZXN0IGZyZWUgYmxvY2ssIGFwcGVuZCAob2xkLCBuZXcpIHRvIGNvcGllcywgcHV0IG5ldyBpbiB0aGUgdGFibGUs",
        "IG1vdmUgb25lIHJlZmVyZW5jZSBmcm9tIG9sZCB0bwojIG5ldy4gUmFpc2UgVmFsdWVFcnJvciBiZWZvcmUgY2hhbmdpbmcg",
        "YW55dGhpbmcgd2hlbiB0b28gZmV3IGJsb2NrcyBhcmUgZnJlZS4gUmV0dXJuIChib29rLCBzbG90cywgY29waWVzKS4KZGVm",
        "IHJlc2VydmVfc2xvdHMoYm9vaywgc2VxdWVuY2UsIG5fdG9rZW5zKToKICAgICIiIlNsb3RzIGZvciBuX3Rva2VucyBtb3Jl",
        "IHRva2VucyBvZiBzZXF1ZW5jZSBpbiBhIHBhZ2VkIEtWIGNhY2hlOiAodGhlIG5ldyBib29rLCBzbG90cywgY29waWVzIHRv",
        "IG1ha2UpLiIiIgogICAgbl90b2tlbnMgPSBfcmVzZXJ2ZV9hcmdzKHNlcXVlbmNlLCBuX3Rva2VucykKICAgIHNpemUsIHJl",
        "ZnMgPSBib29rWyJibG9ja19zaXplIl0sIGxpc3QoYm9va1sicmVmcyJdKQogICAgdGFibGVzLCBsZW5ndGhzID0ge25hbWU6",
        "IGxpc3QodGFibGUpIGZvciBuYW1lLCB0YWJsZSBpbiBib29rWyJ0YWJsZXMiXS5pdGVtcygpfSwgZGljdChib29rWyJsZW5n",
        "dGhzIl0pCiAgICB0YWJsZSwgbGVuZ3RoID0gdGFibGVzLnNldGRlZmF1bHQoc2VxdWVuY2UsIFtdKSwgbGVuZ3Rocy5nZXQo",
        "c2VxdWVuY2UsIDApCiAgICBzaGFyZWRfdGFpbCA9IGxlbmd0aCAlIHNpemUgIT0gMCBhbmQgcmVmc1t0YWJsZVstMV1dID4g",
        "MSAgIyB0aGUgbmV4dCB0b2tlbiB3b3VsZCB3cml0ZSBpbnRvIGEgc2hhcmVkIGJsb2NrCiAgICBuZWVkZWQgPSAtKC0obGVu",
        "Z3RoICsgbl90b2tlbnMpIC8vIHNpemUpIC0gbGVuKHRhYmxlKSArIHNoYXJlZF90YWlsICAjIG5ldyBibG9ja3MsIHBsdXMg",
        "b25lIGNvcHkKICAgIGlmIG5lZWRlZCA+IHJlZnMuY291bnQoMCk6CiAgICAgICAgcmFpc2UgVmFsdWVFcnJvcihmInNlcXVl",
        "bmNlIHtzZXF1ZW5jZSFyfSBuZWVkcyB7bmVlZGVkfSBmcmVlIGJsb2NrcyBmb3Ige25fdG9rZW5zfSB0b2tlbnMsIHtyZWZz",
        "LmNvdW50KDApfSBhcmUgZnJlZTsgIgogICAgICAgICAgICAgICAgICAgICAgICAgInJlbGVhc2UgYSBmaW5pc2hlZCBzZXF1",
        "ZW5jZSBmaXJzdCIpCiAgICBzbG90cywgY29waWVzID0gW10sIFtdCiAgICBmb3IgcCBpbiByYW5nZShsZW5ndGgsIGxlbmd0",
        "aCArIG5fdG9rZW5zKToKICAgICAgICBpZiBwICUgc2l6ZSA9PSAwOiAgIyB0aGUgbGFzdCBibG9jayBpcyBmdWxsIChvciB0",
        "aGVyZSBpcyBub25lKTogdGFrZSB0aGUgbG93ZXN0IGZyZWUgYmxvY2sKICAgICAgICAgICAgdGFibGUuYXBwZW5kKHJlZnMu",
        "aW5kZXgoMCkpCiAgICAgICAgICAgIHJlZnNbdGFibGVbLTFdXSA9IDEKICAgICAgICBlbGlmIHJlZnNbdGFibGVbLTFdXSA+",
        "IDE6ICAjIHRoZSBmaXJzdCBkaXZlcmdlbnQgdG9rZW46IGNvcHkgdGhlIHNoYXJlZCBibG9jayBiZWZvcmUgd3JpdGluZyBp",
        "bnRvIGl0CiAgICAgICAgICAgIG5ldyA9IHJlZnMuaW5kZXgoMCkKICAgICAgICAgICAgY29waWVzLmFwcGVuZCgodGFibGVb",
        "LTFdLCBuZXcpKQogICAgICAgICAgICByZWZzW3RhYmxlWy0xXV0sIHJlZnNbbmV3XSA9IHJlZnNbdGFibGVbLTFdXSAtIDEs",
        "IDEKICAgICAgICAgICAgdGFibGVbLTFdID0gbmV3CiAgICAgICAgc2xvdHMuYXBwZW5kKCh0YWJsZVstMV0sIHAgJSBzaXpl",
        "KSkKICAgIGxlbmd0aHNbc2VxdWVuY2VdID0gbGVuZ3RoICsgbl90b2tlbnMKICAgIHJldHVybiB7ImJsb2NrX3NpemUiOiBz",
        "aXplLCAicmVmcyI6IHJlZnMsICJ0YWJsZXMiOiB0YWJsZXMsICJsZW5ndGhzIjogbGVuZ3Roc30sIHNsb3RzLCBjb3BpZXM=",
    ),
}.items()}
# builder:end sha256=b40b2f3eab9df1a7347081b176f33b193da86d331d234cbe6878c5cab9260add

# %% tags=["hide-input"]
# @title Diagram toolkit: the lesson's box-and-arrow diagrams, drawn with matplotlib (drawing code only; run it, reading it is optional).
# builder:begin inline srgb_to_linear
def srgb_to_linear(color):
    """The three channels of an opaque colour (any matplotlib colour) without sRGB's gamma (IEC 61966-2-1), each from 0 to 1."""
    from matplotlib.colors import to_rgb

    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color))
# builder:end sha256=b56e7f47d34dc59d22b573b8f7365ee5e8fe9af164524ea2e3c056559b2733cc
# builder:begin inline contrast_ratio
def contrast_ratio(first, second):
    """The WCAG 2.2 contrast ratio of two opaque colours: 1 for equal luminance, 21 for black on white."""

    def luminance(color):
        red, green, blue = srgb_to_linear(color)
        return 0.2126 * red + 0.7152 * green + 0.0722 * blue

    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)
# builder:end sha256=82e43536a2d7f122c1dd40424ccdc5d05d71d66a97181cf27b001ea2b18088b7
# builder:begin inline text_color_on
def text_color_on(fill):
    """White, ink or black, the first whose WCAG contrast ratio with the opaque ``fill`` reaches 4.5:1."""
    return next((c for c in ("white", Palette.INK) if contrast_ratio(c, fill) >= 4.5), "black")
# builder:end sha256=3fd460341cf99258a2a955712fab945ce16bf097a117f36d31e0de6aa322525d
# builder:begin inline diagram_canvas
def diagram_canvas(width, height):
    """A blank figure whose data units are inches of a width x height drawing, (0, 0) at the bottom left.

    A drawing wider than the shown width is made smaller as a whole, so its text is shown at the size it names.
    """
    import matplotlib.pyplot as plt

    width = require_real("width", width, minimum=0.0, strict_minimum=True)
    height = require_real("height", height, minimum=0.0, strict_minimum=True)
    scale = min(1.0, Palette.SHOWN_WIDTH_PX / (width * Palette.DPI))
    fig = plt.figure(figsize=(width * scale, height * scale))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return fig, ax
# builder:end sha256=0bbc84eb7be35d559f6d79fb078f55f7cc9e3daa3e31cf43af1b88cdeb1dd238
# builder:begin inline diagram_box
def diagram_box(ax, x, y, width, height, text, color, *, solid=False, dashed=False, size=9, weight="normal"):
    """A rounded box centred at (x, y) holding centred text: tinted in ``color`` (or solid, with text that contrasts with it)."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import FancyBboxPatch

    ax.add_artist(FancyBboxPatch(
        (x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0,rounding_size=0.06",
        facecolor=color if solid else to_rgba(color, 0.16), edgecolor=color, linewidth=1.1,
        linestyle=(0, (3, 2)) if dashed else "-",
    ))
    ax.text(x, y, text, ha="center", va="center", fontsize=size, weight=weight,
            color=text_color_on(color) if solid else Palette.INK, linespacing=1.15)
# builder:end sha256=8af424e91a4e833962af6b761c621c058e38bf069bcd8442f11d7e36a0337c7c
# builder:begin inline diagram_arrow
def diagram_arrow(ax, start, end, *, color=Palette.MUTED, text=None, at=0.5, shift=(0.0, 0.0), dashed=False, width=1.1, size=9):
    """An arrow from ``start`` to ``end`` (inches), with an optional label at fraction ``at`` along it, moved by ``shift``."""
    ax.annotate("", xy=end, xytext=start, arrowprops={
        "arrowstyle": "-|>", "color": color, "linewidth": width, "shrinkA": 0, "shrinkB": 0,
        "mutation_scale": 9, "linestyle": (0, (3, 2)) if dashed else "-",
    })
    if text:
        x = start[0] + at * (end[0] - start[0]) + shift[0]
        y = start[1] + at * (end[1] - start[1]) + shift[1]
        ax.text(x, y, text, ha="center", va="center", fontsize=size, color=color, linespacing=1.1)
# builder:end sha256=e0f0824974b3437840aede88ba23385cf5c31869c7e1fc4e3b1f92adb73398a8
# builder:begin inline draw_taxonomy
def draw_taxonomy(language="en"):
    """The map of efficient designs: the problem, three strategies, their designs, and hybrids."""
    from functools import partial

    fig, ax = diagram_canvas(8.6, 3.7)
    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    diagram_box(ax, 4.3, 3.3, 6.4, 0.5, t("Long context is expensive: compute grows with n², memory with n",
                                          "Длинный контекст дорог: вычисления растут как n², память как n"), Palette.RED, solid=True, size=10)
    columns = (
        (1.45, Palette.BLUE, t("Look at fewer tokens", "Читать меньше токенов"),
         (t("sparse: local + global,\nstrided, a learned shortlist", "разреженное: локальное +\nглобальное, с шагом, отбор"),
          t("sliding window", "скользящее окно"))),
        (4.3, Palette.GREEN, t("Keep a fixed-size summary", "Хранить сводку\nфиксированного размера"),
         (t("linear attention", "линейное внимание"), t("state-space models\n(Mamba)", "модели пространства\nсостояний (Mamba)"))),
        (7.15, Palette.ORANGE, t("Store the past compactly", "Хранить прошлое компактно"),
         (t("GQA / MQA: fewer KV heads", "GQA / MQA: меньше KV-голов"), t("latent KV (MLA)", "латентный KV (MLA)"),
          t("quantized KV: fewer bits", "квантованный KV: меньше бит"))),
    )
    leaf_y = (1.85, 1.2, 0.55)
    for x, color, title, leaves in columns:
        diagram_arrow(ax, (x + (4.3 - x) * 0.55, 3.05), (x, 2.72))
        diagram_box(ax, x, 2.48, 2.6, 0.46, title, color, size=9.5, weight="bold")
        spine = x - 1.18
        ax.plot([spine, spine], [2.25, leaf_y[len(leaves) - 1]], color=color, linewidth=1.1)
        for y, leaf in zip(leaf_y, leaves):
            diagram_arrow(ax, (spine, y), (x - 1.0, y), color=color)
            diagram_box(ax, x + 0.17, y, 2.34, 0.5, leaf, color, dashed=True, size=9)
    diagram_box(ax, 2.9, 0.38, 2.2, 0.5, t("hybrids: a few attention\nlayers among SSM layers", "гибриды: немного слоёв\nвнимания среди SSM"),
                Palette.PURPLE, size=9)
    diagram_arrow(ax, (1.62, 0.95), (2.3, 0.63), color=Palette.PURPLE)
    diagram_arrow(ax, (4.47, 0.95), (3.55, 0.63), color=Palette.PURPLE)
    return fig
# builder:end sha256=bf26777a5fadebbfc59ea39293422a2089074e3fd099d66b2c18f0ef2c10dd4a
# builder:begin inline draw_kv_trip
def draw_kv_trip(bytes_per_token, layers, language="en"):
    """One decoding step: the new token's key and value join the cache, its query reads every cached key and value."""
    from functools import partial
    from matplotlib.patches import Rectangle

    fig, ax = diagram_canvas(8.6, 3.0)
    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    slots = ("₁", "₂", "₃", "…", "ₙ₋₁", "ₙ")  # subscripts as characters: no mathtext to parse
    xs = [0.75 + 0.8 * i for i in range(len(slots))]
    ax.add_artist(Rectangle(
        (0.2, 0.55), 5.1, 1.35, facecolor=Palette.PAPER, edgecolor=Palette.BORDER, linewidth=1))
    ax.text(0.3, 1.75, t("KV cache of one layer", "KV-кэш одного слоя"), fontsize=9, weight="bold", va="center")
    for i, (x, label) in enumerate(zip(xs, slots)):
        new = i == len(slots) - 1
        for y, row in ((1.36, "k"), (0.86, "v")):
            text = label if label == "…" else row + label
            diagram_box(ax, x, y, 0.62, 0.36, text, Palette.ORANGE if new else Palette.BLUE, solid=new, size=10)
    diagram_box(ax, xs[-1], 2.62, 1.5, 0.42, t("new token n", "новый токен n"), Palette.ORANGE, solid=True)
    diagram_arrow(ax, (xs[-1], 2.41), (xs[-1], 1.56), color=Palette.ORANGE,
                  text=t("its key and value\nare appended", "его ключ и значение\nдописываются"), at=0.45, shift=(-1.0, 0))
    diagram_box(ax, 7.45, 2.62, 1.3, 0.42, t("its query q", "его запрос q"), Palette.ORANGE)
    diagram_arrow(ax, (xs[-1] + 0.75, 2.62), (6.8, 2.62), color=Palette.ORANGE)
    diagram_box(ax, 7.45, 1.35, 2.0, 0.8, t("scores q·k for all\nn keys, softmax,\nmix the n values",
                                           "оценки q·k для всех\nn ключей, softmax,\nсмесь n значений"), Palette.BLUE, size=9)
    diagram_arrow(ax, (7.45, 2.41), (7.45, 1.75), color=Palette.ORANGE)
    diagram_arrow(ax, (5.3, 1.2), (6.45, 1.2), color=Palette.BLUE, text=t("reads all n", "читает все n"), shift=(0, 0.14))
    diagram_box(ax, 7.45, 0.35, 2.0, 0.4, t("output for token n", "выход для токена n"), Palette.BLUE, solid=True)
    diagram_arrow(ax, (7.45, 0.95), (7.45, 0.55), color=Palette.BLUE)
    kib = bytes_per_token / 1024
    ax.text(0.2, 0.28, t(f"one key + one value per KV head, in each of {layers} layers:\n{kib:,.0f} KiB per token, kept while the conversation lasts",
                         f"по ключу и значению на KV-голову в каждом из {layers} слоёв:\n{kib:,.0f} КиБ на токен, пока идёт диалог"),
            fontsize=9, color=Palette.MUTED, va="center", linespacing=1.25)
    return fig
# builder:end sha256=3f2b2fbfc356127c4611f65d1dfc1e855711e4649ef3be769be32b2d7812c650

print("diagram toolkit ready:", ", ".join(name for name in dir() if name.startswith("draw_")))

# %% [markdown]
# ## What you need from before
#
# - **Attention as Module 3 builds it**: scores $QK^\top / \sqrt{d_k}$, a softmax along each row, a
#   weighted sum of the values; several heads; a causal mask that hides the future.
# - **NumPy**: matrix products with `@`, broadcasting, and the `axis=` argument of `max` and `sum`.
#   PyTorch appears in sections 4, 7 and 8, to compare our code with `F.scaled_dot_product_attention`
#   and its autograd, and in section 9, where Module 3's model runs.
# - **Bytes**: a 16-bit number takes 2 bytes; 1 KiB is 1,024 bytes and 1 GiB is $1024^3$ bytes, while
#   1 GB is $10^9$ bytes.
#
# Nothing else is assumed. Module 5.2 continues from here: windows, sparse patterns, linear
# attention, state-space models, and latent and quantized caches.
#
# **Symbols used throughout.** One symbol, one meaning. Each section introduces its other symbols in
# its own table, where they are first needed. Code names are in `code font` where they differ.
#
# | Symbol | Meaning |
# |---|---|
# | $n$ | context length in tokens |
# | $i$, $j$ | query position, key position |
# | $L$ | layers |
# | $H$, $H_{kv}$ | query heads, key-value heads per layer |
# | $d_k$, $d_v$, $d_h$, $d$ | key, value and head widths ($d$ when they are equal) |
# | $b$ | bytes per stored number |
#
# **Words.** *Prefill*: the first forward pass over the whole prompt, which fills the KV cache; it
# pays the compute bill. *Decode*: generating one token at a time, each new query reading the
# cache; it pays the memory bill. *RoPE* (rotary position embedding, [Su et al., 2021](https://arxiv.org/abs/2104.09864)):
# position enters attention by rotating each query and key by an angle proportional to its
# position, so a score depends on the distance $i - j$. *Sink*: two things with one reason,
# StreamingLLM's first tokens (section 2) and gpt-oss's extra logit (section 3); a softmax row
# sums to 1, so a head with nothing to read must park its mass somewhere.

# %% [markdown]
# # Part 1 · The practitioner's guide
#
# **The whole module in one sentence.** A long context sends two bills, one for *compute*
# (every query is scored against every key, so the work grows with the square of the length)
# and one for *memory* (every past token's keys and values stay in the KV cache, so memory grows
# with the length), and each "efficient attention" design is a different deal about which tokens
# are kept exactly, which are summarised, and how compactly they are stored.
#
# **When you need this.** Whenever the context length is part of your design: a repository in
# the prompt, a conversation that lasts all day, an agent that runs for hundreds of steps, or a
# choice between two models whose cards say "grouped-query", "sliding window", "attention sinks",
# "hybrid Mamba" or "latent attention". Those words decide what one conversation costs and what
# the model can still look up. For prompts of a few thousand tokens, plain attention is cheap and
# exact, and nothing below beats it.
#
# **How to choose.** Start from what the task must *find*, not from the advertised window.
#
# - Exact lookups across a long input (a function name in a repository, a clause in a
#   contract): keep full attention in enough layers, and budget the cache.
# - Long, forward-moving text that never needs to quote the distant past (a transcript, a
#   stream): a window or a state-space model is far cheaper; sinks plus a window keep even a
#   full-attention model streaming.
# - Many concurrent long conversations on fixed hardware: the cache per token *is* your
#   capacity. Prefer fewer KV heads or a latent cache, then quantize the cache, then cap the
#   context you allow.
# - A context window claimed at 128k or more: test at the length you will use. RULER found that
#   of 17 long-context models, all claiming at least 32k tokens, only about half held up at 32k
#   ([Hsieh et al., 2024, COLM version](https://arxiv.org/abs/2404.06654); the first arXiv version
#   tested 10 models). *Lost in the Middle* found accuracy highest when the relevant passage sits
#   at the start or the end of the input and lowest in the middle
#   ([Liu et al., 2023](https://arxiv.org/abs/2307.03172)).
#
# The options side by side, with their numbers and what breaks, come after the lesson (Part 3), once
# each has been built.

# %%
# The running example of the whole module: Llama-3-8B's attention shape, with a 16-bit cache.
L8B, KV8B, D8B, BYTES16 = 32, 8, 128, 2
per_token = 2 * L8B * KV8B * D8B * BYTES16  # a key and a value, per layer, per KV head

# %%
show_figure(
    draw_taxonomy(language=LANGUAGE),
    "Read it from the top down. The red box is the problem both bills create; each column is one strategy against it, and the "
    "dashed boxes under it are the designs this module builds. The left column (blue) reads fewer tokens, the middle (green) "
    "swaps the growing cache for a fixed-size state, the right (orange) keeps every token in fewer bytes. The purple box at "
    "the bottom left is where two strategies meet: hybrids put a few attention or window layers among state-space layers.",
)


# %% [markdown]
# # Part 2 · How it works, from scratch
#
# Nine sections, each with the same beat: the idea, the formula with its symbols, the numbers
# by hand, the code, a figure, and a check that stops the notebook if anything is wrong. Ten
# exercises are marked along the way; each is followed by the contract check that judges it.
# Plan on 4 to 5 hours, counted this way: about 8,500 words of prose at 100 words a minute, slow
# because of the formulas (85 minutes); about 10 minutes per section to run and read its code and
# figures (90 minutes); and 8 to 12 minutes per exercise (80 to 120 minutes).
#
# ## 1. The two bills
#
# **Idea.** Think of a dinner where every new guest shakes hands with every guest already
# there (the scores), and the cloakroom keeps one coat per guest on every floor (the cache).
# Ten guests make 45 handshakes; a thousand make half a million. Attention pays both: the
# handshakes are the query-key scores, paid once per prompt, and the coats are the KV cache,
# paid for as long as the conversation stays open.
#
# $$\text{pairs} = n^2 \qquad\qquad \text{KV bytes} = 2 \cdot L \cdot H_{kv} \cdot d_h \cdot b \cdot n$$
#
# | Symbol | Meaning | Running example |
# |---|---|---|
# | $n$ | context length in tokens | 131,072 (128k) |
# | $n^2$ | query-key pairs per head per layer (a causal mask halves it; the growth is the same) | $1.7 \times 10^{10}$ |
# | $2$ | one key and one value per token | |
# | $L$ | layers, each with its own cache | 32 |
# | $H_{kv}$ | key/value heads per layer | 8 |
# | $d_h$ | numbers per head | 128 |
# | $b$ | bytes per stored number | 2 (16-bit) |
#
# **By hand.** One token costs $2 \cdot 32 \cdot 8 \cdot 128 \cdot 2 = 131{,}072$ bytes, 128 KiB.
# At $n = 131{,}072$ that is $2^{17} \cdot 2^{17} = 2^{34}$ bytes, about 17.2 GB, and
# $n^2 \approx 1.7 \times 10^{10}$ pairs. Going from 8k to 1M tokens multiplies the tokens by 128,
# the pairs by $128^2 = 16{,}384$, and the cache by 128: 137 GB, past one 80 GB GPU before a
# single weight is loaded.

# %%
def kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_value=2):
    """KV-cache bytes one token costs: a key and a value per KV head, per layer."""
    for name, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim), ("bytes_per_value", bytes_per_value)):
        require_int(name, value, minimum=1)
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def context_cost(n, layers=32, kv_heads=8, head_dim=128, bytes_per_value=2):
    """Both bills of an n-token context: pairs scored per head per layer, and KV-cache bytes."""
    n = require_int("n", n, minimum=1)
    return {"n": n, "pairs": n * n, "cache_bytes": n * kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_value)}


print(f"handshakes among 10 guests: {10 * 9 // 2}; among 1,000: {1000 * 999 // 2:,}")
CONTEXTS = (8_192, 131_072, 1_048_576)
bills = [context_cost(n) for n in CONTEXTS]
print(f"{'context':>10} {'pairs per head per layer':>26} {'KV cache (GB)':>14}")
for bill in bills:
    print(f"{bill['n']:>10,} {bill['pairs']:>26,} {bill['cache_bytes'] / GB:>14.1f}")
print(f"8k -> 1M: tokens x{CONTEXTS[2] // CONTEXTS[0]}, pairs x{bills[2]['pairs'] // bills[0]['pairs']:,}, cache x{bills[2]['cache_bytes'] // bills[0]['cache_bytes']}")

# %% tags=["hide-input"]
# @title The two bills by hand and against the frozen reference, and the bad inputs refused (checked; open to read)
expect("one layer, one KV head, one number of one byte: a key and a value cost 2 bytes", kv_bytes_per_token(1, 1, 1, 1), "==", 2)
expect("context_cost(1) with the running example's defaults: one pair, one token's 128 KiB", context_cost(1), "==", {"n": 1, "pairs": 1, "cache_bytes": per_token})
REFERENCE.check("two_bills.contexts", [b["n"] for b in bills])
REFERENCE.check("two_bills.pairs", [b["pairs"] for b in bills])
REFERENCE.check("two_bills.cache_bytes", [b["cache_bytes"] for b in bills])
expect('bills[1]["cache_bytes"] == 2**34', bills[1]["cache_bytes"], "==", 2**34)
expect_raises(ValueError, context_cost, 0, match="n")
expect_raises(TypeError, kv_bytes_per_token, 32, 8.0, 128, match="kv_heads")
expect_raises(ValueError, kv_bytes_per_token, 32, 8, 128, 0, match="bytes_per_value");


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_two_bills (matplotlib only; reading it is optional)
def plot_two_bills(bills, gpu_bytes=80 * 10**9, language="en"):
    """Two panels: pairs scored (log scale) and KV-cache gigabytes per context, with one GPU's memory."""
    gpu_bytes = require_int("gpu_bytes", gpu_bytes, minimum=1)
    labels = [f"{b['n'] // 1024:,}k" if b["n"] < 2**20 else f"{b['n'] // 2**20}M" for b in bills]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.3, 2.9))
    left.bar(labels, [b["pairs"] for b in bills], color=Palette.RED)
    log_scale(left, "y")
    left.set_title(localized(language, "Compute: pairs grow with n²", "Вычисления: пары растут как n²"))
    left.set_ylabel(localized(language, "pairs per head per layer", "пар на голову и слой"))
    gigabytes = [b["cache_bytes"] / 10**9 for b in bills]
    right.bar(labels, gigabytes, color=Palette.BLUE)
    for x, value in enumerate(gigabytes):
        right.text(x, value + 3, f"{value:.1f} " + localized(language, "GB", "ГБ"), ha="center", fontsize=9)
    right.axhline(gpu_bytes / 10**9, color=Palette.MUTED, linestyle="--", linewidth=1)
    right.text(-0.45, gpu_bytes / 10**9 + 5, localized(language, "one 80 GB GPU", "один GPU на 80\u00a0ГБ"), color=Palette.MUTED, fontsize=9)
    right.set_ylim(0, 165)
    right.set_title(localized(language, "Memory: cache grows with n", "Память: кэш растёт как n"))
    right.set_ylabel(localized(language, "KV cache, GB", "KV-кэш, ГБ"))
    for ax in (left, right):
        ax.set_xlabel(localized(language, "context length", "длина контекста"))
    fig.subplots_adjust(wspace=0.4, left=0.09, right=0.98, bottom=0.18, top=0.88)
    return fig


# %%
show_figure(
    plot_two_bills(bills, language=LANGUAGE),
    "Left: query-key pairs per head per layer on a log axis, one bar per context length; each step right multiplies "
    "the bar by 256, then by 64. Right: the KV cache of one conversation in GB on a linear axis, with one 80 GB GPU "
    "dashed. The 1M-token bar crosses the line before any weight is loaded.",
)
expect('bills[2]["cache_bytes"] > 80 * GB', bills[2]["cache_bytes"], ">", 80 * GB)
report_section("The two bills", globals())

# %% [markdown]
# The compute bill is paid once per prompt, at prefill, and exact tiling (sections 6 to 8) makes
# it faster and smaller in memory without changing its size. The memory bill is paid for as
# long as a conversation is open and decides how many users one GPU serves; that is why most of
# the designs below attack the cache.

# %%
show_figure(
    draw_kv_trip(per_token, L8B, language=LANGUAGE),
    "Follow one decoding step from the orange box at the top. Token n's key and value are written into the last "
    "slot of the cache (orange, solid); its query goes right, is scored against all n keys, and the softmax weights mix "
    "all n values into token n's output. The other slots (blue, tinted) are read, never recomputed: that is the compute the cache "
    "saves, and the memory it costs, in every layer, for as long as the conversation lasts.",
)


# %% [markdown]
# ## 2. Masks: causal, a window, and sinks
#
# **Idea.** A mask says which keys each query may read. Written *additively*, it is a matrix
# added to the scores before the softmax: 0 where reading is allowed, $-\infty$ where it is not,
# so a blocked key gets weight $e^{-\infty} = 0$ exactly. A finite entry is a *bias* (ALiBi and
# relative-position schemes use them). Three masks matter here: *causal* (never the future), a
# *sliding window* (only the last $w$ tokens, the query's own included), and a window with
# *sinks*: StreamingLLM keeps the first $n_{\text{sink}}$ tokens visible forever, because trained
# models park a lot of attention on them and fall apart when they vanish. Section 3 meets the
# other kind of sink, gpt-oss's learned logit: both exist because a softmax row must sum to 1,
# so a head with nothing useful to read must still put its mass somewhere.
#
# $$M_{ij} = 0 \;\text{ if }\; j \le i \;\text{ and }\; \left(i - j < w \;\text{ or }\; j < n_{\text{sink}}\right), \qquad M_{ij} = -\infty \;\text{ otherwise}$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $i$, $j$ | query position (row) and key position (column) | row 23 |
# | $i - j$ | how far back key $j$ is; negative means the future | |
# | $w$ | window: how many recent keys a query reads, itself included | 8 |
# | $n_{\text{sink}}$ | number of sink keys at the start that stay visible (`n_sink`) | 2 |
# | $M_{ij}$ | the additive mask entry | 0 or $-\infty$ |
#
# **By hand.** With $n = 24$, $w = 8$, $n_{\text{sink}} = 2$, query 23 reads keys 16 to 23 (eight of them,
# because $23 - 16 = 7 < 8$) plus the sinks 0 and 1; key 15 is blocked ($23 - 15 = 8$). A full
# causal mask allows $24 \cdot 25 / 2 = 300$ pairs.

# %% tags=["exercise"]
# Exercise 1: Build the additive mask. Return an (n, n) float array with 0.0 where query i may
# read key j and -inf where it may not: never a future key; with a window, only keys with
# i - j < window; with n_sink > 0, the first n_sink keys stay readable (but still never the future).
def make_mask(n, window=None, n_sink=0):
    """Additive causal mask [n, n]: 0.0 where query i may read key j, -inf elsewhere; optional window and sinks."""
    n = require_int("n", n, minimum=1)
    if window is not None:
        window = require_int("window", window, minimum=1)
    n_sink = require_int("n_sink", n_sink, minimum=0, maximum=n)
    if n_sink and window is None:
        raise ValueError("n_sink only matters with a window (without one every earlier key is visible); pass window=...")
    require_budget("the additive mask", (n, n))  # float64 entries, refused before anything is allocated
    # Your code here.
    raise NotImplementedError('Exercise 1: see the instructions above')


# %%
check_exercise("Exercise 1", check_additive_mask_contract, make_mask, globals())

# %%
MASK_N = 24
mask_causal, mask_window, mask_sinks = make_mask(MASK_N), make_mask(MASK_N, window=8), make_mask(MASK_N, window=8, n_sink=2)
for name, m in (("causal", mask_causal), ("window 8", mask_window), ("window 8 + 2 sinks", mask_sinks)):
    print(f"{name:20s} allowed pairs: {int((m == 0).sum()):4d}   row 23 reads keys {np.flatnonzero(m[23] == 0).tolist()}")
expect("(mask_causal == 0).sum() == MASK_N * (MASK_N + 1) // 2", (mask_causal == 0).sum(), "==", MASK_N * (MASK_N + 1) // 2)

# %% tags=["hide-input"]
# @title The masks by hand: the window's edge, the sinks, one token; and the bad inputs refused (checked; open to read)
expect("np.isneginf(mask_window[23, 15])", np.isneginf(mask_window[23, 15]))
expect("mask_window[23, 16] == 0", mask_window[23, 16], "==", 0)
expect("mask_sinks[23, 0] == 0", mask_sinks[23, 0], "==", 0)
expect("mask_sinks[23, 1] == 0", mask_sinks[23, 1], "==", 0)
expect("np.isneginf(mask_sinks[23, 2])", np.isneginf(mask_sinks[23, 2]))
expect("make_mask(1) is the single allowed pair [[0.0]]", make_mask(1).tolist(), "==", [[0.0]])
expect_raises(ValueError, make_mask, 4, n_sink=1, match="window")
expect_raises(ValueError, make_mask, 4, window=0, match="window")
expect_raises(TypeError, make_mask, 4.0, match="n")
expect_raises(ValueError, make_mask, 4, window=2, n_sink=-1, match="n_sink")
expect_raises(ValueError, make_mask, 131_072, match="budget");  # 128 GiB of float64: refused before allocating


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_masks (matplotlib only; reading it is optional)
# builder:begin inline plot_masks
def plot_masks(panels, language="en"):
    """One heatmap per (title, additive mask): dark where a query may read a key."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(panels), figsize=(min(2.6 * len(panels), 8.3), 2.7))  # at most 800 px: text shown at its size
    for ax, (title, mask) in zip(np.atleast_1d(axes), panels):
        ax.imshow(np.isfinite(mask), cmap="Blues", vmin=0, vmax=1.25, interpolation="nearest")
        ax.set_title(f"{title}\n{int(np.isfinite(mask).sum())} " + localized(language, "pairs", "пар"), fontsize=10)
        ax.set_xlabel(localized(language, "key j", "ключ j"))
        ax.set_xticks(range(0, len(mask), 5)), ax.set_yticks(range(0, len(mask), 5))
        ax.grid(False)
    np.atleast_1d(axes)[0].set_ylabel(localized(language, "query i", "запрос i"))
    fig.subplots_adjust(wspace=0.3, left=0.07, right=0.99, bottom=0.19, top=0.83)
    return fig
# builder:end sha256=65c30c8bead97007f0fc51e461624556cb19958cf62b2f1e568a5e962aa1f2a9


# %%
show_figure(
    plot_masks([
        (localized(LANGUAGE, "causal", "каузальная"), mask_causal),
        (localized(LANGUAGE, "window w = 8", "окно w = 8"), mask_window),
        (localized(LANGUAGE, "window 8 + 2 sinks", "окно 8 + 2 стока"), mask_sinks),
    ], language=LANGUAGE),
    "Each panel is a 24 x 24 mask: rows are queries, columns are keys, dark cells are allowed. Causal is a solid "
    "lower triangle; the window keeps a diagonal band eight cells wide; sinks add the first two columns back to "
    "every row below them. No panel has a dark cell above the diagonal.",
)
report_section("Masks", globals())


# %% [markdown]
# ## 3. Attention with a sink logit, and rows with nothing to read
#
# **Idea.** gpt-oss adds one learned logit per **query** head, 64 per layer, to the softmax's
# denominator; it is appended to each row's logits before the softmax and dropped after it
# ([openai/gpt-oss](https://github.com/openai/gpt-oss), `gpt_oss/torch/model.py`). It acts like
# an extra key whose value vector is zero: a head can put weight "nowhere" instead of being forced
# to spread a full unit of probability over tokens. `F.scaled_dot_product_attention` has no
# argument for it, so we write attention ourselves. The same code must decide what to do with a
# row whose every key is blocked (padding, or an aggressive mask): softmax over nothing is
# $0/0$. Our policy is an error by default and an exact zero row on request. PyTorch's own
# kernel returns zeros from version 2.5 on; 2.4 and older returned NaN.
#
# $$p_{ij} = \frac{e^{s_{ij}}}{e^{\sigma_h} + \sum_{k} e^{s_{ik}}}, \qquad o_i = \sum_j p_{ij}\, v_j, \qquad \text{sink share} = \frac{e^{\sigma_h}}{e^{\sigma_h} + \sum_{k} e^{s_{ik}}}$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $s_{ij}$ | scaled score plus mask: $q_i \cdot k_j / \sqrt{d_k} + M_{ij}$ | 0 for 128 equal keys |
# | $\sigma_h$ | the sink logit of query head $h$ (learned) | 0, 2 or 5 |
# | $p_{ij}$ | weight of key $j$ for query $i$; the row sums to $1 -$ sink share | |
# | $o_i$ | output: the weighted values; the sink's value is the zero vector | |
#
# **By hand.** 128 keys that all score 0 give a denominator $e^{\sigma} + 128$. With
# $\sigma = 0$ the sink takes $1/129 = 0.78\%$; with $\sigma = 2$, $7.39 / 135.39 = 5.46\%$; with
# $\sigma = 5$, $148.4 / 276.4 = 53.69\%$ of the mass, and every token's weight shrinks by the
# same factor.

# %%
def additive_mask(allowed):
    """Turn a boolean mask (True = may read) into an additive one (0.0 / -inf)."""
    allowed = as_numpy("allowed", allowed)
    if allowed.dtype != bool:
        raise TypeError(f"allowed must be a boolean array (True = may read), got dtype {allowed.dtype}")
    return np.where(allowed, 0.0, -np.inf)


# %% tags=["hide-input"]
# @title The argument check of the mask in the exercise below (reading it is optional)
def _as_additive(mask, shape, dtype):
    """Validate an additive mask (finite biases and -inf) and broadcast it to ``shape``."""
    mask = as_numpy("mask", mask)
    if mask.dtype == bool:
        raise TypeError("mask is additive (0.0 = allowed, -inf = blocked); convert a boolean mask with additive_mask(allowed)")
    if mask.dtype.kind not in "iuf":
        raise TypeError(f"mask must hold real numbers, got dtype {mask.dtype}")
    mask = mask.astype(dtype, copy=False)
    if np.isnan(mask).any() or np.isposinf(mask).any():
        raise ValueError("mask may hold finite biases and -inf, but not NaN or +inf")
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to the scores' shape {shape}") from None


# %% tags=["exercise"]
# Exercise 2: Write softmax attention with a sink. The scores, Q K^T / sqrt(d_k) plus the mask,
# are computed for you with their overflow checks. The sink (already broadcast to [..., T_q, 1])
# joins each row's softmax as an extra logit whose value vector is zero. Subtract the row max
# (over tokens AND sink) before exp. A row with no allowed key and no sink raises ValueError when
# empty_row == "error", with a message that contains empty_row='zero' (the way out), and is all zeros
# for "zero".
def sdpa(Q, K, V, mask=None, *, sink=None, empty_row="error", return_weights=False):
    """Softmax attention in NumPy with an additive mask, an optional sink logit and an empty-row policy.

    Q [..., T_q, d_k], K [..., T_k, d_k], V [..., T_k, d_v]; the mask broadcasts to [..., T_q, T_k]
    (0 or a finite bias = allowed, -inf = blocked); the sink broadcasts to [..., T_q, 1].
    Returns the output [..., T_q, d_v], and the token weights too when return_weights is True.
    """
    Q, K, V = require_array("Q", Q, min_ndim=2), require_array("K", K, min_ndim=2), require_array("V", V, min_ndim=2)
    require_choice("empty_row", empty_row, ("error", "zero"))
    return_weights = require_bool("return_weights", return_weights)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share d_k (last axis); got {Q.shape[-1]} and {K.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must hold the same number of keys (axis -2); got {K.shape[-2]} and {V.shape[-2]}")
    try:
        batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
        np.broadcast_shapes(batch, V.shape[:-2])
    except ValueError:
        raise ValueError(f"batch axes of Q {Q.shape}, K {K.shape} and V {V.shape} do not broadcast") from None
    dtype = np.result_type(Q.dtype, K.dtype, V.dtype, np.float32)  # float16 is computed in float32
    Q, K, V = (x.astype(dtype, copy=False) for x in (Q, K, V))
    shape = batch + (Q.shape[-2], K.shape[-2])  # (..., T_q, T_k)
    require_budget("the score matrix", shape, itemsize=dtype.itemsize)  # refused before Q @ K^T is formed
    if mask is not None:
        mask = _as_additive(mask, shape, dtype)
    if sink is not None:
        sink = require_array("sink", sink).astype(dtype, copy=False)
        try:
            sink = np.broadcast_to(sink, shape[:-1] + (1,))  # (..., T_q, 1): one logit per head and query
        except ValueError:
            raise ValueError(f"sink of shape {sink.shape} does not broadcast to {shape[:-1] + (1,)}; use shape (H, 1, 1) per head") from None
    with np.errstate(over="ignore", invalid="ignore"):
        scores = (Q @ np.swapaxes(K, -1, -2)) * dtype.type(1.0 / math.sqrt(Q.shape[-1]))  # (..., T_q, T_k)
        if not np.isfinite(scores).all():
            raise FloatingPointError("Q @ K^T overflowed; rescale Q and K (or compute in float64)")
        if mask is not None:
            biased = scores + mask
            if np.any(np.isfinite(mask) & ~np.isfinite(biased)):
                raise FloatingPointError("adding a finite mask bias overflowed the score; use a smaller bias (or -inf to block)")
            scores = biased
    # Your code here.
    raise NotImplementedError('Exercise 2: see the instructions above')
    return (output, weights) if return_weights else output


# %%
check_exercise("Exercise 2", check_sink_attention_contract, sdpa, globals())

# %%
rng = np.random.default_rng(SEED)
Q24, K24, V24 = (rng.standard_normal((MASK_N, 16)) for _ in range(3))
out, weights = sdpa(Q24, K24, V24, mask_causal, return_weights=True)

# Empty rows: the default refuses, "zero" returns an exact zero row and leaves the others alone.
holey = mask_causal.copy()
holey[5] = -np.inf
try:
    sdpa(Q24, K24, V24, holey)
except ValueError as refused:
    print("default policy:", str(refused)[:60], "...")
zero_out, zero_w = sdpa(Q24, K24, V24, holey, empty_row="zero", return_weights=True)

# The sink's share of 128 equal keys, and the sink as an extra column with a zero value.
shares = {logit: math.exp(logit) / (128 + math.exp(logit)) for logit in (0.0, 2.0, 5.0)}
for logit, share in shares.items():
    print(f"sink logit {logit:.0f}: sink share of 128 equal keys = {100 * share:.2f}%")

sink_logit = 1.3
out_sink, w_sink = sdpa(Q24, K24, V24, mask_causal, sink=sink_logit, return_weights=True)
extended = np.concatenate([Q24 @ K24.T / 4.0 + mask_causal, np.full((MASK_N, 1), sink_logit)], axis=1)  # d_k = 16
extended_w = np.exp(extended - extended.max(1, keepdims=True))
extended_w /= extended_w.sum(1, keepdims=True)
column_out = extended_w[:, :-1] @ V24  # the extra column's value vector is zero
print(f"sink vs extra zero-value column: max |difference| {np.abs(out_sink - column_out).max():.1e}")
expect("np.allclose(out_sink, column_out, atol=1e-12)", np.allclose(out_sink, column_out, atol=1e-12))

# %% tags=["hide-input"]
# @title Attention with a sink by hand and at its edges: weights, empty rows, sinks per head, wide scores; and the bad inputs refused (checked; open to read)
expect("out.shape == (MASK_N, 16)", out.shape, "==", (MASK_N, 16))
expect("np.allclose(weights.sum(-1), 1.0)", np.allclose(weights.sum(-1), 1.0))
for m in (mask_window, mask_sinks):
    expect("np.allclose(sdpa(Q24, K24, V24, m, return_weights=True)[1].sum(-1), 1.0)", np.allclose(sdpa(Q24, K24, V24, m, return_weights=True)[1].sum(-1), 1.0))
expect_raises(ValueError, sdpa, Q24, K24, V24, holey, match="empty_row='zero'")
expect("np.all(zero_out[5] == 0)", np.all(zero_out[5] == 0))
expect("np.all(zero_w[5] == 0)", np.all(zero_w[5] == 0))
expect("np.isfinite(zero_out).all()", np.isfinite(zero_out).all())
expect("np.allclose(np.delete(zero_out, 5, axis=0), np.delete(out, 5, axis=0))", np.allclose(np.delete(zero_out, 5, axis=0), np.delete(out, 5, axis=0)))
REFERENCE.check("sink_share.logit_0", shares[0.0], rtol=1e-12)
REFERENCE.check("sink_share.logit_2", shares[2.0], rtol=1e-12)
REFERENCE.check("sink_share.logit_5", shares[5.0], rtol=1e-12)
flat = np.zeros((1, 128, 4))
_, flat_w = sdpa(np.zeros((1, 1, 4)), flat, np.ones((1, 128, 2)), sink=5.0, return_weights=True)
expect("abs((1 - flat_w.sum()) - shares[5.0]) < 1e-12", abs((1 - flat_w.sum()) - shares[5.0]), "<", 1e-12)
expect("np.all(w_sink.sum(-1) < 1)", np.all(w_sink.sum(-1) < 1))
expect("np.allclose(sdpa(Q24, K24, V24, mask_causal + 2.0, sink=sink_logit + 2.0), out_sink, atol=1e-12)", np.allclose(sdpa(Q24, K24, V24, mask_causal + 2.0, sink=sink_logit + 2.0), out_sink, atol=1e-12))
expect("not np.allclose(sdpa(Q24, K24, V24, mask_causal + 2.0, sink=sink_logit), out_sink)", not np.allclose(sdpa(Q24, K24, V24, mask_causal + 2.0, sink=sink_logit), out_sink))  # shifting tokens alone is not a no-op
# A row with no visible token sends all its mass to the sink: output 0, no error even by default.
only_sink, only_sink_w = sdpa(Q24, K24, V24, np.full((MASK_N, MASK_N), -np.inf), sink=sink_logit, return_weights=True)
expect("np.all(only_sink == 0)", np.all(only_sink == 0))
expect("np.all(only_sink_w == 0)", np.all(only_sink_w == 0))

# Per-head sinks broadcast as (H, 1, 1); a boolean mask is refused rather than read as 0/1 biases.
heads_out = sdpa(np.stack([Q24, Q24]), K24, V24, mask_causal, sink=np.array([-1.0, 4.0]).reshape(2, 1, 1))
expect("not np.allclose(heads_out[0], heads_out[1])", not np.allclose(heads_out[0], heads_out[1]))
per_head_sink = np.array([-1.0, 4.0]).reshape(2, 1, 1)
expect("the head axis may come from K alone: per-head sinks broadcast the same way", np.abs(sdpa(Q24, np.stack([K24, K24]), V24, mask_causal, sink=per_head_sink) - heads_out).max(), "<", 1e-12)
for name, args in (("Q", (Q24[0], K24, V24)), ("K", (Q24, K24[0], V24)), ("V", (Q24, K24, V24[0]))):
    expect_raises(ValueError, sdpa, *args, match=f"{name} must have at least 2 dimensions")
for bad in (np.nan, np.inf):
    bad_mask = mask_causal.copy()
    bad_mask[3, 1] = bad  # one entry is enough
    expect_raises(ValueError, sdpa, Q24, K24, V24, bad_mask, match="not NaN or +inf")
two_holes = mask_causal.copy()
two_holes[[2, 5]] = -np.inf
expect("a Q and a mask that require grad (as torch makes them) are detached and read as arrays",
       np.array_equal(sdpa(torch.tensor(Q24, requires_grad=True), K24, V24, torch.tensor(mask_causal, requires_grad=True)), out))

# A wide score range, worked by hand (d_k = 1): rows [-1000, 1000, 40] and [200, -200, -8]. Shifting each row by
# its own max gives weights (0, 1, 0) and (1, 0, 0) to the last bit; the min overflows e^2000, one shared max
# underflows row 1 to 0 / 0.
Q_wide, K_wide, V_wide = np.array([[40.0], [-8.0]]), np.array([[-25.0], [25.0], [1.0]]), np.array([[1.0], [2.0], [3.0]])
expect("softmax over scores spanning [-1000, 1000] is shifted per row: outputs (2, 1) exactly", sdpa(Q_wide, K_wide, V_wide).tolist(), "==", [[2.0], [1.0]])
expect("the same with a sink logit of 0, which the scores outweigh by e^200 or more", sdpa(Q_wide, K_wide, V_wide, sink=0.0).tolist(), "==", [[2.0], [1.0]])
expect_raises(ValueError, sdpa, np.stack([Q24, Q24]), np.stack([K24, K24]), np.stack([V24] * 3), match="do not broadcast")
expect_raises(TypeError, sdpa, Q24, K24, V24, mask_causal == 0, match="additive_mask")
expect_raises(ValueError, sdpa, Q24, K24[:, :8], V24, match="d_k")
expect_raises(ValueError, sdpa, Q24, K24, V24, empty_row="nan", match="empty_row")
expect_raises(ValueError, sdpa, Q24, K24, V24, sink=np.zeros(3), match="sink")
expect_raises(ValueError, sdpa, Q24, K24 * np.nan, V24, match="finite")
expect_raises(TypeError, sdpa, Q24, K24, V24, return_weights="yes", match="return_weights")
expect_raises(ValueError, sdpa, Q24, K24, V24, two_holes, match="empty_row='zero'")  # the one phrase the instruction asks for
expect_raises(ValueError, sdpa, *(np.ones((2**17, 1)),) * 3, match="budget")  # a 2^17 x 2^17 score matrix is 128 GiB
expect_raises(FloatingPointError, sdpa, np.ones((1, 2)), np.array([[1e308, 1e308], [1.0, 1.0]]), np.ones((2, 1)), match="Q @ K^T overflowed");


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_sink_share (matplotlib only; reading it is optional)
def plot_sink_share(n_keys, logits, language="en"):
    """The sink's share of a row against its logit, for n_keys keys that all score 0."""
    n_keys = require_int("n_keys", n_keys, minimum=1)
    logits = [require_real("logit", logit, minimum=-2, maximum=8) for logit in logits]  # dots on the drawn range
    grid = np.linspace(-2, 8, 121)
    fig, ax = plt.subplots(figsize=(5.6, 2.7))
    ax.plot(grid, 100 * np.exp(grid) / (n_keys + np.exp(grid)), color=Palette.PURPLE, linestyle="-", marker="")  # the curve alone
    for logit in logits:
        share = 100 * math.exp(logit) / (n_keys + math.exp(logit))
        ax.plot([logit], [share], color=Palette.ORANGE, linestyle="none", marker="D", markersize=7, markevery=1, zorder=3)  # the diamond the caption promises
        ax.annotate(f"{share:.2f}%", (logit, share), textcoords="offset points", xytext=(6, -12), fontsize=9)
    ax.axvline(math.log(n_keys), color=Palette.GREY, linestyle=":", linewidth=1)
    ax.set_xlabel(localized(language, "sink logit σ", "логит стока σ"))
    ax.set_ylabel(localized(language, "sink share, %", "доля стока, %"))
    ax.set_title(localized(language, f"A sink competes with {n_keys} keys", f"Сток конкурирует с {n_keys} ключами"))
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.18, top=0.88)
    return fig


# %%
show_figure(
    plot_sink_share(128, tuple(shares), language=LANGUAGE),
    "The curve is the share of probability the sink takes from a row of 128 keys that all score 0, as its logit "
    "grows (x-axis). Orange diamonds, each labelled with its share, mark logits 0, 2 and 5. The dotted line at ln 128 is where the sink weighs as "
    "much as all tokens together: half the mass. Left of it the sink is a small leak; right of it, the head mostly "
    "abstains.",
)
report_section("Sink attention and empty rows", globals())


# %% [markdown]
# ## 4. Grouped-query attention, and three implementations that must agree
#
# **Idea.** Multi-head attention (MHA) gives every query head its own key and value head.
# Multi-query attention (MQA, [Shazeer, 2019](https://arxiv.org/abs/1911.02150)) shares one KV
# head among all query heads; grouped-query attention (GQA, [Ainslie et al., 2023](https://arxiv.org/abs/2305.13245))
# sits between: $H$ query heads in $H_{kv}$ groups, each group reading one KV head. The cache
# shrinks by the group size $G$. (The GQA paper's "5% of pre-training compute" is for *uptraining*
# an existing MHA checkpoint, T5-XXL, into GQA, not for training GQA from scratch.) In code, GQA is
# MHA after each KV head is **repeated** $G$ times in place. Tiling instead, $kv_0, kv_1, kv_0,
# kv_1, \dots$, is a silent bug: the shapes are right and the outputs are wrong.
#
# $$g(h) = \left\lfloor \frac{h}{G} \right\rfloor, \qquad G = \frac{H}{H_{kv}}, \qquad o^{(h)} = \operatorname{softmax}\left(\frac{Q^{(h)} {K^{(g(h))}}^\top}{\sqrt{d_k}} + M\right) V^{(g(h))}$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $H$, $H_{kv}$ | query heads, key/value heads | 8, 2 (gpt-oss: 64, 8) |
# | $G$ | group size: query heads per KV head | 4 |
# | $g(h)$ | the KV head that query head $h$ reads | heads 0-3 read 0, heads 4-7 read 1 |
# | $\lfloor x \rfloor$ | round down | $\lfloor 5/4 \rfloor = 1$ |
#
# **By hand.** $H = 8$, $H_{kv} = 2$: repeating gives the KV order 0,0,0,0,1,1,1,1; tiling gives
# 0,1,0,1,0,1,0,1, so query head 1 would read KV head 1 although it belongs to group 0.

# %% tags=["hide-input"]
# @title The argument checks of this section's functions: _repeat_kv_args, _gqa_args, _explicit_attention_shape (open to read)
def _repeat_kv_args(x, group):
    """repeat_kv_heads' x (KV heads on axis -3) and group, checked; the repeated heads must fit the allocation budget."""
    x = require_array("x", x, min_ndim=3)
    group = require_int("group", group, minimum=1)
    require_budget(f"{group} copies of each KV head", x.shape + (group,), itemsize=x.itemsize)
    return x, group


def _gqa_args(Q, K, V):
    """Q, K and V with heads on axis -3, checked: K and V share their KV heads, which divide the query heads."""
    Q, K, V = (require_array(name, a, min_ndim=3) for name, a in (("Q", Q), ("K", K), ("V", V)))
    if K.shape[-3] != V.shape[-3] or Q.shape[-3] % K.shape[-3]:
        raise ValueError(f"the {Q.shape[-3]} query heads must be a multiple of the KV heads, which K {K.shape} and V {V.shape} must share")
    return Q, K, V


def _explicit_attention_shape(q, k, v, allowed):
    """The score shape (..., T_q, T_k) of torch_sdpa_explicit's checked tensors and boolean mask, within the budget."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        require_tensor(name, t, min_ndim=2)
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if allowed is not None and (not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool):
        raise TypeError(f"allowed must be a boolean tensor (True = may attend), got {getattr(allowed, 'dtype', type(allowed).__name__)}")
    if allowed is not None:
        require_tensor("allowed", allowed, floating=False)  # a dense CPU tensor, like q, k and v
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"need q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    try:  # NumPy's shape arithmetic: torch.broadcast_shapes would import sympy on first use
        shape = np.broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2])) + (q.shape[-2], k.shape[-2])
        if allowed is not None and np.broadcast_shapes(tuple(allowed.shape), shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"the batch axes of q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} and allowed "
                         f"{tuple(getattr(allowed, 'shape', ()))} do not broadcast to one score shape") from None
    require_budget("the score matrix", shape, itemsize=q.element_size())
    return shape


# %% tags=["exercise"]
# Exercise 3: Repeat the KV heads for grouped-query attention. x holds the KV heads on axis -3;
# return an array with group times as many heads on that axis, where query head h gets KV head
# h // group: consecutive query heads share a KV head.
def repeat_kv_heads(x, group):
    """KV heads on axis -3, each repeated ``group`` times in place: query head h reads KV head h // group."""
    x, group = _repeat_kv_args(x, group)
    # Your code here.
    raise NotImplementedError('Exercise 3: see the instructions above')


# %%
check_exercise("Exercise 3", check_kv_repeat_contract, repeat_kv_heads, globals())


# %%
def gqa_attention(Q, K, V, mask=None, **options):
    """Grouped-query attention: Q [..., H, T_q, d_k] against K, V [..., H_kv, T_k, d]; options go to sdpa."""
    Q, K, V = _gqa_args(Q, K, V)
    group = Q.shape[-3] // K.shape[-3]
    return sdpa(Q, repeat_kv_heads(K, group), repeat_kv_heads(V, group), mask, **options)


H, H_KV, T, D = 8, 2, 12, 16
Qh = rng.standard_normal((H, T, D))  # (H, T, d_k)
Kh, Vh = rng.standard_normal((H_KV, T, D)), rng.standard_normal((H_KV, T, D))  # (H_kv, T, d)
causal12 = make_mask(T)
grouped = gqa_attention(Qh, Kh, Vh, causal12)
# The invariant: GQA equals MHA whose KV heads were copied group by group.
as_mha = sdpa(Qh, np.stack([Kh[h // (H // H_KV)] for h in range(H)]), np.stack([Vh[h // (H // H_KV)] for h in range(H)]), causal12)
print(f"GQA vs MHA with copied heads: max |difference| {np.abs(grouped - as_mha).max():.1e}")
expect("np.allclose(grouped, as_mha, atol=1e-12)", np.allclose(grouped, as_mha, atol=1e-12))
# The negative test: np.tile interleaves the groups, and the outputs change although every shape is right.
tiled_heads = sdpa(Qh, np.tile(Kh, (H // H_KV, 1, 1)), np.tile(Vh, (H // H_KV, 1, 1)), causal12)
print(f"GQA vs tile-instead-of-repeat: max |difference| {np.abs(grouped - tiled_heads).max():.2f} (must be large)")

# %% tags=["hide-input"]
# @title Repeat, not tile, and MHA as a group of one; and the bad inputs refused (checked; open to read)
expect("tiled_heads.shape == grouped.shape", tiled_heads.shape, "==", grouped.shape)
expect("not np.allclose(grouped, tiled_heads, atol=1e-3)", not np.allclose(grouped, tiled_heads, atol=1e-3))
expect("repeat_kv_heads(Kh, 1) is MHA: every head kept, in order", np.array_equal(repeat_kv_heads(Kh, 1), Kh))
expect_raises(ValueError, repeat_kv_heads, Kh, 0, match="group must be at least 1")
expect_raises(ValueError, gqa_attention, Qh[:7], Kh, Vh, match="multiple of the KV heads")
expect_raises(ValueError, gqa_attention, Qh[:, 0], Kh, Vh, match="dimensions")
expect_raises(ValueError, gqa_attention, Qh, Kh, Vh[:1], match="must share")
expect_raises(ValueError, repeat_kv_heads, Kh[0], 2, match="at least 3 dimensions")
expect_raises(ValueError, repeat_kv_heads, Kh, 10**9, match="budget");


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_head_mapping (matplotlib only; reading it is optional)
def plot_head_mapping(n_heads, n_kv_heads, language="en"):
    """Which KV head each query head reads, with repeat (correct) and tile (wrong)."""
    n_heads = require_int("n_heads", n_heads, minimum=1, maximum=64)  # a figure, not a model: 64 dots fit a row
    n_kv_heads = require_int("n_kv_heads", n_kv_heads, minimum=1, maximum=n_heads)
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads ({n_heads}) must be a multiple of n_kv_heads ({n_kv_heads})")
    group = n_heads // n_kv_heads
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 2.4))
    colors = [Palette.BLUE, Palette.ORANGE, Palette.GREEN, Palette.PURPLE]
    for ax, (title, reads) in zip(axes, (
        (localized(language, "repeat: h reads h // G (correct)", "repeat: h читает h // G (верно)"), [h // group for h in range(n_heads)]),
        (localized(language, "tile: h reads h mod H_kv (wrong)", "tile: h читает h mod H_kv (ошибка)"), [h % n_kv_heads for h in range(n_heads)]),
    )):
        kv_x = [(k + 0.5) * n_heads / n_kv_heads - 0.5 for k in range(n_kv_heads)]
        for h, k in enumerate(reads):
            ax.plot([h, kv_x[k]], [1, 0], color=colors[(h // group) % 4], linewidth=1.6, linestyle="-", marker="")
        ax.scatter(range(n_heads), [1] * n_heads, s=90, color=[colors[(h // group) % 4] for h in range(n_heads)], zorder=3)
        ax.scatter(kv_x, [0] * n_kv_heads, s=160, marker="s", color=[colors[k % 4] for k in range(n_kv_heads)], zorder=3)
        ax.set_yticks([0, 1], [localized(language, "KV", "KV"), localized(language, "query", "запросы")])
        ax.set_xticks(range(n_heads))
        ax.set_ylim(-0.3, 1.3)
        ax.set_title(title, fontsize=10)
        ax.grid(False)
    fig.subplots_adjust(wspace=0.25, left=0.08, right=0.99, bottom=0.12, top=0.86)
    return fig


# %%
show_figure(
    plot_head_mapping(H, H_KV, language=LANGUAGE),
    "Top row: 8 query heads, coloured by the group they belong to (heads 0-3 and 4-7); bottom row: 2 KV heads. Each line says which KV "
    "head a query head reads. Left (repeat) every line stays inside its colour: heads 0-3 read KV head 0. Right "
    "(tile) lines cross between groups, so half the query heads read the other group's keys and values.",
)


# %% [markdown]
# **Three implementations that must agree.** Our NumPy `sdpa` is explicit; a line-for-line PyTorch
# version is explicit too; `F.scaled_dot_product_attention` is the library API, free to pick a
# fused kernel. They must agree on outputs, on masks (PyTorch's boolean `attn_mask` uses
# True = *may attend*, the opposite of `nn.MultiheadAttention`'s masks; a float mask is additive
# like ours), on fully masked rows (zeros, PyTorch 2.5 or newer) and on gradients. From PyTorch
# 2.5 the API also accepts fewer KV heads with `enable_gqa=True`.

# %%
def torch_sdpa_explicit(q, k, v, allowed=None):
    """Softmax attention in plain tensor operations; allowed is boolean (True = may attend), empty rows give 0."""
    shape = _explicit_attention_shape(q, k, v, allowed)  # (..., T_q, T_k), every batch axis included
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).expand(shape)  # (..., T_q, T_k), v's batch axes included
    if allowed is None:
        return torch.softmax(scores, dim=-1) @ v
    allowed = allowed.expand(shape)
    has_key = allowed.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    scores = scores.masked_fill(~allowed, -math.inf).masked_fill(~has_key, 0.0)  # an empty row softmaxes a row of zeros...
    weights = torch.softmax(scores, dim=-1) * has_key  # ...and is then zeroed, so no NaN reaches the gradient
    return weights @ v


q_np, k_np, v_np = rng.standard_normal((1, 2, 5, 8)), rng.standard_normal((1, 2, 5, 8)), rng.standard_normal((1, 2, 5, 6))
allowed_np = np.tril(np.ones((5, 5), dtype=bool))
allowed_np[0] = False  # one fully masked row on purpose
q, k, v = (torch.tensor(a, requires_grad=True) for a in (q_np, k_np, v_np))  # float64 tensors
allowed = torch.from_numpy(allowed_np)
ours = torch.from_numpy(sdpa(q_np, k_np, v_np, additive_mask(allowed_np), empty_row="zero"))
explicit = torch_sdpa_explicit(q, k, v, allowed)
api_bool = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
api_float = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(additive_mask(allowed_np)))
expect_close("explicit torch attention equals the NumPy sdpa, empty row included", explicit, ours, rtol=1e-12, atol=1e-12)
if ENVIRONMENT["torch_has_enable_gqa"]:  # torch 2.5+: fully masked rows are zeros in the library too
    expect_close("F.scaled_dot_product_attention with a boolean mask equals explicit attention", api_bool, explicit, rtol=1e-10, atol=1e-12)
    expect_close("F.scaled_dot_product_attention with an additive mask equals explicit attention", api_float, explicit, rtol=1e-10, atol=1e-12)
    rows = slice(None)
else:
    print(f"SKIP: torch {torch.__version__} returns NaN on fully masked rows; comparing the other rows only")
    rows = slice(1, None)
print("NumPy sdpa, explicit torch and F.scaled_dot_product_attention agree on outputs, both mask kinds, empty rows and gradients")

# is_causal=True aligns the triangle top-left: one decoding query (token 4 of 5) would see key 0 only.
q_last, k_all, v_all = q[..., 4:, :].detach(), k.detach(), v.detach()
top_left = F.scaled_dot_product_attention(q_last, k_all, v_all, is_causal=True)
bottom_right = F.scaled_dot_product_attention(q_last, k_all, v_all, attn_mask=torch.ones(1, 5, dtype=torch.bool))
print("is_causal=True with 1 query and 5 keys reads key 0 only: decode needs an explicit mask or an offset")

if ENVIRONMENT["torch_has_enable_gqa"]:
    qg, kg, vg = (torch.tensor(a, requires_grad=True) for a in (Qh[None], Kh[None], Vh[None]))  # (1, H, T, d), (1, H_kv, T, d)
    causal_t = torch.ones(T, T, dtype=torch.bool).tril()
    api_gqa = F.scaled_dot_product_attention(qg, kg, vg, attn_mask=causal_t, enable_gqa=True)
    explicit_gqa = torch_sdpa_explicit(qg, kg.repeat_interleave(H // H_KV, dim=1), vg.repeat_interleave(H // H_KV, dim=1), causal_t)
    expect_close("enable_gqa=True equals repeat_interleave plus explicit attention", api_gqa, explicit_gqa, rtol=1e-10, atol=1e-12)
    expect_close("enable_gqa=True equals this notebook's grouped attention", api_gqa[0], torch.from_numpy(grouped), rtol=1e-10, atol=1e-12)
    for a, b in zip(torch.autograd.grad(api_gqa.square().sum(), (qg, kg, vg)), torch.autograd.grad(explicit_gqa.square().sum(), (qg, kg, vg))):
        expect_close("enable_gqa=True has the gradients of the explicit path", a, b, rtol=1e-9, atol=1e-11)
    report_section("enable_gqa=True equals repeat_interleave + explicit attention, outputs and gradients", globals())
else:
    print(f"SKIP: torch {torch.__version__} has no enable_gqa (added in 2.5); repeat_kv_heads above is the portable path")
report_section("GQA", globals())

# %% tags=["hide-input"]
# @title The three implementations on every row, gradient, batch axis and causal alignment; and the bad inputs refused (checked; open to read)
expect_close("the library and explicit attention agree on every row with a key", api_bool[..., rows, :], explicit[..., rows, :], rtol=1e-10, atol=1e-12)
probe = torch.from_numpy(rng.standard_normal(explicit.shape))
grads_explicit = torch.autograd.grad((explicit[..., rows, :] * probe[..., rows, :]).sum(), (q, k, v))
grads_api = torch.autograd.grad((api_bool[..., rows, :] * probe[..., rows, :]).sum(), (q, k, v))
for name, a, b in zip("qkv", grads_explicit, grads_api):
    expect_close(f"the gradient for {name} of explicit attention equals the library's", a, b, rtol=1e-9, atol=1e-11)
    expect(f"non-finite gradient for {name}", torch.isfinite(a).all())
# One head without a mask (2-D), and batch axes that only one of q, k, v (and the mask) carries, against the library.
q2, k2, v2 = q[0, 0].detach(), k[0, 0].detach(), v[0, 0].detach()
expect_close("unbatched, unmasked explicit attention equals the library", torch_sdpa_explicit(q2, k2, v2), F.scaled_dot_product_attention(q2, k2, v2), rtol=1e-12, atol=1e-12)
rows_allowed = allowed[None].expand(3, 5, 5).clone()
rows_allowed[:, 0, 0] = True  # no empty row, so the library's answer is the reference on any torch
for batched in range(3):
    parts = [t.expand(3, *t.shape) if i == batched else t for i, t in enumerate((q2, k2, v2))]  # (3, 5, d) or (5, d)
    expect_close(f"a batch axis on input {batched} only (q, k, v) broadcasts like the library", torch_sdpa_explicit(*parts, rows_allowed), F.scaled_dot_product_attention(*(t.expand(3, *t.shape[-2:]) for t in parts), attn_mask=rows_allowed), rtol=1e-12, atol=1e-12)
expect_close("is_causal=True puts one query's whole weight on key 0", top_left, v_all[..., :1, :], rtol=1e-7, atol=1e-7)
expect("not torch.allclose(top_left, bottom_right)", not torch.allclose(top_left, bottom_right))
expect_raises(TypeError, torch_sdpa_explicit, q, k, v, allowed.double(), match="boolean")
expect_raises(ValueError, torch_sdpa_explicit, q, k, v[..., :3, :], match="T_k")
expect_raises(ValueError, torch_sdpa_explicit, q[0, 0, 0], k, v, match="at least 2 dimensions")
expect_raises(TypeError, torch_sdpa_explicit, q.float(), k, v, match="one dtype")
expect_raises(TypeError, torch_sdpa_explicit, q, k, v, allowed.to("meta"), match="CPU");

# %% [markdown]
# ## 5. Reading a model card: the KV-cache calculator
#
# **Idea.** A model card (or its `config.json`) tells you everything the cache needs: layers,
# KV heads, head width, and which layers attend to the whole context and which only to a window.
# A full layer keeps every token; a windowed layer keeps at most $w$ tokens and then evicts the
# oldest, so its cache stops growing. Our case study is gpt-oss-120b
# ([model card](https://arxiv.org/abs/2508.10925), [code](https://github.com/openai/gpt-oss)):
# 36 layers, 64 query heads, 8 KV heads of width 64, and a 128-token window on the even-numbered
# layers (0, 2, 4, ...), the window counting the current token; the odd layers are full.
#
# $$\text{bytes}(n) = 2 \cdot H_{kv} \cdot d_h \cdot b \cdot \sum_{\kappa=1}^{L} \min\left(n, w_\kappa\right), \qquad w_\kappa = \infty \text{ for a full layer}$$
#
# | Symbol | Meaning | gpt-oss-120b |
# |---|---|---|
# | $n$ | context length | 131,072 |
# | $L$ | layers | 36 |
# | $\kappa$, $w_\kappa$ | layer index, and the window of layer $\kappa$ | 128 on even layers, $\infty$ on odd |
# | $\min(n, w_\kappa)$ | tokens layer $\kappa$ keeps | 128 or 131,072 |
# | $H_{kv}$, $d_h$, $b$ | KV heads, head width, bytes per number | 8, 64, 2 |
#
# **By hand.** One layer costs $2 \cdot 8 \cdot 64 \cdot 2 = 2{,}048$ bytes per kept token. If all
# 36 layers were full, a token would cost $36 \cdot 2{,}048 = 73{,}728$ bytes (72 KiB) and 128k
# tokens 9.0 GiB. In the real hybrid, the 18 full layers hold $18 \cdot 131{,}072 \cdot 2{,}048$
# bytes = 4.5 GiB and the 18 windowed layers only $18 \cdot 128 \cdot 2{,}048$ bytes = 4.5 MiB,
# so the windows halve the cache. Per token of context, only the 18 full layers grow:
# $18 \cdot 2{,}048 = 36{,}864$ bytes, **36 KiB per token** for gpt-oss-120b; gpt-oss-20b has 24 layers
# (12 full, 12 windowed) and grows by **24 KiB per token**. (Units: KiB and GiB are binary,
# $2^{10}$ and $2^{30}$ bytes, used for sizes per token; GB is decimal, $10^9$ bytes, as GPU memory is
# sold. 4.5 GiB is 4.83 GB.) The variants the card did *not* choose, on the same schedule where only
# the 18 full layers grow: MHA (64 KV heads) would cost 288 KiB per token, MQA (1 KV head) 4.5 KiB.

# %%
# The gpt-oss-120b configuration, embedded with its own checksum so a silent edit cannot slip through.
GPT_OSS_CONFIG_JSON = '{"num_hidden_layers": 36, "num_experts": 128, "experts_per_token": 4, "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880, "swiglu_limit": 7.0, "head_dim": 64, "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128, "initial_context_length": 4096, "rope_theta": 150000, "rope_scaling_factor": 32.0, "rope_ntk_alpha": 1, "rope_ntk_beta": 32}'
GPT_OSS_CONFIG_SHA256 = "063aaa98e012cac330d58d18471700f0b0eb90bb15c58fb227809d45090f3e65"
verify_sha256(GPT_OSS_CONFIG_JSON, GPT_OSS_CONFIG_SHA256, "the embedded gpt-oss-120b config")
gpt_oss = json.loads(GPT_OSS_CONFIG_JSON)
print({key: gpt_oss[key] for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "sliding_window")})
expect('(gpt_oss["num_hidden_layers"], gpt_oss["num_attention_heads"], gpt_oss["num_key_value_heads"], gpt_oss["head_dim"], gpt_oss["sliding_window"]) == (36, 64, 8, 64, 128)', (gpt_oss["num_hidden_layers"], gpt_oss["num_attention_heads"], gpt_oss["num_key_value_heads"], gpt_oss["head_dim"], gpt_oss["sliding_window"]), "==", (36, 64, 8, 64, 128))


# %% tags=["exercise"]
# Exercise 4: Size a KV cache layer by layer. layer_windows has one entry per layer: None for a
# full-attention layer (it keeps all `context` tokens) or an int window w (it keeps the most
# recent min(context, w) tokens). Each kept token costs a key and a value per KV head. Return an
# exact int number of bytes.
def kv_cache_bytes(context, layer_windows, kv_heads, head_dim, bytes_per_value=2):
    """Exact KV-cache bytes for `context` tokens when each layer is full (None) or windowed (int)."""
    context = require_int("context", context, minimum=1)
    windows = list(layer_windows)
    if not windows:
        raise ValueError("layer_windows needs one entry per layer (None = full attention, int = window)")
    for layer, window in enumerate(windows):
        if window is not None:
            require_int(f"layer_windows[{layer}]", window, minimum=1)
    for name, value in (("kv_heads", kv_heads), ("head_dim", head_dim), ("bytes_per_value", bytes_per_value)):
        require_int(name, value, minimum=1)
    # Your code here.
    raise NotImplementedError('Exercise 4: see the instructions above')


# %%
check_exercise("Exercise 4", check_kv_cache_contract, kv_cache_bytes, globals())

# %%
context = REFERENCE.value("context_tokens")
layers, kv_heads, head_dim, window = (gpt_oss[k] for k in ("num_hidden_layers", "num_key_value_heads", "head_dim", "sliding_window"))
hybrid_windows = [window if layer % 2 == 0 else None for layer in range(layers)]  # even layers are windowed
full_layers = hybrid_windows.count(None)
rows = {
    "gpt_oss_gqa_all_full_equivalent": kv_bytes_per_token(layers, kv_heads, head_dim),
    "gpt_oss_mha_hypothetical": kv_bytes_per_token(full_layers, gpt_oss["num_attention_heads"], head_dim),  # on the real schedule:
    "gpt_oss_mqa_hypothetical": kv_bytes_per_token(full_layers, 1, head_dim),  # only the full layers grow
}
for key, per_token_bytes in rows.items():
    print(f"{key:34s} {per_token_bytes / KIB:6.1f} KiB/token   {per_token_bytes * context / GIB:6.2f} GiB at {context:,} tokens")
    REFERENCE.check(f"kv_rows.{key}", per_token_bytes)
hybrid = {
    "layers": layers,
    "full_layers": full_layers,
    "sliding_layers": layers - full_layers,
    "window": window,
    "per_layer_bytes_per_token": kv_bytes_per_token(1, kv_heads, head_dim),
    "full_bytes": kv_cache_bytes(context, [None] * full_layers, kv_heads, head_dim),
    "sliding_bytes": kv_cache_bytes(context, [window] * (layers - full_layers), kv_heads, head_dim),
    "hybrid_total_bytes": kv_cache_bytes(context, hybrid_windows, kv_heads, head_dim),
    "all_full_bytes": kv_cache_bytes(context, [None] * layers, kv_heads, head_dim),
}
expect('hybrid["full_bytes"] + hybrid["sliding_bytes"] == hybrid["hybrid_total_bytes"]', hybrid["full_bytes"] + hybrid["sliding_bytes"], "==", hybrid["hybrid_total_bytes"])
print(f"gpt-oss-120b at {context:,} tokens: full layers {hybrid['full_bytes'] / GIB:.2f} GiB + windowed layers "
      f"{hybrid['sliding_bytes'] / MIB:.1f} MiB = {hybrid['hybrid_total_bytes'] / GIB:.4f} GiB; all-full would be "
      f"{hybrid['all_full_bytes'] / GIB:.2f} GiB (x{hybrid['all_full_bytes'] / hybrid['hybrid_total_bytes']:.3f})")
# gpt-oss-20b: 24 layers, again alternating window and full (same source); only its 12 full layers grow.
print(f"gpt-oss-20b: its growing part costs {kv_bytes_per_token(12, 8, 64) / KIB:.0f} KiB per token")

# Two more cards: Llama-3.3-70B (80 layers, 8 KV heads of 128) and Qwen2.5-7B (28 layers, 4 KV heads of 128).
cards = {"llama_3_3_70b": (80, 8, 128), "qwen2_5_7b": (28, 4, 128)}
for name, (card_layers, card_kv, card_dim) in cards.items():
    per_token_bytes = kv_bytes_per_token(card_layers, card_kv, card_dim)
    total = kv_cache_bytes(context, [None] * card_layers, card_kv, card_dim)
    print(f"{name:14s} {per_token_bytes / KIB:4.0f} KiB/token -> {total / GIB:4.0f} GiB at {context:,} tokens")
    REFERENCE.check(f"model_cards.{name}_bytes_per_token", per_token_bytes)
    REFERENCE.check(f"model_cards.{name}_context_bytes", total)

# %% tags=["hide-input"]
# @title The calculator against the frozen reference, the numbers the text states and a count by hand; and the bad inputs refused (checked; open to read)
for key, value in hybrid.items():
    REFERENCE.check(f"gpt_oss_hybrid.{key}", value)
REFERENCE.check("model_cards.gpt_oss_20b_growing_bytes_per_token", kv_bytes_per_token(12, 8, 64))
check_stated("gpt-oss-120b's growing cache (KiB per token)", kv_bytes_per_token(18, 8, 64) / KIB, 36, 0)
check_stated("gpt-oss-20b's growing cache (KiB per token)", kv_bytes_per_token(12, 8, 64) / KIB, 24, 0)
check_stated("the full layers of gpt-oss-120b at 128k (GB)", hybrid["full_bytes"] / GB, 4.83, 2)
# By hand, 3 tokens of one-byte numbers, one KV head of width 1: the layers keep 3, 1, 2 and 3 tokens, a key and a value each.
expect("kv_cache_bytes(3, [None, 1, 2, 5], 1, 1, 1) == 2 * (3 + 1 + 2 + 3)", kv_cache_bytes(3, [None, 1, 2, 5], 1, 1, 1), "==", 18)
expect("kv_cache_bytes(1, [None], 1, 1, 1): one token, one layer", kv_cache_bytes(1, [None], 1, 1, 1), "==", 2)
expect_raises(ValueError, kv_cache_bytes, context, [], 8, 64, match="layer_windows")
expect_raises(ValueError, kv_cache_bytes, context, [None, 0], 8, 64, match="layer_windows[1]")
expect_raises(ValueError, kv_cache_bytes, 0, [None], 8, 64, match="context")
expect_raises(ValueError, kv_cache_bytes, context, [None], 8, 64, 0, match="bytes_per_value");


# %% [markdown]
# **A latent cache on the same scale.** DeepSeek-V3 ([config](https://huggingface.co/deepseek-ai/DeepSeek-V3))
# caches, per layer and token, one 512-number latent plus one 64-number RoPE key shared by all 128
# heads: $61 \cdot (512 + 64) \cdot 2 = 70{,}272$ bytes. What is it compared against? The DeepSeek-V2
# paper's Table 1 convention counts an MHA twin with head width $d_h = 128$ for keys and values:
# $2 \cdot 61 \cdot 128 \cdot 128 \cdot 2 = 3{,}997{,}696$ bytes, 56.9 times more. But the real keys
# are 192 wide (128 without position + 64 RoPE) and the values 128 wide, so expanding the cache
# would really cost $61 \cdot 128 \cdot (192 + 128) \cdot 2 = 4{,}997{,}120$ bytes, about 71 times
# more. Both numbers are "right"; quote the convention with the ratio. Section 13 shows how
# attention runs on the latent without ever expanding it.

# %%
def mla_bytes_per_token(layers, latent_dim, rope_dim, bytes_per_value=2):
    """Latent-cache bytes per token: one latent and one shared RoPE key per layer."""
    for name, value in (("layers", layers), ("latent_dim", latent_dim), ("rope_dim", rope_dim), ("bytes_per_value", bytes_per_value)):
        require_int(name, value, minimum=1)
    return layers * (latent_dim + rope_dim) * bytes_per_value


latent_bytes = mla_bytes_per_token(61, 512, 64)
v2_convention = kv_bytes_per_token(61, 128, 128)  # DeepSeek-V2 Table 1: d_h = 128 for keys and values
expanded_192 = 61 * 128 * ((128 + 64) + 128) * 2  # the real widths: 192-wide keys, 128-wide values
print(f"latent {latent_bytes:,} B/token; MHA-equivalent (d_h = 128) {v2_convention:,} B = x{v2_convention / latent_bytes:.1f}; "
      f"expanded with 192-wide keys {expanded_192:,} B = x{expanded_192 / latent_bytes:.1f}")
REFERENCE.check("mla.raw_element_ratio", v2_convention / latent_bytes, rtol=1e-15)

# %% tags=["hide-input"]
# @title The latent cache against the frozen reference and by hand; and the bad inputs refused (checked; open to read)
REFERENCE.check("mla.bytes_per_token", latent_bytes)
REFERENCE.check("mla.mha_equivalent_bytes_per_token", v2_convention)
REFERENCE.check("mla.expanded_192_bytes_per_token", expanded_192)
REFERENCE.check("mla.expanded_192_ratio", expanded_192 / latent_bytes, rtol=1e-15)
expect("one layer caching a 1-number latent and a 1-number RoPE key in bytes: 2 bytes", mla_bytes_per_token(1, 1, 1, 1), "==", 2)
expect_raises(ValueError, mla_bytes_per_token, 61, 0, 64, match="latent_dim");


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_bytes_per_token (matplotlib only; reading it is optional)
def plot_bytes_per_token(rows, title, language="en"):
    """Horizontal bars of cache bytes per token (log axis), one per design, labelled in KiB."""
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    labels, values = zip(*rows)
    values = [value / 1024 for value in values]  # bytes -> KiB: the axis and the labels use one unit
    fig, ax = plt.subplots(figsize=(7.4, 0.32 * len(rows) + 1.0))
    y = np.arange(len(rows))[::-1]
    families = {"gpt-oss": Palette.BLUE, "DeepSeek": Palette.PURPLE, "Llama": Palette.ORANGE, "Qwen": Palette.GREEN}
    family = [next((f for f in families if label.startswith(f)), None) for label in labels]
    ax.barh(y, values, color=[families.get(f, Palette.GREY) for f in family])
    shown = [f for f in families if f in family]
    ax.legend([matplotlib.patches.Patch(color=families[f]) for f in shown], shown, fontsize=9, loc="lower right",
              title=localized(language, "colour = model", "цвет = модель"), title_fontsize=9)
    for yy, value in zip(y, values):
        kib = localized(language, "KiB", "КиБ")
        ax.text(value * 1.08, yy, f"{value:,.0f} {kib}" if value >= 10 else f"{value:,.1f} {kib}", va="center", fontsize=9)
    ax.set_yticks(y, labels, fontsize=9)
    ax.set_xlim(min(values) / 2, max(values) * 8)
    log_scale(ax, "x")
    ax.set_xlabel(localized(language, "KV cache per token, all layers, KiB (log scale)", "KV-кэш на токен, все слои, КиБ (лог. шкала)"))
    ax.set_title(title)
    height = 0.32 * len(rows) + 1.0  # inches, as in figsize
    fig.subplots_adjust(left=0.36, right=0.98, bottom=0.5 / height, top=1 - 0.35 / height)
    return fig


# %%
growing_hybrid = hybrid["full_layers"] * hybrid["per_layer_bytes_per_token"]
card_rows = [
    (localized(LANGUAGE, "DeepSeek-V3 expanded, 192-wide keys", "DeepSeek-V3 развёрнутый, ключи 192"), expanded_192),
    (localized(LANGUAGE, "DeepSeek-V3 MHA twin, d_h = 128", "DeepSeek-V3 MHA-аналог, d_h = 128"), v2_convention),
    (localized(LANGUAGE, "gpt-oss-120b as MHA, growing part", "gpt-oss-120b как MHA, растущая часть"), rows["gpt_oss_mha_hypothetical"]),
    ("Llama-3.3-70B (GQA, 8 KV)", kv_bytes_per_token(80, 8, 128)),
    (localized(LANGUAGE, "gpt-oss-120b all-full (GQA, 8 KV)", "gpt-oss-120b, все слои полные"), rows["gpt_oss_gqa_all_full_equivalent"]),
    (localized(LANGUAGE, "DeepSeek-V3 latent (MLA)", "DeepSeek-V3 латентный (MLA)"), latent_bytes),
    ("Qwen2.5-7B (GQA, 4 KV)", kv_bytes_per_token(28, 4, 128)),
    (localized(LANGUAGE, "gpt-oss-120b hybrid, growing part", "gpt-oss-120b гибрид, растущая часть"), growing_hybrid),
    (localized(LANGUAGE, "gpt-oss-120b as MQA, growing part", "gpt-oss-120b как MQA, растущая часть"), rows["gpt_oss_mqa_hypothetical"]),
]
show_figure(
    plot_bytes_per_token(card_rows, localized(LANGUAGE, "What one token costs, by model card", "Цена одного токена по карточкам моделей"), language=LANGUAGE),
    "Each bar is the KV cache one extra token costs across all layers, on a log axis where each gridline is ten "
    "times the last; the colour says which model a bar belongs to. Bars of one colour (gpt-oss-120b, DeepSeek-V3) show what its design choice saved: "
    "sharing KV heads (MHA to GQA to MQA), windowing half the layers, or caching a latent. The two DeepSeek-V3 "
    "twins differ only by the counting convention.",
)
expect("growing_hybrid == 36 * KIB", growing_hybrid, "==", 36 * KIB)
print("KV-cache calculator: every frozen Module 5 number reproduced")


# %% [markdown]
# ## 6. The online softmax: one pass, exact
#
# **Idea.** A softmax seems to need the whole row before it can weigh anything: the maximum
# (for stability) and the sum (for normalising). The online softmax reads the row in tiles and
# keeps running numbers. [Milakov and Gimelshein (2018)](https://arxiv.org/abs/1805.02867) keep
# two, the largest logit so far $m$ and the sum of $e^{x - m}$ so far $\ell$, in one pass, and
# weigh the values in a second pass. Folding the weighted values into the same pass, as a third
# running number, the numerator $u$, is due to [Rabe and Staats (2021)](https://arxiv.org/abs/2112.05682)
# and FlashAttention; that one-pass form is what this section builds. When a new tile raises the maximum,
# everything accumulated so far was measured against the old, smaller $m$; multiplying it by
# $\alpha = e^{m_{\text{old}} - m_{\text{new}}}$ re-expresses it against the new one. Nothing is
# approximated: the final $u / \ell$ is the softmax average to the last bit of rounding.
#
# $$m_t = \max\left(m_{t-1}, \max_{j \in t} x_j\right), \qquad \alpha_t = e^{m_{t-1} - m_t}$$
#
# $$\ell_t = \alpha_t \ell_{t-1} + \sum_{j \in t} e^{x_j - m_t}$$
#
# $$u_t = \alpha_t u_{t-1} + \sum_{j \in t} e^{x_j - m_t} v_j$$
#
# | Symbol | Meaning | Example after tile 2 |
# |---|---|---|
# | $t$ | tile index; $j \in t$ runs over the tile's entries | 2 |
# | $x_j$, $v_j$ | a logit and its value | tile 2: (3, 0.5) and (3, 4) |
# | $m_t$ | running maximum ($m_0 = -\infty$) | 3 |
# | $\alpha_t$ | rescale factor for what was accumulated before tile $t$ ($\alpha_1 = 0$) | $e^{2 - 3} = 0.3679$ |
# | $\ell_t$, $u_t$ | running sum and running numerator (`l` and `u` in the code) | 1.5853, 3.9669 |
# | $u_T / \ell_T$ | the output after the last tile $T$ | 2.5023 |
#
# **By hand.** Logits $(2, 1 \mid 3, 0.5)$ with values $(1, 2 \mid 3, 4)$. Tile 1: $m = 2$,
# $\ell = e^0 + e^{-1} = 1.3679$, $u = 1 + 2e^{-1} = 1.7358$. Tile 2 raises $m$ to 3, so
# $\alpha = e^{-1} = 0.3679$: $\ell = 0.3679 \cdot 1.3679 + e^0 + e^{-2.5} = 1.5853$ and
# $u = 0.3679 \cdot 1.7358 + 3 + 4e^{-2.5} = 3.9669$. Output $3.9669 / 1.5853 = 2.5023$, the
# same as the softmax of all four logits at once. Forget $\alpha$ and tile 1's terms are
# $e$ times too heavy.

# %% tags=["hide-input"]
# @title _online_softmax_tiles: the argument checks of Exercise 5 (open to read)
def _online_softmax_tiles(logit_tiles, value_tiles):
    """The (logits, values) pairs of online_softmax_dot as float arrays: as many of each, none empty, each pair one length."""
    if len(logit_tiles) != len(value_tiles) or not len(logit_tiles):
        raise ValueError(f"need the same, non-zero number of logit and value tiles; got {len(logit_tiles)} and {len(value_tiles)}")
    tiles = []
    for t, (logits, values) in enumerate(zip(logit_tiles, value_tiles)):
        logits, values = require_array(f"logit_tiles[{t}]", logits, ndim=1), require_array(f"value_tiles[{t}]", values, ndim=1)
        if logits.shape != values.shape:
            raise ValueError(f"tile {t} has {logits.size} logits but {values.size} values")
        tiles.append((logits.astype(float), values.astype(float)))
    return tiles


# %% tags=["exercise"]
# Exercise 5: Stream a softmax-weighted average. For each tile, update the running max m (start
# at -inf), the rescale factor alpha = exp(m_old - m_new), the running sum l and numerator u as in
# the formula, and append {"m": m, "alpha": alpha, "l": l, "u": u} to the trace. Return (u / l, trace).
def online_softmax_dot(logit_tiles, value_tiles):
    """Softmax-weighted average of scalar values, streamed tile by tile; returns (output, per-tile trace)."""
    tiles = _online_softmax_tiles(logit_tiles, value_tiles)  # [(logits, values), ...] as float arrays
    # Your code here.
    raise NotImplementedError('Exercise 5: see the instructions above')


# %%
check_exercise("Exercise 5", check_online_softmax_contract, online_softmax_dot, globals())


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_online_softmax (matplotlib only; reading it is optional)
def plot_online_softmax(trace, exact, language="en"):
    """The running estimate u / l after each tile, against the exact softmax average; rescaled tiles marked."""
    exact = require_real("exact", exact)
    tiles = np.arange(1, len(trace) + 1)
    estimate = [state["u"] / state["l"] for state in trace]
    rescaled = [t for t, state in zip(tiles, trace) if 0 < state["alpha"] < 1]
    fig, ax = plt.subplots(figsize=(6.2, 2.7))
    ax.axhline(exact, color=Palette.GREY, linestyle="--", linewidth=1, label=localized(language, "exact softmax average", "точное среднее softmax"))
    ax.plot(tiles, estimate, color=Palette.BLUE, linestyle="-", marker="o", markevery=1, label=localized(language, "running u / l", "текущее u / l"))
    ax.plot(rescaled, [estimate[t - 1] for t in rescaled], color=Palette.ORANGE, linestyle="none", marker="s", markevery=1, markersize=9, fillstyle="none",
            label=localized(language, "max grew: old sums rescaled by α < 1", "максимум вырос: старые суммы умножены на α < 1"))
    ax.set_xlabel(localized(language, "tiles read", "прочитано тайлов"))
    ax.set_ylabel(localized(language, "output estimate", "оценка выхода"))
    ax.set_title(localized(language, "Online softmax: exact after the last tile", "Онлайн-softmax: точен после последнего тайла"))
    ax.legend(fontsize=9, loc="upper right")
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.18, top=0.88)
    return fig


# %%
online_output, online_trace = online_softmax_dot([[2.0, 1.0], [3.0, 0.5]], [[1.0, 2.0], [3.0, 4.0]])
for t, state in enumerate(online_trace, start=1):
    print(f"after tile {t}: m = {state['m']:.0f}, alpha = {state['alpha']:.4f}, l = {state['l']:.4f}, u = {state['u']:.4f}")
print(f"output u / l = {online_output:.4f}")

# A longer row: 48 logits in 12 tiles of 4. The running estimate u / l jumps while the max still moves.
row_logits, row_values = rng.normal(0.0, 2.0, 48), rng.normal(0.0, 1.0, 48)
_, long_trace = online_softmax_dot(np.split(row_logits, 12), np.split(row_values, 12))
exact_row = np.exp(row_logits - row_logits.max()) @ row_values / np.exp(row_logits - row_logits.max()).sum()
expect('abs(long_trace[-1]["u"] / long_trace[-1]["l"] - exact_row) < 1e-12', abs(long_trace[-1]["u"] / long_trace[-1]["l"] - exact_row), "<", 1e-12)


show_figure(
    plot_online_softmax(long_trace, exact_row, language=LANGUAGE),
    "The x-axis counts tiles of 4 logits read so far; the solid blue line with dots is the running output u / l, the dashed line the "
    "softmax average of all 48 logits. Orange squares mark tiles whose maximum beat every earlier logit, where the "
    "old sums were multiplied by alpha. The line can move a lot early, but its last point lands on the dashed line "
    "exactly, not approximately.",
)
report_section("Online softmax", globals())

# %% tags=["hide-input"]
# @title The worked example's trace against the frozen reference and the direct softmax; and the bad inputs refused (checked; open to read)
REFERENCE.check("online_softmax_trace.l1", online_trace[0]["l"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.u1", online_trace[0]["u"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.alpha", online_trace[1]["alpha"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.l2", online_trace[1]["l"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.u2", online_trace[1]["u"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.output", online_output, rtol=1e-12)
direct = np.exp(np.array([2.0, 1.0, 3.0, 0.5]) - 3.0)
expect("abs(online_output - direct @ np.array([1.0, 2.0, 3.0, 4.0]) / direct.sum()) < 1e-12", abs(online_output - direct @ np.array([1.0, 2.0, 3.0, 4.0]) / direct.sum()), "<", 1e-12)
expect_raises(ValueError, online_softmax_dot, [[1.0]], [[1.0], [2.0]], match="same")
expect_raises(ValueError, online_softmax_dot, [[1.0, 2.0]], [[1.0]], match="tile 0");


# %% [markdown]
# ## 7. Tiled streaming attention: FlashAttention's idea in NumPy
#
# **Idea.** Apply the online softmax to whole blocks. Cut the queries into blocks of $\tau$ rows
# and the keys into blocks of $\tau$ columns. For one query block, walk over the key blocks; each
# step computes a small $\tau \times \tau$ score tile, updates every row's $m$, $\ell$ and output
# accumulator $O$, and throws the tile away. The $n \times n$ matrix never exists
# ([FlashAttention, Dao et al., 2022](https://arxiv.org/abs/2205.14135), which reports training 15% faster
# than the MLPerf BERT-large record, 3x faster on GPT-2 at 1K tokens and 2.4x on Long Range Arena;
# FlashAttention-2 is about 2x faster again, [Dao, 2023](https://arxiv.org/abs/2307.08691)). Masks come for free
# in the block structure: with a causal mask, key blocks entirely in a query block's future are
# never computed; with a window, neither are key blocks entirely behind it. Only the blocks that
# straddle a mask boundary need the mask itself. Cached decoding adds one detail: when the
# queries are the last $T_q$ of $T_k$ tokens, query $i$ sits at absolute position $p_0 + i$,
# where $p_0$ is the position of the first new query (the argument `query_start`), and the
# causal and window tests must use that position.
#
# The loop order is **FlashAttention-2's**: query blocks outside, key blocks inside, so each
# query block's $m$, $\ell$ and $O$ stay local and the division by $\ell$ happens **once**, after
# the last key block, instead of rescaling the output at every step as FlashAttention-1 did.
#
# $$S = \frac{Q_b K_c^\top}{\sqrt{d_k}} + M_{bc}, \qquad m' = \max\left(m, \operatorname{rowmax} S\right)$$
#
# $$\alpha = e^{m - m'}, \qquad P = e^{S - m'}$$
#
# $$\ell' = \alpha \ell + \operatorname{rowsum} P, \qquad O' = \alpha O + P V_c$$
#
# | Symbol | Meaning | Shape |
# |---|---|---|
# | $Q_b$ | query block $b$ | $\tau \times d_k$ |
# | $K_c$, $V_c$ | key and value block $c$ | $\tau \times d_k$, $\tau \times d_v$ |
# | $M_{bc}$ | the mask restricted to the block (causal, window, or a given additive mask) | $\tau \times \tau$ |
# | $m$, $\ell$ | per-row running max and sum | $\tau$ |
# | $O$ | per-row output accumulator (`acc` in the code); the output is $O / \ell$ after the last block | $\tau \times d_v$ |
# | $p_0$ | absolute position of the first query (`query_start`); 0 for a prompt, the cache length when decoding | scalar |
# | $\alpha$, $P$ | per-row rescale and the tile's unnormalised weights | $\tau$, $\tau \times \tau$ |
#
# **By hand.** With $n = 2048$ and $\tau = 128$ there are $16 \times 16 = 256$ block pairs. A causal
# mask needs only those on or below the diagonal: $16 \cdot 17 / 2 = 136$, of which the 16 on the
# diagonal need masking. A window of 256 leaves at most 3 key blocks per query block: 1 for the
# first query block, 2 for the second, 3 for each of the other 14, so 45 in all. Each tile holds
# $128^2$ numbers, 64 KiB in float32, against 16 MiB for the full float32 matrix. (The block
# grid depends only on $n / \tau$ and $w / \tau$, so the code below draws it for $n = 1024$, $\tau = 64$,
# $w = 128$, the same $16 \times 16$ grid at a quarter of the cost.)

# %% [markdown]
# You will build tiled attention in three steps, each with its own check: **plain tiles** (no
# mask: the online update on whole blocks), then **causal skipping** (which key tiles can be
# left out, and the one diagonal tile per block that needs a mask), then **offsets and windows**
# (queries that sit after a cached prefix, and windows that skip tiles on the left too).
#
# ### Step 1 · Plain tiles: the online update on whole blocks

# %% tags=["hide-input"]
# @title The argument and overflow checks of the tile kernels and of block_kinds below (open to read)
def _refuse_overflow(Q, K, V=None):
    """Refuse Q, K, V whose scores (|q . k| <= d_k max|q| max|k|) or values could pass 2^500 and overflow the sums."""
    if Q.shape[1] * float(np.abs(Q).max()) * float(np.abs(K).max()) > 2.0**500 or (V is not None and float(np.abs(V).max()) > 2.0**500):
        raise ValueError("entries of Q, K or V are so large that scores or outputs could overflow; rescale them first")


def _plain_tile_args(Q, K, V, tile_size):
    """tiled_attention_plain's Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] and tile_size, checked, overflow refused."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"need Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]; got {Q.shape}, {K.shape}, {V.shape}")
    tile_size = require_int("tile_size", tile_size, minimum=1)
    _refuse_overflow(Q, K, V)
    return Q, K, V, tile_size


def _causal_tile_args(Q, K, V, tile_size):
    """causal_tiled_attention's inputs, checked: K and V may hold unwritten (even NaN) rows after the T_q that are read."""
    Q = require_array("Q", Q, ndim=2)
    K, V = require_array("K", K, ndim=2, finite=False), require_array("V", V, ndim=2, finite=False)  # unwritten rows may be NaN
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0] or K.shape[0] < Q.shape[0]:
        raise ValueError(f"need Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] with T_k >= T_q; got {Q.shape}, {K.shape}, {V.shape}")
    tile_size = require_int("tile_size", tile_size, minimum=1)
    written = len(Q)  # query i reads keys 0..i: rows from T_q on are never read
    for name, rows in (("K", K), ("V", V)):
        require_array(f"{name}[:T_q]", rows[:written])  # the rows that are read must be finite
    _refuse_overflow(Q, K[:written], V[:written])
    return Q, K, V, tile_size


def _tiled_args(Q, K, V, mask, tile_size, sink, empty_row, causal, window, query_start):
    """tiled_attention's inputs, checked, in one dtype (float16 in, float32 arithmetic), the mask additive [T_q, T_k]."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"need Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]; got {Q.shape}, {K.shape}, {V.shape}")
    tile_size = require_int("tile_size", tile_size, minimum=1)
    require_choice("empty_row", empty_row, ("error", "zero"))
    causal = require_bool("causal", causal)
    if window is not None:
        window = require_int("window", window, minimum=1)
        if not causal:
            raise ValueError("window counts keys back from the query, so it needs causal=True")
    query_start = require_int("query_start", query_start, minimum=0)
    if query_start and not causal:
        raise ValueError("query_start shifts the causal mask; pass causal=True (or build the offset into `mask`)")
    if sink is not None:
        sink = require_real("sink", sink)
    dtype = np.result_type(Q.dtype, K.dtype, V.dtype, np.float32)  # float16 in, float32 arithmetic
    Q, K, V = (x.astype(dtype, copy=False) for x in (Q, K, V))
    if mask is not None:
        mask = _as_additive(mask, (Q.shape[0], K.shape[0]), dtype)
    return Q, K, V, mask, tile_size, sink, causal, window, query_start


def _boolean_mask(allowed):
    """allowed as a boolean array (True = may read), refused when it holds anything else."""
    allowed = as_numpy("allowed", allowed)
    if allowed.dtype != bool:
        raise TypeError(f"allowed must be a boolean array (True = may read), got dtype {allowed.dtype}")
    return allowed


def _block_kinds_args(allowed, tile):
    """block_kinds' allowed, a non-empty boolean [T_q, T_k] mask, and tile, checked."""
    allowed, tile = _boolean_mask(allowed), require_int("tile", tile, minimum=1)
    if allowed.ndim != 2 or 0 in allowed.shape:
        raise ValueError(f"allowed must be a non-empty [T_q, T_k] mask, got shape {allowed.shape}")
    return allowed, tile


# %% tags=["exercise"]
# Exercise 6: Plain tiles. For each block of tile_size queries keep per-row m (start -inf),
# l (start 0) and an accumulator O (zeros, d_v wide). For each block of tile_size keys: compute the
# score tile Q_b K_c^T / sqrt(d_k), then the online update of the formula above. After the last
# key block, return O / l for every query block. Never build a T_q x T_k array.
def tiled_attention_plain(Q, K, V, *, tile_size=128):
    """Unmasked softmax attention, streamed over (query block, key block) tiles: output [T_q, d_v]."""
    Q, K, V, tile_size = _plain_tile_args(Q, K, V, tile_size)
    # Your code here.
    raise NotImplementedError('Exercise 6: see the instructions above')


# %%
check_exercise("Exercise 6", check_plain_tiled_contract, tiled_attention_plain, globals())


# %% [markdown]
# ### Step 2 · Causal skipping: only the tiles on or below the diagonal
#
# Query block $b$ reads key blocks $0$ to $b$; the blocks to the right of the diagonal lie wholly
# in the future and are never computed. Only the diagonal tile straddles the mask boundary.

# %% tags=["exercise"]
# Exercise 7: Causal skipping. Same as Exercise 6, but query i reads keys 0..i. K and V may hold more
# rows than Q, as a preallocated cache does: the rows after the last query are unwritten slots and may
# hold anything, even NaN, so never read them. For the query block [q0, q1) visit only key tiles that
# start at k0 <= q1 - 1 and end at or before key q1 - 1 (later keys are all in the future); inside a
# tile that straddles the diagonal, set the scores of keys after the query to -inf before the max.
# Return (output, tiles_computed), the number of score tiles you computed.
def causal_tiled_attention(Q, K, V, *, tile_size=128):
    """Causal softmax attention over tiles, skipping tiles above the block diagonal: (output, tiles_computed)."""
    Q, K, V, tile_size = _causal_tile_args(Q, K, V, tile_size)
    # Your code here.
    raise NotImplementedError('Exercise 7: see the instructions above')


# %%
check_exercise("Exercise 7", check_causal_tiled_contract, causal_tiled_attention, globals())

# %%
gen_tiles = np.random.default_rng(11)
Qt, Kt, Vt = (gen_tiles.standard_normal((64, 8)) for _ in range(3))
plain_out, (causal_out, causal_tiles) = tiled_attention_plain(Qt, Kt, Vt, tile_size=16), causal_tiled_attention(Qt, Kt, Vt, tile_size=16)
print(f"plain tiles vs dense: {np.abs(plain_out - sdpa(Qt, Kt, Vt)).max():.1e}; causal tiles vs dense: "
      f"{np.abs(causal_out - sdpa(Qt, Kt, Vt, make_mask(64))).max():.1e}; {causal_tiles} of {(64 // 16) ** 2} tiles computed")
expect("causal tiles equal dense causal attention", np.abs(causal_out - sdpa(Qt, Kt, Vt, make_mask(64))).max(), "<", 1e-12)

# %% tags=["hide-input"]
# @title Edge cases of the two tile kernels: the default tile, scores spanning thousands, the overflow guard at its boundary
if not causal_tiles == 4 * 5 // 2:
    raise ValueError(f"a 4 x 4 block grid has 10 tiles on or below the diagonal; counted {causal_tiles}")
expect("plain tiles equal dense attention", np.abs(plain_out - sdpa(Qt, Kt, Vt)).max(), "<", 1e-12)
for kernel in (tiled_attention_plain, causal_tiled_attention):
    expect(f"{kernel.__name__}'s default tile is the tau = 128 of the text", kernel.__kwdefaults__["tile_size"], "==", 128)
    expect_raises(ValueError, kernel, Qt, Kt, Vt, tile_size=0, match="tile_size")
    expect_raises(ValueError, kernel, Qt, Kt[:, :4], Vt, match="need Q")
    expect_raises(ValueError, kernel, Qt, Kt, Vt[:10], match="need Q")

# Scores spanning thousands (entries 40 x N(0, 1)): every row needs its own running max, rescaled whenever it grows.
gen_wide = np.random.default_rng(12)
Q_spread, K_spread, V_spread = 40 * gen_wide.standard_normal((8, 2)), 40 * gen_wide.standard_normal((8, 2)), gen_wide.standard_normal((8, 3))
spread = Q_spread @ K_spread.T / math.sqrt(2)
expect("the test scores span more than [-1000, 1000], and each row more than 709 (e^709 is float64's limit)",
       (spread.min() < -1000 < 1000 < spread.max(), bool((np.ptp(spread, axis=1) > 709).all())), "==", (True, True))
for tile in (1, 2, 3, 8):
    spread_causal, spread_tiles = causal_tiled_attention(Q_spread, K_spread, V_spread, tile_size=tile)
    expect(f"plain tiles of {tile} on wide scores equal dense", np.abs(tiled_attention_plain(Q_spread, K_spread, V_spread, tile_size=tile) - sdpa(Q_spread, K_spread, V_spread)).max(), "<", 1e-12)
    expect(f"causal tiles of {tile} on wide scores equal dense", np.abs(spread_causal - sdpa(Q_spread, K_spread, V_spread, make_mask(8))).max(), "<", 1e-12)
    expect(f"tiles of {tile}: the causal grid computes b (b + 1) / 2 of b x b tiles", spread_tiles, "==", -(-8 // tile) * (-(-8 // tile) + 1) // 2)

# The overflow guard at its boundary (d_k = 1, powers of two): scores and values up to 2^500 are streamed, beyond refused.
Q_edge, V_edge = np.array([[2.0**250], [1.0]]), np.array([[2.0**500], [1.0]])
for kernel in (tiled_attention_plain, lambda *a, **k: causal_tiled_attention(*a, **k)[0]):
    expect("a score of exactly 2^500 is streamed: both rows put all weight on value 2^500", kernel(Q_edge, Q_edge, V_edge, tile_size=1).tolist(), "==", [[2.0**500]] * 2)
    expect_raises(ValueError, kernel, Q_edge, 2 * Q_edge, V_edge, match="rescale")
    expect_raises(ValueError, kernel, Q_edge, Q_edge, 2 * V_edge, match="rescale")


# %% [markdown]
# ### Step 3 · Offsets and windows: queries after a cached prefix, and tiles skipped on the left
#
# The complete kernel adds a sink, an additive mask, overflow checks and empty rows, all written
# for you; what is left is where a query block's keys begin and end when its queries sit at
# absolute positions $p_0 + i$, and the mask inside a tile that straddles a boundary.

# %% tags=["exercise"]
# Exercise 8: Offsets and windows. Everything else of tiled attention is written for you: the sink,
# an additive mask, overflow checks and empty rows. Fill in the two marked places. (1) The key range
# of a query block whose queries sit at absolute positions first..last (= query_start + q0 ..
# query_start + q1 - 1): with causal=True no key after last; with a window, no key before
# first - window + 1. (2) Inside a tile that straddles a boundary, block the future and, with a
# window, the keys with query_pos - key_pos >= window.
def tiled_attention(Q, K, V, mask=None, *, tile_size=128, sink=None, empty_row="error", causal=False, window=None, query_start=0):
    """Exact softmax attention streamed over (query block, key block) pairs, never holding a T_q x T_k matrix.

    Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]; mask [T_q, T_k] additive (optional). With causal=True, query i
    sits at absolute position query_start + i and reads keys 0 .. that position (the last `window` of them
    if window is set). sink is one scalar logit with a zero value. Float16 inputs are computed in float32.
    """
    Q, K, V, mask, tile_size, sink, causal, window, query_start = _tiled_args(Q, K, V, mask, tile_size, sink, empty_row, causal, window, query_start)
    dtype = Q.dtype  # float32 or float64: float16 inputs arrive as float32
    (n_q, d_k), (n_k, d_v) = Q.shape, V.shape
    scale = 1.0 / math.sqrt(d_k)
    # Every entry of Q @ K^T is at most d_k max|q| max|k|: while that bound is finite, no tile needs the finiteness check.
    maybe_overflow = not d_k * float(np.abs(Q).max()) * float(np.abs(K).max()) < float(np.finfo(dtype).max)
    out = np.empty((n_q, d_v), dtype=dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for q0 in range(0, n_q, tile_size):
            q1 = min(q0 + tile_size, n_q)
            first, last = query_start + q0, query_start + q1 - 1  # absolute positions of the block's queries
            k_lo, k_hi = 0, n_k
            # Your code here.
            raise NotImplementedError('Exercise 8: see the instructions above')
            m = np.full(q1 - q0, -np.inf if sink is None else sink, dtype=dtype)  # running max per row
            l = np.full(q1 - q0, 0.0 if sink is None else 1.0, dtype=dtype)  # running sum; the sink adds e^(sink - m) = 1
            acc = np.zeros((q1 - q0, d_v), dtype=dtype)  # running numerator A
            for k0 in range(k_lo - k_lo % tile_size, k_hi, tile_size):
                k1 = min(k0 + tile_size, n_k)
                s = Q[q0:q1] @ K[k0:k1].T  # (B_q, B_k): the only score tile alive
                s *= scale
                if maybe_overflow and not np.isfinite(s).all():
                    raise FloatingPointError("Q @ K^T overflowed; rescale Q and K (or compute in float64)")
                if mask is not None:
                    bias = mask[q0:q1, k0:k1]
                    s += bias
                    if np.any(np.isfinite(bias) & ~np.isfinite(s)):
                        raise FloatingPointError("adding a finite mask bias overflowed the score; use a smaller bias (or -inf to block)")
                if causal and not (k1 - 1 <= first and (window is None or last - k0 < window)):  # the block straddles a boundary
                    query_pos, key_pos = np.arange(first, last + 1)[:, None], np.arange(k0, k1)[None, :]
                    # Your code here.
                    raise NotImplementedError('Exercise 8: see the instructions above')
                    s[blocked] = -np.inf
                m_new = np.maximum(m, s.max(axis=1))
                safe = np.where(m_new == -np.inf, 0.0, m_new)  # rows with nothing allowed yet: no -inf - -inf
                alpha = np.exp(m - safe)  # rescales what was accumulated under the old max
                s -= safe[:, None]
                np.exp(s, out=s)  # P, in place: blocked entries become exactly 0
                l = alpha * l + s.sum(axis=1)
                acc *= alpha[:, None]
                acc += s @ V[k0:k1]
                m = m_new
            filled = l > 0
            if empty_row == "error" and not filled.all():
                raise ValueError(
                    f"query {q0 + int(np.argmin(filled))} has no allowed key; fix the mask or pass empty_row='zero'"
                )
            np.divide(acc, l[:, None], out=acc, where=filled[:, None])  # an empty row keeps its accumulator of zeros
            out[q0:q1] = acc
    return out


# %%
check_exercise("Exercise 8", check_tiled_attention_contract, tiled_attention, globals())

# %%
n40 = 40
Q40, K40, V40 = (rng.standard_normal((n40, 16)) for _ in range(3))
for name, m in (("causal", make_mask(n40)), ("window 8", make_mask(n40, 8)), ("window 8 + 2 sinks", make_mask(n40, 8, 2))):
    error = np.abs(tiled_attention(Q40, K40, V40, m, tile_size=7) - sdpa(Q40, K40, V40, m)).max()
    print(f"{name:20s} tiled (tile 7) vs dense: max |difference| {error:.1e}")
    expect("error < 1e-12", error, "<", 1e-12)

# %% tags=["hide-input"]
# @title Edge cases of tiled_attention: window and sink arguments, empty rows and tiles, float16, overflowing biases
expect("np.abs(tiled_attention(Q40, K40, V40, tile_size=7, causal=True, window=8) - sdpa(Q40, K40, V40, make_mask(n40, 8))).max() < 1e-12", np.abs(tiled_attention(Q40, K40, V40, tile_size=7, causal=True, window=8) - sdpa(Q40, K40, V40, make_mask(n40, 8))).max(), "<", 1e-12)
expect("np.abs(tiled_attention(Q40, K40, V40, tile_size=7, causal=True, sink=1.3) - sdpa(Q40, K40, V40, make_mask(n40), sink=1.3)).max() < 1e-12", np.abs(tiled_attention(Q40, K40, V40, tile_size=7, causal=True, sink=1.3) - sdpa(Q40, K40, V40, make_mask(n40), sink=1.3)).max(), "<", 1e-12)

# Empty rows and empty tiles: the zero policy matches dense; a lone allowed key in the last tile is found.
nothing = np.full((n40, n40), -np.inf)
expect('np.all(tiled_attention(Q40, K40, V40, nothing, tile_size=7, empty_row="zero") == 0)', np.all(tiled_attention(Q40, K40, V40, nothing, tile_size=7, empty_row="zero") == 0))
expect('np.all(sdpa(Q40, K40, V40, nothing, empty_row="zero") == 0)', np.all(sdpa(Q40, K40, V40, nothing, empty_row="zero") == 0))
last_only = np.full((1, 9), -np.inf)
last_only[0, -1] = 0.0
expect("np.allclose(tiled_attention(Q40[:1], K40[:9], V40[:9], last_only, tile_size=2), V40[8:9], atol=1e-12)", np.allclose(tiled_attention(Q40[:1], K40[:9], V40[:9], last_only, tile_size=2), V40[8:9], atol=1e-12))

# Float16 inputs are computed, and returned, in float32 by both implementations.
Q16, K16, V16 = (x.astype(np.float16) for x in (Q40, K40, V40))
dense16, tiled16 = sdpa(Q16, K16, V16, make_mask(n40)), tiled_attention(Q16, K16, V16, tile_size=7, causal=True)
print(f"float16 inputs: dtypes {dense16.dtype} / {tiled16.dtype}, max |difference| {np.abs(dense16 - tiled16).max():.1e}")
expect("dense16.dtype == tiled16.dtype == np.float32", dense16.dtype == tiled16.dtype == np.float32)
expect("np.allclose(dense16, tiled16, atol=2e-6)", np.allclose(dense16, tiled16, atol=2e-6))

# A huge but finite bias that overflows a finite score is rejected by both, never read as "blocked".
f32_max = float(np.finfo(np.float32).max)
q_big = np.array([[math.sqrt(0.75 * f32_max)]], dtype=np.float32)
for sign in (1.0, -1.0):
    for attention in (sdpa, tiled_attention):
        expect_raises(FloatingPointError, attention, q_big, sign * q_big, np.ones((1, 1), np.float32),
                      np.array([[sign * 0.75 * f32_max]], np.float32), match="mask bias")
        # ... also when only one of the row's biases overflows its score.
        expect_raises(FloatingPointError, attention, q_big, np.full((2, 1), sign * q_big[0, 0]), np.ones((2, 1), np.float32),
                      np.array([[sign * 0.75 * f32_max, 0.0]], np.float32), match="mask bias")
# One score that overflows among finite ones is refused; a bound that could overflow with scores that do not is computed.
Q_over, K_over = np.array([[2.0, 2.0], [1e-3, 1e-3]]), np.array([[1e308, 1e308], [1.0, 1.0]])
expect("huge but orthogonal q and k score 0 and are computed", tiled_attention(np.array([[1e200, 0.0]]), np.array([[0.0, 1e200]]), np.ones((1, 1))).tolist(), "==", [[1.0]])

# %% tags=["hide-input"]
# @title Bad inputs are refused: the argument checks of the cell above
expect_raises(FloatingPointError, tiled_attention, Q_over, K_over, np.ones((2, 1)), match="Q @ K^T overflowed");

# %% [markdown]
# **Cached prefixes and chunked decoding.** During generation the first tokens' keys and values
# are already cached, and only the new queries are computed. Below, 9 tokens are split as
# "prefix of 5, then 1 new token" and "prefix of 4, then 3 new tokens"; with `query_start` the
# new rows equal the corresponding rows of full attention, with and without a window. The
# negative test builds the mask from *local* positions (the new query at position 0), which
# blocks every cached key but the first.

# %%
cache_rng = np.random.default_rng(505)
Qp, Kp, Vp = cache_rng.normal(size=(9, 6)), cache_rng.normal(size=(9, 6)), cache_rng.normal(size=(9, 4))
for window in (None, 3):
    complete = sdpa(Qp, Kp, Vp, make_mask(9, window))
    for prefix, count in ((0, 9), (5, 1), (4, 3)):
        end = prefix + count
        streamed = tiled_attention(Qp[prefix:end], Kp[:end], Vp[:end], causal=True, window=window, query_start=prefix, tile_size=2)
        expect(f"window {window}, queries {prefix}..{end - 1}: the cached-prefix stream equals the full pass", np.abs(streamed - complete[prefix:end]).max(), "<", 1e-12)
local_positions = sdpa(Qp[5:6], Kp[:6], Vp[:6], additive_mask(np.tri(1, 6, dtype=bool)))  # the bug: position 0 instead of 5
print(f"decode with local positions vs correct: max |difference| {np.abs(local_positions - complete[5:6]).max():.2f} (must be large)")
expect("not np.allclose(local_positions, sdpa(Qp[5:6], Kp[:6], Vp[:6]))", not np.allclose(local_positions, sdpa(Qp[5:6], Kp[:6], Vp[:6])))

# %% tags=["hide-input"]
# @title Edge cases of the cached-prefix stream: tiles of 1, rows with nothing to read, skipped tiles never read, the memory bound
expect("tiled_attention's default tile is the tau = 128 of the text", tiled_attention.__kwdefaults__["tile_size"], "==", 128)
expect("window=1 with tiles of 1: each query reads only its own key, so the output is V", np.abs(tiled_attention(Qp, Kp, Vp, tile_size=1, causal=True, window=1) - Vp).max(), "<", 1e-12)
expect("tiles of 1 with an additive mask equal dense", np.abs(tiled_attention(Qp, Kp, Vp, make_mask(9, 3), tile_size=1) - sdpa(Qp, Kp, Vp, make_mask(9, 3))).max(), "<", 1e-12)
holey40 = make_mask(n40)
holey40[5] = -np.inf

# Tiles that causality or the window rule out are never read. Keys planted in every skipped tile would overflow any
# score (dense attention refuses them), yet the stream returns the dense answer computed without them.
plant_rng = np.random.default_rng(7)
Q_plant, K_plant, V_plant = np.ones((2, 4)), plant_rng.normal(size=(12, 4)), plant_rng.normal(size=(12, 3))
for tile in (1, 2, 3, 4):
    for window, start in ((3, 6), (4, 5), (5, 7), (2, 8)):
        lo = max(0, start - window + 1)
        lo -= lo % tile  # the first key tile the block reads
        hi = min(12, lo + -(-(start + 2 - lo) // tile) * tile)  # the end of the tile holding the last query's key
        planted = K_plant.copy()
        planted[:lo], planted[hi:] = 1e308, 1e308
        streamed = tiled_attention(Q_plant, planted, V_plant, tile_size=tile, causal=True, window=window, query_start=start)
        dense_rows = sdpa(Q_plant, K_plant, V_plant, make_mask(12, window)[start:start + 2])
        expect(f"tiles of {tile}, window {window}, queries {start}, {start + 1}: skipped tiles are never read", np.abs(streamed - dense_rows).max(), "<", 1e-12)

# A query block holds tile_size rows: beyond its output the stream keeps a few tiles, never a T_q x tile strip.
Q_long = np.random.default_rng(8).normal(size=(512, 4))
tracemalloc.start()
try:
    tiled_attention(Q_long, Q_long, Q_long, tile_size=16, causal=True)
    stream_peak = tracemalloc.get_traced_memory()[1]
finally:
    tracemalloc.stop()
expect("tiled_attention's peak memory < its output + 16 tiles of 16 x 16", stream_peak, "<", Q_long.nbytes + 16 * 16 * 16 * 8)
report_section("Cached prefix, chunked decode, windows, sinks, empty tiles, float16 and overflow", globals())

# %% tags=["hide-input"]
# @title Bad inputs are refused: the argument checks of the cell above
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, query_start=2, match="causal=True")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, window=3, match="causal=True")
expect_raises(ValueError, tiled_attention, Qp, Kp[:, :5], Vp, match="d_k")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, tile_size=0, match="tile_size")
expect_raises(TypeError, tiled_attention, Qp, Kp, Vp, causal=1, match="causal")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, causal=True, window=0, match="window")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, causal=True, query_start=-1, match="query_start")
expect_raises(ValueError, tiled_attention, Q40, K40, V40, holey40, tile_size=7, match="query 5 has no allowed key")
expect_raises(ValueError, tiled_attention, Qp[:2], Kp[:3], Vp[:3], causal=True, window=2, query_start=6, match="no allowed key");


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_block_kinds (matplotlib only; reading it is optional)
def plot_block_kinds(panels, language="en"):
    """One grid per (title, kinds): which blocks tiled attention skips, masks, or computes whole."""
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap([Palette.PAPER, Palette.YELLOW, Palette.BLUE])
    fig, axes = plt.subplots(1, len(panels), figsize=(3.1 * len(panels), 2.9))
    for ax, (title, kinds) in zip(axes, panels):
        ax.imshow(kinds, cmap=cmap, vmin=0, vmax=2, interpolation="nearest")
        rows, cols = np.nonzero(np.asarray(kinds) == 1)  # masked blocks also carry a ×: not colour alone
        ax.scatter(cols, rows, marker="x", s=12, color=Palette.INK, linewidths=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(localized(language, "key block", "блок ключей"))
        ax.set_xticks([]), ax.set_yticks([])
        ax.grid(False)
    axes[0].set_ylabel(localized(language, "query block", "блок запросов"))
    fig.text(0.5, 0.02, localized(language, "grey: skipped    yellow, ×: computed and masked    blue: computed, no mask needed",
                                  "серый: пропущен    жёлтый, ×: считается с маской    синий: считается без маски"),
             ha="center", fontsize=9, color=Palette.MUTED)
    fig.subplots_adjust(wspace=0.15, left=0.06, right=0.99, bottom=0.16, top=0.88)
    return fig


# %%
def block_kinds(allowed, tile):
    """Classify each (query block, key block) of a boolean mask: 0 skipped, 1 partly allowed, 2 fully allowed."""
    allowed, tile = _block_kinds_args(allowed, tile)
    starts_q, starts_k = np.arange(0, allowed.shape[0], tile), np.arange(0, allowed.shape[1], tile)  # each block's first row, column
    some = np.logical_or.reduceat(np.logical_or.reduceat(allowed, starts_q, axis=0), starts_k, axis=1)  # (query blocks, key blocks)
    every = np.logical_and.reduceat(np.logical_and.reduceat(allowed, starts_q, axis=0), starts_k, axis=1)
    return np.where(every, 2, np.where(some, 1, 0))  # a whole-array pass: no Python loop over the blocks


blocks_causal = block_kinds(np.isfinite(make_mask(1024)), 64)  # the same 16 x 16 grid as n = 2048, tile 128
blocks_window = block_kinds(np.isfinite(make_mask(1024, window=128)), 64)  # ... and as a window of 256 there
for name, kinds in (("causal", blocks_causal), ("window 2 tiles", blocks_window)):
    print(f"16 x 16 blocks, {name:14s}: {int((kinds > 0).sum()):3d} of {kinds.size} computed, {int((kinds == 1).sum())} of them masked")
REFERENCE.check("tiled.blocks_causal_2048_128", int((blocks_causal > 0).sum()))
show_figure(
    plot_block_kinds([(localized(LANGUAGE, "causal, 16 x 16 blocks", "каузальная, 16 x 16 блоков"), blocks_causal),
                      (localized(LANGUAGE, "window of 2 blocks", "окно в 2 блока"), blocks_window)], language=LANGUAGE),
    "Each square is one block of the score matrix (128 x 128 when n = 2048): rows are query blocks, columns key blocks. "
    "Grey blocks are never computed, yellow ones marked × straddle the mask boundary and are masked inside, blue ones are "
    "computed with no mask at all. Causal attention skips almost half the blocks; a window skips all but a band.",
)
report_section("Tiled attention", globals())

# %% tags=["hide-input"]
# @title By-hand checks of block_kinds: partial blocks, tiles of 1, one query row, a tensor input
REFERENCE.check("tiled.blocks_window_256_2048_128", int((blocks_window > 0).sum()))
# By hand: a 5 x 3 causal mask in 2 x 2 blocks (the last row and column of blocks are partial): rows of blocks read
# [partly, skipped], [full, full], [full, full]. Tile 1 gives the mask itself; one query row gives one row of blocks.
expect("block_kinds(np.tri(5, 3, dtype=bool), 2)", block_kinds(np.tri(5, 3, dtype=bool), 2).tolist(), "==", [[1, 0], [2, 2], [2, 2]])
expect("block_kinds(np.tri(3, dtype=bool), 1)", block_kinds(np.tri(3, dtype=bool), 1).tolist(), "==", [[2, 0, 0], [2, 2, 0], [2, 2, 2]])
expect("block_kinds(np.ones((1, 5), dtype=bool), 2)", block_kinds(np.ones((1, 5), dtype=bool), 2).tolist(), "==", [[2, 2, 2]])
expect("a boolean tensor is read like the array", block_kinds(torch.from_numpy(np.tri(5, 3, dtype=bool)), 2).tolist(), "==", [[1, 0], [2, 2], [2, 2]])

# %% tags=["hide-input"]
# @title Bad inputs are refused: the argument checks of the cell above
expect_raises(ValueError, block_kinds, np.isfinite(make_mask(8)), 0, match="tile")
expect_raises(TypeError, block_kinds, make_mask(8), 2, match="boolean")
expect_raises(ValueError, block_kinds, np.ones(4, dtype=bool), 2, match="non-empty [T_q, T_k]")
expect_raises(ValueError, block_kinds, np.ones((0, 4), dtype=bool), 2, match="non-empty [T_q, T_k]");


# %% [markdown]
# ### Step 4 · The backward pass: recompute the tiles, keep two numbers per row
#
# **Idea.** Training needs the gradients of the loss with respect to $Q$, $K$ and $V$. Autograd on
# dense attention keeps the $n \times n$ weights $P$ of the forward pass to use them again backwards.
# FlashAttention keeps only the output $O$ and one number per row, the log-sum-exp
# $\text{lse}_i = m_i + \log \ell_i$, and recomputes each score tile: $e^{S - \text{lse}}$ gives the
# forward's weights exactly. The one row-wide number the softmax's gradient needs,
# $D_i = \sum_j P_{ij}\, dP_{ij}$, equals $dO_i \cdot O_i$, so it comes from the saved output without
# any row of $P$. FlashAttention-2's backward pass ([Dao, 2023](https://arxiv.org/abs/2307.08691),
# Algorithm 2) puts the key blocks in the outer loop: a key block's $dK$ and $dV$ add up locally,
# while $dQ$ collects one contribution from every key block.
#
# $$P = e^{S - \text{lse}}, \qquad dV = P^\top dO, \qquad dP = dO\, V^\top, \qquad D = \operatorname{rowsum}(dO \circ O)$$
#
# $$dS = P \circ (dP - D), \qquad dQ = \frac{dS\, K}{\sqrt{d_k}}, \qquad dK = \frac{dS^\top Q}{\sqrt{d_k}}$$
#
# | Symbol | Meaning | Shape |
# |---|---|---|
# | $dO$ | gradient of the loss with respect to the output | $T_q \times d_v$ |
# | $\text{lse}$ | the forward's log-sum-exp per row, $m + \log \ell$ (`lse`) | $T_q$ |
# | $D$ | $\operatorname{rowsum}(dO \circ O)$, equal to $\operatorname{rowsum}(P \circ dP)$ | $T_q$ |
# | $dP$, $dS$ | gradients with respect to one tile's weights and scores | $\tau \times \tau$ |
#
# **By hand.** A query that reads a single key has $P = 1$ and $O = v$, so
# $dS = dO \cdot v - dO \cdot O = 0$: it hands its whole gradient to that value ($dV = dO$) and none
# to its query or key. The first row of causal attention is such a query, so its $dQ$ is zero.

# %% tags=["hide-input"]
# @title The argument checks of the measuring tools and of the backward pass below (open to read)
def _timing_args(function, repeats=1):
    """function when it is callable, and repeats from 1 to 100 (a timing, not a benchmark run)."""
    repeats = require_int("repeats", repeats, minimum=1, maximum=100)  # a timing, not a benchmark run
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    return function, repeats


def _refuse_backward_overflow(Q, K, V, O, dO, lse):
    """Refuse entries past 2^200: the backward multiplies three of them (dS K = P (dO V^T - D) K / sqrt(d_k))."""
    _refuse_overflow(Q, K)
    if max(float(np.abs(x).max()) for x in (Q, K, V, O, dO, lse)) > 2.0**200:
        raise ValueError("entries of Q, K, V, O, dO or lse are so large (past 2^200) that the gradients could overflow; rescale them first")


def _logsumexp_args(Q, K, tile_size, causal):
    """tiled_logsumexp's Q [T_q, d_k], K [T_k, d_k] (T_k >= T_q when causal), tile_size and causal, checked."""
    Q, K = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2)
    if Q.shape[1] != K.shape[1] or (causal and len(K) < len(Q)):
        raise ValueError(f"need Q [T_q, d_k] and K [T_k, d_k], with T_k >= T_q when causal; got {Q.shape} and {K.shape}")
    tile_size, causal = require_int("tile_size", tile_size, minimum=1), require_bool("causal", causal)
    _refuse_overflow(Q, K)
    return Q, K, tile_size, causal


def _backward_args(Q, K, V, O, dO, lse, tile_size, causal):
    """tiled_attention_backward's inputs, checked: shapes that fit together, entries too small to overflow the gradients."""
    Q, K, V, O, dO = (require_array(name, x, ndim=2) for name, x in (("Q", Q), ("K", K), ("V", V), ("O", O), ("dO", dO)))
    lse = require_array("lse", lse, ndim=1)
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0] or O.shape != (len(Q), V.shape[1]) or dO.shape != O.shape or lse.shape != (len(Q),):
        raise ValueError(f"need Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v], O and dO [T_q, d_v], lse [T_q]; got {Q.shape}, {K.shape}, "
                         f"{V.shape}, {O.shape}, {dO.shape}, {lse.shape}")
    tile_size, causal = require_int("tile_size", tile_size, minimum=1), require_bool("causal", causal)
    _refuse_backward_overflow(Q, K, V, O, dO, lse)
    return Q, K, V, O, dO, lse, tile_size, causal


# %%
def peak_traced_bytes(function, *args, **kwargs):
    """Peak bytes that Python and NumPy allocate while ``function`` runs (tracemalloc), its output included."""
    function, _ = _timing_args(function)
    tracemalloc.start()
    try:
        function(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def tiled_logsumexp(Q, K, *, tile_size=128, causal=True):
    """Per-row log-sum-exp of the scaled scores, streamed over key tiles: the number FlashAttention-2's forward saves."""
    Q, K, tile_size, causal = _logsumexp_args(Q, K, tile_size, causal)
    lse = np.empty(len(Q))
    for q0 in range(0, len(Q), tile_size):
        q1 = min(q0 + tile_size, len(Q))
        last = q1 if causal else len(K)  # keys 0 .. last - 1 are read
        m, l = np.full(q1 - q0, -np.inf), np.zeros(q1 - q0)
        for k0 in range(0, last, tile_size):
            k1 = min(k0 + tile_size, last)
            s = Q[q0:q1] @ K[k0:k1].T / math.sqrt(Q.shape[1])  # (B_q, B_k)
            if causal:
                s[np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None]] = -np.inf
            m_new = np.maximum(m, s.max(axis=1))  # finite: key 0 is allowed for every row
            l = np.exp(m - m_new) * l + np.exp(s - m_new[:, None]).sum(axis=1)
            m = m_new
        lse[q0:q1] = m + np.log(l)
    return lse


# %% tags=["exercise"]
# Exercise 9: The backward pass, FlashAttention-2's way. From the saved output O, the per-row
# log-sum-exp lse and the upstream gradient dO, return (dQ, dK, dV). Compute D = rowsum(dO * O) once.
# For each key block (outer loop) and each query block that reads it (inner loop): recompute
# S = Q_b K_c^T / sqrt(d_k) (with -inf for keys after the query when causal), P = exp(S - lse_b), then
# dV_c += P^T dO_b, dP = dO_b V_c^T, dS = P * (dP - D_b), dQ_b += dS K_c / sqrt(d_k) and
# dK_c += dS^T Q_b / sqrt(d_k). Never build a T_q x T_k array, and do not call autograd.
def tiled_attention_backward(Q, K, V, O, dO, lse, *, tile_size=128, causal=True):
    """Gradients of softmax attention from the saved output and log-sum-exp, over tiles: (dQ, dK, dV)."""
    Q, K, V, O, dO, lse, tile_size, causal = _backward_args(Q, K, V, O, dO, lse, tile_size, causal)
    # Your code here.
    raise NotImplementedError('Exercise 9: see the instructions above')


# %%
check_exercise("Exercise 9", check_tiled_backward_contract, tiled_attention_backward, globals())

# %%
grad_rng = np.random.default_rng(31)
n_grad = 1024
Qg, Kg, Vg, dOg = (grad_rng.standard_normal((n_grad, 16)) for _ in range(4))
Og, _ = causal_tiled_attention(Qg, Kg, Vg, tile_size=64)
lse_g = tiled_logsumexp(Qg, Kg, tile_size=64)
tiled_grads = tiled_attention_backward(Qg, Kg, Vg, Og, dOg, lse_g, tile_size=64)
q_t, k_t, v_t = (torch.tensor(x, requires_grad=True) for x in (Qg, Kg, Vg))  # float64, as the arrays
F.scaled_dot_product_attention(q_t, k_t, v_t, is_causal=True).backward(torch.tensor(dOg))
grad_error = max(float(np.abs(g - t.grad.numpy()).max()) for g, t in zip(tiled_grads, (q_t, k_t, v_t)))
backward_peak = peak_traced_bytes(tiled_attention_backward, Qg, Kg, Vg, Og, dOg, lse_g, tile_size=64)
print(f"tiled backward vs autograd on dense attention, n = {n_grad}: max |difference| {grad_error:.1e}")
print(f"peak memory of the tiled backward: {backward_peak / MIB:.2f} MiB; one {n_grad} x {n_grad} float64 matrix: {n_grad**2 * 8 / MIB:.0f} MiB")
expect("the tiled gradients equal autograd's to 1e-10", grad_error, "<", 1e-10)
expect("the tiled backward's peak, its three gradients included, is below an eighth of one T x T matrix", backward_peak, "<", n_grad**2 * 8 / 8)
expect("by hand: the first query reads one key, so its dQ is zero", float(np.abs(tiled_grads[0][0]).max()), "<", 1e-12)
report_section("The tiled backward pass", globals())

# %% tags=["hide-input"]
# @title Bad inputs are refused: the argument checks of the two cells above
expect_raises(ValueError, tiled_logsumexp, Qg, Kg[:10], match="T_k >= T_q")
expect_raises(ValueError, tiled_attention_backward, Qg, Kg, Vg, Og, dOg, lse_g[:5], match="lse")
expect_raises(TypeError, tiled_attention_backward, Qg, Kg, Vg, Og, dOg, lse_g, causal=1, match="causal")
expect_close("tiled_logsumexp without a mask equals log-sum-exp of the whole score matrix", tiled_logsumexp(Qg[:9], Kg[:7], tile_size=3, causal=False),
             np.log(np.exp(Qg[:9] @ Kg[:7].T / math.sqrt(16)).sum(axis=1)));


# %% [markdown]
# ## 8. What tiling buys: memory that grows like $n$, and less work
#
# **Idea.** Dense attention holds the whole score matrix, and usually a few same-sized
# temporaries (the masked scores, their exponentials, the weights): memory $\propto n^2$. Tiled
# attention holds the output, the per-row running numbers and one tile at a time: memory
# $\propto n$. Skipping empty blocks also does less arithmetic, and a tile that fits in the
# processor's cache is faster to work on than a matrix that does not. (On a GPU the win is the
# same in kind and larger: the tiles live in fast on-chip memory, and reads of main memory
# dominate.)
#
# $$\text{dense scores} = n^2 \cdot b, \qquad \text{one tile} = \tau^2 \cdot b, \qquad \frac{\text{dense}}{\text{tile}} = \left(\frac{n}{\tau}\right)^2$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $n$ | sequence length | 4,096 or 8,192 |
# | $\tau$ | tile size (`tile_size`) | 128 |
# | $b$ | bytes per score | 4 (float32) |
#
# **By hand.** In float32 one $4096 \times 4096$ score matrix is $2^{12} \cdot 2^{12} \cdot 4 = 64$ MiB
# per head, $8192^2$ is 256 MiB, and one $128 \times 128$ tile is 64 KiB: 1,024 and 4,096 times
# less. Below we measure real peaks with `tracemalloc` (NumPy reports its buffers to it), in
# float64, output included.

# %%
def best_seconds(function, *args, repeats=3, **kwargs):
    """The fastest of ``repeats`` wall-clock runs of ``function`` (time.perf_counter)."""
    function, repeats = _timing_args(function, repeats)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


score_bytes = {f"n_{n}_fp32_bytes": n * n * 4 for n in (4096, 8192)}
score_bytes["tile_128_fp32_bytes"] = 128 * 128 * 4

LENGTHS = (128, 256, 512, 1024)
memory, faster = {"dense": [], "tiled": []}, {}
sys.stdout.flush()  # nothing is printed while memory is traced: the kernel's output thread allocates too
for n in LENGTHS:
    Qm, Km, Vm = (rng.standard_normal((n, 64)) for _ in range(3))
    causal_n = make_mask(n)  # built outside the measurements: only attention's own allocations count
    memory["dense"].append(peak_traced_bytes(sdpa, Qm, Km, Vm, causal_n))
    memory["tiled"].append(peak_traced_bytes(tiled_attention, Qm, Km, Vm, causal=True))
    if n >= 512:  # wall times vary; only a verdict with a wide margin is printed
        faster[n] = best_seconds(tiled_attention, Qm, Km, Vm, causal=True) < best_seconds(sdpa, Qm, Km, Vm, causal_n)
for key, value in score_bytes.items():
    print(f"{key:20s} {value / MIB:8.3f} MiB, {value // score_bytes['tile_128_fp32_bytes']:,} tiles")
print(f"{'n':>5} {'dense peak MiB':>15} {'tiled peak MiB':>15} {'dense / tiled':>14} {'tiled faster?':>14}")
for n, dense_bytes, tiled_bytes in zip(LENGTHS, memory["dense"], memory["tiled"]):
    verdict = ("yes" if faster[n] else "no") if n in faster else "-"
    print(f"{n:>5} {dense_bytes / MIB:>15.2f} {tiled_bytes / MIB:>15.2f} {dense_bytes / tiled_bytes:>14.0f} {verdict:>14}")
dense_growth = memory["dense"][-1] / memory["dense"][-2]
tiled_growth = memory["tiled"][-1] / memory["tiled"][-2]
print(f"from n = 512 to 1024: dense peak x{dense_growth:.1f}, tiled peak x{tiled_growth:.1f}")
expect('memory["dense"][-1] > 10 * memory["tiled"][-1]', memory["dense"][-1], ">", 10 * memory["tiled"][-1])

# %% tags=["hide-input"]
# @title The score matrix's sizes against the frozen reference, and the growth of both peaks (checked; open to read)
for key, value in score_bytes.items():
    REFERENCE.check(f"score_matrix.{key}", value)
expect("dense_growth > 3.5", dense_growth, ">", 3.5)
expect("tiled_growth < 2.2", tiled_growth, "<", 2.2)


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_memory_vs_length (matplotlib only; reading it is optional)
def plot_memory_vs_length(lengths, memory, language="en"):
    """Measured peak memory of dense and tiled attention against sequence length, with the n x n matrix for scale."""
    n = np.array(lengths, dtype=float)
    dense, tiled = (np.round(np.array(memory[kind]) / MIB, 2) for kind in ("dense", "tiled"))  # as printed: bytes jitter a little
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    ax.plot(n, dense, color=Palette.RED, linestyle="-", marker="o", markevery=1, label=localized(language, "dense, measured", "плотное, измерено"))
    ax.plot(n, tiled, color=Palette.GREEN, linestyle="--", marker="s", markevery=1, label=localized(language, "tiled, measured", "плиточное, измерено"))
    ax.plot(n, n * n * 8 / MIB, color=Palette.GREY, linestyle=":", marker="", label=localized(language, "one n × n float64 matrix", "одна матрица n × n, float64"))
    log_scale(ax, "both")
    ax.set_xticks(n, [str(int(v)) for v in n])
    ax.set_xlabel(localized(language, "sequence length n (d = 64, causal)", "длина последовательности n (d = 64, каузально)"))
    ax.set_ylabel(localized(language, "peak memory, MiB", "пик памяти, МиБ"))
    ax.set_title(localized(language, "Dense grows like n², tiled like n", "Плотное растёт как n², плиточное как n"))
    ax.legend(fontsize=9)
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.17, top=0.89)
    return fig


# %%
show_figure(
    plot_memory_vs_length(LENGTHS, memory, language=LANGUAGE),
    "Both axes are logarithmic, so a line's slope is the power of n. Dense attention (red, solid, circles) has slope 2: its peak "
    "quadruples when n doubles and sits a few n x n float64 matrices (dotted) high. Tiled attention (green, dashed, squares) is the "
    "output, which grows like n, plus tile buffers of fixed size, so its slope is at most 1 and flatter at small n. "
    "The gap between red and green widens with every doubling.",
)
report_section("Memory and speed of tiled attention", globals())

# %% tags=["hide-input"]
# @title The two measuring tools on answers known in advance: a 1 MiB buffer, and a programmed clock (no wall time decides these)
expect("a function that builds a 1 MiB array peaks at 1 MiB or more", peak_traced_bytes(np.ones, 2**17), ">=", 2**20)
_clock_ticks = iter([0.0, 0.020, 1.0, 1.001, 2.0, 2.001])  # the first run takes 20 ms, the next two 1 ms each
_clocked_best = types.FunctionType(best_seconds.__code__, {**globals(), "time": types.SimpleNamespace(perf_counter=lambda: next(_clock_ticks))})
_clocked_best.__kwdefaults__ = best_seconds.__kwdefaults__
_clocked_runs = []
expect_close("best_seconds keeps the fastest of its 3 runs: 1 ms, not the 20 ms of the first", _clocked_best(lambda: _clocked_runs.append(None)), 0.001)
expect("best_seconds runs the function 3 times by default", len(_clocked_runs), "==", 3)
expect("best_seconds accepts up to 100 repeats", best_seconds(int, repeats=100), ">=", 0.0)
expect_raises(ValueError, best_seconds, int, repeats=0, match="repeats")
expect_raises(ValueError, best_seconds, int, repeats=101, match="repeats")
expect_raises(TypeError, best_seconds, None, match="callable");


# %% [markdown]
# **Speed.** The table's last column compares best-of-3 wall times: the tiled version computes
# about half the blocks (causal), in cache-sized pieces, so on a CPU it can beat the dense NumPy
# attention despite its Python loop; the column says whether it did in this run. Wall times differ
# between runs and machines, so the notebook prints only that verdict and checks nothing about it;
# the measurement in the next subsection prints ratios.
#
# ### What NumPy cannot show: FlashAttention is about the memory hierarchy
#
# **Idea.** A GPU has two memories that matter here. **HBM**, the large off-chip memory: an
# NVIDIA H100 SXM has 80 GB of HBM3 at 3.35 TB/s. **SRAM**, the small on-chip memory next to the
# arithmetic units: 228 KiB of shared memory per streaming multiprocessor (NVIDIA writes "228 KB"
# for $228 \times 1{,}024$ bytes), 132 of them, about 30 MB in all. Between the two sits a 50 MB **L2
# cache** that all SMs share. The tensor cores do 989 TFLOP/s in dense 16-bit arithmetic (the
# datasheet's 1,979 assumes 2:4 sparsity) ([NVIDIA H100 datasheet](https://www.nvidia.com/en-us/data-center/h100/) and
# [Hopper architecture](https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/)).
# NVIDIA does not publish the SRAM bandwidth; the FlashAttention paper estimates about 19 TB/s on
# an A100, an order of magnitude above its 1.5 to 2.0 TB/s of HBM. Plain attention writes the
# $n \times n$ scores to HBM, reads them back for the softmax, writes the weights, reads them for
# $PV$: it is limited by HBM traffic, not by arithmetic. FlashAttention's contribution is to count
# that traffic (its *IO complexity*) and cut it, not to do fewer multiplications.
#
# The paper ([Dao et al., 2022](https://arxiv.org/abs/2205.14135), Theorem 2) states the traffic as
# $\Theta(nd + n^2)$ for standard attention against $\Theta(n^2 d^2 / M_{\text{sram}})$ for FlashAttention.
# A Θ hides constants, so two Θ-bounds cannot be divided into "times fewer". We count instead, in numbers
# read from or written to HBM, every load and store that the paper's two algorithms list, for one head
# in the forward pass, without mask or dropout. Algorithm 1 is FlashAttention-1's loop order, key
# blocks outside and query blocks inside, not the one section 7 teaches. Standard attention (the paper's Algorithm 0) reads $Q$
# and $K$, writes $S$, reads $S$, writes $P$, reads $P$ and $V$, and writes $O$. FlashAttention (its
# Algorithm 1) initialises $O$, $\ell$ and $m$ in HBM, reads each key-value block once, and for each of
# the $T_c$ key-value blocks reads all of $Q$, $O$, $\ell$, $m$ and writes $O$, $\ell$, $m$ back:
#
# $$\text{standard} = 4nd + 4n^2, \qquad \text{FlashAttention} = \underbrace{nd + 2n}_{\text{initialise}} + \underbrace{2nd}_{K,\,V} + T_c\,(3nd + 4n), \qquad \text{floor} = 4nd$$
#
# $$B_c = \left\lceil \frac{M_{\text{sram}}}{4d} \right\rceil, \qquad B_r = \min\left(B_c, d\right), \qquad T_c = \left\lceil \frac{n}{B_c} \right\rceil$$
#
# | Symbol | Meaning | H100, 16-bit |
# |---|---|---|
# | $n$, $d$ | sequence length, head width | 8,192, 128 |
# | $M_{\text{sram}}$ | SRAM size in numbers (not a mask) | 228 KiB / 2 bytes = 116,736 |
# | $B_c$, $B_r$ | FlashAttention's key and query block sizes (section 7's $\tau$), chosen so that $Q_b$, $K_c$, $V_c$ and $O$ fit in $M_{\text{sram}}$ | 228, 128 |
# | $T_c$ | key-value blocks, so passes over $Q$ and $O$ | 36 |
# | floor | reading $Q$, $K$, $V$ and writing $O$ once: no exact method moves less | $4nd$ |
#
# **By hand.** At $n = 8{,}192$: standard attention moves $4 \cdot 8{,}192 \cdot 128 + 4 \cdot 8{,}192^2
# \approx 2.73 \times 10^8$ numbers; FlashAttention, with $T_c = \lceil 8{,}192 / 228 \rceil = 36$ passes,
# moves about $1.18 \times 10^8$: 2.3 times fewer, not the $M_{\text{sram}} / d^2 \approx 7$ that dividing
# the two Θ-bounds suggests. For long inputs the ratio tends to $M_{\text{sram}} / (3d^2) \approx 2.4$: each pass
# over $Q$ also reads and writes $O$, three numbers per query element instead of one. Both counts stay
# above the floor of $4nd$, and FlashAttention's advantage grows with $M_{\text{sram}}$ and shrinks with $d$.
#
# Three more ideas finish the story. **Recomputation**: the backward pass needs the attention
# weights, but FlashAttention stores only the output $O$ and each row's two statistics, the max $m$
# and the sum $\ell$, and recomputes the score tiles from $Q$, $K$ and them, trading cheap
# arithmetic for expensive HBM traffic (the paper's section 3.1). **FlashAttention-2** ([Dao, 2023](https://arxiv.org/abs/2307.08691))
# stores one number per row instead of two, the log-sum-exp $m + \log \ell$ (its section 3.1.1), and
# puts the query blocks in the outer loop, so each block's $m$, $\ell$ and $O$ stay on chip and the
# division by $\ell$ happens once at the end, exactly the loop order of section 7 and about 2x
# faster than FlashAttention. **FlashAttention-3** ([Shah et al., 2024](https://arxiv.org/abs/2407.08608))
# targets Hopper GPUs (H100), overlapping data movement and matrix multiplication asynchronously
# and adding FP8, for 1.5 to 2.0 times FlashAttention-2's speed; FlashAttention-4 (below) does the same
# for Blackwell, and PyTorch picks among such backends for you (below).

# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_hbm_accesses (matplotlib only; reading it is optional)
def plot_hbm_accesses(lengths, d, sram_numbers, language="en"):
    """Log-log lines: HBM numbers moved by standard attention and by FlashAttention against n, above the 4 n d floor."""
    rows = [attention_hbm_accesses(n, d, sram_numbers) for n in lengths]
    fig, ax = plt.subplots(figsize=(6.2, 2.8))
    ax.plot(lengths, [r["standard"] for r in rows], color=Palette.RED, linestyle="-", marker="o", markevery=1,
            label=localized(language, "standard: 4 n d + 4 n²", "стандартное: 4 n d + 4 n²"))
    ax.plot(lengths, [r["flash"] for r in rows], color=Palette.BLUE, linestyle="-", marker="s", markevery=1,
            label=localized(language, "FlashAttention: 3 n d + 2 n + T_c (3 n d + 4 n)", "FlashAttention: 3 n d + 2 n + T_c (3 n d + 4 n)"))
    ax.plot(lengths, [r["floor"] for r in rows], color=Palette.GREY, linestyle=":", marker="",
            label=localized(language, "floor: read Q, K, V and write O once, 4 n d", "минимум: прочитать Q, K, V и записать O, 4 n d"))
    log_scale(ax, "both")
    ax.set_xticks(lengths, [f"{n // 1024}k" for n in lengths], minor=False)  # the lengths drawn, one format on the axis
    ax.set_xticks([], minor=True)
    ax.set_xlabel(localized(language, "sequence length n", "длина последовательности n"))
    ax.set_ylabel(localized(language, "numbers moved to or from HBM", "чисел передано в HBM и из неё"))
    ax.set_title(localized(language, f"FlashAttention-1's count (d = {d}, M = {sram_numbers:,})", f"Подсчёт FlashAttention-1 (d = {d}, M = {sram_numbers:,})"))
    ax.legend(fontsize=9, loc="upper left")
    fig.subplots_adjust(left=0.13, right=0.98, bottom=0.18, top=0.88)
    return fig


# %%
def attention_hbm_accesses(n, d, sram_numbers):
    """Numbers read from or written to HBM by the FlashAttention paper's Algorithms 0 and 1 (one head, forward, no mask)."""
    n, d, sram_numbers = (require_int(name, v, minimum=1) for name, v in (("n", n), ("d", d), ("sram_numbers", sram_numbers)))
    passes = math.ceil(n / math.ceil(sram_numbers / (4 * d)))  # T_c = ceil(n / B_c): one pass over Q and O per key block
    return {"standard": 4 * n * d + 4 * n * n,  # read Q, K; write S; read S; write P; read P, V; write O
            "flash": (n * d + 2 * n) + 2 * n * d + passes * (3 * n * d + 4 * n),  # initialise O, l, m; read K, V; per pass
            "floor": 4 * n * d}  # read Q, K, V and write O, once


H100_SRAM_NUMBERS = 228 * 1024 // 2  # 228 KiB (NVIDIA: "228 KB") of shared memory per SM, 16-bit numbers
block_c = math.ceil(H100_SRAM_NUMBERS / (4 * 128))
block_r = min(block_c, 128)
io_8k = attention_hbm_accesses(8_192, 128, H100_SRAM_NUMBERS)
print(f"M_sram = {H100_SRAM_NUMBERS:,} numbers, d = 128: B_c = {block_c}, B_r = {block_r}, T_c = {math.ceil(8_192 / block_c)}")
print(f"n = 8,192: standard {io_8k['standard']:.3g} numbers, FlashAttention {io_8k['flash']:.3g}, floor {io_8k['floor']:.3g}: "
      f"x{io_8k['standard'] / io_8k['flash']:.2f} fewer; the Θ-bounds alone would say x{H100_SRAM_NUMBERS / 128**2:.1f}")
check_stated("B_c", block_c, 228, 0)
check_stated("the saving at n = 8,192 (x)", io_8k["standard"] / io_8k["flash"], 2.3, 1)
check_stated("the long-input limit M_sram / (3 d^2)", H100_SRAM_NUMBERS / (3 * 128**2), 2.4, 1);

# %% tags=["hide-input"]
# @title The HBM counts by hand on a tiny problem, and their argument check
# n = 4, d = 2, M = 8: B_c = 1, T_c = 4; standard 4*4*2 + 4*16 = 96; FlashAttention (8 + 8) + 16 + 4 * (24 + 16) = 192.
expect("attention_hbm_accesses(4, 2, 8) by hand", attention_hbm_accesses(4, 2, 8), "==", {"standard": 96, "flash": 192, "floor": 32})
expect("the smallest problem, n = d = M = 1, is accepted", attention_hbm_accesses(1, 1, 1), "==", {"standard": 8, "flash": 12, "floor": 4})
expect_raises(ValueError, attention_hbm_accesses, 0, 128, 1024, match="n");

# %%
HBM_LENGTHS = [1024, 2048, 4096, 8192, 16384, 32768]
hbm_rows = [attention_hbm_accesses(n, 128, H100_SRAM_NUMBERS) for n in HBM_LENGTHS]
expect("every count, standard and FlashAttention, at every n drawn, stays at or above the 4 n d floor",
       min(min(r["standard"], r["flash"]) / r["floor"] for r in hbm_rows), ">=", 1.0)
show_figure(
    plot_hbm_accesses(HBM_LENGTHS, 128, H100_SRAM_NUMBERS, language=LANGUAGE),
    "Both axes are logarithmic: each step right doubles n, each gridline up multiplies the count by 10. Red with circles is "
    "standard attention, dominated by the n² scores it writes to HBM and reads back twice over; blue with squares is "
    "FlashAttention, counted load by load from the paper's Algorithm 1 with an H100's shared memory: 2.3 times lower at "
    "n = 8,192 for d = 128. The dotted grey line is the floor, reading the inputs and writing the output once; no line "
    "falls below it. Both attention lines bend to the slope 2 because this count sends every pass over Q and O to HBM; "
    "the roofline below shows why a real H100 does not.",
)

# %% [markdown]
# **The loop order of section 7, and the L2.** FlashAttention-2 puts the query blocks outside: each
# block of $B_r$ queries is read once, its output and log-sum-exp written once, and it streams every
# key and value block past itself. Counted against HBM alone, that re-reads $K$ and $V$ once per query
# block, $\lceil n / B_r \rceil$ times. But the 132 SMs work on the query blocks of one or two heads at
# a time, and one head's $K$ and $V$ at $n = 8{,}192$, $d = 128$ in 16 bits are 4 MB, well inside the
# 50 MB L2: after the first query block has read them, the others read the L2, not HBM. A **roofline**
# puts both counts to the test. A kernel that does $F$ FLOPs and moves $Y$ bytes needs at least
# $\max(F / \text{peak}, Y / \text{bandwidth})$ seconds; at a measured speed $F / t$, it must move
# $Y / t$ bytes per second, which may not exceed the HBM's 3.35 TB/s. FlashAttention-3 reports up to
# 740 TFLOP/s for its 16-bit forward pass on an H100 ([Shah et al., 2024](https://arxiv.org/abs/2407.08608), abstract).
#
# $$F = 4 n^2 d, \qquad Y_{\text{HBM only}} = b\,(2nd + \lceil n / B_r \rceil \cdot 2nd) + 4n, \qquad Y_{\text{L2}} = b \cdot 4nd + 4n$$
#
# | Symbol | Meaning | Here |
# |---|---|---|
# | $F$ | FLOPs of one head's forward pass: $QK^\top$ and $PV$, 2 per multiply-add, no mask | |
# | $Y$ | bytes moved to or from HBM: $Q$ read and $O$ written once, $K$ and $V$ once per pass, a float32 lse per row | |
# | $B_r$ | query rows per block | 128 |
# | $b$ | bytes per number | 2 |
#
# The model's assumptions, stated: one head's forward pass without mask; the SMs finish a head's query
# blocks while its $K$ and $V$ stay in the L2 (true when they fit: at most 8 MB per head here); nothing
# else competes for the L2; the published speed is the best one, so any slower run needs less bandwidth.

# %%
H100 = {"hbm_bytes_per_s": 3.35e12, "dense_fp16_flops_per_s": 989e12, "l2_bytes": 50e6}  # NVIDIA's H100 SXM datasheet
FA3_FORWARD_FLOPS_PER_S = 740e12  # FlashAttention-3's best 16-bit forward on an H100 (its abstract)


def fa2_forward_bytes(n, d, *, block_rows=128, bytes_per_value=2, l2_bytes=None):
    """HBM bytes of one head's FlashAttention-2 forward pass: Q and O once, a float32 lse, K and V once per pass."""
    sizes = (("n", n), ("d", d), ("block_rows", block_rows), ("bytes_per_value", bytes_per_value))
    n, d, block_rows, bytes_per_value = (require_int(name, v, minimum=1) for name, v in sizes)
    kv = 2 * n * d * bytes_per_value  # K and V of one head
    passes = 1 if l2_bytes is not None and kv <= l2_bytes else -(-n // block_rows)  # the L2 serves every pass after the first
    return 2 * n * d * bytes_per_value + 4 * n + passes * kv


ROOF_LENGTHS = [1024, 2048, 4096, 8192, 16384]
roofline = {}
for n in ROOF_LENGTHS:
    flops = 4 * n * n * 128
    seconds = flops / FA3_FORWARD_FLOPS_PER_S  # at the published speed
    roofline[n] = {"intensity": flops / fa2_forward_bytes(n, 128, l2_bytes=H100["l2_bytes"]),
                   "needs_hbm_only": fa2_forward_bytes(n, 128) / seconds, "needs_with_l2": fa2_forward_bytes(n, 128, l2_bytes=H100["l2_bytes"]) / seconds}
for n, row in roofline.items():
    print(f"n = {n:>6,}: at 740 TFLOP/s, HBM only needs {row['needs_hbm_only'] / 1e12:4.2f} TB/s, with the L2 {row['needs_with_l2'] / 1e12:4.2f} TB/s")
fa1_8k = 2 * attention_hbm_accesses(8_192, 128, H100_SRAM_NUMBERS)["flash"] / (4 * 8_192**2 * 128 / FA3_FORWARD_FLOPS_PER_S)
print(f"FlashAttention-1's count at n = 8,192 would need {fa1_8k / 1e12:.2f} TB/s; the H100 has {H100['hbm_bytes_per_s'] / 1e12:.2f}")
expect("every plotted point needs no more bandwidth than the H100's 3.35 TB/s at the published 740 TFLOP/s",
       max(row["needs_with_l2"] for row in roofline.values()), "<=", H100["hbm_bytes_per_s"])


# %% tags=["hide-input"]
# @title Drawing code for the figure below: plot_roofline (matplotlib only; reading it is optional)
def _roofline_inputs(roofline, hardware, measured):
    """Check plot_roofline's inputs: {n: {"intensity": ...}}, the hardware's two rates and a speed, all positive."""
    if not isinstance(roofline, dict) or not roofline or not all(isinstance(row, dict) and "intensity" in row for row in roofline.values()):
        raise TypeError(f"roofline must map each length n to a dict with an 'intensity' (FLOPs per HBM byte), got {type(roofline).__name__}")
    if not isinstance(hardware, dict) or not {"dense_fp16_flops_per_s", "hbm_bytes_per_s"} <= hardware.keys():
        raise TypeError("hardware must be a dict with 'dense_fp16_flops_per_s' and 'hbm_bytes_per_s', as H100 is")
    for n, row in roofline.items():
        require_int("a roofline length n", n, minimum=1), require_real(f"roofline[{n}]['intensity']", row["intensity"], minimum=0, strict_minimum=True)
    for name in ("dense_fp16_flops_per_s", "hbm_bytes_per_s"):
        require_real(f"hardware[{name!r}]", hardware[name], minimum=0, strict_minimum=True)
    return require_real("measured", measured, minimum=0, strict_minimum=True)


def plot_roofline(roofline, hardware, measured, language="en"):
    """The H100's roofline (FLOP/s against FLOPs per HBM byte) with FlashAttention-3's measured speed at each n."""
    measured = _roofline_inputs(roofline, hardware, measured)
    intensity = np.logspace(0, 4, 200)
    fig, ax = plt.subplots(figsize=(6.2, 3.0))
    ax.plot(intensity, np.minimum(hardware["dense_fp16_flops_per_s"], intensity * hardware["hbm_bytes_per_s"]) / 1e12,
            color=Palette.GREY, linestyle="-", marker="", label=localized(language, "H100 roof: 3.35 TB/s, 989 TFLOP/s", "крыша H100: 3,35 ТБ/с, 989 TFLOP/s"))
    points = [(row["intensity"], measured / 1e12) for row in roofline.values()]
    ax.plot(*zip(*points), color=Palette.BLUE, linestyle="none", marker="o", markevery=1,
            label=localized(language, "FlashAttention-3, 740 TFLOP/s, FA-2 loop order with L2", "FlashAttention-3, 740 TFLOP/s, порядок FA-2 с L2"))
    for n, (x, y) in zip(roofline, points):
        ax.annotate(f"{n // 1024}k", (x, y), textcoords="offset points", xytext=(-6, -14), fontsize=8)
    ridge = hardware["dense_fp16_flops_per_s"] / hardware["hbm_bytes_per_s"]
    ax.axvline(ridge, color=Palette.ORANGE, linestyle=":", marker="", label=localized(language, f"ridge: {ridge:.0f} FLOPs per byte", f"перегиб: {ridge:.0f} FLOP на байт"))
    log_scale(ax, "both")
    ax.set_xlabel(localized(language, "FLOPs per HBM byte", "FLOP на байт HBM"))
    ax.set_ylabel(localized(language, "TFLOP/s", "TFLOP/s"))
    ax.set_title(localized(language, "Attention's forward pass on an H100 roofline", "Прямой проход внимания на крыше H100"))
    ax.legend(fontsize=8, loc="lower right")
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.18, top=0.88)
    return fig


# %%
show_figure(
    plot_roofline(roofline, H100, FA3_FORWARD_FLOPS_PER_S, language=LANGUAGE),
    "Both axes are logarithmic. The grey line is the H100's roof: left of the dotted orange ridge a kernel is limited by HBM "
    "bandwidth (the slope), right of it by the tensor cores (the flat top). The blue dots, labelled with n, place "
    "FlashAttention-3's published 740 TFLOP/s at the arithmetic intensity of FlashAttention-2's loop order when the L2 "
    "holds each head's K and V: every dot sits under the roof. Counted against HBM alone, the same loop order would "
    f"need {roofline[8192]['needs_hbm_only'] / 1e12:.1f} TB/s at n = 8,192 (printed above), more than the H100 has: the L2 is doing that work.",
)


# %% [markdown]
# **Past Hopper.** The H200 is the same Hopper chip with 141 GB of HBM3e at 4.8 TB/s
# ([NVIDIA H200](https://www.nvidia.com/en-us/data-center/h200/)); the B200 (Blackwell) has 180 GB of
# HBM3e at 8 TB/s ([NVIDIA DGX B200](https://www.nvidia.com/en-us/data-center/dgx-b200/), per GPU) and
# 2.25 PFLOP/s of dense BF16, while its exponential units and shared-memory bandwidth stayed where
# Hopper's were. **FlashAttention-4** (Zadouri, Hoehnerbach, Shah, Liu, Thakkar and Dao, March 2026,
# [the authors' post](https://www.together.ai/blog/flashattention-4)) finds that on a B200 the forward
# pass is limited by the exponentials of the softmax and the backward pass by shared-memory traffic,
# not by HBM. It computes part of the exponentials in software, with a polynomial on the ordinary
# multiply-add units, and rescales the running sums only when the row maximum has grown by more than
# a threshold, reaching up to 1,605 TFLOP/s in BF16 on a B200 (71% of peak). Rescaling less is exact:
# $u / \ell$ does not depend on which reference $m$ the sums were kept against, as long as none of
# them overflows. The experiment below counts the rescales on one long row.

# %%
def lazy_online_softmax(logits, values, tile, threshold):
    """Online softmax of one row that rescales only when a tile's max beats the reference m by more than threshold."""
    logits, values = require_array("logits", logits, ndim=1), require_array("values", values, ndim=1)
    tile, threshold = require_int("tile", tile, minimum=1), require_real("threshold", threshold, minimum=0.0, maximum=60.0)  # e^60 fits float64 sums
    m, l, u, rescales = -math.inf, 0.0, 0.0, 0
    for start in range(0, len(logits), tile):
        x, v = logits[start:start + tile], values[start:start + tile]
        if x.max() > m + threshold:  # only then is the reference moved, and the sums rescaled
            m_new = float(x.max())
            rescales += math.isfinite(m)
            l, u, m = l * math.exp(m - m_new), u * math.exp(m - m_new), m_new
        w = np.exp(x - m)  # at most e^threshold when m is stale
        l, u = l + float(w.sum()), u + float(w @ v)
    return u / l, rescales


lazy_rng = np.random.default_rng(44)
rising = np.linspace(0.0, 40.0, 4096) + lazy_rng.normal(0.0, 1.0, 4096)  # a row whose max keeps growing: the worst case
row_values = lazy_rng.normal(size=4096)
exact_rising = float(np.exp(rising - rising.max()) @ row_values / np.exp(rising - rising.max()).sum())
for threshold in (0.0, 2.0, 8.0):
    output, rescales = lazy_online_softmax(rising, row_values, 64, threshold)
    print(f"threshold {threshold:3.0f}: {rescales:2d} rescales of 63 possible, |output - exact| {abs(output - exact_rising):.1e}")
    expect(f"threshold {threshold:.0f}: exact at the end", abs(output - exact_rising), "<", 1e-12)
expect("a threshold of 8 rescales fewer times than 0", lazy_online_softmax(rising, row_values, 64, 8.0)[1], "<", lazy_online_softmax(rising, row_values, 64, 0.0)[1])

# %% tags=["hide-input"]
# @title Bad inputs are refused: the argument checks of the two cells above
expect_raises(ValueError, fa2_forward_bytes, 0, 128, match="n")
expect_raises(ValueError, lazy_online_softmax, rising, row_values, 64, 100.0, match="threshold")
expect("fa2_forward_bytes by hand: n = 4, d = 2, blocks of 2, 16-bit: 2*4*2*2 + 16 + 2 passes * 32 = 112", fa2_forward_bytes(4, 2, block_rows=2), "==", 112)


# %% [markdown]
# **Measured here: where the time goes on a CPU.** The next cell times the notebook's NumPy
# `tiled_attention` against PyTorch's own `F.scaled_dot_product_attention` on the same causal
# input in float64, once per CPU backend selected with `torch.nn.attention.sdpa_kernel` (torch 2.3
# and later; on a CPU there are a *math* kernel and a *flash* kernel), and against the two
# matrix products alone, $QK^\top$ and $PV$, which no exact method can avoid. The products are
# computed causally, on the same query blocks as the tiles, each block reading only the keys at or
# before its last query, so they do the work a causal kernel cannot skip and nothing more. It runs
# by itself in Colab and takes about a second. Read the last column as "how many times slower
# the NumPy tiles are" than each row, and the last line as the share of the tiles' time that the
# two products take; the rest is exponentials, masking and per-tile bookkeeping. Which backend
# wins, and by how much, changes from machine to machine and from run to run (on a busy machine
# by more than the differences between the rows), so the cell prints the ratios and checks
# nothing about them.

# %% tags=["hide-input"]
# @title The backend timing's helpers: its argument checks, and the causal products it times (open to read)
def _backend_timing_args(n, d, seed):
    """time_attention_backends' n (at most TIMING_MAX_N), d and seed, checked; Q, K and V must fit the budget."""
    n, d = require_int("n", n, minimum=1, maximum=TIMING_MAX_N), require_int("d", d, minimum=1)
    require_budget("Q, K and V", (3, n, d))
    return n, d, require_int("seed", seed, minimum=0)


def _same_attention(tiled_out, torch_out):
    """Refuse timings of two computations that disagree: NumPy's tiles and torch's SDPA must both be causal attention."""
    if not np.allclose(tiled_out, torch_out):
        raise ValueError("NumPy tiled attention and torch SDPA disagree on the timed input; both must be causal")


def _causal_block_products(Q, K, V, tile_size):
    """Q K^T, then times V, each query block reading only the keys up to its last query: the products a causal kernel must do."""
    out = np.empty((len(Q), V.shape[1]))
    for start in range(0, len(Q), tile_size):  # the same query blocks as the tiles: keys after a block are never touched
        stop = min(start + tile_size, len(Q))
        out[start:stop] = (Q[start:stop] @ K[:stop].T) @ V[:stop]  # (block, stop) scores, then (block, d); no softmax
    return out


# %%
TIMING_MAX_N = 2048  # the backend timing is meant to take a second or two, not minutes


def time_attention_backends(n, d, tile_size, repeats, seed=SEED):
    """Best-of-`repeats` seconds of NumPy tiled attention, torch SDPA per CPU backend, and two causal matmuls."""
    n, d, seed = _backend_timing_args(n, d, seed)
    Q, K, V = np.random.default_rng(seed).standard_normal((3, n, d))
    q, k, v = (torch.from_numpy(x)[None, None] for x in (Q, K, V))  # (1, 1, n, d) float64
    def two_causal_matmuls():
        return _causal_block_products(Q, K, V, tile_size)

    def tiled():
        return tiled_attention(Q, K, V, tile_size=tile_size, causal=True)

    def torch_sdpa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    _same_attention(tiled(), torch_sdpa().numpy().reshape(n, d))  # the timings compare the same computation
    times = {"NumPy tiled_attention": best_seconds(tiled, repeats=repeats),
             "two causal matmuls (NumPy)": best_seconds(two_causal_matmuls, repeats=repeats),
             "torch SDPA, default choice": best_seconds(torch_sdpa, repeats=repeats)}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # torch >= 2.3
    except ImportError:
        print(f"torch {torch.__version__} has no torch.nn.attention.sdpa_kernel; timing the default choice only")
        return times
    for name in ("MATH", "FLASH_ATTENTION"):
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                times[f"torch SDPA, {name.lower()} kernel"] = best_seconds(torch_sdpa, repeats=repeats)
        except RuntimeError as exc:  # a backend that cannot run this input says so
            print(f"the {name.lower()} kernel is not available here: {str(exc).splitlines()[0]}")
    return times


backend_times = time_attention_backends(n=512, d=64, tile_size=128, repeats=3)
tiled_seconds = backend_times["NumPy tiled_attention"]
for name, seconds in backend_times.items():
    print(f"time: {name:34s} {1000 * seconds:8.2f} ms   NumPy tiled / this = {tiled_seconds / seconds:5.2f}")  # "time:" lines vary run to run
print(f"time: the two causal products take {backend_times['two causal matmuls (NumPy)'] / tiled_seconds:.0%} of the NumPy tiles' time")

# %% tags=["hide-input"]
# @title The backend timing on the smallest input, the causal products on a small one, and the inputs it refuses
if not all(math.isfinite(t) and t > 0 for t in backend_times.values()):
    raise ValueError(f"every timing must be a positive number of seconds; got {backend_times}")
print("The memory hierarchy and the backend timings: PASS")
Q5, K5, V5 = (np.random.default_rng(5).standard_normal((5, 3)) for _ in range(3))
reads = np.arange(5)[None, :] < np.minimum((np.arange(5) // 2 + 1) * 2, 5)[:, None]  # query i's block of 2 reads keys up to its end
expect_close("the causal products in blocks of 2 equal (Q K^T restricted to each block's keys) V", _causal_block_products(Q5, K5, V5, 2), ((Q5 @ K5.T) * reads) @ V5)
expect("the smallest timing, one token of width 1, runs", len(time_attention_backends(n=1, d=1, tile_size=1, repeats=1, seed=0)), ">=", 3)
expect_raises(ValueError, time_attention_backends, n=0, d=8, tile_size=4, repeats=1, match="n must be at least 1")
expect_raises(ValueError, time_attention_backends, n=8, d=0, tile_size=4, repeats=1, match="d must be at least 1")
expect_raises(ValueError, time_attention_backends, n=TIMING_MAX_N + 1, d=8, tile_size=4, repeats=1, match="n must be at most")
expect_raises(ValueError, time_attention_backends, n=8, d=8, tile_size=4, repeats=1, seed=-1, match="seed");

# %% [markdown]
# ### Into practice: the caches you will meet
#
# | What this module built | Hugging Face `transformers` | vLLM |
# |---|---|---|
# | A full-attention cache that grows (section 1) | `DynamicCache`, the default: tensors grow by concatenation | paged blocks, below |
# | A preallocated cache of a fixed maximum length | `StaticCache`: fixed shapes, so `torch.compile` can capture the decode step | preallocated block pool |
# | A rolling window (Module 5.2, section 9) | sliding layers inside `DynamicCache` / `StaticCache` (the older `SlidingWindowCache`), used by Mistral v0.1 and Gemma's local layers | sliding-window block freeing |
# | A hybrid of window and full layers (gpt-oss, Gemma 3) | one cache with a layer type per layer (the older `HybridCache`) | per-layer-type block groups |
# | KIVI-inspired quantization (Module 5.2, section 14) | `QuantizedCache` (`nbits`, `axis_key`, `axis_value`, `q_group_size`, `residual_length`): keys and values are both quantized per channel in groups of `q_group_size` (64 by default), which its docstring notes differs from the KIVI paper's per-token values; `residual_length` (128 by default) keeps the most recent tokens in full precision, as KIVI does | FP8 KV cache (`kv_cache_dtype`) |
# | SSM or DeltaNet states (Module 5.2, section 12) | model-specific caches that hold convolution and recurrent states | state blocks for hybrid models |
#
# (Class names from the [transformers KV cache guide](https://huggingface.co/docs/transformers/main/kv_cache); `QuantizedCache`'s arguments and docstring from transformers' `cache_utils.py`.)
# **vLLM's paged attention** ([Kwon et al., 2023](https://arxiv.org/abs/2309.06180)) stores the cache in fixed-size
# blocks, like pages of virtual memory. Each sequence has a *block table*: logical block $i$ of the sequence
# lives in physical block `table[i]` of one shared pool. A sequence wastes at most one partly filled block, and
# sequences that share a prompt can point at the same physical blocks. Section 9 builds one and decodes the trained
# model through it.

# %% [markdown]
# **In the wild: prefix caching.** Many requests begin with the same tokens: a system prompt, a
# few-shot template, a long document asked several questions, the earlier turns of a chat. Their
# keys and values are the same too, so servers keep them. vLLM's *automatic prefix caching*
# (`enable_prefix_caching=True`) names each full block of the paged cache by a hash of its tokens and
# of every token before it, and a new request whose prefix hashes match reuses those physical blocks
# instead of recomputing them ([vLLM design notes](https://docs.vllm.ai/en/latest/design/prefix_caching/)).
# vLLM's V1 engine turns prefix caching on by default ([vLLM V1 announcement](https://blog.vllm.ai/2025/01/27/v1-alpha-release.html), January 2025).
# SGLang's *RadixAttention* keeps the cached prefixes of all requests in a radix tree, evicting the
# least recently used; its 2024 version reports up to 6.4x higher throughput than other inference
# systems on multi-call LLM programs ([Zheng et al., 2024](https://arxiv.org/abs/2312.07104); the December
# 2023 first version said "up to 5x"). Neither changes a single output: the
# reused keys and values are exactly the ones a recomputation would produce, which is why the
# section 7 cell that streams a cached prefix with `query_start` returns the full pass's rows.

# %% tags=["hide-input"]
# @title Module 3's capstone model, inlined from its one source (builder/contracts/capstone.py; reading it is optional)
# builder:begin inline nn
# torch.nn, which the classes below subclass (one line, so an inlined region needs no import of its own)
nn = __import__("torch.nn", fromlist=["Module"])
# builder:end sha256=f30f4cac98e8991e7c9380e5f0f54df3b19cb811b53c3ac027f793925bcd0e08
# builder:begin inline CapstoneConfig
class CapstoneConfig:
    """The capstone model's sizes: vocabulary, width, layers, query and K/V heads, FFN width, context, RoPE base."""

    FIELDS = ("vocab", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "max_len", "rope_base", "norm_eps")

    def __init__(self, vocab=16, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=64, max_len=64,
                 rope_base=10_000.0, norm_eps=1e-5):
        for name, value in (("vocab", vocab), ("d_model", d_model), ("n_layers", n_layers), ("n_heads", n_heads),
                            ("n_kv_heads", n_kv_heads), ("d_ff", d_ff), ("max_len", max_len)):
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1_000_000:
                raise ValueError(f"{name} must be an int from 1 to 1,000,000, got {value!r}")
        if d_model % n_heads or n_heads % n_kv_heads or (d_model // n_heads) % 2:
            raise ValueError(f"need d_model divisible by n_heads, n_heads by n_kv_heads, and an even head_dim for RoPE's "
                             f"pairs; got d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}")
        if not (isinstance(rope_base, (int, float)) and rope_base > 1) or not (isinstance(norm_eps, (int, float)) and norm_eps > 0):
            raise ValueError(f"rope_base must be a number > 1 and norm_eps > 0, got {rope_base!r} and {norm_eps!r}")
        self.vocab, self.d_model, self.n_layers, self.n_heads, self.n_kv_heads = vocab, d_model, n_layers, n_heads, n_kv_heads
        self.d_ff, self.max_len, self.rope_base, self.norm_eps = d_ff, max_len, float(rope_base), float(norm_eps)
        per_layer = d_model * self.head_dim * 2 * (n_heads + n_kv_heads) + 3 * d_model * d_ff + 2 * d_model
        require_budget("the weights of a CapstoneLM of this config", (2 * vocab * d_model + n_layers * per_layer + d_model,), itemsize=4)

    @property
    def head_dim(self):
        """The width of one head: d_model / n_heads."""
        return self.d_model // self.n_heads

    def replace(self, **changes):
        """A copy with some fields changed (and checked again)."""
        return CapstoneConfig(**{**{name: getattr(self, name) for name in self.FIELDS}, **changes})

    def __eq__(self, other):
        return isinstance(other, CapstoneConfig) and all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    def __repr__(self):
        return "CapstoneConfig(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS) + ")"
# builder:end sha256=dd187b4bffa83c53e1f0a562678d20fbd59618e3906a2d180d2186e4c7a1d589
# builder:begin inline CAPSTONE_MAX_BATCH
CAPSTONE_MAX_BATCH = 4096  # sequences in one induction batch: 64 times the lessons' batch of 64
# builder:end sha256=ad1cc1f3d8cae0159621ca636e636348a735bc7325fa7700511b96009ccfda31
# builder:begin inline CAPSTONE_MAX_ROWS
CAPSTONE_MAX_ROWS = 12_800  # sequences one training call sees: the lessons' 200 steps of 64
# builder:end sha256=3c519fff7ca2bd93adb22ee26f734eb4c1f688e10ee9152b0c031e02f7f4fefc
# builder:begin inline _capstone_config
def _capstone_config(config):
    """config when it is a CapstoneConfig, known by its class name (a notebook and the package each define one)."""
    if type(config).__name__ != "CapstoneConfig" or not all(hasattr(config, n) for n in CapstoneConfig.FIELDS):
        raise TypeError(f"config must be a CapstoneConfig, got {type(config).__name__}; build one with CapstoneConfig(...)")
    return config
# builder:end sha256=a396a2c5b8d5e20b1314bfecdc865c7e2947db6bdc517e14dca9a667c1fc2386
# builder:begin inline _capstone_model
def _capstone_model(model):
    """model when it is an nn.Module with a CapstoneConfig as its config (a CapstoneLM)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a CapstoneLM (an nn.Module with a CapstoneConfig .config), got {type(model).__name__}")
    _capstone_config(getattr(model, "config", None))
    return model
# builder:end sha256=a7f50941802f5c42c76f3c2a0cc7c77dcd55dc8d7c8d9eab9508326936b4a23a
# builder:begin inline _capstone_widths
def _capstone_widths(what, shape, *, itemsize=4, **widths):
    """Each named width an int >= 1, and an array of ``shape`` (float32 unless told) within the allocation budget."""
    for name, value in widths.items():
        require_int(name, value, minimum=1)
    require_budget(what, shape, itemsize=itemsize)
# builder:end sha256=183738fb542b3dbc3ce7401106366bca833423796727dbbe0f20ef17a36f40ed
# builder:begin inline _capstone_features
def _capstone_features(x, width, dtype, *, ndim=None, squared=False):
    """x (..., width) of a layer's dtype; ``squared``: small enough that a product of two projections of x stays finite."""
    import torch

    x = require_tensor("x", x, ndim=ndim, min_ndim=1)
    if x.shape[-1] != width:
        raise ValueError(f"x must end in an axis of {width} features, got shape {tuple(x.shape)}")
    if x.dtype != dtype:
        raise TypeError(f"x has dtype {x.dtype} but the layer's weights have {dtype}; convert one (x.to(dtype) or layer.to(dtype))")
    largest, limit = (float(x.detach().abs().max()), torch.finfo(dtype).max ** 0.5 / width) if squared else (0.0, 1.0)
    if largest > limit:
        raise FloatingPointError(f"x reaches {largest:.3g}; a product of two projections of it overflows {dtype} "
                                 f"above about {limit:.3g}: scale x down")
    return x
# builder:end sha256=cada6efcf4a73d21d83be93486c9656b10c325a22c71efda2b6aec79c371742a
# builder:begin inline _rms_norm_args
def _rms_norm_args(d_model, eps):
    """eps (a real >= 0) as a float, after checking that RMSNorm's gain of d_model entries fits the budget."""
    _capstone_widths("RMSNorm's gain", (d_model,), d_model=d_model)
    return require_real("eps", eps, minimum=0.0)
# builder:end sha256=d8c7e6493184f934cce2bb000f0f1de0ea879d8a8d2854da4e45faaeba00e12a
# builder:begin inline _accuracy_args
def _accuracy_args(model, seed):
    """A CapstoneLM and a seed (an int from 0) for induction_accuracy."""
    _capstone_model(model)
    require_int("seed", seed, minimum=0, maximum=2**62)
# builder:end sha256=f40d6a3f0a25c792256a2f582d800916604c8c70cc7bf74669cd94596b2572c8
# builder:begin inline _rms_norm_input
def _rms_norm_input(x, weight, eps):
    """x (..., d) for RMSNorm; with eps = 0 a token of zeros has no scale (0 / 0), so it is refused."""
    x = _capstone_features(x, weight.shape[0], weight.dtype)
    if eps == 0 and bool((x == 0).all(-1).any()):
        raise ValueError("a token of x is all zeros and eps is 0: its root mean square is 0 (0 / 0); use eps > 0")
    return x
# builder:end sha256=6be585385234252473960191656f07c1851d69b6cd667da92cfd5f8c130ef1a2
# builder:begin inline _rope_inputs
def _rope_inputs(x, positions, base):
    """Checked x (..., T, d) with an even d, integer positions (T,) on the CPU, and base > 1."""
    import torch

    x = require_tensor("x", x, min_ndim=2)
    if x.shape[-1] % 2:
        raise ValueError(f"RoPE turns pairs of coordinates: the last axis of x must be even, got {x.shape[-1]}")
    if (not isinstance(positions, torch.Tensor) or positions.shape != (x.shape[-2],) or positions.device.type != "cpu"
            or positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool):
        raise ValueError(f"positions must be an integer CPU tensor of shape ({x.shape[-2]},), one per token, got {positions!r}"[:200])
    require_real("base", base, minimum=1.0, strict_minimum=True)
    return x, positions
# builder:end sha256=068b8d407b81cb98575e3a6fccd7a7140b888d7c0ccffbe8bc2cb2e710b3588c
# builder:begin inline _heads_input
def _heads_input(out, n_heads, head_dim, dtype):
    """out (B, n_heads, T, head_dim) of the layer's dtype, for merge."""
    out = require_tensor("out", out, ndim=4)
    if (out.shape[1], out.shape[3]) != (n_heads, head_dim) or out.dtype != dtype:
        raise ValueError(f"out must have shape (B, {n_heads}, T, {head_dim}) and dtype {dtype}, got {tuple(out.shape)} {out.dtype}")
    return out
# builder:end sha256=509f07b74867580d72974c39bc8c86e0c7db960d6e333bdfe0bdbd15f8219f58
# builder:begin inline _layer_cache
def _layer_cache(cache, whole=False):
    """cache when it is None or has what the model calls: append (a LayerKV) or, ``whole``, layers (a KVCache)."""
    if cache is not None and not hasattr(cache, "layers" if whole else "append"):
        raise TypeError(f"cache must be None or a {'KVCache' if whole else 'LayerKV'}, got {type(cache).__name__}")
    return cache
# builder:end sha256=856ab951c78ed7f1f9e2f088135a829629fbf2b541bd0427b48754b198872e74
# builder:begin inline _token_ids
def _token_ids(name, tokens, vocab, most):
    """tokens (B, T) as a torch.long CPU tensor of ids below vocab, with B >= 1 and 1 <= T <= most."""
    import torch

    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long or tokens.dim() != 2 or tokens.device.type != "cpu":
        raise TypeError(f"{name} must be a torch.long CPU tensor of shape (batch, T), got {getattr(tokens, 'dtype', type(tokens).__name__)}")
    if not 1 <= tokens.shape[1] <= most or not tokens.shape[0] or bool(((tokens < 0) | (tokens >= vocab)).any()):
        raise ValueError(f"{name} must hold ids from 0 to {vocab - 1}, in 1 to {most} positions of at least one row; "
                         f"got shape {tuple(tokens.shape)}")
    return tokens
# builder:end sha256=28be7a013399cd2a1b2578d7eb0edaf2b1e831a7cb2aa9fa2d4be26730ad23dc
# builder:begin inline _capstone_tokens
def _capstone_tokens(tokens, config, cache):
    """The first position of tokens (B, T): 0, or how many the cache holds; refuse ids and lengths that do not fit."""
    start = 0 if _layer_cache(cache, whole=True) is None else cache.length
    _token_ids("tokens", tokens, config.vocab, config.max_len - start)
    return start
# builder:end sha256=7f8b01e8a40b4c25a9dbca7d8e554adaf9862773a6ac94a4a2e1ea0618617490
# builder:begin inline _layer_kv_args
def _layer_kv_args(batch, n_kv_heads, max_len, head_dim, dtype):
    """Sizes of a LayerKV (ints >= 1), a floating dtype, and buffers within the allocation budget."""
    import torch

    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype such as torch.float32, got {dtype!r}")
    _capstone_widths("the cache's keys and values", (2, batch, n_kv_heads, max_len, head_dim), itemsize=dtype.itemsize,
                     batch=batch, n_kv_heads=n_kv_heads, max_len=max_len, head_dim=head_dim)
# builder:end sha256=7c0e6ee2f87815da9c18c0e11fa4e63c6613a552d18eaccfb52e7385664b3ce4
# builder:begin inline _kv_append_args
def _kv_append_args(keys, k, v, start):
    """k and v (B, H_kv, T, hd) that fit buffers like ``keys`` (B, H_kv, max_len, hd), and an int start."""
    for name, t in (("k", k), ("v", v)):
        require_tensor(name, t, ndim=4)
        if (t.shape[0], t.shape[1], t.shape[3]) != (keys.shape[0], keys.shape[1], keys.shape[3]):
            raise ValueError(f"{name} must have shape ({keys.shape[0]}, {keys.shape[1]}, T, {keys.shape[3]}), as the cache; "
                             f"got {tuple(t.shape)}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    return require_int("start", start, minimum=0)
# builder:end sha256=24c36f1abacf5a6f72e253b8ec920b159dc40315b5caaf1d0f62741b60e962ea
# builder:begin inline _kv_cache_args
def _kv_cache_args(config, batch):
    """A CapstoneConfig and a batch size (int >= 1) whose cache fits the allocation budget."""
    _capstone_config(config)
    _capstone_widths("the cache of every layer", (2 * config.n_layers, batch, config.n_kv_heads, config.max_len, config.head_dim),
                     batch=batch)
# builder:end sha256=16c2cd0283d51787ce9abc17873613e48601aa0e952468fe5bb8dca50dd1ed32
# builder:begin inline _induction_sizes
def _induction_sizes(batch, vocab, k_min, k_max):
    """A batch of 1 to CAPSTONE_MAX_BATCH rows, and 2 <= k_min <= k_max <= vocab."""
    require_int("batch", batch, minimum=1, maximum=CAPSTONE_MAX_BATCH)
    require_int("vocab", vocab, minimum=2, maximum=1_000_000)
    require_int("k_min", k_min, minimum=2, maximum=vocab)
    require_int("k_max", k_max, minimum=k_min, maximum=vocab)
    require_budget("the random order of the vocabulary of each row", (batch, vocab), itemsize=12)
# builder:end sha256=3c40c0186b558949b8284a8dde094112e49a8d94431c53bdc63f1bb1a18226d6
# builder:begin inline _induction_args
def _induction_args(batch, generator, vocab, k_min, k_max):
    """Checked arguments of induction_batch: a torch.Generator and the sizes of ``_induction_sizes``."""
    import torch

    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (torch.Generator().manual_seed(seed)), got {type(generator).__name__}")
    _induction_sizes(batch, vocab, k_min, k_max)
# builder:end sha256=85b249ab1582dd33cc2d0d1e41af8ed94b8b734cd00fd2c0b2337a2be7bd1d90
# builder:begin inline _train_step_args
def _train_step_args(model, optimizer, inputs, targets, scored):
    """A module, a torch optimizer, token inputs and targets of one shape (ids its embedding knows), a bool scored with a True."""
    import torch

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    embedding = next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
    vocab = embedding.num_embeddings if embedding is not None else 2**62
    most = model.config.max_len if type(getattr(model, "config", None)).__name__ == "CapstoneConfig" else 2**62
    _token_ids("inputs", inputs, vocab, most)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim optimizer (torch.optim.AdamW(...)), got {type(optimizer).__name__}")
    if getattr(targets, "shape", None) != inputs.shape:
        raise ValueError(f"targets must have the shape of inputs, {tuple(inputs.shape)}, got {getattr(targets, 'shape', targets)!r}"[:200])
    _token_ids("targets", targets, vocab, most)
    if not isinstance(scored, torch.Tensor) or scored.dtype != torch.bool or scored.shape != inputs.shape or scored.device.type != "cpu":
        raise ValueError(f"scored must be a bool CPU tensor of the shape of inputs, {tuple(inputs.shape)}")
    if not bool(scored.any()):
        raise ValueError("scored has no True entry: the loss would be a mean over nothing (NaN); score at least one position")
# builder:end sha256=9389e2d3ecee4a01f04d62f4c65d6ede8a1f67346bc61fc26a721edb400d4f7c
# builder:begin inline _fit_args
def _fit_args(model, step, steps, seed, batch, lr, warmup, k_min, k_max, on_step):
    """Checked arguments of fit_induction: a CapstoneLM, callables, and steps, seed, rates and sizes in range."""
    config = _capstone_model(model).config
    for name, value in (("step", step), ("on_step", on_step)):
        if not callable(value) and not (name == "on_step" and value is None):
            raise TypeError(f"{name} must be a function, got {type(value).__name__}")
    require_int("steps", steps, minimum=1)
    require_int("seed", seed, minimum=0, maximum=2**62)
    require_real("lr", lr, minimum=0.0, strict_minimum=True, maximum=10.0)
    require_int("warmup", warmup, minimum=1)
    _induction_sizes(batch, config.vocab, k_min, k_max)
    if steps * batch > CAPSTONE_MAX_ROWS:
        raise ValueError(f"steps x batch = {steps * batch:,} sequences, over the {CAPSTONE_MAX_ROWS:,} one call trains on "
                         f"(CAPSTONE_MAX_ROWS: the lessons' 200 steps of 64); to train longer, call it again")
    if 2 * k_max - 1 > config.max_len:
        raise ValueError(f"the task's rows have 2 k_max - 1 = {2 * k_max - 1} tokens, more than max_len = {config.max_len}")
# builder:end sha256=53d0ac0a96add140ca9d51a3e76be76e27cef43c365de9f5e84c3c16c005c01b
# builder:begin inline _generation_length
def _generation_length(model, prompt, n_new):
    """n_new checked against the room the model's context leaves after prompt (B, T0)."""
    _capstone_tokens(prompt, _capstone_model(model).config, None)
    return require_int("n_new", n_new, minimum=0, maximum=model.config.max_len - prompt.shape[1])
# builder:end sha256=754ab781f0ffb81401cbde231bb3381602090696362398a888b97fe9ea325445
# builder:begin inline _causal_attention_args
def _causal_attention_args(q, k, v, query_offset):
    """q (B, Hq, Tq, hd), k and v (B, Hkv, Tk, hd) of one dtype with Hkv dividing Hq; query_offset an int >= 0."""
    q, k, v = (require_tensor(name, t, ndim=4) for name, t in (("q", q), ("k", k), ("v", v)))
    if k.shape != v.shape or (q.shape[0], q.shape[3]) != (k.shape[0], k.shape[3]) or q.shape[1] % k.shape[1] \
            or not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"need q (B, Hq, Tq, hd) and k, v (B, Hkv, Tk, hd) of one dtype with Hkv dividing Hq; got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    require_int("query_offset", query_offset, minimum=0)
    require_budget("the attention scores and weights", (2, *q.shape[:3], k.shape[2]), itemsize=q.element_size())
# builder:end sha256=1c8dc7355b1a47f040528b46ff60d2a9960a1e183c196d3db09982254ffdbc54
# builder:begin inline apply_rope
def apply_rope(x, positions, base=10_000.0):
    """Rotate each pair (2i, 2i+1) of x [..., T, head_dim] by the angle position * base^(-2i/head_dim)."""
    import torch

    x, positions = _rope_inputs(x, positions, base)
    half = x.shape[-1] // 2
    frequency = base ** (-torch.arange(half, dtype=torch.float64) * 2 / x.shape[-1])   # (hd/2,)
    angle = positions.to(torch.float64)[:, None] * frequency                          # (T, hd/2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]                                            # (..., T, hd/2) each
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)   # (..., T, hd/2, 2)
    return rotated.flatten(-2)                                                        # (..., T, hd): pairs interleaved
# builder:end sha256=b243a2a6f77754fcd30e605175536bab2f74e16bfe45e9a27200f5eb6958928f
# builder:begin inline RMSNorm
class RMSNorm(nn.Module):
    """Root-mean-square norm over the last axis with a learned gain (no mean subtracted, no bias)."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        import torch

        self.eps = _rms_norm_args(d_model, eps)
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        import torch

        x = _rms_norm_input(x, self.weight, self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
# builder:end sha256=d5b2e6b59dc3fa3710f99514682b63aa1b65932c82003b9a75a46df180fefb83
# builder:begin inline SwiGLU
class SwiGLU(nn.Module):
    """The gated feed-forward network: w_down(silu(w_gate x) * w_up x)."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        _capstone_widths("SwiGLU's three weights", (3, d_model, d_ff), d_model=d_model, d_ff=d_ff)
        self.w_gate = nn.Linear(d_model, d_ff, bias=False)
        self.w_up = nn.Linear(d_model, d_ff, bias=False)
        self.w_down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        import torch.nn.functional as F

        x = _capstone_features(x, self.w_gate.in_features, self.w_gate.weight.dtype, squared=True)
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))
# builder:end sha256=271b2b3f8de3fc8c296f8d214e5685a703533bb1b82b1ade68f54a7bc5f855ed
# builder:begin inline causal_attention
def causal_attention(q, k, v, query_offset=0):
    """Softmax attention of q [B, Hq, Tq, hd] over k, v [B, Hkv, Tk, hd]; query r sits at query_offset + r.

    Each K/V head serves Hq / Hkv consecutive query heads. Returns (output [B, Hq, Tq, hd], weights [B, Hq, Tq, Tk]).
    """
    import math

    import torch

    _causal_attention_args(q, k, v, query_offset)
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)      # (B, Hq, Tk, hd)
    allowed = torch.arange(k.shape[2])[None, :] <= query_offset + torch.arange(q.shape[2])[:, None]  # (Tq, Tk)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])                      # (B, Hq, Tq, Tk)
    require_finite_result("the attention scores", scores, "q and k are too large for their dtype; scale them down")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return weights @ v, weights
# builder:end sha256=897e658182116d106f6f5034e2233d69eff676aaaf95b98d2304bfddf10bb4ef
# builder:begin inline CapstoneAttention
class CapstoneAttention(nn.Module):
    """Causal self-attention with RoPE on queries and keys and n_kv_heads shared K/V heads."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.rope_base = config.rope_base
        self.w_q = nn.Linear(config.d_model, config.n_heads * config.head_dim, bias=False)
        self.w_k = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_v = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_o = nn.Linear(config.n_heads * config.head_dim, config.d_model, bias=False)

    def qkv(self, x, positions):
        """x [B, T, d] at absolute positions [T] -> q [B, Hq, T, hd], k and v [B, Hkv, T, hd], RoPE on q and k."""
        x = _capstone_features(x, self.w_q.in_features, self.w_q.weight.dtype, ndim=3)
        B, T, _ = x.shape
        q = self.w_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)      # (B, Hq, T, hd)
        k = self.w_k(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)   # (B, Hkv, T, hd)
        v = self.w_v(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)   # (B, Hkv, T, hd)
        return apply_rope(q, positions, self.rope_base), apply_rope(k, positions, self.rope_base), v

    def merge(self, out):
        """out [B, Hq, T, hd] -> [B, T, d_model]: heads side by side, then w_o."""
        B, _, T, _ = _heads_input(out, self.n_heads, self.head_dim, self.w_o.weight.dtype).shape
        return self.w_o(out.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))

    def forward(self, x, positions, cache=None):
        """x [B, T, d] -> [B, T, d]; with a LayerKV cache, k and v are appended and the queries read all of it."""
        q, k, v = self.qkv(x, positions)
        offset = int(positions[0]) if _layer_cache(cache) is not None else 0
        if cache is not None:
            k, v = cache.append(k, v, offset)                                        # (B, Hkv, offset + T, hd)
        return self.merge(causal_attention(q, k, v, query_offset=offset)[0])
# builder:end sha256=efbba45a4a496d00392c24f584365ac3eebfc44c046cf4406f3af216805d95d5
# builder:begin inline CapstoneBlock
class CapstoneBlock(nn.Module):
    """A pre-norm decoder block: x + attn(attn_norm(x)), then x + ffn(ffn_norm(x))."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = CapstoneAttention(config)
        self.ffn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.ffn = SwiGLU(config.d_model, config.d_ff)

    def forward(self, x, positions, cache=None):
        x = x + self.attn(self.attn_norm(x), positions, cache)
        return x + self.ffn(self.ffn_norm(x))
# builder:end sha256=a17f5a3f18ef47400064408f0ce5cd93eee24a3e05b69c2a1e54150cdadfa369
# builder:begin inline LayerKV
class LayerKV:
    """One layer's keys and values in two preallocated contiguous buffers [B, Hkv, max_len, hd]."""

    def __init__(self, batch, n_kv_heads, max_len, head_dim, dtype):
        import torch

        _layer_kv_args(batch, n_kv_heads, max_len, head_dim, dtype)
        self.keys = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.values = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.length = 0

    def append(self, k, v, start):
        """Write k, v [B, Hkv, T, hd] at positions start.. and return every key and value so far (views)."""
        end = _kv_append_args(self.keys, k, v, start) + k.shape[2]
        if start != self.length or end > self.keys.shape[2]:
            raise ValueError(f"the cache holds {self.length} of {self.keys.shape[2]} positions; cannot write positions "
                             f"{start}..{end - 1}: append in order and stay within max_len")
        self.keys[:, :, start:end], self.values[:, :, start:end] = k, v
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]
# builder:end sha256=cdd7aed43e882f26da6b379976ea820fca14a53119c4e5b6be792fe752d934c9
# builder:begin inline KVCache
class KVCache:
    """The contiguous KV cache of a whole model: one LayerKV per layer, filled by CapstoneLM.forward."""

    def __init__(self, config, batch, dtype=None):
        import torch

        dtype = dtype or torch.get_default_dtype()
        _kv_cache_args(config, batch)
        self.layers = [LayerKV(batch, config.n_kv_heads, config.max_len, config.head_dim, dtype) for _ in range(config.n_layers)]

    @property
    def length(self):
        """How many positions the cache holds."""
        return self.layers[0].length

    def nbytes(self, used=True):
        """Bytes of the keys and values held (used=True) or allocated (used=False)."""
        return sum(
            (t[:, :, :layer.length] if used else t).numel() * t.element_size()
            for layer in self.layers for t in (layer.keys, layer.values)
        )
# builder:end sha256=be78e3a251e5c95e0ffc3663e88dc8ad1dcf83fd4de06e29ddd0b4dd77edc064
# builder:begin inline CapstoneLM
class CapstoneLM(nn.Module):
    """Token embedding, n_layers pre-norm blocks with RoPE attention, a final RMSNorm and an output head."""

    def __init__(self, config):
        super().__init__()
        self.config = _capstone_config(config)
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(CapstoneBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)

    def forward(self, tokens, cache=None):
        """tokens [B, T] -> logits [B, T, vocab]; with a KVCache the tokens continue what it holds."""
        import torch

        start = _capstone_tokens(tokens, self.config, cache)
        positions = torch.arange(start, start + tokens.shape[1])
        x = self.embed(tokens)                                                       # (B, T, d)
        for i, block in enumerate(self.blocks):
            x = block(x, positions, None if cache is None else cache.layers[i])
        return self.head(self.norm(x))                                               # (B, T, vocab)
# builder:end sha256=c8fcd5d5ecd795a10fc2687ad6631770460a786e66b2e88db65af70ab03e815b
# builder:begin inline induction_batch
def induction_batch(batch, generator, *, vocab=16, k_min=4, k_max=12):
    """Rows of k distinct random tokens repeated once (k drawn per row), padded with random tokens to 2 k_max.

    Returns (inputs [B, T], targets [B, T], scored [B, T]) with T = 2 k_max - 1, targets the next tokens, and
    scored True where the target is a repeated token the model can find earlier (the repeat's 2nd to k-th).
    """
    import torch

    _induction_args(batch, generator, vocab, k_min, k_max)
    segments = torch.rand(batch, vocab, generator=generator).argsort(-1)[:, :k_max]   # (B, k_max) distinct tokens
    k = torch.randint(k_min, k_max + 1, (batch, 1), generator=generator)              # (B, 1) segment lengths
    position = torch.arange(2 * k_max)[None, :]                                        # (1, 2 k_max)
    repeated = segments.gather(1, torch.where(position < k, position, position - k).clamp(max=k_max - 1))
    padding = torch.randint(vocab, (batch, 2 * k_max), generator=generator)
    sequences = torch.where(position < 2 * k, repeated, padding)                      # (B, 2 k_max)
    scored = (position[:, :-1] >= k) & (position[:, :-1] <= 2 * k - 2)                # targets k+1 .. 2k-1
    return sequences[:, :-1], sequences[:, 1:], scored
# builder:end sha256=83a8fc7b80a33f932438a1349dd8a9b8b0c1b8411aa6e30eff2493989ab567d6
# builder:begin inline train_step
def train_step(model, optimizer, inputs, targets, scored):
    """One AdamW step on the mean next-token cross-entropy over the scored positions; return the loss."""
    import torch.nn.functional as F

    _train_step_args(model, optimizer, inputs, targets, scored)
    loss = F.cross_entropy(model(inputs)[scored], targets[scored])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
# builder:end sha256=06480b775d49ac49eb05e3c83ad07cfa27f286a4632b6eb86568646b1c4b57e8
# builder:begin inline fit_induction
def fit_induction(model, step, steps=200, seed=0, *, batch=64, lr=1e-2, warmup=20, k_min=4, k_max=12, on_step=None):
    """Train ``model`` on fresh induction batches with ``step(model, optimizer, inputs, targets, scored)``; return the losses.

    AdamW without weight decay; the rate rises linearly over ``warmup`` steps, then falls linearly to 0.
    """
    import torch

    _fit_args(model, step, steps, seed, batch, lr, warmup, k_min, k_max, on_step)
    generator = torch.Generator().manual_seed(seed + 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: min(1.0, (t + 1) / warmup) * (1 - t / steps))
    losses = []
    model.train()
    for t in range(steps):
        losses.append(step(model, optimizer, *induction_batch(batch, generator, vocab=model.config.vocab, k_min=k_min, k_max=k_max)))
        schedule.step()
        if on_step is not None:
            on_step(t + 1, losses[-1])
    model.eval()
    return losses
# builder:end sha256=5abc852b7e5103d6e348fa33016317fc86fb91bfc45c8ce6aa755f002e9b1421
# builder:begin inline train_capstone
def train_capstone(config, steps=200, seed=0, *, on_step=None, **recipe):
    """A CapstoneLM seeded with ``seed`` and trained on the induction task (``recipe``: fit_induction's options)."""
    import torch

    _capstone_config(config)
    if config.max_len < 2 * recipe.get("k_max", 12) - 1 or config.vocab < recipe.get("k_max", 12):
        raise ValueError(f"the induction task needs max_len >= 2 k_max - 1 and vocab >= k_max, got {config}")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = CapstoneLM(config)
    return model, fit_induction(model, train_step, steps, seed, on_step=on_step, **recipe)
# builder:end sha256=24c25bf6d1ba0e5580c13a12dca44cc3c823da9aaf89bd27b7d941f07ecd9b56
# builder:begin inline induction_accuracy
def induction_accuracy(model, *, batch=512, seed=12345, k_min=4, k_max=12):
    """Held-out greedy accuracy on the scored positions of a fresh induction batch."""
    import torch

    _accuracy_args(model, seed)
    inputs, targets, scored = induction_batch(batch, torch.Generator().manual_seed(seed), vocab=model.config.vocab,
                                              k_min=k_min, k_max=k_max)
    with torch.no_grad():
        return float((model(inputs).argmax(-1) == targets)[scored].float().mean())
# builder:end sha256=a6778ece91c1bc9a8446e23ed99e2f6db9d2f8192170e81e69a46a93ce7cf770
# builder:begin inline generate
def generate(model, prompt, n_new, *, cache=True):
    """Greedy decoding of n_new tokens after prompt [B, T0]; with cache=True each step feeds only the newest token."""
    import torch

    n_new = _generation_length(model, prompt, n_new)
    tokens, store = prompt, (KVCache(model.config, prompt.shape[0]) if cache else None)
    with torch.no_grad():
        feed = prompt
        for _ in range(n_new):
            logits = model(feed if cache else tokens, store)[:, -1]                 # (B, vocab) at the newest position
            newest = logits.argmax(-1, keepdim=True)                                  # (B, 1)
            tokens = torch.cat((tokens, newest), dim=1)
            feed = newest
    return tokens
# builder:end sha256=aa15519411358dfbe9c0193a5898578fcd408c28a0e1cd7f4ddcce85cf430f92


# %% [markdown]
# ## 9. The trained model: a paged cache that decodes it, and pooled K/V heads
#
# **Idea.** Everything so far ran on random $Q$, $K$ and $V$. Here Module 3's capstone model (RoPE,
# RMSNorm, SwiGLU, 2 layers of width 32 with 4 query heads and 4 K/V heads) learns the induction task
# (copy a repeated sequence) in the next cell, and we decode it through a **paged** KV cache in the
# manner of vLLM: a pool of fixed-size physical blocks, one block table per sequence, blocks taken as a
# sequence grows, a prompt shared by two sequences stored once with a reference count, and
# **copy-on-write** at the first token where they diverge. Paged or contiguous, the keys and values
# are the same numbers, so greedy decoding must give the same tokens. The model is trained here
# rather than loaded: a checkpoint would be a binary blob pinned to one torch version and another
# thing to regenerate, while 200 steps take a few seconds on a CPU and show the loss fall.
#
# | Symbol | Meaning | Here |
# |---|---|---|
# | $B$ | slots per physical block (`block_size`) | 4 |
# | `table[i]` | the physical block that holds logical block $i$ of a sequence | |
# | `refs[b]` | how many sequences hold block $b$; 0 means free | |
# | slot of token $p$ | (`table[p // B]`, `p % B`) | token 6 in (`table[1]`, 2) |
#
# **By hand.** A 6-token prompt fills block 0 and half of block 1. A second sequence forked from it
# shares both blocks (counts 2). Its first own token, position 6, would land in the shared block 1, so
# block 1 is first copied to a free block, the new sequence's table points there, and each of the two
# blocks ends with count 1. Block 0, full and only read, stays shared.

# %% tags=["training"]
# Trains the capstone model on the induction task: 200 AdamW steps, a few seconds on an idle CPU (a line every 50 steps).
CAPSTONE = CapstoneConfig(vocab=16, d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, d_ff=64, max_len=64)
capstone, capstone_losses = train_capstone(
    CAPSTONE, steps=200, seed=0, on_step=lambda t, loss: print(f"step {t}/200: loss {loss:.3f}") if t % 50 == 0 else None,
)
capstone_accuracy = induction_accuracy(capstone)
print(f"held-out induction accuracy: {capstone_accuracy:.3f}")
expect("the trained model copies the repeated tokens", capstone_accuracy, ">", 0.95)


# %% tags=["hide-input"]
# @title The argument checks of the paged cache, Exercise 10 included, and of the pooled heads below (open to read)
def _paged_pool_shape(config, n_blocks, block_size):
    """One layer's pool shape (block, K/V head, slot, head_dim); every layer's keys and values must fit the budget."""
    _capstone_config(config)
    n_blocks, block_size = require_int("n_blocks", n_blocks, minimum=1), require_int("block_size", block_size, minimum=1)
    shape = (n_blocks, config.n_kv_heads, block_size, config.head_dim)
    require_budget("the paged cache's keys and values", (2 * config.n_layers, *shape), itemsize=torch.get_default_dtype().itemsize)
    return shape


def _cache_layer(cache, layer):
    """Return layer when it indexes one of cache's layers."""
    return require_int("layer", layer, minimum=0, maximum=len(cache.keys) - 1)


def _sequence_name(sequence):
    """sequence when it is a string, the name the cache's book files a sequence under."""
    if not isinstance(sequence, str):
        raise TypeError(f"a sequence is named by a string, got {type(sequence).__name__} {sequence!r}")
    return sequence


def _reserve_args(sequence, n_tokens):
    """reserve_slots' sequence name and n_tokens, checked."""
    _sequence_name(sequence)
    return require_int("n_tokens", n_tokens, minimum=1)


def _held_sequence(cache, sequence):
    """Return sequence when the cache holds it."""
    _sequence_name(sequence)
    if sequence not in cache.book["tables"]:
        raise ValueError(f"the cache holds no sequence {sequence!r}, only {sorted(cache.book['tables'])}; reserve slots for it first")
    return sequence


def _new_sequence(cache, sequence):
    """Return sequence when it is a name the cache does not use yet."""
    _sequence_name(sequence)
    if sequence in cache.book["tables"]:
        raise ValueError(f"the cache already holds a sequence {sequence!r}; fork into a new name")
    return sequence


def _write_inputs(cache, layer, slots, k, v):
    """(layer, k, v) for cache.write: slots are (block, offset) pairs in held blocks, k and v [H_kv, len(slots), hd], cast to the pool's dtype."""
    layer, pool = _cache_layer(cache, layer), cache.keys[0]
    if not isinstance(slots, (list, tuple)) or not slots or not all(isinstance(slot, (tuple, list)) and len(slot) == 2 for slot in slots):
        raise TypeError(f"slots must be a non-empty list of (block, offset) pairs, as reserve returns, got {type(slots).__name__}")
    for block, offset in slots:
        block = require_int("a slot's block", block, minimum=0, maximum=pool.shape[0] - 1)
        require_int("a slot's offset", offset, minimum=0, maximum=pool.shape[2] - 1)
        if not cache.book["refs"][block]:
            raise ValueError(f"slot ({block}, {offset}) lies in a free block; write to the slots that reserve returned")
    shape = (pool.shape[1], len(slots), pool.shape[3])
    for name, x in (("k", k), ("v", v)):
        if require_tensor(name, x, ndim=3).shape != shape:
            raise ValueError(f"{name} must be [H_kv, len(slots), head_dim] = {list(shape)}, got {list(x.shape)}")
    return layer, k.detach().to(pool.dtype), v.detach().to(pool.dtype)


def _paged_tokens(model, cache, sequence, tokens):
    """tokens as a long tensor [T] of token ids for paged_forward, checked against the model, the cache and max_len."""
    config = _capstone_model(model).config
    if not isinstance(cache, PagedKVCache):
        raise TypeError(f"cache must be a PagedKVCache, got {type(cache).__name__}")
    if (len(cache.keys), *cache.keys[0].shape[1::2]) != (config.n_layers, config.n_kv_heads, config.head_dim):
        raise ValueError("the cache was built for another model: build it with PagedKVCache(model.config, n_blocks, block_size)")
    _sequence_name(sequence)
    tokens = require_tensor("tokens", tokens, ndim=1, floating=False)
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must hold integer token ids, got dtype {tokens.dtype}; use tokens.long()")
    if not bool(((tokens >= 0) & (tokens < config.vocab)).all()):
        raise ValueError(f"token ids must lie in [0, vocab = {config.vocab}), got {tokens.min().item()} to {tokens.max().item()}")
    start = cache.book["lengths"].get(sequence, 0)
    if start + len(tokens) > config.max_len:
        raise ValueError(f"{sequence!r} holds {start} tokens; {len(tokens)} more would pass max_len = {config.max_len}")
    return tokens.long()


def _generate_inputs(model, cache, sequence, tokens, n_new):
    """(tokens as a list of ints, n_new) for paged_generate: tokens extend what the cache holds, and n_new stays within max_len."""
    config = _capstone_model(model).config
    if isinstance(tokens, torch.Tensor):
        tokens = require_tensor("tokens", tokens, ndim=1, floating=False).tolist()
    if not isinstance(tokens, (list, tuple)):
        raise TypeError(f"tokens must be a list of token ids, got {type(tokens).__name__}")
    tokens = [require_int("a token id", t, minimum=0, maximum=config.vocab - 1) for t in tokens]
    held = cache.book["lengths"].get(sequence, 0) if isinstance(cache, PagedKVCache) and isinstance(sequence, str) else 0
    if len(tokens) <= held:
        raise ValueError(f"the cache holds {held} tokens of {sequence!r}: tokens must repeat them and add at least one, got {len(tokens)}")
    return tokens, require_int("n_new", n_new, minimum=0, maximum=config.max_len - len(tokens))


def _pool_groups(model, groups):
    """Return groups when it divides the model's K/V heads."""
    n_kv_heads = _capstone_model(model).config.n_kv_heads
    groups = require_int("groups", groups, minimum=1, maximum=n_kv_heads)
    if n_kv_heads % groups:
        raise ValueError(f"groups must divide the model's {n_kv_heads} K/V heads, got {groups}")
    return groups


def _loss_inputs(model, batch, seed):
    """(batch, seed) for induction_loss: a batch whose activations fit the budget and a seed torch accepts."""
    config, rows = _capstone_model(model).config, 23  # induction_batch's rows hold 2 k_max - 1 = 23 tokens
    batch = require_int("batch", batch, minimum=1)
    require_budget("the induction batch's activations", (batch, rows, 3 * (config.n_heads * rows + config.d_ff) + config.vocab + 4 * config.d_model), itemsize=4)
    return batch, require_int("seed", seed, minimum=0, maximum=2**63 - 1)


# %% tags=["exercise"]
# Exercise 10: The bookkeeping of a paged KV cache. book holds block_size, refs (a reference count
# per physical block, 0 = free), tables (sequence -> its physical blocks) and lengths (sequence ->
# tokens held). Reserve slots for n_tokens more tokens of sequence, one token at a time: token p goes
# to slot (table[p // block_size], p % block_size). When p % block_size == 0, append the lowest free
# block (count 1). Otherwise, if the last block is shared (count > 1), copy it on write first: take the
# lowest free block, append (old, new) to copies, put new in the table, move one reference from old to
# new. Raise ValueError before changing anything when too few blocks are free. Return (book, slots, copies).
def reserve_slots(book, sequence, n_tokens):
    """Slots for n_tokens more tokens of sequence in a paged KV cache: (the new book, slots, copies to make)."""
    n_tokens = _reserve_args(sequence, n_tokens)
    size, refs = book["block_size"], list(book["refs"])
    tables, lengths = {name: list(table) for name, table in book["tables"].items()}, dict(book["lengths"])
    # Your code here.
    raise NotImplementedError('Exercise 10: see the instructions above')
    return {"block_size": size, "refs": refs, "tables": tables, "lengths": lengths}, slots, copies


# %%
check_exercise("Exercise 10", check_paged_cache_contract, reserve_slots, globals())


# %%
class PagedKVCache:
    """A paged KV cache for every layer of a model: a pool of physical blocks per layer and one book of block tables."""

    def __init__(self, config, n_blocks, block_size):
        shape = _paged_pool_shape(config, n_blocks, block_size)  # (block, K/V head, slot, head_dim)
        n_blocks, block_size = shape[0], shape[2]
        self.keys = [torch.zeros(shape) for _ in range(config.n_layers)]
        self.values = [torch.zeros(shape) for _ in range(config.n_layers)]
        self.book = {"block_size": block_size, "refs": [0] * n_blocks, "tables": {}, "lengths": {}}

    def reserve(self, sequence, n_tokens):
        """Slots for the next n_tokens of sequence; blocks copied on write get their keys and values copied here."""
        self.book, slots, copies = reserve_slots(self.book, sequence, n_tokens)
        for old, new in copies:
            for pool in self.keys + self.values:
                pool[new] = pool[old]
        return slots

    def fork(self, parent, child):
        """child shares every block of parent: one more reference to each, nothing copied."""
        parent, child = _held_sequence(self, parent), _new_sequence(self, child)
        self.book["tables"][child], self.book["lengths"][child] = list(self.book["tables"][parent]), self.book["lengths"][parent]
        for block in self.book["tables"][child]:
            self.book["refs"][block] += 1

    def write(self, layer, slots, k, v):
        """Store k, v [H_kv, T, hd] of T new tokens in their slots."""
        layer, k, v = _write_inputs(self, layer, slots, k, v)
        blocks, offsets = torch.tensor([b for b, _ in slots]), torch.tensor([o for _, o in slots])
        self.keys[layer][blocks, :, offsets] = k.transpose(0, 1)  # (T, H_kv, hd): one row per slot
        self.values[layer][blocks, :, offsets] = v.transpose(0, 1)

    def read(self, layer, sequence):
        """Keys and values [H_kv, length, hd] of sequence, gathered through its block table."""
        layer, sequence = _cache_layer(self, layer), _held_sequence(self, sequence)
        table, length = self.book["tables"][sequence], self.book["lengths"][sequence]
        k, v = (pool[layer][table] for pool in (self.keys, self.values))  # (blocks, H_kv, slots, hd)
        return tuple(x.transpose(0, 1).flatten(1, 2)[:, :length] for x in (k, v))  # (H_kv, blocks * slots, hd), cut to length

    def slots_held(self):
        """Token slots in the blocks that some sequence holds."""
        return sum(1 for count in self.book["refs"] if count) * self.book["block_size"]


def paged_forward(model, cache, sequence, tokens):
    """Logits [T, vocab] of tokens [T] appended to sequence, its keys and values written to and read from the paged cache."""
    tokens = _paged_tokens(model, cache, sequence, tokens)
    start = cache.book["lengths"].get(sequence, 0)
    positions, slots = torch.arange(start, start + len(tokens)), cache.reserve(sequence, len(tokens))
    x = model.embed(tokens[None])  # (1, T, d)
    for layer, block in enumerate(model.blocks):
        q, k, v = block.attn.qkv(block.attn_norm(x), positions)  # (1, H, T, hd), (1, H_kv, T, hd) twice
        cache.write(layer, slots, k[0], v[0])
        keys, values = cache.read(layer, sequence)  # (H_kv, start + T, hd)
        x = x + block.attn.merge(causal_attention(q, keys[None], values[None], query_offset=start)[0])
        x = x + block.ffn(block.ffn_norm(x))
    return model.head(model.norm(x))[0]  # (T, vocab)


def paged_generate(model, cache, sequence, tokens, n_new):
    """Greedy decoding of n_new tokens after tokens (those not yet cached are fed first), one token per step."""
    tokens, n_new = _generate_inputs(model, cache, sequence, tokens, n_new)
    with torch.no_grad():
        logits = paged_forward(model, cache, sequence, torch.tensor(tokens[cache.book["lengths"].get(sequence, 0):]))
        for _ in range(n_new):
            tokens.append(int(logits[-1].argmax()))
            logits = paged_forward(model, cache, sequence, torch.tensor(tokens[-1:]))
    return tokens


# %%
SHARED_PROMPT = [3, 9, 1, 7, 12, 5]  # a "system prompt" both users send: 6 tokens, a block and a half
paged = PagedKVCache(CAPSTONE, n_blocks=16, block_size=4)
with torch.no_grad():
    paged_forward(capstone, paged, "A", torch.tensor(SHARED_PROMPT))  # prefill once
paged.fork("A", "B")
print(f"after the fork: tables {paged.book['tables']}, counts {paged.book['refs'][:4]}")
users = {"A": SHARED_PROMPT + [3], "B": SHARED_PROMPT + [9]}  # each user's own next token: the first divergent one
decoded = {name: paged_generate(capstone, paged, name, tokens, n_new=8) for name, tokens in users.items()}
contiguous = {name: generate(capstone, torch.tensor([tokens]), 8)[0].tolist() for name, tokens in users.items()}
for name in users:
    print(f"user {name}: paged {decoded[name][len(users[name]):]}, contiguous {contiguous[name][len(users[name]):]}")
print(f"block tables {paged.book['tables']}: block 0 still shared (count {paged.book['refs'][0]}), block 1 copied on write")
expect("paged decoding gives token for token what the contiguous cache gives", decoded, "==", contiguous)
expect("the shared prompt's full block is stored once", (paged.book["tables"]["A"][0], paged.book["refs"][0]), "==", (paged.book["tables"]["B"][0], 2))

# %% [markdown]
# **Memory wasted.** A contiguous cache reserves `max_len` positions per sequence up front, because it
# cannot know how long the answer will be; a paged cache holds whole blocks only, so it wastes at most
# $B - 1$ slots per sequence. The cell below serves 8 requests of different lengths both ways and
# measures the share of reserved slots that hold no token. The vLLM paper measured that the systems
# before it stored token states in only 20.4% to 38.2% of their KV-cache memory
# ([Kwon et al., 2023](https://arxiv.org/abs/2309.06180), Fig. 2), that is, 61.8% to 79.6% wasted.

# %%
request_rng = np.random.default_rng(17)
requests = [request_rng.permutation(CAPSTONE.vocab)[:k].tolist() for k in request_rng.integers(4, 13, size=8)]  # k distinct tokens each
pool = PagedKVCache(CAPSTONE, n_blocks=64, block_size=4)
reserved, used = 0, 0
for r, prompt in enumerate(requests):
    prompt = prompt + prompt[:1]  # the repeat begins: the model copies the rest
    contiguous_cache = KVCache(CAPSTONE, 1)
    with torch.no_grad():
        capstone(torch.tensor([prompt]), contiguous_cache)
    reserved, used = reserved + contiguous_cache.nbytes(used=False), used + contiguous_cache.nbytes(used=True)
    paged_generate(capstone, pool, f"request {r}", prompt, n_new=0)
token_bytes = 2 * CAPSTONE.n_layers * CAPSTONE.n_kv_heads * CAPSTONE.head_dim * 4  # a key and a value per layer and K/V head, float32
waste = {"contiguous": 1 - used / reserved, "paged": 1 - used / (pool.slots_held() * token_bytes)}
print(f"8 requests, {used // token_bytes} tokens: contiguous reserves {reserved // token_bytes} slots, paged holds {pool.slots_held()}")
print(f"wasted: contiguous {waste['contiguous']:.1%}, paged {waste['paged']:.1%}; the vLLM paper's earlier systems 61.8% to 79.6%")
expect("paging wastes at most block_size - 1 = 3 slots per request", pool.slots_held() - used // token_bytes, "<=", 3 * len(requests))


# %% [markdown]
# **Grouped-query attention on the trained model.** GQA's authors start a model with fewer K/V heads
# from a multi-head checkpoint by mean-pooling the key and value projections of the heads in each
# group, then train a little more ("uptraining", [Ainslie et al., 2023](https://arxiv.org/abs/2305.13245),
# section 2.1). Below we pool the trained model's 4 K/V heads into 2 (GQA) and into 1 (MQA), measure what
# that costs on held-out induction batches before any uptraining, beside the cache bytes it saves, and
# then uptrain the 2-head model for a fifth of its original steps.

# %%
def pool_kv_heads(model, groups):
    """A copy of model whose K/V heads are mean-pooled into `groups` heads per layer, consecutive heads per group."""
    groups = _pool_groups(model, groups)
    pooled, state, hd = CapstoneLM(model.config.replace(n_kv_heads=groups)), model.state_dict(), model.config.head_dim
    for name, weight in state.items():
        if name.endswith(("attn.w_k.weight", "attn.w_v.weight")):  # rows: (K/V head, hd), columns: d_model
            state[name] = weight.view(groups, -1, hd, weight.shape[1]).mean(1).flatten(0, 1)  # (groups, heads per group, hd, d) -> mean
    pooled.load_state_dict(state)
    return pooled.eval()


def induction_loss(model, *, batch=512, seed=12345):
    """Held-out cross-entropy (nats) on the scored positions of the same batch induction_accuracy uses."""
    batch, seed = _loss_inputs(model, batch, seed)
    inputs, targets, scored = induction_batch(batch, torch.Generator().manual_seed(seed), vocab=model.config.vocab)
    with torch.no_grad():
        return float(F.cross_entropy(model(inputs)[scored], targets[scored]))


gqa_rows = {}
for groups in (4, 2, 1):
    variant = capstone if groups == 4 else pool_kv_heads(capstone, groups)
    gqa_rows[groups] = (induction_accuracy(variant), induction_loss(variant), kv_bytes_per_token(CAPSTONE.n_layers, groups, CAPSTONE.head_dim, 4))
for groups, (accuracy, loss, nbytes) in gqa_rows.items():
    print(f"{groups} K/V heads: accuracy {accuracy:.3f}, loss {loss:.3f} nats, cache {nbytes} bytes per token")
expect("mean-pooling 4 K/V heads into 4 groups of one changes nothing", pool_kv_heads(capstone, 4)(torch.tensor([SHARED_PROMPT])).tolist(), "==",
       capstone(torch.tensor([SHARED_PROMPT])).tolist())

# %% tags=["training"]
# Uptrains the 2-head pooled model for 40 steps (a fifth of the original 200), about a second on an idle CPU.
uptrained = pool_kv_heads(capstone, 2)
fit_induction(uptrained, train_step, steps=40, seed=7, warmup=5, lr=3e-3)
uptrained_accuracy = induction_accuracy(uptrained)
print(f"2 K/V heads after 40 uptraining steps: accuracy {uptrained_accuracy:.3f}, loss {induction_loss(uptrained):.3f} nats")
expect("uptraining recovers most of what pooling cost", uptrained_accuracy, ">", (gqa_rows[2][0] + gqa_rows[4][0]) / 2)
report_section("The trained model: paged decoding and pooled heads", globals())

# %% tags=["hide-input"]
# @title Bad inputs are refused: the argument checks of the cells above
expect_raises(ValueError, reserve_slots, {"block_size": 2, "refs": [1], "tables": {"A": [0]}, "lengths": {"A": 2}}, "A", 1, match="1 free blocks")
expect_raises(TypeError, reserve_slots, paged.book, 7, 1, match="string")
expect_raises(ValueError, reserve_slots, paged.book, "A", 0, match="n_tokens")
expect_raises(ValueError, PagedKVCache, CAPSTONE, 0, 4, match="n_blocks")
expect_raises(ValueError, PagedKVCache, CAPSTONE, 10**8, 4, match="ALLOCATION_BUDGET_BYTES")
expect_raises(ValueError, paged.fork, "A", "B", match="already holds")
expect_raises(ValueError, paged.read, 0, "C", match="no sequence 'C'")
expect_raises(ValueError, paged_forward, capstone, paged, "A", torch.tensor([CAPSTONE.vocab]), match="token ids")
expect_raises(ValueError, pool_kv_heads, capstone, 3, match="divide")
expect_raises(ValueError, induction_loss, capstone, batch=0, match="batch")
expect_raises(TypeError, plot_roofline, {8192: {"intensity": 1.0}, 4096: 2.0}, H100, FA3_FORWARD_FLOPS_PER_S, match="roofline must map")  # every row, not one
expect_raises(TypeError, plot_roofline, {8192: {"flops": 1.0}}, H100, FA3_FORWARD_FLOPS_PER_S, match="intensity");

# %% [markdown]
# # Part 3 · The practitioner's table: every option, its numbers, what breaks
#
# **The options**, from the most exact to the most compact. The numbers are for a running
# example shaped like Llama-3-8B (32 layers, 8 KV heads of width 128, 16-bit cache); the cell
# after the table computes every one of them.
#
# | Option | What it does | What it keeps | What it costs | Where you choose it |
# |---|---|---|---|---|
# | Full attention, grouped-query heads (GQA) | every token reads every earlier token; several query heads share one KV head | exact recall of the whole context | 128 KiB per token (512 KiB with 32 KV heads, 16 KiB with one, which is MQA); 17.2 GB at 128k tokens | the model's architecture |
# | Sliding window, often interleaved with full layers | each token reads the last $w$ tokens; depth relays information further | exact recall inside the window, weaker relayed recall beyond it | a cache capped at $w$ tokens: 0.54 GB for $w$ = 4,096 at any length | the model's architecture |
# | Attention sinks plus a window (StreamingLLM) | keep the first few tokens and a recent window at serving time | fluent streaming without a length limit; **no** recall of evicted tokens | almost nothing; the paper streams 4 million tokens with up to 22.2x speedup over recomputing a window ([Xiao et al., 2023](https://arxiv.org/abs/2309.17453)) | the inference server |
# | Hybrid state-space + attention | most layers carry a fixed-size state; a few are attention | exact lookup through the attention layers | 4 attention layers in 32 cut the 128k cache from 17.2 GB to 2.15 GB | the model's architecture |
# | Pure state-space or linear attention | every layer keeps a fixed-size summary | fluent long text, blurrier exact recall | a state that never grows: 4.2 MB for the whole 32-layer stack, in this module's toy convention (4,096 channels × 16 numbers per layer, 16-bit); a real Mamba layer of that width keeps more than twice as much, with twice the channels and a convolution state (Module 5.2, section 12) | the model's architecture |
# | Latent KV cache (MLA) | caches a short latent per token and rebuilds keys and values from it | exact outputs by construction | 576 numbers per token per layer instead of 32,768 for 128 heads of width 128 (57x fewer; 71x against the real 192-wide keys, section 5 here and section 13 of Module 5.2), plus extra matrix work | the model's architecture |
# | Quantized KV cache | stores keys and values with 8 or 4 bits and one scale per vector | slightly rounded attention | 3.9x smaller at 4 bits; the output error is measured in Module 5.2, section 14 | the inference server |
#
# Exact *streaming* attention (FlashAttention) is not in the table because it changes neither
# bill's size: it computes the same numbers in tiles, so the $n \times n$ score matrix never
# exists in memory at once. You will build it in sections 6 to 8 and prove it exact.
#
# **What breaks.**
#
# - *The fact was outside the window.* Mistral 7B v0.1 has 32 layers with a window of
#   $W$ = 4,096, in its paper's convention: position $i$ reads positions $i - W$ to $i$, so
#   4,097 keys counting itself, and each layer relays information 4,096 positions further. A
#   token can therefore feel one 131,072 = 32 × 4,096 positions back, but only by relay through
#   many hops; a fact 100,000 tokens back needs at least 25 of them. Expect no exact quote from
#   beyond the window. And 100,000 tokens lies far beyond the 8K context v0.1 was trained on, so
#   the reach is what the wiring allows, not what the model learned to use. (Later Mistral 7B
#   versions dropped the window; gpt-oss counts its 128-token window the other way, with the
#   current token among the 128.)
# - *A plain window drops the first tokens and the model falls apart.* Trained models park
#   attention mass on the first tokens (attention sinks); keep them when you evict.
# - *Evicted means gone.* Sinks plus a window stream fluently but cannot recall a token that
#   left the window.
# - *A fixed-size state cannot copy.* State-space and linear-attention layers reproduce a
#   specific far-away token worse than attention does; keep attention layers for retrieval.
# - *A sparse pattern that saves no time.* Skipped pairs only save work when whole blocks of the
#   score matrix are skipped; section 8 measures what skipping buys.
# - *A quantized cache that changes answers.* Keys carry a few large channels; one scale per
#   token wastes its codes on them. Quantize keys per channel and values per token (KIVI, Module 5.2, section 14).
#
# **The gains reported in the papers** (each from the paper's abstract): Mamba, 5x the
# *generation* throughput of a same-size Transformer ([Gu and Dao, 2023](https://arxiv.org/abs/2312.00752));
# DeepSeek-V2, a KV cache 93.3% smaller and 5.76x the maximum generation throughput of
# **DeepSeek 67B**, its dense predecessor (95 layers, 8 KV heads), not of an MHA twin, with V2's
# cache also stored at about 6 bits per number ([DeepSeek-AI, 2024](https://arxiv.org/abs/2405.04434), section 3.2.3);
# Jamba, a 256K-token context ([Lieber et al., 2024](https://arxiv.org/abs/2403.19887)), of which
# up to 140K tokens fit on one 80 GB GPU, a figure from the
# [Jamba-v0.1 model card](https://huggingface.co/ai21labs/Jamba-v0.1), not the paper's abstract.

# %%
# Every number in the table above, computed from its definition (the sections before it derived each one).
guide = {
    "cache per token, 8 KV heads (KiB)": per_token / KIB,
    "cache per token, 32 KV heads (KiB)": 2 * L8B * 32 * D8B * BYTES16 / KIB,
    "cache per token, 1 KV head, MQA (KiB)": 2 * L8B * 1 * D8B * BYTES16 / KIB,
    "cache at 128k tokens (GB)": per_token * 131_072 / GB,
    "window 4,096: cache at any length (GB)": per_token * 4_096 / GB,
    "hybrid 4 attention + 28 SSM layers at 128k (GB)": (4 * 2 * KV8B * D8B * BYTES16 * 131_072 + 28 * 4_096 * 16 * BYTES16) / GB,
    "pure SSM stack, 32 layers (MB)": 32 * 4_096 * 16 * BYTES16 / 10**6,
    "latent numbers per token per layer": 512 + 64,
    "MHA numbers per token per layer (128 heads x 128 x K,V)": 2 * 128 * 128,
    "latent saving (x)": 2 * 128 * 128 / (512 + 64),
    "4-bit cache saving (x)": per_token / (2 * L8B * KV8B * (D8B * 4 // 8 + 2)),
    "Mistral 7B v0.1 reach (tokens), i reads i - 4,096 .. i": 32 * 4_096,
    "hops to reach 100,000 tokens back": math.ceil(100_000 / 4_096),
}
for label, value in guide.items():
    print(f"{label:58s} {value:,.2f}")
expect('guide["cache per token, 1 KV head, MQA (KiB)"] == 16', guide["cache per token, 1 KV head, MQA (KiB)"], "==", 16)

# %% tags=["hide-input"]
# @title The rest of the table's numbers, against the text and the frozen reference (checked; open to read)
expect('round(guide["cache at 128k tokens (GB)"], 1) == 17.2', round(guide["cache at 128k tokens (GB)"], 1), "==", 17.2)
expect('round(guide["hybrid 4 attention + 28 SSM layers at 128k (GB)"], 2) == 2.15', round(guide["hybrid 4 attention + 28 SSM layers at 128k (GB)"], 2), "==", 2.15)
expect('round(guide["latent saving (x)"]) == 57', round(guide["latent saving (x)"]), "==", 57)
expect('round(guide["4-bit cache saving (x)"], 1) == 3.9', round(guide["4-bit cache saving (x)"], 1), "==", 3.9)
REFERENCE.check("running_example.bytes_per_token", per_token)
REFERENCE.check("window.mistral_v0_1_reach", guide["Mistral 7B v0.1 reach (tokens), i reads i - 4,096 .. i"]);

# %% [markdown]
# ## In 20 seconds
#
# - Long context sends two bills: scores grow with $n^2$ (compute), the KV cache with $n$ (memory,
#   per layer, per conversation). A model card's layers, KV heads, head width and windows size the
#   cache exactly: the running example's 128 KiB per token is 137 GB at 1M tokens, past one 80 GB GPU.
# - Tiled streaming attention (online softmax over blocks) gives the *same* outputs as dense
#   attention, skips blocks a causal mask or window empties, and keeps memory linear in $n$.
# - Its backward pass keeps only $O$ and one log-sum-exp per row and recomputes the tiles; a paged
#   cache stores the same keys and values in blocks, so decoding is token for token the same while
#   only a sequence's last block is partly empty.
#
# ## Self-test
#
# Try each question before you open its answer. The numeric ones are recomputed by the cell below.
#
# 1. **Why does doubling the context quadruple the score work but only double the cache?**
#
#    <details><summary>Answer</summary>Every query is scored against every key, an n × n table; the cache stores one key and one value per token, a list that grows by one entry per token.</details>
#
# 2. **gpt-oss-120b has 36 layers, 8 KV heads of width 64, and a 128-token window on half its layers. What does a 128k-token conversation cache, and why is it not 9 GiB?**
#
#    <details><summary>Answer</summary>About 4.5 GiB: only the 18 full layers grow (2,048 bytes per layer per token, 36 KiB per token in all); the 18 windowed layers hold 128 tokens each, 4.5 MiB in all.</details>
#
# 3. **Where does a gpt-oss sink logit go, and what does it do to a row? How is it related to StreamingLLM's sink tokens?**
#
#    <details><summary>Answer</summary>Into the softmax's denominator, one per query head, with a zero value vector. It takes a share of the probability (53.69% against 128 keys scoring 0 when the sink is 5), shrinking every token's weight by the same factor. StreamingLLM's first tokens play the same role in a model trained without such a logit: both give a row somewhere to put mass it does not want to spend.</details>
#
# 4. **Your GQA code has the right shapes but wrong outputs. What is the likely bug?**
#
#    <details><summary>Answer</summary>The KV heads were tiled (kv0, kv1, kv0, kv1) instead of repeated (kv0, kv0, kv1, kv1), so query heads read another group's keys and values.</details>
#
# 5. **Why is tiled attention exact and not an approximation, and why does it matter most on a GPU?**
#
#    <details><summary>Answer</summary>The online softmax carries the running max and sum, and rescales everything accumulated so far by α = exp(m_old − m_new) whenever the max grows, so after the last block O / ℓ is the softmax average itself. On a GPU it keeps the score tiles in on-chip SRAM, so the n × n matrix never travels to HBM.</details>
#
# 6. **Decoding token 5 with a cache of tokens 0 to 4, you pass is_causal=True to F.scaled_dot_product_attention with one query. What goes wrong?**
#
#    <details><summary>Answer</summary>PyTorch aligns the causal triangle top-left, so the one query is treated as position 0 and sees only key 0. Pass an explicit mask, or (here) the query's absolute position (query_start).</details>
#
# **Numeric questions.**
#
# 7. **How many bytes per token does Llama-3.3-70B's 16-bit KV cache cost (80 layers, 8 KV heads of width 128)?**
#
#    <details><summary>Answer</summary>327,680 bytes, 320 KiB</details>
#
# 8. **With n = 2,048 and tiles of 128, how many score tiles does causal tiled attention compute?**
#
#    <details><summary>Answer</summary>136 of 256</details>

# %%
# The numeric self-test answers, recomputed: a wrong answer in the text above stops here.
self_test_answers = {
    "Llama-3.3-70B bytes per token": (kv_bytes_per_token(80, 8, 128), 327_680),
    "causal tiles, n = 2,048, B = 128": (sum(1 for b in range(16) for c in range(16) if c <= b), 136),
}
for question, (computed, stated) in self_test_answers.items():
    print(f"{question:45s} computed {computed:>15,}   stated {stated:>15,}")
    if computed != stated:
        raise ValueError(f"self-test answer '{question}': the text says {stated:,}, the cell computes {computed:,}")
print(f"Self-test: {len(self_test_answers)} numeric answers recomputed: PASS")

# %% [markdown]
# ## The papers behind this module
#
# - Vaswani et al., *Attention Is All You Need* (2017): https://arxiv.org/abs/1706.03762 (the base model: 8 heads of width 64)
# - Milakov and Gimelshein, *Online normalizer calculation for softmax* (2018): https://arxiv.org/abs/1805.02867
# - Dao et al., *FlashAttention* (2022): https://arxiv.org/abs/2205.14135; Dao, *FlashAttention-2* (2023): https://arxiv.org/abs/2307.08691
# - Shah et al., *FlashAttention-3* (2024): https://arxiv.org/abs/2407.08608; Zadouri et al., *FlashAttention-4* (2026), the authors' post: https://www.together.ai/blog/flashattention-4
# - Su et al., *RoFormer: Enhanced Transformer with Rotary Position Embedding* (RoPE, 2021): https://arxiv.org/abs/2104.09864
# - Shazeer, *Fast Transformer Decoding: One Write-Head is All You Need* (MQA, 2019): https://arxiv.org/abs/1911.02150
# - Ainslie et al., *GQA* (2023): https://arxiv.org/abs/2305.13245
# - Xiao et al., *Efficient Streaming Language Models with Attention Sinks* (2023): https://arxiv.org/abs/2309.17453
# - OpenAI, *gpt-oss-120b and gpt-oss-20b Model Card* (2025): https://arxiv.org/abs/2508.10925
# - DeepSeek-AI, *DeepSeek-V2* (2024): https://arxiv.org/abs/2405.04434; *DeepSeek-V3* (2024): https://arxiv.org/abs/2412.19437
# - Kwon et al., *PagedAttention / vLLM* (2023): https://arxiv.org/abs/2309.06180 (2-4x throughput at the same latency as FasterTransformer and Orca)
# - Zheng et al., *SGLang: Efficient Execution of Structured Language Model Programs* (RadixAttention, 2024): https://arxiv.org/abs/2312.07104
# - Hsieh et al., *RULER* (2024, COLM version): https://arxiv.org/abs/2404.06654; Liu et al., *Lost in the Middle* (2023): https://arxiv.org/abs/2307.03172

# %%
print(f"reference schema version {REFERENCE.value('schema_version')}")
report_references(globals())
exercise_summary(globals())
report_section("Module 5.1", globals())
