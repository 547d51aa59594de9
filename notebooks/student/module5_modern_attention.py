# %% [markdown]
# <!-- builder:begin header -->
# # Module 5 · Modern Attention Mechanisms · Student edition
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/student/module5_modern_attention.ipynb)
#
# *Provenance: course builder 0.1.0; reference `references/module5.json`, SHA-256 `c85e2b3d1f07c721b5354867cfc578e6e0cb29ee0af73eba81110fa5e351e9d3`.*
# <!-- builder:end sha256=efafd20bfe73aa597f478bdf0f8ea0a5bbf9848e628fd238a2a5696daa1680d5 -->

# %% [markdown]
# **Student edition.** The functions below are stubs that raise `NotImplementedError`; replace the line `# Your code here.` and the `raise` under it with your code. The cell right after each exercise runs its contract check and tells you which property passes and which fails, on what input, with the expected and actual values.
#
# If you skip an exercise, its check cell stops *Run all* with `NotImplementedError`, and the hidden reference solution (the collapsed cell above each exercise) takes over, so you can run the later cells one by one and come back later.
#
# - (none yet)

# %% [markdown]
# **How to run this notebook.** Use *Runtime → Run all*. A CPU runtime is enough. The first
# code cell installs only what is missing, and on Colab that is nothing. Every section ends
# with a check that stops the notebook loudly if a number is wrong.

# %%
# Setup 1 of 3: install only the allow-listed packages that are missing.
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

install_missing(["numpy", "torch", "matplotlib"])

# %%
# Setup 2 of 3: imports, seeds and a plotting backend that also works as a plain script.
import math
import sys

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
torch.use_deterministic_algorithms(True)
ENVIRONMENT = report_environment()


# %%
# Setup 3 of 3: the frozen reference metrics, verified against their SHA-256 before any use.
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
REFERENCE_SHA256 = "c85e2b3d1f07c721b5354867cfc578e6e0cb29ee0af73eba81110fa5e351e9d3"
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
    "gpt_oss_mha_hypothetical": 589824,
    "gpt_oss_mqa_hypothetical": 9216
  },
  "mla": {
    "bytes_per_token": 70272,
    "mha_equivalent_bytes_per_token": 3997696,
    "raw_element_ratio": 56.888888888888886
  },
  "online_softmax_trace": {
    "alpha": 0.36787944117144233,
    "l1": 1.3678794411714423,
    "l2": 1.5852997230319539,
    "n1": 1.7357588823428847,
    "n2": 3.966890002140263,
    "output": 2.502296533903012
  },
  "schema_version": 2,
  "score_matrix": {
    "n_4096_fp32_bytes": 67108864,
    "n_8192_fp32_bytes": 268435456,
    "tile_128_fp32_bytes": 65536
  }
}
"""
# builder:end sha256=4b136c33bc5b593f3b91d7e641182153607fa4bfd089123c4c66ef6038f8a0ce

REFERENCE = load_reference(REFERENCE_JSON, REFERENCE_SHA256, REFERENCE_SOURCE)
print(f"{REFERENCE_SOURCE} verified: sha256 {REFERENCE_SHA256}")
