# %% [markdown]
# <!-- builder:begin header -->
# # Module 3 · The Basic Transformer · Student edition
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/student/module3_basic_transformer.ipynb)
#
# *Provenance: course builder 0.1.0; reference `references/module3.json`, SHA-256 `174a3877d913e80b5f074c8111debc84a368a94f39b2b74fbf67b0cc4e507137`.*
# <!-- builder:end sha256=e8b1b59889d7a110e3affa1b1a9ab729057f0e155c9df23003c2ff5cbe1294ef -->

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
    matplotlib.use("Agg")  # `python notebooks/module3_basic_transformer.py` draws off-screen

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

SEED = 18
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
# builder:begin reference module3
REFERENCE_SOURCE = "references/module3.json"
REFERENCE_SHA256 = "174a3877d913e80b5f074c8111debc84a368a94f39b2b74fbf67b0cc4e507137"
REFERENCE_JSON = r"""{
  "attention": {
    "allowed": [
      [true, false, false],
      [true, true, false],
      [true, true, true]
    ],
    "k": [
      [1.0, 0.0],
      [0.0, 1.0],
      [1.0, 1.0]
    ],
    "output": [
      [1.0, 0.0],
      [0.3302384506733431, 1.3395230986533138],
      [1.7587246087113846, 1.0]
    ],
    "q": [
      [1.0, 0.0],
      [0.0, 1.0],
      [1.0, 1.0]
    ],
    "scores": [
      [0.7071067811865475, null, null],
      [0.0, 0.7071067811865475, null],
      [0.7071067811865475, 0.7071067811865475, 1.414213562373095]
    ],
    "v": [
      [1.0, 0.0],
      [0.0, 2.0],
      [3.0, 1.0]
    ],
    "weights": [
      [1.0, 0.0, 0.0],
      [0.3302384506733431, 0.6697615493266569, 0.0],
      [0.2482550782577231, 0.2482550782577231, 0.5034898434845538]
    ]
  },
  "layer_norm": {
    "input": [1.0, 2.0, 3.0, 4.0],
    "mean": 2.5,
    "normalized": [-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738],
    "variance": 1.25
  },
  "next_token_nll": {
    "logits": [1.2, 0.3, -0.4, 2.0],
    "nll": 0.5439104980979277,
    "probabilities": [0.2608237210556189, 0.10604301152185992, 0.05265940109153875, 0.5804738663309824],
    "target": 3
  },
  "parameter_floor": {
    "d_ff": 2048,
    "d_model": 512,
    "decoder_layer": 4194304,
    "encoder_layer": 3145728,
    "ffn_share_encoder": 0.6666666666666666,
    "ffn_weights": 2097152,
    "mha_weights": 1048576
  },
  "positional_encoding": {
    "d_model": 4,
    "length": 5,
    "table": [
      [0.0, 1.0, 0.0, 1.0],
      [0.8414709848078965, 0.5403023058681398, 0.009999833334166664, 0.9999500004166653],
      [0.9092974268256817, -0.4161468365471424, 0.01999866669333308, 0.9998000066665778],
      [0.1411200080598672, -0.9899924966004454, 0.02999550020249566, 0.9995500337489875],
      [-0.7568024953079282, -0.6536436208636119, 0.03998933418663416, 0.9992001066609779]
    ]
  },
  "scaling_experiment": {
    "d_k": 64,
    "relative_tolerance": 0.08,
    "samples": 50000,
    "scaled_variance_target": 1.0,
    "seed": 18,
    "unscaled_variance_target": 64.0
  },
  "schema_version": 1,
  "tiny_lm": {
    "accuracy_threshold": 0.99,
    "context": 12,
    "continuation_accuracy_threshold": 0.95,
    "learning_rate": 0.03,
    "loss_threshold": 0.02,
    "new_tokens": 15,
    "period": [0, 1, 2, 3, 4, 5],
    "seed": 18,
    "steps": 121,
    "training_repeats": 20,
    "vocab_size": 6
  }
}
"""
# builder:end sha256=567b44eb63864cd084b148c4c6e064f31550815fefed2f3005b8d677cf00ccac

REFERENCE = load_reference(REFERENCE_JSON, REFERENCE_SHA256, REFERENCE_SOURCE)
print(f"{REFERENCE_SOURCE} verified: sha256 {REFERENCE_SHA256}")
