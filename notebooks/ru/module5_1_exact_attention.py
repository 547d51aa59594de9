# %% [markdown]
# <!-- builder:begin header -->
# # Модуль 5.1 · Точное внимание в масштабе
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/ru/module5_1_exact_attention.ipynb)
#
# *Происхождение: сборщик курса 0.1.0; эталонные значения `references/module5_1.json`, SHA-256 `653ec9b8c75695ce2e4423f3ea167f695e7911fc24cb9df52a6c2f1b781f13c0`. Лицензия: текст и рисунки — CC BY-SA 4.0, код — MIT.*
# <!-- builder:end sha256=88d84ce1f184659b5c328c809b9e9f1e63d2463f29cb97bce98d2019c8ab58aa -->

# %% [markdown]
# **Как запускать этот ноутбук.** Выберите *Среда выполнения → Выполнить все* (в английском интерфейсе Colab *Runtime → Run all*, в JupyterLab *Run → Run All Cells*). Хватит
# среды выполнения с CPU. Первая ячейка с кодом устанавливает только то, чего не хватает, а в Colab
# не хватает ничего. Каждый раздел заканчивается проверкой, которая останавливает ноутбук явной ошибкой,
# если какое-то число неверно.
#
# **Когда проверка останавливает ноутбук.** После каждого упражнения ячейка проверки оценивает вашу
# функцию: какое свойство выполнено или нарушено, на каком входе, ожидаемое и фактическое значения и
# обычную причину ошибки. Упражнение, которое вы не трогали, печатает «ещё не начато», и *Выполнить все* идёт дальше с эталонным решением. Упражнение, которое вы решали и которое не прошло проверку,
# останавливает *Выполнить все* на своей проверке; там же его подменяет эталон, так что продолжайте из этой ячейки командой
# меню *Среда выполнения*, выполняющей ячейки после текущей (Colab; в английском интерфейсе *Runtime → Run after*) или *Run → Run Selected Cell and All Below* на следующей
# (JupyterLab). `show_reference("Exercise 3")` печатает решение; последняя ячейка перечисляет
# упражнения пройденные, не пройденные и не начатые.

# %% tags=["hide-input"]
# @title Подготовка 1 из 5: установить только недостающие пакеты из разрешённого списка и сообщить версии.
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
    print("Все нужные пакеты уже установлены.")

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
LANGUAGE = "ru"  # figure labels: "en" or "ru"
torch.manual_seed(SEED)
torch.set_num_threads(1)  # one thread: identical numbers on every run
# No torch.use_deterministic_algorithms(True): on one CPU thread every op here is already deterministic,
# and that switch would import the compiler stack (about a second of start-up).
ENVIRONMENT = report_environment()
gc.freeze()  # the objects imported so far (torch's are many) are never garbage: later collections skip them


# %% tags=["hide-input"]
# @title Подготовка 3 из 5: зафиксированные эталонные метрики, сверенные со своим SHA-256 до любого использования.
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
print(f"{REFERENCE_SOURCE} сверен: sha256 {REFERENCE_SHA256}")

# %% tags=["hide-input"]
# @title Подготовка 4 из 5: проверки аргументов, помощник для неверных входов, стиль рисунков и запуск упражнений.
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
# @title Подготовка 5 из 5: судьи. За каждым упражнением ниже идёт один вызов, запускающий его контрактную проверку.
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
MESSAGES.update({
    "Exercise": "Упражнение",
    "Module": "Модуль",
    "pass": "{label}: ПРОЙДЕНО, все свойства контракта {name} выполняются",
    "reference in place": "{label}: на месте эталонное решение {name}, а не ваше. Исправьте свою ячейку, запустите её, затем запустите эту.",
    "not attempted, reference": "{label}: ещё не начато; следующие ячейки используют эталонное решение",
    "not attempted, waiting": "{label}: ещё не начато; ячейки, которым нужна {name}, ждут её",
    "waits for": "{label}: ждёт {waited}, которое использует {name}; сначала закончите {waited}, затем запустите эту ячейку снова",
    "your frames": "Ваш код вызвал {error} здесь (кадры курса опущены):",
    "crash property": "контрактная проверка доходит до конца на этой реализации",
    "crash input": "входы контракта: {label}",
    "crash expected": "результат, который контракт может оценить",
    "crash hint": "трассировка над этим сообщением показывает строку {name}, вызвавшую ошибку",
    "failed reason": "{name} нарушает «{property}»",
    "crash reason": "{name} прервала свою контрактную проверку ({error})",
    "go on, reference": "имя {name} теперь указывает на эталонное решение ({label}), и ячейки после этой работают с ним: щёлкните эту ячейку и выберите в меню «Среда выполнения» выполнение ячеек после текущей (Colab; в английском интерфейсе Runtime → Run after) или выделите следующую ячейку и выберите Run → Run Selected Cell and All Below (JupyterLab). show_reference('{label}') печатает решение; исправьте свою ячейку и запустите её снова, и имени {name} вернётся ваш код, затем запустите эту ячейку.",
    "go on, waiting": "исправьте {name}, запустите её ячейку и эту снова; ячейки, которым нужна {name}, ждут, пока она не пройдёт проверку.",
    "violation": "свойство контракта «{property}» не выполнено",
    "on input": "на входе",
    "expected": "ожидалось",
    "actual": "получено",
    "usual cause": "обычная причина",
    "to go on": "что дальше",
    "check failed": "проверка не прошла: {claim}",
    "a true value": "истинное значение",
    "numbers of shape": "числа формы {shape}",
    "shape": "форма {shape}",
    "close expected": "{value} в позиции {index} (допуск atol={atol}, rtol={rtol})",
    "close actual": "{value}; не совпадают {count} из {size} элементов, наибольшая |разность| {worst}",
    "not finite": "не конечна (NaN или бесконечность)",
    "library error": "{error} (сообщение библиотеки: «{message}»)",
    "section pass": "{section}: ПРОЙДЕНО",
    "section waits": "{section}: пока не оценено; некоторые ячейки ждут: {labels}",
    "section on reference": "{section}: проверки выполняются, но вместо вашего кода работает эталонное решение ({labels}): это ещё не зачёт вашего собственного кода",
    "and more": "{labels} и ещё {count}",
    "none": "нет",
    "summary passed": "Упражнения, пройденные вашим собственным кодом: {labels}",
    "summary failed": "Упражнения с ошибкой: {labels}",
    "summary not attempted": "Упражнения, которые ещё не начаты: {labels}",
    "summary first failure": "Первая непройденная проверка: ячейка проверки ({label}: {reason}); сначала исправьте это упражнение",
    "references used": "Все {count} эталонных значений из {source} использованы или проверены ячейками.",
    "references waiting": "Использованы или проверены {used} из {count} эталонных значений из {source}; остальные {left} ждут вместе с ячейками, которые ждут: {labels}",
    "prediction missing": "{label}: прогноза ещё нет (впишите его выше, запустите ту ячейку, затем эту). Измеренный ответ\xa0— ({measured}): {explanation}",
    "prediction right": "{label}: ваш прогноз ({prediction}) верен: {explanation}",
    "prediction wrong": "{label}: ваш прогноз ({prediction}) расходится с измерением, которое даёт ({measured}): {explanation}",
    "provenance": "*Происхождение: сборщик курса {version}; эталонные значения `{path}`, SHA-256 `{sha256}`. Лицензия: текст и рисунки\xa0— CC BY-SA 4.0, код\xa0— MIT.*",
    "cell waits": "Эта ячейка ждёт ({label}): запустите её снова, когда {label} пройдёт свою проверку.",
    "wrong mask entry": "неверный элемент маски",
    "properties": "свойства",
    "properties hold": "выполняются {held} из {count} свойств этого упражнения",
    "grade pass": "ПРОЙДЕНО: все свойства контракта {names} выполняются.",
    "grade not done": "НЕ СДЕЛАНО: {names} всё ещё выбрасывает NotImplementedError, как заготовка: {error}",
    "grade fail": "НЕ ПРОЙДЕНО: {names} нарушает свой контракт.",
    "grade error": "ОШИБКА: {names} выбрасывает {error}: {message}",
    "grade an exception": "исключение",
    "grade environment": "НЕ ОЦЕНЕНО (среда оценивания): процесс, выполняющий ваш код, не смог импортировать {module}, который предоставляет курс; это вина машины оценивания, а не ваша, и упражнение оценят заново.",
    "grade properties": "каждое свойство этого упражнения:",
    "grade property holds": "  выполняется: {property}",
    "grade property fails": "  нарушено: {property}",
    "grade where": "строка {line} в {cell}, функция {name}",
    "grade own cell": "вашей собственной ячейке {number}",
    "grade exercise cell": "вашей ячейке «{label}»",
    "grade missing cell": "ОТСУТСТВУЕТ: в работе нет ячейки «{label}», поэтому {names} не оценивалась.",
    "grade missing names": "ОТСУТСТВУЕТ: ваша ячейка «{label}» не определяет {names}.",
    "grade syntax": "ОШИБКА: ваша ячейка «{label}» не компилируется: SyntaxError в строке {line}: {message}",
    "grade defining": "ОШИБКА: при определении вашего кода «{label}» возникло {error}: {message}",
    "grade defining failed": "ОШИБКА: определить ваш код «{label}» не удалось; процесс, в котором он выполнялся, сообщил:",
    "grade note skipped": "Примечание: строка {line} вашей собственной ячейки {number} выбросила {error} и была пропущена.",
    "grade note shadows": "Примечание: ваши {names} называются так же, как имена курса; ваш код использовал ваши, а код курса сохранил свои.",
    "grade timed out": "ПРЕВЫШЕНО ВРЕМЯ ({seconds} с): проверка «{label}» не завершилась (бесконечный цикл или слишком медленный код).",
    "grade ended": "ОШИБКА: процесс, проверявший «{label}», завершился ({how}), не дав вердикта.",
    "grade check stopped": "ОШИБКА: проверка остановилась с {error}: {message}",
    "grade killed parent": "ОШИБКА: ваш код убил процесс, который его выполняет (своего родителя, процесс курса), поэтому «{label}» не удалось оценить. Оценивание продолжилось со следующего упражнения.",
    "grade not graded": "НЕ ОЦЕНЕНО: {reason}",
    "grade page title": "Отзыв для {id}",
    "grade page score": "Оценка: {score} из {most} баллов",
    "grade page not graded": "Не оценено",
    "grade page exercise": "Упражнение",
    "grade page points": "Баллы",
    "grade page feedback": "Отзыв",
    "q[2,2,3,4], k[2,2,5,4], v[2,2,5,6] float64, causal mask for queries at positions 2..4": "q[2,2,3,4], k[2,2,5,4], v[2,2,5,6] float64, каузальная маска для запросов на позициях 2..4",
    "the function raised on a valid input; the traceback above this message shows where": "функция выбросила ошибку на допустимом входе; трассировка над этим сообщением показывает где",
    "it works on 2-D q, k, v but not on batched ones: k.T reverses every axis of a batched tensor (deprecated beyond 2-D), so (B, H, T, d) becomes (d, T, H, B); transpose the last two axes with k.transpose(-2, -1) or k.mT": "работает на 2-D q, k, v, но не на пакетных: k.T переворачивает все оси пакетного тензора (устарело для размерности больше 2-D), так что (B, H, T, d) становится (d, T, H, B); транспонируйте две последние оси через k.transpose(-2, -1) или k.mT",
    "a result with tensor attributes .output and .weights": "результат с тензорными атрибутами .output и .weights",
    "return AttentionResult(output=..., weights=..., scores=..., empty_rows=...)": "верните AttentionResult(output=..., weights=..., scores=..., empty_rows=...)",
    "divide the scores by sqrt(d_k), take softmax over the key axis (the last one), and set masked scores to -inf before the softmax": "разделите оценки на sqrt(d_k), возьмите softmax по оси ключей (последней) и до softmax поставьте -inf в замаскированные оценки",
    "the scores were divided by d_k; divide by sqrt(d_k)": "оценки разделены на d_k; делите на sqrt(d_k)",
    "the scores were not scaled; divide q @ k^T by sqrt(d_k)": "оценки не масштабированы; разделите q @ k^T на sqrt(d_k)",
    "the softmax normalised over the query axis (dim=-2); each query's weights must sum to 1 over the keys (dim=-1)": "softmax нормирован по оси запросов (dim=-2); веса каждого запроса должны давать в сумме 1 по ключам (dim=-1)",
    "the mask was ignored: blocked keys still got weight; set their scores to -inf before the softmax": "маска проигнорирована: закрытые ключи всё ещё получили вес; поставьте их оценкам -inf до softmax",
    "the mask was applied after the softmax: zeroing weights leaves rows that do not sum to 1; mask the scores instead": "маска применена после softmax: обнуление весов оставляет строки, сумма которых не равна 1; маскируйте оценки",
    "attention weights: every row sums to 1": "веса внимания: каждая строка в сумме даёт 1",
    "softmax normalised over the query axis instead of the key axis": "softmax нормирован по оси запросов вместо оси ключей",
    "attention weights: masked keys get exactly 0": "веса внимания: замаскированные ключи получают ровно 0",
    "the mask was applied after the softmax, or True was read as 'blocked' instead of 'allowed'": "маска применена после softmax, или True прочитано как «закрыто» вместо «разрешено»",
    "scores are q.k / sqrt(d_k) at every allowed entry": "оценки равны q.k / sqrt(d_k) в каждой разрешённой позиции",
    "return the scaled scores (before the softmax), not the weights or the unscaled dot products": "верните масштабированные оценки (до softmax), а не веса и не немасштабированные скалярные произведения",
    "a detach(), an in-place edit or a non-differentiable step (argmax, .item()) inside the attention": "detach(), изменение на месте или недифференцируемый шаг (argmax, .item()) внутри внимания",
    "gradients flow from the output to q, k and v": "градиенты проходят от выхода к q, k и v",
    "an output that requires grad": "выход, который требует градиента",
    "an output cut off from the autograd graph": "выход, отрезанный от графа autograd",
    "a batch axis carried only by V broadcasts with its mask": "пакетная ось, которая есть только у V, транслируется вместе со своей маской",
    "q[1,2,1], k[1,3,1], v[2,3,1], mask[2,2,3]": "q[1,2,1], k[1,3,1], v[2,3,1], mask[2,2,3]",
    "q[1,2,1]=0, k[1,3,1]=0, v[2,3,1]=1..6, per-batch mask[2,2,3]": "q[1,2,1]=0, k[1,3,1]=0, v[2,3,1]=1..6, маска по пакетам mask[2,2,3]",
    "the batch shape was taken from q and k only; broadcast q, k, v and the mask to their joint batch shape": "форма пакета взята только из q и k; транслируйте q, k, v и маску к их общей форме пакета",
    "a fully masked row raises ValueError by default": "полностью замаскированная строка по умолчанию вызывает ValueError",
    ", row 1 fully masked": ", строка 1 полностью замаскирована",
    "softmax over an all -inf row gives NaN; detect empty rows before it": "softmax по строке из одних -inf даёт NaN; находите пустые строки до него",
    "empty_row='zero' gives a zero output row": "empty_row='zero' даёт нулевую строку выхода",
    "the empty row was filled with NaN or with a uniform average": "пустая строка заполнена NaN или равномерным средним",
    ", row 1 fully masked, empty_row='zero'": ", строка 1 полностью замаскирована, empty_row='zero'",
    "NaN or infinity in the gradient": "NaN или бесконечность в градиенте",
    "exp(-inf - -inf) = NaN inside the backward pass; use a safe max of 0 for empty rows": "exp(-inf - -inf) = NaN внутри обратного прохода; для пустых строк берите безопасный максимум 0",
    "an empty row passes no gradient to its query": "пустая строка не передаёт градиента своему запросу",
    "the empty row still received weights before being zeroed": "пустая строка всё равно получила веса до обнуления",
    "empty_rows flags exactly the fully masked query rows": "empty_rows отмечает ровно полностью замаскированные строки запросов",
    "empty_rows = ~allowed.any(dim=-1), taken after broadcasting the mask to the scores' shape": "empty_rows = ~allowed.any(dim=-1), вычисленное после трансляции маски к форме оценок",
    "cached queries keep their absolute positions": "закэшированные запросы сохраняют абсолютные позиции",
    "queries 3..4 against 5 keys": "запросы 3..4 против 5 ключей",
    "5 tokens, queries 3..4 against all 5 cached keys": "5 токенов, запросы 3..4 против всех 5 закэшированных ключей",
    "the causal mask for cached queries was built from local positions 0..1": "каузальная маска для закэшированных запросов построена по локальным позициям 0..1",
    "a local-position mask changes cached outputs": "маска по локальным позициям меняет закэшированные выходы",
    "5 tokens, queries 3..4 with a top-left triangle": "5 токенов, запросы 3..4 с треугольником от левого верхнего угла",
    "a visible difference (> 1e-3)": "заметная разница (> 1e-3)",
    "the implementation ignored the mask it was given": "реализация проигнорировала переданную маску",
    "permutation equivariance without a mask": "эквивариантность к перестановкам без маски",
    "5 tokens permuted by [2, 0, 4, 1, 3]": "5 токенов, переставленных как [2, 0, 4, 1, 3]",
    "position information leaked into the attention itself (a hidden mask or positional term)": "информация о позициях просочилась в само внимание (скрытая маска или позиционный член)",
    "output matches F.scaled_dot_product_attention": "выход совпадает с F.scaled_dot_product_attention",
    "gradient with respect to {name} matches F.scaled_dot_product_attention": "градиент по {name} совпадает с F.scaled_dot_product_attention",
    "a gradient for {name}": "градиент для {name}",
    "none: {name} does not reach the output through autograd": "нет: {name} не доходит до выхода через autograd",
    "returned normally": "завершилась без ошибки",
    "gradients stay finite with an empty row (d{name})": "градиенты остаются конечными при пустой строке (d{name})",
    "finite gradients": "конечные градиенты",
    "max difference {wrong_error:.3g}": "наибольшая разность {wrong_error:.3g}",
    "a result (the input is valid)": "результат (вход допустим)",
    "a tuple {expected}": "кортеж {expected}",
    "return {expected} together, as one tuple": "верните {expected} вместе, одним кортежем",
    "the weights of a CapstoneLM of this config": "веса CapstoneLM с этой конфигурацией",
    "a token of x is all zeros and eps is 0: its root mean square is 0 (0 / 0); use eps > 0": "один токен x состоит из одних нулей, а eps равен 0: его среднеквадратичное равно 0 (0 / 0); возьмите eps > 0",
    "the cache's keys and values": "ключи и значения кэша",
    "the cache of every layer": "кэш всех слоёв",
    "the random order of the vocabulary of each row": "случайный порядок словаря для каждой строки",
    "scored has no True entry: the loss would be a mean over nothing (NaN); score at least one position": "в scored нет ни одного True: потеря была бы средним по пустому набору (NaN); отметьте хотя бы одну позицию",
    "the attention scores and weights": "оценки и веса внимания",
    "q and k are too large for their dtype; scale them down": "q и k слишком велики для своего dtype; уменьшите их масштаб",
    "RMSNorm's gain": "коэффициент усиления RMSNorm",
    "SwiGLU's three weights": "три матрицы весов SwiGLU",
    "the attention scores": "оценки внимания",
    "x of shape (2, 3, 5, 8) float64, positions (0, 1, 4, 9, 30)": "x формы (2, 3, 5, 8) float64, позиции (0, 1, 4, 9, 30)",
    "RoPE turns each pair in place: keep the shape and the dtype of x": "RoPE поворачивает каждую пару на месте: сохраните форму и dtype x",
    "pair i = (x[..., 2i], x[..., 2i+1]) turns by positions[t] * base**(-2i/d): (a cos - b sin, a sin + b cos)": "пара i = (x[..., 2i], x[..., 2i+1]) поворачивается на positions[t] * base**(-2i/d): (a cos - b sin, a sin + b cos)",
    "you paired coordinate i with i + d/2 (the halves layout of transformers' Llama); this course rotates neighbours (2i, 2i+1), as the RoFormer paper does": "вы сложили в пару координаты i и i + d/2 (раскладка половинами, как в Llama из transformers); этот курс поворачивает соседей (2i, 2i+1), как в статье RoFormer",
    "the pairs turn the wrong way: (a, b) -> (a cos + b sin, -a sin + b cos) is a rotation by minus the angle": "пары поворачиваются не в ту сторону: (a, b) -> (a cos + b sin, -a sin + b cos)\xa0— это поворот на минус угол",
    "the frequency of pair i is base**(-2i/d): the exponent counts coordinates (2i), not pairs (i)": "частота пары i равна base**(-2i/d): показатель считает координаты (2i), а не пары (i)",
    "the positions argument was ignored (rows were numbered 0, 1, 2, ...): a cached token keeps its absolute position": "аргумент positions проигнорирован (строки пронумерованы 0, 1, 2, ...): токен из кэша сохраняет свою абсолютную позицию",
    "pair (2i, 2i+1) at position p turns by p * base^(-2i/d)": "пара (2i, 2i+1) на позиции p поворачивается на p * base^(-2i/d)",
    "the base argument sets the rotation frequencies": "аргумент base задаёт частоты поворота",
    "position 0 leaves the vector unchanged": "позиция 0 оставляет вектор без изменений",
    "x of shape (1, 8) at position 0": "x формы (1, 8) на позиции 0",
    "an angle of 0 is no rotation: cos 0 = 1 and sin 0 = 0": "угол 0\xa0— это отсутствие поворота: cos 0 = 1 и sin 0 = 0",
    "q . k depends only on the offset between their positions": "q . k зависит только от сдвига между их позициями",
    "q at m + 3, k at m, m = 0, 5, 40": "q на позиции m + 3, k на позиции m, m = 0, 5, 40",
    "one score for every m": "одна и та же оценка при любом m",
    "rotate queries and keys with the same rule; a rotation keeps only the offset": "поворачивайте запросы и ключи по одному правилу; поворот сохраняет только сдвиг",
    "RMSNorm(5) has a gain weight of 5 ones": "у RMSNorm(5) есть коэффициент weight из 5 единиц",
    "an nn.Parameter of shape (5,) filled with 1": "nn.Parameter формы (5,), заполненный значением 1",
    "self.weight = nn.Parameter(torch.ones(d_model)): a learned gain that starts as the identity": "self.weight = nn.Parameter(torch.ones(d_model)): выученный коэффициент, который вначале ничего не меняет",
    "x (3, 5) float64 with row means 4, -1, 0.5, eps=0.5, weight (1, 2, -1, 0.5, 3)": "x (3, 5) float64 со средними строк 4, -1, 0,5, eps=0,5, weight (1, 2, -1; 0,5; 3)",
    "output is x / sqrt(mean(x^2) + eps) * weight": "выход равен x / sqrt(mean(x^2) + eps) * weight",
    "divide each token by the root of its mean square plus eps over the last axis, then multiply by weight": "разделите каждый токен на корень из его среднего квадрата плюс eps по последней оси, затем умножьте на weight",
    "the mean was subtracted: that is LayerNorm; RMSNorm keeps the mean and only rescales": "вычтено среднее: это LayerNorm; RMSNorm сохраняет среднее и только масштабирует",
    "eps goes inside the square root: sqrt(mean(x^2) + eps)": "eps стоит под корнем: sqrt(mean(x^2) + eps)",
    "the gain self.weight was not applied": "коэффициент self.weight не применён",
    "mean of the squares, not their sum: divide by d": "среднее квадратов, а не их сумма: разделите на d",
    "the gain receives gradients": "коэффициент получает градиенты",
    "an output cut off from autograd": "выход, отрезанный от autograd",
    "no .detach(), .item() or NumPy round trip inside forward": "никаких .detach(), .item() или перехода через NumPy внутри forward",
    "three bias-free projections w_gate, w_up: 6 -> 10 and w_down: 10 -> 6": "три проекции без смещений: w_gate, w_up: 6 -> 10 и w_down: 10 -> 6",
    "weights (10, 6), (10, 6), (6, 10), no biases": "веса (10, 6), (10, 6), (6, 10), без смещений",
    "nn.Linear(d_model, d_ff, bias=False) for w_gate and w_up, nn.Linear(d_ff, d_model, bias=False) for w_down": "nn.Linear(d_model, d_ff, bias=False) для w_gate и w_up, nn.Linear(d_ff, d_model, bias=False) для w_down",
    "output is w_down(silu(w_gate x) * w_up x)": "выход равен w_down(silu(w_gate x) * w_up x)",
    "x (2, 3, 6)": "x (2, 3, 6)",
    "gate = silu(w_gate x) (silu(z) = z sigmoid(z)), multiply by w_up x entry by entry, then w_down": "гейт = silu(w_gate x) (silu(z) = z sigmoid(z)), умножьте поэлементно на w_up x, затем w_down",
    "silu went on the w_up branch: the gate is silu(w_gate x), w_up x stays linear": "silu попал на ветку w_up: гейт\xa0— это silu(w_gate x), а w_up x остаётся линейным",
    "GELU is GPT-2's activation; SwiGLU gates with SiLU (Swish): z * sigmoid(z)": "GELU\xa0— активация GPT-2; SwiGLU гейтирует через SiLU (Swish): z * sigmoid(z)",
    "sigmoid alone is the GLU gate; SwiGLU uses silu(z) = z * sigmoid(z)": "одна сигмоида\xa0— это гейт GLU; SwiGLU использует silu(z) = z * sigmoid(z)",
    "the w_up branch is missing: the gate multiplies w_up x": "нет ветки w_up: гейт умножается на w_up x",
    "CapstoneAttention(config): d_model 16, 4 query heads, 2 K/V heads, head_dim 4, rope_base 100": "CapstoneAttention(config): d_model 16, 4 головы запросов, 2 KV-головы, head_dim 4, rope_base 100",
    "w_q, w_o: 16 -> 16 and w_k, w_v: 16 -> 8, no biases": "w_q, w_o: 16 -> 16 и w_k, w_v: 16 -> 8, без смещений",
    "weights (16, 16), (8, 16), (8, 16), (16, 16)": "веса (16, 16), (8, 16), (8, 16), (16, 16)",
    "K and V have n_kv_heads * head_dim outputs; use bias=False": "у K и V по n_kv_heads * head_dim выходов; используйте bias=False",
    "qkv gives q (B, 4, T, 4) and k, v (B, 2, T, 4), RoPE on q and k only": "qkv даёт q (B, 4, T, 4) и k, v (B, 2, T, 4), RoPE только на q и k",
    "x (2, 7, 16)": "x (2, 7, 16)",
    "head h of token t holds features h*head_dim .. (h+1)*head_dim - 1 of the projection (split_heads), with apply_rope(q or k, positions, rope_base); v is not rotated": "голова h токена t хранит признаки h*head_dim .. (h+1)*head_dim - 1 проекции (split_heads), с apply_rope(q или k, positions, rope_base); v не поворачивается",
    "v was rotated: RoPE turns queries and keys, whose dot product carries the position; the values stay as they are": "v повёрнут: RoPE поворачивает запросы и ключи, чьё скалярное произведение несёт позицию; значения остаются как есть",
    "k was not rotated: both q and k turn, so that their dot product depends on the offset": "k не повёрнут: поворачиваются и q, и k, чтобы их скалярное произведение зависело от сдвига",
    "merge puts the heads side by side, then applies w_o": "merge ставит головы рядом, затем применяет w_o",
    "out (2, 4, 7, 4)": "out (2, 4, 7, 4)",
    "forward is causal RoPE attention, query head h reading K/V head h // 2": "forward\xa0— каузальное внимание с RoPE, где голова запросов h читает KV-голову h // 2",
    "x (2, 7, 16), positions 0..6, no cache": "x (2, 7, 16), позиции 0..6, без кэша",
    "q, k, v = self.qkv(...); repeat each K/V head for its group (repeat_kv_heads), mask with causal_allowed, attend, merge": "q, k, v = self.qkv(...); повторите каждую KV-голову для её группы (repeat_kv_heads), замаскируйте через causal_allowed, примените внимание, склейте",
    "the K/V heads were tiled (kv0, kv1, kv0, kv1): consecutive query heads share one K/V head, so repeat_interleave": "KV-головы уложены чередованием (kv0, kv1, kv0, kv1): соседние головы запросов делят одну KV-голову, поэтому repeat_interleave",
    "cached calls append at their own first position": "вызовы с кэшем добавляют с собственной первой позиции",
    "x split 4 + 3 tokens, positions 0..3 then 4..6": "x разбит на 4 + 3 токена, позиции 0..3, затем 4..6",
    "pass int(positions[0]) as the start of the appended keys": "передайте int(positions[0]) как начало добавляемых ключей",
    "with a cache, later queries read every cached key at their absolute positions": "с кэшем поздние запросы читают все ключи из кэша на своих абсолютных позициях",
    "append (k, v) to the cache, attend over all it returns, and mask with causal_allowed(T, T_k, query_offset=T_k - T)": "добавьте (k, v) в кэш, примените внимание ко всему, что он вернёт, и маскируйте через causal_allowed(T, T_k, query_offset=T_k - T)",
    "the mask of the cached queries is top-left aligned (is_causal=True's rule): query r sits at position query_offset + r, so pass query_offset=T_k - T_q to causal_allowed": "маска запросов из кэша выровнена по левому верхнему углу (правило is_causal=True): запрос r стоит на позиции query_offset + r, поэтому передайте query_offset=T_k - T_q в causal_allowed",
    "CapstoneLM(config): vocab 11, d_model 16, 2 layers, 4 query heads, 2 K/V heads, d_ff 24": "CapstoneLM(config): vocab 11, d_model 16, 2 слоя, 4 головы запросов, 2 KV-головы, d_ff 24",
    "the model holds embed, blocks.i.{attn_norm, attn, ffn_norm, ffn}, norm and head": "модель хранит embed, blocks.i.{attn_norm, attn, ffn_norm, ffn}, norm и head",
    "these weights and no others": "эти веса и никаких других",
    "nn.Embedding, an nn.ModuleList of CapstoneBlock, RMSNorm and a bias-free nn.Linear head": "nn.Embedding, nn.ModuleList из CapstoneBlock, RMSNorm и выходная голова nn.Linear без смещения",
    "logits = head(norm(blocks(embed(tokens)))) with pre-norm residual blocks": "логиты = head(norm(blocks(embed(tokens)))) с остаточными блоками pre-norm",
    "x = x + attn(attn_norm(x), positions, cache), then x = x + ffn(ffn_norm(x)); after the blocks, norm, then head": "x = x + attn(attn_norm(x), positions, cache), затем x = x + ffn(ffn_norm(x)); после блоков norm, затем head",
    "post-norm: normalise each sublayer's input, not the residual sum": "post-norm: нормируйте вход каждого подслоя, а не остаточную сумму",
    "the final norm is missing: head(norm(x))": "нет финальной нормировки: head(norm(x))",
    "fed 5 tokens, then 1 at a time through a cache, the logits are those of one full pass": "если подать 5 токенов, а затем по 1 через кэш, логиты совпадают с логитами одного полного прохода",
    "tokens (2, 8) as 5 + 1 + 1 + 1": "tokens (2, 8) как 5 + 1 + 1 + 1",
    "positions continue from cache.length, and each block gets cache.layers[i]": "позиции продолжаются с cache.length, и каждый блок получает cache.layers[i]",
    "an embedding + linear model on 2 rows of 4 tokens, 4 positions scored, SGD lr 0.1, stale gradients of 5 left in": "модель «эмбеддинг + линейный слой» на 2 строках по 4 токена, 4 отмеченные позиции, SGD lr 0,1, оставлены устаревшие градиенты, равные 5",
    "the step returns the cross-entropy over the scored positions as a float": "шаг возвращает кросс-энтропию по отмеченным позициям как float",
    "return loss.item(): a float, not the tensor with its whole graph": "верните loss.item(): число float, а не тензор со всем его графом",
    "F.cross_entropy(logits[scored], targets[scored]): score only the positions the mask marks": "F.cross_entropy(logits[scored], targets[scored]): учитывайте только позиции, отмеченные маской",
    "every position was scored: index the logits and targets with the scored mask first": "учтены все позиции: сначала выберите логиты и цели маской scored",
    "the weights move by exactly one optimizer step on this loss": "веса сдвигаются ровно на один шаг оптимизатора по этой потере",
    "optimizer.zero_grad(), loss.backward(), optimizer.step(), in that order": "optimizer.zero_grad(), loss.backward(), optimizer.step(), именно в таком порядке",
    "the stale gradients were kept: call optimizer.zero_grad() before loss.backward()": "устаревшие градиенты сохранились: вызовите optimizer.zero_grad() перед loss.backward()",
    "append logits[:, -1].argmax(-1) each step; ": "на каждом шаге дописывайте logits[:, -1].argmax(-1); ",
    "through the cache: feed the prompt once, then only the newest token, and let the model read the rest from the cache": "через кэш: подайте промпт один раз, затем только самый новый токен, а остальное модель прочитает из кэша",
    "without a cache, feed the whole sequence every step": "без кэша подавайте всю последовательность на каждом шаге",
    "with a cache each step feeds only the newest token": "с кэшем каждый шаг подаёт только самый новый токен",
    "without a cache each step feeds the whole sequence": "без кэша каждый шаг подаёт всю последовательность",
    "the prompt goes in once; after that one token per step (its keys join the cache)": "промпт подаётся один раз; после этого по одному токену на шаг (его ключи добавляются в кэш)",
    "cache=False is the baseline: the whole sequence every step, no KVCache": "cache=False\xa0— базовый вариант: вся последовательность на каждом шаге, без KVCache",
    "n_new=0 returns the prompt": "n_new=0 возвращает промпт",
    "prompt (2, 3), n_new=0": "prompt (2, 3), n_new=0",
    "a loop of zero steps returns the prompt unchanged": "цикл из нуля шагов возвращает промпт без изменений",
    "the cache refuses a write that is not at its end or does not fit": "кэш отказывает в записи не в свой конец или сверх своей ёмкости",
    "a LayerKV(1, 1, 4, 2) holding 2 positions, asked to write 1 position at start=1": "LayerKV(1, 1, 4, 2) с 2 позициями; просим записать 1 позицию при start=1",
    "refuse unless start == self.length: a write elsewhere overwrites keys or leaves a gap": "пишите, только если start == self.length, иначе отказывайте: запись в другое место затирает ключи или оставляет дыру",
    "a LayerKV(1, 1, 4, 2) holding 2 positions, asked to write 3 positions at start=2": "LayerKV(1, 1, 4, 2) с 2 позициями; просим записать 3 позиции при start=2",
    "refuse unless start + T <= max_len: the buffers hold max_len positions": "пишите, только если start + T <= max_len, иначе отказывайте: буферы вмещают max_len позиций",
    "LayerKV(batch, n_kv_heads, max_len, head_dim) builds empty buffers": "LayerKV(batch, n_kv_heads, max_len, head_dim) создаёт пустые буферы",
    "a write at start=0 into an empty cache is valid": "запись при start=0 в пустой кэш допустима",
    "no error: the write went through": "ошибки нет: запись прошла",
    "rows of k distinct tokens written twice, k from k_min to k_max": "строки из k различных токенов, записанных дважды, k от k_min до k_max",
    "induction_batch(200, generator seeded 3, vocab=16, k_min=3, k_max=9)": "induction_batch(200, генератор с зерном 3, vocab=16, k_min=3, k_max=9)",
    "a tuple (inputs, targets, scored)": "кортеж (inputs, targets, scored)",
    "return inputs, targets and the scored mask together": "верните inputs, targets и маску scored вместе",
    "three tensors of shape (200, 17), scored of dtype bool": "три тензора формы (200, 17), scored с dtype bool",
    "sequences of 2 k_max tokens; inputs drop the last, targets the first": "последовательности из 2 k_max токенов; в inputs нет последнего, в targets\xa0— первого",
    "targets are the inputs shifted by one": "targets\xa0— это inputs, сдвинутые на одну позицию",
    "targets[:, t] == inputs[:, t + 1]": "targets[:, t] == inputs[:, t + 1]",
    "slice one sequence twice: inputs = seq[:, :-1], targets = seq[:, 1:]": "разрежьте одну последовательность дважды: inputs = seq[:, :-1], targets = seq[:, 1:]",
    "k distinct tokens, then the same k again": "k различных токенов, затем те же k ещё раз",
    "draw k distinct tokens (torch.randperm(vocab)[:k]) and write them twice; score the repeat's 2nd..k-th targets": "выберите k различных токенов (torch.randperm(vocab)[:k]) и запишите их дважды; отмечайте цели повтора со 2-й по k-ю",
    "scored marks exactly the targets an induction head can find": "scored отмечает ровно те цели, которые может найти индукционная голова",
    "targets k+1 .. 2k-1 of each row (input positions k .. 2k-2)": "цели k+1 .. 2k-1 каждой строки (позиции входа k .. 2k-2)",
    "another set of positions": "другой набор позиций",
    "the first token of the repeat cannot be predicted (nothing says where the repeat starts); the filler neither": "первый токен повтора предсказать нельзя (ничто не говорит, где начинается повтор); заполнение\xa0— тоже",
    "k is drawn for each row": "k выбирается для каждой строки",
    "several lengths among 200 rows": "несколько разных длин среди 200 строк",
    "draw k for each row, not once for the batch": "выбирайте k для каждой строки, а не один раз на батч",
    "the generator alone decides the batch": "батч определяется только генератором",
    "the same batch from the same seed": "тот же батч при том же зерне",
    "draw every random number from the generator argument, not from torch's global state": "берите каждое случайное число из аргумента generator, а не из глобального состояния torch",
    "steps=10, seed=4, batch=6, lr=0.5, warmup=4, a step that records the optimizer, its lr and the batch": "steps=10, seed=4, batch=6, lr=0,5, warmup=4, шаг, который записывает оптимизатор, его lr и батч",
    "the step runs once per step and the losses are what it returned": "step вызывается один раз за шаг, а потери\xa0— то, что он вернул",
    "the floats 1, 2, ..., 10": "числа float 1, 2, ..., 10",
    "call step(model, optimizer, inputs, targets, scored) once per step and collect what it returns": "вызывайте step(model, optimizer, inputs, targets, scored) один раз за шаг и собирайте то, что он возвращает",
    "one AdamW optimizer without weight decay for the whole run": "один оптимизатор AdamW без weight decay на весь запуск",
    "torch.optim.AdamW(..., weight_decay=0), made once": "torch.optim.AdamW(..., weight_decay=0), созданный один раз",
    "AdamW's default weight_decay is 0.01: pass weight_decay=0, and build the optimizer before the loop": "по умолчанию у AdamW weight_decay равен 0,01: передайте weight_decay=0 и создайте оптимизатор до цикла",
    "at step t = 0, 1, ...: lr * min(1, (t + 1) / warmup) * (1 - t / steps), set before the step (LambdaLR, then schedule.step() after)": "на шаге t = 0, 1, ...: lr * min(1, (t + 1) / warmup) * (1 - t / steps), заданный до шага (LambdaLR, затем schedule.step() после)",
    "the warm-up is missing: the rate rises linearly over the first `warmup` steps": "нет разогрева: скорость растёт линейно на первых `warmup` шагах",
    "the rate rises over warmup steps, then falls linearly towards 0": "скорость растёт в течение warmup шагов, затем линейно падает к 0",
    "every step gets a fresh batch of `batch` rows": "каждый шаг получает новый батч из `batch` строк",
    "10 different batches of shape (6, 23)": "10 разных батчей формы (6, 23)",
    "draw induction_batch(batch, generator, ...) inside the loop, from one generator made before it": "вызывайте induction_batch(batch, generator, ...) внутри цикла, с одним генератором, созданным до него",
    "the seed alone decides the batches": "батчи определяются только зерном",
    "the same 10 batches from seed 4 twice": "те же 10 батчей дважды при зерне 4",
    "use torch.Generator().manual_seed(seed + 1), made once": "используйте torch.Generator().manual_seed(seed + 1), созданный один раз",
    "the model trains in training mode": "модель обучается в режиме обучения",
    "model.training True in every step": "model.training равно True на каждом шаге",
    "call model.train() before the loop (and model.eval() after it)": "вызовите model.train() до цикла (и model.eval() после него)",
    "accuracy counts the scored positions only": "точность считается только по отмеченным позициям",
    "a model right at odd positions of the repeat only, batch=64, seed=5": "модель, правая только на нечётных позициях повтора, batch=64, seed=5",
    "a score of the model's own predictions": "оценка собственных предсказаний модели",
    "call the model on a fresh induction batch and compare its argmax with the targets": "вызовите модель на новом батче задачи индукции и сравните её argmax с целями",
    "(argmax of the logits == targets)[scored].float().mean(): the first half and the filler do not count": "(argmax логитов == targets)[scored].float().mean(): первая половина и заполнение не считаются",
    "a {x.dtype} tensor of shape {tuple(x.shape)}": "тензор {x.dtype} формы {tuple(x.shape)}",
    "scores {[round(s, 6) for s in scores]}": "оценки {[round(s, 6) for s in scores]}",
    "weights {shapes}, biases {[getattr(l, 'bias', None) is not None for l in layers]}": "веса {shapes}, смещения {[getattr(l, 'bias', None) is not None for l in layers]}",
    "merge_heads(out), then self.w_o": "merge_heads(out), затем self.w_o",
    "missing {sorted(want_names - names)[:4]}, extra {sorted(names - want_names)[:4]}": "не хватает {sorted(want_names - names)[:4]}, лишние {sorted(names - want_names)[:4]}",
    "tokens (2, 8)": "токены (2, 8)",
    "a Python float": "число Python типа float",
    "greedy decoding with cache={cache} gives the model's tokens": "жадное декодирование с cache={cache} даёт токены модели",
    "a model whose next token is (3 * sum of the past + length) mod 11, prompt (2, 3), 6 new tokens, cache={cache}": "модель, у которой следующий токен равен (3 * сумма прошлых + длина) по модулю 11, промпт (2, 3), 6 новых токенов, cache={cache}",
    "tokens fed per call {fed}": "токенов за вызов: {fed}",
    "{shapes}, scored {getattr(scored, 'dtype', '')}": "{shapes}, маска оцениваемых позиций типа {getattr(scored, 'dtype', '')}",
    "they differ": "они различаются",
    "{row.tolist()} with {k - 1} scored positions": "{row.tolist()}, оцениваемых позиций: {k - 1}",
    "lengths {sorted(set(lengths.tolist()))}": "длины {sorted(set(lengths.tolist()))}",
    "a different batch": "другой пакет",
    "shapes {[tuple(b.shape) for b in batches[:3]]} ...": "формы {[tuple(b.shape) for b in batches[:3]]} ...",
    "different batches": "разные пакеты",
    "{got!r}, without calling the model": "{got!r}, без вызова модели",
    "{want:.4f} as a float": "{want:.4f} как число float",
    "a sequence of probabilities": "последовательность вероятностей",
    "return a list of floats, one per token": "верните список чисел float, по одному на токен",
    ": one probability per token": ": по одной вероятности на токен",
    "return a probability for every token id, with 0.0 for the ones a filter removed": "верните вероятность для каждого id токена, с 0,0 для отброшенных фильтром",
    ": finite, non-negative probabilities": ": конечные неотрицательные вероятности",
    "finite values >= 0": "конечные значения >= 0",
    "subtract the largest logit before exp() so large logits cannot overflow": "вычтите наибольший логит до exp(), чтобы большие логиты не переполнялись",
    ": probabilities sum to 1": ": вероятности в сумме дают 1",
    "renormalise over the kept tokens after filtering; a temperature applied after the softmax also breaks the sum": "после фильтрации перенормируйте по оставшимся токенам; температура, применённая после softmax, тоже ломает сумму",
    "softmax(logits): exp(z - max z) / sum": "softmax(logits): exp(z - max z) / сумма",
    "temperature 1 is the plain softmax": "температура 1\xa0— это обычный softmax",
    "temperature divides the logits before the softmax": "температура делит логиты до softmax",
    "divide the logits by the temperature, then take the softmax": "разделите логиты на температуру, затем возьмите softmax",
    "the temperature was ignored or applied to the probabilities after the softmax": "температура проигнорирована или применена к вероятностям после softmax",
    "the logits were multiplied by the temperature instead of divided": "логиты умножены на температуру вместо деления",
    "a temperature below 1 sharpens": "температура ниже 1 заостряет распределение",
    "top_k keeps exactly the k most likely tokens": "top_k оставляет ровно k самых вероятных токенов",
    "sort by logit (largest first), keep the first k, renormalise": "отсортируйте по логиту (сначала наибольшие), оставьте первые k, перенормируйте",
    "off by one: top_k=2 kept three tokens": "ошибка на единицу: top_k=2 оставил три токена",
    "off by one: top_k=2 kept one token": "ошибка на единицу: top_k=2 оставил один токен",
    "top_k picks the largest logits, wherever they sit": "top_k выбирает наибольшие логиты, где бы они ни стояли",
    "rank tokens by logit, not by position in the vector": "ранжируйте токены по логиту, а не по позиции в векторе",
    "the first k ids were kept instead of the k largest logits": "оставлены первые k id вместо k наибольших логитов",
    "top_p keeps the token that crosses the threshold": "top_p оставляет токен, на котором сумма переходит порог",
    "keep adding tokens (most likely first) until the kept mass reaches top_p; the token that reaches it stays": "добавляйте токены (сначала самые вероятные), пока оставленная масса не достигнет top_p; токен, на котором она достигнута, остаётся",
    "the token that crosses the threshold was dropped: stop after adding the token whose cumulative mass reaches top_p, not before it": "токен, на котором сумма переходит порог, отброшен: останавливайтесь после добавления токена, чья накопленная масса достигает top_p, а не перед ним",
    "top_p = 1 keeps every token": "top_p = 1 оставляет все токены",
    "top_p=1 is no filter at all": "top_p=1 вообще не фильтрует",
    "ties in top_p go to the lower token id": "при равенстве в top_p выигрывает меньший id токена",
    "sort by (-logit, id) so equal logits keep their order; with mass 0.25 each, top_p=0.5 keeps ids 0 and 1": "сортируйте по (-logit, id), чтобы равные логиты сохраняли порядок; при массе 0,25 у каждого top_p=0,5 оставляет id 0 и 1",
    "ties in top_k go to the lower token id": "при равенстве в top_k выигрывает меньший id токена",
    "a stable sort keeps id 0 before id 1": "устойчивая сортировка оставляет id 0 перед id 1",
    "temperature, then top_k, then top_p measured on the kept mass": "сначала температура, затем top_k, затем top_p, измеренный по оставшейся массе",
    "apply the temperature first, then top_k, then top_p on the probabilities renormalised over the top_k survivors": "сначала примените температуру, затем top_k, затем top_p к вероятностям, перенормированным по выжившим после top_k",
    "the temperature was applied after the filters (or not at all)": "температура применена после фильтров (или не применена вовсе)",
    "top_p was measured on the mass of all tokens, not of the top_k survivors": "top_p измерен по массе всех токенов, а не выживших после top_k",
    "large logits do not overflow": "большие логиты не переполняются",
    "subtract the largest logit before exp()": "вычтите наибольший логит до exp()",
    "EOS stops the trace and is kept": "EOS останавливает трассу и сохраняется",
    "append the token first, then stop if it is eos_id; the EOS token belongs to the output": "сначала добавьте токен, затем остановитесь, если это eos_id; токен EOS входит в выход",
    "the length limit stops the trace": "предел длины останавливает трассу",
    "stop as soon as max_new_tokens tokens have been generated, even if more logits are available": "остановитесь, как только сгенерировано max_new_tokens токенов, даже если логитов больше",
    "EOS on the last allowed step reports 'eos'": "EOS на последнем разрешённом шаге сообщает 'eos'",
    "check for EOS before checking the length limit": "проверяйте EOS до проверки предела длины",
    "one step emits one token": "один шаг выдаёт один токен",
    "greedy ties go to the lower token id": "при равенстве жадный выбор берёт меньший id токена",
    "take the first index of the maximum (max over range with a key, or argmax)": "берите первый индекс максимума (max по range с key или argmax)",
    "greedy takes the largest logit, not the first": "жадный выбор берёт наибольший логит, а не первый",
    "argmax over the whole score vector of each step": "argmax по всему вектору оценок на каждом шаге",
    "return a pair: the list of token ids and 'eos' or 'length_limit'": "верните пару: список id токенов и 'eos' или 'length_limit'",
    "greedy takes the largest logit at every step": "жадный выбор берёт наибольший логит на каждом шаге",
    ", not a token id": ", а не id токена",
    "take the argmax of each step's scores; an ascending sort (or argmin) takes the least likely token": "берите argmax оценок каждого шага; сортировка по возрастанию (или argmin) берёт наименее вероятный токен",
    "greedy_trace([[3, 2, 1, 0]] * 2, eos_id=3, max_new_tokens=3)": "greedy_trace([[3, 2, 1, 0]] * 2, eos_id=3, max_new_tokens=3)",
    "a trace that ends before any stop condition raises ValueError": "трасса, которая кончается раньше любого условия остановки, вызывает ValueError",
    "after the loop, raise ValueError: the prepared logits ran out before EOS or the length limit": "после цикла вызовите ValueError: подготовленные логиты кончились раньше EOS или предела длины",
    "{len(want)} entries": "элементов: {len(want)}",
    "{len(got)} entries": "элементов: {len(got)}",
    "sum 1": "сумма 1",
    "sum {math.fsum(got)!r}": "сумма {math.fsum(got)!r}",
    "a single step": "один шаг",
    "(tokens, reason)": "(tokens, reason)",
    "step {step}: a token with logit {max(scores)}": "шаг {step}: токен с логитом {max(scores)}",
    "token {token}": "токен {token}",
    " with logit {scores[token]}": " с логитом {scores[token]}",
    "nothing here is invalid": "здесь ничего не недопустимо",
    "a valid step gives (S, z, output)": "корректный шаг возвращает (S, z, output)",
    "the state keeps its size: S (d_k, d_v) and z (d_k,)": "состояние сохраняет размер: S (d_k, d_v) и z (d_k,)",
    "add to the sums; never keep a list of tokens": "прибавляйте к суммам; никогда не храните список токенов",
    "one output of d_v numbers per step": "один выход из d_v чисел на шаг",
    "return phi(q)^T S / phi(q)^T z, a vector of d_v numbers": "верните phi(q)^T S / phi(q)^T z, вектор из d_v чисел",
    "keys (1, 0), (0, 1), (1, 1); values 2, 4, 6; third query (1, 0); the state starts at zero": "ключи (1, 0), (0, 1), (1, 1); значения 2, 4, 6; третий запрос (1, 0); состояние начинается с нуля",
    "the running sums after 3 tokens are S = (20, 22) and z = (5, 5)": "текущие суммы после 3 токенов равны S = (20, 22) и z = (5, 5)",
    "S adds phi(k) v^T and z adds phi(k) for every token, with phi(x) = x + 1 for x > 0 and e^x otherwise": "S прибавляет phi(k) v^T, а z прибавляет phi(k) для каждого токена, где phi(x) = x + 1 при x > 0 и e^x иначе",
    "query i read S and z before token i was added: add phi(k_i) v_i^T and phi(k_i) first, so a token sees itself": "запрос i прочитал S и z до добавления токена i: сначала добавьте phi(k_i) v_i^T и phi(k_i), чтобы токен видел себя",
    "divide phi(q)^T S by phi(q)^T z; without the normaliser z the output is not a weighted average": "разделите phi(q)^T S на phi(q)^T z; без нормировщика z выход не будет взвешенным средним",
    "the third output is 62 / 15": "третий выход равен 62 / 15",
    "the step continues the sums it is given: S + phi(k) v^T and z + phi(k)": "шаг продолжает переданные ему суммы: S + phi(k) v^T и z + phi(k)",
    "read the past only from S and z as passed in; add this token's phi(k) v^T and phi(k) to them": "читайте прошлое только из переданных S и z; прибавьте к ним phi(k) v^T и phi(k) этого токена",
    "the output reads the updated state: phi(q)^T S / phi(q)^T z": "выход читает обновлённое состояние: phi(q)^T S / phi(q)^T z",
    "update S and z with this token first, then read them with phi(q)": "сначала обновите S и z этим токеном, затем прочитайте их с phi(q)",
    "a stream of steps equals the quadratic causal form": "поток шагов равен квадратичной каузальной форме",
    "update S and z with token i BEFORE reading them for query i (token i sees itself)": "обновите S и z токеном i ДО их чтения для запроса i (токен i видит себя)",
    "steps (a, b) = (0.5, 1), (0.5, 0), (0.5, 0), (0.5, 2)": "шаги (a, b) = (0,5; 1), (0,5; 0), (0,5; 0), (0,5; 2)",
    "valid steps give (states, rounds)": "допустимые шаги дают (states, rounds)",
    "return the states and the number of rounds": "верните состояния и число раундов",
    "rounds is a whole number": "rounds\xa0— целое число",
    "count the rounds with an int counter": "считайте раунды целочисленным счётчиком",
    "the states equal the loop 1, 0.5, 0.25, 2.125": "состояния равны результатам цикла 1; 0,5; 0,25; 2,125",
    "merge (a1, b1) then (a2, b2) into (a1 a2, a2 b1 + b2); use the old a on both right-hand sides": "слейте (a1, b1), затем (a2, b2) в (a1 a2, a2 b1 + b2); в обеих правых частях используйте старое a",
    "4 steps take log2(4) = 2 rounds": "4 шага занимают log2(4) = 2 раунда",
    "double the merge distance each round": "удваивайте расстояние слияния каждый раунд",
    "every state equals the sequential loop": "каждое состояние равно последовательному циклу",
    "before the start the step is the do-nothing map (1, 0); combine with the step 2^r places earlier in round r": "до начала шаг\xa0— тождественное отображение (1, 0); в раунде r объединяйте со шагом на 2^r позиций раньше",
    "T steps take ceil(log2 T) rounds": "T шагов занимают ceil(log2 T) раундов",
    "one round per doubling of the merge distance, stopping when the distance reaches T": "один раунд на каждое удвоение расстояния слияния, остановка, когда расстояние достигает T",
    "the inputs are left unchanged": "входы остаются неизменными",
    "a and b as passed in": "a и b такими, как переданы",
    "they were modified in place": "они изменены на месте",
    "work on copies (np.array(a, dtype=float))": "работайте с копиями (np.array(a, dtype=float))",
    "2 heads, 3 queries at positions 3..5 over 6 cached latents (d_c=4), d_nope=5, d_rope=2, d_v=3, d_model=7": "2 головы, 3 запроса на позициях 3..5 по 6 закэшированным латентным векторам (d_c=4), d_nope=5, d_rope=2, d_v=3, d_model=7",
    "absorbed attention equals expanded attention (position branch zero)": "внимание с поглощением равно развёрнутому вниманию (позиционная ветвь нулевая)",
    ", q_rope = k_rope = 0": ", q_rope = k_rope = 0",
    "score the latent with q W_uk^T (shape (T_q, d_c)), mix latents with the weights, then apply W_uv and W_o per head and sum the heads; scale by sqrt(d_nope + d_rope), the full key width": "оцените латентный вектор через q W_uk^T (форма (T_q, d_c)), смешайте латентные векторы весами, затем примените W_uv и W_o для каждой головы и сложите головы; масштабируйте на sqrt(d_nope + d_rope), полную размерность ключа",
    "the scores were scaled by sqrt(d_nope); a key is d_nope + d_rope wide, so scale by sqrt(d_nope + d_rope)": "оценки масштабированы на sqrt(d_nope); ключ имеет размерность d_nope + d_rope, так что масштабируйте на sqrt(d_nope + d_rope)",
    "the RoPE branch q_rope . k_rope is added to the latent scores": "ветвь RoPE q_rope . k_rope прибавляется к латентным оценкам",
    "latent absorption that forgets the RoPE branch: position lives only in the small decoupled key, so add q_rope @ k_rope^T to the absorbed scores before the softmax": "поглощение латентного вектора, забывшее ветвь RoPE: позиция живёт только в маленьком отделённом ключе, поэтому прибавьте q_rope @ k_rope^T к поглощённым оценкам до softmax",
    "mask=None attends to every cached latent": "mask=None позволяет читать каждый закэшированный латентный вектор",
    "treat a missing mask as all zeros": "считайте отсутствующую маску нулевой",
    "the expanded key latent @ W_uk is never formed (absorbed scores stay finite where expanded keys overflow)": "развёрнутый ключ latent @ W_uk никогда не строится (поглощённые оценки остаются конечными там, где развёрнутые ключи переполняются)",
    "; latent and W_uk times 1e155, q_nope times 1e-300": "; latent и W_uk умножены на 1e155, q_nope умножен на 1e-300",
    "here latent @ W_uk is about 1e310, past float64's largest number (1.8e308), while q_nope @ W_uk^T is about 1e-145 and its score against a latent about 1e10: your function built the expanded key (mla_expanded_attention does). Move the query into latent space first, q_nope @ W_uk^T, and score it against the latents": "здесь latent @ W_uk около 1e310, больше наибольшего числа float64 (1.8e308), а q_nope @ W_uk^T около 1e-145, и его оценка по латенту около 1e10: ваша функция построила развёрнутый ключ (так делает mla_expanded_attention). Сначала переведите запрос в латентное пространство, q_nope @ W_uk^T, и оценивайте его по латентам",
    "mismatched RoPE widths are rejected": "несовпадающие размерности RoPE отвергаются",
    ", q_rope width 1 against k_rope width 2": ", размерность q_rope 1 против размерности k_rope 2",
    "keep the shape checks at the top of the function": "оставьте проверки форм в начале функции",
    "K with a large first channel, V with a large first token, 4 bits": "K с большим первым каналом, V с большим первым токеном, 4 бита",
    "valid K, V and bits give (K_hat, V_hat)": "допустимые K, V и bits дают (K_hat, V_hat)",
    "return the two read-back arrays": "верните два прочитанных обратно массива",
    "keys get one scale per channel, so a large channel leaves the small ones readable": "ключи получают по масштабу на канал, так что большой канал оставляет малые читаемыми",
    "keys share a scale over the tokens: np.abs(K).max(axis=0) (one per channel), not axis=1 (one per token)": "ключи делят масштаб по токенам: np.abs(K).max(axis=0) (один на канал), а не axis=1 (один на токен)",
    "values get one scale per token, so a large token leaves the others readable": "значения получают по масштабу на токен, так что большой токен оставляет остальные читаемыми",
    "values share a scale over the channels: np.abs(V).max(axis=1) (one per token), not axis=0": "значения делят масштаб по каналам: np.abs(V).max(axis=1) (один на токен), а не axis=0",
    "keys per channel, values per token, at any size and bit width": "ключи по каналам, значения по токенам, при любом размере и разрядности",
    "top code 2**(bits - 1) - 1, scale = largest magnitude of the group / top code, round(x / scale) * scale": "верхний код 2**(bits - 1) - 1, масштаб = наибольший модуль группы / верхний код, round(x / scale) * scale",
    "an all-zero K and V": "полностью нулевые K и V",
    "an all-zero group reads back as zeros, not NaN": "полностью нулевая группа читается обратно как нули, а не NaN",
    "a group whose largest magnitude is 0 needs any nonzero scale (1.0), or 0 / 0 gives NaN": "группе, у которой наибольший модуль равен 0, нужен любой ненулевой масштаб (1,0), иначе 0 / 0 даёт NaN",
    "the marked 7 of the recall task: h = 0, x = 7, delta = softplus(5), a = -1, b = c = 1": "помеченная 7 из задачи на воспроизведение: h = 0, x = 7, delta = softplus(5), a = -1, b = c = 1",
    "a valid step gives (h_new, y)": "допустимый шаг даёт (h_new, y)",
    "return the new state and the output": "верните новое состояние и выход",
    "the marked token writes almost all of itself: h_new = 0.9933 x 7": "помеченный токен записывает почти всего себя: h_new = 0,9933 x 7",
    "discretise with the zero-order hold: keep = exp(delta * a), write = (keep - 1) / a * b, not delta * b": "дискретизуйте фиксацией нулевого порядка: keep = exp(delta * a), write = (keep - 1) / a * b, а не delta * b",
    "an ordinary token after it: h = 6.953, x = 0.4, delta = softplus(-5)": "обычный токен после него: h = 6,953, x = 0,4, delta = softplus(-5)",
    "an ordinary token keeps 0.9933 of the state": "обычный токен сохраняет 0,9933 состояния",
    "keep = exp(delta * a) multiplies the OLD state; the output reads the NEW state": "keep = exp(delta * a) умножает СТАРОЕ состояние; выход читает НОВОЕ состояние",
    "h, x, delta, a, b, c = ": "h, x, delta, a, b, c = ",
    "one step with any decay rate, write and read factor": "один шаг при любых скорости затухания, множителях записи и чтения",
    "h_new = exp(delta a) h + (exp(delta a) - 1) / a * b * x, and y = c * h_new": "h_new = exp(delta a) h + (exp(delta a) - 1) / a * b * x и y = c * h_new",
    "the plan is a list of rounds, each a list of merges (i, j) with 0 <= i < j < T, each j at most once per round": "план\xa0— это список раундов, каждый из которых\xa0— список слияний (i, j) с 0 <= i < j < T, где каждое j встречается в раунде не больше одного раза",
    "return [[(i, j), ...], ...]: one inner list per round; a round writes each position once and reads only earlier ones": "верните [[(i, j), ...], ...]: по одному внутреннему списку на раунд; раунд записывает каждую позицию один раз и читает только более ранние",
    "a list of rounds": "список раундов",
    "merges (i, j) of positions 0 <= i < j < T, no j twice in a round": "слияния (i, j) позиций 0 <= i < j < T, без повторного j в одном раунде",
    "T = 8 steps (a, b) = (0.5, 1), (0.5, 0), ..., (0.5, 0), (0.5, 2)": "T = 8 шагов (a, b) = (0,5; 1), (0,5; 0), ..., (0,5; 0), (0,5; 2)",
    "running the plan gives every state of the loop": "выполнение плана даёт каждое состояние цикла",
    "up-sweep: merge j - d into j for j = 2d - 1, 4d - 1, ... (d = 1, 2, 4, ...); down-sweep: fill in the positions still missing the block before them, j - d into j for j = 3d - 1, 5d - 1, ... (d halving)": "восходящий проход: слейте j - d в j для j = 2d - 1, 4d - 1, ... (d = 1, 2, 4, ...); нисходящий проход: дополните позиции, которым ещё не хватает блока перед ними, j - d в j для j = 3d - 1, 5d - 1, ... (d уменьшается вдвое)",
    "every position j must end up merged with all of 0 .. j - 1, each once, in order": "каждая позиция j должна в итоге слиться со всеми 0 .. j - 1, с каждой по одному разу и по порядку",
    "the work grows like T: at most 2T - 2 merges": "работа растёт как T: не больше 2T - 2 слияний",
    "each round of the Hillis-Steele scan merges almost every position (T log2 T in all); a work-efficient round merges only the last position of each block of 2d": "каждый раунд скана Хиллиса\xa0— Стила сливает почти каждую позицию (всего T log2 T); раунд экономного по работе скана сливает только последнюю позицию каждого блока из 2d",
    "the depth grows like log T: at most 2 ceil(log2 T) - 1 rounds": "глубина растёт как log T: не больше 2 ceil(log2 T) - 1 раундов",
    "a round per merge is the sequential loop; merge every block of a level in the same round": "по раунду на слияние\xa0— это последовательный цикл; сливайте все блоки одного уровня в одном раунде",
    "shape {(len(v),)}": "форма {(len(v),)}",
    "shape {np.shape(out)}": "форма {np.shape(out)}",
    "{case}, token {i}": "{case}, токен {i}",
    "the state of {earlier} earlier random tokens, d_k={dk}, d_v={dv}, then one more token": "состояние после {earlier} предыдущих случайных токенов, d_k={dk}, d_v={dv}, затем ещё один токен",
    "random Q, K [{n}, {dk}], V [{n}, {dv}] streamed through the step from a zero state": "случайные Q, K [{n}, {dk}], V [{n}, {dv}], пропущенные через шаг от нулевого состояния",
    "an int": "целое число (int)",
    "2 rounds": "2 прохода",
    "{rounds} rounds": "проходов: {rounds}",
    "{T} random steps": "случайных шагов: {T}",
    "{want} rounds": "проходов: {want}",
    ", mask=None": ", mask=None",
    "random K, V [{T}, {d}] at {bits} bits": "случайные K, V [{T}, {d}], разрядность {bits} бит",
    "round {number}: {merged!r}": "раунд {number}: {merged!r}",
    "T = {T} random steps": "T = {T} случайных шагов",
    "at most {max(0, 2 * T - 2)} merges": "не больше {max(0, 2 * T - 2)} слияний",
    "{work} merges in {depth} rounds": "{work} слияний за {depth} раундов",
    "at most {max(0, 2 * levels - 1)} rounds": "не больше {max(0, 2 * levels - 1)} раундов",
    "{depth} rounds": "{depth} раундов",
    "query head h reads K/V head h // group (repeat, not tile)": "голова запросов h читает KV-голову h // group (repeat, а не tile)",
    "shape (..., H_kv, T, d) -> (..., H_kv*group, T, d)": "форма (..., H_kv, T, d) -> (..., H_kv*group, T, d)",
    "repeat along axis -3 (the head axis), not along tokens or features": "повторяйте по оси -3 (оси голов), а не по токенам или признакам",
    "np.tile / torch.Tensor.repeat lay heads out as kv0, kv1, kv0, kv1: consecutive query heads must share a K/V head, so use np.repeat / torch.repeat_interleave": "np.tile / torch.Tensor.repeat раскладывают головы как kv0, kv1, kv0, kv1: соседние головы запросов должны делить одну KV-голову, поэтому используйте np.repeat / torch.repeat_interleave",
    "a group that is not a positive integer is rejected": "group, не являющийся положительным целым, отвергается",
    "keep the argument checks at the top of the function": "оставьте проверки аргументов в начале функции",
    "x of shape {shape} (K/V heads on axis -3), group={group}": "x формы {shape} (KV-головы по оси -3), group={group}",
    "shape {want_shape}": "форма {want_shape}",
    "shape {out.shape}": "форма {out.shape}",
    "query head {h} -> K/V head {h // group}": "голова запросов {h} -> KV-голова {h // group}",
    "query head {h} -> K/V head {read[0] if read else 'none (values changed)'}": "голова запросов {h} -> KV-голова {read[0] if read else 'none (values changed)'}",
    "none (values changed)": "нет (значения изменены)",
    "x of shape (3, 4, 2), group={bad!r}": "x формы (3, 4, 2), group={bad!r}",
    "TypeError or ValueError": "TypeError или ValueError",
    "head h of token t holds features h*d_head .. (h+1)*d_head - 1 of that token": "голова h токена t хранит признаки h*d_head .. (h+1)*d_head - 1 этого токена",
    "shape (B, T, H*d) -> (B, H, T, d)": "форма (B, T, H*d) -> (B, H, T, d)",
    "split the last axis into (H, d), then move the head axis in front of the token axis": "разбейте последнюю ось на (H, d), затем переставьте ось голов перед осью токенов",
    "reshaping straight to (B, H, T, d) mixes tokens; reshape to (B, T, H, d) first, then transpose(1, 2)": "reshape сразу в (B, H, T, d) перемешивает токены; сначала reshape в (B, T, H, d), затем transpose(1, 2)",
    "view the last axis as (H, d_head) (head-major), then swap the token and head axes": "рассматривайте последнюю ось как (H, d_head) (сначала головы), затем поменяйте местами оси токенов и голов",
    "x of shape (7, 6) with no batch axis, n_heads=3": "x формы (7, 6) без пакетной оси, n_heads=3",
    "leading axes are kept as they are": "ведущие оси сохраняются как есть",
    "shape (3, 7, 2)": "форма (3, 7, 2)",
    "index the axes from the end (-1, -2) so any number of leading axes works": "индексируйте оси с конца (-1, -2), чтобы работало любое число ведущих осей",
    "merging undoes the split: token t gets head 0's features, then head 1's, ...": "слияние отменяет разбиение: токен t получает признаки головы 0, затем головы 1, ...",
    "shape (B, H, T, d) -> (B, T, H*d)": "форма (B, H, T, d) -> (B, T, H*d)",
    "move the head axis behind the token axis, then flatten the last two axes": "переставьте ось голов за ось токенов, затем сплющьте две последние оси",
    "the heads were merged without moving the head axis back: transpose(-3, -2) before flattening": "головы слиты без возврата оси голов на место: transpose(-3, -2) до сплющивания",
    "the wrong axes were transposed: swap heads and tokens (-3, -2), not tokens and features": "транспонированы не те оси: меняйте местами головы и токены (-3, -2), а не токены и признаки",
    "transpose(-3, -2) gives (..., T, H, d); then flatten(-2) or reshape(..., T, H*d)": "transpose(-3, -2) даёт (..., T, H, d); затем flatten(-2) или reshape(..., T, H*d)",
    "the exercise is the class MultiHeadSelfAttention; keep its __init__": "упражнение\xa0— класс MultiHeadSelfAttention; сохраните его __init__",
    "the layer keeps q_proj, k_proj, v_proj and out_proj": "слой сохраняет q_proj, k_proj, v_proj и out_proj",
    "keep the four projections built in __init__": "сохраните четыре проекции, построенные в __init__",
    "the output equals an independent multi-head attention built from the layer's weights": "выход равен независимому многоголовому вниманию, построенному из весов слоя",
    "output shape (B, T, d_model)": "форма выхода (B, T, d_model)",
    "merge the heads back to (B, T, H*d) and apply out_proj": "слейте головы обратно в (B, T, H*d) и примените out_proj",
    "project, split into heads, repeat each K/V head for its group, attend with the causal mask, merge, out_proj": "проекция, разбиение на головы, повтор каждой KV-головы для её группы, внимание с каузальной маской, слияние, out_proj",
    "the causal mask was not applied: with causal=True a token may not read later tokens": "каузальная маска не применена: при causal=True токен не может читать более поздние токены",
    "K/V heads were tiled (kv0, kv1, kv0, kv1); consecutive query heads share one: repeat_interleave": "KV-головы размножены через tile (kv0, kv1, kv0, kv1); соседние головы запросов делят одну: repeat_interleave",
    "the merged heads were returned without the output projection out_proj": "слитые головы возвращены без выходной проекции out_proj",
    "the heads were merged without moving the head axis back: reshaping (B, H, T, d) straight to (B, T, H*d) mixes tokens and heads; use merge_heads (transpose, then flatten)": "головы слиты без возврата оси голов на место: reshape (B, H, T, d) сразу в (B, T, H*d) перемешивает токены и головы; используйте merge_heads (transpose, затем flatten)",
    "return_weights=True returns (output, weights)": "return_weights=True возвращает (output, weights)",
    "return (output, result.weights) when return_weights is set: one weight matrix per query head": "при заданном return_weights верните (output, result.weights): одна матрица весов на голову запросов",
    ", token_valid marks the last 2 tokens of sequence 1 as padding, empty_row='zero'": ", token_valid помечает последние 2 токена последовательности 1 как заполнение, empty_row='zero'",
    "padding keys are never read and padded queries give zero rows": "ключи заполнения никогда не читаются, а заполненные запросы дают нулевые строки",
    "combine token_valid into the mask for both keys (columns) and queries (rows), and pass empty_row through": "объедините token_valid с маской и для ключей (столбцы), и для запросов (строки) и передайте empty_row дальше",
    "x = arange reshaped to ({batch}, {tokens}, {heads * width}), n_heads={heads}": "x = arange в форме ({batch}, {tokens}, {heads * width}), n_heads={heads}",
    "shape {(batch, heads, tokens, width)}": "форма {(batch, heads, tokens, width)}",
    "shape {tuple(getattr(result, 'shape', ()))}": "форма {tuple(getattr(result, 'shape', ()))}",
    "; batch {b}, head {h}, token {t}": "; пример {b}, голова {h}, токен {t}",
    "shape {tuple(single.shape)}": "форма {tuple(single.shape)}",
    "heads = x.reshape({batch}, {tokens}, {heads}, {width}).transpose(1, 2).contiguous()": "heads = x.reshape({batch}, {tokens}, {heads}, {width}).transpose(1, 2).contiguous()",
    "shape {(batch, tokens, heads * width)}": "форма {(batch, tokens, heads * width)}",
    "{float(flat[tuple(where)])} at {tuple(where)}": "{float(flat[tuple(where)])} в позиции {tuple(where)}",
    "attention_class({d_model}, {n_heads}, {n_kv}, causal=True) in float64, x of shape ({batch}, {length}, {d_model})": "attention_class({d_model}, {n_heads}, {n_kv}, causal=True) во float64, x формы ({batch}, {length}, {d_model})",
    "the layer builds": "слой создаётся",
    "an nn.Module instance": "экземпляр nn.Module",
    "a linear layer {name}": "линейный слой {name}",
    "shape {(batch, length, d_model)}": "форма {(batch, length, d_model)}",
    "shape {tuple(getattr(got, 'shape', ()))}": "форма {tuple(getattr(got, 'shape', ()))}",
    ", return_weights=True": ", return_weights=True",
    "a pair whose weights have shape {(batch, n_heads, length, length)}": "пара, веса в которой имеют форму {(batch, n_heads, length, length)}",
    "a full-attention layer keeps a key and a value per KV head for every token": "слой с полным вниманием хранит ключ и значение на каждую KV-голову для каждого токена",
    "bytes = 2 (key and value) x tokens x KV heads x head_dim x bytes per value, summed over layers": "байты = 2 (ключ и значение) x токены x KV-головы x head_dim x байты на значение, в сумме по слоям",
    "bytes_per_value scales the cache": "bytes_per_value масштабирует кэш",
    "multiply by bytes_per_value instead of assuming 2 bytes": "умножайте на bytes_per_value, а не считайте, что это 2 байта",
    "a windowed layer keeps min(context, window) tokens": "слой с окном хранит min(context, window) токенов",
    "a short context does not fill the window: keep min(context, window) tokens, not window": "короткий контекст не заполняет окно: храните min(context, window) токенов, а не window",
    "a windowed layer stops growing at its window": "слой с окном перестаёт расти на размере окна",
    "beyond the window the oldest tokens are evicted: keep window tokens, not context": "за пределами окна старейшие токены вытесняются: храните window токенов, а не context",
    "each layer is sized by its own entry (gpt-oss: even layers windowed)": "размер каждого слоя задаёт его собственная запись (gpt-oss: чётные слои с окном)",
    "sum over the layers; do not apply one layer's window to every layer": "суммируйте по слоям; не применяйте окно одного слоя ко всем слоям",
    "mixed layers add up": "смешанные слои складываются",
    "sum over the layers; a window larger than the context keeps the whole context": "суммируйте по слоям; окно больше контекста хранит весь контекст",
    "the size is an exact integer number of bytes": "размер\xa0— точное целое число байтов",
    "use integer arithmetic (// not /); floats lose bytes above 2**53": "используйте целочисленную арифметику (// а не /); числа float теряют байты выше 2**53",
    "invalid sizes are rejected with TypeError or ValueError": "недопустимые размеры отвергаются с TypeError или ValueError",
    "an error naming the argument": "ошибка, называющая аргумент",
    "a valid step gives (keys, values, output)": "корректный шаг возвращает (keys, values, output)",
    "the buffer never grows: it keeps its window of slots": "буфер никогда не растёт: у него столько ячеек, сколько в окне",
    "overwrite one slot in place; appending (np.vstack, np.concatenate) or keeping a list of every token is full attention's cache": "перезаписывайте одну ячейку на месте; дописывание (np.vstack, np.concatenate) или список всех токенов\xa0— это кэш полного внимания",
    "token t writes its key and value into slot t % window and touches no other slot": "токен t записывает свой ключ и значение в ячейку t % window и не трогает другие ячейки",
    "slot = t % len(keys): the slot of token t - window, which has just left the window; move nothing else": "slot = t % len(keys): ячейка токена t - window, который только что покинул окно; больше ничего не двигайте",
    " (slots after t hold stale data)": " (ячейки после t хранят устаревшие данные)",
    "attend over the filled slots only, keys[:min(t + 1, window)], after writing token t: a token reads its own key": "применяйте внимание только к заполненным ячейкам, keys[:min(t + 1, window)], после записи токена t: токен читает и свой ключ",
    "softmax(keys @ q / sqrt(d_k)) @ values over every slot, after writing token t": "softmax(keys @ q / sqrt(d_k)) @ values по всем ячейкам, после записи токена t",
    "token t attends over the filled slots of the buffer it was given, itself included": "токен t применяет внимание к заполненным ячейкам переданного ему буфера, включая себя",
    "each token attends to exactly the last `window` tokens, itself included": "каждый токен обращает внимание ровно на последние `window` токенов, включая себя",
    "the buffer must hold tokens t - window + 1 .. t when token t attends; slot = t % window": "когда токен t обращает внимание, буфер должен хранить токены t - window + 1 .. t; ячейка = t % window",
    "scores of +-1000 give the same softmax as small ones, with no NaN": "оценки +-1000 дают тот же softmax, что и малые, без NaN",
    "q = 1000 (d_k=1), buffer keys (-1, 1), token t=2 with k = 1, v = 3": "q = 1000 (d_k=1), ключи буфера (-1, 1), токен t=2 с k = 1, v = 3",
    "subtract the largest score before np.exp: exp(1000) is inf in float64, and inf / inf is NaN": "вычтите наибольшую оценку перед np.exp: exp(1000) в float64 равно inf, а inf / inf\xa0— это NaN",
    "reserve_slots returns (book, slots, copies): the book's four fields, and (block, offset) and (old, new) pairs": "reserve_slots возвращает (book, slots, copies): четыре поля книги, пары (блок, смещение) и пары (старый, новый)",
    "a dict with block_size, refs, tables, lengths; a list of (block, offset); a list of (old, new)": "словарь с block_size, refs, tables, lengths; список пар (блок, смещение); список пар (старый, новый)",
    "return the updated book, the slots of the new tokens and the blocks to copy": "верните обновлённую книгу, ячейки новых токенов и блоки, которые надо скопировать",
    "take a new block only when the last one is full (offset p % block_size == 0); otherwise write into the last block": "берите новый блок, только когда последний заполнен (смещение p % block_size == 0); иначе пишите в последний блок",
    "a fresh pool of 8 blocks of 4 slots; sequence 'A' reserves 6 tokens, then 3 more": "новый пул из 8 блоков по 4 ячейки; последовательность 'A' резервирует 6 токенов, затем ещё 3",
    "a growing sequence takes blocks as it fills them": "растущая последовательность берёт блоки по мере их заполнения",
    "; the lowest free block comes first": "; первым берётся свободный блок с наименьшим номером",
    "each block in use is counted once per sequence that holds it": "каждый занятый блок учитывается один раз на каждую последовательность, которая его держит",
    "set a new block's reference count to 1": "ставьте счётчик ссылок нового блока в 1",
    "'A' holds 9 tokens in blocks [0, 1, 2]; 'B' is forked from it (blocks shared, counts 2); 'B' reserves 1 token": "'A' держит 9 токенов в блоках [0, 1, 2]; 'B' ответвлена от неё (блоки общие, счётчики 2); 'B' резервирует 1 токен",
    "the last block is shared (count 2): take a free block, list (old, new) in copies, point B's table at the new block, lower the old block's count and write the token there; A keeps its block": "последний блок общий (счётчик 2): возьмите свободный блок, добавьте (старый, новый) в copies, направьте таблицу B на новый блок, уменьшите счётчик старого и запишите токен туда; A сохраняет свой блок",
    "copy-on-write at the first divergent token": "копирование при записи на первом расходящемся токене",
    "copy-on-write moves one reference from the shared block to its copy": "копирование при записи переносит одну ссылку с общего блока на его копию",
    "after the copy the old block is held by A alone (count 1) and the copy by B (count 1)": "после копирования старый блок держит одна A (счётчик 1), а копию\xa0— B (счётчик 1)",
    "the state above, then 'A' reserves 1 token in its block 2, which B no longer shares": "состояние выше, затем 'A' резервирует 1 токен в своём блоке 2, который B больше не разделяет",
    "a block held by one sequence is written in place": "блок, который держит одна последовательность, пишется на месте",
    "copy only when the block's count is above 1; a block A holds alone is written in place": "копируйте, только когда счётчик блока больше 1; блок, который держит одна A, пишется на месте",
    "'C' reserves 8 tokens": "'C' резервирует 8 токенов",
    "'C' holds 8 tokens in blocks [0, 1], both full; 'D' is forked from it and reserves 1 token": "'C' держит 8 токенов в блоках [0, 1], оба полны; 'D' ответвлена от неё и резервирует 1 токен",
    "a fork at a block boundary copies nothing": "ответвление на границе блока ничего не копирует",
    "full shared blocks are only read: the next token starts a new block of its own": "полные общие блоки только читаются: следующий токен начинает собственный новый блок",
    "4 blocks of 2: 'E' holds block 0 (full), 'F' block 2 (1 token), blocks 1 and 3 free; 'E' reserves 3 tokens": "4 блока по 2: 'E' держит блок 0 (полный), 'F'\xa0— блок 2 (1 токен), блоки 1 и 3 свободны; 'E' резервирует 3 токена",
    "free blocks are reused, lowest first": "свободные блоки используются снова, начиная с наименьшего номера",
    "take the lowest block whose count is 0": "берите блок с наименьшим номером, у которого счётчик 0",
    "4 blocks of 2, all held; 'E' asks for 1 more token in a full block": "4 блока по 2, все заняты; 'E' просит ещё 1 токен в полном блоке",
    "a full pool refuses with ValueError": "заполненный пул отказывает с ValueError",
    "ValueError naming the free blocks": "ValueError с числом свободных блоков",
    "check that enough blocks are free before taking any": "прежде чем брать блоки, проверьте, что свободных хватит",
    "int {want}": "int {want}",
    "{want} bytes": "{want} байт",
    "{got} bytes": "{got} байт",
    "keys {keys.shape}, values {values.shape}": "ключи {keys.shape}, значения {values.shape}",
    "keys {new_keys.shape}, values {new_values.shape}": "ключи {new_keys.shape}, значения {new_values.shape}",
    "slot {slot} = (k, v), every other slot as it was": "слот {slot} = (k, v), остальные слоты как были",
    "slots changed: {sorted(set(touched) | {slot})}": "изменённые слоты: {sorted(set(touched) | {slot})}",
    "a {window}-slot buffer, token t={t}, d_k=4, d_v=3": "буфер из {window} слотов, токен t={t}, d_k=4, d_v=3",
    "11 tokens through a {window}-slot buffer, d_k=4, d_v=3": "11 токенов через буфер из {window} слотов, d_k=4, d_v=3",
    ", token {t}": ", токен {t}",
    "valid sizes give a mask": "допустимые размеры дают маску",
    "only n < 1, window < 1 or n_sink outside 0..n are invalid": "недопустимы только n < 1, window < 1 или n_sink вне 0..n",
    "one row per query and one column per key": "одна строка на запрос и один столбец на ключ",
    "build the mask from query positions (rows) against key positions (columns)": "стройте маску из позиций запросов (строки) против позиций ключей (столбцы)",
    "the mask is additive: floats that are added to the scores": "маска аддитивная: числа float, которые прибавляются к оценкам",
    "a float array of 0.0 and -inf": "массив float из 0,0 и -inf",
    "a boolean mask was returned; convert with np.where(allowed, 0.0, -np.inf)": "возвращена булева маска; преобразуйте её через np.where(allowed, 0,0, -np.inf)",
    "every entry is exactly 0.0 (allowed) or -inf (blocked)": "каждый элемент равен ровно 0,0 (разрешено) или -inf (закрыто)",
    "only 0.0 and -inf": "только 0,0 и -inf",
    "a blocked entry must be -inf (not a large negative number, not 1) so its softmax weight is exactly 0": "закрытый элемент должен быть -inf (не большим отрицательным числом и не 1), чтобы его вес softmax был ровно 0",
    "no query reads a future key (causal)": "ни один запрос не читает будущий ключ (каузальность)",
    "-inf above the diagonal": "-inf над диагональю",
    "compare key <= query, not key < query + 1 on the wrong axis; rows are queries": "сравнивайте key <= query, а не key < query + 1 по неверной оси; строки\xa0— это запросы",
    "every query reads its own key": "каждый запрос читает собственный ключ",
    "0.0 on the diagonal": "0,0 на диагонали",
    "the comparison excluded the diagonal (key < query instead of key <= query)": "сравнение исключило диагональ (key < query вместо key <= query)",
    "the window keeps exactly `window` recent keys, the query's own included": "окно оставляет ровно `window` недавних ключей, включая ключ самого запроса",
    "off by one: keep query - key < window (not <= window), which counts the query itself": "ошибка на единицу: оставляйте query - key < window (а не <= window), что учитывает и сам запрос",
    "the first n_sink keys stay visible to every later query; nothing else outside the window": "первые n_sink ключей остаются видимыми каждому более позднему запросу; больше ничего вне окна",
    "sinks are keys j < n_sink, still only for j <= i; a window without sinks drops everything older than window - 1": "стоки\xa0— это ключи j < n_sink, по-прежнему только при j <= i; окно без стоков отбрасывает всё старше window - 1",
    "Q, K [2 heads, 5 tokens, d_k=4], V [2, 5, 3], float64": "Q, K [2 головы, 5 токенов, d_k=4], V [2, 5, 3], float64",
    "return_weights=True also returns the token weights [..., T_q, T_k]": "return_weights=True возвращает ещё и веса токенов [..., T_q, T_k]",
    "return (output, weights), the weights without the sink's column": "верните (output, weights), веса без столбца стока",
    "output equals softmax(Q K^T / sqrt(d_k)) V": "выход равен softmax(Q K^T / sqrt(d_k)) V",
    "divide the scores by sqrt(d_k) (not d_k), and take the softmax over the key axis (the last one)": "разделите оценки на sqrt(d_k) (а не на d_k) и возьмите softmax по оси ключей (последней)",
    "without a sink every row of weights sums to 1": "без стока каждая строка весов в сумме даёт 1",
    "the softmax was normalised over the query axis instead of the key axis": "softmax нормирован по оси запросов вместо оси ключей",
    "a finite mask entry is added to the score, -inf blocks the key": "конечный элемент маски прибавляется к оценке, -inf закрывает ключ",
    ", causal mask with finite biases": ", каузальная маска с конечными смещениями",
    "add the mask to the scaled scores before the softmax (do not multiply, do not apply it after)": "прибавьте маску к масштабированным оценкам до softmax (не умножайте и не применяйте после)",
    "a sink is an extra logit whose value vector is zero": "сток\xa0— это дополнительный логит с нулевым вектором значения",
    "the sink joins the denominator only: adding exp(sink) to the numerator, or adding the sink to every score (which softmax ignores), gives a different output": "сток входит только в знаменатель: прибавление exp(sink) к числителю или прибавление стока к каждой оценке (которое softmax игнорирует) даёт другой выход",
    "with a sink the token weights sum to 1 minus the sink's share": "со стоком веса токенов в сумме дают 1 минус долю стока",
    "return the token weights, without the sink's column": "верните веса токенов без столбца стока",
    "each query head uses its own sink logit": "каждая голова запросов использует свой логит стока",
    ", causal, sink shape (2, 1, 1) = [-2, 3]": ", каузальная, форма стока (2, 1, 1) = [-2, 3]",
    "broadcast the sink to [..., T_q, 1]; do not use one head's sink (or their mean) for every head": "транслируйте сток к [..., T_q, 1]; не используйте сток одной головы (или их среднее) для всех голов",
    "a common shift of every score and the sink changes nothing": "общий сдвиг всех оценок и стока ничего не меняет",
    ", mask + 2 and sink + 2": ", mask + 2 и sink + 2",
    "the sink must be compared with the scores inside one softmax, not normalised separately": "сток нужно сравнивать с оценками внутри одного softmax, а не нормировать отдельно",
    "large scores and a large sink stay finite": "большие оценки и большой сток остаются конечными",
    ", Q and K scaled by 40, sink=900": ", Q и K умножены на 40, sink=900",
    "subtract the row maximum over the tokens AND the sink before exp, or exp overflows to inf and NaN": "вычитайте максимум строки по токенам И стоку до exp, иначе exp переполнится до inf и NaN",
    "the ValueError of a fully masked row names the way out, empty_row='zero'": "ValueError для полностью замаскированной строки называет выход: empty_row='zero'",
    ", row 2 fully masked": ", строка 2 полностью замаскирована",
    "a message containing empty_row='zero'": "сообщение, в котором есть empty_row='zero'",
    "say how to go on in the message: '... or pass empty_row='zero' to return zeros for them'": "скажите в сообщении, как быть дальше: '... or pass empty_row='zero' to return zeros for them'",
    "softmax over a row of -inf is 0/0 = NaN; detect rows with no allowed key before it": "softmax по строке из -inf\xa0— это 0/0 = NaN; находите строки без разрешённого ключа до него",
    "empty_row='zero' gives an exact zero row": "empty_row='zero' даёт точно нулевую строку",
    "NaN on a fully masked row: use a safe max of 0 for empty rows and divide only where the sum > 0": "NaN в полностью замаскированной строке: для пустых строк берите безопасный максимум 0 и делите только там, где сумма > 0",
    "empty_row='zero' leaves the other rows unchanged": "empty_row='zero' оставляет остальные строки без изменений",
    "the zero policy must act on the empty rows only": "нулевая политика должна действовать только на пустые строки",
    "with a sink, a fully masked row sends all its mass to the sink (output 0)": "со стоком полностью замаскированная строка отдаёт всю массу стоку (выход 0)",
    ", every key blocked, sink=1.3": ", все ключи закрыты, sink=1,3",
    "a row with only the sink is not empty: its weights are 0 for every token and its output is the zero sink value": "строка, где есть только сток, не пуста: её веса равны 0 для каждого токена, а выход\xa0— нулевое значение стока",
    "shape {(n, n)}": "форма {(n, n)}",
    "shape {mask.shape}": "форма {mask.shape}",
    "dtype {mask.dtype}": "тип {mask.dtype}",
    "values {sorted(set(np.unique(mask).tolist()))[:6]}": "значения {sorted(set(np.unique(mask).tolist()))[:6]}",
    "query {where[0]} may read key {where[1]}": "запрос {where[0]} может читать ключ {where[1]}",
    "diagonal {np.diag(mask).tolist()}": "диагональ {np.diag(mask).tolist()}",
    "allowed non-sink keys per row {expected_recent}": "разрешённых ключей вне стока в каждой строке: {expected_recent}",
    "query {where[0]} {'may' if want[where] else 'may not'} read key {where[1]}": "запрос {where[0]} {'may' if want[where] else 'may not'} читать ключ {where[1]}",
    "may": "может",
    "may not": "не может",
    "it {'may' if got[where] else 'may not'}": "на деле {'may' if got[where] else 'may not'}",
    "shape {(H, T, T)}": "форма {(H, T, T)}",
    "shape {np.shape(weights)}": "форма {np.shape(weights)}",
    ", no mask": ", без маски",
    ", causal, sink=1.3": ", каузальная маска, sink=1.3",
    "shape {(H, T, dv)}": "форма {(H, T, dv)}",
    "shape {np.shape(zero)}": "форма {np.shape(zero)}",
    "x of shape (3, 5) float64, rows with means 3, -1, 0.5 and spreads 0.1, 1, 4": "x формы (3, 5) float64, строки со средними 3, -1, 0,5 и разбросами 0,1; 1; 4",
    ": same shape as x": ": та же форма, что у x",
    "LayerNorm keeps the shape: reduce with keepdim=True and broadcast back": "LayerNorm сохраняет форму: сворачивайте с keepdim=True и транслируйте обратно",
    "subtract the mean of the last axis, divide by sqrt(biased variance + eps), then scale and shift": "вычтите среднее по последней оси, разделите на sqrt(смещённая дисперсия + eps), затем масштабируйте и сдвиньте",
    "the variance is unbiased (divides by n - 1); LayerNorm uses the biased one (n): var(unbiased=False)": "дисперсия несмещённая (делится на n - 1); LayerNorm использует смещённую (n): var(unbiased=False)",
    "normalised over the wrong axis: LayerNorm averages over the features of each token, the last axis": "нормировано не по той оси: LayerNorm усредняет по признакам каждого токена, по последней оси",
    "eps goes inside the square root: sqrt(variance + eps), not sqrt(variance) + eps": "eps стоит под корнем: sqrt(variance + eps), а не sqrt(variance) + eps",
    "weight and bias were ignored: return normalised * weight + bias": "weight и bias проигнорированы: верните normalised * weight + bias",
    "weight and bias are swapped: the weight multiplies, the bias adds": "weight и bias перепутаны: weight умножает, bias прибавляет",
    "each row has mean 0 and biased variance 1": "у каждой строки среднее 0 и смещённая дисперсия 1",
    "eps sits inside the square root": "eps стоит под квадратным корнем",
    "a constant token maps to zeros": "постоянный токен переходит в нули",
    "x = 7 everywhere, shape (2, 4), eps=1e-5": "x = 7 всюду, форма (2, 4), eps=1e-5",
    "0 / sqrt(0) is NaN: add eps inside the square root before dividing": "0 / sqrt(0)\xa0— это NaN: прибавьте eps под корнем до деления",
    "weight scales and bias shifts each feature": "weight масштабирует, а bias сдвигает каждый признак",
    ", eps=1e-5, weight and bias of length 5": ", eps=1e-5, weight и bias длины 5",
    ", eps=1e-5 with weight and bias": ", eps=1e-5 с weight и bias",
    "compare your mean, variance and eps with F.layer_norm's definition": "сравните своё среднее, дисперсию и eps с определением F.layer_norm",
    "gradients flow through layer_norm": "градиенты проходят через layer_norm",
    "an output detached from x": "выход, отсоединённый от x",
    "no .detach(), .item(), numpy round trip or in-place edit of the input": "без .detach(), .item(), перехода через numpy и изменения входа на месте",
    "the mean or variance was detached, so the gradient misses their dependence on x": "среднее или дисперсия отсоединены, поэтому градиент теряет их зависимость от x",
    "shape {tuple(x.shape)}": "форма {tuple(x.shape)}",
    "gradients match F.layer_norm": "градиенты совпадают с F.layer_norm",
    "output matches F.layer_norm": "выход совпадает с F.layer_norm",
    "return the table as a tensor (torch.empty / torch.stack), not a list or an array": "верните таблицу как тензор (torch.empty / torch.stack), а не список или массив",
    ": shape is (length, d_model)": ": форма равна (length, d_model)",
    "positions go down the rows and coordinates across the columns; a transposed table has them swapped": "позиции идут по строкам, а координаты по столбцам; в транспонированной таблице они переставлены",
    "sine and cosine are swapped: sine goes on the even coordinates 0, 2, ... and cosine on the odd ones": "синус и косинус перепутаны: синус идёт в чётные координаты 0, 2, ..., а косинус в нечётные",
    "sine and cosine must interleave (sin, cos, sin, cos, ...), not all sines followed by all cosines": "синус и косинус должны чередоваться (sin, cos, sin, cos, ...), а не идти все синусы, а за ними все косинусы",
    "pair i has frequency base^(-2i/d_model): the exponent counts coordinates (2i), not pairs (i)": "у пары i частота base^(-2i/d_model): показатель считает координаты (2i), а не пары (i)",
    "positions start at 0, so row 0 is (0, 1, 0, 1, ...)": "позиции начинаются с 0, так что строка 0\xa0— это (0, 1, 0, 1, ...)",
    "angle = position / base^(2i/d_model) for pair i; sin goes in column 2i and cos in column 2i+1": "angle = position / base^(2i/d_model) для пары i; sin идёт в столбец 2i, а cos в столбец 2i+1",
    "position 0 is (0, 1, 0, 1, ...)": "позиция 0\xa0— это (0, 1, 0, 1, ...)",
    "a torch.Tensor of shape (1, 6)": "torch.Tensor формы (1, 6)",
    "sine and cosine are swapped: sin(0) = 0 belongs on the even coordinates, cos(0) = 1 on the odd ones": "синус и косинус перепутаны: sin(0) = 0 должен стоять в чётных координатах, cos(0) = 1\xa0— в нечётных",
    "row 0 is position 0: sin(0) = 0 on the even coordinates and cos(0) = 1 on the odd ones": "строка 0\xa0— это позиция 0: sin(0) = 0 в чётных координатах и cos(0) = 1 в нечётных",
    "table equals sin/cos of position / 10000^(2i/d_model)": "таблица равна sin/cos от position / 10000^(2i/d_model)",
    "the base argument sets the frequencies": "аргумент base задаёт частоты",
    ": a bool tensor": ": булев тензор",
    "a torch.Tensor of dtype torch.bool": "torch.Tensor с dtype torch.bool",
    "compare positions (key <= query) to get booleans; do not return 0/1 floats or -inf scores": "сравнивайте позиции (key <= query), чтобы получить булевы значения; не возвращайте числа 0/1 или оценки -inf",
    ": shape is (t_q, t_k)": ": форма равна (t_q, t_k)",
    "queries go down the rows and keys across the columns": "запросы идут по строкам, а ключи по столбцам",
    "the mask is inverted: True must mean 'may attend' (PyTorch's convention for bool attn_mask)": "маска инвертирована: True должно означать «можно смотреть» (соглашение PyTorch для булевой attn_mask)",
    "off by one: a query may read its own key (key <= query), not only strictly earlier ones": "ошибка на единицу: запрос может читать собственный ключ (key <= query), а не только строго более ранние",
    "off by one: the query one step ahead of this one is still in the future (use key <= query)": "ошибка на единицу: запрос на шаг впереди этого всё ещё в будущем (используйте key <= query)",
    "query_offset was ignored: row r is the query at absolute position query_offset + r": "query_offset проигнорирован: строка r\xa0— это запрос на абсолютной позиции query_offset + r",
    "allowed[r, j] = (j <= query_offset + r)": "allowed[r, j] = (j <= query_offset + r)",
    "a token sees itself and the past, never the future": "токен видит себя и прошлое, но никогда не будущее",
    "cached queries keep their absolute positions (query_offset)": "закэшированные запросы сохраняют абсолютные позиции (query_offset)",
    "decoding in steps gives the rows of the full mask": "декодирование по шагам даёт строки полной маски",
    "the mask for queries query_offset..query_offset+t_q-1 must be exactly those rows of the full causal mask": "маска для запросов query_offset..query_offset+t_q-1 должна состоять ровно из этих строк полной каузальной маски",
    "shape {(length, d_model)}": "форма {(length, d_model)}",
    "shape {tuple(result.shape)}": "форма {tuple(result.shape)}",
    "shape {(t_q, t_k)}": "форма {(t_q, t_k)}",
    "shape {tuple(mask.shape)}": "форма {tuple(mask.shape)}",
    "causal_allowed({t_q}, {t_k}, query_offset={offset}) against the last {t_q} rows of causal_allowed({t_k}, {t_k})": "causal_allowed({t_q}, {t_k}, query_offset={offset}) в сравнении с последними {t_q} строками causal_allowed({t_k}, {t_k})",
    "logit tiles [[2, 1], [3, 0.5]], value tiles [[1, 2], [3, 4]]": "тайлы логитов [[2, 1], [3, 0,5]], тайлы значений [[1, 2], [3, 4]]",
    "valid tiles give (output, trace)": "допустимые тайлы дают (output, trace)",
    "return the output and the list of per-tile dicts": "верните выход и список словарей по тайлам",
    "the trace has one dict per tile": "в трассе по одному словарю на тайл",
    "2 dicts with keys m, alpha, l, u": "2 словаря с ключами m, alpha, l, u",
    "append {'m': ..., 'alpha': ..., 'l': ..., 'u': ...} after each tile": "после каждого тайла добавляйте {'m': ..., 'alpha': ..., 'l': ..., 'u': ...}",
    "the running max is the max of the old max and this tile's max": "текущий максимум\xa0— это максимум из старого максимума и максимума этого тайла",
    "alpha = exp(m_old - m_new); before any tile m_old = -inf, so the first alpha is 0": "alpha = exp(m_old - m_new); до первого тайла m_old = -inf, поэтому первое alpha равно 0",
    "online softmax without the alpha rescale: multiply the old running sum by alpha before adding the tile's exp(x - m_new)": "онлайн-softmax без пересчёта на alpha: умножьте старую текущую сумму на alpha, прежде чем прибавлять exp(x - m_new) тайла",
    "multiply the old numerator by alpha as well, then add sum(exp(x - m_new) * v)": "умножьте на alpha и старый числитель, затем прибавьте sum(exp(x - m_new) * v)",
    "the output is n / l and equals the direct softmax average": "выход равен n / l и совпадает с прямым средним по softmax",
    "divide the final numerator by the final running sum": "разделите итоговый числитель на итоговую текущую сумму",
    "any split into tiles gives the direct softmax average": "любое разбиение на тайлы даёт прямое среднее по softmax",
    "the rescale must use the max over everything seen so far, in any order": "пересчёт должен использовать максимум по всему, что уже прочитано, в любом порядке",
    "logits near 1000 stay finite": "логиты около 1000 остаются конечными",
    "logit tiles [[1000, 999], [998]]": "тайлы логитов [[1000, 999], [998]]",
    "subtract the running max inside exp; exp(1000) overflows": "вычитайте текущий максимум внутри exp; exp(1000) переполняется",
    "logits near -1000 stay finite": "логиты около -1000 остаются конечными",
    "logit tiles [[-1000], [-1001, -999]]": "тайлы логитов [[-1000], [-1001, -999]]",
    "start the running max at -inf, not 0: exp(-1000 - 0) underflows to 0 and the output becomes 0/0": "начинайте текущий максимум с -inf, а не с 0: exp(-1000 - 0) уходит в 0, и выход становится 0/0",
    "Q [7, d_k=4], K [10, 4], V [10, 3], float64": "Q [7, d_k=4], K [10, 4], V [10, 3], float64",
    "plain tiled output equals dense softmax attention for any tile size": "простой выход по тайлам равен плотному вниманию с softmax при любом размере тайла",
    "when a key tile raises a row's max, multiply that row's running sum and accumulator by alpha = exp(m_old - m_new)": "когда тайл ключей поднимает максимум строки, умножьте текущую сумму и накопитель этой строки на alpha = exp(m_old - m_new)",
    "Q, K and V as given": "Q, K и V такими, как переданы",
    "one of them was modified in place": "один из них изменён на месте",
    "scale a copy (Q * scale), never Q itself": "масштабируйте копию (Q * scale), никогда не сам Q",
    "logits far beyond exp's range run": "логиты далеко за пределами диапазона exp обрабатываются",
    "large logits stay finite and exact (the running max is subtracted before exp)": "большие логиты остаются конечными и точными (текущий максимум вычитается до exp)",
    "subtract the running max m from the scores before exp, and rescale the old sums by exp(m_old - m_new)": "вычитайте текущий максимум m из оценок до exp и пересчитывайте старые суммы на exp(m_old - m_new)",
    "a long input runs": "длинный вход обрабатывается",
    "plain tiled attention never holds a T_q x T_k score matrix": "простое внимание по тайлам никогда не держит матрицу оценок T_q x T_k",
    "compute one (query block, key block) score tile at a time; keep only m, l and the accumulator per query block": "вычисляйте по одному тайлу оценок (блок запросов, блок ключей) за раз; храните только m, l и накопитель на блок запросов",
    "causal tiles give (output, tiles_computed)": "каузальные тайлы дают (output, tiles_computed)",
    "Q, K [11 tokens, d_k=4], V [11, 3], float64": "Q, K [11 токенов, d_k=4], V [11, 3], float64",
    "causal tiled output equals dense causal attention: query i reads keys 0..i": "каузальный выход по тайлам равен плотному каузальному вниманию: запрос i читает ключи 0..i",
    "inside a diagonal tile, block key > query with -inf before the max; never skip a tile that holds an allowed key": "внутри диагонального тайла закрывайте key > query значением -inf до максимума; никогда не пропускайте тайл, где есть разрешённый ключ",
    "only the key tiles on or below the block diagonal are computed": "вычисляются только тайлы ключей на блочной диагонали или под ней",
    "for the query block [q0, q1), visit key tiles starting at k0 <= q1 - 1 only; later tiles are all in the future": "для блока запросов [q0, q1) обходите только тайлы ключей, начинающиеся с k0 <= q1 - 1; более поздние тайлы целиком в будущем",
    "Q [8 tokens, d_k=4], K and V [16 slots] whose slots 8..15 are unwritten (NaN), tile_size=4": "Q [8 токенов, d_k=4], K и V [16 ячеек], ячейки 8..15 ещё не записаны (NaN), tile_size=4",
    "no key tile above the block diagonal is read (its keys lie in the future)": "ни один тайл ключей над блочной диагональю не читается (его ключи лежат в будущем)",
    "the future tiles were computed: dense attention, or a loop over every key tile, multiplies their NaN values by weight 0 (0 x NaN = NaN); visit key tiles k0 <= q1 - 1 only, and count the tiles you computed, not a formula": "тайлы будущего были вычислены: плотное внимание или цикл по всем тайлам ключей умножает их значения NaN на вес 0 (0 x NaN = NaN); обходите только тайлы ключей с k0 <= q1 - 1 и считайте вычисленные тайлы, а не формулу",
    "causal tiled attention never holds a T_q x T_k score matrix": "каузальное внимание по тайлам никогда не держит матрицу оценок T_q x T_k",
    "a dense causal softmax over the keys read is not tiling: compute one (query block, key block) tile at a time": "плотный каузальный softmax по прочитанным ключам\xa0— это не тайлинг: вычисляйте по одному тайлу (блок запросов, блок ключей) за раз",
    "tiled output equals dense softmax attention for any tile size": "выход по тайлам равен плотному вниманию с softmax при любом размере тайла",
    "rescale the accumulator and the running sum by alpha = exp(m_old - m_new) when a tile raises the row max": "пересчитывайте накопитель и текущую сумму на alpha = exp(m_old - m_new), когда тайл поднимает максимум строки",
    "tiles with no allowed key are skipped without NaN": "тайлы без разрешённого ключа пропускаются без NaN",
    "an all -inf tile gives exp(-inf - -inf) = NaN; skip it or use a safe max of 0": "тайл из одних -inf даёт exp(-inf - -inf) = NaN; пропустите его или возьмите безопасный максимум 0",
    "causal=True: query i reads keys 0..i": "causal=True: запрос i читает ключи 0..i",
    "a key is allowed when key <= query; blocks entirely above the diagonal are skipped, partial ones masked": "ключ разрешён, когда key <= query; блоки целиком над диагональю пропускаются, частичные маскируются",
    "window=w keeps the last w keys, the query's own included": "window=w оставляет последние w ключей, включая ключ самого запроса",
    "off by one: allow query - key < window (not <= window), and do not skip a block that still holds an allowed key": "ошибка на единицу: разрешайте query - key < window (а не <= window) и не пропускайте блок, где ещё есть разрешённый ключ",
    "an additive mask (finite biases and -inf) is added tile by tile": "аддитивная маска (конечные смещения и -inf) прибавляется тайл за тайлом",
    "slice the mask with the same query and key ranges as the scores of the block": "вырезайте маску по тем же диапазонам запросов и ключей, что и оценки блока",
    "query_start places the first query at that absolute position (a cached prefix)": "query_start ставит первый запрос на эту абсолютную позицию (закэшированный префикс)",
    "query offset ignored: query i sits at position query_start + i, so compare keys with query_start + i": "сдвиг запросов проигнорирован: запрос i стоит на позиции query_start + i, так что сравнивайте ключи с query_start + i",
    "decoding one query at a time equals attending all at once": "декодирование по одному запросу равно вниманию для всех сразу",
    "each decode step sees the keys cached so far; its query sits at position t": "каждый шаг декодирования видит уже закэшированные ключи; его запрос стоит на позиции t",
    "after the last tile, a row whose running sum is 0 had no key at all": "после последнего тайла строка, чья текущая сумма равна 0, не имела ни одного ключа",
    "empty_row='zero' gives an exact zero row and leaves the others alone": "empty_row='zero' даёт точно нулевую строку и не трогает остальные",
    "NaN on a fully masked row: divide only where the running sum is positive": "NaN в полностью замаскированной строке: делите только там, где текущая сумма положительна",
    "a sink joins the denominator with a zero value": "сток входит в знаменатель с нулевым значением",
    "start each row with m = sink and l = 1 (the sink's exp(sink - m)), and the accumulator at 0": "начинайте каждую строку с m = sink и l = 1 (exp(sink - m) стока), а накопитель\xa0— с 0",
    "float16 inputs are accepted": "входы float16 принимаются",
    "promote to float32 before any arithmetic": "повышайте до float32 до любой арифметики",
    "float16 inputs are accumulated and returned in float32": "входы float16 накапливаются и возвращаются во float32",
    "promote with np.result_type(Q.dtype, K.dtype, V.dtype, np.float32) before any arithmetic": "повышайте через np.result_type(Q.dtype, K.dtype, V.dtype, np.float32) до любой арифметики",
    "float16 inputs give the float32 result": "входы float16 дают результат во float32",
    "accumulate in float32, never in float16": "накапливайте во float32, никогда во float16",
    "an overflowing finite bias is rejected with a message that says what overflowed": "переполняющееся конечное смещение отвергается с сообщением о том, что переполнилось",
    "say what overflowed so the reader knows to shrink the bias": "скажите, что переполнилось, чтобы читатель знал, что нужно уменьшить смещение",
    "an overflowing finite bias is rejected": "переполняющееся конечное смещение отвергается",
    "score + bias overflowed to +-inf; -inf would silently read as 'blocked'": "score + bias переполнилось до +-inf; -inf молча читалось бы как «закрыто»",
    "a long causal input runs": "длинный каузальный вход обрабатывается",
    "tiled attention never holds a T_q x T_k score matrix": "внимание по тайлам никогда не держит матрицу оценок T_q x T_k",
    "compute scores one (query block, key block) pair at a time and keep only the running max, sum and accumulator": "вычисляйте оценки по одной паре (блок запросов, блок ключей) за раз и храните только текущий максимум, сумму и накопитель",
    "autograd is the oracle of this check: write the backward pass yourself, tile by tile": "autograd здесь служит эталоном проверки: напишите обратный проход сами, тайл за тайлом",
    "dS = P * (dP - D) with dP = dO V^T and D = rowsum(dO * O); then dQ += dS K / sqrt(d_k)": "dS = P * (dP - D), где dP = dO V^T и D = rowsum(dO * O); затем dQ += dS K / sqrt(d_k)",
    "dK += dS^T Q / sqrt(d_k): the 1 / sqrt(d_k) of the scores appears in dQ and in dK": "dK += dS^T Q / sqrt(d_k): множитель 1 / sqrt(d_k) из оценок входит и в dQ, и в dK",
    "dV += P^T dO, with P = exp(S - lse) recomputed from the score tile and the saved log-sum-exp": "dV += P^T dO, где P = exp(S - lse) заново вычислено из тайла оценок и сохранённого log-sum-exp",
    "the backward pass is written by hand: autograd is never called": "обратный проход написан вручную: autograd не вызывается",
    "no call to torch's autograd": "ни одного вызова autograd из torch",
    "a call to torch.autograd (backward or grad)": "вызов torch.autograd (backward или grad)",
    "compute dS = P * (dP - D) and the three products yourself, tile by tile": "вычислите dS = P * (dP - D) и три произведения сами, тайл за тайлом",
    "the tiled backward pass runs": "обратный проход по тайлам выполняется",
    "the causal case above with tile_size=4, and the saved lse shifted by log 2 (so P = exp(S - lse) halves)": "каузальный случай выше с tile_size=4 и сохранённым lse, сдвинутым на log 2 (так что P = exp(S - lse) уменьшается вдвое)",
    "the backward pass reads the saved log-sum-exp": "обратный проход читает сохранённый log-sum-exp",
    "recompute P = exp(S - lse) from the lse you are given and take D = rowsum(dO * O) from the saved output; renormalising the rows yourself needs each whole row of P, which tiling never holds": "вычисляйте P = exp(S - lse) по данному вам lse, а D = rowsum(dO * O)\xa0— по сохранённому выходу; чтобы самим нормировать строки, нужна вся строка P, а при тайлинге её никогда нет целиком",
    "the backward pass never holds a T_q x T_k matrix (scores, P or dS)": "обратный проход никогда не держит матрицу T_q x T_k (оценки, P или dS)",
    "recompute one (key block, query block) score tile at a time; keep only dQ, dK, dV and D = rowsum(dO * O)": "вычисляйте заново по одному тайлу оценок (блок ключей, блок запросов) за раз; храните только dQ, dK, dV и D = rowsum(dO * O)",
    "after tile {tile + 1} the running '{key}' is exact": "после тайла {tile + 1} текущее '{key}' точно",
    "random logits split into tiles of sizes {sizes}": "случайные логиты, разбитые на тайлы размеров {sizes}",
    "plain tiles run": "простые тайлы выполняются",
    "{case}, after every call": "{case}, после каждого вызова",
    "{case}, Q times 300, tile_size=3": "{case}, Q умножено на 300, tile_size=3",
    "{big} tokens, d=8, tile_size=32": "{big} токенов, d=8, tile_size=32",
    "peak traced memory below half of one {big} x {big} float64 matrix ({big * big * 4} bytes)": "пик отслеживаемой памяти меньше половины одной матрицы float64 {big} x {big} ({big * big * 4} байт)",
    "{peak} bytes": "{peak} байт",
    "causal tiles run": "каузальные тайлы выполняются",
    "{expected} score tiles": "тайлов оценок: {expected}",
    "{tiles} score tiles": "тайлов оценок: {tiles}",
    "never read": "ни разу не прочитано",
    "{case}, no mask, tile_size={tile}": "{case}, без маски, tile_size={tile}",
    "{case}, 2 queries whose only allowed key is the last, tile_size=2": "{case}, 2 запроса, единственный разрешённый ключ которых последний, tile_size=2",
    "{case}, causal=True, tile_size={tile}": "{case}, causal=True, tile_size={tile}",
    "{case}, causal=True, window=3, tile_size={tile}": "{case}, causal=True, window=3, tile_size={tile}",
    "{case}, random additive mask, tile_size=3": "{case}, случайная аддитивная маска, tile_size=3",
    "{case}, queries {start}..{n - 1} against all {n} keys, causal=True, window={window}, query_start={start}": "{case}, запросы {start}..{n - 1} ко всем {n} ключам, causal=True, window={window}, query_start={start}",
    "{case}, 11 single-query steps, window=4": "{case}, 11 шагов по одному запросу, window=4",
    "{case}, row 4 fully masked": "{case}, строка 4 полностью замаскирована",
    "{case}, row 4 fully masked, empty_row='zero'": "{case}, строка 4 полностью замаскирована, empty_row='zero'",
    "{case}, causal=True, sink=0.7, tile_size=3": "{case}, causal=True, sink=0.7, tile_size=3",
    "{case} cast to float16, causal=True": "{case}, приведённые к float16, causal=True",
    "dtype float32": "тип float32",
    "dtype {np.asarray(half).dtype}": "тип {np.asarray(half).dtype}",
    "score {sign * 0.75:+} * float32 max plus a bias of the same sign": "оценка {sign * 0.75:+} * максимум float32 плюс сдвиг того же знака",
    "a non-empty message": "непустое сообщение",
    "peak traced memory below half of one {big} x {big} float64 matrix ({score_matrix // 2} bytes)": "пик отслеживаемой памяти меньше половины одной матрицы float64 {big} x {big} ({score_matrix // 2} байт)",
    "Q, K [11 tokens, d_k=4], V and dO [11, 3], float64, causal={causal}, tile_size={tile}": "Q, K [11 токенов, d_k=4], V и dO [11, 3], float64, causal={causal}, tile_size={tile}",
    "{name} equals autograd's on dense attention (float64, 1e-10)": "{name} совпадает с градиентом autograd для плотного внимания (float64, 1e-10)",
    "{name} is computed from the saved lse and O: a shifted lse halves it": "{name} вычисляется из сохранённых lse и O: сдвинутый lse уменьшает его вдвое",
    "{big} tokens, d=8, causal, tile_size=32": "{big} токенов, d=8, causal, tile_size=32",
})
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
print("загружено контрактных проверок: 10")

# language -> (thousands separator, decimal separator, group integers from this many digits without a spec)
NUMBER_FORMS = {"en": (",", ".", 0), "ru": ("\u202f", ",", 5)}

def number(value, spec="", language="en"):
    """``format(value, spec)`` in ``language``'s number typography: ru ``131 072``, ``0,63``, ``1,5e-05``."""
    import numbers

    text = format(value, spec)
    if language not in NUMBER_FORMS or isinstance(value, bool) or not isinstance(value, numbers.Real) or language == "en":
        return text
    thousands, decimal, group_from = NUMBER_FORMS[language]
    if not spec and isinstance(value, numbers.Integral) and group_from and len(str(abs(int(value)))) >= group_from:
        text = format(value, ",")
    return text.replace(",", "\x00").replace(".", decimal).replace("\x00", thousands)

def localize_figures(language="en"):
    """Make matplotlib write every figure's numbers in ``language``'s typography: ticks, titles, labels, annotations.

    A translated edition calls this once, after ``number``: each text a figure is given is rewritten, its
    numbers and nothing else (``0.5`` -> ``0,5``, ``4,880 KiB`` -> ``4880 KiB``, ``131,072`` -> ``131 072``, a list
    ``1, 0.5, 0.25`` -> ``1; 0,5; 0,25``); a number that names a version or a module (``torch 2.4``, ``Module 5.1``)
    stays. English keeps matplotlib's own text.
    """
    import re

    import matplotlib.text

    if language == "en" or language not in NUMBER_FORMS or getattr(matplotlib.text, "course_language", None) == language:
        return
    thousands, decimal, group_from = NUMBER_FORMS[language]
    named = re.compile(r"(?:[Mm]odule|[\u041c\u043c]\u043e\u0434\u0443\u043b\u044c|torch|PyTorch|Python|CUDA|Llama|Qwen|Gemma|Mistral|GPT|§)[\s\u00a0]*$")
    numbers = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w,]|\.\d)")
    listed = re.compile(r"(?<![\w.,])[-−]?\d+(?:\.\d+)?(?:, [-−]?\d+(?:\.\d+)?)+(?![\w.])")

    def one(match, text):
        if named.search(text[max(0, match.start() - 12):match.start()]):
            return match.group(0)
        whole, fraction = match.group(1).replace(",", ""), match.group(2)
        if group_from and len(whole) >= group_from:
            whole = format(int(whole), ",").replace(",", thousands)
        return whole + (decimal + fraction if fraction else "")

    def local(text):
        if not isinstance(text, str) or not any(c.isdigit() for c in text):
            return text
        text = listed.sub(lambda m: m.group(0).replace(", ", "; ") if "." in m.group(0) else m.group(0), text)
        return numbers.sub(lambda m: one(m, text), text)

    original = matplotlib.text.Text.set_text

    def set_text(self, s):
        return original(self, local(s if isinstance(s, str) or s is None else str(s)))

    matplotlib.text.Text.set_text = set_text
    matplotlib.text.course_language = language


localize_figures('ru')  # every figure's numbers in the reader's typography

# %% tags=["hide-input", "remove-cell"]
# @title Версия каждого упражнения с решением: спойлер, нужный для show_reference и для запасного варианта check_exercise
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
# @title Инструменты диаграмм: схемы урока из блоков и стрелок, нарисованные matplotlib (только код рисования; запустите, читать необязательно).
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
# ## Что нужно знать заранее
#
# - **Внимание в том виде, в каком его строит модуль 3**: оценки $QK^\top / \sqrt{d_k}$, softmax по каждой
#   строке, взвешенная сумма значений; несколько голов; каузальная маска, скрывающая будущее.
# - **NumPy**: матричные произведения через `@`, broadcasting и аргумент `axis=` у `max` и `sum`.
#   PyTorch появляется в разделах 4, 7 и 8, чтобы сравнить наш код с `F.scaled_dot_product_attention`
#   и его autograd, и в разделе 9, где работает модель модуля 3.
# - **Байты**: 16-битное число занимает 2 байта; 1 КиБ — это 1024 байта, 1 ГиБ — $1024^3$ байт, а
#   1 ГБ — $10^9$ байт.
#
# Больше ничего не предполагается. Модуль 5.2 продолжает с этого места: окна, разреженные шаблоны, линейное
# внимание, модели пространства состояний, латентный и квантованный кэши.
#
# **Обозначения, общие для всего ноутбука.** Одно обозначение — один смысл. Остальные обозначения каждый раздел
# вводит в собственной таблице, там, где они впервые нужны. Имена из кода набраны так: `code font`, там, где они отличаются.
#
# | Обозначение | Смысл |
# |---|---|
# | $n$ | длина контекста в токенах |
# | $i$, $j$ | позиция запроса, позиция ключа |
# | $L$ | число слоёв |
# | $H$, $H_{kv}$ | головы запросов, головы ключей и значений в слое |
# | $d_k$, $d_v$, $d_h$, $d$ | размерность ключа, значения и головы ($d$, когда они равны) |
# | $b$ | байтов на одно хранимое число |
#
# **Термины.** *Prefill* (префилл): первый прямой проход по всему промпту, который заполняет KV-кэш; он
# оплачивает счёт за вычисления. *Декодирование* (decode): генерация по одному токену, где каждый новый запрос
# читает кэш; оно оплачивает счёт за память. *RoPE* (rotary position embedding, поворотный позиционный
# эмбеддинг, [Su и др., 2021](https://arxiv.org/abs/2104.09864)): позиция входит во внимание через поворот
# каждого запроса и каждого ключа на угол, пропорциональный его позиции, так что оценка зависит от расстояния
# $i - j$. *Сток* (sink): две вещи с одной причиной — первые токены в StreamingLLM (раздел 2) и дополнительный
# логит в gpt-oss (раздел 3); строка softmax в сумме равна 1, поэтому голове, которой нечего читать, всё равно
# нужно куда-то пристроить свою массу.

# %% [markdown]
# # Часть 1 · Руководство для практика
#
# **Весь модуль в одном предложении.** Длинный контекст выставляет два счёта: один за *вычисления*
# (каждый запрос сравнивается с каждым ключом, поэтому работа растёт как квадрат длины) и один за *память*
# (ключи и значения каждого прошлого токена остаются в KV-кэше, поэтому память растёт пропорционально длине),
# и каждая схема «эффективного внимания» — это свой компромисс в том, какие токены хранятся точно, какие
# сводятся к краткому итогу и насколько компактно всё это лежит в памяти.
#
# **Когда это нужно.** Всякий раз, когда длина контекста входит в ваше проектное решение: целый репозиторий
# в промпте, диалог, который длится весь день, агент, работающий сотни шагов, или выбор между двумя моделями,
# в карточках которых написано «grouped-query» (группировка запросов), «sliding window» (скользящее окно),
# «attention sinks» (стоки внимания), «hybrid Mamba» (гибрид с Mamba) или «latent attention» (латентное внимание). Эти слова определяют, сколько стоит один диалог и что модель ещё способна найти
# в контексте. Для промптов в несколько тысяч токенов обычное внимание дёшево и точно, и ничто из описанного
# ниже его не превзойдёт.
#
# **Как выбирать.** Исходите из того, что задача должна *найти*, а не из заявленного окна.
#
# - Точный поиск по длинному входу (имя функции в репозитории, пункт контракта): сохраните полное
#   внимание в достаточном числе слоёв и заложите бюджет на кэш.
# - Длинный текст, который движется вперёд и никогда не цитирует далёкое прошлое (расшифровка, поток):
#   окно или модель пространства состояний обойдутся гораздо дешевле; стоки плюс окно позволяют даже модели
#   с полным вниманием работать в потоковом режиме.
# - Много одновременных длинных диалогов на фиксированном железе: кэш на токен — это и *есть* ваша
#   ёмкость. Предпочитайте меньше KV-голов или латентный кэш, затем квантуйте кэш, затем ограничьте
#   допустимый контекст.
# - Заявленное контекстное окно в 128k или больше: проверяйте на той длине, которую будете использовать.
#   RULER обнаружил, что из 17 моделей с длинным контекстом, каждая из которых заявляла не меньше 32k токенов,
#   лишь примерно половина справлялась на 32k
#   ([Hsieh и др., 2024, версия COLM](https://arxiv.org/abs/2404.06654); в первой версии на arXiv
#   проверялось 10 моделей). *Lost in the Middle* показала, что точность выше всего, когда нужный фрагмент
#   стоит в начале или в конце входа, и ниже всего — когда в середине
#   ([Liu и др., 2023](https://arxiv.org/abs/2307.03172)).
#
# Варианты бок о бок, с их числами и тем, что ломается, идут после урока (часть 3), когда каждый
# из них уже построен.

# %%
# The running example of the whole module: Llama-3-8B's attention shape, with a 16-bit cache.
L8B, KV8B, D8B, BYTES16 = 32, 8, 128, 2
per_token = 2 * L8B * KV8B * D8B * BYTES16  # a key and a value, per layer, per KV head

# %%
show_figure(
    draw_taxonomy(language=LANGUAGE),
    "Читайте сверху вниз. Красный блок\xa0— проблема, которую создают оба счёта; каждый столбец\xa0— одна стратегия "
    "против неё, а пунктирные блоки под ним\xa0— конструкции, которые строит этот модуль. Левый столбец (синий) "
    "читает меньше токенов, средний (зелёный) заменяет растущий кэш состоянием фиксированного размера, правый "
    "(оранжевый) хранит каждый токен в меньшем числе байтов. Фиолетовый блок внизу слева\xa0— место, где встречаются "
    "две стратегии: гибриды ставят несколько слоёв внимания или окна среди слоёв пространства состояний.",
)


# %% [markdown]
# # Часть 2 · Как это устроено, с нуля
#
# Девять разделов, и в каждом одна и та же схема: идея, формула с обозначениями, числа вручную, код,
# рисунок и проверка, которая останавливает ноутбук, если что-то не так. По ходу отмечены десять
# упражнений; после каждого идёт проверка контракта, которая его оценивает. Заложите 4–5 часов, если
# считать так: около 8500 слов текста по 100 слов в минуту, медленно из-за формул (85 минут); около 10
# минут на раздел, чтобы запустить и прочитать его код и рисунки (90 минут); и 8–12 минут на
# упражнение (от 80 до 120 минут).
#
# ## 1. Два счёта
#
# **Идея.** Представьте званый ужин, где каждый новый гость пожимает руку каждому, кто уже пришёл (это
# оценки), а гардероб хранит по одному пальто на гостя на каждом этаже (это кэш). Десять гостей дают
# 45 рукопожатий, тысяча — полмиллиона. Внимание платит за то и другое: рукопожатия — это оценки запрос–ключ,
# за которые платят один раз на промпт, а пальто — это KV-кэш, за который платят всё время, пока диалог открыт.
#
# $$\text{пары} = n^2 \qquad\qquad \text{байты KV} = 2 \cdot L \cdot H_{kv} \cdot d_h \cdot b \cdot n$$
#
# | Обозначение | Смысл | Сквозной пример |
# |---|---|---|
# | $n$ | длина контекста в токенах | 131 072 (128k) |
# | $n^2$ | пар запрос–ключ на голову на слой (каузальная маска делит это число пополам; характер роста тот же) | $1{,}7 \times 10^{10}$ |
# | $2$ | один ключ и одно значение на токен | |
# | $L$ | слои, у каждого свой кэш | 32 |
# | $H_{kv}$ | головы ключей/значений в слое | 8 |
# | $d_h$ | чисел на голову | 128 |
# | $b$ | байтов на хранимое число | 2 (16 бит) |
#
# **Вручную.** Один токен стоит $2 \cdot 32 \cdot 8 \cdot 128 \cdot 2 = 131\,072$ байта, 128 КиБ.
# При $n = 131\,072$ это $2^{17} \cdot 2^{17} = 2^{34}$ байт, около 17,2 ГБ, и
# $n^2 \approx 1{,}7 \times 10^{10}$ пар. Переход от 8k к 1M токенов умножает число токенов на 128,
# число пар — на $128^2 = 16\,384$, а кэш — на 128: 137 ГБ, больше, чем вмещает одна GPU на 80 ГБ,
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


print(f"рукопожатий среди 10 гостей: {number(10 * 9 // 2, '', 'ru')}; среди 1000: {number(1000 * 999 // 2, ',', 'ru')}")
CONTEXTS = (8_192, 131_072, 1_048_576)
bills = [context_cost(n) for n in CONTEXTS]
print(f"{'context':>10} {'pairs per head per layer':>26} {'KV cache (GB)':>14}")
for bill in bills:
    print(f"{bill['n']:>10,} {bill['pairs']:>26,} {bill['cache_bytes'] / GB:>14.1f}")
print(f"8k -> 1M: токены x{number(CONTEXTS[2] // CONTEXTS[0], '', 'ru')}, пары x{number(bills[2]['pairs'] // bills[0]['pairs'], ',', 'ru')}, кэш x"
      f"{number(bills[2]['cache_bytes'] // bills[0]['cache_bytes'], '', 'ru')}")

# %% tags=["hide-input"]
# @title Два счёта вручную и по зафиксированному эталону, и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
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
# @title Код рисования для рисунка ниже: plot_two_bills (только matplotlib; читать необязательно)
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
    "Слева: пары запрос–ключ на голову и слой на логарифмической оси, по столбцу на длину контекста; каждый шаг "
    "вправо умножает столбец на 256, затем на 64. Справа: KV-кэш одного диалога в ГБ на линейной оси, пунктиром\xa0— "
    "один GPU на 80\xa0ГБ. Столбец для 1M токенов пересекает линию раньше, чем загружен хоть один вес.",
)
expect('bills[2]["cache_bytes"] > 80 * GB', bills[2]["cache_bytes"], ">", 80 * GB)
report_section("Два счёта", globals())

# %% [markdown]
# Счёт за вычисления оплачивается один раз на промпт, на этапе префилла, и точное разбиение на тайлы (разделы 6–8)
# делает эти вычисления быстрее и экономнее по памяти, не меняя их объёма. Счёт за память оплачивается всё
# время, пока диалог открыт, и определяет, скольких пользователей обслуживает одна GPU; поэтому большинство
# описанных ниже схем атакуют именно кэш.

# %%
show_figure(
    draw_kv_trip(per_token, L8B, language=LANGUAGE),
    "Проследите один шаг декодирования от оранжевого блока наверху. Ключ и значение токена n записываются в "
    "последнюю ячейку кэша (оранжевая, сплошная); его запрос идёт вправо, сравнивается со всеми n ключами, и веса "
    "softmax смешивают все n значений в выход токена n. Остальные ячейки (синие, светлые) читаются, но никогда не "
    "пересчитываются: это вычисления, которые экономит кэш, и память, которой он стоит, в каждом слое, пока длится "
    "диалог.",
)


# %% [markdown]
# ## 2. Маски: каузальная, окно и стоки
#
# **Идея.** Маска говорит, какие ключи может читать каждый запрос. В *аддитивной* записи это матрица,
# которую прибавляют к оценкам перед softmax: 0 там, где чтение разрешено, и $-\infty$ там, где запрещено,
# так что заблокированный ключ получает вес ровно $e^{-\infty} = 0$. Конечный элемент — это *смещение*
# (bias; его используют ALiBi и схемы относительных позиций). Здесь важны три маски: *каузальная* (никогда
# не заглядывать в будущее), *скользящее окно* (только последние $w$ токенов, включая собственный токен
# запроса) и окно со *стоками*: StreamingLLM навсегда оставляет видимыми первые $n_{\text{sink}}$ токенов,
# потому что обученные модели складывают на них много внимания и разваливаются, когда те исчезают. В разделе 3
# встретится сток другого рода — обучаемый логит gpt-oss: оба существуют потому, что строка softmax должна
# в сумме давать 1, и голове, которой нечего полезного читать, всё равно приходится куда-то девать свою массу.
#
# $$M_{ij} = 0 \;\text{ если }\; j \le i \;\text{ и }\; \left(i - j < w \;\text{ или }\; j < n_{\text{sink}}\right), \qquad M_{ij} = -\infty \;\text{ иначе}$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $i$, $j$ | позиция запроса (строка) и позиция ключа (столбец) | строка 23 |
# | $i - j$ | насколько далеко назад стоит ключ $j$; отрицательное значение — это будущее | |
# | $w$ | окно: сколько последних ключей читает запрос, включая собственный | 8 |
# | $n_{\text{sink}}$ | число ключей-стоков в начале, которые остаются видимыми (`n_sink`) | 2 |
# | $M_{ij}$ | элемент аддитивной маски | 0 или $-\infty$ |
#
# **Вручную.** При $n = 24$, $w = 8$, $n_{\text{sink}} = 2$ запрос 23 читает ключи с 16 по 23 (восемь штук,
# потому что $23 - 16 = 7 < 8$) плюс стоки 0 и 1; ключ 15 заблокирован ($23 - 15 = 8$). Полная
# каузальная маска разрешает $24 \cdot 25 / 2 = 300$ пар.

# %% tags=["exercise"]
# Exercise 1 · Упражнение 1: Постройте аддитивную маску. Верните массив float формы (n, n), где 0,0 стоит там, где запрос i может
# читать ключ j, и -inf там, где не может: никогда не будущий ключ; при заданном окне — только ключи с
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
    ### BEGIN SOLUTION
    query = np.arange(n)[:, None]  # (n, 1): rows are queries
    key = np.arange(n)[None, :]  # (1, n): columns are keys
    allowed = key <= query  # causal: never the future
    if window is not None:
        recent = query - key < window  # the query's own key is one of the window's w keys
        sinks = key < n_sink  # StreamingLLM: the first n_sink keys never leave
        allowed &= recent | sinks
    return np.where(allowed, 0.0, -np.inf)
    ### END SOLUTION


# %%
check_exercise("Exercise 1", check_additive_mask_contract, make_mask, globals())

# %%
MASK_N = 24
mask_causal, mask_window, mask_sinks = make_mask(MASK_N), make_mask(MASK_N, window=8), make_mask(MASK_N, window=8, n_sink=2)
for name, m in (("causal", mask_causal), ("window 8", mask_window), ("window 8 + 2 sinks", mask_sinks)):
    print(f"{number(name, '20s', 'ru')} разрешённых пар: {number(int((m == 0).sum()), '4d', 'ru')}   строка 23 читает ключи "
          f"{number(np.flatnonzero(m[23] == 0).tolist(), '', 'ru')}")
expect("(mask_causal == 0).sum() == MASK_N * (MASK_N + 1) // 2", (mask_causal == 0).sum(), "==", MASK_N * (MASK_N + 1) // 2)

# %% tags=["hide-input"]
# @title Маски вручную: край окна, стоки, один токен; и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
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
# @title Код рисования для рисунка ниже: plot_masks (только matplotlib; читать необязательно)
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
    "Каждая панель\xa0— маска 24 x 24: строки\xa0— запросы, столбцы\xa0— ключи, тёмные клетки разрешены. Каузальная маска\xa0— "
    "сплошной нижний треугольник; окно оставляет диагональную полосу в восемь клеток; стоки возвращают первые два "
    "столбца каждой строке ниже них. Ни на одной панели нет тёмной клетки над диагональю.",
)
report_section("Маски", globals())


# %% [markdown]
# ## 3. Внимание с логитом стока и строки, которым нечего читать
#
# **Идея.** gpt-oss добавляет в знаменатель softmax по одному обучаемому логиту на каждую голову **запросов**,
# 64 на слой; он дописывается к логитам каждой строки перед softmax и отбрасывается после него
# ([openai/gpt-oss](https://github.com/openai/gpt-oss), `gpt_oss/torch/model.py`). Он действует как
# дополнительный ключ с нулевым вектором значения: голова может отдать вес «в никуда», а не быть вынужденной
# распределить целую единицу вероятности по токенам. У `F.scaled_dot_product_attention` нет для этого
# аргумента, поэтому внимание мы пишем сами. Тот же код должен решить, что делать со строкой, в которой
# заблокированы все ключи (паддинг или агрессивная маска): softmax по пустому множеству — это $0/0$. Наша
# политика — по умолчанию ошибка, а по запросу — строка из точных нулей. Собственное ядро PyTorch начиная
# с версии 2.5 возвращает нули; версии 2.4 и более ранние возвращали NaN.
#
# $$p_{ij} = \frac{e^{s_{ij}}}{e^{\sigma_h} + \sum_{k} e^{s_{ik}}}, \qquad o_i = \sum_j p_{ij}\, v_j, \qquad \text{доля стока} = \frac{e^{\sigma_h}}{e^{\sigma_h} + \sum_{k} e^{s_{ik}}}$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $s_{ij}$ | масштабированная оценка плюс маска: $q_i \cdot k_j / \sqrt{d_k} + M_{ij}$ | 0 для 128 одинаковых ключей |
# | $\sigma_h$ | логит стока головы запросов $h$ (обучаемый) | 0, 2 или 5 |
# | $p_{ij}$ | вес ключа $j$ для запроса $i$; строка в сумме даёт $1 -$ доля стока | |
# | $o_i$ | выход: взвешенные значения; значение стока — нулевой вектор | |
#
# **Вручную.** 128 ключей, у которых все оценки равны 0, дают знаменатель $e^{\sigma} + 128$. При
# $\sigma = 0$ сток забирает $1/129 = 0{,}78\%$; при $\sigma = 2$ — $7{,}39 / 135{,}39 = 5{,}46\%$; при
# $\sigma = 5$ — $148{,}4 / 276{,}4 = 53{,}69\%$ массы, и вес каждого токена уменьшается в одно и то же число раз.

# %%
def additive_mask(allowed):
    """Turn a boolean mask (True = may read) into an additive one (0.0 / -inf)."""
    allowed = as_numpy("allowed", allowed)
    if allowed.dtype != bool:
        raise TypeError(f"allowed must be a boolean array (True = may read), got dtype {allowed.dtype}")
    return np.where(allowed, 0.0, -np.inf)


# %% tags=["hide-input"]
# @title Проверка аргумента mask для упражнения ниже (читать необязательно)
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
# Exercise 2 · Упражнение 2: Напишите softmax-внимание со стоком. Оценки, Q K^T / sqrt(d_k) плюс маска,
# уже вычислены за вас вместе с проверками переполнения. Сток (уже размноженный до формы [..., T_q, 1])
# входит в softmax каждой строки как дополнительный логит, вектор значения которого нулевой. Перед exp
# вычтите максимум строки (по токенам И стоку). Строка без разрешённых ключей и без стока вызывает
# ValueError при empty_row == "error" с сообщением, в котором есть empty_row='zero' (выход из положения),
# и состоит из нулей при "zero".
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
    ### BEGIN SOLUTION
    has_key = np.isfinite(scores).any(axis=-1, keepdims=True)  # (..., T_q, 1)
    top = scores.max(axis=-1, keepdims=True)  # -inf on a row with nothing to read
    if sink is not None:
        top = np.maximum(top, sink)  # the sink competes inside the same softmax
    elif empty_row == "error" and not has_key.all():
        first = np.argwhere(~has_key[..., 0])[0].tolist()
        raise ValueError(
            f"{int((~has_key).sum())} query row(s) have no allowed key (first at index {first}); "
            "fix the mask, or pass empty_row='zero' to return zeros for them"
        )
    top = np.where(np.isfinite(top), top, 0.0)  # an empty row keeps a harmless max: no -inf - -inf
    exp_scores = np.exp(scores - top)  # blocked keys: exp(-inf) = 0
    denominator = exp_scores.sum(axis=-1, keepdims=True)
    if sink is not None:
        denominator = denominator + np.exp(sink - top)  # the sink's mass; its value vector is zero
    weights = np.divide(exp_scores, denominator, out=np.zeros_like(exp_scores), where=denominator > 0)
    output = weights @ V  # (..., T_q, d_v)
    ### END SOLUTION
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
    print(f"логит стока {number(logit, '.0f', 'ru')}: доля стока среди 128 равных ключей = {number(100 * share, '.2f', 'ru')}%")

sink_logit = 1.3
out_sink, w_sink = sdpa(Q24, K24, V24, mask_causal, sink=sink_logit, return_weights=True)
extended = np.concatenate([Q24 @ K24.T / 4.0 + mask_causal, np.full((MASK_N, 1), sink_logit)], axis=1)  # d_k = 16
extended_w = np.exp(extended - extended.max(1, keepdims=True))
extended_w /= extended_w.sum(1, keepdims=True)
column_out = extended_w[:, :-1] @ V24  # the extra column's value vector is zero
print("сток против лишнего столбца с нулевым значением: наибольшая |разность| "
      f"{number(np.abs(out_sink - column_out).max(), '.1e', 'ru')}")
expect("np.allclose(out_sink, column_out, atol=1e-12)", np.allclose(out_sink, column_out, atol=1e-12))

# %% tags=["hide-input"]
# @title Внимание со стоком вручную и на границах: веса, пустые строки, стоки для каждой головы, широкий разброс оценок; и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
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
# @title Код рисования для рисунка ниже: plot_sink_share (только matplotlib; читать необязательно)
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
    "Кривая\xa0— доля вероятности, которую сток забирает из строки из 128 ключей, у которых все оценки равны 0, по "
    "мере роста его логита (ось x). Оранжевые ромбы, каждый с подписью своей доли, отмечают логиты 0, 2 и 5. "
    "Пунктирная линия на ln 128\xa0— место, где сток весит столько же, сколько все токены вместе: половина массы. "
    "Левее неё сток\xa0— небольшая утечка; правее голова в основном воздерживается.",
)
report_section("Внимание со стоком и пустые строки", globals())


# %% [markdown]
# ## 4. Внимание с группировкой запросов и три реализации, которые должны совпасть
#
# **Идея.** Многоголовое внимание (MHA) даёт каждой голове запросов собственную голову ключей и значений.
# Внимание с одной KV-головой (multi-query attention, MQA, [Shazeer, 2019](https://arxiv.org/abs/1911.02150))
# делит одну KV-голову между всеми головами запросов; внимание с группировкой запросов (GQA,
# [Ainslie и др., 2023](https://arxiv.org/abs/2305.13245)) лежит посередине: $H$ голов запросов в $H_{kv}$
# группах, каждая группа читает одну KV-голову. Кэш уменьшается в $G$ раз, по размеру группы. («5% вычислений
# предобучения» из статьи о GQA относятся к *дообучению* (uptraining) существующего MHA-чекпойнта, T5-XXL,
# в GQA, а не к обучению GQA с нуля.) В коде GQA — это MHA, в которой каждая KV-голова **повторена** $G$ раз
# подряд на своём месте. Если же повторять их поочерёдно, $kv_0, kv_1, kv_0,
# kv_1, \dots$, получится тихая ошибка: формы правильные, а выходы неверные.
#
# $$g(h) = \left\lfloor \frac{h}{G} \right\rfloor, \qquad G = \frac{H}{H_{kv}}, \qquad o^{(h)} = \operatorname{softmax}\left(\frac{Q^{(h)} {K^{(g(h))}}^\top}{\sqrt{d_k}} + M\right) V^{(g(h))}$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $H$, $H_{kv}$ | головы запросов, головы ключей/значений | 8, 2 (gpt-oss: 64, 8) |
# | $G$ | размер группы: голов запросов на одну KV-голову | 4 |
# | $g(h)$ | KV-голова, которую читает голова запросов $h$ | головы 0–3 читают 0, головы 4–7 читают 1 |
# | $\lfloor x \rfloor$ | округление вниз | $\lfloor 5/4 \rfloor = 1$ |
#
# **Вручную.** $H = 8$, $H_{kv} = 2$: повторение даёт порядок KV-голов 0,0,0,0,1,1,1,1, а чередование —
# 0,1,0,1,0,1,0,1, так что голова запросов 1 читала бы KV-голову 1, хотя принадлежит группе 0.

# %% tags=["hide-input"]
# @title Проверки аргументов функций этого раздела: _repeat_kv_args, _gqa_args, _explicit_attention_shape (откройте, чтобы прочитать)
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
# Exercise 3 · Упражнение 3: Повторите KV-головы для внимания с группировкой запросов. В x KV-головы лежат на оси -3;
# верните массив, в котором на этой оси в group раз больше голов и голова запросов h получает KV-голову
# h // group: соседние головы запросов делят одну KV-голову.
def repeat_kv_heads(x, group):
    """KV heads on axis -3, each repeated ``group`` times in place: query head h reads KV head h // group."""
    x, group = _repeat_kv_args(x, group)
    ### BEGIN SOLUTION
    return np.repeat(x, group, axis=-3)  # kv0, kv0, ..., kv1, kv1, ...: each KV head serves a block of query heads
    ### END SOLUTION


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
print(f"GQA против MHA со скопированными головами: наибольшая |разность| {number(np.abs(grouped - as_mha).max(), '.1e', 'ru')}")
expect("np.allclose(grouped, as_mha, atol=1e-12)", np.allclose(grouped, as_mha, atol=1e-12))
# The negative test: np.tile interleaves the groups, and the outputs change although every shape is right.
tiled_heads = sdpa(Qh, np.tile(Kh, (H // H_KV, 1, 1)), np.tile(Vh, (H // H_KV, 1, 1)), causal12)
print(f"GQA против tile вместо repeat: наибольшая |разность| {number(np.abs(grouped - tiled_heads).max(), '.2f', 'ru')} (должна быть "
      "большой)")

# %% tags=["hide-input"]
# @title Повтор, а не tile, и MHA как группы из одной головы; и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
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
# @title Код рисования для рисунка ниже: plot_head_mapping (только matplotlib; читать необязательно)
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
    "Верхний ряд: 8 голов запросов, окрашенных по своей группе (головы 0–3 и 4–7); нижний ряд: 2 KV-головы. Каждая "
    "линия показывает, какую KV-голову читает голова запросов. Слева (repeat) каждая линия остаётся внутри своего "
    "цвета: головы 0–3 читают KV-голову 0. Справа (tile, повтор тайлами) линии пересекают границы групп, так что "
    "половина голов запросов читает ключи и значения чужой группы.",
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
    print(f"ПРОПУСК: torch {number(torch.__version__, '', 'ru')} возвращает NaN в полностью замаскированных строках; сравниваются только "
          "остальные строки")
    rows = slice(1, None)
print("sdpa на NumPy, явный torch и F.scaled_dot_product_attention совпадают по выходам, маскам обоих видов, пустым "
      "строкам и градиентам")

# is_causal=True aligns the triangle top-left: one decoding query (token 4 of 5) would see key 0 only.
q_last, k_all, v_all = q[..., 4:, :].detach(), k.detach(), v.detach()
top_left = F.scaled_dot_product_attention(q_last, k_all, v_all, is_causal=True)
bottom_right = F.scaled_dot_product_attention(q_last, k_all, v_all, attn_mask=torch.ones(1, 5, dtype=torch.bool))
print("is_causal=True при 1 запросе и 5 ключах читает только ключ 0: декодированию нужна явная маска или сдвиг")

if ENVIRONMENT["torch_has_enable_gqa"]:
    qg, kg, vg = (torch.tensor(a, requires_grad=True) for a in (Qh[None], Kh[None], Vh[None]))  # (1, H, T, d), (1, H_kv, T, d)
    causal_t = torch.ones(T, T, dtype=torch.bool).tril()
    api_gqa = F.scaled_dot_product_attention(qg, kg, vg, attn_mask=causal_t, enable_gqa=True)
    explicit_gqa = torch_sdpa_explicit(qg, kg.repeat_interleave(H // H_KV, dim=1), vg.repeat_interleave(H // H_KV, dim=1), causal_t)
    expect_close("enable_gqa=True equals repeat_interleave plus explicit attention", api_gqa, explicit_gqa, rtol=1e-10, atol=1e-12)
    expect_close("enable_gqa=True equals this notebook's grouped attention", api_gqa[0], torch.from_numpy(grouped), rtol=1e-10, atol=1e-12)
    for a, b in zip(torch.autograd.grad(api_gqa.square().sum(), (qg, kg, vg)), torch.autograd.grad(explicit_gqa.square().sum(), (qg, kg, vg))):
        expect_close("enable_gqa=True has the gradients of the explicit path", a, b, rtol=1e-9, atol=1e-11)
    report_section("enable_gqa=True равно repeat_interleave + явному вниманию, по выходам и градиентам", globals())
else:
    print(f"ПРОПУСК: в torch {number(torch.__version__, '', 'ru')} нет enable_gqa (добавлен в 2,5); repeat_kv_heads выше\xa0— переносимый путь")
report_section("GQA", globals())

# %% tags=["hide-input"]
# @title Три реализации на каждой строке, градиенте, оси пакета и каузальном выравнивании; и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
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
# ## 5. Читаем карточку модели: калькулятор KV-кэша
#
# **Идея.** Карточка модели (или её `config.json`) сообщает всё, что нужно для расчёта кэша: число слоёв,
# KV-голов, размерность головы и то, какие слои смотрят на весь контекст, а какие — только на окно. Полный слой
# хранит каждый токен; слой с окном хранит не больше $w$ токенов и затем вытесняет самый старый, так что
# его кэш перестаёт расти. Наш разбираемый пример — gpt-oss-120b
# ([карточка модели](https://arxiv.org/abs/2508.10925), [код](https://github.com/openai/gpt-oss)):
# 36 слоёв, 64 головы запросов, 8 KV-голов размерности 64 и окно в 128 токенов на чётных слоях
# (0, 2, 4, ...), причём окно учитывает текущий токен; нечётные слои полные.
#
# $$\text{байты}(n) = 2 \cdot H_{kv} \cdot d_h \cdot b \cdot \sum_{\kappa=1}^{L} \min\left(n, w_\kappa\right), \qquad w_\kappa = \infty \text{ для полного слоя}$$
#
# | Обозначение | Смысл | gpt-oss-120b |
# |---|---|---|
# | $n$ | длина контекста | 131 072 |
# | $L$ | число слоёв | 36 |
# | $\kappa$, $w_\kappa$ | номер слоя и окно слоя $\kappa$ | 128 на чётных слоях, $\infty$ на нечётных |
# | $\min(n, w_\kappa)$ | сколько токенов хранит слой $\kappa$ | 128 или 131 072 |
# | $H_{kv}$, $d_h$, $b$ | KV-головы, размерность головы, байтов на число | 8, 64, 2 |
#
# **Вручную.** Один слой стоит $2 \cdot 8 \cdot 64 \cdot 2 = 2048$ байт на хранимый токен. Если бы все
# 36 слоёв были полными, токен стоил бы $36 \cdot 2048 = 73\,728$ байт (72 КиБ), а 128k токенов —
# 9,0 ГиБ. В реальном гибриде 18 полных слоёв хранят $18 \cdot 131\,072 \cdot 2048$ байт = 4,5 ГиБ,
# а 18 слоёв с окном — всего $18 \cdot 128 \cdot 2048$ байт = 4,5 МиБ, так что окна вдвое уменьшают кэш.
# На каждый токен контекста растут только 18 полных слоёв: $18 \cdot 2048 = 36\,864$ байта,
# **36 КиБ на токен** для gpt-oss-120b; у gpt-oss-20b 24 слоя (12 полных, 12 с окном), и она растёт на
# **24 КиБ на токен**. (Единицы: КиБ и ГиБ — двоичные, $2^{10}$ и $2^{30}$ байт, ими меряют размеры на токен;
# ГБ — десятичный, $10^9$ байт, так продают память GPU. 4,5 ГиБ — это 4,83 ГБ.) Варианты, которые авторы
# карточки *не* выбрали, при том же расписании, где растут только 18 полных слоёв: MHA (64 KV-головы)
# стоила бы 288 КиБ на токен, MQA (1 KV-голова) — 4,5 КиБ.

# %%
# The gpt-oss-120b configuration, embedded with its own checksum so a silent edit cannot slip through.
GPT_OSS_CONFIG_JSON = '{"num_hidden_layers": 36, "num_experts": 128, "experts_per_token": 4, "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880, "swiglu_limit": 7.0, "head_dim": 64, "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128, "initial_context_length": 4096, "rope_theta": 150000, "rope_scaling_factor": 32.0, "rope_ntk_alpha": 1, "rope_ntk_beta": 32}'
GPT_OSS_CONFIG_SHA256 = "063aaa98e012cac330d58d18471700f0b0eb90bb15c58fb227809d45090f3e65"
verify_sha256(GPT_OSS_CONFIG_JSON, GPT_OSS_CONFIG_SHA256, "the embedded gpt-oss-120b config")
gpt_oss = json.loads(GPT_OSS_CONFIG_JSON)
print({key: gpt_oss[key] for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "sliding_window")})
expect('(gpt_oss["num_hidden_layers"], gpt_oss["num_attention_heads"], gpt_oss["num_key_value_heads"], gpt_oss["head_dim"], gpt_oss["sliding_window"]) == (36, 64, 8, 64, 128)', (gpt_oss["num_hidden_layers"], gpt_oss["num_attention_heads"], gpt_oss["num_key_value_heads"], gpt_oss["head_dim"], gpt_oss["sliding_window"]), "==", (36, 64, 8, 64, 128))


# %% tags=["exercise"]
# Exercise 4 · Упражнение 4: Посчитайте размер KV-кэша слой за слоем. В layer_windows по одному элементу на слой: None для слоя
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
    ### BEGIN SOLUTION
    kept = sum(context if window is None else min(context, window) for window in windows)  # token slots over all layers
    return 2 * kept * kv_heads * head_dim * bytes_per_value  # a key and a value per KV head per kept token
    ### END SOLUTION


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
    print(f"{number(key, '34s', 'ru')} {number(per_token_bytes / KIB, '6.1f', 'ru')} КиБ/токен   {number(per_token_bytes * context / GIB, '6.2f', 'ru')} ГиБ при {number(context, ',', 'ru')} "
          "токенов")
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
print(f"gpt-oss-120b при {number(context, ',', 'ru')} токенов: полные слои {number(hybrid['full_bytes'] / GIB, '.2f', 'ru')} ГиБ + слои с окном "
      f"{number(hybrid['sliding_bytes'] / MIB, '.1f', 'ru')} МиБ = {number(hybrid['hybrid_total_bytes'] / GIB, '.4f', 'ru')} ГиБ; со всеми полными "
      f"слоями было бы {number(hybrid['all_full_bytes'] / GIB, '.2f', 'ru')} ГиБ (x"
      f"{number(hybrid['all_full_bytes'] / hybrid['hybrid_total_bytes'], '.3f', 'ru')})")
# gpt-oss-20b: 24 layers, again alternating window and full (same source); only its 12 full layers grow.
print(f"gpt-oss-20b: его растущая часть стоит {number(kv_bytes_per_token(12, 8, 64) / KIB, '.0f', 'ru')} КиБ на токен")

# Two more cards: Llama-3.3-70B (80 layers, 8 KV heads of 128) and Qwen2.5-7B (28 layers, 4 KV heads of 128).
cards = {"llama_3_3_70b": (80, 8, 128), "qwen2_5_7b": (28, 4, 128)}
for name, (card_layers, card_kv, card_dim) in cards.items():
    per_token_bytes = kv_bytes_per_token(card_layers, card_kv, card_dim)
    total = kv_cache_bytes(context, [None] * card_layers, card_kv, card_dim)
    print(f"{number(name, '14s', 'ru')} {number(per_token_bytes / KIB, '4.0f', 'ru')} КиБ/токен -> {number(total / GIB, '4.0f', 'ru')} ГиБ при {number(context, ',', 'ru')} токенов")
    REFERENCE.check(f"model_cards.{name}_bytes_per_token", per_token_bytes)
    REFERENCE.check(f"model_cards.{name}_context_bytes", total)

# %% tags=["hide-input"]
# @title Калькулятор против зафиксированного эталона, числа из текста и подсчёт вручную; и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
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
# **Латентный кэш в том же масштабе.** DeepSeek-V3 ([конфигурация](https://huggingface.co/deepseek-ai/DeepSeek-V3))
# кэширует на каждый слой и токен один латентный вектор из 512 чисел плюс один RoPE-ключ из 64 чисел, общий
# для всех 128 голов: $61 \cdot (512 + 64) \cdot 2 = 70\,272$ байта. С чем это сравнивать? Соглашение
# таблицы 1 статьи DeepSeek-V2 берёт MHA-двойника с размерностью головы $d_h = 128$ для ключей и значений:
# $2 \cdot 61 \cdot 128 \cdot 128 \cdot 2 = 3\,997\,696$ байт, в 56,9 раза больше. Но реальные ключи имеют
# размерность 192 (128 без позиции + 64 RoPE), а значения — 128, так что развёрнутый кэш на самом деле стоил бы
# $61 \cdot 128 \cdot (192 + 128) \cdot 2 = 4\,997\,120$ байт, примерно в 71 раз больше. «Верны» оба числа;
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
print(f"латентный вектор {number(latent_bytes, ',', 'ru')} Б/токен; эквивалент MHA (d_h = 128) {number(v2_convention, ',', 'ru')} Б = x"
      f"{number(v2_convention / latent_bytes, '.1f', 'ru')}; развёрнутый с ключами размерности 192 {number(expanded_192, ',', 'ru')} Б = x"
      f"{number(expanded_192 / latent_bytes, '.1f', 'ru')}")
REFERENCE.check("mla.raw_element_ratio", v2_convention / latent_bytes, rtol=1e-15)

# %% tags=["hide-input"]
# @title Латентный кэш против зафиксированного эталона и вручную; и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
REFERENCE.check("mla.bytes_per_token", latent_bytes)
REFERENCE.check("mla.mha_equivalent_bytes_per_token", v2_convention)
REFERENCE.check("mla.expanded_192_bytes_per_token", expanded_192)
REFERENCE.check("mla.expanded_192_ratio", expanded_192 / latent_bytes, rtol=1e-15)
expect("one layer caching a 1-number latent and a 1-number RoPE key in bytes: 2 bytes", mla_bytes_per_token(1, 1, 1, 1), "==", 2)
expect_raises(ValueError, mla_bytes_per_token, 61, 0, 64, match="latent_dim");


# %% tags=["hide-input"]
# @title Код рисования для рисунка ниже: plot_bytes_per_token (только matplotlib; читать необязательно)
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
    "Каждый столбец\xa0— KV-кэш, которого стоит один лишний токен во всех слоях, на логарифмической оси, где каждая "
    "линия сетки вдесятеро больше предыдущей; цвет показывает, к какой модели относится столбец. Столбцы одного "
    "цвета (gpt-oss-120b, DeepSeek-V3) показывают, что сэкономил выбор конструкции: общие KV-головы (от MHA к GQA "
    "и MQA), окно в половине слоёв или кэширование латентного вектора. Два близнеца DeepSeek-V3 различаются только "
    "соглашением о подсчёте.",
)
expect("growing_hybrid == 36 * KIB", growing_hybrid, "==", 36 * KIB)
print("калькулятор KV-кэша: каждое зафиксированное число модуля 5 воспроизведено")


# %% [markdown]
# ## 6. Онлайн-softmax: один проход, точно
#
# **Идея.** Кажется, что softmax должен увидеть всю строку, прежде чем что-либо взвешивать: ему нужны
# максимум (для устойчивости) и сумма (для нормировки). Онлайн-softmax читает строку по тайлам и хранит
# текущие величины. [Milakov и Gimelshein (2018)](https://arxiv.org/abs/1805.02867) за один проход ведут
# две из них — наибольший логит на данный момент $m$ и накопленную сумму $e^{x - m}$, то есть $\ell$, — а
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
# | $x_j$, $v_j$ | логит и его значение | тайл 2: (3; 0,5) и (3, 4) |
# | $m_t$ | текущий максимум ($m_0 = -\infty$) | 3 |
# | $\alpha_t$ | множитель пересчёта для накопленного до тайла $t$ ($\alpha_1 = 0$) | $e^{2 - 3} = 0{,}3679$ |
# | $\ell_t$, $u_t$ | текущая сумма и текущий числитель (`l` и `u` в коде) | 1,5853; 3,9669 |
# | $u_T / \ell_T$ | выход после последнего тайла $T$ | 2,5023 |
#
# **Вручную.** Логиты $(2, 1 \mid 3; 0{,}5)$ со значениями $(1, 2 \mid 3, 4)$. Тайл 1: $m = 2$,
# $\ell = e^0 + e^{-1} = 1{,}3679$, $u = 1 + 2e^{-1} = 1{,}7358$. Тайл 2 поднимает $m$ до 3, поэтому
# $\alpha = e^{-1} = 0{,}3679$: $\ell = 0{,}3679 \cdot 1{,}3679 + e^0 + e^{-2{,}5} = 1{,}5853$ и
# $u = 0{,}3679 \cdot 1{,}7358 + 3 + 4e^{-2{,}5} = 3{,}9669$. Выход $3{,}9669 / 1{,}5853 = 2{,}5023$ — то же, что softmax
# по всем четырём логитам сразу. Забудьте про $\alpha$, и слагаемые тайла 1 окажутся в $e$ раз тяжелее, чем нужно.

# %% tags=["hide-input"]
# @title _online_softmax_tiles: проверки аргументов упражнения 5 (откройте, чтобы прочитать)
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
# Exercise 5 · Упражнение 5: Вычислите взвешенное по softmax среднее в потоковом режиме. Для каждого тайла обновите текущий максимум m
# (начальное значение -inf), множитель пересчёта alpha = exp(m_old - m_new), текущую сумму l и числитель u,
# как в формуле, и добавьте {"m": m, "alpha": alpha, "l": l, "u": u} в трассу. Верните (u / l, trace).
def online_softmax_dot(logit_tiles, value_tiles):
    """Softmax-weighted average of scalar values, streamed tile by tile; returns (output, per-tile trace)."""
    tiles = _online_softmax_tiles(logit_tiles, value_tiles)  # [(logits, values), ...] as float arrays
    ### BEGIN SOLUTION
    m, l, u = -math.inf, 0.0, 0.0
    trace = []
    for logits, values in tiles:
        m_new = max(m, float(logits.max()))
        alpha = math.exp(m - m_new)  # 0 before the first tile, since m = -inf
        weights = np.exp(logits - m_new)
        l = alpha * l + float(weights.sum())
        u = alpha * u + float(weights @ values)
        m = m_new
        trace.append({"m": m, "alpha": alpha, "l": l, "u": u})
    return u / l, trace
    ### END SOLUTION


# %%
check_exercise("Exercise 5", check_online_softmax_contract, online_softmax_dot, globals())


# %% tags=["hide-input"]
# @title Код рисования для рисунка ниже: plot_online_softmax (только matplotlib; читать необязательно)
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
    print(f"после тайла {number(t, '', 'ru')}: m = {number(state['m'], '.0f', 'ru')}, alpha = {number(state['alpha'], '.4f', 'ru')}, l = {number(state['l'], '.4f', 'ru')}, u = "
          f"{number(state['u'], '.4f', 'ru')}")
print(f"выход u / l = {number(online_output, '.4f', 'ru')}")

# A longer row: 48 logits in 12 tiles of 4. The running estimate u / l jumps while the max still moves.
row_logits, row_values = rng.normal(0.0, 2.0, 48), rng.normal(0.0, 1.0, 48)
_, long_trace = online_softmax_dot(np.split(row_logits, 12), np.split(row_values, 12))
exact_row = np.exp(row_logits - row_logits.max()) @ row_values / np.exp(row_logits - row_logits.max()).sum()
expect('abs(long_trace[-1]["u"] / long_trace[-1]["l"] - exact_row) < 1e-12', abs(long_trace[-1]["u"] / long_trace[-1]["l"] - exact_row), "<", 1e-12)


show_figure(
    plot_online_softmax(long_trace, exact_row, language=LANGUAGE),
    "Ось x считает прочитанные тайлы по 4 логита; сплошная синяя линия с точками\xa0— текущий выход u / l, "
    "пунктирная\xa0— среднее по softmax всех 48 логитов. Оранжевые квадраты отмечают тайлы, чей максимум превзошёл "
    "все прежние логиты,\xa0— там старые суммы умножались на alpha. Вначале линия может сильно двигаться, но её "
    "последняя точка ложится на пунктирную линию точно, а не приблизительно.",
)
report_section("Онлайн-softmax", globals())

# %% tags=["hide-input"]
# @title След разобранного примера против зафиксированного эталона и прямого softmax; и отвергнутые неверные входы (проверено; откройте, чтобы прочитать)
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
# ## 7. Потоковое внимание по тайлам: идея FlashAttention на NumPy
#
# **Идея.** Применим онлайн-softmax к целым блокам. Разрежем запросы на блоки по $\tau$ строк, а ключи —
# на блоки по $\tau$ столбцов. Для одного блока запросов пройдём по блокам ключей; каждый шаг вычисляет
# небольшой тайл оценок $\tau \times \tau$, обновляет $m$, $\ell$ и накопитель выхода $O$ каждой строки и
# выбрасывает тайл. Матрица $n \times n$ никогда не существует
# ([FlashAttention, Dao и др., 2022](https://arxiv.org/abs/2205.14135); авторы сообщают об обучении на 15%
# быстрее рекорда MLPerf для BERT-large, в 3 раза быстрее на GPT-2 при 1K токенов и в 2,4 раза на Long Range Arena;
# FlashAttention-2 ещё примерно в 2 раза быстрее, [Dao, 2023](https://arxiv.org/abs/2307.08691)). Маски
# достаются даром благодаря блочной структуре: при каузальной маске блоки ключей, целиком лежащие в будущем
# блока запросов, не вычисляются вовсе; при окне — и блоки, целиком оставшиеся позади него. Сама маска
# нужна только блокам, через которые проходит её граница. Декодирование с кэшем добавляет одну деталь:
# когда запросы — это последние $T_q$ из $T_k$ токенов, запрос $i$ стоит на абсолютной позиции $p_0 + i$,
# где $p_0$ — позиция первого нового запроса (аргумент `query_start`), и проверки каузальности и окна
# должны использовать именно эту позицию.
#
# Порядок циклов — **как во FlashAttention-2**: блоки запросов во внешнем цикле, блоки ключей во внутреннем,
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
# $128^2$ чисел, 64 КиБ во float32, против 16 МиБ для полной матрицы во float32. (Сетка блоков зависит
# только от $n / \tau$ и $w / \tau$, поэтому код ниже рисует её для $n = 1024$, $\tau = 64$,
# $w = 128$ — та же сетка $16 \times 16$ за четверть стоимости.)

# %% [markdown]
# Вы построите внимание по тайлам в три шага, у каждого своя проверка: **простые тайлы** (без маски:
# онлайн-обновление на целых блоках), затем **каузальный пропуск** (какие тайлы ключей можно не вычислять
# и какой один диагональный тайл на блок нуждается в маске), затем **смещения и окна** (запросы, стоящие
# после закэшированного префикса, и окна, которые пропускают тайлы ещё и слева).
#
# ### Шаг 1 · Простые тайлы: онлайн-обновление на целых блоках

# %% tags=["hide-input"]
# @title Проверки аргументов и переполнения для тайловых ядер и block_kinds ниже (откройте, чтобы прочитать)
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
# Exercise 6 · Упражнение 6: Простые тайлы. Для каждого блока из tile_size запросов храните для каждой строки m (начало -inf),
# l (начало 0) и накопитель O (нули, размерность d_v). Для каждого блока из tile_size ключей: вычислите
# тайл оценок Q_b K_c^T / sqrt(d_k), затем онлайн-обновление по формуле выше. После последнего
# блока ключей верните O / l для каждого блока запросов. Никогда не стройте массив T_q x T_k.
def tiled_attention_plain(Q, K, V, *, tile_size=128):
    """Unmasked softmax attention, streamed over (query block, key block) tiles: output [T_q, d_v]."""
    Q, K, V, tile_size = _plain_tile_args(Q, K, V, tile_size)
    ### BEGIN SOLUTION
    (n_q, d_k), (n_k, d_v) = Q.shape, V.shape
    out = np.empty((n_q, d_v))
    for q0 in range(0, n_q, tile_size):
        Q_b = Q[q0:q0 + tile_size] / math.sqrt(d_k)  # (B_q, d_k), scaled once per block
        m = np.full(len(Q_b), -np.inf)  # running max per row
        l = np.zeros(len(Q_b))  # running sum per row
        acc = np.zeros((len(Q_b), d_v))  # running numerator O
        for k0 in range(0, n_k, tile_size):
            s = Q_b @ K[k0:k0 + tile_size].T  # (B_q, B_k): the only score tile alive
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)  # 0 on the first tile, where m = -inf
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + tile_size]
            m = m_new
        out[q0:q0 + tile_size] = acc / l[:, None]  # FlashAttention-2: one division, at the end
    return out
    ### END SOLUTION


# %%
check_exercise("Exercise 6", check_plain_tiled_contract, tiled_attention_plain, globals())


# %% [markdown]
# ### Шаг 2 · Каузальный пропуск: только тайлы на диагонали и под ней
#
# Блок запросов $b$ читает блоки ключей с $0$ по $b$; блоки справа от диагонали целиком лежат в будущем
# и никогда не вычисляются. Только диагональный тайл пересекает границу маски.

# %% tags=["exercise"]
# Exercise 7 · Упражнение 7: Каузальный пропуск. То же, что в упражнении 6, но запрос i читает ключи 0..i. В K и V может быть
# больше строк, чем в Q, как в заранее выделенном кэше: строки после последнего запроса — ещё не
# записанные ячейки, в них может лежать что угодно, даже NaN, поэтому никогда их не читайте. Для блока
# запросов [q0, q1) посещайте только тайлы ключей, которые начинаются с k0 <= q1 - 1 и кончаются не
# позже ключа q1 - 1 (более поздние ключи целиком в будущем); внутри тайла, через который проходит
# диагональ, перед взятием максимума ставьте -inf в оценки ключей, стоящих после запроса. Верните
# (output, tiles_computed) — число вычисленных тайлов оценок.
def causal_tiled_attention(Q, K, V, *, tile_size=128):
    """Causal softmax attention over tiles, skipping tiles above the block diagonal: (output, tiles_computed)."""
    Q, K, V, tile_size = _causal_tile_args(Q, K, V, tile_size)
    ### BEGIN SOLUTION
    (n_q, d_k), d_v = Q.shape, V.shape[1]
    out, tiles = np.empty((n_q, d_v)), 0
    for q0 in range(0, n_q, tile_size):
        q1 = min(q0 + tile_size, n_q)
        Q_b = Q[q0:q1] / math.sqrt(d_k)
        m, l, acc = np.full(q1 - q0, -np.inf), np.zeros(q1 - q0), np.zeros((q1 - q0, d_v))
        for k0 in range(0, q1, tile_size):  # key tiles starting after q1 - 1 are all in the future
            k1 = min(k0 + tile_size, q1)  # and no tile reads past key q1 - 1
            s = Q_b @ K[k0:k1].T
            tiles += 1
            if k1 - 1 > q0:  # the tile straddles the diagonal: mask the future inside it
                s[np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None]] = -np.inf
            m_new = np.maximum(m, s.max(axis=1))  # finite: key k0 <= q0 is allowed for every row
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k1]
            m = m_new
        out[q0:q1] = acc / l[:, None]
    return out, tiles
    ### END SOLUTION


# %%
check_exercise("Exercise 7", check_causal_tiled_contract, causal_tiled_attention, globals())

# %%
gen_tiles = np.random.default_rng(11)
Qt, Kt, Vt = (gen_tiles.standard_normal((64, 8)) for _ in range(3))
plain_out, (causal_out, causal_tiles) = tiled_attention_plain(Qt, Kt, Vt, tile_size=16), causal_tiled_attention(Qt, Kt, Vt, tile_size=16)
print(f"простые тайлы против плотного: {number(np.abs(plain_out - sdpa(Qt, Kt, Vt)).max(), '.1e', 'ru')}; каузальные тайлы против "
      f"плотного: {number(np.abs(causal_out - sdpa(Qt, Kt, Vt, make_mask(64))).max(), '.1e', 'ru')}; вычислено {number(causal_tiles, '', 'ru')} из "
      f"{number((64 // 16) ** 2, '', 'ru')} тайлов")
expect("causal tiles equal dense causal attention", np.abs(causal_out - sdpa(Qt, Kt, Vt, make_mask(64))).max(), "<", 1e-12)

# %% tags=["hide-input"]
# @title Крайние случаи двух ядер по тайлам: тайл по умолчанию, оценки в тысячи, защита от переполнения на её границе
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
# ### Шаг 3 · Смещения и окна: запросы после закэшированного префикса и тайлы, пропущенные слева
#
# Полное ядро добавляет сток, аддитивную маску, проверки переполнения и пустые строки — всё это написано
# за вас; остаётся определить, где начинаются и кончаются ключи блока запросов, когда его запросы стоят на
# абсолютных позициях $p_0 + i$, и маску внутри тайла, который пересекает границу.

# %% tags=["exercise"]
# Exercise 8 · Упражнение 8: Смещения и окна. Всё остальное во внимании по тайлам уже написано за вас: сток, аддитивная маска,
# проверки переполнения и пустые строки. Заполните два отмеченных места. (1) Диапазон ключей для блока
# запросов, чьи запросы стоят на абсолютных позициях first..last (= query_start + q0 ..
# query_start + q1 - 1): при каузальном режиме (causal=True) — ни одного ключа после last; при окне — ни одного ключа до
# first - window + 1. (2) Внутри тайла, через который проходит граница, заблокируйте будущее и, при окне,
# ключи с query_pos - key_pos >= window.
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
            ### BEGIN SOLUTION
            if causal:
                k_hi = min(n_k, last + 1)  # later keys are in every row's future
                if window is not None:
                    k_lo = max(0, first - window + 1)  # earlier keys are behind every row's window
            ### END SOLUTION
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
                    ### BEGIN SOLUTION
                    blocked = key_pos > query_pos  # the future
                    if window is not None:
                        blocked |= key_pos <= query_pos - window  # query_pos - key_pos >= window: behind the window
                    ### END SOLUTION
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
    print(f"{number(name, '20s', 'ru')} по тайлам (тайл 7) против плотного: наибольшая |разность| {number(error, '.1e', 'ru')}")
    expect("error < 1e-12", error, "<", 1e-12)

# %% tags=["hide-input"]
# @title Крайние случаи tiled_attention: аргументы окна и стока, пустые строки и тайлы, float16, переполняющиеся смещения
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
print(f"входы float16: dtype {number(dense16.dtype, '', 'ru')} / {number(tiled16.dtype, '', 'ru')}, наибольшая |разность| "
      f"{number(np.abs(dense16 - tiled16).max(), '.1e', 'ru')}")
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
# @title Неверные входы отвергаются: проверки аргументов ячейки выше
expect_raises(FloatingPointError, tiled_attention, Q_over, K_over, np.ones((2, 1)), match="Q @ K^T overflowed");

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
print("декодирование с локальными позициями против правильного: наибольшая |разность| "
      f"{number(np.abs(local_positions - complete[5:6]).max(), '.2f', 'ru')} (должна быть большой)")
expect("not np.allclose(local_positions, sdpa(Qp[5:6], Kp[:6], Vp[:6]))", not np.allclose(local_positions, sdpa(Qp[5:6], Kp[:6], Vp[:6])))

# %% tags=["hide-input"]
# @title Крайние случаи потока с закэшированным префиксом: тайлы из 1, строки, которым нечего читать, пропущенные тайлы, которые никогда не читаются, граница памяти
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
report_section("Закэшированный префикс, декодирование кусками, окна, стоки, пустые тайлы, float16 и переполнение", globals())

# %% tags=["hide-input"]
# @title Неверные входы отвергаются: проверки аргументов ячейки выше
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
# @title Код рисования для рисунка ниже: plot_block_kinds (только matplotlib; читать необязательно)
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
    print(f"блоки 16 x 16, {number(name, '14s', 'ru')}: вычислено {number(int((kinds > 0).sum()), '3d', 'ru')} из {number(kinds.size, '', 'ru')}, из них замаскировано "
          f"{number(int((kinds == 1).sum()), '', 'ru')}")
REFERENCE.check("tiled.blocks_causal_2048_128", int((blocks_causal > 0).sum()))
show_figure(
    plot_block_kinds([(localized(LANGUAGE, "causal, 16 x 16 blocks", "каузальная, 16 x 16 блоков"), blocks_causal),
                      (localized(LANGUAGE, "window of 2 blocks", "окно в 2 блока"), blocks_window)], language=LANGUAGE),
    "Каждый квадрат\xa0— один блок матрицы оценок (128 x 128 при n = 2048): строки\xa0— блоки запросов, столбцы\xa0— блоки "
    "ключей. Серые блоки никогда не вычисляются, жёлтые, помеченные ×, пересекают границу маски и маскируются "
    "внутри, синие вычисляются вовсе без маски. Каузальное внимание пропускает почти половину блоков; окно "
    "пропускает все, кроме полосы.",
)
report_section("Внимание по тайлам", globals())

# %% tags=["hide-input"]
# @title Ручные проверки block_kinds: частичные блоки, тайлы из 1, одна строка запросов, тензор на входе
REFERENCE.check("tiled.blocks_window_256_2048_128", int((blocks_window > 0).sum()))
# By hand: a 5 x 3 causal mask in 2 x 2 blocks (the last row and column of blocks are partial): rows of blocks read
# [partly, skipped], [full, full], [full, full]. Tile 1 gives the mask itself; one query row gives one row of blocks.
expect("block_kinds(np.tri(5, 3, dtype=bool), 2)", block_kinds(np.tri(5, 3, dtype=bool), 2).tolist(), "==", [[1, 0], [2, 2], [2, 2]])
expect("block_kinds(np.tri(3, dtype=bool), 1)", block_kinds(np.tri(3, dtype=bool), 1).tolist(), "==", [[2, 0, 0], [2, 2, 0], [2, 2, 2]])
expect("block_kinds(np.ones((1, 5), dtype=bool), 2)", block_kinds(np.ones((1, 5), dtype=bool), 2).tolist(), "==", [[2, 2, 2]])
expect("a boolean tensor is read like the array", block_kinds(torch.from_numpy(np.tri(5, 3, dtype=bool)), 2).tolist(), "==", [[1, 0], [2, 2], [2, 2]])

# %% tags=["hide-input"]
# @title Неверные входы отвергаются: проверки аргументов ячейки выше
expect_raises(ValueError, block_kinds, np.isfinite(make_mask(8)), 0, match="tile")
expect_raises(TypeError, block_kinds, make_mask(8), 2, match="boolean")
expect_raises(ValueError, block_kinds, np.ones(4, dtype=bool), 2, match="non-empty [T_q, T_k]")
expect_raises(ValueError, block_kinds, np.ones((0, 4), dtype=bool), 2, match="non-empty [T_q, T_k]");


# %% [markdown]
# ### Шаг 4 · Обратный проход: тайлы вычисляются заново, на строку хранятся два числа
#
# **Идея.** Для обучения нужны градиенты функции потерь по $Q$, $K$ и $V$. Autograd на плотном
# внимании хранит веса $P$ размера $n \times n$ из прямого прохода, чтобы снова использовать их при
# обратном. FlashAttention хранит только выход $O$ и одно число на строку, log-sum-exp
# $\text{lse}_i = m_i + \log \ell_i$, и вычисляет каждый тайл оценок заново: $e^{S - \text{lse}}$ точно
# даёт веса прямого прохода. Единственное число на всю строку, которое нужно градиенту softmax,
# $D_i = \sum_j P_{ij}\, dP_{ij}$, равно $dO_i \cdot O_i$, так что оно берётся из сохранённого выхода без
# единой строки $P$. Обратный проход FlashAttention-2 ([Dao, 2023](https://arxiv.org/abs/2307.08691),
# алгоритм 2) ставит блоки ключей во внешний цикл: $dK$ и $dV$ блока ключей накапливаются на месте,
# а $dQ$ собирает по вкладу от каждого блока ключей.
#
# $$P = e^{S - \text{lse}}, \qquad dV = P^\top dO, \qquad dP = dO\, V^\top, \qquad D = \operatorname{rowsum}(dO \circ O)$$
#
# $$dS = P \circ (dP - D), \qquad dQ = \frac{dS\, K}{\sqrt{d_k}}, \qquad dK = \frac{dS^\top Q}{\sqrt{d_k}}$$
#
# | Обозначение | Смысл | Форма |
# |---|---|---|
# | $dO$ | градиент функции потерь по выходу | $T_q \times d_v$ |
# | $\text{lse}$ | log-sum-exp прямого прохода для каждой строки, $m + \log \ell$ (`lse`) | $T_q$ |
# | $D$ | $\operatorname{rowsum}(dO \circ O)$, равно $\operatorname{rowsum}(P \circ dP)$ | $T_q$ |
# | $dP$, $dS$ | градиенты по весам и оценкам одного тайла | $\tau \times \tau$ |
#
# **Вручную.** У запроса, который читает единственный ключ, $P = 1$ и $O = v$, поэтому
# $dS = dO \cdot v - dO \cdot O = 0$: весь свой градиент он отдаёт этому значению ($dV = dO$), а своему
# запросу и ключу — ничего. Первая строка каузального внимания — как раз такой запрос, и её $dQ$ равен нулю.

# %% tags=["hide-input"]
# @title Проверки аргументов измерительных инструментов и обратного прохода ниже (откройте, чтобы прочитать)
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
# Exercise 9 · Упражнение 9: Обратный проход в духе FlashAttention-2. По сохранённому выходу O, log-sum-exp каждой
# строки lse и приходящему градиенту dO верните (dQ, dK, dV). Вычислите D = rowsum(dO * O) один раз.
# Для каждого блока ключей (внешний цикл) и каждого блока запросов, который его читает (внутренний
# цикл), вычислите заново S = Q_b K_c^T / sqrt(d_k) (с -inf для ключей после запроса, если causal),
# P = exp(S - lse_b), затем dV_c += P^T dO_b, dP = dO_b V_c^T, dS = P * (dP - D_b), dQ_b += dS K_c / sqrt(d_k)
# и dK_c += dS^T Q_b / sqrt(d_k). Никогда не стройте массив T_q x T_k и не вызывайте autograd.
def tiled_attention_backward(Q, K, V, O, dO, lse, *, tile_size=128, causal=True):
    """Gradients of softmax attention from the saved output and log-sum-exp, over tiles: (dQ, dK, dV)."""
    Q, K, V, O, dO, lse, tile_size, causal = _backward_args(Q, K, V, O, dO, lse, tile_size, causal)
    ### BEGIN SOLUTION
    (n_q, d_k), n_k = Q.shape, len(K)
    scale = 1.0 / math.sqrt(d_k)
    D = (dO * O).sum(axis=1)  # (T_q,): rowsum(dO * O) = rowsum(P * dP), once for all tiles
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for k0 in range(0, n_k, tile_size):  # key blocks outside: their dK and dV stay local
        k1 = min(k0 + tile_size, n_k)
        K_c, V_c = K[k0:k1], V[k0:k1]
        for q0 in range(k0 if causal else 0, n_q, tile_size):  # causal: earlier query blocks never read these keys
            q1 = min(q0 + tile_size, n_q)
            s = Q[q0:q1] @ K_c.T * scale  # (B_q, B_k): the score tile, recomputed
            if causal and k1 - 1 > q0:
                s[np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None]] = -np.inf
            p = np.exp(s - lse[q0:q1, None])  # the forward's weights, exactly, from the saved log-sum-exp
            dV[k0:k1] += p.T @ dO[q0:q1]
            ds = p * (dO[q0:q1] @ V_c.T - D[q0:q1, None])  # dS = P * (dP - D)
            dQ[q0:q1] += ds @ K_c * scale
            dK[k0:k1] += ds.T @ Q[q0:q1] * scale
    return dQ, dK, dV
    ### END SOLUTION


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
print(f"обратный проход по тайлам против autograd на плотном внимании, n = {number(n_grad, '', 'ru')}: max |разность| {number(grad_error, '.1e', 'ru')}")
print(f"пик памяти обратного прохода по тайлам: {number(backward_peak / MIB, '.2f', 'ru')} МиБ; одна матрица {number(n_grad, '', 'ru')} x {number(n_grad, '', 'ru')} в "
      f"float64: {number(n_grad ** 2 * 8 / MIB, '.0f', 'ru')} МиБ")
expect("the tiled gradients equal autograd's to 1e-10", grad_error, "<", 1e-10)
expect("the tiled backward's peak, its three gradients included, is below an eighth of one T x T matrix", backward_peak, "<", n_grad**2 * 8 / 8)
expect("by hand: the first query reads one key, so its dQ is zero", float(np.abs(tiled_grads[0][0]).max()), "<", 1e-12)
report_section("Обратный проход по тайлам", globals())

# %% tags=["hide-input"]
# @title Неверные входы отвергаются: проверки аргументов двух ячеек выше
expect_raises(ValueError, tiled_logsumexp, Qg, Kg[:10], match="T_k >= T_q")
expect_raises(ValueError, tiled_attention_backward, Qg, Kg, Vg, Og, dOg, lse_g[:5], match="lse")
expect_raises(TypeError, tiled_attention_backward, Qg, Kg, Vg, Og, dOg, lse_g, causal=1, match="causal")
expect_close("tiled_logsumexp without a mask equals log-sum-exp of the whole score matrix", tiled_logsumexp(Qg[:9], Kg[:7], tile_size=3, causal=False),
             np.log(np.exp(Qg[:9] @ Kg[:7].T / math.sqrt(16)).sum(axis=1)));


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
# $$\text{полная матрица оценок} = n^2 \cdot b, \qquad \text{один тайл} = \tau^2 \cdot b, \qquad \frac{\text{матрица}}{\text{тайл}} = \left(\frac{n}{\tau}\right)^2$$
#
# | Обозначение | Смысл | Пример |
# |---|---|---|
# | $n$ | длина последовательности | 4096 или 8192 |
# | $\tau$ | размер тайла (`tile_size`) | 128 |
# | $b$ | байтов на оценку | 4 (float32) |
#
# **Вручную.** Во float32 одна матрица оценок $4096 \times 4096$ занимает $2^{12} \cdot 2^{12} \cdot 4 = 64$ МиБ
# на голову, $8192^2$ — 256 МиБ, а один тайл $128 \times 128$ — 64 КиБ: в 1024 и в 4096 раз
# меньше. Ниже мы измеряем реальные пики с помощью `tracemalloc` (NumPy сообщает ему о своих буферах)
# во float64, с учётом выхода.

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
    print(f"{number(key, '20s', 'ru')} {number(value / MIB, '8.3f', 'ru')} МиБ, {number(value // score_bytes['tile_128_fp32_bytes'], ',', 'ru')} тайлов")
print(f"{'n':>5} {'dense peak MiB':>15} {'tiled peak MiB':>15} {'dense / tiled':>14} {'tiled faster?':>14}")
for n, dense_bytes, tiled_bytes in zip(LENGTHS, memory["dense"], memory["tiled"]):
    verdict = ("yes" if faster[n] else "no") if n in faster else "-"
    print(f"{n:>5} {dense_bytes / MIB:>15.2f} {tiled_bytes / MIB:>15.2f} {dense_bytes / tiled_bytes:>14.0f} {verdict:>14}")
dense_growth = memory["dense"][-1] / memory["dense"][-2]
tiled_growth = memory["tiled"][-1] / memory["tiled"][-2]
print(f"от n = 512 до 1024: пик плотного x{number(dense_growth, '.1f', 'ru')}, пик по тайлам x{number(tiled_growth, '.1f', 'ru')}")
expect('memory["dense"][-1] > 10 * memory["tiled"][-1]', memory["dense"][-1], ">", 10 * memory["tiled"][-1])

# %% tags=["hide-input"]
# @title Размеры матрицы оценок против зафиксированного эталона и рост обоих пиков (проверено; откройте, чтобы прочитать)
for key, value in score_bytes.items():
    REFERENCE.check(f"score_matrix.{key}", value)
expect("dense_growth > 3.5", dense_growth, ">", 3.5)
expect("tiled_growth < 2.2", tiled_growth, "<", 2.2)


# %% tags=["hide-input"]
# @title Код рисования для рисунка ниже: plot_memory_vs_length (только matplotlib; читать необязательно)
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
    "Обе оси логарифмические, поэтому наклон линии\xa0— степень n. У плотного внимания (красное, сплошная линия, "
    "кружки) наклон 2: его пик учетверяется при удвоении n и лежит на высоте нескольких матриц n x n из float64 "
    "(пунктир). Внимание по тайлам (зелёное, штриховая линия, квадраты)\xa0— это выход, растущий как n, плюс буферы "
    "тайлов фиксированного размера, поэтому его наклон не больше 1 и при малых n ещё положе. Разрыв между красным "
    "и зелёным растёт с каждым удвоением.",
)
report_section("Память и скорость внимания по тайлам", globals())

# %% tags=["hide-input"]
# @title Два измерительных инструмента на заранее известных ответах: буфер в 1 МиБ и программируемые часы (здесь ничего не решает настенное время)
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
# **Скорость.** Последний столбец таблицы сравнивает лучшее из 3 замеров времени: версия по тайлам вычисляет
# примерно половину блоков (каузальная маска), кусками размером с кэш, поэтому на CPU она может обогнать
# плотное внимание на NumPy, несмотря на свой цикл на Python; столбец говорит, обогнала ли она в этом запуске.
# Время выполнения меняется от запуска к запуску и от машины к машине, поэтому ноутбук печатает только
# вердикт и ничего о нём не проверяет; замер в следующем подразделе печатает отношения.
#
# ### Чего не покажет NumPy: FlashAttention — это про иерархию памяти
#
# **Идея.** У GPU есть два вида памяти, которые здесь важны. **HBM** — большая память вне кристалла:
# у NVIDIA H100 SXM 80 ГБ HBM3 с пропускной способностью 3,35 ТБ/с. **SRAM** — маленькая память на
# кристалле рядом с арифметическими блоками: 228 КиБ разделяемой памяти на каждый потоковый
# мультипроцессор (NVIDIA пишет «228 КБ», имея в виду $228 \times 1024$ байт), а их 132, всего около 30 МБ.
# Между ними лежит общий для всех SM **кэш L2** на 50 МБ. Тензорные ядра выполняют 989 TFLOP/s в плотной
# 16-битной арифметике (1979 в спецификации предполагают разреженность 2:4)
# ([спецификация NVIDIA H100](https://www.nvidia.com/en-us/data-center/h100/) и
# [архитектура Hopper](https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/)).
# NVIDIA не публикует пропускную способность SRAM; статья о FlashAttention оценивает её примерно в 19 ТБ/с
# на A100 — на порядок выше, чем 1,5–2,0 ТБ/с у её HBM. Обычное внимание записывает
# оценки $n \times n$ в HBM, читает их обратно для softmax, записывает веса, читает их для
# $PV$: его ограничивает трафик HBM, а не арифметика. Вклад FlashAttention в том, чтобы сосчитать
# этот трафик (его *IO-сложность*) и сократить его, а не в том, чтобы делать меньше умножений.
#
# Статья ([Dao и др., 2022](https://arxiv.org/abs/2205.14135), теорема 2) оценивает трафик как
# $\Theta(nd + n^2)$ для стандартного внимания против $\Theta(n^2 d^2 / M_{\text{sram}})$ для FlashAttention.
# Θ скрывает константы, поэтому две Θ-оценки нельзя поделить друг на друга и получить «во столько-то раз меньше». Вместо этого
# мы считаем в числах, прочитанных из HBM или записанных в неё, каждую загрузку и запись, которые перечисляют два
# алгоритма статьи, для одной головы в прямом проходе, без маски и dropout. Алгоритм 1 — это порядок циклов
# FlashAttention-1: блоки ключей снаружи, блоки запросов внутри, а не тот порядок, которому учит раздел 7. Стандартное
# внимание (алгоритм 0 статьи) читает $Q$ и $K$, пишет $S$, читает $S$, пишет $P$, читает $P$ и $V$ и пишет $O$.
# FlashAttention (её алгоритм 1) инициализирует $O$, $\ell$ и $m$ в HBM, читает каждый блок ключей и значений один раз и
# для каждого из $T_c$ блоков ключей и значений читает целиком $Q$, $O$, $\ell$, $m$ и записывает $O$, $\ell$, $m$ обратно:
#
# $$\text{standard} = 4nd + 4n^2, \qquad \text{FlashAttention} = \underbrace{nd + 2n}_{\text{initialise}} + \underbrace{2nd}_{K,\,V} + T_c\,(3nd + 4n), \qquad \text{floor} = 4nd$$
#
# $$B_c = \left\lceil \frac{M_{\text{sram}}}{4d} \right\rceil, \qquad B_r = \min\left(B_c, d\right), \qquad T_c = \left\lceil \frac{n}{B_c} \right\rceil$$
#
# | Обозначение | Смысл | H100, 16 бит |
# |---|---|---|
# | $n$, $d$ | длина последовательности, размерность головы | 8192, 128 |
# | $M_{\text{sram}}$ | объём SRAM в числах (не маска) | 228 КиБ / 2 байта = 116 736 |
# | $B_c$, $B_r$ | размеры блоков ключей и запросов во FlashAttention ($\tau$ из раздела 7), выбранные так, чтобы $Q_b$, $K_c$, $V_c$ и $O$ помещались в $M_{\text{sram}}$ | 228, 128 |
# | $T_c$ | блоков ключей и значений, то есть проходов по $Q$ и $O$ | 36 |
# | минимум | прочитать $Q$, $K$, $V$ и записать $O$ один раз: ни один точный метод не передаёт меньше | $4nd$ |
#
# **Вручную.** При $n = 8192$: стандартное внимание передаёт $4 \cdot 8192 \cdot 128 + 4 \cdot 8192^2
# \approx 2{,}73 \times 10^8$ чисел; FlashAttention с $T_c = \lceil 8192 / 228 \rceil = 36$ проходами
# передаёт около $1{,}18 \times 10^8$: в 2,3 раза меньше, а не в $M_{\text{sram}} / d^2 \approx 7$, как подсказывает
# деление двух Θ-оценок. Для длинных входов отношение стремится к $M_{\text{sram}} / (3d^2) \approx 2{,}4$: каждый проход
# по $Q$ ещё и читает и пишет $O$, три числа на элемент запроса вместо одного. Оба счёта остаются
# выше минимума $4nd$, а преимущество FlashAttention растёт с $M_{\text{sram}}$ и уменьшается с ростом $d$.
#
# Историю завершают ещё три идеи. **Повторное вычисление** (recomputation): обратному проходу нужны веса
# внимания, но FlashAttention хранит только выход $O$ и две статистики каждой строки, максимум $m$ и сумму
# $\ell$, и заново вычисляет тайлы оценок из $Q$, $K$ и них, обменивая дешёвую арифметику на
# дорогой трафик HBM (раздел 3.1 статьи). **FlashAttention-2** ([Dao, 2023](https://arxiv.org/abs/2307.08691))
# хранит одно число на строку вместо двух, log-sum-exp $m + \log \ell$ (её раздел 3.1.1), и
# выносит блоки запросов во внешний цикл, так что $m$, $\ell$ и $O$ каждого блока остаются на кристалле, а
# деление на $\ell$ происходит один раз в конце — ровно порядок циклов из раздела 7, и примерно в 2 раза
# быстрее FlashAttention. **FlashAttention-3** ([Shah и др., 2024](https://arxiv.org/abs/2407.08608))
# нацелена на GPU Hopper (H100): она асинхронно совмещает перемещение данных с матричным умножением
# и добавляет FP8, что даёт скорость в 1,5–2,0 раза выше, чем у FlashAttention-2; FlashAttention-4 (ниже)
# делает то же для Blackwell, а PyTorch сам выбирает среди таких бэкендов (см. ниже).

# %% tags=["hide-input"]
# @title Код рисования для рисунка ниже: plot_hbm_accesses (только matplotlib; читать необязательно)
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
print(f"M_sram = {number(H100_SRAM_NUMBERS, ',', 'ru')} чисел, d = 128: B_c = {number(block_c, '', 'ru')}, B_r = {number(block_r, '', 'ru')}, T_c = "
      f"{number(math.ceil(8192 / block_c), '', 'ru')}")
print(f"n = 8192: стандартное {number(io_8k['standard'], '.3g', 'ru')} чисел, FlashAttention {number(io_8k['flash'], '.3g', 'ru')}, нижняя граница "
      f"{number(io_8k['floor'], '.3g', 'ru')}: в x{number(io_8k['standard'] / io_8k['flash'], '.2f', 'ru')} меньше; одни Θ-оценки дали бы x"
      f"{number(H100_SRAM_NUMBERS / 128 ** 2, '.1f', 'ru')}")
check_stated("B_c", block_c, 228, 0)
check_stated("the saving at n = 8,192 (x)", io_8k["standard"] / io_8k["flash"], 2.3, 1)
check_stated("the long-input limit M_sram / (3 d^2)", H100_SRAM_NUMBERS / (3 * 128**2), 2.4, 1);

# %% tags=["hide-input"]
# @title Подсчёт обращений к HBM вручную на крошечной задаче и проверка его аргументов
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
    "Обе оси логарифмические: каждый шаг вправо удваивает n, каждая линия сетки вверх умножает счёт на 10. Красное "
    "с кружками\xa0— стандартное внимание, где преобладают n² оценок, которые оно пишет в HBM и дважды читает "
    "обратно; синее с квадратами\xa0— FlashAttention, подсчитанное загрузка за загрузкой по алгоритму 1 из статьи с "
    "разделяемой памятью H100: в 2,3 раза меньше при n = 8192 для d = 128. Пунктирная серая линия\xa0— нижняя "
    "граница: прочитать входы и записать выход по одному разу; ни одна линия не опускается ниже неё. Обе линии "
    "внимания изгибаются к наклону 2, потому что этот подсчёт отправляет в HBM каждый проход по Q и O; крыша ниже "
    "показывает, почему настоящий H100 так не делает.",
)

# %% [markdown]
# **Порядок циклов из раздела 7 и кэш L2.** FlashAttention-2 ставит блоки запросов снаружи: каждый
# блок из $B_r$ запросов читается один раз, его выход и log-sum-exp записываются один раз, а мимо него
# проходят все блоки ключей и значений. Если считать только HBM, это значит перечитывать $K$ и $V$ на
# каждый блок запросов, $\lceil n / B_r \rceil$ раз. Но 132 SM одновременно работают над блоками запросов
# одной-двух голов, а $K$ и $V$ одной головы при $n = 8192$, $d = 128$ в 16 битах занимают 4 МБ — намного
# меньше 50 МБ кэша L2: после того как их прочитал первый блок запросов, остальные читают L2, а не HBM.
# **Крыша** (roofline) проверяет оба подсчёта. Ядру, которое выполняет $F$ FLOP и передаёт $Y$ байт, нужно
# не меньше $\max(F / \text{peak}, Y / \text{bandwidth})$ секунд; при измеренной скорости $F / t$ оно должно
# передавать $Y / t$ байт в секунду, и это не может превышать 3,35 ТБ/с HBM. FlashAttention-3 сообщает о
# до 740 TFLOP/s для своего 16-битного прямого прохода на H100 ([Shah и др., 2024](https://arxiv.org/abs/2407.08608), аннотация).
#
# $$F = 4 n^2 d, \qquad Y_{\text{HBM only}} = b\,(2nd + \lceil n / B_r \rceil \cdot 2nd) + 4n, \qquad Y_{\text{L2}} = b \cdot 4nd + 4n$$
#
# | Обозначение | Смысл | Здесь |
# |---|---|---|
# | $F$ | FLOP прямого прохода одной головы: $QK^\top$ и $PV$, по 2 на умножение со сложением, без маски | |
# | $Y$ | байт, переданных в HBM и из неё: $Q$ читается и $O$ пишется один раз, $K$ и $V$ — на каждый проход, lse в float32 на строку | |
# | $B_r$ | строк запросов в блоке | 128 |
# | $b$ | байт на число | 2 |
#
# Допущения модели, названные явно: прямой проход одной головы без маски; SM заканчивают блоки запросов
# головы, пока её $K$ и $V$ лежат в L2 (так и есть, когда они помещаются: здесь не больше 8 МБ на голову);
# за L2 больше никто не соревнуется; опубликованная скорость — лучшая, так что любому более медленному
# запуску нужна меньшая пропускная способность.

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
    print(f"n = {number(n, '>6,', 'ru')}: при 740 TFLOP/s только через HBM нужно {number(row['needs_hbm_only'] / 1000000000000.0, '4.2f', 'ru')} ТБ/с, с "
          f"L2\xa0— {number(row['needs_with_l2'] / 1000000000000.0, '4.2f', 'ru')} ТБ/с")
fa1_8k = 2 * attention_hbm_accesses(8_192, 128, H100_SRAM_NUMBERS)["flash"] / (4 * 8_192**2 * 128 / FA3_FORWARD_FLOPS_PER_S)
print(f"подсчёту FlashAttention-1 при n = 8192 нужно было бы {number(fa1_8k / 1000000000000.0, '.2f', 'ru')} ТБ/с; у H100 есть "
      f"{number(H100['hbm_bytes_per_s'] / 1000000000000.0, '.2f', 'ru')}")
expect("every plotted point needs no more bandwidth than the H100's 3.35 TB/s at the published 740 TFLOP/s",
       max(row["needs_with_l2"] for row in roofline.values()), "<=", H100["hbm_bytes_per_s"])


# %% tags=["hide-input"]
# @title Код рисунка ниже: plot_roofline (только matplotlib; читать необязательно)
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
    "Обе оси логарифмические. Серая линия\xa0— крыша H100: левее пунктирного оранжевого перегиба ядро ограничено "
    "пропускной способностью HBM (наклон), правее\xa0— тензорными ядрами (плоский верх). Синие точки, подписанные "
    "значением n, ставят опубликованные 740\xa0TFLOP/s FlashAttention-3 на арифметическую интенсивность порядка "
    "циклов FlashAttention-2, когда L2 хранит K и V каждой головы: каждая точка лежит под крышей. Если считать "
    "только HBM, тому же порядку циклов при n = 8192 понадобилось бы "
    f"{number(roofline[8192]['needs_hbm_only'] / 1000000000000.0, '.1f', 'ru')} ТБ/с (напечатано выше)\xa0— больше, чем есть у H100: "
    "эту работу делает L2.",
)


# %% [markdown]
# **После Hopper.** H200 — тот же кристалл Hopper со 141 ГБ HBM3e на 4,8 ТБ/с
# ([NVIDIA H200](https://www.nvidia.com/en-us/data-center/h200/)); у B200 (Blackwell) 180 ГБ HBM3e на
# 8 ТБ/с ([NVIDIA DGX B200](https://www.nvidia.com/en-us/data-center/dgx-b200/), на один GPU) и 2,25 PFLOP/s
# в плотной BF16, а его блоки экспонент и пропускная способность разделяемой памяти остались на уровне
# Hopper. **FlashAttention-4** (Zadouri, Hoehnerbach, Shah, Liu, Thakkar и Dao, март 2026,
# [пост авторов](https://www.together.ai/blog/flashattention-4)) обнаруживает, что на B200 прямой проход
# ограничен экспонентами softmax, а обратный — трафиком разделяемой памяти, а не HBM. Часть экспонент она
# вычисляет программно, многочленом на обычных блоках умножения со сложением, и пересчитывает текущие суммы
# только тогда, когда максимум строки вырос больше чем на порог, достигая до 1605 TFLOP/s в BF16 на B200
# (71% пика). Пересчитывать реже — точно: $u / \ell$ не зависит от того, относительно какого опорного $m$
# велись суммы, лишь бы ни одна не переполнилась. Эксперимент ниже считает пересчёты на одной длинной строке.

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
    print(f"порог {number(threshold, '3.0f', 'ru')}: пересчётов {number(rescales, '2d', 'ru')} из 63 возможных, |выход\xa0— точное| "
          f"{number(abs(output - exact_rising), '.1e', 'ru')}")
    expect(f"threshold {threshold:.0f}: exact at the end", abs(output - exact_rising), "<", 1e-12)
expect("a threshold of 8 rescales fewer times than 0", lazy_online_softmax(rising, row_values, 64, 8.0)[1], "<", lazy_online_softmax(rising, row_values, 64, 0.0)[1])

# %% tags=["hide-input"]
# @title Неверные входы отвергаются: проверки аргументов двух ячеек выше
expect_raises(ValueError, fa2_forward_bytes, 0, 128, match="n")
expect_raises(ValueError, lazy_online_softmax, rising, row_values, 64, 100.0, match="threshold")
expect("fa2_forward_bytes by hand: n = 4, d = 2, blocks of 2, 16-bit: 2*4*2*2 + 16 + 2 passes * 32 = 112", fa2_forward_bytes(4, 2, block_rows=2), "==", 112)


# %% [markdown]
# **Измерено здесь: куда уходит время на CPU.** Следующая ячейка замеряет время `tiled_attention` из
# ноутбука на NumPy против собственной `F.scaled_dot_product_attention` из PyTorch на том же каузальном
# входе во float64, по одному разу для каждого бэкенда CPU, выбранного через `torch.nn.attention.sdpa_kernel`
# (torch 2.3 и новее; на CPU есть ядро *math* и ядро *flash*), а также против двух одних только
# матричных произведений, $QK^\top$ и $PV$, которых не избежать ни одному точному методу. Произведения
# вычисляются каузально, на тех же блоках запросов, что и тайлы: каждый блок читает только ключи до своего
# последнего запроса включительно, так что они делают ровно ту работу, которую каузальное ядро не может пропустить.
# Ячейка работает сама по себе в Colab и занимает около секунды. Читайте последний столбец как «во сколько раз
# тайлы на NumPy медленнее» каждой строки, а последнюю строку — как долю времени тайлов, которую занимают
# два произведения; остальное — экспоненты, маскирование и учёт на каждом тайле. Какой бэкенд выигрывает
# и насколько, меняется от машины к машине и от запуска к запуску (на загруженной машине — сильнее, чем
# различаются строки), поэтому ячейка печатает отношения и ничего о них не проверяет.

# %% tags=["hide-input"]
# @title Вспомогательные функции замера бэкендов: проверки аргументов и каузальные произведения, которые он замеряет (откройте, чтобы прочитать)
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
        print(f"в torch {number(torch.__version__, '', 'ru')} нет torch.nn.attention.sdpa_kernel (выбора ядра внимания); замеряется только "
              "выбор по умолчанию")
        return times
    for name in ("MATH", "FLASH_ATTENTION"):
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                times[f"torch SDPA, {name.lower()} kernel"] = best_seconds(torch_sdpa, repeats=repeats)
        except RuntimeError as exc:  # a backend that cannot run this input says so
            print(f"ядро {number(name.lower(), '', 'ru')} здесь недоступно: {number(str(exc).splitlines()[0], '', 'ru')}")
    return times


backend_times = time_attention_backends(n=512, d=64, tile_size=128, repeats=3)
tiled_seconds = backend_times["NumPy tiled_attention"]
for name, seconds in backend_times.items():
    print(f"время: {number(name, '34s', 'ru')} {number(1000 * seconds, '8.2f', 'ru')} мс   тайлы NumPy / это = {number(tiled_seconds / seconds, '5.2f', 'ru')}")  # "time:" lines vary run to run
print(f"время: два каузальных произведения занимают {number(backend_times['two causal matmuls (NumPy)'] / tiled_seconds, '.0%', 'ru')} "
      "времени тайлов NumPy")

# %% tags=["hide-input"]
# @title Замер бэкенда на наименьшем входе, каузальные произведения на небольшом и входы, которые он отвергает
if not all(math.isfinite(t) and t > 0 for t in backend_times.values()):
    raise ValueError(f"every timing must be a positive number of seconds; got {backend_times}")
print("Иерархия памяти и замеры бэкендов: ПРОЙДЕНО")
Q5, K5, V5 = (np.random.default_rng(5).standard_normal((5, 3)) for _ in range(3))
reads = np.arange(5)[None, :] < np.minimum((np.arange(5) // 2 + 1) * 2, 5)[:, None]  # query i's block of 2 reads keys up to its end
expect_close("the causal products in blocks of 2 equal (Q K^T restricted to each block's keys) V", _causal_block_products(Q5, K5, V5, 2), ((Q5 @ K5.T) * reads) @ V5)
expect("the smallest timing, one token of width 1, runs", len(time_attention_backends(n=1, d=1, tile_size=1, repeats=1, seed=0)), ">=", 3)
expect_raises(ValueError, time_attention_backends, n=0, d=8, tile_size=4, repeats=1, match="n must be at least 1")
expect_raises(ValueError, time_attention_backends, n=8, d=0, tile_size=4, repeats=1, match="d must be at least 1")
expect_raises(ValueError, time_attention_backends, n=TIMING_MAX_N + 1, d=8, tile_size=4, repeats=1, match="n must be at most")
expect_raises(ValueError, time_attention_backends, n=8, d=8, tile_size=4, repeats=1, seed=-1, match="seed");

# %% [markdown]
# ### На практике: кэши, которые вам встретятся
#
# | Что построено в этом модуле | Hugging Face `transformers` | vLLM |
# |---|---|---|
# | Растущий кэш полного внимания (раздел 1) | `DynamicCache`, по умолчанию: тензоры растут конкатенацией | страничные блоки, см. ниже |
# | Заранее выделенный кэш фиксированной максимальной длины | `StaticCache`: фиксированные формы, поэтому `torch.compile` может захватить шаг декодирования | заранее выделенный пул блоков |
# | Скользящее окно в кольцевом буфере (модуль 5.2, раздел 9) | скользящие слои внутри `DynamicCache` / `StaticCache` (прежде `SlidingWindowCache`), их используют Mistral v0.1 и локальные слои Gemma | освобождение блоков по скользящему окну |
# | Гибрид оконных и полных слоёв (gpt-oss, Gemma 3) | один кэш с типом слоя для каждого слоя (прежде `HybridCache`) | группы блоков по типам слоёв |
# | Квантование по мотивам KIVI (модуль 5.2, раздел 14) | `QuantizedCache` (`nbits`, `axis_key`, `axis_value`, `q_group_size`, `residual_length`): и ключи, и значения квантуются поканально группами по `q_group_size` (по умолчанию 64), что, как отмечает его docstring, отличается от значений по токенам в статье KIVI; `residual_length` (по умолчанию 128) хранит самые свежие токены в полной точности, как и KIVI | KV-кэш в FP8 (`kv_cache_dtype`) |
# | Состояния SSM или DeltaNet (модуль 5.2, раздел 12) | кэши под конкретную модель, хранящие состояния свёртки и рекуррентные состояния | блоки состояний для гибридных моделей |
#
# (Названия классов взяты из [руководства transformers по KV-кэшу](https://huggingface.co/docs/transformers/main/kv_cache); аргументы и docstring `QuantizedCache` — из файла `cache_utils.py` в transformers.)
# **Страничное внимание vLLM** (paged attention, [Kwon и др., 2023](https://arxiv.org/abs/2309.06180)) хранит кэш в блоках
# фиксированного размера, как страницы виртуальной памяти. У каждой последовательности есть *таблица блоков*: логический блок $i$
# последовательности лежит в физическом блоке `table[i]` одного общего пула. Последовательность теряет не больше одного частично
# заполненного блока, а последовательности с общим промптом могут указывать на одни и те же физические блоки. Раздел 9 строит такой
# кэш и декодирует через него обученную модель.

# %% [markdown]
# **На практике: кэширование префиксов.** Многие запросы начинаются с одних и тех же токенов: системного промпта,
# шаблона с примерами, длинного документа, о котором задают несколько вопросов, предыдущих реплик диалога. Их
# ключи и значения тоже одинаковы, поэтому серверы их сохраняют. *Автоматическое кэширование префиксов* в vLLM
# (`enable_prefix_caching=True`) именует каждый заполненный блок страничного кэша хешем его токенов и
# всех токенов перед ним, и новый запрос, у которого хеши префикса совпали, переиспользует эти физические блоки
# вместо того, чтобы вычислять их заново ([заметки о дизайне vLLM](https://docs.vllm.ai/en/latest/design/prefix_caching/)).
# Движок V1 в vLLM включает кэширование префиксов по умолчанию ([анонс vLLM V1](https://blog.vllm.ai/2025/01/27/v1-alpha-release.html), январь 2025).
# *RadixAttention* в SGLang хранит закэшированные префиксы всех запросов в радиксном дереве, вытесняя
# дольше всех не использованные; её версия 2024 года сообщает о пропускной способности до 6,4 раза выше, чем у других
# систем вывода, на программах из многих вызовов LLM ([Zheng и др., 2024](https://arxiv.org/abs/2312.07104); первая версия
# декабря 2023 года говорила «до 5 раз»). Ни то, ни другое не меняет ни одного выхода:
# переиспользованные ключи и значения в точности те, что дало бы повторное вычисление, — именно поэтому
# ячейка раздела 7, которая обрабатывает закэшированный префикс с `query_start`, возвращает строки полного прохода.

# %% tags=["hide-input"]
# @title Итоговая модель модуля 3, встроенная из своего единственного источника (builder/contracts/capstone.py; читать необязательно)
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
# ## 9. Обученная модель: страничный кэш, который её декодирует, и усреднённые KV-головы
#
# **Идея.** До сих пор всё работало на случайных $Q$, $K$ и $V$. Здесь итоговая модель модуля 3 (RoPE,
# RMSNorm, SwiGLU, 2 слоя размерности 32 с 4 головами запросов и 4 KV-головами) в следующей ячейке учится
# задаче индукции (скопировать повторённую последовательность), а мы декодируем её через **страничный**
# KV-кэш в духе vLLM: пул физических блоков фиксированного размера, по таблице блоков на
# последовательность, блоки берутся по мере роста последовательности, общий для двух последовательностей
# промпт хранится один раз со счётчиком ссылок, а на первом токене, где они расходятся, блок
# **копируется при записи**. Страничный кэш или непрерывный — ключи и значения одни и те же числа, так что
# жадное декодирование обязано дать те же токены. Модель обучается здесь, а не загружается: чекпойнт был бы
# двоичным файлом, привязанным к одной версии torch, и ещё одной вещью, которую надо пересоздавать, а 200
# шагов занимают несколько секунд на CPU и показывают, как падают потери.
#
# | Обозначение | Смысл | Здесь |
# |---|---|---|
# | $B$ | ячеек в физическом блоке (`block_size`) | 4 |
# | `table[i]` | физический блок, в котором лежит логический блок $i$ последовательности | |
# | `refs[b]` | сколько последовательностей держат блок $b$; 0 значит «свободен» | |
# | ячейка токена $p$ | (`table[p // B]`, `p % B`) | токен 6 в (`table[1]`, 2) |
#
# **Вручную.** Промпт из 6 токенов заполняет блок 0 и половину блока 1. Вторая последовательность,
# ответвлённая от него, разделяет оба блока (счётчики 2). Её первый собственный токен, позиция 6, попал бы
# в общий блок 1, поэтому блок 1 сначала копируется в свободный блок, таблица новой последовательности
# указывает туда, и у каждого из двух блоков остаётся счётчик 1. Блок 0, полный и только читаемый, остаётся общим.

# %% tags=["training"]
# Trains the capstone model on the induction task: 200 AdamW steps, a few seconds on an idle CPU (a line every 50 steps).
CAPSTONE = CapstoneConfig(vocab=16, d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, d_ff=64, max_len=64)
capstone, capstone_losses = train_capstone(
    CAPSTONE, steps=200, seed=0, on_step=lambda t, loss: print(f"шаг {number(t, '', 'ru')}/200: потери {number(loss, '.3f', 'ru')}") if t % 50 == 0 else None,
)
capstone_accuracy = induction_accuracy(capstone)
print(f"точность индукции на отложенных данных: {number(capstone_accuracy, '.3f', 'ru')}")
expect("the trained model copies the repeated tokens", capstone_accuracy, ">", 0.95)


# %% tags=["hide-input"]
# @title Проверки аргументов страничного кэша, включая упражнение 10, и усреднённых KV-голов ниже (откройте, чтобы прочитать)
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
# Exercise 10 · Упражнение 10: Учёт страничного KV-кэша. В book лежат block_size, refs (счётчик ссылок на каждый
# физический блок, 0 = свободен), tables (последовательность -> её физические блоки) и lengths
# (последовательность -> число хранимых токенов). Зарезервируйте ячейки ещё для n_tokens токенов
# последовательности, по одному токену: токен p идёт в ячейку (table[p // block_size], p % block_size).
# Когда p % block_size == 0, добавьте свободный блок с наименьшим номером (счётчик 1). Иначе, если
# последний блок общий (счётчик > 1), сначала скопируйте его при записи: возьмите свободный блок с
# наименьшим номером, добавьте (старый, новый) в copies, поставьте новый в таблицу, перенесите одну ссылку
# со старого на новый. Если свободных блоков не хватает, вызовите ValueError, ничего не меняя. Верните
# (book, slots, copies).
def reserve_slots(book, sequence, n_tokens):
    """Slots for n_tokens more tokens of sequence in a paged KV cache: (the new book, slots, copies to make)."""
    n_tokens = _reserve_args(sequence, n_tokens)
    size, refs = book["block_size"], list(book["refs"])
    tables, lengths = {name: list(table) for name, table in book["tables"].items()}, dict(book["lengths"])
    ### BEGIN SOLUTION
    table, length = tables.setdefault(sequence, []), lengths.get(sequence, 0)
    shared_tail = length % size != 0 and refs[table[-1]] > 1  # the next token would write into a shared block
    needed = -(-(length + n_tokens) // size) - len(table) + shared_tail  # new blocks, plus one copy
    if needed > refs.count(0):
        raise ValueError(f"sequence {sequence!r} needs {needed} free blocks for {n_tokens} tokens, {refs.count(0)} are free; "
                         "release a finished sequence first")
    slots, copies = [], []
    for p in range(length, length + n_tokens):
        if p % size == 0:  # the last block is full (or there is none): take the lowest free block
            table.append(refs.index(0))
            refs[table[-1]] = 1
        elif refs[table[-1]] > 1:  # the first divergent token: copy the shared block before writing into it
            new = refs.index(0)
            copies.append((table[-1], new))
            refs[table[-1]], refs[new] = refs[table[-1]] - 1, 1
            table[-1] = new
        slots.append((table[-1], p % size))
    lengths[sequence] = length + n_tokens
    ### END SOLUTION
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
print(f"после ответвления: таблицы {number(paged.book['tables'], '', 'ru')}, счётчики {number(paged.book['refs'][:4], '', 'ru')}")
users = {"A": SHARED_PROMPT + [3], "B": SHARED_PROMPT + [9]}  # each user's own next token: the first divergent one
decoded = {name: paged_generate(capstone, paged, name, tokens, n_new=8) for name, tokens in users.items()}
contiguous = {name: generate(capstone, torch.tensor([tokens]), 8)[0].tolist() for name, tokens in users.items()}
for name in users:
    print(f"пользователь {number(name, '', 'ru')}: страничный {number(decoded[name][len(users[name]):], '', 'ru')}, непрерывный "
          f"{number(contiguous[name][len(users[name]):], '', 'ru')}")
print(f"таблицы блоков {number(paged.book['tables'], '', 'ru')}: блок 0 по-прежнему общий (счётчик {number(paged.book['refs'][0], '', 'ru')}), блок 1 "
      "скопирован при записи")
expect("paged decoding gives token for token what the contiguous cache gives", decoded, "==", contiguous)
expect("the shared prompt's full block is stored once", (paged.book["tables"]["A"][0], paged.book["refs"][0]), "==", (paged.book["tables"]["B"][0], 2))

# %% [markdown]
# **Потерянная память.** Непрерывный кэш заранее резервирует `max_len` позиций на последовательность, потому
# что не знает, какой длины будет ответ; страничный держит только целые блоки и теряет не больше $B - 1$
# ячеек на последовательность. Ячейка ниже обслуживает 8 запросов разной длины обоими способами и измеряет
# долю зарезервированных ячеек, в которых нет токена. Авторы vLLM измерили, что системы до него хранили
# состояния токенов лишь в 20,4%–38,2% памяти своего KV-кэша
# ([Kwon и др., 2023](https://arxiv.org/abs/2309.06180), рис. 2), то есть теряли от 61,8% до 79,6%.

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
print(f"8 запросов, токенов: {number(used // token_bytes, '', 'ru')}; непрерывный кэш резервирует ячеек: {number(reserved // token_bytes, '', 'ru')}, "
      f"страничный держит: {number(pool.slots_held(), '', 'ru')}")
print(f"потеряно: непрерывный {number(waste['contiguous'], '.1%', 'ru')}, страничный {number(waste['paged'], '.1%', 'ru')}; прежние системы из статьи о "
      "vLLM\xa0— от 61,8% до 79,6%")
expect("paging wastes at most block_size - 1 = 3 slots per request", pool.slots_held() - used // token_bytes, "<=", 3 * len(requests))


# %% [markdown]
# **Внимание с группировкой запросов на обученной модели.** Авторы GQA получают модель с меньшим числом
# KV-голов из многоголового чекпойнта, усредняя проекции ключей и значений голов каждой группы, а затем
# немного дообучают («uptraining», [Ainslie и др., 2023](https://arxiv.org/abs/2305.13245), раздел 2.1).
# Ниже мы усредняем 4 KV-головы обученной модели в 2 (GQA) и в 1 (MQA), измеряем, чего это стоит на
# отложенных батчах задачи индукции до всякого дообучения, рядом с байтами кэша, которые это экономит, а
# затем дообучаем модель с 2 головами на пятую часть исходного числа шагов.

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
    print(f"KV-голов: {number(groups, '', 'ru')}; точность {number(accuracy, '.3f', 'ru')}, потери {number(loss, '.3f', 'ru')} ната, кэш {number(nbytes, '', 'ru')} байт на токен")
expect("mean-pooling 4 K/V heads into 4 groups of one changes nothing", pool_kv_heads(capstone, 4)(torch.tensor([SHARED_PROMPT])).tolist(), "==",
       capstone(torch.tensor([SHARED_PROMPT])).tolist())

# %% tags=["training"]
# Uptrains the 2-head pooled model for 40 steps (a fifth of the original 200), about a second on an idle CPU.
uptrained = pool_kv_heads(capstone, 2)
fit_induction(uptrained, train_step, steps=40, seed=7, warmup=5, lr=3e-3)
uptrained_accuracy = induction_accuracy(uptrained)
print(f"2 KV-головы после 40 шагов дообучения: точность {number(uptrained_accuracy, '.3f', 'ru')}, потери "
      f"{number(induction_loss(uptrained), '.3f', 'ru')} ната")
expect("uptraining recovers most of what pooling cost", uptrained_accuracy, ">", (gqa_rows[2][0] + gqa_rows[4][0]) / 2)
report_section("Обученная модель: страничное декодирование и усреднённые головы", globals())

# %% tags=["hide-input"]
# @title Неверные входы отвергаются: проверки аргументов ячеек выше
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
# # Часть 3 · Таблица практика: каждый вариант, его числа и что ломается
#
# **Варианты** — от самого точного к самому компактному. Числа даны для сквозного примера с устройством
# как у Llama-3-8B (32 слоя, 8 KV-голов размерности 128, 16-битный кэш); ячейка после таблицы вычисляет каждое из них.
#
# | Вариант | Что он делает | Что он сохраняет | Чего он стоит | Где это выбирается |
# |---|---|---|---|---|
# | Полное внимание с группировкой запросов (GQA) | каждый токен читает все предыдущие токены; несколько голов запросов делят одну KV-голову | точное воспроизведение всего контекста | 128 КиБ на токен (512 КиБ при 32 KV-головах, 16 КиБ при одной, то есть MQA); 17,2 ГБ при 128k токенов | архитектура модели |
# | Скользящее окно, часто чередующееся с полными слоями | каждый токен читает последние $w$ токенов; глубина передаёт информацию дальше по эстафете | точное воспроизведение внутри окна, более слабое эстафетное — за его пределами | кэш, ограниченный $w$ токенами: 0,54 ГБ при $w$ = 4096 на любой длине | архитектура модели |
# | Стоки внимания плюс окно (StreamingLLM) | при обслуживании сохраняются несколько первых токенов и окно последних | связная потоковая генерация без ограничения длины; **никакого** воспроизведения вытесненных токенов | почти ничего; статья прогоняет потоком 4 миллиона токенов с ускорением до 22,2 раза по сравнению с пересчётом окна ([Xiao и др., 2023](https://arxiv.org/abs/2309.17453)) | сервер инференса |
# | Гибрид модели пространства состояний и внимания | большинство слоёв несут состояние фиксированного размера; несколько слоёв — внимание | точный поиск через слои внимания | 4 слоя внимания из 32 сокращают кэш на 128k с 17,2 ГБ до 2,15 ГБ | архитектура модели |
# | Чистая модель пространства состояний или линейное внимание | каждый слой хранит сводку фиксированного размера | связный длинный текст, более размытое точное воспроизведение | состояние, которое никогда не растёт: 4,2 МБ на весь стек из 32 слоёв в игрушечном соглашении этого модуля (4096 каналов × 16 чисел на слой, 16 бит); настоящий слой Mamba той же размерности хранит больше чем вдвое больше — вдвое больше каналов и ещё состояние свёртки (модуль 5.2, раздел 12) | архитектура модели |
# | Латентный KV-кэш (MLA) | кэширует короткий латентный вектор на токен и восстанавливает из него ключи и значения | точные выходы по построению | 576 чисел на токен на слой вместо 32 768 для 128 голов размерности 128 (в 57 раз меньше; в 71 раз относительно реальных ключей размерности 192, раздел 5 здесь и раздел 13 модуля 5.2), плюс дополнительные матричные вычисления | архитектура модели |
# | Квантованный KV-кэш | хранит ключи и значения в 8 или 4 битах с одним масштабом на вектор | слегка округлённое внимание | в 3,9 раза меньше при 4 битах; ошибка выхода измеряется в модуле 5.2, раздел 14 | сервер инференса |
#
# Точного *потокового* внимания (FlashAttention) в таблице нет, потому что оно не меняет размер ни одного из
# счетов: оно вычисляет те же числа по тайлам, так что матрица оценок $n \times n$ никогда не существует
# в памяти целиком. Вы построите его в разделах 6–8 и докажете, что оно точное.
#
# **Что ломается.**
#
# - *Факт оказался за пределами окна.* У Mistral 7B v0.1 32 слоя с окном $W$ = 4096 в соглашении её
#   статьи: позиция $i$ читает позиции от $i - W$ до $i$, то есть 4097 ключей вместе с собственным, и каждый
#   слой передаёт информацию на 4096 позиций дальше. Поэтому токен может почувствовать другой токен на
#   131 072 = 32 × 4096 позиций назад, но только по эстафете через много переходов; факту на 100 000 токенов
#   назад нужно не меньше 25 таких переходов. Не ждите точной цитаты из-за пределов окна. К тому же
#   100 000 токенов лежат далеко за пределами контекста 8K, на котором обучалась v0.1, так что такая
#   дальность — это то, что допускает схема связей, а не то, чем модель научилась пользоваться. (Более поздние
#   версии Mistral 7B отказались от окна; gpt-oss считает своё окно в 128 токенов наоборот — текущий токен
#   входит в эти 128.)
# - *Простое окно отбрасывает первые токены, и модель разваливается.* Обученные модели складывают массу
#   внимания на первые токены (стоки внимания); сохраняйте их при вытеснении.
# - *Вытеснен — значит, пропал.* Стоки плюс окно дают связный поток, но не могут воспроизвести токен,
#   покинувший окно.
# - *Состояние фиксированного размера не умеет копировать.* Слои моделей пространства состояний и линейного
#   внимания воспроизводят конкретный далёкий токен хуже, чем внимание; оставляйте слои внимания для поиска.
# - *Разреженный шаблон, который не экономит времени.* Пропущенные пары экономят работу, только если
#   пропускаются целые блоки матрицы оценок; раздел 8 измеряет, что даёт пропуск.
# - *Квантованный кэш, который меняет ответы.* В ключах есть несколько больших каналов; один масштаб на
#   токен тратит коды на них. Квантуйте ключи поканально, а значения — по токенам (KIVI, модуль 5.2, раздел 14).
#
# **Выигрыши, о которых сообщают статьи** (каждый — из аннотации статьи): Mamba — в 5 раз бо́льшая пропускная
# способность *генерации*, чем у трансформера того же размера ([Gu и Dao, 2023](https://arxiv.org/abs/2312.00752));
# DeepSeek-V2 — KV-кэш на 93,3% меньше и в 5,76 раза бо́льшая максимальная пропускная способность генерации, чем у
# **DeepSeek 67B**, её плотной предшественницы (95 слоёв, 8 KV-голов), а не у MHA-двойника, причём кэш V2
# к тому же хранится примерно в 6 битах на число ([DeepSeek-AI, 2024](https://arxiv.org/abs/2405.04434), раздел 3.2.3);
# Jamba — контекст в 256K токенов ([Lieber и др., 2024](https://arxiv.org/abs/2403.19887)), из которых
# до 140K токенов помещаются на одну GPU с 80 ГБ; эта цифра взята из
# [карточки модели Jamba-v0.1](https://huggingface.co/ai21labs/Jamba-v0.1), а не из аннотации статьи.

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
# @title Остальные числа таблицы против текста и зафиксированного эталона (проверено; откройте, чтобы прочитать)
expect('round(guide["cache at 128k tokens (GB)"], 1) == 17.2', round(guide["cache at 128k tokens (GB)"], 1), "==", 17.2)
expect('round(guide["hybrid 4 attention + 28 SSM layers at 128k (GB)"], 2) == 2.15', round(guide["hybrid 4 attention + 28 SSM layers at 128k (GB)"], 2), "==", 2.15)
expect('round(guide["latent saving (x)"]) == 57', round(guide["latent saving (x)"]), "==", 57)
expect('round(guide["4-bit cache saving (x)"], 1) == 3.9', round(guide["4-bit cache saving (x)"], 1), "==", 3.9)
REFERENCE.check("running_example.bytes_per_token", per_token)
REFERENCE.check("window.mistral_v0_1_reach", guide["Mistral 7B v0.1 reach (tokens), i reads i - 4,096 .. i"]);

# %% [markdown]
# ## За 20 секунд
#
# - Длинный контекст выставляет два счёта: оценки растут как $n^2$ (вычисления), KV-кэш — как $n$ (память,
#   на каждый слой, на каждый диалог). Число слоёв, KV-голов, размерность головы и окна из карточки модели
#   точно определяют размер кэша: 128 КиБ на токен
#   в сквозном примере — это 137 ГБ при 1M токенов, больше одного GPU на 80 ГБ.
# - Тайловое потоковое внимание (онлайн-softmax по блокам) даёт *те же* выходы, что и плотное
#   внимание, пропускает блоки, которые опустошает каузальная маска или окно, и держит память линейной по $n$.
# - Его обратный проход хранит только $O$ и один log-sum-exp на строку и вычисляет тайлы заново; страничный
#   кэш хранит те же ключи и значения в блоках, так что декодирование совпадает токен в токен, а частично
#   пустым остаётся лишь последний блок последовательности.
#
# ## Самопроверка
#
# Попробуйте ответить на каждый вопрос, прежде чем открывать ответ. Числовые ответы пересчитывает ячейка ниже.
#
# 1. **Почему при удвоении контекста работа по вычислению оценок вырастает вчетверо, а кэш — только вдвое?**
#
#    <details><summary>Ответ</summary>Каждый запрос сравнивается с каждым ключом — это таблица n × n; кэш же хранит по одному ключу и одному значению на токен — список, который с каждым токеном удлиняется на одну запись.</details>
#
# 2. **У gpt-oss-120b 36 слоёв, 8 KV-голов размерности 64 и окно в 128 токенов в половине слоёв. Что кэширует диалог длиной 128k токенов и почему это не 9 ГиБ?**
#
#    <details><summary>Ответ</summary>Около 4,5 ГиБ: растут только 18 полных слоёв (2048 байт на слой на токен, всего 36 КиБ на токен); 18 оконных слоёв хранят по 128 токенов каждый, всего 4,5 МиБ.</details>
#
# 3. **Куда попадает логит стока в gpt-oss и что он делает со строкой? Как он связан с токенами-стоками StreamingLLM?**
#
#    <details><summary>Ответ</summary>В знаменатель softmax, по одному на каждую голову запросов, с нулевым вектором значения. Он забирает себе долю вероятности (53,69% против 128 ключей с оценкой 0, когда сток равен 5) и уменьшает вес каждого токена в одно и то же число раз. Первые токены в StreamingLLM играют ту же роль в модели, обученной без такого логита: и то и другое даёт строке место, куда сбросить массу, которую она не хочет тратить.</details>
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
# **Числовые вопросы.**
#
# 7. **Сколько байт на токен стоит 16-битный KV-кэш Llama-3.3-70B (80 слоёв, 8 KV-голов размерности 128)?**
#
#    <details><summary>Ответ</summary>327 680 байт, 320 КиБ</details>
#
# 8. **Сколько тайлов оценок вычисляет каузальное тайловое внимание при n = 2048 и тайлах размера 128?**
#
#    <details><summary>Ответ</summary>136 из 256</details>

# %%
# The numeric self-test answers, recomputed: a wrong answer in the text above stops here.
self_test_answers = {
    "Llama-3.3-70B bytes per token": (kv_bytes_per_token(80, 8, 128), 327_680),
    "causal tiles, n = 2,048, B = 128": (sum(1 for b in range(16) for c in range(16) if c <= b), 136),
}
for question, (computed, stated) in self_test_answers.items():
    print(f"{number(question, '45s', 'ru')} вычислено {number(computed, '>15,', 'ru')}   заявлено {number(stated, '>15,', 'ru')}")
    if computed != stated:
        raise ValueError(f"self-test answer '{question}': the text says {stated:,}, the cell computes {computed:,}")
print(f"Самопроверка: пересчитано числовых ответов: {number(len(self_test_answers), '', 'ru')}: ПРОЙДЕНО")

# %% [markdown]
# ## Статьи, на которых основан этот модуль
#
# - Vaswani и др., *Attention Is All You Need* (2017): https://arxiv.org/abs/1706.03762 (базовая модель: 8 голов размерности 64)
# - Milakov и Gimelshein, *Online normalizer calculation for softmax* (2018): https://arxiv.org/abs/1805.02867
# - Dao и др., *FlashAttention* (2022): https://arxiv.org/abs/2205.14135; Dao, *FlashAttention-2* (2023): https://arxiv.org/abs/2307.08691
# - Shah и др., *FlashAttention-3* (2024): https://arxiv.org/abs/2407.08608; Zadouri и др., *FlashAttention-4* (2026), пост авторов: https://www.together.ai/blog/flashattention-4
# - Su и др., *RoFormer: Enhanced Transformer with Rotary Position Embedding* (RoPE, 2021): https://arxiv.org/abs/2104.09864
# - Shazeer, *Fast Transformer Decoding: One Write-Head is All You Need* (MQA, 2019): https://arxiv.org/abs/1911.02150
# - Ainslie и др., *GQA* (2023): https://arxiv.org/abs/2305.13245
# - Xiao и др., *Efficient Streaming Language Models with Attention Sinks* (2023): https://arxiv.org/abs/2309.17453
# - OpenAI, *gpt-oss-120b and gpt-oss-20b Model Card* (2025): https://arxiv.org/abs/2508.10925
# - DeepSeek-AI, *DeepSeek-V2* (2024): https://arxiv.org/abs/2405.04434; *DeepSeek-V3* (2024): https://arxiv.org/abs/2412.19437
# - Kwon и др., *PagedAttention / vLLM* (2023): https://arxiv.org/abs/2309.06180 (пропускная способность в 2–4 раза выше при той же задержке, что у FasterTransformer и Orca)
# - Zheng и др., *SGLang: Efficient Execution of Structured Language Model Programs* (RadixAttention, 2024): https://arxiv.org/abs/2312.07104
# - Hsieh и др., *RULER* (2024, версия COLM): https://arxiv.org/abs/2404.06654; Liu и др., *Lost in the Middle* (2023): https://arxiv.org/abs/2307.03172

# %%
print(f"версия схемы эталона {number(REFERENCE.value('schema_version'), '', 'ru')}")
report_references(globals())
exercise_summary(globals())
report_section("Модуль 5.1", globals())

# %% [markdown]
# ## Словарь терминов
#
# Один термин, одно название: так термины курса переводятся во всех модулях.
#
# | English | Русский | Примечание |
# |---|---|---|
# | ablation | абляция | |
# | attention | внимание | |
# | bit width | разрядность | |
# | cache | кэш | |
# | causal | каузальный | |
# | checkpoint | чекпойнт | |
# | context | контекст | |
# | contract | контракт | |
# | cross-attention | перекрёстное внимание | запросы одной последовательности читают ключи другой |
# | cross-entropy | кросс-энтропия | |
# | decoder | декодер | |
# | embedding | эмбеддинг | |
# | exercise | упражнение | |
# | feed-forward network, FFN | сеть прямого распространения (FFN) | |
# | gradient | градиент | |
# | grouped-query attention | внимание с группировкой запросов (GQA) | |
# | head | голова | |
# | K/V head, KV head | KV-голова | голова ключей и значений; в GQA и MQA их меньше, чем голов запросов |
# | K/V projection | KV-проекция | |
# | key | ключ | |
# | KV cache | KV-кэш | |
# | latent | латентный | |
# | layer | слой | |
# | LayerNorm | LayerNorm | |
# | linear attention | линейное внимание | |
# | logit | логит | |
# | mask | маска | |
# | multi-head attention | многоголовое внимание | |
# | multi-query attention | внимание с одной KV-головой (MQA) | все головы запросов делят одну KV-голову |
# | nats | наты | |
# | parallel scan | параллельное сканирование | |
# | perplexity | перплексия | |
# | positional encoding | позиционное кодирование | |
# | prefill | префилл | первый прямой проход по промпту |
# | quantization | квантование | |
# | query | запрос | |
# | recall | воспроизведение | метрика recall: полнота |
# | reference solution | эталонное решение | |
# | residual | остаточная связь | |
# | self-attention | самовнимание | |
# | sink | сток | |
# | sliding window | скользящее окно | |
# | softmax | softmax | |
# | sparse attention | разреженное внимание | |
# | state-space model | модель пространства состояний | |
# | symbol | обозначение | |
# | temperature | температура | |
# | throughput | пропускная способность | |
# | tile | тайл | |
# | token | токен | |
# | trade-off | компромисс | |
# | value | значение | |
# | width | размерность | d, d_k, d_head: размерность модели, головы, запроса |
# | window | окно | |
