# %% [markdown]
# <!-- builder:begin header -->
# # Module 5 · Modern Attention Mechanisms
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/module5_modern_attention.ipynb)
#
# *Provenance: course builder 0.1.0; reference `references/module5.json`, SHA-256 `54c2e1384bfcba2250ab318e9cb5e0e762949444fdab169a52cab6133e172935`.*
# <!-- builder:end sha256=2c68fe7ea2e7c700a56768a748f16c89b4476a00b9a1cab2e22cc5a1f4988fbb -->

# %% [markdown]
# **How to run this notebook.** Use *Runtime → Run all*. A CPU runtime is enough. The first
# code cell installs only what is missing, and on Colab that is nothing. Every section ends
# with a check that stops the notebook loudly if a number is wrong.

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
from torch import nn

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
# builder:end sha256=df2f8fe5995106711c976ee14f763ec5c0e3bbd6affb437bf52d8a7c90a8f39d
# builder:begin inline Reference
class Reference:
    """Frozen reference values that remember which ones this notebook has used or checked."""

    def __init__(self, data, source):
        self._data = data
        self.source = source
        self._used = set()

    def _lookup(self, path):
        node = self._data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"{self.source} has no value at {path!r}")
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
# builder:end sha256=a75a019675d94719513f71c9000c39b76d3d0f64a8ed47ea725d02f46502a00a
# builder:begin inline load_reference
def load_reference(json_text, expected_sha256, source):
    """Verify the embedded JSON against its SHA-256, then wrap it as a ``Reference``."""
    import json

    verify_sha256(json_text, expected_sha256, f"the embedded {source}")
    return Reference(json.loads(json_text), source)
# builder:end sha256=0061ffa86fd4d809348099c915727b39e6fdaebd397b90e1e3be85304120014c
# builder:begin reference module5
REFERENCE_SOURCE = "references/module5.json"
REFERENCE_SHA256 = "54c2e1384bfcba2250ab318e9cb5e0e762949444fdab169a52cab6133e172935"
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
  "schema_version": 3,
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
    "mistral_v0_1_reach": 131040,
    "pairs_8_3": 21,
    "reach_3_3": 6
  }
}
"""
# builder:end sha256=a02a55dd7858fa48a9d8ac98df16be18c3c54cd84da19abe74f8ffe07bdeaab4

REFERENCE = load_reference(REFERENCE_JSON, REFERENCE_SHA256, REFERENCE_SOURCE)
print(f"{REFERENCE_SOURCE} verified: sha256 {REFERENCE_SHA256}")


# %% tags=["hide-input"]
# @title Setup 4 of 5: argument checks, the bad-input helper, the figure style and the exercise runner.
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
# builder:begin inline require_array
def require_array(name, value, *, ndim=None, min_ndim=None, finite=True):
    """Return ``value`` as a real NumPy array with the required rank, no empty axis and finite entries."""
    import numpy as np

    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}")
    array = np.asarray(value)
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
# builder:end sha256=52df8a3e12ab947bc2ce8c6ab254e433cd311bc4ee39e80a3a656ef55b487fbc
# builder:begin inline require_tensor
def require_tensor(name, value, *, ndim=None, min_ndim=None, floating=True, finite=True):
    """Return ``value`` when it is a torch.Tensor of the required rank, dtype kind and finiteness."""
    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}; convert with torch.as_tensor({name})")
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
# builder:end sha256=c2c1c717773909b236aa0fc018e953adc9b6df840ee7b53c3364098a782759e1
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
# builder:end sha256=82a0b562fbc4e0f415c7324bd30a93fcd0ddd085e6ee928ef9953bda5d0f61b4
# builder:begin inline localized
def localized(language, en, ru):
    """Pick the English or the Russian text of a label."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    return en if language == "en" else ru
# builder:end sha256=5ba33b2629b6677ddc302d4fd950a0a00da69545901ef85d69b19898e728ed93
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
        fig.savefig(buffer, format="png", metadata={"Software": None})
        display(Image(data=buffer.getvalue()), metadata={"image/png": {"alt": caption}})
        display(Markdown(f"*{caption}*"))
    plt.close(fig)
# builder:end sha256=6668a0d22303bdf7b7a031bb62ab1a0e73d1fcf962e02e3a02fd670a746cbfa3
# builder:begin inline check_exercise
def check_exercise(label, contract, implementation, namespace):
    """Judge one exercise with its contract check and print the verdict.

    When the exercise is still a stub (it raises NotImplementedError) and the student edition
    holds a reference solution for ``label`` in ``REFERENCE_SOLUTIONS``, the reference takes the
    stub's place in ``namespace`` so that later cells keep working, and the NotImplementedError
    is raised again with that news.
    """
    name = getattr(implementation, "__name__", repr(implementation))
    try:
        summary = contract(implementation)
    except NotImplementedError:
        reference = namespace.get("REFERENCE_SOLUTIONS", {}).get(label)
        if reference is None:
            raise
        namespace.update(reference)
        raise NotImplementedError(
            f"{label}: {name} is still a stub. Later cells now use the reference solution so you can "
            f"keep going; come back, replace the stub, and rerun this cell."
        ) from None
    print(f"{label}: PASS, every contract property of {name} holds")
    return summary
# builder:end sha256=a447f9ef66cef8f106dabec5f5ae2b664f1bd67cff9f4d09f6c68b0dbbf9811d

apply_plot_style()
np.set_printoptions(precision=4, suppress=True)
KIB, MIB, GIB = 2**10, 2**20, 2**30  # binary units: KiB, MiB, GiB
GB = 10**9  # decimal gigabytes, as GPU memory is sold
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
# builder:end sha256=41a2ad7d38fc2d8f84d10252824c7e6ec177a32f3adaf826d32e0fb10eadc772
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

    want = as_array(expected)
    try:
        got = as_array(actual)
    except (TypeError, ValueError, AttributeError, RuntimeError):
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
# builder:end sha256=9ea8ce2c3ff640a5d2c25c99c4a35bf9045ee0209b1fee9a135b93ad6af78901
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
                "mask bias" in str(exc), "an overflowing finite bias is rejected with a message about the mask bias",
                f"score {sign * 0.75:+} * float32 max plus a bias of the same sign", "a message that mentions 'mask bias'",
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
# builder:end sha256=33c650fba0251fae18ddf2009f6f562f22a0903dd80bb76eab0d2f9ab4fd32c1
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
    for window in (1, 3, 4, 11, 20):
        case = f"Q, K [11 tokens, d_k=4], V [11, 3], window={window}"
        prop = "any window of at least 1 is accepted"
        outputs, largest = contract_parts(prop, case, contract_call(
            prop, case, "a window longer than the sequence simply never fills", rolling_window_decode, Q, K, V, window,
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
# builder:end sha256=63f9a4acb2bba74241ca29a40119220bd9e806b5737e0f90ae818ab7816f07e2
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
# **The options**, from the most exact to the most compact. The numbers are for a running
# example shaped like Llama-3-8B (32 layers, 8 KV heads of width 128, 16-bit cache); the cell
# after the table computes every one of them.
#
# | Option | What it does | What it keeps | What it costs | Where you choose it |
# |---|---|---|---|---|
# | Full attention, grouped-query heads (GQA) | every token reads every earlier token; several query heads share one KV head | exact recall of the whole context | 128 KiB per token (512 KiB with 32 KV heads); 17.2 GB at 128k tokens | the model's architecture |
# | Sliding window, often interleaved with full layers | each token reads the last $w$ tokens; depth relays information further | exact recall inside the window, weaker relayed recall beyond it | a cache capped at $w$ tokens: 0.54 GB for $w$ = 4,096 at any length | the model's architecture |
# | Attention sinks plus a window (StreamingLLM) | keep the first few tokens and a recent window at serving time | fluent streaming without a length limit; **no** recall of evicted tokens | almost nothing; the paper streams 4 million tokens with up to 22.2x speedup over recomputing a window ([Xiao et al., 2023](https://arxiv.org/abs/2309.17453)) | the inference server |
# | Hybrid state-space + attention | most layers carry a fixed-size state; a few are attention | exact lookup through the attention layers | 4 attention layers in 32 cut the 128k cache from 17.2 GB to 2.15 GB | the model's architecture |
# | Pure state-space or linear attention | every layer keeps a fixed-size summary | fluent long text, blurrier exact recall | a state that never grows: 4.2 MB for the whole 32-layer stack | the model's architecture |
# | Latent KV cache (MLA) | caches a short latent per token and rebuilds keys and values from it | exact outputs by construction | 576 numbers per token per layer instead of 32,768 for 128 heads of width 128 (57x fewer; 71x against the real 192-wide keys, sections 5 and 13), plus extra matrix work | the model's architecture |
# | Quantized KV cache | stores keys and values with 8 or 4 bits and one scale per vector | slightly rounded attention | 3.9x smaller at 4 bits; the output error is measured in section 14 | the inference server |
#
# Exact *streaming* attention (FlashAttention) is not in the table because it changes neither
# bill's size: it computes the same numbers in tiles, so the $n \times n$ score matrix never
# exists in memory at once. You will build it in sections 6 to 8 and prove it exact.
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
# **What breaks.**
#
# - *The fact was outside the window.* With Mistral 7B v0.1's 32 layers of a 4,096-token window,
#   a token can feel one 131,040 positions back, but only by relay through many hops; a fact
#   100,000 tokens back needs at least 25 of them. Expect no exact quote from beyond the window.
#   (Later Mistral 7B versions dropped the window.)
# - *A plain window drops the first tokens and the model falls apart.* Trained models park
#   attention mass on the first tokens (attention sinks); keep them when you evict.
# - *Evicted means gone.* Sinks plus a window stream fluently but cannot recall a token that
#   left the window.
# - *A fixed-size state cannot copy.* State-space and linear-attention layers reproduce a
#   specific far-away token worse than attention does; keep attention layers for retrieval.
# - *A sparse pattern that saves no time.* Skipped pairs only save work when whole blocks of the
#   score matrix are skipped; section 8 measures what skipping buys.
# - *A quantized cache that changes answers.* Keys carry a few large channels; one scale per
#   token wastes its codes on them. Quantize keys per channel and values per token (KIVI).
#
# **The gains reported in the papers** (each from the paper's abstract): Mamba, 5x the
# *generation* throughput of a same-size Transformer ([Gu and Dao, 2023](https://arxiv.org/abs/2312.00752));
# DeepSeek-V2, a KV cache 93.3% smaller and 5.76x the maximum generation throughput of
# **DeepSeek 67B**, its dense predecessor (95 layers, 8 KV heads), not of an MHA twin, with V2's
# cache also stored at about 6 bits per number ([DeepSeek-AI, 2024](https://arxiv.org/abs/2405.04434), section 3.2.3);
# Jamba, a 256K-token context, of which up to 140K tokens fit on one 80 GB GPU
# ([Lieber et al., 2024](https://arxiv.org/abs/2403.19887)).

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
    "Mistral 7B v0.1 reach (tokens)": 32 * (4_096 - 1),
    "hops to reach 100,000 tokens back": math.ceil(100_000 / (4_096 - 1)),
}
for label, value in guide.items():
    print(f"{label:58s} {value:,.2f}")
assert round(guide["cache at 128k tokens (GB)"], 1) == 17.2 and round(guide["hybrid 4 attention + 28 SSM layers at 128k (GB)"], 2) == 2.15
assert round(guide["latent saving (x)"]) == 57 and round(guide["4-bit cache saving (x)"], 1) == 3.9
REFERENCE.check("running_example.bytes_per_token", per_token)
REFERENCE.check("window.mistral_v0_1_reach", guide["Mistral 7B v0.1 reach (tokens)"])


# %% [markdown]
# # Part 2 · How it works, from scratch
#
# Fifteen sections, each with the same beat: the idea, the formula with its symbols, the numbers
# by hand, the code, a figure, and a check that stops the notebook if anything is wrong. Ten
# exercises are marked along the way; each is followed by the contract check that judges it.
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
expect_raises(ValueError, context_cost, 0, match="n")
expect_raises(TypeError, kv_bytes_per_token, 32, 8.0, 128, match="kv_heads")


# %%
def plot_two_bills(bills, gpu_bytes=80 * 10**9, language="en"):
    """Two panels: pairs scored (log scale) and KV-cache gigabytes per context, with one GPU's memory."""
    labels = [f"{b['n'] // 1024:,}k" if b["n"] < 2**20 else f"{b['n'] // 2**20}M" for b in bills]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 2.9))
    left.bar(labels, [b["pairs"] for b in bills], color=Palette.RED)
    left.set_yscale("log")
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
assert bills[1]["cache_bytes"] == 2**34 and bills[2]["cache_bytes"] > 80 * GB
print("The two bills: PASS")


# %% [markdown]
# The compute bill is paid once per prompt, at prefill, and exact tiling (sections 6 to 8) makes
# it faster and smaller in memory without changing its size. The memory bill is paid for as
# long as a conversation is open and decides how many users one GPU serves; that is why most of
# the designs below attack the cache.

# %% [markdown]
# ## 2. Masks: causal, a window, and sinks
#
# **Idea.** A mask says which keys each query may read. Written *additively*, it is a matrix
# added to the scores before the softmax: 0 where reading is allowed, $-\infty$ where it is not,
# so a blocked key gets weight $e^{-\infty} = 0$ exactly. A finite entry is a *bias* (ALiBi and
# relative-position schemes use them). Three masks matter here: *causal* (never the future), a
# *sliding window* (only the last $w$ tokens, the query's own included), and a window with
# *sinks*: StreamingLLM keeps the first $s$ tokens visible forever, because trained models park
# a lot of attention on them and fall apart when they vanish.
#
# $$M_{ij} = 0 \;\text{ if }\; j \le i \;\text{ and }\; \left(i - j < w \;\text{ or }\; j < s\right), \qquad M_{ij} = -\infty \;\text{ otherwise}$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $i$, $j$ | query position (row) and key position (column) | row 23 |
# | $i - j$ | how far back key $j$ is; negative means the future | |
# | $w$ | window: how many recent keys a query reads, itself included | 8 |
# | $s$ | number of sink keys at the start that stay visible | 2 |
# | $M_{ij}$ | the additive mask entry | 0 or $-\infty$ |
#
# **By hand.** With $n = 24$, $w = 8$, $s = 2$, query 23 reads keys 16 to 23 (eight of them,
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
    print(f"{name:20s} allowed pairs: {int((m == 0).sum()):4d}   row 23 reads keys {np.flatnonzero(m[23] == 0).tolist()}")
assert (mask_causal == 0).sum() == MASK_N * (MASK_N + 1) // 2
assert np.isneginf(mask_window[23, 15]) and mask_window[23, 16] == 0
assert mask_sinks[23, 0] == 0 and mask_sinks[23, 1] == 0 and np.isneginf(mask_sinks[23, 2])
expect_raises(ValueError, make_mask, 4, n_sink=1, match="window")
expect_raises(ValueError, make_mask, 4, window=0, match="window")
expect_raises(TypeError, make_mask, 4.0, match="n")


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
print("Masks: PASS")


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
    allowed = np.asarray(allowed)
    if allowed.dtype != bool:
        raise TypeError(f"allowed must be a boolean array (True = may read), got dtype {allowed.dtype}")
    return np.where(allowed, 0.0, -np.inf)


def _as_additive(mask, shape, dtype):
    """Validate an additive mask (finite biases and -inf) and broadcast it to ``shape``."""
    mask = np.asarray(mask)
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
# Exercise 2: Write softmax attention with a sink. Scale Q K^T by 1/sqrt(d_k) and add the mask.
# The sink (already broadcast to [..., T_q, 1]) joins each row's softmax as an extra logit whose
# value vector is zero. Subtract the row max (over tokens AND sink) before exp. A row with no
# allowed key and no sink raises ValueError when empty_row == "error" and is all zeros for "zero".
# Reject a finite score that overflows: raise FloatingPointError mentioning "mask bias" when
# adding a finite mask entry makes a finite score infinite.
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
    if mask is not None:
        mask = _as_additive(mask, shape, dtype)
    if sink is not None:
        sink = require_array("sink", sink).astype(dtype, copy=False)
        try:
            sink = np.broadcast_to(sink, shape[:-1] + (1,))  # (..., T_q, 1): one logit per head and query
        except ValueError:
            raise ValueError(f"sink of shape {sink.shape} does not broadcast to {shape[:-1] + (1,)}; use shape (H, 1, 1) per head") from None
    ### BEGIN SOLUTION
    with np.errstate(over="ignore", invalid="ignore"):
        scores = (Q @ np.swapaxes(K, -1, -2)) * dtype.type(1.0 / math.sqrt(Q.shape[-1]))  # (..., T_q, T_k)
        if not np.isfinite(scores).all():
            raise FloatingPointError("Q @ K^T overflowed; rescale Q and K (or compute in float64)")
        if mask is not None:
            biased = scores + mask
            if np.any(np.isfinite(mask) & ~np.isfinite(biased)):
                raise FloatingPointError("adding a finite mask bias overflowed the score; use a smaller bias (or -inf to block)")
            scores = biased
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
assert out.shape == (MASK_N, 16) and np.allclose(weights.sum(-1), 1.0)
for m in (mask_window, mask_sinks):
    assert np.allclose(sdpa(Q24, K24, V24, m, return_weights=True)[1].sum(-1), 1.0)

# Empty rows: the default refuses, "zero" returns an exact zero row and leaves the others alone.
holey = mask_causal.copy()
holey[5] = -np.inf
print("default policy:", expect_raises(ValueError, sdpa, Q24, K24, V24, holey, match="empty_row='zero'")[:60], "...")
zero_out, zero_w = sdpa(Q24, K24, V24, holey, empty_row="zero", return_weights=True)
assert np.all(zero_out[5] == 0) and np.all(zero_w[5] == 0) and np.isfinite(zero_out).all()
assert np.allclose(np.delete(zero_out, 5, axis=0), np.delete(out, 5, axis=0))

# The sink's share of 128 equal keys, and the sink as an extra column with a zero value.
shares = {logit: math.exp(logit) / (128 + math.exp(logit)) for logit in (0.0, 2.0, 5.0)}
for logit, share in shares.items():
    print(f"sink logit {logit:.0f}: sink share of 128 equal keys = {100 * share:.2f}%")
REFERENCE.check("sink_share.logit_0", shares[0.0], rtol=1e-12)
REFERENCE.check("sink_share.logit_2", shares[2.0], rtol=1e-12)
REFERENCE.check("sink_share.logit_5", shares[5.0], rtol=1e-12)
flat = np.zeros((1, 128, 4))
_, flat_w = sdpa(np.zeros((1, 1, 4)), flat, np.ones((1, 128, 2)), sink=5.0, return_weights=True)
assert abs((1 - flat_w.sum()) - shares[5.0]) < 1e-12

sink_logit = 1.3
out_sink, w_sink = sdpa(Q24, K24, V24, mask_causal, sink=sink_logit, return_weights=True)
extended = np.concatenate([Q24 @ K24.T / 4.0 + mask_causal, np.full((MASK_N, 1), sink_logit)], axis=1)  # d_k = 16
extended_w = np.exp(extended - extended.max(1, keepdims=True))
extended_w /= extended_w.sum(1, keepdims=True)
column_out = extended_w[:, :-1] @ V24  # the extra column's value vector is zero
print(f"sink vs extra zero-value column: max |difference| {np.abs(out_sink - column_out).max():.1e}")
assert np.allclose(out_sink, column_out, atol=1e-12) and np.all(w_sink.sum(-1) < 1)
assert np.allclose(sdpa(Q24, K24, V24, mask_causal + 2.0, sink=sink_logit + 2.0), out_sink, atol=1e-12)
assert not np.allclose(sdpa(Q24, K24, V24, mask_causal + 2.0, sink=sink_logit), out_sink)  # shifting tokens alone is not a no-op

# A row with no visible token sends all its mass to the sink: output 0, no error even by default.
only_sink, only_sink_w = sdpa(Q24, K24, V24, np.full((MASK_N, MASK_N), -np.inf), sink=sink_logit, return_weights=True)
assert np.all(only_sink == 0) and np.all(only_sink_w == 0)

# Per-head sinks broadcast as (H, 1, 1); a boolean mask is refused rather than read as 0/1 biases.
heads_out = sdpa(np.stack([Q24, Q24]), K24, V24, mask_causal, sink=np.array([-1.0, 4.0]).reshape(2, 1, 1))
assert not np.allclose(heads_out[0], heads_out[1])
expect_raises(TypeError, sdpa, Q24, K24, V24, mask_causal == 0, match="additive_mask")
expect_raises(ValueError, sdpa, Q24, K24[:, :8], V24, match="d_k")
expect_raises(ValueError, sdpa, Q24, K24, V24, empty_row="nan", match="empty_row")
expect_raises(ValueError, sdpa, Q24, K24, V24, sink=np.zeros(3), match="sink")
expect_raises(ValueError, sdpa, Q24, K24 * np.nan, V24, match="finite")
expect_raises(TypeError, sdpa, Q24, K24, V24, return_weights="yes", match="return_weights")


# %%
def plot_sink_share(n_keys, logits, language="en"):
    """The sink's share of a row against its logit, for n_keys keys that all score 0."""
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
print("Sink attention and empty rows: PASS")


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

# %% tags=["exercise"]
# Exercise 3: Repeat the KV heads for grouped-query attention. x holds the KV heads on axis -3;
# return an array with group times as many heads on that axis, where query head h gets KV head
# h // group: consecutive query heads share a KV head.
def repeat_kv_heads(x, group):
    """KV heads on axis -3, each repeated ``group`` times in place: query head h reads KV head h // group."""
    x = require_array("x", x, min_ndim=3)
    group = require_int("group", group, minimum=1)
    ### BEGIN SOLUTION
    return np.repeat(x, group, axis=-3)  # kv0, kv0, ..., kv1, kv1, ...: each KV head serves a block of query heads
    ### END SOLUTION


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
assert np.allclose(grouped, as_mha, atol=1e-12)
# The negative test: np.tile interleaves the groups, and the outputs change although every shape is right.
tiled_heads = sdpa(Qh, np.tile(Kh, (H // H_KV, 1, 1)), np.tile(Vh, (H // H_KV, 1, 1)), causal12)
print(f"GQA vs tile-instead-of-repeat: max |difference| {np.abs(grouped - tiled_heads).max():.2f} (must be large)")
assert tiled_heads.shape == grouped.shape and not np.allclose(grouped, tiled_heads, atol=1e-3)
expect_raises(ValueError, repeat_kv_heads, Kh, 0, match="group must be at least 1")
expect_raises(ValueError, gqa_attention, Qh[:7], Kh, Vh, match="multiple of the KV heads")
expect_raises(ValueError, gqa_attention, Qh[:, 0], Kh, Vh, match="dimensions")


# %%
def plot_head_mapping(n_heads, n_kv_heads, language="en"):
    """Which KV head each query head reads, with repeat (correct) and tile (wrong)."""
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
# **Three implementations that must agree.** Our NumPy `sdpa` is explicit; a line-for-line PyTorch
# version is explicit too; `F.scaled_dot_product_attention` is the library API, free to pick a
# fused kernel. They must agree on outputs, on masks (PyTorch's boolean `attn_mask` uses
# True = *may attend*, the opposite of `nn.MultiheadAttention`'s masks; a float mask is additive
# like ours), on fully masked rows (zeros, PyTorch 2.5 or newer) and on gradients. From PyTorch
# 2.5 the API also accepts fewer KV heads with `enable_gqa=True`.

# %%
def torch_sdpa_explicit(q, k, v, allowed=None):
    """Softmax attention in plain tensor operations; allowed is boolean (True = may attend), empty rows give 0."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        require_tensor(name, t, min_ndim=2)
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if allowed is not None and (not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool):
        raise TypeError(f"allowed must be a boolean tensor (True = may attend), got {getattr(allowed, 'dtype', type(allowed).__name__)}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"need q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    try:  # NumPy's shape arithmetic: torch.broadcast_shapes would import sympy on first use
        shape = np.broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2])) + (q.shape[-2], k.shape[-2])
        if allowed is not None and np.broadcast_shapes(tuple(allowed.shape), shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"the batch axes of q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} and allowed "
                         f"{tuple(getattr(allowed, 'shape', ()))} do not broadcast to one score shape") from None
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
torch.testing.assert_close(explicit, ours, rtol=1e-12, atol=1e-12)
if ENVIRONMENT["torch_has_enable_gqa"]:  # torch 2.5+: fully masked rows are zeros in the library too
    torch.testing.assert_close(api_bool, explicit, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(api_float, explicit, rtol=1e-10, atol=1e-12)
    rows = slice(None)
else:
    print(f"SKIP: torch {torch.__version__} returns NaN on fully masked rows; comparing the other rows only")
    rows = slice(1, None)
torch.testing.assert_close(api_bool[..., rows, :], explicit[..., rows, :], rtol=1e-10, atol=1e-12)
probe = torch.from_numpy(rng.standard_normal(explicit.shape))
grads_explicit = torch.autograd.grad((explicit[..., rows, :] * probe[..., rows, :]).sum(), (q, k, v))
grads_api = torch.autograd.grad((api_bool[..., rows, :] * probe[..., rows, :]).sum(), (q, k, v))
for name, a, b in zip("qkv", grads_explicit, grads_api):
    torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)
    assert torch.isfinite(a).all(), f"non-finite gradient for {name}"
print("NumPy sdpa, explicit torch and F.scaled_dot_product_attention agree on outputs, both mask kinds, empty rows and gradients")
expect_raises(TypeError, torch_sdpa_explicit, q, k, v, allowed.double(), match="boolean")
expect_raises(ValueError, torch_sdpa_explicit, q, k, v[..., :3, :], match="T_k")

# is_causal=True aligns the triangle top-left: one decoding query (token 4 of 5) would see key 0 only.
q_last, k_all, v_all = q[..., 4:, :].detach(), k.detach(), v.detach()
top_left = F.scaled_dot_product_attention(q_last, k_all, v_all, is_causal=True)
torch.testing.assert_close(top_left, v_all[..., :1, :])  # the whole weight on key 0
bottom_right = F.scaled_dot_product_attention(q_last, k_all, v_all, attn_mask=torch.ones(1, 5, dtype=torch.bool))
assert not torch.allclose(top_left, bottom_right)
print("is_causal=True with 1 query and 5 keys reads key 0 only: decode needs an explicit mask or an offset")

if ENVIRONMENT["torch_has_enable_gqa"]:
    qg, kg, vg = (torch.tensor(a, requires_grad=True) for a in (Qh[None], Kh[None], Vh[None]))  # (1, H, T, d), (1, H_kv, T, d)
    causal_t = torch.ones(T, T, dtype=torch.bool).tril()
    api_gqa = F.scaled_dot_product_attention(qg, kg, vg, attn_mask=causal_t, enable_gqa=True)
    explicit_gqa = torch_sdpa_explicit(qg, kg.repeat_interleave(H // H_KV, dim=1), vg.repeat_interleave(H // H_KV, dim=1), causal_t)
    torch.testing.assert_close(api_gqa, explicit_gqa, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(api_gqa[0], torch.from_numpy(grouped), rtol=1e-10, atol=1e-12)
    for a, b in zip(torch.autograd.grad(api_gqa.square().sum(), (qg, kg, vg)), torch.autograd.grad(explicit_gqa.square().sum(), (qg, kg, vg))):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)
    print("enable_gqa=True equals repeat_interleave + explicit attention, outputs and gradients: PASS")
else:
    print(f"SKIP: torch {torch.__version__} has no enable_gqa (added in 2.5); repeat_kv_heads above is the portable path")
print("GQA: PASS")

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
# $$\text{bytes}(n) = 2 \cdot H_{kv} \cdot d_h \cdot b \cdot \sum_{\ell=1}^{L} \min\left(n, w_\ell\right), \qquad w_\ell = \infty \text{ for a full layer}$$
#
# | Symbol | Meaning | gpt-oss-120b |
# |---|---|---|
# | $n$ | context length | 131,072 |
# | $L$ | layers | 36 |
# | $w_\ell$ | window of layer $\ell$ | 128 on even layers, $\infty$ on odd |
# | $\min(n, w_\ell)$ | tokens layer $\ell$ keeps | 128 or 131,072 |
# | $H_{kv}$, $d_h$, $b$ | KV heads, head width, bytes per number | 8, 64, 2 |
#
# **By hand.** One layer costs $2 \cdot 8 \cdot 64 \cdot 2 = 2{,}048$ bytes per kept token. If all
# 36 layers were full, a token would cost $36 \cdot 2{,}048 = 73{,}728$ bytes (72 KiB) and 128k
# tokens 9.0 GiB. In the real hybrid, the 18 full layers hold $18 \cdot 131{,}072 \cdot 2{,}048$
# bytes = 4.5 GiB and the 18 windowed layers only $18 \cdot 128 \cdot 2{,}048$ bytes = 4.5 MiB,
# so the windows halve the cache. The variants the card did *not* choose: MHA (64 KV heads) would
# cost 576 KiB per token, MQA (1 KV head) 9 KiB.

# %%
# The gpt-oss-120b configuration, embedded with its own checksum so a silent edit cannot slip through.
GPT_OSS_CONFIG_JSON = '{"num_hidden_layers": 36, "num_experts": 128, "experts_per_token": 4, "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880, "swiglu_limit": 7.0, "head_dim": 64, "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128, "initial_context_length": 4096, "rope_theta": 150000, "rope_scaling_factor": 32.0, "rope_ntk_alpha": 1, "rope_ntk_beta": 32}'
GPT_OSS_CONFIG_SHA256 = "063aaa98e012cac330d58d18471700f0b0eb90bb15c58fb227809d45090f3e65"
verify_sha256(GPT_OSS_CONFIG_JSON, GPT_OSS_CONFIG_SHA256, "the embedded gpt-oss-120b config")
gpt_oss = json.loads(GPT_OSS_CONFIG_JSON)
print({key: gpt_oss[key] for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "sliding_window")})
assert (gpt_oss["num_hidden_layers"], gpt_oss["num_attention_heads"], gpt_oss["num_key_value_heads"], gpt_oss["head_dim"], gpt_oss["sliding_window"]) == (36, 64, 8, 64, 128)


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
assert hybrid["full_bytes"] + hybrid["sliding_bytes"] == hybrid["hybrid_total_bytes"]
print(f"gpt-oss-120b at {context:,} tokens: full layers {hybrid['full_bytes'] / GIB:.2f} GiB + windowed layers "
      f"{hybrid['sliding_bytes'] / MIB:.1f} MiB = {hybrid['hybrid_total_bytes'] / GIB:.4f} GiB; all-full would be "
      f"{hybrid['all_full_bytes'] / GIB:.2f} GiB (x{hybrid['all_full_bytes'] / hybrid['hybrid_total_bytes']:.3f})")
# gpt-oss-20b: 24 layers, again alternating window and full (same source); only its 12 full layers grow.
print(f"gpt-oss-20b: its growing part costs {kv_bytes_per_token(12, 8, 64) / KIB:.0f} KiB per token")
REFERENCE.check("model_cards.gpt_oss_20b_growing_bytes_per_token", kv_bytes_per_token(12, 8, 64))

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
REFERENCE.check("mla.bytes_per_token", latent_bytes)
REFERENCE.check("mla.mha_equivalent_bytes_per_token", v2_convention)
REFERENCE.check("mla.raw_element_ratio", v2_convention / latent_bytes, rtol=1e-15)
REFERENCE.check("mla.expanded_192_bytes_per_token", expanded_192)
REFERENCE.check("mla.expanded_192_ratio", expanded_192 / latent_bytes, rtol=1e-15)
expect_raises(ValueError, mla_bytes_per_token, 61, 0, 64, match="latent_dim")


# %%
def plot_bytes_per_token(rows, title, language="en"):
    """Horizontal bars of cache bytes per token (log axis), one per design, labelled in KiB."""
    labels, values = zip(*rows)
    fig, ax = plt.subplots(figsize=(7.4, 0.32 * len(rows) + 1.0))
    y = np.arange(len(rows))[::-1]
    ax.barh(y, values, color=[Palette.BLUE, Palette.ORANGE, Palette.GREEN, Palette.RED, Palette.PURPLE, Palette.YELLOW] * 3)
    for yy, value in zip(y, values):
        kib = localized(language, "KiB", "КиБ")
        ax.text(value * 1.08, yy, f"{value / 1024:,.0f} {kib}" if value >= 10 * 1024 else f"{value / 1024:,.1f} {kib}", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=9)
    ax.set_xscale("log")
    ax.set_xlim(min(values) / 2, max(values) * 8)
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
    "times the last. Bars from the same model (gpt-oss-120b, DeepSeek-V3) show what its design choice saved: "
    "sharing KV heads (MHA to GQA to MQA), windowing half the layers, or caching a latent. The two DeepSeek-V3 "
    "twins differ only by the counting convention.",
)
assert growing_hybrid == 36 * KIB
print("KV-cache calculator: every frozen Module 5 number reproduced")


# %% [markdown]
# ## 6. The online softmax: one pass, exact
#
# **Idea.** A softmax seems to need the whole row before it can weigh anything: the maximum
# (for stability) and the sum (for normalising). The online softmax ([Milakov and Gimelshein, 2018](https://arxiv.org/abs/1805.02867))
# reads the row in tiles and keeps three running numbers: the largest logit so far $m$, the sum
# of $e^{x - m}$ so far $\ell$, and the weighted numerator $n$. When a new tile raises the maximum,
# everything accumulated so far was measured against the old, smaller $m$; multiplying it by
# $\alpha = e^{m_{\text{old}} - m_{\text{new}}}$ re-expresses it against the new one. Nothing is
# approximated: the final $n / \ell$ is the softmax average to the last bit of rounding.
#
# $$m_t = \max\left(m_{t-1}, \max_{j \in t} x_j\right), \quad \alpha_t = e^{m_{t-1} - m_t}, \quad \ell_t = \alpha_t \ell_{t-1} + \sum_{j \in t} e^{x_j - m_t}, \quad n_t = \alpha_t n_{t-1} + \sum_{j \in t} e^{x_j - m_t} v_j$$
#
# | Symbol | Meaning | Example after tile 2 |
# |---|---|---|
# | $t$ | tile index; $j \in t$ runs over the tile's entries | 2 |
# | $x_j$, $v_j$ | a logit and its value | tile 2: (3, 0.5) and (3, 4) |
# | $m_t$ | running maximum ($m_0 = -\infty$) | 3 |
# | $\alpha_t$ | rescale factor for what was accumulated before tile $t$ ($\alpha_1 = 0$) | $e^{2 - 3} = 0.3679$ |
# | $\ell_t$, $n_t$ | running sum and running numerator | 1.5853, 3.9669 |
# | $n_T / \ell_T$ | the output after the last tile | 2.5023 |
#
# **By hand.** Logits $(2, 1 \mid 3, 0.5)$ with values $(1, 2 \mid 3, 4)$. Tile 1: $m = 2$,
# $\ell = e^0 + e^{-1} = 1.3679$, $n = 1 + 2e^{-1} = 1.7358$. Tile 2 raises $m$ to 3, so
# $\alpha = e^{-1} = 0.3679$: $\ell = 0.3679 \cdot 1.3679 + e^0 + e^{-2.5} = 1.5853$ and
# $n = 0.3679 \cdot 1.7358 + 3 + 4e^{-2.5} = 3.9669$. Output $3.9669 / 1.5853 = 2.5023$, the
# same as the softmax of all four logits at once. Forget $\alpha$ and tile 1's terms are
# $e$ times too heavy.

# %% tags=["exercise"]
# Exercise 5: Stream a softmax-weighted average. For each tile, update the running max m (start
# at -inf), the rescale factor alpha = exp(m_old - m_new), the running sum l and numerator n as in
# the formula, and append {"m": m, "alpha": alpha, "l": l, "n": n} to the trace. Return (n / l, trace).
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
    ### BEGIN SOLUTION
    m, l, n = -math.inf, 0.0, 0.0
    trace = []
    for logits, values in tiles:
        m_new = max(m, float(logits.max()))
        alpha = math.exp(m - m_new)  # 0 before the first tile, since m = -inf
        weights = np.exp(logits - m_new)
        l = alpha * l + float(weights.sum())
        n = alpha * n + float(weights @ values)
        m = m_new
        trace.append({"m": m, "alpha": alpha, "l": l, "n": n})
    return n / l, trace
    ### END SOLUTION


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
assert abs(online_output - direct @ np.array([1.0, 2.0, 3.0, 4.0]) / direct.sum()) < 1e-12
expect_raises(ValueError, online_softmax_dot, [[1.0]], [[1.0], [2.0]], match="same")
expect_raises(ValueError, online_softmax_dot, [[1.0, 2.0]], [[1.0]], match="tile 0")

# A longer row: 48 logits in 12 tiles of 4. The running estimate n / l jumps while the max still moves.
row_logits, row_values = rng.normal(0.0, 2.0, 48), rng.normal(0.0, 1.0, 48)
_, long_trace = online_softmax_dot(np.split(row_logits, 12), np.split(row_values, 12))
exact_row = np.exp(row_logits - row_logits.max()) @ row_values / np.exp(row_logits - row_logits.max()).sum()
assert abs(long_trace[-1]["n"] / long_trace[-1]["l"] - exact_row) < 1e-12


def plot_online_softmax(trace, exact, language="en"):
    """The running estimate n / l after each tile, against the exact softmax average; rescaled tiles marked."""
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
print("Online softmax: PASS")


# %% [markdown]
# ## 7. Tiled streaming attention: FlashAttention's idea in NumPy
#
# **Idea.** Apply the online softmax to whole blocks. Cut the queries into blocks of $B$ rows
# and the keys into blocks of $B$ columns. For one query block, walk over the key blocks; each
# step computes a small $B \times B$ score tile, updates every row's $m$, $\ell$ and output
# accumulator $A$, and throws the tile away. The $n \times n$ matrix never exists
# ([FlashAttention, Dao et al., 2022](https://arxiv.org/abs/2205.14135), which reports training 15% faster
# than the MLPerf BERT-large record, 3x faster on GPT-2 at 1K tokens and 2.4x on Long Range Arena;
# FlashAttention-2 is about 2x faster again, [Dao, 2023](https://arxiv.org/abs/2307.08691)). Masks come for free
# in the block structure: with a causal mask, key blocks entirely in a query block's future are
# never computed; with a window, neither are key blocks entirely behind it. Only the blocks that
# straddle a mask boundary need the mask itself. Cached decoding adds one detail: when the
# queries are the last $T_q$ of $T_k$ tokens, query $i$ sits at absolute position
# $T_k - T_q + i$ (`query_start + i` in the code), and the causal and window tests must
# use that position.
#
# $$S = \frac{Q_b K_c^\top}{\sqrt{d_k}} + M_{bc}, \quad m' = \max\left(m, \operatorname{rowmax} S\right), \quad \alpha = e^{m - m'}, \quad P = e^{S - m'}, \quad \ell' = \alpha \ell + \operatorname{rowsum} P, \quad A' = \alpha A + P V_c$$
#
# | Symbol | Meaning | Shape |
# |---|---|---|
# | $Q_b$ | query block $b$ | $B \times d_k$ |
# | $K_c$, $V_c$ | key and value block $c$ | $B \times d_k$, $B \times d_v$ |
# | $M_{bc}$ | the mask restricted to the block (causal, window, or a given additive mask) | $B \times B$ |
# | $m$, $\ell$ | per-row running max and sum | $B$ |
# | $A$ | per-row output accumulator; the output is $A / \ell$ after the last block | $B \times d_v$ |
# | $\alpha$, $P$ | per-row rescale and the tile's unnormalised weights | $B$, $B \times B$ |
#
# **By hand.** With $n = 2048$ and $B = 128$ there are $16 \times 16 = 256$ block pairs. A causal
# mask needs only those on or below the diagonal: $16 \cdot 17 / 2 = 136$, of which the 16 on the
# diagonal need masking. A window of 256 leaves at most 3 key blocks per query block: 1 for the
# first query block, 2 for the second, 3 for each of the other 14, so 45 in all. Each tile holds
# $128^2$ numbers, 64 KiB in float32, against 16 MiB for the full float32 matrix. (The block
# grid depends only on $n / B$ and $w / B$, so the code below draws it for $n = 1024$, $B = 64$,
# $w = 128$, the same $16 \times 16$ grid at a quarter of the cost.)

# %% tags=["exercise"]
# Exercise 6: Write exact attention over (query block, key block) pairs. For each query block keep
# per-row m (start -inf, or the sink), l (start 0, or 1 with a sink) and an accumulator A (zeros).
# Visit only the key blocks that can hold an allowed key (causal: none after the block's last
# query position; window: none before its first position - window + 1). For each block: scores
# times 1/sqrt(d_k); add the given mask slice (raise FloatingPointError mentioning "mask bias" if a
# finite bias overflows a finite score); block the pairs the causal/window test forbids, using the
# absolute query position query_start + i; then the online update. Finally output A / l, with
# the empty-row policy for rows whose l stayed 0. Never build a T_q x T_k array.
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
    ### BEGIN SOLUTION
    (n_q, d_k), (n_k, d_v) = Q.shape, V.shape
    scale = 1.0 / math.sqrt(d_k)
    # |q . k| <= d_k max|q| max|k|: when that bound is far from overflow, no tile needs the finiteness check.
    maybe_overflow = not d_k * float(np.abs(Q).max()) * float(np.abs(K).max()) * scale < float(np.finfo(dtype).max) / 4
    out = np.empty((n_q, d_v), dtype=dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for q0 in range(0, n_q, tile_size):
            q1 = min(q0 + tile_size, n_q)
            first, last = query_start + q0, query_start + q1 - 1  # absolute positions of the block's queries
            k_lo, k_hi = 0, n_k
            if causal:
                k_hi = min(n_k, last + 1)  # later keys are in every row's future
                if window is not None:
                    k_lo = max(0, first - window + 1)  # earlier keys are behind every row's window
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
                    blocked = key_pos > query_pos  # the future
                    if window is not None:
                        blocked |= key_pos <= query_pos - window  # query_pos - key_pos >= window: behind the window
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
    ### END SOLUTION


# %%
check_exercise("Exercise 6", check_tiled_attention_contract, tiled_attention, globals())

# %%
n40 = 40
Q40, K40, V40 = (rng.standard_normal((n40, 16)) for _ in range(3))
for name, m in (("causal", make_mask(n40)), ("window 8", make_mask(n40, 8)), ("window 8 + 2 sinks", make_mask(n40, 8, 2))):
    error = np.abs(tiled_attention(Q40, K40, V40, m, tile_size=7) - sdpa(Q40, K40, V40, m)).max()
    print(f"{name:20s} tiled (tile 7) vs dense: max |difference| {error:.1e}")
    assert error < 1e-12
assert np.abs(tiled_attention(Q40, K40, V40, tile_size=7, causal=True, window=8) - sdpa(Q40, K40, V40, make_mask(n40, 8))).max() < 1e-12
assert np.abs(tiled_attention(Q40, K40, V40, tile_size=7, causal=True, sink=1.3) - sdpa(Q40, K40, V40, make_mask(n40), sink=1.3)).max() < 1e-12

# Empty rows and empty tiles: the zero policy matches dense; a lone allowed key in the last tile is found.
nothing = np.full((n40, n40), -np.inf)
assert np.all(tiled_attention(Q40, K40, V40, nothing, tile_size=7, empty_row="zero") == 0)
assert np.all(sdpa(Q40, K40, V40, nothing, empty_row="zero") == 0)
last_only = np.full((1, 9), -np.inf)
last_only[0, -1] = 0.0
assert np.allclose(tiled_attention(Q40[:1], K40[:9], V40[:9], last_only, tile_size=2), V40[8:9], atol=1e-12)

# Float16 inputs are computed, and returned, in float32 by both implementations.
Q16, K16, V16 = (x.astype(np.float16) for x in (Q40, K40, V40))
dense16, tiled16 = sdpa(Q16, K16, V16, make_mask(n40)), tiled_attention(Q16, K16, V16, tile_size=7, causal=True)
print(f"float16 inputs: dtypes {dense16.dtype} / {tiled16.dtype}, max |difference| {np.abs(dense16 - tiled16).max():.1e}")
assert dense16.dtype == tiled16.dtype == np.float32 and np.allclose(dense16, tiled16, atol=2e-6)

# A huge but finite bias that overflows a finite score is rejected by both, never read as "blocked".
f32_max = float(np.finfo(np.float32).max)
q_big = np.array([[math.sqrt(0.75 * f32_max)]], dtype=np.float32)
for sign in (1.0, -1.0):
    for attention in (sdpa, tiled_attention):
        expect_raises(FloatingPointError, attention, q_big, sign * q_big, np.ones((1, 1), np.float32),
                      np.array([[sign * 0.75 * f32_max]], np.float32), match="mask bias")

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
        assert np.abs(streamed - complete[prefix:end]).max() < 1e-12, (window, prefix, count)
local_positions = sdpa(Qp[5:6], Kp[:6], Vp[:6], additive_mask(np.tri(1, 6, dtype=bool)))  # the bug: position 0 instead of 5
print(f"decode with local positions vs correct: max |difference| {np.abs(local_positions - complete[5:6]).max():.2f} (must be large)")
assert not np.allclose(local_positions, sdpa(Qp[5:6], Kp[:6], Vp[:6]))
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, query_start=2, match="causal=True")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, window=3, match="causal=True")
expect_raises(ValueError, tiled_attention, Qp, Kp[:, :5], Vp, match="d_k")
expect_raises(ValueError, tiled_attention, Qp, Kp, Vp, tile_size=0, match="tile_size")
expect_raises(TypeError, tiled_attention, Qp, Kp, Vp, causal=1, match="causal")
print("Cached prefix, chunked decode, windows, sinks, empty tiles, float16 and overflow: PASS")


# %%
def block_kinds(allowed, tile):
    """Classify each (query block, key block) of a boolean mask: 0 skipped, 1 partly allowed, 2 fully allowed."""
    allowed, tile = np.asarray(allowed), require_int("tile", tile, minimum=1)
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
print("Tiled attention: PASS")


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
# $$\text{dense scores} = n^2 \cdot b, \qquad \text{one tile} = B^2 \cdot b, \qquad \frac{\text{dense}}{\text{tile}} = \left(\frac{n}{B}\right)^2$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $n$ | sequence length | 4,096 or 8,192 |
# | $B$ | tile size | 128 |
# | $b$ | bytes per score | 4 (float32) |
#
# **By hand.** In float32 one $4096 \times 4096$ score matrix is $2^{12} \cdot 2^{12} \cdot 4 = 64$ MiB
# per head, $8192^2$ is 256 MiB, and one $128 \times 128$ tile is 64 KiB: 1,024 and 4,096 times
# less. Below we measure real peaks with `tracemalloc` (NumPy reports its buffers to it), in
# float64, output included.

# %%
def peak_traced_bytes(function, *args, **kwargs):
    """Peak bytes that Python and NumPy allocate while ``function`` runs (tracemalloc), its output included."""
    tracemalloc.start()
    try:
        function(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def best_seconds(function, *args, repeats=3, **kwargs):
    """The fastest of ``repeats`` wall-clock runs of ``function`` (time.perf_counter)."""
    repeats = require_int("repeats", repeats, minimum=1)
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
assert dense_growth > 3.5 and tiled_growth < 2.2 and memory["dense"][-1] > 10 * memory["tiled"][-1]


# %%
def plot_memory_vs_length(lengths, memory, language="en"):
    """Measured peak memory of dense and tiled attention against sequence length, with the n x n matrix for scale."""
    n = np.array(lengths, dtype=float)
    dense, tiled = (np.round(np.array(memory[kind]) / MIB, 2) for kind in ("dense", "tiled"))  # as printed: bytes jitter a little
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    ax.loglog(n, dense, "o-", color=Palette.RED, label=localized(language, "dense, measured", "плотное, измерено"))
    ax.loglog(n, tiled, "o-", color=Palette.GREEN, label=localized(language, "tiled, measured", "плиточное, измерено"))
    ax.loglog(n, n * n * 8 / MIB, ":", color=Palette.GREY, label=localized(language, "one n × n float64 matrix", "одна матрица n × n, float64"))
    ax.set_xticks(n, [str(int(v)) for v in n])
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
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
print("Memory and speed of tiled attention: PASS")


# %% [markdown]
# **Speed.** The table's last column compares best-of-3 wall times: the tiled version computes
# about half the blocks (causal), in cache-sized pieces, so on a CPU it beats the dense NumPy
# attention despite its Python loop. Wall times differ between runs and machines, so the
# notebook prints only that verdict. The repository's benchmark, `python -m builder bench tiled`,
# prints the ratios for $n$ = 512 to 4,096 and checks them against the targets: tiled time no
# more than dense at 512, 1,024 and 2,048; tiled peak memory at most 1/40 of dense at 2,048; and
# tiled memory at 4,096 at most 2.2 times its memory at 2,048 (dense grows about 4 times).

# %% [markdown]
# ## 9. Sliding windows: reach through depth, and a cache that stops growing
#
# **Idea.** Picture a row of readers each looking at the notes of the one below through a slot
# that shows $w$ words. One reader sees only $w$ words back, but the next reader reads the first
# one's notes, so each layer relays information $w - 1$ positions further. A windowed layer
# costs $n \cdot w$ scores instead of $n^2 / 2$, and at generation time it needs only the last
# $w$ keys and values: a *rolling buffer* of $w$ slots where token $t$ overwrites slot
# $t \bmod w$, the slot of token $t - w$, which has just left the window. Mistral 7B **v0.1**
# used a 4,096-token window over 32 layers with such a buffer ([Jiang et al., 2023](https://arxiv.org/abs/2310.06825));
# later Mistral 7B versions dropped the window. StreamingLLM's sinks fit the same buffer: keep
# $s$ extra slots for the first tokens ([Xiao et al., 2023](https://arxiv.org/abs/2309.17453)).
#
# $$\text{pairs} = \sum_{i=0}^{n-1} \min(i + 1, w), \qquad \text{reach} = L\,(w - 1), \qquad \text{slot}(t) = t \bmod w$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $n$, $w$ | tokens, window (the query's own key included) | 8, 3 |
# | $\min(i + 1, w)$ | keys that row $i$ reads | row 0: 1, row 5: 3 |
# | $L$ | stacked windowed layers | 3 |
# | reach | furthest input position that can influence an output | 6 |
# | $t \bmod w$ | remainder of $t$ divided by $w$: the buffer slot of token $t$ | $10 \bmod 4 = 2$ |
#
# **By hand.** Eight tokens with $w = 3$ score $1 + 2 + 3 \cdot 6 = 21$ pairs instead of
# $8 \cdot 9 / 2 = 36$. Token 7 reads token 5 in layer 3, which read token 3 in layer 2, which read
# token 1 in layer 1: a reach of $3 \cdot 2 = 6$; token 0 would need a fourth layer. Mistral 7B
# v0.1 reaches $32 \cdot 4{,}095 = 131{,}040$ tokens, but a fact 100,000 tokens back must be relayed
# through at least $\lceil 100{,}000 / 4{,}095 \rceil = 25$ hops. With $w = 4$, token 10 lands in
# slot 2, where token 6 sat. On the running example a 4,096-token buffer holds
# $4{,}096 \cdot 131{,}072$ bytes = 0.54 GB at any length, 32 times less than the full cache at 128k.

# %%
def pairs_computed(mask):
    """How many query-key scores an additive or boolean mask allows."""
    mask = np.asarray(mask)
    return int(mask.sum()) if mask.dtype == bool else int(np.isfinite(mask).sum())


def receptive_field(n, window, layers):
    """Boolean [n, n]: True where input token j can influence output i after `layers` windowed layers."""
    layers = require_int("layers", layers, minimum=0)
    step = np.isfinite(make_mask(n, window)).astype(np.int64)  # one layer's "reads" relation
    heard = np.eye(n, dtype=np.int64)  # before any layer, each token knows only itself
    for _ in range(layers):
        heard = np.minimum(step @ heard, 1)  # follow one more layer of edges
    return heard.astype(bool)


def reach(window, layers):
    """Furthest distance information travels through `layers` windowed layers: each adds window - 1."""
    return require_int("layers", layers, minimum=0) * (require_int("window", window, minimum=1) - 1)


print(f"n = 8, w = 3: {pairs_computed(make_mask(8, 3))} pairs, full causal {pairs_computed(make_mask(8))}")
field = receptive_field(8, 3, 3)
print(f"after 3 layers of w = 3: token 1 reaches token 7: {bool(field[7, 1])}; token 0: {bool(field[7, 0])}; reach {reach(3, 3)}")
wide = receptive_field(64, 4, 5)
assert all(int(np.argmax(wide[i])) == max(0, i - reach(4, 5)) for i in range(64))  # the formula matches the matrix product
REFERENCE.check("window.pairs_8_3", pairs_computed(make_mask(8, 3)))
REFERENCE.check("window.causal_pairs_8", pairs_computed(make_mask(8)))
REFERENCE.check("window.reach_3_3", reach(3, 3))
REFERENCE.check("window.hops_100k", math.ceil(100_000 / (4_096 - 1)))
window_cache = kv_cache_bytes(131_072, [4_096] * 32, 8, 128)
print(f"running example, w = 4,096 at 128k tokens: {window_cache / GB:.2f} GB, x{bills[1]['cache_bytes'] / window_cache:.0f} less than full")
REFERENCE.check("window.cache_bytes_4096", window_cache)
expect_raises(ValueError, receptive_field, 8, 3, -1, match="layers")


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
# Exercise 7: Decode token by token with a rolling buffer of `window` slots. Token t first
# overwrites slot t % window with its key and value (the slot of token t - window, which just left
# the window), then attends over the filled slots with softmax(k . q / sqrt(d_k)). Return the
# (T, d_v) outputs and the largest number of keys the buffer ever held.
def rolling_window_decode(Q, K, V, window):
    """Generate token by token with a KV buffer of `window` slots; returns (outputs [T, d_v], largest buffer)."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if not (Q.shape[0] == K.shape[0] == V.shape[0] and Q.shape[1] == K.shape[1]):
        raise ValueError(f"need Q [T, d_k], K [T, d_k], V [T, d_v] for the same T tokens; got {Q.shape}, {K.shape}, {V.shape}")
    window = require_int("window", window, minimum=1)
    ### BEGIN SOLUTION
    (n, d_k), d_v = Q.shape, V.shape[1]
    keys, values = np.zeros((window, d_k)), np.zeros((window, d_v))  # all the memory there is
    outputs, largest = np.empty((n, d_v)), 0
    for t in range(n):
        slot = t % window  # the oldest token, t - window, leaves exactly now
        keys[slot], values[slot] = K[t], V[t]
        held = min(t + 1, window)  # slots filled so far
        largest = max(largest, held)
        scores = keys[:held] @ Q[t] / math.sqrt(d_k)  # (held,): slot order does not matter to a softmax
        weights = np.exp(scores - scores.max())
        outputs[t] = weights @ values[:held] / weights.sum()
    return outputs, largest
    ### END SOLUTION


# %%
check_exercise("Exercise 7", check_rolling_buffer_contract, rolling_window_decode, globals())

# %%
Q50, K50, V50 = (rng.standard_normal((50, 8)) for _ in range(3))
streamed, largest = rolling_window_decode(Q50, K50, V50, 4)
masked = sdpa(Q50, K50, V50, make_mask(50, 4))
print(f"50 tokens with a 4-slot buffer: largest buffer {largest}, max |difference| from masked attention {np.abs(streamed - masked).max():.1e}")
assert largest == 4 and np.allclose(streamed, masked, atol=1e-12)

# StreamingLLM keeps sinks + a window. An evicted token is gone: changing it changes nothing downstream.
needle = V50.copy()
needle[20] += 100.0  # a "fact" at position 20
late = sdpa(Q50, K50, V50, make_mask(50, 8, n_sink=4))[49]
late_with_needle = sdpa(Q50, K50, needle, make_mask(50, 8, n_sink=4))[49]
full_with_needle = sdpa(Q50, K50, needle, make_mask(50))[49]
print(f"token 49 with sinks + window 8: moved by {np.abs(late_with_needle - late).max():.1f} when token 20 changed; "
      f"with full attention: {np.abs(full_with_needle - sdpa(Q50, K50, V50, make_mask(50))[49]).max():.1f}")
assert np.array_equal(late, late_with_needle)
expect_raises(ValueError, rolling_window_decode, Q50, K50[:10], V50, 4, match="same T")
expect_raises(ValueError, rolling_window_decode, Q50, K50, V50, 0, match="window")
print("Sliding window, reach and rolling buffer: PASS")


# %% [markdown]
# ## 10. Sparse patterns, and a learned shortlist
#
# **Idea.** A window keeps only local pairs. Sparse patterns add a few long-distance ones, so
# that any two tokens are a hop or two apart. A *global* token reads and is read by everyone
# (Longformer, [Beltagy et al., 2020](https://arxiv.org/abs/2004.05150); BigBird adds random links,
# [Zaheer et al., 2020](https://arxiv.org/abs/2007.14062)); a *strided* pattern reads the last $s$
# tokens plus every $s$-th one before them (the Sparse Transformer, [Child et al., 2019](https://arxiv.org/abs/1904.10509)).
# A fixed pattern only saves time if whole blocks of the score matrix are skipped, exactly as in
# section 8; a pattern scattered token by token costs a full pass anyway. A newer idea lets the
# model *choose* its sparse keys per query: DeepSeek-V3.2-Exp's "lightning indexer" scores every
# key cheaply (64 small heads of width 128 over one shared FP8 key per token) and the main
# attention reads only the top 2,048 ([config](https://github.com/deepseek-ai/DeepSeek-V3.2-Exp)).
# The indexer's key is one more thing cached per token.
#
# $$\text{strided: } M_{ij} = 0 \;\text{ when }\; i - j \ge 0 \;\text{ and }\; \left(i - j < s \;\text{ or }\; (i - j) \bmod s = 0\right)$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $i - j$ | how far back key $j$ is | for $i = 13$: 0 to 13 |
# | $s$ | stride: the local width and the jump between long-range keys | 4 |
# | $(i - j) \bmod s = 0$ | key $j$ is a whole number of strides back | $8 \bmod 4 = 0$ |
#
# **By hand.** With 16 tokens: full causal attention scores 136 pairs; a window of 4 scores
# $1 + 2 + 3 + 4 \cdot 13 = 58$; making token 0 global adds one pair to each of the 12 rows past
# the window: 70; the stride-4 pattern adds 24 long-range pairs to the window's 58: 82. Row 13
# reads keys 10 to 13 and then 9, 5, 1. At 4,096 tokens, full causal attention scores about 32
# times as many pairs as a window of 64.

# %%
def global_local_allowed(n, window, global_tokens=(0,)):
    """Boolean [n, n]: a causal window plus global tokens that every later token reads and that read every earlier one."""
    allowed = np.isfinite(make_mask(n, window))
    tokens = [require_int("global token", g, minimum=0, maximum=n - 1) for g in global_tokens]
    allowed[:, tokens] = True  # everyone reads the global tokens ...
    allowed[tokens, :] = True  # ... and they read everyone ...
    return allowed & np.tri(n, dtype=bool)  # ... but nobody reads the future


def strided_allowed(n, stride):
    """Boolean [n, n]: the last `stride` keys plus every stride-th key before them (causal)."""
    n, stride = require_int("n", n, minimum=1), require_int("stride", stride, minimum=1)
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
assert pairs_computed(patterns["window 4"]) == pairs_computed(make_mask(16, 4))
expect_raises(ValueError, global_local_allowed, 16, 4, (16,), match="global token")
expect_raises(ValueError, strided_allowed, 16, 0, match="stride")
show_figure(
    plot_masks([(localized(LANGUAGE, name, ru), mask) for (name, mask), ru in zip(patterns.items(), (
        "полная каузальная", "окно 4", "окно 4 + глобальный 0", "шаг 4"))], language=LANGUAGE),
    "Four 16 x 16 masks, rows are queries and columns keys, dark where a score is computed; each title gives the "
    "count. Full causal attention is a solid triangle; the window is a diagonal band; a global token fills the "
    "first column (everyone reads token 0); the strided pattern adds dotted diagonals every 4 columns.",
)


# %%
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
    gen = np.random.default_rng(seed)
    keys, values = gen.standard_normal((trials, length, dim)), gen.standard_normal((trials, length, 6))
    target = gen.integers(length, size=trials)
    queries = keys[np.arange(trials), target] + noise * gen.standard_normal((trials, dim))  # a query that looks for one key
    queries *= require_real("sharpness", sharpness, minimum=0.0, strict_minimum=True)
    index_scores = np.einsum("tld,td->tl", keys[..., :index_dim], queries[:, :index_dim])  # the cheap indexer
    shortlist = np.argpartition(index_scores, -top_k, axis=1)[:, -top_k:]  # (trials, top_k)
    scores = np.einsum("tld,td->tl", keys, queries) / math.sqrt(dim)  # full scores, for the comparison only
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


shortlists = {sharpness: shortlist_experiment(sharpness=sharpness) for sharpness in (1.0, 3.0)}
print(f"{'query sharpness':>16} " + " ".join(f"{key:>20}" for key in shortlists[1.0]))
for sharpness, result in shortlists.items():
    print(f"{sharpness:>16.0f} " + " ".join(f"{value:>20.3f}" for value in result.values()))
REFERENCE.check("sparse.shortlist_score_ratio", shortlists[1.0]["score_ratio"])
assert all(r["retrieval_shortlist"] <= r["recall"] and r["kept_mass"] <= 1 for r in shortlists.values())
assert shortlists[3.0]["output_error"] < shortlists[1.0]["output_error"]
expect_raises(ValueError, shortlist_experiment, index_dim=64, match="index_dim")
expect_raises(ValueError, shortlist_experiment, sharpness=0.0, match="sharpness")
expect_raises(ValueError, shortlist_experiment, noise=-0.1, match="noise")
print("Sparse patterns and the shortlist: PASS")


# %% [markdown]
# Read the table with care. The **score ratio** 0.281 counts only the multiplications that make
# scores: 8 of the 32 dimensions for all 2,048 keys, plus all 32 for the 64 shortlisted keys,
# against 32 for every key. It leaves out the top-k selection, the projections that produce
# the indexer's keys, the softmax, the value mixing and all memory traffic, so it is **not** a
# speedup. The shortlist lost the target in 1 trial of 8 (recall 0.875). And whether 64 keys of
# 2,048 are "enough" depends on the head: a diffuse head (sharpness 1) keeps only 22% of its
# probability mass in the shortlist and its output moves by 4.2 times its own size (the full
# output is an average of 2,048 random values, close to zero); a confident head (sharpness 3)
# keeps 84% and moves by 0.23. DeepSeek trains its indexer to imitate the main attention, which
# is what makes a top 2,048 safe there; a fixed, untrained indexer like ours gives no such promise.
#
# ## 11. Linear attention: a running sum instead of a guest list
#
# **Idea.** Softmax's weight $e^{q \cdot k}$ cannot be split into a part that depends only on
# $q$ times a part that depends only on $k$. Replace it with $\phi(q) \cdot \phi(k)$ for a positive
# feature map $\phi$ and it can: then $(\phi(Q)\phi(K)^\top)V = \phi(Q)\,(\phi(K)^\top V)$, and the
# right side never builds the $n \times n$ matrix. Causally, the small matrix $\phi(K)^\top V$
# becomes a running sum $S$ updated once per token, like the state of a recurrent network
# ([Katharopoulos et al., 2020](https://arxiv.org/abs/2006.16236)). The price: the state has a fixed
# size, and $\phi(q) \cdot \phi(k)$ never stretches score gaps the way $e^x$ does, so the weights
# are blunter.
#
# $$o_i = \frac{\phi(q_i)^\top S_i}{\phi(q_i)^\top z_i}, \qquad S_i = S_{i-1} + \phi(k_i)\, v_i^\top, \qquad z_i = z_{i-1} + \phi(k_i), \qquad \phi(x) = \operatorname{elu}(x) + 1$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $\phi$ | feature map, per entry: $x + 1$ for $x > 0$, $e^x$ otherwise (always positive) | $\phi(1, 0) = (2, 1)$ |
# | $S_i$ | running sum of outer products $\phi(k_j) v_j^\top$, $d_k \times d_v$ | (20, 22) |
# | $z_i$ | running sum of $\phi(k_j)$, for the normaliser | (5, 5) |
# | $o_i$ | output of token $i$ | $62/15$ |
#
# **By hand.** Keys $(1,0), (0,1), (1,1)$, values 2, 4, 6, third query $(1,0)$. Features of the
# keys: $(2,1), (1,2), (2,2)$. $S = 2 \cdot (2,1) + 4 \cdot (1,2) + 6 \cdot (2,2) = (20, 22)$,
# $z = (5, 5)$, $\phi(q) = (2, 1)$: $o_3 = (40 + 22)/(10 + 5) = 62/15 = 4.133$. The slow way gives
# the weights $5, 4, 6$ and the same $62/15$. Unscaled softmax on the same numbers weighs the keys
# $e, 1, e$ and gives exactly 4: linear attention is a *different* attention, not a faster copy.

# %%
def feature_map(x):
    """phi(x) = elu(x) + 1, entry by entry: x + 1 above zero, e^x at or below it; always positive."""
    x = require_array("x", x).astype(float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))  # the minimum keeps exp finite on the unused branch


def linear_attention_weights(Q, K):
    """The causal [n, n] weights linear attention implies: phi(q_i) . phi(k_j), each row divided by its sum."""
    Q, K = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2)
    weights = np.tril(feature_map(Q) @ feature_map(K).T)  # (n, n), the future zeroed
    return weights / weights.sum(axis=1, keepdims=True)


def linear_attention_quadratic(Q, K, V):
    """Linear attention the slow way: all n x n weights, then a weighted sum of the values."""
    return linear_attention_weights(Q, K) @ require_array("V", V, ndim=2)


# %% tags=["exercise"]
# Exercise 8: Write linear attention as a recurrence. Keep S (d_k, d_v) and z (d_k,), both zero at
# the start. For each token i: add phi(k_i) v_i^T to S and phi(k_i) to z, then output
# phi(q_i)^T S / phi(q_i)^T z. Use feature_map for phi. Return (outputs, S, z).
def linear_attention_recurrent(Q, K, V):
    """Causal linear attention from two running sums; returns (outputs [n, d_v], final S [d_k, d_v], final z [d_k])."""
    Q, K, V = require_array("Q", Q, ndim=2), require_array("K", K, ndim=2), require_array("V", V, ndim=2)
    if not (Q.shape[0] == K.shape[0] == V.shape[0] and Q.shape[1] == K.shape[1]):
        raise ValueError(f"need Q [n, d_k], K [n, d_k], V [n, d_v] for the same n; got {Q.shape}, {K.shape}, {V.shape}")
    ### BEGIN SOLUTION
    S, z = np.zeros((K.shape[1], V.shape[1])), np.zeros(K.shape[1])
    outputs = np.empty((Q.shape[0], V.shape[1]))
    for i, (q, k, v) in enumerate(zip(feature_map(Q), feature_map(K), V)):
        S += np.outer(k, v)  # pour this token's value in, weighted by its key features
        z += k  # and remember how much weight went in
        outputs[i] = q @ S / (q @ z)
    return outputs, S, z
    ### END SOLUTION


# %%
check_exercise("Exercise 8", check_linear_attention_contract, linear_attention_recurrent, globals())

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
assert np.allclose(fast, linear_attention_quadratic(Q200, K200, V200), atol=1e-12)
expect_raises(ValueError, linear_attention_recurrent, Q200, K200[:5], V200, match="same n")
expect_raises(TypeError, feature_map, None, match="x")

# Softmax against linear weights on the same 10 decisive queries (twice the usual size) and keys.
Q10, K10 = 2 * rng.standard_normal((10, 8)), rng.standard_normal((10, 8))
_, soft10 = sdpa(Q10, K10, K10, make_mask(10), return_weights=True)
lin10 = linear_attention_weights(Q10, K10)
peak_soft, peak_lin = soft10[5:].max(1).mean(), lin10[5:].max(1).mean()
print(f"largest weight in the last five rows, averaged: softmax {peak_soft:.2f}, linear {peak_lin:.2f}")
assert np.allclose(soft10.sum(1), 1) and np.allclose(lin10.sum(1), 1) and peak_soft > peak_lin


def plot_softmax_vs_linear(soft, lin, language="en"):
    """Two heatmaps of causal attention weights on the same queries and keys: softmax and linear."""
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.0))
    for ax, weights, title in ((axes[0], soft, localized(language, "softmax", "softmax")),
                               (axes[1], lin, localized(language, "linear, φ = elu + 1", "линейное, φ = elu + 1"))):
        ax.imshow(weights, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"{title}\n" + localized(language, "top weight", "макс. вес") + f" {weights[5:].max(1).mean():.2f}", fontsize=10)
        ax.set_xlabel(localized(language, "key", "ключ"))
        ax.set_xticks(range(0, len(weights), 3)), ax.set_yticks(range(0, len(weights), 3))
        ax.grid(False)
    axes[0].set_ylabel(localized(language, "query", "запрос"))
    fig.subplots_adjust(wspace=0.25, left=0.1, right=0.99, bottom=0.15, top=0.85)
    return fig


show_figure(
    plot_softmax_vs_linear(soft10, lin10, language=LANGUAGE),
    "Both heatmaps use the same 10 queries and keys; rows are queries, columns keys, darker is more weight (0 to 1), "
    "and every row sums to 1 inside its causal triangle. Softmax (left) concentrates each late row on a favourite "
    "key; linear attention (right) spreads the same rows thinly. The titles give the largest weight of the last "
    "five rows, averaged: the bluntness is the price of a fixed-size state.",
)
print("Linear attention: PASS")


# %% [markdown]
# ## 12. State-space models: a fixed-size state with a linear update
#
# **Idea.** A cup of tea on a desk keeps a fraction of its heat every minute and gains whatever
# you pour in; its temperature summarises every pour, older ones counting less. A state-space
# model (SSM) layer is that rule for each channel: the state $h$ is multiplied by $A$ and gets
# $B x_t$ added; the output reads $C h$. The update is *linear*, which buys a second way to compute
# the same outputs: unroll the loop and each output is a weighted sum of past inputs with weights
# $C A^k B$, a convolution that trains in parallel (S4, [Gu et al., 2021](https://arxiv.org/abs/2111.00396)).
# Generation runs the loop with a state that never grows.
#
# $$h_t = A\,h_{t-1} + B\,x_t, \qquad y_t = C\,h_t \qquad \Longleftrightarrow \qquad y_t = \sum_{k=0}^{t-1} \left(C A^{k} B\right) x_{t-k}$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $x_t$, $y_t$ | input and output at step $t$ (one channel) | $x = (1, 0, 0, 2)$ |
# | $h_t$ | state after step $t$, with $h_0 = 0$ | 1, 0.5, 0.25, 2.125 |
# | $A$, $B$, $C$ | keep factor, write factor, read factor | 0.5, 1, 1 |
# | $C A^k B$ | the kernel: how much an input $k$ steps old still counts | 1, 0.5, 0.25, 0.125 |
#
# **By hand.** With $A = 0.5$ and inputs $(1, 0, 0, 2)$ the loop gives $1, 0.5, 0.25$ and
# $0.5 \cdot 0.25 + 2 = 2.125$. The convolution: $y_4 = 1 \cdot 2 + 0.5 \cdot 0 + 0.25 \cdot 0 + 0.125 \cdot 1 = 2.125$.

# %%
def ssm_recurrent(x, A, B, C):
    """One-channel SSM run as a loop: h_t = A h_(t-1) + B x_t, y_t = C h_t (how it generates)."""
    x = require_array("x", x, ndim=1).astype(float)
    A, B, C = (require_real(name, value) for name, value in (("A", A), ("B", B), ("C", C)))
    h, y = 0.0, np.empty_like(x)
    for t, x_t in enumerate(x):
        h = A * h + B * x_t
        y[t] = C * h
    return y


def ssm_kernel(A, B, C, length):
    """The convolution kernel C A^k B for k = 0 .. length - 1: how much an input k steps old still counts."""
    length = require_int("length", length, minimum=1)
    return require_real("C", C) * require_real("A", A) ** np.arange(length) * require_real("B", B)


def ssm_convolution(x, A, B, C):
    """The same outputs as ssm_recurrent, as one convolution with the kernel (how a fixed SSM trains)."""
    x = require_array("x", x, ndim=1).astype(float)
    return np.convolve(x, ssm_kernel(A, B, C, len(x)))[: len(x)]  # y_t = sum_k kernel_k x_(t-k)


tea = (1.0, 0.0, 0.0, 2.0)
print("loop:", ssm_recurrent(tea, 0.5, 1, 1).tolist(), " kernel:", ssm_kernel(0.5, 1, 1, 4).tolist(),
      " convolution:", ssm_convolution(tea, 0.5, 1, 1).tolist())
REFERENCE.check("ssm.tea_states", ssm_recurrent(tea, 0.5, 1, 1))
REFERENCE.check("ssm.tea_kernel", ssm_kernel(0.5, 1, 1, 4))
x300 = rng.standard_normal(300)
assert np.allclose(ssm_recurrent(x300, 0.97, 0.3, 1.5), ssm_convolution(x300, 0.97, 0.3, 1.5), atol=1e-12)
expect_raises(TypeError, ssm_recurrent, tea, "0.5", 1, 1, match="A")


def plot_ssm_kernels(decays, steps, language="en"):
    """The kernel C A^k B (B = C = 1) against the age k of an input, one curve per keep factor A."""
    k = np.arange(steps)
    fig, ax = plt.subplots(figsize=(5.6, 2.7))
    for A, color in zip(decays, (Palette.RED, Palette.ORANGE, Palette.BLUE)):
        ax.plot(k, ssm_kernel(A, 1, 1, steps), color=color, label=f"A = {A}")
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
# ### Selective SSMs (Mamba): each token sets its own step
#
# **Idea.** A fixed SSM treats every token alike, so it must either write a lot (and forget fast)
# or write a little (and never absorb the important token). Mamba ([Gu and Dao, 2023](https://arxiv.org/abs/2312.00752))
# computes a step size $\Delta_t$ from each token: a large step overwrites the state with this
# token, a tiny step leaves the state alone. *Discretisation* turns the step into this token's
# keep and write factors.
#
# $$\Delta_t = \operatorname{softplus}(w\,u_t + \beta), \qquad \bar{A}_t = e^{\Delta_t a}, \qquad \bar{B}_t = \frac{e^{\Delta_t a} - 1}{a}\, b, \qquad h_t = \bar{A}_t\, h_{t-1} + \bar{B}_t\, x_t$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $u_t$ | what the model sees about token $t$; here a marker, 1 for the important token | 1 or 0 |
# | $w$, $\beta$ | learned weight and offset (set by hand here) | 10, $-5$ |
# | $\operatorname{softplus}(x)$ | $\log(1 + e^x)$: a smooth, always positive ramp | softplus(5) = 5.007 |
# | $a$, $b$ | negative decay rate, write strength | $-1$, 1 |
# | $\bar{A}_t$, $\bar{B}_t$ | this token's keep and write factors | 0.0067 and 0.9933 when marked |
#
# **By hand.** The marked 7 gets $\Delta = \operatorname{softplus}(5) = 5.007$, so
# $\bar{A} = e^{-5.007} = 0.0067$ and $\bar{B} = 0.9933$: the state becomes about $0.9933 \cdot 7 = 6.95$.
# Each of the nine ordinary tokens after it has $\Delta = \operatorname{softplus}(-5) = 0.0067$ and
# keeps 0.9933 of the state: $6.95 \cdot 0.9933^9 \approx 6.55$ at the end (plus a little noise).

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
    return keep, (keep - 1.0) / a * require_real("b", b)


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
expect_raises(ValueError, selective_ssm, RECALL_VALUES, deltas[:3], match="one step size per input")
expect_raises(TypeError, softplus, None, match="x")


def plot_selective_recall(values, selective, fixed, language="en"):
    """Inputs as bars; the selective state and fixed-step states as lines, position by position."""
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
# ### Training a selective SSM in parallel: the scan
#
# **Idea.** With $\bar{A}_t$ changing every step there is no single kernel, so no convolution.
# But the steps compose: "multiply by $a_1$, add $b_1$", then "multiply by $a_2$, add $b_2$", is itself
# one step of the same form. Merging neighbours, then neighbours two apart, then four apart,
# computes every state in $\lceil \log_2 T \rceil$ rounds of independent merges, a parallel
# scan (Mamba runs it in fast on-chip memory). The state of each position is the $b$ of its
# merged step.
#
# $$(a_1, b_1) \circ (a_2, b_2) = \left(a_1 a_2,\; a_2 b_1 + b_2\right), \qquad \text{rounds} = \lceil \log_2 T \rceil$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $(a, b)$ | one step: $h \mapsto a h + b$ | $(0.5, 1)$ |
# | $\circ$ | "first this step, then that one" | |
# | $a_2 b_1 + b_2$ | the first step's addition, faded by the second, plus the second's own | $0.5 \cdot 1 + 0 = 0.5$ |
# | $\lceil \log_2 T \rceil$ | rounds: how often $T$ can be halved, rounded up | 10 for $T = 1{,}024$ |
#
# **By hand.** The tea steps $(0.5, 1), (0.5, 0), (0.5, 0), (0.5, 2)$. Round 1 merges each with its
# left neighbour: $(0.5, 1), (0.25, 0.5), (0.25, 0), (0.25, 2)$. Round 2 merges each with the
# result two places left: $(0.25, 0.5) \circ (0.25, 2) = (0.0625, 2.125)$. The $b$ parts are
# $1, 0.5, 0.25, 2.125$: every state of the loop, in $\log_2 4 = 2$ rounds.

# %% tags=["exercise"]
# Exercise 9: Compute every state of h_t = a_t h_(t-1) + b_t (h_0 = 0) with a parallel scan.
# In each round, every position merges with the position `shift` places earlier (before the start,
# use the do-nothing step (1, 0)): (a_prev, b_prev) then (a, b) gives (a_prev * a, a * b_prev + b).
# Double `shift` each round until it reaches T. Return (states, rounds). Do not modify a or b.
def parallel_scan(a, b):
    """Every state of h_t = a_t h_(t-1) + b_t (h_0 = 0) in ceil(log2 T) rounds of merges; returns (states, rounds)."""
    a, b = require_array("a", a, ndim=1), require_array("b", b, ndim=1)
    if a.shape != b.shape:
        raise ValueError(f"a and b need one entry per step; got {a.size} and {b.size}")
    ### BEGIN SOLUTION
    a, b = a.astype(float), b.astype(float)  # copies: the caller's arrays stay untouched
    shift, rounds = 1, 0
    while shift < len(a):
        a_prev = np.concatenate([np.ones(shift), a[:-shift]])  # before the start: the do-nothing step (1, 0)
        b_prev = np.concatenate([np.zeros(shift), b[:-shift]])
        a, b = a_prev * a, a * b_prev + b  # both right-hand sides use this round's old a
        shift, rounds = 2 * shift, rounds + 1
    return b, rounds
    ### END SOLUTION


# %%
check_exercise("Exercise 9", check_parallel_scan_contract, parallel_scan, globals())

# %%
states, rounds = parallel_scan([0.5] * 4, [1.0, 0.0, 0.0, 2.0])
print(f"tea steps: states {states.tolist()} in {rounds} rounds")
keep, write = discretize(deltas)
scanned, _ = parallel_scan(keep, write * np.array(RECALL_VALUES))
print(f"the recall task through the scan: max |difference| from the loop {np.abs(scanned - selective).max():.1e}")
assert np.allclose(scanned, selective, atol=1e-12)
_, rounds_1024 = parallel_scan(np.full(1024, 0.99), rng.standard_normal(1024))
print(f"1,024 steps: {rounds_1024} rounds")
REFERENCE.check("ssm.scan_rounds_1024", rounds_1024)
expect_raises(ValueError, parallel_scan, [0.5, 0.5], [1.0], match="one entry per step")


# %% [markdown]
# ### The hybrid cache: a few suitcases among many backpacks
#
# An SSM layer carries a fixed backpack: channels times state numbers, at 10 tokens or 10
# million. An attention layer carries a suitcase that grows with every token. Hybrids such as
# Jamba put one attention layer among every eight ([Lieber et al., 2024](https://arxiv.org/abs/2403.19887)):
# the attention layers keep exact lookup, the SSM layers keep memory flat. (Jamba supports a
# 256K-token context; up to 140K tokens of it fit on a single 80 GB GPU.)
#
# $$\text{bytes} = L_{\text{att}} \cdot n \cdot 2\,H_{kv}\,d_h\,b \;+\; \left(L - L_{\text{att}}\right) \cdot D \cdot N \cdot b$$
#
# | Symbol | Meaning | Running example |
# |---|---|---|
# | $L$, $L_{\text{att}}$ | layers in all, attention layers among them | 32, 4 |
# | $2\,H_{kv}\,d_h\,b$ | one attention layer's cache per token | 4,096 bytes |
# | $D$, $N$ | SSM channels, state numbers per channel | 4,096, 16 |
#
# **By hand.** One SSM layer holds $4{,}096 \cdot 16 \cdot 2 = 131{,}072$ bytes (128 KiB) at any
# length; one attention layer holds $131{,}072 \cdot 4{,}096$ bytes = 537 MB at 128k tokens. With 4
# attention and 28 SSM layers the 128k cache drops from 17.2 GB to about 2.15 GB, one eighth.

# %%
def ssm_state_bytes(channels, state_size, bytes_per_value=2):
    """What an SSM layer carries between tokens: channels x state numbers, at any context length."""
    return require_int("channels", channels, minimum=1) * require_int("state_size", state_size, minimum=1) * require_int("bytes_per_value", bytes_per_value, minimum=1)


def hybrid_cache_bytes(context, layers=32, attention_layers=4, kv_heads=8, head_dim=128, channels=4096, state_size=16, bytes_per_value=2):
    """A hybrid stack: attention layers keep a growing KV cache, the other layers a fixed SSM state."""
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
assert hybrid_rows["all_attention_bytes_128k"] == bills[1]["cache_bytes"]
expect_raises(ValueError, hybrid_cache_bytes, 1024, attention_layers=33, match="attention_layers")
print("State-space models, the scan and the hybrid cache: PASS")

# %% [markdown]
# ## 13. Latent attention (MLA): cache the ingredients, never cook the dish
#
# **Idea.** Every head's keys and values are computed from the same token, so they are highly
# redundant. Multi-head latent attention (DeepSeek-V2, [DeepSeek-AI, 2024](https://arxiv.org/abs/2405.04434))
# squeezes each token into a short latent $c$ with a learned down-projection, caches only $c$, and
# rebuilds keys and values with up-projections $W^{UK}$ and $W^{UV}$. Better: since
# $q \cdot (c\,W^{UK}) = (q\,{W^{UK}}^\top) \cdot c$, the up-projection can be *absorbed* into the
# query, and $W^{UV}$ into the output projection, so full keys and values are never built. One
# thing does not absorb: rotary position embeddings rotate each key by its position, and a
# rotation that depends on the key's position cannot be folded into one fixed query-side matrix.
# So MLA carries position in a separate small RoPE key, shared by all heads and cached next to
# the latent: 512 + 64 numbers per token per layer in DeepSeek-V2 and V3.
#
# $$s_{ij}^{(h)} = \frac{\left(q_i^{(h)} {W_h^{UK}}^\top\right) \cdot c_j \;+\; r_i^{(h)} \cdot \rho_j}{\sqrt{d_{\text{nope}} + d_{\text{rope}}}}, \qquad o_i = \sum_h \left(\sum_j p_{ij}^{(h)} c_j\right) W_h^{UV} W_h^{O}$$
#
# | Symbol | Meaning | DeepSeek-V3 |
# |---|---|---|
# | $c_j$ | cached latent of token $j$ | 512 numbers |
# | $\rho_j$ | cached RoPE key of token $j$ (already rotated), shared by all heads | 64 numbers |
# | $q_i^{(h)}$, $r_i^{(h)}$ | head $h$'s query without position, and its rotated RoPE part | 128 and 64 |
# | $W_h^{UK}$, $W_h^{UV}$ | head $h$'s up-projections from the latent to key and value | $512 \times 128$ each |
# | $W_h^{O}$ | head $h$'s slice of the output projection | $128 \times d_{\text{model}}$ |
# | $p_{ij}^{(h)}$ | softmax of $s_{ij}^{(h)}$ over $j$ | |
#
# **By hand.** A token $x = (1, 0, 2, 1)$ with a down-projection that adds coordinates 1+3 and
# 2+4 gives the latent $c = (3, 1)$: 2 numbers cached instead of 8 (two heads of width 2, key and
# value). The up-projection copies it to both heads: $k = (3, 1, 3, 1)$. For $q = (1, 2, 0, 1)$,
# $q \cdot k = 3 + 2 + 0 + 1 = 6$, and the absorbed query $q\,{W^{UK}}^\top = (1, 3)$ gives
# $(1, 3) \cdot (3, 1) = 6$ without ever building $k$.

# %%
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
# Exercise 10: Attend on the latent cache without expanding it. Move each head's query into latent
# space (q_nope @ W_uk^T), score it against the latents, ADD the RoPE branch q_rope @ k_rope^T, scale
# by 1/sqrt(d_nope + d_rope), add the mask and take a stable softmax over the cached tokens. Mix the
# latents with those weights, then apply W_uv @ W_o per head and sum the heads. Never form latent @ W_uk.
def mla_absorbed_attention(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask=None):
    """Latent attention with W_uk absorbed into the query and W_uv into the output: no key or value is rebuilt.

    Same arguments and result as mla_expanded_attention.
    """
    q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask = _mla_shapes(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask)
    ### BEGIN SOLUTION
    q_latent = q_nope @ np.swapaxes(W_uk, 1, 2)  # (H, T_q, d_c): each query moved into latent space
    scale = 1.0 / math.sqrt(q_nope.shape[-1] + q_rope.shape[-1])  # the full key width: no-position + RoPE parts
    scores = (q_latent @ latent.T + q_rope @ k_rope.T) * scale + mask  # (H, T_q, T_k): position only via RoPE
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    mixed = weights @ latent  # (H, T_q, d_c): blend the cached latents first ...
    return np.einsum("hqc,hcm->qm", mixed, W_uv @ W_o)  # ... then one folded matrix per head, heads summed
    ### END SOLUTION


# %%
check_exercise("Exercise 10", check_latent_absorption_contract, mla_absorbed_attention, globals())

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
assert np.allclose(expanded_out, absorbed_out, atol=1e-12)
# The negative test: drop the RoPE branch and the outputs change, because position lives only there.
without_rope = mla_absorbed_attention(mla_args[0], np.zeros_like(mla_args[1]), *mla_args[2:], decode_mask)
print(f"absorbed without the RoPE branch: max |difference| {np.abs(without_rope - expanded_out).max():.2f} (must be large)")
assert not np.allclose(without_rope, expanded_out, atol=1e-3)
expect_raises(ValueError, mla_absorbed_attention, mla_args[0], mla_args[1][..., :1], *mla_args[2:], match="q_rope")
expect_raises(ValueError, mla_absorbed_attention, *mla_args, np.full((Tq, Tk), -np.inf), match="fully blocked")


# %% [markdown]
# **Why RoPE will not absorb.** Suppose the key were rotated by its position $n$ after the
# up-projection, $k_n = R_n W c$, and the query by its position $m$, $q_m = R_m q$. Rotations
# compose, $R_m^\top R_n = R_{n - m}$, so the score is $q^\top R_{n-m} W c = \left(W^\top R_{n-m}^\top q\right) \cdot c$.
# The "absorbed query" $W^\top R_{n-m}^\top q$ now depends on the key's position $n$: a different
# matrix for every cached token, which is exactly the expansion we wanted to avoid. The cell
# below checks the identity and shows the absorbed query changing with $n$; the figure follows
# its entries as the distance grows. The decoupled design sidesteps it: the latent part has no
# rotation (its absorbed query is one fixed vector), and the small RoPE key carries position.

# %%
def rotation(angle):
    """The 2 x 2 rotation by `angle` radians."""
    return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])


W_small = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])  # (rotated width 2, latent width 3)
q_small, c_small = np.array([1.0, 0.5]), np.array([0.2, -0.4, 0.7])
m_pos, n_pos = 0.3, 1.1  # positions as angles (one RoPE frequency)
rotated_score = (rotation(m_pos) @ q_small) @ (rotation(n_pos) @ W_small @ c_small)
effective_query = W_small.T @ rotation(n_pos - m_pos).T @ q_small
assert abs(rotated_score - effective_query @ c_small) < 1e-12
assert not np.allclose(effective_query, W_small.T @ rotation(0.8 - m_pos).T @ q_small)  # another key position, another query
distances = np.arange(0, 13) * 0.5
effective = np.array([W_small.T @ rotation(d).T @ q_small for d in distances])  # (distances, d_c)
print(f"absorbed query entries vary with the key's distance: ranges {np.ptp(effective, axis=0).round(2).tolist()}")


def plot_rope_obstruction(distances, effective, language="en"):
    """Entries of the absorbed query W^T R(n - m)^T q against the query-key distance: no single fixed vector."""
    fig, ax = plt.subplots(figsize=(5.8, 2.7))
    for entry, color in zip(effective.T, (Palette.BLUE, Palette.ORANGE, Palette.GREEN)):
        ax.plot(distances, entry, "o-", color=color, markersize=3)
    ax.axhline(0, color=Palette.GREY, linewidth=0.8)
    ax.set_xlabel(localized(language, "rotation angle of n - m (radians)", "угол поворота n - m (радианы)"))
    ax.set_ylabel(localized(language, "absorbed query entry", "элемент поглощённого запроса"))
    ax.set_title(localized(language, "RoPE on the latent: the absorbed query moves", "RoPE на латенте: поглощённый запрос меняется"))
    fig.subplots_adjust(left=0.13, right=0.98, bottom=0.18, top=0.88)
    return fig


show_figure(
    plot_rope_obstruction(distances, effective, language=LANGUAGE),
    "Each line is one entry of the absorbed query W^T R(n - m)^T q, which would have to be fixed for the absorption "
    "trick to work; the x-axis is the rotation between the query's and the key's positions. The entries swing as the "
    "key moves, so a rotated latent would need a new absorbed query for every cached token. MLA keeps the latent "
    "unrotated (its absorbed query is a flat line) and puts position into a separate 64-number key.",
)
print("Latent attention: PASS")


# %% [markdown]
# ## 14. Quantized KV cache: fewer bits, and where to put the scales
#
# **Idea.** Store each cached number as a small signed integer code plus a shared scale: with
# $b$ bits the codes run from $-(2^{b-1} - 1)$ to $2^{b-1} - 1$, and a group of numbers shares
# one 16-bit scale, its largest magnitude divided by the top code. Which numbers share a scale
# matters. Keys tend to have a few *channels* that are large for every token; with one scale per
# token, those channels set the scale and the small channels round to zero. KIVI
# ([Liu et al., 2024](https://arxiv.org/abs/2402.02750)) therefore quantizes keys per channel and
# values per token, and reaches 2 bits.
#
# $$\text{code} = \operatorname{round}\left(\frac{x}{s}\right), \qquad s = \frac{\max |x_{\text{group}}|}{2^{b-1} - 1}, \qquad \text{bytes per token} = 2\,L\,H_{kv} \left(d_h \cdot \frac{b}{8} + \frac{16}{8}\right)$$
#
# | Symbol | Meaning | Example |
# |---|---|---|
# | $b$ | bits per code | 4: codes $-7 \dots 7$ |
# | $s$ | the group's scale (16-bit) | $0.7 / 7 = 0.1$ |
# | group | the numbers sharing one scale: one token's vector, or one channel over tokens | |
# | $2\,L\,H_{kv}$ | head vectors one token stores | $2 \cdot 32 \cdot 8 = 512$ |
#
# **By hand.** The key $(0.7, -0.3, 0.2, 0.04)$ at 4 bits: $s = 0.1$, codes $(7, -3, 2, 0)$,
# read back as $(0.7, -0.3, 0.2, 0)$: the small 0.04 is lost. On the running example a token costs
# $512 \cdot (128 \cdot 0.5 + 2) = 33{,}792$ bytes instead of 131,072: 3.9 times less.

# %%
def quantize(x, bits, shared_axis):
    """Symmetric integer codes of x with one scale per group: the numbers along `shared_axis` share a scale."""
    x = require_array("x", x, min_ndim=1).astype(float)
    top = 2 ** (require_int("bits", bits, minimum=2, maximum=16) - 1) - 1  # largest code: 7 for 4 bits
    scale = np.abs(x).max(axis=shared_axis, keepdims=True) / top
    scale = np.where(scale > 0, scale, 1.0)  # an all-zero group keeps code 0 with any scale
    return np.round(x / scale).astype(np.int32), scale


def dequantize(codes, scale):
    """Numbers back from their codes and scales."""
    codes, scale = require_array("codes", codes), require_array("scale", scale)
    try:
        return codes * scale
    except ValueError:
        raise ValueError(f"scale of shape {scale.shape} does not broadcast against codes of shape {codes.shape}") from None


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
assert quantized_kv_bytes_per_token(32, 8, 128, 16, scale_bits=0) == per_token
expect_raises(ValueError, quantize, [1.0], 1, shared_axis=-1, match="bits")
expect_raises(ValueError, dequantize, codes, np.ones(3), match="broadcast")


def quantized_attention_error(bits, key_axis, outlier_channels=4, outlier_scale=10.0, n=64, d=64, seed=SEED):
    """Relative change of causal attention's output when K (scales shared along key_axis) and V (per token) are quantized."""
    gen = np.random.default_rng(seed)
    Q, K, V = gen.standard_normal((n, d)), gen.standard_normal((n, d)), gen.standard_normal((n, d))
    K[:, :outlier_channels] *= outlier_scale  # a few channels large for every token, as in trained models' keys
    exact = sdpa(Q, K, V, make_mask(n))
    K_hat, V_hat = dequantize(*quantize(K, bits, key_axis)), dequantize(*quantize(V, bits, -1))
    return float(np.linalg.norm(sdpa(Q, K_hat, V_hat, make_mask(n)) - exact) / np.linalg.norm(exact))


BITS = (8, 4, 3)
errors = {
    "plain keys, per token": [quantized_attention_error(b, -1, outlier_channels=0) for b in BITS],
    "outlier keys, per token": [quantized_attention_error(b, -1) for b in BITS],
    "outlier keys, per channel (KIVI)": [quantized_attention_error(b, 0) for b in BITS],
}
print(f"{'relative output error':34s} " + " ".join(f"{b:>6}-bit" for b in BITS))
for name, row in errors.items():
    print(f"{name:34s} " + " ".join(f"{100 * e:>9.1f}%" for e in row))
assert all(c < t for c, t in zip(errors["outlier keys, per channel (KIVI)"], errors["outlier keys, per token"]))
two_bit = {axis: quantized_attention_error(2, axis) for axis in (-1, 0)}
print(f"at 2 bits (codes -1, 0, 1): per token {100 * two_bit[-1]:.0f}%, per channel {100 * two_bit[0]:.0f}%: both unusable this simply")


def plot_quantization_errors(bits, errors, language="en"):
    """Grouped bars: relative attention-output error per bit width, one bar per quantization scheme."""
    fig, ax = plt.subplots(figsize=(6.2, 2.8))
    x, width = np.arange(len(bits)), 0.26
    labels = {"plain keys, per token": localized(language, "plain keys, per token", "обычные ключи, по токенам"),
              "outlier keys, per token": localized(language, "outlier keys, per token", "ключи с выбросами, по токенам"),
              "outlier keys, per channel (KIVI)": localized(language, "outlier keys, per channel (KIVI)", "ключи с выбросами, по каналам (KIVI)")}
    for k, ((name, row), color) in enumerate(zip(errors.items(), (Palette.GREY, Palette.RED, Palette.GREEN))):
        ax.bar(x + (k - 1) * width, 100 * np.array(row), width, color=color, label=labels[name])
    ax.set_yscale("log")
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
print("Quantized KV cache: PASS")


# %% [markdown]
# On ordinary random keys an 8-bit cache moves the output by under 1% and a 4-bit cache by about
# 13%. Keys with four large channels make one-scale-per-token much worse (42.6% at 4 bits); giving
# each channel its own scale brings that back to 18.5%. At 2 bits this simple scheme fails either
# way; KIVI gets there with small groups of tokens per scale and a recent window kept in full
# precision. Trained models tolerate rounding better than random data suggests; measure on your
# own model before trusting any bit width.

# %% [markdown]
# ## 15. Putting it together: what each design keeps as the context grows
#
# **Idea.** Every design in this module moves the cache line down (fewer heads, a latent, fewer
# bits) or bends it flat (a window, a fixed state, mostly-SSM hybrids). A line that grows in
# proportion to $n$ keeps every token exactly; a flat line has given something up.
#
# $$\text{cache}(n) = \underbrace{\beta \cdot n}_{\text{grows with } n} + \underbrace{\gamma}_{\text{fixed}}$$
#
# | Symbol | Meaning | Example (running shape) |
# |---|---|---|
# | $\beta$ | bytes per token of the layers that keep every token | 128 KiB for GQA-8, 16 KiB for the hybrid |
# | $\gamma$ | bytes that do not depend on $n$: windows once full, SSM states | 0.54 GB for a 4k window |
#
# **By hand.** At 1M tokens: MHA with 32 KV heads needs $4 \cdot 137.4 = 550$ GB, GQA 137 GB, GQA at
# 4 bits 35 GB, the latent cache 38.7 GB, the hybrid 17.2 GB, the 4k window 0.54 GB, the SSM stack
# 4.2 MB. The cell prints each value.

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
    fig, ax = plt.subplots(figsize=(7.0, 3.5))
    for (name, values), color in zip(curves.items(), colors):
        ax.loglog(contexts, values, color=color, linewidth=2, label=localized(language, name, ru[name]))
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
    "only shifts them down. The sliding window bends flat once 4,096 tokens are cached, and the state-space stack is "
    "flat from the start: flat lines are what make a million tokens affordable, and they are the lines that forget.",
)
assert at_1m["multi-head, 32 KV heads"] > 80 * GB > at_1m["grouped-query 8, 4-bit"] > at_1m["sliding window 4,096"]
print("Every design at a glance: PASS")

# %% [markdown]
# | Design | What it cuts | What it gives up |
# |---|---|---|
# | Tiled exact attention (FlashAttention) | score-matrix memory, to a tile; skipped blocks' work | nothing: the outputs are exact |
# | Grouped-query / multi-query heads | the cache, by the group size | a little modelling capacity |
# | Sliding window (+ rolling buffer) | compute to $n \cdot w$, cache to $w$ tokens | direct access beyond the window; distant facts arrive relayed and weakened |
# | Sinks + window (StreamingLLM) | the cache, to $s + w$ tokens, with stable streaming | any token evicted from the window is gone |
# | Sparse patterns, learned shortlists | compute, when whole blocks are skipped | pairs outside the pattern; mass outside the shortlist |
# | Linear attention | compute to $n \cdot d^2$, cache to a fixed state | sharp, exact recall |
# | State-space models (Mamba) | the same | the same, softened by selectivity |
# | Hybrid SSM + attention | most of the cache | a little of both |
# | Latent KV (MLA) | the cache, about 57x under DeepSeek-V2's convention (71x against real key widths) | extra matrix work; position needs a separate RoPE key |
# | Quantized KV | the cache, by about 16 / bits | precision; keys need per-channel scales |
#
# ## In 20 seconds
#
# - Long context sends two bills: scores grow with $n^2$ (compute), the KV cache with $n$ (memory,
#   per layer, per conversation). A model card's layers, KV heads, head width and windows size the
#   cache exactly.
# - Tiled streaming attention (online softmax over blocks) gives the *same* outputs as dense
#   attention, skips blocks a causal mask or window empties, and keeps memory linear in $n$.
# - Windows read the last $w$ tokens; depth still reaches $L(w - 1)$ back, and a rolling buffer
#   caps the cache at $w$ tokens. Sinks keep streaming stable but cannot bring evicted tokens back.
# - Linear attention and SSMs summarise the past in a fixed state: constant memory, blurrier recall;
#   selective SSMs choose per token what to keep and train with a parallel scan. Hybrids keep a
#   few attention layers for exact lookup.
# - To shrink the cache: share KV heads, cache a latent and absorb the up-projections (RoPE goes
#   in its own small key), and store fewer bits, with per-channel scales for keys.
#
# ## Self-test
#
# 1. **Why does doubling the context quadruple the score work but only double the cache?**
#    *Answer.* Every query is scored against every key, an $n \times n$ table; the cache stores one
#    key and one value per token, a list that grows by one entry per token.
# 2. **gpt-oss-120b has 36 layers, 8 KV heads of width 64, and a 128-token window on half its
#    layers. What does a 128k-token conversation cache, and why is it not 9 GiB?**
#    *Answer.* About 4.5 GiB: only the 18 full layers grow (2,048 bytes per layer per token); the 18
#    windowed layers hold 128 tokens each, 4.5 MiB in all.
# 3. **Where does a gpt-oss sink logit go, and what does it do to a row?**
#    *Answer.* Into the softmax's denominator, one per query head, with a zero value vector. It
#    takes a share of the probability (for example 53.69% against 128 keys scoring 0 when the sink is
#    5), shrinking every token's weight by the same factor; with no visible token the output is 0.
# 4. **Your GQA code has the right shapes but wrong outputs. What is the likely bug?**
#    *Answer.* The KV heads were tiled (kv0, kv1, kv0, kv1) instead of repeated (kv0, kv0, kv1, kv1),
#    so query heads read another group's keys and values.
# 5. **Why is tiled attention exact and not an approximation?**
#    *Answer.* The online softmax carries the running max and sum, and rescales everything
#    accumulated so far by $\alpha = e^{m_{\text{old}} - m_{\text{new}}}$ whenever the max grows, so
#    after the last block $A / \ell$ is the softmax average itself.
# 6. **Decoding token 5 with a cache of tokens 0 to 4, you pass `is_causal=True` to
#    `F.scaled_dot_product_attention` with one query. What goes wrong?**
#    *Answer.* PyTorch aligns the causal triangle top-left, so the one query is treated as position
#    0 and sees only key 0. Pass an explicit mask, or (here) the query's absolute position
#    (`query_start`).
# 7. **Can a model with a 4,096-token window in all 32 layers be influenced by a token 100,000
#    positions back?**
#    *Answer.* Yes in principle (the reach is 131,040), but only by relay through at least 25 hops,
#    so it arrives weakened; exact lookup works only inside the window.
# 8. **Why can linear attention run as a recurrence and softmax attention cannot?**
#    *Answer.* $\phi(q) \cdot \phi(k)$ splits into a query part and a key part, so the key-value
#    parts can be summed ahead of time into a fixed state; $e^{q \cdot k}$ does not split.
# 9. **How does MLA save memory without changing the outputs, and why does it need a RoPE key?**
#    *Answer.* Keys and values are a cached latent times fixed up-projections, which fold into the
#    query and the output projection. A position-dependent rotation cannot be folded into a fixed
#    matrix, so position travels in a separate small key shared by the heads.
# 10. **Why quantize keys per channel?**
#     *Answer.* A few key channels are large for every token; with one scale per token they set the
#     scale and the small channels round to zero. One scale per channel isolates them.
#
# ## The papers behind this module
#
# - Vaswani et al., *Attention Is All You Need* (2017): https://arxiv.org/abs/1706.03762 (the base model: 8 heads of width 64)
# - Milakov and Gimelshein, *Online normalizer calculation for softmax* (2018): https://arxiv.org/abs/1805.02867
# - Dao et al., *FlashAttention* (2022): https://arxiv.org/abs/2205.14135; Dao, *FlashAttention-2* (2023): https://arxiv.org/abs/2307.08691
# - Shazeer, *Fast Transformer Decoding: One Write-Head is All You Need* (MQA, 2019): https://arxiv.org/abs/1911.02150
# - Ainslie et al., *GQA* (2023): https://arxiv.org/abs/2305.13245
# - Xiao et al., *Efficient Streaming Language Models with Attention Sinks* (2023): https://arxiv.org/abs/2309.17453
# - OpenAI, *gpt-oss-120b and gpt-oss-20b Model Card* (2025): https://arxiv.org/abs/2508.10925
# - Jiang et al., *Mistral 7B* (2023): https://arxiv.org/abs/2310.06825
# - Child et al., *Sparse Transformers* (2019): https://arxiv.org/abs/1904.10509; Beltagy et al., *Longformer* (2020): https://arxiv.org/abs/2004.05150; Zaheer et al., *BigBird* (2020): https://arxiv.org/abs/2007.14062
# - Katharopoulos et al., *Transformers are RNNs* (2020): https://arxiv.org/abs/2006.16236
# - Gu, Goel and Ré, *S4* (2021): https://arxiv.org/abs/2111.00396; Gu and Dao, *Mamba* (2023): https://arxiv.org/abs/2312.00752; Dao and Gu, *Mamba-2* (2024): https://arxiv.org/abs/2405.21060
# - Lieber et al., *Jamba* (2024): https://arxiv.org/abs/2403.19887
# - DeepSeek-AI, *DeepSeek-V2* (2024): https://arxiv.org/abs/2405.04434; *DeepSeek-V3* (2024): https://arxiv.org/abs/2412.19437
# - Liu et al., *KIVI* (2024): https://arxiv.org/abs/2402.02750
# - Kwon et al., *PagedAttention / vLLM* (2023): https://arxiv.org/abs/2309.06180 (2-4x throughput at the same latency as FasterTransformer and Orca)
# - Hsieh et al., *RULER* (2024, COLM version): https://arxiv.org/abs/2404.06654; Liu et al., *Lost in the Middle* (2023): https://arxiv.org/abs/2307.03172

# %%
print(f"reference schema version {REFERENCE.value('schema_version')}")
checked = REFERENCE.assert_all_used()
print(f"{checked} reference values of {REFERENCE_SOURCE} were used or checked, none left unused. Module 5: PASS")
