# %% [markdown]
# <!-- builder:begin header -->
# # Модуль 5 · Современные механизмы внимания · версия для студента
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/ru/student/module5_modern_attention.ipynb)
#
# *Provenance: course builder 0.1.0; reference `references/module5.json`, SHA-256 `ea396b433720543a96a2fd3eac71ae73ac029bcde6621667ed463078e7cb1ba4`.*
# <!-- builder:end sha256=6d46efe9664e669fc1c10e3d7d132cd455ca40018666bca3a6bcc1035f55ea99 -->

# %% [markdown]
# **Student edition.** The functions below are stubs that raise `NotImplementedError`; replace the line `# Your code here.` and the `raise` under it with your code. The cell right after each exercise runs its contract check and tells you which property passes and which fails, on what input, with the expected and actual values.
#
# *Run all* reaches the end: an exercise you have not touched prints "not attempted yet" and the cells after it use the reference solution. An exercise you attempted that fails stops *Run all* at its check cell; the reference takes over there too, so *Runtime → Run after* on that cell (Colab) or *Run → Run Selected Cell and All Below* on the next one (JupyterLab) goes on. `show_reference("Exercise 1")` prints a solution; the last cell lists the exercises passed, failed and not attempted.
#
# - **Exercise 1:** `make_mask`
# - **Exercise 2:** `sdpa`
# - **Exercise 3:** `repeat_kv_heads`
# - **Exercise 4:** `kv_cache_bytes`
# - **Exercise 5:** `online_softmax_dot`
# - **Exercise 6:** `tiled_attention_plain`
# - **Exercise 7:** `causal_tiled_attention`
# - **Exercise 8:** `tiled_attention`
# - **Exercise 9:** `rolling_window_decode`
# - **Exercise 10:** `linear_attention_recurrent`
# - **Exercise 11:** `parallel_scan`
# - **Exercise 12:** `mla_absorbed_attention`

# %% [markdown]
# **Как запускать этот ноутбук.** Выберите *Runtime → Run all* (в JupyterLab: *Run → Run All Cells*). Хватит
# среды выполнения с CPU. Первая ячейка с кодом устанавливает только то, чего не хватает, а в Colab
# не хватает ничего. Каждый раздел заканчивается проверкой, которая громко останавливает ноутбук,
# если какое-то число неверно.
#
# **Когда проверка останавливает ноутбук.** После каждого упражнения ячейка проверки оценивает вашу
# функцию. Если проверка не пройдена, ячейка показывает, какое свойство нарушено, на каком входе,
# ожидаемое и фактическое значения и обычную причину ошибки, и *Run all* останавливается на ней.
# Дальше ноутбук использует эталонное решение этого упражнения, так что можно продолжать: в Colab
# щёлкните по упавшей ячейке и выберите *Runtime → Run after*; в JupyterLab выделите ячейку под ней
# и выберите *Run → Run Selected Cell and All Below* (в классическом Notebook: *Cell → Run All Below*).
# `show_reference("Exercise 3")` печатает решение упражнения. Исправьте свою ячейку, запустите её и её
# проверку ещё раз; последняя ячейка перечисляет все упражнения, которые всё ещё работают на эталонном
# решении.

# %%
# Setup 1 of 5: install only the allow-listed packages that are missing.
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
    """Pip-install the allow-listed ``modules`` that cannot be imported; return the ones installed."""
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
    if not missing:
        print("All required packages are already installed.")
    return missing
# builder:end sha256=e9a0ef08a52d76ad760a84c37d17cef35d5f5b273e696ad16485a074ba57ec34

installed = install_missing(["numpy", "torch", "matplotlib"])  # a name, so the cell prints no list

# %%
# Setup 2 of 5: imports, seeds and a plotting backend that also works as a plain script.
import gc
import json
import math
import os
import sys
import time
import tracemalloc

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # one BLAS thread, set before NumPy loads: steady timings, identical sums on every run

import matplotlib

if "ipykernel" not in sys.modules:
    matplotlib.use("Agg")  # `python notebooks/module5_modern_attention.py` draws off-screen

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

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

SEED = 4
LANGUAGE = "ru"  # figure labels: "en" or "ru"
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

        A ``null`` in the reference stands for a masked entry and matches ``None`` or ``-inf``.
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
        return expected

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
# builder:end sha256=b7d4788bc7439ad04138391d04861c975e332388ea4cac668c7a807017e98e8b
# builder:begin inline load_reference
def load_reference(json_text, expected_sha256, source):
    """Verify the embedded JSON against its SHA-256, then wrap it as a ``Reference``."""
    import json

    verify_sha256(json_text, expected_sha256, f"the embedded {source}")
    return Reference(json.loads(json_text), source)
# builder:end sha256=0061ffa86fd4d809348099c915727b39e6fdaebd397b90e1e3be85304120014c
# builder:begin reference module5
REFERENCE_SOURCE = "references/module5.json"
REFERENCE_SHA256 = "ea396b433720543a96a2fd3eac71ae73ac029bcde6621667ed463078e7cb1ba4"
REFERENCE_JSON = r"""{
  "context_tokens": 131072,
  "designs_at_1m_bytes": [549755813888, 137438953472, 38654705664, 35433480192, 17183539200, 536870912, 4194304],
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
  "hybrid": {
    "all_attention_bytes_128k": 17179869184,
    "attention_layer_bytes_128k": 536870912,
    "hybrid_4_of_32_bytes_128k": 2151153664,
    "pure_ssm_stack_bytes": 4194304,
    "ssm_layer_bytes": 131072
  },
  "kv_rows": {
    "gpt_oss_gqa_all_full_equivalent": 73728,
    "gpt_oss_mha_hypothetical": 589824,
    "gpt_oss_mqa_hypothetical": 9216
  },
  "latent_example": {
    "key": [3, 1, 3, 1],
    "latent": [3, 1],
    "q_latent": [1, 3],
    "score": 6
  },
  "linear": {
    "S": [20.0, 22.0],
    "output": 4.133333333333334,
    "softmax_output": 4.0,
    "z": [5.0, 5.0]
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
    "n1": 1.7357588823428847,
    "n2": 3.966890002140263,
    "output": 2.502296533903012
  },
  "quantized": {
    "bytes_per_token_4bit": 33792,
    "codes_4bit": [7, -3, 2, 0]
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
  "selective": {
    "best_fixed_final_state": 0.26224097047064576,
    "delta_mark": 5.006715348489118,
    "delta_plain": 0.006715348489118068,
    "final_state": 6.547772145651016
  },
  "sink_share": {
    "logit_0": 0.007751937984496124,
    "logit_2": 0.054576465128255015,
    "logit_5": 0.5369250855654837
  },
  "sparse": {
    "full_over_window64_4096": 32.25587403124616,
    "pairs_16": [136, 58, 70, 82],
    "shortlist_score_ratio": 0.28125,
    "strided_row_13": [1, 5, 9, 10, 11, 12, 13]
  },
  "ssm": {
    "scan_rounds_1024": 10,
    "tea_kernel": [1.0, 0.5, 0.25, 0.125],
    "tea_states": [1.0, 0.5, 0.25, 2.125]
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
    "cache_bytes_4096": 536870912,
    "causal_pairs_8": 36,
    "hops_100k": 25,
    "mistral_v0_1_reach": 131072,
    "pairs_8_3": 21,
    "reach_3_3": 6
  }
}
"""
# builder:end sha256=cddd91e1804ce8f0b6cdd4c230b5f2755c71662fd17d8441920c817c1507b63a

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
    if finite and floating and not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must contain only finite values; found NaN or infinity")
    return value
# builder:end sha256=38f21b368133f87a537a180b9302596a135bd96d5c1b77e3e5fa571ed3b5f867
# builder:begin inline require_finite_result
def require_finite_result(what, value, cause):
    """Return ``value`` when every entry is finite; otherwise raise FloatingPointError naming ``cause``."""
    import numpy as np

    if getattr(value, "is_meta", False):
        raise TypeError(f"{what} is a meta tensor, which holds no values to check; compute on the CPU")
    entries = value.detach().cpu().double().numpy() if hasattr(value, "detach") else np.asarray(value, dtype=float)
    if not np.isfinite(entries).all():
        raise FloatingPointError(f"{what} overflowed to NaN or infinity from finite input: {cause}")
    return value
# builder:end sha256=21d5536d52b8caabf9d553d0b83db0a10143225ee4c98711987ca2c613d07403
# builder:begin inline expect_raises
def expect_raises(expected, function, *args, match=None, **kwargs):
    """Call ``function`` on bad input and return the message of the error it must raise.

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
        return message
    except Exception as exc:
        raise AssertionError(f"{label} should raise {names} on this input, but raised {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{label} should raise {names} on this input, but returned normally")
# builder:end sha256=a5d1f439e9dcfa9452861dcd8355d8b3325eab10038af490f0717956e7d547c7
# builder:begin inline LANGUAGES
LANGUAGES = ("en", "ru")
# builder:end sha256=111d2b2ce51a59d64b38c3969edbeb40b8f8de6a86b9f6d9a34fa3305c296f84
# builder:begin inline Palette
class Palette:
    """The course colours, one name per role, shared by every figure."""

    BLUE = "#5E81AC"
    GREEN = "#A3BE8C"
    ORANGE = "#D08770"
    RED = "#BF616A"
    PURPLE = "#8F6BA8"
    YELLOW = "#EBCB8B"
    INK = "#2E3440"
    MUTED = "#4C566A"
    GREY = "#9AA5B8"
    BORDER = "#D8DEE9"
    PAPER = "#ECEFF4"
# builder:end sha256=b0b2dda979a82908f862bc08a3f7020b274fa7164e147c0146903b454b3183c9
# builder:begin inline apply_plot_style
def apply_plot_style():
    """Set matplotlib defaults once: fonts, colours, grid and a modest resolution for fast rendering."""
    import matplotlib

    matplotlib.rcParams.update({
        "font.family": "DejaVu Sans",
        "font.size": 11,
        "text.color": Palette.INK,
        "axes.labelcolor": Palette.INK,
        "axes.titlecolor": Palette.INK,
        "axes.titlesize": 13,
        "axes.titleweight": "bold",
        "axes.titlelocation": "left",
        "axes.titley": 1.0,  # a fixed title height: automatic placement lays out every tick label once more per draw
        "axes.labelsize": 11,
        "axes.edgecolor": Palette.BORDER,
        "axes.linewidth": 0.8,
        "axes.grid": True,
        "axes.axisbelow": True,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": matplotlib.cycler(color=[Palette.BLUE, Palette.ORANGE, Palette.GREEN, Palette.RED, Palette.PURPLE, Palette.YELLOW]),
        "grid.color": Palette.BORDER,
        "grid.linewidth": 0.6,
        "xtick.color": Palette.MUTED,
        "ytick.color": Palette.MUTED,
        "legend.frameon": False,
        "legend.fontsize": 10,
        "figure.facecolor": "white",
        "figure.dpi": 90,
        "savefig.dpi": 90,
        "savefig.facecolor": "white",
        "svg.hashsalt": "course",
    })
# builder:end sha256=2c8036022c30edda416c5b17e860b40d03367ae96696e46fffb1f015a0635d3c
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
# builder:begin inline show_figure
def show_figure(fig, caption):
    """Show a figure with its how-to-read caption (the caption is also the image's alt text).

    In a Jupyter kernel the figure is displayed as a PNG; in a plain script it is only closed.
    """
    import io

    import matplotlib.pyplot as plt

    if not isinstance(caption, str) or not caption.strip():
        raise ValueError("every figure needs a caption that says how to read it")
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
    except ImportError:
        kernel = None
    if kernel is not None:
        from IPython.display import Image, Markdown, display

        buffer = io.BytesIO()
        # zlib level 1: a PNG about 8% larger, written in a fraction of the default level's time
        fig.savefig(buffer, format="png", metadata={"Software": None}, pil_kwargs={"compress_level": 1})
        display(Image(data=buffer.getvalue()), metadata={"image/png": {"alt": caption}})
        display(Markdown(f"*{caption}*"))
    plt.close(fig)
# builder:end sha256=a443c527f3c9c6e85450dcbf2a2edbf1a390cfd17b237a2c7d68259acf918125

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
# builder:begin inline ContractViolation
class ContractViolation(AssertionError):
    """A broken contract property: which one, on what input, expected against actual, and the usual cause."""

    def __init__(self, prop, on_input, expected, actual, hint):
        self.property, self.on_input, self.expected, self.actual, self.hint = prop, on_input, expected, actual, hint
        super().__init__(
            f"contract property '{prop}' failed\n"
            f"  on input:    {on_input}\n"
            f"  expected:    {expected}\n"
            f"  actual:      {actual}\n"
            f"  usual cause: {hint}"
        )

    def _render_traceback_(self):
        """What IPython and Jupyter show instead of a traceback: the student's own frames, then the message, one line a field."""

        def one_line(text):
            text = " ".join(str(text).split())
            return text if len(text) <= 400 else text[:400] + " ..."

        fields = (("on input", self.on_input), ("expected", self.expected), ("actual", self.actual), ("usual cause", self.hint))
        fields += (("to go on", self.go_on),) if getattr(self, "go_on", "") else ()
        message = [f"ContractViolation: contract property '{one_line(self.property)}' failed"]
        return list(getattr(self, "frames", ())) + message + [f"  {name + ':':<13}{one_line(value)}" for name, value in fields]
# builder:end sha256=0999b074788c24c62a9d05814f78b097459e3bd295d4d82bd0efa23c9494be51
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
            prop, on_input, f"numbers of shape {want.shape}", f"{type(actual).__name__} {actual!r}"[:160], hint,
        ) from None
    if got.shape != want.shape:
        raise ContractViolation(prop, on_input, f"shape {want.shape}", f"shape {got.shape}", hint)
    with np.errstate(invalid="ignore"):
        error = np.abs(got - want)
        agree = (got == want) | (error <= atol + rtol * np.abs(want))
    if not agree.all():
        where = tuple(int(i) for i in np.argwhere(~agree)[0])
        finite_errors = error[~agree][np.isfinite(error[~agree])]
        worst = f"{finite_errors.max():.3g}" if finite_errors.size else "not finite (NaN or infinity)"
        raise ContractViolation(
            prop,
            on_input,
            f"{float(want[where])!r} at index {where} (tolerance atol={atol}, rtol={rtol})",
            f"{float(got[where])!r}; {int((~agree).sum())} of {agree.size} entries disagree, largest |difference| {worst}",
            hint,
        )
    return float(error.max()) if error.size else 0.0
# builder:end sha256=3122610b60e801573fc1a9e96e08bad19392cc0b9946adbc463592a0e99bd8d8
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

    def _render_traceback_(self):
        """What IPython and Jupyter show instead of a traceback: the message alone, at most 15 lines."""
        lines = [line if len(line) <= 400 else line[:400] + " ..." for line in f"CheckFailed: {self}".splitlines() if line.strip()]
        return lines[:14] + ["  ..."] if len(lines) > 15 else lines
# builder:end sha256=f891a8b4c8c297628c6aecdeb81021edb896e9bfd50e2d35d0044d638fecf0f6
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

        want = "a true value" if relation is None else f"{relation} {shown(expected)}"
        raise CheckFailed(f"check failed: {claim}\n  expected: {want}\n  actual:   {shown(actual)}")
# builder:end sha256=fc9fc56c38d9fc6f2fc643f336a69fe433cde3826ebf69d215abf53e4d51bbee
# builder:begin inline expect_close
def expect_close(claim, actual, expected, *, atol=1e-12, rtol=1e-12):
    """Raise CheckFailed unless two arrays or tensors agree entry by entry (``contract_close``'s rule); return the largest error.

    A light stand-in for ``torch.testing.assert_close``, whose first call (torch 2.13) imports torch.distributed,
    sympy and mpmath: about a second on a 2-core CPU.
    """
    try:
        return contract_close(claim, "", actual, expected, "", atol=atol, rtol=rtol)
    except ContractViolation as failed:
        raise CheckFailed(f"check failed: {claim}\n  expected: {failed.expected}\n  actual:   {failed.actual}") from None
# builder:end sha256=c0a4e65bd28bfc345681b88763904e0029c4be652253e787a3bfb4a129aa03fe
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
    """Judge one exercise with its contract check; print PASS only when the student's own code passes.

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
        lines = [f"Your code raised {type(error).__name__} here (the course's frames are left out):"] if frames else []
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
        summary = contract(implementation)
        if outcomes.get(label) != "not attempted":  # else the line that said so stands for every function of the exercise
            print(f"{label}: the reference solution of {name} is in place, not yours. Fix your cell, run it, then run this one.")
        return summary
    needs = namespace.get("EXERCISE_NEEDS")  # the graded edition's: the unfinished exercise an implementation uses
    waited = needs(implementation, label) if callable(needs) else None
    try:
        summary = None if waited else contract(implementation)
    except Exception as error:
        stub = re.match(r"(Exercise \d+):", str(error)) if isinstance(error, NotImplementedError) else None
        if stub and stub.group(1) != label and stub.group(1) in waiting.values():
            waited = stub.group(1)
        elif stub and stub.group(1) == label:
            if use_reference(label, namespace, "not attempted"):
                print(f"{label}: not attempted yet; later cells use the reference solution")
            else:
                outcomes[label], waiting[name] = "not attempted", label
                print(f"{label}: not attempted yet; the cells that need {name} wait for it")
            return None
        else:
            failure = error if isinstance(error, ContractViolation) else ContractViolation(
                "the contract check runs to the end on this implementation", f"{label}'s contract inputs",
                "a result the contract can judge", f"{type(error).__name__}: {error}",
                f"the traceback above this message shows the line of {name} that raised",
            )
            failure.frames = own_frames(error.__cause__ if failure is error else error)
            reason = f"{name} failed '{failure.property}'" if failure is error else f"{name} broke its contract check ({type(error).__name__})"
            if use_reference(label, namespace, reason):
                failure.go_on = (
                    f"later cells now use the reference solution of {label}: click this cell and choose Runtime → Run after "
                    f"(Colab), or select the next cell and choose Run → Run Selected Cell and All Below (JupyterLab). "
                    f"show_reference({label!r}) prints the solution; fix your cell, then run it and this one again."
                )
            else:
                outcomes[label], waiting[name] = reason, label
                failure.go_on = f"fix {name}, run its cell and this one again; the cells that need {name} wait until it passes."
            failure.args = (f"{failure.args[0]}\n  to go on:    {failure.go_on}",)
            if failure is error:
                raise
            raise failure from error
    if waited:
        outcomes[label], waiting[name] = f"waits for {waited}", label
        print(f"{label}: waits for {waited}, which {name} uses; finish {waited} first, then run this cell again")
        return None
    for waiter in [n for n, held in waiting.items() if held == label]:
        del waiting[waiter]
    outcomes[label] = "passed"
    print(f"{label}: PASS, every contract property of {name} holds")
    return summary
# builder:end sha256=d07a0a08d71274417c0417df2f946aed7a4b8f502f557cd1c93e0bc277ad2aad
# builder:begin inline show_reference
def show_reference(label, namespace=None):
    """Print the solution edition of the exercise cell ``label``, for example ``show_reference("Exercise 3")``."""
    sources = require_namespace(globals() if namespace is None else namespace, label).get("REFERENCE_SOURCES", {})
    if label not in sources:
        raise ValueError(f"no exercise is labelled {label!r}; the labels are {', '.join(sources) or '(none)'}")
    print(sources[label])
# builder:end sha256=bd3b6bb9461a1927a76482d1e9f349de89a2e7be63700c2026c4a0cde5377b5e
# builder:begin inline report_section
def report_section(section, namespace):
    """Print '<section>: PASS' only while every exercise so far runs on the student's own code."""
    require_namespace(namespace, section)
    standing_in = exercises_on_reference(namespace)
    waited = list(dict.fromkeys(namespace.get("EXERCISES_WAITING", {}).values()))
    if waited:
        print(f"{section}: not judged yet; some cells wait for {', '.join(waited)}")
    elif not standing_in:
        print(f"{section}: PASS")
    else:
        named = ", ".join(standing_in[:3]) + (f" and {len(standing_in) - 3} more" if len(standing_in) > 3 else "")
        print(f"{section}: the checks hold, but with the reference solution standing in for {named}: not a pass of your own code yet")
# builder:end sha256=4ff71542242b91eeb29e096ed4004d9dac3ac9de415e7de36dc8f08b5c85c029
# builder:begin inline exercise_summary
def exercise_summary(namespace):
    """Print the exercises passed, failed and not attempted, and name the first failing check."""
    require_namespace(namespace)
    outcomes = namespace.get("EXERCISE_OUTCOMES", {})
    skipped = [label for label, outcome in outcomes.items() if outcome == "not attempted" or outcome.startswith("waits for")]
    failed = [label for label in exercises_on_reference(namespace) if label not in skipped]
    print(f"Exercises passed with your own code: {', '.join(label for label, o in outcomes.items() if o == 'passed') or 'none'}")
    print(f"Exercises failed: {', '.join(failed) or 'none'}")
    print(f"Exercises not attempted: {', '.join(skipped) or 'none'}")
    if failed:
        print(f"First failing check: the check cell of {failed[0]} ({outcomes[failed[0]]}); fix that exercise first")
# builder:end sha256=de85e67f8fa15e21c4465813d60df38f90e94506de00611274f0856ca6fee13f
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
    except ValueError:
        pass
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
# builder:end sha256=8b5d6f28b08c5f3dfa5f3bbe88eca887cb25391886b1a4de9b9fd49ca165f335
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
        "2 dicts with keys m, alpha, l, n", f"{trace!r}"[:120], "append {'m': ..., 'alpha': ..., 'l': ..., 'n': ...} after each tile",
    )
    e = math.exp
    expected = [
        {"m": 2.0, "alpha": 0.0, "l": 1.0 + e(-1.0), "n": 1.0 + 2.0 * e(-1.0)},
        {"m": 3.0, "alpha": e(-1.0), "l": e(-1.0) * (1.0 + e(-1.0)) + 1.0 + e(-2.5),
         "n": e(-1.0) * (1.0 + 2.0 * e(-1.0)) + 3.0 + 4.0 * e(-2.5)},
    ]
    hints = {
        "m": "the running max is the max of the old max and this tile's max",
        "alpha": "alpha = exp(m_old - m_new); before any tile m_old = -inf, so the first alpha is 0",
        "l": "online softmax without the alpha rescale: multiply the old running sum by alpha before adding the tile's exp(x - m_new)",
        "n": "multiply the old numerator by alpha as well, then add sum(exp(x - m_new) * v)",
    }
    for tile, (want, got) in enumerate(zip(expected, trace)):
        for key in ("m", "alpha", "l", "n"):
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
# builder:end sha256=83b8a79e74288e05e77208d1107118be27a96c9eb59fb1cdd25aa42592eb5d28
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

    Query i reads keys 0..i. The output must equal dense causal attention, and exactly the key tiles
    that hold at least one allowed key may be computed: those on or below the block diagonal.
    """
    import math

    import numpy as np

    def dense_causal(Q, K, V):
        scores = Q @ K.T / math.sqrt(Q.shape[1])
        scores = np.where(np.tri(len(Q), len(K), dtype=bool), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V

    def needed(n, tile):
        starts = range(0, n, tile)
        return sum(1 for q0 in starts for k0 in starts if k0 <= min(q0 + tile, n) - 1)

    gen = np.random.default_rng(707)
    n = 11
    Q, K, V = gen.standard_normal((n, 4)), gen.standard_normal((n, 4)), gen.standard_normal((n, 3))
    case = "Q, K [11 tokens, d_k=4], V [11, 3], float64"
    worst = 0.0
    for tile in (1, 3, 4, 64):
        where = f"{case}, tile_size={tile}"
        output, tiles = contract_parts("causal tiles give (output, tiles_computed)", where, contract_call(
            "causal tiles run", where, "nothing here is invalid", causal_tiled_attention, Q, K, V, tile_size=tile,
        ), ("output", "tiles_computed"))
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
    return {"max_error": worst, "tiles_2048_128": needed(2048, 128)}
# builder:end sha256=1ca959502128d4336a9e37657cb24aabe13ba9de2eaa8717cbda40807f6841ad
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
# builder:begin inline check_rolling_buffer_contract
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
    return {"max_error": worst, "largest_buffer": "PASS"}
# builder:end sha256=c71d7c6a1eda7fe91a0c04272772b4151a5445f8b466daac797d1158279010fb
# builder:begin inline check_linear_attention_contract
def check_linear_attention_contract(linear_attention_recurrent):
    """Judge ``linear_attention_recurrent(Q, K, V) -> (outputs, S, z)`` with the feature map elu(x) + 1.

    Outputs must equal the quadratic (n x n) causal form; S (d_k, d_v) and z (d_k,) are the final
    running sums. Returns a summary; raises ContractViolation on the first failure.
    """
    import numpy as np

    def phi(x):
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))

    def quadratic(Q, K, V):
        weights = np.tril(phi(Q) @ phi(K).T)
        return (weights / weights.sum(axis=1, keepdims=True)) @ V

    def run(case, Q, K, V):
        """(outputs, S, z) of the judged function, each of the shape it must have."""
        prop = "valid inputs give (outputs, S, z)"
        out, S, z = contract_parts(prop, case, contract_call(
            prop, case, "return the outputs and both final sums", linear_attention_recurrent, Q, K, V,
        ), ("outputs", "S", "z"))
        (n, dk), dv = Q.shape, V.shape[1]
        contract_assert(
            np.shape(out) == (n, dv), "one output row per token: outputs [n, d_v]", case, f"shape {(n, dv)}", f"shape {np.shape(out)}",
            "write outputs[i] for every token i",
        )
        contract_assert(
            np.shape(S) == (dk, dv) and np.shape(z) == (dk,), "the state is (d_k, d_v) and (d_k,), whatever the length", case,
            f"S {(dk, dv)}, z {(dk,)}", f"S {np.shape(S)}, z {np.shape(z)}", "keep sums over tokens, not a list of tokens",
        )
        return np.asarray(out, dtype=float), S, z

    Qw = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    Kw = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    Vw = np.array([[2.0], [4.0], [6.0]])
    case = "keys (1,0), (0,1), (1,1); values 2, 4, 6; third query (1,0)"
    out, S, z = run(case, Qw, Kw, Vw)
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
    for n, dk, dv in ((9, 3, 2), (1, 4, 4), (16, 2, 5)):
        Q, K, V = gen.standard_normal((n, dk)), gen.standard_normal((n, dk)), gen.standard_normal((n, dv))
        case = f"random Q, K [{n}, {dk}], V [{n}, {dv}]"
        out, S, z = run(case, Q, K, V)
        worst = max(worst, contract_close(
            "the running sum equals the quadratic causal form", case, out, quadratic(Q, K, V),
            "update S and z with token i BEFORE reading them for query i (token i sees itself), and never with later tokens",
        ))
    changed = V.copy()
    changed[-1] += 10.0
    prop, case = "a later token does not change earlier outputs (causal)", "random Q, K [16, 2], V [16, 5]; the last value changed"
    hint = "build the sums as you go; the totals over all tokens let every query see the future"
    contract_close(prop, case, run(case, Q, K, changed)[0][:-1], out[:-1], hint)
    return {"max_error": worst, "worked_example": "PASS", "causal": "PASS"}
# builder:end sha256=3e8efe93b6e92720d2d8efb4a861475c73fbf1498944f721b08d19c223cf0584
# builder:begin inline check_parallel_scan_contract
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
# builder:end sha256=ff03ed6926554e05f0dec16c860f61d032383477e9a8520b499307826a3124fb
# builder:begin inline check_latent_absorption_contract
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
    try:
        mla_absorbed_attention(q_nope, q_rope[:, :, :1], latent, k_rope, W_uk, W_uv, W_o, mask)
    except (TypeError, ValueError):
        pass
    else:
        raise ContractViolation(
            "mismatched RoPE widths are rejected", case + ", q_rope width 1 against k_rope width 2", "ValueError",
            "returned normally", "keep the shape checks at the top of the function",
        )
    return {"max_error": error, "rope_branch": "PASS"}
# builder:end sha256=ce5bc42494a6f8ad7b7d5769960567ecbd3ea51952f88803a044fb5ffa4860f1
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
        "IyBFeGVyY2lzZSAyOiBXcml0ZSBzb2Z0bWF4IGF0dGVudGlvbiB3aXRoIGEgc2luay4gU2NhbGUgUSBLXlQgYnkgMS9zcXJ0",
        "KGRfaykgYW5kIGFkZCB0aGUgbWFzay4KIyBUaGUgc2luayAoYWxyZWFkeSBicm9hZGNhc3QgdG8gWy4uLiwgVF9xLCAxXSkg",
        "am9pbnMgZWFjaCByb3cncyBzb2Z0bWF4IGFzIGFuIGV4dHJhIGxvZ2l0IHdob3NlCiMgdmFsdWUgdmVjdG9yIGlzIHplcm8u",
        "IFN1YnRyYWN0IHRoZSByb3cgbWF4IChvdmVyIHRva2VucyBBTkQgc2luaykgYmVmb3JlIGV4cC4gQSByb3cgd2l0aCBubwoj",
        "IGFsbG93ZWQga2V5IGFuZCBubyBzaW5rIHJhaXNlcyBWYWx1ZUVycm9yIHdoZW4gZW1wdHlfcm93ID09ICJlcnJvciIgYW5k",
        "IGlzIGFsbCB6ZXJvcyBmb3IgInplcm8iLgojIFJlamVjdCBhIGZpbml0ZSBzY29yZSB0aGF0IG92ZXJmbG93czogcmFpc2Ug",
        "RmxvYXRpbmdQb2ludEVycm9yIG1lbnRpb25pbmcgIm1hc2sgYmlhcyIgd2hlbgojIGFkZGluZyBhIGZpbml0ZSBtYXNrIGVu",
        "dHJ5IG1ha2VzIGEgZmluaXRlIHNjb3JlIGluZmluaXRlLgpkZWYgc2RwYShRLCBLLCBWLCBtYXNrPU5vbmUsICosIHNpbms9",
        "Tm9uZSwgZW1wdHlfcm93PSJlcnJvciIsIHJldHVybl93ZWlnaHRzPUZhbHNlKToKICAgICIiIlNvZnRtYXggYXR0ZW50aW9u",
        "IGluIE51bVB5IHdpdGggYW4gYWRkaXRpdmUgbWFzaywgYW4gb3B0aW9uYWwgc2luayBsb2dpdCBhbmQgYW4gZW1wdHktcm93",
        "IHBvbGljeS4KCiAgICBRIFsuLi4sIFRfcSwgZF9rXSwgSyBbLi4uLCBUX2ssIGRfa10sIFYgWy4uLiwgVF9rLCBkX3ZdOyB0",
        "aGUgbWFzayBicm9hZGNhc3RzIHRvIFsuLi4sIFRfcSwgVF9rXQogICAgKDAgb3IgYSBmaW5pdGUgYmlhcyA9IGFsbG93ZWQs",
        "IC1pbmYgPSBibG9ja2VkKTsgdGhlIHNpbmsgYnJvYWRjYXN0cyB0byBbLi4uLCBUX3EsIDFdLgogICAgUmV0dXJucyB0aGUg",
        "b3V0cHV0IFsuLi4sIFRfcSwgZF92XSwgYW5kIHRoZSB0b2tlbiB3ZWlnaHRzIHRvbyB3aGVuIHJldHVybl93ZWlnaHRzIGlz",
        "IFRydWUuCiAgICAiIiIKICAgIFEsIEssIFYgPSByZXF1aXJlX2FycmF5KCJRIiwgUSwgbWluX25kaW09MiksIHJlcXVpcmVf",
        "YXJyYXkoIksiLCBLLCBtaW5fbmRpbT0yKSwgcmVxdWlyZV9hcnJheSgiViIsIFYsIG1pbl9uZGltPTIpCiAgICByZXF1aXJl",
        "X2Nob2ljZSgiZW1wdHlfcm93IiwgZW1wdHlfcm93LCAoImVycm9yIiwgInplcm8iKSkKICAgIHJldHVybl93ZWlnaHRzID0g",
        "cmVxdWlyZV9ib29sKCJyZXR1cm5fd2VpZ2h0cyIsIHJldHVybl93ZWlnaHRzKQogICAgaWYgUS5zaGFwZVstMV0gIT0gSy5z",
        "aGFwZVstMV06CiAgICAgICAgcmFpc2UgVmFsdWVFcnJvcihmIlEgYW5kIEsgbXVzdCBzaGFyZSBkX2sgKGxhc3QgYXhpcyk7",
        "IGdvdCB7US5zaGFwZVstMV19IGFuZCB7Sy5zaGFwZVstMV19IikKICAgIGlmIEsuc2hhcGVbLTJdICE9IFYuc2hhcGVbLTJd",
        "OgogICAgICAgIHJhaXNlIFZhbHVlRXJyb3IoZiJLIGFuZCBWIG11c3QgaG9sZCB0aGUgc2FtZSBudW1iZXIgb2Yga2V5cyAo",
        "YXhpcyAtMik7IGdvdCB7Sy5zaGFwZVstMl19IGFuZCB7Vi5zaGFwZVstMl19IikKICAgIHRyeToKICAgICAgICBiYXRjaCA9",
        "IG5wLmJyb2FkY2FzdF9zaGFwZXMoUS5zaGFwZVs6LTJdLCBLLnNoYXBlWzotMl0pCiAgICAgICAgbnAuYnJvYWRjYXN0X3No",
        "YXBlcyhiYXRjaCwgVi5zaGFwZVs6LTJdKQogICAgZXhjZXB0IFZhbHVlRXJyb3I6CiAgICAgICAgcmFpc2UgVmFsdWVFcnJv",
        "cihmImJhdGNoIGF4ZXMgb2YgUSB7US5zaGFwZX0sIEsge0suc2hhcGV9IGFuZCBWIHtWLnNoYXBlfSBkbyBub3QgYnJvYWRj",
        "YXN0IikgZnJvbSBOb25lCiAgICBkdHlwZSA9IG5wLnJlc3VsdF90eXBlKFEuZHR5cGUsIEsuZHR5cGUsIFYuZHR5cGUsIG5w",
        "LmZsb2F0MzIpICAjIGZsb2F0MTYgaXMgY29tcHV0ZWQgaW4gZmxvYXQzMgogICAgUSwgSywgViA9ICh4LmFzdHlwZShkdHlw",
        "ZSwgY29weT1GYWxzZSkgZm9yIHggaW4gKFEsIEssIFYpKQogICAgc2hhcGUgPSBiYXRjaCArIChRLnNoYXBlWy0yXSwgSy5z",
        "aGFwZVstMl0pICAjICguLi4sIFRfcSwgVF9rKQogICAgcmVxdWlyZV9idWRnZXQoInRoZSBzY29yZSBtYXRyaXgiLCBzaGFw",
        "ZSwgaXRlbXNpemU9ZHR5cGUuaXRlbXNpemUpICAjIHJlZnVzZWQgYmVmb3JlIFEgQCBLXlQgaXMgZm9ybWVkCiAgICBpZiBt",
        "YXNrIGlzIG5vdCBOb25lOgogICAgICAgIG1hc2sgPSBfYXNfYWRkaXRpdmUobWFzaywgc2hhcGUsIGR0eXBlKQogICAgaWYg",
        "c2luayBpcyBub3QgTm9uZToKICAgICAgICBzaW5rID0gcmVxdWlyZV9hcnJheSgic2luayIsIHNpbmspLmFzdHlwZShkdHlw",
        "ZSwgY29weT1GYWxzZSkKICAgICAgICB0cnk6CiAgICAgICAgICAgIHNpbmsgPSBucC5icm9hZGNhc3RfdG8oc2luaywgc2hh",
        "cGVbOi0xXSArICgxLCkpICAjICguLi4sIFRfcSwgMSk6IG9uZSBsb2dpdCBwZXIgaGVhZCBhbmQgcXVlcnkKICAgICAgICBl",
        "eGNlcHQgVmFsdWVFcnJvcjoKICAgICAgICAgICAgcmFpc2UgVmFsdWVFcnJvcihmInNpbmsgb2Ygc2hhcGUge3Npbmsuc2hh",
        "cGV9IGRvZXMgbm90IGJyb2FkY2FzdCB0byB7c2hhcGVbOi0xXSArICgxLCl9OyB1c2Ugc2hhcGUgKEgsIDEsIDEpIHBlciBo",
        "ZWFkIikgZnJvbSBOb25lCiAgICB3aXRoIG5wLmVycnN0YXRlKG92ZXI9Imlnbm9yZSIsIGludmFsaWQ9Imlnbm9yZSIpOgog",
        "ICAgICAgIHNjb3JlcyA9IChRIEAgbnAuc3dhcGF4ZXMoSywgLTEsIC0yKSkgKiBkdHlwZS50eXBlKDEuMCAvIG1hdGguc3Fy",
        "dChRLnNoYXBlWy0xXSkpICAjICguLi4sIFRfcSwgVF9rKQogICAgICAgIGlmIG5vdCBucC5pc2Zpbml0ZShzY29yZXMpLmFs",
        "bCgpOgogICAgICAgICAgICByYWlzZSBGbG9hdGluZ1BvaW50RXJyb3IoIlEgQCBLXlQgb3ZlcmZsb3dlZDsgcmVzY2FsZSBR",
        "IGFuZCBLIChvciBjb21wdXRlIGluIGZsb2F0NjQpIikKICAgICAgICBpZiBtYXNrIGlzIG5vdCBOb25lOgogICAgICAgICAg",
        "ICBiaWFzZWQgPSBzY29yZXMgKyBtYXNrCiAgICAgICAgICAgIGlmIG5wLmFueShucC5pc2Zpbml0ZShtYXNrKSAmIH5ucC5p",
        "c2Zpbml0ZShiaWFzZWQpKToKICAgICAgICAgICAgICAgIHJhaXNlIEZsb2F0aW5nUG9pbnRFcnJvcigiYWRkaW5nIGEgZmlu",
        "aXRlIG1hc2sgYmlhcyBvdmVyZmxvd2VkIHRoZSBzY29yZTsgdXNlIGEgc21hbGxlciBiaWFzIChvciAtaW5mIHRvIGJsb2Nr",
        "KSIpCiAgICAgICAgICAgIHNjb3JlcyA9IGJpYXNlZAogICAgaGFzX2tleSA9IG5wLmlzZmluaXRlKHNjb3JlcykuYW55KGF4",
        "aXM9LTEsIGtlZXBkaW1zPVRydWUpICAjICguLi4sIFRfcSwgMSkKICAgIHRvcCA9IHNjb3Jlcy5tYXgoYXhpcz0tMSwga2Vl",
        "cGRpbXM9VHJ1ZSkgICMgLWluZiBvbiBhIHJvdyB3aXRoIG5vdGhpbmcgdG8gcmVhZAogICAgaWYgc2luayBpcyBub3QgTm9u",
        "ZToKICAgICAgICB0b3AgPSBucC5tYXhpbXVtKHRvcCwgc2luaykgICMgdGhlIHNpbmsgY29tcGV0ZXMgaW5zaWRlIHRoZSBz",
        "YW1lIHNvZnRtYXgKICAgIGVsaWYgZW1wdHlfcm93ID09ICJlcnJvciIgYW5kIG5vdCBoYXNfa2V5LmFsbCgpOgogICAgICAg",
        "IGZpcnN0ID0gbnAuYXJnd2hlcmUofmhhc19rZXlbLi4uLCAwXSlbMF0udG9saXN0KCkKICAgICAgICByYWlzZSBWYWx1ZUVy",
        "cm9yKAogICAgICAgICAgICBmIntpbnQoKH5oYXNfa2V5KS5zdW0oKSl9IHF1ZXJ5IHJvdyhzKSBoYXZlIG5vIGFsbG93ZWQg",
        "a2V5IChmaXJzdCBhdCBpbmRleCB7Zmlyc3R9KTsgIgogICAgICAgICAgICAiZml4IHRoZSBtYXNrLCBvciBwYXNzIGVtcHR5",
        "X3Jvdz0nemVybycgdG8gcmV0dXJuIHplcm9zIGZvciB0aGVtIgogICAgICAgICkKICAgIHRvcCA9IG5wLndoZXJlKG5wLmlz",
        "ZmluaXRlKHRvcCksIHRvcCwgMC4wKSAgIyBhbiBlbXB0eSByb3cga2VlcHMgYSBoYXJtbGVzcyBtYXg6IG5vIC1pbmYgLSAt",
        "aW5mCiAgICBleHBfc2NvcmVzID0gbnAuZXhwKHNjb3JlcyAtIHRvcCkgICMgYmxvY2tlZCBrZXlzOiBleHAoLWluZikgPSAw",
        "CiAgICBkZW5vbWluYXRvciA9IGV4cF9zY29yZXMuc3VtKGF4aXM9LTEsIGtlZXBkaW1zPVRydWUpCiAgICBpZiBzaW5rIGlz",
        "IG5vdCBOb25lOgogICAgICAgIGRlbm9taW5hdG9yID0gZGVub21pbmF0b3IgKyBucC5leHAoc2luayAtIHRvcCkgICMgdGhl",
        "IHNpbmsncyBtYXNzOyBpdHMgdmFsdWUgdmVjdG9yIGlzIHplcm8KICAgIHdlaWdodHMgPSBucC5kaXZpZGUoZXhwX3Njb3Jl",
        "cywgZGVub21pbmF0b3IsIG91dD1ucC56ZXJvc19saWtlKGV4cF9zY29yZXMpLCB3aGVyZT1kZW5vbWluYXRvciA+IDApCiAg",
        "ICBvdXRwdXQgPSB3ZWlnaHRzIEAgViAgIyAoLi4uLCBUX3EsIGRfdikKICAgIHJldHVybiAob3V0cHV0LCB3ZWlnaHRzKSBp",
        "ZiByZXR1cm5fd2VpZ2h0cyBlbHNlIG91dHB1dA==",
    ),
    "Exercise 3": (
        "IyBFeGVyY2lzZSAzOiBSZXBlYXQgdGhlIEtWIGhlYWRzIGZvciBncm91cGVkLXF1ZXJ5IGF0dGVudGlvbi4geCBob2xkcyB0",
        "aGUgS1YgaGVhZHMgb24gYXhpcyAtMzsKIyByZXR1cm4gYW4gYXJyYXkgd2l0aCBncm91cCB0aW1lcyBhcyBtYW55IGhlYWRz",
        "IG9uIHRoYXQgYXhpcywgd2hlcmUgcXVlcnkgaGVhZCBoIGdldHMgS1YgaGVhZAojIGggLy8gZ3JvdXA6IGNvbnNlY3V0aXZl",
        "IHF1ZXJ5IGhlYWRzIHNoYXJlIGEgS1YgaGVhZC4KZGVmIHJlcGVhdF9rdl9oZWFkcyh4LCBncm91cCk6CiAgICAiIiJLViBo",
        "ZWFkcyBvbiBheGlzIC0zLCBlYWNoIHJlcGVhdGVkIGBgZ3JvdXBgYCB0aW1lcyBpbiBwbGFjZTogcXVlcnkgaGVhZCBoIHJl",
        "YWRzIEtWIGhlYWQgaCAvLyBncm91cC4iIiIKICAgIHggPSByZXF1aXJlX2FycmF5KCJ4IiwgeCwgbWluX25kaW09MykKICAg",
        "IGdyb3VwID0gcmVxdWlyZV9pbnQoImdyb3VwIiwgZ3JvdXAsIG1pbmltdW09MSkKICAgIHJlcXVpcmVfYnVkZ2V0KGYie2dy",
        "b3VwfSBjb3BpZXMgb2YgZWFjaCBLViBoZWFkIiwgeC5zaGFwZSArIChncm91cCwpLCBpdGVtc2l6ZT14Lml0ZW1zaXplKQog",
        "ICAgcmV0dXJuIG5wLnJlcGVhdCh4LCBncm91cCwgYXhpcz0tMykgICMga3YwLCBrdjAsIC4uLiwga3YxLCBrdjEsIC4uLjog",
        "ZWFjaCBLViBoZWFkIHNlcnZlcyBhIGJsb2NrIG9mIHF1ZXJ5IGhlYWRz",
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
        "IC0gbV9uZXcpLCB0aGUgcnVubmluZyBzdW0gbCBhbmQgbnVtZXJhdG9yIG4gYXMgaW4KIyB0aGUgZm9ybXVsYSwgYW5kIGFw",
        "cGVuZCB7Im0iOiBtLCAiYWxwaGEiOiBhbHBoYSwgImwiOiBsLCAibiI6IG59IHRvIHRoZSB0cmFjZS4gUmV0dXJuIChuIC8g",
        "bCwgdHJhY2UpLgpkZWYgb25saW5lX3NvZnRtYXhfZG90KGxvZ2l0X3RpbGVzLCB2YWx1ZV90aWxlcyk6CiAgICAiIiJTb2Z0",
        "bWF4LXdlaWdodGVkIGF2ZXJhZ2Ugb2Ygc2NhbGFyIHZhbHVlcywgc3RyZWFtZWQgdGlsZSBieSB0aWxlOyByZXR1cm5zIChv",
        "dXRwdXQsIHBlci10aWxlIHRyYWNlKS4iIiIKICAgIGlmIGxlbihsb2dpdF90aWxlcykgIT0gbGVuKHZhbHVlX3RpbGVzKSBv",
        "ciBub3QgbGVuKGxvZ2l0X3RpbGVzKToKICAgICAgICByYWlzZSBWYWx1ZUVycm9yKGYibmVlZCB0aGUgc2FtZSwgbm9uLXpl",
        "cm8gbnVtYmVyIG9mIGxvZ2l0IGFuZCB2YWx1ZSB0aWxlczsgZ290IHtsZW4obG9naXRfdGlsZXMpfSBhbmQge2xlbih2YWx1",
        "ZV90aWxlcyl9IikKICAgIHRpbGVzID0gW10KICAgIGZvciB0LCAobG9naXRzLCB2YWx1ZXMpIGluIGVudW1lcmF0ZSh6aXAo",
        "bG9naXRfdGlsZXMsIHZhbHVlX3RpbGVzKSk6CiAgICAgICAgbG9naXRzLCB2YWx1ZXMgPSByZXF1aXJlX2FycmF5KGYibG9n",
        "aXRfdGlsZXNbe3R9XSIsIGxvZ2l0cywgbmRpbT0xKSwgcmVxdWlyZV9hcnJheShmInZhbHVlX3RpbGVzW3t0fV0iLCB2YWx1",
        "ZXMsIG5kaW09MSkKICAgICAgICBpZiBsb2dpdHMuc2hhcGUgIT0gdmFsdWVzLnNoYXBlOgogICAgICAgICAgICByYWlzZSBW",
        "YWx1ZUVycm9yKGYidGlsZSB7dH0gaGFzIHtsb2dpdHMuc2l6ZX0gbG9naXRzIGJ1dCB7dmFsdWVzLnNpemV9IHZhbHVlcyIp",
        "CiAgICAgICAgdGlsZXMuYXBwZW5kKChsb2dpdHMuYXN0eXBlKGZsb2F0KSwgdmFsdWVzLmFzdHlwZShmbG9hdCkpKQogICAg",
        "bSwgbCwgbiA9IC1tYXRoLmluZiwgMC4wLCAwLjAKICAgIHRyYWNlID0gW10KICAgIGZvciBsb2dpdHMsIHZhbHVlcyBpbiB0",
        "aWxlczoKICAgICAgICBtX25ldyA9IG1heChtLCBmbG9hdChsb2dpdHMubWF4KCkpKQogICAgICAgIGFscGhhID0gbWF0aC5l",
        "eHAobSAtIG1fbmV3KSAgIyAwIGJlZm9yZSB0aGUgZmlyc3QgdGlsZSwgc2luY2UgbSA9IC1pbmYKICAgICAgICB3ZWlnaHRz",
        "ID0gbnAuZXhwKGxvZ2l0cyAtIG1fbmV3KQogICAgICAgIGwgPSBhbHBoYSAqIGwgKyBmbG9hdCh3ZWlnaHRzLnN1bSgpKQog",
        "ICAgICAgIG4gPSBhbHBoYSAqIG4gKyBmbG9hdCh3ZWlnaHRzIEAgdmFsdWVzKQogICAgICAgIG0gPSBtX25ldwogICAgICAg",
        "IHRyYWNlLmFwcGVuZCh7Im0iOiBtLCAiYWxwaGEiOiBhbHBoYSwgImwiOiBsLCAibiI6IG59KQogICAgcmV0dXJuIG4gLyBs",
        "LCB0cmFjZQ==",
    ),
    "Exercise 6": (
        "IyBFeGVyY2lzZSA2OiBQbGFpbiB0aWxlcy4gRm9yIGVhY2ggYmxvY2sgb2YgdGlsZV9zaXplIHF1ZXJpZXMga2VlcCBwZXIt",
        "cm93IG0gKHN0YXJ0IC1pbmYpLAojIGwgKHN0YXJ0IDApIGFuZCBhbiBhY2N1bXVsYXRvciBPICh6ZXJvcywgZF92IHdpZGUp",
        "LiBGb3IgZWFjaCBibG9jayBvZiB0aWxlX3NpemUga2V5czogY29tcHV0ZSB0aGUKIyBzY29yZSB0aWxlIFFfYiBLX2NeVCAv",
        "IHNxcnQoZF9rKSwgdGhlbiB0aGUgb25saW5lIHVwZGF0ZSBvZiB0aGUgZm9ybXVsYSBhYm92ZS4gQWZ0ZXIgdGhlIGxhc3QK",
        "IyBrZXkgYmxvY2ssIHJldHVybiBPIC8gbCBmb3IgZXZlcnkgcXVlcnkgYmxvY2suIE5ldmVyIGJ1aWxkIGEgVF9xIHggVF9r",
        "IGFycmF5LgpkZWYgdGlsZWRfYXR0ZW50aW9uX3BsYWluKFEsIEssIFYsICosIHRpbGVfc2l6ZT0xMjgpOgogICAgIiIiVW5t",
        "YXNrZWQgc29mdG1heCBhdHRlbnRpb24sIHN0cmVhbWVkIG92ZXIgKHF1ZXJ5IGJsb2NrLCBrZXkgYmxvY2spIHRpbGVzOiBv",
        "dXRwdXQgW1RfcSwgZF92XS4iIiIKICAgIFEsIEssIFYgPSByZXF1aXJlX2FycmF5KCJRIiwgUSwgbmRpbT0yKSwgcmVxdWly",
        "ZV9hcnJheSgiSyIsIEssIG5kaW09MiksIHJlcXVpcmVfYXJyYXkoIlYiLCBWLCBuZGltPTIpCiAgICBpZiBRLnNoYXBlWzFd",
        "ICE9IEsuc2hhcGVbMV0gb3IgSy5zaGFwZVswXSAhPSBWLnNoYXBlWzBdOgogICAgICAgIHJhaXNlIFZhbHVlRXJyb3IoZiJu",
        "ZWVkIFEgW1RfcSwgZF9rXSwgSyBbVF9rLCBkX2tdLCBWIFtUX2ssIGRfdl07IGdvdCB7US5zaGFwZX0sIHtLLnNoYXBlfSwg",
        "e1Yuc2hhcGV9IikKICAgIHRpbGVfc2l6ZSA9IHJlcXVpcmVfaW50KCJ0aWxlX3NpemUiLCB0aWxlX3NpemUsIG1pbmltdW09",
        "MSkKICAgIF9yZWZ1c2Vfb3ZlcmZsb3coUSwgSywgVikKICAgIChuX3EsIGRfayksIChuX2ssIGRfdikgPSBRLnNoYXBlLCBW",
        "LnNoYXBlCiAgICBvdXQgPSBucC5lbXB0eSgobl9xLCBkX3YpKQogICAgZm9yIHEwIGluIHJhbmdlKDAsIG5fcSwgdGlsZV9z",
        "aXplKToKICAgICAgICBRX2IgPSBRW3EwOnEwICsgdGlsZV9zaXplXSAvIG1hdGguc3FydChkX2spICAjIChCX3EsIGRfayks",
        "IHNjYWxlZCBvbmNlIHBlciBibG9jawogICAgICAgIG0gPSBucC5mdWxsKGxlbihRX2IpLCAtbnAuaW5mKSAgIyBydW5uaW5n",
        "IG1heCBwZXIgcm93CiAgICAgICAgbCA9IG5wLnplcm9zKGxlbihRX2IpKSAgIyBydW5uaW5nIHN1bSBwZXIgcm93CiAgICAg",
        "ICAgYWNjID0gbnAuemVyb3MoKGxlbihRX2IpLCBkX3YpKSAgIyBydW5uaW5nIG51bWVyYXRvciBPCiAgICAgICAgZm9yIGsw",
        "IGluIHJhbmdlKDAsIG5faywgdGlsZV9zaXplKToKICAgICAgICAgICAgcyA9IFFfYiBAIEtbazA6azAgKyB0aWxlX3NpemVd",
        "LlQgICMgKEJfcSwgQl9rKTogdGhlIG9ubHkgc2NvcmUgdGlsZSBhbGl2ZQogICAgICAgICAgICBtX25ldyA9IG5wLm1heGlt",
        "dW0obSwgcy5tYXgoYXhpcz0xKSkKICAgICAgICAgICAgYWxwaGEgPSBucC5leHAobSAtIG1fbmV3KSAgIyAwIG9uIHRoZSBm",
        "aXJzdCB0aWxlLCB3aGVyZSBtID0gLWluZgogICAgICAgICAgICBwID0gbnAuZXhwKHMgLSBtX25ld1s6LCBOb25lXSkKICAg",
        "ICAgICAgICAgbCA9IGFscGhhICogbCArIHAuc3VtKGF4aXM9MSkKICAgICAgICAgICAgYWNjID0gYWxwaGFbOiwgTm9uZV0g",
        "KiBhY2MgKyBwIEAgVltrMDprMCArIHRpbGVfc2l6ZV0KICAgICAgICAgICAgbSA9IG1fbmV3CiAgICAgICAgb3V0W3EwOnEw",
        "ICsgdGlsZV9zaXplXSA9IGFjYyAvIGxbOiwgTm9uZV0gICMgRmxhc2hBdHRlbnRpb24tMjogb25lIGRpdmlzaW9uLCBhdCB0",
        "aGUgZW5kCiAgICByZXR1cm4gb3V0",
    ),
    "Exercise 7": (
        "IyBFeGVyY2lzZSA3OiBDYXVzYWwgc2tpcHBpbmcuIFNhbWUgYXMgRXhlcmNpc2UgNiwgYnV0IHF1ZXJ5IGkgcmVhZHMga2V5",
        "cyAwLi5pLiBGb3IgdGhlIHF1ZXJ5IGJsb2NrCiMgW3EwLCBxMSkgdmlzaXQgb25seSBrZXkgdGlsZXMgdGhhdCBzdGFydCBh",
        "dCBrMCA8PSBxMSAtIDEgKGxhdGVyIG9uZXMgYXJlIGVudGlyZWx5IGluIHRoZSBmdXR1cmUpOwojIGluc2lkZSBhIHRpbGUg",
        "dGhhdCBzdHJhZGRsZXMgdGhlIGRpYWdvbmFsLCBzZXQgdGhlIHNjb3JlcyBvZiBrZXlzIGFmdGVyIHRoZSBxdWVyeSB0byAt",
        "aW5mIGJlZm9yZQojIHRoZSBtYXguIFJldHVybiAob3V0cHV0LCB0aWxlc19jb21wdXRlZCksIHRoZSBudW1iZXIgb2Ygc2Nv",
        "cmUgdGlsZXMgeW91IGNvbXB1dGVkLgpkZWYgY2F1c2FsX3RpbGVkX2F0dGVudGlvbihRLCBLLCBWLCAqLCB0aWxlX3NpemU9",
        "MTI4KToKICAgICIiIkNhdXNhbCBzb2Z0bWF4IGF0dGVudGlvbiBvdmVyIHRpbGVzLCBza2lwcGluZyB0aWxlcyBhYm92ZSB0",
        "aGUgYmxvY2sgZGlhZ29uYWw6IChvdXRwdXQsIHRpbGVzX2NvbXB1dGVkKS4iIiIKICAgIFEsIEssIFYgPSByZXF1aXJlX2Fy",
        "cmF5KCJRIiwgUSwgbmRpbT0yKSwgcmVxdWlyZV9hcnJheSgiSyIsIEssIG5kaW09MiksIHJlcXVpcmVfYXJyYXkoIlYiLCBW",
        "LCBuZGltPTIpCiAgICBpZiBRLnNoYXBlWzFdICE9IEsuc2hhcGVbMV0gb3IgSy5zaGFwZVswXSAhPSBWLnNoYXBlWzBdOgog",
        "ICAgICAgIHJhaXNlIFZhbHVlRXJyb3IoZiJuZWVkIFEgW1RfcSwgZF9rXSwgSyBbVF9rLCBkX2tdLCBWIFtUX2ssIGRfdl07",
        "IGdvdCB7US5zaGFwZX0sIHtLLnNoYXBlfSwge1Yuc2hhcGV9IikKICAgIHRpbGVfc2l6ZSA9IHJlcXVpcmVfaW50KCJ0aWxl",
        "X3NpemUiLCB0aWxlX3NpemUsIG1pbmltdW09MSkKICAgIF9yZWZ1c2Vfb3ZlcmZsb3coUSwgSywgVikKICAgIChuX3EsIGRf",
        "ayksIChuX2ssIGRfdikgPSBRLnNoYXBlLCBWLnNoYXBlCiAgICBvdXQsIHRpbGVzID0gbnAuZW1wdHkoKG5fcSwgZF92KSks",
        "IDAKICAgIGZvciBxMCBpbiByYW5nZSgwLCBuX3EsIHRpbGVfc2l6ZSk6CiAgICAgICAgcTEgPSBtaW4ocTAgKyB0aWxlX3Np",
        "emUsIG5fcSkKICAgICAgICBRX2IgPSBRW3EwOnExXSAvIG1hdGguc3FydChkX2spCiAgICAgICAgbSwgbCwgYWNjID0gbnAu",
        "ZnVsbChxMSAtIHEwLCAtbnAuaW5mKSwgbnAuemVyb3MocTEgLSBxMCksIG5wLnplcm9zKChxMSAtIHEwLCBkX3YpKQogICAg",
        "ICAgIGZvciBrMCBpbiByYW5nZSgwLCBtaW4obl9rLCBxMSksIHRpbGVfc2l6ZSk6ICAjIGtleSB0aWxlcyBzdGFydGluZyBh",
        "ZnRlciBxMSAtIDEgYXJlIGFsbCBpbiB0aGUgZnV0dXJlCiAgICAgICAgICAgIGsxID0gbWluKGswICsgdGlsZV9zaXplLCBu",
        "X2spCiAgICAgICAgICAgIHMgPSBRX2IgQCBLW2swOmsxXS5UCiAgICAgICAgICAgIHRpbGVzICs9IDEKICAgICAgICAgICAg",
        "aWYgazEgLSAxID4gcTA6ICAjIHRoZSB0aWxlIHN0cmFkZGxlcyB0aGUgZGlhZ29uYWw6IG1hc2sgdGhlIGZ1dHVyZSBpbnNp",
        "ZGUgaXQKICAgICAgICAgICAgICAgIHNbbnAuYXJhbmdlKGswLCBrMSlbTm9uZSwgOl0gPiBucC5hcmFuZ2UocTAsIHExKVs6",
        "LCBOb25lXV0gPSAtbnAuaW5mCiAgICAgICAgICAgIG1fbmV3ID0gbnAubWF4aW11bShtLCBzLm1heChheGlzPTEpKSAgIyBm",
        "aW5pdGU6IGtleSBrMCA8PSBxMCBpcyBhbGxvd2VkIGZvciBldmVyeSByb3cKICAgICAgICAgICAgYWxwaGEgPSBucC5leHAo",
        "bSAtIG1fbmV3KQogICAgICAgICAgICBwID0gbnAuZXhwKHMgLSBtX25ld1s6LCBOb25lXSkKICAgICAgICAgICAgbCA9IGFs",
        "cGhhICogbCArIHAuc3VtKGF4aXM9MSkKICAgICAgICAgICAgYWNjID0gYWxwaGFbOiwgTm9uZV0gKiBhY2MgKyBwIEAgVltr",
        "MDprMV0KICAgICAgICAgICAgbSA9IG1fbmV3CiAgICAgICAgb3V0W3EwOnExXSA9IGFjYyAvIGxbOiwgTm9uZV0KICAgIHJl",
        "dHVybiBvdXQsIHRpbGVz",
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
        "IGNvbXB1dGVkIGluIGZsb2F0MzIuCiAgICAiIiIKICAgIFEsIEssIFYgPSByZXF1aXJlX2FycmF5KCJRIiwgUSwgbmRpbT0y",
        "KSwgcmVxdWlyZV9hcnJheSgiSyIsIEssIG5kaW09MiksIHJlcXVpcmVfYXJyYXkoIlYiLCBWLCBuZGltPTIpCiAgICBpZiBR",
        "LnNoYXBlWzFdICE9IEsuc2hhcGVbMV0gb3IgSy5zaGFwZVswXSAhPSBWLnNoYXBlWzBdOgogICAgICAgIHJhaXNlIFZhbHVl",
        "RXJyb3IoZiJuZWVkIFEgW1RfcSwgZF9rXSwgSyBbVF9rLCBkX2tdLCBWIFtUX2ssIGRfdl07IGdvdCB7US5zaGFwZX0sIHtL",
        "LnNoYXBlfSwge1Yuc2hhcGV9IikKICAgIHRpbGVfc2l6ZSA9IHJlcXVpcmVfaW50KCJ0aWxlX3NpemUiLCB0aWxlX3NpemUs",
        "IG1pbmltdW09MSkKICAgIHJlcXVpcmVfY2hvaWNlKCJlbXB0eV9yb3ciLCBlbXB0eV9yb3csICgiZXJyb3IiLCAiemVybyIp",
        "KQogICAgY2F1c2FsID0gcmVxdWlyZV9ib29sKCJjYXVzYWwiLCBjYXVzYWwpCiAgICBpZiB3aW5kb3cgaXMgbm90IE5vbmU6",
        "CiAgICAgICAgd2luZG93ID0gcmVxdWlyZV9pbnQoIndpbmRvdyIsIHdpbmRvdywgbWluaW11bT0xKQogICAgICAgIGlmIG5v",
        "dCBjYXVzYWw6CiAgICAgICAgICAgIHJhaXNlIFZhbHVlRXJyb3IoIndpbmRvdyBjb3VudHMga2V5cyBiYWNrIGZyb20gdGhl",
        "IHF1ZXJ5LCBzbyBpdCBuZWVkcyBjYXVzYWw9VHJ1ZSIpCiAgICBxdWVyeV9zdGFydCA9IHJlcXVpcmVfaW50KCJxdWVyeV9z",
        "dGFydCIsIHF1ZXJ5X3N0YXJ0LCBtaW5pbXVtPTApCiAgICBpZiBxdWVyeV9zdGFydCBhbmQgbm90IGNhdXNhbDoKICAgICAg",
        "ICByYWlzZSBWYWx1ZUVycm9yKCJxdWVyeV9zdGFydCBzaGlmdHMgdGhlIGNhdXNhbCBtYXNrOyBwYXNzIGNhdXNhbD1UcnVl",
        "IChvciBidWlsZCB0aGUgb2Zmc2V0IGludG8gYG1hc2tgKSIpCiAgICBpZiBzaW5rIGlzIG5vdCBOb25lOgogICAgICAgIHNp",
        "bmsgPSByZXF1aXJlX3JlYWwoInNpbmsiLCBzaW5rKQogICAgZHR5cGUgPSBucC5yZXN1bHRfdHlwZShRLmR0eXBlLCBLLmR0",
        "eXBlLCBWLmR0eXBlLCBucC5mbG9hdDMyKSAgIyBmbG9hdDE2IGluLCBmbG9hdDMyIGFyaXRobWV0aWMKICAgIFEsIEssIFYg",
        "PSAoeC5hc3R5cGUoZHR5cGUsIGNvcHk9RmFsc2UpIGZvciB4IGluIChRLCBLLCBWKSkKICAgIGlmIG1hc2sgaXMgbm90IE5v",
        "bmU6CiAgICAgICAgbWFzayA9IF9hc19hZGRpdGl2ZShtYXNrLCAoUS5zaGFwZVswXSwgSy5zaGFwZVswXSksIGR0eXBlKQog",
        "ICAgKG5fcSwgZF9rKSwgKG5faywgZF92KSA9IFEuc2hhcGUsIFYuc2hhcGUKICAgIHNjYWxlID0gMS4wIC8gbWF0aC5zcXJ0",
        "KGRfaykKICAgICMgRXZlcnkgZW50cnkgb2YgUSBAIEteVCBpcyBhdCBtb3N0IGRfayBtYXh8cXwgbWF4fGt8OiB3aGlsZSB0",
        "aGF0IGJvdW5kIGlzIGZpbml0ZSwgbm8gdGlsZSBuZWVkcyB0aGUgZmluaXRlbmVzcyBjaGVjay4KICAgIG1heWJlX292ZXJm",
        "bG93ID0gbm90IGRfayAqIGZsb2F0KG5wLmFicyhRKS5tYXgoKSkgKiBmbG9hdChucC5hYnMoSykubWF4KCkpIDwgZmxvYXQo",
        "bnAuZmluZm8oZHR5cGUpLm1heCkKICAgIG91dCA9IG5wLmVtcHR5KChuX3EsIGRfdiksIGR0eXBlPWR0eXBlKQogICAgd2l0",
        "aCBucC5lcnJzdGF0ZShvdmVyPSJpZ25vcmUiLCBpbnZhbGlkPSJpZ25vcmUiKToKICAgICAgICBmb3IgcTAgaW4gcmFuZ2Uo",
        "MCwgbl9xLCB0aWxlX3NpemUpOgogICAgICAgICAgICBxMSA9IG1pbihxMCArIHRpbGVfc2l6ZSwgbl9xKQogICAgICAgICAg",
        "ICBmaXJzdCwgbGFzdCA9IHF1ZXJ5X3N0YXJ0ICsgcTAsIHF1ZXJ5X3N0YXJ0ICsgcTEgLSAxICAjIGFic29sdXRlIHBvc2l0",
        "aW9ucyBvZiB0aGUgYmxvY2sncyBxdWVyaWVzCiAgICAgICAgICAgIGtfbG8sIGtfaGkgPSAwLCBuX2sKICAgICAgICAgICAg",
        "aWYgY2F1c2FsOgogICAgICAgICAgICAgICAga19oaSA9IG1pbihuX2ssIGxhc3QgKyAxKSAgIyBsYXRlciBrZXlzIGFyZSBp",
        "biBldmVyeSByb3cncyBmdXR1cmUKICAgICAgICAgICAgICAgIGlmIHdpbmRvdyBpcyBub3QgTm9uZToKICAgICAgICAgICAg",
        "ICAgICAgICBrX2xvID0gbWF4KDAsIGZpcnN0IC0gd2luZG93ICsgMSkgICMgZWFybGllciBrZXlzIGFyZSBiZWhpbmQgZXZl",
        "cnkgcm93J3Mgd2luZG93CiAgICAgICAgICAgIG0gPSBucC5mdWxsKHExIC0gcTAsIC1ucC5pbmYgaWYgc2luayBpcyBOb25l",
        "IGVsc2Ugc2luaywgZHR5cGU9ZHR5cGUpICAjIHJ1bm5pbmcgbWF4IHBlciByb3cKICAgICAgICAgICAgbCA9IG5wLmZ1bGwo",
        "cTEgLSBxMCwgMC4wIGlmIHNpbmsgaXMgTm9uZSBlbHNlIDEuMCwgZHR5cGU9ZHR5cGUpICAjIHJ1bm5pbmcgc3VtOyB0aGUg",
        "c2luayBhZGRzIGVeKHNpbmsgLSBtKSA9IDEKICAgICAgICAgICAgYWNjID0gbnAuemVyb3MoKHExIC0gcTAsIGRfdiksIGR0",
        "eXBlPWR0eXBlKSAgIyBydW5uaW5nIG51bWVyYXRvciBBCiAgICAgICAgICAgIGZvciBrMCBpbiByYW5nZShrX2xvIC0ga19s",
        "byAlIHRpbGVfc2l6ZSwga19oaSwgdGlsZV9zaXplKToKICAgICAgICAgICAgICAgIGsxID0gbWluKGswICsgdGlsZV9zaXpl",
        "LCBuX2spCiAgICAgICAgICAgICAgICBzID0gUVtxMDpxMV0gQCBLW2swOmsxXS5UICAjIChCX3EsIEJfayk6IHRoZSBvbmx5",
        "IHNjb3JlIHRpbGUgYWxpdmUKICAgICAgICAgICAgICAgIHMgKj0gc2NhbGUKICAgICAgICAgICAgICAgIGlmIG1heWJlX292",
        "ZXJmbG93IGFuZCBub3QgbnAuaXNmaW5pdGUocykuYWxsKCk6CiAgICAgICAgICAgICAgICAgICAgcmFpc2UgRmxvYXRpbmdQ",
        "b2ludEVycm9yKCJRIEAgS15UIG92ZXJmbG93ZWQ7IHJlc2NhbGUgUSBhbmQgSyAob3IgY29tcHV0ZSBpbiBmbG9hdDY0KSIp",
        "CiAgICAgICAgICAgICAgICBpZiBtYXNrIGlzIG5vdCBOb25lOgogICAgICAgICAgICAgICAgICAgIGJpYXMgPSBtYXNrW3Ew",
        "OnExLCBrMDprMV0KICAgICAgICAgICAgICAgICAgICBzICs9IGJpYXMKICAgICAgICAgICAgICAgICAgICBpZiBucC5hbnko",
        "bnAuaXNmaW5pdGUoYmlhcykgJiB+bnAuaXNmaW5pdGUocykpOgogICAgICAgICAgICAgICAgICAgICAgICByYWlzZSBGbG9h",
        "dGluZ1BvaW50RXJyb3IoImFkZGluZyBhIGZpbml0ZSBtYXNrIGJpYXMgb3ZlcmZsb3dlZCB0aGUgc2NvcmU7IHVzZSBhIHNt",
        "YWxsZXIgYmlhcyAob3IgLWluZiB0byBibG9jaykiKQogICAgICAgICAgICAgICAgaWYgY2F1c2FsIGFuZCBub3QgKGsxIC0g",
        "MSA8PSBmaXJzdCBhbmQgKHdpbmRvdyBpcyBOb25lIG9yIGxhc3QgLSBrMCA8IHdpbmRvdykpOiAgIyB0aGUgYmxvY2sgc3Ry",
        "YWRkbGVzIGEgYm91bmRhcnkKICAgICAgICAgICAgICAgICAgICBxdWVyeV9wb3MsIGtleV9wb3MgPSBucC5hcmFuZ2UoZmly",
        "c3QsIGxhc3QgKyAxKVs6LCBOb25lXSwgbnAuYXJhbmdlKGswLCBrMSlbTm9uZSwgOl0KICAgICAgICAgICAgICAgICAgICBi",
        "bG9ja2VkID0ga2V5X3BvcyA+IHF1ZXJ5X3BvcyAgIyB0aGUgZnV0dXJlCiAgICAgICAgICAgICAgICAgICAgaWYgd2luZG93",
        "IGlzIG5vdCBOb25lOgogICAgICAgICAgICAgICAgICAgICAgICBibG9ja2VkIHw9IGtleV9wb3MgPD0gcXVlcnlfcG9zIC0g",
        "d2luZG93ICAjIHF1ZXJ5X3BvcyAtIGtleV9wb3MgPj0gd2luZG93OiBiZWhpbmQgdGhlIHdpbmRvdwogICAgICAgICAgICAg",
        "ICAgICAgIHNbYmxvY2tlZF0gPSAtbnAuaW5mCiAgICAgICAgICAgICAgICBtX25ldyA9IG5wLm1heGltdW0obSwgcy5tYXgo",
        "YXhpcz0xKSkKICAgICAgICAgICAgICAgIHNhZmUgPSBucC53aGVyZShtX25ldyA9PSAtbnAuaW5mLCAwLjAsIG1fbmV3KSAg",
        "IyByb3dzIHdpdGggbm90aGluZyBhbGxvd2VkIHlldDogbm8gLWluZiAtIC1pbmYKICAgICAgICAgICAgICAgIGFscGhhID0g",
        "bnAuZXhwKG0gLSBzYWZlKSAgIyByZXNjYWxlcyB3aGF0IHdhcyBhY2N1bXVsYXRlZCB1bmRlciB0aGUgb2xkIG1heAogICAg",
        "ICAgICAgICAgICAgcyAtPSBzYWZlWzosIE5vbmVdCiAgICAgICAgICAgICAgICBucC5leHAocywgb3V0PXMpICAjIFAsIGlu",
        "IHBsYWNlOiBibG9ja2VkIGVudHJpZXMgYmVjb21lIGV4YWN0bHkgMAogICAgICAgICAgICAgICAgbCA9IGFscGhhICogbCAr",
        "IHMuc3VtKGF4aXM9MSkKICAgICAgICAgICAgICAgIGFjYyAqPSBhbHBoYVs6LCBOb25lXQogICAgICAgICAgICAgICAgYWNj",
        "ICs9IHMgQCBWW2swOmsxXQogICAgICAgICAgICAgICAgbSA9IG1fbmV3CiAgICAgICAgICAgIGZpbGxlZCA9IGwgPiAwCiAg",
        "ICAgICAgICAgIGlmIGVtcHR5X3JvdyA9PSAiZXJyb3IiIGFuZCBub3QgZmlsbGVkLmFsbCgpOgogICAgICAgICAgICAgICAg",
        "cmFpc2UgVmFsdWVFcnJvcigKICAgICAgICAgICAgICAgICAgICBmInF1ZXJ5IHtxMCArIGludChucC5hcmdtaW4oZmlsbGVk",
        "KSl9IGhhcyBubyBhbGxvd2VkIGtleTsgZml4IHRoZSBtYXNrIG9yIHBhc3MgZW1wdHlfcm93PSd6ZXJvJyIKICAgICAgICAg",
        "ICAgICAgICkKICAgICAgICAgICAgbnAuZGl2aWRlKGFjYywgbFs6LCBOb25lXSwgb3V0PWFjYywgd2hlcmU9ZmlsbGVkWzos",
        "IE5vbmVdKSAgIyBhbiBlbXB0eSByb3cga2VlcHMgaXRzIGFjY3VtdWxhdG9yIG9mIHplcm9zCiAgICAgICAgICAgIG91dFtx",
        "MDpxMV0gPSBhY2MKICAgIHJldHVybiBvdXQ=",
    ),
    "Exercise 9": (
        "IyBFeGVyY2lzZSA5OiBEZWNvZGUgdG9rZW4gYnkgdG9rZW4gd2l0aCBhIHJvbGxpbmcgYnVmZmVyIG9mIGB3aW5kb3dgIHNs",
        "b3RzLiBUb2tlbiB0IGZpcnN0CiMgb3ZlcndyaXRlcyBzbG90IHQgJSB3aW5kb3cgd2l0aCBpdHMga2V5IGFuZCB2YWx1ZSAo",
        "dGhlIHNsb3Qgb2YgdG9rZW4gdCAtIHdpbmRvdywgd2hpY2gganVzdCBsZWZ0CiMgdGhlIHdpbmRvdyksIHRoZW4gYXR0ZW5k",
        "cyBvdmVyIHRoZSBmaWxsZWQgc2xvdHMgd2l0aCBzb2Z0bWF4KGsgLiBxIC8gc3FydChkX2spKS4gUmV0dXJuIHRoZQojIChU",
        "LCBkX3YpIG91dHB1dHMgYW5kIHRoZSBsYXJnZXN0IG51bWJlciBvZiBrZXlzIHRoZSBidWZmZXIgZXZlciBoZWxkLiBBIHdp",
        "bmRvdyBsb25nZXIgdGhhbiB0aGUKIyBUIHRva2VucyBpcyB2YWxpZCBhbmQgbmV2ZXIgZmlsbHM6IGFsbG9jYXRlIGF0IG1v",
        "c3QgVCBzbG90cy4KZGVmIHJvbGxpbmdfd2luZG93X2RlY29kZShRLCBLLCBWLCB3aW5kb3cpOgogICAgIiIiR2VuZXJhdGUg",
        "dG9rZW4gYnkgdG9rZW4gd2l0aCBhIEtWIGJ1ZmZlciBvZiBgd2luZG93YCBzbG90czsgcmV0dXJucyAob3V0cHV0cyBbVCwg",
        "ZF92XSwgbGFyZ2VzdCBidWZmZXIpLiIiIgogICAgUSwgSywgViA9IHJlcXVpcmVfYXJyYXkoIlEiLCBRLCBuZGltPTIpLCBy",
        "ZXF1aXJlX2FycmF5KCJLIiwgSywgbmRpbT0yKSwgcmVxdWlyZV9hcnJheSgiViIsIFYsIG5kaW09MikKICAgIGlmIG5vdCAo",
        "US5zaGFwZVswXSA9PSBLLnNoYXBlWzBdID09IFYuc2hhcGVbMF0gYW5kIFEuc2hhcGVbMV0gPT0gSy5zaGFwZVsxXSk6CiAg",
        "ICAgICAgcmFpc2UgVmFsdWVFcnJvcihmIm5lZWQgUSBbVCwgZF9rXSwgSyBbVCwgZF9rXSwgViBbVCwgZF92XSBmb3IgdGhl",
        "IHNhbWUgVCB0b2tlbnM7IGdvdCB7US5zaGFwZX0sIHtLLnNoYXBlfSwge1Yuc2hhcGV9IikKICAgIHdpbmRvdyA9IHJlcXVp",
        "cmVfaW50KCJ3aW5kb3ciLCB3aW5kb3csIG1pbmltdW09MSkKICAgIChuLCBkX2spLCBkX3YgPSBRLnNoYXBlLCBWLnNoYXBl",
        "WzFdCiAgICBzbG90cyA9IG1pbih3aW5kb3csIG4pICAjIGEgd2luZG93IGxvbmdlciB0aGFuIHRoZSBzdHJlYW0gbmV2ZXIg",
        "ZmlsbHM6IG9ubHkgdGhlIGRhdGEgaXMgYWxsb2NhdGVkCiAgICBrZXlzLCB2YWx1ZXMgPSBucC56ZXJvcygoc2xvdHMsIGRf",
        "aykpLCBucC56ZXJvcygoc2xvdHMsIGRfdikpICAjIGFsbCB0aGUgbWVtb3J5IHRoZXJlIGlzCiAgICBvdXRwdXRzLCBsYXJn",
        "ZXN0ID0gbnAuZW1wdHkoKG4sIGRfdikpLCAwCiAgICBmb3IgdCBpbiByYW5nZShuKToKICAgICAgICBzbG90ID0gdCAlIHdp",
        "bmRvdyAgIyB0aGUgb2xkZXN0IHRva2VuLCB0IC0gd2luZG93LCBsZWF2ZXMgZXhhY3RseSBub3cKICAgICAgICBrZXlzW3Ns",
        "b3RdLCB2YWx1ZXNbc2xvdF0gPSBLW3RdLCBWW3RdCiAgICAgICAgaGVsZCA9IG1pbih0ICsgMSwgd2luZG93KSAgIyBzbG90",
        "cyBmaWxsZWQgc28gZmFyCiAgICAgICAgbGFyZ2VzdCA9IG1heChsYXJnZXN0LCBoZWxkKQogICAgICAgIHNjb3JlcyA9IGtl",
        "eXNbOmhlbGRdIEAgUVt0XSAvIG1hdGguc3FydChkX2spICAjIChoZWxkLCk6IHNsb3Qgb3JkZXIgZG9lcyBub3QgbWF0dGVy",
        "IHRvIGEgc29mdG1heAogICAgICAgIHdlaWdodHMgPSBucC5leHAoc2NvcmVzIC0gc2NvcmVzLm1heCgpKQogICAgICAgIG91",
        "dHB1dHNbdF0gPSB3ZWlnaHRzIEAgdmFsdWVzWzpoZWxkXSAvIHdlaWdodHMuc3VtKCkKICAgIHJldHVybiBvdXRwdXRzLCBs",
        "YXJnZXN0",
    ),
    "Exercise 10": (
        "IyBFeGVyY2lzZSAxMDogV3JpdGUgbGluZWFyIGF0dGVudGlvbiBhcyBhIHJlY3VycmVuY2UuIEtlZXAgUyAoZF9rLCBkX3Yp",
        "IGFuZCB6IChkX2ssKSwgYm90aCB6ZXJvIGF0CiMgdGhlIHN0YXJ0LiBGb3IgZWFjaCB0b2tlbiBpOiBhZGQgcGhpKGtfaSkg",
        "dl9pXlQgdG8gUyBhbmQgcGhpKGtfaSkgdG8geiwgdGhlbiBvdXRwdXQKIyBwaGkocV9pKV5UIFMgLyBwaGkocV9pKV5UIHou",
        "IFVzZSBmZWF0dXJlX21hcCBmb3IgcGhpLiBSZXR1cm4gKG91dHB1dHMsIFMsIHopLgpkZWYgbGluZWFyX2F0dGVudGlvbl9y",
        "ZWN1cnJlbnQoUSwgSywgVik6CiAgICAiIiJDYXVzYWwgbGluZWFyIGF0dGVudGlvbiBmcm9tIHR3byBydW5uaW5nIHN1bXM7",
        "IHJldHVybnMgKG91dHB1dHMgW24sIGRfdl0sIGZpbmFsIFMgW2RfaywgZF92XSwgZmluYWwgeiBbZF9rXSkuIiIiCiAgICBR",
        "LCBLLCBWID0gcmVxdWlyZV9hcnJheSgiUSIsIFEsIG5kaW09MiksIHJlcXVpcmVfYXJyYXkoIksiLCBLLCBuZGltPTIpLCBy",
        "ZXF1aXJlX2FycmF5KCJWIiwgViwgbmRpbT0yKQogICAgaWYgbm90IChRLnNoYXBlWzBdID09IEsuc2hhcGVbMF0gPT0gVi5z",
        "aGFwZVswXSBhbmQgUS5zaGFwZVsxXSA9PSBLLnNoYXBlWzFdKToKICAgICAgICByYWlzZSBWYWx1ZUVycm9yKGYibmVlZCBR",
        "IFtuLCBkX2tdLCBLIFtuLCBkX2tdLCBWIFtuLCBkX3ZdIGZvciB0aGUgc2FtZSBuOyBnb3Qge1Euc2hhcGV9LCB7Sy5zaGFw",
        "ZX0sIHtWLnNoYXBlfSIpCiAgICBTLCB6ID0gbnAuemVyb3MoKEsuc2hhcGVbMV0sIFYuc2hhcGVbMV0pKSwgbnAuemVyb3Mo",
        "Sy5zaGFwZVsxXSkKICAgIG91dHB1dHMgPSBucC5lbXB0eSgoUS5zaGFwZVswXSwgVi5zaGFwZVsxXSkpCiAgICBmb3IgaSwg",
        "KHEsIGssIHYpIGluIGVudW1lcmF0ZSh6aXAoZmVhdHVyZV9tYXAoUSksIGZlYXR1cmVfbWFwKEspLCBWKSk6CiAgICAgICAg",
        "UyArPSBucC5vdXRlcihrLCB2KSAgIyBwb3VyIHRoaXMgdG9rZW4ncyB2YWx1ZSBpbiwgd2VpZ2h0ZWQgYnkgaXRzIGtleSBm",
        "ZWF0dXJlcwogICAgICAgIHogKz0gayAgIyBhbmQgcmVtZW1iZXIgaG93IG11Y2ggd2VpZ2h0IHdlbnQgaW4KICAgICAgICBv",
        "dXRwdXRzW2ldID0gcSBAIFMgLyAocSBAIHopCiAgICByZXR1cm4gb3V0cHV0cywgUywgeg==",
    ),
    "Exercise 11": (
        "IyBFeGVyY2lzZSAxMTogQ29tcHV0ZSBldmVyeSBzdGF0ZSBvZiBoX3QgPSBhX3QgaF8odC0xKSArIGJfdCAoaF8wID0gMCkg",
        "d2l0aCBhIHBhcmFsbGVsIHNjYW4uCiMgSW4gZWFjaCByb3VuZCwgZXZlcnkgcG9zaXRpb24gbWVyZ2VzIHdpdGggdGhlIHBv",
        "c2l0aW9uIGBzaGlmdGAgcGxhY2VzIGVhcmxpZXIgKGJlZm9yZSB0aGUgc3RhcnQsCiMgdXNlIHRoZSBkby1ub3RoaW5nIHN0",
        "ZXAgKDEsIDApKTogKGFfcHJldiwgYl9wcmV2KSB0aGVuIChhLCBiKSBnaXZlcyAoYV9wcmV2ICogYSwgYSAqIGJfcHJldiAr",
        "IGIpLgojIERvdWJsZSBgc2hpZnRgIGVhY2ggcm91bmQgdW50aWwgaXQgcmVhY2hlcyBULiBSZXR1cm4gKHN0YXRlcywgcm91",
        "bmRzKS4gRG8gbm90IG1vZGlmeSBhIG9yIGIuCmRlZiBwYXJhbGxlbF9zY2FuKGEsIGIpOgogICAgIiIiRXZlcnkgc3RhdGUg",
        "b2YgaF90ID0gYV90IGhfKHQtMSkgKyBiX3QgKGhfMCA9IDApIGluIGNlaWwobG9nMiBUKSByb3VuZHMgb2YgbWVyZ2VzOyBy",
        "ZXR1cm5zIChzdGF0ZXMsIHJvdW5kcykuIiIiCiAgICBhLCBiID0gcmVxdWlyZV9hcnJheSgiYSIsIGEsIG5kaW09MSksIHJl",
        "cXVpcmVfYXJyYXkoImIiLCBiLCBuZGltPTEpCiAgICBpZiBhLnNoYXBlICE9IGIuc2hhcGU6CiAgICAgICAgcmFpc2UgVmFs",
        "dWVFcnJvcihmImEgYW5kIGIgbmVlZCBvbmUgZW50cnkgcGVyIHN0ZXA7IGdvdCB7YS5zaXplfSBhbmQge2Iuc2l6ZX0iKQog",
        "ICAgIyB8aF90fCA8PSBzdW18YnwgKiBwcm9kIG1heCgxLCB8YXwpLCBhbmQgc28gaXMgZXZlcnkgcHJvZHVjdCBhIG1lcmdl",
        "IGZvcm1zOiByZWZ1c2UsIGJlZm9yZSBzY2FubmluZywgd2hhdCBjb3VsZCBvdmVyZmxvdy4KICAgIHdpdGggbnAuZXJyc3Rh",
        "dGUoZGl2aWRlPSJpZ25vcmUiKToKICAgICAgICBsb2dfYm91bmQgPSBucC5sb2cobnAuYWJzKGIpLnN1bSgpKSArIG5wLmxv",
        "ZyhucC5tYXhpbXVtKG5wLmFicyhhKSwgMS4wKSkuc3VtKCkKICAgIGlmIGxvZ19ib3VuZCA+IG5wLmxvZyhucC5maW5mbyhm",
        "bG9hdCkubWF4KToKICAgICAgICByYWlzZSBGbG9hdGluZ1BvaW50RXJyb3IoZiJ0aGUgc2NhbidzIHN0YXRlcyBvciBwcm9k",
        "dWN0cyBjb3VsZCBncm93IHBhc3QgZmxvYXQ2NCdzIGxhcmdlc3QgbnVtYmVyIChhYm91dCAxLjhlMzA4KTogIgogICAgICAg",
        "ICAgICAgICAgICAgICAgICAgICAgICAgICBmInN1bXxifCAqIHByb2QgbWF4KDEsIHxhfCkgaXMgYWJvdXQgZV57bG9nX2Jv",
        "dW5kOi4wZn07IHNjYWxlIGEgb3IgYiBkb3duIikKICAgIGEsIGIgPSBhLmFzdHlwZShmbG9hdCksIGIuYXN0eXBlKGZsb2F0",
        "KSAgIyBjb3BpZXM6IHRoZSBjYWxsZXIncyBhcnJheXMgc3RheSB1bnRvdWNoZWQKICAgIHNoaWZ0LCByb3VuZHMgPSAxLCAw",
        "CiAgICB3aGlsZSBzaGlmdCA8IGxlbihhKToKICAgICAgICBhX3ByZXYgPSBucC5jb25jYXRlbmF0ZShbbnAub25lcyhzaGlm",
        "dCksIGFbOi1zaGlmdF1dKSAgIyBiZWZvcmUgdGhlIHN0YXJ0OiB0aGUgZG8tbm90aGluZyBzdGVwICgxLCAwKQogICAgICAg",
        "IGJfcHJldiA9IG5wLmNvbmNhdGVuYXRlKFtucC56ZXJvcyhzaGlmdCksIGJbOi1zaGlmdF1dKQogICAgICAgIGEsIGIgPSBh",
        "X3ByZXYgKiBhLCBhICogYl9wcmV2ICsgYiAgIyBib3RoIHJpZ2h0LWhhbmQgc2lkZXMgdXNlIHRoaXMgcm91bmQncyBvbGQg",
        "YQogICAgICAgIHNoaWZ0LCByb3VuZHMgPSAyICogc2hpZnQsIHJvdW5kcyArIDEKICAgIHJldHVybiBiLCByb3VuZHM=",
    ),
    "Exercise 12": (
        "IyBFeGVyY2lzZSAxMjogQXR0ZW5kIG9uIHRoZSBsYXRlbnQgY2FjaGUgd2l0aG91dCBleHBhbmRpbmcgaXQuIE1vdmUgZWFj",
        "aCBoZWFkJ3MgcXVlcnkgaW50byBsYXRlbnQKIyBzcGFjZSAocV9ub3BlIEAgV191a15UKSwgc2NvcmUgaXQgYWdhaW5zdCB0",
        "aGUgbGF0ZW50cywgQUREIHRoZSBSb1BFIGJyYW5jaCBxX3JvcGUgQCBrX3JvcGVeVCwgc2NhbGUKIyBieSAxL3NxcnQoZF9u",
        "b3BlICsgZF9yb3BlKSwgYWRkIHRoZSBtYXNrIGFuZCB0YWtlIGEgc3RhYmxlIHNvZnRtYXggb3ZlciB0aGUgY2FjaGVkIHRv",
        "a2Vucy4gTWl4IHRoZQojIGxhdGVudHMgd2l0aCB0aG9zZSB3ZWlnaHRzLCB0aGVuIGFwcGx5IFdfdXYgQCBXX28gcGVyIGhl",
        "YWQgYW5kIHN1bSB0aGUgaGVhZHMuIE5ldmVyIGZvcm0gbGF0ZW50IEAgV191ay4KZGVmIG1sYV9hYnNvcmJlZF9hdHRlbnRp",
        "b24ocV9ub3BlLCBxX3JvcGUsIGxhdGVudCwga19yb3BlLCBXX3VrLCBXX3V2LCBXX28sIG1hc2s9Tm9uZSk6CiAgICAiIiJM",
        "YXRlbnQgYXR0ZW50aW9uIHdpdGggV191ayBhYnNvcmJlZCBpbnRvIHRoZSBxdWVyeSBhbmQgV191diBpbnRvIHRoZSBvdXRw",
        "dXQ6IG5vIGtleSBvciB2YWx1ZSBpcyByZWJ1aWx0LgoKICAgIFNhbWUgYXJndW1lbnRzIGFuZCByZXN1bHQgYXMgbWxhX2V4",
        "cGFuZGVkX2F0dGVudGlvbi4KICAgICIiIgogICAgcV9ub3BlLCBxX3JvcGUsIGxhdGVudCwga19yb3BlLCBXX3VrLCBXX3V2",
        "LCBXX28sIG1hc2sgPSBfbWxhX3NoYXBlcyhxX25vcGUsIHFfcm9wZSwgbGF0ZW50LCBrX3JvcGUsIFdfdWssIFdfdXYsIFdf",
        "bywgbWFzaykKICAgIHFfbGF0ZW50ID0gcV9ub3BlIEAgbnAuc3dhcGF4ZXMoV191aywgMSwgMikgICMgKEgsIFRfcSwgZF9j",
        "KTogZWFjaCBxdWVyeSBtb3ZlZCBpbnRvIGxhdGVudCBzcGFjZQogICAgc2NhbGUgPSAxLjAgLyBtYXRoLnNxcnQocV9ub3Bl",
        "LnNoYXBlWy0xXSArIHFfcm9wZS5zaGFwZVstMV0pICAjIHRoZSBmdWxsIGtleSB3aWR0aDogbm8tcG9zaXRpb24gKyBSb1BF",
        "IHBhcnRzCiAgICBzY29yZXMgPSAocV9sYXRlbnQgQCBsYXRlbnQuVCArIHFfcm9wZSBAIGtfcm9wZS5UKSAqIHNjYWxlICsg",
        "bWFzayAgIyAoSCwgVF9xLCBUX2spOiBwb3NpdGlvbiBvbmx5IHZpYSBSb1BFCiAgICB3ZWlnaHRzID0gbnAuZXhwKHNjb3Jl",
        "cyAtIHNjb3Jlcy5tYXgoYXhpcz0tMSwga2VlcGRpbXM9VHJ1ZSkpCiAgICB3ZWlnaHRzIC89IHdlaWdodHMuc3VtKGF4aXM9",
        "LTEsIGtlZXBkaW1zPVRydWUpCiAgICBtaXhlZCA9IHdlaWdodHMgQCBsYXRlbnQgICMgKEgsIFRfcSwgZF9jKTogYmxlbmQg",
        "dGhlIGNhY2hlZCBsYXRlbnRzIGZpcnN0IC4uLgogICAgcmV0dXJuIG5wLmVpbnN1bSgiaHFjLGhjbS0+cW0iLCBtaXhlZCwg",
        "V191diBAIFdfbykgICMgLi4uIHRoZW4gb25lIGZvbGRlZCBtYXRyaXggcGVyIGhlYWQsIGhlYWRzIHN1bW1lZA==",
    ),
}.items()}
# builder:end sha256=8019a012c265e31c33b770594c1e2eef485e937fe25ade158064bf45578ffd7a

# %% tags=["hide-input"]
# @title Diagram toolkit: the lesson's box-and-arrow diagrams, drawn with matplotlib (drawing code only; run it, reading it is optional).
# builder:begin inline diagram_canvas
def diagram_canvas(width, height):
    """A blank figure of width x height inches whose data units are inches, (0, 0) at the bottom left."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return fig, ax
# builder:end sha256=1e5d8c1fb57edbe184e0ad975f34bc49c216082397722160f7ebb45372c202ff
# builder:begin inline diagram_box
def diagram_box(ax, x, y, width, height, text, color, *, solid=False, dashed=False, size=9, weight="normal"):
    """A rounded box centred at (x, y) holding centred text: tinted (or solid, with white text) in ``color``."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import FancyBboxPatch

    ax.add_artist(FancyBboxPatch(
        (x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0,rounding_size=0.06",
        facecolor=color if solid else to_rgba(color, 0.16), edgecolor=color, linewidth=1.1,
        linestyle=(0, (3, 2)) if dashed else "-",
    ))
    ax.text(x, y, text, ha="center", va="center", fontsize=size, weight=weight,
            color="white" if solid else Palette.INK, linespacing=1.15)
# builder:end sha256=462eebad07fd1b97e53292c8a8afc464971b2e0bea380c5aae8e625779ad384c
# builder:begin inline diagram_arrow
def diagram_arrow(ax, start, end, *, color=Palette.MUTED, text=None, at=0.5, shift=(0.0, 0.0), dashed=False, width=1.1, size=8):
    """An arrow from ``start`` to ``end`` (inches), with an optional label at fraction ``at`` along it, moved by ``shift``."""
    ax.annotate("", xy=end, xytext=start, arrowprops={
        "arrowstyle": "-|>", "color": color, "linewidth": width, "shrinkA": 0, "shrinkB": 0,
        "mutation_scale": 9, "linestyle": (0, (3, 2)) if dashed else "-",
    })
    if text:
        x = start[0] + at * (end[0] - start[0]) + shift[0]
        y = start[1] + at * (end[1] - start[1]) + shift[1]
        ax.text(x, y, text, ha="center", va="center", fontsize=size, color=color, linespacing=1.1)
# builder:end sha256=a206997d895bd1bf582a4f22b891a2a8a13cc92744751d9187d21b48aedfbc95
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
            diagram_box(ax, x + 0.17, y, 2.34, 0.5, leaf, color, dashed=True, size=8.5)
    diagram_box(ax, 2.9, 0.38, 2.2, 0.5, t("hybrids: a few attention\nlayers among SSM layers", "гибриды: немного слоёв\nвнимания среди SSM"),
                Palette.PURPLE, size=8.5)
    diagram_arrow(ax, (1.62, 0.95), (2.3, 0.63), color=Palette.PURPLE)
    diagram_arrow(ax, (4.47, 0.95), (3.55, 0.63), color=Palette.PURPLE)
    return fig
# builder:end sha256=7ad920a66171b5cfd922b780f84d5540b3cc7f43f38472ccd6d6dd10a9f65651
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
                                           "оценки q·k для всех\nn ключей, softmax,\nсмесь n значений"), Palette.BLUE, size=8.5)
    diagram_arrow(ax, (7.45, 2.41), (7.45, 1.75), color=Palette.ORANGE)
    diagram_arrow(ax, (5.3, 1.2), (6.45, 1.2), color=Palette.BLUE, text=t("reads all n", "читает все n"), shift=(0, 0.14))
    diagram_box(ax, 7.45, 0.35, 2.0, 0.4, t("output for token n", "выход для токена n"), Palette.BLUE, solid=True)
    diagram_arrow(ax, (7.45, 0.95), (7.45, 0.55), color=Palette.BLUE)
    kib = bytes_per_token / 1024
    ax.text(0.2, 0.28, t(f"one key + one value per KV head, in each of {layers} layers:\n{kib:,.0f} KiB per token, kept while the conversation lasts",
                         f"по ключу и значению на KV-голову в каждом из {layers} слоёв:\n{kib:,.0f} КиБ на токен, пока идёт диалог"),
            fontsize=8.5, color=Palette.MUTED, va="center", linespacing=1.25)
    return fig
# builder:end sha256=d4169be965e293463993fe96b3105fb01141febcf21a11d883fa5853a99deb1f
# builder:begin inline draw_window_relay
def draw_window_relay(allowed, fields, language="en"):
    """Left: the window mask as a grid of ticks; right: how stacked windowed layers relay the last token's inputs.

    ``allowed`` is the boolean [n, n] mask of one layer, ``fields[k]`` the boolean receptive field after k layers.
    """
    from functools import partial
    import numpy as np
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Circle
    from matplotlib.path import Path

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    allowed = require_mask("allowed", allowed)
    n = require_int("the mask's side", allowed.shape[0], minimum=2, maximum=10)  # the relay row holds at most 10 tokens
    if allowed.shape != (n, n) or not isinstance(fields, (list, tuple)) or not fields:
        raise ValueError(f"draw_window_relay needs a square mask and a non-empty list of fields, got a mask of shape {allowed.shape}")
    fields = [require_mask(f"fields[{k}]", field) for k, field in enumerate(fields)]
    if any(field.shape != (n, n) for field in fields):
        raise ValueError(f"every field must have the mask's shape {(n, n)}, got {[f.shape for f in fields]}")
    layers = len(fields) - 1
    fig, ax = diagram_canvas(8.6, 3.5)
    cell, left, top = 0.3, 0.95, 2.75
    rows, cols = np.nonzero(allowed)
    tick = [(-0.5, 0.05), (-0.15, -0.35), (0.5, 0.45)]  # a check mark as a marker path: one artist for every cell
    ax.scatter(left + cols * cell, top - rows * cell, s=60, marker=Path(tick, [Path.MOVETO, Path.LINETO, Path.LINETO]),
               facecolors="none", edgecolors=Palette.BLUE, linewidths=1.6)
    rows, cols = np.nonzero(~allowed)
    ax.scatter(left + cols * cell, top - rows * cell, s=4, color=Palette.GREY, linewidths=0)
    for i in range(n):
        ax.text(left - 0.22, top - i * cell, str(i), ha="right", va="center", fontsize=8.5, color=Palette.MUTED)
        ax.text(left + i * cell, top + 0.27, str(i), ha="center", va="center", fontsize=8.5, color=Palette.MUTED)
    ax.text(left - 0.22, top + 0.27, t("q \\ k", "з \\ к"), ha="right", va="center", fontsize=8.5, color=Palette.MUTED)
    counts = [int(c) for c in allowed.sum(axis=1)]
    growing = [c for c in counts if c < counts[-1]]
    total = " + ".join([str(c) for c in growing] + [f"{counts[-1]} × {len(counts) - len(growing)}"])
    ax.text(0.1, 3.33, t(f"One layer, w = {counts[-1]}: {sum(counts)} scores, not {n * (n + 1) // 2}",
                         f"Один слой, w = {counts[-1]}: оценок {sum(counts)}, а не {n * (n + 1) // 2}"), fontsize=10, weight="bold", va="center")
    ax.text(0.1, top - n * cell + 0.02, t(f"rows: queries i, columns: keys j; {total} = {sum(counts)}",
                                          f"строки: запросы i, столбцы: ключи j; {total} = {sum(counts)}"),
            va="center", fontsize=8.5, color=Palette.MUTED)
    # The relay: token n - 1 at the top, the inputs it can hear at each level below.
    last, x0, dx, ys = n - 1, 5.0, 0.47, [0.45 + 0.78 * k for k in range(layers + 1)]
    names = [t("input", "вход")] + [t(f"layer {k}", f"слой {k}") for k in range(1, layers + 1)]
    chain = [last - int(np.argmax(fields[k][last])) for k in range(layers + 1)]  # how far back each level reaches
    edges, heard = [], [np.asarray(fields[layers - level][last], dtype=bool) for level in range(layers + 1)]
    for level in range(1, layers + 1):
        for i in np.flatnonzero(heard[level]):
            edges += [((x0 + j * dx, ys[level - 1]), (x0 + i * dx, ys[level])) for j in np.flatnonzero(allowed[i]) if heard[level - 1][j]]
    ax.add_collection(LineCollection(edges, colors=Palette.BORDER, linewidths=0.9, zorder=1))
    for level, y in enumerate(ys):
        ax.text(x0 - 0.3, y, names[level], ha="right", va="center", fontsize=8.5, color=Palette.MUTED)
        target = last - chain[layers - level]  # the furthest token this level relays
        for j in range(n):
            on_path, near = j == target, bool(heard[level][j])
            color = Palette.BLUE if near else (Palette.RED if level == 0 else Palette.BORDER)
            ax.add_artist(Circle((x0 + j * dx, y), 0.15, zorder=2, linewidth=1.1, edgecolor=color,
                                facecolor=color if on_path else ("#E4EAF3" if near else "white")))
            if on_path or level == 0:  # the input row numbers every column; above it only the relay is numbered
                ax.text(x0 + j * dx, y, str(j), ha="center", va="center", fontsize=8, zorder=3, color="white" if on_path else Palette.INK)
    for level in range(layers):
        a, b = last - chain[layers - level], last - chain[layers - level - 1]
        diagram_arrow(ax, (x0 + a * dx + 0.08, ys[level] + 0.14), (x0 + b * dx - 0.08, ys[level + 1] - 0.14), color=Palette.BLUE, width=1.6)
    out = [j for j in range(n) if not heard[0][j]]
    if out:
        ax.text(x0 + out[-1] * dx, ys[0] - 0.31, t("out of reach", "вне охвата"), ha="left" if out[-1] == 0 else "center",
                va="center", fontsize=8, color=Palette.RED)
    ax.text(x0 - 0.9, 3.33, t(f"{layers} layers: token {last} hears token {last - chain[-1]}, {chain[-1]} back",
                              f"{layers} слоя: токен {last} слышит токен {last - chain[-1]}, на {chain[-1]} назад"), fontsize=10, weight="bold", va="center")
    return fig
# builder:end sha256=d9aacae9ab58c06e552c1ac5e24137ffbfcdcdf0a83696bf7719544fd960076f
# builder:begin inline draw_rolling_buffer
def draw_rolling_buffer(window, token, language="en"):
    """The rolling buffer of ``window`` slots before and after ``token`` arrives: it lands in slot token mod window."""
    from functools import partial

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    window = require_int("window", window, minimum=1, maximum=5)  # the two buffers hold at most 5 slots each
    token = require_int("token", token, minimum=window, maximum=11)  # a token row of 12, one of them evicted
    fig, ax = diagram_canvas(8.6, 2.9)
    first, slot = token - window + 1, token % window
    for j in range(token + 1):
        x = 1.35 + 0.64 * j
        kept, evicted = j >= first, j == first - 1
        diagram_box(ax, x, 2.2, 0.52, 0.4, str(j), Palette.ORANGE if j == token else (Palette.BLUE if kept else (Palette.RED if evicted else Palette.GREY)),
                    solid=j == token, dashed=evicted)
    ax.text(0.15, 2.2, t("tokens", "токены"), va="center", fontsize=9, color=Palette.MUTED)
    ax.plot([1.35 + 0.64 * first - 0.28, 1.35 + 0.64 * token + 0.28], [2.55, 2.55], color=Palette.BLUE, linewidth=2)
    ax.text(1.35 + 0.64 * (first + token) / 2, 2.72, t(f"window: the last {window} tokens", f"окно: последние {window} токена"),
            ha="center", va="center", fontsize=8.5, color=Palette.BLUE)
    ax.text(1.35 + 0.64 * (first - 1), 2.72, t("leaves", "уходит"), ha="center", va="center", fontsize=8.5, color=Palette.RED)
    for start, upto, title in ((0.9, token - 1, t(f"buffer after token {token - 1}", f"буфер после токена {token - 1}")),
                               (5.2, token, t(f"buffer after token {token}", f"буфер после токена {token}"))):
        ax.text(start - 0.3, 1.35, title, va="center", fontsize=9, weight="bold")
        for s in range(window):
            held = max(j for j in range(upto + 1) if j % window == s)  # the newest token that went to slot s
            changed = s == slot
            color = (Palette.ORANGE if upto == token else Palette.RED) if changed else Palette.BLUE
            diagram_box(ax, start + 0.7 * s, 0.85, 0.58, 0.42, str(held), color, solid=changed and upto == token, dashed=changed and upto < token)
            ax.text(start + 0.7 * s, 0.45, t(f"slot {s}", f"слот {s}"), ha="center", va="center", fontsize=8, color=Palette.MUTED)
    diagram_arrow(ax, (0.9 + 0.7 * window - 0.2, 0.85), (5.2 - 0.4, 0.85), color=Palette.ORANGE,
                  text=t(f"slot = {token} mod {window} = {slot}:\noverwrite token {token - window}", f"слот = {token} mod {window} = {slot}:\nзаменить токен {token - window}"),
                  shift=(0, 0.27), size=8)
    ax.text(5.2 - 0.3, 0.15, t(f"token {token} reads slots holding {', '.join(str(j) for j in range(first, token + 1))}",
                               f"токен {token} читает слоты с токенами {', '.join(str(j) for j in range(first, token + 1))}"),
            va="center", fontsize=8.5, color=Palette.MUTED)
    return fig
# builder:end sha256=17db989db1eb5e8eb0ca2ce0e50cc7619cc2b47d1dc22c0cda86b7d893fb786e
# builder:begin inline draw_global_tokens
def draw_global_tokens(allowed, global_tokens, language="en"):
    """Tokens on a line: arcs above link global tokens to everyone, arcs below are the local window's pairs."""
    from functools import partial
    import numpy as np
    from matplotlib.collections import LineCollection

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    allowed = require_mask("allowed", allowed)
    n = require_int("the mask's side", allowed.shape[0], minimum=1, maximum=16)  # 16 tokens fill the row
    if allowed.shape != (n, n):
        raise ValueError(f"allowed must be a square mask, got shape {allowed.shape}")
    global_tokens = [require_int("a global token", j, minimum=0, maximum=n - 1) for j in global_tokens]
    fig, ax = diagram_canvas(8.6, 3.0)
    dx, x0, y0 = 0.5, 0.55, 1.35
    theta = np.linspace(0, np.pi, 24)
    arcs = {True: [], False: []}
    for i, j in zip(*np.nonzero(np.tril(allowed, -1))):  # every allowed pair except a token with itself
        is_global = i in global_tokens or j in global_tokens
        half, height = (i - j) * dx / 2, (0.2 + 0.065 * (i - j)) * (1 if is_global else -1)
        xs = x0 + j * dx + half * (1 - np.cos(theta))
        arcs[is_global].append(np.column_stack([xs, y0 + (0.2 if is_global else -0.2) + height * np.sin(theta)]))
    ax.add_collection(LineCollection(arcs[True], colors=Palette.ORANGE, linewidths=1.1))
    ax.add_collection(LineCollection(arcs[False], colors=Palette.BLUE, linewidths=0.9, alpha=0.8))
    for j in range(n):
        glob = j in global_tokens
        diagram_box(ax, x0 + j * dx, y0, 0.36, 0.36, str(j), Palette.ORANGE if glob else Palette.BLUE, solid=glob, size=8.5)
    pairs, full = int(allowed.sum()), n * (n + 1) // 2
    ax.text(0.1, 2.8, t(f"Window + global token: {pairs} pairs, not {full}", f"Окно + глобальный токен: {pairs} пар, а не {full}"),
            fontsize=10.5, weight="bold", va="center")
    ax.text(0.1, 0.32, t("arcs above: every later token reads the global token 0", "дуги сверху: каждый следующий токен читает глобальный токен 0"),
            va="center", fontsize=8.5, color=Palette.ORANGE)
    ax.text(0.1, 0.12, t("arcs below: each token reads its recent neighbours (the window)", "дуги снизу: каждый токен читает недавних соседей (окно)"),
            va="center", fontsize=8.5, color=Palette.BLUE)
    return fig
# builder:end sha256=643b6bcc4af8ef6910560c98f9eb0e535ae280849476a41646f9af23d152a077
# builder:begin inline draw_mla_flow
def draw_mla_flow(latent, rope, heads, expanded, language="en"):
    """MLA's absorbed data flow: cache the latent and a RoPE key; the query moves into latent space, no key is built.

    ``expanded`` is what full keys and values of all ``heads`` would cost per token and layer, in numbers.
    """
    from functools import partial

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    fig, ax = diagram_canvas(8.6, 3.4)
    diagram_box(ax, 0.85, 2.75, 1.4, 0.55, t("token x\n(d_model)", "токен x\n(d_model)"), Palette.BLUE)
    diagram_box(ax, 3.45, 2.75, 2.3, 0.62, t(f"cache: latent c ({latent})\n+ RoPE key ρ ({rope}) = {latent + rope}",
                                           f"кэш: латент c ({latent})\n+ RoPE-ключ ρ ({rope}) = {latent + rope}"), Palette.ORANGE, solid=True, size=9)
    diagram_arrow(ax, (1.55, 2.75), (2.3, 2.75), text="W_down", shift=(0, 0.16))
    diagram_box(ax, 6.9, 2.75, 2.6, 0.62, t(f"keys and values of all\n{heads} heads: never built",
                                          f"ключи и значения всех\n{heads} голов: не строятся"), Palette.GREY, dashed=True, size=8.5)
    diagram_arrow(ax, (4.6, 2.75), (5.6, 2.75), color=Palette.GREY, dashed=True, text="W_uk, W_uv", shift=(0, 0.16))
    diagram_box(ax, 0.85, 1.35, 1.4, 0.55, t("query q\nof head h", "запрос q\nголовы h"), Palette.BLUE)
    diagram_box(ax, 3.45, 1.35, 2.3, 0.62, t(f"q W_ukᵀ: the query\nin latent space ({latent})", f"q W_ukᵀ: запрос\nв латентном пространстве ({latent})"),
                Palette.BLUE, size=8.5)
    diagram_arrow(ax, (1.55, 1.35), (2.3, 1.35), text=t("absorb", "поглотить"), shift=(0, 0.16))
    diagram_arrow(ax, (3.45, 1.66), (3.45, 2.44), color=Palette.BLUE, text=t("score against c\n(+ RoPE part · ρ)", "оценка по c\n(+ RoPE-часть · ρ)"),
                  shift=(1.0, 0), size=8)
    diagram_box(ax, 6.9, 1.35, 2.6, 0.62, t(f"softmax weights mix the\ncached latents ({latent} wide)", f"веса softmax смешивают\nлатенты кэша (ширина {latent})"),
                Palette.BLUE, size=8.5)
    diagram_arrow(ax, (4.6, 1.35), (5.6, 1.35), color=Palette.BLUE)
    diagram_arrow(ax, (4.6, 2.55), (6.1, 1.66), color=Palette.ORANGE, text=t("c again, as the values", "снова c, как значения"),
                  at=0.62, shift=(0.75, 0.08), size=8)
    diagram_box(ax, 6.9, 0.3, 2.6, 0.45, t("× W_uv W_o: output", "× W_uv W_o: выход"), Palette.BLUE, solid=True)
    diagram_arrow(ax, (6.9, 1.04), (6.9, 0.53), color=Palette.BLUE)
    ax.text(0.15, 0.3, t(f"cached per token and layer: {latent + rope} numbers,\nnot {expanded:,} for full keys and values",
                         f"в кэше на токен и слой: {latent + rope} чисел,\nа не {expanded:,} для полных ключей и значений"),
            va="center", fontsize=8.5, color=Palette.MUTED, linespacing=1.25)
    return fig
# builder:end sha256=7ffdfe8cfbb974294dcb97111d6d987340602fe1733d7bd75c48453c73599b94
# builder:begin inline draw_scan_tree
def draw_scan_tree(levels, language="en"):
    """The parallel scan as a tree: ``levels[r]`` holds each position's merged step (a, b) after round r."""
    from functools import partial

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    steps, rounds = len(levels[0]), len(levels) - 1
    fig, ax = diagram_canvas(8.6, 0.95 * rounds + 1.25)
    xs = [2.3 + 1.75 * i for i in range(steps)]
    ys = [0.95 * (rounds - r) + 0.45 for r in range(rounds + 1)]
    for i, x in enumerate(xs):
        ax.text(x, ys[0] + 0.45, t(f"step t = {i + 1}", f"шаг t = {i + 1}"), ha="center", va="center", fontsize=8.5, color=Palette.MUTED)
    for r, y in enumerate(ys):
        label = t("the steps (a, b)", "шаги (a, b)") if r == 0 else t(f"round {r}: shift {2 ** (r - 1)}", f"раунд {r}: сдвиг {2 ** (r - 1)}")
        ax.text(0.15, y, label, va="center", fontsize=8.5, color=Palette.MUTED)
        for i, (a, b) in enumerate(levels[r]):
            final = r == rounds
            diagram_box(ax, xs[i], y, 1.3, 0.4, f"({a:g}, {b:g})", Palette.GREEN if final else Palette.BLUE, size=9, weight="bold" if final else "normal")
            if r:
                diagram_arrow(ax, (xs[i], ys[r - 1] - 0.2), (xs[i], y + 0.2))
                if i >= 2 ** (r - 1):
                    diagram_arrow(ax, (xs[i - 2 ** (r - 1)] + 0.3, ys[r - 1] - 0.2), (xs[i] - 0.3, y + 0.2), color=Palette.BLUE)
    ax.text(xs[-1] + 0.72, ys[-1] - 0.37, t("last round: each b is the state h_t", "последний раунд: каждое b есть состояние h_t"), ha="right", va="center",
            fontsize=8.5, color=Palette.MUTED)
    return fig
# builder:end sha256=c28224086f7a1213c9c0d23583766e07d521120524e43c6af75cae7ba410b33d
# builder:begin inline draw_layer_stacks
def draw_layer_stacks(stacks, language="en"):
    """One row of blocks per model, one block per layer, coloured by what the layer keeps; ``stacks`` is [(name, note, kinds)].

    Each kind is "attention" (a cache that grows with n), "window" (at most w tokens) or "ssm" (a fixed state).
    """
    from functools import partial
    from matplotlib.patches import Rectangle

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    colors = {"attention": Palette.ORANGE, "window": Palette.YELLOW, "ssm": Palette.BLUE}
    height = 0.72 * len(stacks) + 0.95
    fig, ax = diagram_canvas(8.6, height)
    legend = ((colors["attention"], t("attention: cache grows with n", "внимание: кэш растёт с n")),
              (colors["window"], t("window: at most w tokens", "окно: не больше w токенов")),
              (colors["ssm"], t("SSM: fixed state", "SSM: фиксированное состояние")))
    for k, (color, text) in enumerate(legend):
        ax.add_artist(Rectangle((0.15 + 2.85 * k, height - 0.38), 0.22, 0.22, color=color))
        ax.text(0.45 + 2.85 * k, height - 0.27, text, va="center", fontsize=8.5)
    longest = max(len(kinds) for _, _, kinds in stacks)
    width = min(0.2, 5.4 / longest)
    for row, (name, note, kinds) in enumerate(stacks):
        y = height - 0.95 - 0.72 * row
        ax.text(0.15, y + 0.12, name, va="center", fontsize=9, weight="bold")
        ax.text(0.15, y - 0.13, note, va="center", fontsize=8.5, color=Palette.MUTED)
        ax.broken_barh([(3.0 + layer * width, width * 0.82) for layer in range(len(kinds))], (y - 0.2, 0.4),
                       facecolors=[colors[kind] for kind in kinds], linewidth=0)
    ax.annotate("", xy=(3.0 + longest * width, 0.2), xytext=(3.0, 0.2),
                arrowprops={"arrowstyle": "-|>", "color": Palette.MUTED, "linewidth": 1, "mutation_scale": 9})
    ax.text(3.0, 0.05 + 0.3, t("layer 0: tokens in", "слой 0: вход"), fontsize=8, color=Palette.MUTED, va="center")
    ax.text(3.0 + longest * width, 0.35, t("last layer: next-token scores", "последний слой: оценки токенов"), ha="right",
            fontsize=8, color=Palette.MUTED, va="center")
    return fig
# builder:end sha256=440a065f3f12a1049b7b9dc34133199b8d0fbdf20a5054c59ae569deefee8599

print("diagram toolkit ready:", ", ".join(name for name in dir() if name.startswith("draw_")))

# %% [markdown]
# ## Обозначения и термины этого модуля
#
# Один символ — одно значение, отсюда и до конца модуля. Имена в коде набраны `code font` там, где они отличаются от обозначений.
#
# | Обозначение | Смысл | Обозначение | Смысл |
# |---|---|---|---|
# | $n$ | длина контекста в токенах | $T_q$, $T_k$ | число запросов и ключей в одном вызове |
# | $i$, $j$ | позиция запроса, позиция ключа | $p_0$ | абсолютная позиция первого запроса (`query_start`) |
# | $L$ | число слоёв | $\kappa$ | номер слоя |
# | $H$, $H_{kv}$ | головы запросов, головы ключей и значений в слое | $G$ | голов запросов на одну KV-голову, $H / H_{kv}$ |
# | $d_k$, $d_v$, $d_h$, $d$ | ширина ключа, значения и головы ($d$, когда они равны) | $b$ | байтов на одно хранимое число |
# | $w$ | окно в ключах, собственный ключ запроса включён | $W$ | окно Mistral, собственный ключ запроса не включён: $w = W + 1$ |
# | $n_{\text{sink}}$ | токены-стоки, сохраняемые в начале (StreamingLLM) | $\sigma_h$ | обучаемый логит стока головы запросов $h$ в gpt-oss |
# | $s_{ij}$, $p_{ij}$ | оценка и её вес после softmax | $M_{ij}$ | элемент аддитивной маски: 0, смещение или $-\infty$ |
# | $m$, $\ell$, $u$ | онлайн-softmax: текущий максимум, сумма, числитель | $\alpha$ | множитель пересчёта $e^{m_{\text{old}} - m_{\text{new}}}$ |
# | $\tau$ | размер тайла (`tile_size`) | $S$, $P$, $O$ | тайл оценок, его веса, накопитель выхода |
# | $M_{\text{sram}}$ | объём памяти на кристалле, в числах | $B_r$, $B_c$ | размеры блоков запросов и ключей во FlashAttention |
# | $r$ | шаг (stride) разреженного шаблона «с шагом» | $\phi$ | отображение признаков в линейном внимании |
# | $R_i$, $z_i$ | состояние и нормировщик линейного внимания | $\lambda$ | множитель затухания на шаг |
# | $h_t$, $x_t$, $y_t$ | состояние, вход и выход SSM на шаге $t$ | $A$, $B$, $C$ | множители сохранения (затухания), записи и чтения в SSM |
# | $\Delta_t$ | размер шага Mamba для токена $t$ | $\bar A_t$, $\bar B_t$ | дискретизованные множители сохранения и записи |
# | $(\lambda, \mu)$ | один шаг сканирования $h \mapsto \lambda h + \mu$ | $D$, $N$ | каналы SSM, чисел состояния на канал |
# | $c_j$, $\rho_j$ | закэшированный латентный вектор и RoPE-ключ в MLA | $\nu$, $\gamma$ | биты и масштаб квантования |
#
# **Термины.** *Prefill* (префилл): первый прямой проход по всему промпту, который заполняет KV-кэш; он
# оплачивает счёт за вычисления. *Декодирование* (decode): генерация по одному токену, где каждый новый запрос
# читает кэш; оно оплачивает счёт за память. *RoPE* (rotary position embedding, поворотный позиционный
# эмбеддинг): позиция входит во внимание через поворот каждого запроса и каждого ключа на угол,
# пропорциональный его позиции, так что оценка зависит от расстояния $i - j$ (модуль 3). *KIVI*
# ([Liu и др., 2024](https://arxiv.org/abs/2402.02750)): метод квантования KV-кэша, который даёт ключам
# по одному масштабу на канал, а значениям — по одному на токен и хранит самые свежие токены в полной
# точности (раздел 14). *Сток* (sink): две вещи с одной причиной — первые токены в StreamingLLM (раздел 2)
# и дополнительный логит в gpt-oss (раздел 3); строка softmax в сумме равна 1, поэтому голове, которой
# нечего читать, всё равно нужно куда-то пристроить свою массу.

# %% [markdown]
# # Часть 1 · Руководство для практика
#
# **Весь модуль в одном предложении.** Длинный контекст выставляет два счёта: один за *вычисления*
# (каждый запрос сравнивается с каждым ключом, поэтому работа растёт как квадрат длины) и один за *память*
# (ключи и значения каждого прошлого токена остаются в KV-кэше, поэтому память растёт пропорционально длине),
# и каждая схема «эффективного внимания» — это своя сделка о том, какие токены хранятся точно, какие
# сводятся к краткому итогу и насколько компактно всё это лежит в памяти.
#
# **Когда это нужно.** Всякий раз, когда длина контекста входит в ваше проектное решение: целый репозиторий
# в промпте, диалог, который длится весь день, агент, работающий сотни шагов, или выбор между двумя моделями,
# в карточках которых написано «grouped-query» (группировка запросов), «sliding window» (скользящее окно),
# «attention sinks» (стоки внимания), «hybrid Mamba» (гибрид с Mamba) или «latent attention» (латентное внимание). Эти слова определяют, сколько стоит один диалог и что модель ещё способна найти
# в контексте. Для промптов в несколько тысяч токенов обычное внимание дёшево и точно, и ничто из описанного
# ниже его не превзойдёт.
#
# **Варианты** — от самого точного к самому компактному. Числа даны для сквозного примера с устройством
# как у Llama-3-8B (32 слоя, 8 KV-голов ширины 128, 16-битный кэш); ячейка после таблицы вычисляет каждое из них.
#
# | Вариант | Что он делает | Что он сохраняет | Чего он стоит | Где это выбирается |
# |---|---|---|---|---|
# | Полное внимание с группировкой запросов (GQA) | каждый токен читает все предыдущие токены; несколько голов запросов делят одну KV-голову | точное воспроизведение всего контекста | 128 KiB на токен (512 KiB при 32 KV-головах); 17.2 GB при 128k токенов | архитектура модели |
# | Скользящее окно, часто чередующееся с полными слоями | каждый токен читает последние $w$ токенов; глубина передаёт информацию дальше по эстафете | точное воспроизведение внутри окна, более слабое эстафетное — за его пределами | кэш, ограниченный $w$ токенами: 0.54 GB при $w$ = 4,096 на любой длине | архитектура модели |
# | Стоки внимания плюс окно (StreamingLLM) | при обслуживании сохраняются несколько первых токенов и окно последних | связная потоковая генерация без ограничения длины; **никакого** воспроизведения вытесненных токенов | почти ничего; статья прогоняет потоком 4 миллиона токенов с ускорением до 22.2x по сравнению с пересчётом окна ([Xiao и др., 2023](https://arxiv.org/abs/2309.17453)) | сервер инференса |
# | Гибрид модели пространства состояний и внимания | большинство слоёв несут состояние фиксированного размера; несколько слоёв — внимание | точный поиск через слои внимания | 4 слоя внимания из 32 сокращают кэш на 128k с 17.2 GB до 2.15 GB | архитектура модели |
# | Чистая модель пространства состояний или линейное внимание | каждый слой хранит сводку фиксированного размера | связный длинный текст, более размытое точное воспроизведение | состояние, которое никогда не растёт: 4.2 MB на весь стек из 32 слоёв | архитектура модели |
# | Латентный KV-кэш (MLA) | кэширует короткий латентный вектор на токен и восстанавливает из него ключи и значения | точные выходы по построению | 576 чисел на токен на слой вместо 32,768 для 128 голов ширины 128 (в 57x меньше; в 71x относительно реальных ключей ширины 192, разделы 5 и 13), плюс дополнительные матричные вычисления | архитектура модели |
# | Квантованный KV-кэш | хранит ключи и значения в 8 или 4 битах с одним масштабом на вектор | слегка округлённое внимание | в 3.9x меньше при 4 битах; ошибка выхода измеряется в разделе 14 | сервер инференса |
#
# Точного *потокового* внимания (FlashAttention) в таблице нет, потому что оно не меняет размер ни одного из
# счетов: оно вычисляет те же числа по тайлам, так что матрица оценок $n \times n$ никогда не существует
# в памяти целиком. Вы построите его в разделах 6–8 и докажете, что оно точное.
#
# **Как выбирать.** Исходите из того, что задача должна *найти*, а не из заявленного окна.
#
# - Точный поиск по длинному входу (имя функции в репозитории, пункт контракта): сохраните полное
#   внимание в достаточном числе слоёв и заложите бюджет на кэш.
# - Длинный текст, который движется вперёд и никогда не цитирует далёкое прошлое (расшифровка, поток):
#   окно или модель пространства состояний обойдутся гораздо дешевле; стоки плюс окно позволяют даже модели
#   с полным вниманием работать в потоковом режиме.
# - Много одновременных длинных диалогов на фиксированном железе: кэш на токен — это и *есть* ваша
#   ёмкость. Предпочитайте меньше KV-голов или латентный кэш, затем квантуйте кэш, затем ограничьте
#   допустимый контекст.
# - Заявленное контекстное окно в 128k или больше: проверяйте на той длине, которую будете использовать.
#   RULER обнаружил, что из 17 моделей с длинным контекстом, каждая из которых заявляла не меньше 32k токенов,
#   лишь примерно половина справлялась на 32k
#   ([Hsieh и др., 2024, версия COLM](https://arxiv.org/abs/2404.06654); в первой версии на arXiv
#   проверялось 10 моделей). *Lost in the Middle* показала, что точность выше всего, когда нужный фрагмент
#   стоит в начале или в конце входа, и ниже всего — когда в середине
#   ([Liu и др., 2023](https://arxiv.org/abs/2307.03172)).
#
# **Что ломается.**
#
# - *Факт оказался за пределами окна.* У Mistral 7B v0.1 32 слоя с окном $W$ = 4,096 в соглашении её
#   статьи: позиция $i$ читает позиции от $i - W$ до $i$, то есть 4,097 ключей вместе с собственным, и каждый
#   слой передаёт информацию на 4,096 позиций дальше. Поэтому токен может почувствовать другой токен на
#   131,072 = 32 × 4,096 позиций назад, но только по эстафете через много переходов; факту на 100,000 токенов
#   назад нужно не меньше 25 таких переходов. Не ждите точной цитаты из-за пределов окна. К тому же
#   100,000 токенов лежат далеко за пределами контекста 8K, на котором обучалась v0.1, так что такая
#   дальность — это то, что допускает схема связей, а не то, чем модель научилась пользоваться. (Более поздние
#   версии Mistral 7B отказались от окна; gpt-oss считает своё окно в 128 токенов наоборот — текущий токен
#   входит в эти 128.)
# - *Простое окно отбрасывает первые токены, и модель разваливается.* Обученные модели складывают массу
#   внимания на первые токены (стоки внимания); сохраняйте их при вытеснении.
# - *Вытеснен — значит, пропал.* Стоки плюс окно дают связный поток, но не могут вспомнить токен,
#   покинувший окно.
# - *Состояние фиксированного размера не умеет копировать.* Слои моделей пространства состояний и линейного
#   внимания воспроизводят конкретный далёкий токен хуже, чем внимание; оставляйте слои внимания для поиска.
# - *Разреженный шаблон, который не экономит времени.* Пропущенные пары экономят работу, только если
#   пропускаются целые блоки матрицы оценок; раздел 8 измеряет, что даёт пропуск.
# - *Квантованный кэш, который меняет ответы.* В ключах есть несколько больших каналов; один масштаб на
#   токен тратит коды на них. Квантуйте ключи поканально, а значения — по токенам (KIVI, раздел 14).
#
# **Выигрыши, о которых сообщают статьи** (каждый — из аннотации статьи): Mamba — в 5x бо́льшая пропускная
# способность *генерации*, чем у трансформера того же размера ([Gu и Dao, 2023](https://arxiv.org/abs/2312.00752));
# DeepSeek-V2 — KV-кэш на 93.3% меньше и в 5.76x бо́льшая максимальная пропускная способность генерации, чем у
# **DeepSeek 67B**, её плотной предшественницы (95 слоёв, 8 KV-голов), а не у MHA-двойника, причём кэш V2
# к тому же хранится примерно в 6 битах на число ([DeepSeek-AI, 2024](https://arxiv.org/abs/2405.04434), раздел 3.2.3);
# Jamba — контекст в 256K токенов ([Lieber и др., 2024](https://arxiv.org/abs/2403.19887)), из которых
# до 140K токенов помещаются на одну GPU с 80 GB; эта цифра взята из
# [карточки модели Jamba-v0.1](https://huggingface.co/ai21labs/Jamba-v0.1), а не из аннотации статьи.

# %%
# Every number in the guide above, computed from its definition (each section below rederives them).
L8B, KV8B, D8B, BYTES16 = 32, 8, 128, 2  # the running example: Llama-3-8B's attention shape, 16-bit cache
per_token = 2 * L8B * KV8B * D8B * BYTES16  # a key and a value, per layer, per KV head
guide = {
    "cache per token, 8 KV heads (KiB)": per_token / KIB,
    "cache per token, 32 KV heads (KiB)": 2 * L8B * 32 * D8B * BYTES16 / KIB,
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
expect('round(guide["cache at 128k tokens (GB)"], 1) == 17.2', round(guide["cache at 128k tokens (GB)"], 1), "==", 17.2)
expect('round(guide["hybrid 4 attention + 28 SSM layers at 128k (GB)"], 2) == 2.15', round(guide["hybrid 4 attention + 28 SSM layers at 128k (GB)"], 2), "==", 2.15)
expect('round(guide["latent saving (x)"]) == 57', round(guide["latent saving (x)"]), "==", 57)
expect('round(guide["4-bit cache saving (x)"], 1) == 3.9', round(guide["4-bit cache saving (x)"], 1), "==", 3.9)
REFERENCE.check("running_example.bytes_per_token", per_token)
REFERENCE.check("window.mistral_v0_1_reach", guide["Mistral 7B v0.1 reach (tokens), i reads i - 4,096 .. i"])

# %%
show_figure(
    draw_taxonomy(language=LANGUAGE),
    "Read it from the top down. The red box is the problem both bills create; each column is one strategy against "
    "it, and the dashed boxes under it are the designs this module builds. Blue reads fewer tokens, green replaces "
    "the growing cache by a fixed-size state, orange keeps every token but in fewer bytes. The purple box is where "
    "two strategies meet: hybrids put a few attention or window layers among state-space layers.",
)


# %% [markdown]
# # Часть 2 · Как это устроено, с нуля
#
# Пятнадцать разделов, и в каждом одна и та же схема: идея, формула с обозначениями, числа вручную, код,
# рисунок и проверка, которая останавливает ноутбук, если что-то не так. По ходу отмечены двенадцать
# упражнений; после каждого идёт проверка контракта, которая его оценивает.
#
# ## 1. Два счёта
#
# **Идея.** Представьте званый ужин, где каждый новый гость пожимает руку каждому, кто уже пришёл (это
# оценки), а гардероб хранит по одному пальто на гостя на каждом этаже (это кэш). Десять гостей дают
# 45 рукопожатий, тысяча — полмиллиона. Внимание платит за то и другое: рукопожатия — это оценки запрос–ключ,
# за которые платят один раз на промпт, а пальто — это KV-кэш, за который платят всё время, пока диалог открыт.
#
# $$\text{pairs} = n^2 \qquad\qquad \text{KV bytes} = 2 \cdot L \cdot H_{kv} \cdot d_h \cdot b \cdot n$$
#
# | Обозначение | Смысл | Сквозной пример |
# |---|---|---|
# | $n$ | длина контекста в токенах | 131,072 (128k) |
# | $n^2$ | пар запрос–ключ на голову на слой (каузальная маска делит это число пополам; характер роста тот же) | $1.7 \times 10^{10}$ |
# | $2$ | один ключ и одно значение на токен | |
# | $L$ | слои, у каждого свой кэш | 32 |
# | $H_{kv}$ | головы ключей/значений в слое | 8 |
# | $d_h$ | чисел на голову | 128 |
# | $b$ | байтов на хранимое число | 2 (16 бит) |
#
# **Вручную.** Один токен стоит $2 \cdot 32 \cdot 8 \cdot 128 \cdot 2 = 131{,}072$ байта, 128 KiB.
# При $n = 131{,}072$ это $2^{17} \cdot 2^{17} = 2^{34}$ байт, около 17.2 GB, и
# $n^2 \approx 1.7 \times 10^{10}$ пар. Переход от 8k к 1M токенов умножает число токенов на 128,
# число пар — на $128^2 = 16{,}384$, а кэш — на 128: 137 GB, больше, чем вмещает одна GPU на 80 GB,
# ещё до загрузки единого веса.

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
expect_raises(ValueError, context_cost, 0, match="n")
expect_raises(TypeError, kv_bytes_per_token, 32, 8.0, 128, match="kv_heads")
expect_raises(ValueError, kv_bytes_per_token, 32, 8, 128, 0, match="bytes_per_value")
expect("one layer, one KV head, one number of one byte: a key and a value cost 2 bytes", kv_bytes_per_token(1, 1, 1, 1), "==", 2)
expect("context_cost(1) with the running example's defaults: one pair, one token's 128 KiB", context_cost(1), "==", {"n": 1, "pairs": 1, "cache_bytes": per_token})


# %%
def plot_two_bills(bills, gpu_bytes=80 * 10**9, language="en"):
    """Two panels: pairs scored (log scale) and KV-cache gigabytes per context, with one GPU's memory."""
    gpu_bytes = require_int("gpu_bytes", gpu_bytes, minimum=1)
    labels = [f"{b['n'] // 1024:,}k" if b["n"] < 2**20 else f"{b['n'] // 2**20}M" for b in bills]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 2.9))
    left.bar(labels, [b["pairs"] for b in bills], color=Palette.RED)
    log_scale(left, "y")
    left.set_title(localized(language, "Compute: pairs grow with n²", "Вычисления: пары растут как n²"))
    left.set_ylabel(localized(language, "pairs per head per layer", "пар на голову и слой"))
    gigabytes = [b["cache_bytes"] / 10**9 for b in bills]
    right.bar(labels, gigabytes, color=Palette.BLUE)
    for x, value in enumerate(gigabytes):
        right.text(x, value + 3, f"{value:.1f} " + localized(language, "GB", "ГБ"), ha="center", fontsize=9)
    right.axhline(gpu_bytes / 10**9, color=Palette.MUTED, linestyle="--", linewidth=1)
    right.text(-0.45, gpu_bytes / 10**9 + 5, localized(language, "one 80 GB GPU", "один GPU на 80 ГБ"), color=Palette.MUTED, fontsize=9)
    right.set_ylim(0, 165)
    right.set_title(localized(language, "Memory: cache grows with n", "Память: кэш растёт как n"))
    right.set_ylabel(localized(language, "KV cache, GB", "KV-кэш, ГБ"))
    for ax in (left, right):
        ax.set_xlabel(localized(language, "context length", "длина контекста"))
    fig.subplots_adjust(wspace=0.4, left=0.09, right=0.98, bottom=0.18, top=0.88)
    return fig


show_figure(
    plot_two_bills(bills, language=LANGUAGE),
    "Left: query-key pairs per head per layer on a log axis, one bar per context length; each step right multiplies "
    "the bar by 256, then by 64. Right: the KV cache of one conversation in GB on a linear axis, with one 80 GB GPU "
    "dashed. The 1M-token bar crosses the line before any weight is loaded.",
)
REFERENCE.check("two_bills.contexts", [b["n"] for b in bills])
REFERENCE.check("two_bills.pairs", [b["pairs"] for b in bills])
REFERENCE.check("two_bills.cache_bytes", [b["cache_bytes"] for b in bills])
expect('bills[1]["cache_bytes"] == 2**34', bills[1]["cache_bytes"], "==", 2**34)
expect('bills[2]["cache_bytes"] > 80 * GB', bills[2]["cache_bytes"], ">", 80 * GB)
report_section("The two bills", globals())

# %% [markdown]
# Счёт за вычисления оплачивается один раз на промпт, на этапе prefill, и точное разбиение на тайлы (разделы 6–8)
# делает эти вычисления быстрее и экономнее по памяти, не меняя их объёма. Счёт за память оплачивается всё
# время, пока диалог открыт, и определяет, скольких пользователей обслуживает одна GPU; поэтому большинство
# описанных ниже схем атакуют именно кэш.

# %%
show_figure(
    draw_kv_trip(per_token, L8B, language=LANGUAGE),
    "Follow one decoding step from the orange box at the top. Token n's key and value are written into the last "
    "slot of the cache (orange); its query goes right, is scored against all n keys, and the softmax weights mix "
    "all n values into token n's output. The blue slots are read, never recomputed: that is the compute the cache "
    "saves, and the memory it costs, in every layer, for as long as the conversation lasts.",
)


# %% [markdown]
# ## 2. Маски: каузальная, окно и стоки
#
# **Идея.** Маска говорит, какие ключи может читать каждый запрос. В *аддитивной* записи это матрица,
# которую прибавляют к оценкам перед softmax: 0 там, где чтение разрешено, и $-\infty$ там, где запрещено,
# так что заблокированный ключ получает вес ровно $e^{-\infty} = 0$. Конечный элемент — это *смещение*
# (bias; его используют ALiBi и схемы относительных позиций). Здесь важны три маски: *каузальная* (никогда
# не заглядывать в будущее), *скользящее окно* (только последние $w$ токенов, включая собственный токен
# запроса) и окно со *стоками*: StreamingLLM навсегда оставляет видимыми первые $n_{\text{sink}}$ токенов,
# потому что обученные модели складывают на них много внимания и разваливаются, когда те исчезают. В разделе 3
# встретится сток другого рода — обучаемый логит gpt-oss: оба существуют потому, что строка softmax должна
# в сумме давать 1, и голове, которой нечего полезного читать, всё равно приходится куда-то девать свою массу.
#
# $$M_{ij} = 0 \;\text{ if }\; j \le i \;\text{ and }\; \left(i - j < w \;\text{ or }\; j < n_{\text{sink}}\right), \qquad M_{ij} = -\infty \;\text{ otherwise}$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $i$, $j$ | позиция запроса (строка) и позиция ключа (столбец) | строка 23 |
# | $i - j$ | насколько далеко назад стоит ключ $j$; отрицательное значение — это будущее | |
# | $w$ | окно: сколько последних ключей читает запрос, включая собственный | 8 |
# | $n_{\text{sink}}$ | число ключей-стоков в начале, которые остаются видимыми (`n_sink`) | 2 |
# | $M_{ij}$ | элемент аддитивной маски | 0 или $-\infty$ |
#
# **Вручную.** При $n = 24$, $w = 8$, $n_{\text{sink}} = 2$ запрос 23 читает ключи с 16 по 23 (восемь штук,
# потому что $23 - 16 = 7 < 8$) плюс стоки 0 и 1; ключ 15 заблокирован ($23 - 15 = 8$). Полная
# каузальная маска разрешает $24 \cdot 25 / 2 = 300$ пар.

# %% tags=["exercise"]
# Exercise 1: Постройте аддитивную маску. Верните массив float формы (n, n), где 0.0 стоит там, где запрос i может
# читать ключ j, и -inf там, где не может: никогда не будущий ключ; при заданном окне — только ключи с
# i - j < window; при n_sink > 0 первые n_sink ключей остаются доступными (но будущее по-прежнему закрыто).
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
    raise NotImplementedError('Exercise 1: Постройте аддитивную маску. Верните массив float формы (n, n), где 0.0 стоит там, где запрос i может читать ключ j, и -inf там, где не может: никогда не будущий ключ; при заданном окне — только ключи с i - j < window; при n_sink > 0 первые n_sink ключей остаются доступными (но будущее по-прежнему закрыто).')


# %%
check_exercise("Exercise 1", check_additive_mask_contract, make_mask, globals())

# %%
MASK_N = 24
mask_causal, mask_window, mask_sinks = make_mask(MASK_N), make_mask(MASK_N, window=8), make_mask(MASK_N, window=8, n_sink=2)
for name, m in (("causal", mask_causal), ("window 8", mask_window), ("window 8 + 2 sinks", mask_sinks)):
    print(f"{name:20s} allowed pairs: {int((m == 0).sum()):4d}   row 23 reads keys {np.flatnonzero(m[23] == 0).tolist()}")
expect("(mask_causal == 0).sum() == MASK_N * (MASK_N + 1) // 2", (mask_causal == 0).sum(), "==", MASK_N * (MASK_N + 1) // 2)
expect("np.isneginf(mask_window[23, 15])", np.isneginf(mask_window[23, 15]))
expect("mask_window[23, 16] == 0", mask_window[23, 16], "==", 0)
expect("mask_sinks[23, 0] == 0", mask_sinks[23, 0], "==", 0)
expect("mask_sinks[23, 1] == 0", mask_sinks[23, 1], "==", 0)
expect("np.isneginf(mask_sinks[23, 2])", np.isneginf(mask_sinks[23, 2]))
expect_raises(ValueError, make_mask, 4, n_sink=1, match="window")
expect_raises(ValueError, make_mask, 4, window=0, match="window")
expect_raises(TypeError, make_mask, 4.0, match="n")
expect_raises(ValueError, make_mask, 4, window=2, n_sink=-1, match="n_sink")
expect_raises(ValueError, make_mask, 131_072, match="budget")  # 128 GiB of float64: refused before allocating
expect("make_mask(1) is the single allowed pair [[0.0]]", make_mask(1).tolist(), "==", [[0.0]])


# %%
def plot_masks(panels, language="en"):
    """One heatmap per (title, additive mask): dark where a query may read a key."""
    fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels), 2.7))
    for ax, (title, mask) in zip(np.atleast_1d(axes), panels):
        ax.imshow(np.isfinite(mask), cmap="Blues", vmin=0, vmax=1.25, interpolation="nearest")
        ax.set_title(f"{title}\n{int(np.isfinite(mask).sum())} " + localized(language, "pairs", "пар"), fontsize=10)
        ax.set_xlabel(localized(language, "key j", "ключ j"))
        ax.set_xticks(range(0, len(mask), 5)), ax.set_yticks(range(0, len(mask), 5))
        ax.grid(False)
    np.atleast_1d(axes)[0].set_ylabel(localized(language, "query i", "запрос i"))
    fig.subplots_adjust(wspace=0.3, left=0.07, right=0.99, bottom=0.19, top=0.83)
    return fig


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
# ## 3. Внимание с логитом стока и строки, которым нечего читать
#
# **Идея.** gpt-oss добавляет в знаменатель softmax по одному обучаемому логиту на каждую голову **запросов**,
# 64 на слой; он дописывается к логитам каждой строки перед softmax и отбрасывается после него
# ([openai/gpt-oss](https://github.com/openai/gpt-oss), `gpt_oss/torch/model.py`). Он действует как
# дополнительный ключ с нулевым вектором значения: голова может отдать вес «в никуда», а не быть вынужденной
# распределить целую единицу вероятности по токенам. У `F.scaled_dot_product_attention` нет для этого
# аргумента, поэтому внимание мы пишем сами. Тот же код должен решить, что делать со строкой, в которой
# заблокированы все ключи (паддинг или агрессивная маска): softmax по пустому множеству — это $0/0$. Наша
# политика — по умолчанию ошибка, а по запросу — строка из точных нулей. Собственное ядро PyTorch начиная
# с версии 2.5 возвращает нули; версии 2.4 и старше возвращали NaN.
#
# $$p_{ij} = \frac{e^{s_{ij}}}{e^{\sigma_h} + \sum_{k} e^{s_{ik}}}, \qquad o_i = \sum_j p_{ij}\, v_j, \qquad \text{sink share} = \frac{e^{\sigma_h}}{e^{\sigma_h} + \sum_{k} e^{s_{ik}}}$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $s_{ij}$ | масштабированная оценка плюс маска: $q_i \cdot k_j / \sqrt{d_k} + M_{ij}$ | 0 для 128 одинаковых ключей |
# | $\sigma_h$ | логит стока головы запросов $h$ (обучаемый) | 0, 2 или 5 |
# | $p_{ij}$ | вес ключа $j$ для запроса $i$; строка в сумме даёт $1 -$ доля стока | |
# | $o_i$ | выход: взвешенные значения; значение стока — нулевой вектор | |
#
# **Вручную.** 128 ключей, у которых все оценки равны 0, дают знаменатель $e^{\sigma} + 128$. При
# $\sigma = 0$ сток забирает $1/129 = 0.78\%$; при $\sigma = 2$ — $7.39 / 135.39 = 5.46\%$; при
# $\sigma = 5$ — $148.4 / 276.4 = 53.69\%$ массы, и вес каждого токена уменьшается в одно и то же число раз.

# %%
def additive_mask(allowed):
    """Turn a boolean mask (True = may read) into an additive one (0.0 / -inf)."""
    allowed = as_numpy("allowed", allowed)
    if allowed.dtype != bool:
        raise TypeError(f"allowed must be a boolean array (True = may read), got dtype {allowed.dtype}")
    return np.where(allowed, 0.0, -np.inf)


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
# Exercise 2: Напишите softmax-внимание со стоком. Умножьте Q K^T на 1/sqrt(d_k) и прибавьте маску.
# Сток (уже размноженный до формы [..., T_q, 1]) входит в softmax каждой строки как дополнительный логит,
# вектор значения которого нулевой. Перед exp вычтите максимум строки (по токенам И стоку). Строка без
# разрешённых ключей и без стока вызывает ValueError при empty_row == "error" и состоит из нулей при "zero".
# Отвергайте конечную оценку, которая переполняется: бросайте FloatingPointError с упоминанием "mask bias",
# если прибавление конечного элемента маски делает конечную оценку бесконечной.
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
    # Your code here.
    raise NotImplementedError('Exercise 2: Напишите softmax-внимание со стоком. Умножьте Q K^T на 1/sqrt(d_k) и прибавьте маску. Сток (уже размноженный до формы [..., T_q, 1]) входит в softmax каждой строки как дополнительный логит, вектор значения которого нулевой. Перед exp вычтите максимум строки (по токенам И стоку). Строка без разрешённых ключей и без стока вызывает ValueError при empty_row == "error" и состоит из нулей при "zero". Отвергайте конечную оценку, которая переполняется: бросайте FloatingPointError с упоминанием "mask bias", если прибавление конечного элемента маски делает конечную оценку бесконечной.')
    return (output, weights) if return_weights else output


# %%
check_exercise("Exercise 2", check_sink_attention_contract, sdpa, globals())

# %%
rng = np.random.default_rng(SEED)
Q24, K24, V24 = (rng.standard_normal((MASK_N, 16)) for _ in range(3))
out, weights = sdpa(Q24, K24, V24, mask_causal, return_weights=True)
expect("out.shape == (MASK_N, 16)", out.shape, "==", (MASK_N, 16))
expect("np.allclose(weights.sum(-1), 1.0)", np.allclose(weights.sum(-1), 1.0))
for m in (mask_window, mask_sinks):
    expect("np.allclose(sdpa(Q24, K24, V24, m, return_weights=True)[1].sum(-1), 1.0)", np.allclose(sdpa(Q24, K24, V24, m, return_weights=True)[1].sum(-1), 1.0))

# Empty rows: the default refuses, "zero" returns an exact zero row and leaves the others alone.
holey = mask_causal.copy()
holey[5] = -np.inf
print("default policy:", expect_raises(ValueError, sdpa, Q24, K24, V24, holey, match="empty_row='zero'")[:60], "...")
zero_out, zero_w = sdpa(Q24, K24, V24, holey, empty_row="zero", return_weights=True)
expect("np.all(zero_out[5] == 0)", np.all(zero_out[5] == 0))
expect("np.all(zero_w[5] == 0)", np.all(zero_w[5] == 0))
expect("np.isfinite(zero_out).all()", np.isfinite(zero_out).all())
expect("np.allclose(np.delete(zero_out, 5, axis=0), np.delete(out, 5, axis=0))", np.allclose(np.delete(zero_out, 5, axis=0), np.delete(out, 5, axis=0)))

# The sink's share of 128 equal keys, and the sink as an extra column with a zero value.
shares = {logit: math.exp(logit) / (128 + math.exp(logit)) for logit in (0.0, 2.0, 5.0)}
for logit, share in shares.items():
    print(f"sink logit {logit:.0f}: sink share of 128 equal keys = {100 * share:.2f}%")
REFERENCE.check("sink_share.logit_0", shares[0.0], rtol=1e-12)
REFERENCE.check("sink_share.logit_2", shares[2.0], rtol=1e-12)
REFERENCE.check("sink_share.logit_5", shares[5.0], rtol=1e-12)
flat = np.zeros((1, 128, 4))
_, flat_w = sdpa(np.zeros((1, 1, 4)), flat, np.ones((1, 128, 2)), sink=5.0, return_weights=True)
expect("abs((1 - flat_w.sum()) - shares[5.0]) < 1e-12", abs((1 - flat_w.sum()) - shares[5.0]), "<", 1e-12)

sink_logit = 1.3
out_sink, w_sink = sdpa(Q24, K24, V24, mask_causal, sink=sink_logit, return_weights=True)
extended = np.concatenate([Q24 @ K24.T / 4.0 + mask_causal, np.full((MASK_N, 1), sink_logit)], axis=1)  # d_k = 16
extended_w = np.exp(extended - extended.max(1, keepdims=True))
extended_w /= extended_w.sum(1, keepdims=True)
column_out = extended_w[:, :-1] @ V24  # the extra column's value vector is zero
print(f"sink vs extra zero-value column: max |difference| {np.abs(out_sink - column_out).max():.1e}")
expect("np.allclose(out_sink, column_out, atol=1e-12)", np.allclose(out_sink, column_out, atol=1e-12))
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
expect_raises(ValueError, sdpa, np.stack([Q24, Q24]), np.stack([K24, K24]), np.stack([V24] * 3), match="do not broadcast")
expect_raises(TypeError, sdpa, Q24, K24, V24, mask_causal == 0, match="additive_mask")
expect_raises(ValueError, sdpa, Q24, K24[:, :8], V24, match="d_k")
expect_raises(ValueError, sdpa, Q24, K24, V24, empty_row="nan", match="empty_row")
expect_raises(ValueError, sdpa, Q24, K24, V24, sink=np.zeros(3), match="sink")
expect_raises(ValueError, sdpa, Q24, K24 * np.nan, V24, match="finite")
expect_raises(TypeError, sdpa, Q24, K24, V24, return_weights="yes", match="return_weights")
for name, args in (("Q", (Q24[0], K24, V24)), ("K", (Q24, K24[0], V24)), ("V", (Q24, K24, V24[0]))):
    expect_raises(ValueError, sdpa, *args, match=f"{name} must have at least 2 dimensions")
for bad in (np.nan, np.inf):
    bad_mask = mask_causal.copy()
    bad_mask[3, 1] = bad  # one entry is enough
    expect_raises(ValueError, sdpa, Q24, K24, V24, bad_mask, match="not NaN or +inf")
two_holes = mask_causal.copy()
two_holes[[2, 5]] = -np.inf
expect_raises(ValueError, sdpa, Q24, K24, V24, two_holes, match="2 query row(s) have no allowed key (first at index [2])")
expect_raises(ValueError, sdpa, *(np.ones((2**17, 1)),) * 3, match="budget")  # a 2^17 x 2^17 score matrix is 128 GiB
expect("a Q and a mask that require grad (as torch makes them) are detached and read as arrays",
       np.array_equal(sdpa(torch.tensor(Q24, requires_grad=True), K24, V24, torch.tensor(mask_causal, requires_grad=True)), out))

# A wide score range, worked by hand (d_k = 1): rows [-1000, 1000, 40] and [200, -200, -8]. Shifting each row by
# its own max gives weights (0, 1, 0) and (1, 0, 0) to the last bit; the min overflows e^2000, one shared max
# underflows row 1 to 0 / 0.
Q_wide, K_wide, V_wide = np.array([[40.0], [-8.0]]), np.array([[-25.0], [25.0], [1.0]]), np.array([[1.0], [2.0], [3.0]])
expect("softmax over scores spanning [-1000, 1000] is shifted per row: outputs (2, 1) exactly", sdpa(Q_wide, K_wide, V_wide).tolist(), "==", [[2.0], [1.0]])
expect("the same with a sink logit of 0, which the scores outweigh by e^200 or more", sdpa(Q_wide, K_wide, V_wide, sink=0.0).tolist(), "==", [[2.0], [1.0]])
expect_raises(FloatingPointError, sdpa, np.ones((1, 2)), np.array([[1e308, 1e308], [1.0, 1.0]]), np.ones((2, 1)), match="Q @ K^T overflowed")


# %%
def plot_sink_share(n_keys, logits, language="en"):
    """The sink's share of a row against its logit, for n_keys keys that all score 0."""
    n_keys = require_int("n_keys", n_keys, minimum=1)
    logits = [require_real("logit", logit, minimum=-2, maximum=8) for logit in logits]  # dots on the drawn range
    grid = np.linspace(-2, 8, 121)
    fig, ax = plt.subplots(figsize=(5.6, 2.7))
    ax.plot(grid, 100 * np.exp(grid) / (n_keys + np.exp(grid)), color=Palette.PURPLE)
    for logit in logits:
        share = 100 * math.exp(logit) / (n_keys + math.exp(logit))
        ax.plot([logit], [share], "o", color=Palette.ORANGE)
        ax.annotate(f"{share:.2f}%", (logit, share), textcoords="offset points", xytext=(6, -12), fontsize=9)
    ax.axvline(math.log(n_keys), color=Palette.GREY, linestyle=":", linewidth=1)
    ax.set_xlabel(localized(language, "sink logit σ", "логит стока σ"))
    ax.set_ylabel(localized(language, "sink share, %", "доля стока, %"))
    ax.set_title(localized(language, f"A sink competes with {n_keys} keys", f"Сток конкурирует с {n_keys} ключами"))
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.18, top=0.88)
    return fig


show_figure(
    plot_sink_share(128, tuple(shares), language=LANGUAGE),
    "The curve is the share of probability the sink takes from a row of 128 keys that all score 0, as its logit "
    "grows (x-axis). Orange dots mark logits 0, 2 and 5. The dotted line at ln 128 is where the sink weighs as "
    "much as all tokens together: half the mass. Left of it the sink is a small leak; right of it, the head mostly "
    "abstains.",
)
report_section("Sink attention and empty rows", globals())


# %% [markdown]
# ## 4. Внимание с группировкой запросов и три реализации, которые должны совпасть
#
# **Идея.** Многоголовое внимание (MHA) даёт каждой голове запросов собственную голову ключей и значений.
# Внимание с одним общим ключом (multi-query attention, MQA, [Shazeer, 2019](https://arxiv.org/abs/1911.02150))
# делит одну KV-голову между всеми головами запросов; внимание с группировкой запросов (GQA,
# [Ainslie и др., 2023](https://arxiv.org/abs/2305.13245)) лежит посередине: $H$ голов запросов в $H_{kv}$
# группах, каждая группа читает одну KV-голову. Кэш уменьшается в $G$ раз, по размеру группы. («5% вычислений
# предобучения» из статьи о GQA относятся к *дообучению* (uptraining) существующего MHA-чекпойнта, T5-XXL,
# в GQA, а не к обучению GQA с нуля.) В коде GQA — это MHA, в которой каждая KV-голова **повторена** $G$ раз
# подряд на своём месте. Если же повторять их поочерёдно, $kv_0, kv_1, kv_0,
# kv_1, \dots$, получится тихая ошибка: формы правильные, а выходы неверные.
#
# $$g(h) = \left\lfloor \frac{h}{G} \right\rfloor, \qquad G = \frac{H}{H_{kv}}, \qquad o^{(h)} = \operatorname{softmax}\left(\frac{Q^{(h)} {K^{(g(h))}}^\top}{\sqrt{d_k}} + M\right) V^{(g(h))}$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $H$, $H_{kv}$ | головы запросов, головы ключей/значений | 8, 2 (gpt-oss: 64, 8) |
# | $G$ | размер группы: голов запросов на одну KV-голову | 4 |
# | $g(h)$ | KV-голова, которую читает голова запросов $h$ | головы 0-3 читают 0, головы 4-7 читают 1 |
# | $\lfloor x \rfloor$ | округление вниз | $\lfloor 5/4 \rfloor = 1$ |
#
# **Вручную.** $H = 8$, $H_{kv} = 2$: повторение даёт порядок KV-голов 0,0,0,0,1,1,1,1, а чередование —
# 0,1,0,1,0,1,0,1, так что голова запросов 1 читала бы KV-голову 1, хотя принадлежит группе 0.

# %% tags=["exercise"]
# Exercise 3: Повторите KV-головы для внимания с группировкой запросов. В x KV-головы лежат на оси -3;
# верните массив, в котором на этой оси в group раз больше голов и голова запросов h получает KV-голову
# h // group: соседние головы запросов делят одну KV-голову.
def repeat_kv_heads(x, group):
    """KV heads on axis -3, each repeated ``group`` times in place: query head h reads KV head h // group."""
    x = require_array("x", x, min_ndim=3)
    group = require_int("group", group, minimum=1)
    require_budget(f"{group} copies of each KV head", x.shape + (group,), itemsize=x.itemsize)
    # Your code here.
    raise NotImplementedError('Exercise 3: Повторите KV-головы для внимания с группировкой запросов. В x KV-головы лежат на оси -3; верните массив, в котором на этой оси в group раз больше голов и голова запросов h получает KV-голову h // group: соседние головы запросов делят одну KV-голову.')


# %%
check_exercise("Exercise 3", check_kv_repeat_contract, repeat_kv_heads, globals())


# %%
def gqa_attention(Q, K, V, mask=None, **options):
    """Grouped-query attention: Q [..., H, T_q, d_k] against K, V [..., H_kv, T_k, d]; options go to sdpa."""
    Q, K, V = (require_array(name, a, min_ndim=3) for name, a in (("Q", Q), ("K", K), ("V", V)))
    if K.shape[-3] != V.shape[-3] or Q.shape[-3] % K.shape[-3]:
        raise ValueError(f"the {Q.shape[-3]} query heads must be a multiple of the KV heads, which K {K.shape} and V {V.shape} must share")
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
expect("tiled_heads.shape == grouped.shape", tiled_heads.shape, "==", grouped.shape)
expect("not np.allclose(grouped, tiled_heads, atol=1e-3)", not np.allclose(grouped, tiled_heads, atol=1e-3))
expect_raises(ValueError, repeat_kv_heads, Kh, 0, match="group must be at least 1")
expect_raises(ValueError, gqa_attention, Qh[:7], Kh, Vh, match="multiple of the KV heads")
expect_raises(ValueError, gqa_attention, Qh[:, 0], Kh, Vh, match="dimensions")
expect_raises(ValueError, gqa_attention, Qh, Kh, Vh[:1], match="must share")
expect_raises(ValueError, repeat_kv_heads, Kh[0], 2, match="at least 3 dimensions")
expect_raises(ValueError, repeat_kv_heads, Kh, 10**9, match="budget")
expect("repeat_kv_heads(Kh, 1) is MHA: every head kept, in order", np.array_equal(repeat_kv_heads(Kh, 1), Kh))


# %%
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
            ax.plot([h, kv_x[k]], [1, 0], color=colors[(h // group) % 4], linewidth=1.6)
        ax.scatter(range(n_heads), [1] * n_heads, s=90, color=[colors[(h // group) % 4] for h in range(n_heads)], zorder=3)
        ax.scatter(kv_x, [0] * n_kv_heads, s=160, marker="s", color=[colors[k % 4] for k in range(n_kv_heads)], zorder=3)
        ax.set_yticks([0, 1], [localized(language, "KV", "KV"), localized(language, "query", "запросы")])
        ax.set_xticks(range(n_heads))
        ax.set_ylim(-0.3, 1.3)
        ax.set_title(title, fontsize=10)
        ax.grid(False)
    fig.subplots_adjust(wspace=0.25, left=0.08, right=0.99, bottom=0.12, top=0.86)
    return fig


show_figure(
    plot_head_mapping(H, H_KV, language=LANGUAGE),
    "Top row: 8 query heads, coloured by the group they belong to; bottom row: 2 KV heads. Each line says which KV "
    "head a query head reads. Left (repeat) every line stays inside its colour: heads 0-3 read KV head 0. Right "
    "(tile) lines cross between groups, so half the query heads read the other group's keys and values.",
)


# %% [markdown]
# **Три реализации, которые должны совпасть.** Наша `sdpa` на NumPy написана явно; построчная версия на
# PyTorch тоже явная; `F.scaled_dot_product_attention` — это библиотечный API, который волен выбрать
# слитое (fused) ядро. Они должны совпадать по выходам, по маскам (булева `attn_mask` в PyTorch использует
# True = *можно смотреть*, в противоположность маскам `nn.MultiheadAttention`; маска типа float аддитивна,
# как наша), по полностью замаскированным строкам (нули, PyTorch 2.5 или новее) и по градиентам. Начиная
# с PyTorch 2.5 этот API принимает и меньшее число KV-голов с `enable_gqa=True`.

# %%
def torch_sdpa_explicit(q, k, v, allowed=None):
    """Softmax attention in plain tensor operations; allowed is boolean (True = may attend), empty rows give 0."""
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
expect_close("the library and explicit attention agree on every row with a key", api_bool[..., rows, :], explicit[..., rows, :], rtol=1e-10, atol=1e-12)
probe = torch.from_numpy(rng.standard_normal(explicit.shape))
grads_explicit = torch.autograd.grad((explicit[..., rows, :] * probe[..., rows, :]).sum(), (q, k, v))
grads_api = torch.autograd.grad((api_bool[..., rows, :] * probe[..., rows, :]).sum(), (q, k, v))
for name, a, b in zip("qkv", grads_explicit, grads_api):
    expect_close(f"the gradient for {name} of explicit attention equals the library's", a, b, rtol=1e-9, atol=1e-11)
    expect(f"non-finite gradient for {name}", torch.isfinite(a).all())
print("NumPy sdpa, explicit torch and F.scaled_dot_product_attention agree on outputs, both mask kinds, empty rows and gradients")
expect_raises(TypeError, torch_sdpa_explicit, q, k, v, allowed.double(), match="boolean")
expect_raises(ValueError, torch_sdpa_explicit, q, k, v[..., :3, :], match="T_k")
expect_raises(ValueError, torch_sdpa_explicit, q[0, 0, 0], k, v, match="at least 2 dimensions")
expect_raises(TypeError, torch_sdpa_explicit, q.float(), k, v, match="one dtype")
expect_raises(TypeError, torch_sdpa_explicit, q, k, v, allowed.to("meta"), match="CPU")
# One head without a mask (2-D), and batch axes that only one of q, k, v (and the mask) carries, against the library.
q2, k2, v2 = q[0, 0].detach(), k[0, 0].detach(), v[0, 0].detach()
expect_close("unbatched, unmasked explicit attention equals the library", torch_sdpa_explicit(q2, k2, v2), F.scaled_dot_product_attention(q2, k2, v2), rtol=1e-12, atol=1e-12)
rows_allowed = allowed[None].expand(3, 5, 5).clone()
rows_allowed[:, 0, 0] = True  # no empty row, so the library's answer is the reference on any torch
for batched in range(3):
    parts = [t.expand(3, *t.shape) if i == batched else t for i, t in enumerate((q2, k2, v2))]  # (3, 5, d) or (5, d)
    expect_close(f"a batch axis on input {batched} only (q, k, v) broadcasts like the library", torch_sdpa_explicit(*parts, rows_allowed), F.scaled_dot_product_attention(*(t.expand(3, *t.shape[-2:]) for t in parts), attn_mask=rows_allowed), rtol=1e-12, atol=1e-12)

# is_causal=True aligns the triangle top-left: one decoding query (token 4 of 5) would see key 0 only.
q_last, k_all, v_all = q[..., 4:, :].detach(), k.detach(), v.detach()
top_left = F.scaled_dot_product_attention(q_last, k_all, v_all, is_causal=True)
expect_close("is_causal=True puts one query's whole weight on key 0", top_left, v_all[..., :1, :], rtol=1e-7, atol=1e-7)
bottom_right = F.scaled_dot_product_attention(q_last, k_all, v_all, attn_mask=torch.ones(1, 5, dtype=torch.bool))
expect("not torch.allclose(top_left, bottom_right)", not torch.allclose(top_left, bottom_right))
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

# %% [markdown]
# ## 5. Читаем карточку модели: калькулятор KV-кэша
#
# **Идея.** Карточка модели (или её `config.json`) сообщает всё, что нужно для расчёта кэша: число слоёв,
# KV-голов, ширину головы и то, какие слои смотрят на весь контекст, а какие — только на окно. Полный слой
# хранит каждый токен; слой с окном хранит не больше $w$ токенов и затем вытесняет самый старый, так что
# его кэш перестаёт расти. Наш разбираемый пример — gpt-oss-120b
# ([карточка модели](https://arxiv.org/abs/2508.10925), [код](https://github.com/openai/gpt-oss)):
# 36 слоёв, 64 головы запросов, 8 KV-голов ширины 64 и окно в 128 токенов на чётных слоях
# (0, 2, 4, ...), причём окно учитывает текущий токен; нечётные слои полные.
#
# $$\text{bytes}(n) = 2 \cdot H_{kv} \cdot d_h \cdot b \cdot \sum_{\kappa=1}^{L} \min\left(n, w_\kappa\right), \qquad w_\kappa = \infty \text{ for a full layer}$$
#
# | Обозначение | Смысл | gpt-oss-120b |
# |---|---|---|
# | $n$ | длина контекста | 131,072 |
# | $L$ | число слоёв | 36 |
# | $\kappa$, $w_\kappa$ | номер слоя и окно слоя $\kappa$ | 128 на чётных слоях, $\infty$ на нечётных |
# | $\min(n, w_\kappa)$ | сколько токенов хранит слой $\kappa$ | 128 или 131,072 |
# | $H_{kv}$, $d_h$, $b$ | KV-головы, ширина головы, байтов на число | 8, 64, 2 |
#
# **Вручную.** Один слой стоит $2 \cdot 8 \cdot 64 \cdot 2 = 2{,}048$ байт на хранимый токен. Если бы все
# 36 слоёв были полными, токен стоил бы $36 \cdot 2{,}048 = 73{,}728$ байт (72 KiB), а 128k токенов —
# 9.0 GiB. В реальном гибриде 18 полных слоёв хранят $18 \cdot 131{,}072 \cdot 2{,}048$ байт = 4.5 GiB,
# а 18 слоёв с окном — всего $18 \cdot 128 \cdot 2{,}048$ байт = 4.5 MiB, так что окна вдвое уменьшают кэш.
# На каждый токен контекста растут только 18 полных слоёв: $18 \cdot 2{,}048 = 36{,}864$ байта,
# **36 KiB на токен** для gpt-oss-120b; у gpt-oss-20b 24 слоя (12 полных, 12 с окном), и она растёт на
# **24 KiB на токен**. (Единицы: KiB и GiB — двоичные, $2^{10}$ и $2^{30}$ байт, ими меряют размеры на токен;
# GB — десятичный, $10^9$ байт, так продают память GPU. 4.5 GiB — это 4.83 GB.) Варианты, которые авторы
# карточки *не* выбрали: MHA (64 KV-головы) стоила бы 576 KiB на токен, MQA (1 KV-голова) — 9 KiB.

# %%
# The gpt-oss-120b configuration, embedded with its own checksum so a silent edit cannot slip through.
GPT_OSS_CONFIG_JSON = '{"num_hidden_layers": 36, "num_experts": 128, "experts_per_token": 4, "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880, "swiglu_limit": 7.0, "head_dim": 64, "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128, "initial_context_length": 4096, "rope_theta": 150000, "rope_scaling_factor": 32.0, "rope_ntk_alpha": 1, "rope_ntk_beta": 32}'
GPT_OSS_CONFIG_SHA256 = "063aaa98e012cac330d58d18471700f0b0eb90bb15c58fb227809d45090f3e65"
verify_sha256(GPT_OSS_CONFIG_JSON, GPT_OSS_CONFIG_SHA256, "the embedded gpt-oss-120b config")
gpt_oss = json.loads(GPT_OSS_CONFIG_JSON)
print({key: gpt_oss[key] for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "sliding_window")})
expect('(gpt_oss["num_hidden_layers"], gpt_oss["num_attention_heads"], gpt_oss["num_key_value_heads"], gpt_oss["head_dim"], gpt_oss["sliding_window"]) == (36, 64, 8, 64, 128)', (gpt_oss["num_hidden_layers"], gpt_oss["num_attention_heads"], gpt_oss["num_key_value_heads"], gpt_oss["head_dim"], gpt_oss["sliding_window"]), "==", (36, 64, 8, 64, 128))


# %% tags=["exercise"]
# Exercise 4: Посчитайте размер KV-кэша слой за слоем. В layer_windows по одному элементу на слой: None для слоя
# с полным вниманием (он хранит весь контекст, `context` токенов) или целое окно w (он хранит последние
# min(context, w) токенов). Каждый хранимый токен стоит один ключ и одно значение на каждую KV-голову.
# Верните точное число байт типа int.
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
    raise NotImplementedError('Exercise 4: Посчитайте размер KV-кэша слой за слоем. В layer_windows по одному элементу на слой: None для слоя с полным вниманием (он хранит весь контекст, `context` токенов) или целое окно w (он хранит последние min(context, w) токенов). Каждый хранимый токен стоит один ключ и одно значение на каждую KV-голову. Верните точное число байт типа int.')


# %%
check_exercise("Exercise 4", check_kv_cache_contract, kv_cache_bytes, globals())

# %%
context = REFERENCE.value("context_tokens")
layers, kv_heads, head_dim, window = (gpt_oss[k] for k in ("num_hidden_layers", "num_key_value_heads", "head_dim", "sliding_window"))
hybrid_windows = [window if layer % 2 == 0 else None for layer in range(layers)]  # even layers are windowed
rows = {
    "gpt_oss_gqa_all_full_equivalent": kv_bytes_per_token(layers, kv_heads, head_dim),
    "gpt_oss_mha_hypothetical": kv_bytes_per_token(layers, gpt_oss["num_attention_heads"], head_dim),
    "gpt_oss_mqa_hypothetical": kv_bytes_per_token(layers, 1, head_dim),
}
for key, per_token_bytes in rows.items():
    print(f"{key:34s} {per_token_bytes / KIB:6.0f} KiB/token   {per_token_bytes * context / GIB:6.2f} GiB at {context:,} tokens")
    REFERENCE.check(f"kv_rows.{key}", per_token_bytes)
full_layers = hybrid_windows.count(None)
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
for key, value in hybrid.items():
    REFERENCE.check(f"gpt_oss_hybrid.{key}", value)
expect('hybrid["full_bytes"] + hybrid["sliding_bytes"] == hybrid["hybrid_total_bytes"]', hybrid["full_bytes"] + hybrid["sliding_bytes"], "==", hybrid["hybrid_total_bytes"])
print(f"gpt-oss-120b at {context:,} tokens: full layers {hybrid['full_bytes'] / GIB:.2f} GiB + windowed layers "
      f"{hybrid['sliding_bytes'] / MIB:.1f} MiB = {hybrid['hybrid_total_bytes'] / GIB:.4f} GiB; all-full would be "
      f"{hybrid['all_full_bytes'] / GIB:.2f} GiB (x{hybrid['all_full_bytes'] / hybrid['hybrid_total_bytes']:.3f})")
# gpt-oss-20b: 24 layers, again alternating window and full (same source); only its 12 full layers grow.
print(f"gpt-oss-20b: its growing part costs {kv_bytes_per_token(12, 8, 64) / KIB:.0f} KiB per token")
REFERENCE.check("model_cards.gpt_oss_20b_growing_bytes_per_token", kv_bytes_per_token(12, 8, 64))
check_stated("gpt-oss-120b's growing cache (KiB per token)", kv_bytes_per_token(18, 8, 64) / KIB, 36, 0)
check_stated("gpt-oss-20b's growing cache (KiB per token)", kv_bytes_per_token(12, 8, 64) / KIB, 24, 0)
check_stated("the full layers of gpt-oss-120b at 128k (GB)", hybrid["full_bytes"] / GB, 4.83, 2)

# Two more cards: Llama-3.3-70B (80 layers, 8 KV heads of 128) and Qwen2.5-7B (28 layers, 4 KV heads of 128).
cards = {"llama_3_3_70b": (80, 8, 128), "qwen2_5_7b": (28, 4, 128)}
for name, (card_layers, card_kv, card_dim) in cards.items():
    per_token_bytes = kv_bytes_per_token(card_layers, card_kv, card_dim)
    total = kv_cache_bytes(context, [None] * card_layers, card_kv, card_dim)
    print(f"{name:14s} {per_token_bytes / KIB:4.0f} KiB/token -> {total / GIB:4.0f} GiB at {context:,} tokens")
    REFERENCE.check(f"model_cards.{name}_bytes_per_token", per_token_bytes)
    REFERENCE.check(f"model_cards.{name}_context_bytes", total)
expect_raises(ValueError, kv_cache_bytes, context, [], 8, 64, match="layer_windows")
expect_raises(ValueError, kv_cache_bytes, context, [None, 0], 8, 64, match="layer_windows[1]")
expect_raises(ValueError, kv_cache_bytes, 0, [None], 8, 64, match="context")
expect_raises(ValueError, kv_cache_bytes, context, [None], 8, 64, 0, match="bytes_per_value")
# By hand, 3 tokens of one-byte numbers, one KV head of width 1: the layers keep 3, 1, 2 and 3 tokens, a key and a value each.
expect("kv_cache_bytes(3, [None, 1, 2, 5], 1, 1, 1) == 2 * (3 + 1 + 2 + 3)", kv_cache_bytes(3, [None, 1, 2, 5], 1, 1, 1), "==", 18)
expect("kv_cache_bytes(1, [None], 1, 1, 1): one token, one layer", kv_cache_bytes(1, [None], 1, 1, 1), "==", 2)


# %% [markdown]
# **Латентный кэш в том же масштабе.** DeepSeek-V3 ([конфигурация](https://huggingface.co/deepseek-ai/DeepSeek-V3))
# кэширует на каждый слой и токен один латентный вектор из 512 чисел плюс один RoPE-ключ из 64 чисел, общий
# для всех 128 голов: $61 \cdot (512 + 64) \cdot 2 = 70{,}272$ байта. С чем это сравнивать? Соглашение
# таблицы 1 статьи DeepSeek-V2 берёт MHA-двойника с шириной головы $d_h = 128$ для ключей и значений:
# $2 \cdot 61 \cdot 128 \cdot 128 \cdot 2 = 3{,}997{,}696$ байт, в 56.9 раза больше. Но реальные ключи имеют
# ширину 192 (128 без позиции + 64 RoPE), а значения — 128, так что развёрнутый кэш на самом деле стоил бы
# $61 \cdot 128 \cdot (192 + 128) \cdot 2 = 4{,}997{,}120$ байт, примерно в 71 раз больше. «Верны» оба числа;
# называйте соглашение вместе с отношением. Раздел 13 показывает, как внимание работает прямо на латентных
# векторах, ни разу их не разворачивая.

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
REFERENCE.check("mla.bytes_per_token", latent_bytes)
REFERENCE.check("mla.mha_equivalent_bytes_per_token", v2_convention)
REFERENCE.check("mla.raw_element_ratio", v2_convention / latent_bytes, rtol=1e-15)
REFERENCE.check("mla.expanded_192_bytes_per_token", expanded_192)
REFERENCE.check("mla.expanded_192_ratio", expanded_192 / latent_bytes, rtol=1e-15)
expect_raises(ValueError, mla_bytes_per_token, 61, 0, 64, match="latent_dim")
expect("one layer caching a 1-number latent and a 1-number RoPE key in bytes: 2 bytes", mla_bytes_per_token(1, 1, 1, 1), "==", 2)


# %%
def plot_bytes_per_token(rows, title, language="en"):
    """Horizontal bars of cache bytes per token (log axis), one per design, labelled in KiB."""
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    labels, values = zip(*rows)
    fig, ax = plt.subplots(figsize=(7.4, 0.32 * len(rows) + 1.0))
    y = np.arange(len(rows))[::-1]
    families = {"gpt-oss": Palette.BLUE, "DeepSeek": Palette.PURPLE, "Llama": Palette.ORANGE, "Qwen": Palette.GREEN}
    family = [next((f for f in families if label.startswith(f)), None) for label in labels]
    ax.barh(y, values, color=[families.get(f, Palette.GREY) for f in family])
    shown = [f for f in families if f in family]
    ax.legend([matplotlib.patches.Patch(color=families[f]) for f in shown], shown, fontsize=8, loc="lower right",
              title=localized(language, "colour = model", "цвет = модель"), title_fontsize=8)
    for yy, value in zip(y, values):
        kib = localized(language, "KiB", "КиБ")
        ax.text(value * 1.08, yy, f"{value / 1024:,.0f} {kib}" if value >= 10 * 1024 else f"{value / 1024:,.1f} {kib}", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=9)
    ax.set_xlim(min(values) / 2, max(values) * 8)
    log_scale(ax, "x")
    ax.set_xlabel(localized(language, "KV-cache bytes per token, all layers (log scale)", "байт KV-кэша на токен, все слои (лог. шкала)"))
    ax.set_title(title)
    height = 0.32 * len(rows) + 1.0  # inches, as in figsize
    fig.subplots_adjust(left=0.36, right=0.98, bottom=0.5 / height, top=1 - 0.35 / height)
    return fig


growing_hybrid = hybrid["full_layers"] * hybrid["per_layer_bytes_per_token"]
card_rows = [
    (localized(LANGUAGE, "DeepSeek-V3 expanded, 192-wide keys", "DeepSeek-V3 развёрнутый, ключи 192"), expanded_192),
    (localized(LANGUAGE, "DeepSeek-V3 MHA twin, d_h = 128", "DeepSeek-V3 MHA-аналог, d_h = 128"), v2_convention),
    (localized(LANGUAGE, "gpt-oss-120b as MHA (64 KV heads)", "gpt-oss-120b как MHA (64 KV-головы)"), rows["gpt_oss_mha_hypothetical"]),
    ("Llama-3.3-70B (GQA, 8 KV)", kv_bytes_per_token(80, 8, 128)),
    (localized(LANGUAGE, "gpt-oss-120b all-full (GQA, 8 KV)", "gpt-oss-120b, все слои полные"), rows["gpt_oss_gqa_all_full_equivalent"]),
    (localized(LANGUAGE, "DeepSeek-V3 latent (MLA)", "DeepSeek-V3 латентный (MLA)"), latent_bytes),
    ("Qwen2.5-7B (GQA, 4 KV)", kv_bytes_per_token(28, 4, 128)),
    (localized(LANGUAGE, "gpt-oss-120b hybrid, growing part", "gpt-oss-120b гибрид, растущая часть"), growing_hybrid),
    (localized(LANGUAGE, "gpt-oss-120b as MQA (1 KV head)", "gpt-oss-120b как MQA (1 KV-голова)"), rows["gpt_oss_mqa_hypothetical"]),
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
# ## 6. Онлайн-softmax: один проход, точно
#
# **Идея.** Кажется, что softmax должен увидеть всю строку, прежде чем что-либо взвешивать: ему нужны
# максимум (для устойчивости) и сумма (для нормировки). Онлайн-softmax читает строку по тайлам и хранит
# текущие величины. [Milakov и Gimelshein (2018)](https://arxiv.org/abs/1805.02867) за один проход ведут
# две из них — наибольший логит на данный момент $m$ и накопленную сумму $e^{x - m}$, то есть $\ell$, — а
# значения взвешивают вторым проходом. Включить взвешенные значения в тот же проход в виде третьей текущей
# величины, числителя $u$, предложили [Rabe и Staats (2021)](https://arxiv.org/abs/2112.05682) и авторы
# FlashAttention; именно эту однопроходную форму строит данный раздел. Когда новый тайл поднимает максимум,
# всё накопленное до сих пор было отсчитано от старого, меньшего $m$; умножение на
# $\alpha = e^{m_{\text{old}} - m_{\text{new}}}$ пересчитывает его относительно нового. Ничего не
# приближается: итоговое $u / \ell$ совпадает со средним по softmax вплоть до последнего бита округления.
#
# $$m_t = \max\left(m_{t-1}, \max_{j \in t} x_j\right), \qquad \alpha_t = e^{m_{t-1} - m_t}$$
#
# $$\ell_t = \alpha_t \ell_{t-1} + \sum_{j \in t} e^{x_j - m_t}$$
#
# $$u_t = \alpha_t u_{t-1} + \sum_{j \in t} e^{x_j - m_t} v_j$$
#
# | Обозначение | Смысл | Пример после тайла 2 |
# |---|---|---|
# | $t$ | номер тайла; $j \in t$ пробегает элементы тайла | 2 |
# | $x_j$, $v_j$ | логит и его значение | тайл 2: (3, 0.5) и (3, 4) |
# | $m_t$ | текущий максимум ($m_0 = -\infty$) | 3 |
# | $\alpha_t$ | множитель пересчёта для накопленного до тайла $t$ ($\alpha_1 = 0$) | $e^{2 - 3} = 0.3679$ |
# | $\ell_t$, $u_t$ | текущая сумма и текущий числитель (`l` и `n` в коде) | 1.5853, 3.9669 |
# | $u_T / \ell_T$ | выход после последнего тайла $T$ | 2.5023 |
#
# **Вручную.** Логиты $(2, 1 \mid 3, 0.5)$ со значениями $(1, 2 \mid 3, 4)$. Тайл 1: $m = 2$,
# $\ell = e^0 + e^{-1} = 1.3679$, $u = 1 + 2e^{-1} = 1.7358$. Тайл 2 поднимает $m$ до 3, поэтому
# $\alpha = e^{-1} = 0.3679$: $\ell = 0.3679 \cdot 1.3679 + e^0 + e^{-2.5} = 1.5853$ и
# $u = 0.3679 \cdot 1.7358 + 3 + 4e^{-2.5} = 3.9669$. Выход $3.9669 / 1.5853 = 2.5023$ — то же, что softmax
# по всем четырём логитам сразу. Забудьте про $\alpha$, и слагаемые тайла 1 окажутся в $e$ раз тяжелее, чем нужно.

# %% tags=["exercise"]
# Exercise 5: Вычислите взвешенное по softmax среднее в потоковом режиме. Для каждого тайла обновите текущий максимум m
# (начальное значение -inf), множитель пересчёта alpha = exp(m_old - m_new), текущую сумму l и числитель n,
# как в формуле, и добавьте {"m": m, "alpha": alpha, "l": l, "n": n} в трассу. Верните (n / l, trace).
def online_softmax_dot(logit_tiles, value_tiles):
    """Softmax-weighted average of scalar values, streamed tile by tile; returns (output, per-tile trace)."""
    if len(logit_tiles) != len(value_tiles) or not len(logit_tiles):
        raise ValueError(f"need the same, non-zero number of logit and value tiles; got {len(logit_tiles)} and {len(value_tiles)}")
    tiles = []
    for t, (logits, values) in enumerate(zip(logit_tiles, value_tiles)):
        logits, values = require_array(f"logit_tiles[{t}]", logits, ndim=1), require_array(f"value_tiles[{t}]", values, ndim=1)
        if logits.shape != values.shape:
            raise ValueError(f"tile {t} has {logits.size} logits but {values.size} values")
        tiles.append((logits.astype(float), values.astype(float)))
    # Your code here.
    raise NotImplementedError('Exercise 5: Вычислите взвешенное по softmax среднее в потоковом режиме. Для каждого тайла обновите текущий максимум m (начальное значение -inf), множитель пересчёта alpha = exp(m_old - m_new), текущую сумму l и числитель n, как в формуле, и добавьте {"m": m, "alpha": alpha, "l": l, "n": n} в трассу. Верните (n / l, trace).')


# %%
check_exercise("Exercise 5", check_online_softmax_contract, online_softmax_dot, globals())

# %%
online_output, online_trace = online_softmax_dot([[2.0, 1.0], [3.0, 0.5]], [[1.0, 2.0], [3.0, 4.0]])
for t, state in enumerate(online_trace, start=1):
    print(f"after tile {t}: m = {state['m']:.0f}, alpha = {state['alpha']:.4f}, l = {state['l']:.4f}, n = {state['n']:.4f}")
print(f"output n / l = {online_output:.4f}")
REFERENCE.check("online_softmax_trace.l1", online_trace[0]["l"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.n1", online_trace[0]["n"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.alpha", online_trace[1]["alpha"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.l2", online_trace[1]["l"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.n2", online_trace[1]["n"], rtol=1e-12)
REFERENCE.check("online_softmax_trace.output", online_output, rtol=1e-12)
direct = np.exp(np.array([2.0, 1.0, 3.0, 0.5]) - 3.0)
expect("abs(online_output - direct @ np.array([1.0, 2.0, 3.0, 4.0]) / direct.sum()) < 1e-12", abs(online_output - direct @ np.array([1.0, 2.0, 3.0, 4.0]) / direct.sum()), "<", 1e-12)
expect_raises(ValueError, online_softmax_dot, [[1.0]], [[1.0], [2.0]], match="same")
expect_raises(ValueError, online_softmax_dot, [[1.0, 2.0]], [[1.0]], match="tile 0")

# A longer row: 48 logits in 12 tiles of 4. The running estimate n / l jumps while the max still moves.
row_logits, row_values = rng.normal(0.0, 2.0, 48), rng.normal(0.0, 1.0, 48)
_, long_trace = online_softmax_dot(np.split(row_logits, 12), np.split(row_values, 12))
exact_row = np.exp(row_logits - row_logits.max()) @ row_values / np.exp(row_logits - row_logits.max()).sum()
expect('abs(long_trace[-1]["n"] / long_trace[-1]["l"] - exact_row) < 1e-12', abs(long_trace[-1]["n"] / long_trace[-1]["l"] - exact_row), "<", 1e-12)


def plot_online_softmax(trace, exact, language="en"):
    """The running estimate n / l after each tile, against the exact softmax average; rescaled tiles marked."""
    exact = require_real("exact", exact)
    tiles = np.arange(1, len(trace) + 1)
    estimate = [state["n"] / state["l"] for state in trace]
    rescaled = [t for t, state in zip(tiles, trace) if 0 < state["alpha"] < 1]
    fig, ax = plt.subplots(figsize=(6.2, 2.7))
    ax.axhline(exact, color=Palette.GREY, linestyle="--", linewidth=1, label=localized(language, "exact softmax average", "точное среднее softmax"))
    ax.plot(tiles, estimate, "o-", color=Palette.BLUE, label=localized(language, "running n / l", "текущее n / l"))
    ax.plot(rescaled, [estimate[t - 1] for t in rescaled], "s", color=Palette.ORANGE, markersize=9, fillstyle="none",
            label=localized(language, "max grew: old sums rescaled by α < 1", "максимум вырос: старые суммы умножены на α < 1"))
    ax.set_xlabel(localized(language, "tiles read", "прочитано плиток"))
    ax.set_ylabel(localized(language, "output estimate", "оценка выхода"))
    ax.set_title(localized(language, "Online softmax: exact after the last tile", "Онлайн-softmax: точен после последней плитки"))
    ax.legend(fontsize=8, loc="upper right")
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.18, top=0.88)
    return fig


show_figure(
    plot_online_softmax(long_trace, exact_row, language=LANGUAGE),
    "The x-axis counts tiles of 4 logits read so far; the blue line is the running output n / l, the dashed line the "
    "softmax average of all 48 logits. Orange squares mark tiles whose maximum beat every earlier logit, where the "
    "old sums were multiplied by alpha. The line can move a lot early, but its last point lands on the dashed line "
    "exactly, not approximately.",
)
report_section("Online softmax", globals())


# %% [markdown]
# ## 7. Потоковое внимание по тайлам: идея FlashAttention на NumPy
#
# **Идея.** Применим онлайн-softmax к целым блокам. Разрежем запросы на блоки по $\tau$ строк, а ключи —
# на блоки по $\tau$ столбцов. Для одного блока запросов пройдём по блокам ключей; каждый шаг вычисляет
# небольшой тайл оценок $\tau \times \tau$, обновляет $m$, $\ell$ и накопитель выхода $O$ каждой строки и
# выбрасывает тайл. Матрица $n \times n$ никогда не существует
# ([FlashAttention, Dao и др., 2022](https://arxiv.org/abs/2205.14135); авторы сообщают об обучении на 15%
# быстрее рекорда MLPerf для BERT-large, в 3x быстрее на GPT-2 при 1K токенов и в 2.4x на Long Range Arena;
# FlashAttention-2 ещё примерно в 2x быстрее, [Dao, 2023](https://arxiv.org/abs/2307.08691)). Маски
# достаются даром благодаря блочной структуре: при каузальной маске блоки ключей, целиком лежащие в будущем
# блока запросов, не вычисляются вовсе; при окне — и блоки, целиком оставшиеся позади него. Сама маска
# нужна только блокам, через которые проходит её граница. Декодирование с кэшем добавляет одну деталь:
# когда запросы — это последние $T_q$ из $T_k$ токенов, запрос $i$ стоит на абсолютной позиции $p_0 + i$,
# где $p_0$ — позиция первого нового запроса (аргумент `query_start`), и проверки каузальности и окна
# должны использовать именно эту позицию.
#
# Порядок циклов — **как во FlashAttention-2**: блоки запросов во внешнем цикле, блоки ключей во внутреннем,
# так что $m$, $\ell$ и $O$ каждого блока запросов остаются локальными, а деление на $\ell$ происходит
# **один раз**, после последнего блока ключей, вместо пересчёта выхода на каждом шаге, как во FlashAttention-1.
#
# $$S = \frac{Q_b K_c^\top}{\sqrt{d_k}} + M_{bc}, \qquad m' = \max\left(m, \operatorname{rowmax} S\right)$$
#
# $$\alpha = e^{m - m'}, \qquad P = e^{S - m'}$$
#
# $$\ell' = \alpha \ell + \operatorname{rowsum} P, \qquad O' = \alpha O + P V_c$$
#
# | Обозначение | Смысл | Форма |
# |---|---|---|
# | $Q_b$ | блок запросов $b$ | $\tau \times d_k$ |
# | $K_c$, $V_c$ | блок ключей и значений $c$ | $\tau \times d_k$, $\tau \times d_v$ |
# | $M_{bc}$ | маска, ограниченная блоком (каузальная, окно или заданная аддитивная маска) | $\tau \times \tau$ |
# | $m$, $\ell$ | текущие максимум и сумма для каждой строки | $\tau$ |
# | $O$ | накопитель выхода для каждой строки (`acc` в коде); выход равен $O / \ell$ после последнего блока | $\tau \times d_v$ |
# | $p_0$ | абсолютная позиция первого запроса (`query_start`); 0 для промпта, длина кэша при декодировании | скаляр |
# | $\alpha$, $P$ | множитель пересчёта для каждой строки и ненормированные веса тайла | $\tau$, $\tau \times \tau$ |
#
# **Вручную.** При $n = 2048$ и $\tau = 128$ получается $16 \times 16 = 256$ пар блоков. Каузальной маске
# нужны только пары на диагонали и под ней: $16 \cdot 17 / 2 = 136$, из них маскирования требуют 16
# диагональных. Окно в 256 оставляет не больше 3 блоков ключей на блок запросов: 1 для первого блока
# запросов, 2 для второго и по 3 для каждого из остальных 14, всего 45. Каждый тайл содержит
# $128^2$ чисел, 64 KiB во float32, против 16 MiB для полной матрицы во float32. (Сетка блоков зависит
# только от $n / \tau$ и $w / \tau$, поэтому код ниже рисует её для $n = 1024$, $\tau = 64$,
# $w = 128$ — та же сетка $16 \times 16$ за четверть стоимости.)

# %% [markdown]
# Вы построите внимание по тайлам в три шага, у каждого своя проверка: **простые тайлы** (без маски:
# онлайн-обновление на целых блоках), затем **каузальный пропуск** (какие тайлы ключей можно не вычислять
# и какой один диагональный тайл на блок нуждается в маске), затем **смещения и окна** (запросы, стоящие
# после закэшированного префикса, и окна, которые пропускают тайлы ещё и слева).

# %%
def _refuse_overflow(Q, K, V):
    """Refuse Q, K, V whose scores (|q . k| <= d_k max|q| max|k|) or values could pass 2^500 and overflow the sums."""
    if Q.shape[1] * float(np.abs(Q).max()) * float(np.abs(K).max()) > 2.0**500 or float(np.abs(V).max()) > 2.0**500:
        raise ValueError("entries of Q, K or V are so large that scores or outputs could overflow; rescale them first")


# %% tags=["exercise"]
# Exercise 6: Простые тайлы. Для каждого блока из tile_size запросов храните для каждой строки m (начало -inf),
# l (начало 0) и накопитель O (нули, ширина d_v). Для каждого блока из tile_size ключей: вычислите
# тайл оценок Q_b K_c^T / sqrt(d_k), затем онлайн-обновление по формуле выше. После последнего
# блока ключей верните O / l для каждого блока запросов. Никогда не стройте массив T_q x T_k.
def tiled_attention_plain(Q, K, V, *, tile_size=128):
    """Unmasked softmax attention, streamed over (query block, key block) tiles: output [T_q, d_v]."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"need Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]; got {Q.shape}, {K.shape}, {V.shape}")
    tile_size = require_int("tile_size", tile_size, minimum=1)
    _refuse_overflow(Q, K, V)
    # Your code here.
    raise NotImplementedError('Exercise 6: Простые тайлы. Для каждого блока из tile_size запросов храните для каждой строки m (начало -inf), l (начало 0) и накопитель O (нули, ширина d_v). Для каждого блока из tile_size ключей: вычислите тайл оценок Q_b K_c^T / sqrt(d_k), затем онлайн-обновление по формуле выше. После последнего блока ключей верните O / l для каждого блока запросов. Никогда не стройте массив T_q x T_k.')


# %%
check_exercise("Exercise 6", check_plain_tiled_contract, tiled_attention_plain, globals())


# %% tags=["exercise"]
# Exercise 7: Каузальный пропуск. То же, что в упражнении 6, но запрос i читает ключи 0..i. Для блока запросов
# [q0, q1) посещайте только тайлы ключей, начинающиеся с k0 <= q1 - 1 (более поздние целиком в будущем);
# внутри тайла, через который проходит диагональ, перед взятием максимума ставьте -inf в оценки ключей,
# стоящих после запроса. Верните (output, tiles_computed) — число вычисленных тайлов оценок.
def causal_tiled_attention(Q, K, V, *, tile_size=128):
    """Causal softmax attention over tiles, skipping tiles above the block diagonal: (output, tiles_computed)."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"need Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]; got {Q.shape}, {K.shape}, {V.shape}")
    tile_size = require_int("tile_size", tile_size, minimum=1)
    _refuse_overflow(Q, K, V)
    # Your code here.
    raise NotImplementedError('Exercise 7: Каузальный пропуск. То же, что в упражнении 6, но запрос i читает ключи 0..i. Для блока запросов [q0, q1) посещайте только тайлы ключей, начинающиеся с k0 <= q1 - 1 (более поздние целиком в будущем); внутри тайла, через который проходит диагональ, перед взятием максимума ставьте -inf в оценки ключей, стоящих после запроса. Верните (output, tiles_computed) — число вычисленных тайлов оценок.')


# %%
check_exercise("Exercise 7", check_causal_tiled_contract, causal_tiled_attention, globals())

# %%
gen_tiles = np.random.default_rng(11)
Qt, Kt, Vt = (gen_tiles.standard_normal((64, 8)) for _ in range(3))
plain_out, (causal_out, causal_tiles) = tiled_attention_plain(Qt, Kt, Vt, tile_size=16), causal_tiled_attention(Qt, Kt, Vt, tile_size=16)
print(f"plain tiles vs dense: {np.abs(plain_out - sdpa(Qt, Kt, Vt)).max():.1e}; causal tiles vs dense: "
      f"{np.abs(causal_out - sdpa(Qt, Kt, Vt, make_mask(64))).max():.1e}; {causal_tiles} of {(64 // 16) ** 2} tiles computed")
if not causal_tiles == 4 * 5 // 2:
    raise ValueError(f"a 4 x 4 block grid has 10 tiles on or below the diagonal; counted {causal_tiles}")
expect("plain tiles equal dense attention", np.abs(plain_out - sdpa(Qt, Kt, Vt)).max(), "<", 1e-12)
expect("causal tiles equal dense causal attention", np.abs(causal_out - sdpa(Qt, Kt, Vt, make_mask(64))).max(), "<", 1e-12)
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


# %% tags=["exercise"]
# Exercise 8: Смещения и окна. Всё остальное во внимании по тайлам уже написано за вас: сток, аддитивная маска,
# проверки переполнения и пустые строки. Заполните два отмеченных места. (1) Диапазон ключей для блока
# запросов, чьи запросы стоят на абсолютных позициях first..last (= query_start + q0 ..
# query_start + q1 - 1): при каузальном режиме (causal=True) — ни одного ключа после last; при окне — ни одного ключа до
# first - window + 1. (2) Внутри тайла, через который проходит граница, заблокируйте будущее и, при окне,
# ключи с query_pos - key_pos >= window.
def tiled_attention(Q, K, V, mask=None, *, tile_size=128, sink=None, empty_row="error", causal=False, window=None, query_start=0):
    """Exact softmax attention streamed over (query block, key block) pairs, never holding a T_q x T_k matrix.

    Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]; mask [T_q, T_k] additive (optional). With causal=True, query i
    sits at absolute position query_start + i and reads keys 0 .. that position (the last `window` of them
    if window is set). sink is one scalar logit with a zero value. Float16 inputs are computed in float32.
    """
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
            raise NotImplementedError('Exercise 8: Смещения и окна. Всё остальное во внимании по тайлам уже написано за вас: сток, аддитивная маска, проверки переполнения и пустые строки. Заполните два отмеченных места. (1) Диапазон ключей для блока запросов, чьи запросы стоят на абсолютных позициях first..last (= query_start + q0 .. query_start + q1 - 1): при каузальном режиме (causal=True) — ни одного ключа после last; при окне — ни одного ключа до first - window + 1. (2) Внутри тайла, через который проходит граница, заблокируйте будущее и, при окне, ключи с query_pos - key_pos >= window.')
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
                    raise NotImplementedError('Exercise 8: Смещения и окна. Всё остальное во внимании по тайлам уже написано за вас: сток, аддитивная маска, проверки переполнения и пустые строки. Заполните два отмеченных места. (1) Диапазон ключей для блока запросов, чьи запросы стоят на абсолютных позициях first..last (= query_start + q0 .. query_start + q1 - 1): при каузальном режиме (causal=True) — ни одного ключа после last; при окне — ни одного ключа до first - window + 1. (2) Внутри тайла, через который проходит граница, заблокируйте будущее и, при окне, ключи с query_pos - key_pos >= window.')
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
expect_raises(FloatingPointError, tiled_attention, Q_over, K_over, np.ones((2, 1)), match="Q @ K^T overflowed")
expect("huge but orthogonal q and k score 0 and are computed", tiled_attention(np.array([[1e200, 0.0]]), np.array([[0.0, 1e200]]), np.ones((1, 1))).tolist(), "==", [[1.0]])

# %% [markdown]
# **Закэшированные префиксы и декодирование порциями.** Во время генерации ключи и значения первых токенов
# уже лежат в кэше, и вычисляются только новые запросы. Ниже 9 токенов разбиты как «префикс из 5, затем
# 1 новый токен» и «префикс из 4, затем 3 новых токена»; с `query_start` новые строки совпадают с
# соответствующими строками полного внимания, с окном и без него. Отрицательный тест строит маску по
# *локальным* позициям (новый запрос на позиции 0), и она блокирует все закэшированные ключи, кроме первого.

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
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, query_start=2, match="causal=True")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, window=3, match="causal=True")
expect_raises(ValueError, tiled_attention, Qp, Kp[:, :5], Vp, match="d_k")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, tile_size=0, match="tile_size")
expect_raises(TypeError, tiled_attention, Qp, Kp, Vp, causal=1, match="causal")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, causal=True, window=0, match="window")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, causal=True, query_start=-1, match="query_start")
expect("tiled_attention's default tile is the tau = 128 of the text", tiled_attention.__kwdefaults__["tile_size"], "==", 128)
expect("window=1 with tiles of 1: each query reads only its own key, so the output is V", np.abs(tiled_attention(Qp, Kp, Vp, tile_size=1, causal=True, window=1) - Vp).max(), "<", 1e-12)
expect("tiles of 1 with an additive mask equal dense", np.abs(tiled_attention(Qp, Kp, Vp, make_mask(9, 3), tile_size=1) - sdpa(Qp, Kp, Vp, make_mask(9, 3))).max(), "<", 1e-12)
holey40 = make_mask(n40)
holey40[5] = -np.inf
expect_raises(ValueError, tiled_attention, Q40, K40, V40, holey40, tile_size=7, match="query 5 has no allowed key")
expect_raises(ValueError, tiled_attention, Qp[:2], Kp[:3], Vp[:3], causal=True, window=2, query_start=6, match="no allowed key")

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


# %%
def block_kinds(allowed, tile):
    """Classify each (query block, key block) of a boolean mask: 0 skipped, 1 partly allowed, 2 fully allowed."""
    allowed, tile = as_numpy("allowed", allowed), require_int("tile", tile, minimum=1)
    if allowed.dtype != bool:
        raise TypeError(f"allowed must be a boolean array (True = may read), got dtype {allowed.dtype}")
    if allowed.ndim != 2 or 0 in allowed.shape:
        raise ValueError(f"allowed must be a non-empty [T_q, T_k] mask, got shape {allowed.shape}")
    rows, cols = -(-allowed.shape[0] // tile), -(-allowed.shape[1] // tile)
    kinds = np.zeros((rows, cols), dtype=int)
    for b in range(rows):
        for c in range(cols):
            block = allowed[b * tile:(b + 1) * tile, c * tile:(c + 1) * tile]
            kinds[b, c] = 2 if block.all() else (1 if block.any() else 0)
    return kinds


def plot_block_kinds(panels, language="en"):
    """One grid per (title, kinds): which blocks tiled attention skips, masks, or computes whole."""
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap([Palette.PAPER, Palette.YELLOW, Palette.BLUE])
    fig, axes = plt.subplots(1, len(panels), figsize=(3.1 * len(panels), 2.9))
    for ax, (title, kinds) in zip(axes, panels):
        ax.imshow(kinds, cmap=cmap, vmin=0, vmax=2, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(localized(language, "key block", "блок ключей"))
        ax.set_xticks([]), ax.set_yticks([])
        ax.grid(False)
    axes[0].set_ylabel(localized(language, "query block", "блок запросов"))
    fig.text(0.5, 0.02, localized(language, "grey: skipped    yellow: computed and masked    blue: computed, no mask needed",
                                  "серый: пропущен    жёлтый: считается с маской    синий: считается без маски"),
             ha="center", fontsize=9, color=Palette.MUTED)
    fig.subplots_adjust(wspace=0.15, left=0.06, right=0.99, bottom=0.16, top=0.88)
    return fig


blocks_causal = block_kinds(np.isfinite(make_mask(1024)), 64)  # the same 16 x 16 grid as n = 2048, tile 128
blocks_window = block_kinds(np.isfinite(make_mask(1024, window=128)), 64)  # ... and as a window of 256 there
expect_raises(ValueError, block_kinds, np.isfinite(make_mask(8)), 0, match="tile")
expect_raises(TypeError, block_kinds, make_mask(8), 2, match="boolean")
expect_raises(ValueError, block_kinds, np.ones(4, dtype=bool), 2, match="non-empty [T_q, T_k]")
expect_raises(ValueError, block_kinds, np.ones((0, 4), dtype=bool), 2, match="non-empty [T_q, T_k]")
# By hand: a 5 x 3 causal mask in 2 x 2 blocks (the last row and column of blocks are partial): rows of blocks read
# [partly, skipped], [full, full], [full, full]. Tile 1 gives the mask itself; one query row gives one row of blocks.
expect("block_kinds(np.tri(5, 3, dtype=bool), 2)", block_kinds(np.tri(5, 3, dtype=bool), 2).tolist(), "==", [[1, 0], [2, 2], [2, 2]])
expect("block_kinds(np.tri(3, dtype=bool), 1)", block_kinds(np.tri(3, dtype=bool), 1).tolist(), "==", [[2, 0, 0], [2, 2, 0], [2, 2, 2]])
expect("block_kinds(np.ones((1, 5), dtype=bool), 2)", block_kinds(np.ones((1, 5), dtype=bool), 2).tolist(), "==", [[2, 2, 2]])
expect("a boolean tensor is read like the array", block_kinds(torch.from_numpy(np.tri(5, 3, dtype=bool)), 2).tolist(), "==", [[1, 0], [2, 2], [2, 2]])
for name, kinds in (("causal", blocks_causal), ("window 2 tiles", blocks_window)):
    print(f"16 x 16 blocks, {name:14s}: {int((kinds > 0).sum()):3d} of {kinds.size} computed, {int((kinds == 1).sum())} of them masked")
REFERENCE.check("tiled.blocks_causal_2048_128", int((blocks_causal > 0).sum()))
REFERENCE.check("tiled.blocks_window_256_2048_128", int((blocks_window > 0).sum()))
show_figure(
    plot_block_kinds([(localized(LANGUAGE, "causal, 16 x 16 blocks", "каузальная, 16 x 16 блоков"), blocks_causal),
                      (localized(LANGUAGE, "window of 2 blocks", "окно в 2 блока"), blocks_window)], language=LANGUAGE),
    "Each square is one block of the score matrix (128 x 128 when n = 2048): rows are query blocks, columns key blocks. "
    "Grey blocks are never computed, yellow ones straddle the mask boundary and are masked inside, blue ones are "
    "computed with no mask at all. Causal attention skips almost half the blocks; a window skips all but a band.",
)
report_section("Tiled attention", globals())


# %% [markdown]
# ## 8. Что даёт разбиение на тайлы: память, растущая как $n$, и меньше работы
#
# **Идея.** Плотное внимание держит в памяти всю матрицу оценок и обычно ещё несколько временных массивов
# того же размера (замаскированные оценки, их экспоненты, веса): память $\propto n^2$. Внимание по тайлам
# держит выход, текущие величины каждой строки и один тайл за раз: память $\propto n$. Пропуск пустых
# блоков к тому же сокращает арифметику, а с тайлом, который помещается в кэш процессора, работать быстрее,
# чем с матрицей, которая не помещается. (На GPU выигрыш того же рода, но больше: тайлы живут в быстрой
# памяти на кристалле, а время определяют обращения к основной памяти.)
#
# $$\text{dense scores} = n^2 \cdot b, \qquad \text{one tile} = \tau^2 \cdot b, \qquad \frac{\text{dense}}{\text{tile}} = \left(\frac{n}{\tau}\right)^2$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $n$ | длина последовательности | 4,096 или 8,192 |
# | $\tau$ | размер тайла (`tile_size`) | 128 |
# | $b$ | байтов на оценку | 4 (float32) |
#
# **Вручную.** Во float32 одна матрица оценок $4096 \times 4096$ занимает $2^{12} \cdot 2^{12} \cdot 4 = 64$ MiB
# на голову, $8192^2$ — 256 MiB, а один тайл $128 \times 128$ — 64 KiB: в 1,024 и в 4,096 раз
# меньше. Ниже мы измеряем реальные пики с помощью `tracemalloc` (NumPy сообщает ему о своих буферах)
# во float64, с учётом выхода.

# %%
def peak_traced_bytes(function, *args, **kwargs):
    """Peak bytes that Python and NumPy allocate while ``function`` runs (tracemalloc), its output included."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    tracemalloc.start()
    try:
        function(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def best_seconds(function, *args, repeats=3, **kwargs):
    """The fastest of ``repeats`` wall-clock runs of ``function`` (time.perf_counter)."""
    repeats = require_int("repeats", repeats, minimum=1, maximum=100)  # a timing, not a benchmark run
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


score_bytes = {f"n_{n}_fp32_bytes": n * n * 4 for n in (4096, 8192)}
score_bytes["tile_128_fp32_bytes"] = 128 * 128 * 4
for key, value in score_bytes.items():
    REFERENCE.check(f"score_matrix.{key}", value)

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
expect("dense_growth > 3.5", dense_growth, ">", 3.5)
expect("tiled_growth < 2.2", tiled_growth, "<", 2.2)
expect('memory["dense"][-1] > 10 * memory["tiled"][-1]', memory["dense"][-1], ">", 10 * memory["tiled"][-1])
# The two measuring tools, on functions whose answer is known: a 1 MiB buffer, and a run that is slow only once.
expect("a function that builds a 1 MiB array peaks at 1 MiB or more", peak_traced_bytes(np.ones, 2**17), ">=", 2**20)
timed_runs = []


def slow_first_run():
    """Sleep 20 ms on the first call only: its best time must be far below 20 ms."""
    timed_runs.append(None)
    time.sleep(0.02 if len(timed_runs) == 1 else 0.0)


expect("best_seconds keeps the fastest of its runs", best_seconds(slow_first_run), "<", 0.01)
expect("best_seconds runs the function 3 times by default", len(timed_runs), "==", 3)
expect("best_seconds with repeats=1 runs it once", (best_seconds(slow_first_run, repeats=1), len(timed_runs))[1], "==", 4)
expect("best_seconds accepts up to 100 repeats", best_seconds(int, repeats=100), ">=", 0.0)
expect_raises(ValueError, best_seconds, slow_first_run, repeats=0, match="repeats")
expect_raises(ValueError, best_seconds, slow_first_run, repeats=101, match="repeats")


# %%
def plot_memory_vs_length(lengths, memory, language="en"):
    """Measured peak memory of dense and tiled attention against sequence length, with the n x n matrix for scale."""
    n = np.array(lengths, dtype=float)
    dense, tiled = (np.round(np.array(memory[kind]) / MIB, 2) for kind in ("dense", "tiled"))  # as printed: bytes jitter a little
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    ax.plot(n, dense, "o-", color=Palette.RED, label=localized(language, "dense, measured", "плотное, измерено"))
    ax.plot(n, tiled, "o-", color=Palette.GREEN, label=localized(language, "tiled, measured", "плиточное, измерено"))
    ax.plot(n, n * n * 8 / MIB, ":", color=Palette.GREY, label=localized(language, "one n × n float64 matrix", "одна матрица n × n, float64"))
    log_scale(ax, "both")
    ax.set_xticks(n, [str(int(v)) for v in n])
    ax.set_xlabel(localized(language, "sequence length n (d = 64, causal)", "длина последовательности n (d = 64, каузально)"))
    ax.set_ylabel(localized(language, "peak memory, MiB", "пик памяти, МиБ"))
    ax.set_title(localized(language, "Dense grows like n², tiled like n", "Плотное растёт как n², плиточное как n"))
    ax.legend(fontsize=8)
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.17, top=0.89)
    return fig


show_figure(
    plot_memory_vs_length(LENGTHS, memory, language=LANGUAGE),
    "Both axes are logarithmic, so a line's slope is the power of n. Dense attention (red) has slope 2: its peak "
    "quadruples when n doubles and sits a few n x n float64 matrices (dotted) high. Tiled attention (green) is the "
    "output, which grows like n, plus tile buffers of fixed size, so its slope is at most 1 and flatter at small n. "
    "The gap between red and green widens with every doubling.",
)
report_section("Memory and speed of tiled attention", globals())


# %% [markdown]
# **Скорость.** Последний столбец таблицы сравнивает лучшее из 3 замеров времени: версия по тайлам вычисляет
# примерно половину блоков (каузальная маска), кусками размером с кэш, поэтому на CPU она обгоняет плотное
# внимание на NumPy, несмотря на свой цикл на Python. Время выполнения меняется от запуска к запуску и от
# машины к машине, поэтому ноутбук печатает только вердикт; замер в следующем подразделе печатает отношения.
#
# ### Чего не покажет NumPy: FlashAttention — это про иерархию памяти
#
# **Идея.** У GPU есть два вида памяти, которые здесь важны. **HBM** — большая память вне кристалла:
# у NVIDIA H100 SXM 80 GB HBM3 с пропускной способностью 3.35 TB/s. **SRAM** — маленькая память на
# кристалле рядом с арифметическими блоками: 228 KB разделяемой памяти на каждый потоковый
# мультипроцессор, а их 132, всего около 30 MB
# ([спецификация NVIDIA H100](https://www.nvidia.com/en-us/data-center/h100/) и
# [архитектура Hopper](https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/)).
# NVIDIA не публикует пропускную способность SRAM; статья о FlashAttention оценивает её примерно в 19 TB/s
# на A100 — на порядок выше, чем 1.5–2.0 TB/s у её HBM. Обычное внимание записывает
# оценки $n \times n$ в HBM, читает их обратно для softmax, записывает веса, читает их для
# $PV$: его ограничивает трафик HBM, а не арифметика. Вклад FlashAttention в том, чтобы сосчитать
# этот трафик (его *IO-сложность*) и сократить его, а не в том, чтобы делать меньше умножений.
#
# $$\text{standard: } \Theta\!\left(n d + n^2\right) \text{ HBM accesses}, \qquad \text{FlashAttention: } \Theta\!\left(\frac{n^2 d^2}{M_{\text{sram}}}\right)$$
#
# $$B_c = \left\lceil \frac{M_{\text{sram}}}{4d} \right\rceil, \qquad B_r = \min\left(B_c, d\right)$$
#
# | Обозначение | Смысл | H100, 16 бит |
# |---|---|---|
# | $n$, $d$ | длина последовательности, ширина головы | 8,192, 128 |
# | $M_{\text{sram}}$ | объём SRAM в числах (не маска) | 228 KB / 2 байта = 116,736 |
# | $B_c$, $B_r$ | размеры блоков ключей и запросов во FlashAttention ($\tau$ из раздела 7), выбранные так, чтобы $Q_b$, $K_c$, $V_c$ и $O$ помещались в $M_{\text{sram}}$ | 228, 128 |
#
# **Вручную.** $n^2 d^2 / M_{\text{sram}} = n^2 \cdot 16{,}384 / 116{,}736 \approx 0.14\,n^2$: примерно в 7 раз
# меньше обращений к HBM, чем $n^2$ для одной только матрицы оценок, и преимущество растёт с $M_{\text{sram}}$ и
# уменьшается с ростом $d$. (Θ скрывает константы; ячейка вычисляет только старшие члены.)
#
# Историю завершают ещё три идеи. **Повторное вычисление** (recomputation): обратному проходу нужны веса
# внимания, но FlashAttention хранит только log-sum-exp каждой строки, $m + \log \ell$ (одно число на
# запрос), и заново вычисляет тайлы оценок из $Q$, $K$ и этого числа, обменивая дешёвую арифметику на
# дорогой трафик HBM. **FlashAttention-2** ([Dao, 2023](https://arxiv.org/abs/2307.08691))
# выносит блоки запросов во внешний цикл, так что $m$, $\ell$ и $O$ каждого блока остаются на кристалле, а
# деление на $\ell$ происходит один раз в конце — ровно порядок циклов из раздела 7, и примерно в 2x
# быстрее FlashAttention. **FlashAttention-3** ([Shah и др., 2024](https://arxiv.org/abs/2407.08608))
# нацелена на GPU Hopper (H100): она асинхронно совмещает перемещение данных с матричным умножением
# и добавляет FP8, что даёт скорость в 1.5–2.0 раза выше, чем у FlashAttention-2; линия продолжается ядрами
# для каждого нового поколения GPU, а PyTorch сам выбирает среди таких бэкендов (см. ниже).

# %%
def attention_hbm_accesses(n, d, sram_numbers):
    """Leading-order HBM accesses, in numbers: standard attention n d + n^2, FlashAttention n^2 d^2 / M."""
    n, d, sram_numbers = (require_int(name, v, minimum=1) for name, v in (("n", n), ("d", d), ("sram_numbers", sram_numbers)))
    return {"standard": n * d + n * n, "flash": n * n * d * d / sram_numbers, "inputs": 4 * n * d}


H100_SRAM_NUMBERS = 228 * 1024 // 2  # 228 KB of shared memory per SM, 16-bit numbers
block_c = math.ceil(H100_SRAM_NUMBERS / (4 * 128))
block_r = min(block_c, 128)
io_8k = attention_hbm_accesses(8_192, 128, H100_SRAM_NUMBERS)
print(f"M_sram = {H100_SRAM_NUMBERS:,} numbers, d = 128: B_c = {block_c}, B_r = {block_r}")
print(f"n = 8,192: standard {io_8k['standard']:.3g} accesses, FlashAttention {io_8k['flash']:.3g}: x{io_8k['standard'] / io_8k['flash']:.1f} fewer")
check_stated("B_c", block_c, 228, 0)
check_stated("the FlashAttention factor n^2 d^2 / M_sram over n^2", 128 * 128 / H100_SRAM_NUMBERS, 0.14, 2)
check_stated("the saving at n = 8,192 (x)", io_8k["standard"] / io_8k["flash"], 7, 0)
expect_raises(ValueError, attention_hbm_accesses, 0, 128, 1024, match="n")
expect("4 tokens, d = 2, M = 8 by hand: n d + n² = 24, n² d² / M = 8, 4 n d = 32", attention_hbm_accesses(4, 2, 8), "==", {"standard": 24, "flash": 8.0, "inputs": 32})
expect("the smallest problem, n = d = M = 1, is accepted", attention_hbm_accesses(1, 1, 1), "==", {"standard": 2, "flash": 1.0, "inputs": 4})


def plot_hbm_accesses(lengths, d, sram_numbers, language="en"):
    """Log-log lines: leading-order HBM accesses of standard attention and of FlashAttention against n."""
    rows = [attention_hbm_accesses(n, d, sram_numbers) for n in lengths]
    fig, ax = plt.subplots(figsize=(6.2, 2.8))
    ax.plot(lengths, [r["standard"] for r in rows], "o-", color=Palette.RED,
            label=localized(language, "standard: n d + n²", "стандартное: n d + n²"))
    ax.plot(lengths, [r["flash"] for r in rows], "s-", color=Palette.BLUE,
            label=localized(language, "FlashAttention: n² d² / M_sram", "FlashAttention: n² d² / M_sram"))
    ax.plot(lengths, [r["inputs"] for r in rows], ":", color=Palette.GREY,
            label=localized(language, "reading Q, K, V and writing O once: 4 n d", "прочитать Q, K, V и записать O: 4 n d"))
    log_scale(ax, "both")
    ax.set_xlabel(localized(language, "sequence length n", "длина последовательности n"))
    ax.set_ylabel(localized(language, "HBM accesses (numbers)", "обращения к HBM (чисел)"))
    ax.set_title(localized(language, f"IO of attention on an H100 (d = {d}, M = {sram_numbers:,})", f"Обмен с HBM на H100 (d = {d}, M = {sram_numbers:,})"))
    ax.legend(fontsize=8, loc="upper left")
    fig.subplots_adjust(left=0.13, right=0.98, bottom=0.18, top=0.88)
    return fig


show_figure(
    plot_hbm_accesses([1024, 2048, 4096, 8192, 16384, 32768], 128, H100_SRAM_NUMBERS, language=LANGUAGE),
    "Both axes are logarithmic: each step right doubles n, each gridline up multiplies the count by 10. Red is "
    "standard attention, dominated by the n² scores it writes to HBM and reads back; blue is FlashAttention's "
    "n² d² / M, a parallel line about 7 times lower for d = 128 on an H100; the dotted grey line is the unavoidable "
    "traffic of reading the inputs and writing the output once. Both attention lines keep the slope 2: tiling "
    "cuts the constant, and only a larger SRAM cuts it further.",
)

# %% [markdown]
# **Измерено здесь: куда уходит время на CPU.** Следующая ячейка замеряет время `tiled_attention` из
# ноутбука на NumPy против собственной `F.scaled_dot_product_attention` из PyTorch на том же каузальном
# входе во float64, по одному разу для каждого бэкенда CPU, выбранного через `torch.nn.attention.sdpa_kernel`
# (torch 2.3 и новее; на CPU есть ядро *math* и ядро *flash*), а также против двух одних только каузальных
# матричных произведений, $QK^\top$ и $PV$, которых не избежать ни одному точному методу. Ячейка работает
# сама по себе в Colab и занимает около секунды. Читайте последний столбец как «во сколько раз медленнее
# тайлы на NumPy». Ожидайте, что ядра PyTorch выиграют с небольшим отрывом, а два матричных произведения
# займут лишь часть общего времени: при таком размере бо́льшая часть времени уходит на экспоненты,
# маскирование и учёт на каждом тайле, которые скомпилированное ядро сливает в один проход, а NumPy — не может.

# %%
TIMING_MAX_N = 2048  # the backend timing is meant to take a second or two, not minutes


def time_attention_backends(n, d, tile_size, repeats, seed=SEED):
    """Best-of-`repeats` seconds of NumPy tiled attention, torch SDPA per CPU backend, and two causal matmuls."""
    n, d = require_int("n", n, minimum=1, maximum=TIMING_MAX_N), require_int("d", d, minimum=1)
    shape = (3, n, d)  # Q, K and V
    require_budget("Q, K and V", shape)
    Q, K, V = np.random.default_rng(require_int("seed", seed, minimum=0)).standard_normal(shape)
    q, k, v = (torch.from_numpy(x)[None, None] for x in (Q, K, V))  # (1, 1, n, d) float64
    half = np.tri(n, dtype=bool)

    def two_causal_matmuls():
        scores = Q @ K.T  # (n, n): the first unavoidable product
        np.multiply(scores, half, out=scores)  # stand-in for the mask and softmax, which cost little here
        return scores @ V  # (n, d): the second

    def tiled():
        return tiled_attention(Q, K, V, tile_size=tile_size, causal=True)

    def torch_sdpa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    if not np.allclose(tiled(), torch_sdpa().numpy().reshape(n, d)):  # the timings compare the same computation
        raise ValueError("NumPy tiled attention and torch SDPA disagree on the timed input; both must be causal")
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
expect("the smallest timing, one token of width 1, runs", len(time_attention_backends(n=1, d=1, tile_size=1, repeats=1, seed=0)), ">=", 3)
expect_raises(ValueError, time_attention_backends, n=0, d=8, tile_size=4, repeats=1, match="n must be at least 1")
expect_raises(ValueError, time_attention_backends, n=8, d=0, tile_size=4, repeats=1, match="d must be at least 1")
expect_raises(ValueError, time_attention_backends, n=TIMING_MAX_N + 1, d=8, tile_size=4, repeats=1, match="n must be at most")
expect_raises(ValueError, time_attention_backends, n=8, d=8, tile_size=4, repeats=1, seed=-1, match="seed")
tiled_seconds = backend_times["NumPy tiled_attention"]
for name, seconds in backend_times.items():
    print(f"time: {name:34s} {1000 * seconds:8.2f} ms   NumPy tiled / this = {tiled_seconds / seconds:5.2f}")  # "time:" lines vary run to run
if not all(math.isfinite(t) and t > 0 for t in backend_times.values()):
    raise ValueError(f"every timing must be a positive number of seconds; got {backend_times}")
print("The memory hierarchy and the backend timings: PASS")


# %% [markdown]
# ## 9. Скользящие окна: дальность через глубину и кэш, который перестаёт расти
#
# **Идея.** Представьте ряд читателей, каждый из которых смотрит на заметки нижнего через прорезь, в которой
# видно $w$ слов. Один читатель видит только на $w$ слов назад, но следующий читает заметки первого, так что
# каждый слой передаёт информацию по эстафете на $w - 1$ позиций дальше. Слой с окном стоит $n \cdot w$
# оценок вместо $n^2 / 2$, а при генерации ему нужны только последние $w$ ключей и значений: *кольцевой
# буфер* (rolling buffer) из $w$ ячеек, где токен $t$ перезаписывает ячейку $t \bmod w$ — ячейку токена
# $t - w$, который только что покинул окно. Mistral 7B **v0.1** использовала окно $W$ = 4,096 на 32 слоях
# с таким буфером ([Jiang и др., 2023](https://arxiv.org/abs/2310.06825)); более поздние версии Mistral 7B
# отказались от окна. Стоки StreamingLLM укладываются в тот же буфер: держите
# $n_{\text{sink}}$ дополнительных ячеек для первых токенов ([Xiao и др., 2023](https://arxiv.org/abs/2309.17453)).
# Кроме того, StreamingLLM *переиндексирует* позиции внутри кэша: RoPE применяется по номеру ячейки кэша,
# а не по исходной позиции, так что расстояния, которые видит модель, никогда не превышают размер кэша.
#
# **Два соглашения для «окна в 4,096».** В этом ноутбуке $w$ учитывает собственный ключ запроса, как в
# gpt-oss (его окно в 128 токенов — это 128 ключей, включая текущий). В статье и коде Mistral позиция $i$
# читает позиции от $i - W$ до $i$: $W + 1$ ключей. Поэтому $W = 4{,}096$ у Mistral — это
# $w = 4{,}097$ здесь, и оба дают одну и ту же дальность, $L\,(w - 1) = L \cdot W$.
#
# $$\text{pairs} = \sum_{i=0}^{n-1} \min(i + 1, w), \qquad \text{reach} = L\,(w - 1), \qquad \text{slot}(t) = t \bmod w$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $n$, $w$ | число токенов, окно (собственный ключ запроса включён) | 8, 3 |
# | $\min(i + 1, w)$ | сколько ключей читает строка $i$ | строка 0: 1, строка 5: 3 |
# | $L$ | число слоёв с окном, стоящих друг на друге | 3 |
# | дальность | самая далёкая позиция входа, которая может повлиять на выход | 6 |
# | $t \bmod w$ | остаток от деления $t$ на $w$: ячейка буфера для токена $t$ | $10 \bmod 4 = 2$ |
#
# **Вручную.** Восемь токенов при $w = 3$ дают $1 + 2 + 3 \cdot 6 = 21$ пару оценок вместо
# $8 \cdot 9 / 2 = 36$. Токен 7 читает токен 5 в слое 3, тот прочитал токен 3 в слое 2, а тот —
# токен 1 в слое 1: дальность $3 \cdot 2 = 6$; токену 0 понадобился бы четвёртый слой. Mistral 7B
# v0.1 ($w = 4{,}097$ в нашем соглашении) достаёт на $32 \cdot 4{,}096 = 131{,}072$ токенов, как и сказано
# в её статье, но факт на 100,000 токенов назад должен пройти по эстафете не меньше
# $\lceil 100{,}000 / 4{,}096 \rceil = 25$ переходов и к тому же лежит за пределами 8K токенов, на которых
# обучалась v0.1. При $w = 4$ токен 10 попадает в ячейку 2, где раньше был токен 6. В сквозном примере
# буфер на 4,096 токенов занимает $4{,}096 \cdot 131{,}072$ байт = 0.54 GB на любой длине — в 32 раза
# меньше, чем полный кэш на 128k.

# %%
def pairs_computed(mask):
    """How many query-key scores an additive or boolean mask allows."""
    if isinstance(mask, np.ndarray) and mask.dtype == bool:
        return int(mask.sum())
    mask = require_array("mask", mask, min_ndim=2, finite=False)
    if np.isnan(mask).any() or np.isposinf(mask).any():
        raise ValueError("an additive mask holds 0 (or a finite bias) where a score is computed and -inf where not; found NaN or +inf")
    return int(np.isfinite(mask).sum())


RECEPTIVE_FIELD_MAX_N = 512  # a teaching matrix product: n^3 work per layer


def receptive_field(n, window, layers):
    """Boolean [n, n]: True where input token j can influence output i after `layers` windowed layers."""
    n = require_int("n", n, maximum=RECEPTIVE_FIELD_MAX_N)  # n^3 work per layer; make_mask checks the rest
    window = require_int("window", window)  # a window is needed here: None would mean full causal attention
    layers = require_int("layers", layers, minimum=0)
    step = np.isfinite(make_mask(n, window)).astype(np.float32)  # one layer's "reads" relation
    heard = np.eye(n, dtype=bool)  # before any layer, each token knows only itself
    for _ in range(layers):
        wider = (step @ heard.astype(np.float32)) > 0  # follow one more layer of edges (counts stay exact in float32)
        if np.array_equal(wider, heard):
            break  # nothing new was reached, so no further layer reaches anything new
        heard = wider
    return heard


def reach(window, layers):
    """Furthest distance information travels through `layers` windowed layers: each adds window - 1."""
    return require_int("layers", layers, minimum=0) * (require_int("window", window, minimum=1) - 1)


print(f"n = 8, w = 3: {pairs_computed(make_mask(8, 3))} pairs, full causal {pairs_computed(make_mask(8))}")
field = receptive_field(8, 3, 3)
print(f"after 3 layers of w = 3: token 1 reaches token 7: {bool(field[7, 1])}; token 0: {bool(field[7, 0])}; reach {reach(3, 3)}")
wide = receptive_field(64, 4, 5)
expect("all(int(np.argmax(wide[i])) == max(0, i - reach(4, 5)) for i in range(64))", all(int(np.argmax(wide[i])) == max(0, i - reach(4, 5)) for i in range(64)))  # the formula matches the matrix product
REFERENCE.check("window.pairs_8_3", pairs_computed(make_mask(8, 3)))
expect("a boolean mask counts its True entries: the 3 x 3 triangle has 6", pairs_computed(np.tri(3, dtype=bool)), "==", 6)
for bad_entry in (np.nan, np.inf):  # one bad entry among valid 0 and -inf is enough to refuse
    expect_raises(ValueError, pairs_computed, np.array([[0.0, -np.inf], [0.0, bad_entry]]), match="NaN or +inf")
expect_raises(ValueError, pairs_computed, np.zeros(3), match="dimensions")
REFERENCE.check("window.causal_pairs_8", pairs_computed(make_mask(8)))
REFERENCE.check("window.reach_3_3", reach(3, 3))
REFERENCE.check("window.hops_100k", math.ceil(100_000 / reach(4_097, 1)))
REFERENCE.check("window.mistral_v0_1_reach", reach(4_097, 32))  # Mistral's W = 4,096 is w = 4,097 keys here
window_cache = kv_cache_bytes(131_072, [4_096] * 32, 8, 128)
print(f"running example, w = 4,096 at 128k tokens: {window_cache / GB:.2f} GB, x{bills[1]['cache_bytes'] / window_cache:.0f} less than full")
REFERENCE.check("window.cache_bytes_4096", window_cache)
expect_raises(ValueError, receptive_field, 8, 3, -1, match="layers")
expect("no layer at all: each token hears only itself", np.array_equal(receptive_field(5, 2, 0), np.eye(5, dtype=bool)))
expect("the largest field allowed, 512 tokens, one layer of w = 2: 512 + 511 pairs", int(receptive_field(RECEPTIVE_FIELD_MAX_N, 2, 1).sum()), "==", 1023)
expect_raises(ValueError, receptive_field, RECEPTIVE_FIELD_MAX_N + 1, 2, 1, match="n must be at most")
expect_raises(TypeError, receptive_field, 8, None, 1, match="window")
expect("reach(3, 0) == 0 and reach(1, 3) == 0: no layer, or a window of the token alone, reaches nothing", (reach(3, 0), reach(1, 3)), "==", (0, 0))
expect_raises(ValueError, reach, 3, -1, match="layers")
expect_raises(ValueError, reach, 0, 3, match="window")

# %%
relay_fields = [receptive_field(8, 3, k) for k in range(4)]  # the by-hand example: n = 8, w = 3, after 0 to 3 layers
expect("the relay figure's third-layer field equals the receptive field computed above", np.array_equal(relay_fields[3], field))
show_figure(
    draw_window_relay(np.isfinite(make_mask(8, 3)), relay_fields, language=LANGUAGE),
    "Left: one layer's window for 8 tokens with w = 3, a row per query i and a column per key j; a tick is a score "
    "that is computed. No row holds more than 3 ticks, so 21 scores replace the causal triangle's 36. Right: the "
    "same window in three stacked layers. Shaded circles are the tokens that can still reach token 7's output at "
    "each level, and the dark path is the longest relay: 7 reads 5, which read 3, which read 1, two back per layer. "
    "Token 0 (red) is out of reach until a fourth layer.",
)


# %%
def plot_receptive_field(n, window, layers, language="en"):
    """Two heatmaps: what one windowed layer reads, and what `layers` layers can reach."""
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.0))
    panels = (
        (localized(language, f"one layer, w = {window}", f"один слой, w = {window}"), receptive_field(n, window, 1)),
        (localized(language, f"{layers} layers: reach {reach(window, layers)} back", f"{layers} слоя: охват {reach(window, layers)} назад"),
         receptive_field(n, window, layers)),
    )
    for ax, (title, field) in zip(axes, panels):
        ax.imshow(field, cmap="Blues", vmin=0, vmax=1.25, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(localized(language, "input token j", "входной токен j"))
        ax.set_xticks(range(0, n, 5)), ax.set_yticks(range(0, n, 5))
        ax.grid(False)
    axes[0].set_ylabel(localized(language, "output token i", "выходной токен i"))
    fig.subplots_adjust(wspace=0.25, left=0.1, right=0.99, bottom=0.15, top=0.9)
    return fig


show_figure(
    plot_receptive_field(16, 4, 3, language=LANGUAGE),
    "Both panels are 16 x 16: rows are outputs, columns are inputs, dark means 'can influence'. Left, one layer with "
    "w = 4 is a band 4 cells wide. Right, three such layers: the band is 3 x 3 + 1 = 10 cells wide, because each "
    "layer adds w - 1 = 3. Neither panel touches the upper triangle: stacking windows never lets the future in.",
)


# %% tags=["exercise"]
# Exercise 9: Декодируйте токен за токеном с кольцевым буфером из `window` ячеек. Токен t сначала
# перезаписывает своим ключом и значением ячейку t % window (ячейку токена t - window, который только что
# покинул окно), затем применяет внимание к заполненным ячейкам с softmax(k . q / sqrt(d_k)). Верните
# выходы формы (T, d_v) и наибольшее число ключей, которое когда-либо было в буфере. Окно длиннее
# T токенов допустимо и никогда не заполняется: выделяйте не больше T ячеек.
def rolling_window_decode(Q, K, V, window):
    """Generate token by token with a KV buffer of `window` slots; returns (outputs [T, d_v], largest buffer)."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if not (Q.shape[0] == K.shape[0] == V.shape[0] and Q.shape[1] == K.shape[1]):
        raise ValueError(f"need Q [T, d_k], K [T, d_k], V [T, d_v] for the same T tokens; got {Q.shape}, {K.shape}, {V.shape}")
    window = require_int("window", window, minimum=1)
    # Your code here.
    raise NotImplementedError('Exercise 9: Декодируйте токен за токеном с кольцевым буфером из `window` ячеек. Токен t сначала перезаписывает своим ключом и значением ячейку t % window (ячейку токена t - window, который только что покинул окно), затем применяет внимание к заполненным ячейкам с softmax(k . q / sqrt(d_k)). Верните выходы формы (T, d_v) и наибольшее число ключей, которое когда-либо было в буфере. Окно длиннее T токенов допустимо и никогда не заполняется: выделяйте не больше T ячеек.')


# %%
check_exercise("Exercise 9", check_rolling_buffer_contract, rolling_window_decode, globals())

# %%
Q50, K50, V50 = (rng.standard_normal((50, 8)) for _ in range(3))
streamed, largest = rolling_window_decode(Q50, K50, V50, 4)
masked = sdpa(Q50, K50, V50, make_mask(50, 4))
print(f"50 tokens with a 4-slot buffer: largest buffer {largest}, max |difference| from masked attention {np.abs(streamed - masked).max():.1e}")
expect("largest == 4", largest, "==", 4)
expect("np.allclose(streamed, masked, atol=1e-12)", np.allclose(streamed, masked, atol=1e-12))

# StreamingLLM keeps sinks + a window. An evicted token is gone: changing it changes nothing downstream.
needle = V50.copy()
needle[20] += 100.0  # a "fact" at position 20
late = sdpa(Q50, K50, V50, make_mask(50, 8, n_sink=4))[49]
late_with_needle = sdpa(Q50, K50, needle, make_mask(50, 8, n_sink=4))[49]
full_with_needle = sdpa(Q50, K50, needle, make_mask(50))[49]
print(f"token 49 with sinks + window 8: moved by {np.abs(late_with_needle - late).max():.1f} when token 20 changed; "
      f"with full attention: {np.abs(full_with_needle - sdpa(Q50, K50, V50, make_mask(50))[49]).max():.1f}")
expect("np.array_equal(late, late_with_needle)", np.array_equal(late, late_with_needle))
expect_raises(ValueError, rolling_window_decode, Q50, K50[:10], V50, 4, match="same T")
expect_raises(ValueError, rolling_window_decode, Q50, K50, V50, 0, match="window")
endless, endless_largest = rolling_window_decode(Q50, K50, V50, 10**9)
expect("a window of 10**9 on 50 tokens is full causal attention with a 50-slot buffer", (np.allclose(endless, sdpa(Q50, K50, V50, make_mask(50)), atol=1e-12), endless_largest), "==", (True, 50))
# Scores from -1000 to 1000: a softmax shifted by anything but each row's max overflows to NaN here.
Q_wide, K_wide, V_wide = np.full((3, 1), 1000.0), np.array([[1.0], [-1.0], [1.0]]), np.array([[1.0], [2.0], [3.0]])
wide_decoded, _ = rolling_window_decode(Q_wide, K_wide, V_wide, 2)
expect("scores of +-1000 decode to the masked softmax, with no overflow", np.allclose(wide_decoded, sdpa(Q_wide, K_wide, V_wide, make_mask(3, 2)), atol=1e-12))
report_section("Sliding window, reach and rolling buffer", globals())

# %%
show_figure(
    draw_rolling_buffer(largest, 10, language=LANGUAGE),
    "Top: the token stream. The blue bar is the window once token 10 (orange) has arrived; token 6 (red, dashed) "
    "has just left it. Bottom: the same 4-slot buffer before and after. Token 10 goes to slot 10 mod 4 = 2, which "
    "held token 6, so no other slot moves. The slots end up out of time order (8, 9, 10, 7), which a softmax does "
    "not mind, and the memory stays at 4 slots however long the stream runs.",
)


# %% [markdown]
# ## 10. Разреженные шаблоны и обучаемый короткий список
#
# **Идея.** Окно сохраняет только локальные пары. Разреженные шаблоны добавляют несколько дальних, так
# что любые два токена оказываются в одном-двух переходах друг от друга. *Глобальный* токен читает всех,
# и все читают его (Longformer, [Beltagy и др., 2020](https://arxiv.org/abs/2004.05150); BigBird добавляет
# случайные связи, [Zaheer и др., 2020](https://arxiv.org/abs/2007.14062)); шаблон *с шагом* (strided) читает
# последние $r$ токенов плюс каждый $r$-й перед ними (Sparse Transformer, [Child и др., 2019](https://arxiv.org/abs/1904.10509)).
# Фиксированный шаблон экономит время, только если пропускаются целые блоки матрицы оценок, ровно как в
# разделе 8; шаблон, разбросанный по отдельным токенам, всё равно стоит полного прохода. Более новая идея
# позволяет модели самой *выбирать* разреженные ключи для каждого запроса: «lightning indexer»
# («молниеносный индексатор») в DeepSeek-V3.2-Exp дёшево вычисляет оценку каждого ключа (64 маленькие
# головы ширины 128 поверх одного общего ключа в FP8 на токен), а основное внимание читает только
# лучшие 2,048 ([конфигурация](https://github.com/deepseek-ai/DeepSeek-V3.2-Exp)).
# Ключ индексатора — это ещё одна вещь, которую приходится кэшировать на каждый токен.
#
# $$\text{strided: } M_{ij} = 0 \;\text{ when }\; i - j \ge 0 \;\text{ and }\; \left(i - j < r \;\text{ or }\; (i - j) \bmod r = 0\right)$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $i - j$ | насколько далеко назад стоит ключ $j$ | для $i = 13$: от 0 до 13 |
# | $r$ | шаг: ширина локальной части и расстояние между дальними ключами | 4 |
# | $(i - j) \bmod r = 0$ | ключ $j$ стоит на целое число шагов назад | $8 \bmod 4 = 0$ |
#
# **Вручную.** Для 16 токенов полное каузальное внимание вычисляет 136 пар оценок; окно в 4 —
# $1 + 2 + 3 + 4 \cdot 13 = 58$; если сделать токен 0 глобальным, добавится по одной паре в каждую из 12
# строк за пределами окна: 70; шаблон с шагом 4 добавляет 24 дальние пары к 58 парам окна: 82. Строка 13
# читает ключи с 10 по 13, а затем 9, 5, 1. При 4,096 токенов полное каузальное внимание вычисляет примерно
# в 32 раза больше пар, чем окно в 64.

# %%
def global_local_allowed(n, window, global_tokens=(0,)):
    """Boolean [n, n]: a causal window plus global tokens that every later token reads and that read every earlier one."""
    require_budget("the [n, n] mask", (require_int("n", n),) * 2)  # make_mask checks n's range
    window = require_int("window", window)  # None would mean full causal attention, which makes global tokens moot
    allowed = np.isfinite(make_mask(n, window))
    tokens = [require_int("global token", g, minimum=0, maximum=n - 1) for g in global_tokens]
    allowed[:, tokens] = True  # everyone reads the global tokens ...
    allowed[tokens, :] = True  # ... and they read everyone ...
    return allowed & np.tri(n, dtype=bool)  # ... but nobody reads the future


def strided_allowed(n, stride):
    """Boolean [n, n]: the last `stride` keys plus every stride-th key before them (causal)."""
    n, stride = require_int("n", n, minimum=1), require_int("stride", stride, minimum=1)
    require_budget("the [n, n] distances", (n, n))
    back = np.arange(n)[:, None] - np.arange(n)[None, :]  # how far back key j is from query i
    return (back >= 0) & ((back < stride) | (back % stride == 0))


patterns = {
    "full causal": make_mask(16),
    "window 4": make_mask(16, 4),
    "window 4 + global 0": additive_mask(global_local_allowed(16, 4)),
    "strided, stride 4": additive_mask(strided_allowed(16, 4)),
}
for name, mask in patterns.items():
    print(f"{name:20s} {pairs_computed(mask):4d} pairs")
print("strided row 13 reads keys", np.flatnonzero(strided_allowed(16, 4)[13]).tolist())
full_4096, window_4096 = 4096 * 4097 // 2, sum(min(i + 1, 64) for i in range(4096))
print(f"4,096 tokens: full causal {full_4096:,} pairs, window 64 {window_4096:,} pairs, x{full_4096 / window_4096:.1f}")
REFERENCE.check("sparse.pairs_16", [pairs_computed(mask) for mask in patterns.values()])
REFERENCE.check("sparse.strided_row_13", np.flatnonzero(strided_allowed(16, 4)[13]))
REFERENCE.check("sparse.full_over_window64_4096", full_4096 / window_4096, rtol=1e-15)
expect('pairs_computed(patterns["window 4"]) == pairs_computed(make_mask(16, 4))', pairs_computed(patterns["window 4"]), "==", pairs_computed(make_mask(16, 4)))
expect_raises(ValueError, global_local_allowed, 16, 4, (16,), match="global token")
expect_raises(ValueError, strided_allowed, 16, 0, match="stride")
expect_raises(ValueError, strided_allowed, 0, 4, match="n")
expect("stride 1 reads every earlier key: the full causal triangle", np.array_equal(strided_allowed(5, 1), np.tri(5, dtype=bool)))
expect("one token with stride 1 reads itself", strided_allowed(1, 1).tolist(), "==", [[True]])
expect_raises(ValueError, global_local_allowed, 16, 4, (-1,), match="global token")
expect_raises(TypeError, global_local_allowed, 16, None, match="window")
expect("the last token, 15, may be global: it reads all 16 keys", int(global_local_allowed(16, 4, (15,))[15].sum()), "==", 16)
show_figure(
    plot_masks([(localized(LANGUAGE, name, ru), mask) for (name, mask), ru in zip(patterns.items(), (
        "полная каузальная", "окно 4", "окно 4 + глобальный 0", "шаг 4"))], language=LANGUAGE),
    "Four 16 x 16 masks, rows are queries and columns keys, dark where a score is computed; each title gives the "
    "count. Full causal attention is a solid triangle; the window is a diagonal band; a global token fills the "
    "first column (everyone reads token 0); the strided pattern adds dotted diagonals every 4 columns.",
)

# %%
show_figure(
    draw_global_tokens(global_local_allowed(16, 4), (0,), language=LANGUAGE),
    "Tokens 0 to 15 sit on a line, and each arc is one pair that gets a score (a token also reads itself, not "
    "drawn). Blue arcs below are the window of 4: each token reads its three predecessors. Orange arcs above join "
    "the global token 0 to every later token, so any token reads the first one in one hop. In this causal form "
    "token 0 reads only itself and acts as a hub, as a sink does; in an encoder such as Longformer it also reads "
    "everyone, so any two tokens are at most two hops apart.",
)

# %%
SHORTLIST_MAX_NUMBERS = 2**23  # key numbers one experiment may draw: four times the 32 x 2,048 x 32 below


def shortlist_experiment(trials=32, length=2048, dim=32, index_dim=8, top_k=64, sharpness=1.0, noise=0.05, seed=4):
    """Retrieve a target key with a cheap low-dimensional shortlist, then full attention over the shortlist only.

    The query is a noisy copy of one key, times ``sharpness`` (a more confident head).

    Returns recall (target in the shortlist), retrieval accuracy with and without the shortlist, the
    probability mass the shortlist keeps, the relative output error, and the score-multiplication ratio.
    """
    for name, value in (("trials", trials), ("length", length), ("dim", dim), ("index_dim", index_dim), ("top_k", top_k)):
        require_int(name, value, minimum=1)
    if index_dim > dim or top_k > length:
        raise ValueError(f"need index_dim <= dim and top_k <= length; got {index_dim} > {dim} or {top_k} > {length}")
    noise = require_real("noise", noise, minimum=0.0)
    require_int("trials x length x dim", trials * length * dim, maximum=SHORTLIST_MAX_NUMBERS)  # a second, not minutes; and far under the budget
    value_dim = 6  # width of the values the heads mix
    gen = np.random.default_rng(require_int("seed", seed, minimum=0))
    keys, values = gen.standard_normal((trials, length, dim)), gen.standard_normal((trials, length, value_dim))
    target = gen.integers(length, size=trials)
    queries = keys[np.arange(trials), target] + noise * gen.standard_normal((trials, dim))  # a query that looks for one key
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below, by name
        queries *= require_real("sharpness", sharpness, minimum=0.0, strict_minimum=True)
        index_scores = np.einsum("tld,td->tl", keys[..., :index_dim], queries[:, :index_dim])  # the cheap indexer
        scores = np.einsum("tld,td->tl", keys, queries) / math.sqrt(dim)  # full scores, for the comparison only
    cause = f"sharpness {sharpness:g} and noise {noise:g} make the query so large that q . k overflows float64"
    require_finite_result("the indexer's scores", index_scores, cause)
    require_finite_result("the full scores", scores, cause)
    shortlist = np.argpartition(index_scores, -top_k, axis=1)[:, -top_k:]  # (trials, top_k)
    full_p = np.exp(scores - scores.max(1, keepdims=True))
    full_p /= full_p.sum(1, keepdims=True)
    short_scores = np.take_along_axis(scores, shortlist, axis=1)
    short_p = np.exp(short_scores - short_scores.max(1, keepdims=True))
    short_p /= short_p.sum(1, keepdims=True)
    rows = np.arange(trials)[:, None]
    full_out = np.einsum("tl,tlc->tc", full_p, values)
    short_out = np.einsum("tk,tkc->tc", short_p, values[rows, shortlist])
    return {
        "recall": float(np.mean(np.any(shortlist == target[:, None], axis=1))),
        "retrieval_shortlist": float(np.mean(shortlist[np.arange(trials), np.argmax(short_scores, 1)] == target)),
        "retrieval_full": float(np.mean(np.argmax(scores, 1) == target)),
        "kept_mass": float(np.mean(np.take_along_axis(full_p, shortlist, 1).sum(1))),
        "output_error": float(np.mean(np.linalg.norm(short_out - full_out, axis=1) / np.linalg.norm(full_out, axis=1))),
        "score_ratio": (length * index_dim + top_k * dim) / (length * dim),
    }


shortlists = {1.0: shortlist_experiment(), 3.0: shortlist_experiment(sharpness=3.0)}  # the default head, and a confident one
print(f"{'query sharpness':>16} " + " ".join(f"{key:>20}" for key in shortlists[1.0]))
for sharpness, result in shortlists.items():
    print(f"{sharpness:>16.0f} " + " ".join(f"{value:>20.3f}" for value in result.values()))
REFERENCE.check("sparse.shortlist_score_ratio", shortlists[1.0]["score_ratio"])
expect('all(r["retrieval_shortlist"] <= r["recall"] and r["kept_mass"] <= 1 for r in shortlists.values())', all(r["retrieval_shortlist"] <= r["recall"] and r["kept_mass"] <= 1 for r in shortlists.values()))
expect('shortlists[3.0]["output_error"] < shortlists[1.0]["output_error"]', shortlists[3.0]["output_error"], "<", shortlists[1.0]["output_error"])
# The numbers the text below quotes, checked here so that a change in the experiment cannot leave stale prose.
check_stated("the shortlist's recall", shortlists[1.0]["recall"], 0.875, 3)
check_stated("the diffuse head's kept mass (%)", 100 * shortlists[1.0]["kept_mass"], 22, 0)
check_stated("the diffuse head's output change", shortlists[1.0]["output_error"], 4.2, 1)
check_stated("the confident head's kept mass (%)", 100 * shortlists[3.0]["kept_mass"], 84, 0)
check_stated("the confident head's output change", shortlists[3.0]["output_error"], 0.23, 2)
expect_raises(ValueError, shortlist_experiment, index_dim=64, match="index_dim")
expect_raises(ValueError, shortlist_experiment, sharpness=0.0, match="sharpness")
expect_raises(ValueError, shortlist_experiment, noise=-0.1, match="noise")
expect_raises(ValueError, shortlist_experiment, trials=0, match="trials")
expect_raises(ValueError, shortlist_experiment, seed=-1, match="seed")
expect_raises(ValueError, shortlist_experiment, length=2**17, match="trials x length x dim")  # 32 x 131,072 x 32 keys
expect_raises(ValueError, shortlist_experiment, trials=1158, match="trials x length x dim")
expect_raises(FloatingPointError, shortlist_experiment, sharpness=1e308, match="sharpness")
# The seeded experiment, number for number: any change to how it scores, selects or normalises shows here.
recorded_shortlists = {
    1.0: {"recall": 0.875, "retrieval_shortlist": 0.875, "retrieval_full": 1.0, "kept_mass": 0.2230617864748129, "output_error": 4.175855440815641, "score_ratio": 0.28125},
    3.0: {"recall": 0.875, "retrieval_shortlist": 0.875, "retrieval_full": 1.0, "kept_mass": 0.8439402910135299, "output_error": 0.22746902220219112, "score_ratio": 0.28125},
}
for sharpness, result in shortlists.items():
    contract_close("the seeded shortlist experiment reproduces its recorded results", f"sharpness={sharpness}", list(result.values()),
                   list(recorded_shortlists[sharpness].values()), "the experiment's code changed; rerun it and update the prose", rtol=1e-9)
# A head so confident that its scores span thousands, with the shortlist as wide as the sequence
# (top_k = length, index_dim = dim, both allowed): every mass is kept and nothing overflows.
confident = shortlist_experiment(trials=1, length=8, dim=4, index_dim=4, top_k=8, sharpness=1000.0, seed=0)
contract_close("scores in the thousands: each softmax is shifted by its row's max, so all mass is kept and the output is exact",
               "one trial, sharpness=1000, top_k = length = 8", [confident["kept_mass"], confident["output_error"], confident["recall"]], [1.0, 0.0, 1.0],
               "shift each softmax by its row's max (not the min, not the sum), over the keys axis")
report_section("Sparse patterns and the shortlist", globals())


# %% [markdown]
# Читайте таблицу внимательно. **Отношение по оценкам** 0.281 учитывает только умножения, из которых
# складываются оценки: 8 из 32 измерений для всех 2,048 ключей плюс все 32 для 64 ключей из короткого
# списка, против 32 для каждого ключа. В него не входят выбор top-k, проекции, порождающие ключи индексатора,
# softmax, смешивание значений и весь трафик памяти, так что это **не** ускорение. Короткий список упустил
# нужный ключ в 1 испытании из 8 (полнота 0.875). А достаточно ли 64 ключей из 2,048, зависит от головы:
# рассеянная голова (резкость 1) сохраняет в коротком списке только 22% своей вероятностной массы, и сдвиг
# её выхода в 4.2 раза больше величины самого выхода (полный выход — среднее 2,048 случайных значений,
# близкое к нулю); уверенная голова (резкость 3) сохраняет 84%, и её выход сдвигается лишь на 0.23. DeepSeek обучает свой
# индексатор подражать основному вниманию, и именно это делает выбор лучших 2,048 безопасным; фиксированный
# необученный индексатор вроде нашего таких гарантий не даёт.
#
# ## 11. Линейное внимание: текущая сумма вместо списка гостей
#
# **Идея.** Вес softmax $e^{q \cdot k}$ нельзя разложить в произведение части, зависящей только от $q$,
# и части, зависящей только от $k$. Замените его на $\phi(q) \cdot \phi(k)$ с положительным отображением
# признаков $\phi$ — и станет можно: тогда $(\phi(Q)\phi(K)^\top)V = \phi(Q)\,(\phi(K)^\top V)$, и
# правая часть никогда не строит матрицу $n \times n$. В каузальном случае маленькая матрица $\phi(K)^\top V$
# превращается в текущую сумму $R$ (состояние), которая обновляется один раз на токен, как состояние
# рекуррентной сети ([Katharopoulos и др., 2020](https://arxiv.org/abs/2006.16236)). Цена: состояние имеет
# фиксированный размер, а $\phi(q) \cdot \phi(k)$ никогда не растягивает разрывы между оценками так, как это
# делает $e^x$, поэтому веса получаются менее резкими.
#
# $$R_i = R_{i-1} + \phi(k_i)\, v_i^\top, \qquad z_i = z_{i-1} + \phi(k_i)$$
#
# $$o_i = \frac{\phi(q_i)^\top R_i}{\phi(q_i)^\top z_i}, \qquad \phi(x) = \operatorname{elu}(x) + 1$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $\phi$ | отображение признаков, поэлементно: $x + 1$ при $x > 0$, иначе $e^x$ (всегда положительно) | $\phi(1, 0) = (2, 1)$ |
# | $R_i$ | состояние: текущая сумма внешних произведений $\phi(k_j) v_j^\top$, размера $d_k \times d_v$ (`S` в коде) | (20, 22) |
# | $z_i$ | текущая сумма $\phi(k_j)$ для нормировщика | (5, 5) |
# | $o_i$ | выход токена $i$ | $62/15$ |
#
# **Вручную.** Ключи $(1,0), (0,1), (1,1)$, значения 2, 4, 6, третий запрос $(1,0)$. Признаки
# ключей: $(2,1), (1,2), (2,2)$. $R = 2 \cdot (2,1) + 4 \cdot (1,2) + 6 \cdot (2,2) = (20, 22)$,
# $z = (5, 5)$, $\phi(q) = (2, 1)$: $o_3 = (40 + 22)/(10 + 5) = 62/15 = 4.133$. Медленный путь даёт
# веса $5, 4, 6$ и то же $62/15$. Немасштабированный softmax на тех же числах взвешивает ключи как
# $e, 1, e$ и даёт ровно 4: линейное внимание — это *другое* внимание, а не его ускоренная копия.

# %%
def feature_map(x):
    """phi(x) = elu(x) + 1, entry by entry: x + 1 above zero, e^x at or below it; always positive."""
    x = require_array("x", x).astype(float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))  # the minimum keeps exp finite on the unused branch


def linear_attention_weights(Q, K):
    """The causal [n, n] weights linear attention implies: phi(q_i) . phi(k_j), each row divided by its sum."""
    Q, K = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2)
    if Q.shape != K.shape:
        raise ValueError(f"causal weights need Q and K of the same shape [n, d_k], one row per token; got {Q.shape} and {K.shape}")
    require_budget("the [n, n] weights", (len(Q), len(Q)))
    weights = np.tril(feature_map(Q) @ feature_map(K).T)  # (n, n), the future zeroed
    return weights / weights.sum(axis=1, keepdims=True)


def linear_attention_quadratic(Q, K, V):
    """Linear attention the slow way: all n x n weights, then a weighted sum of the values."""
    V = require_array("V", V, ndim=2)
    if len(V) != len(require_array("Q", Q, ndim=2)):
        raise ValueError(f"need one value row per token: Q has {len(Q)} rows, V has {len(V)}")
    return linear_attention_weights(Q, K) @ V


# %% tags=["exercise"]
# Exercise 10: Запишите линейное внимание как рекуррентное соотношение. Храните S (d_k, d_v) и z (d_k,), в начале оба
# нулевые. Для каждого токена i: прибавьте phi(k_i) v_i^T к S и phi(k_i) к z, затем выдайте
# phi(q_i)^T S / phi(q_i)^T z. В качестве phi используйте feature_map. Верните (outputs, S, z).
def linear_attention_recurrent(Q, K, V):
    """Causal linear attention from two running sums; returns (outputs [n, d_v], final S [d_k, d_v], final z [d_k])."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if not (Q.shape[0] == K.shape[0] == V.shape[0] and Q.shape[1] == K.shape[1]):
        raise ValueError(f"need Q [n, d_k], K [n, d_k], V [n, d_v] for the same n; got {Q.shape}, {K.shape}, {V.shape}")
    # Your code here.
    raise NotImplementedError('Exercise 10: Запишите линейное внимание как рекуррентное соотношение. Храните S (d_k, d_v) и z (d_k,), в начале оба нулевые. Для каждого токена i: прибавьте phi(k_i) v_i^T к S и phi(k_i) к z, затем выдайте phi(q_i)^T S / phi(q_i)^T z. В качестве phi используйте feature_map. Верните (outputs, S, z).')


# %%
check_exercise("Exercise 10", check_linear_attention_contract, linear_attention_recurrent, globals())

# %%
Qw, Kw, Vw = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([[2.0], [4.0], [6.0]])
out_lin, S_lin, z_lin = linear_attention_recurrent(Qw, Kw, Vw)
softmax_w = np.exp(Qw[2] @ Kw.T)  # unscaled softmax weights e, 1, e
print(f"S = {S_lin.ravel().tolist()}, z = {z_lin.tolist()}, output {out_lin[2, 0]:.3f} (62/15); softmax gives {softmax_w @ Vw[:, 0] / softmax_w.sum():.3f}")
REFERENCE.check("linear.S", S_lin.ravel())
REFERENCE.check("linear.z", z_lin)
REFERENCE.check("linear.output", out_lin[2, 0], rtol=1e-15)
REFERENCE.check("linear.softmax_output", softmax_w @ Vw[:, 0] / softmax_w.sum(), rtol=1e-14)
Q200, K200, V200 = (rng.standard_normal((200, 8)) for _ in range(3))
fast, S200, z200 = linear_attention_recurrent(Q200, K200, V200)
print(f"200 random tokens: running sum vs n x n form, max |difference| {np.abs(fast - linear_attention_quadratic(Q200, K200, V200)).max():.1e}; "
      f"state {S200.shape} + {z200.shape} at any length")
expect("np.allclose(fast, linear_attention_quadratic(Q200, K200, V200), atol=1e-12)", np.allclose(fast, linear_attention_quadratic(Q200, K200, V200), atol=1e-12))
expect_raises(ValueError, linear_attention_recurrent, Q200, K200[:5], V200, match="same n")
expect_raises(TypeError, feature_map, None, match="x")
contract_close("phi at -1, -0.5, 0, 0.5, 2 is e^-1, e^-0.5, 1, 1.5, 3", "x = [-1, -0.5, 0, 0.5, 2]", feature_map([-1.0, -0.5, 0.0, 0.5, 2.0]),
               [math.exp(-1), math.exp(-0.5), 1.0, 1.5, 3.0], "elu(x) + 1: x + 1 above zero, e^x at or below it")
expect_raises(ValueError, linear_attention_weights, Qw[:2], Kw, match="same shape")  # 2 query rows, 3 key rows: not a causal n x n
expect_raises(ValueError, linear_attention_quadratic, Qw, Kw, Vw[:2], match="one value row per token")

# Softmax against linear weights on the same 10 decisive queries (twice the usual size) and keys.
Q10, K10 = 2 * rng.standard_normal((10, 8)), rng.standard_normal((10, 8))
_, soft10 = sdpa(Q10, K10, K10, make_mask(10), return_weights=True)
lin10 = linear_attention_weights(Q10, K10)
peak_soft, peak_lin = soft10[5:].max(1).mean(), lin10[5:].max(1).mean()
print(f"largest weight in the last five rows, averaged: softmax {peak_soft:.2f}, linear {peak_lin:.2f}")
expect("np.allclose(soft10.sum(1), 1)", np.allclose(soft10.sum(1), 1))
expect("np.allclose(lin10.sum(1), 1)", np.allclose(lin10.sum(1), 1))
expect("peak_soft > peak_lin", peak_soft, ">", peak_lin)


def plot_softmax_vs_linear(soft, lin, language="en"):
    """Two heatmaps of causal attention weights on the same queries and keys: softmax and linear."""
    soft, lin = require_array("soft", soft, ndim=2), require_array("lin", lin, ndim=2)
    if soft.shape != lin.shape or soft.shape[0] != soft.shape[1] or len(soft) < 6:
        raise ValueError(f"need two square weight matrices of one shape with at least 6 rows (the title reads rows 5 on); got {soft.shape} and {lin.shape}")
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.0))
    for ax, weights, title in ((axes[0], soft, localized(language, "softmax", "softmax")),
                               (axes[1], lin, localized(language, "linear, φ = elu + 1", "линейное, φ = elu + 1"))):
        image = ax.imshow(weights, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"{title}\n" + localized(language, "top weight", "макс. вес") + f" {weights[5:].max(1).mean():.2f}", fontsize=10)
        ax.set_xlabel(localized(language, "key", "ключ"))
        ax.set_xticks(range(0, len(weights), 3)), ax.set_yticks(range(0, len(weights), 3))
        ax.grid(False)
    axes[0].set_ylabel(localized(language, "query", "запрос"))
    fig.subplots_adjust(wspace=0.25, left=0.1, right=0.86, bottom=0.15, top=0.85)
    bar = fig.colorbar(image, cax=fig.add_axes([0.89, 0.15, 0.025, 0.7]))
    bar.set_label(localized(language, "attention weight", "вес внимания"))
    return fig


show_figure(
    plot_softmax_vs_linear(soft10, lin10, language=LANGUAGE),
    "Both heatmaps use the same 10 queries and keys; rows are queries, columns keys, darker is more weight (0 to 1), "
    "as the colour bar shows, and every row sums to 1 inside its causal triangle. Softmax (left) concentrates each late row on a favourite "
    "key; linear attention (right) spreads the same rows thinly. The titles give the largest weight of the last "
    "five rows, averaged: the bluntness is the price of a fixed-size state.",
)
report_section("Linear attention", globals())


# %% [markdown]
# ## 12. Модели пространства состояний: состояние фиксированного размера с линейным обновлением
#
# **Идея.** Чашка чая на столе каждую минуту сохраняет долю своего тепла и получает всё, что вы в неё
# подливаете; её температура подытоживает все доливания, причём старые значат меньше. Слой модели
# пространства состояний (SSM) — это такое правило для каждого канала: состояние $h$ умножается на $A$,
# к нему прибавляется $B x_t$, а выход считывает $C h$. Обновление *линейно*, и это даёт второй способ
# вычислить те же выходы: разверните цикл, и каждый выход окажется взвешенной суммой прошлых входов с весами
# $C A^k B$, то есть свёрткой, которая обучается параллельно (S4, [Gu и др., 2021](https://arxiv.org/abs/2111.00396)).
# Генерация выполняет цикл с состоянием, которое никогда не растёт.
#
# $$h_t = A\,h_{t-1} + B\,x_t, \qquad y_t = C\,h_t \qquad \Longleftrightarrow \qquad y_t = \sum_{k=0}^{t-1} \left(C A^{k} B\right) x_{t-k}$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $x_t$, $y_t$ | вход и выход на шаге $t$ (один канал) | $x = (1, 0, 0, 2)$ |
# | $h_t$ | состояние после шага $t$, $h_0 = 0$ | 1, 0.5, 0.25, 2.125 |
# | $A$, $B$, $C$ | множитель сохранения, множитель записи, множитель чтения (одни и те же для всех токенов; Mamba обозначает дискретный множитель сохранения $\bar A$, см. следующий подраздел) | 0.5, 1, 1 |
# | $C A^k B$ | ядро: насколько ещё учитывается вход, отстоящий на $k$ шагов | 1, 0.5, 0.25, 0.125 |
#
# **Вручную.** При $A = 0.5$ и входах $(1, 0, 0, 2)$ цикл даёт $1, 0.5, 0.25$ и
# $0.5 \cdot 0.25 + 2 = 2.125$. Свёртка: $y_4 = 1 \cdot 2 + 0.5 \cdot 0 + 0.25 \cdot 0 + 0.125 \cdot 1 = 2.125$.
#
# **От линейного внимания к SSM.** Добавьте состоянию из раздела 11 затухание, $R_i = \lambda\, R_{i-1} + \phi(k_i)\, v_i^\top$,
# и оно *станет* SSM: множитель сохранения $A = \lambda$, запись $B\,x_t$ — это внешнее произведение
# $\phi(k_i)\, v_i^\top$, а чтение $C$ — это $\phi(q_i)$. Пусть затухание зависит от токена,
# $\lambda_i$, и пусть векторы записи и чтения тоже берутся из токена, — и получится селективная SSM.
# Mamba-2 ([Dao и Gu, 2024](https://arxiv.org/abs/2405.21060)) делает это соответствие точным: при одном
# скалярном затухании на голову и шаг её SSM равна замаскированному линейному вниманию, маска которого
# содержит произведения затуханий («двойственность пространства состояний», state-space duality), поэтому
# её можно обучать матричными умножениями. Gated DeltaNet в Qwen3-Next (раздел 15) из того же семейства:
# затухающее состояние с записью по дельта-правилу.

# %%
def ssm_recurrent(x, A, B, C):
    """One-channel SSM run as a loop: h_t = A h_(t-1) + B x_t, y_t = C h_t (how it generates)."""
    x = require_array("x", x, ndim=1).astype(float)
    A, B, C = (require_real(name, value) for name, value in (("A", A), ("B", B), ("C", C)))
    h, y = 0.0, np.empty_like(x)
    for t, x_t in enumerate(x):
        h = A * h + B * x_t
        y[t] = C * h
    return require_finite_result("the SSM's outputs", y, f"the state grows without bound (|A| = {abs(A):g}) or the inputs are too large for float64")


def ssm_kernel(A, B, C, length):
    """The convolution kernel C A^k B for k = 0 .. length - 1: how much an input k steps old still counts."""
    length = require_int("length", length, minimum=1)
    require_budget("the kernel", (length,))
    A = require_real("A", A)
    with np.errstate(over="ignore"):
        powers = A ** np.arange(length, dtype=float)  # A^k, k = 0 .. length - 1
    require_finite_result("the powers A^k", powers, f"|A| = {abs(A):g} > 1 is an unstable decay: A^k overflows before k = {length - 1}; use |A| <= 1 or a shorter length")
    return require_real("C", C) * powers * require_real("B", B)


def ssm_convolution(x, A, B, C):
    """The same outputs as ssm_recurrent, as one convolution with the kernel (how a fixed SSM trains)."""
    x = require_array("x", x, ndim=1).astype(float)
    y = np.convolve(x, ssm_kernel(A, B, C, len(x)))[: len(x)]  # y_t = sum_k kernel_k x_(t-k)
    return require_finite_result("the convolution's outputs", y, "the inputs times the kernel overflow float64")


tea = (1.0, 0.0, 0.0, 2.0)
print("loop:", ssm_recurrent(tea, 0.5, 1.0, 1.0).tolist(), " kernel:", ssm_kernel(0.5, 1.0, 1.0, 4).tolist(),
      " convolution:", ssm_convolution(tea, 0.5, 1.0, 1.0).tolist())
REFERENCE.check("ssm.tea_states", ssm_recurrent(tea, 0.5, 1.0, 1.0))
REFERENCE.check("ssm.tea_kernel", ssm_kernel(0.5, 1.0, 1.0, 4))
contract_close("with A = 0.5, B = 2, C = 3 the kernel is C A^k B = 6, 3, 1.5", "ssm_kernel(0.5, 2.0, 3.0, 3)", ssm_kernel(0.5, 2.0, 3.0, 3),
               [6.0, 3.0, 1.5], "the kernel is C * A**k * B for k = 0, 1, 2")
contract_close("the loop with B = 2, C = 3 on (1, 0, 0, 2): 3 C h with h = 2, 1, 0.5, 4.25", "ssm_recurrent(tea, 0.5, 2.0, 3.0)",
               ssm_recurrent(tea, 0.5, 2.0, 3.0), [6.0, 3.0, 1.5, 12.75], "h_t = A h_(t-1) + B x_t from h_0 = 0, then y_t = C h_t")
expect("a kernel of length 1 is C B alone", ssm_kernel(0.5, 2.0, 3.0, 1).tolist(), "==", [6.0])
expect_raises(ValueError, ssm_kernel, 0.5, 1.0, 1.0, 0, match="length")
expect_raises(FloatingPointError, ssm_kernel, 2.0, 1.0, 0.0, 2000, match="unstable")
x300 = rng.standard_normal(300)
expect("np.allclose(ssm_recurrent(x300, 0.97, 0.3, 1.5), ssm_convolution(x300, 0.97, 0.3, 1.5), atol=1e-12)", np.allclose(ssm_recurrent(x300, 0.97, 0.3, 1.5), ssm_convolution(x300, 0.97, 0.3, 1.5), atol=1e-12))
expect_raises(TypeError, ssm_recurrent, tea, "0.5", 1, 1, match="A")


def plot_ssm_kernels(decays, steps, language="en"):
    """The kernel C A^k B (B = C = 1) against the age k of an input, one curve per keep factor A."""
    kernels = [ssm_kernel(A, 1.0, 1.0, steps) for A in decays]  # validates every A and steps before drawing
    if not 1 <= len(kernels) <= 3:
        raise ValueError(f"draw one to three keep factors (three colours), got {len(kernels)}")
    k = np.arange(steps)
    fig, ax = plt.subplots(figsize=(5.6, 2.7))
    for A, kernel, color in zip(decays, kernels, (Palette.RED, Palette.ORANGE, Palette.BLUE)):
        ax.plot(k, kernel, color=color, label=f"A = {A}")
    ax.set_xlabel(localized(language, "steps since the input arrived (k)", "шагов с момента входа (k)"))
    ax.set_ylabel(localized(language, "weight C·A^k·B", "вес C·A^k·B"))
    ax.set_title(localized(language, "How fast a fixed SSM forgets", "Как быстро забывает фиксированная SSM"))
    ax.legend(fontsize=9)
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.18, top=0.88)
    return fig


show_figure(
    plot_ssm_kernels((0.5, 0.9, 0.99), 151, language=LANGUAGE),
    "The x-axis is how many steps ago an input arrived, the y-axis how much it still counts in today's output. "
    "With A = 0.5 (red) an input is forgotten within a few steps; with 0.9 within a few dozen; with 0.99 (blue) it "
    "still counts about a fifth after 150 steps. A real layer has thousands of channels with different A, so it "
    "remembers at many time scales at once.",
)
print(f"A = 0.99 after 150 steps: weight {0.99 ** 150:.2f}")


# %% [markdown]
# ### Селективные SSM (Mamba): каждый токен задаёт свой шаг
#
# **Идея.** Фиксированная SSM обращается со всеми токенами одинаково, поэтому ей приходится либо записывать
# много (и быстро забывать), либо записывать мало (и так и не усвоить важный токен). Mamba ([Gu и Dao, 2023](https://arxiv.org/abs/2312.00752))
# вычисляет размер шага $\Delta_t$ по каждому токену: большой шаг перезаписывает состояние этим токеном,
# крошечный оставляет состояние в покое. $B$ и $C$ **тоже вычисляются по токену**,
# $B_t = W_B u_t$ и $C_t = W_C u_t$, так что токен решает, что он записывает и что считывает выход;
# фиксированным (обучаемым) параметром остаётся только скорость затухания $A$. *Дискретизация* превращает
# шаг в множители сохранения и записи для этого токена. В примере ниже $B_t = B$ и $C_t = C$ зафиксированы,
# чтобы выделить действие $\Delta_t$.
#
# **Экстраполятор нулевого порядка (zero-order hold) в одну строку.** Непрерывное состояние подчиняется уравнению
# $h'(\tau) = A\,h(\tau) + B\,x$; будем считать вход постоянным на шаге длины $\Delta$ и решим:
# $h(\tau + \Delta) = e^{\Delta A}\,h(\tau) + \frac{e^{\Delta A} - 1}{A}\,B\,x$ — это и есть $\bar A$ и $\bar B$ ниже.
#
# $$\Delta_t = \operatorname{softplus}(w\,u_t + \beta), \qquad \bar{A}_t = e^{\Delta_t A}$$
#
# $$\bar{B}_t = \frac{e^{\Delta_t A} - 1}{A}\, B_t, \qquad h_t = \bar{A}_t\, h_{t-1} + \bar{B}_t\, x_t, \qquad y_t = C_t\, h_t$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $u_t$ | что модель видит о токене $t$; здесь — метка, 1 для важного токена | 1 или 0 |
# | $w$, $\beta$ | обучаемые вес и смещение (здесь заданы вручную) | 10, $-5$ |
# | $\operatorname{softplus}(x)$ | $\log(1 + e^x)$: гладкая, всегда положительная «рампа» | softplus(5) = 5.007 |
# | $A$ | непрерывная скорость затухания, отрицательная (`a` в коде) | $-1$ |
# | $B_t$, $C_t$ | множители записи и чтения; в Mamba вычисляются по токену, здесь фиксированы (`b`, `c`) | 1, 1 |
# | $\bar{A}_t$, $\bar{B}_t$ | множители сохранения и записи этого токена | 0.0067 и 0.9933 для отмеченного |
#
# **Вручную.** Отмеченное значение 7 получает $\Delta = \operatorname{softplus}(5) = 5.007$, поэтому
# $\bar{A} = e^{-5.007} = 0.0067$ и $\bar{B} = 0.9933$: состояние становится примерно $0.9933 \cdot 7 = 6.95$.
# У каждого из девяти обычных токенов после него $\Delta = \operatorname{softplus}(-5) = 0.0067$, и каждый
# сохраняет 0.9933 состояния: в конце $6.95 \cdot 0.9933^9 \approx 6.55$ (плюс немного шума).

# %%
def softplus(x):
    """log(1 + e^x), computed without overflow; always positive, so a step size never goes negative."""
    return np.logaddexp(0.0, require_array("x", x).astype(float))


def discretize(delta, a=-1.0, b=1.0):
    """Keep and write factors of a step size delta (zero-order hold): (e^(delta a), (e^(delta a) - 1) / a * b)."""
    delta = require_array("delta", delta).astype(float)
    if np.any(delta <= 0) or require_real("a", a) >= 0:
        raise ValueError("need positive step sizes and a negative decay rate a (the state must fade)")
    keep = np.exp(delta * a)
    write = (keep - 1.0) / a * require_real("b", b)
    return keep, require_finite_result("the write factor", write, f"(e^(delta a) - 1) / a * b overflows float64 for a = {a:g}, b = {b:g}")


def selective_ssm(x, delta, a=-1.0, b=1.0, c=1.0):
    """One-channel selective SSM: each step has its own keep and write factors from its own step size."""
    x = require_array("x", x, ndim=1).astype(float)
    delta = require_array("delta", delta, ndim=1)
    if delta.shape != x.shape:
        raise ValueError(f"need one step size per input; got {delta.size} step sizes for {x.size} inputs")
    keep, write = discretize(delta, a, b)
    c = require_real("c", c)
    h, y = 0.0, np.empty_like(x)
    for t in range(len(x)):
        h = keep[t] * h + write[t] * x[t]
        y[t] = c * h
    return y


RECALL_VALUES = (0.3, -0.5, 7.0, 0.8, -0.2, 0.6, -0.9, 0.4, 0.1, -0.3, 0.5, -0.6)  # a marked 7, then nine noise tokens
RECALL_MARKERS = (0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
deltas = softplus(10.0 * np.array(RECALL_MARKERS) - 5.0)
selective = selective_ssm(RECALL_VALUES, deltas)
grid = np.geomspace(1e-3, 10, 60)  # fixed step sizes to try
fixed_final = [selective_ssm(RECALL_VALUES, np.full(len(RECALL_VALUES), d))[-1] for d in grid]
best_delta = float(grid[int(np.argmax(fixed_final))])
print(f"marked token: delta {deltas[2]:.3f}, keep {discretize(deltas[2])[0]:.4f}, write {discretize(deltas[2])[1]:.4f}; "
      f"ordinary: delta {deltas[0]:.4f}")
print(f"final state: selective {selective[-1]:.2f}; best fixed delta ({best_delta:.2f}) {max(fixed_final):.2f}")
REFERENCE.check("selective.delta_mark", float(deltas[2]), rtol=1e-12)
REFERENCE.check("selective.delta_plain", float(deltas[0]), rtol=1e-12)
REFERENCE.check("selective.final_state", float(selective[-1]), rtol=1e-12)
REFERENCE.check("selective.best_fixed_final_state", max(fixed_final), rtol=1e-12)
expect_raises(ValueError, discretize, 0.0, match="positive")
expect_raises(ValueError, discretize, 1.0, a=0.5, match="negative")
expect_raises(ValueError, discretize, 1.0, a=0.0, match="negative")
expect_raises(ValueError, discretize, [1.0, 0.0], match="positive")  # one bad step among good ones is enough
contract_close("delta = ln 2 / 2 with a = -2, b = 3 keeps e^(-ln 2) = 0.5 and writes (0.5 - 1) / -2 * 3 = 0.75",
               "discretize(log(2) / 2, a=-2, b=3)", discretize(math.log(2) / 2, a=-2.0, b=3.0), [0.5, 0.75],
               "keep = e^(delta a), write = (keep - 1) / a * b")
expect_raises(ValueError, selective_ssm, RECALL_VALUES, deltas[:3], match="one step size per input")
expect_raises(TypeError, softplus, None, match="x")


def plot_selective_recall(values, selective, fixed, language="en"):
    """Inputs as bars; the selective state and fixed-step states as lines, position by position."""
    values, selective = require_array("values", values, ndim=1), require_array("selective", selective, ndim=1)
    if not isinstance(fixed, dict) or not 1 <= len(fixed) <= 2:
        raise TypeError(f"fixed must be a dict of one or two {{step size: states}}, got {type(fixed).__name__}")
    fixed = {require_real("step size", delta): require_array("fixed states", states, ndim=1) for delta, states in fixed.items()}
    if any(len(states) != len(values) for states in [selective, *fixed.values()]):
        raise ValueError(f"every line needs one state per input ({len(values)})")
    t = np.arange(len(values))
    fig, ax = plt.subplots(figsize=(6.4, 2.9))
    ax.bar(t, values, color=Palette.BORDER, label=localized(language, "input (marked 7 at position 2)", "вход (отмеченная 7 на позиции 2)"))
    ax.plot(t, selective, "o-", color=Palette.BLUE, label=localized(language, "selective: Δ from each token", "селективная: Δ от каждого токена"))
    for (delta, states), color in zip(fixed.items(), (Palette.RED, Palette.ORANGE)):
        ax.plot(t, states, "o-", color=color, markersize=4, label=localized(language, f"fixed Δ = {delta:.2f}", f"фиксированная Δ = {delta:.2f}"))
    ax.set_xlabel(localized(language, "position in the sequence", "позиция в последовательности"))
    ax.set_ylabel(localized(language, "value / state", "значение / состояние"))
    ax.set_title(localized(language, "Remembering one marked token through noise", "Запомнить один отмеченный токен среди шума"))
    ax.legend(fontsize=8, loc="center right")
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.17, top=0.89)
    return fig


show_figure(
    plot_selective_recall(RECALL_VALUES, selective, {
        best_delta: selective_ssm(RECALL_VALUES, np.full(len(RECALL_VALUES), best_delta)),
        5.0: selective_ssm(RECALL_VALUES, np.full(len(RECALL_VALUES), 5.0)),
    }, language=LANGUAGE),
    "Grey bars are the inputs, with the marked 7 at position 2. The blue line (selective) jumps to about 7 at the "
    "marked token and barely moves afterwards, because every later token has a tiny step. The red line is the best "
    "single fixed step: it can only write a small part of each input, so the 7 lifts it a little and it ends low. "
    "The orange line is a large fixed step: it copies whatever came last, so the 7 is gone one step later.",
)


# %% [markdown]
# ### Параллельное обучение селективной SSM: сканирование
#
# **Идея.** Когда $\bar{A}_t$ меняется на каждом шаге, единого ядра нет, а значит, нет и свёртки. Но шаги
# компонуются: «умножить на $\lambda_1$, прибавить $\mu_1$», затем «умножить на $\lambda_2$, прибавить $\mu_2$» —
# это снова один шаг того же вида. Слияние соседей, затем соседей через два, затем через четыре
# вычисляет все состояния за $\lceil \log_2 T \rceil$ раундов независимых слияний — это параллельное
# сканирование (Mamba выполняет его в быстрой памяти на кристалле). Состояние каждой позиции — это $\mu$
# её слитого шага. (Для селективной SSM $\lambda_t = \bar A_t$ и $\mu_t = \bar B_t x_t$.)
#
# $$(\lambda_1, \mu_1) \circ (\lambda_2, \mu_2) = \left(\lambda_1 \lambda_2,\; \lambda_2 \mu_1 + \mu_2\right), \qquad \text{rounds} = \lceil \log_2 T \rceil$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $(\lambda, \mu)$ | один шаг: $h \mapsto \lambda h + \mu$ (`a` и `b` в коде) | $(0.5, 1)$ |
# | $\circ$ | «сначала этот шаг, потом тот» | |
# | $\lambda_2 \mu_1 + \mu_2$ | добавка первого шага, ослабленная вторым, плюс собственная добавка второго | $0.5 \cdot 1 + 0 = 0.5$ |
# | $\lceil \log_2 T \rceil$ | число раундов: сколько раз $T$ можно поделить пополам, с округлением вверх | 10 для $T = 1{,}024$ |
#
# **Вручную.** Шаги с чаем: $(0.5, 1), (0.5, 0), (0.5, 0), (0.5, 2)$. Раунд 1 сливает каждый шаг с его
# левым соседом: $(0.5, 1), (0.25, 0.5), (0.25, 0), (0.25, 2)$. Раунд 2 сливает каждый с результатом,
# стоящим на два места левее: $(0.25, 0.5) \circ (0.25, 2) = (0.0625, 2.125)$. Части $\mu$ равны
# $1, 0.5, 0.25, 2.125$ — это все состояния цикла, полученные за $\log_2 4 = 2$ раунда.

# %% tags=["exercise"]
# Exercise 11: Вычислите все состояния h_t = a_t h_(t-1) + b_t (h_0 = 0) параллельным сканированием.
# В каждом раунде каждая позиция сливается с позицией, стоящей на `shift` мест раньше (до начала
# используйте шаг, который ничего не делает, (1, 0)): (a_prev, b_prev), затем (a, b) дают (a_prev * a, a * b_prev + b).
# Удваивайте `shift` каждый раунд, пока он не достигнет T. Верните (states, rounds). Не изменяйте a и b.
def parallel_scan(a, b):
    """Every state of h_t = a_t h_(t-1) + b_t (h_0 = 0) in ceil(log2 T) rounds of merges; returns (states, rounds)."""
    a, b = require_array("a", a, ndim=1), require_array("b", b, ndim=1)
    if a.shape != b.shape:
        raise ValueError(f"a and b need one entry per step; got {a.size} and {b.size}")
    # |h_t| <= sum|b| * prod max(1, |a|), and so is every product a merge forms: refuse, before scanning, what could overflow.
    with np.errstate(divide="ignore"):
        log_bound = np.log(np.abs(b).sum()) + np.log(np.maximum(np.abs(a), 1.0)).sum()
    if log_bound > np.log(np.finfo(float).max):
        raise FloatingPointError(f"the scan's states or products could grow past float64's largest number (about 1.8e308): "
                                 f"sum|b| * prod max(1, |a|) is about e^{log_bound:.0f}; scale a or b down")
    # Your code here.
    raise NotImplementedError('Exercise 11: Вычислите все состояния h_t = a_t h_(t-1) + b_t (h_0 = 0) параллельным сканированием. В каждом раунде каждая позиция сливается с позицией, стоящей на `shift` мест раньше (до начала используйте шаг, который ничего не делает, (1, 0)): (a_prev, b_prev), затем (a, b) дают (a_prev * a, a * b_prev + b). Удваивайте `shift` каждый раунд, пока он не достигнет T. Верните (states, rounds). Не изменяйте a и b.')


# %%
check_exercise("Exercise 11", check_parallel_scan_contract, parallel_scan, globals())

# %%
states, rounds = parallel_scan([0.5] * 4, [1.0, 0.0, 0.0, 2.0])
print(f"tea steps: states {states.tolist()} in {rounds} rounds")
keep, write = discretize(deltas)
scanned, _ = parallel_scan(keep, write * np.array(RECALL_VALUES))
print(f"the recall task through the scan: max |difference| from the loop {np.abs(scanned - selective).max():.1e}")
expect("np.allclose(scanned, selective, atol=1e-12)", np.allclose(scanned, selective, atol=1e-12))
_, rounds_1024 = parallel_scan(np.full(1024, 0.99), rng.standard_normal(1024))
print(f"1,024 steps: {rounds_1024} rounds")
REFERENCE.check("ssm.scan_rounds_1024", rounds_1024)
expect_raises(ValueError, parallel_scan, [0.5, 0.5], [1.0], match="one entry per step")
with np.errstate(over="ignore", invalid="ignore"):
    expect_raises(FloatingPointError, parallel_scan, np.full(6, 1e200), np.ones(6), match="float64")  # the true states pass 1e308
    expect_raises(FloatingPointError, parallel_scan, [1.0, 1.0], [1e308, 1e308], match="float64")  # no growing a, but h_2 = 2e308
    expect_raises(FloatingPointError, parallel_scan, [0.1, 3.0], [1e308, 0.0], match="float64")  # h_2 = 3e308: a shrinking a_1 does not pay for a growing a_2
expect("a decaying scan of 1e307-sized inputs is not refused", float(parallel_scan([0.5, 0.5], [1e307, 1e307])[0][-1]), "==", 1.5e307)


# %%
def _merged_step(a, b, first, last):
    """Steps first..last composed into one (a, b): the product of their a's and the state they leave from h = 0."""
    return float(np.prod(a[first:last + 1])), float(parallel_scan(a[first:last + 1], b[first:last + 1])[0][-1])


tea_a, tea_b = [0.5] * 4, [1.0, 0.0, 0.0, 2.0]
tea_rounds = parallel_scan(tea_a, tea_b)[1]
scan_levels = [[_merged_step(tea_a, tea_b, max(0, t - 2**r + 1), t) for t in range(4)] for r in range(tea_rounds + 1)]
expect("the last round of the scan tree holds every state of the loop", np.allclose([b for _, b in scan_levels[-1]], states))
expect("round 1 of the tree is the by-hand (0.5, 1), (0.25, 0.5), (0.25, 0), (0.25, 2)", scan_levels[1], "==", [(0.5, 1.0), (0.25, 0.5), (0.25, 0.0), (0.25, 2.0)])
expect("round 2 ends with the merged step (0.0625, 2.125)", scan_levels[2][3], "==", (0.0625, 2.125))
show_figure(
    draw_scan_tree(scan_levels, language=LANGUAGE),
    "Each column is one time step, each box a step (a, b) that means h becomes a·h + b. One row down is one round: "
    "every box merges with the box shift places to its left (blue diagonal), and a box with nothing that far left "
    "passes straight down. After log2(4) = 2 rounds the b parts of the bottom row are every state of the loop: "
    "1, 0.5, 0.25, 2.125. The merges in one row are independent, so a GPU does each row at once.",
)


# %% [markdown]
# ### Гибридный кэш: несколько чемоданов среди множества рюкзаков
#
# Слой SSM несёт рюкзак фиксированного размера: число каналов, умноженное на число чисел состояния, — что при
# 10 токенах, что при 10 миллионах. Слой внимания несёт чемодан, который растёт с каждым токеном. Гибриды
# вроде Jamba ставят один слой внимания на каждые восемь слоёв ([Lieber и др., 2024](https://arxiv.org/abs/2403.19887)):
# слои внимания сохраняют точный поиск, слои SSM держат память плоской. (Jamba поддерживает контекст
# в 256K токенов; до 140K токенов из них помещаются на одну GPU с 80 GB, согласно
# [карточке модели Jamba-v0.1](https://huggingface.co/ai21labs/Jamba-v0.1).)
#
# $$\text{bytes} = L_{\text{att}} \cdot n \cdot 2\,H_{kv}\,d_h\,b \;+\; \left(L - L_{\text{att}}\right) \cdot D \cdot N \cdot b$$
#
# | Обозначение | Смысл | Сквозной пример |
# |---|---|---|
# | $L$, $L_{\text{att}}$ | всего слоёв и слоёв внимания среди них | 32, 4 |
# | $2\,H_{kv}\,d_h\,b$ | кэш одного слоя внимания на токен | 4,096 байт |
# | $D$, $N$ | каналы SSM, чисел состояния на канал | 4,096, 16 |
#
# **Вручную.** Один слой SSM хранит $4{,}096 \cdot 16 \cdot 2 = 131{,}072$ байта (128 KiB) на любой
# длине, *если считать*, что у него $D = 4{,}096$ каналов (ширина модели) по 16 бит и больше ничего. Реальные
# слои Mamba расширяются до $d_{\text{inner}} = 2d = 8{,}192$ каналов, добавляют состояние свёртки из
# $d_{\text{inner}} \cdot (4 - 1)$ чисел (ширина ядра 4) и часто хранят и то и другое в fp32: это
# $(8{,}192 \cdot 16 + 8{,}192 \cdot 3) \cdot 4 = 622{,}592$ байта на слой, в 4.75 раза больше, и
# по-прежнему не зависит от длины (ячейка ниже вычисляет оба варианта); один слой внимания хранит
# $131{,}072 \cdot 4{,}096$ байт = 537 MB при 128k токенов. При 4 слоях внимания и 28 слоях SSM кэш на 128k
# падает с 17.2 GB примерно до 2.15 GB, то есть в восемь раз.

# %%
def ssm_state_bytes(channels, state_size, bytes_per_value=2):
    """What an SSM layer carries between tokens: channels x state numbers, at any context length."""
    return require_int("channels", channels, minimum=1) * require_int("state_size", state_size, minimum=1) * require_int("bytes_per_value", bytes_per_value, minimum=1)


def hybrid_cache_bytes(context, layers=32, attention_layers=4, kv_heads=8, head_dim=128, channels=4096, state_size=16, bytes_per_value=2):
    """A hybrid stack: attention layers keep a growing KV cache, the other layers a fixed SSM state."""
    context = require_int("context", context, minimum=1)
    attention_layers = require_int("attention_layers", attention_layers, minimum=0, maximum=require_int("layers", layers, minimum=1))
    attention = kv_cache_bytes(context, [None] * attention_layers, kv_heads, head_dim, bytes_per_value) if attention_layers else 0
    return attention + (layers - attention_layers) * ssm_state_bytes(channels, state_size, bytes_per_value)


hybrid_rows = {
    "ssm_layer_bytes": ssm_state_bytes(4096, 16),
    "attention_layer_bytes_128k": kv_cache_bytes(131_072, [None], 8, 128),
    "all_attention_bytes_128k": hybrid_cache_bytes(131_072, attention_layers=32),
    "hybrid_4_of_32_bytes_128k": hybrid_cache_bytes(131_072),
    "pure_ssm_stack_bytes": hybrid_cache_bytes(131_072, attention_layers=0),
}
for key, value in hybrid_rows.items():
    print(f"{key:28s} {value:>16,} bytes = {value / GB:8.4f} GB")
    REFERENCE.check(f"hybrid.{key}", value)
expect('hybrid_rows["all_attention_bytes_128k"] == bills[1]["cache_bytes"]', hybrid_rows["all_attention_bytes_128k"], "==", bills[1]["cache_bytes"])
# The same layer under Mamba's real shapes: d_inner = 2 d channels, a width-4 convolution state, fp32.
mamba_real_layer = ssm_state_bytes(2 * 4096, 16, 4) + ssm_state_bytes(2 * 4096, 4 - 1, 4)
print(f"one SSM layer: simplified (4,096 x 16, 16-bit) {hybrid_rows['ssm_layer_bytes']:,} bytes; "
      f"Mamba-shaped (8,192 x 16 + conv 8,192 x 3, fp32) {mamba_real_layer:,} bytes, x{mamba_real_layer / hybrid_rows['ssm_layer_bytes']:.2f}")
check_stated("the Mamba-shaped SSM layer in bytes", mamba_real_layer, 622_592, 0)
check_stated("its ratio to the simplified layer", mamba_real_layer / hybrid_rows["ssm_layer_bytes"], 4.75, 2)
expect_raises(ValueError, hybrid_cache_bytes, 1024, attention_layers=33, match="attention_layers")
expect_raises(ValueError, hybrid_cache_bytes, 1024, attention_layers=-1, match="attention_layers")
expect_raises(ValueError, hybrid_cache_bytes, 1024, layers=0, attention_layers=0, match="layers")
expect_raises(TypeError, hybrid_cache_bytes, "abc", match="context")
expect_raises(ValueError, hybrid_cache_bytes, 0, attention_layers=0, match="context")
# By hand, at one byte per number: 3 tokens x (K + V) x 1 head x width 1 in the attention layer, plus a 1 x 1 state.
expect("one attention and one SSM layer of size 1, 3 tokens: 6 + 1 bytes", hybrid_cache_bytes(3, layers=2, attention_layers=1, kv_heads=1, head_dim=1, channels=1, state_size=1, bytes_per_value=1), "==", 7)
expect("a single SSM layer of one number at one byte holds 1 byte", hybrid_cache_bytes(1, layers=1, attention_layers=0, channels=1, state_size=1, bytes_per_value=1), "==", 1)
expect("ssm_state_bytes(3, 5, 7) == 105 and ssm_state_bytes(1, 1, 1) == 1", (ssm_state_bytes(3, 5, 7), ssm_state_bytes(1, 1, 1)), "==", (105, 1))
for argument in ("channels", "state_size", "bytes_per_value"):
    expect_raises(ValueError, ssm_state_bytes, **{"channels": 1, "state_size": 1, "bytes_per_value": 1, argument: 0}, match=argument)
report_section("State-space models, the scan and the hybrid cache", globals())

# %%
jamba_kinds = ["attention" if layer % 8 == 4 else "ssm" for layer in range(32)]  # Jamba-v0.1: attn_layer_offset 4, period 8
expect("Jamba's drawn stack has 4 attention layers", jamba_kinds.count("attention"), "==", 4)
expect("the context drawn is 131,072 tokens", context, "==", 131_072)
layer_stacks = [
    (localized(LANGUAGE, "Running example, all attention", "Пример, только внимание"), ["attention"] * 32,
     hybrid_rows["all_attention_bytes_128k"]),
    (localized(LANGUAGE, "Hybrid, 1 attention layer in 8", "Гибрид, 1 слой внимания из 8"), jamba_kinds, hybrid_rows["hybrid_4_of_32_bytes_128k"]),
    ("gpt-oss-120b", ["attention" if w is None else "window" for w in hybrid_windows], hybrid["hybrid_total_bytes"]),
]
show_figure(
    draw_layer_stacks([(name, localized(LANGUAGE, f"{size / GB:.2f} GB at 128k tokens", f"{size / GB:.2f} ГБ при 128k токенов"), kinds)
                       for name, kinds, size in layer_stacks], language=LANGUAGE),
    "One row per stack, one block per layer, from the first layer (left) to the last. Orange layers keep a KV "
    "cache that grows with every token, yellow ones at most a window, blue ones a fixed state "
    f"({hybrid_rows['ssm_layer_bytes'] / KIB:.0f} KiB here) at any length. The note under each name is the stack's "
    "cache at 128k tokens: keeping 4 of 32 layers as attention, at "
    f"positions {', '.join(str(i) for i, kind in enumerate(jamba_kinds) if kind == 'attention')} as in Jamba-v0.1's "
    f"config, cuts {layer_stacks[0][2] / GB:.2f} GB to {layer_stacks[1][2] / GB:.2f} GB; gpt-oss-120b alternates windowed and "
    "full layers, so only half of its layers grow.",
)

# %% [markdown]
# ## 13. Латентное внимание (MLA): кэшируйте ингредиенты, а блюдо не готовьте вовсе
#
# **Идея.** Ключи и значения всех голов вычисляются из одного и того же токена, поэтому они сильно
# избыточны. Многоголовое латентное внимание (DeepSeek-V2, [DeepSeek-AI, 2024](https://arxiv.org/abs/2405.04434))
# сжимает каждый токен в короткий латентный вектор $c$ обучаемой понижающей проекцией, кэширует только $c$
# и восстанавливает ключи и значения повышающими проекциями $W^{UK}$ и $W^{UV}$. Более того: поскольку
# $q \cdot (c\,W^{UK}) = (q\,{W^{UK}}^\top) \cdot c$, повышающую проекцию можно *поглотить* запросом,
# а $W^{UV}$ — выходной проекцией, так что полные ключи и значения не строятся вовсе. Одно не
# поглощается: поворотные позиционные эмбеддинги поворачивают каждый ключ в зависимости от его позиции, а
# поворот, зависящий от позиции ключа, нельзя свернуть в одну фиксированную матрицу на стороне запроса.
# Поэтому MLA передаёт позицию в отдельном небольшом RoPE-ключе, общем для всех голов и хранящемся в кэше
# рядом с латентным вектором: 512 + 64 числа на токен на слой в DeepSeek-V2 и V3.
#
# Если смотреть со стороны кэша, **декодирование в MLA с поглощёнными проекциями — это внимание с одной общей
# KV-головой (multi-query attention, MQA) поверх латентных векторов ширины 576**: каждая из 128 голов запросов вычисляет
# оценку для одного и того же закэшированного вектора $(c_j, \rho_j)$ из 512 + 64 = 576 чисел и считывает
# в качестве значения один и тот же вектор $c_j$ ширины 512. Вот почему ядра MLA похожи на ядра MQA
# с необычно широкой головой. Масштаб оценок равен $1/\sqrt{d_{\text{nope}} + d_{\text{rope}}} = 1/\sqrt{192}$;
# когда DeepSeek-V3 работает за пределами исходного контекста с YaRN, масштаб дополнительно умножается на
# $\text{mscale}^2$, где $\text{mscale} = 0.1 \ln(\text{factor}) + 1$
# ([`inference/model.py`](https://github.com/deepseek-ai/DeepSeek-V3)); при коэффициенте YaRN, равном 40,
# это около 1.37, так что масштаб вырастает примерно в 1.87 раза.
#
# $$s_{ij}^{(h)} = \frac{\left(q_i^{(h)} {W_h^{UK}}^\top\right) \cdot c_j \;+\; r_i^{(h)} \cdot \rho_j}{\sqrt{d_{\text{nope}} + d_{\text{rope}}}}$$
#
# $$o_i = \sum_h \left(\sum_j p_{ij}^{(h)} c_j\right) W_h^{UV} W_h^{O}$$
#
# | Обозначение | Смысл | DeepSeek-V3 |
# |---|---|---|
# | $c_j$ | закэшированный латентный вектор токена $j$ | 512 чисел |
# | $\rho_j$ | закэшированный RoPE-ключ токена $j$ (уже повёрнутый), общий для всех голов | 64 числа |
# | $q_i^{(h)}$, $r_i^{(h)}$ | запрос головы $h$ без позиции и его повёрнутая RoPE-часть | 128 и 64 |
# | $W_h^{UK}$, $W_h^{UV}$ | повышающие проекции головы $h$ из латентного вектора в ключ и значение | $512 \times 128$ каждая |
# | $W_h^{O}$ | срез выходной проекции, относящийся к голове $h$ | $128 \times d_{\text{model}}$ |
# | $s_{ij}^{(h)}$, $p_{ij}^{(h)}$ | оценка ключа $j$ для запроса $i$ в голове $h$ и её softmax по $j$ | |
#
# **Вручную.** Токен $x = (1, 0, 2, 1)$ и понижающая проекция, которая складывает координаты 1+3 и
# 2+4, дают латентный вектор $c = (3, 1)$: в кэше 2 числа вместо 8 (две головы ширины 2, ключ и
# значение). Повышающая проекция копирует его в обе головы: $k = (3, 1, 3, 1)$. Для $q = (1, 2, 0, 1)$
# получаем $q \cdot k = 3 + 2 + 0 + 1 = 6$, а поглощённый запрос $q\,{W^{UK}}^\top = (1, 3)$ даёт
# $(1, 3) \cdot (3, 1) = 6$, так и не построив $k$.

# %%
# DeepSeek-V3's score scale past its original context: YaRN's mscale, squared (inference/model.py).
yarn_factor, yarn_mscale = 40, 1.0  # config.json rope_scaling: factor 40, mscale 1.0
mscale = 0.1 * yarn_mscale * math.log(yarn_factor) + 1.0
print(f"MLA scale 1/sqrt(192) = {1 / math.sqrt(128 + 64):.4f}; with YaRN x mscale^2 = {mscale:.3f}^2 = {mscale ** 2:.3f}")
check_stated("mscale", mscale, 1.37, 2)
check_stated("mscale squared", mscale**2, 1.87, 2)
check_stated("the absorbed MQA head width", 512 + 64, 576, 0)

x_token = np.array([1.0, 0.0, 2.0, 1.0])
W_down = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])  # (d_model, d_c)
W_up_k = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])  # (d_c, heads x d_head)
q_token = np.array([1.0, 2.0, 0.0, 1.0])
latent_c = x_token @ W_down
key_full = latent_c @ W_up_k
q_absorbed = q_token @ W_up_k.T
print(f"latent {latent_c.tolist()}, key {key_full.tolist()}, q . k = {q_token @ key_full:.0f}, "
      f"absorbed query {q_absorbed.tolist()}, absorbed score {q_absorbed @ latent_c:.0f}")
REFERENCE.check("latent_example.latent", latent_c)
REFERENCE.check("latent_example.key", key_full)
REFERENCE.check("latent_example.q_latent", q_absorbed)
REFERENCE.check("latent_example.score", q_absorbed @ latent_c)


def _mla_shapes(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask):
    """Validate the MLA tensors (see mla_expanded_attention) and return them as arrays with the mask."""
    q_nope, q_rope = require_array("q_nope", q_nope, ndim=3), require_array("q_rope", q_rope, ndim=3)
    latent, k_rope = require_array("latent", latent, ndim=2), require_array("k_rope", k_rope, ndim=2)
    W_uk, W_uv, W_o = require_array("W_uk", W_uk, ndim=3), require_array("W_uv", W_uv, ndim=3), require_array("W_o", W_o, ndim=3)
    (H, T_q, d_nope), (T_k, d_c), d_rope = q_nope.shape, latent.shape, k_rope.shape[1]
    expected = {"q_rope": (H, T_q, d_rope), "k_rope": (T_k, d_rope), "W_uk": (H, d_c, d_nope), "W_uv": (H, d_c, W_uv.shape[2]), "W_o": (H, W_uv.shape[2], W_o.shape[2])}
    for name, array in (("q_rope", q_rope), ("k_rope", k_rope), ("W_uk", W_uk), ("W_uv", W_uv), ("W_o", W_o)):
        if array.shape != expected[name]:
            raise ValueError(f"{name} must have shape {expected[name]} to match q_nope {q_nope.shape} and latent {latent.shape}; got {array.shape}")
    if hasattr(mask, "detach"):  # a tensor mask, perhaps one that requires grad
        mask = require_tensor("mask", mask, ndim=2, finite=False).detach().numpy()
    mask = np.zeros((T_q, T_k)) if mask is None else _as_additive(mask, (T_q, T_k), np.float64)
    if not np.isfinite(mask).any(axis=1).all():
        raise ValueError("every query needs at least one cached token it may read; a mask row is fully blocked")
    return q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask


def mla_expanded_attention(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask=None):
    """Latent attention the plain way: rebuild every head's keys and values from the cache, then attend.

    q_nope [H, T_q, d_nope], q_rope [H, T_q, d_rope], latent [T_k, d_c], k_rope [T_k, d_rope],
    W_uk [H, d_c, d_nope], W_uv [H, d_c, d_v], W_o [H, d_v, d_model]; returns [T_q, d_model].
    """
    q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask = _mla_shapes(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask)
    keys = np.concatenate([latent @ W_uk, np.broadcast_to(k_rope, (len(W_uk),) + k_rope.shape)], axis=-1)  # (H, T_k, d_nope + d_rope)
    heads = sdpa(np.concatenate([q_nope, q_rope], axis=-1), keys, latent @ W_uv, mask)  # (H, T_q, d_v)
    return np.einsum("hqv,hvm->qm", heads, W_o)  # sum the heads through the output projection


# %% tags=["exercise"]
# Exercise 12: Вычислите внимание по латентному кэшу, не разворачивая его. Переведите запрос каждой головы в латентное
# пространство (q_nope @ W_uk^T), вычислите его оценки относительно латентных векторов, ПРИБАВЬТЕ RoPE-ветвь
# q_rope @ k_rope^T, умножьте на 1/sqrt(d_nope + d_rope), прибавьте маску и возьмите устойчивый softmax по
# закэшированным токенам. Смешайте латентные векторы с этими весами, затем примените W_uv @ W_o для каждой
# головы и сложите головы. Никогда не вычисляйте latent @ W_uk.
def mla_absorbed_attention(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask=None):
    """Latent attention with W_uk absorbed into the query and W_uv into the output: no key or value is rebuilt.

    Same arguments and result as mla_expanded_attention.
    """
    q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask = _mla_shapes(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask)
    # Your code here.
    raise NotImplementedError('Exercise 12: Вычислите внимание по латентному кэшу, не разворачивая его. Переведите запрос каждой головы в латентное пространство (q_nope @ W_uk^T), вычислите его оценки относительно латентных векторов, ПРИБАВЬТЕ RoPE-ветвь q_rope @ k_rope^T, умножьте на 1/sqrt(d_nope + d_rope), прибавьте маску и возьмите устойчивый softmax по закэшированным токенам. Смешайте латентные векторы с этими весами, затем примените W_uv @ W_o для каждой головы и сложите головы. Никогда не вычисляйте latent @ W_uk.')


# %%
check_exercise("Exercise 12", check_latent_absorption_contract, mla_absorbed_attention, globals())

# %%
mla_rng = np.random.default_rng(506)
Hm, Tq, Tk, d_c, d_nope, d_rope, d_v, d_model = 4, 3, 9, 8, 6, 2, 5, 12
mla_args = (mla_rng.normal(size=(Hm, Tq, d_nope)), mla_rng.normal(size=(Hm, Tq, d_rope)), mla_rng.normal(size=(Tk, d_c)),
            mla_rng.normal(size=(Tk, d_rope)), mla_rng.normal(size=(Hm, d_c, d_nope)), mla_rng.normal(size=(Hm, d_c, d_v)),
            mla_rng.normal(size=(Hm, d_v, d_model)))
decode_mask = additive_mask(np.arange(Tk)[None, :] <= (Tk - Tq + np.arange(Tq))[:, None])  # the last 3 of 9 tokens
expanded_out, absorbed_out = mla_expanded_attention(*mla_args, decode_mask), mla_absorbed_attention(*mla_args, decode_mask)
print(f"expanded vs absorbed: max |difference| {np.abs(expanded_out - absorbed_out).max():.1e}; cached numbers per token "
      f"{d_c + d_rope} instead of {Hm * (d_nope + d_rope + d_v)}")
expect("np.allclose(expanded_out, absorbed_out, atol=1e-12)", np.allclose(expanded_out, absorbed_out, atol=1e-12))
# The negative test: drop the RoPE branch and the outputs change, because position lives only there.
without_rope = mla_absorbed_attention(mla_args[0], np.zeros_like(mla_args[1]), *mla_args[2:], decode_mask)
print(f"absorbed without the RoPE branch: max |difference| {np.abs(without_rope - expanded_out).max():.2f} (must be large)")
expect("not np.allclose(without_rope, expanded_out, atol=1e-3)", not np.allclose(without_rope, expanded_out, atol=1e-3))
expect_raises(ValueError, mla_absorbed_attention, mla_args[0], mla_args[1][..., :1], *mla_args[2:], match="q_rope")
expect_raises(ValueError, mla_absorbed_attention, *mla_args, np.full((Tq, Tk), -np.inf), match="fully blocked")
first_row_blocked = decode_mask.copy()
first_row_blocked[0] = -np.inf  # the other two rows still read something
expect_raises(ValueError, mla_expanded_attention, *mla_args, first_row_blocked, match="fully blocked")
expect("a mask given as a tensor, even one that requires grad, is read like the array", np.allclose(
    mla_expanded_attention(*mla_args, torch.tensor(decode_mask, requires_grad=True)), expanded_out, atol=1e-12))
expect("without a mask every query reads all 9 cached tokens, expanded and absorbed alike",
       np.allclose(mla_expanded_attention(*mla_args), mla_absorbed_attention(*mla_args), atol=1e-12))
# Queries 300 times larger: scores span thousands, and differ by thousands between heads and rows, so a
# softmax shifted by anything but each row's own max overflows or underflows to NaN.
loud_args = (300 * mla_args[0], 300 * mla_args[1]) + mla_args[2:]
expect("with scores in the thousands, absorbed MLA still equals the expanded form",
       np.allclose(mla_absorbed_attention(*loud_args, decode_mask), mla_expanded_attention(*loud_args, decode_mask), atol=1e-9))

# %%
mla_widths = {"latent": 512, "rope": 64, "heads": 128}  # DeepSeek-V3: kv_lora_rank, qk_rope_head_dim, attention heads
expect("the MLA flow's widths give the section 5 bytes per token", mla_bytes_per_token(61, mla_widths["latent"], mla_widths["rope"]), "==", latent_bytes)
show_figure(
    draw_mla_flow(mla_widths["latent"], mla_widths["rope"], mla_widths["heads"], v2_convention // (61 * 2), language=LANGUAGE),
    f"Top row: what is stored. W_down squeezes each token into a latent c of {mla_widths['latent']} numbers, cached "
    f"with one shared {mla_widths['rope']}-number RoPE key: {mla_widths['latent'] + mla_widths['rope']} numbers per "
    "token and layer. The dashed box is what plain multi-head attention would "
    "cache and absorbed MLA never builds. Bottom row: how a query reads the cache. W_uk is folded into the query, "
    "which is scored against every cached c (its RoPE part against the RoPE key); the weights mix the same c's, "
    "and W_uv W_o turns the mix into the output. All heads read one shared cache: decoding is multi-query attention "
    f"over {mla_widths['latent'] + mla_widths['rope']}-wide latents.",
)


# %% [markdown]
# **Почему RoPE не поглощается.** Допустим, ключ поворачивается на свою позицию $n$ после повышающей
# проекции, $k_n = R_n W c$, а запрос — на свою позицию $m$, $q_m = R_m q$. Повороты складываются,
# $R_m^\top R_n = R_{n - m}$, поэтому оценка равна $q^\top R_{n-m} W c = \left(W^\top R_{n-m}^\top q\right) \cdot c$.
# «Поглощённый запрос» $W^\top R_{n-m}^\top q$ теперь зависит от позиции ключа $n$: своя матрица для
# каждого закэшированного токена, а это ровно то разворачивание, которого мы хотели избежать. Ячейка
# ниже проверяет это тождество и показывает, как поглощённый запрос меняется с $n$; рисунок прослеживает
# его компоненты по мере роста расстояния. Раздельная конструкция обходит проблему: у латентной части нет
# поворота (её поглощённый запрос — один фиксированный вектор), а позицию несёт небольшой RoPE-ключ.

# %%
def rotation(angle):
    """The 2 x 2 rotation by `angle` radians."""
    angle = require_real("angle", angle)
    return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])


W_small = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])  # (rotated width 2, latent width 3)
q_small, c_small = np.array([1.0, 0.5]), np.array([0.2, -0.4, 0.7])
m_pos, n_pos = 0.3, 1.1  # positions as angles (one RoPE frequency)
rotated_score = (rotation(m_pos) @ q_small) @ (rotation(n_pos) @ W_small @ c_small)
effective_query = W_small.T @ rotation(n_pos - m_pos).T @ q_small
contract_close("a quarter turn sends (1, 0) to (0, 1) and (0, 1) to (-1, 0)", "rotation(pi / 2)", rotation(math.pi / 2), [[0.0, -1.0], [1.0, 0.0]],
               "rows (cos, -sin) and (sin, cos)", atol=1e-15)
expect("abs(rotated_score - effective_query @ c_small) < 1e-12", abs(rotated_score - effective_query @ c_small), "<", 1e-12)
expect("not np.allclose(effective_query, W_small.T @ rotation(0.8 - m_pos).T @ q_small)", not np.allclose(effective_query, W_small.T @ rotation(0.8 - m_pos).T @ q_small))  # another key position, another query
distances = np.arange(0, 13) * 0.5
effective = np.array([W_small.T @ rotation(d).T @ q_small for d in distances])  # (distances, d_c)
print(f"absorbed query entries vary with the key's distance: ranges {np.ptp(effective, axis=0).round(2).tolist()}")


def plot_rope_obstruction(distances, effective, language="en"):
    """Entries of the absorbed query W^T R(n - m)^T q against the query-key distance: no single fixed vector."""
    distances, effective = require_array("distances", distances, ndim=1), require_array("effective", effective, ndim=2)
    if len(effective) != len(distances) or effective.shape[1] > 3:
        raise ValueError(f"need one row of at most 3 entries per distance; got {effective.shape} for {len(distances)} distances")
    fig, ax = plt.subplots(figsize=(6.6, 2.8))
    for k, (entry, color) in enumerate(zip(effective.T, (Palette.BLUE, Palette.ORANGE, Palette.GREEN))):
        ax.plot(distances, entry, "o-", color=color, markersize=3,
                label=localized(language, f"entry {k + 1}, rotated latent", f"элемент {k + 1}, повёрнутый латент"))
        ax.axhline(entry[0], color=color, linestyle="--", linewidth=1.2,
                   label=localized(language, f"entry {k + 1}, unrotated latent (MLA)", f"элемент {k + 1}, без поворота (MLA)"))
    ax.axhline(0, color=Palette.GREY, linewidth=0.8)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_xlabel(localized(language, "rotation angle of n - m (radians)", "угол поворота n - m (радианы)"))
    ax.set_ylabel(localized(language, "absorbed query entry", "элемент поглощённого запроса"))
    ax.set_title(localized(language, "RoPE on the latent: the absorbed query moves", "RoPE на латенте: поглощённый запрос меняется"))
    fig.subplots_adjust(left=0.11, right=0.62, bottom=0.18, top=0.88)
    return fig


show_figure(
    plot_rope_obstruction(distances, effective, language=LANGUAGE),
    "Each solid line is one entry of the absorbed query W^T R(n - m)^T q, which would have to be fixed for the "
    "absorption trick to work; the x-axis is the rotation between the query's and the key's positions. The entries "
    "swing as the key moves, so a rotated latent would need a new absorbed query for every cached token. The dashed "
    "line of the same colour is that entry when the latent is not rotated, as in MLA: flat, one vector for every key, "
    "while position travels in a separate 64-number key.",
)
report_section("Latent attention", globals())


# %% [markdown]
# ## 14. Квантованный KV-кэш: меньше битов и где хранить масштабы
#
# **Идея.** Будем хранить каждое закэшированное число как небольшой целочисленный код со знаком плюс общий
# масштаб: при $\nu$ битах коды лежат в диапазоне от $-(2^{\nu-1} - 1)$ до $2^{\nu-1} - 1$, а группа чисел делит
# один 16-битный масштаб — наибольший модуль в группе, делённый на старший код. Важно, какие именно числа
# делят масштаб. У ключей обычно есть несколько *каналов*, которые велики для каждого токена; если масштаб
# один на токен, эти каналы задают масштаб, а маленькие каналы округляются до нуля. Поэтому KIVI
# ([Liu и др., 2024](https://arxiv.org/abs/2402.02750)) квантует ключи поканально, а значения — по токенам,
# и доходит до 2 битов.
#
# $$\text{code} = \operatorname{round}\left(\frac{x}{\gamma}\right), \qquad \gamma = \frac{\max |x_{\text{group}}|}{2^{\nu-1} - 1}$$
#
# $$\text{bytes per token} = 2\,L\,H_{kv} \left(d_h \cdot \frac{\nu}{8} + \frac{16}{8}\right)$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $\nu$ | битов на код | 4: коды $-7 \dots 7$ |
# | $\gamma$ | масштаб группы (16-битный) | $0.7 / 7 = 0.1$ |
# | группа | числа с общим масштабом: вектор одного токена или один канал по всем токенам | |
# | $2\,L\,H_{kv}$ | векторы голов, которые хранит один токен | $2 \cdot 32 \cdot 8 = 512$ |
#
# **Вручную.** Ключ $(0.7, -0.3, 0.2, 0.04)$ при 4 битах: $\gamma = 0.1$, коды $(7, -3, 2, 0)$,
# после обратного чтения $(0.7, -0.3, 0.2, 0)$: маленькое 0.04 потеряно. В сквозном примере токен стоит
# $512 \cdot (128 \cdot 0.5 + 2) = 33{,}792$ байта вместо 131,072: в 3.9 раза меньше.

# %%
def quantize(x, bits, shared_axis):
    """Symmetric integer codes of x with one scale per group: the numbers along `shared_axis` share a scale."""
    x = require_array("x", x, min_ndim=1).astype(float)
    shared_axis = require_int("shared_axis", shared_axis, minimum=-x.ndim, maximum=x.ndim - 1)
    top = 2 ** (require_int("bits", bits, minimum=2, maximum=16) - 1) - 1  # largest code: 7 for 4 bits
    scale = np.abs(x).max(axis=shared_axis, keepdims=True) / top
    scale = np.where(scale > 0, scale, 1.0)  # an all-zero group keeps code 0 with any scale
    return np.round(x / scale).astype(np.int32), scale


def dequantize(codes, scale):
    """Numbers back from their codes and scales."""
    codes, scale = require_array("codes", codes), require_array("scale", scale)
    if scale.ndim != codes.ndim or any(s not in (1, c) for s, c in zip(scale.shape, codes.shape)):
        raise ValueError(f"scale of shape {scale.shape} does not broadcast against codes of shape {codes.shape}: "
                         "it needs the codes' rank, with 1 along each shared axis (as quantize returns it)")
    return codes * scale


def quantized_kv_bytes_per_token(layers, kv_heads, head_dim, bits, scale_bits=16):
    """Bytes per token of a quantized cache: each stored head vector costs its codes plus one scale."""
    for name, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim), ("bits", bits)):
        require_int(name, value, minimum=1)
    return 2 * layers * kv_heads * (head_dim * bits + require_int("scale_bits", scale_bits, minimum=0)) // 8


codes, scale = quantize([0.7, -0.3, 0.2, 0.04], 4, shared_axis=-1)
print(f"codes {codes.tolist()}, scale {scale.item():.2f}, read back {dequantize(codes, scale).round(2).tolist()}")
REFERENCE.check("quantized.codes_4bit", codes)
bytes_4bit = quantized_kv_bytes_per_token(32, 8, 128, 4)
print(f"running example: {bytes_4bit:,} bytes per token at 4 bits vs {per_token:,} at 16: x{per_token / bytes_4bit:.2f} smaller")
REFERENCE.check("quantized.bytes_per_token_4bit", bytes_4bit)
expect("quantized_kv_bytes_per_token(32, 8, 128, 16, scale_bits=0) == per_token", quantized_kv_bytes_per_token(32, 8, 128, 16, scale_bits=0), "==", per_token)
expect_raises(ValueError, quantize, [1.0], 1, shared_axis=-1, match="bits")
expect_raises(ValueError, dequantize, codes, np.ones(3), match="broadcast")
expect_raises(ValueError, dequantize, np.ones((3, 4), dtype=int), np.ones(4), match="broadcast")  # would broadcast, by accident
expect_raises(ValueError, dequantize, np.ones((3, 1), dtype=int), np.ones((3, 4)), match="broadcast")  # so would this, the other way
expect_raises(ValueError, quantize, 0.5, 4, shared_axis=-1, match="at least 1")
expect_raises(ValueError, quantize, [1.0], 17, shared_axis=-1, match="bits")
expect_raises(ValueError, quantize, [1.0], 4, shared_axis=1, match="shared_axis")
expect("16-bit codes run up to 2**15 - 1 = 32,767", int(quantize([1.0, -0.5], 16, shared_axis=-1)[0][0]), "==", 32_767)
# Two tokens, one scale each: an all-zero token keeps code 0 and scale 1; (0.7, -0.2) at 4 bits has scale 0.1.
two_codes, two_scales = quantize(np.array([[0.0, 0.0], [0.7, -0.2]]), 4, shared_axis=-1)
expect("per-token codes of [[0, 0], [0.7, -0.2]] at 4 bits", two_codes.tolist(), "==", [[0, 0], [7, -2]])
contract_close("per-token scales: 1 for the zero token, 0.7 / 7 = 0.1 for the other", "quantize([[0, 0], [0.7, -0.2]], 4, -1)",
               two_scales, [[1.0], [0.1]], "scale = max |x| over the shared axis / (2**(bits - 1) - 1); keepdims, so it broadcasts")
contract_close("dequantize multiplies codes by their scales", "dequantize([[7, -2]], [[0.1]])", dequantize(np.array([[7, -2]]), np.array([[0.1]])),
               [[0.7, -0.2]], "numbers = codes * scale")
expect("a one-bit-per-number cache with a 7-bit scale: 2 x (1 + 7) / 8 = 2 bytes per token, a whole number",
       repr(quantized_kv_bytes_per_token(1, 1, 1, 1, scale_bits=7)), "==", "2")
expect_raises(ValueError, quantized_kv_bytes_per_token, 0, 8, 128, 4, match="layers")
expect_raises(ValueError, quantized_kv_bytes_per_token, 32, 8, 128, 4, scale_bits=-1, match="scale_bits")


QUANTIZATION_MAX_SIZE = 1024  # tokens or channels of the toy experiment: it should take well under a second


def quantized_attention_error(bits, key_axis, outlier_channels=4, outlier_scale=10.0, n=64, d=64, seed=SEED):
    """Relative change of causal attention's output when K (scales shared along key_axis) and V (per token) are quantized.

    key_axis 0 shares a key scale over the tokens (one per channel, KIVI); 1 over the channels (one per token).
    """
    key_axis = require_int("key_axis", key_axis, minimum=0, maximum=1)
    n = require_int("n", n, minimum=1, maximum=QUANTIZATION_MAX_SIZE)
    d = require_int("d", d, minimum=1, maximum=QUANTIZATION_MAX_SIZE)
    outlier_channels = require_int("outlier_channels", outlier_channels, minimum=0, maximum=d)
    outlier_scale = require_real("outlier_scale", outlier_scale, minimum=0.0, strict_minimum=True)
    shape = (3, n, d)  # Q, K and V
    require_budget("Q, K and V", shape)
    require_budget("the causal [n, n] scores", (n, n))
    Q, K, V = np.random.default_rng(require_int("seed", seed, minimum=0)).standard_normal(shape)
    K[:, :outlier_channels] *= outlier_scale  # a few channels large for every token, as in trained models' keys
    exact = sdpa(Q, K, V, make_mask(n))
    K_hat, V_hat = dequantize(*quantize(K, bits, key_axis)), dequantize(*quantize(V, bits, 1))  # values: one scale per token
    return float(np.linalg.norm(sdpa(Q, K_hat, V_hat, make_mask(n)) - exact) / np.linalg.norm(exact))


BITS = (8, 4, 3)
errors = {
    "plain keys, per token": [quantized_attention_error(b, 1, outlier_channels=0) for b in BITS],
    "outlier keys, per token": [quantized_attention_error(b, 1) for b in BITS],
    "outlier keys, per channel (KIVI)": [quantized_attention_error(b, 0) for b in BITS],
}
print(f"{'relative output error':34s} " + " ".join(f"{b:>6}-bit" for b in BITS))
for name, row in errors.items():
    print(f"{name:34s} " + " ".join(f"{100 * e:>9.1f}%" for e in row))
expect('all(c < t for c, t in zip(errors["outlier keys, per channel (KIVI)"], errors["outlier keys, per token"]))', all(c < t for c, t in zip(errors["outlier keys, per channel (KIVI)"], errors["outlier keys, per token"])))
# The percentages the text after the figure quotes, checked here.
if not errors["plain keys, per token"][0] < 0.01:
    raise ValueError(f"the text says an 8-bit cache moves the output by under 1%; the cell computes {100 * errors['plain keys, per token'][0]:.2f}%")
check_stated("plain keys at 4 bits (%)", 100 * errors["plain keys, per token"][1], 13, 0)
check_stated("outlier keys, per token, at 4 bits (%)", 100 * errors["outlier keys, per token"][1], 42.6, 1)
check_stated("outlier keys, per channel, at 4 bits (%)", 100 * errors["outlier keys, per channel (KIVI)"][1], 18.5, 1)
two_bit = {axis: quantized_attention_error(2, axis) for axis in (1, 0)}
print(f"at 2 bits (codes -1, 0, 1): per token {100 * two_bit[1]:.0f}%, per channel {100 * two_bit[0]:.0f}%: both unusable this simply")
# The seeded errors, number for number: which axis shares a scale (keys per channel or per token, values
# per token) moves them in the third significant digit or more, far beyond rounding noise.
recorded_errors = {
    "plain keys, per token": [0.006997730464425515, 0.12701113913285317, 0.31315881886830216],
    "outlier keys, per token": [0.022619063658610706, 0.42627961135316217, 0.5574698911252105],
    "outlier keys, per channel (KIVI)": [0.010029181070176358, 0.18535189679710118, 0.4029487946822543],
    "2-bit, keys per token and per channel": [0.9441506785324393, 1.0253019826236158],
}
for (name, row), recorded in zip(list(errors.items()) + [("2-bit, keys per token and per channel", [two_bit[1], two_bit[0]])], recorded_errors.values()):
    contract_close("the seeded quantization errors reproduce their recorded values", name, row, recorded,
                   "keys share a scale along key_axis, values one scale per token (axis 1); check quantize's axis and rounding", rtol=1e-9)
expect_raises(ValueError, quantized_attention_error, 4, -1, match="key_axis")  # -1 would silently mean "per token"
expect_raises(ValueError, quantized_attention_error, 4, 2, match="key_axis")
expect_raises(ValueError, quantized_attention_error, 4, 0, outlier_channels=65, match="outlier_channels")
expect_raises(ValueError, quantized_attention_error, 4, 0, outlier_channels=-1, match="outlier_channels")
expect_raises(ValueError, quantized_attention_error, 4, 0, outlier_scale=0.0, match="outlier_scale")
expect_raises(ValueError, quantized_attention_error, 4, 0, n=0, match="n must be at least 1")
expect_raises(ValueError, quantized_attention_error, 4, 0, d=0, match="d must be at least 1")
expect_raises(ValueError, quantized_attention_error, 4, 0, d=QUANTIZATION_MAX_SIZE + 1, match="d must be at most")
expect_raises(ValueError, quantized_attention_error, 4, 0, n=QUANTIZATION_MAX_SIZE + 1, match="n must be at most")
expect_raises(ValueError, quantized_attention_error, 4, 0, seed=-1, match="seed")
# One token of one channel: its softmax weight is 1 whatever the key, and a lone value is exact at any bit width.
expect("one token, one channel, shrunk outliers, seed 0: no error at all", quantized_attention_error(4, 0, outlier_channels=1, outlier_scale=0.5, n=1, d=1, seed=0), "<=", 1e-15)


def plot_quantization_errors(bits, errors, language="en"):
    """Grouped bars: relative attention-output error per bit width, one bar per quantization scheme."""
    bits = [require_int("bits", b, minimum=1) for b in (bits if isinstance(bits, (list, tuple)) else [None])]
    names = ("plain keys, per token", "outlier keys, per token", "outlier keys, per channel (KIVI)")
    if not isinstance(errors, dict) or tuple(errors) != names:
        raise ValueError(f"errors must be a dict with the rows {', '.join(names)}, in that order")
    errors = {name: require_array(name, row, ndim=1) for name, row in errors.items()}
    if any(len(row) != len(bits) or (row <= 0).any() for row in errors.values()):
        raise ValueError(f"each row needs one positive error per bit width ({len(bits)}): the axis is logarithmic")
    fig, ax = plt.subplots(figsize=(6.2, 2.8))
    x, width = np.arange(len(bits)), 0.26
    labels = {"plain keys, per token": localized(language, "plain keys, per token", "обычные ключи, по токенам"),
              "outlier keys, per token": localized(language, "outlier keys, per token", "ключи с выбросами, по токенам"),
              "outlier keys, per channel (KIVI)": localized(language, "outlier keys, per channel (KIVI)", "ключи с выбросами, по каналам (KIVI)")}
    for k, ((name, row), color) in enumerate(zip(errors.items(), (Palette.GREY, Palette.RED, Palette.GREEN))):
        ax.bar(x + (k - 1) * width, 100 * np.array(row), width, color=color, label=labels[name])
    log_scale(ax, "y")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}%"))
    ax.set_xticks(x, [localized(language, f"{b}-bit", f"{b} бит") for b in bits])
    ax.set_ylabel(localized(language, "output error (log scale)", "ошибка выхода (лог. шкала)"))
    ax.set_title(localized(language, "Where the scales go matters", "Важно, кому достаётся шкала"))
    ax.legend(fontsize=8, loc="upper left")
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.12, top=0.89)
    return fig


show_figure(
    plot_quantization_errors(BITS, errors, language=LANGUAGE),
    "Each group of bars is one bit width; the height is how much the attention output moved, relative to its size, "
    "on a log axis (each gridline ten times the last). Grey: ordinary random keys, one scale per token. Red: keys with "
    "four large channels, still one scale per token, so the small channels are crushed. Green: the same keys with one "
    "scale per channel (KIVI), which removes most of that damage at every bit width shown.",
)
report_section("Quantized KV cache", globals())


# %% [markdown]
# На обычных случайных ключах 8-битный кэш сдвигает выход меньше чем на 1%, а 4-битный — примерно на
# 13%. Ключи с четырьмя большими каналами делают схему «один масштаб на токен» намного хуже (42.6% при
# 4 битах); собственный масштаб для каждого канала возвращает ошибку к 18.5%. При 2 битах эта простая схема
# не работает ни так, ни так; KIVI добивается своего за счёт небольших групп токенов на масштаб и окна
# последних токенов, хранящегося в полной точности. Обученные модели переносят округление лучше, чем
# подсказывают случайные данные; прежде чем доверять какой-либо разрядности, измерьте её на своей модели.

# %% [markdown]
# ## 15. Сводим всё вместе: что сохраняет каждая архитектура по мере роста контекста
#
# **Идея.** Каждая архитектура этого модуля либо опускает линию кэша ниже (меньше голов, латентный вектор,
# меньше битов), либо делает её плоской (окно, фиксированное состояние, гибриды, состоящие в основном из SSM).
# Линия, растущая пропорционально $n$, хранит каждый токен точно; плоская линия чем-то пожертвовала.
#
# $$\text{cache}(n) = \underbrace{c_{\text{tok}} \cdot n}_{\text{grows with } n} + \underbrace{c_{\text{fix}}}_{\text{fixed}}$$
#
# | Обозначение | Смысл | Пример (сквозная конфигурация) |
# |---|---|---|
# | $c_{\text{tok}}$ | байтов на токен в слоях, которые хранят каждый токен | 128 KiB для GQA-8, 16 KiB для гибрида |
# | $c_{\text{fix}}$ | байты, не зависящие от $n$: заполненные окна, состояния SSM | 0.54 GB для окна в 4k |
#
# **Вручную.** При 1M токенов: MHA с 32 KV-головами нужно $4 \cdot 137.4 = 550$ GB, GQA — 137 GB, GQA при
# 4 битах — 35 GB, латентному кэшу — 38.7 GB, гибриду — 17.2 GB, окну в 4k — 0.54 GB, стеку SSM —
# 4.2 MB. Ячейка печатает каждое значение.

# %%
def cache_bytes_by_design(context):
    """One conversation's cache at `context` tokens for each design, on the running example's shape (32 layers)."""
    context = require_int("context", context, minimum=1)
    full32 = [None] * 32
    return {
        "multi-head, 32 KV heads": kv_cache_bytes(context, full32, 32, 128),
        "grouped-query, 8 KV heads": kv_cache_bytes(context, full32, 8, 128),
        "latent, 512 + 64 per layer": context * mla_bytes_per_token(32, 512, 64),
        "grouped-query 8, 4-bit": context * quantized_kv_bytes_per_token(32, 8, 128, 4),
        "hybrid, 1 attention layer in 8": hybrid_cache_bytes(context),
        "sliding window 4,096": kv_cache_bytes(context, [4096] * 32, 8, 128),
        "state-space, 32 layers": hybrid_cache_bytes(context, attention_layers=0),
    }


at_1m = cache_bytes_by_design(2**20)
for name, value in at_1m.items():
    print(f"{name:32s} {value / GB:10.3f} GB at 1,048,576 tokens")
REFERENCE.check("designs_at_1m_bytes", list(at_1m.values()))
expect("one token of context: GQA-8 holds one token's 131,072 bytes", cache_bytes_by_design(1)["grouped-query, 8 KV heads"], "==", kv_bytes_per_token(32, 8, 128))
expect_raises(ValueError, cache_bytes_by_design, 0, match="context")
print(f"growing part per token: GQA-8 {kv_bytes_per_token(32, 8, 128) / KIB:.0f} KiB, hybrid {kv_bytes_per_token(4, 8, 128) / KIB:.0f} KiB")


def plot_memory_vs_context(language="en"):
    """Cache of one conversation against context length for every design, both axes logarithmic."""
    contexts = np.unique(np.geomspace(1024, 2**20, 41).astype(int))
    curves = {name: [] for name in cache_bytes_by_design(1024)}
    for n in contexts:
        for name, value in cache_bytes_by_design(int(n)).items():
            curves[name].append(value / 10**9)
    ru = {"multi-head, 32 KV heads": "MHA, 32 KV-головы", "grouped-query, 8 KV heads": "GQA, 8 KV-голов",
          "latent, 512 + 64 per layer": "латентный, 512 + 64 на слой", "grouped-query 8, 4-bit": "GQA 8, 4 бита",
          "hybrid, 1 attention layer in 8": "гибрид, 1 слой внимания из 8", "sliding window 4,096": "окно 4096",
          "state-space, 32 layers": "SSM, 32 слоя"}
    colors = (Palette.RED, Palette.BLUE, Palette.PURPLE, Palette.ORANGE, Palette.YELLOW, Palette.GREEN, Palette.MUTED)
    # The latent and 4-bit lines nearly coincide, and the window equals GQA below 4k: styles keep them apart.
    styles = ("-", "-", "-", (0, (2, 2)), "-", (0, (6, 3)), "-")
    widths = (2, 4.5, 2, 2.4, 2, 2, 2)
    fig, ax = plt.subplots(figsize=(7.0, 3.5))
    for (name, values), color, style, width in zip(curves.items(), colors, styles, widths):
        ax.loglog(contexts, values, color=color, linestyle=style, linewidth=width, label=localized(language, name, ru[name]))
    ax.axhline(80, color=Palette.GREY, linestyle="--", linewidth=1)
    ax.text(1200, 95, localized(language, "one 80 GB GPU", "один GPU на 80 ГБ"), color=Palette.MUTED, fontsize=9)
    ticks = [2**10, 2**13, 2**17, 2**20]
    ax.set_xticks(ticks, ["1k", "8k", "128k", "1M"])
    ax.minorticks_off()
    ax.set_yticks([1e-3, 1e-1, 1e1, 1e3], [localized(language, en, ru) for en, ru in (
        ("1 MB", "1 МБ"), ("100 MB", "100 МБ"), ("10 GB", "10 ГБ"), ("1 TB", "1 ТБ"))])
    ax.set_xlabel(localized(language, "context length (tokens)", "длина контекста (токены)"))
    ax.set_ylabel(localized(language, "cache per conversation", "кэш на один диалог"))
    ax.set_title(localized(language, "What each design keeps as the context grows", "Что хранит каждая схема с ростом контекста"))
    ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.subplots_adjust(left=0.16, right=0.66, bottom=0.15, top=0.9)
    return fig


show_figure(
    plot_memory_vs_context(language=LANGUAGE),
    "Both axes are logarithmic; the dashed line is one 80 GB GPU. Lines that rise with the same slope grow in "
    "proportion to the context and keep every token: compression (fewer heads, a latent, 4 bits, a mostly-SSM hybrid) "
    "only shifts them down. The thick blue GQA line runs under the dashed green window line up to 4,096 tokens, where "
    "the window bends flat; the short-dashed 4-bit line runs just under the latent line. The state-space stack is "
    "flat from the start: flat lines are what make a million tokens affordable, and they are the lines that forget.",
)
expect('at_1m["multi-head, 32 KV heads"] > 80 * GB > at_1m["grouped-query 8, 4-bit"] > at_1m["sliding window 4,096"]', at_1m["multi-head, 32 KV heads"] > 80 * GB > at_1m["grouped-query 8, 4-bit"] > at_1m["sliding window 4,096"])
report_section("Every design at a glance", globals())


# %% [markdown]
# | Архитектура | Что она сокращает | Чем она платит |
# |---|---|---|
# | Тайловое точное внимание (FlashAttention) | память под матрицу оценок — до одного тайла; работу пропущенных блоков | ничем: выходы точные |
# | Головы с группировкой запросов / одна общая KV-голова (multi-query) | кэш — во столько раз, каков размер группы | небольшой частью выразительности модели |
# | Скользящее окно (+ кольцевой буфер) | вычисления — до $n \cdot w$, кэш — до $w$ токенов | прямым доступом за пределы окна; дальние факты приходят по эстафете и ослабленными |
# | Стоки + окно (StreamingLLM) | кэш — до $n_{\text{sink}} + w$ токенов, при устойчивой потоковой генерации | любой токен, вытесненный из окна, потерян |
# | Разреженные шаблоны, обучаемые короткие списки | вычисления, когда пропускаются целые блоки | парами вне шаблона; массой внимания вне короткого списка |
# | Линейное внимание | вычисления — до $n \cdot d^2$, кэш — до фиксированного состояния | чётким, точным воспроизведением |
# | Модели пространства состояний (Mamba) | то же самое | тем же, но смягчённым селективностью |
# | Гибрид SSM + внимание | бо́льшую часть кэша | понемногу и тем, и другим |
# | Латентный KV (MLA) | кэш — примерно в 57x по соглашению DeepSeek-V2 (71x относительно реальной ширины ключей) | дополнительными матричными вычислениями; для позиции нужен отдельный RoPE-ключ |
# | Квантованный KV | кэш — примерно в 16 / (число битов) раз | точностью; ключам нужны поканальные масштабы |

# %% [markdown]
# ### Передний край на конец 2026 года: четыре архитектуры и их кэши
#
# Размер каждой архитектуры ниже посчитан по её публичной конфигурации тем же правилом, что и в разделе 5:
# растущие байты на токен (слои, которые хранят каждый токен или фиксированную долю токенов) плюс
# фиксированная часть (заполненные окна, рекуррентные состояния). Всё считается при 16 битах на число, как
# принято в этом модуле; в опубликованных чекпойнтах части кэша часто хранятся в FP8 или ещё компактнее.
#
# - **DeepSeek-V4** заменяет MLA гибридом из трёх типов внимания, по одному на слой
#   ([документация transformers `deepseek_v4`](https://huggingface.co/docs/transformers/main/model_doc/deepseek_v4), добавлена в мае 2026;
#   значения конфигурации по умолчанию в `configuration_deepseek_v4.py`, описанные для DeepSeek-V4-Flash: 43 слоя, одна общая
#   голова ключей и значений ширины 512 с K = V, окно в 128 токенов, степени сжатия 4 и 128, ключи индексатора ширины 128, контекст 1M).
#   Каждый слой читает скользящее окно из последних 128 токенов. Слои *сжатого разреженного внимания* (CSA) вдобавок сворачивают каждые
#   4 токена в одну сжатую запись и поручают «молниеносному индексатору» (lightning indexer, как в V3.2, раздел 10) выбрать 512 лучших записей;
#   слои *сильно сжатого внимания* (HCA) сворачивают каждые 128 токенов и читают все получившиеся записи. У каждой головы есть ещё обучаемый
#   логит стока, как в gpt-oss. Расписание слоёв, которое мы используем, — 2 слоя только с окном, затем чередование CSA и HCA
#   (21 CSA, 20 HCA), — это список `compress_ratios` `[0, 0, 4, 128, 4, ...]`, который движки инференса читают из
#   конфигурации чекпойнта Flash; сам этот `config.json` мы отсюда открыть не смогли, поэтому считайте расписание
#   сообщённым, а не проверенным. Тогда слой CSA растёт на $(512 + 128) / 4 = 160$ чисел на токен, а слой HCA — на
#   $512 / 128 = 4$.
# - **Qwen3-Next** (80B-A3B, [карточка модели](https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct) и `config.json`:
#   48 слоёв, `full_attention_interval` 4) ставит 3 слоя Gated DeltaNet на каждый слой внимания с гейтированием. Растут только
#   12 слоёв внимания (2 KV-головы ширины 256); каждый слой DeltaNet хранит фиксированное состояние из 32 голов значений,
#   каждая — матрица $128 \times 128$, плюс небольшое состояние свёртки. Преемники (Qwen3.5) сохраняют схему 3:1.
# - **Gemma 3** ([Gemma Team, 2025](https://arxiv.org/abs/2503.19786); конфигурация 27B: 62 слоя, 16 KV-голов ширины
#   128, `sliding_window` 1,024, `sliding_window_pattern` 6) на каждый глобальный слой приходится 5 локальных слоёв с окном
#   в 1,024 токена: 52 локальных и 10 глобальных слоёв, и растут только 10 глобальных.
# - **PyTorch** теперь задаёт такие маски *функциями*. FlexAttention (`torch.nn.attention.flex_attention`, torch
#   2.5 и новее) принимает `mask_mod(b, h, q_idx, kv_idx)`, которая возвращает, может ли запрос читать ключ, и
#   `score_mod`, которая правит оценку (смещение, мягкое ограничение — soft cap); `create_block_mask` превращает функцию ровно в ту
#   таблицу пропуска блоков, что в разделе 7, а скомпилированное ядро пропускает пустые блоки. Для обычного каузального
#   внимания или внимания с паддингом у `F.scaled_dot_product_attention` есть также бэкенд cuDNN (`SDPBackend.CUDNN_ATTENTION`),
#   который PyTorch предпочитает на современных GPU NVIDIA ([документация SDPA](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)).

# %%
def layered_cache_bytes(context, growing_numbers_per_token, fixed_numbers, bytes_per_value=2):
    """A design's cache at `context` tokens: numbers that grow per token plus numbers that do not, at one width."""
    context = require_int("context", context, minimum=1)
    return (context * require_real("growing_numbers_per_token", growing_numbers_per_token, minimum=0.0)
            + require_int("fixed_numbers", fixed_numbers, minimum=0)) * require_int("bytes_per_value", bytes_per_value, minimum=1)


# (growing numbers per token, fixed numbers), each from the configuration quoted in the text above.
V4_CSA, V4_HCA, V4_LAYERS, V4_WIDTH, V4_INDEX, V4_WINDOW = 21, 20, 43, 512, 128, 128
QWEN_ATTENTION, QWEN_DELTA = 12, 36
sota_designs = {
    "DeepSeek-V4-Flash (CSA + HCA + window)": (V4_CSA * (V4_WIDTH + V4_INDEX) / 4 + V4_HCA * V4_WIDTH / 128, V4_LAYERS * V4_WINDOW * V4_WIDTH),
    "Qwen3-Next-80B-A3B (3 DeltaNet : 1 attention)": (QWEN_ATTENTION * 2 * 2 * 256, QWEN_DELTA * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3)),
    "Gemma 3 27B (5 local : 1 global)": (10 * 2 * 16 * 128, 52 * 1024 * 2 * 16 * 128),
    "DeepSeek-V3 (MLA), for comparison": (61 * (512 + 64), 0),
    "gpt-oss-120b (alternating 128 window)": (18 * 2 * 8 * 64, 18 * 128 * 2 * 8 * 64),
    "Llama-3.3-70B (GQA), for comparison": (80 * 2 * 8 * 128, 0),
}
print(f"{'design':48s} {'grows per token':>16} {'fixed':>10} {'at 1M tokens':>13}")
for name, (growing, fixed) in sota_designs.items():
    total = layered_cache_bytes(2**20, growing, fixed)
    print(f"{name:48s} {2 * growing / KIB:>12.2f} KiB {2 * fixed / GB:>7.2f} GB {total / GB:>10.1f} GB")
check_stated("DeepSeek-V4-Flash growing bytes per token", 2 * sota_designs["DeepSeek-V4-Flash (CSA + HCA + window)"][0], 6_880, 0)
check_stated("Qwen3-Next growing KiB per token", 2 * sota_designs["Qwen3-Next-80B-A3B (3 DeltaNet : 1 attention)"][0] / KIB, 24, 0)
check_stated("Gemma 3 27B growing KiB per token", 2 * sota_designs["Gemma 3 27B (5 local : 1 global)"][0] / KIB, 80, 0)
check_stated("Gemma 3 27B fixed window cache (GB)", 2 * sota_designs["Gemma 3 27B (5 local : 1 global)"][1] / GB, 0.44, 2)
check_stated("DeepSeek-V3 MLA over V4-Flash, per token (x)", 61 * 576 / sota_designs["DeepSeek-V4-Flash (CSA + HCA + window)"][0], 10.2, 1)
REFERENCE.check("mla.bytes_per_token", 2 * sota_designs["DeepSeek-V3 (MLA), for comparison"][0])
check_stated("DeepSeek-V4-Flash growing KiB per token", 2 * sota_designs["DeepSeek-V4-Flash (CSA + HCA + window)"][0] / KIB, 6.7, 1)
check_stated("DeepSeek-V3 growing KiB per token", 2 * sota_designs["DeepSeek-V3 (MLA), for comparison"][0] / KIB, 68.6, 1)
expect_raises(ValueError, layered_cache_bytes, 0, 1.0, 0, match="context")
expect("1 token x 2.5 growing + 3 fixed numbers, at 2 bytes: 11 bytes", layered_cache_bytes(1, 2.5, 3), "==", 11.0)
expect("nothing that grows, 3 fixed numbers at 1 byte: 3 bytes", layered_cache_bytes(1, 0.0, 3, bytes_per_value=1), "==", 3.0)
expect_raises(ValueError, layered_cache_bytes, 1, 1.0, -1, match="fixed_numbers")
expect_raises(ValueError, layered_cache_bytes, 1, 1.0, 0, bytes_per_value=0, match="bytes_per_value")

# FlexAttention's idea without compiling anything: a mask is a function of (query, key) indices.
def sliding_window_with_sinks(q_idx, kv_idx, window=8, n_sink=2):
    """A mask_mod in FlexAttention's style: True where query q_idx may read key kv_idx."""
    window, n_sink = require_int("window", window, minimum=1), require_int("n_sink", n_sink, minimum=0)
    q_idx, kv_idx = require_array("q_idx", q_idx), require_array("kv_idx", kv_idx)
    if q_idx.dtype.kind not in "iu" or kv_idx.dtype.kind not in "iu":
        raise TypeError(f"q_idx and kv_idx are token positions and must be integers; got dtypes {q_idx.dtype} and {kv_idx.dtype}")
    try:
        grid = np.broadcast_shapes(q_idx.shape, kv_idx.shape)
    except ValueError:
        raise ValueError(f"q_idx of shape {q_idx.shape} and kv_idx of shape {kv_idx.shape} do not broadcast to one grid") from None
    require_budget("the mask's grid", grid)  # a few boolean grids of this shape
    return (kv_idx <= q_idx) & ((q_idx - kv_idx < window) | (kv_idx < n_sink))


as_function = sliding_window_with_sinks(np.arange(MASK_N)[:, None], np.arange(MASK_N)[None, :])
if not np.array_equal(as_function, np.isfinite(mask_sinks)):
    raise ValueError("the mask written as a function must equal section 2's mask with a window of 8 and 2 sinks")
print(f"a mask_mod over a {MASK_N} x {MASK_N} grid reproduces section 2's window + sinks mask: {int(as_function.sum())} pairs")
expect_raises(TypeError, sliding_window_with_sinks, np.arange(4)[:, None], np.arange(4.0)[None, :], match="integers")  # one float grid is enough
expect_raises(ValueError, sliding_window_with_sinks, np.arange(4), np.arange(3), match="broadcast")
expect_raises(ValueError, sliding_window_with_sinks, 3, 1, window=0, match="window")
expect_raises(ValueError, sliding_window_with_sinks, 3, 1, n_sink=-1, match="n_sink")
expect("window 1 and no sinks: a query reads only itself", sliding_window_with_sinks(np.arange(3)[:, None], np.arange(3)[None, :], window=1, n_sink=0).tolist(),
       "==", np.eye(3, dtype=bool).tolist())


# %% [markdown]
# На каждый токен контекста DeepSeek-V4-Flash прирастает примерно на 6.7 KiB — вдесятеро меньше, чем латентный
# кэш DeepSeek-V3 (68.6 KiB), потому что бо́льшая часть её дальней памяти свёрнута в отношении 4 или 128 к 1, а токен за
# токеном хранится только окно в 128 токенов. Qwen3-Next и Gemma 3 прирастают на 24 и 80 KiB против 320 KiB
# у Llama-3.3-70B. Каждая из четырёх архитектур сохраняет *какие-то* слои, которые читают далеко назад;
# различаются они тем, насколько груба эта дальняя память.
#
# ### На практике: кэши, которые вам встретятся
#
# | Что построено в этом модуле | Hugging Face `transformers` | vLLM |
# |---|---|---|
# | Растущий кэш полного внимания (раздел 1) | `DynamicCache`, по умолчанию: тензоры растут конкатенацией | страничные блоки, см. ниже |
# | Заранее выделенный кэш фиксированной максимальной длины | `StaticCache`: фиксированные формы, поэтому `torch.compile` может захватить шаг декодирования | заранее выделенный пул блоков |
# | Скользящее окно в кольцевом буфере (раздел 9) | скользящие слои внутри `DynamicCache` / `StaticCache` (прежде `SlidingWindowCache`), их используют Mistral v0.1 и локальные слои Gemma | освобождение блоков по скользящему окну |
# | Гибрид оконных и полных слоёв (gpt-oss, Gemma 3) | один кэш с типом слоя для каждого слоя (прежде `HybridCache`) | группы блоков по типам слоёв |
# | Квантование в духе KIVI (раздел 14) | `QuantizedCache` (`nbits`, `axis_key`, `axis_value`), у которого `residual_length` (по умолчанию 128) — это окно последних токенов KIVI, хранящееся в полной точности | KV-кэш в FP8 (`kv_cache_dtype`) |
# | Состояния SSM или DeltaNet (раздел 12) | кэши под конкретную модель, хранящие состояния свёртки и рекуррентные состояния | блоки состояний для гибридных моделей |
#
# (Названия классов взяты из [руководства transformers по KV-кэшу](https://huggingface.co/docs/transformers/main/kv_cache).)
# **Страничное внимание vLLM** (paged attention, [Kwon и др., 2023](https://arxiv.org/abs/2309.06180)) хранит кэш в блоках
# фиксированного размера, как страницы виртуальной памяти. У каждой последовательности есть *таблица блоков*: логический блок $i$
# последовательности лежит в физическом блоке `table[i]` одного общего пула. Последовательность теряет не больше одного частично
# заполненного блока, а последовательности с общим промптом могут указывать на одни и те же физические блоки. Ячейка ниже строит
# игрушечный пул.

# %%
class ToyBlockPool:
    """A toy of vLLM's paged KV cache: physical blocks of `block_size` token slots and one block table per sequence."""

    def __init__(self, n_blocks, block_size):
        self.block_size = require_int("block_size", block_size, minimum=1)
        self.n_blocks = require_int("n_blocks", n_blocks, minimum=1)  # no list of them is built: a pool may be huge
        self.returned, self.fresh = [], 0  # released blocks (reused first), and how many blocks were ever handed out
        self.tables, self.lengths = {}, {}

    @property
    def free(self):
        """The free physical blocks, listed on demand: released ones, then the never used."""
        return self.returned + list(range(self.fresh, self.n_blocks))

    def _take(self):
        """A free physical block: the last one released, else the lowest never used."""
        if self.returned:
            return self.returned.pop()
        self.fresh += 1
        return self.fresh - 1

    def _known(self, sequence):
        """Refuse a sequence name this pool has never seen."""
        if sequence not in self.tables:
            raise ValueError(f"no sequence named {sequence!r} in the pool; the sequences are {sorted(self.tables)}")
        return sequence

    def append(self, sequence, n_tokens=1):
        """Reserve slots for `n_tokens` more tokens of `sequence`, taking a new physical block only when one fills."""
        if not isinstance(sequence, str):
            raise TypeError(f"a sequence is named by a string, got {type(sequence).__name__} {sequence!r}")
        n_tokens = require_int("n_tokens", n_tokens, minimum=1)
        length = self.lengths.get(sequence, 0)
        needed = -(-(length + n_tokens) // self.block_size) - len(self.tables.get(sequence, []))  # new blocks, ceiling division
        available = len(self.returned) + self.n_blocks - self.fresh
        if needed > available:
            raise ValueError(f"sequence {sequence!r} needs {needed} new blocks for {n_tokens} tokens, {available} are free; free a finished sequence first")
        table = self.tables.setdefault(sequence, [])
        for _ in range(n_tokens):
            length = self.lengths.get(sequence, 0)
            if length % self.block_size == 0:  # the last block is full (or there is none yet)
                table.append(self._take())  # there is one: checked above
            self.lengths[sequence] = length + 1

    def slot(self, sequence, position):
        """Physical (block, offset) where token `position` of `sequence` is stored."""
        position = require_int("position", position, minimum=0, maximum=self.lengths[self._known(sequence)] - 1)
        return self.tables[sequence][position // self.block_size], position % self.block_size

    def release(self, sequence):
        """Return a finished sequence's blocks to the pool."""
        self.returned.extend(reversed(self.tables.pop(self._known(sequence))))  # its first block is reused first
        self.lengths.pop(sequence)


pool = ToyBlockPool(n_blocks=8, block_size=4)
pool.append("A", 6)  # prompt A: 6 tokens -> 2 blocks
pool.append("B", 3)  # prompt B: 3 tokens -> 1 block
pool.append("A", 3)  # A generates 3 more: 9 tokens -> a third block
print(f"block tables: {pool.tables}; lengths {pool.lengths}; free blocks {sorted(pool.free)}")
print(f"token 8 of A lives at (block, offset) {pool.slot('A', 8)}; token 2 of B at {pool.slot('B', 2)}")
if pool.tables != {"A": [0, 1, 3], "B": [2]} or pool.slot("A", 8) != (3, 0):
    raise ValueError(f"the block tables should be A -> [0, 1, 3], B -> [2], with A's token 8 in block 3; got {pool.tables}")
wasted = sum(len(t) * pool.block_size - pool.lengths[s] for s, t in pool.tables.items())
if not wasted < len(pool.tables) * pool.block_size:
    raise ValueError(f"each sequence may waste at most one partly filled block; {wasted} slots are unused")
pool.release("B")
pool.append("C", 4)
if pool.tables["C"] != [2]:
    raise ValueError(f"a released block must be reused: C should get B's block 2, got {pool.tables['C']}")
expect_raises(ValueError, ToyBlockPool(1, 2).append, "D", 3, match="needs 2 new blocks for 3 tokens, 1 are free")
expect("a sequence may fill the pool exactly: 2 blocks of 2 hold 4 tokens", (ToyBlockPool(2, 2).append("D", 4), "accepted")[1], "==", "accepted")
small_pool = ToyBlockPool(2, 1)
small_pool.append("E")  # one token by default
expect("append adds one token by default, and a 1-slot block holds it", (small_pool.lengths, small_pool.tables, small_pool.slot("E", 0)), "==", ({"E": 1}, {"E": [0]}, (0, 0)))
expect_raises(ValueError, small_pool.slot, "E", 1, match="position")  # only position 0 exists
expect_raises(ValueError, small_pool.slot, "E", -1, match="position")
expect_raises(ValueError, small_pool.append, "E", 0, match="n_tokens")
expect_raises(ValueError, small_pool.slot, "F", 0, match="no sequence")
expect_raises(ValueError, pool.slot, "A", 9, match="position")  # A holds tokens 0 to 8
expect_raises(ValueError, ToyBlockPool, 0, 2, match="n_blocks")
expect_raises(ValueError, ToyBlockPool, 2, 0, match="block_size")
grow = ToyBlockPool(2, 2)
grow.append("G")
grow.append("G", 3)  # 4 tokens fill both blocks: the first block's free slot counts
expect("a sequence grows into its partly filled block first", (grow.tables, grow.free), "==", ({"G": [0, 1]}, []))
expect_raises(ValueError, grow.append, "H", match="1 new blocks for 1 tokens, 0 are free")  # the pool is full
huge_pool = ToyBlockPool(10**9, 16)  # builds no list of its blocks
huge_pool.append("H", 20)
expect("a pool of 10**9 blocks hands out blocks 0 and 1 for 20 tokens", huge_pool.tables, "==", {"H": [0, 1]})
print(f"after B finishes, C reuses its block: {pool.tables}; unused slots in partly filled blocks: {wasted}. Paged cache: PASS")

# %% [markdown]
# ## За 20 секунд
#
# - Длинный контекст выставляет два счёта: оценки растут как $n^2$ (вычисления), KV-кэш — как $n$ (память,
#   на каждый слой, на каждый диалог). Число слоёв, KV-голов, ширина головы и окна из карточки модели
#   точно определяют размер кэша.
# - Тайловое потоковое внимание (онлайн-softmax по блокам) даёт *те же* выходы, что и плотное
#   внимание, пропускает блоки, которые опустошает каузальная маска или окно, и держит память линейной по $n$.
# - Окна читают последние $w$ токенов; глубина всё равно дотягивается на $L(w - 1)$ назад, а кольцевой буфер
#   ограничивает кэш $w$ токенами. Стоки делают потоковую генерацию устойчивой, но не возвращают вытесненные токены.
# - Линейное внимание и SSM сводят прошлое в фиксированное состояние: постоянная память, более размытое
#   воспроизведение; селективные SSM для каждого токена выбирают, что сохранить, и обучаются через
#   параллельное сканирование. Гибриды оставляют несколько слоёв внимания для точного поиска.
# - Чтобы уменьшить кэш: делите KV-головы между запросами, кэшируйте латентный вектор и поглощайте повышающие
#   проекции (RoPE получает свой небольшой ключ), храните меньше битов, причём для ключей — с поканальными масштабами.
#
# ## Самопроверка
#
# Попробуйте ответить на каждый вопрос, прежде чем открывать ответ. Числовые ответы пересчитывает ячейка ниже.
#
# 1. **Почему при удвоении контекста работа по вычислению оценок вырастает вчетверо, а кэш — только вдвое?**
#
#    <details><summary>Ответ</summary>Каждый запрос сравнивается с каждым ключом — это таблица n × n; кэш же хранит по одному ключу и одному значению на токен — список, который с каждым токеном удлиняется на одну запись.</details>
#
# 2. **У gpt-oss-120b 36 слоёв, 8 KV-голов ширины 64 и окно в 128 токенов в половине слоёв. Что кэширует диалог длиной 128k токенов и почему это не 9 GiB?**
#
#    <details><summary>Ответ</summary>Около 4.5 GiB: растут только 18 полных слоёв (2,048 байт на слой на токен, всего 36 KiB на токен); 18 оконных слоёв хранят по 128 токенов каждый, всего 4.5 MiB.</details>
#
# 3. **Куда попадает логит стока в gpt-oss и что он делает со строкой? Как он связан с токенами-стоками StreamingLLM?**
#
#    <details><summary>Ответ</summary>В знаменатель softmax, по одному на каждую голову запросов, с нулевым вектором значения. Он забирает себе долю вероятности (53.69% против 128 ключей с оценкой 0, когда сток равен 5) и уменьшает вес каждого токена в одно и то же число раз. Первые токены в StreamingLLM играют ту же роль в модели, обученной без такого логита: и то и другое даёт строке место, куда сбросить массу, которую она не хочет тратить.</details>
#
# 4. **Ваш код GQA выдаёт правильные формы, но неправильные выходы. Какая ошибка вероятнее всего?**
#
#    <details><summary>Ответ</summary>KV-головы были размножены чередованием (kv0, kv1, kv0, kv1) вместо повторения (kv0, kv0, kv1, kv1), поэтому головы запросов читают ключи и значения чужой группы.</details>
#
# 5. **Почему тайловое внимание точное, а не приближённое, и почему это важнее всего на GPU?**
#
#    <details><summary>Ответ</summary>Онлайн-softmax несёт текущие максимум и сумму и всякий раз, когда максимум растёт, перемасштабирует всё накопленное множителем α = exp(m_old − m_new), поэтому после последнего блока O / ℓ и есть само среднее по softmax. На GPU тайлы оценок остаются в SRAM на кристалле, и матрица n × n никогда не уходит в HBM.</details>
#
# 6. **Вы декодируете токен 5 с кэшем токенов от 0 до 4 и передаёте is_causal=True в F.scaled_dot_product_attention с одним запросом. Что пойдёт не так?**
#
#    <details><summary>Ответ</summary>PyTorch выравнивает каузальный треугольник по левому верхнему углу, поэтому единственный запрос считается позицией 0 и видит только ключ 0. Передайте явную маску или (здесь) абсолютную позицию запроса (query_start).</details>
#
# 7. **Может ли на Mistral 7B v0.1 (окно 4,096 во всех 32 слоях) повлиять токен, стоящий на 100,000 позиций назад?**
#
#    <details><summary>Ответ</summary>В принципе да: по её соглашению (позиция i читает i − 4,096 … i) дальность равна 32 × 4,096 = 131,072, но лишь по эстафете, минимум через 25 переходов, а 100,000 токенов — далеко за пределами 8K, на которых её обучали. Точный поиск работает только внутри окна.</details>
#
# 8. **Что глобальные токены добавляют к скользящему окну и когда разреженный шаблон действительно экономит время?**
#
#    <details><summary>Ответ</summary>Глобальный токен читает все позиции и читается всеми, поэтому любые два токена разделяют не больше двух переходов. Шаблон экономит время, только когда пропускаются целые блоки матрицы оценок; шаблон, разбросанный по отдельным токенам, всё равно стоит полного прохода.</details>
#
# 9. **Почему линейное внимание можно выполнять как рекуррентность, а внимание с softmax — нельзя?**
#
#    <details><summary>Ответ</summary>φ(q) · φ(k) распадается на часть запроса и часть ключа, поэтому части «ключ–значение» можно заранее просуммировать в фиксированное состояние; exp(q · k) так не распадается.</details>
#
# 10. **Что делает SSM селективной и что делает большой шаг Δ?**
#
#    <details><summary>Ответ</summary>Δ, B и C вычисляются из каждого токена, так что каждый токен сам решает, сколько забыть, что записать и что прочитать. Большой Δ делает множитель сохранения exp(Δ A) крошечным, а множитель записи — близким к 1: состояние перезаписывается этим токеном; крошечный Δ оставляет состояние как есть.</details>
#
# 11. **Без фиксированного ядра нет и свёртки. Как же селективная SSM всё-таки обучается параллельно?**
#
#    <details><summary>Ответ</summary>Каждый шаг имеет вид h ↦ λ h + μ, и два таких шага складываются в один шаг того же вида. Если объединять соседей, затем пары на расстоянии два, затем на расстоянии четыре, все состояния получаются за ⌈log₂ T⌉ раундов: 10 раундов для 1,024 токенов.</details>
#
# 12. **Почему гибриды вроде Jamba или Qwen3-Next сохраняют несколько слоёв внимания?**
#
#    <details><summary>Ответ</summary>Слои SSM или линейного внимания держат память плоской, но не могут точно скопировать произвольный далёкий токен; несколько слоёв внимания сохраняют точный поиск, и только они задают растущую часть кэша.</details>
#
# 13. **Как MLA экономит память, не меняя выходов, и зачем ей RoPE-ключ?**
#
#    <details><summary>Ответ</summary>Ключи и значения — это закэшированный латентный вектор, умноженный на фиксированные повышающие проекции, которые сворачиваются в запрос и в выходную проекцию; декодирование тогда становится MQA поверх латентных векторов ширины 576. Поворот, зависящий от позиции, нельзя свернуть в фиксированную матрицу, поэтому позиция передаётся в отдельном небольшом ключе, общем для голов.</details>
#
# 14. **Зачем квантовать ключи поканально?**
#
#    <details><summary>Ответ</summary>Несколько каналов ключей велики для каждого токена; при одном масштабе на токен они задают масштаб, а маленькие каналы округляются до нуля. Отдельный масштаб на канал изолирует их.</details>
#
# **Числовые вопросы.**
#
# 15. **Сколько байт на токен стоит 16-битный KV-кэш Llama-3.3-70B (80 слоёв, 8 KV-голов ширины 128)?**
#
#    <details><summary>Ответ</summary>327,680 байт, 320 KiB</details>
#
# 16. **Сколько тайлов оценок вычисляет каузальное тайловое внимание при n = 2,048 и тайлах размера 128?**
#
#    <details><summary>Ответ</summary>136 из 256</details>
#
# 17. **32-слойный сквозной пример сохраняет внимание в 4 слоях, а SSM (4,096 × 16, 16-битные) — в 28. Сколько он кэширует при 131,072 токенах?**
#
#    <details><summary>Ответ</summary>2,151,153,664 байта, около 2.15 GB</details>
#
# 18. **Сколько стоит на токен сквозной пример (32 слоя, 8 KV-голов по 128) при 4 битах с одним 16-битным масштабом на вектор головы?**
#
#    <details><summary>Ответ</summary>33,792 байта, в 3.9 раза меньше, чем 131,072</details>
#
# 19. **На сколько KiB на токен растёт кэш Gemma 3 27B (10 глобальных слоёв из 62, 16 KV-голов ширины 128, 16 бит)?**
#
#    <details><summary>Ответ</summary>80 KiB</details>

# %%
# The numeric self-test answers, recomputed: a wrong answer in the text above stops here.
self_test_answers = {
    "Llama-3.3-70B bytes per token": (kv_bytes_per_token(80, 8, 128), 327_680),
    "causal tiles, n = 2,048, B = 128": (sum(1 for b in range(16) for c in range(16) if c <= b), 136),
    "hybrid 4 + 28 at 131,072 tokens (bytes)": (hybrid_cache_bytes(131_072), 2_151_153_664),
    "running example at 4 bits (bytes per token)": (quantized_kv_bytes_per_token(32, 8, 128, 4), 33_792),
    "Gemma 3 27B growing KiB per token": (kv_bytes_per_token(10, 16, 128) // KIB, 80),
}
for question, (computed, stated) in self_test_answers.items():
    print(f"{question:45s} computed {computed:>15,}   stated {stated:>15,}")
    if computed != stated:
        raise ValueError(f"self-test answer '{question}': the text says {stated:,}, the cell computes {computed:,}")
print(f"Self-test: {len(self_test_answers)} numeric answers recomputed: PASS")

# %% [markdown]
# ## Статьи, на которых основан этот модуль
#
# - Vaswani и др., *Attention Is All You Need* (2017): https://arxiv.org/abs/1706.03762 — исходная статья о трансформере и многоголовом внимании (базовая модель: 8 голов ширины 64)
# - Milakov и Gimelshein, *Online normalizer calculation for softmax* (2018): https://arxiv.org/abs/1805.02867 — онлайн-softmax, который вычисляется за один проход по строке
# - Dao и др., *FlashAttention* (2022): https://arxiv.org/abs/2205.14135; Dao, *FlashAttention-2* (2023): https://arxiv.org/abs/2307.08691 — точное тайловое внимание, экономное по памяти и быстрое на GPU
# - Shazeer, *Fast Transformer Decoding: One Write-Head is All You Need* (MQA, 2019): https://arxiv.org/abs/1911.02150 — одна общая голова ключей и значений на все головы запросов, ускоряющая декодирование
# - Ainslie и др., *GQA* (2023): https://arxiv.org/abs/2305.13245 — внимание с группировкой запросов, промежуточный вариант между многоголовым вниманием и MQA
# - Xiao и др., *Efficient Streaming Language Models with Attention Sinks* (2023): https://arxiv.org/abs/2309.17453 — стоки внимания и устойчивая потоковая генерация
# - OpenAI, *gpt-oss-120b and gpt-oss-20b Model Card* (2025): https://arxiv.org/abs/2508.10925 — карточка модели с чередованием оконных и полных слоёв и обучаемыми логитами стока
# - Jiang и др., *Mistral 7B* (2023): https://arxiv.org/abs/2310.06825 — скользящее окно и кольцевой буфер для кэша
# - Child и др., *Sparse Transformers* (2019): https://arxiv.org/abs/1904.10509; Beltagy и др., *Longformer* (2020): https://arxiv.org/abs/2004.05150; Zaheer и др., *BigBird* (2020): https://arxiv.org/abs/2007.14062 — разреженные шаблоны внимания: шаговые, глобальные и случайные связи
# - Katharopoulos и др., *Transformers are RNNs* (2020): https://arxiv.org/abs/2006.16236 — линейное внимание как рекуррентная сеть с фиксированным состоянием
# - Gu, Goel и Ré, *S4* (2021): https://arxiv.org/abs/2111.00396; Gu и Dao, *Mamba* (2023): https://arxiv.org/abs/2312.00752; Dao и Gu, *Mamba-2* (2024): https://arxiv.org/abs/2405.21060 — модели пространства состояний, от структурированных к селективным
# - Lieber и др., *Jamba* (2024): https://arxiv.org/abs/2403.19887 — гибрид слоёв SSM и немногих слоёв внимания
# - DeepSeek-AI, *DeepSeek-V2* (2024): https://arxiv.org/abs/2405.04434; *DeepSeek-V3* (2024): https://arxiv.org/abs/2412.19437 — латентное внимание, поглощение проекций и отдельный ключ для позиции
# - Liu и др., *KIVI* (2024): https://arxiv.org/abs/2402.02750 — квантование KV-кэша: ключи поканально, значения по токенам
# - Kwon и др., *PagedAttention / vLLM* (2023): https://arxiv.org/abs/2309.06180 — страничный кэш из блоков фиксированного размера (пропускная способность в 2-4x выше при той же задержке, что у FasterTransformer и Orca)
# - Hsieh и др., *RULER* (2024, версия COLM): https://arxiv.org/abs/2404.06654; Liu и др., *Lost in the Middle* (2023): https://arxiv.org/abs/2307.03172 — как модели на самом деле пользуются длинным контекстом

# %%
print(f"reference schema version {REFERENCE.value('schema_version')}")
checked = REFERENCE.assert_all_used()
print(f"{checked} reference values of {REFERENCE_SOURCE} were used or checked, none left unused.")
exercise_summary(globals())
report_section("Module 5", globals())
