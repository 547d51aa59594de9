# %% [markdown]
# <!-- builder:begin header -->
# # Module 3 · The Basic Transformer · Student edition
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/student/module3_basic_transformer.ipynb)
#
# *Provenance: course builder 0.1.0; reference `references/module3.json`, SHA-256 `227b5388a255b981441268d251018a22dbeba0f562a6852f03c5a652840ae79d`. Licence: text and figures CC BY-SA 4.0, code MIT.*
# <!-- builder:end sha256=50a826dab9809a8103578efe83f130abd034188d8e0b7307a7e0269b903388f3 -->

# %% [markdown]
# **Student edition.** The functions below are stubs that raise `NotImplementedError`; replace the line `# Your code here.` and the `raise` under it with your code. The cell right after each exercise runs its contract check and tells you which property passes and which fails, on what input, with the expected and actual values.
#
# *Run all* reaches the end: an exercise you have not touched prints "not attempted yet" and the cells after it use the reference solution. An exercise you attempted that fails stops *Run all* at its check cell; the reference takes over there too, so *Runtime → Run after* on that cell (Colab) or *Run → Run Selected Cell and All Below* on the next one (JupyterLab) goes on. `show_reference("Exercise 1")` prints a solution; the last cell lists the exercises passed, failed and not attempted.
#
# **How this notebook is graded.** The grader finds your exercise cells and takes the functions, classes, imports and UPPER_CASE constants you define there and in cells of your own. It runs the same contract checks, one exercise at a time, on the reference solutions of earlier exercises, so one mistake costs one exercise. Your code runs in a separate process with a time limit; editing other cells changes nothing.
#
# - **Exercise 1:** `sinusoidal_encoding`
# - **Exercise 2:** `causal_allowed`
# - **Exercise 3:** `scaled_dot_product_attention`
# - **Exercise 4:** `split_heads`, `merge_heads`, `repeat_kv_heads`
# - **Exercise 5:** `MultiHeadSelfAttention`
# - **Exercise 6:** `layer_norm`
# - **Exercise 7:** `token_distribution`
# - **Exercise 8:** `greedy_trace`
# - **Exercise 9:** `apply_rope`
# - **Exercise 10:** `RMSNorm`
# - **Exercise 11:** `SwiGLU`
# - **Exercise 12:** `CapstoneAttention`
# - **Exercise 13:** `CapstoneBlock`, `CapstoneLM`
# - **Exercise 14:** `induction_batch`, `train_step`, `fit_induction`, `induction_accuracy`
# - **Exercise 15:** `LayerKV`, `KVCache`, `generate`

# %% [markdown]
# ## Level 1 · Attention for practitioners
#
# **In one sentence.** Attention is the step where each token of the input compares itself with
# every other token, decides which ones matter to it, and rebuilds itself as a weighted mix of
# them. Because the comparison covers all pairs of tokens, attention sets a model's context
# limit, the price of a long prompt, and how much GPU memory a conversation occupies.
#
# **When you need to know this.** When a decision depends on its cost: picking a model by its
# context window or by the K/V heads on its model card, choosing between one enormous prompt and
# retrieval, sizing a GPU, or explaining why a long chat pauses before its first output token.
# The telltale sign is latency and cost that grow with the length of the *conversation*, not of
# the *answer*.
#
# **Four facts to carry away**, each computed later in this notebook:
#
# - Reading a prompt costs work that grows with the *square* of its length: double the prompt and
#   the score step does four times the work (section 9).
# - Every live conversation holds a **KV cache** that grows by a fixed number of bytes per token:
#   131,072 for Llama 3.1 8B (section 9, and the appendix *Attention in practice*).
# - Models that share **K/V heads** (GQA, section 8) shrink that cache: 4× for Llama 3.1 8B.
# - Long prompts are read unevenly: facts in the middle are recalled worst (the appendix *Attention in practice*).
#
# **Words you will meet**, with where each is built:
#
# | Term | Meaning | Built in |
# |---|---|---|
# | token | a piece of text (a word or part of one) that the model reads as one vector | not built here (splitting text is a tokenizer's job); used from section 2 on |
# | context window | the most tokens a model accepts at once, prompt plus answer | section 9 |
# | query, key, value | the three vectors each token makes: what it looks for, what it offers, what it hands over | section 2 |
# | head | one independent attention of width $d_k$ (also written $d_{head}$: the same number) | section 8 |
# | K/V heads | the key/value heads that query heads read; fewer than query heads in GQA and MQA | section 8 |
# | KV cache | the keys and values of past tokens, kept so each new token costs one row of attention | sized in sections 8 and 9 (its mask in section 4) |
# | FLOPs | floating-point operations; one multiply-add counts as 2 | section 9 |
# | prefix | the start of a prompt; a prefix that repeats byte for byte can be cached | section 9 |
# | nats | the unit of a loss measured with the natural logarithm; 1 nat ≈ 1.44 bits | section 12 |
#
# **Go deeper.** Level 2 builds attention from a handful of numbers: softmax on a pronoun's
# scores; queries, keys and values; positions; masks; the full formula, checked against
# PyTorch; the √d_k scaling measured across widths; many heads sharing keys and values; the n²
# curve; the rest of a decoder block; and a tiny language model that must use attention to solve
# its task. The options, costs and failure modes a practitioner weighs follow in an appendix.

# %% [markdown]
# **How to run this notebook.** Use *Runtime → Run all* (JupyterLab: *Run → Run All Cells*). A CPU runtime is enough. The first
# code cell installs only what is missing, and on Colab that is nothing. Every section ends
# with a check that stops the notebook loudly if a number is wrong.
#
# **When a check stops the notebook.** After every exercise a check cell judges your function. An
# exercise you have not touched prints "not attempted yet", and *Run all* goes on with the reference
# solution in its place. An exercise you attempted that fails stops *Run all* at its own check, which
# shows the broken property, the input, expected against actual and the usual cause. Later cells then
# use the reference: to go on, click that check and choose *Runtime → Run after* (Colab) or select the
# cell below it and choose *Run → Run Selected Cell and All Below* (JupyterLab). `show_reference("Exercise 3")`
# prints a solution; fix your cell, run it and its check again. The last cell lists every exercise
# that still runs on the reference.

# %% tags=["hide-input"]
# @title Setup 1 of 3: install only the allow-listed packages that are missing (open to read)
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
# Setup 2 of 3: imports, seeds and a plotting backend that also works as a plain script.
import gc
import itertools
import math
import random
import sys
from dataclasses import dataclass

import matplotlib

if "ipykernel" not in sys.modules:
    matplotlib.use("Agg")  # `python notebooks/module3_basic_transformer.py` draws off-screen

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SEED = 18
LANGUAGE = "en"  # figure labels: "en" or "ru"
torch.manual_seed(SEED)
torch.set_num_threads(1)  # one thread: identical numbers on every run
# No torch.use_deterministic_algorithms(True): every op here runs on CPU kernels that are already deterministic,
# and in recent torch that call imports the compiler stack (torch._inductor), about a second of start-up.
ENVIRONMENT = report_environment()
gc.freeze()  # the objects imported so far (torch's are many) are never garbage: later collections skip them


# %% tags=["hide-input"]
# @title Setup 3 of 3: the frozen reference metrics, verified against their SHA-256 before any use.
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
# builder:begin frozen module3
REFERENCE_SOURCE = "references/module3.json"
REFERENCE_SHA256 = "227b5388a255b981441268d251018a22dbeba0f562a6852f03c5a652840ae79d"
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
  "attention_cost": {
    "crossover_causal_tokens": 16384,
    "crossover_grouped_kv_tokens": 5120,
    "crossover_tokens": 8192,
    "crossover_with_ffn_tokens": 24576,
    "d_model": 4096,
    "kv_heads": 8,
    "long_context": 128000,
    "long_context_ratio": 15.625,
    "long_context_score_entries": 16384000000,
    "q_heads": 32
  },
  "induction_task": {
    "accuracy_one_layer_at_most": 0.85,
    "accuracy_two_layers_at_least": 0.95,
    "batch": 64,
    "eval_rows": 512,
    "k_max": 12,
    "k_min": 4,
    "learning_rate": 0.02,
    "seed": 0,
    "steps": 150,
    "vocab": 16,
    "warmup": 20
  },
  "it_example": {
    "scores": [2.0, 1.0, 0.5],
    "weights": [0.6285317192117624, 0.23122389762214907, 0.14024438316608848]
  },
  "kv_cache": {
    "bytes_per_token": 131072,
    "bytes_per_value": 2,
    "head_dim": 128,
    "kv_heads": 8,
    "layers": 32
  },
  "layer_norm": {
    "input": [1.0, 2.0, 3.0, 4.0],
    "mean": 2.5,
    "normalized": [-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738],
    "variance": 1.25
  },
  "leakage_probe": {
    "changed_from": 5,
    "changed_to": 9,
    "tokens": 5,
    "unmasked_shift": 0.64
  },
  "masks": {
    "causal_allowed": 15,
    "decode_with_offset": 5,
    "decode_without_offset": 1,
    "tokens": 5
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
  "rms_norm": {
    "normalized": [0.3651483716701107, 0.7302967433402214, 1.0954451150103321, 1.4605934866804429]
  },
  "rope": {
    "rotated": [0.5403023058681398, 0.8414709848078965, -0.009999833334166664, 0.9999500004166653]
  },
  "sampling": {
    "logits": [3.0, 2.0, 1.0, 0.0],
    "temperature_1": [0.6439142598879724, 0.23688281808991013, 0.08714431874203257, 0.03205860328008499],
    "temperature_2": [0.45505423392341127, 0.27600434470659363, 0.16740509727844333, 0.1015363240915518],
    "top_k_2": [0.7310585786300049, 0.2689414213699951, 0.0, 0.0],
    "top_p_09": [0.6652409557748219, 0.24472847105479764, 0.09003057317038046, 0.0],
    "top_p_09_kept": 3
  },
  "scaling_experiment": {
    "d_k": 64,
    "relative_tolerance": 0.08,
    "samples": 50000,
    "scaled_variance_target": 1.0,
    "seed": 18,
    "unscaled_variance_target": 64.0
  },
  "schema_version": 4,
  "tiny_lm": {
    "ablated_accuracy_ceiling": 0.25,
    "ablated_loss_floor": 1.8714973875118521,
    "accuracy_threshold": 0.98,
    "batch": 32,
    "d_ff": 48,
    "d_model": 24,
    "eval_sequences": 256,
    "learning_rate": 0.03,
    "loss_threshold": 0.05,
    "n_heads": 2,
    "seed": 18,
    "segment_length": 6,
    "steps": 45,
    "vocab_size": 8
  }
}
"""
# builder:end sha256=f553bcc02ef08091bbab51caa2c45171777f89b3c0eaafe22472dfec91fcd35b

REFERENCE = load_reference(REFERENCE_JSON, REFERENCE_SHA256, REFERENCE_SOURCE)
print(f"{REFERENCE_SOURCE} verified: sha256 {REFERENCE_SHA256}")

# %% [markdown]
# ## The toolkit: argument checks, contract checks and one figure style
#
# The next cell holds small helpers that every course notebook shares, copied in from the
# course's single source so that this notebook runs on its own:
#
# - `require_int`, `require_real`, `require_choice`, `require_tensor` check the arguments of
#   every public function. Bad input stops with a `TypeError` or `ValueError` that says what
#   was wrong and what is allowed, never with a silent NaN or a broadcast you did not ask for.
# - `expect_raises` runs a function on bad input and fails unless it raises the right error.
# - `ContractViolation`, `contract_assert` and `contract_close` report a broken property of
#   your code: which property, on what input, expected against actual, and the usual cause.
#   `check_exercise` runs such a contract after each exercise.
# - `Palette`, `apply_plot_style`, `localized` and `show_figure` give every figure the same
#   look, English or Russian labels (set `LANGUAGE = "ru"` in the setup cell), and a caption
#   that says how to read it.

# %% tags=["hide-input"]
# @title The toolkit: shared helpers and contract checks, copied from the course's single source (open to read)
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


expect("log-axis tick labels: plain from 0.001 up to 1e5 (excluded), powers outside, nothing at 0",
       [log_tick_label(value) for value in (0.0, 1e-12, 0.0005, 0.001, 0.5, 2.0, 50_000.0, 1e5)], "==",
       ["", "10⁻¹²", "0.0005", "0.001", "0.5", "2", "50000", "10⁵"])
REFERENCE.check("schema_version", 4)  # the layout of references/module3.json this notebook was written for
print("toolkit ready: argument checks, contract checks and the course figure style")

# %% tags=["hide-input", "remove-cell"]
# @title The solution edition of every exercise: a spoiler, there for show_reference and for check_exercise's fallback
# builder:begin solutions
# The solution edition of every exercise cell, base64-encoded so that no solution is read by accident:
# show_reference(label) prints one, and check_exercise runs it in place of an exercise not attempted or failed.
import base64

REFERENCE_SOURCES = {label: base64.b64decode("".join(packed)).decode("utf-8") for label, packed in {
    "Exercise 1": (
        "IyBFeGVyY2lzZSAxOiBCdWlsZCB0aGUgc2ludXNvaWRhbCBwb3NpdGlvbiB0YWJsZS4gUmV0dXJuIGEgKGxlbmd0aCwgZF9t",
        "b2RlbCkgdGVuc29yIHdob3NlIHJvdyBwIGlzCiMgcG9zaXRpb24gcDogY29sdW1uIDJpIGhvbGRzIHNpbihwIC8gYmFzZSoq",
        "KDJpIC8gZF9tb2RlbCkpIGFuZCBjb2x1bW4gMmkrMSBob2xkcyB0aGUgY29zaW5lIG9mIHRoZQojIHNhbWUgYW5nbGUuIFdv",
        "cmsgd2l0aCB3aG9sZSB0ZW5zb3JzIChhbiBvdXRlciBwcm9kdWN0IG9mIHBvc2l0aW9ucyBhbmQgZnJlcXVlbmNpZXMpLCBu",
        "b3QgbG9vcHMuCiMgVGhlIGNoZWNrIHJlcXVpcmVzOiBzaGFwZSAobGVuZ3RoLCBkX21vZGVsKTsgcG9zaXRpb24gMCBpcyAo",
        "MCwgMSwgMCwgMSwgLi4uKTsgdGhlIHRhYmxlIGVxdWFscyBzaW4vY29zCiMgd2l0aCBpbnRlcmxlYXZlZCBwYWlycyBmb3Ig",
        "c2V2ZXJhbCBzaXplczsgYW5kIHRoZSBiYXNlIGFyZ3VtZW50IHNldHMgdGhlIGZyZXF1ZW5jaWVzLgpkZWYgc2ludXNvaWRh",
        "bF9lbmNvZGluZyhsZW5ndGgsIGRfbW9kZWwsICosIGJhc2U9MTBfMDAwLjAsIGR0eXBlPXRvcmNoLmZsb2F0NjQpOgogICAg",
        "IiIiVGhlIHNpbnVzb2lkYWwgcG9zaXRpb24gdGFibGU6IG9uZSByb3cgcGVyIHBvc2l0aW9uLCBzaW5lIG9uIGV2ZW4gY29s",
        "dW1ucywgY29zaW5lIG9uIG9kZCBvbmVzLiIiIgogICAgbGVuZ3RoLCBkX21vZGVsLCBiYXNlID0gX3Bvc2l0aW9uX3RhYmxl",
        "X2FyZ3MobGVuZ3RoLCBkX21vZGVsLCBiYXNlLCBkdHlwZSkKICAgIHBvc2l0aW9uID0gdG9yY2guYXJhbmdlKGxlbmd0aCwg",
        "ZHR5cGU9ZHR5cGUpWzosIE5vbmVdICAgICAgICAgICAgICAgICAgICAgICAgICMgKEwsIDEpCiAgICBmcmVxdWVuY3kgPSBi",
        "YXNlICoqICgtdG9yY2guYXJhbmdlKDAsIGRfbW9kZWwsIDIsIGR0eXBlPWR0eXBlKSAvIGRfbW9kZWwpICAgICAjIChkLzIs",
        "KQogICAgYW5nbGUgPSBwb3NpdGlvbiAqIGZyZXF1ZW5jeSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg",
        "ICAgICAgICAgICAgIyAoTCwgZC8yKQogICAgdGFibGUgPSB0b3JjaC5zdGFjaygodG9yY2guc2luKGFuZ2xlKSwgdG9yY2gu",
        "Y29zKGFuZ2xlKSksIGRpbT0tMSkgICAgICAgICAgICAgIyAoTCwgZC8yLCAyKQogICAgcmV0dXJuIHRhYmxlLnJlc2hhcGUo",
        "bGVuZ3RoLCBkX21vZGVsKSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIyAoTCwgZCk6IHNpbiwg",
        "Y29zLCBzaW4sIGNvcywgLi4u",
    ),
    "Exercise 2": (
        "IyBFeGVyY2lzZSAyOiBCdWlsZCB0aGUgY2F1c2FsIG1hc2sgZm9yIHRfcSBxdWVyaWVzIGFuZCB0X2sga2V5cy4gUXVlcnkg",
        "cm93IHIgc2l0cyBhdCBhYnNvbHV0ZQojIHBvc2l0aW9uIHF1ZXJ5X29mZnNldCArIHIgYW5kIG1heSByZWFkIGtleSBqIGV4",
        "YWN0bHkgd2hlbiBqIDw9IHF1ZXJ5X29mZnNldCArIHIuIFJldHVybiBhIGJvb2wKIyB0ZW5zb3Igb2Ygc2hhcGUgKHRfcSwg",
        "dF9rKSwgVHJ1ZSB3aGVyZSBhdHRlbnRpb24gaXMgYWxsb3dlZC4gQ29tcGFyZSBwb3NpdGlvbiBncmlkczsgbm8gbG9vcHMu",
        "CiMgVGhlIGNoZWNrIHJlcXVpcmVzOiBhIGJvb2wgdGVuc29yIG9mIHNoYXBlICh0X3EsIHRfayk7IGEgdG9rZW4gc2VlcyBp",
        "dHNlbGYgYW5kIHRoZSBwYXN0LCBuZXZlciB0aGUgZnV0dXJlOwojIGNhY2hlZCBxdWVyaWVzIGtlZXAgdGhlaXIgYWJzb2x1",
        "dGUgcG9zaXRpb25zOyBkZWNvZGluZyBpbiBzdGVwcyBnaXZlcyB0aGUgcm93cyBvZiB0aGUgZnVsbCBtYXNrLgpkZWYgY2F1",
        "c2FsX2FsbG93ZWQodF9xLCB0X2ssICosIHF1ZXJ5X29mZnNldD0wKToKICAgICIiIkNhdXNhbCBtYXNrIGZvciB0X3EgcXVl",
        "cmllcyBhdCBhYnNvbHV0ZSBwb3NpdGlvbnMgcXVlcnlfb2Zmc2V0Li4gb3ZlciB0X2sga2V5czogVHJ1ZSA9IG1heSBhdHRl",
        "bmQuIiIiCiAgICB0X3EsIHRfaywgcXVlcnlfb2Zmc2V0ID0gX2NhdXNhbF9tYXNrX2FyZ3ModF9xLCB0X2ssIHF1ZXJ5X29m",
        "ZnNldCkKICAgIHF1ZXJ5X3Bvc2l0aW9uID0gcXVlcnlfb2Zmc2V0ICsgdG9yY2guYXJhbmdlKHRfcSlbOiwgTm9uZV0gICMg",
        "KHRfcSwgMSkgYWJzb2x1dGUgcG9zaXRpb25zCiAgICBrZXlfcG9zaXRpb24gPSB0b3JjaC5hcmFuZ2UodF9rKVtOb25lLCA6",
        "XSAgICAgICAgICAgICAgICAgICAjICgxLCB0X2spCiAgICByZXR1cm4ga2V5X3Bvc2l0aW9uIDw9IHF1ZXJ5X3Bvc2l0aW9u",
        "ICAgICAgICAgICAgICAgICAgICAgICAjICh0X3EsIHRfayk=",
    ),
    "Exercise 3": (
        "IyBFeGVyY2lzZSAzOiBXcml0ZSB0aGUgaGVhcnQgb2YgYXR0ZW50aW9uLiBUaGUgYXJndW1lbnQgY2hlY2tzLCB0aGUgYnJv",
        "YWRjYXN0aW5nIGFuZCB0aGUgZW1wdHktcm93CiMgcG9saWN5IGFyZSBkb25lIGZvciB5b3U7IGBhbGxvd2VkYCBpcyBhbHJl",
        "YWR5IGEgYm9vbCB0ZW5zb3Igb2YgdGhlIHNjb3JlcycgZnVsbCBzaGFwZS4gQ29tcHV0ZSB0aGUKIyBzY2FsZWQgc2NvcmVz",
        "IHEgQCBr4bWAIC8gc3FydChkX2spLCBzZXQgYmxvY2tlZCBzY29yZXMgdG8gLWluZiwgdGFrZSBhIHNvZnRtYXggb3ZlciB0",
        "aGUga2V5IGF4aXMgdGhhdAojIHN0YXlzIGZpbml0ZSBvbiBlbXB0eSByb3dzICh0aGVpciB3ZWlnaHRzIG11c3QgYmUgMCwg",
        "bm90IE5hTiksIGFuZCBibGVuZCB0aGUgdmFsdWVzLgojIFRoZSBjaGVjayByZXF1aXJlczogb3V0cHV0cyBhbmQgZ3JhZGll",
        "bnRzIGVxdWFsIEYuc2NhbGVkX2RvdF9wcm9kdWN0X2F0dGVudGlvbiBpbiBmbG9hdDY0OyByb3dzIHN1bSB0byAxOwojIGJs",
        "b2NrZWQga2V5cyBnZXQgZXhhY3RseSAwIHdlaWdodCAoYSAtMWU5IGZpbGwgcGFzc2VzIGFzIHdlbGwgYXMgLWluZik7IGEg",
        "Vi1vbmx5IGJhdGNoIGF4aXMgYnJvYWRjYXN0czsKIyBlbXB0eSByb3dzIHJhaXNlIFZhbHVlRXJyb3IgYnkgZGVmYXVsdCBh",
        "bmQsIHdpdGggZW1wdHlfcm93PSd6ZXJvJywgZ2l2ZSB6ZXJvIHdlaWdodHMgYW5kIG91dHB1dCB3aXRoIGZpbml0ZQojIGdy",
        "YWRpZW50czsgcGVybXV0aW5nIHRva2VucyBwZXJtdXRlcyBvdXRwdXRzLgpkZWYgc2NhbGVkX2RvdF9wcm9kdWN0X2F0dGVu",
        "dGlvbihxLCBrLCB2LCBhbGxvd2VkPU5vbmUsICosIGVtcHR5X3Jvdz0iZXJyb3IiKToKICAgICIiInNvZnRtYXgocSBr4bWA",
        "IC8gc3FydChkX2spLCBibG9ja2VkIGtleXMgYXQgLWluZikgdiwgd2l0aCBhbiBleHBsaWNpdCBwb2xpY3kgZm9yIGZ1bGx5",
        "IG1hc2tlZCByb3dzLiIiIgogICAgcSwgaywgdiwgYWxsb3dlZCwgZW1wdHlfcm93cyA9IF9hdHRlbnRpb25faW5wdXRzKHEs",
        "IGssIHYsIGFsbG93ZWQsIGVtcHR5X3JvdykgICMgY2hlY2tlZDsgYWxsb3dlZCBpcyAoLi4uLCBUX3EsIFRfaykKICAgIHNj",
        "b3JlcyA9IHEgQCBrLnRyYW5zcG9zZSgtMiwgLTEpIC8gbWF0aC5zcXJ0KHEuc2hhcGVbLTFdKSAgICAgICAgICAgICMgKC4u",
        "LiwgVF9xLCBUX2spCiAgICBzY29yZXMgPSBzY29yZXMubWFza2VkX2ZpbGwofmFsbG93ZWQsIGZsb2F0KCItaW5mIikpCiAg",
        "ICB0b3AgPSBzY29yZXMuYW1heChkaW09LTEsIGtlZXBkaW09VHJ1ZSkubWFza2VkX2ZpbGwoZW1wdHlfcm93c1suLi4sIE5v",
        "bmVdLCAwLjApICAjIDAgb24gZW1wdHkgcm93czogbm8gLWluZiAtIC1pbmYKICAgIGV4cHMgPSB0b3JjaC5leHAoc2NvcmVz",
        "IC0gdG9wKSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIyBleGFjdGx5IDAgd2hlcmUgYmxvY2tl",
        "ZAogICAgdG90YWwgPSBleHBzLnN1bShkaW09LTEsIGtlZXBkaW09VHJ1ZSkubWFza2VkX2ZpbGwoZW1wdHlfcm93c1suLi4s",
        "IE5vbmVdLCAxLjApCiAgICB3ZWlnaHRzID0gZXhwcyAvIHRvdGFsICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg",
        "ICAgICAgICAgICAgICAgICMgcm93cyBzdW0gdG8gMTsgZW1wdHkgcm93cyBzdGF5IDAKICAgIG91dHB1dCA9IHdlaWdodHMg",
        "QCB2ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIyAoLi4uLCBUX3EsIGRfdikK",
        "ICAgICMgT25seSBxwrdr4bWAIGNhbiBvdmVyZmxvdyAodGhlIHdlaWdodHMgdGhlbiBtaXggdidzIHJvd3MgY29udmV4bHks",
        "IG5ldmVyIGJleW9uZCB2KTogbmFtZSB0aGF0IGNhdXNlLCBuZXZlciByZXR1cm4gTmFOLgogICAgcmVxdWlyZV9maW5pdGVf",
        "cmVzdWx0KCJhdHRlbnRpb24gc2NvcmVzIiwgc2NvcmVzLm1hc2tlZF9maWxsKH5hbGxvd2VkLCAwLjApLCAiccK3a+G1gC/i",
        "iJpkX2sgb3ZlcmZsb3dlZCBpdHMgZHR5cGUgKGVudHJpZXMgb2YgcSBhbmQgayB0b28gbGFyZ2UpOyBzY2FsZSB0aGUgaW5w",
        "dXRzIGRvd24gb3IgdXNlIGZsb2F0NjQiKQogICAgcmV0dXJuIEF0dGVudGlvblJlc3VsdChvdXRwdXQ9b3V0cHV0LCB3ZWln",
        "aHRzPXdlaWdodHMsIHNjb3Jlcz1zY29yZXMsIGVtcHR5X3Jvd3M9ZW1wdHlfcm93cyk=",
    ),
    "Exercise 4": (
        "IyBFeGVyY2lzZSA0OiBUaHJlZSBtb3ZlcyBiZXR3ZWVuIGhlYWQgbGF5b3V0cywgb25lIG9yIHR3byBsaW5lcyBlYWNoLiBz",
        "cGxpdF9oZWFkcyB0YWtlcyB4IG9mIHNoYXBlCiMgKC4uLiwgVCwgbl9oZWFkcyAqIGRfaGVhZCkgYW5kIHJldHVybnMgKC4u",
        "Liwgbl9oZWFkcywgVCwgZF9oZWFkKSwgd2hlcmUgaGVhZCBoIG9mIHRva2VuIHQgaG9sZHMgZmVhdHVyZXMKIyBoKmRfaGVh",
        "ZCAuLiAoaCsxKSpkX2hlYWQgLSAxIG9mIHRoYXQgdG9rZW47IGluZGV4IGF4ZXMgZnJvbSB0aGUgZW5kIHNvIGxlYWRpbmcg",
        "YXhlcyBwYXNzIHRocm91Z2guCiMgbWVyZ2VfaGVhZHMgaXMgaXRzIGV4YWN0IGludmVyc2UsICguLi4sIG5faGVhZHMsIFQs",
        "IGRfaGVhZCkgLT4gKC4uLiwgVCwgbl9oZWFkcyAqIGRfaGVhZCksIGhlYWQgMCdzCiMgZmVhdHVyZXMgZmlyc3QuIHJlcGVh",
        "dF9rdl9oZWFkcyB0YWtlcyAoLi4uLCBIX2t2LCBULCBkKSBhbmQgcmV0dXJucyAoLi4uLCBIX2t2ICogZ3JvdXAsIFQsIGQp",
        "IGluIHdoaWNoCiMgcXVlcnkgaGVhZCBoIHJlYWRzIEsvViBoZWFkIGggLy8gZ3JvdXAuCiMgVGhlIGNoZWNrcyByZXF1aXJl",
        "OiBoZWFkIGggb2YgdG9rZW4gdCBob2xkcyBleGFjdGx5IGl0cyBvd24gZmVhdHVyZSBzbGFiLCBmb3IgYW55IGxlYWRpbmcg",
        "YXhlczsKIyBtZXJnaW5nIGEgY29udGlndW91cyBhdHRlbnRpb24gb3V0cHV0IHVuZG9lcyBzcGxpdF9oZWFkcyBleGFjdGx5",
        "OyBxdWVyeSBoZWFkIGggc2VlcyBLL1YgaGVhZAojIGggLy8gZ3JvdXAgZm9yIHNldmVyYWwgc2hhcGVzIGFuZCBncm91cHM7",
        "IGFuZCBhIGdyb3VwIHRoYXQgaXMgbm90IGEgcG9zaXRpdmUgaW50ZWdlciByYWlzZXMKIyBUeXBlRXJyb3Igb3IgVmFsdWVF",
        "cnJvci4KZGVmIHNwbGl0X2hlYWRzKHgsIG5faGVhZHMpOgogICAgIiIiKC4uLiwgVCwgSMK3ZCkgLT4gKC4uLiwgSCwgVCwg",
        "ZCk6IG9uZSBzbGFiIG9mIGZlYXR1cmVzIHBlciBoZWFkLiIiIgogICAgeCwgbl9oZWFkcyA9IF9zcGxpdF9oZWFkc19hcmdz",
        "KHgsIG5faGVhZHMpCiAgICBoZWFkcyA9IHgudW5mbGF0dGVuKC0xLCAobl9oZWFkcywgeC5zaGFwZVstMV0gLy8gbl9oZWFk",
        "cykpICAjICguLi4sIFQsIEgsIGQpCiAgICByZXR1cm4gaGVhZHMudHJhbnNwb3NlKC0zLCAtMikgICAgICAgICAgICAgICAg",
        "ICAgICAgICAgICAgICAgIyAoLi4uLCBILCBULCBkKQoKCmRlZiBtZXJnZV9oZWFkcyh4KToKICAgICIiIiguLi4sIEgsIFQs",
        "IGQpIC0+ICguLi4sIFQsIEjCt2QpOiB0aGUgaGVhZHMgc2lkZSBieSBzaWRlIGFnYWluLiIiIgogICAgeCA9IHJlcXVpcmVf",
        "dGVuc29yKCJ4IiwgeCwgbWluX25kaW09MywgZmluaXRlPUZhbHNlKQogICAgcmV0dXJuIHgudHJhbnNwb3NlKC0zLCAtMiku",
        "ZmxhdHRlbigtMikgICMgKC4uLiwgVCwgSCwgZCkgLT4gKC4uLiwgVCwgSMK3ZCkKCgpkZWYgcmVwZWF0X2t2X2hlYWRzKHgs",
        "IGdyb3VwKToKICAgICIiIiguLi4sIEhfa3YsIFQsIGQpIC0+ICguLi4sIEhfa3bCt2dyb3VwLCBULCBkKTogSy9WIGhlYWQg",
        "ZyBzZXJ2ZXMgcXVlcnkgaGVhZHMgZ8K3Z3JvdXAgLi4gKGcrMSnCt2dyb3VwIC0gMS4iIiIKICAgIHgsIGdyb3VwID0gX3Jl",
        "cGVhdF9rdl9hcmdzKHgsIGdyb3VwKQogICAgcmV0dXJuIHgucmVwZWF0X2ludGVybGVhdmUoZ3JvdXAsIGRpbT0tMykgICMg",
        "KC4uLiwgSF9rdsK3Z3JvdXAsIFQsIGQp",
    ),
    "Exercise 5": (
        "IyBFeGVyY2lzZSA1OiBXcml0ZSBNdWx0aUhlYWRTZWxmQXR0ZW50aW9uLmZvcndhcmQgZnJvbSB0aGUgcGllY2VzIGFib3Zl",
        "LiBCdWlsZCB0aGUgYm9vbGVhbiBtYXNrCiMgKHBhZGRpbmcgZnJvbSB0b2tlbl92YWxpZCBmb3Iga2V5cyBhbmQgZm9yIHF1",
        "ZXJpZXM7IHRoZSBjYXVzYWwgdHJpYW5nbGUgd2hlbiBzZWxmLmNhdXNhbCksIHByb2plY3QKIyB4IHRvIHF1ZXJpZXMsIGtl",
        "eXMgYW5kIHZhbHVlcywgc3BsaXQgdGhlbSBpbnRvIGhlYWRzLCBsZXQgZWFjaCBncm91cCBvZiBxdWVyeSBoZWFkcyBzaGFy",
        "ZSBpdHMgSy9WCiMgaGVhZCwgcnVuIHNjYWxlZF9kb3RfcHJvZHVjdF9hdHRlbnRpb24gd2l0aCBlbXB0eV9yb3cgcGFzc2Vk",
        "IHRocm91Z2gsIG1lcmdlIHRoZSBoZWFkcyBhbmQgYXBwbHkKIyBvdXRfcHJvai4gVGhlIGNoZWNrIHJlcXVpcmVzOiB0aGUg",
        "b3V0cHV0IGVxdWFscyBhbiBpbmRlcGVuZGVudCBtdWx0aS1oZWFkIGF0dGVudGlvbiBidWlsdCBmcm9tIHRoZQojIGxheWVy",
        "J3Mgb3duIHdlaWdodHMgKGZsb2F0NjQsIDQgcXVlcnkgaGVhZHMgb3ZlciAyIEsvViBoZWFkcywgY2F1c2FsKTsgcmV0dXJu",
        "X3dlaWdodHM9VHJ1ZSBnaXZlcwojIChvdXRwdXQsIHdlaWdodHMgb2Ygc2hhcGUgKEIsIEgsIFQsIFQpKTsgcGFkZGVkIGtl",
        "eXMgYXJlIG5ldmVyIHJlYWQgYW5kIHBhZGRlZCBxdWVyaWVzIGdpdmUgemVybyByb3dzLgpjbGFzcyBNdWx0aUhlYWRTZWxm",
        "QXR0ZW50aW9uKG5uLk1vZHVsZSk6CiAgICAiIiJDYXVzYWwgKG9yIG5vdCkgc2VsZi1hdHRlbnRpb24gd2l0aCBIIHF1ZXJ5",
        "IGhlYWRzIGFuZCBIX2t2IHNoYXJlZCBLL1YgaGVhZHM6IE1IQSwgR1FBIG9yIE1RQS4iIiIKCiAgICBkZWYgX19pbml0X18o",
        "c2VsZiwgZF9tb2RlbCwgbl9oZWFkcywgbl9rdl9oZWFkcz1Ob25lLCAqLCBjYXVzYWw9VHJ1ZSk6CiAgICAgICAgc3VwZXIo",
        "KS5fX2luaXRfXygpCiAgICAgICAgc2VsZi5kX21vZGVsLCBzZWxmLm5faGVhZHMsIHNlbGYubl9rdl9oZWFkcywgc2VsZi5j",
        "YXVzYWwgPSBfYXR0ZW50aW9uX3NpemVzKGRfbW9kZWwsIG5faGVhZHMsIG5fa3ZfaGVhZHMsIGNhdXNhbCkKICAgICAgICBz",
        "ZWxmLmRfaGVhZCA9IHNlbGYuZF9tb2RlbCAvLyBzZWxmLm5faGVhZHMKICAgICAgICBzZWxmLnFfcHJvaiA9IG5uLkxpbmVh",
        "cihzZWxmLmRfbW9kZWwsIHNlbGYubl9oZWFkcyAqIHNlbGYuZF9oZWFkLCBiaWFzPUZhbHNlKQogICAgICAgIHNlbGYua19w",
        "cm9qID0gbm4uTGluZWFyKHNlbGYuZF9tb2RlbCwgc2VsZi5uX2t2X2hlYWRzICogc2VsZi5kX2hlYWQsIGJpYXM9RmFsc2Up",
        "CiAgICAgICAgc2VsZi52X3Byb2ogPSBubi5MaW5lYXIoc2VsZi5kX21vZGVsLCBzZWxmLm5fa3ZfaGVhZHMgKiBzZWxmLmRf",
        "aGVhZCwgYmlhcz1GYWxzZSkKICAgICAgICBzZWxmLm91dF9wcm9qID0gbm4uTGluZWFyKHNlbGYubl9oZWFkcyAqIHNlbGYu",
        "ZF9oZWFkLCBzZWxmLmRfbW9kZWwsIGJpYXM9RmFsc2UpCgogICAgZGVmIGt2X3BhcmFtZXRlcl9jb3VudChzZWxmKToKICAg",
        "ICAgICAiIiJXZWlnaHRzIG9mIHRoZSBrZXkgYW5kIHZhbHVlIHByb2plY3Rpb25zOiB3aGF0IEdRQSBhbmQgTVFBIHNocmlu",
        "aywgbGlrZSB0aGUgS1YgY2FjaGUuIiIiCiAgICAgICAgcmV0dXJuIHNlbGYua19wcm9qLndlaWdodC5udW1lbCgpICsgc2Vs",
        "Zi52X3Byb2oud2VpZ2h0Lm51bWVsKCkKCiAgICBkZWYgZm9yd2FyZChzZWxmLCB4LCAqLCB0b2tlbl92YWxpZD1Ob25lLCBl",
        "bXB0eV9yb3c9ImVycm9yIiwgcmV0dXJuX3dlaWdodHM9RmFsc2UpOgogICAgICAgICIiInggKEIsIFQsIGRfbW9kZWwpIC0+",
        "IChCLCBULCBkX21vZGVsKTsgdG9rZW5fdmFsaWQgKEIsIFQpIG1hcmtzIHJlYWwgdG9rZW5zIChGYWxzZSA9IHBhZGRpbmcp",
        "LiIiIgogICAgICAgIHgsIHRva2VuX3ZhbGlkLCByZXR1cm5fd2VpZ2h0cyA9IF9hdHRlbnRpb25fZm9yd2FyZF9hcmdzKHNl",
        "bGYsIHgsIHRva2VuX3ZhbGlkLCByZXR1cm5fd2VpZ2h0cykKICAgICAgICBiYXRjaCwgbGVuZ3RoLCBfID0geC5zaGFwZQog",
        "ICAgICAgIGFsbG93ZWQgPSB0b3JjaC5vbmVzKGJhdGNoLCAxLCBsZW5ndGgsIGxlbmd0aCwgZHR5cGU9dG9yY2guYm9vbCkg",
        "ICAgICAgICAgIyAoQiwgMSwgVCwgVCksIGJyb2FkY2FzdCBvdmVyIGhlYWRzCiAgICAgICAgaWYgdG9rZW5fdmFsaWQgaXMg",
        "bm90IE5vbmU6CiAgICAgICAgICAgIGFsbG93ZWQgPSBhbGxvd2VkICYgdG9rZW5fdmFsaWRbOiwgTm9uZSwgTm9uZSwgOl0g",
        "JiB0b2tlbl92YWxpZFs6LCBOb25lLCA6LCBOb25lXSAgIyBwYWRkaW5nIGtleXMgYW5kIHBhZGRpbmcgcXVlcmllcwogICAg",
        "ICAgIGlmIHNlbGYuY2F1c2FsOgogICAgICAgICAgICBhbGxvd2VkID0gYWxsb3dlZCAmIGNhdXNhbF9hbGxvd2VkKGxlbmd0",
        "aCwgbGVuZ3RoKQogICAgICAgIGdyb3VwID0gc2VsZi5uX2hlYWRzIC8vIHNlbGYubl9rdl9oZWFkcwogICAgICAgIHEgPSBz",
        "cGxpdF9oZWFkcyhzZWxmLnFfcHJvaih4KSwgc2VsZi5uX2hlYWRzKSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg",
        "ICAjIChCLCBILCBULCBkKQogICAgICAgIGsgPSByZXBlYXRfa3ZfaGVhZHMoc3BsaXRfaGVhZHMoc2VsZi5rX3Byb2ooeCks",
        "IHNlbGYubl9rdl9oZWFkcyksIGdyb3VwKSAgICAgIyAoQiwgSCwgVCwgZCkKICAgICAgICB2ID0gcmVwZWF0X2t2X2hlYWRz",
        "KHNwbGl0X2hlYWRzKHNlbGYudl9wcm9qKHgpLCBzZWxmLm5fa3ZfaGVhZHMpLCBncm91cCkgICAgICMgKEIsIEgsIFQsIGQp",
        "CiAgICAgICAgcmVzdWx0ID0gc2NhbGVkX2RvdF9wcm9kdWN0X2F0dGVudGlvbihxLCBrLCB2LCBhbGxvd2VkLCBlbXB0eV9y",
        "b3c9ZW1wdHlfcm93KQogICAgICAgIG91dHB1dCA9IHNlbGYub3V0X3Byb2oobWVyZ2VfaGVhZHMocmVzdWx0Lm91dHB1dCku",
        "dG8oeC5kdHlwZSkpICAgICAgICAgICAgICAgICAjIChCLCBULCBkX21vZGVsKQogICAgICAgIHJldHVybiAob3V0cHV0LCBy",
        "ZXN1bHQud2VpZ2h0cykgaWYgcmV0dXJuX3dlaWdodHMgZWxzZSBvdXRwdXQ=",
    ),
    "Exercise 6": (
        "IyBFeGVyY2lzZSA2OiBXcml0ZSBMYXllck5vcm0gb3ZlciB0aGUgbGFzdCBheGlzLiBTdWJ0cmFjdCBlYWNoIHRva2VuJ3Mg",
        "bWVhbiwgZGl2aWRlIGJ5IHRoZSBzcXVhcmUgcm9vdAojIG9mIGl0cyBiaWFzZWQgdmFyaWFuY2UgcGx1cyBlcHMgKGRpdmlk",
        "ZSBieSBkLCBub3QgZCAtIDEpLCB0aGVuIG11bHRpcGx5IGJ5IHdlaWdodCBhbmQgYWRkIGJpYXMgd2hlbgojIHRoZXkgYXJl",
        "IGdpdmVuLiBTdGF5IGRpZmZlcmVudGlhYmxlOiBubyAuaXRlbSgpLCBubyBOdW1QeSwgbm8gaW4tcGxhY2UgZWRpdHMgb2Yg",
        "eC4KIyBUaGUgY2hlY2sgcmVxdWlyZXM6IG1lYW4gMCBhbmQgYmlhc2VkIHZhcmlhbmNlIDEgcGVyIHJvdzsgZXBzIGluc2lk",
        "ZSB0aGUgc3F1YXJlIHJvb3Q7IHdlaWdodCBzY2FsZXMgYW5kCiMgYmlhcyBzaGlmdHM7IG91dHB1dHMgYW5kIGdyYWRpZW50",
        "cyBlcXVhbCBGLmxheWVyX25vcm07IGEgY29uc3RhbnQgdG9rZW4gbWFwcyB0byB6ZXJvcy4KZGVmIGxheWVyX25vcm0oeCwg",
        "d2VpZ2h0PU5vbmUsIGJpYXM9Tm9uZSwgZXBzPTFlLTUpOgogICAgIiIiTGF5ZXJOb3JtIG92ZXIgdGhlIGxhc3QgYXhpcywg",
        "YnkgaGFuZDogKHgg4oiSIG1lYW4pIC8gc3FydChiaWFzZWQgdmFyaWFuY2UgKyBlcHMpIMK3IHdlaWdodCArIGJpYXMuIiIi",
        "CiAgICB4LCBlcHMgPSBfbGF5ZXJfbm9ybV9hcmdzKHgsIHdlaWdodCwgYmlhcywgZXBzKQogICAgbWVhbiA9IHgubWVhbihk",
        "aW09LTEsIGtlZXBkaW09VHJ1ZSkgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAjICguLi4sIDEpCiAgICB2YXJp",
        "YW5jZSA9ICgoeCAtIG1lYW4pICoqIDIpLm1lYW4oZGltPS0xLCBrZWVwZGltPVRydWUpICAgICAgICAgICAgICMgKC4uLiwg",
        "MSksIGJpYXNlZAogICAgbm9ybWFsaXplZCA9ICh4IC0gbWVhbikgLyB0b3JjaC5zcXJ0KHZhcmlhbmNlICsgZXBzKSAgICAg",
        "ICAgICAgICAgICAjICguLi4sIGQpCiAgICBpZiB3ZWlnaHQgaXMgbm90IE5vbmU6CiAgICAgICAgbm9ybWFsaXplZCA9IG5v",
        "cm1hbGl6ZWQgKiB3ZWlnaHQKICAgIGlmIGJpYXMgaXMgbm90IE5vbmU6CiAgICAgICAgbm9ybWFsaXplZCA9IG5vcm1hbGl6",
        "ZWQgKyBiaWFzCiAgICByZXR1cm4gbm9ybWFsaXplZA==",
    ),
    "Exercise 7": (
        "IyBFeGVyY2lzZSA3OiBUdXJuIG9uZSBsb2dpdCB2ZWN0b3IgaW50byBuZXh0LXRva2VuIHByb2JhYmlsaXRpZXMuIERpdmlk",
        "ZSB0aGUgbG9naXRzIGJ5IHRoZSB0ZW1wZXJhdHVyZTsKIyByYW5rIHRoZSB0b2tlbnMgYnkgbG9naXQsIGxhcmdlc3QgZmly",
        "c3QsIHRpZXMgdG8gdGhlIGxvd2VyIGlkOyBrZWVwIHRoZSB0b3BfayBiZXN0IChhbGwgaWYgTm9uZSk7IG9mCiMgdGhvc2Us",
        "IGtlZXAgdGhlIHNob3J0ZXN0IHByZWZpeCB3aG9zZSByZW5vcm1hbGlzZWQgbWFzcyByZWFjaGVzIHRvcF9wLCBpbmNsdWRp",
        "bmcgdGhlIHRva2VuIHRoYXQKIyBjcm9zc2VzIGl0IChhbGwgaWYgTm9uZSk7IHJldHVybiBhIGxpc3Qgd2l0aCB0aGUgcmVu",
        "b3JtYWxpc2VkIHByb2JhYmlsaXR5IG9mIGVhY2gga2VwdCB0b2tlbiBhbmQgMC4wCiMgZm9yIGV2ZXJ5IG90aGVyLiBTdWJ0",
        "cmFjdCB0aGUgbGFyZ2VzdCBsb2dpdCBiZWZvcmUgZXhwKCkgYW5kIGFkZCB3aXRoIG1hdGguZnN1bS4KIyBUaGUgY2hlY2sg",
        "cmVxdWlyZXM6IG9uZSBmaW5pdGUgcHJvYmFiaWxpdHkgcGVyIHRva2VuIHN1bW1pbmcgdG8gMTsgdGhlIHRlbXBlcmF0dXJl",
        "IGRpdmlkZXMgdGhlIGxvZ2l0czsKIyB0b3BfayBhbmQgdG9wX3Aga2VlcCB0aGUgcmlnaHQgdG9rZW5zICh0aGUgY3Jvc3Np",
        "bmcgb25lIHN0YXlzLCB0aWVzIHRvIHRoZSBsb3dlciBpZCk7IGZpbHRlcnMgYXBwbHkgaW4KIyB0aGF0IG9yZGVyOyBsYXJn",
        "ZSBsb2dpdHMgZG8gbm90IG92ZXJmbG93LgpkZWYgdG9rZW5fZGlzdHJpYnV0aW9uKGxvZ2l0cywgdGVtcGVyYXR1cmU9MS4w",
        "LCB0b3Bfaz1Ob25lLCB0b3BfcD1Ob25lKToKICAgICIiIk5leHQtdG9rZW4gcHJvYmFiaWxpdGllcyBvZiBvbmUgbG9naXQg",
        "dmVjdG9yIGFmdGVyIHRlbXBlcmF0dXJlLCB0aGVuIHRvcC1rLCB0aGVuIHRvcC1wLiIiIgogICAgbG9naXRzLCB0ZW1wZXJh",
        "dHVyZSwgdG9wX2ssIHRvcF9wID0gX3NhbXBsaW5nX2FyZ3MobG9naXRzLCB0ZW1wZXJhdHVyZSwgdG9wX2ssIHRvcF9wKQog",
        "ICAgbGFyZ2VzdCA9IG1heChsb2dpdHMpCiAgICB3ZWlnaHRzID0gW21hdGguZXhwKCh6IC0gbGFyZ2VzdCkgLyB0ZW1wZXJh",
        "dHVyZSkgZm9yIHogaW4gbG9naXRzXSAgIyB1bm5vcm1hbGlzZWQsIHRoZSBsYXJnZXN0IGlzIDEKICAgIG9yZGVyID0gc29y",
        "dGVkKHJhbmdlKGxlbihsb2dpdHMpKSwga2V5PWxhbWJkYSBpOiAoLWxvZ2l0c1tpXSwgaSkpICAjIG1vc3QgbGlrZWx5IGZp",
        "cnN0LCB0aWVzIHRvIHRoZSBsb3dlciBpZAogICAgaWYgdG9wX2sgaXMgbm90IE5vbmU6CiAgICAgICAgb3JkZXIgPSBvcmRl",
        "cls6dG9wX2tdCiAgICBpZiB0b3BfcCBpcyBub3QgTm9uZToKICAgICAgICBtYXNzID0gbWF0aC5mc3VtKHdlaWdodHNbaV0g",
        "Zm9yIGkgaW4gb3JkZXIpCiAgICAgICAgcmVhY2hlZCA9IGxpc3QoaXRlcnRvb2xzLmFjY3VtdWxhdGUod2VpZ2h0c1tpXSAv",
        "IG1hc3MgZm9yIGkgaW4gb3JkZXIpKSAgIyBzaGFyZSBvZiB0aGUgZmlyc3QgaiArIDEgdG9rZW5zCiAgICAgICAgY3Jvc3Np",
        "bmcgPSBuZXh0KChqIGZvciBqLCBzaGFyZSBpbiBlbnVtZXJhdGUocmVhY2hlZCkgaWYgc2hhcmUgPj0gdG9wX3ApLCBsZW4o",
        "b3JkZXIpIC0gMSkKICAgICAgICBvcmRlciA9IG9yZGVyWzpjcm9zc2luZyArIDFdICAjIHRoZSB0b2tlbiB0aGF0IGNyb3Nz",
        "ZXMgdGhlIHRocmVzaG9sZCBzdGF5cwogICAgdG90YWwgPSBtYXRoLmZzdW0od2VpZ2h0c1tpXSBmb3IgaSBpbiBvcmRlcikK",
        "ICAgIHJldHVybiBbd2VpZ2h0c1tpXSAvIHRvdGFsIGlmIGkgaW4gb3JkZXIgZWxzZSAwLjAgZm9yIGkgaW4gcmFuZ2UobGVu",
        "KGxvZ2l0cykpXQ==",
    ),
    "Exercise 8": (
        "IyBFeGVyY2lzZSA4OiBEZWNvZGUgZ3JlZWRpbHkgZnJvbSBwcmVwYXJlZCBsb2dpdHMuIEZvciBlYWNoIHNjb3JlIHZlY3Rv",
        "ciBpbiB0dXJuLCBhcHBlbmQgdGhlIG1vc3QKIyBsaWtlbHkgdG9rZW4gKHRpZXMgdG8gdGhlIGxvd2VyIGlkKTsgc3RvcCBy",
        "aWdodCBhZnRlciBFT1Mgd2l0aCByZWFzb24gJ2VvcycgKEVPUyBzdGF5cyBpbiB0aGUgb3V0cHV0KSwKIyBvciBvbmNlIG1h",
        "eF9uZXdfdG9rZW5zIHRva2VucyBhcmUgb3V0IHdpdGggcmVhc29uICdsZW5ndGhfbGltaXQnIChFT1Mgd2lucyB3aGVuIGJv",
        "dGggaGFwcGVuIGF0IG9uY2UpLgojIFJldHVybiAodG9rZW5zLCByZWFzb24pLiBJZiB0aGUgc2NvcmUgdmVjdG9ycyBydW4g",
        "b3V0IGZpcnN0LCByYWlzZSBWYWx1ZUVycm9yLgojIFRoZSBjaGVjayByZXF1aXJlczogRU9TIHN0b3BzIHRoZSB0cmFjZSBh",
        "bmQgaXMga2VwdDsgdGhlIGxlbmd0aCBsaW1pdCBzdG9wcyBpdDsgRU9TIHdpbnMgb24gdGhlIGxhc3QKIyBhbGxvd2VkIHN0",
        "ZXA7IGEgdHJhY2UgdGhhdCBydW5zIG91dCBvZiBsb2dpdHMgcmFpc2VzIFZhbHVlRXJyb3IuCmRlZiBncmVlZHlfdHJhY2Uo",
        "cHJlcGFyZWRfbG9naXRzLCBlb3NfaWQsIG1heF9uZXdfdG9rZW5zKToKICAgICIiIkdyZWVkeSBkZWNvZGluZyBvdmVyIGEg",
        "cHJlcGFyZWQgbGlzdCBvZiBsb2dpdCB2ZWN0b3JzOiAodG9rZW5zLCAnZW9zJyBvciAnbGVuZ3RoX2xpbWl0JykuIiIiCiAg",
        "ICBzdGVwcywgZW9zX2lkLCBtYXhfbmV3X3Rva2VucyA9IF9ncmVlZHlfYXJncyhwcmVwYXJlZF9sb2dpdHMsIGVvc19pZCwg",
        "bWF4X25ld190b2tlbnMpCiAgICB0b2tlbnMgPSBbXQogICAgZm9yIHNjb3JlcyBpbiBzdGVwczoKICAgICAgICBwcm9iYWJp",
        "bGl0aWVzID0gdG9rZW5fZGlzdHJpYnV0aW9uKHNjb3JlcykgICMgZ3JlZWR5IGlzIHRoZSB0ZW1wZXJhdHVyZSAtPiAwIGxp",
        "bWl0IG9mIHNhbXBsaW5nCiAgICAgICAgdG9rZW5zLmFwcGVuZChtYXgocmFuZ2UobGVuKHByb2JhYmlsaXRpZXMpKSwga2V5",
        "PXByb2JhYmlsaXRpZXMuX19nZXRpdGVtX18pKQogICAgICAgIGlmIHRva2Vuc1stMV0gPT0gZW9zX2lkOgogICAgICAgICAg",
        "ICByZXR1cm4gdG9rZW5zLCAiZW9zIgogICAgICAgIGlmIGxlbih0b2tlbnMpID09IG1heF9uZXdfdG9rZW5zOgogICAgICAg",
        "ICAgICByZXR1cm4gdG9rZW5zLCAibGVuZ3RoX2xpbWl0IgogICAgcmFpc2UgVmFsdWVFcnJvcihmInRoZSB7bGVuKHN0ZXBz",
        "KX0gcHJlcGFyZWQgc3RlcHMgcmFuIG91dCBiZWZvcmUgRU9TIG9yIHRoZSBsaW1pdCBvZiB7bWF4X25ld190b2tlbnN9IHRv",
        "a2VucyIp",
    ),
    "Exercise 9": (
        "IyBFeGVyY2lzZSA5OiBXcml0ZSBSb1BFLiB4IGhhcyBzaGFwZSAoLi4uLCBULCBkKSB3aXRoIGQgZXZlbiwgcG9zaXRpb25z",
        "IGhvbGRzIHRoZSBhYnNvbHV0ZSBwb3NpdGlvbiBvZgojIGVhY2ggb2YgdGhlIFQgdG9rZW5zLiBUdXJuIGVhY2ggcGFpciAo",
        "eFsuLi4sIDJpXSwgeFsuLi4sIDJpKzFdKSBvZiB0aGUgdG9rZW4gYXQgcG9zaXRpb24gcCBieSB0aGUKIyBhbmdsZSBwICog",
        "YmFzZSoqKC0yaS9kKTogKGEsIGIpIC0+IChhIGNvcyAtIGIgc2luLCBhIHNpbiArIGIgY29zKS4gV29yayB3aXRoIHdob2xl",
        "IHRlbnNvcnMuCiMgVGhlIGNoZWNrIHJlcXVpcmVzOiB0aGUgc2hhcGUgYW5kIGR0eXBlIG9mIHg7IGVhY2ggcGFpciB0dXJu",
        "ZWQgYnkgaXRzIGFuZ2xlIGZvciB0d28gYmFzZXM7IHBvc2l0aW9uIDAKIyB1bmNoYW5nZWQ7IGFuZCBxIC4gayBkZXBlbmRp",
        "bmcgb25seSBvbiB0aGUgb2Zmc2V0IGJldHdlZW4gdGhlIHF1ZXJ5J3MgYW5kIHRoZSBrZXkncyBwb3NpdGlvbnMuCmRlZiBh",
        "cHBseV9yb3BlKHgsIHBvc2l0aW9ucywgYmFzZT0xMF8wMDAuMCk6CiAgICAiIiJUdXJuIHBhaXIgaSBvZiB0aGUgdG9rZW4g",
        "YXQgcG9zaXRpb24gcCBieSB0aGUgYW5nbGUgcCDCtyBiYXNlXigtMmkvZCkuIiIiCiAgICB4LCBwb3NpdGlvbnMgPSBfcm9w",
        "ZV9pbnB1dHMoeCwgcG9zaXRpb25zLCBiYXNlKQogICAgaGFsZiA9IHguc2hhcGVbLTFdIC8vIDIKICAgIGZyZXF1ZW5jeSA9",
        "IGJhc2UgKiogKC0yICogdG9yY2guYXJhbmdlKGhhbGYsIGR0eXBlPXRvcmNoLmZsb2F0NjQpIC8geC5zaGFwZVstMV0pICAj",
        "IChkLzIsKQogICAgYW5nbGUgPSBwb3NpdGlvbnMudG8odG9yY2guZmxvYXQ2NClbOiwgTm9uZV0gKiBmcmVxdWVuY3kgICAg",
        "ICAgICAgICAgICAgICAgICAgICAgIyAoVCwgZC8yKQogICAgY29zLCBzaW4gPSB0b3JjaC5jb3MoYW5nbGUpLnRvKHguZHR5",
        "cGUpLCB0b3JjaC5zaW4oYW5nbGUpLnRvKHguZHR5cGUpCiAgICBldmVuLCBvZGQgPSB4Wy4uLiwgMDo6Ml0sIHhbLi4uLCAx",
        "OjoyXSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAjICguLi4sIFQsIGQvMikgZWFjaAogICAg",
        "dHVybmVkID0gdG9yY2guc3RhY2soKGV2ZW4gKiBjb3MgLSBvZGQgKiBzaW4sIGV2ZW4gKiBzaW4gKyBvZGQgKiBjb3MpLCBk",
        "aW09LTEpICAgIyAoLi4uLCBULCBkLzIsIDIpCiAgICByZXR1cm4gdHVybmVkLmZsYXR0ZW4oLTIpICAgICAgICAgICAgICAg",
        "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAjICguLi4sIFQsIGQpOiBwYWlycyBzaWRlIGJ5IHNp",
        "ZGU=",
    ),
    "Exercise 10": (
        "IyBFeGVyY2lzZSAxMDogV3JpdGUgUk1TTm9ybSBhcyBhIG1vZHVsZS4gX19pbml0X18ga2VlcHMgZXBzIGFuZCBhIGdhaW4g",
        "c2VsZi53ZWlnaHQsIGFuIG5uLlBhcmFtZXRlciBvZgojIGRfbW9kZWwgb25lczsgZm9yd2FyZCByZXR1cm5zIHggLyBzcXJ0",
        "KG1lYW4oeMKyKSArIGVwcykgKiB3ZWlnaHQgb3ZlciB0aGUgbGFzdCBheGlzLgojIFRoZSBjaGVjayByZXF1aXJlczogYSB3",
        "ZWlnaHQgb2YgZF9tb2RlbCBvbmVzOyB0aGUgb3V0cHV0IGVxdWFscyBGLnJtc19ub3JtIHdpdGggYSBnYWluOyBncmFkaWVu",
        "dHMgZmxvdy4KY2xhc3MgUk1TTm9ybShubi5Nb2R1bGUpOgogICAgIiIieCAvIHNxcnQobWVhbih4wrIpICsgZXBzKSDCtyB3",
        "ZWlnaHQgb3ZlciB0aGUgbGFzdCBheGlzOiBMYXllck5vcm0gd2l0aG91dCB0aGUgbWVhbiBhbmQgdGhlIGJpYXMuIiIiCgog",
        "ICAgZGVmIF9faW5pdF9fKHNlbGYsIGRfbW9kZWwsIGVwcz0xZS01KToKICAgICAgICBzdXBlcigpLl9faW5pdF9fKCkKICAg",
        "ICAgICBlcHMgPSBfcm1zX25vcm1fYXJncyhkX21vZGVsLCBlcHMpCiAgICAgICAgc2VsZi5lcHMgPSBlcHMKICAgICAgICBz",
        "ZWxmLndlaWdodCA9IG5uLlBhcmFtZXRlcih0b3JjaC5vbmVzKGRfbW9kZWwpKSAgIyB0aGUgZ2FpbiDOsywgb25lIHBlciBm",
        "ZWF0dXJlCgogICAgZGVmIGZvcndhcmQoc2VsZiwgeCk6CiAgICAgICAgIiIiKC4uLiwgZCkgLT4gKC4uLiwgZCkuIiIiCiAg",
        "ICAgICAgeCA9IF9ybXNfbm9ybV9pbnB1dCh4LCBzZWxmLndlaWdodCwgc2VsZi5lcHMpCiAgICAgICAgcmV0dXJuIHggKiB0",
        "b3JjaC5yc3FydCh4LnBvdygyKS5tZWFuKGRpbT0tMSwga2VlcGRpbT1UcnVlKSArIHNlbGYuZXBzKSAqIHNlbGYud2VpZ2h0",
    ),
    "Exercise 11": (
        "IyBFeGVyY2lzZSAxMTogV3JpdGUgdGhlIFN3aUdMVSBmZWVkLWZvcndhcmQgbmV0d29yay4gX19pbml0X18gbWFrZXMgdGhy",
        "ZWUgYmlhcy1mcmVlIG5uLkxpbmVhciBsYXllcnMsCiMgd19nYXRlIGFuZCB3X3VwIChkX21vZGVsIC0+IGRfZmYpIGFuZCB3",
        "X2Rvd24gKGRfZmYgLT4gZF9tb2RlbCk7IGZvcndhcmQgcmV0dXJucwojIHdfZG93bihzaWx1KHdfZ2F0ZSB4KSAqIHdfdXAg",
        "eCkgKEYuc2lsdSkuCiMgVGhlIGNoZWNrIHJlcXVpcmVzOiB0aGUgdGhyZWUgbGF5ZXJzIHdpdGggdGhlaXIgc2hhcGVzIGFu",
        "ZCBubyBiaWFzZXM7IHRoZSBvdXRwdXQgb2YgdGhlIGZvcm11bGEuCmNsYXNzIFN3aUdMVShubi5Nb2R1bGUpOgogICAgIiIi",
        "VGhlIGdhdGVkIGZlZWQtZm9yd2FyZCBuZXR3b3JrIG9mIExMYU1BOiB3X2Rvd24oc2lsdSh3X2dhdGUgeCkg4oqZIHdfdXAg",
        "eCkuIiIiCgogICAgZGVmIF9faW5pdF9fKHNlbGYsIGRfbW9kZWwsIGRfZmYpOgogICAgICAgIHN1cGVyKCkuX19pbml0X18o",
        "KQogICAgICAgIF9jYXBzdG9uZV93aWR0aHMoIlN3aUdMVSdzIHRocmVlIHdlaWdodHMiLCAoMywgZF9tb2RlbCwgZF9mZiks",
        "IGRfbW9kZWw9ZF9tb2RlbCwgZF9mZj1kX2ZmKQogICAgICAgIHNlbGYud19nYXRlID0gbm4uTGluZWFyKGRfbW9kZWwsIGRf",
        "ZmYsIGJpYXM9RmFsc2UpCiAgICAgICAgc2VsZi53X3VwID0gbm4uTGluZWFyKGRfbW9kZWwsIGRfZmYsIGJpYXM9RmFsc2Up",
        "CiAgICAgICAgc2VsZi53X2Rvd24gPSBubi5MaW5lYXIoZF9mZiwgZF9tb2RlbCwgYmlhcz1GYWxzZSkKCiAgICBkZWYgZm9y",
        "d2FyZChzZWxmLCB4KToKICAgICAgICAiIiIoLi4uLCBkX21vZGVsKSAtPiAoLi4uLCBkX21vZGVsKS4iIiIKICAgICAgICB4",
        "ID0gX2NhcHN0b25lX2ZlYXR1cmVzKHgsIHNlbGYud19nYXRlLmluX2ZlYXR1cmVzLCBzZWxmLndfZ2F0ZS53ZWlnaHQuZHR5",
        "cGUsIHNxdWFyZWQ9VHJ1ZSkKICAgICAgICByZXR1cm4gc2VsZi53X2Rvd24oRi5zaWx1KHNlbGYud19nYXRlKHgpKSAqIHNl",
        "bGYud191cCh4KSk=",
    ),
    "Exercise 12": (
        "IyBFeGVyY2lzZSAxMjogV3JpdGUgUm9QRSBhdHRlbnRpb24gd2l0aCBncm91cGVkIEsvViBoZWFkcy4gX19pbml0X18gbWFr",
        "ZXMgYmlhcy1mcmVlIHdfcSAoZF9tb2RlbCAtPgojIG5faGVhZHMgKiBoZWFkX2RpbSksIHdfayBhbmQgd192IChkX21vZGVs",
        "IC0+IG5fa3ZfaGVhZHMgKiBoZWFkX2RpbSkgYW5kIHdfbyAoYmFjayB0byBkX21vZGVsKS4KIyBxa3YoeCwgcG9zaXRpb25z",
        "KSByZXR1cm5zIHEgKEIsIG5faGVhZHMsIFQsIGhlYWRfZGltKSBhbmQgaywgdiAoQiwgbl9rdl9oZWFkcywgVCwgaGVhZF9k",
        "aW0pLCB3aXRoCiMgYXBwbHlfcm9wZSBvbiBxIGFuZCBrLiBtZXJnZShvdXQpIG1lcmdlcyB0aGUgaGVhZHMgYW5kIGFwcGxp",
        "ZXMgd19vLiBmb3J3YXJkKHgsIHBvc2l0aW9ucywgY2FjaGU9Tm9uZSkKIyBhcHBlbmRzIGssIHYgdG8gdGhlIGNhY2hlIHdo",
        "ZW4gdGhlcmUgaXMgb25lIChjYWNoZS5hcHBlbmQoaywgdiwgaW50KHBvc2l0aW9uc1swXSkpIHJldHVybnMgYWxsIGtleXMK",
        "IyBhbmQgdmFsdWVzIHNvIGZhciksIHJlcGVhdHMgZWFjaCBLL1YgaGVhZCBmb3IgaXRzIGdyb3VwIG9mIHF1ZXJ5IGhlYWRz",
        "LCBtYXNrcyB3aXRoIGNhdXNhbF9hbGxvd2VkCiMgYW5kIHRoZSByaWdodCBxdWVyeV9vZmZzZXQsIGF0dGVuZHMgd2l0aCB5",
        "b3VyIHNjYWxlZF9kb3RfcHJvZHVjdF9hdHRlbnRpb24sIGFuZCBtZXJnZXMuCiMgVGhlIGNoZWNrIHJlcXVpcmVzOiB0aGUg",
        "Zm91ciBwcm9qZWN0aW9uczsgcSwgayBhbmQgdiB3aXRoIFJvUEUgb24gcSBhbmQgayBvbmx5OyBtZXJnZTsgdGhlIG91dHB1",
        "dAojIG9mIGNhdXNhbCBhdHRlbnRpb24gd2l0aCBxdWVyeSBoZWFkIGggcmVhZGluZyBLL1YgaGVhZCBoIC8vIGdyb3VwOyBh",
        "bmQgdGhlIHNhbWUgb3V0cHV0IHRocm91Z2ggYSBjYWNoZS4KY2xhc3MgQ2Fwc3RvbmVBdHRlbnRpb24obm4uTW9kdWxlKToK",
        "ICAgICIiIkNhdXNhbCBzZWxmLWF0dGVudGlvbiB3aXRoIFJvUEUgb24gcXVlcmllcyBhbmQga2V5cyBhbmQgbl9rdl9oZWFk",
        "cyBLL1YgaGVhZHMgc2hhcmVkIGJ5IGdyb3VwcyBvZiBxdWVyeSBoZWFkcy4iIiIKCiAgICBkZWYgX19pbml0X18oc2VsZiwg",
        "Y29uZmlnKToKICAgICAgICBzdXBlcigpLl9faW5pdF9fKCkKICAgICAgICBfY2Fwc3RvbmVfY29uZmlnKGNvbmZpZykKICAg",
        "ICAgICBzZWxmLm5faGVhZHMsIHNlbGYubl9rdl9oZWFkcywgc2VsZi5oZWFkX2RpbSwgc2VsZi5yb3BlX2Jhc2UgPSBjb25m",
        "aWcubl9oZWFkcywgY29uZmlnLm5fa3ZfaGVhZHMsIGNvbmZpZy5oZWFkX2RpbSwgY29uZmlnLnJvcGVfYmFzZQogICAgICAg",
        "IHNlbGYud19xID0gbm4uTGluZWFyKGNvbmZpZy5kX21vZGVsLCBjb25maWcubl9oZWFkcyAqIGNvbmZpZy5oZWFkX2RpbSwg",
        "Ymlhcz1GYWxzZSkKICAgICAgICBzZWxmLndfayA9IG5uLkxpbmVhcihjb25maWcuZF9tb2RlbCwgY29uZmlnLm5fa3ZfaGVh",
        "ZHMgKiBjb25maWcuaGVhZF9kaW0sIGJpYXM9RmFsc2UpCiAgICAgICAgc2VsZi53X3YgPSBubi5MaW5lYXIoY29uZmlnLmRf",
        "bW9kZWwsIGNvbmZpZy5uX2t2X2hlYWRzICogY29uZmlnLmhlYWRfZGltLCBiaWFzPUZhbHNlKQogICAgICAgIHNlbGYud19v",
        "ID0gbm4uTGluZWFyKGNvbmZpZy5uX2hlYWRzICogY29uZmlnLmhlYWRfZGltLCBjb25maWcuZF9tb2RlbCwgYmlhcz1GYWxz",
        "ZSkKCiAgICBkZWYgcWt2KHNlbGYsIHgsIHBvc2l0aW9ucyk6CiAgICAgICAgIiIieCAoQiwgVCwgZCkgYXQgcG9zaXRpb25z",
        "IChULCkgLT4gcSAoQiwgSHEsIFQsIGhkKSwgayBhbmQgdiAoQiwgSGt2LCBULCBoZCksIFJvUEUgb24gcSBhbmQgay4iIiIK",
        "ICAgICAgICB4ID0gX2NhcHN0b25lX2ZlYXR1cmVzKHgsIHNlbGYud19xLmluX2ZlYXR1cmVzLCBzZWxmLndfcS53ZWlnaHQu",
        "ZHR5cGUsIG5kaW09MykKICAgICAgICBxID0gc3BsaXRfaGVhZHMoc2VsZi53X3EoeCksIHNlbGYubl9oZWFkcykgICAgICAg",
        "IyAoQiwgSHEsIFQsIGhkKQogICAgICAgIGsgPSBzcGxpdF9oZWFkcyhzZWxmLndfayh4KSwgc2VsZi5uX2t2X2hlYWRzKSAg",
        "ICAjIChCLCBIa3YsIFQsIGhkKQogICAgICAgIHYgPSBzcGxpdF9oZWFkcyhzZWxmLndfdih4KSwgc2VsZi5uX2t2X2hlYWRz",
        "KSAgICAjIChCLCBIa3YsIFQsIGhkKQogICAgICAgIHJldHVybiBhcHBseV9yb3BlKHEsIHBvc2l0aW9ucywgc2VsZi5yb3Bl",
        "X2Jhc2UpLCBhcHBseV9yb3BlKGssIHBvc2l0aW9ucywgc2VsZi5yb3BlX2Jhc2UpLCB2CgogICAgZGVmIG1lcmdlKHNlbGYs",
        "IG91dCk6CiAgICAgICAgIiIib3V0IChCLCBIcSwgVCwgaGQpIC0+IChCLCBULCBkKTogdGhlIGhlYWRzIHNpZGUgYnkgc2lk",
        "ZSwgdGhlbiB3X28uIiIiCiAgICAgICAgb3V0ID0gX2hlYWRzX2lucHV0KG91dCwgc2VsZi5uX2hlYWRzLCBzZWxmLmhlYWRf",
        "ZGltLCBzZWxmLndfby53ZWlnaHQuZHR5cGUpCiAgICAgICAgcmV0dXJuIHNlbGYud19vKG1lcmdlX2hlYWRzKG91dCkpCgog",
        "ICAgZGVmIGZvcndhcmQoc2VsZiwgeCwgcG9zaXRpb25zLCBjYWNoZT1Ob25lKToKICAgICAgICAiIiJ4IChCLCBULCBkKSAt",
        "PiAoQiwgVCwgZCk7IHdpdGggYSBjYWNoZSB0aGlzIGNhbGwncyBrZXlzIGFuZCB2YWx1ZXMgam9pbiBpdCBhbmQgdGhlIHF1",
        "ZXJpZXMgcmVhZCBhbGwgb2YgdGhlbS4iIiIKICAgICAgICBjYWNoZSA9IF9sYXllcl9jYWNoZShjYWNoZSkKICAgICAgICBx",
        "LCBrLCB2ID0gc2VsZi5xa3YoeCwgcG9zaXRpb25zKQogICAgICAgIGlmIGNhY2hlIGlzIG5vdCBOb25lOgogICAgICAgICAg",
        "ICBrLCB2ID0gY2FjaGUuYXBwZW5kKGssIHYsIGludChwb3NpdGlvbnNbMF0pKSAgICAgICAgICAgICAgICAgICMgKEIsIEhr",
        "diwgVF9rLCBoZCk6IGV2ZXJ5IGtleSBzbyBmYXIKICAgICAgICBncm91cCA9IHNlbGYubl9oZWFkcyAvLyBzZWxmLm5fa3Zf",
        "aGVhZHMKICAgICAgICB0X3EsIHRfayA9IHEuc2hhcGVbLTJdLCBrLnNoYXBlWy0yXQogICAgICAgIGFsbG93ZWQgPSBjYXVz",
        "YWxfYWxsb3dlZCh0X3EsIHRfaywgcXVlcnlfb2Zmc2V0PXRfayAtIHRfcSkgICAgICAgICAgIyAoVF9xLCBUX2spOiBxdWVy",
        "aWVzIGF0IHRoZWlyIGFic29sdXRlIHBvc2l0aW9ucwogICAgICAgIG91dCA9IHNjYWxlZF9kb3RfcHJvZHVjdF9hdHRlbnRp",
        "b24ocSwgcmVwZWF0X2t2X2hlYWRzKGssIGdyb3VwKSwgcmVwZWF0X2t2X2hlYWRzKHYsIGdyb3VwKSwgYWxsb3dlZCkub3V0",
        "cHV0CiAgICAgICAgcmV0dXJuIHNlbGYubWVyZ2Uob3V0KSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg",
        "ICAgICAgICMgKEIsIFQsIGQp",
    ),
    "Exercise 13": (
        "IyBFeGVyY2lzZSAxMzogQXNzZW1ibGUgdGhlIG1vZGVsLiBDYXBzdG9uZUJsb2NrIGhvbGRzIGF0dG5fbm9ybSBhbmQgZmZu",
        "X25vcm0gKHlvdXIgUk1TTm9ybSwgd2l0aAojIGNvbmZpZy5ub3JtX2VwcyksIGF0dG4gKHlvdXIgQ2Fwc3RvbmVBdHRlbnRp",
        "b24pIGFuZCBmZm4gKHlvdXIgU3dpR0xVIG9mIHdpZHRoIGNvbmZpZy5kX2ZmKTsgaXRzIGZvcndhcmQgaXMKIyBwcmUtbm9y",
        "bSB3aXRoIGEgcmVzaWR1YWwgYXJvdW5kIGVhY2ggc3VibGF5ZXIuIENhcHN0b25lTE0gaG9sZHMgZW1iZWQgKG5uLkVtYmVk",
        "ZGluZyksIGJsb2NrcyAoYW4KIyBubi5Nb2R1bGVMaXN0IG9mIGNvbmZpZy5uX2xheWVycyBibG9ja3MpLCBub3JtIGFuZCBo",
        "ZWFkIChiaWFzLWZyZWUgbm4uTGluZWFyIHRvIGNvbmZpZy52b2NhYik7IGl0cwojIGZvcndhcmQgbnVtYmVycyB0aGUgdG9r",
        "ZW5zIGZyb20gdGhlIGNhY2hlJ3MgbGVuZ3RoICgwIHdpdGhvdXQgYSBjYWNoZSksIGdpdmVzIGJsb2NrIGkgdGhlIGNhY2hl",
        "J3MKIyBsYXllciBpIChjYWNoZS5sYXllcnNbaV0pLCBhbmQgcmV0dXJucyBoZWFkKG5vcm0oeCkpLgojIFRoZSBjaGVjayBy",
        "ZXF1aXJlczogZXhhY3RseSB0aGVzZSBwYXJ0cyBieSBuYW1lOyB0aGUgbG9naXRzIG9mIGEgcHJlLW5vcm0gTGxhbWEtc3R5",
        "bGUgbW9kZWwgd2l0aCBhCiMgZmluYWwgbm9ybTsgYW5kIHRoZSBzYW1lIGxvZ2l0cyB3aGVuIHRoZSB0b2tlbnMgYXJyaXZl",
        "IDUsIHRoZW4gMSwgMSBhbmQgMSBhdCBhIHRpbWUgdGhyb3VnaCBhIGNhY2hlLgpjbGFzcyBDYXBzdG9uZUJsb2NrKG5uLk1v",
        "ZHVsZSk6CiAgICAiIiJBIHByZS1ub3JtIGRlY29kZXIgYmxvY2s6IHggKyBhdHRuKGF0dG5fbm9ybSh4KSksIHRoZW4geCAr",
        "IGZmbihmZm5fbm9ybSh4KSkuIiIiCgogICAgZGVmIF9faW5pdF9fKHNlbGYsIGNvbmZpZyk6CiAgICAgICAgc3VwZXIoKS5f",
        "X2luaXRfXygpCiAgICAgICAgX2NhcHN0b25lX2NvbmZpZyhjb25maWcpCiAgICAgICAgc2VsZi5hdHRuX25vcm0gPSBSTVNO",
        "b3JtKGNvbmZpZy5kX21vZGVsLCBjb25maWcubm9ybV9lcHMpCiAgICAgICAgc2VsZi5hdHRuID0gQ2Fwc3RvbmVBdHRlbnRp",
        "b24oY29uZmlnKQogICAgICAgIHNlbGYuZmZuX25vcm0gPSBSTVNOb3JtKGNvbmZpZy5kX21vZGVsLCBjb25maWcubm9ybV9l",
        "cHMpCiAgICAgICAgc2VsZi5mZm4gPSBTd2lHTFUoY29uZmlnLmRfbW9kZWwsIGNvbmZpZy5kX2ZmKQoKICAgIGRlZiBmb3J3",
        "YXJkKHNlbGYsIHgsIHBvc2l0aW9ucywgY2FjaGU9Tm9uZSk6CiAgICAgICAgIiIiKEIsIFQsIGQpIC0+IChCLCBULCBkKS4i",
        "IiIKICAgICAgICB4ID0geCArIHNlbGYuYXR0bihzZWxmLmF0dG5fbm9ybSh4KSwgcG9zaXRpb25zLCBjYWNoZSkKICAgICAg",
        "ICByZXR1cm4geCArIHNlbGYuZmZuKHNlbGYuZmZuX25vcm0oeCkpCgoKY2xhc3MgQ2Fwc3RvbmVMTShubi5Nb2R1bGUpOgog",
        "ICAgIiIiVG9rZW4gZW1iZWRkaW5nLCBuX2xheWVycyBwcmUtbm9ybSBibG9ja3Mgd2l0aCBSb1BFIGF0dGVudGlvbiwgYSBm",
        "aW5hbCBSTVNOb3JtIGFuZCBhbiBvdXRwdXQgaGVhZC4iIiIKCiAgICBkZWYgX19pbml0X18oc2VsZiwgY29uZmlnKToKICAg",
        "ICAgICBzdXBlcigpLl9faW5pdF9fKCkKICAgICAgICBzZWxmLmNvbmZpZyA9IF9jYXBzdG9uZV9jb25maWcoY29uZmlnKQog",
        "ICAgICAgIHNlbGYuZW1iZWQgPSBubi5FbWJlZGRpbmcoY29uZmlnLnZvY2FiLCBjb25maWcuZF9tb2RlbCkKICAgICAgICBz",
        "ZWxmLmJsb2NrcyA9IG5uLk1vZHVsZUxpc3QoQ2Fwc3RvbmVCbG9jayhjb25maWcpIGZvciBfIGluIHJhbmdlKGNvbmZpZy5u",
        "X2xheWVycykpCiAgICAgICAgc2VsZi5ub3JtID0gUk1TTm9ybShjb25maWcuZF9tb2RlbCwgY29uZmlnLm5vcm1fZXBzKQog",
        "ICAgICAgIHNlbGYuaGVhZCA9IG5uLkxpbmVhcihjb25maWcuZF9tb2RlbCwgY29uZmlnLnZvY2FiLCBiaWFzPUZhbHNlKQoK",
        "ICAgIGRlZiBmb3J3YXJkKHNlbGYsIHRva2VucywgY2FjaGU9Tm9uZSk6CiAgICAgICAgIiIidG9rZW5zIChCLCBUKSAtPiBs",
        "b2dpdHMgKEIsIFQsIHZvY2FiKTsgd2l0aCBhIEtWQ2FjaGUgdGhlIHRva2VucyBjb250aW51ZSB0aGUgb25lcyBpdCBob2xk",
        "cy4iIiIKICAgICAgICBzdGFydCA9IF9jYXBzdG9uZV90b2tlbnModG9rZW5zLCBzZWxmLmNvbmZpZywgY2FjaGUpCiAgICAg",
        "ICAgcG9zaXRpb25zID0gdG9yY2guYXJhbmdlKHN0YXJ0LCBzdGFydCArIHRva2Vucy5zaGFwZVsxXSkgICAgICAgICAgICAg",
        "ICAgICMgYWJzb2x1dGUgcG9zaXRpb25zIChULCkKICAgICAgICB4ID0gc2VsZi5lbWJlZCh0b2tlbnMpICAgICAgICAgICAg",
        "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIyAoQiwgVCwgZCkKICAgICAgICBmb3IgaSwgYmxvY2sg",
        "aW4gZW51bWVyYXRlKHNlbGYuYmxvY2tzKToKICAgICAgICAgICAgeCA9IGJsb2NrKHgsIHBvc2l0aW9ucywgTm9uZSBpZiBj",
        "YWNoZSBpcyBOb25lIGVsc2UgY2FjaGUubGF5ZXJzW2ldKQogICAgICAgIHJldHVybiBzZWxmLmhlYWQoc2VsZi5ub3JtKHgp",
        "KSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAjIChCLCBULCB2b2NhYik=",
    ),
    "Exercise 14": (
        "IyBFeGVyY2lzZSAxNDogV3JpdGUgdGhlIHRhc2ssIHRoZSB0cmFpbmluZyBzdGVwLCB0aGUgdHJhaW5pbmcgbG9vcCBhbmQg",
        "dGhlIHNjb3JlLiBpbmR1Y3Rpb25fYmF0Y2ggZHJhd3MsCiMgZnJvbSB0aGUgZ2VuZXJhdG9yIG9ubHksIGZvciBlYWNoIHJv",
        "dyBhIGsgZnJvbSBrX21pbiB0byBrX21heCBhbmQgayBkaXN0aW5jdCB0b2tlbnMgKHRoZSBmaXJzdCBrIG9mIGEgcmFuZG9t",
        "CiMgb3JkZXIgb2YgdGhlIHZvY2FidWxhcnkpLCB3cml0dGVuIHR3aWNlIGFuZCBwYWRkZWQgd2l0aCByYW5kb20gdG9rZW5z",
        "IHRvIDIgKiBrX21heDsgaXQgcmV0dXJucyBpbnB1dHMKIyAoYWxsIGJ1dCB0aGUgbGFzdCB0b2tlbiksIHRhcmdldHMgKGFs",
        "bCBidXQgdGhlIGZpcnN0KSBhbmQgc2NvcmVkLCBUcnVlIGF0IHRhcmdldHMgaysxIC4uIDJrLTEgKGlucHV0CiMgcG9zaXRp",
        "b25zIGsgLi4gMmstMikuIHRyYWluX3N0ZXAgY29tcHV0ZXMgdGhlIG1lYW4gY3Jvc3MtZW50cm9weSBvdmVyIHRoZSBzY29y",
        "ZWQgcG9zaXRpb25zIG9ubHksIGNsZWFycyB0aGUKIyBvbGQgZ3JhZGllbnRzLCBiYWNrcHJvcGFnYXRlcywgdGFrZXMgb25l",
        "IG9wdGltaXplciBzdGVwIGFuZCByZXR1cm5zIHRoZSBsb3NzIGFzIGEgZmxvYXQuIGZpdF9pbmR1Y3Rpb24gbWFrZXMKIyBv",
        "bmUgdG9yY2guR2VuZXJhdG9yKCkubWFudWFsX3NlZWQoc2VlZCArIDEpIGFuZCBvbmUgQWRhbVcgKHdlaWdodF9kZWNheT0w",
        "KSwgc2V0cyB0aGUgcmF0ZSBhdCBzdGVwIHQgdG8KIyBsciAqIG1pbigxLCAodCArIDEpIC8gd2FybXVwKSAqICgxIC0gdCAv",
        "IHN0ZXBzKSwgcnVucyBzdGVwIG9uIGEgZnJlc2ggYmF0Y2ggZWFjaCBzdGVwIGluIHRyYWluaW5nIG1vZGUsIGNhbGxzCiMg",
        "b25fc3RlcCh0ICsgMSwgbG9zcykgd2hlbiBnaXZlbiwgYW5kIHJldHVybnMgdGhlIGxvc3Nlcy4gaW5kdWN0aW9uX2FjY3Vy",
        "YWN5IHNjb3JlcyBhcmdtYXggPT0gdGFyZ2V0IG9uIHRoZQojIHNjb3JlZCBwb3NpdGlvbnMgb2YgYSBmcmVzaCBiYXRjaCwg",
        "d2l0aG91dCBncmFkaWVudHMuCiMgVGhlIGNoZWNrcyByZXF1aXJlOiBkaXN0aW5jdCB0b2tlbnMgcmVwZWF0ZWQsIHRoZSBz",
        "Y29yZWQgcG9zaXRpb25zLCBrIGRyYXduIHBlciByb3csIHRoZSBnZW5lcmF0b3IgYWxvbmUKIyBkZWNpZGluZzsgdGhlIHNj",
        "b3JlZCBsb3NzIGFuZCBleGFjdGx5IG9uZSBvcHRpbWl6ZXIgc3RlcDsgQWRhbVcgd2l0aG91dCBkZWNheSwgdGhlIHdhcm0t",
        "dXAgYW5kIGRlY2F5LCBmcmVzaAojIGFuZCBzZWVkZWQgYmF0Y2hlczsgYW5kIGFuIGFjY3VyYWN5IG92ZXIgdGhlIHNjb3Jl",
        "ZCBwb3NpdGlvbnMgb25seS4KZGVmIGluZHVjdGlvbl9iYXRjaChiYXRjaCwgZ2VuZXJhdG9yLCAqLCB2b2NhYj0xNiwga19t",
        "aW49NCwga19tYXg9MTIpOgogICAgIiIiUm93cyBvZiBrIGRpc3RpbmN0IHJhbmRvbSB0b2tlbnMgd3JpdHRlbiB0d2ljZSAo",
        "ayBkcmF3biBwZXIgcm93KSwgcGFkZGVkIHRvIDIga19tYXg6IChpbnB1dHMsIHRhcmdldHMsIHNjb3JlZCkuIiIiCiAgICBf",
        "aW5kdWN0aW9uX2FyZ3MoYmF0Y2gsIGdlbmVyYXRvciwgdm9jYWIsIGtfbWluLCBrX21heCkKICAgIHNlZ21lbnRzID0gdG9y",
        "Y2gucmFuZChiYXRjaCwgdm9jYWIsIGdlbmVyYXRvcj1nZW5lcmF0b3IpLmFyZ3NvcnQoLTEpWzosIDprX21heF0gICAjIChC",
        "LCBrX21heCkgZGlzdGluY3QgdG9rZW5zCiAgICBrID0gdG9yY2gucmFuZGludChrX21pbiwga19tYXggKyAxLCAoYmF0Y2gs",
        "IDEpLCBnZW5lcmF0b3I9Z2VuZXJhdG9yKSAgICAgICAgICAgICAgIyAoQiwgMSkgc2VnbWVudCBsZW5ndGhzCiAgICBwb3Np",
        "dGlvbiA9IHRvcmNoLmFyYW5nZSgyICoga19tYXgpW05vbmUsIDpdICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg",
        "ICAgICAgICMgKDEsIDIga19tYXgpCiAgICByZXBlYXRlZCA9IHNlZ21lbnRzLmdhdGhlcigxLCB0b3JjaC53aGVyZShwb3Np",
        "dGlvbiA8IGssIHBvc2l0aW9uLCBwb3NpdGlvbiAtIGspLmNsYW1wKG1heD1rX21heCAtIDEpKQogICAgcGFkZGluZyA9IHRv",
        "cmNoLnJhbmRpbnQodm9jYWIsIChiYXRjaCwgMiAqIGtfbWF4KSwgZ2VuZXJhdG9yPWdlbmVyYXRvcikKICAgIHNlcXVlbmNl",
        "cyA9IHRvcmNoLndoZXJlKHBvc2l0aW9uIDwgMiAqIGssIHJlcGVhdGVkLCBwYWRkaW5nKSAgICAgICAgICAgICAgICAgICAg",
        "ICAjIChCLCAyIGtfbWF4KQogICAgc2NvcmVkID0gKHBvc2l0aW9uWzosIDotMV0gPj0gaykgJiAocG9zaXRpb25bOiwgOi0x",
        "XSA8PSAyICogayAtIDIpICAgICAgICAgICAgICAgICMgdGFyZ2V0cyBrKzEgLi4gMmstMQogICAgcmV0dXJuIHNlcXVlbmNl",
        "c1s6LCA6LTFdLCBzZXF1ZW5jZXNbOiwgMTpdLCBzY29yZWQKCgpkZWYgdHJhaW5fc3RlcChtb2RlbCwgb3B0aW1pemVyLCBp",
        "bnB1dHMsIHRhcmdldHMsIHNjb3JlZCk6CiAgICAiIiJPbmUgb3B0aW1pemVyIHN0ZXAgb24gdGhlIG1lYW4gbmV4dC10b2tl",
        "biBjcm9zcy1lbnRyb3B5IG92ZXIgdGhlIHNjb3JlZCBwb3NpdGlvbnM7IHJldHVybiB0aGUgbG9zcy4iIiIKICAgIF90cmFp",
        "bl9zdGVwX2FyZ3MobW9kZWwsIG9wdGltaXplciwgaW5wdXRzLCB0YXJnZXRzLCBzY29yZWQpCiAgICBsb3NzID0gRi5jcm9z",
        "c19lbnRyb3B5KG1vZGVsKGlucHV0cylbc2NvcmVkXSwgdGFyZ2V0c1tzY29yZWRdKSAgIyBsb2dpdHMgKEIsIFQsIFYpW3Nj",
        "b3JlZF0gLT4gKE4sIFYpCiAgICBvcHRpbWl6ZXIuemVyb19ncmFkKCkKICAgIGxvc3MuYmFja3dhcmQoKQogICAgb3B0aW1p",
        "emVyLnN0ZXAoKQogICAgcmV0dXJuIGxvc3MuaXRlbSgpCgoKZGVmIGZpdF9pbmR1Y3Rpb24obW9kZWwsIHN0ZXAsIHN0ZXBz",
        "LCBzZWVkLCAqLCBiYXRjaD02NCwgbHI9MWUtMiwgd2FybXVwPTIwLCBrX21pbj00LCBrX21heD0xMiwgb25fc3RlcD1Ob25l",
        "KToKICAgICIiIlRyYWluIG1vZGVsIG9uIGZyZXNoIGluZHVjdGlvbiBiYXRjaGVzIHdpdGggc3RlcChtb2RlbCwgb3B0aW1p",
        "emVyLCBpbnB1dHMsIHRhcmdldHMsIHNjb3JlZCk7IHJldHVybiB0aGUgbG9zc2VzLiIiIgogICAgX2ZpdF9hcmdzKG1vZGVs",
        "LCBzdGVwLCBzdGVwcywgc2VlZCwgYmF0Y2gsIGxyLCB3YXJtdXAsIGtfbWluLCBrX21heCwgb25fc3RlcCkKICAgIGdlbmVy",
        "YXRvciA9IHRvcmNoLkdlbmVyYXRvcigpLm1hbnVhbF9zZWVkKHNlZWQgKyAxKQogICAgb3B0aW1pemVyID0gdG9yY2gub3B0",
        "aW0uQWRhbVcobW9kZWwucGFyYW1ldGVycygpLCBscj1sciwgd2VpZ2h0X2RlY2F5PTAuMCkKICAgIHNjaGVkdWxlID0gdG9y",
        "Y2gub3B0aW0ubHJfc2NoZWR1bGVyLkxhbWJkYUxSKG9wdGltaXplciwgbGFtYmRhIHQ6IG1pbigxLjAsICh0ICsgMSkgLyB3",
        "YXJtdXApICogKDEgLSB0IC8gc3RlcHMpKQogICAgbG9zc2VzID0gW10KICAgIG1vZGVsLnRyYWluKCkKICAgIGZvciB0IGlu",
        "IHJhbmdlKHN0ZXBzKToKICAgICAgICBsb3NzZXMuYXBwZW5kKHN0ZXAobW9kZWwsIG9wdGltaXplciwgKmluZHVjdGlvbl9i",
        "YXRjaChiYXRjaCwgZ2VuZXJhdG9yLCB2b2NhYj1tb2RlbC5jb25maWcudm9jYWIsIGtfbWluPWtfbWluLCBrX21heD1rX21h",
        "eCkpKQogICAgICAgIHNjaGVkdWxlLnN0ZXAoKSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg",
        "ICAgICAgICAgICAgICAgICAjIHRoZSByYXRlIG9mIHN0ZXAgdCArIDEKICAgICAgICBpZiBvbl9zdGVwIGlzIG5vdCBOb25l",
        "OgogICAgICAgICAgICBvbl9zdGVwKHQgKyAxLCBsb3NzZXNbLTFdKQogICAgbW9kZWwuZXZhbCgpCiAgICByZXR1cm4gbG9z",
        "c2VzCgoKZGVmIGluZHVjdGlvbl9hY2N1cmFjeShtb2RlbCwgKiwgYmF0Y2g9NTEyLCBzZWVkPTEyMzQ1LCBrX21pbj00LCBr",
        "X21heD0xMik6CiAgICAiIiJIZWxkLW91dCBncmVlZHkgYWNjdXJhY3kgb24gdGhlIHNjb3JlZCBwb3NpdGlvbnMgb2YgYSBm",
        "cmVzaCBpbmR1Y3Rpb24gYmF0Y2guIiIiCiAgICBfYWNjdXJhY3lfYXJncyhtb2RlbCwgc2VlZCkKICAgIGlucHV0cywgdGFy",
        "Z2V0cywgc2NvcmVkID0gaW5kdWN0aW9uX2JhdGNoKGJhdGNoLCB0b3JjaC5HZW5lcmF0b3IoKS5tYW51YWxfc2VlZChzZWVk",
        "KSwgdm9jYWI9bW9kZWwuY29uZmlnLnZvY2FiLCBrX21pbj1rX21pbiwga19tYXg9a19tYXgpCiAgICB3aXRoIHRvcmNoLm5v",
        "X2dyYWQoKToKICAgICAgICBoaXRzID0gbW9kZWwoaW5wdXRzKS5hcmdtYXgoZGltPS0xKSA9PSB0YXJnZXRzICAgICAgICAg",
        "ICAgICAgICAgICAgICAgICAgICAgIyAoQiwgVCkKICAgIHJldHVybiBmbG9hdChoaXRzW3Njb3JlZF0uZmxvYXQoKS5tZWFu",
        "KCkp",
    ),
    "Exercise 15": (
        "IyBFeGVyY2lzZSAxNTogV3JpdGUgdGhlIEtWIGNhY2hlIGFuZCBncmVlZHkgZGVjb2RpbmcgdGhyb3VnaCBpdC4gTGF5ZXJL",
        "Vi5hcHBlbmQoaywgdiwgc3RhcnQpIHdyaXRlcyBrCiMgYW5kIHYgKEIsIEhfa3YsIFQsIGhkKSBpbnRvIHRoZSBidWZmZXJz",
        "IGF0IHBvc2l0aW9ucyBzdGFydCAuLiBzdGFydCArIFQgLSAxIChyZWZ1c2UgYSBzdGFydCBvdGhlcgojIHRoYW4gc2VsZi5s",
        "ZW5ndGgpLCBtb3ZlcyBzZWxmLmxlbmd0aCBvbiwgYW5kIHJldHVybnMgdGhlIGtleXMgYW5kIHZhbHVlcyBvZiBwb3NpdGlv",
        "bnMgMCAuLiBzdGFydCArIFQgLSAxLgojIEtWQ2FjaGUgaG9sZHMgb25lIExheWVyS1YgcGVyIGxheWVyOyBuYnl0ZXMoKSBj",
        "b3VudHMgdGhlIGJ5dGVzIG9mIHRoZSBrZXlzIGFuZCB2YWx1ZXMgaGVsZC4KIyBnZW5lcmF0ZShtb2RlbCwgcHJvbXB0LCBu",
        "X25ldywgY2FjaGU9VHJ1ZSkgYXBwZW5kcyBuX25ldyBncmVlZHkgdG9rZW5zIChhcmdtYXggb2YgdGhlIGxhc3QgbG9naXRz",
        "KToKIyB3aXRoIGNhY2hlPVRydWUgaXQgZmVlZHMgdGhlIHByb21wdCBvbmNlIGFuZCB0aGVuIG9ubHkgdGhlIG5ld2VzdCB0",
        "b2tlbiB0aHJvdWdoIG9uZSBLVkNhY2hlOyB3aXRoCiMgY2FjaGU9RmFsc2UgdGhlIHdob2xlIHNlcXVlbmNlIGV2ZXJ5IHN0",
        "ZXAuIE5vIGdyYWRpZW50cy4KIyBUaGUgY2hlY2sgcmVxdWlyZXM6IHRoZSBtb2RlbCdzIHRva2VucyB3aXRoIGFuZCB3aXRo",
        "b3V0IGEgY2FjaGU7IHRoZSBwcm9tcHQgZmVkIG9uY2UgYW5kIHRoZW4gb25lCiMgdG9rZW4gYSBzdGVwIHRocm91Z2ggdGhl",
        "IGNhY2hlOyB0aGUgd2hvbGUgc2VxdWVuY2UgYSBzdGVwIHdpdGhvdXQgaXQ7IG5fbmV3PTAgcmV0dXJucyB0aGUgcHJvbXB0",
        "LgpjbGFzcyBMYXllcktWOgogICAgIiIiT25lIGxheWVyJ3Mga2V5cyBhbmQgdmFsdWVzIGluIHR3byBwcmVhbGxvY2F0ZWQg",
        "YnVmZmVycyAoQiwgSF9rdiwgbWF4X2xlbiwgaGQpLiIiIgoKICAgIGRlZiBfX2luaXRfXyhzZWxmLCBiYXRjaCwgbl9rdl9o",
        "ZWFkcywgbWF4X2xlbiwgaGVhZF9kaW0sIGR0eXBlPXRvcmNoLmZsb2F0MzIpOgogICAgICAgIF9sYXllcl9rdl9hcmdzKGJh",
        "dGNoLCBuX2t2X2hlYWRzLCBtYXhfbGVuLCBoZWFkX2RpbSwgZHR5cGUpCiAgICAgICAgc2VsZi5rZXlzID0gdG9yY2guemVy",
        "b3MoYmF0Y2gsIG5fa3ZfaGVhZHMsIG1heF9sZW4sIGhlYWRfZGltLCBkdHlwZT1kdHlwZSkKICAgICAgICBzZWxmLnZhbHVl",
        "cyA9IHRvcmNoLnplcm9zKGJhdGNoLCBuX2t2X2hlYWRzLCBtYXhfbGVuLCBoZWFkX2RpbSwgZHR5cGU9ZHR5cGUpCiAgICAg",
        "ICAgc2VsZi5sZW5ndGggPSAwCgogICAgZGVmIGFwcGVuZChzZWxmLCBrLCB2LCBzdGFydCk6CiAgICAgICAgIiIiV3JpdGUg",
        "aywgdiAoQiwgSF9rdiwgVCwgaGQpIGF0IHBvc2l0aW9ucyBzdGFydC4uOyByZXR1cm4gdGhlIGtleXMgYW5kIHZhbHVlcyBz",
        "byBmYXIuIiIiCiAgICAgICAgX2t2X2FwcGVuZF9hcmdzKHNlbGYua2V5cywgaywgdiwgc3RhcnQpCiAgICAgICAgZW5kID0g",
        "c3RhcnQgKyBrLnNoYXBlWzJdCiAgICAgICAgaWYgc3RhcnQgIT0gc2VsZi5sZW5ndGggb3IgZW5kID4gc2VsZi5rZXlzLnNo",
        "YXBlWzJdOgogICAgICAgICAgICByYWlzZSBWYWx1ZUVycm9yKGYidGhlIGNhY2hlIGhvbGRzIHtzZWxmLmxlbmd0aH0gb2Yg",
        "e3NlbGYua2V5cy5zaGFwZVsyXX0gcG9zaXRpb25zOyBjYW5ub3Qgd3JpdGUge3N0YXJ0fS4ue2VuZCAtIDF9IikKICAgICAg",
        "ICBzZWxmLmtleXNbOiwgOiwgc3RhcnQ6ZW5kXSwgc2VsZi52YWx1ZXNbOiwgOiwgc3RhcnQ6ZW5kXSA9IGssIHYKICAgICAg",
        "ICBzZWxmLmxlbmd0aCA9IGVuZAogICAgICAgIHJldHVybiBzZWxmLmtleXNbOiwgOiwgOmVuZF0sIHNlbGYudmFsdWVzWzos",
        "IDosIDplbmRdICAgICAgICAgICAgICAgICAjIHZpZXdzLCBubyBjb3B5CgoKY2xhc3MgS1ZDYWNoZToKICAgICIiIlRoZSBL",
        "ViBjYWNoZSBvZiBhIHdob2xlIG1vZGVsOiBvbmUgTGF5ZXJLViBwZXIgbGF5ZXIuIiIiCgogICAgZGVmIF9faW5pdF9fKHNl",
        "bGYsIGNvbmZpZywgYmF0Y2gpOgogICAgICAgIF9rdl9jYWNoZV9hcmdzKGNvbmZpZywgYmF0Y2gpCiAgICAgICAgc2VsZi5s",
        "YXllcnMgPSBbTGF5ZXJLVihiYXRjaCwgY29uZmlnLm5fa3ZfaGVhZHMsIGNvbmZpZy5tYXhfbGVuLCBjb25maWcuaGVhZF9k",
        "aW0pIGZvciBfIGluIHJhbmdlKGNvbmZpZy5uX2xheWVycyldCgogICAgQHByb3BlcnR5CiAgICBkZWYgbGVuZ3RoKHNlbGYp",
        "OgogICAgICAgICIiIkhvdyBtYW55IHBvc2l0aW9ucyB0aGUgY2FjaGUgaG9sZHMuIiIiCiAgICAgICAgcmV0dXJuIHNlbGYu",
        "bGF5ZXJzWzBdLmxlbmd0aAoKICAgIGRlZiBuYnl0ZXMoc2VsZik6CiAgICAgICAgIiIiVGhlIGJ5dGVzIG9mIHRoZSBrZXlz",
        "IGFuZCB2YWx1ZXMgaGVsZC4iIiIKICAgICAgICByZXR1cm4gc3VtKHRbOiwgOiwgOmxheWVyLmxlbmd0aF0ubnVtZWwoKSAq",
        "IHQuZWxlbWVudF9zaXplKCkgZm9yIGxheWVyIGluIHNlbGYubGF5ZXJzIGZvciB0IGluIChsYXllci5rZXlzLCBsYXllci52",
        "YWx1ZXMpKQoKCmRlZiBnZW5lcmF0ZShtb2RlbCwgcHJvbXB0LCBuX25ldywgKiwgY2FjaGU9VHJ1ZSk6CiAgICAiIiJHcmVl",
        "ZHkgZGVjb2Rpbmcgb2Ygbl9uZXcgdG9rZW5zIGFmdGVyIHByb21wdCAoQiwgVDApOyB3aXRoIGNhY2hlPVRydWUgZWFjaCBz",
        "dGVwIGZlZWRzIG9ubHkgdGhlIG5ld2VzdCB0b2tlbi4iIiIKICAgIG5fbmV3ID0gX2dlbmVyYXRpb25fbGVuZ3RoKG1vZGVs",
        "LCBwcm9tcHQsIG5fbmV3KQogICAgdG9rZW5zLCBmZWVkID0gcHJvbXB0LCBwcm9tcHQKICAgIHN0b3JlID0gS1ZDYWNoZSht",
        "b2RlbC5jb25maWcsIHByb21wdC5zaGFwZVswXSkgaWYgY2FjaGUgZWxzZSBOb25lCiAgICB3aXRoIHRvcmNoLm5vX2dyYWQo",
        "KToKICAgICAgICBmb3IgXyBpbiByYW5nZShuX25ldyk6CiAgICAgICAgICAgIGxvZ2l0cyA9IG1vZGVsKGZlZWQgaWYgY2Fj",
        "aGUgZWxzZSB0b2tlbnMsIHN0b3JlKVs6LCAtMV0gICAjIChCLCB2b2NhYikgYXQgdGhlIG5ld2VzdCBwb3NpdGlvbgogICAg",
        "ICAgICAgICBuZXdlc3QgPSBsb2dpdHMuYXJnbWF4KGRpbT0tMSwga2VlcGRpbT1UcnVlKSAgICAgICAgICAgICAgIyAoQiwg",
        "MSkKICAgICAgICAgICAgdG9rZW5zID0gdG9yY2guY2F0KCh0b2tlbnMsIG5ld2VzdCksIGRpbT0xKQogICAgICAgICAgICBm",
        "ZWVkID0gbmV3ZXN0CiAgICByZXR1cm4gdG9rZW5z",
    ),
}.items()}
# builder:end sha256=f85424dca60b05953dba591ef3fbd793b75df8a02714314adf94d83486f13718

# %% tags=["hide-input"]
# @title The argument checks of the lesson's functions: each function calls its own in one line (open to read)
def _counts(**named):
    """Each named argument as a whole number of at least 1, in order; one name gives one number."""
    values = tuple(require_int(name, value, minimum=1) for name, value in named.items())
    return values[0] if len(values) == 1 else values


def _refusal(call):
    """The message of the TypeError or ValueError that ``call()`` must raise (an AssertionError if it raises none)."""
    try:
        call()
    except (TypeError, ValueError) as error:
        return str(error)
    raise AssertionError("this call should raise TypeError or ValueError on its bad input, but returned normally")


def _softmax_args(scores, dim):
    """softmax's scores (a tensor with at least one axis) and an axis they have."""
    scores = require_tensor("scores", scores, min_ndim=1)
    return scores, require_int("dim", dim, minimum=-scores.ndim, maximum=scores.ndim - 1)


def _position_table_args(length, d_model, base, dtype):
    """Exercise 1's sizes, base and dtype, and the table's bytes within the budget."""
    length = require_int("length", length, minimum=1)
    d_model = require_int("d_model", d_model, minimum=2)
    base = require_real("base", base, minimum=1.0, strict_minimum=True)
    if d_model % 2:
        raise ValueError(f"d_model must be even, because sine and cosine come in pairs; got {d_model}")
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    require_budget("the position table", (length, d_model), itemsize=2 * torch.finfo(dtype).bits // 8)  # the table and its angles
    return length, d_model, base


def _causal_mask_args(t_q, t_k, query_offset):
    """Exercise 2's sizes: queries that fit inside the keys, and a mask within the budget."""
    t_q = require_int("t_q", t_q, minimum=1)
    t_k = require_int("t_k", t_k, minimum=1)
    query_offset = require_int("query_offset", query_offset, minimum=0)
    if query_offset + t_q > t_k:
        raise ValueError(
            f"queries at absolute positions up to {query_offset + t_q - 1} need at least {query_offset + t_q} keys, "
            f"got t_k={t_k}; for cached decoding pass t_k = query_offset + t_q"
        )
    require_budget("the causal mask", (t_q, t_k), itemsize=1)
    require_budget("the key positions", (t_k,), itemsize=8)
    return t_q, t_k, query_offset


def _require_shares(p):
    """p as a floating tensor (..., n) of softmax shares: every entry in [0, 1]."""
    p = require_tensor("p", p, min_ndim=1)
    if bool((p < 0).any()) or bool((p > 1).any()):
        raise ValueError(f"p must hold softmax shares in [0, 1], got entries from {float(p.min()):.3g} to {float(p.max()):.3g}")
    return p


def _jacobian_args(p):
    """softmax_jacobian's shares, and its (..., n, n) matrix within the budget."""
    p = _require_shares(p)
    require_budget("the Jacobian", (*p.shape, p.shape[-1]), itemsize=p.element_size())
    return p


def _saturation_args(widths, n_keys, trials):
    """saturation_experiment's widths, key count and trials, and its widest draw within the budget."""
    widths = [require_int("width", w, minimum=1) for w in widths]
    if not widths:
        raise ValueError("widths must name at least one head width")
    n_keys = require_int("n_keys", n_keys, minimum=2)
    trials = require_int("trials", trials, minimum=1, maximum=100_000)  # seconds, not hours
    require_budget("the keys of the widest head", (trials, n_keys, max(widths)), itemsize=4 + 8)  # float32 draws, float64 scores
    return widths, n_keys, trials


def _split_heads_args(x, n_heads):
    """split_heads' x (..., T, H·d) and a head count that divides its last axis."""
    x = require_tensor("x", x, min_ndim=2, finite=False)  # a reshape cannot create NaN; attention checks values
    n_heads = require_int("n_heads", n_heads, minimum=1)
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last axis ({x.shape[-1]}) must split evenly into n_heads={n_heads} heads")
    return x, n_heads


def _repeat_kv_args(x, group):
    """repeat_kv_heads' x (..., H_kv, T, d) and group, and the repeated heads within the budget."""
    x = require_tensor("x", x, min_ndim=3, finite=False)
    group = require_int("group", group, minimum=1)
    require_budget("the repeated K/V heads", (*x.shape[:-3], x.shape[-3] * group, *x.shape[-2:]), itemsize=x.element_size())
    return x, group


def _require_hidden(x, d_model, dtype, *, ndim=None):
    """x as a floating tensor (..., d_model) in the dtype of a layer's weights; otherwise a TypeError or ValueError naming the fix."""
    x = require_tensor("x", x, ndim=ndim, min_ndim=1)  # NaN or infinity in, NaN out: stop it at the door
    if x.shape[-1] != d_model:
        leading = "B, T" if ndim == 3 else "..."
        raise ValueError(f"x must have shape ({leading}, {d_model}), got {tuple(x.shape)}")
    if x.dtype != dtype:
        raise TypeError(f"x has dtype {x.dtype} but the layer's weights have {dtype}; convert one of them (x.to(dtype) or layer.to(dtype))")
    return x


def _attention_sizes(d_model, n_heads, n_kv_heads, causal):
    """MultiHeadSelfAttention's sizes: heads that split d_model, K/V heads that divide the heads, weights within the budget."""
    d_model, n_heads = require_int("d_model", d_model, minimum=1), require_int("n_heads", n_heads, minimum=1)
    n_kv_heads = n_heads if n_kv_heads is None else require_int("n_kv_heads", n_kv_heads, minimum=1)
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} must split evenly into n_heads={n_heads} heads")
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads}, so each K/V head serves a whole group")
    rows = 2 * d_model + 2 * n_kv_heads * (d_model // n_heads)  # W_q, W_o: d x d; W_k, W_v: (H_kv·d_head) x d
    require_budget("the attention weights", (rows, d_model), itemsize=torch.get_default_dtype().itemsize)
    return d_model, n_heads, n_kv_heads, require_bool("causal", causal)


def _attention_forward_args(layer, x, token_valid, return_weights):
    """Exercise 5's x (B, T, d_model), padding flags (B, T) or None, return_weights, and every head's scores within the budget."""
    x = _require_hidden(x, layer.d_model, layer.q_proj.weight.dtype, ndim=3)
    batch, length, _ = x.shape
    if token_valid is not None and (not isinstance(token_valid, torch.Tensor) or token_valid.dtype != torch.bool
                                    or token_valid.shape != (batch, length)):
        raise ValueError(f"token_valid must be a bool tensor of shape {(batch, length)}, got {getattr(token_valid, 'shape', token_valid)!r}")
    if token_valid is not None:
        require_tensor("token_valid", token_valid, floating=False)
    require_budget("the scores, exponentials and weights of every head", (batch, layer.n_heads, length, length), itemsize=3 * x.element_size())
    return x, token_valid, require_bool("return_weights", return_weights)


def _layer_norm_args(x, weight, bias, eps):
    """Exercise 6's x, its gain and shift (one entry per feature, or None) and eps; eps = 0 only where no token is constant."""
    x = require_tensor("x", x, min_ndim=1)
    eps = require_real("eps", eps, minimum=0.0)
    for name, parameter in (("weight", weight), ("bias", bias)):
        if parameter is not None:
            require_tensor(name, parameter, ndim=1)
            if parameter.shape[0] != x.shape[-1]:
                raise ValueError(f"{name} must have one entry per feature ({x.shape[-1]}), got shape {tuple(parameter.shape)}")
    if eps == 0.0 and bool((x.amax(dim=-1) == x.amin(dim=-1)).any()):
        raise ValueError("eps=0 divides 0 by 0 on a constant token (its variance is 0); pass eps > 0, e.g. the default 1e-5")
    return x, eps


def _feed_forward_sizes(d_model, d_ff):
    """FeedForward's widths, and its two weight matrices within the budget."""
    d_model, d_ff = _counts(d_model=d_model, d_ff=d_ff)
    require_budget("the feed-forward weights", (2, d_model, d_ff), itemsize=torch.get_default_dtype().itemsize)
    return d_model, d_ff


def _probe_sizes(vocab_size, width):
    """CausalityProbe's vocabulary and width, and its embeddings within the budget."""
    vocab_size, width = require_int("vocab_size", vocab_size, minimum=1), require_int("width", width, minimum=2)
    require_budget("the probe's embeddings and their fill", (2, vocab_size, width), itemsize=4)
    return vocab_size, width


def _tiny_lm_sizes(use_positions, vocab_size, d_model, max_length):
    """TinyLM's switch and sizes, and its two embedding tables within the budget."""
    use_positions = require_bool("use_positions", use_positions)
    vocab_size = require_int("vocab_size", vocab_size, minimum=2)
    d_model, max_length = _counts(d_model=d_model, max_length=max_length)
    require_budget("the token and position embeddings", (vocab_size + max_length, d_model), itemsize=torch.get_default_dtype().itemsize)
    return use_positions, vocab_size, d_model, max_length


def _adamw_args(parameters, lr, betas, eps, weight_decay):
    """AdamW's trainable tensors and hyperparameters: a positive rate, a pair of betas below 1, eps > 0, decay >= 0."""
    parameters = [require_tensor(f"parameters[{i}]", p, finite=False) for i, p in enumerate(parameters)]
    lr = require_real("lr", lr, minimum=0.0, strict_minimum=True)
    pair = tuple(require_real("beta", b, minimum=0.0, maximum=0.9999999) for b in betas)
    if len(pair) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    eps = require_real("eps", eps, minimum=0.0, strict_minimum=True)
    return [p for p in parameters if p.requires_grad], lr, pair, eps, require_real("weight_decay", weight_decay, minimum=0.0)


def _sampling_args(logits, temperature, top_k, top_p):
    """Exercise 7's logits (a non-empty sequence of reals), a positive temperature, top_k in 1..V and top_p in (0, 1], or None."""
    if isinstance(logits, (str, bytes)) or not hasattr(logits, "__len__") or len(logits) == 0:
        raise ValueError(f"logits must be a non-empty sequence of real numbers, got {logits!r}")
    logits = [require_real(f"logits[{i}]", z) for i, z in enumerate(logits)]
    temperature = require_real("temperature", temperature, minimum=0.0, strict_minimum=True)
    if top_k is not None:
        top_k = require_int("top_k", top_k, minimum=1, maximum=len(logits))
    if top_p is not None:
        top_p = require_real("top_p", top_p, minimum=0.0, maximum=1.0, strict_minimum=True)
    return logits, temperature, top_k, top_p


def _greedy_args(prepared_logits, eos_id, max_new_tokens):
    """Exercise 8's score vectors (as lists), an EOS id each of them holds, and a positive length limit."""
    eos_id = require_int("eos_id", eos_id, minimum=0)
    max_new_tokens = require_int("max_new_tokens", max_new_tokens, minimum=1)
    steps = [list(scores) for scores in prepared_logits]
    for scores in steps:
        if eos_id >= len(scores):
            raise ValueError(f"eos_id={eos_id} is not a token id of a {len(scores)}-entry score vector")
    return steps, eos_id, max_new_tokens


# %% [markdown]
# ## Level 2 · How attention works, from scratch
#
# Picture a meeting where someone says "it's broken, can you fix it?". To work out what "it"
# means you glance around: at the laptop on the table, at the colleague who just came in, at the
# whiteboard. Most of your attention goes to the laptop, a little to everything else, and "it"
# comes to mean mostly *laptop*. Attention in a transformer is that glance, done by every word
# for every other word, in every layer. The same mechanism lets "bank" mean a riverbank next to
# "river" and a lender next to "loan": the word is the same, what it listens to is not.
#
# Each section below follows one beat: the idea, the formula with a table of its symbols, the
# numbers worked by hand, the code, a figure with a caption that says how to read it, and a
# check that stops the notebook if anything is off. The code cells tagged **exercises** ask you
# to write a core function yourself; the contract cell after each one judges your version and
# names the property that fails.
#
# ## 1 · What does "it" refer to? Softmax by hand
#
# **The idea.** In *"The animal didn't cross the street because it was tired"*, the word "it"
# compares itself with other words and gets one relevance **score** per word (section 2 shows
# where scores come from). To keep the numbers small, take three candidates: "animal" scores 2.0,
# "tired" 1.0 and "street" 0.5. Attention needs *shares* that are positive and add up to 1.
# The function that turns scores into such shares is the **softmax**:
#
# $$\operatorname{softmax}(z)_i = \frac{e^{z_i}}{\sum_{j=1}^{n} e^{z_j}}$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $z$ | the scores that go in, one per candidate word | $(2.0, 1.0, 0.5)$ |
# | $n$ | how many scores there are | $3$ |
# | $i$ | the candidate whose share we compute | $i = 1$ is "animal" |
# | $e^{x}$ | the exponential, with $e \approx 2.718$; positive for every $x$ | $e^{2.0} \approx 7.39$ |
# | $\sum_{j=1}^{n}$ | add up the terms for $j = 1, \dots, n$ | $e^{2.0} + e^{1.0} + e^{0.5}$ |
# | $\operatorname{softmax}(z)_i$ | the share of attention candidate $i$ receives | $0.63$ |
#
# **By hand.** Exponentiate: $e^{2.0} = 7.39$, $e^{1.0} = 2.72$, $e^{0.5} = 1.65$. Add them up:
# $11.76$. Divide each by the total: animal $7.39 / 11.76 = 0.63$, tired $0.23$, street $0.14$.
# The new meaning of "it" is 63% animal. Nobody told the model a grammar rule; the scores did it.
#
# Why exponentiate instead of dividing each score by the total of the scores? Three reasons you
# can read off the numbers: the exponential is positive even for negative scores, so no share is
# ever negative; a higher score always gets a larger share; and adding 1 to a score multiplies
# its weight by $e \approx 2.72$, so the best candidate pulls clearly ahead. Plain division would
# give animal only $2.0 / 3.5 = 0.57$ and fails outright on negative scores. One more property
# matters for code: adding the same constant to every score changes nothing, because it
# multiplies the numerator and the denominator by the same factor. Subtracting the largest score
# before exponentiating therefore keeps the result and stops $e^{1000}$ from overflowing.

# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_it_weights (open to read)
def plot_it_weights(words, scores, weights, language="en"):
    """Bars of each word's share of the raw scores next to its softmax weight."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    scores, weights = np.asarray(scores, dtype=float), np.asarray(weights, dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 3.3))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.1, top=0.9)  # fixed margins: a layout engine would draw everything twice
    x = np.arange(len(words))
    ax.bar(x - 0.2, scores / scores.sum(), 0.4, color=Palette.GREY, hatch="//", edgecolor="white", lw=0,  # hatched: not colour alone
           label=localized(language, "score / sum of scores", "оценка / сумма оценок"))
    ax.bar(x + 0.2, weights, 0.4, color=Palette.BLUE, label=localized(language, "softmax weight", "вес softmax"))
    for xi, w in zip(x, weights):
        ax.text(xi + 0.2, w + 0.015, f"{w:.2f}", ha="center", color=Palette.INK)
    ax.set_xticks(x, words)
    ax.set_ylim(0, 0.75)
    ax.set_ylabel(localized(language, "share", "доля"))
    ax.set_title(localized(language, 'What "it" attends to', 'На что смотрит «it»'))
    ax.legend(loc="upper right")
    return fig


# %%
def softmax(scores, dim=-1):
    """Softmax along ``dim``, shifted by the largest score so that exp() cannot overflow."""
    scores, dim = _softmax_args(scores, dim)
    shifted = scores - scores.amax(dim=dim, keepdim=True)  # the largest entry becomes 0
    weights = shifted.exp()
    return weights / weights.sum(dim=dim, keepdim=True)


IT_WORDS = ("animal", "tired", "street")
it_scores = torch.tensor(REFERENCE.value("it_example.scores"), dtype=torch.float64)
it_exps = it_scores.exp()
it_weights = softmax(it_scores)
for word, score, e, w in zip(IT_WORDS, it_scores.tolist(), it_exps.tolist(), it_weights.tolist()):
    print(f"{word:>6}: score {score:.1f}   e^score {e:5.2f}   share {e:5.2f} / {float(it_exps.sum()):.2f} = {w:.2f}")
print(f"plain division would give animal {2.0 / 3.5:.2f}")

# The numbers above, as the prose states them.
expect("[round(x, 2) for x in it_exps.tolist()] == [7.39, 2.72, 1.65]", [round(x, 2) for x in it_exps.tolist()], "==", [7.39, 2.72, 1.65])
expect("round(float(it_exps.sum()), 2) == 11.76", round(float(it_exps.sum()), 2), "==", 11.76)
expect("[round(x, 2) for x in it_weights.tolist()] == [0.63, 0.23, 0.14]", [round(x, 2) for x in it_weights.tolist()], "==", [0.63, 0.23, 0.14])
REFERENCE.check("it_example.weights", it_weights, atol=1e-15)
expect("adding a constant must not change softmax", torch.allclose(softmax(it_scores + 1000.0), it_weights, atol=1e-15))
expect("the max shift must prevent overflow", torch.isfinite(softmax(torch.tensor([1000.0, 999.0]))).all())


show_figure(
    plot_it_weights(IT_WORDS, it_scores.tolist(), it_weights.tolist(), language=LANGUAGE),
    "For each candidate word, the grey hatched bar is its share of the raw scores and the plain blue bar its softmax weight. "
    "Animal scores only twice as much as tired yet gets almost three times the attention: "
    "exponentiating stretches the gaps, so attention commits to the best match while keeping a little of the rest.",
)

# %% tags=["hide-input"]
# @title Softmax's edge cases: extreme scores, every axis, a scalar (checked; open to read)
# Scores spanning [-1000, 1000]: a shift by the smallest score would overflow exp(2000) to inf and give NaN.
expect("softmax over scores spanning [-1000, 1000] must be (0, 0, 1)", softmax(torch.tensor([-1000.0, 0.0, 1000.0], dtype=torch.float64)).tolist(), "==", [0.0, 0.0, 1.0])
# dim: any axis from -ndim to ndim - 1, each normalising its own axis; a scalar has no axis to normalise.
grid = torch.tensor([[0.0, math.log(3.0)], [0.0, 0.0]], dtype=torch.float64)
by_rows, by_columns = torch.tensor([[0.25, 0.75], [0.5, 0.5]]).double(), torch.tensor([[0.5, 0.75], [0.5, 0.25]]).double()
for axis, wanted in ((None, by_rows), (1, by_rows), (-1, by_rows), (0, by_columns), (-2, by_columns)):
    got = softmax(grid) if axis is None else softmax(grid, dim=axis)
    expect(f"softmax(grid{'' if axis is None else f', dim={axis}'}) must normalise the {'rows' if wanted is by_rows else 'columns'}", torch.allclose(got, wanted, atol=1e-15))
expect_raises(ValueError, softmax, grid, dim=-3, match="dim")
# Each row is shifted by its own largest score: one global shift would underflow a row 1000 below the other to 0 / 0.
expect("softmax shifts each row by its own maximum", softmax(torch.tensor([[0.0, 0.0], [-1000.0, -1000.0]], dtype=torch.float64)).tolist(), "==", [[0.5, 0.5], [0.5, 0.5]])
expect_raises(ValueError, softmax, torch.tensor(1.0), match="dimensions")
expect("torch.allclose(softmax(it_scores), torch.softmax(it_scores, dim=-1), atol=1e-15)", torch.allclose(softmax(it_scores), torch.softmax(it_scores, dim=-1), atol=1e-15))


# %% [markdown]
# ## 2 · Queries, keys and values: a library search
#
# **The idea.** Each token turns its vector into three new vectors by multiplying it with three
# learned matrices:
#
# - a **query**, what this token is looking for ("it" looks for a noun that can be tired);
# - a **key**, what this token offers to the others ("animal" offers: a noun, alive);
# - a **value**, what this token hands over when someone picks it.
#
# Think of a library. The query is what you type into the search box, the keys are the catalogue
# cards and the values are the books on the shelves. A search does not return one book: it
# returns a *blend* of books, weighted by how well each card matched what you typed.
#
# The score of one token for another is the **dot product** of its query with the other's key:
#
# $$q \cdot k = \sum_{m=1}^{d_k} q_m k_m$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $q$, $k$ | a query and a key, each a list of $d_k$ numbers | $(1, 2)$ and $(3, 0.5)$ |
# | $d_k$ | their length, the width of a head | $2$ |
# | $q_m$, $k_m$ | their $m$-th entries | $q_1 = 1$, $k_1 = 3$ |
#
# **By hand.** $(1, 2) \cdot (3, 0.5) = 1 \cdot 3 + 2 \cdot 0.5 = 4$. Vectors pointing the same
# way give large positive scores, vectors at right angles give 0, opposite vectors give negative
# scores; that is why a dot product works as relevance.
#
# Stack every token's query as the rows of a matrix $Q$, and likewise $K$ and $V$. All scores at
# once, scaled, turned into shares and used to blend the values, give the whole of attention:
#
# $$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$
#
# | Symbol | Meaning | Shape |
# |---|---|---|
# | $n$ | number of tokens | |
# | $d_k$, $d_v$ | width of each query and key; width of each value | |
# | $Q$, $K$ | every token's query, every token's key, one per row | $n \times d_k$ |
# | $V$ | every token's value, one per row | $n \times d_v$ |
# | $K^\top$ | $K$ transposed: each key becomes a column | $d_k \times n$ |
# | $Q K^\top$ | entry $(i, j)$ is query $i$ dotted with key $j$: every score at once | $n \times n$ |
# | $\sqrt{d_k}$ | divides the scores so that their spread does not grow with the width (section 7) | a number |
# | $\operatorname{softmax}(\cdot)$ | applied to each row, so each query's shares add up to 1 | $n \times n$ |
# | $(\cdot) V$ | each output row is a share-weighted blend of value rows | $n \times d_v$ |
#
# **By hand, all of it.** Take $d_k = 4$. Let the query of "it" be $(2, 0, 1, 1)$ and the keys of
# animal, tired and street be $(1, 1, 1, 1)$, $(1, 0, 0, 0)$ and $(0, 1, 1, 0)$. The dot products
# are $4$, $2$ and $1$; dividing by $\sqrt{4} = 2$ gives exactly the scores of section 1,
# $(2.0, 1.0, 0.5)$, hence the shares $(0.63, 0.23, 0.14)$. With values $(2, 0)$, $(0, 1)$ and
# $(1, 1)$, the new "it" is $0.63 \cdot (2, 0) + 0.23 \cdot (0, 1) + 0.14 \cdot (1, 1) = (1.40, 0.37)$.
#
# **Shapes**, for one sequence of $n$ tokens of width $d_{model}$; this is where most bugs hide:
#
# | Tensor | Shape | Meaning |
# |---|---|---|
# | $X$ | $(n, d_{model})$ | the input token vectors |
# | $W_q$, $W_k$ | $(d_{model}, d_k)$ | learned projections to queries and keys |
# | $W_v$ | $(d_{model}, d_v)$ | learned projection to values |
# | $Q$, $K$ | $(n, d_k)$ | queries, keys |
# | $V$ | $(n, d_v)$ | values |
# | $Q K^\top$, weights | $(n, n)$ | every token against every token, hence the $n^2$; each weight row sums to 1 |
# | output | $(n, d_v)$ | one context-aware vector per token |

# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_attention_flow (open to read)
def _draw_text_style(fill):
    """Text colour and weight for a diagram box: white and bold on the dark palette fills, ink elsewhere."""
    dark = fill in (Palette.BLUE, Palette.ORANGE, Palette.GREEN, Palette.RED, Palette.PURPLE, Palette.GREY)
    return {"color": "white" if dark else Palette.INK, "fontweight": "bold" if dark else "normal"}


def plot_attention_flow(language="en"):
    """A box-and-arrow diagram of attention's data flow: Q and K decide how much, V carries what."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    fig, ax = plt.subplots(figsize=(8.3, 3.2))  # 797 px wide: shown at its own size
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.92)  # fixed margins: a layout engine would draw everything twice
    ax.set_xlim(0, 12.4)
    ax.set_ylim(0, 3.8)
    ax.axis("off")
    boxes = {
        "x": (0.9, 1.9, localized(language, "token\nvectors X", "векторы\nтокенов X"), Palette.PAPER),
        "q": (2.9, 3.1, localized(language, "queries Q", "запросы Q"), Palette.BLUE),
        "k": (2.9, 1.9, localized(language, "keys K", "ключи K"), Palette.BLUE),
        "v": (2.9, 0.6, localized(language, "values V", "значения V"), Palette.ORANGE),
        "s": (5.0, 2.5, localized(language, "scores\nQ Kᵀ", "оценки\nQ Kᵀ"), Palette.PAPER),
        "c": (6.75, 2.5, localized(language, "÷ √d_k", "÷ √d_k"), Palette.PAPER),
        "m": (8.35, 2.5, localized(language, "mask:\nblocked → −∞", "маска:\nзапрет → −∞"), Palette.PAPER),
        "p": (10.2, 2.5, localized(language, "softmax\nper row", "softmax\nпо строкам"), Palette.PAPER),
        "w": (10.2, 0.6, localized(language, "weights · V", "веса · V"), Palette.PAPER),
        "o": (11.85, 1.55, localized(language, "output", "выход"), Palette.GREEN),
    }
    drawn = {
        key: ax.text(x, y, text, ha="center", va="center", fontsize=10, **_draw_text_style(color),
                     bbox={"boxstyle": "round,pad=0.4", "facecolor": color, "edgecolor": Palette.MUTED, "alpha": 0.9})
        for key, (x, y, text, color) in boxes.items()
    }
    arrows = [("x", "q"), ("x", "k"), ("x", "v"), ("q", "s"), ("k", "s"), ("s", "c"), ("c", "m"), ("m", "p"),
              ("p", "w"), ("v", "w"), ("w", "o")]
    for start, end in arrows:
        a, b = drawn[start], drawn[end]
        ax.annotate("", xy=boxes[end][:2], xytext=boxes[start][:2],  # centre to centre, clipped at the two boxes
                    arrowprops={"arrowstyle": "-|>", "color": Palette.MUTED, "lw": 1.2, "shrinkA": 3, "shrinkB": 3,
                                "patchA": a.get_bbox_patch(), "patchB": b.get_bbox_patch()})
    for y, name in ((2.62, "W_q"), (2.07, "W_k"), (1.33, "W_v")):  # the learned part: one matrix per role
        ax.text(1.92, y, f"× {name}", ha="center", va="center", fontsize=9, color=Palette.INK, fontweight="bold",
                bbox={"boxstyle": "round,pad=0.15", "facecolor": Palette.YELLOW, "edgecolor": "none"})
    ax.text(6.6, 3.5, localized(language, "Q and K decide how much", "Q и K решают, сколько"), color=Palette.BLUE,
            ha="center", fontweight="bold")
    ax.text(6.6, 0.2, localized(language, "V carries what", "V несёт что"), color=Palette.ORANGE, ha="center", fontweight="bold")
    ax.set_title(localized(language, "Attention, box by box", "Внимание по шагам"))
    return fig


# %%
q_it = torch.tensor([2.0, 0.0, 1.0, 1.0], dtype=torch.float64)
keys = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0]], dtype=torch.float64)
values = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
raw = keys @ q_it                          # (3,) one dot product per key
scaled = raw / math.sqrt(q_it.numel())     # (3,) divided by sqrt(d_k) = 2
shares = softmax(scaled)
blend = shares @ values                    # (2,) the new vector of "it"
print(f"(1, 2)·(3, 0.5) = {float(torch.tensor([1.0, 2.0]) @ torch.tensor([3.0, 0.5])):.0f}")
print(f"raw scores {raw.tolist()} -> scaled {scaled.tolist()} -> shares {[round(s, 2) for s in shares.tolist()]}")
print(f"new 'it' = {[round(b, 2) for b in blend.tolist()]}")

# The shapes table, walked through with random numbers: n = 5 tokens, d_model = 8, d_k = 4, d_v = 3.
gen = torch.Generator().manual_seed(SEED)
X = torch.randn(5, 8, generator=gen)
W_q, W_k, W_v = (torch.randn(8, width, generator=gen) for width in (4, 4, 3))
Q, K, V = X @ W_q, X @ W_k, X @ W_v        # (5, 4), (5, 4), (5, 3)
weights = softmax(Q @ K.T / math.sqrt(4))  # (5, 5), rows sum to 1
out = weights @ V                          # (5, 3)
print({"X": tuple(X.shape), "Q": tuple(Q.shape), "K": tuple(K.shape), "V": tuple(V.shape),
       "QK^T": tuple((Q @ K.T).shape), "weights": tuple(weights.shape), "output": tuple(out.shape)})

# %% tags=["hide-input"]
# @title The library search's numbers and shapes, checked (open to read)
expect("float(torch.tensor([1.0, 2.0]) @ torch.tensor([3.0, 0.5])) == 4.0", float(torch.tensor([1.0, 2.0]) @ torch.tensor([3.0, 0.5])), "==", 4.0)
expect("raw.tolist() == [4.0, 2.0, 1.0]", raw.tolist(), "==", [4.0, 2.0, 1.0])
expect("scaled.tolist() == [2.0, 1.0, 0.5]", scaled.tolist(), "==", [2.0, 1.0, 0.5])
expect("the library search must reproduce section 1's shares", torch.equal(shares, it_weights))
expect("[round(b, 2) for b in blend.tolist()] == [1.40, 0.37]", [round(b, 2) for b in blend.tolist()], "==", [1.40, 0.37])
expect("out.shape == (5, 3)", out.shape, "==", (5, 3))
expect("torch.allclose(weights.sum(-1), torch.ones(5))", torch.allclose(weights.sum(-1), torch.ones(5)))
# Each output row is its own query's blend: the matrix form equals a loop over queries.
rows = torch.stack([softmax(K @ Q[i] / 2.0) @ V for i in range(5)])
expect("the matrix formula must equal one softmax per query", torch.allclose(rows, out, atol=1e-5))

# %%
show_figure(
    plot_attention_flow(language=LANGUAGE),
    "Follow the arrows from left to right. The token vectors split three ways, each multiplied by its own learned "
    "matrix (yellow tags: W_q, W_k, W_v, the weights training learns in this single head; many heads add a fourth, W_o, in section 8). Queries and keys (blue boxes, upper paths) meet in the "
    "scores box, where relevance is decided; the scores are scaled, masked and turned into shares row by row. "
    "The values (orange box, bottom path) wait untouched on the lower path until the shares decide how much of each is mixed into the output.",
)


# %% [markdown]
# ## 3 · Where is each token? Sinusoidal positions
#
# **The idea.** Attention by itself has no sense of order. Shuffle the tokens and the outputs are
# shuffled in exactly the same way (section 6 proves it on our own code): "dog bites man" and
# "man bites dog" would look alike. The original transformer fixes this by *adding* a position
# vector to each token's embedding before the first layer. Each pair of coordinates of that vector
# is a clock hand turning at its own speed as the position grows: the fast hands tell neighbours
# apart, the slow hands tell far-apart positions apart, and together they give every position a
# distinct pattern.
#
# $$PE_{p,\,2i} = \sin\left(\frac{p}{b^{2i/d}}\right), \qquad PE_{p,\,2i+1} = \cos\left(\frac{p}{b^{2i/d}}\right)$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $p$ | the position of the token, counted from 0 | $0, 1, \dots, 4$ |
# | $d$ | the model width, even, so coordinates come in (sine, cosine) pairs | $4$ |
# | $i$ | the pair index: coordinates $2i$ (sine) and $2i+1$ (cosine) | $0$ or $1$ |
# | $b$ | the base, which sets the slowest speed | $10000$ |
# | $b^{2i/d}$ | how many positions one radian of pair $i$ takes; grows with $i$ | $1$ and $100$ |
#
# **By hand**, for $d = 4$: pair 0 turns one radian per position and pair 1 turns
# $10000^{-2/4} = 0.01$ radian per position. Position 0 is $(\sin 0, \cos 0, \sin 0, \cos 0) =
# (0, 1, 0, 1)$. Position 1 is $(\sin 1, \cos 1, \sin 0.01, \cos 0.01) = (0.8415, 0.5403, 0.0100,
# 0.99995)$. The first pair has already moved far, the second has barely moved.
#
# A useful consequence: moving every position by $k$ turns each (sine, cosine) pair by the same
# angle, whatever the position. A fixed offset is a fixed rotation, a linear map that a layer can
# learn once and use everywhere.

# %% tags=["exercise"]
# Exercise 1: Build the sinusoidal position table. Return a (length, d_model) tensor whose row p is
# position p: column 2i holds sin(p / base**(2i / d_model)) and column 2i+1 holds the cosine of the
# same angle. Work with whole tensors (an outer product of positions and frequencies), not loops.
# The check requires: shape (length, d_model); position 0 is (0, 1, 0, 1, ...); the table equals sin/cos
# with interleaved pairs for several sizes; and the base argument sets the frequencies.
def sinusoidal_encoding(length, d_model, *, base=10_000.0, dtype=torch.float64):
    """The sinusoidal position table: one row per position, sine on even columns, cosine on odd ones."""
    length, d_model, base = _position_table_args(length, d_model, base, dtype)
    # Your code here.
    raise NotImplementedError('Exercise 1: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 1: the contract your function must meet (open it to read the properties)
# builder:begin inline check_positional_encoding_contract
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
# builder:end sha256=9d69839268832a343a927655466f83ef537244f1a3741e844fae22f43d32c882
check_exercise("Exercise 1", check_positional_encoding_contract, sinusoidal_encoding, globals())


# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_positions (open to read)
def plot_positions(table, language="en"):
    """Two fast and two slow coordinates of a sinusoidal table against position."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    table = require_array("table", table, ndim=2)
    if table.shape[1] < 6 or table.shape[0] < 2 or table.shape[0] > 10_000:
        raise ValueError(f"table must have 2 to 10,000 positions and at least 6 columns (pairs 0 and 2 are drawn), got shape {table.shape}")
    fig, axes = plt.subplots(2, 1, figsize=(8, 4.4), sharex=True)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.11, top=0.86, hspace=0.45)  # fixed margins: a layout engine would draw everything twice
    titles = (localized(language, "Fast coordinates (pair 0)", "Быстрые координаты (пара 0)"),
              localized(language, "Slow coordinates (pair 2)", "Медленные координаты (пара 2)"))
    smooth = np.linspace(0, len(table) - 1, 40 * len(table))  # the continuous curve each column samples
    for ax, columns, title in zip(axes, ((0, 1), (4, 5)), titles):
        handles, labels = [], []
        for column, color, style, marker in zip(columns, (Palette.BLUE, Palette.ORANGE), ("-", "--"), ("o", "s")):
            name = "sin" if column % 2 == 0 else "cos"
            angle = smooth * 10_000.0 ** (-(column - column % 2) / table.shape[1])  # the table's default base
            curve, = ax.plot(smooth, np.sin(angle) if column % 2 == 0 else np.cos(angle), color=color, ls=style, lw=1.0, alpha=0.6)
            dots, = ax.plot(np.arange(len(table)), table[:, column], color=color, ls="none", marker=marker, ms=3.5,
                            label=f"{localized(language, 'coordinate', 'координата')} {column} ({name})")
            handles.append((curve, dots))  # the legend shows each marker on its curve: sine solid with dots, cosine dashed with squares
            labels.append(dots.get_label())
        ax.set_title(title, fontsize=11)
        ax.set_ylim(-1.15, 1.15)
        ax.set_ylabel("PE")
        ax.legend(handles, labels, ncol=2, loc="lower right", bbox_to_anchor=(1.0, 0.98), fontsize=9)  # above the panel, right of its title
    axes[-1].set_xlabel(localized(language, "position p (from 0)", "позиция p (с нуля)"))
    axes[-1].set_xlim(0, len(table) - 1)
    fig.suptitle(localized(language, f"Sinusoidal positions, width d = {table.shape[1]}",
                           f"Синусоидальные позиции, размерность d = {table.shape[1]}"), fontweight="bold", x=0.02, ha="left")
    return fig


# %%
pe_length, pe_width = REFERENCE.value("positional_encoding.length"), REFERENCE.value("positional_encoding.d_model")
small_table = sinusoidal_encoding(pe_length, pe_width)
print(f"sinusoidal_encoding({pe_length}, {pe_width}):")
print(small_table.numpy().round(5))
REFERENCE.check("positional_encoding.table", small_table, atol=1e-12)
expect("small_table[0].tolist() == [0.0, 1.0, 0.0, 1.0]", small_table[0].tolist(), "==", [0.0, 1.0, 0.0, 1.0])

# %% tags=["hide-input"]
# @title sinusoidal_encoding at its boundaries (checked; open to read)
# The smallest table, one position of width 2, is (sin 0, cos 0); a base just above 1 is still a base; width 0 is not.
expect("sinusoidal_encoding(1, 2, base=1.5).tolist() == [[0.0, 1.0]]", sinusoidal_encoding(1, 2, base=1.5).tolist(), "==", [[0.0, 1.0]])
expect_raises(ValueError, sinusoidal_encoding, 5, 0, match="d_model must be at least 2")
# The budget counts the table and its angles, 16 bytes an entry in float64, before anything is allocated.
expect_raises(ValueError, sinusoidal_encoding, 2**40, 2, match=f"of shape (1099511627776, 2) would take {2**41 * 16:,} bytes")

# %%
# A fixed offset k is the same rotation of every (sine, cosine) pair, at every position p.
pe = sinusoidal_encoding(81, 8)  # the table the figure below draws
offset = 7
for pair in range(4):
    theta = offset / 10_000.0 ** (2 * pair / 8)
    rotation = torch.tensor([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]], dtype=torch.float64)
    moved = pe[:-offset, 2 * pair:2 * pair + 2] @ rotation  # (74, 2) rotate each (sin, cos) pair
    expect(f"pair {pair}: offset is not a rotation", torch.allclose(moved, pe[offset:, 2 * pair:2 * pair + 2], atol=1e-12))
print(f"moving every position by {offset} rotates each (sin, cos) pair by a fixed angle: verified for all 4 pairs")


show_figure(
    plot_positions(pe.numpy(), language=LANGUAGE),
    "Each marker is one coordinate of the position vector at a whole position, read from left (position 0) to right "
    "(position 80): blue dots are the sine coordinate of the pair, orange squares its cosine; the thin curve behind "
    "the markers (solid for the sine, dashed for the cosine) is the wave they sample. "
    "The top pair turns one radian per position, so it separates neighbours but repeats every 2π ≈ 6.3 positions; "
    "the bottom pair turns 100 times slower and changes little between neighbours, but tells position 10 from position 70.",
)


# %% [markdown]
# ## 4 · Who may look at whom: masks
#
# **The idea.** A mask is a boolean table with one row per query and one column per key.
# `True` means *may attend*; every `False` score is set to $-\infty$ before the softmax, so its
# weight comes out as exactly 0. (This is the convention of `F.scaled_dot_product_attention`'s
# boolean `attn_mask`. Beware: `nn.MultiheadAttention` uses the opposite one for both of its boolean
# masks, `attn_mask` and `key_padding_mask`: there `True` means *blocked*.) Four masks cover almost
# everything:
#
# - **padding**: sequences in a batch are padded to the same length; no query may read a padding key;
# - **causal**: a decoder predicts the next token, so position $p$ may read positions $0..p$ and never
#   the future, or it could simply copy the answer;
# - **causal with a query offset**: during generation the keys and values of earlier tokens are cached,
#   and only the new tokens are queried. Those queries sit at *absolute* positions $o, o+1, \dots$, not
#   at $0, 1, \dots$, so the triangle must be shifted by $o$;
# - **cross-attention**: queries from one sequence (a decoder) read keys from another (an encoder);
#   there is no "future" between them, so only the encoder's padding is masked.
#
# $$\text{allowed}_{r,j} = \left[\, j \le o + r \,\right]$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $r$ | the row: the $r$-th query passed in, counted from 0 | $0$ |
# | $j$ | the column: the key at absolute position $j$ | $0, \dots, 4$ |
# | $o$ | the query offset: how many earlier tokens are already cached | $4$ |
# | $o + r$ | the absolute position of query $r$ | $4$ |
# | $[\,\cdot\,]$ | 1 (allowed) when the condition holds, 0 (blocked) otherwise | |
#
# **By hand.** With 5 tokens and no offset, row $p$ allows $p + 1$ keys, so the triangle holds
# $1 + 2 + 3 + 4 + 5 = 15$ allowed entries. Now decode the fifth token with a cache: one query
# against 5 keys. With the right offset $o = 4$ it may read all 5 keys. Forget the offset and it is
# treated as position 0: it reads 1 key and is blind to its own past.
#
# PyTorch's `is_causal=True` aligns the triangle to the top-left corner when there are fewer
# queries than keys. That is its documented convention (the triangle that
# `torch.nn.attention.bias.causal_upper_left` builds): right for a whole sequence, wrong for cached
# decoding, where it is exactly the forgotten offset. For cached queries pass an explicit mask (an
# offset, as below) or the library's fix, `causal_lower_right(t_q, t_k)` from the same module: its
# triangle ends at the bottom-right corner, which is the offset $o = t_k - t_q$. The cell after the
# exercise shows both.

# %% tags=["exercise"]
# Exercise 2: Build the causal mask for t_q queries and t_k keys. Query row r sits at absolute
# position query_offset + r and may read key j exactly when j <= query_offset + r. Return a bool
# tensor of shape (t_q, t_k), True where attention is allowed. Compare position grids; no loops.
# The check requires: a bool tensor of shape (t_q, t_k); a token sees itself and the past, never the future;
# cached queries keep their absolute positions; decoding in steps gives the rows of the full mask.
def causal_allowed(t_q, t_k, *, query_offset=0):
    """Causal mask for t_q queries at absolute positions query_offset.. over t_k keys: True = may attend."""
    t_q, t_k, query_offset = _causal_mask_args(t_q, t_k, query_offset)
    # Your code here.
    raise NotImplementedError('Exercise 2: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 2: the contract your function must meet (open it to read the properties)
# builder:begin inline check_causal_mask_contract
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
# builder:end sha256=d4264652a376ac18e3a11c932c144dfccd5d0452f9eacf237dadfdc74c805bac
check_exercise("Exercise 2", check_causal_mask_contract, causal_allowed, globals())

# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_masks; PyTorch's causal_lower_right (open to read)
try:  # torch.nn.attention.bias: causal_upper_left is is_causal=True's triangle, causal_lower_right the cached queries' one
    from torch.nn.attention.bias import causal_lower_right
except ImportError:  # an older torch: the same triangle, built from this section's offset mask
    print(f"torch {torch.__version__} has no torch.nn.attention.bias; causal_lower_right below is the offset mask")
    def causal_lower_right(t_q, t_k):
        """Stand-in for torch.nn.attention.bias.causal_lower_right: the causal mask with offset t_k - t_q."""
        return causal_allowed(t_q, t_k, query_offset=t_k - t_q)


def plot_masks(masks, titles, language="en", *, row_starts=None):
    """A grid of boolean masks: green = may attend, grey = blocked, queries down, keys across."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    from matplotlib.colors import ListedColormap

    fig, axes = plt.subplots(2, 3, figsize=(8.3, 5.4))  # 797 px wide: shown at its own size

    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.09, top=0.89, wspace=0.25, hspace=0.35)  # fixed margins: a layout engine would draw everything twice
    row_starts = [0] * len(masks) if row_starts is None else list(row_starts)  # the absolute position of each panel's row 0
    for ax, mask, title, start in zip(axes.flat, masks, titles, row_starts):
        mask = np.asarray(mask, dtype=bool)
        ax.pcolormesh(mask, cmap=ListedColormap([Palette.PAPER, Palette.GREEN]), vmin=0, vmax=1, edgecolors="white", linewidth=1.5)
        ax.set_aspect("equal")
        ax.invert_yaxis()  # query 0 on top, like a matrix
        ax.set_title(title, fontsize=11)
        ax.set_xticks(np.arange(mask.shape[1]) + 0.5, range(mask.shape[1]))
        ax.set_yticks(np.arange(mask.shape[0]) + 0.5, range(start, start + mask.shape[0]))
        ax.tick_params(length=0)
        ax.grid(False)
    fig.supxlabel(localized(language, "key position", "позиция ключа"), fontsize=10)
    fig.supylabel(localized(language, "query position", "позиция запроса"), fontsize=10)
    fig.suptitle(localized(language, "green = may attend, grey = set to −∞ before the softmax",
                           "зелёный = можно смотреть, серый = −∞ до softmax"), fontweight="bold", x=0.02, ha="left")
    return fig


# %%
n_mask = REFERENCE.value("masks.tokens")
ordinary = causal_allowed(n_mask, n_mask)
local_decode_wrong = causal_allowed(1, n_mask)                          # the newest query, treated as position 0
cached_decode = causal_allowed(1, n_mask, query_offset=n_mask - 1)  # the newest query at its true position 4
key_valid = torch.tensor([True, True, True, False, False])  # 3 real tokens, 2 padding
padding = key_valid[None, :].expand(5, 5)             # (5, 5) no query reads a padding key
combined = ordinary & padding
cross = torch.tensor([True] * 5 + [False]).expand(4, 6)  # 4 decoder queries over 6 encoder keys, the last one padding
print(f"allowed entries: causal {int(ordinary.sum())}, decode without offset {int(local_decode_wrong.sum())}, "
      f"decode with offset {int(cached_decode.sum())}")
REFERENCE.check("masks.causal_allowed", int(ordinary.sum()))
REFERENCE.check("masks.decode_without_offset", int(local_decode_wrong.sum()))
REFERENCE.check("masks.decode_with_offset", int(cached_decode.sum()))
expect("the cached query's row must be the last row of the full mask", torch.equal(cached_decode, ordinary[4:]))
# Boundaries: one query over one key is allowed and sees itself; no query, or queries past the keys, are refused.
expect("causal_allowed(1, 1).tolist() == [[True]]", causal_allowed(1, 1).tolist(), "==", [[True]])
# Budgets before allocating: the mask takes 1 byte an entry, the key positions 8 (int64).

gen = torch.Generator().manual_seed(SEED)
q1, k5, v5 = (torch.randn(1, n, 4, generator=gen, dtype=torch.float64) for n in (1, 5, 5))
top_left = F.scaled_dot_product_attention(q1, k5, v5, is_causal=True)  # documented top-left triangle: key 0 only
lower_right, with_offset = (F.scaled_dot_product_attention(q1, k5, v5, attn_mask=m) for m in (causal_lower_right(1, n_mask), cached_decode))
print(f"is_causal=True with 1 query and 5 keys reads only key 0: {torch.allclose(top_left, v5[:, :1])}; "
      f"the library's causal_lower_right(1, 5) matches the offset mask (all 5 keys): {torch.allclose(lower_right, with_offset)}")
expect("is_causal=True should read only the first key here (top-left alignment)", torch.allclose(top_left, v5[:, :1]))
expect("is_causal=True is the mask without offset; causal_lower_right is the offset mask", torch.allclose(F.scaled_dot_product_attention(q1, k5, v5, attn_mask=local_decode_wrong), top_left) and torch.allclose(lower_right, with_offset))


decode_pair = causal_allowed(2, 5, query_offset=3)
mask_titles = {
    "en": ("Padding keys hidden", "Future hidden (causal)", "Both at once", "Cross-attention",
           "queries at 3, 4 (offset 3)", "is_causal=True (top-left)"),
    "ru": ("PAD-ключи скрыты", "Будущее скрыто (каузально)", "Оба ограничения", "Перекрёстное внимание",
           "запросы 3, 4 (сдвиг 3)", "is_causal=True (от угла)"),
}
show_figure(
    plot_masks([padding, ordinary, combined, cross, decode_pair, causal_allowed(2, 5)], mask_titles[LANGUAGE], language=LANGUAGE,
               row_starts=[0, 0, 0, 0, 3, 3]),
    "Rows are queries, columns are keys; green cells may be read. Padding hides whole columns, the causal mask hides "
    "everything right of the diagonal, and combining them keeps only what both allow. Cross-attention hides only the "
    "encoder's padding column. In the bottom row, two cached queries at positions 3 and 4 keep a shifted triangle "
    "(middle), while PyTorch's is_causal=True for the same shape aligns it top-left and hides most of the past (right).",
)

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
expect_raises(ValueError, causal_allowed, 0, 5, match="t_q")
expect_raises(ValueError, causal_allowed, 5, 5, query_offset=1, match="t_k")
expect_raises(ValueError, causal_allowed, 1, 2**40, match=f"the causal mask of shape (1, 1099511627776) would take {2**40:,} bytes")
expect_raises(ValueError, causal_allowed, 1, 2**28, match=f"the key positions of shape (268435456,) would take {2**28 * 8:,} bytes")

# %% [markdown]
# **Where the triangle comes from.** Andrej Karpathy's *Let's build GPT* derives the causal mask
# in three steps ([video](https://www.youtube.com/watch?v=kCc8FmEb1nY), "version 1" to "version 3").
# The simplest way for token $t$ to use its past is to *average* tokens $0..t$. Written for all
# tokens at once, that average is a matrix product: a lower-triangular matrix whose row $t$ holds
# $1/(t+1)$ in columns $0..t$ and 0 to the right, times the token vectors. The same matrix comes
# out of a softmax: give every allowed key the score 0 and every future key $-\infty$, and each row
# of the softmax is exactly that uniform average. Attention only replaces the zeros with learned
# scores $q \cdot k / \sqrt{d_k}$, so the average becomes a weighted one, and the $-\infty$ above the
# diagonal is the causal mask of this section.

# %%
tokens_x = torch.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=torch.float64)  # (T=4, 1): four tokens, one feature
lower = causal_allowed(4, 4).double()                                       # (4, 4) 1 on and below the diagonal
average = lower / lower.sum(dim=-1, keepdim=True)                          # row t: 1/(t+1) on keys 0..t
uniform_scores = torch.zeros(4, 4, dtype=torch.float64).masked_fill(~causal_allowed(4, 4), float("-inf"))
print(f"running means of 1, 2, 3, 4: {(average @ tokens_x).flatten().tolist()}")
expect("softmax of zero scores with the future at -inf is the running average", torch.allclose(torch.softmax(uniform_scores, dim=-1), average, atol=1e-15))


# %% [markdown]
# ## 5 · Scaled dot-product attention, from scratch
#
# **The idea.** Put sections 1 to 4 together: score every query against every key, scale, block
# what the mask forbids, turn each row into shares, and blend the values. Our version returns
# everything it computed (the output, the weights, the scaled scores and a flag per empty row)
# so you can look inside. Without the checks, the whole of it is one line,
# `softmax(q @ k.T / math.sqrt(d_k)) @ v`, and that line runs in every attention layer of every
# model in this course, once per head: in Llama 3.1 8B, 32 layers of 32 heads for every token.
#
# One case needs a decision. A query row whose keys are *all* blocked (a padding query, say) has
# no distribution to take: its softmax would be $0/0$. This notebook's policy is explicit:
# `empty_row="error"` (the default) raises a `ValueError` naming the rows, and `empty_row="zero"`
# returns zero weights and a zero output for them, with finite gradients. PyTorch decides
# differently and silently: from torch 2.5 on, `F.scaled_dot_product_attention` returns zeros for
# a fully masked row on CPU and CUDA; torch 2.4 and older returned NaN, and the reference Python in
# [its documentation](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)
# still does. The cell after the exercise shows what your installed torch does.
#
# $$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V, \qquad M_{r,j} = 0 \text{ if allowed, } -\infty \text{ if blocked}$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $Q$, $K$, $V$ | queries, keys, values, one row per token | $3 \times 2$ each |
# | $d_k$ | query and key width | $2$, so $\sqrt{d_k} \approx 1.414$ |
# | $M$ | the mask as numbers: 0 where allowed, $-\infty$ where blocked | causal |
# | $e^{-\infty} = 0$ | why a blocked key gets exactly zero weight | |
#
# **By hand.** Three tokens, causal: $Q = K = \begin{pmatrix} 1 & 0 \\ 0 & 1 \\ 1 & 1 \end{pmatrix}$,
# $V = \begin{pmatrix} 1 & 0 \\ 0 & 2 \\ 3 & 1 \end{pmatrix}$.
#
# - Row 0 may read only key 0: score $1/\sqrt{2} = 0.7071$, weight 1, output $v_0 = (1, 0)$.
# - Row 1 reads keys 0 and 1 with scores $(0, 0.7071)$. The weights are $1 / (1 + e^{0.7071}) =
#   0.3302$ and $0.6698$, so the output is $0.3302 \cdot (1, 0) + 0.6698 \cdot (0, 2) = (0.3302, 1.3395)$.
# - Row 2 reads all three, scores $(0.7071, 0.7071, 1.4142)$, weights $(0.2483, 0.2483, 0.5035)$,
#   output $(0.2483 + 3 \cdot 0.5035,\; 2 \cdot 0.2483 + 0.5035) = (1.7587, 1.0000)$.
#
# The code follows the steps one by one. It computes in float64 if any input is float64 (float32
# otherwise), broadcasts q, k and v over their leading (batch, head) axes, including an axis that
# only `v` has, and subtracts each row's largest allowed score before exponentiating.

# %%
@dataclass(frozen=True)
class AttentionResult:
    """Everything one attention call computed: output (..., T_q, d_v), weights and scores (..., T_q, T_k), empty rows (..., T_q)."""

    output: torch.Tensor
    weights: torch.Tensor
    scores: torch.Tensor
    empty_rows: torch.Tensor


# %% tags=["hide-input"]
# @title _attention_inputs: the argument checks, broadcasting and empty-row policy of Exercise 3 (open to read)
def _attention_inputs(q, k, v, allowed, empty_row):
    """Checked q, k, v broadcast to one batch shape and dtype, allowed as a (..., T_q, T_k) bool tensor, and the empty rows."""
    require_choice("empty_row", empty_row, ("error", "zero"))
    q, k, v = (require_tensor(name, t, min_ndim=2) for name, t in (("q", q), ("k", k), ("v", v)))
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share their last axis d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have one row per key (same T_k), got k {tuple(k.shape)} and v {tuple(v.shape)}")
    try:  # NumPy's shape arithmetic: torch.broadcast_shapes would import sympy, half a second, on first use
        batch = np.broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2]))
    except ValueError:
        raise ValueError(f"the leading axes of q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)} do not broadcast") from None
    dtype = torch.float64 if torch.float64 in (q.dtype, k.dtype, v.dtype) else torch.float32
    q, k, v = (t.to(dtype).expand(*batch, *t.shape[-2:]) for t in (q, k, v))  # (..., T, d) on the joint batch shape
    shape = (*batch, q.shape[-2], k.shape[-2])                                  # (..., T_q, T_k)
    require_budget("the scores, exponentials and weights", shape, itemsize=3 * torch.finfo(dtype).bits // 8)
    if allowed is None:
        allowed = torch.ones(shape, dtype=torch.bool)
    elif not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
        raise TypeError(f"allowed must be a bool tensor (True = may attend), got {getattr(allowed, 'dtype', type(allowed).__name__)}")
    elif allowed.device.type != "cpu" or allowed.layout != torch.strided:
        raise TypeError(f"allowed must be a dense CPU tensor, got a {allowed.layout} tensor on {allowed.device}; use allowed.to_dense().cpu()")
    else:
        try:
            allowed = torch.broadcast_to(allowed, shape)
        except RuntimeError:
            raise ValueError(f"allowed of shape {tuple(allowed.shape)} does not broadcast to the scores' shape {shape}") from None
    empty_rows = ~allowed.any(dim=-1)  # (..., T_q) rows with no key to read
    if empty_row == "error" and bool(empty_rows.any()):
        where = empty_rows.nonzero()[:4].tolist()
        raise ValueError(f"attention has fully masked query rows (first ones at {where}); "
                         "fix the mask, or pass empty_row='zero' for padding queries")
    return q, k, v, allowed, empty_rows


# %% tags=["exercise"]
# Exercise 3: Write the heart of attention. The argument checks, the broadcasting and the empty-row
# policy are done for you; `allowed` is already a bool tensor of the scores' full shape. Compute the
# scaled scores q @ kᵀ / sqrt(d_k), set blocked scores to -inf, take a softmax over the key axis that
# stays finite on empty rows (their weights must be 0, not NaN), and blend the values.
# The check requires: outputs and gradients equal F.scaled_dot_product_attention in float64; rows sum to 1;
# blocked keys get exactly 0 weight (a -1e9 fill passes as well as -inf); a V-only batch axis broadcasts;
# empty rows raise ValueError by default and, with empty_row='zero', give zero weights and output with finite
# gradients; permuting tokens permutes outputs.
def scaled_dot_product_attention(q, k, v, allowed=None, *, empty_row="error"):
    """softmax(q kᵀ / sqrt(d_k), blocked keys at -inf) v, with an explicit policy for fully masked rows."""
    q, k, v, allowed, empty_rows = _attention_inputs(q, k, v, allowed, empty_row)  # checked; allowed is (..., T_q, T_k)
    # Your code here.
    raise NotImplementedError('Exercise 3: see the instructions above')
    # Only q·kᵀ can overflow (the weights then mix v's rows convexly, never beyond v): name that cause, never return NaN.
    require_finite_result("attention scores", scores.masked_fill(~allowed, 0.0), "q·kᵀ/√d_k overflowed its dtype (entries of q and k too large); scale the inputs down or use float64")
    return AttentionResult(output=output, weights=weights, scores=scores, empty_rows=empty_rows)


# %% tags=["hide-input"]
# @title The check of Exercise 3: the contract your function must meet (open it to read the properties)
# builder:begin inline check_attention_contract
def check_attention_contract(attention):
    """Judge ``attention(q, k, v, allowed=None, *, empty_row='error')`` against PyTorch and geometry.

    ``attention`` returns an object with ``.output`` and ``.weights`` (and, when it has them,
    ``.scores``, judged at allowed entries only, and ``.empty_rows`` flags, which are judged too).
    Blocked keys must get weight exactly 0; how their scores are filled (-inf, -1e9) is not judged.
    Empty-row policy: a query row with no allowed key raises ValueError by default, and with
    ``empty_row='zero'`` its weights and output are exactly 0 (never NaN).
    Returns a summary of the largest errors; raises ContractViolation naming the first property that fails.
    """
    import torch
    import torch.nn.functional as F

    def _works_without_batch_axes(attention, q, k, v, allowed):
        """True when ``attention`` returns normally on the first (T, d) slice of a batched call that failed."""
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # x.T on a 2-D tensor is fine; on the batched call it warned already
                attention(q[0, 0].detach(), k[0, 0].detach(), v[0, 0].detach(), allowed)
        except Exception:  # noqa: BLE001 - any failure here means the batch axes are not the cause
            return False
        return True

    gen = torch.Generator().manual_seed(303)
    q = torch.randn(2, 2, 3, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    k = torch.randn(2, 2, 5, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    v = torch.randn(2, 2, 5, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    # Three cached-decode queries at absolute positions 2, 3, 4 over five keys.
    allowed = torch.arange(5)[None, :] <= (2 + torch.arange(3))[:, None]
    case = "q[2,2,3,4], k[2,2,5,4], v[2,2,5,6] float64, causal mask for queries at positions 2..4"

    try:
        result = contract_call("output matches F.scaled_dot_product_attention", case, "the function raised on a valid input; the traceback above this message shows where", attention, q, k, v, allowed)
    except ContractViolation as failure:
        if not _works_without_batch_axes(attention, q, k, v, allowed):
            raise
        raise ContractViolation(
            failure.property, failure.on_input, failure.expected, failure.actual,
            "it works on 2-D q, k, v but not on batched ones: k.T reverses every axis of a batched tensor (deprecated "
            "beyond 2-D), so (B, H, T, d) becomes (d, T, H, B); transpose the last two axes with k.transpose(-2, -1) or k.mT",
        ) from failure.__cause__
    contract_assert(
        isinstance(getattr(result, "output", None), torch.Tensor) and isinstance(getattr(result, "weights", None), torch.Tensor),
        "output matches F.scaled_dot_product_attention", case, "a result with tensor attributes .output and .weights",
        f"{type(result).__name__} {result!r}"[:120], "return AttentionResult(output=..., weights=..., scores=..., empty_rows=...)",
    )
    library = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.0)
    hint = ("divide the scores by sqrt(d_k), take softmax over the key axis (the last one), "
            "and set masked scores to -inf before the softmax")
    with torch.no_grad():
        raw = q @ k.transpose(-2, -1) / 2.0  # sqrt(d_k) = 2
        usual_mistakes = (
            (F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=1.0 / 4),
             "the scores were divided by d_k; divide by sqrt(d_k)"),
            (F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=1.0),
             "the scores were not scaled; divide q @ k^T by sqrt(d_k)"),
            (torch.softmax(raw.masked_fill(~allowed, float("-inf")), dim=-2) @ v,
             "the softmax normalised over the query axis (dim=-2); each query's weights must sum to 1 over the keys (dim=-1)"),
            (F.scaled_dot_product_attention(q, k, v),
             "the mask was ignored: blocked keys still got weight; set their scores to -inf before the softmax"),
            ((torch.softmax(raw, dim=-1) * allowed) @ v,
             "the mask was applied after the softmax: zeroing weights leaves rows that do not sum to 1; mask the scores instead"),
        )
        for wrong, mistake in usual_mistakes:
            if result.output.shape == wrong.shape and torch.allclose(result.output.detach().double(), wrong, atol=1e-9):
                hint = mistake
                break
    output_error = contract_close("output matches F.scaled_dot_product_attention", case, result.output, library, hint)
    row_sums = result.weights.sum(-1)
    contract_close(
        "attention weights: every row sums to 1", case, row_sums, torch.ones_like(row_sums),
        "softmax normalised over the query axis instead of the key axis", atol=1e-12, rtol=0,
    )
    masked_mass = result.weights.masked_select(~allowed.expand_as(result.weights))
    contract_close(
        "attention weights: masked keys get exactly 0", case, masked_mass, torch.zeros_like(masked_mass),
        "the mask was applied after the softmax, or True was read as 'blocked' instead of 'allowed'", atol=0, rtol=0,
    )
    if hasattr(result, "scores"):
        # Blocked entries are not judged: -inf or any fill low enough that their weight is exactly 0
        # (checked above) behaves the same.
        contract_close(
            "scores are q.k / sqrt(d_k) at every allowed entry", case,
            result.scores.detach().masked_fill(~allowed, 0.0), raw.masked_fill(~allowed, 0.0),
            "return the scaled scores (before the softmax), not the weights or the unscaled dot products",
        )
    probe = torch.randn(result.output.shape, dtype=torch.float64, generator=gen)
    detach_hint = "a detach(), an in-place edit or a non-differentiable step (argmax, .item()) inside the attention"
    contract_assert(
        result.output.requires_grad, "gradients flow from the output to q, k and v", case,
        "an output that requires grad", "an output cut off from the autograd graph", detach_hint,
    )
    ours = torch.autograd.grad((result.output * probe).sum(), (q, k, v), allow_unused=True)
    theirs = torch.autograd.grad((library * probe).sum(), (q, k, v))
    for name, grad in zip("qkv", ours):
        contract_assert(
            grad is not None, f"gradient with respect to {name} matches F.scaled_dot_product_attention", case,
            f"a gradient for {name}", f"none: {name} does not reach the output through autograd", detach_hint,
        )
    gradient_error = max(
        contract_close(
            f"gradient with respect to {name} matches F.scaled_dot_product_attention", case, a, b, detach_hint,
            atol=1e-11, rtol=1e-11,
        )
        for name, a, b in zip("qkv", ours, theirs)
    )

    # A batch axis that only V has: the mask varies along it, queries and keys broadcast.
    bq = torch.zeros(1, 2, 1, dtype=torch.float64)
    bk = torch.zeros(1, 3, 1, dtype=torch.float64)
    bv = torch.tensor([[[1.0], [2.0], [3.0]], [[4.0], [5.0], [6.0]]], dtype=torch.float64)
    bm = torch.tensor([[[1, 0, 0], [0, 1, 0]], [[0, 0, 1], [1, 1, 0]]], dtype=torch.bool)
    batched = contract_call(
        "a batch axis carried only by V broadcasts with its mask", "q[1,2,1], k[1,3,1], v[2,3,1], mask[2,2,3]", "the function raised on a valid input; the traceback above this message shows where", attention, bq, bk, bv, bm,
    )
    contract_close(
        "a batch axis carried only by V broadcasts with its mask",
        "q[1,2,1]=0, k[1,3,1]=0, v[2,3,1]=1..6, per-batch mask[2,2,3]", batched.output,
        torch.tensor([[[1.0], [2.0]], [[6.0], [4.5]]], dtype=torch.float64),
        "the batch shape was taken from q and k only; broadcast q, k, v and the mask to their joint batch shape",
    )

    # An empty row is rejected by default and zeroed, with finite gradients, on request.
    empty = allowed.clone()
    empty[1] = False
    try:
        attention(q.detach(), k.detach(), v.detach(), empty)
    except ValueError:
        pass
    else:
        raise ContractViolation(
            "a fully masked row raises ValueError by default", case + ", row 1 fully masked",
            "ValueError", "returned normally", "softmax over an all -inf row gives NaN; detect empty rows before it",
        )
    zq, zk, zv = (t.detach().clone().requires_grad_() for t in (q, k, v))
    zero = contract_call(
        "empty_row='zero' gives a zero output row", case + ", row 1 fully masked", "the function raised on a valid input; the traceback above this message shows where", attention, zq, zk, zv, empty, empty_row="zero",
    )
    contract_close(
        "empty_row='zero' gives a zero output row", case + ", row 1 fully masked", zero.output[..., 1, :],
        torch.zeros_like(zero.output[..., 1, :]), "the empty row was filled with NaN or with a uniform average", atol=0, rtol=0,
    )
    zero_grads = torch.autograd.grad(zero.output.square().sum(), (zq, zk, zv))
    for name, grad in zip("qkv", zero_grads):
        contract_assert(
            bool(torch.isfinite(grad).all()), f"gradients stay finite with an empty row (d{name})",
            case + ", row 1 fully masked, empty_row='zero'", "finite gradients", "NaN or infinity in the gradient",
            "exp(-inf - -inf) = NaN inside the backward pass; use a safe max of 0 for empty rows",
        )
    contract_close(
        "an empty row passes no gradient to its query", case + ", row 1 fully masked", zero_grads[0][..., 1, :],
        torch.zeros_like(zero_grads[0][..., 1, :]), "the empty row still received weights before being zeroed", atol=0, rtol=0,
    )
    if hasattr(result, "empty_rows"):
        flags = torch.zeros(2, 2, 3, dtype=torch.bool)
        flags[..., 1] = True
        contract_assert(
            torch.equal(zero.empty_rows.expand(2, 2, 3), flags), "empty_rows flags exactly the fully masked query rows",
            case + ", row 1 fully masked", flags[0, 0].tolist(), zero.empty_rows.tolist(),
            "empty_rows = ~allowed.any(dim=-1), taken after broadcasting the mask to the scores' shape",
        )

    # Cached decoding: the last two queries sit at absolute positions 3 and 4.
    fq, fk = torch.randn(5, 4, dtype=torch.float64, generator=gen), torch.randn(5, 4, dtype=torch.float64, generator=gen)
    fv = torch.randn(5, 2, dtype=torch.float64, generator=gen)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    full = attention(fq, fk, fv, causal).output
    incremental = contract_call(
        "cached queries keep their absolute positions", "queries 3..4 against 5 keys", "the function raised on a valid input; the traceback above this message shows where", attention, fq[3:], fk, fv, causal[3:],
    ).output
    contract_close(
        "cached queries keep their absolute positions", "5 tokens, queries 3..4 against all 5 cached keys",
        incremental, full[3:], "the causal mask for cached queries was built from local positions 0..1",
    )
    wrong = attention(fq[3:], fk, fv, torch.ones(2, 5, dtype=torch.bool).tril()).output
    wrong_error = float((wrong - full[3:]).abs().max())
    contract_assert(
        wrong_error > 1e-3, "a local-position mask changes cached outputs", "5 tokens, queries 3..4 with a top-left triangle",
        "a visible difference (> 1e-3)", f"max difference {wrong_error:.3g}",
        "the implementation ignored the mask it was given",
    )

    # Without a mask, permuting the tokens permutes the outputs.
    perm = torch.tensor([2, 0, 4, 1, 3])
    original = attention(fq, fk, fv).output
    contract_close(
        "permutation equivariance without a mask", "5 tokens permuted by [2, 0, 4, 1, 3]",
        attention(fq[perm], fk[perm], fv[perm]).output, original[perm],
        "position information leaked into the attention itself (a hidden mask or positional term)",
    )
    return {
        "output_max_error": output_error,
        "gradient_max_error": gradient_error,
        "wrong_cache_mask_max_error": wrong_error,
        "batch_broadcast": "PASS",
        "empty_rows": "PASS",
        "permutation": "PASS",
    }
# builder:end sha256=c2ea8914e73713a214460ba473c9bff41bbda8f2f6f9b4e3866892c212cc0fb1
check_exercise("Exercise 3", check_attention_contract, scaled_dot_product_attention, globals())


# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_scores_and_weights (open to read)
def plot_scores_and_weights(scores, weights, language="en"):
    """Two heatmaps of one attention call: scaled scores (−∞ where blocked) and the softmax weights."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    scores = require_array("scores", scores, ndim=2, finite=False)  # blocked scores are -inf
    weights = require_array("weights", weights, ndim=2)
    if scores.shape != weights.shape or max(scores.shape) > 12:
        raise ValueError(f"scores and weights must share one shape of at most 12 x 12 (each cell is labelled), got {scores.shape} and {weights.shape}")
    if np.isnan(scores).any():
        raise ValueError("scores must not contain NaN; blocked scores are -inf")
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6))
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.14, top=0.9, wspace=0.3)  # fixed margins: a layout engine would draw everything twice
    shown = np.where(np.isfinite(scores), scores, np.nan)
    panels = ((shown, localized(language, "scaled scores q·k/√d_k", "оценки q·k/√d_k"), "Oranges"),
              (weights, localized(language, "weights after softmax", "веса после softmax"), "Blues"))
    for ax, (data, title, cmap), raw_values in zip(axes, panels, (scores, weights)):
        top = max(1.0, float(np.nanmax(data)))
        ax.imshow(data, cmap=cmap, vmin=0, vmax=top)
        for (i, j), value in np.ndenumerate(raw_values):
            if not np.isfinite(value):
                ax.text(j, i, "−∞", ha="center", va="center", fontsize=10, color=Palette.MUTED)
            else:  # white on the darkest cells, ink elsewhere
                ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=10,
                        color="white" if value > 0.6 * top else Palette.INK)
        ax.set_title(title, fontsize=11)
        ax.set_xticks(range(data.shape[1]))
        ax.set_yticks(range(data.shape[0]))
        ax.set_xlabel(localized(language, "key", "ключ"))
        ax.set_ylabel(localized(language, "query", "запрос"))
        ax.grid(False)
    return fig


# %%
Q_ref, K_ref, V_ref = (torch.tensor(REFERENCE.value(f"attention.{name}"), dtype=torch.float64) for name in "qkv")
allowed_ref = torch.tensor(REFERENCE.value("attention.allowed"))
expect("the reference example is the causal mask", torch.equal(allowed_ref, causal_allowed(3, 3)))
result = scaled_dot_product_attention(Q_ref, K_ref, V_ref, allowed_ref)
print("scores:\n", result.scores.numpy().round(4))
print("weights:\n", result.weights.numpy().round(4))
print("output:\n", result.output.numpy().round(4))
REFERENCE.check("attention.scores", result.scores.masked_fill(~allowed_ref, float("-inf")), atol=1e-12)  # blocked: -inf, whatever the fill
REFERENCE.check("attention.weights", result.weights, atol=1e-12)
REFERENCE.check("attention.output", result.output, atol=1e-12)
library = F.scaled_dot_product_attention(Q_ref, K_ref, V_ref, attn_mask=allowed_ref)
expect("our attention must agree with PyTorch's", torch.allclose(result.output, library, atol=1e-12))

# The empty-row policy: an error by default, zeros on request, never NaN.
empty = allowed_ref.clone()
empty[1] = False
try:
    scaled_dot_product_attention(Q_ref, K_ref, V_ref, empty)  # the default policy refuses a row with no key to read
except ValueError as refusal:
    message = str(refusal)
zeroed = scaled_dot_product_attention(Q_ref, K_ref, V_ref, empty, empty_row="zero")

# %% tags=["hide-input"]
# @title The zero policy on the empty row, checked (open to read)
expect_raises(ValueError, scaled_dot_product_attention, Q_ref, K_ref, V_ref, empty, match="fully masked")
expect("zeroed.empty_rows.tolist() == [False, True, False]", zeroed.empty_rows.tolist(), "==", [False, True, False])
expect("torch.all(zeroed.weights[1] == 0)", torch.all(zeroed.weights[1] == 0))
expect("torch.all(zeroed.output[1] == 0)", torch.all(zeroed.output[1] == 0))
expect("torch.isfinite(zeroed.weights).all()", torch.isfinite(zeroed.weights).all())
expect("other rows must not change", torch.equal(zeroed.output[[0, 2]], result.output[[0, 2]]))

# %%
print(f"default policy: ValueError ({message[:46]}...)")
torch_row = F.scaled_dot_product_attention(Q_ref, K_ref, V_ref, attn_mask=empty)[1]
if bool(torch.isnan(torch_row).any()):
    torch_says = "NaN"
elif bool((torch_row == 0).all()):
    torch_says = "zeros"
else:
    torch_says = f"{torch_row.tolist()}"
print(f"torch {torch.__version__.split('+')[0]} returns {torch_says} for the fully masked row; "
      f"ours returns zeros only when asked (empty_row='zero')")


show_figure(
    plot_scores_and_weights(result.scores.numpy(), result.weights.numpy(), language=LANGUAGE),
    "Left, the scaled scores of the 3-token example; the cells marked −∞ are blocked by the causal mask. Right, the "
    "weights: each row is one query's budget of 1, spent only on allowed keys. Row 1's scores 0 and 0.707 become "
    "0.330 and 0.670; in row 2 the largest score (1.414) takes about half of the attention.",
)


# %% [markdown]
# **The whole sentence.** The same formula on all ten words of *"The animal didn't cross the street
# because it was tired"*, with 4-wide queries and keys picked by hand so that the pattern means
# something: the query of "it" scores "animal" 2.0, "tired" 1.0 and "street" 0.5
# after the $\sqrt{4}$, exactly section 1's scores. Two switches change the picture. The **causal
# mask** hides every later word: "tired" comes after "it", so its weight drops to exactly 0 and
# "animal" takes a larger share. The **temperature** $T$ divides the scores before the softmax
# (section 13 uses it for sampling): below 1 each row sharpens towards one word, above 1 it flattens
# towards an even spread.

# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_sentence_attention (open to read)
def plot_sentence_attention(weights, tokens, temperatures, highlight, language="en"):
    """Small multiples of a sentence's attention weights: mask off and on (rows) by temperature (columns)."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    from matplotlib.patches import Rectangle

    temperatures = list(temperatures)
    missing = [(causal, t) for causal in (False, True) for t in temperatures if (causal, t) not in weights]
    if missing or not 1 <= len(temperatures) <= 4:
        raise ValueError(f"weights must hold a (causal, temperature) entry for 1 to 4 temperatures; missing {missing[:4]}")
    highlight = require_int("highlight", highlight, minimum=0, maximum=len(tokens) - 1)
    fig, axes = plt.subplots(2, len(temperatures), figsize=(8.3, 5.6), squeeze=False)  # 797 px wide: shown at its own size
    fig.subplots_adjust(left=0.15, right=0.87, bottom=0.17, top=0.88, wspace=0.08, hspace=0.14)  # fixed margins: a layout engine would draw everything twice
    for r, causal in enumerate((False, True)):
        for c, temperature in enumerate(temperatures):
            ax = axes[r][c]
            image = ax.imshow(np.asarray(weights[causal, temperature], dtype=float), cmap="Blues", vmin=0, vmax=1)
            ax.add_patch(Rectangle((-0.5, highlight - 0.5), len(tokens), 1, fill=False, edgecolor=Palette.ORANGE, lw=2))
            # Labels once per column and once per row; inner panels get no ticks at all (each tick costs drawing time).
            ax.set_xticks(range(len(tokens)) if r == 1 else [], tokens if r == 1 else [], rotation=60, ha="right", fontsize=9)
            ax.set_yticks(range(len(tokens)) if c == 0 else [], tokens if c == 0 else [], fontsize=9)
            ax.tick_params(length=0)
            ax.grid(False)
            mask_name = localized(language, "causal mask", "каузальная маска") if causal else localized(language, "no mask", "без маски")
            ax.set_title(f"{mask_name}, T = {temperature:g}", fontsize=10)
    colour_bar = fig.colorbar(image, cax=fig.add_axes((0.9, 0.17, 0.02, 0.71)))
    colour_bar.set_label(localized(language, "attention weight (each row sums to 1)", "вес внимания (сумма по строке равна 1)"), fontsize=10)
    colour_bar.ax.tick_params(labelsize=9)
    fig.supxlabel(localized(language, "key: the word being looked at", "ключ: слово, на которое смотрят"), fontsize=10, x=0.51)
    fig.supylabel(localized(language, "query: the word doing the looking", "запрос: слово, которое смотрит"), fontsize=10)
    fig.suptitle(localized(language, "One sentence, two switches: the mask and the temperature",
                           "Одно предложение, два переключателя: маска и температура"), fontweight="bold", x=0.02, ha="left")
    return fig


# %%
SENTENCE = ("The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "tired")
SENTENCE_QUERIES = [[0, 2, 2, 2], [0, -1, 0, -3], [0, 0, 3, 0], [2, 0, 0, 2], [3, -1, -1, 1],
                    [0, -1, 3, 0], [0, 0, -3, 0], [1, 1, 1, 1], [0, 3, 0, -1], [1, 2, 0, 1]]
SENTENCE_KEYS = [[0, 0, 0, -1], [1, 1, 1, 1], [0, 0, -1, 0], [0, -1, 2, 0], [0, 0, 0, -1],
                 [1, 0, 0, 0], [-1, 0, 0, 0], [0, 1, 0, -1], [0, -1, 0, 0], [1, 1, 0, 0]]
TEMPERATURES = (0.5, 1.0, 2.0)
q_sentence, k_sentence = (torch.tensor(rows, dtype=torch.float64) for rows in (SENTENCE_QUERIES, SENTENCE_KEYS))
sentence_weights = {}  # (causal, temperature) -> (10, 10) weights
for causal in (False, True):
    for temperature in TEMPERATURES:
        mask = causal_allowed(len(SENTENCE), len(SENTENCE)) if causal else None
        # Dividing q by T divides every score by T: softmax(q kᵀ / (√d_k · T)).
        sentence_weights[causal, temperature] = scaled_dot_product_attention(q_sentence / temperature, k_sentence, k_sentence, mask).weights
it, animal, street, tired = (SENTENCE.index(word) for word in ("it", "animal", "street", "tired"))
it_row = {key: weights[it] for key, weights in sentence_weights.items()}
it_scores_here = (q_sentence[it] @ k_sentence.T / 2.0)[[animal, tired, street]]
print(f"'it' scores animal, tired, street: {it_scores_here.tolist()}")
for (causal, temperature), row in it_row.items():
    print(f"mask {'on ' if causal else 'off'} T = {temperature}: 'it' gives animal {float(row[animal]):.3f}, "
          f"tired {float(row[tired]):.3f}, street {float(row[street]):.3f}; its largest weight {float(row.max()):.3f}")

# %% tags=["hide-input"]
# @title The prose's claims about "it", the mask and the temperature, checked (open to read)
if it_scores_here.tolist() != REFERENCE.value("it_example.scores"):
    raise AssertionError(f"the prose says 'it' keeps section 1's scores {REFERENCE.value('it_example.scores')}, got {it_scores_here.tolist()}")
if not (float(it_row[True, 1.0][tired]) == 0.0 and float(it_row[True, 1.0][animal]) > float(it_row[False, 1.0][animal])):
    raise AssertionError(f"with the mask on, 'tired' must get exactly 0 and 'animal' more: tired {float(it_row[True, 1.0][tired])}, "
                         f"animal {float(it_row[False, 1.0][animal]):.3f} -> {float(it_row[True, 1.0][animal]):.3f}")
peaks = [float(sentence_weights[False, t].amax(-1).mean()) for t in TEMPERATURES]
if not peaks[0] > peaks[1] > peaks[2]:
    raise AssertionError(f"a lower temperature must sharpen every row on average: mean largest weight per T {dict(zip(TEMPERATURES, peaks))}")
if not torch.equal(sentence_weights[True, 2.0].triu(1), torch.zeros(10, 10, dtype=torch.float64)):
    raise AssertionError("with the causal mask every weight above the diagonal must be exactly 0")

# %%
show_figure(
    plot_sentence_attention(sentence_weights, SENTENCE, TEMPERATURES, it, language=LANGUAGE),
    "Six heatmaps of the same sentence: rows are the word doing the looking, columns the word looked at, and darker "
    "cells carry more of the row's budget of 1. The orange box is the row of \"it\". Top row, no mask: \"it\" spreads its "
    f"weight over the whole sentence, {float(it_row[False, 1.0][animal]):.2f} on \"animal\" at T = 1. Bottom row, causal "
    f"mask: everything right of the diagonal is exactly 0, \"tired\" drops out of the row of \"it\" and \"animal\" rises "
    f"to {float(it_row[True, 1.0][animal]):.2f}. Left to right, the temperature grows from 0.5 to 2: rows turn from "
    "nearly one-hot into a wash.",
)

# %% [markdown]
# ## 6 · Checking it against PyTorch
#
# **The idea.** Agreeing with PyTorch on one example proves little; a contract states the
# *properties* that any correct attention must have and tests each on inputs chosen to expose the
# usual bugs. `check_attention_contract`, which judged Exercise 3, checks five of them:
#
# | Property | What it compares | Which bug it catches |
# |---|---|---|
# | outputs and gradients | ours against `F.scaled_dot_product_attention` in float64, for a batch of 2 × 2 heads with a causal mask for cached queries; the gradients of q, k and v too | scaling by $d_k$ instead of $\sqrt{d_k}$, softmax over the wrong axis, masking after the softmax, a `detach()` |
# | a batch axis only V has | q and k of batch 1 against v and a mask of batch 2 | taking the batch shape from q and k alone |
# | gradients on zero rows | with `empty_row="zero"`, every gradient stays finite and the empty query gets none | $e^{-\infty - (-\infty)} = $ NaN in the backward pass |
# | cached-query geometry | queries 3 and 4 alone against all 5 keys, with rows 3 and 4 of the causal mask, equal the full run's last two rows; a top-left mask does not | building the decode mask from local positions |
# | permutation equivariance | without a mask, permuting the tokens permutes the outputs the same way | a hidden positional term inside attention |
#
# $$\operatorname{Attention}(P Q, P K, P V) = P \operatorname{Attention}(Q, K, V)$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $P$ | a permutation matrix: it reorders the rows (tokens) | order $[2, 0, 4, 1, 3]$ |
# | $PQ$, $PK$, $PV$ | the same tokens, presented in the new order | 5 tokens of width 4 |
#
# **By hand.** Section 2's blend is order-free: it is a weighted *sum*, and a sum does not care in
# which order its terms come. Reordering the keys and values together reorders the terms of each
# sum and leaves it unchanged; reordering the queries reorders the output rows. This is why
# positions must be added to the tokens (section 3): attention alone cannot see order.
#
# The cell below repeats the checks in the open, on fresh random inputs, and prints each measured
# error in units of float64's rounding step: a few units mean the same number computed in another
# order, while a wrong mask is off by some $10^{15}$ units.

# %%
# Outputs and gradients against PyTorch: 2 batches x 2 heads, three cached queries at positions 2, 3, 4 over 5 keys.
q3 = torch.zeros(3, 2)  # a small valid query (or key, or value) block for the refusals below
gen = torch.Generator().manual_seed(SEED)
q, k, v = (torch.randn(2, 2, n, d, dtype=torch.float64, generator=gen, requires_grad=True) for n, d in ((3, 4), (5, 4), (5, 6)))
allowed = causal_allowed(3, 5, query_offset=2)
ours = scaled_dot_product_attention(q, k, v, allowed).output
theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
probe = torch.randn(ours.shape, dtype=torch.float64, generator=gen)  # a random direction to differentiate along
grads_ours = torch.autograd.grad((ours * probe).sum(), (q, k, v))
grads_theirs = torch.autograd.grad((theirs * probe).sum(), (q, k, v))
measured = {
    "output_max_error": float((ours - theirs).detach().abs().max()),
    "gradient_max_error": max(float((a - b).abs().max()) for a, b in zip(grads_ours, grads_theirs)),
}

# Cached-query geometry: queries 3 and 4 alone, with rows 3 and 4 of the causal mask, against a top-left mask.
tq, tk, tv = (torch.randn(5, 4, generator=gen, dtype=torch.float64) for _ in range(3))
full = scaled_dot_product_attention(tq, tk, tv, causal_allowed(5, 5)).output
cached = scaled_dot_product_attention(tq[3:], tk, tv, causal_allowed(2, 5, query_offset=3)).output
top_left_rows = scaled_dot_product_attention(tq[3:], tk, tv, causal_allowed(2, 5)).output
measured["cached_rows_error"] = float((cached - full[3:]).abs().max())
measured["wrong_cache_mask_max_error"] = float((top_left_rows - full[3:]).abs().max())
print({key: f"{value:.1e}" for key, value in measured.items()})
expect('measured["output_max_error"] < 1e-12', measured["output_max_error"], "<", 1e-12)
expect('measured["gradient_max_error"] < 1e-11', measured["gradient_max_error"], "<", 1e-11)
expect('measured["cached_rows_error"] < 1e-12', measured["cached_rows_error"], "<", 1e-12)
expect('measured["wrong_cache_mask_max_error"] > 1e-3', measured["wrong_cache_mask_max_error"], ">", 1e-3)

# %% tags=["hide-input"]
# @title Permutation, broadcasting, dtypes and overflow, checked (open to read)
# Permutation equivariance, and a batch axis that only V has.
order = torch.tensor([2, 0, 4, 1, 3])
plain = scaled_dot_product_attention(tq, tk, tv).output
shuffled = scaled_dot_product_attention(tq[order], tk[order], tv[order]).output
permutation_error = float((shuffled - plain[order]).abs().max())
print(f"permuted inputs give permuted outputs: max difference {permutation_error:.1e}")
expect("permutation_error < 1e-12", permutation_error, "<", 1e-12)

# One query and one key broadcast against a batch of two value sets, each with its own mask.
only_v = scaled_dot_product_attention(
    torch.zeros(1, 2, 1), torch.zeros(1, 3, 1), torch.arange(1.0, 7.0).reshape(2, 3, 1),
    torch.tensor([[[True, False, False], [False, True, False]], [[False, False, True], [True, True, False]]]),
)
print("V-only batch axis, outputs:", only_v.output.squeeze(-1).tolist())
# A batch axis on q alone, or on k alone, broadcasts the same way: each batch entry equals its own unbatched call.
for batched in ("q", "k"):
    parts = {"q": tq[:2], "k": tk, "v": tv}
    parts[batched] = torch.stack([parts[batched], 2 * parts[batched]])  # (2, T, d): a batch of two
    joint = scaled_dot_product_attention(parts["q"], parts["k"], parts["v"]).output
    alone = [scaled_dot_product_attention(*(parts[n][b] if n == batched else parts[n] for n in "qkv")).output for b in range(2)]
    expect(f"a batch axis on {batched} alone must broadcast", joint.shape == (2, 2, 4) and all(torch.allclose(joint[b], alone[b], atol=1e-12) for b in range(2)))
# float32 in, float32 out; one float64 input makes the whole computation float64.
expect("float32 attention stays float32", scaled_dot_product_attention(tq.float(), tk.float(), tv.float()).output.dtype, "==", torch.float32)
expect("mixed dtypes compute in float64", scaled_dot_product_attention(tq.float(), tk, tv.float()).output.dtype, "==", torch.float64)
# Scores beyond float32's range overflow to inf; the result would be NaN, so attention stops and names the cause.
expect("only_v.output.squeeze(-1).tolist() == [[1.0, 2.0], [6.0, 4.5]]", only_v.output.squeeze(-1).tolist(), "==", [[1.0, 2.0], [6.0, 4.5]])

# %%
# How big is "agrees"? Measure each error in units of float64's rounding step (machine epsilon, 2.2e-16).
EPSILON = float(torch.finfo(torch.float64).eps)
print(f"{'comparison':<42} {'largest |difference|':>20} {'in epsilons':>12}   verdict")
for key, label, bound, must_be_small in (
    ("output_max_error", "our output against PyTorch's", 1e-12, True),
    ("gradient_max_error", "our gradients against PyTorch's", 1e-11, True),
    ("cached_rows_error", "cached queries 3, 4 against the full run", 1e-12, True),
    ("wrong_cache_mask_max_error", "a top-left mask against the full run", 1e-3, False),
):
    value = measured[key]
    verdict = ("rounding only" if value <= bound else "TOO LARGE") if must_be_small else ("a real difference" if value > bound else "TOO SMALL")
    print(f"{label:<42} {value:>20.2e} {value / EPSILON:>12.3g}   {verdict}")
    if verdict in ("TOO LARGE", "TOO SMALL"):
        raise AssertionError(f"{label}: {value:.3g} is on the wrong side of its bound {bound:g}")
print("Read the last column: a few epsilons is the same number computed in another order; "
      f"the wrong mask is off by about {measured['wrong_cache_mask_max_error'] / EPSILON:.0e} epsilons, a different answer.")

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
expect_raises(ValueError, scaled_dot_product_attention, torch.zeros(2), q3, q3, match="dimensions")
expect_raises(TypeError, scaled_dot_product_attention, q3, q3, q3, torch.ones(3, 3, dtype=torch.bool, device="meta"), match="CPU")
expect_raises(ValueError, scaled_dot_product_attention, torch.zeros(6, 2), q3, q3, torch.zeros(6, 3, dtype=torch.bool),
              match="(first ones at [[0], [1], [2], [3]]);")  # the message lists the first four empty rows
expect_raises(FloatingPointError, scaled_dot_product_attention, torch.full((1, 2), 1e20), torch.full((2, 2), 1e20), torch.ones(2, 1), match="overflowed")


# %% [markdown]
# ## 7 · Why divide by √d_k?
#
# **The idea.** Roll one die and the result lands between 1 and 6. Add up a hundred dice and the
# total strays much further from its average of 350: its standard deviation is
# $\sqrt{100 \cdot 35/12} \approx 17$ (one die's variance is $35/12$, and variances of independent
# dice add), so totals 17 or more away from 350 are common. A dot product is such a sum:
# one small product per coordinate. The wider the head, the more terms are added and the wider the
# scores swing. Wide swings are bad news for softmax: scores like $(16, 3, -9)$ put essentially all
# the weight on one key, right or wrong. Worse, softmax then stops responding to its input. Its
# derivative (the Jacobian, the signal training sends back to the queries and keys) is
# $\operatorname{diag}(p) - p p^\top$, and when one share is 1 and the rest are 0 every entry of
# that matrix is 0: softmax is *saturated*, and the gradient that would teach the queries and keys
# has to pass through that zero. The cell measures the Jacobian, and then the gradient that actually
# reaches each query.
#
# $$\operatorname{Var}(q \cdot k) = d_k \quad \Longrightarrow \quad \operatorname{Var}\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = 1$$
#
# | Symbol | Meaning |
# |---|---|
# | $\operatorname{Var}(x)$ | the variance: the average squared distance of $x$ from its mean; its square root, the standard deviation, is the typical size of a swing |
# | $q \cdot k$ | a raw score, for $q$ and $k$ with independent entries of mean 0 and variance 1 |
# | $d_k$ | the number of products added up: each has variance 1, and variances of independent terms add |
# | $\sqrt{d_k}$ | dividing by $c$ divides the variance by $c^2$; here $c^2 = d_k$ |
# | $\operatorname{diag}(p) - p p^\top$ | the softmax Jacobian at shares $p$: entry $(i, j)$ is how share $i$ moves when score $j$ moves |
#
# **By hand.** Take $d_k = 4$ and entries of $\pm 1$. The four products are each $+1$ or $-1$, and
# the 16 equally likely sign patterns give the sums $-4, -2, 0, 2, 4$ with counts $1, 4, 6, 4, 1$.
# Their variance is $(16 + 4 \cdot 4 + 0 + 4 \cdot 4 + 16) / 16 = 4 = d_k$. Dividing every sum by
# $\sqrt{4} = 2$ divides the variance by 4, to 1. At $d_k = 128$ the raw standard deviation is
# $\sqrt{128} \approx 11.3$: a typical raw score is about $\pm 11$, a typical scaled one about $\pm 1$.
#
# The cell checks this three ways: exactly, by enumerating the 16 patterns; by Monte Carlo, with the
# reference seed and tolerance; and by measuring saturation itself at widths 2 to 1,024 (16 keys,
# 400 random queries per width), with and without the scaling.

# %% tags=["hide-input"]
# @title The figure code and checks by hand of the next cell: _saturation_by_hand, plot_saturation (open to read)
def _saturation_by_hand(widths, n_keys, trials, seed):
    """saturation_experiment's draws, scored with the full Jacobian diag(p) − p pᵀ and elementwise dot products."""
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for width in widths:
        q, k = torch.randn(trials, 1, width, generator=gen), torch.randn(trials, n_keys, width, generator=gen)
        raw = (q * k).sum(-1).double()  # (trials, n_keys)
        for scaled in (False, True):
            p = torch.softmax(raw / (math.sqrt(width) if scaled else 1.0), dim=-1)
            rows.append((width, scaled, float(p.max(-1).values.mean()), float(softmax_jacobian(p).flatten(-2).norm(dim=-1).mean())))
    return rows


def plot_saturation(rows, language="en"):
    """Mean largest weight and mean softmax-Jacobian norm against head width, unscaled and scaled."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.3, 3.4))  # 797 px wide: shown at its own size
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.15, top=0.9, wspace=0.25)  # fixed margins: a layout engine would draw everything twice
    for scaled, color, label in ((False, Palette.RED, localized(language, "unscaled  q·k", "без масштаба  q·k")),
                                 (True, Palette.BLUE, localized(language, "scaled  q·k/√d_k", "с масштабом  q·k/√d_k"))):
        chosen = [r for r in rows if r["scaled"] == scaled]
        widths = [r["d_k"] for r in chosen]
        style = "s--" if scaled else "o-"  # squares dashed, circles solid: not colour alone
        left.plot(widths, [r["max_weight"] for r in chosen], style, color=color, label=label, ms=4)
        right.plot(widths, [r["jacobian_norm"] for r in chosen], style, color=color, label=label, ms=4)
    for ax, title, ylabel in (
        (left, localized(language, "Softmax saturates", "Softmax насыщается"),
         localized(language, "mean largest weight", "средний наибольший вес")),
        (right, localized(language, "The softmax Jacobian shrinks", "Якобиан softmax сжимается"),
         localized(language, "mean ‖diag(p) − ppᵀ‖", "средняя ‖diag(p) − ppᵀ‖")),
    ):
        log_scale(ax, "x", base=2)
        ax.set_xlabel(localized(language, "head width d_k", "размерность головы d_k"))
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=12)
    left.set_ylim(0, 1.02)
    right.set_ylim(0, 0.35)
    left.legend(loc="center right")
    return fig


# %% [markdown]
# **Predict, then run (1).** Before you run the next code cell, which measures saturation: without
# the division by $\sqrt{d_k}$, at $d_k = 512$, how much of its attention does a typical query give
# to its best key among 16 random ones? (a) about $1/16 \approx 0.06$, as if the keys were
# equal; (b) about half; (c) nearly all of it, so its row of the heatmap is one dark cell. Write
# your letter in the cell below and run it; the cell after the figure checks it.

# %%
PREDICTION_UNSCALED_512 = None  # your answer: "a", "b" or "c"


# %% tags=["hide-input"]
# @title judge_prediction: how a prediction compares with the measurement (open to read)
def judge_prediction(label, prediction, measured, explanation):
    """Print whether ``prediction`` ("a", "b" or "c") matches the ``measured`` answer; None only asks for a prediction."""
    if prediction is None:
        print(say("prediction missing", label=label, measured=measured, explanation=explanation))
        return None
    prediction = require_choice("prediction", prediction.strip().lower() if isinstance(prediction, str) else prediction, ("a", "b", "c"))
    verdict = "prediction right" if prediction == measured else "prediction wrong"
    print(say(verdict, label=label, prediction=prediction, measured=measured, explanation=explanation))
    return prediction == measured


import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()) as printed:  # the three verdicts, judged here instead of shown
    verdicts = [judge_prediction("a test", given, "c", "why") for given in (" C", "a", None)]
expect("judge_prediction: a right, a wrong and a missing prediction", (verdicts, printed.getvalue().count("\n")), "==", ([True, False, None], 3))

# %%
# 1) Exactly: every sign pattern of four ±1 products.
sums = [sum(signs) for signs in itertools.product((-1, 1), repeat=4)]
exact = torch.tensor(sums, dtype=torch.float64)
print(f"d_k = 4: counts of the sums -4..4: {[sums.count(s) for s in (-4, -2, 0, 2, 4)]}, "
      f"variance {float(exact.var(unbiased=False)):.0f}, scaled {float((exact / 2).var(unbiased=False)):.0f}; "
      f"sqrt(128) = {math.sqrt(128):.1f}")
expect("[sums.count(s) for s in (-4, -2, 0, 2, 4)] == [1, 4, 6, 4, 1]", [sums.count(s) for s in (-4, -2, 0, 2, 4)], "==", [1, 4, 6, 4, 1])
expect("float(exact.var(unbiased=False)) == 4.0", float(exact.var(unbiased=False)), "==", 4.0)
expect("float((exact / 2).var(unbiased=False)) == 1.0", float((exact / 2).var(unbiased=False)), "==", 1.0)
die = torch.arange(1, 7, dtype=torch.float64)
expect("a die's variance is 35/12, so 100 dice stray by sqrt(100 · 35/12) ≈ 17", (float(die.var(unbiased=False)), round(math.sqrt(100 * float(die.var(unbiased=False))))), "==", (35 / 12, 17))
spread = softmax(torch.tensor([16.0, 3.0, -9.0], dtype=torch.float64))
print(f"softmax(16, 3, -9) = {[f'{p:.6f}' for p in spread.tolist()]}: one key takes essentially everything")
expect("float(spread[0]) > 0.99999", float(spread[0]), ">", 0.99999)

# 2) By Monte Carlo, with the reference seed, sample count, width and tolerance.
d_k = REFERENCE.value("scaling_experiment.d_k")
samples = REFERENCE.value("scaling_experiment.samples")
tolerance = REFERENCE.value("scaling_experiment.relative_tolerance")
gen = torch.Generator().manual_seed(REFERENCE.value("scaling_experiment.seed"))
q_mc, k_mc = torch.randn(samples, d_k, generator=gen), torch.randn(samples, d_k, generator=gen)
dots = (q_mc * k_mc).sum(dim=-1)  # (samples,) one raw score per pair
unscaled_variance = float(dots.var(unbiased=False))
scaled_variance = float((dots / math.sqrt(d_k)).var(unbiased=False))
print(f"d_k = {d_k}, {samples:,} pairs: Var(q·k) = {unscaled_variance:.2f}, Var(q·k/√d_k) = {scaled_variance:.3f}")
for name, measured in (("unscaled_variance_target", unscaled_variance), ("scaled_variance_target", scaled_variance)):
    target = REFERENCE.value(f"scaling_experiment.{name}")
    expect(f"{name}: measured {measured:.3f} is not within {tolerance:.0%} of {target}", abs(measured / target - 1.0), "<", tolerance)
del q_mc, k_mc, dots


# 3) Saturation across widths.
def softmax_jacobian(p):
    """The softmax Jacobian at shares p (..., n): diag(p) − p pᵀ, shape (..., n, n)."""
    p = _jacobian_args(p)
    return torch.diag_embed(p) - p[..., :, None] * p[..., None, :]


def jacobian_norm(p):
    """Frobenius norm of diag(p) − p pᵀ without building it: sqrt(Σp² − 2Σp³ + (Σp²)²)."""
    p = _require_shares(p)
    square, cube = (p ** 2).sum(-1), (p ** 3).sum(-1)
    return (square - 2 * cube + square ** 2).clamp_min(0.0).sqrt()


def saturation_experiment(widths, *, n_keys=16, trials=400, seed=SEED):
    """Mean largest softmax weight and mean softmax-Jacobian norm per head width, unscaled and scaled by √d_k."""
    widths, n_keys, trials = _saturation_args(widths, n_keys, trials)
    gen = torch.Generator().manual_seed(require_int("seed", seed, minimum=0))
    rows = []
    for width in widths:
        q = torch.randn(trials, 1, width, generator=gen)       # (trials, 1, d)
        k = torch.randn(trials, n_keys, width, generator=gen)  # (trials, n_keys, d)
        raw = (q @ k.transpose(-2, -1))[:, 0].double()         # (trials, n_keys)
        for scaled in (False, True):
            p = torch.softmax(raw / math.sqrt(width) if scaled else raw, dim=-1)
            rows.append({"d_k": width, "scaled": scaled, "max_weight": float(p.amax(-1).mean()),
                         "jacobian_norm": float(jacobian_norm(p).mean())})
    return rows


# %% tags=["hide-input"]
# @title softmax_jacobian and jacobian_norm against autograd and by hand (checked; open to read)
p_check = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
autograd_jacobian = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), p_check.log())
expect("diag(p) − p pᵀ must be softmax's Jacobian", torch.allclose(softmax_jacobian(p_check), autograd_jacobian, atol=1e-15))
expect("math.isclose(float(jacobian_norm(p_check)), float(softmax_jacobian(p_check).norm()), rel_tol=1e-12)", math.isclose(float(jacobian_norm(p_check)), float(softmax_jacobian(p_check).norm()), rel_tol=1e-12))
expect("a one-hot softmax passes no gradient", float(softmax_jacobian(torch.tensor([1.0, 0.0, 0.0])).abs().max()), "==", 0.0)
expect("jacobian_norm of a one-hot softmax is 0", float(jacobian_norm(torch.tensor([0.0, 1.0], dtype=torch.float64))), "==", 0.0)
# By hand, p = (1/2, 1/2): diag(p) − p pᵀ = [[1/4, −1/4], [−1/4, 1/4]], Frobenius norm sqrt(4/16) = 1/2.
expect("jacobian_norm((1/2, 1/2)) == 0.5 by hand", float(jacobian_norm(torch.tensor([0.5, 0.5], dtype=torch.float64))), "==", 0.5)
expect("softmax_jacobian((1/2, 1/2)) by hand", softmax_jacobian(torch.tensor([0.5, 0.5])).tolist(), "==", [[0.25, -0.25], [-0.25, 0.25]])
# Batched shares (2, 3): one Jacobian and one norm per row, the same as row by row.
p_rows = torch.stack([p_check, torch.tensor([0.7, 0.2, 0.1], dtype=torch.float64)])
expect("softmax_jacobian keeps the batch axis", torch.equal(softmax_jacobian(p_rows)[1], softmax_jacobian(p_rows[1])))
expect("jacobian_norm gives one norm per row", torch.allclose(jacobian_norm(p_rows), softmax_jacobian(p_rows).flatten(-2).norm(dim=-1), atol=1e-15))
# Shares lie in [0, 1]; 0 and 1 themselves are shares (the one-hot above), anything outside is refused.
# The Jacobian is budgeted before it is built: (..., n, n) for shares (..., n); 8 rows of 32,768 shares in float32 here.

# %%
WIDTHS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
saturation = saturation_experiment(WIDTHS)
expect("saturation_experiment's defaults are the prose's 16 keys and 400 trials", saturation_experiment((2,)), "==", saturation_experiment((2,), n_keys=16, trials=400))
by_key = {(row["d_k"], row["scaled"]): row for row in saturation}
print(" d_k | unscaled: top weight, Jacobian | scaled: top weight, Jacobian")
for width in WIDTHS:
    u, s = by_key[width, False], by_key[width, True]
    print(f"{width:>4} | {u['max_weight']:>19.3f}  {u['jacobian_norm']:.3f} | {s['max_weight']:>17.3f}  {s['jacobian_norm']:.3f}")
shrink_512 = by_key[512, True]["jacobian_norm"] / by_key[512, False]["jacobian_norm"]
shrink_1024 = by_key[1024, True]["jacobian_norm"] / by_key[1024, False]["jacobian_norm"]
scaled_tops = [by_key[w, True]["max_weight"] for w in WIDTHS]
print(f"at d_k = 512 unscaled: top weight {by_key[512, False]['max_weight']:.2f}, gradient {shrink_512:.1f}x smaller than scaled; "
      f"at 1024: {by_key[1024, False]['max_weight']:.2f} and {shrink_1024:.1f}x; scaled top weight stays in "
      f"[{min(scaled_tops):.2f}, {max(scaled_tops):.2f}]")

# %% tags=["hide-input"]
# @title The numbers of the prose, and the smallest cases against the recomputation (checked; open to read)
expect('(round(by_key[2, False]["max_weight"], 2), round(by_key[512, False]["max_weight"], 2)) == (0.31, 0.94)', (round(by_key[2, False]["max_weight"], 2), round(by_key[512, False]["max_weight"], 2)), "==", (0.31, 0.94))
expect('(round(shrink_512, 1), round(by_key[1024, False]["max_weight"], 2), round(shrink_1024, 1)) == (3.7, 0.97, 7.4)', (round(shrink_512, 1), round(by_key[1024, False]["max_weight"], 2), round(shrink_1024, 1)), "==", (3.7, 0.97, 7.4))
expect("scaled attention must not saturate", (round(min(scaled_tops), 2), round(max(scaled_tops), 2)), "==", (0.23, 0.25))


# The smallest valid case (width 1, two keys, one trial, seed 0) and a width where √d_k matters, against the recomputation.
for tiny_args in (((1, 4), 2, 1, 0), ((4,), 5, 3, SEED)):
    tiny = [(r["d_k"], r["scaled"], r["max_weight"], r["jacobian_norm"]) for r in saturation_experiment(tiny_args[0], n_keys=tiny_args[1], trials=tiny_args[2], seed=tiny_args[3])]
    by_hand = _saturation_by_hand(*tiny_args)
    expect(f"saturation_experiment{tiny_args} must match the full-Jacobian recomputation",
           [t[:2] for t in tiny] == [b[:2] for b in by_hand] and all(math.isclose(a, b, rel_tol=1e-6) for t, h in zip(tiny, by_hand) for a, b in zip(t[2:], h[2:])))
# The budget counts the widest head: 2**40 wide, 2 keys, 1 trial, float32 draws and float64 scores (12 bytes an entry).

# %%
show_figure(
    plot_saturation(saturation, language=LANGUAGE),
    "Head width d_k runs along both x-axes on a log scale. Left: the average largest attention weight over 16 keys, "
    "where 1.0 means all attention on one key. Right: the size of the softmax Jacobian ∂p/∂s, how strongly the shares "
    "respond to the scores. Unscaled scores (red circles, solid) climb towards one-hot and their Jacobian shrinks as the head widens; "
    "scaled scores (blue squares, dashed) stay flat at every width. Red sits above blue at widths 2 to 8 because there unscaled scores are "
    "moderately spread, where softmax responds most, while scaled ones are nearly uniform.",
)

# %%
top_512 = by_key[512, False]["max_weight"]
answer_512 = "a" if top_512 < 0.2 else "b" if top_512 < 0.75 else "c"
judge_prediction("Predict, then run (1)", PREDICTION_UNSCALED_512, answer_512,
                 f"unscaled, the best of 16 keys takes {top_512:.0%} of a query's attention at d_k = 512 (scaled: "
                 f"{by_key[512, True]['max_weight']:.0%}); the raw scores spread by about √512 ≈ 23, so one key wins outright.")
expect("the measurement behind the answer: unscaled at 512, nearly all weight on one key", answer_512, "==", "c")

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
expect_raises(ValueError, jacobian_norm, torch.tensor(0.5), match="dimensions")
expect_raises(ValueError, softmax_jacobian, torch.zeros(1, 2**15).expand(8, 2**15), match=f"of shape (8, 32768, 32768) would take {8 * 2**30 * 4:,} bytes")
for outside in ([-0.5, 0.5], [1.5, 0.0]):
    expect_raises(ValueError, jacobian_norm, torch.tensor(outside), match="[0, 1]")
    expect_raises(ValueError, softmax_jacobian, torch.tensor(outside), match="[0, 1]")
for bad in ({"widths": (0,)}, {"widths": ()}, {"n_keys": 1}, {"trials": 0}, {"seed": -1}):
    expect_raises(ValueError, saturation_experiment, **{"widths": (4,), "n_keys": 2, "trials": 1, **bad})
expect_raises(ValueError, saturation_experiment, (1, 2**40), n_keys=2, trials=1, match=f"would take {2 * 2**40 * 12:,} bytes")


# %% [markdown]
# **What the numbers say.** Unscaled, the largest weight climbs from 0.31 at width 2 to 0.94 at
# width 512 and 0.97 at 1,024, while the Jacobian, the sensitivity $\partial p / \partial s$ of the
# shares to the scores, shrinks to 1/3.7 of the scaled one at 512 and 1/7.4 at 1,024. Scaled,
# the largest weight stays between 0.23 and 0.25 at every width. At widths 2 to 8 the red curve sits
# *above* the blue one on the right: unscaled scores of variance 2 to 8 are spread just enough for
# softmax to respond most, while scaled scores of variance 1 over 16 keys give nearly uniform
# shares, whose Jacobian is small too. The Jacobian is largest in between, neither uniform nor one-hot.
#
# **What the queries actually receive.** The Jacobian is only one factor of the gradient. Training
# needs $\partial L / \partial q$, the gradient that reaches each query through the scores, the
# shares and the values. The next cell measures it directly: 400 queries per width, each against
# 16 random keys and values, with the loss $L = \langle \text{output}, r \rangle$ for a random
# direction $r$ (any loss reaches the output this way), scaled and unscaled.

# %% tags=["hide-input"]
# @title The figure code and checks by hand of the next cell: _query_gradients_by_hand, plot_query_gradients (open to read)
def _query_gradients_by_hand(widths, n_keys, trials, seed):
    """query_gradient_experiment's draws, with ∂L/∂q from autograd instead of the closed form."""
    gen = torch.Generator().manual_seed(seed)
    norms = {}
    for width in widths:
        q = torch.randn(trials, width, generator=gen).double().requires_grad_()
        k = torch.randn(trials, n_keys, width, generator=gen).double()
        direction = torch.randn(trials, width, generator=gen).double()
        u = direction.norm(dim=-1, keepdim=True) * torch.randn(trials, n_keys, generator=gen).double()  # u_j = v_j · r
        for scaled in (False, True):
            p = torch.softmax((k * q[:, None, :]).sum(-1) / (math.sqrt(width) if scaled else 1.0), dim=-1)
            (grad,) = torch.autograd.grad((p * u).sum(), q)
            norms[width, scaled] = grad.norm(dim=-1)
    return norms


def plot_query_gradients(norms, widths, language="en"):
    """Median and 10th-90th percentile band of |∂L/∂q| per head width, unscaled and scaled, on log axes."""
    import matplotlib.ticker

    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    widths = list(widths)
    missing = [(w, scaled) for w in widths for scaled in (False, True) if (w, scaled) not in norms]
    if missing or not widths:
        raise ValueError(f"norms must hold a (width, scaled) entry for every width; missing {missing[:4]}")
    fig, ax = plt.subplots(figsize=(7.6, 3.6))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.9)  # fixed margins: a layout engine would draw everything twice
    for scaled, color, style, label in ((False, Palette.RED, "o-", localized(language, "unscaled  q·k", "без масштаба  q·k")),
                                        (True, Palette.BLUE, "s--", localized(language, "scaled  q·k/√d_k", "с масштабом  q·k/√d_k"))):
        rows = np.array([np.asarray(norms[w, scaled], dtype=float) for w in widths])  # (widths, trials)
        low, mid, high = (np.quantile(rows, level, axis=1) for level in (0.1, 0.5, 0.9))
        ax.fill_between(widths, low, high, color=color, alpha=0.18, lw=0)
        ax.plot(widths, mid, style, color=color, ms=4, label=label)
    log_scale(ax, "x", base=2)
    log_scale(ax, "y")
    # One format on the y-axis: every tick a power of ten (log_scale writes 0.01 and 100 plainly but 10⁻⁴ as a power).
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda value, _: "10" + str(round(math.log10(value))).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")) if value > 0 else ""))
    ax.set_xlabel(localized(language, "head width d_k", "размерность головы d_k"))
    ax.set_ylabel(localized(language, "|∂L/∂q| per query", "|∂L/∂q| на запрос"))
    ax.set_title(localized(language, "What the queries receive", "Что получают запросы"))
    ax.legend(loc="upper left")
    return fig


# %% tags=["hide-input"]
# @title Going deeper (optional): the gradient each query receives, measured across widths (open to read)
def query_gradient_experiment(widths, *, n_keys=16, trials=400, seed=SEED):
    """Per width, the norm of ∂L/∂q for each of ``trials`` queries, unscaled and scaled, with L = <softmax(q kᵀ/c) v, r>."""
    widths = [require_int("width", w, minimum=1) for w in widths]
    if not widths:
        raise ValueError("widths must name at least one head width")
    n_keys = require_int("n_keys", n_keys, minimum=2)
    trials = require_int("trials", trials, minimum=1, maximum=100_000)  # seconds, not hours
    gen = torch.Generator().manual_seed(require_int("seed", seed, minimum=0))
    require_budget("the keys of the widest head", (trials, n_keys, max(widths)), itemsize=4 + 8 + 8)  # float32 draws, float64 copy and product
    norms = {}
    for width in widths:
        # Drawn in float32 (faster to generate), computed in float64.
        q = torch.randn(trials, width, generator=gen).double()              # (trials, d)
        k = torch.randn(trials, n_keys, width, generator=gen).double()      # (trials, n, d)
        direction = torch.randn(trials, width, generator=gen).double()      # (trials, d): r
        # L = sum_j p_j (v_j · r). Given r, each v_j · r is N(0, |r|²) and independent, so draw u_j = v_j · r directly.
        u = direction.norm(dim=-1, keepdim=True) * torch.randn(trials, n_keys, generator=gen).double()  # (trials, n)
        for scaled in (False, True):
            c = math.sqrt(width) if scaled else 1.0
            p = torch.softmax((k @ q[:, :, None])[..., 0] / c, dim=-1)          # (trials, n) shares
            d_scores = p * (u - (p * u).sum(-1, keepdim=True))                  # ∂L/∂s = (diag(p) − p pᵀ) u
            gradient = (d_scores[:, None, :] @ k)[:, 0] / c                     # (trials, d) ∂L/∂q = Σ_j ∂L/∂s_j k_j / c
            norms[width, scaled] = gradient.norm(dim=-1)                        # (trials,) one norm per query
    return norms


# The closed-form gradient is what autograd computes: check it on a small case.
check_q = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED), requires_grad=True)
check_k, check_u = torch.randn(3, 4, 5, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
check_p = torch.softmax((check_k @ check_q[:, :, None])[..., 0] / math.sqrt(5), dim=-1)
(autograd_q,) = torch.autograd.grad((check_p * check_u).sum(), check_q)
closed_form = ((check_p * (check_u - (check_p * check_u).sum(-1, keepdim=True)))[:, None, :] @ check_k)[:, 0] / math.sqrt(5)
if not torch.allclose(autograd_q, closed_form, atol=1e-12):
    raise AssertionError(f"the closed-form ∂L/∂q disagrees with autograd by {float((autograd_q - closed_form).abs().max()):.3g}")

query_gradients = query_gradient_experiment(WIDTHS)
expect("query_gradient_experiment's defaults are the caption's 400 queries over 16 keys",
       torch.equal(query_gradient_experiment((2,))[2, False], query_gradient_experiment((2,), n_keys=16, trials=400)[2, False]))
almost_none = {}  # share of unscaled queries whose gradient is under 1% of the scaled median
for width in WIDTHS:
    unscaled, scaled_norms = query_gradients[width, False], query_gradients[width, True]
    almost_none[width] = float((unscaled < 0.01 * scaled_norms.median()).double().mean())
median_ratio_512 = float(query_gradients[512, True].median() / query_gradients[512, False].median())
largest_512 = (float(query_gradients[512, False].max()), float(query_gradients[512, True].max()))
print(" d_k | median |dL/dq| unscaled, scaled | unscaled queries under 1% of the scaled median")
for width in WIDTHS:
    print(f"{width:>4} | {float(query_gradients[width, False].median()):>10.3g} {float(query_gradients[width, True].median()):>8.3g} | "
          f"{almost_none[width]:.2f}")
print(f"at d_k = 512: the median unscaled query gets {median_ratio_512:.0f}x less gradient than a scaled one, "
      f"{almost_none[512]:.0%} get almost none, and the largest gets {largest_512[0]:.0f} against {largest_512[1]:.0f} scaled")
if not (10 < median_ratio_512 < 150 and round(almost_none[512], 1) == 0.5 and 10 < largest_512[0] / largest_512[1] < 100):
    raise AssertionError(f"the prose says: at d_k = 512 the median unscaled gradient is tens of times smaller (measured "
                         f"{median_ratio_512:.1f}x), about half get almost none (measured {almost_none[512]:.2f}), and "
                         f"a few get far more than any scaled query (largest {largest_512[0]:.0f} against {largest_512[1]:.0f})")


for tiny_args in (((1, 4), 2, 1, 0), ((4,), 5, 3, SEED)):
    closed, auto = query_gradient_experiment(tiny_args[0], n_keys=tiny_args[1], trials=tiny_args[2], seed=tiny_args[3]), _query_gradients_by_hand(*tiny_args)
    expect(f"query_gradient_experiment{tiny_args} must match autograd on the same draws",
           sorted(closed) == sorted(auto) and all(closed[key].shape == auto[key].shape and torch.allclose(closed[key], auto[key], rtol=1e-9, atol=0) for key in auto))
# Float32 draws, their float64 copy and one float64 product: 20 bytes per key entry of the widest head.
# Five seeds at d_k = 512 (the run above and four more): the starving share is stable, the median factor is not.
by_seed = [query_gradients] + [query_gradient_experiment((512,), seed=SEED + i) for i in range(1, 5)]
starving = [float((g[512, False] < 0.01 * g[512, True].median()).double().mean()) for g in by_seed]
factors = [float(g[512, True].median() / g[512, False].median()) for g in by_seed]
print(f"five seeds at d_k = 512: share under 1% of the scaled median {[f'{s:.0%}' for s in starving]}; "
      f"median factor {[f'{f:.0f}x' for f in factors]}")
expect("in every seed between 40% and 50% of the unscaled queries starve", all(0.40 <= s <= 0.50 for s in starving))
per_root = [float(query_gradients[w, True].median()) / math.sqrt(w) for w in WIDTHS if w >= 32]
expect("the scaled median grows like sqrt(d_k) (the loss's direction r): within 10% of flat from width 32 on", max(per_root) / min(per_root), "<", 1.1)
if not max(almost_none[w] for w in WIDTHS if w <= 8) <= 0.01:
    raise AssertionError(f"at narrow widths no unscaled query should starve; measured {[almost_none[w] for w in WIDTHS if w <= 8]}")


show_figure(
    plot_query_gradients(query_gradients, WIDTHS, language=LANGUAGE),
    "Each line is the median gradient that one query receives, the shaded band the middle 80% of the 400 queries, on "
    "log axes. Scaled (blue squares, dashed), the gradient grows gently with the width and the band stays narrow. Unscaled (red circles, solid), the "
    f"median is still {float(query_gradients[128, False].median()):.2f} and {float(query_gradients[256, False].median()):.2f} at d_k = 128 and 256 and collapses only at 512, to "
    f"{float(query_gradients[512, False].median()):.2f}; the band widens by orders of magnitude: at d_k = 512, {almost_none[512]:.0%} of the queries get almost "
    "nothing (a saturated softmax), while the few whose top two scores are close get far "
    "larger gradients than any scaled query. Training without the scaling is not slow everywhere; it is erratic.",
)

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
for bad in ({"widths": (0,)}, {"widths": ()}, {"n_keys": 1}, {"trials": 0}, {"seed": -1}):
    expect_raises(ValueError, query_gradient_experiment, **{"widths": (4,), "n_keys": 2, "trials": 1, **bad})
expect_raises(ValueError, query_gradient_experiment, (1, 2**40), n_keys=2, trials=1, match=f"would take {2 * 2**40 * 20:,} bytes")


# %% [markdown]
# In one sentence: dot products grow with the width, large scores saturate softmax, and then the
# gradient reaching the queries is not simply smaller but uneven. At $d_k = 512$ about half of the
# queries get almost none (under 1% of the scaled median; between 40% and 50% in each of five seeds the cell
# draws), while a few get updates tens of times larger than any scaled query. The median query gets
# tens of times less than with the scaling, but that factor swings widely from one draw to the next
# (the cell prints it for the five seeds), so the share that starves is the number to remember.
# The scaled curve rises gently with the width for a reason of the measurement, not of attention:
# the loss dots the output with a random direction $r$ of $d_k$ entries, whose length grows like
# $\sqrt{d_k}$; divided by $\sqrt{d_k}$ the scaled median is flat from width 32 on (the cell checks
# it). Dividing by $\sqrt{d_k}$ keeps every query where softmax is smooth and trainable.

# %% [markdown]
# ## 8 · Many heads: multi-head, grouped-query and multi-query attention
#
# **The idea.** One attention with queries as wide as the model can only compute one kind of
# mixing per layer. Instead, split the width into $H$ narrow **heads**, each with its own
# projections and its own attention. The total work stays about the same, and each head can
# specialise: one follows the previous token, another links a pronoun to its noun. The heads'
# outputs are glued back side by side and mixed by one output matrix $W_o$, so the block's output
# has the model's width again and blocks can be stacked.
#
# During generation every head's keys and values are cached for every token, so the cache grows
# with the number of K/V heads. **Grouped-query attention (GQA)** lets a group of query heads share
# one K/V head; **multi-query attention (MQA)** is the extreme of one K/V head for all. The query
# heads still ask their own questions; they only read from a shared set of keys and values.
#
# $$\text{head}_h = \operatorname{Attention}\left(X W_q^{(h)},\; X W_k^{(g(h))},\; X W_v^{(g(h))}\right), \qquad g(h) = \left\lfloor \frac{h}{H / H_{kv}} \right\rfloor$$
#
# $$\operatorname{MHA}(X) = \left[\text{head}_0, \dots, \text{head}_{H-1}\right] W_o$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $H$ | number of query heads | $8$ |
# | $H_{kv}$ | number of K/V heads: $H$ for MHA, fewer for GQA, 1 for MQA; must divide $H$ | $8$, $2$, $1$ |
# | $d_{head}$ | width of each head, $d_{model} / H$ | $64 / 8 = 8$ |
# | $W_q^{(h)}$, $W_k^{(g)}$, $W_v^{(g)}$ | projections of query head $h$ and of K/V head $g$, each $d_{model} \times d_{head}$ | $64 \times 8$ |
# | $g(h)$ | the K/V head that query head $h$ reads; consecutive query heads share one | $g(5) = \lfloor 5 / 4 \rfloor = 1$ for $H_{kv} = 2$ |
# | $[\cdot, \dots, \cdot]$ | concatenation along the features | $8 \cdot 8 = 64$ wide |
# | $W_o$ | the output projection that mixes the heads | $64 \times 64$ |
#
# **By hand.** With $d_{model} = 64$ and $H = 8$ heads of width 8, the key and value projections
# hold $2 \cdot 64 \cdot (8 \cdot H_{kv})$ weights: 8,192 for MHA ($H_{kv} = 8$), 2,048 for GQA with
# 2 K/V heads, 1,024 for MQA. The cache per token shrinks by the same factors, 4× and 8×. Llama 3.1 8B
# pairs 32 query heads with 8 K/V heads: a 4× smaller cache than full multi-head attention.
#
# The reshapes are where multi-head code goes wrong, so they are exercises. Keep the axis order
# `(batch, heads, tokens, width)` in mind: that is what `scaled_dot_product_attention` expects, with
# the heads as one more batch axis.

# %% tags=["exercise"]
# Exercise 4: Three moves between head layouts, one or two lines each. split_heads takes x of shape
# (..., T, n_heads * d_head) and returns (..., n_heads, T, d_head), where head h of token t holds features
# h*d_head .. (h+1)*d_head - 1 of that token; index axes from the end so leading axes pass through.
# merge_heads is its exact inverse, (..., n_heads, T, d_head) -> (..., T, n_heads * d_head), head 0's
# features first. repeat_kv_heads takes (..., H_kv, T, d) and returns (..., H_kv * group, T, d) in which
# query head h reads K/V head h // group.
# The checks require: head h of token t holds exactly its own feature slab, for any leading axes;
# merging a contiguous attention output undoes split_heads exactly; query head h sees K/V head
# h // group for several shapes and groups; and a group that is not a positive integer raises
# TypeError or ValueError.
def split_heads(x, n_heads):
    """(..., T, H·d) -> (..., H, T, d): one slab of features per head."""
    x, n_heads = _split_heads_args(x, n_heads)
    # Your code here.
    raise NotImplementedError('Exercise 4: see the instructions above')


def merge_heads(x):
    """(..., H, T, d) -> (..., T, H·d): the heads side by side again."""
    x = require_tensor("x", x, min_ndim=3, finite=False)
    # Your code here.
    raise NotImplementedError('Exercise 4: see the instructions above')


def repeat_kv_heads(x, group):
    """(..., H_kv, T, d) -> (..., H_kv·group, T, d): K/V head g serves query heads g·group .. (g+1)·group - 1."""
    x, group = _repeat_kv_args(x, group)
    # Your code here.
    raise NotImplementedError('Exercise 4: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 4: the contracts your three functions must meet (open it to read the properties)
# builder:begin inline check_split_heads_contract
def check_split_heads_contract(split_heads):
    """Judge ``split_heads(x, n_heads)``: (..., T, H*d) -> (..., H, T, d), head h owning features h*d..(h+1)*d-1."""
    import torch

    batch, tokens, heads, width = 2, 3, 4, 5
    x = torch.arange(batch * tokens * heads * width, dtype=torch.float64).reshape(batch, tokens, heads * width)
    case = f"x = arange reshaped to ({batch}, {tokens}, {heads * width}), n_heads={heads}"
    prop = "head h of token t holds features h*d_head .. (h+1)*d_head - 1 of that token"
    result = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", split_heads, x, heads)
    contract_assert(
        isinstance(result, torch.Tensor) and tuple(result.shape) == (batch, heads, tokens, width),
        "shape (B, T, H*d) -> (B, H, T, d)", case, f"shape {(batch, heads, tokens, width)}",
        f"shape {tuple(getattr(result, 'shape', ()))}",
        "split the last axis into (H, d), then move the head axis in front of the token axis",
    )
    for b in range(batch):
        for h in range(heads):
            for t in range(tokens):
                want = x[b, t, h * width:(h + 1) * width]
                got = result[b, h, t]
                if not torch.equal(got, want):
                    if torch.equal(result, x.reshape(batch, heads, tokens, width)):
                        hint = "reshaping straight to (B, H, T, d) mixes tokens; reshape to (B, T, H, d) first, then transpose(1, 2)"
                    else:
                        hint = "view the last axis as (H, d_head) (head-major), then swap the token and head axes"
                    raise ContractViolation(prop, case + f"; batch {b}, head {h}, token {t}", want.tolist(), got.tolist(), hint)
    three = torch.zeros(7, 6, dtype=torch.float64)
    case3 = "x of shape (7, 6) with no batch axis, n_heads=3"
    single = contract_call("leading axes are kept as they are", case3, "the function raised on a valid input; the traceback above this message shows where", split_heads, three, 3)
    contract_assert(
        tuple(single.shape) == (3, 7, 2), "leading axes are kept as they are", case3, "shape (3, 7, 2)",
        f"shape {tuple(single.shape)}", "index the axes from the end (-1, -2) so any number of leading axes works",
    )
    return {"cases": 2}
# builder:end sha256=f59f0c21ea7eb4aca2160a33894f98f30c9ac94ca2f48eeecd1b0eb670f07097
# builder:begin inline check_merge_heads_contract
def check_merge_heads_contract(merge_heads):
    """Judge ``merge_heads(x)``: (..., H, T, d) -> (..., T, H*d), the exact inverse of splitting the width into heads.

    The input is contiguous, like an attention output, so its transpose is not: ``view`` fails there.
    """
    import torch

    batch, heads, tokens, width = 2, 3, 4, 5
    flat = torch.randn(batch, tokens, heads * width, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    split = flat.reshape(batch, tokens, heads, width).transpose(1, 2).contiguous()  # (B, H, T, d), like an attention output
    case = f"heads = x.reshape({batch}, {tokens}, {heads}, {width}).transpose(1, 2).contiguous()"
    prop = "merging undoes the split: token t gets head 0's features, then head 1's, ..."
    result = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", merge_heads, split)
    contract_assert(
        isinstance(result, torch.Tensor) and tuple(result.shape) == (batch, tokens, heads * width),
        "shape (B, H, T, d) -> (B, T, H*d)", case, f"shape {(batch, tokens, heads * width)}",
        f"shape {tuple(getattr(result, 'shape', ()))}", "move the head axis behind the token axis, then flatten the last two axes",
    )
    if not torch.equal(result, flat):
        if torch.equal(result, split.reshape(batch, tokens, heads * width)):
            hint = "the heads were merged without moving the head axis back: transpose(-3, -2) before flattening"
        elif torch.equal(result, split.transpose(-2, -1).reshape(batch, tokens, heads * width)):
            hint = "the wrong axes were transposed: swap heads and tokens (-3, -2), not tokens and features"
        else:
            hint = "transpose(-3, -2) gives (..., T, H, d); then flatten(-2) or reshape(..., T, H*d)"
        where = (result != flat).nonzero()[0].tolist()
        raise ContractViolation(prop, case, f"{float(flat[tuple(where)])} at {tuple(where)}", f"{float(result[tuple(where)])}", hint)
    return {"cases": 1}
# builder:end sha256=42030e7b3423cc7bf88659e5b5936a292adc12df0bbf6046552883ea3910b764
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
check_exercise("Exercise 4", check_split_heads_contract, split_heads, globals())
check_exercise("Exercise 4", check_merge_heads_contract, merge_heads, globals())
check_exercise("Exercise 4", check_kv_repeat_contract, repeat_kv_heads, globals())

# %% tags=["hide-input"]
# @title The smallest shapes split_heads, merge_heads and repeat_kv_heads accept (checked; open to read)
# The smallest shapes each move accepts, NaN passing through untouched (a reshape cannot create it), and one too small.
nan_row = torch.tensor([[float("nan"), 1.0, 2.0, 3.0]])                     # (T=1, 4)
expect("split_heads of one token into 2 heads", split_heads(nan_row, 2).shape, "==", (2, 1, 2))
expect("split_heads with one head keeps the features", torch.allclose(split_heads(nan_row, 1)[0], nan_row, equal_nan=True))
expect("merge_heads of (H, T, d) = (2, 1, 2) undoes the split", torch.allclose(merge_heads(split_heads(nan_row, 2)), nan_row, equal_nan=True))
expect("repeat_kv_heads of (H_kv, T, d) = (2, 1, 2) by 2", repeat_kv_heads(split_heads(nan_row, 2), 2).shape, "==", (4, 1, 2))
expect("repeat_kv_heads by 1 changes nothing", torch.allclose(repeat_kv_heads(split_heads(nan_row, 2), 1), split_heads(nan_row, 2), equal_nan=True))

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
expect_raises(ValueError, split_heads, torch.zeros(4), 2, match="dimensions")
expect_raises(ValueError, repeat_kv_heads, torch.zeros(3, 4), 2, match="dimensions")
# The repeated copy is budgeted first: (2, 3·2**40, 4, 5) float32.
expect_raises(ValueError, repeat_kv_heads, torch.zeros(2, 3, 4, 5), 2**40, match=f"of shape (2, {3 * 2**40}, 4, 5) would take {2 * 3 * 2**40 * 20 * 4:,} bytes")


# %% tags=["exercise"]
# Exercise 5: Write MultiHeadSelfAttention.forward from the pieces above. Build the boolean mask
# (padding from token_valid for keys and for queries; the causal triangle when self.causal), project
# x to queries, keys and values, split them into heads, let each group of query heads share its K/V
# head, run scaled_dot_product_attention with empty_row passed through, merge the heads and apply
# out_proj. The check requires: the output equals an independent multi-head attention built from the
# layer's own weights (float64, 4 query heads over 2 K/V heads, causal); return_weights=True gives
# (output, weights of shape (B, H, T, T)); padded keys are never read and padded queries give zero rows.
class MultiHeadSelfAttention(nn.Module):
    """Causal (or not) self-attention with H query heads and H_kv shared K/V heads: MHA, GQA or MQA."""

    def __init__(self, d_model, n_heads, n_kv_heads=None, *, causal=True):
        super().__init__()
        self.d_model, self.n_heads, self.n_kv_heads, self.causal = _attention_sizes(d_model, n_heads, n_kv_heads, causal)
        self.d_head = self.d_model // self.n_heads
        self.q_proj = nn.Linear(self.d_model, self.n_heads * self.d_head, bias=False)
        self.k_proj = nn.Linear(self.d_model, self.n_kv_heads * self.d_head, bias=False)
        self.v_proj = nn.Linear(self.d_model, self.n_kv_heads * self.d_head, bias=False)
        self.out_proj = nn.Linear(self.n_heads * self.d_head, self.d_model, bias=False)

    def kv_parameter_count(self):
        """Weights of the key and value projections: what GQA and MQA shrink, like the KV cache."""
        return self.k_proj.weight.numel() + self.v_proj.weight.numel()

    def forward(self, x, *, token_valid=None, empty_row="error", return_weights=False):
        """x (B, T, d_model) -> (B, T, d_model); token_valid (B, T) marks real tokens (False = padding)."""
        x, token_valid, return_weights = _attention_forward_args(self, x, token_valid, return_weights)
        batch, length, _ = x.shape
        # Your code here.
        raise NotImplementedError('Exercise 5: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 5: the contract your function must meet (open it to read the properties)
# builder:begin inline check_multi_head_attention_contract
def check_multi_head_attention_contract(attention_class):
    """Judge ``attention_class(d_model, n_heads, n_kv_heads=None, *, causal=True)`` and its ``forward``.

    ``forward(x, *, token_valid=None, empty_row='error', return_weights=False)`` must project x to
    queries, keys and values, split them into heads (K/V heads shared by consecutive query heads),
    attend with the causal and padding masks, merge the heads and apply the output projection.
    The reference here is built independently from the layer's own weights and PyTorch's attention.
    Returns the largest error; raises ContractViolation naming the first property that fails.
    """
    import torch
    import torch.nn.functional as F

    d_model, n_heads, n_kv, batch, length = 8, 4, 2, 2, 5
    gen = torch.Generator().manual_seed(2024)
    case = f"attention_class({d_model}, {n_heads}, {n_kv}, causal=True) in float64, x of shape ({batch}, {length}, {d_model})"
    raised = "the function raised on a valid input; the traceback above this message shows where"
    layer = contract_call("the layer builds", case, raised, attention_class, d_model, n_heads, n_kv, causal=True)
    contract_assert(
        isinstance(layer, torch.nn.Module), "the layer builds", case, "an nn.Module instance",
        f"{type(layer).__name__} {layer!r}"[:120], "the exercise is the class MultiHeadSelfAttention; keep its __init__",
    )
    layer = layer.double()
    weights = {}
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            module = getattr(layer, name, None)
            contract_assert(
                isinstance(getattr(module, "weight", None), torch.Tensor), "the layer keeps q_proj, k_proj, v_proj and out_proj",
                case, f"a linear layer {name}", f"{type(module).__name__}", "keep the four projections built in __init__",
            )
            module.weight.copy_(torch.randn(module.weight.shape, dtype=torch.float64, generator=gen))
            weights[name] = module.weight.detach().clone()
    x = torch.randn(batch, length, d_model, dtype=torch.float64, generator=gen)
    d_head, group = d_model // n_heads, n_heads // n_kv

    def reference(x, *, causal=True, tile=False, out_proj=True, token_valid=None, transpose=True):
        def heads(t, h):  # (B, T, h·d) -> (B, h, T, d)
            return t.reshape(t.shape[0], t.shape[1], h, d_head).transpose(1, 2)

        q = heads(x @ weights["q_proj"].T, n_heads)
        k, v = (heads(x @ weights[name].T, n_kv) for name in ("k_proj", "v_proj"))
        share = (lambda t: t.repeat(1, group, 1, 1)) if tile else (lambda t: t.repeat_interleave(group, dim=1))
        allowed = torch.ones(x.shape[0], 1, x.shape[1], x.shape[1], dtype=torch.bool)
        if causal:
            allowed = allowed & torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
        if token_valid is not None:
            allowed = allowed & token_valid[:, None, None, :] & token_valid[:, None, :, None]
        out = F.scaled_dot_product_attention(q, share(k), share(v), attn_mask=allowed)
        if token_valid is not None:
            out = out * token_valid[:, None, :, None]  # padded queries: zero rows
        merged = (out.transpose(1, 2) if transpose else out).reshape(x.shape[0], x.shape[1], n_heads * d_head)
        return merged @ weights["out_proj"].T if out_proj else merged

    prop = "the output equals an independent multi-head attention built from the layer's weights"
    with torch.no_grad():
        got = contract_call(prop, case, raised, layer, x)
        contract_assert(
            isinstance(got, torch.Tensor) and tuple(got.shape) == (batch, length, d_model), "output shape (B, T, d_model)", case,
            f"shape {(batch, length, d_model)}", f"shape {tuple(getattr(got, 'shape', ()))}",
            "merge the heads back to (B, T, H*d) and apply out_proj",
        )
        want = reference(x)
        hint = "project, split into heads, repeat each K/V head for its group, attend with the causal mask, merge, out_proj"
        for variant, explanation in (
            (reference(x, causal=False), "the causal mask was not applied: with causal=True a token may not read later tokens"),
            (reference(x, tile=True), "K/V heads were tiled (kv0, kv1, kv0, kv1); consecutive query heads share one: repeat_interleave"),
            (reference(x, out_proj=False), "the merged heads were returned without the output projection out_proj"),
            (reference(x, transpose=False), "the heads were merged without moving the head axis back: reshaping (B, H, T, d) "
                                            "straight to (B, T, H*d) mixes tokens and heads; use merge_heads (transpose, then flatten)"),
        ):
            if torch.allclose(got, variant, atol=1e-9):
                hint = explanation
                break
        error = contract_close(prop, case, got, want, hint, atol=1e-9, rtol=1e-9)

        returned = contract_call("return_weights=True returns (output, weights)", case + ", return_weights=True", raised,
                                 layer, x, return_weights=True)
        contract_assert(
            isinstance(returned, tuple) and len(returned) == 2 and tuple(getattr(returned[1], "shape", ())) == (batch, n_heads, length, length),
            "return_weights=True returns (output, weights)", case + ", return_weights=True",
            f"a pair whose weights have shape {(batch, n_heads, length, length)}", f"{type(returned).__name__}",
            "return (output, result.weights) when return_weights is set: one weight matrix per query head",
        )
        contract_close("return_weights=True returns (output, weights)", case + ", return_weights=True", returned[0], want, hint,
                       atol=1e-9, rtol=1e-9)

        token_valid = torch.tensor([[True] * length, [True, True, True, False, False]])
        padded_case = case + ", token_valid marks the last 2 tokens of sequence 1 as padding, empty_row='zero'"
        padded = contract_call("padding keys are never read and padded queries give zero rows", padded_case, raised,
                               layer, x, token_valid=token_valid, empty_row="zero")
        contract_close(
            "padding keys are never read and padded queries give zero rows", padded_case, padded,
            reference(x, token_valid=token_valid),  # out_proj has no bias, so a zero row stays zero
            "combine token_valid into the mask for both keys (columns) and queries (rows), and pass empty_row through",
            atol=1e-9, rtol=1e-9,
        )
    return {"max_error": error}
# builder:end sha256=953380c6015f4e3cce5425f2eff19f37bb1b4234765b2ed1d247fac08200b065
check_exercise("Exercise 5", check_multi_head_attention_contract, MultiHeadSelfAttention, globals())


# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_head_sharing, plot_split_merge (open to read)
def plot_head_sharing(n_heads=8, kv_options=(8, 2, 1), language="en"):
    """Three panels of query heads (top) joined to the K/V heads they read (bottom): MHA, GQA, MQA."""
    require_choice("language", language, LANGUAGES)
    n_heads = require_int("n_heads", n_heads, minimum=1, maximum=16)  # one square per head: more would not fit
    kv_options = [require_int("n_kv_heads", n_kv, minimum=1, maximum=n_heads) for n_kv in kv_options]
    if not 1 <= len(kv_options) <= 4 or any(n_heads % n_kv for n_kv in kv_options):
        raise ValueError(f"kv_options must be 1 to 4 divisors of n_heads={n_heads}, got {kv_options}")
    apply_plot_style()
    fig, axes = plt.subplots(1, len(kv_options), figsize=(8.3, 2.8), squeeze=False)  # 797 px wide: labels at 9 pt as shown
    axes = axes[0]
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.88, wspace=0.05)  # fixed margins: a layout engine would draw everything twice
    names = {n_heads: "MHA", 1: "MQA"}
    for ax, n_kv in zip(axes, kv_options):
        group = n_heads // n_kv
        query_x = np.arange(n_heads)
        kv_x = np.array([g * group + (group - 1) / 2 for g in range(n_kv)])
        for h in range(n_heads):
            ax.plot([query_x[h], kv_x[h // group]], [1.0, 0.0], color=Palette.GREY, lw=1.2, zorder=1)
        ax.scatter(query_x, np.ones(n_heads), s=170, marker="s", color=Palette.BLUE, zorder=2)
        ax.scatter(kv_x, np.zeros(n_kv), s=260, marker="s", color=Palette.ORANGE, zorder=2)
        ax.set_ylim(-0.45, 1.45)
        ax.set_xlim(-0.8, n_heads - 0.2)
        ax.axis("off")
        label = names.get(n_kv, "GQA")
        ax.set_title(f"{label}: {n_heads} Q, {n_kv} K/V", fontsize=11)
        ax.text(-0.7, 1.28, localized(language, "query heads", "головы запросов"), fontsize=9, color=Palette.BLUE)
        ax.text(-0.7, -0.38, localized(language, f"K/V heads cached: {n_kv}", f"KV-голов в кэше: {n_kv}"),
                fontsize=9, color=Palette.ORANGE)
    return fig


def plot_split_merge(n_tokens=4, n_heads=2, d_head=2, language="en"):
    """Boxes of the multi-head data path: Q/K/V split into heads, per-head T×T weights, merged, mixed by W_o."""
    require_choice("language", language, LANGUAGES)
    n_tokens = require_int("n_tokens", n_tokens, minimum=1, maximum=8)
    n_heads = require_int("n_heads", n_heads, minimum=1, maximum=6)
    d_head = require_int("d_head", d_head, minimum=1, maximum=4)
    apply_plot_style()
    from matplotlib.collections import PatchCollection
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Rectangle

    colors = (Palette.BLUE, Palette.ORANGE, Palette.GREEN, Palette.PURPLE, Palette.RED, Palette.YELLOW)
    cells, fills = [], []  # every grid cell, drawn at the end as one collection (one patch each would cost a redraw of limits)
    fig, ax = plt.subplots(figsize=(8.3, 1.45))  # 797 px wide: shown at its own size, labels at 9 pt
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.8)  # fixed margins: a layout engine would draw everything twice
    ax.set_aspect("equal")
    ax.axis("off")
    cell, width, gap = 0.4, n_heads * d_head, 3.3  # a gap as wide as the 9 pt label of its arrow
    top = n_tokens * cell + 0.1

    def grid(x0, rows, columns, color_of, alpha=0.85):
        """A rows × columns grid; color_of(row, column) is a palette index, or None for a blank (masked) cell."""
        for r in range(rows):
            for j in range(columns):
                index = color_of(r, j)
                cells.append(Rectangle((x0 + j * cell, top - (r + 1) * cell), cell, cell))
                fills.append(to_rgba(Palette.PAPER if index is None else colors[index % 6], alpha))
        return x0 + columns * cell

    def arrow(x0, x1, label):
        """A labelled arrow from x0 to x1 at the grids' mid-height."""
        y = top - n_tokens * cell / 2
        ax.annotate("", xy=(x1 - 0.08, y), xytext=(x0 + 0.08, y), arrowprops={"arrowstyle": "-|>", "color": Palette.INK, "lw": 1.2})
        ax.text((x0 + x1) / 2, y - 0.12, label, ha="center", va="top", fontsize=9)  # below: the shape labels sit above

    def label(x0, text):
        ax.text(x0, top + 0.15, text, fontsize=9)

    x = grid(0.0, n_tokens, width, lambda r, j: j // d_head)
    label(0.0, f"Q, K, V\n(T, H·d) = ({n_tokens}, {width})")
    stages = (("split_heads", lambda h: (d_head, lambda r, j, h=h: h, 0.85), localized(language, "per head", "по головам") + f"\n(H, T, d) = ({n_heads}, {n_tokens}, {d_head})"),
              (localized(language, "softmax\n(QKᵀ/√d)", "softmax\n(QKᵀ/√d)"),
               lambda h: (n_tokens, lambda r, j, h=h: h if j <= r else None, 0.7), localized(language, "weights", "веса") + f"\n(H, T, T) = ({n_heads}, {n_tokens}, {n_tokens})"),
              ("× V", lambda h: (d_head, lambda r, j, h=h: h, 0.55), localized(language, "outputs", "выходы") + f"\n(H, T, d) = ({n_heads}, {n_tokens}, {d_head})"))
    for name, per_head, shape in stages:
        left = x + gap
        arrow(x, left, name)
        x = left
        for h in range(n_heads):  # one small grid per head
            columns, color_of, alpha = per_head(h)
            x = grid(x, n_tokens, columns, color_of, alpha) + 0.2
        label(left, shape)
        x -= 0.2
    merged = x + gap
    arrow(x, merged, "merge_heads")
    x = grid(merged, n_tokens, width, lambda r, j: j // d_head, alpha=0.55)
    label(merged, localized(language, "merged", "склеено") + f"\n(T, H·d) = ({n_tokens}, {width})")
    out = x + gap
    arrow(x, out, "× W_o")
    grid(out, n_tokens, width, lambda r, j: 6, alpha=0.35)  # colour 6 % 6 = 0 faded: W_o mixes every head into every feature
    label(out, localized(language, "output\n(T, d_model)", "выход\n(T, d_model)"))
    ax.add_collection(PatchCollection(cells, facecolors=fills, edgecolors="white", linewidths=1))
    ax.set_xlim(-0.1, out + max(width * cell, 3.2) + 0.1)  # room for the last label
    ax.set_ylim(top - n_tokens * cell - 0.1, top + 0.95)
    ax.set_title(localized(language, "Multi-head attention: split, weigh per head, merge, mix",
                           "Многоголовое внимание: разделить, взвесить, склеить, смешать"))
    return fig


# %%
torch.manual_seed(SEED)
x_heads = torch.randn(2, 6, 64)
layers = {name: MultiHeadSelfAttention(64, 8, kv) for name, kv in (("MHA", 8), ("GQA", 2), ("MQA", 1))}
for name, layer in layers.items():
    y, w = layer(x_heads, return_weights=True)
    print(f"{name}: {layer.n_kv_heads} K/V heads, output {tuple(y.shape)}, weights {tuple(w.shape)}, "
          f"K+V weights {layer.kv_parameter_count():,}")
kv_counts = [layer.kv_parameter_count() for layer in layers.values()]
expect("kv_counts == [8192, 2048, 1024]", kv_counts, "==", [8192, 2048, 1024])
expect("kv_counts[0] // kv_counts[1] == 4", kv_counts[0] // kv_counts[1], "==", 4)
expect("kv_counts[0] // kv_counts[2] == 8", kv_counts[0] // kv_counts[2], "==", 8)
expect("Llama 3.1 8B: 32 query heads over 8 K/V heads", 32 // 8, "==", 4)
expect("a layer is causal by default: no weight above the diagonal", all(bool((layer(x_heads, return_weights=True)[1].triu(1) == 0).all()) for layer in layers.values()))

# %% tags=["hide-input"]
# @title MultiHeadSelfAttention at its boundaries, against MHA, PyTorch's GQA and padding (checked; open to read)
# Boundaries: one feature and one head is a layer; zero of either, or zero K/V heads, is not.
expect("MultiHeadSelfAttention(1, 1) has 4 weights", sum(p.numel() for p in MultiHeadSelfAttention(1, 1).parameters()), "==", 4)
# The weights are budgeted before they exist: W_q, W_o (d x d) and W_k, W_v (H_kv·d_head x d), float32.
# So are the scores, exponentials and weights of a call: (B, H, T, T), three float32 copies.

# GQA is exactly MHA whose K/V projections repeat each shared head for its group.
gqa = layers["GQA"]
twin = MultiHeadSelfAttention(64, 8, 8)
with torch.no_grad():
    twin.q_proj.weight.copy_(gqa.q_proj.weight)
    twin.out_proj.weight.copy_(gqa.out_proj.weight)
    for name in ("k_proj", "v_proj"):
        shared = getattr(gqa, name).weight.unflatten(0, (2, 8))                  # (H_kv, d, d_model)
        getattr(twin, name).weight.copy_(shared.repeat_interleave(4, dim=0).flatten(0, 1))  # (H·d, d_model)
    gqa_error = float((gqa(x_heads) - twin(x_heads)).abs().max())
print(f"GQA against MHA with repeated K/V heads: max difference {gqa_error:.1e}")
expect("gqa_error < 1e-6", gqa_error, "<", 1e-6)

# And against PyTorch's own grouped-query path (torch >= 2.5), head by head.
if ENVIRONMENT["torch_has_enable_gqa"]:
    with torch.no_grad():
        q = split_heads(gqa.q_proj(x_heads), 8).double()
        k, v = (split_heads(proj(x_heads), 2).double() for proj in (gqa.k_proj, gqa.v_proj))
        ours = scaled_dot_product_attention(q, repeat_kv_heads(k, 4), repeat_kv_heads(v, 4), causal_allowed(6, 6)).output
        theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_allowed(6, 6), enable_gqa=True)
    print(f"against F.scaled_dot_product_attention(enable_gqa=True): max difference {float((ours - theirs).abs().max()):.1e}")
    expect("torch.allclose(ours, theirs, atol=1e-12)", torch.allclose(ours, theirs, atol=1e-12))
else:
    print("torch < 2.5 has no enable_gqa; the comparison with PyTorch's GQA path is skipped")

# Padding: padded queries read nothing (zero rows on request); real queries never read padding keys.
torch.manual_seed(SEED)
mha = MultiHeadSelfAttention(32, 4)
x_pad = torch.randn(2, 5, 32)
token_valid = torch.tensor([[True] * 5, [True, True, True, False, False]])
y_pad, w_pad = mha(x_pad, token_valid=token_valid, empty_row="zero", return_weights=True)
expect("y_pad.shape == (2, 5, 32)", y_pad.shape, "==", (2, 5, 32))
expect("w_pad.shape == (2, 4, 5, 5)", w_pad.shape, "==", (2, 4, 5, 5))
expect("padding queries must give zero rows", torch.all(w_pad[1, :, 3:] == 0))
expect("padding queries must give zero rows", torch.all(y_pad[1, 3:] == 0))
expect("no query may read a padding key", torch.all(w_pad[1, :, :, 3:] == 0))
expect("torch.allclose(w_pad[1, :, :3].sum(-1), torch.ones(4, 3))", torch.allclose(w_pad[1, :, :3].sum(-1), torch.ones(4, 3)))
expect("torch.allclose(w_pad[0].sum(-1), torch.ones(4, 5))", torch.allclose(w_pad[0].sum(-1), torch.ones(4, 5)))
expect("padding must not change the real tokens' outputs", torch.allclose(y_pad[1, :3], mha(x_pad[1:, :3])[0], atol=1e-6))
expect_raises(ValueError, mha, x_pad, token_valid=token_valid, match="fully masked")
print("padding: zero rows for padded queries, weights sum to 1 for real ones, real outputs unchanged by padding")

# %%

show_figure(
    plot_head_sharing(language=LANGUAGE),
    "Blue squares are query heads, orange squares are the key/value heads they read; each line is one query head "
    "reading one K/V head. Count the orange squares: that is what the KV cache stores per token and layer. MHA keeps "
    "8, GQA lets each group of 4 consecutive query heads share one (2 in all), MQA shares a single one among all 8.",
)


show_figure(
    plot_split_merge(language=LANGUAGE),
    "Read left to right; each small square is one number, rows are tokens, and the colour says which head owns it. "
    "Wide projections make every head's queries, keys and values at once (one grid stands for each of Q, K and V); "
    "split_heads cuts the features into H slabs of width d_head (= d_k) and stacks them as a batch of heads; each head "
    "computes its own T × T weights (here causal: blank squares above the diagonal) and blends its own values; "
    "merge_heads lays the outputs side by side again, head 0 first; and W_o mixes all heads into every output feature "
    "(drawn in one faded colour), back to the model's width.",
)

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
for bad_args in ((0, 1), (8, 0), (8, 2, 0)):
    expect_raises(ValueError, MultiHeadSelfAttention, *bad_args)
expect_raises(ValueError, MultiHeadSelfAttention, 2**31, 4, 2, match=f"of shape ({2 * 2**31 + 2 * 2 * 2**29}, {2**31}) would take {(2 * 2**31 + 2 * 2 * 2**29) * 2**31 * 4:,} bytes")
expect_raises(ValueError, layers["MQA"], torch.zeros(1, 2**16, 64), match=f"of shape (1, 8, 65536, 65536) would take {8 * 2**32 * 12:,} bytes")


# %% [markdown]
# ## 9 · What attention costs: the n² term
#
# **The idea.** Each head of each layer builds an $n \times n$ score matrix, so the work of scoring
# and mixing grows with the *square* of the context. The projections into queries, keys, values and
# back grow only linearly in $n$ but with the square of the width. For short prompts the projections
# dominate; past a crossover the $n^2$ term takes over, and every doubling of the context costs four
# times as much there.
#
# $$\text{FLOPs}_{\text{scores+mix}} = 2 \cdot 2\, n^2 d, \qquad \text{FLOPs}_{\text{projections}} = 2 \cdot 4\, n\, d^2, \qquad \frac{\text{FLOPs}_{\text{scores+mix}}}{\text{FLOPs}_{\text{projections}}} = \frac{n}{2d}$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $n$ | context length in tokens | $10^2$ to $10^6$ |
# | $d$ | model width $d_{model}$ (all heads together) | $4096$ |
# | $2 n^2 d$ | multiply-adds of $Q K^\top$ ($n^2 d$) and of weights times $V$ ($n^2 d$) | |
# | $4 n d^2$ | multiply-adds of the four projections $W_q, W_k, W_v, W_o$ | |
# | the factor 2 | one multiply-add counts as 2 floating-point operations | |
#
# **By hand.** The ratio $n / 2d$ is 1 at $n = 2d$: for $d = 4096$ the crossover sits at 8,192
# tokens. At 128,000 tokens the ratio is $128000 / 8192 \approx 15.6$. **The convention matters**:
# these counts take four $d \times d$ projections, no feed-forward layer, and the full $n \times n$
# square. Llama 3.1 8B (32 query heads, 8 K/V heads) has $W_k$ and $W_v$ of width $d/4$, so its
# projections cost $2.5 d^2$ multiply-adds per token and the crossover moves to $n = 1.25 d = 5{,}120$.
# Add a feed-forward layer of width $4d$ ($8 d^2$ more) and the whole layer crosses at $n = 6d =
# 24{,}576$. A causal kernel computes only the allowed half of the square, which doubles the
# crossover (16,384 in the first convention). The next cell computes all four. None of these counts
# include the softmax or the constant factors of real kernels; they show the shape of the curve, not
# a wall-clock time.

# %% tags=["hide-input"]
# @title first_crossing: the bisection that finds where two costs meet (open to read)
def first_crossing(difference, upper=100_000):
    """The first whole length n in 1..upper with difference(n) >= 0, by bisection: difference changes sign once."""
    if not callable(difference):
        raise TypeError(f"difference must be a function of the length n, got {type(difference).__name__}")
    low, high = 1, require_int("upper", upper, minimum=1)
    if difference(high) < 0:
        raise ValueError(f"the two sides do not meet by n = {high:,}; pass a larger upper")
    while low < high:  # invariant: the answer lies in low..high
        middle = (low + high) // 2
        if difference(middle) >= 0:
            high = middle
        else:
            low = middle + 1
    return low


expect("a crossing exactly at upper is found", first_crossing(lambda n: n - 10, upper=10), "==", 10)
expect("a crossing at n = 1 is found", first_crossing(lambda n: n - 1), "==", 1)


# %%
def attention_cost(n_tokens, d_model):
    """FLOPs of one attention layer over n tokens: the n² score-and-mix part and the linear projections."""
    n, d = _counts(n_tokens=n_tokens, d_model=d_model)
    return {
        "score_entries": n * n,                # one n × n score matrix per head and layer
        "quadratic_flops": 2 * 2 * n * n * d,  # Q·Kᵀ and weights·V: n·n·d multiply-adds each, 2 FLOPs apiece
        "linear_flops": 2 * 4 * n * d * d,     # X·W_q, X·W_k, X·W_v and the output map: n·d·d multiply-adds each
    }


def kv_cache_bytes_per_token(n_layers, n_kv_heads, head_dim, bytes_per_value=2):
    """Bytes one token leaves in the KV cache: a key and a value in every layer and every K/V head."""
    n_layers, n_kv_heads, head_dim, bytes_per_value = _counts(n_layers=n_layers, n_kv_heads=n_kv_heads, head_dim=head_dim,
                                                              bytes_per_value=bytes_per_value)
    return 2 * n_layers * n_kv_heads * head_dim * bytes_per_value


WIDE = REFERENCE.value("attention_cost.d_model")  # 4,096: the width of a 7-8B model such as Llama 3.1 8B
LONG = REFERENCE.value("attention_cost.long_context")
for n in (1_000, 2_000, LONG):
    print(f"{n:>7,} tokens: {attention_cost(n, WIDE)['score_entries']:>14,} score entries per head per layer")
crossover = 2 * WIDE
REFERENCE.check("attention_cost.crossover_tokens", crossover)
REFERENCE.check("attention_cost.long_context_score_entries", attention_cost(LONG, WIDE)["score_entries"])
at_crossover = attention_cost(crossover, WIDE)
expect('the n² part should equal the projections at n = 2·d_model', at_crossover['quadratic_flops'], "==", at_crossover['linear_flops'])
ratios = {n: attention_cost(n, WIDE)["quadratic_flops"] / attention_cost(n, WIDE)["linear_flops"] for n in (8_000, LONG)}
REFERENCE.check("attention_cost.long_context_ratio", ratios[LONG], rtol=1e-15)

# The same crossover under other conventions. Llama 3.1 8B: W_q and W_o are d x d, W_k and W_v d x d/4 (8 of 32 heads).
q_heads, kv_heads_llama = REFERENCE.value("attention_cost.q_heads"), REFERENCE.value("attention_cost.kv_heads")


def grouped_projection_flops(n):
    """FLOPs of Llama 3.1 8B's four projections over n tokens: W_q and W_o are d x d, W_k and W_v d x d·H_kv/H."""
    n = _counts(n=n)
    return 2 * n * WIDE * (2 * WIDE + 2 * WIDE * kv_heads_llama // q_heads)


def ffn_flops(n):
    """FLOPs of the feed-forward network over n tokens: d -> 4d -> d, two d x 4d matrices."""
    n = _counts(n=n)
    return 2 * n * 2 * WIDE * 4 * WIDE


conventions = {
    "crossover_grouped_kv_tokens": lambda n: attention_cost(n, WIDE)["quadratic_flops"] - grouped_projection_flops(n),
    "crossover_with_ffn_tokens": lambda n: attention_cost(n, WIDE)["quadratic_flops"] - attention_cost(n, WIDE)["linear_flops"] - ffn_flops(n),
    "crossover_causal_tokens": lambda n: attention_cost(n, WIDE)["quadratic_flops"] // 2 - attention_cost(n, WIDE)["linear_flops"],
}

for key, difference in conventions.items():
    n_cross = first_crossing(difference)  # the first length at which the n² side catches up
    if difference(n_cross) != 0:
        raise AssertionError(f"{key}: the two sides should meet exactly at a whole token count, got a gap of {difference(n_cross)} at n = {n_cross}")
    REFERENCE.check(f"attention_cost.{key}", n_cross)
    print(f"{key}: {n_cross:,} tokens")
print(f"n² part equals the projections at n = {crossover:,}; n² / linear is {ratios[8_000]:.2f} at 8,000 tokens "
      f"and {ratios[128_000]:.1f} at 128,000")

# Llama 3.1 8B: 32 layers, 8 K/V heads of width 128, 16-bit cache (its config.json on Hugging Face).
per_token = kv_cache_bytes_per_token(
    n_layers=REFERENCE.value("kv_cache.layers"), n_kv_heads=REFERENCE.value("kv_cache.kv_heads"),
    head_dim=REFERENCE.value("kv_cache.head_dim"), bytes_per_value=REFERENCE.value("kv_cache.bytes_per_value"),
)
REFERENCE.check("kv_cache.bytes_per_token", per_token)
conversation_gb = per_token * 32_000 / 1e9
fits = int((80 - 16) // conversation_gb)
all_heads_gb = kv_cache_bytes_per_token(32, 32, 128) * 128_000 / 1e9
gqa_gb = per_token * 128_000 / 1e9
print(f"KV cache: {per_token:,} bytes per token; a 32,000-token conversation holds {conversation_gb:.1f} GB; "
      f"{fits} of them fit next to 16 GB of weights on an 80 GB GPU")
print(f"one 128,000-token request: {all_heads_gb:.0f} GB with 32 K/V heads, {gqa_gb:.1f} GB with 8")

price_per_million = 5.0  # an illustrative price in USD per million input tokens
full_price = 100_000 * price_per_million / 1e6
cached_price = 0.1 * full_price  # cache reads billed at 0.1x the input price
write_price = 1.25 * full_price  # a write to the 5-minute cache: 1.25x (the 1-hour cache: 2x)
print(f"a 100,000-token prompt at USD {price_per_million:.0f}/M: USD {full_price:.2f} each time, USD {cached_price:.2f} "
      f"as a cache read, USD {write_price:.3f} as a 5-minute cache write")
mistral_reach = 4096 * 32  # Mistral 7B v0.1: 4,096-token window, 32 layers
print(f"Mistral 7B v0.1 reach through 32 windowed layers: {mistral_reach:,} tokens")

# %% tags=["hide-input"]
# @title The numbers of the prose below, checked (open to read)
# The prose below quotes these numbers; stop here if any of them moved.
expect("[attention_cost(n, WIDE)['score_entries'] for n in (1000, 2000)] == [1000000, 4000000]", [attention_cost(n, WIDE)['score_entries'] for n in (1000, 2000)], "==", [1000000, 4000000])
expect("attention_cost(128000, WIDE)['score_entries'] == 16384000000", attention_cost(128000, WIDE)['score_entries'], "==", 16384000000)
expect('crossover == 8192', crossover, "==", 8192)
# By hand, one token of width 1: 1 score, 2·2 = 4 FLOPs of scores and mix, 2·4 = 8 of projections; a 2-byte cache entry pair.
expect("attention_cost(1, 1) by hand", attention_cost(1, 1), "==", {"score_entries": 1, "quadratic_flops": 4, "linear_flops": 8})
expect("kv_cache_bytes_per_token(1, 1, 1, 1) == 2: one key and one value", kv_cache_bytes_per_token(1, 1, 1, 1), "==", 2)
expect("grouped_projection_flops(1): 2 · d · (2d + 2d · 8/32)", grouped_projection_flops(1), "==", 2 * 4096 * (2 * 4096 + 2 * 1024))
expect("ffn_flops(1): 2 · 2 · d · 4d", ffn_flops(1), "==", 2 * 2 * 4096 * 4 * 4096)
expect('(round(ratios[8000], 2), round(ratios[128000], 1)) == (0.98, 15.6)', (round(ratios[8000], 2), round(ratios[128000], 1)), "==", (0.98, 15.6))
expect('per_token == 131072', per_token, "==", 131072)
expect('round(conversation_gb, 1) == 4.2', round(conversation_gb, 1), "==", 4.2)
expect('fits == 15', fits, "==", 15)
expect('(round(all_heads_gb), round(gqa_gb, 1)) == (67, 16.8)', (round(all_heads_gb), round(gqa_gb, 1)), "==", (67, 16.8))
expect('(full_price, round(cached_price, 2), write_price, mistral_reach) == (0.5, 0.05, 0.625, 131072)', (full_price, round(cached_price, 2), write_price, mistral_reach), "==", (0.5, 0.05, 0.625, 131072))

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
expect_raises(ValueError, first_crossing, lambda n: n - 10, upper=9, match="do not meet")
expect_raises(ValueError, first_crossing, lambda n: n - 100_001, match="by n = 100,000")  # the default upper
expect_raises(ValueError, first_crossing, lambda n: n, upper=0, match="upper")
for bad_args in ((1, 0), (0, 1)):
    expect_raises(ValueError, attention_cost, *bad_args)
for bad_args in ((0, 1, 1, 1), (1, 1, 0, 1), (1, 1, 1, 0)):
    expect_raises(ValueError, kv_cache_bytes_per_token, *bad_args)
for flops in (grouped_projection_flops, ffn_flops):
    expect_raises(ValueError, flops, 0, match="n must be at least 1")


# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_cost (open to read)
def plot_cost(lengths, quadratic, linear, d_model, language="en"):
    """Log-log FLOPs of the n² score-and-mix step and the linear projections, with their crossover."""
    require_choice("language", language, LANGUAGES)
    lengths, quadratic, linear = (require_array(name, values, ndim=1) for name, values in
                                  (("lengths", lengths), ("quadratic", quadratic), ("linear", linear)))
    if not lengths.shape == quadratic.shape == linear.shape or len(lengths) > 10_000:
        raise ValueError(f"lengths, quadratic and linear must be one curve of at most 10,000 points, got {lengths.shape}, {quadratic.shape}, {linear.shape}")
    if (lengths <= 0).any() or (quadratic <= 0).any() or (linear <= 0).any():
        raise ValueError("lengths and FLOPs must be positive: both axes are logarithmic")
    d_model = require_int("d_model", d_model, minimum=1)
    apply_plot_style()
    fig, ax = plt.subplots(figsize=(7.4, 3.8))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.13, top=0.91)  # fixed margins: a layout engine would draw everything twice
    ax.plot(lengths, quadratic, "o-", color=Palette.RED, lw=2, ms=3.5, label=localized(language, "scores + mix  ∝ n²·d", "оценки + смешивание  ∝ n²·d"))
    ax.plot(lengths, linear, "s--", color=Palette.BLUE, lw=2, ms=3.5, label=localized(language, "projections  ∝ n·d²", "проекции  ∝ n·d²"))
    log_scale(ax, "both")
    ax.axvline(2 * d_model, color=Palette.MUTED, ls="--", lw=1)
    ax.text(2 * d_model * 1.2, quadratic.min() * 3, localized(language, f"crossover\nn = 2·d = {2 * d_model:,}",
                                                                f"пересечение\nn = 2·d = {2 * d_model:,}"), color=Palette.MUTED)
    ax.set_xlabel(localized(language, "context length n (tokens)", "длина контекста n (токены)"))
    ax.set_ylabel(localized(language, "FLOPs per layer", "FLOP на слой"))
    ax.set_title(localized(language, f"Why long context is expensive (d = {d_model:,})", f"Почему длинный контекст дорог (d = {d_model:,})"))
    ax.legend(loc="upper left")
    return fig


# %%
lengths = np.unique(np.logspace(2, 6, 41).astype(int))
costs = [attention_cost(int(n), WIDE) for n in lengths]
quadratic = np.array([c["quadratic_flops"] for c in costs], dtype=float)
linear = np.array([c["linear_flops"] for c in costs], dtype=float)
cross_at = 2 * WIDE
print(f"crossover at n = 2·d_model = {cross_at:,}; ratio at 128,000 tokens: "
      f"{attention_cost(128_000, WIDE)['quadratic_flops'] / attention_cost(128_000, WIDE)['linear_flops']:.1f}")
expect("below 2·d the projections must dominate", all(q < l for q, l, n in zip(quadratic, linear, lengths) if n < cross_at))
expect("above 2·d the n² term must dominate", all(q > l for q, l, n in zip(quadratic, linear, lengths) if n > cross_at))
doubled = attention_cost(2_000, WIDE)["quadratic_flops"] / attention_cost(1_000, WIDE)["quadratic_flops"]
expect("doubling the context must quadruple the n² term", doubled, "==", 4.0)


show_figure(
    plot_cost(lengths, quadratic, linear, WIDE, language=LANGUAGE),
    "Both axes are logarithmic, so a power law is a straight line and a steeper line grows faster. The projections "
    "(blue squares, dashed) have slope 1, the score-and-mix step (red circles, solid) slope 2. Left of the dashed line at n = 2·d the projections "
    "cost more; right of it the n² term dominates and pulls away, four times the work for every doubling of the context.",
)


# %% [markdown]
# **What the field does about the n² term.** Four families of answers, each the subject of Module 5:
# compute the same exact attention in small on-chip tiles so the $n \times n$ matrix is never stored
# (FlashAttention, Module 5.1); read fewer pairs, through a sliding window or a sparse pattern; shrink
# what each past token costs in memory by sharing K/V heads (GQA, MQA) or compressing them; or replace
# the score matrix with a fixed-size running state, as linear attention and state-space models do
# (Module 5.2).

# %% [markdown]
# ## 10 · The rest of the block: feed-forward, LayerNorm, residuals
#
# **The idea.** Attention moves information *between* tokens. A decoder block adds three things
# around it. A **feed-forward network** (FFN) then processes each token on its own: widen, apply a
# non-linearity, narrow back. **Residual connections** add each sublayer's output to its input, so
# a block only has to learn a *correction* and gradients have a direct path through deep stacks.
# **LayerNorm** rescales each token's features to mean 0 and variance 1 before a sublayer reads
# them, so no token's scale runs away. The original transformer normalised *after* each residual
# sum (post-norm); GPT-2 and most models since normalise each sublayer's *input* (pre-norm), which
# trains more stably in deep stacks ([Xiong et al., 2020](https://arxiv.org/abs/2002.04745)).
# Our block is pre-norm.
#
# $$\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta, \qquad \mu = \frac{1}{d} \sum_{m=1}^{d} x_m, \qquad \sigma^2 = \frac{1}{d} \sum_{m=1}^{d} (x_m - \mu)^2$$
#
# $$h = x + \operatorname{MHA}(\operatorname{LN}_1(x)), \qquad y = h + \operatorname{FFN}(\operatorname{LN}_2(h)), \qquad \operatorname{FFN}(z) = W_2 \operatorname{GELU}(W_1 z + b_1) + b_2$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $x$ | one token's feature vector, of width $d$ | $(1, 2, 3, 4)$ |
# | $\mu$, $\sigma^2$ | mean and **biased** variance of its features (divide by $d$, not $d - 1$) | $2.5$, $1.25$ |
# | $\epsilon$ | a small constant that keeps the division finite for a constant token | $10^{-5}$; $0$ in the example |
# | $\gamma$, $\beta$ | learned per-feature scale and shift, initialised to 1 and 0 | $1$, $0$ |
# | $\odot$ | entrywise product | |
# | $W_1$, $W_2$ | the FFN's widening ($d \to d_{ff}$) and narrowing ($d_{ff} \to d$) matrices | |
# | GELU | a smooth ReLU: $z \, \Phi(z)$, with $\Phi$ the standard normal CDF | |
#
# **By hand.** For $x = (1, 2, 3, 4)$: $\mu = 2.5$; the squared distances are $2.25, 0.25, 0.25,
# 2.25$, so $\sigma^2 = 5 / 4 = 1.25$ (the unbiased estimate would be $5/3 \approx 1.67$, a common
# bug). With $\epsilon = 0$: $(x - \mu) / \sqrt{1.25} = (-1.342, -0.447, 0.447, 1.342)$.

# %% tags=["exercise"]
# Exercise 6: Write LayerNorm over the last axis. Subtract each token's mean, divide by the square root
# of its biased variance plus eps (divide by d, not d - 1), then multiply by weight and add bias when
# they are given. Stay differentiable: no .item(), no NumPy, no in-place edits of x.
# The check requires: mean 0 and biased variance 1 per row; eps inside the square root; weight scales and
# bias shifts; outputs and gradients equal F.layer_norm; a constant token maps to zeros.
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """LayerNorm over the last axis, by hand: (x − mean) / sqrt(biased variance + eps) · weight + bias."""
    x, eps = _layer_norm_args(x, weight, bias, eps)
    # Your code here.
    raise NotImplementedError('Exercise 6: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 6: the contract your function must meet (open it to read the properties)
# builder:begin inline check_layer_norm_contract
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
# builder:end sha256=5e3c4c9a1606cb6a3c89da4fb705c1eea982b49e5f2ccc22203051eed80a231e
check_exercise("Exercise 6", check_layer_norm_contract, layer_norm, globals())

# %%
x_ln = torch.tensor(REFERENCE.value("layer_norm.input"), dtype=torch.float64)
mean_ln = x_ln.mean()
variance_ln = ((x_ln - mean_ln) ** 2).mean()
print(f"x = {x_ln.tolist()}: mean {float(mean_ln)}, biased variance {float(variance_ln)}, "
      f"unbiased {float(x_ln.var(unbiased=True)):.2f}, normalised {[round(v, 3) for v in layer_norm(x_ln, eps=0.0).tolist()]}")
REFERENCE.check("layer_norm.mean", float(mean_ln), atol=1e-15)
REFERENCE.check("layer_norm.variance", float(variance_ln), atol=1e-15)
REFERENCE.check("layer_norm.normalized", layer_norm(x_ln, eps=0.0), atol=1e-12)
REFERENCE.check("layer_norm.normalized", F.layer_norm(x_ln, (4,), eps=0.0), atol=1e-12)
# The default eps is PyTorch's, 1e-5: it shows on a token whose variance (1e-6) is smaller than eps.
narrow = torch.tensor([0.0, 0.002], dtype=torch.float64)
expect("layer_norm's default eps is F.layer_norm's (1e-5)", torch.allclose(layer_norm(narrow), F.layer_norm(narrow, (2,)), atol=1e-12, rtol=0))
# eps = 0 is fine while every token varies; a constant token (the second of three here) would divide 0 by 0.


class FeedForward(nn.Module):
    """The position-wise feed-forward network: d_model -> d_ff -> GELU -> d_model, applied to each token alone."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        d_model, d_ff = _feed_forward_sizes(d_model, d_ff)
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    def forward(self, x):
        """(..., d_model) -> (..., d_model); tokens never mix here."""
        x = _require_hidden(x, self.up.in_features, self.up.weight.dtype)
        return self.down(F.gelu(self.up(x)))


class DecoderBlock(nn.Module):
    """A pre-norm decoder block: x + MHA(LN(x)), then + FFN(LN(·))."""

    def __init__(self, d_model, n_heads, d_ff, n_kv_heads=None, *, use_attention=True):
        super().__init__()
        self.use_attention = require_bool("use_attention", use_attention)  # False: the ablation of section 12
        self.attention = MultiHeadSelfAttention(d_model, n_heads, n_kv_heads, causal=True)  # checks d_model and the heads
        self.ffn = FeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        """(B, T, d_model) -> (B, T, d_model)."""
        x = _require_hidden(x, self.attention.d_model, self.norm1.weight.dtype, ndim=3)
        if self.use_attention:
            x = x + self.attention(self.norm1(x))  # tokens exchange information
        return x + self.ffn(self.norm2(x))         # each token thinks on its own


torch.manual_seed(SEED)
block = DecoderBlock(32, 4, 64)
block_input = torch.randn(2, 5, 32)
block_output = block(block_input)
expect("block_output.shape == block_input.shape", block_output.shape, "==", block_input.shape)

# %% tags=["hide-input"]
# @title The decoder block's wiring, causality and sizes, checked (open to read)
expect("torch.isfinite(block_output).all()", torch.isfinite(block_output).all())
expect("nn.LayerNorm inside the block must equal the hand-written layer_norm", torch.allclose(block.norm1(block_input), layer_norm(block_input, block.norm1.weight, block.norm1.bias), atol=1e-6))
ffn_alone = block.ffn(block_input)
expect("the FFN must treat each token alone", torch.allclose(ffn_alone[:, :3], block.ffn(block_input[:, :3]), atol=1e-6))
attended = block_input + block.attention(block.norm1(block_input))
expect("the block is x + MHA(LN(x)), then + FFN(LN(·))", torch.allclose(block_output, attended + block.ffn(block.norm2(attended)), atol=1e-6))
changed = block_input.clone()
changed[:, -1] += 1.0
expect("a decoder block is causal: changing the last token leaves every earlier output alone", torch.allclose(block(changed)[:, :-1], block_output[:, :-1], atol=1e-6))
expect("and the last token's own output moves", not torch.allclose(block(changed)[:, -1], block_output[:, -1], atol=1e-3))
expect("the FFN takes a single token too", block.ffn(block_input[0, 0]).shape, "==", (32,))
expect("FeedForward(1, 1) has 4 weights and biases", sum(p.numel() for p in FeedForward(1, 1).parameters()), "==", 4)
print(f"decoder block: {tuple(block_input.shape)} -> {tuple(block_output.shape)}, "
      f"{sum(p.numel() for p in block.parameters()):,} parameters")

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
expect_raises(ValueError, layer_norm, torch.tensor([[1.0, 2.0], [3.0, 3.0], [5.0, 7.0]]), eps=0.0, match="constant token")
expect_raises(ValueError, layer_norm, torch.tensor(1.0), match="dimensions")
expect_raises(ValueError, FeedForward, 0, 8, match="d_model")
expect_raises(ValueError, FeedForward, 2**31, 2**31, match=f"of shape (2, {2**31}, {2**31}) would take {2 * 2**62 * 4:,} bytes")


# %% [markdown]
# **How many parameters is that?** Count only the weight matrices (no biases, no norms) of the
# original transformer's layers: attention has four $d \times d$ projections, $4 d^2$; the FFN
# has two $d \times d_{ff}$ matrices, $2 d\, d_{ff}$. An encoder layer has one attention and one FFN;
# a decoder layer has self-attention, cross-attention and an FFN. For the **base** model ($d = 512$,
# $d_{ff} = 2048$, 8 heads of width 64): attention $4 \cdot 512^2 = 1{,}048{,}576$, FFN
# $2 \cdot 512 \cdot 2048 = 2{,}097{,}152$, an encoder layer $3{,}145{,}728$, a decoder layer
# $4{,}194{,}304$, and the FFN holds two thirds of an encoder layer. The cell also counts the **big**
# model ($d = 1024$, $d_{ff} = 4096$, 16 heads), which has four times as many per layer.

# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_decoder_block (open to read)
def plot_decoder_block(language="en"):
    """A diagram of the pre-norm decoder block, bottom to top, with both residual paths."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.92)  # fixed margins: a layout engine would draw everything twice
    ax.set_xlim(0, 7.2)
    ax.set_ylim(0, 9.2)
    ax.axis("off")
    steps = [
        (0.6, localized(language, "x  (B, T, d)", "x  (B, T, d)"), Palette.PAPER),
        (2.0, "LayerNorm", Palette.YELLOW),
        (3.3, localized(language, "multi-head attention\n(tokens mix, causal)", "многоголовое внимание\n(токены смешиваются, каузально)"), Palette.BLUE),
        (4.6, "⊕", "white"),
        (5.8, "LayerNorm", Palette.YELLOW),
        (7.0, localized(language, "feed-forward\n(each token alone)", "FFN\n(каждый токен отдельно)"), Palette.ORANGE),
        (8.4, "⊕  →  y", "white"),
    ]
    def half_height(text):
        """Half the height of a box, in data units: two-line boxes are taller."""
        return 0.5 if "\n" in text else 0.32

    for (y0, text0, _), (y1, text1, _) in zip(steps, steps[1:]):
        ax.annotate("", xy=(3, y1 - half_height(text1)), xytext=(3, y0 + half_height(text0)),
                    arrowprops={"arrowstyle": "-|>", "color": Palette.INK, "lw": 1.4}, zorder=4)  # above the boxes, edge to edge
    for y, text, color in steps:
        ax.text(3, y, text, ha="center", va="center", fontsize=10, **_draw_text_style(color),
                bbox={"boxstyle": "round,pad=0.35", "facecolor": color, "edgecolor": Palette.MUTED, "alpha": 0.9})
    for (source, start, target, lane) in ((0.6, 3.9, 4.6, 5.3), (5.2, 3.0, 8.4, 5.9)):
        ax.plot([start, lane, lane], [source, source, target], color=Palette.GREEN, lw=2)  # out to the side and up
        ax.annotate("", xy=(3.5, target), xytext=(lane, target), arrowprops={"arrowstyle": "-|>", "color": Palette.GREEN, "lw": 2},
                    zorder=4)
    ax.text(6.05, 2.4, localized(language, "residual\npaths", "остаточные\nсвязи"), color=Palette.GREEN, fontsize=10)
    ax.set_title(localized(language, "A pre-norm decoder block", "Блок декодера с pre-norm"))
    return fig


# %%
@dataclass(frozen=True)
class ParameterFloor:
    """Weight counts of the original transformer's sublayers, without biases or norms."""

    mha_weights: int
    ffn_weights: int
    encoder_layer: int
    decoder_layer: int
    ffn_share_encoder: float


def transformer_parameter_floor(d_model, d_ff):
    """Weights of Q/K/V/O (4·d²), of the FFN (2·d·d_ff), and of an encoder and a decoder layer built from them."""
    d_model, d_ff = _counts(d_model=d_model, d_ff=d_ff)
    mha, ffn = 4 * d_model * d_model, 2 * d_model * d_ff
    return ParameterFloor(mha_weights=mha, ffn_weights=ffn, encoder_layer=mha + ffn,
                          decoder_layer=2 * mha + ffn, ffn_share_encoder=ffn / (mha + ffn))


base = transformer_parameter_floor(REFERENCE.value("parameter_floor.d_model"), REFERENCE.value("parameter_floor.d_ff"))
big = transformer_parameter_floor(1024, 4096)
print(f"base: {base}")
print(f"big:  encoder layer {big.encoder_layer:,}, decoder layer {big.decoder_layer:,} ({big.encoder_layer // base.encoder_layer}x base)")
for field in ("mha_weights", "ffn_weights", "encoder_layer", "decoder_layer", "ffn_share_encoder"):
    REFERENCE.check(f"parameter_floor.{field}", getattr(base, field))
expect("big.encoder_layer == 4 * base.encoder_layer", big.encoder_layer, "==", 4 * base.encoder_layer)
expect("transformer_parameter_floor(1, 1) by hand", transformer_parameter_floor(1, 1), "==", ParameterFloor(4, 2, 6, 10, 1 / 3))
expect_raises(ValueError, transformer_parameter_floor, 1, 0, match="d_ff")
# Our own attention module agrees with the 4·d² count.
expect("sum(p.numel() for p in MultiHeadSelfAttention(512, 8).parameters()) == base.mha_weights", sum(p.numel() for p in MultiHeadSelfAttention(512, 8).parameters()), "==", base.mha_weights)


show_figure(
    plot_decoder_block(language=LANGUAGE),
    "Read from bottom to top. The input is normalised, passed through attention (where tokens exchange information) "
    "and added back to itself at the first ⊕; the result is normalised again, passed through the feed-forward network "
    "(each token on its own) and added back at the second ⊕. The green residual paths carry the input around each "
    "sublayer unchanged, so each sublayer only learns a correction.",
)

# %% [markdown]
# **Dropout, and train against eval.** The original transformer also applies **dropout**, which
# zeroes each entry with probability $p$ during training and scales the survivors by $1/(1 - p)$
# so that the average is unchanged. It sits on the output of each sublayer, before that output is
# added to the residual stream, and on the sum of the token and position embeddings, with
# $p = 0.1$ for the base model ([Vaswani et al., 2017](https://arxiv.org/abs/1706.03762), section
# 5.4); many implementations also drop attention weights. In PyTorch, `model.train()` switches it
# on and `model.eval()` off, and forgetting `eval()` at inference makes every answer a little
# random. The blocks here have no dropout: TinyLM sees fresh random sequences at every step, so it
# has nothing to overfit, and its `generate` calls `eval()` anyway.

# %%
torch.manual_seed(SEED)
dropout, ones = nn.Dropout(p=0.1), torch.ones(100_000)
kept = dropout.train()(ones)  # training mode: about 10% zeros, the rest 1 / 0.9
print(f"train: {float((kept == 0).double().mean()):.3f} of the entries zeroed, the others {float(kept.max()):.4f}, "
      f"mean {float(kept.mean()):.3f}; eval: unchanged {torch.equal(dropout.eval()(ones), ones)}")
expect("training-mode dropout zeroes about p and scales the rest by 1/(1 − p), keeping the mean near 1",
       abs(float(kept.mean()) - 1) < 0.01 and math.isclose(float(kept.max()), 1 / 0.9, rel_tol=1e-6))
expect("eval-mode dropout is the identity", torch.equal(dropout.eval()(ones), ones))


# %% [markdown]
# ## 11 · Does the mask hold? A deterministic future-leakage probe
#
# **The idea.** A causal model must give exactly the same outputs at positions $0..p$ whatever
# comes after $p$. The cleanest test changes only the *last* token and compares everything before
# it. To make the result exact rather than statistical, build a probe whose only path between tokens
# is attention, and whose attention is simple enough to solve by hand: fixed embeddings, zero query
# and key projections (so every allowed key gets the same weight) and identity value and output
# projections. The same probe without the mask must leak, or the test proves nothing.
#
# $$y_p = x_p + \frac{1}{p + 1} \sum_{j=0}^{p} x_j \;\; \text{(causal)}, \qquad y_p = x_p + \frac{1}{n} \sum_{j=0}^{n-1} x_j \;\; \text{(no mask)}$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $x_j$ | the fixed embedding of the token at position $j$, of width 8 | row $t$ of the table is $(8t, \dots, 8t + 7) / 10$ |
# | $y_p$ | the probe's output at position $p$: residual plus attention | |
# | $n$ | the sequence length | $5$ |
# | $\frac{1}{p + 1}$ | equal weights over the $p + 1$ allowed keys (all scores are 0) | |
#
# **By hand.** Change the last token from 5 to 9. Its embedding moves by $(9 - 5) \cdot 8 / 10 = 3.2$
# in every coordinate. With the causal mask, positions 0 to 3 never read it: their outputs move by
# exactly 0. Without the mask, every position averages all 5 tokens, so positions 0 to 3 move by
# $3.2 / 5 = 0.64$.

# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_leakage (open to read)
def plot_leakage(shifts, language="en"):
    """Bars of how much each position's output moved when only the last token changed, with and without the mask."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    fig, ax = plt.subplots(figsize=(7.0, 3.2))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.9)  # fixed margins: a layout engine would draw everything twice
    if not isinstance(shifts, dict) or len(shifts) != 2:
        raise TypeError(f"shifts must be a dict of two curves (causal, then no mask), got {type(shifts).__name__}")
    curves = [require_array(f"shifts[{name!r}]", values, ndim=1) for name, values in shifts.items()]
    if curves[0].shape != curves[1].shape or len(curves[0]) > 64:
        raise ValueError(f"the two curves must have one value per position, at most 64, got shapes {curves[0].shape} and {curves[1].shape}")
    positions = np.arange(len(curves[0]))
    for offset, (name, color) in zip((-0.2, 0.2), ((localized(language, "causal", "каузальная"), Palette.BLUE),
                                                   (localized(language, "no mask", "без маски"), Palette.RED))):
        values = curves[0 if offset < 0 else 1]
        ax.bar(positions + offset, values, 0.4, color=color, label=name, hatch="" if offset < 0 else "//", edgecolor="white", lw=0)
        for x, value in zip(positions + offset, values):
            if value == 0:  # a zero bar has no height: say so
                ax.text(x, 0.05, "0", ha="center", va="bottom", fontsize=9, color=color, fontweight="bold")
    ax.axvspan(-0.5, len(positions) - 1.5, color=Palette.PAPER, zorder=0)
    ax.set_xticks(positions)
    ax.set_xlabel(localized(language, "position (the last token was changed)", "позиция (изменён последний токен)"))
    ax.set_ylabel(localized(language, "largest change of the output", "наибольшее изменение выхода"))
    ax.set_title(localized(language, "Changing the future", "Меняем будущее"))
    ax.legend(loc="upper left")
    return fig


# %% tags=["hide-input"]
# @title _require_token_ids: the argument check of the token-id models below (open to read)
def _require_token_ids(token_ids, vocab_size, max_length=None):
    """token_ids as a non-empty (B, T) torch.long tensor of ids in [0, vocab_size), at most max_length long."""
    if not isinstance(token_ids, torch.Tensor) or token_ids.dtype != torch.long:
        raise TypeError(f"token_ids must be a torch.long tensor of shape (B, T), got {getattr(token_ids, 'dtype', type(token_ids).__name__)}")
    require_tensor("token_ids", token_ids, floating=False)  # on the CPU, dense
    if token_ids.ndim != 2 or 0 in token_ids.shape:
        raise ValueError(f"token_ids must have shape (B, T) with B, T >= 1, got {tuple(token_ids.shape)}")
    if max_length is not None and token_ids.shape[1] > max_length:
        raise ValueError(f"sequence of length {token_ids.shape[1]} exceeds max_length={max_length}; crop the context")
    if int(token_ids.min()) < 0 or int(token_ids.max()) >= vocab_size:
        raise ValueError(f"token ids must lie in [0, {vocab_size - 1}], got {int(token_ids.min())}..{int(token_ids.max())}")
    return token_ids


# %%
class CausalityProbe(nn.Module):
    """Fixed embeddings plus value-only attention: the one path between tokens is attention itself."""

    def __init__(self, *, causal, vocab_size=11, width=8):
        super().__init__()
        vocab_size, width = _probe_sizes(vocab_size, width)
        self.attention = MultiHeadSelfAttention(width, 2, causal=causal)
        self.embedding = nn.Embedding(vocab_size, width)
        with torch.no_grad():
            self.embedding.weight.copy_(torch.arange(vocab_size * width, dtype=torch.float32).view(vocab_size, width) / 10)
            self.attention.q_proj.weight.zero_()   # all scores 0: equal weights on every allowed key
            self.attention.k_proj.weight.zero_()
            self.attention.v_proj.weight.copy_(torch.eye(width))
            self.attention.out_proj.weight.copy_(torch.eye(width))

    def forward(self, token_ids):
        """(B, T) token ids -> (B, T, width) hidden states."""
        hidden = self.embedding(_require_token_ids(token_ids, self.embedding.num_embeddings))
        return hidden + self.attention(hidden)


n_probe = REFERENCE.value("leakage_probe.tokens")
original_ids = torch.tensor([list(range(1, n_probe)) + [REFERENCE.value("leakage_probe.changed_from")]])  # 1 2 3 4 5
changed_ids = torch.tensor([list(range(1, n_probe)) + [REFERENCE.value("leakage_probe.changed_to")]])     # 1 2 3 4 9
probe_shift = {}
with torch.no_grad():
    for name, causal in (("causal", True), ("no mask", False)):
        probe = CausalityProbe(causal=causal).eval()  # token ids 0 to 10, width 8
        probe_shift[name] = (probe(changed_ids) - probe(original_ids)).abs().amax(-1)[0]  # (5,) per position
for name, shift in probe_shift.items():
    print(f"{name:>8}: largest change per position {[round(v, 4) for v in shift.tolist()]}")
expect("the causal mask leaks: earlier positions saw the last token", float(probe_shift["causal"][:4].max()), "<=", 1e-7)
expect("without a mask the probe must leak, or it tests nothing", float(probe_shift["no mask"][:4].min()), ">", 0.1)
with torch.no_grad():
    first = CausalityProbe(causal=True, vocab_size=11, width=8)
    expect("the probe adds attention to the embedding: position 0 reads only itself, so its output is twice its embedding",
           torch.allclose(first(original_ids)[0, 0], 2 * first.embedding.weight[int(original_ids[0, 0])], atol=1e-6))

# %% tags=["hide-input"]
# @title CausalityProbe's defaults, its smallest size and the exact shift (checked; open to read)
expect("the default probe reads token ids 0 to 10", CausalityProbe(causal=False)(torch.tensor([[10, 0]])).shape, "==", (1, 2, 8))
expect("the smallest probe (one token id, width 2) is valid", CausalityProbe(causal=True, vocab_size=1, width=2)(torch.zeros(1, 3, dtype=torch.long)).shape, "==", (1, 3, 2))
expect_raises(ValueError, CausalityProbe, causal=True, vocab_size=2**40, width=8, match=f"would take {2 * 2**40 * 8 * 4:,} bytes")
for shift in probe_shift["no mask"][:4].tolist():
    REFERENCE.check("leakage_probe.unmasked_shift", shift, atol=1e-5)  # float32 probe against the exact 0.64

# %%
show_figure(
    plot_leakage({k: v.numpy() for k, v in probe_shift.items()}, language=LANGUAGE),
    "Each pair of bars is one position; its height is how far that position's output moved when only the last token "
    "changed. In the shaded earlier positions the causal bars (plain blue) are exactly zero, marked 0: nothing there can see the future. "
    "Without the mask (hatched red) every position moves by the same 0.64. At the last position both move, as they should.",
)

# %% [markdown]
# ## 12 · A tiny language model: train it, then let it write
#
# **The idea.** Stack the pieces: token embeddings plus learned position embeddings, one pre-norm
# decoder block, a final LayerNorm, and an output layer that turns each position's vector into one
# **logit** per vocabulary entry. The output layer reuses the embedding matrix (weight tying), so
# a token's embedding also scores how likely it is to come next.
#
# **A task that needs attention.** Each training sequence is a random segment of 6 tokens (from a
# vocabulary of 8) followed by the same segment again: `3 7 0 0 5 2 | 3 7 0 0 5 2`. The first half
# is unpredictable, so the loss counts only the positions whose next token belongs to the repeat.
# There, the next token is the one that stood 6 places earlier, and the only way to fetch it is to
# *look back*: the position-wise feed-forward network sees one token at a time and cannot. To prove
# that attention does the work, the same model is trained a second time with its attention sublayer
# switched off (`use_attention=False`, an *ablation*): it should stay at chance.
#
# **What this task does not need.** Every segment here is 6 tokens long and starts at position 0,
# so the token to write after position $p$ always sits at position $p - 5$. One layer with learned
# absolute positions can learn exactly that *positional copy*: "read the key 5 places back", whatever
# the tokens are. Copying by *content*, "find the earlier occurrence of my token and read what came
# after it" ($[A][B] \dots [A] \to [B]$), is what an **induction head** does
# ([Olsson et al., 2022](https://arxiv.org/abs/2209.11895)), and it needs two layers: a head in the
# first layer copies each token's predecessor into its position (a *previous-token head*), and a head
# in the second layer matches the current token against those copied predecessors. A one-layer model
# has no earlier head whose output it could match against
# ([Elhage et al., 2021](https://transformer-circuits.pub/2021/framework/index.html)). The cell below
# shows the difference: shift the repeat by one place and our model's copy collapses to chance,
# where an induction head would still copy.
#
# The training signal is the **next-token negative log-likelihood** (NLL): how surprised the model
# is by the token that really came next, averaged over the scored positions, the 6 of each sequence
# whose next token belongs to the repeat. It is what `F.cross_entropy` computes from logits.
#
# $$\text{NLL} = -\log p_\theta(x_{t+1} \mid x_{\le t}) = -\log \frac{e^{z_{y}}}{\sum_{v=1}^{V} e^{z_v}}$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $x_{\le t}$ | the tokens up to position $t$, all the model may read | |
# | $z$ | the logits the model outputs at position $t$, one per vocabulary entry | $(1.2, 0.3, -0.4, 2.0)$ |
# | $y$ | the id of the token that really comes next | $3$ |
# | $V$ | the vocabulary size | $4$ in the example, $8$ for the model |
# | $p_\theta$ | the model's probabilities, the softmax of the logits | |
#
# **By hand.** For the logits $(1.2, 0.3, -0.4, 2.0)$ the softmax is $(0.2608, 0.1060, 0.0527,
# 0.5805)$. The true next token is 3, so the NLL is $-\ln 0.5805 = 0.5439$ **nats** (a loss measured
# with the natural logarithm is in nats; 1 nat is $1 / \ln 2 \approx 1.44$ bits). A model that knows
# nothing spreads its bets evenly over 8 tokens and pays $\ln 8 \approx 2.08$ nats per token: that is
# where training starts, and where a model that cannot look back must stay. A model that copies
# the segment should end near 0.

# %%
nll_logits = torch.tensor(REFERENCE.value("next_token_nll.logits"), dtype=torch.float64)
nll_target = REFERENCE.value("next_token_nll.target")
nll_probabilities = softmax(nll_logits)
nll = float(-torch.log(nll_probabilities[nll_target]))
print(f"probabilities {[round(p, 4) for p in nll_probabilities.tolist()]}, NLL of token {nll_target}: {nll:.4f} nats "
      f"= {nll / math.log(2):.3f} bits; uniform over 8 tokens: {math.log(8):.2f} nats")
if round(math.log(8), 2) != 2.08 or round(1 / math.log(2), 2) != 1.44:
    raise AssertionError(f"the prose quotes ln 8 = 2.08 and 1/ln 2 = 1.44, got {math.log(8):.4f} and {1 / math.log(2):.4f}")
REFERENCE.check("next_token_nll.probabilities", nll_probabilities, atol=1e-12)
REFERENCE.check("next_token_nll.nll", nll, atol=1e-12)
expect("F.cross_entropy is the same NLL, computed from logits", math.isclose(nll, float(F.cross_entropy(nll_logits[None], torch.tensor([nll_target]))), abs_tol=1e-12))

# %%
MAX_NEW_TOKENS = 512  # generate runs one full forward pass per token (no KV cache): a few seconds at most


class TinyLM(nn.Module):
    """A one-block causal language model with learned positions and tied input/output embeddings."""

    def __init__(self, *, vocab_size=6, d_model=24, n_heads=4, d_ff=48, max_length=32, use_attention=True, use_positions=True):
        super().__init__()
        self.use_positions, self.vocab_size, d_model, self.max_length = _tiny_lm_sizes(use_positions, vocab_size, d_model, max_length)
        self.token_embedding = nn.Embedding(self.vocab_size, d_model)
        self.position_embedding = nn.Embedding(self.max_length, d_model)
        self.block = DecoderBlock(d_model, n_heads, d_ff, use_attention=use_attention)
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, self.vocab_size, bias=False)
        self.head.weight = self.token_embedding.weight  # tied: one matrix embeds tokens and scores them
        for embedding in (self.token_embedding, self.position_embedding):
            nn.init.normal_(embedding.weight, std=0.02)  # small logits at the start: loss near ln(vocab_size)

    def forward(self, token_ids):
        """(B, T) token ids -> (B, T, vocab_size) logits for the token after each position."""
        hidden = self._embed(_require_token_ids(token_ids, self.vocab_size, self.max_length))  # (B, T, d)
        return self.head(self.final_norm(self.block(hidden)))                                  # (B, T, V)

    def _embed(self, token_ids):
        """(B, T) token ids -> (B, T, d): token embeddings plus, unless switched off, position embeddings."""
        hidden = self.token_embedding(token_ids)
        return hidden + self.position_embedding(torch.arange(token_ids.shape[1])) if self.use_positions else hidden

    def attention_weights(self, token_ids):
        """(B, T) token ids -> (B, H, T, T): where each head of the block looks, for the heatmap."""
        token_ids = _require_token_ids(token_ids, self.vocab_size, self.max_length)
        with torch.no_grad():
            return self.block.attention(self.block.norm1(self._embed(token_ids)), return_weights=True)[1]

    def generate(self, token_ids, new_tokens):
        """Append ``new_tokens`` greedy tokens, cropping the context to max_length (no KV cache)."""
        token_ids = _require_token_ids(token_ids, self.vocab_size)  # any length: the loop crops it
        new_tokens = require_int("new_tokens", new_tokens, minimum=0, maximum=MAX_NEW_TOKENS)  # one forward pass each
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                for _ in range(new_tokens):
                    logits = self(token_ids[:, -self.max_length:])[:, -1]               # (B, V) at the last position
                    token_ids = torch.cat((token_ids, logits.argmax(-1, keepdim=True)), dim=1)
        finally:
            self.train(was_training)
        return token_ids


# %% tags=["hide-input"]
# @title TinyLM's defaults, its smallest size, and the wiring of its forward pass (checked; open to read)
default_lm = TinyLM()
expect("TinyLM() is 6 token ids, width 24, 4 heads, an FFN of 48, a context of 32, with attention",
       (default_lm.vocab_size, default_lm.token_embedding.embedding_dim, default_lm.block.attention.n_heads, default_lm.block.ffn.up.out_features,
        default_lm.max_length, default_lm.block.use_attention), "==", (6, 24, 4, 48, 32, True))
# The smallest TinyLM (two token ids, width 1, a context of one token) is valid; its head is the token embedding, unbiased.
TINY = {"vocab_size": 2, "d_model": 1, "n_heads": 1, "d_ff": 1, "max_length": 1, "use_attention": True}
torch.manual_seed(SEED)
tiny_lm = TinyLM(**TINY)
expect("TinyLM(**TINY) gives (B, T, V) logits", tiny_lm(torch.zeros(3, 1, dtype=torch.long)).shape, "==", (3, 1, 2))
expect("the output head is the token embedding itself, with no bias", tiny_lm.head.weight is tiny_lm.token_embedding.weight and tiny_lm.head.bias is None)
expect("generating 0 tokens returns the prompt", tiny_lm.generate(torch.tensor([[1]]), 0).tolist(), "==", [[1]])
expect("generate crops the context to max_length, so it can write past it", tiny_lm.generate(torch.tensor([[1]]), 3).shape, "==", (1, 4))
# Both embeddings start small, with standard deviation 0.02, so the first logits are near 0 and the loss near ln V.
wide_lm = TinyLM(vocab_size=256, d_model=64, n_heads=1, d_ff=1, max_length=256, use_attention=True)
expect("the embeddings start with std 0.02", [round(float(e.weight.detach().std()), 3) for e in (wide_lm.token_embedding, wide_lm.position_embedding)], "==", [0.02, 0.02])
ids = torch.tensor([[0, 1, 1, 0]])
expect("the logits are head(LN(block(token embedding + position embedding)))", torch.allclose(
    wide_lm(ids), wide_lm.head(wide_lm.final_norm(wide_lm.block(wide_lm.token_embedding(ids) + wide_lm.position_embedding(torch.arange(4))))), atol=1e-6))
expect("attention_weights are the block's own attention on the embedded tokens", torch.allclose(wide_lm.attention_weights(ids),
       wide_lm.block.attention(wide_lm.block.norm1(wide_lm.token_embedding(ids) + wide_lm.position_embedding(torch.arange(4))), return_weights=True)[1], atol=1e-6))
expect("a sequence of exactly max_length tokens is accepted", tiny_lm(torch.zeros(1, 1, dtype=torch.long)).shape[1], "==", 1)
expect_raises(ValueError, TinyLM, **{**TINY, "vocab_size": 2**40}, match=f"of shape ({2**40 + 1}, 1) would take {(2**40 + 1) * 4:,} bytes")


# %% [markdown]
# **The optimiser.** The recipe trains with AdamW ([Loshchilov and Hutter, 2019](https://arxiv.org/abs/1711.05101)).
# Each weight keeps a running mean of its gradients (momentum) and of their squares (its own scale),
# and steps by their ratio, so wherever $|g|$ is much larger than $\epsilon$ the size of a step is
# set by the learning rate, not by the size of the gradient. At the first step every such weight
# moves by exactly the learning rate. Later the ratio of the running means can grow.
# [Kingma and Ba (2015)](https://arxiv.org/abs/1412.6980), section 2.1, give
# $(1 - \beta_1)/\sqrt{1 - \beta_2} \approx 3.2$ for the default betas as its bound, the case of one
# large gradient after a long run of zeros; it is not a ceiling, because gradients that grow step
# after step push further. The bound that always holds (Cauchy–Schwarz on the two running means,
# bias corrections included) is
#
# $$\frac{\text{step}}{\eta} \le B_t = \frac{1 - \beta_1}{1 - \beta_1^t} \sqrt{\frac{1 - \beta_2^t}{1 - \beta_2} \sum_{k=0}^{t-1} \left(\frac{\beta_1^2}{\beta_2}\right)^k},$$
#
# which is 1 at $t = 1$, 1.54 at $t = 45$ and tends to 7.27 in long runs. In common cases the
# ratio stays near or below 1, and it shrinks where the gradients keep changing sign (the cell
# measures it at every step and checks it against $B_t$). Weight decay, when it is on, shrinks the weights directly ("decoupled" from the
# gradient); the recipe turns it off. It fits in a dozen lines, written out below with the same
# update as `torch.optim.AdamW` (the course's tests compare the two step by step).
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1)\, g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\, g^2, \qquad \theta \leftarrow \theta\, (1 - \eta \lambda) - \eta\, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}$$
#
# | Symbol | Meaning | In the recipe |
# |---|---|---|
# | $g$ | the gradient of the loss with respect to one weight $\theta$ | |
# | $m$, $v$ | running means of $g$ and of $g^2$, both starting at 0 | |
# | $\beta_1$, $\beta_2$ | how slowly those means forget | $0.9$, $0.999$ |
# | $t$ | the step number; dividing by $1 - \beta^t$ undoes the start at 0 | $1, \dots, 45$ |
# | $\eta$ | the learning rate | $0.03$ at step 1, lowered linearly towards 0 |
# | $\lambda$ | the weight decay | $0$ |
# | $\epsilon$ | keeps the division finite | $10^{-8}$ |
#
# **By hand**, the first step: $m = 0.1\, g$ and $v = 0.001\, g^2$, so the corrected means are $g$
# and $g^2$ and the step is $\eta\, g / (|g| + \epsilon)$: every weight with a gradient moves by
# $\eta = 0.03$, up or down. The cell checks exactly that after the first step, and measures the
# ratio (step / $\eta$) at every step.
#
# **The schedule.** With a constant rate of 0.03, this recipe's loss fell close to 0 and then jumped
# back up now and then (the cell prints at which steps): once the fit is nearly exact, a step as large as
# at the start overshoots on an unlucky batch. Lowering the rate linearly to 0 over the 45 steps,
# $\eta_t = 0.03\,(1 - (t - 1)/45)$, removed the jumps, and the cell checks that once the loss falls
# below 0.05 it stays there. What the decay buys here is that stability, not a lower loss: in this
# run the constant rate, between its jumps, ends lower (the figure below shows both).

# %% tags=["hide-input"]
# @title The figure code and checks by hand of the next cell: _adamw_by_hand, _adam_step_bound, plot_ablation, plot_copy_attention (open to read)
def _adam_step_bound(t, beta1=0.9, beta2=0.999):
    """B_t, the largest step / lr of Adam(W) at step t (Cauchy–Schwarz; bias corrections included, eps left out)."""
    ratio = beta1 * beta1 / beta2
    return (1 - beta1) / (1 - beta1 ** t) * math.sqrt((1 - beta2 ** t) / (1 - beta2) * (1 - ratio ** t) / (1 - ratio))


def _adamw_by_hand(theta, gradients, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01):
    """One weight through AdamW (Loshchilov & Hutter; PyTorch's defaults), in plain floats: decay, moments, bias correction."""
    m = v = 0.0
    for t, g in enumerate(gradients, start=1):
        theta *= 1 - lr * weight_decay
        m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
        theta -= lr * (m / (1 - beta1 ** t)) / (math.sqrt(v / (1 - beta2 ** t)) + eps)
    return theta


def plot_ablation(losses, ablated_losses, vocab_size, language="en", *, constant_losses=None):
    """Training loss per step of the full model, of the same model with attention switched off, and (optionally) at a constant lr."""
    require_choice("language", language, LANGUAGES)
    losses, ablated_losses = require_array("losses", losses, ndim=1), require_array("ablated_losses", ablated_losses, ndim=1)
    series = [losses, ablated_losses] + ([] if constant_losses is None else [require_array("constant_losses", constant_losses, ndim=1)])
    if max(map(len, series)) > 100_000 or any((s <= 0).any() for s in series):
        raise ValueError("losses must be positive (the y-axis is logarithmic), at most 100,000 steps each")
    vocab_size = require_int("vocab_size", vocab_size, minimum=2)
    apply_plot_style()
    fig, ax = plt.subplots(figsize=(7.6, 3.4))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.9)  # fixed margins: a layout engine would draw everything twice
    if constant_losses is not None:
        ax.plot(np.arange(len(series[2])), series[2], "o--", color=Palette.GREY, lw=1.2, ms=3,
                label=localized(language, "with attention, constant lr", "с вниманием, постоянный lr"))
    # a marker on every step, and a shape and dash per run (the caption names them): not colour alone
    ax.plot(np.arange(len(losses)), losses, "s--", color=Palette.BLUE, lw=1.8, ms=3.5, label=localized(language, "with attention", "с вниманием"))
    ax.plot(np.arange(len(ablated_losses)), ablated_losses, "x:", color=Palette.RED, lw=1.8, ms=4,
            label=localized(language, "attention switched off", "внимание выключено"))
    ax.axhline(math.log(vocab_size), color=Palette.INK, ls=":", lw=1.4, zorder=5,  # drawn over the red curve it hides
               label=localized(language, f"chance, ln {vocab_size}", f"случайная догадка, ln {vocab_size}"))
    log_scale(ax, "y")
    ax.set_xlabel(localized(language, "optimisation step", "шаг оптимизации"))
    ax.set_ylabel(localized(language, "NLL on the repeat, nats per token", "NLL на повторе, нат на токен"))
    ax.set_title(localized(language, "Copying needs attention", "Копирование требует внимания"))
    ax.legend(loc="lower left")
    return fig


def plot_copy_attention(weights, tokens, language="en"):
    """One heatmap per head of a trained model's attention weights on one sequence: queries down, keys across."""
    require_choice("language", language, LANGUAGES)
    apply_plot_style()
    weights = require_array("weights", weights, ndim=3)  # (H, T, T)
    tokens = list(tokens) if isinstance(tokens, (list, tuple)) else tokens
    if not 1 <= weights.shape[0] <= 8 or weights.shape[1] != weights.shape[2] or weights.shape[1] > 64 or not isinstance(tokens, list) or len(tokens) != weights.shape[1]:
        raise ValueError(f"weights must be (H, T, T) with 1 to 8 heads and at most 64 tokens, and tokens a list of T labels; "
                         f"got weights {weights.shape} and tokens {type(tokens).__name__} of length {len(tokens) if hasattr(tokens, '__len__') else '?'}")
    fig, axes = plt.subplots(1, weights.shape[0], figsize=(min(4.15 * weights.shape[0], 8.3), 4.1), squeeze=False)  # at most 797 px wide
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.14, top=0.88, wspace=0.3)  # fixed margins: a layout engine would draw everything twice
    for head, ax in enumerate(axes[0]):
        ax.imshow(weights[head], cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(len(tokens)), [f"{i}\n({t})" for i, t in enumerate(tokens)], fontsize=9)
        # Rows are labelled once, on the left panel; the others get no ticks at all (each tick costs drawing time).
        ax.set_yticks(range(len(tokens)) if head == 0 else [], [f"{i} ({t})" for i, t in enumerate(tokens)] if head == 0 else [], fontsize=9)
        ax.tick_params(length=0)
        ax.grid(False)
        ax.set_title(localized(language, f"head {head}", f"голова {head}"), fontsize=11)
        ax.set_xlabel(localized(language, "key position (token)", "позиция ключа (токен)"))
    axes[0][0].set_ylabel(localized(language, "query position (token)", "позиция запроса (токен)"))
    return fig


# %%
class AdamW:
    """AdamW written out: running means of g and g², bias-corrected, plus decoupled weight decay."""

    def __init__(self, parameters, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        self.parameters, self.lr, self.betas, self.eps, self.weight_decay = _adamw_args(parameters, lr, betas, eps, weight_decay)
        self.steps = 0
        self.means = [torch.zeros_like(p) for p in self.parameters]    # m
        self.squares = [torch.zeros_like(p) for p in self.parameters]  # v

    def zero_grad(self):
        """Forget the gradients of the last step."""
        for p in self.parameters:
            p.grad = None

    @torch.no_grad()
    def step(self):
        """One AdamW update of every parameter that has a gradient."""
        self.steps += 1
        beta1, beta2 = self.betas
        correction1, correction2 = 1 - beta1 ** self.steps, 1 - beta2 ** self.steps
        for p, m, v in zip(self.parameters, self.means, self.squares):
            if p.grad is None:
                continue
            p.mul_(1 - self.lr * self.weight_decay)                       # decoupled weight decay
            m.lerp_(p.grad, 1 - beta1)                                    # m <- b1 m + (1 - b1) g
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)       # v <- b2 v + (1 - b2) g^2
            denominator = (v.sqrt() / math.sqrt(correction2)).add_(self.eps)
            p.addcdiv_(m, denominator, value=-self.lr / correction1)      # theta <- theta - lr m_hat / (sqrt(v_hat) + eps)


recipe = {key: REFERENCE.value(f"tiny_lm.{key}") for key in
          ("seed", "vocab_size", "segment_length", "batch", "steps", "learning_rate", "d_model", "n_heads", "d_ff", "eval_sequences")}
segment_length = recipe["segment_length"]
task = {"segment_length": segment_length, "vocab_size": recipe["vocab_size"]}


# %% tags=["hide-input"]
# @title The copy task: its batches, and its loss and accuracy over the repeat (open to read)
def copy_task_batch(n_sequences, generator, *, segment_length, vocab_size):
    """Random segments written twice, as (inputs, targets) of shape (n, 2·segment − 1), targets shifted by one."""
    n_sequences = require_int("n_sequences", n_sequences, minimum=1)
    segment_length = require_int("segment_length", segment_length, minimum=1)
    vocab_size = require_int("vocab_size", vocab_size, minimum=2)
    require_budget("the copy-task sequences", (n_sequences, 2 * segment_length), itemsize=8)
    segment = torch.randint(0, vocab_size, (n_sequences, segment_length), generator=generator)  # (n, S)
    sequence = torch.cat((segment, segment), dim=1)                                              # (n, 2S)
    return sequence[:, :-1], sequence[:, 1:]


def copy_loss_and_accuracy(model, inputs, targets, segment_length):
    """Mean NLL (nats) and accuracy of the next token over the repeated half only."""
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    inputs = _require_token_ids(inputs, model.vocab_size, model.max_length)
    targets = _require_token_ids(targets, model.vocab_size)
    if targets.shape != inputs.shape:
        raise ValueError(f"targets must have the shape of inputs {tuple(inputs.shape)}, got {tuple(targets.shape)}")
    segment_length = require_int("segment_length", segment_length, minimum=1, maximum=inputs.shape[1])  # a non-empty repeat
    repeat = slice(segment_length - 1, None)  # the positions whose next token is a repeat: the only ones scored
    logits = model(inputs)[:, repeat]                                          # (n, S, V)
    wanted = targets[:, repeat]                                                # (n, S)
    loss = F.cross_entropy(logits.reshape(-1, model.vocab_size), wanted.reshape(-1))
    return loss, float((logits.argmax(-1) == wanted).float().mean())


# %% tags=["training"]
# Training (about 1 s on a CPU): TinyLM three times on the copy task, 45 AdamW steps each: with attention,
# with attention switched off, and with attention at a constant learning rate.
def train_copy_model(*, use_attention, decay=True, use_positions=True):
    """Train TinyLM on fresh copy-task batches with the recipe; return the model, its loss per step and the step ratios."""
    torch.manual_seed(recipe["seed"])
    model = TinyLM(vocab_size=recipe["vocab_size"], d_model=recipe["d_model"], n_heads=recipe["n_heads"],
                   d_ff=recipe["d_ff"], max_length=2 * segment_length, use_attention=use_attention, use_positions=use_positions)
    optimizer = AdamW(model.parameters(), lr=recipe["learning_rate"], weight_decay=0.0)
    data = torch.Generator().manual_seed(recipe["seed"])  # both runs see the same batches
    losses, step_ratios = [], []  # per step: how far each weight with |g| >> eps moved, in units of that step's lr
    for step in range(recipe["steps"]):
        optimizer.lr = recipe["learning_rate"] * ((1 - step / recipe["steps"]) if decay else 1.0)  # linear decay to 0
        loss, _ = copy_loss_and_accuracy(model, *copy_task_batch(recipe["batch"], data, **task), segment_length)
        optimizer.zero_grad()
        loss.backward()
        measured = [p for p in optimizer.parameters if p.grad is not None]  # the ablated attention has no gradient
        before = [p.detach().clone() for p in measured]
        optimizer.step()
        moved = torch.cat([(p.detach() - b).abs().flatten() for p, b in zip(measured, before)]) / optimizer.lr
        step_ratios.append(moved[torch.cat([p.grad.abs().flatten() > 1e-4 for p in measured])])
        losses.append(loss.item())
    return model, losses, step_ratios


model, losses, step_ratios = train_copy_model(use_attention=True)
ablated, ablated_losses, _ = train_copy_model(use_attention=False)
_, constant_losses, _ = train_copy_model(use_attention=True, decay=False)  # the same recipe without the decay
held_out = copy_task_batch(recipe["eval_sequences"], torch.Generator().manual_seed(recipe["seed"] + 1), **task)  # unseen segments
with torch.no_grad():
    full_loss, full_accuracy = (float(v) for v in copy_loss_and_accuracy(model, *held_out, segment_length))
    ablated_loss, ablated_accuracy = (float(v) for v in copy_loss_and_accuracy(ablated, *held_out, segment_length))
print(f"{recipe['steps']} AdamW steps on fresh batches of {recipe['batch']} sequences, lr {recipe['learning_rate']}; "
      f"scored on {recipe['eval_sequences']} unseen sequences, repeated half only")
print(f"with attention:    loss {losses[0]:.3f} -> {full_loss:.4f} nats/token, accuracy {full_accuracy:.3f}")
print(f"attention ablated: loss {ablated_losses[0]:.3f} -> {ablated_loss:.4f} nats/token, accuracy {ablated_accuracy:.3f} "
      f"(chance: ln {recipe['vocab_size']} = {math.log(recipe['vocab_size']):.3f}, accuracy {1 / recipe['vocab_size']:.3f})")
first_step, last_step, largest_ratio, adam_bound = step_ratios[0], step_ratios[-1], max(float(r.max()) for r in step_ratios), _adam_step_bound(recipe["steps"])
print(f"AdamW step / lr: first step all {float(first_step.min()):.4f}..{float(first_step.max()):.4f}; "
      f"last step median {float(last_step.median()):.4f}; largest over all steps {largest_ratio:.3f} "
      f"(bound at step {recipe['steps']}: B = {adam_bound:.2f})")

# %% tags=["hide-input"]
# @title The training runs' claims: the ablation, the step sizes, the schedule (checked; open to read)
# The ablation check: the full model copies, the same model without attention cannot.
expect("the step ratio is measured at every step", len(step_ratios), "==", recipe["steps"])
# The steps are measured in float32, so a step at its bound can read a few parts in a million above it.
expect("no AdamW step exceeds its bound B_t · lr (to 0.1%, float32 rounding)", all(float(r.max()) <= 1.001 * _adam_step_bound(t) for t, r in enumerate(step_ratios, start=1)))
# The prose's values of B_t, and B_t is reached: gradients growing by β2/β1 a step make step / lr equal B_t (eps aside).
expect("B_t at t = 1, 45 and in long runs, as the prose gives them", [round(_adam_step_bound(t), 2) for t in (1, 45, 10**6)], "==", [1.0, 1.54, 7.27])
growing = [(0.999 / 0.9) ** j for j in range(1, 46)]
reached = _adamw_by_hand(0.0, growing[:44], 1.0, weight_decay=0.0) - _adamw_by_hand(0.0, growing, 1.0, weight_decay=0.0)
expect("gradients growing by β2/β1 a step reach the bound B_45", math.isclose(reached, _adam_step_bound(45), rel_tol=1e-9))
expect("Kingma and Ba's (1 − β1)/√(1 − β2) ≈ 3.16 is passed by long runs of growing gradients", round((1 - 0.9) / math.sqrt(1 - 0.999), 2), "<", round(_adam_step_bound(10**6), 2))
expect("TinyLM's context holds exactly one copy-task sequence", model.max_length, "==", 2 * segment_length)
if abs(losses[0] - math.log(recipe["vocab_size"])) > 0.05:
    raise AssertionError(f"an untrained model should start near ln {recipe['vocab_size']} = {math.log(recipe['vocab_size']):.3f}, got {losses[0]:.3f}")
if not (full_loss < REFERENCE.value("tiny_lm.loss_threshold") and full_accuracy >= REFERENCE.value("tiny_lm.accuracy_threshold")):
    raise AssertionError(f"the full model did not learn to copy: loss {full_loss:.4f} (must be < {REFERENCE.value('tiny_lm.loss_threshold')}), "
                         f"accuracy {full_accuracy:.3f} (must be >= {REFERENCE.value('tiny_lm.accuracy_threshold')})")
if not (ablated_loss > REFERENCE.value("tiny_lm.ablated_loss_floor") and ablated_accuracy < REFERENCE.value("tiny_lm.ablated_accuracy_ceiling")):
    raise AssertionError(f"without attention the task should be impossible, yet loss {ablated_loss:.4f} (floor "
                         f"{REFERENCE.value('tiny_lm.ablated_loss_floor'):.3f}) and accuracy {ablated_accuracy:.3f} (ceiling "
                         f"{REFERENCE.value('tiny_lm.ablated_accuracy_ceiling')}): the task leaks an answer the FFN can read")
loss_gap, accuracy_gap = ablated_loss - full_loss, full_accuracy - ablated_accuracy
print(f"ablation gaps: {loss_gap:.2f} nats per token, {accuracy_gap:.3f} accuracy")
if not (loss_gap > 1.5 and accuracy_gap > 0.7):
    raise AssertionError(f"the ablation gaps are too small to say attention does the work: loss gap {loss_gap:.3f} (need > 1.5), "
                         f"accuracy gap {accuracy_gap:.3f} (need > 0.7)")
expect("the first AdamW step moves every weight with a gradient by exactly lr", torch.allclose(first_step, torch.ones_like(first_step), atol=1e-3))
expect("later steps are smaller than lr: last-step median of step / lr", float(last_step.median()), "<", 0.5)
threshold = REFERENCE.value("tiny_lm.loss_threshold")
first_pass = next(step for step, value in enumerate(losses) if value < threshold)
jumps = [step for step in range(1, recipe["steps"]) if constant_losses[step] > max(threshold, 1.5 * constant_losses[step - 1])]
print(f"with the decay the training loss first drops below {threshold} at step {first_pass} of {recipe['steps']} and stays there; "
      f"at a constant lr it jumps back above {threshold} at steps {jumps}")
expect("with the decay, once the loss is below the threshold it stays there", max(losses[first_pass:]), "<", threshold)
expect("at a constant lr the loss jumps back up (the prose's reason for the decay)", len(jumps), ">", 0)
expect("the decay buys stability, not a lower loss: in this run the constant rate ends lower", constant_losses[-1], "<", losses[-1])

# The score covers the repeat only: positions S − 1 .. 2S − 2, whose next tokens are the copy.
with torch.no_grad():
    repeat_logits = model(held_out[0])[:, segment_length - 1:]
    by_hand_loss = float(F.cross_entropy(repeat_logits.flatten(0, 1), held_out[1][:, segment_length - 1:].flatten()))
    by_hand_accuracy = float((repeat_logits.argmax(-1) == held_out[1][:, segment_length - 1:]).double().mean())
expect("copy_loss_and_accuracy scores positions S − 1 .. 2S − 2", math.isclose(full_loss, by_hand_loss, rel_tol=1e-6) and math.isclose(full_accuracy, by_hand_accuracy, rel_tol=1e-6))
with torch.no_grad():
    whole = copy_loss_and_accuracy(model, *held_out, 2 * segment_length - 1)[1]  # the largest segment: the last position only
expect("segment_length may be the whole input", 0.0 <= whole <= 1.0)

# %%
# Let it write: give it one unseen segment and let it continue greedily.
prompt = held_out[0][:1, :segment_length]                                 # (1, S) the first half of an unseen sequence
generated = model.generate(prompt, segment_length)[0]                    # (2S,)
continuation_accuracy = float((generated[segment_length:] == prompt[0]).float().mean())
print(f"prompt {prompt[0].tolist()} -> continuation {generated[segment_length:].tolist()} (accuracy {continuation_accuracy:.3f})")
if continuation_accuracy != 1.0:
    raise AssertionError(f"the model did not copy the unseen segment: {prompt[0].tolist()} -> {generated[segment_length:].tolist()}")


show_figure(
    plot_ablation(losses, ablated_losses, recipe["vocab_size"], language=LANGUAGE, constant_losses=constant_losses),
    f"Training loss on the scored positions, per step, on a log scale. Every run starts at the dotted line, ln "
    f"{recipe['vocab_size']}, the price of guessing. The full model (blue, dashed with squares) falls by orders of magnitude: it has learnt to "
    f"look back {segment_length - 1} places. The same model with its attention switched off (red, dotted with crosses) sees one token at "
    f"a time and stays on the dotted line: on unseen sequences it scores {ablated_loss:.2f} nats and {ablated_accuracy:.0%} "
    f"accuracy against {full_loss:.3f} nats and {full_accuracy:.1%} with attention. The thin grey dashed run with circles keeps the learning "
    f"rate constant and jumps back up at steps {', '.join(map(str, jumps))}, yet ends {losses[-1] / constant_losses[-1]:.0f} times lower than the blue run, which lowers the rate to 0 and does not jump: in this run the decay buys stability, not a lower loss.",
)
copy_weights = model.attention_weights(generated[None, :-1])[0]   # (H, T, T) on the prompt and its copy
look_back = copy_weights[:, segment_length - 1:].amax(0).argmax(-1)       # the key each repeat query reads most, over heads
expected_keys = torch.arange(segment_length - 1, 2 * segment_length - 1) - (segment_length - 1)
print(f"repeat queries at positions {list(range(segment_length - 1, 2 * segment_length - 1))} read keys {look_back.tolist()} most")
expect(f"query p reads key p − {segment_length - 1}, by position", look_back.tolist(), "==", expected_keys.tolist())
expect("the caption's prompt holds a token twice, so reading by content would pick another key", len(set(prompt[0].tolist())), "<", segment_length)
# A positional copy, not an induction head: put one token in front of a 5-token segment written twice, and the
# token to write sits 5 places back. Content matching would still find it; a head that reads p − 5 cannot.
shifted = copy_task_batch(recipe["eval_sequences"], torch.Generator().manual_seed(recipe["seed"] + 2),
                          segment_length=segment_length - 1, vocab_size=recipe["vocab_size"])
shifted = tuple(torch.cat((torch.zeros(len(s), 1, dtype=torch.long), s), dim=1) for s in shifted)  # token 0 in front
with torch.no_grad():
    shifted_accuracy = copy_loss_and_accuracy(model, *shifted, segment_length)[1]
print(f"the same model on a repeat shifted by one place: accuracy {shifted_accuracy:.3f} (chance {1 / recipe['vocab_size']:.3f})")
expect("shifted by one place, the positional copy falls to chance", shifted_accuracy, "<", REFERENCE.value("tiny_lm.ablated_accuracy_ceiling"))
show_figure(
    plot_copy_attention(copy_weights.numpy(), generated[:-1].tolist(), language=LANGUAGE),
    f"Where the trained model looks, on an unseen segment and the copy it wrote. Rows are queries, columns keys, each "
    f"labelled with its position and, in brackets, its token; dark cells carry the weight, and the upper triangle is empty because of the "
    f"causal mask. From position {segment_length - 1} on, the dark diagonal sits {segment_length - 1} columns left of the main one: the "
    f"query at position p reads the key at p − {segment_length - 1}, which in this task always holds the next token to write. It "
    f"finds that key by position, not by content: a query whose token occurs twice in the segment still reads p − "
    f"{segment_length - 1}, and shifting the repeat by one place drops the copy to {shifted_accuracy:.0%}. The first "
    f"{segment_length - 1} rows are never scored, so training does not shape where they look.",
)

# %% [markdown]
# **Predict, then run (2).** The model above finds the key to copy by its position. Train the same
# model once more, with the same data and recipe, but without its position embeddings: only the
# token embeddings enter the block. Its loss on the repeat ends (a) near 0, as with positions;
# (b) near chance, $\ln 8 \approx 2.08$; (c) about half-way, near 1. Write your letter in the next
# cell and run it, then run the cell after it (it trains in a fraction of a second).

# %%
PREDICTION_NO_POSITIONS = None  # your answer: "a", "b" or "c"

# %% tags=["training"]
no_positions, _, _ = train_copy_model(use_attention=True, use_positions=False)  # training: a fraction of a second
with torch.no_grad():
    no_position_loss, no_position_accuracy = (float(v) for v in copy_loss_and_accuracy(no_positions, *held_out, segment_length))
answer_no_positions = "a" if no_position_loss < 0.5 else "b" if no_position_loss > 1.5 else "c"
judge_prediction("Predict, then run (2)", PREDICTION_NO_POSITIONS, answer_no_positions,
                 f"without positions the loss ends at {no_position_loss:.2f} nats and the accuracy at {no_position_accuracy:.0%} "
                 f"(with positions {full_loss:.3f} and {full_accuracy:.0%}): every key looks the same to a query except for its "
                 f"token, so 'the key 5 places back' cannot be found, and the causal mask alone gives only a weak hint of order.")
expect("the measurement behind the answer: without positions the copy stays near chance", answer_no_positions, "==", "b")

# %% tags=["hide-input"]
# @title AdamW against the update written out by hand; copy_task_batch on its smallest input (checked; open to read)
# Three steps with the defaults (betas 0.9, 0.999, eps 1e-8, weight decay 0.01) and a large lr so that the decay shows,
# against the formulas by hand: one weight gets gradients near eps, where eps shows, and one none at all (decay only).
ours_w = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
ours_opt = AdamW([ours_w], lr=0.5)
steps_g = ([0.3, -1.0, 1e-8, 0.0], [0.1, 2.0, -3e-8, 0.0], [-0.4, 0.5, 1e-8, 0.0])
for g in steps_g:
    ours_opt.zero_grad()
    ours_w.grad = torch.tensor(g, dtype=torch.float64)
    ours_opt.step()
by_hand_w = [_adamw_by_hand(theta, [g[i] for g in steps_g], lr=0.5) for i, theta in enumerate([1.0, -2.0, 0.5, 3.0])]
expect("AdamW matches the update written out by hand over three steps", torch.allclose(ours_w.detach(), torch.tensor(by_hand_w, dtype=torch.float64), atol=1e-12, rtol=0))
# By hand: a weight with zero gradient only decays, theta <- theta (1 - lr·wd) per step: 3 · 0.995³.
expect("weight decay shrinks a weight towards 0: 3 · (1 − 0.5 · 0.01)³", math.isclose(float(ours_w.detach()[3]), 3 * (1 - 0.5 * 0.01) ** 3, rel_tol=1e-15))
expect("zero_grad forgets the gradients", (ours_opt.zero_grad(), ours_w.grad)[1] is None)
expect("betas of 0 and a tiny lr are valid", AdamW([ours_w], lr=1e-12, betas=(0.0, 0.0), weight_decay=0.0).betas, "==", (0.0, 0.0))
expect("non-finite weights are the model's business, not the optimizer's", len(AdamW([torch.full((2,), float("nan"), requires_grad=True)], lr=0.1).parameters), "==", 1)

# The smallest batch: one sequence of a one-token segment over two ids. Every id in [0, vocab_size) is drawn.
tiny_inputs, tiny_targets = copy_task_batch(1, torch.Generator().manual_seed(0), segment_length=1, vocab_size=2)
expect("copy_task_batch(1, ..., segment_length=1): one input and one target, the same token", (tiny_inputs.shape, torch.equal(tiny_inputs, tiny_targets)), "==", ((1, 1), True))
batch_inputs, batch_targets = copy_task_batch(64, torch.Generator().manual_seed(0), segment_length=3, vocab_size=5)
sequences = torch.cat((batch_inputs, batch_targets[:, -1:]), dim=1)  # (64, 6): the whole written-twice sequence
expect("copy_task_batch writes each segment twice, targets the inputs shifted by one",
       (sequences.shape, torch.equal(sequences[:, :3], sequences[:, 3:]), torch.equal(batch_inputs[:, 1:], batch_targets[:, :-1])), "==", ((64, 6), True, True))
expect("copy_task_batch draws every id from 0 to vocab_size - 1", sorted(sequences.unique().tolist()), "==", [0, 1, 2, 3, 4])

# %% tags=["hide-input"]
# @title Bad inputs the functions above refuse, each with a message that names the problem (checked; open to read)
for bad in ({"betas": (-0.1, 0.999)}, {"eps": 0.0}, {"betas": (0.9, 0.999, 0.5)}):
    expect_raises(ValueError, AdamW, [ours_w], lr=0.1, **bad)
for bad in ({"segment_length": 0, "vocab_size": 2}, {"segment_length": 1, "vocab_size": 1}):
    expect_raises(ValueError, copy_task_batch, 1, torch.Generator(), **bad)
expect_raises(ValueError, copy_task_batch, 2**40, torch.Generator(), segment_length=4, vocab_size=2, match=f"would take {2**40 * 8 * 8:,} bytes")
expect_raises(ValueError, copy_loss_and_accuracy, model, *held_out, 2 * segment_length, match="segment_length")
expect_raises(ValueError, copy_loss_and_accuracy, model, *held_out, 0, match="segment_length")
expect_raises(ValueError, copy_loss_and_accuracy, model, held_out[0], held_out[1][:, 1:], segment_length, match="targets")


# %% [markdown]
# ## 13 · From logits to tokens: temperature, top-k, top-p and greedy decoding
#
# **The idea.** The model hands over one logit per vocabulary entry; a **decoding policy** decides
# which token comes next. *Greedy* decoding takes the most likely one, which is what TinyLM just
# did. *Sampling* draws at random from a distribution shaped by three knobs. The **temperature**
# $T$ divides the logits before the softmax: below 1 it sharpens the distribution, above 1 it
# flattens it. **Top-k** keeps only the $k$ most likely tokens. **Top-p** (nucleus sampling) keeps
# the smallest set of most likely tokens whose probability reaches $p$, *including* the token that
# crosses the threshold. After filtering, the survivors are renormalised to sum to 1. This notebook
# applies them in that order: temperature, then top-k, then top-p measured on what top-k kept.
# Generation stops when the model emits the end-of-sequence token (EOS), which is kept in the
# output, or when the length limit is reached.
#
# $$p_i(T) = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}, \qquad \text{top-}p\text{ keeps } \{\pi_1, \dots, \pi_m\}, \quad m = \min\left\{ m : \sum_{r=1}^{m} p_{\pi_r} \ge p \right\}$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $z_i$ | the logit of token $i$ | $(3, 2, 1, 0)$ |
# | $T$ | the temperature, $T > 0$ | $1$ or $2$ |
# | $\pi_1, \pi_2, \dots$ | token ids sorted from most to least likely (ties: lower id first) | $0, 1, 2, 3$ |
# | $k$ | how many tokens top-k keeps | $2$ |
# | $p$ | the probability mass top-p must reach | $0.9$ |
# | $m$ | how many tokens top-p keeps | $3$ |
#
# **By hand**, for the logits $(3, 2, 1, 0)$:
#
# - $T = 1$: $(0.644, 0.237, 0.087, 0.032)$. $T = 2$ halves the gaps: $(0.455, 0.276, 0.167, 0.102)$.
# - top-k with $k = 2$ keeps tokens 0 and 1 and renormalises $0.644$ and $0.237$ by their sum $0.881$:
#   $(0.731, 0.269, 0, 0)$.
# - top-p with $p = 0.9$: the running mass is $0.644$, then $0.881$ (still short of $0.9$), then
#   $0.968$. Token 2 crosses the threshold, so it stays: $m = 3$, giving $(0.665, 0.245, 0.090, 0)$.

# %% tags=["exercise"]
# Exercise 7: Turn one logit vector into next-token probabilities. Divide the logits by the temperature;
# rank the tokens by logit, largest first, ties to the lower id; keep the top_k best (all if None); of
# those, keep the shortest prefix whose renormalised mass reaches top_p, including the token that
# crosses it (all if None); return a list with the renormalised probability of each kept token and 0.0
# for every other. Subtract the largest logit before exp() and add with math.fsum.
# The check requires: one finite probability per token summing to 1; the temperature divides the logits;
# top_k and top_p keep the right tokens (the crossing one stays, ties to the lower id); filters apply in
# that order; large logits do not overflow.
def token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    """Next-token probabilities of one logit vector after temperature, then top-k, then top-p."""
    logits, temperature, top_k, top_p = _sampling_args(logits, temperature, top_k, top_p)
    # Your code here.
    raise NotImplementedError('Exercise 7: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 7: the contract your function must meet (open it to read the properties)
# builder:begin inline check_token_distribution_contract
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
# builder:end sha256=306d60b0b7671b35dee64527db542d4a8d0f7580d7656ae59db47b73805bee8a
check_exercise("Exercise 7", check_token_distribution_contract, token_distribution, globals())


# %% tags=["hide-input"]
# @title The figure code of the next cell: plot_policies (open to read)
def plot_policies(policies, logits, language="en"):
    """Grouped bars: the probability of each token under each decoding policy."""
    require_choice("language", language, LANGUAGES)
    if not isinstance(policies, dict) or not 1 <= len(policies) <= 4:
        raise TypeError(f"policies must be a dict of 1 to 4 named distributions, got {type(policies).__name__}")
    logits = require_array("logits", logits, ndim=1)
    rows = [require_array(f"policies[{name!r}]", probabilities, ndim=1) for name, probabilities in policies.items()]
    if any(row.shape != logits.shape for row in rows) or len(logits) > 32:
        raise ValueError(f"each distribution must have one probability per logit (at most 32), got {[row.shape for row in rows]} for {logits.shape}")
    apply_plot_style()
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.16, top=0.91)  # fixed margins: a layout engine would draw everything twice
    tokens = np.arange(len(logits))
    colors = (Palette.BLUE, Palette.ORANGE, Palette.GREEN, Palette.PURPLE)
    hatches = ("", "//", "..", "xx")  # a pattern per policy, so no pair of bars differs by colour alone
    width = 0.2
    for index, ((name, probabilities), color, hatch) in enumerate(zip(policies.items(), colors, hatches)):
        ax.bar(tokens + (index - 1.5) * width, probabilities, width, label=name, color=color, hatch=hatch, edgecolor="white", lw=0)
        for x, p in zip(tokens + (index - 1.5) * width, probabilities):
            if p > 0:
                ax.text(x, p + 0.01, f"{p:.2f}", ha="center", fontsize=9, rotation=90)
    ax.set_xticks(tokens, [f"{localized(language, 'token', 'токен')} {i}\n(z = {z:g})" for i, z in zip(tokens, logits)])
    ax.set_ylim(0, 0.85)
    ax.set_ylabel(localized(language, "probability after renormalising", "вероятность после нормировки"))
    ax.set_title(localized(language, "One logit vector, four distributions", "Одни логиты, четыре распределения"))
    ax.legend(ncol=2, loc="upper right")
    return fig


# %%
SAMPLING_LOGITS = REFERENCE.value("sampling.logits")  # (3, 2, 1, 0)
policies = {
    "T = 1": token_distribution(SAMPLING_LOGITS),
    "T = 2": token_distribution(SAMPLING_LOGITS, temperature=2.0),
    "T = 1, top-k = 2": token_distribution(SAMPLING_LOGITS, top_k=2),
    "T = 1, top-p = 0.9": token_distribution(SAMPLING_LOGITS, top_p=0.9),
}
for name, probabilities in policies.items():
    print(f"{name:>18}: {[round(p, 3) for p in probabilities]}")
running_mass = list(itertools.accumulate(policies["T = 1"]))
print(f"running mass of the T = 1 distribution, most likely first: {[round(m, 3) for m in running_mass]}")
expect("the top-p worked example above quotes these", [round(m, 3) for m in running_mass[:3]], "==", [0.644, 0.881, 0.968])
z = torch.tensor(SAMPLING_LOGITS, dtype=torch.float64)
expect('torch.allclose(torch.tensor(policies["T = 1"], dtype=torch.float64), torch.softmax(z, 0), atol=1e-15)', torch.allclose(torch.tensor(policies["T = 1"], dtype=torch.float64), torch.softmax(z, 0), atol=1e-15))
expect('torch.allclose(torch.tensor(policies["T = 2"], dtype=torch.float64), torch.softmax(z / 2, 0), atol=1e-15)', torch.allclose(torch.tensor(policies["T = 2"], dtype=torch.float64), torch.softmax(z / 2, 0), atol=1e-15))
for name, count in (("T = 1, top-k = 2", 2), ("T = 1, top-p = 0.9", 3)):
    truncated = torch.zeros(4, dtype=torch.float64)
    truncated[:count] = torch.softmax(z[:count], 0)
    expect(name, torch.allclose(torch.tensor(policies[name], dtype=torch.float64), truncated, atol=1e-15))
expect('[round(p, 3) for p in policies["T = 1, top-p = 0.9"]] == [0.665, 0.245, 0.09, 0.0]', [round(p, 3) for p in policies["T = 1, top-p = 0.9"]], "==", [0.665, 0.245, 0.09, 0.0])
for key, name in (("temperature_1", "T = 1"), ("temperature_2", "T = 2"), ("top_k_2", "T = 1, top-k = 2"),
                  ("top_p_09", "T = 1, top-p = 0.9")):
    REFERENCE.check(f"sampling.{key}", policies[name], atol=1e-15)
REFERENCE.check("sampling.top_p_09_kept", sum(p > 0 for p in policies["T = 1, top-p = 0.9"]))

# %% tags=["hide-input"]
# @title token_distribution on ties and at its boundaries (checked; open to read)
expect("token_distribution([0.0, 0.0, 0.0, 0.0], top_p=0.5) == [0.5, 0.5, 0.0, 0.0]", token_distribution([0.0, 0.0, 0.0, 0.0], top_p=0.5), "==", [0.5, 0.5, 0.0, 0.0])
expect("token_distribution([0.0, 0.0], top_k=1) == [1.0, 0.0]", token_distribution([0.0, 0.0], top_k=1), "==", [1.0, 0.0])
# Boundaries: a single logit is a distribution; top_p = 1 keeps everything; top_k = 0 keeps nothing and is refused.
expect("token_distribution([2.0]) == [1.0]", token_distribution([2.0]), "==", [1.0])
expect("top_p = 1 keeps every token, even when the running sum rounds to just below 1", token_distribution([0.0] * 10, top_p=1.0), "==", [0.1] * 10)
expect_raises(ValueError, token_distribution, [1.0, 2.0], top_k=0, match="top_k")

# %%
# Sampling from the top-p distribution: the observed frequencies approach the probabilities.
nucleus = policies["T = 1, top-p = 0.9"]
draws = random.Random(7).choices(range(4), weights=nucleus, k=20_000)
frequencies = [draws.count(i) / len(draws) for i in range(4)]
gap = max(abs(f - p) for f, p in zip(frequencies, nucleus))
print(f"20,000 draws from top-p = 0.9: frequencies {[round(f, 3) for f in frequencies]}, largest gap {gap:.4f}")
expect("sampling must follow the distribution and never pick a filtered token", gap, "<", 0.015)
expect("sampling must follow the distribution and never pick a filtered token", frequencies[3], "==", 0.0)


show_figure(
    plot_policies(policies, SAMPLING_LOGITS, language=LANGUAGE),
    "Each group of bars is one token, each colour and pattern one decoding policy (T = 1 plain blue). Temperature 2 (orange, //) moves probability from "
    "token 0 to the others but removes nothing. Top-k = 2 (green, dotted) and top-p = 0.9 (purple, crossed) set some tokens to exactly "
    "zero and give their probability to the survivors; top-p keeps token 2 because it is the one that crosses 0.9.",
)


# %% tags=["exercise"]
# Exercise 8: Decode greedily from prepared logits. For each score vector in turn, append the most
# likely token (ties to the lower id); stop right after EOS with reason 'eos' (EOS stays in the output),
# or once max_new_tokens tokens are out with reason 'length_limit' (EOS wins when both happen at once).
# Return (tokens, reason). If the score vectors run out first, raise ValueError.
# The check requires: EOS stops the trace and is kept; the length limit stops it; EOS wins on the last
# allowed step; a trace that runs out of logits raises ValueError.
def greedy_trace(prepared_logits, eos_id, max_new_tokens):
    """Greedy decoding over a prepared list of logit vectors: (tokens, 'eos' or 'length_limit')."""
    steps, eos_id, max_new_tokens = _greedy_args(prepared_logits, eos_id, max_new_tokens)
    # Your code here.
    raise NotImplementedError('Exercise 8: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 8: the contract your function must meet (open it to read the properties)
# builder:begin inline check_greedy_trace_contract
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
# builder:end sha256=b2a637fafc4f3b900ec7ed6befeeb2bc7c2760d88d324a4f300230510cbbf13b
check_exercise("Exercise 8", check_greedy_trace_contract, greedy_trace, globals())

# %%
eos_trace = greedy_trace([[3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 3.0]], eos_id=3, max_new_tokens=3)
limit_trace = greedy_trace([[3.0, 2.0, 1.0, 0.0]] * 3, eos_id=3, max_new_tokens=3)
print(f"EOS at step 2: {eos_trace}; no EOS within 3 tokens: {limit_trace}")
expect('eos_trace == ([0, 3], "eos")', eos_trace, "==", ([0, 3], "eos"))
expect('limit_trace == ([0, 0, 0], "length_limit")', limit_trace, "==", ([0, 0, 0], "length_limit"))
# Boundaries: EOS may be token 0, one new token is a limit, and an EOS id equal to the vocabulary size is refused.
expect("greedy_trace([[1.0, 0.0]], eos_id=0, max_new_tokens=1)", greedy_trace([[1.0, 0.0]], eos_id=0, max_new_tokens=1), "==", ([0], "eos"))
expect("greedy_trace([[0.0, 1.0]], eos_id=0, max_new_tokens=1)", greedy_trace([[0.0, 1.0]], eos_id=0, max_new_tokens=1), "==", ([1], "length_limit"))
expect_raises(ValueError, greedy_trace, [[1.0, 2.0]], 2, 1, match="eos_id")
# TinyLM's greedy continuation is the same rule applied to its own logits, one step at a time. Call the
# last token of its copy "EOS": the trace must stop at its first appearance in the copy.
with torch.no_grad():
    steps = [model(generated[None, : segment_length + i])[0, -1].tolist() for i in range(segment_length)]
stop_token = int(generated[-1])
model_trace = greedy_trace(steps, eos_id=stop_token, max_new_tokens=segment_length)
expected_trace = generated[segment_length:].tolist()
expected_trace = expected_trace[: expected_trace.index(stop_token) + 1]
print(f"TinyLM's logits through greedy_trace with token {stop_token} as EOS: {model_trace}")
if model_trace != (expected_trace, "eos"):
    raise AssertionError(f"greedy_trace must agree with TinyLM.generate up to the first {stop_token}: "
                         f"got {model_trace}, expected {(expected_trace, 'eos')}")

# %% [markdown]
# ## 14 · Bad inputs fail loudly
#
# **The idea.** A function that quietly returns NaN, broadcasts a wrongly shaped mask or reads the
# wrong token id on bad input hides a bug until it is expensive. Every public function of this
# notebook checks its arguments and raises a `TypeError` (wrong kind of value) or `ValueError`
# (right kind, wrong value) whose message names the argument and what is allowed; a size that would
# need more than 1 GiB is refused before anything is allocated. The cell below shows three such
# refusals. The hidden cell after it runs every public function on inputs it must refuse;
# `expect_raises` fails the cell if a function accepts one, raises the wrong error, or says something
# that does not mention the problem.

# %%
long_q = torch.zeros(20_000, 2)  # 20,000 tokens: the (T, T) scores, exponentials and weights would take 4.8 GB
for label, _bad_call in (("softmax of a list", lambda: softmax([1.0, 2.0])),
                         ("attention over 20,000 tokens", lambda: scaled_dot_product_attention(long_q, long_q, long_q)),
                         ("2**62 new tokens", lambda: model.generate(prompt, 2**62))):
    print(f"{label}:\n  {_refusal(_bad_call)}")

# %% tags=["hide-input"]
# @title Every public function on inputs it must refuse (checked; open to read)
torch.manual_seed(SEED)
small_mha = MultiHeadSelfAttention(8, 2)
NEGATIVE_TESTS = [
    # (error, function, positional arguments, keyword arguments, a phrase the message must contain)
    (TypeError, softmax, ([1.0, 2.0],), {}, "torch.Tensor"),
    (ValueError, softmax, (torch.tensor([1.0, float("nan")]),), {}, "finite"),
    (ValueError, softmax, (torch.zeros(2, 3),), {"dim": 2}, "dim"),
    (ValueError, attention_cost, (0, 64), {}, "n_tokens"),
    (TypeError, attention_cost, (1000.0, 64), {}, "integer"),
    (ValueError, kv_cache_bytes_per_token, (32, 0, 128), {}, "n_kv_heads"),
    (ValueError, sinusoidal_encoding, (5, 7), {}, "even"),
    (ValueError, sinusoidal_encoding, (0, 4), {}, "length"),
    (ValueError, sinusoidal_encoding, (5, 4), {"base": 1.0}, "base"),
    (TypeError, sinusoidal_encoding, (5, 4), {"dtype": torch.int64}, "dtype"),
    (TypeError, sinusoidal_encoding, (True, 4), {}, "integer"),
    (ValueError, causal_allowed, (1, 5), {"query_offset": -1}, "query_offset"),
    (ValueError, causal_allowed, (2, 5), {"query_offset": 4}, "t_k"),
    (TypeError, causal_allowed, (2.0, 5), {}, "integer"),
    (ValueError, scaled_dot_product_attention, (torch.zeros(3, 3), q3, q3), {}, "d_k"),
    (ValueError, scaled_dot_product_attention, (q3, q3, torch.zeros(4, 2)), {}, "T_k"),
    (TypeError, scaled_dot_product_attention, (q3, q3, q3, torch.ones(3, 3)), {}, "bool"),
    (ValueError, scaled_dot_product_attention, (q3, q3, q3, torch.ones(2, 3, dtype=torch.bool)), {}, "broadcast"),
    (ValueError, scaled_dot_product_attention, (torch.zeros(2, 3, 2), q3, torch.zeros(3, 3, 2)), {}, "broadcast"),
    (ValueError, scaled_dot_product_attention, (q3, q3, q3), {"empty_row": "nan"}, "empty_row"),
    (ValueError, scaled_dot_product_attention, (torch.full((3, 2), float("inf")), q3, q3), {}, "finite"),
    (TypeError, scaled_dot_product_attention, (torch.zeros(3, 2, dtype=torch.long), q3, q3), {}, "floating"),
    (ValueError, scaled_dot_product_attention, (long_q, long_q, long_q), {}, f"over the budget of {ALLOCATION_BUDGET_BYTES:,} bytes"),
    (ValueError, split_heads, (torch.zeros(2, 3, 10), 4), {}, "evenly"),
    (ValueError, split_heads, (torch.zeros(2, 3, 8), 0), {}, "n_heads"),
    (ValueError, merge_heads, (torch.zeros(3, 4),), {}, "dimensions"),
    (ValueError, repeat_kv_heads, (torch.zeros(1, 2, 3, 4), 0), {}, "group"),
    (ValueError, plot_split_merge, (), {"n_heads": 9}, "n_heads"),
    (ValueError, MultiHeadSelfAttention, (30, 8), {}, "evenly"),
    (ValueError, MultiHeadSelfAttention, (64, 8, 3), {}, "multiple"),
    (TypeError, MultiHeadSelfAttention, (64, 8), {"causal": "yes"}, "causal"),
    (ValueError, small_mha, (torch.zeros(1, 3, 6),), {}, "shape (B, T, 8)"),
    (ValueError, small_mha, (torch.zeros(3, 8),), {}, "dimensions"),
    (ValueError, small_mha, (torch.zeros(1, 3, 8),), {"token_valid": torch.ones(1, 4, dtype=torch.bool)}, "token_valid"),
    (ValueError, small_mha, (torch.zeros(1, 3, 8),), {"token_valid": torch.ones(1, 3)}, "bool"),
    (TypeError, small_mha, (torch.zeros(1, 3, 8, dtype=torch.float64),), {}, "dtype"),
    (ValueError, layer_norm, (torch.zeros(2, 4),), {"weight": torch.ones(3)}, "weight"),
    (ValueError, layer_norm, (torch.zeros(2, 4),), {"eps": -1.0}, "eps"),
    (TypeError, layer_norm, (torch.zeros(2, 4, dtype=torch.long),), {}, "floating"),
    (ValueError, FeedForward, (8, 0), {}, "d_ff"),
    (ValueError, FeedForward(8, 16), (torch.zeros(2, 3, 4),), {}, "shape (..., 8)"),
    (ValueError, FeedForward(8, 16), (torch.tensor(1.0),), {}, "dimensions"),
    (ValueError, DecoderBlock, (10, 4, 16), {}, "evenly"),
    (ValueError, DecoderBlock(8, 2, 16), (torch.zeros(2, 3, 4),), {}, "shape"),
    (ValueError, transformer_parameter_floor, (0, 2048), {}, "d_model"),
    (TypeError, softmax_jacobian, ([0.5, 0.5],), {}, "torch.Tensor"),
    (TypeError, jacobian_norm, ((0.5, 0.5),), {}, "torch.Tensor"),
    (ValueError, saturation_experiment, ((4, 8),), {"n_keys": 1, "trials": 4}, "n_keys"),
    (ValueError, saturation_experiment, ((0, 8),), {"n_keys": 2, "trials": 4}, "width"),
    (ValueError, query_gradient_experiment, ((8,),), {"n_keys": 1, "trials": 4}, "n_keys"),
    (ValueError, query_gradient_experiment, ((8,),), {"trials": 10**6}, "trials must be at most 100000"),
    (ValueError, saturation_experiment, ((8,),), {"trials": 10**6}, "trials must be at most 100000"),
    (ValueError, CausalityProbe, (), {"causal": True, "width": 1}, "width"),
    (ValueError, CausalityProbe, (), {"causal": True, "vocab_size": 0, "width": 2}, "vocab_size"),
    (ValueError, CausalityProbe(causal=True), (torch.tensor([[11]]),), {}, "token ids"),
    (ValueError, CausalityProbe(causal=True), (torch.tensor([[0, -1]]),), {}, "token ids"),
    (ValueError, TinyLM, (), {**TINY, "vocab_size": 1}, "vocab_size"),
    (ValueError, TinyLM, (), {**TINY, "d_model": 0}, "d_model"),
    (ValueError, TinyLM, (), {**TINY, "max_length": 0}, "max_length"),
    (TypeError, TinyLM, (), {**TINY, "use_attention": 1}, "use_attention"),
    (TypeError, TinyLM, (), {**TINY, "use_positions": "no"}, "use_positions"),
    (ValueError, judge_prediction, ("Predict", "d", "a", "why"), {}, "prediction"),
    (ValueError, copy_task_batch, (0, torch.Generator()), task, "n_sequences"),
    (ValueError, AdamW, ([torch.zeros(2, requires_grad=True)],), {"lr": 0.0}, "lr"),
    (ValueError, AdamW, ([torch.zeros(2, requires_grad=True)],), {"lr": 0.1, "betas": (0.9, 1.0)}, "beta"),
    (ValueError, AdamW, ([torch.zeros(2, requires_grad=True)],), {"lr": 0.1, "weight_decay": -0.1}, "weight_decay"),
    (ValueError, AdamW, ([torch.zeros(2, requires_grad=True)],), {"lr": 0.1, "betas": (0.9,)}, "pair"),
    (TypeError, AdamW, ([1.0],), {"lr": 0.1}, "parameters[0]"),
    (TypeError, model, (torch.zeros(1, 3),), {}, "torch.long"),
    (ValueError, model, (torch.tensor([[0, 99]]),), {}, "token ids"),
    (ValueError, model, (torch.zeros(1, 40, dtype=torch.long),), {}, "max_length"),
    (ValueError, model, (torch.zeros(1, 0, dtype=torch.long),), {}, "shape"),
    (ValueError, model.generate, (prompt, -1), {}, "new_tokens"),
    (ValueError, model.generate, (prompt, 2**62), {}, f"at most {MAX_NEW_TOKENS}"),
    (ValueError, model.generate, (prompt[0], 1), {}, "shape"),
    (ValueError, token_distribution, ([],), {}, "non-empty"),
    (ValueError, token_distribution, ("abc",), {}, "non-empty"),
    (ValueError, token_distribution, ([1.0, float("nan")],), {}, "finite"),
    (ValueError, token_distribution, ([1.0, 2.0],), {"temperature": 0.0}, "temperature"),
    (ValueError, token_distribution, ([1.0, 2.0],), {"top_k": 3}, "top_k"),
    (ValueError, token_distribution, ([1.0, 2.0],), {"top_p": 0.0}, "top_p"),
    (ValueError, token_distribution, ([1.0, 2.0],), {"top_p": 1.5}, "top_p"),
    (TypeError, token_distribution, ([1.0, True],), {}, "real number"),
    (ValueError, greedy_trace, ([[1.0, 2.0]], 0, 0), {}, "max_new_tokens"),
    (ValueError, greedy_trace, ([[1.0, 2.0]], 5, 1), {}, "eos_id"),
    (ValueError, greedy_trace, ([[1.0, 2.0]], -1, 1), {}, "eos_id"),
]
PLOTS = [(plot_it_weights, (IT_WORDS, [1.0, 1.0, 1.0], [0.3, 0.3, 0.4])), (plot_attention_flow, ()), (plot_positions, (pe.numpy(),)),
         (plot_masks, ([ordinary], ["causal"])), (plot_scores_and_weights, (result.scores, result.weights)),
         (plot_sentence_attention, (sentence_weights, SENTENCE, TEMPERATURES, it)),
         (plot_saturation, (saturation,)), (plot_query_gradients, (query_gradients, WIDTHS)), (plot_head_sharing, ()), (plot_split_merge, ()),
         (plot_cost, (lengths, quadratic, linear, WIDE)), (plot_decoder_block, ()), (plot_leakage, (probe_shift,)),
         (plot_ablation, (losses, ablated_losses, 8)), (plot_copy_attention, (copy_weights, generated[:-1].tolist())), (plot_policies, (policies, SAMPLING_LOGITS))]
NEGATIVE_TESTS += [(ValueError, plot, args, {"language": "de"}, "language") for plot, args in PLOTS]
for error, function, args, kwargs, phrase in NEGATIVE_TESTS:
    expect_raises(error, function, *args, match=phrase, **kwargs)
tested = {getattr(function, "__qualname__", type(function).__name__).split(".")[0] for _, function, *_ in NEGATIVE_TESTS}
print(f"{len(NEGATIVE_TESTS)} bad inputs refused, with a message that names the problem, across {len(tested)} public functions and classes")


# %% [markdown]
# ## 15 · The capstone: a modern GPT from your own parts
#
# **The idea.** TinyLM (section 12) is built like GPT-2: learned positions added to the tokens,
# LayerNorm, and a GELU feed-forward network. LLaMA ([Touvron et al., 2023](https://arxiv.org/abs/2302.13971),
# section 2.2) and most open models since keep the pre-norm decoder block and change three parts:
# **rotary position embeddings** (RoPE) in place of added positions, **RMSNorm** in place of
# LayerNorm, and a gated **SwiGLU** feed-forward network in place of GELU; Llama 2's largest models
# and all of Llama 3 also share K/V heads (GQA, section 8). In this section you write each part, assemble them with your own mask
# (Exercise 2), attention (Exercise 3) and head moves (Exercise 4) into a model, train it until a
# two-layer circuit called an **induction head** appears, and decode it through your own KV cache.
# At the end, `transformers`' own `LlamaForCausalLM` loads your weights and must give your logits.
#
# **RoPE** ([Su et al., 2021](https://arxiv.org/abs/2104.09864)). Section 3 showed that moving a
# position by $k$ turns every (sine, cosine) pair by a fixed angle. RoPE applies that rotation to
# the queries and keys themselves instead of adding a table to the tokens: the pair
# $(x_{2i}, x_{2i+1})$ of a query or key at position $p$ turns by the angle $p\,\theta_i$.
#
# $$\begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} = \begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix} \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}, \qquad \theta_i = \text{base}^{-2i/d}$$
#
# | Symbol | Meaning | In the example |
# |---|---|---|
# | $x$ | one head's query or key, of width $d$ (the head width) | $(1, 0, 0, 1)$ |
# | $p$ | the token's absolute position | $1$ |
# | $\theta_i$ | the angle per position of pair $i$, the same frequencies as section 3's table | $1$ and $0.01$ |
# | base | sets the slowest frequency | $10000$ |
#
# Two rotations compose: the query at $m$ and the key at $n$ give the score $q^\top R_{(n - m)\theta}\, k$,
# which depends on the offset $n - m$ and not on where the pair sits. **By hand**, $x = (1, 0, 0, 1)$
# at position 1: the first pair turns by 1 radian to $(\cos 1, \sin 1) = (0.5403, 0.8415)$, the
# second by 0.01 radian to $(-\sin 0.01, \cos 0.01) = (-0.0100, 0.99995)$.

# %% tags=["hide-input"]
# @title The capstone's sizes and the argument checks of Exercises 9-15 (open to read)
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

# builder:begin inline nn
# torch.nn, which the classes below subclass (one line, so an inlined region needs no import of its own)
nn = __import__("torch.nn", fromlist=["Module"])
# builder:end sha256=f30f4cac98e8991e7c9380e5f0f54df3b19cb811b53c3ac027f793925bcd0e08
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


# %% tags=["exercise"]
# Exercise 9: Write RoPE. x has shape (..., T, d) with d even, positions holds the absolute position of
# each of the T tokens. Turn each pair (x[..., 2i], x[..., 2i+1]) of the token at position p by the
# angle p * base**(-2i/d): (a, b) -> (a cos - b sin, a sin + b cos). Work with whole tensors.
# The check requires: the shape and dtype of x; each pair turned by its angle for two bases; position 0
# unchanged; and q . k depending only on the offset between the query's and the key's positions.
def apply_rope(x, positions, base=10_000.0):
    """Turn pair i of the token at position p by the angle p · base^(-2i/d)."""
    x, positions = _rope_inputs(x, positions, base)
    # Your code here.
    raise NotImplementedError('Exercise 9: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 9: the contract your function must meet (open it to read the properties)
# builder:begin inline rope_by_complex
def rope_by_complex(x, positions, base=10_000.0, *, halves=False, sign=1.0, exponent=2.0):
    """RoPE as complex multiplication: pair i of x [..., T, d] times exp(i p base^(-exponent i / d)), in float64.

    ``halves`` pairs coordinate i with i + d/2 (the layout of `transformers`' Llama) instead of 2i with 2i + 1;
    ``sign`` = -1 turns the other way; ``exponent`` = 1 is the per-pair exponent mistake.
    """
    import torch

    x, positions = _rope_inputs(x, positions, base)
    if sign not in (1.0, -1.0) or exponent not in (1.0, 2.0) or not isinstance(halves, bool):
        raise ValueError(f"sign must be 1 or -1, exponent 1 or 2 and halves a bool, got {sign!r}, {exponent!r}, {halves!r}")
    d = x.shape[-1]
    x = x.double()
    pairs = torch.stack((x[..., : d // 2], x[..., d // 2:]), -1) if halves else x.unflatten(-1, (d // 2, 2))  # (..., T, d/2, 2)
    angle = sign * positions.double()[:, None] * base ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)
    turned = torch.view_as_real(torch.view_as_complex(pairs.contiguous()) * torch.polar(torch.ones_like(angle), angle))
    return torch.cat((turned[..., 0], turned[..., 1]), -1) if halves else turned.flatten(-2)
# builder:end sha256=4e8f8f12a7bdf6fd03cd41e709313f47cf1d604b8b56d0e23c7f70ae416cc261
# builder:begin inline check_rope_contract
def check_rope_contract(apply_rope):
    """Judge ``apply_rope(x, positions, base=10000.0)``: pair (2i, 2i+1) of the token at position p turned by p base^(-2i/d).

    Returns the largest error; raises ContractViolation naming the first property that fails and the usual mistake.
    """
    import torch
    raised = "the function raised on a valid input; the traceback above this message shows where"

    gen = torch.Generator().manual_seed(909)
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64, generator=gen)
    positions = torch.tensor([0, 1, 4, 9, 30])
    case = "x of shape (2, 3, 5, 8) float64, positions (0, 1, 4, 9, 30)"

    def judge(prop, x, positions, base, case):
        out = contract_call(prop, case, raised, apply_rope, x, positions, base)
        contract_assert(
            isinstance(out, torch.Tensor) and out.shape == x.shape and out.dtype == x.dtype, prop, case,
            f"a {x.dtype} tensor of shape {tuple(x.shape)}", f"{type(out).__name__} {tuple(getattr(out, 'shape', ()))} {getattr(out, 'dtype', '')}",
            "RoPE turns each pair in place: keep the shape and the dtype of x",
        )
        want = rope_by_complex(x, positions, base)
        if torch.allclose(out, want, atol=1e-10, rtol=0):
            return float((out - want).abs().max())
        hint = "pair i = (x[..., 2i], x[..., 2i+1]) turns by positions[t] * base**(-2i/d): (a cos - b sin, a sin + b cos)"
        for variant, why in (
            (dict(halves=True), "you paired coordinate i with i + d/2 (the halves layout of transformers' Llama); this course "
                                "rotates neighbours (2i, 2i+1), as the RoFormer paper does"),
            (dict(sign=-1.0), "the pairs turn the wrong way: (a, b) -> (a cos + b sin, -a sin + b cos) is a rotation by minus the angle"),
            (dict(exponent=1.0), "the frequency of pair i is base**(-2i/d): the exponent counts coordinates (2i), not pairs (i)"),
        ):
            if torch.allclose(out, rope_by_complex(x, positions, base, **variant), atol=1e-10, rtol=0):
                hint = why
        if torch.allclose(out, rope_by_complex(x, torch.arange(len(positions)), base), atol=1e-10, rtol=0):
            hint = "the positions argument was ignored (rows were numbered 0, 1, 2, ...): a cached token keeps its absolute position"
        return contract_close(prop, case, out, want, hint, atol=1e-10, rtol=0)

    error = judge("pair (2i, 2i+1) at position p turns by p * base^(-2i/d)", x, positions, 10_000.0, case)
    error = max(error, judge("the base argument sets the rotation frequencies", x, positions, 50.0, case + ", base=50"))
    out = contract_call("position 0 leaves the vector unchanged", "x of shape (1, 8) at position 0", raised, apply_rope, x[0, 0, :1], torch.tensor([0]))
    contract_close("position 0 leaves the vector unchanged", "x of shape (1, 8) at position 0", out, x[0, 0, :1],
                   "an angle of 0 is no rotation: cos 0 = 1 and sin 0 = 0", atol=1e-12, rtol=0)
    q, k = x[0, 0, 0], x[0, 1, 0]
    scores = [float(apply_rope(q[None], torch.tensor([m + 3]))[0] @ apply_rope(k[None], torch.tensor([m]))[0]) for m in (0, 5, 40)]
    contract_assert(
        max(scores) - min(scores) < 1e-9, "q . k depends only on the offset between their positions", "q at m + 3, k at m, m = 0, 5, 40",
        "one score for every m", f"scores {[round(s, 6) for s in scores]}", "rotate queries and keys with the same rule; a rotation keeps only the offset",
    )
    return {"max_error": error, "offset_only": "PASS"}
# builder:end sha256=0cb3bfe22d3e2bb371e706868f484a95dd0077d90789723ae87a2472d80b7469
check_exercise("Exercise 9", check_rope_contract, apply_rope, globals())

# %%
rope_example = apply_rope(torch.tensor([[1.0, 0.0, 0.0, 1.0]] * 2, dtype=torch.float64), torch.tensor([0, 1]))
print(f"(1, 0, 0, 1) at position 1 -> {[round(v, 5) for v in rope_example[1].tolist()]}")
REFERENCE.check("rope.rotated", rope_example[1], atol=1e-12)
q_probe, k_probe = torch.randn(2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))
offset_scores = [float(apply_rope(q_probe[None], torch.tensor([m + 3]))[0] @ apply_rope(k_probe[None], torch.tensor([m]))[0]) for m in (0, 7, 100)]
print(f"query 3 places after its key, at m = 0, 7, 100: scores {[round(s, 10) for s in offset_scores]}")
expect("with RoPE a score depends only on the offset", max(offset_scores) - min(offset_scores), "<", 1e-9)


# %% [markdown]
# **RMSNorm** ([Zhang and Sennrich, 2019](https://arxiv.org/abs/1910.07467)) is LayerNorm without
# the centring: it divides each token by the root of its mean square and multiplies by a learned
# gain $\gamma$, with no mean subtracted and no bias. It saves a reduction per token and, in the
# paper's experiments, trains as well.
#
# $$\operatorname{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\frac{1}{d}\sum_{m=1}^{d} x_m^2 + \epsilon}}$$
#
# **By hand**, $x = (1, 2, 3, 4)$ with $\epsilon = 0$: the mean square is $30 / 4 = 7.5$, its root
# $2.7386$, so $x / 2.7386 = (0.3651, 0.7303, 1.0954, 1.4606)$. LayerNorm gave $(-1.342, -0.447,
# 0.447, 1.342)$ (section 10): RMSNorm keeps the sign and the mean of the token.
#
# **SwiGLU** ([Shazeer, 2020](https://arxiv.org/abs/2002.05202)) replaces $W_2\,\operatorname{GELU}(W_1 z)$
# with a gated product of two projections; $\operatorname{SiLU}(u) = u\,\sigma(u)$ is the gate.
#
# $$\operatorname{SwiGLU}(z) = W_{down}\big(\operatorname{SiLU}(W_{gate}\, z) \odot W_{up}\, z\big)$$
#
# It has three matrices instead of two, so at the same parameter count its hidden width is $2/3$ of
# GELU's (Shazeer, section 2): LLaMA uses $\tfrac{2}{3} \cdot 4d$.

# %% tags=["exercise"]
# Exercise 10: Write RMSNorm as a module. __init__ keeps eps and a gain self.weight, an nn.Parameter of
# d_model ones; forward returns x / sqrt(mean(x²) + eps) * weight over the last axis.
# The check requires: a weight of d_model ones; the output equals F.rms_norm with a gain; gradients flow.
class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight over the last axis: LayerNorm without the mean and the bias."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        eps = _rms_norm_args(d_model, eps)
        # Your code here.
        raise NotImplementedError('Exercise 10: see the instructions above')

    def forward(self, x):
        """(..., d) -> (..., d)."""
        x = _rms_norm_input(x, self.weight, self.eps)
        # Your code here.
        raise NotImplementedError('Exercise 10: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 10: the contract your class must meet (open it to read the properties)
# builder:begin inline check_rms_norm_contract
def check_rms_norm_contract(RMSNorm):
    """Judge ``RMSNorm(d_model, eps=1e-5)``: a module with a gain ``weight`` (ones) giving x / sqrt(mean(x^2) + eps) * weight."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    prop, case = "RMSNorm(5) has a gain weight of 5 ones", "RMSNorm(5)"
    norm = contract_call(prop, case, raised, RMSNorm, 5)
    weight = getattr(norm, "weight", None)
    contract_assert(
        isinstance(weight, torch.nn.Parameter) and weight.shape == (5,) and bool((weight == 1).all()), prop, case,
        "an nn.Parameter of shape (5,) filled with 1", f"{type(weight).__name__} {tuple(getattr(weight, 'shape', ()))}",
        "self.weight = nn.Parameter(torch.ones(d_model)): a learned gain that starts as the identity",
    )
    gen = torch.Generator().manual_seed(17)
    x = torch.randn(3, 5, dtype=torch.float64, generator=gen) * 3 + torch.tensor([[4.0], [-1.0], [0.5]], dtype=torch.float64)
    gain = torch.tensor([1.0, 2.0, -1.0, 0.5, 3.0], dtype=torch.float64)
    norm = contract_call(prop, "RMSNorm(5, eps=0.5)", raised, RMSNorm, 5, 0.5).double()
    with torch.no_grad():
        norm.weight.copy_(gain)
    case = "x (3, 5) float64 with row means 4, -1, 0.5, eps=0.5, weight (1, 2, -1, 0.5, 3)"
    out = contract_call("output is x / sqrt(mean(x^2) + eps) * weight", case, raised, norm, x)
    want = F.rms_norm(x, (5,), gain, eps=0.5)
    hint = "divide each token by the root of its mean square plus eps over the last axis, then multiply by weight"
    if isinstance(out, torch.Tensor) and out.shape == x.shape:
        centred = x - x.mean(-1, keepdim=True)
        mistakes = (
            (F.rms_norm(centred, (5,), gain, eps=0.5), "the mean was subtracted: that is LayerNorm; RMSNorm keeps the mean and only rescales"),
            (x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 0.5) * gain, "eps goes inside the square root: sqrt(mean(x^2) + eps)"),
            (F.rms_norm(x, (5,), None, eps=0.5), "the gain self.weight was not applied"),
            (x / (x.pow(2).sum(-1, keepdim=True) + 0.5).sqrt() * gain, "mean of the squares, not their sum: divide by d"),
        )
        hint = next((why for value, why in mistakes if torch.allclose(out.detach(), value, atol=1e-9)), hint)
    error = contract_close("output is x / sqrt(mean(x^2) + eps) * weight", case, out, want, hint, atol=1e-9, rtol=1e-9)
    contract_assert(out.requires_grad, "the gain receives gradients", case, "an output that requires grad", "an output cut off from autograd",
                    "no .detach(), .item() or NumPy round trip inside forward")
    return {"max_error": error}
# builder:end sha256=d3f1984503a3495673c631ff468f2a6da6987a5ba68b9fb6368739544fc56a4e
check_exercise("Exercise 10", check_rms_norm_contract, RMSNorm, globals())


# %% tags=["exercise"]
# Exercise 11: Write the SwiGLU feed-forward network. __init__ makes three bias-free nn.Linear layers,
# w_gate and w_up (d_model -> d_ff) and w_down (d_ff -> d_model); forward returns
# w_down(silu(w_gate x) * w_up x) (F.silu).
# The check requires: the three layers with their shapes and no biases; the output of the formula.
class SwiGLU(nn.Module):
    """The gated feed-forward network of LLaMA: w_down(silu(w_gate x) ⊙ w_up x)."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        _capstone_widths("SwiGLU's three weights", (3, d_model, d_ff), d_model=d_model, d_ff=d_ff)
        # Your code here.
        raise NotImplementedError('Exercise 11: see the instructions above')

    def forward(self, x):
        """(..., d_model) -> (..., d_model)."""
        x = _capstone_features(x, self.w_gate.in_features, self.w_gate.weight.dtype, squared=True)
        # Your code here.
        raise NotImplementedError('Exercise 11: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 11: the contract your class must meet (open it to read the properties)
# builder:begin inline check_swiglu_contract
def check_swiglu_contract(SwiGLU):
    """Judge ``SwiGLU(d_model, d_ff)``: bias-free ``w_gate``, ``w_up`` (d -> d_ff) and ``w_down`` (d_ff -> d), w_down(silu(w_gate x) * w_up x)."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    prop, case = "three bias-free projections w_gate, w_up: 6 -> 10 and w_down: 10 -> 6", "SwiGLU(6, 10)"
    torch.manual_seed(5)
    ffn = contract_call(prop, case, raised, SwiGLU, 6, 10)
    layers = [getattr(ffn, name, None) for name in ("w_gate", "w_up", "w_down")]
    shapes = [tuple(layer.weight.shape) if isinstance(layer, torch.nn.Linear) else None for layer in layers]
    contract_assert(
        shapes == [(10, 6), (10, 6), (6, 10)] and all(layer.bias is None for layer in layers), prop, case,
        "weights (10, 6), (10, 6), (6, 10), no biases", f"weights {shapes}, biases {[getattr(l, 'bias', None) is not None for l in layers]}",
        "nn.Linear(d_model, d_ff, bias=False) for w_gate and w_up, nn.Linear(d_ff, d_model, bias=False) for w_down",
    )
    x = torch.randn(2, 3, 6, generator=torch.Generator().manual_seed(8))
    prop = "output is w_down(silu(w_gate x) * w_up x)"
    out = contract_call(prop, "x (2, 3, 6)", raised, ffn, x)
    gate, up = ffn.w_gate(x), ffn.w_up(x)
    hint = "gate = silu(w_gate x) (silu(z) = z sigmoid(z)), multiply by w_up x entry by entry, then w_down"
    if isinstance(out, torch.Tensor) and out.shape == x.shape:
        mistakes = (
            (ffn.w_down(F.silu(up) * gate), "silu went on the w_up branch: the gate is silu(w_gate x), w_up x stays linear"),
            (ffn.w_down(F.gelu(gate) * up), "GELU is GPT-2's activation; SwiGLU gates with SiLU (Swish): z * sigmoid(z)"),
            (ffn.w_down(torch.sigmoid(gate) * up), "sigmoid alone is the GLU gate; SwiGLU uses silu(z) = z * sigmoid(z)"),
            (ffn.w_down(F.silu(gate)), "the w_up branch is missing: the gate multiplies w_up x"),
        )
        hint = next((why for value, why in mistakes if torch.allclose(out.detach(), value.detach(), atol=1e-6)), hint)
    error = contract_close(prop, "x (2, 3, 6)", out, ffn.w_down(F.silu(gate) * up), hint, atol=1e-6, rtol=1e-6)
    return {"max_error": error}
# builder:end sha256=6e58b9a4dbfad9a5897abc938313e6c7c38f590324709c08b0fa62ef3100270d
check_exercise("Exercise 11", check_swiglu_contract, SwiGLU, globals())

# %%
rms_example = RMSNorm(4, eps=0.0).double()(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)).detach()
print(f"RMSNorm(1, 2, 3, 4) = {[round(v, 4) for v in rms_example.tolist()]}")
REFERENCE.check("rms_norm.normalized", rms_example, atol=1e-12)
gelu_weights, swiglu_weights = 2 * 32 * 128, sum(p.numel() for p in SwiGLU(32, 2 * 128 // 3).parameters())
print(f"width 32: GELU FFN of 128 has {gelu_weights:,} weights, SwiGLU of 85 has {swiglu_weights:,}")
expect("a SwiGLU of 2/3 the hidden width costs the same weights (within 1%)", abs(swiglu_weights / gelu_weights - 1), "<", 0.01)


# %% [markdown]
# **The model.** Attention with RoPE takes your pieces in order: project $x$ to queries, keys and
# values; split the heads (`split_heads`); turn queries and keys with `apply_rope` at their absolute
# positions (values are not turned: only the score carries position); let each K/V head serve its
# group of query heads (`repeat_kv_heads`); attend with your causal mask; merge the heads and apply
# $W_o$. A decoder block is pre-norm: $h = x + \operatorname{Attn}(\operatorname{RMSNorm}_1(x))$,
# $y = h + \operatorname{SwiGLU}(\operatorname{RMSNorm}_2(h))$. The model embeds the tokens (no
# position table: RoPE carries the positions), runs the blocks, applies a final RMSNorm and a
# bias-free output layer. The field names follow the course's capstone interface
# (`w_q, w_k, w_v, w_o`, `attn_norm, attn, ffn_norm, ffn`, `embed, blocks, norm, head`), which
# Modules 5.1 and 5.2 reuse.
#
# **A KV cache in the forward pass.** Generation feeds the prompt once and then one token at a time.
# Each layer keeps the keys and values of every token so far, so a new token computes only its
# own; its query then reads all the cached keys. That query sits at absolute position
# $T_k - T_q + r$, the `query_offset` of Exercise 2. `forward(x, positions, cache)` receives one
# layer's cache, whose `append(k, v, start)` stores this call's keys and values at positions
# `start, start + 1, ...` and returns all of them so far.

# %% tags=["exercise"]
# Exercise 12: Write RoPE attention with grouped K/V heads. __init__ makes bias-free w_q (d_model ->
# n_heads * head_dim), w_k and w_v (d_model -> n_kv_heads * head_dim) and w_o (back to d_model).
# qkv(x, positions) returns q (B, n_heads, T, head_dim) and k, v (B, n_kv_heads, T, head_dim), with
# apply_rope on q and k. merge(out) merges the heads and applies w_o. forward(x, positions, cache=None)
# appends k, v to the cache when there is one (cache.append(k, v, int(positions[0])) returns all keys
# and values so far), repeats each K/V head for its group of query heads, masks with causal_allowed
# and the right query_offset, attends with your scaled_dot_product_attention, and merges.
# The check requires: the four projections; q, k and v with RoPE on q and k only; merge; the output
# of causal attention with query head h reading K/V head h // group; and the same output through a cache.
class CapstoneAttention(nn.Module):
    """Causal self-attention with RoPE on queries and keys and n_kv_heads K/V heads shared by groups of query heads."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
        self.n_heads, self.n_kv_heads, self.head_dim, self.rope_base = config.n_heads, config.n_kv_heads, config.head_dim, config.rope_base
        # Your code here.
        raise NotImplementedError('Exercise 12: see the instructions above')

    def qkv(self, x, positions):
        """x (B, T, d) at positions (T,) -> q (B, Hq, T, hd), k and v (B, Hkv, T, hd), RoPE on q and k."""
        x = _capstone_features(x, self.w_q.in_features, self.w_q.weight.dtype, ndim=3)
        # Your code here.
        raise NotImplementedError('Exercise 12: see the instructions above')

    def merge(self, out):
        """out (B, Hq, T, hd) -> (B, T, d): the heads side by side, then w_o."""
        out = _heads_input(out, self.n_heads, self.head_dim, self.w_o.weight.dtype)
        # Your code here.
        raise NotImplementedError('Exercise 12: see the instructions above')

    def forward(self, x, positions, cache=None):
        """x (B, T, d) -> (B, T, d); with a cache this call's keys and values join it and the queries read all of them."""
        cache = _layer_cache(cache)
        # Your code here.
        raise NotImplementedError('Exercise 12: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 12: the contract your class must meet (open it to read the properties)
# builder:begin inline check_capstone_attention_contract
def check_capstone_attention_contract(CapstoneAttention):
    """Judge ``CapstoneAttention(config)``: RoPE attention with grouped K/V heads, its ``qkv``, ``merge`` and a cached ``forward``."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    config = CapstoneConfig(vocab=11, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=8, max_len=12, rope_base=100.0)
    case = "CapstoneAttention(config): d_model 16, 4 query heads, 2 K/V heads, head_dim 4, rope_base 100"
    torch.manual_seed(6)
    prop = "w_q, w_o: 16 -> 16 and w_k, w_v: 16 -> 8, no biases"
    attn = contract_call(prop, case, raised, CapstoneAttention, config)
    layers = [getattr(attn, f"w_{n}", None) for n in "qkvo"]
    shapes = [tuple(layer.weight.shape) if isinstance(layer, torch.nn.Linear) else None for layer in layers]
    contract_assert(
        shapes == [(16, 16), (8, 16), (8, 16), (16, 16)] and all(layer.bias is None for layer in layers), prop, case,
        "weights (16, 16), (8, 16), (8, 16), (16, 16)", f"{shapes}", "K and V have n_kv_heads * head_dim outputs; use bias=False",
    )
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(7))
    positions = torch.arange(7)
    with torch.no_grad():
        heads = [(x @ layer.weight.T).view(2, 7, -1, 4).transpose(1, 2) for layer in layers[:3]]
        q, k = (rope_by_complex(t, positions, 100.0).float() for t in heads[:2])
        v = heads[2]
        prop = "qkv gives q (B, 4, T, 4) and k, v (B, 2, T, 4), RoPE on q and k only"
        got = contract_call(prop, "x (2, 7, 16)" , raised, attn.qkv, x, positions)
        for name, value, want in zip("qkv", got, (q, k, v)):
            hint = ("head h of token t holds features h*head_dim .. (h+1)*head_dim - 1 of the projection (split_heads), "
                    "with apply_rope(q or k, positions, rope_base); v is not rotated")
            if name == "v" and torch.allclose(value, rope_by_complex(v, positions, 100.0).float(), atol=1e-5):
                hint = "v was rotated: RoPE turns queries and keys, whose dot product carries the position; the values stay as they are"
            if name == "k" and torch.allclose(value, heads[1], atol=1e-5):
                hint = "k was not rotated: both q and k turn, so that their dot product depends on the offset"
            contract_close(f"{prop}: {name}", "x (2, 7, 16)", value, want, hint, atol=1e-5, rtol=1e-5)
        out = torch.randn(2, 4, 7, 4)
        contract_close("merge puts the heads side by side, then applies w_o", "out (2, 4, 7, 4)", contract_call(
            "merge puts the heads side by side, then applies w_o", "out (2, 4, 7, 4)", raised, attn.merge, out),
            out.transpose(1, 2).reshape(2, 7, 16) @ layers[3].weight.T, "merge_heads(out), then self.w_o", atol=1e-5, rtol=1e-5)
        want = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), is_causal=True)
        want = want.transpose(1, 2).reshape(2, 7, 16) @ layers[3].weight.T
        prop = "forward is causal RoPE attention, query head h reading K/V head h // 2"
        result = contract_call(prop, "x (2, 7, 16), positions 0..6, no cache", raised, attn, x, positions)
        hint = "q, k, v = self.qkv(...); repeat each K/V head for its group (repeat_kv_heads), mask with causal_allowed, attend, merge"
        tiled = F.scaled_dot_product_attention(q, k.repeat(1, 2, 1, 1), v.repeat(1, 2, 1, 1), is_causal=True)
        if isinstance(result, torch.Tensor) and torch.allclose(result, tiled.transpose(1, 2).reshape(2, 7, 16) @ layers[3].weight.T, atol=1e-5):
            hint = "the K/V heads were tiled (kv0, kv1, kv0, kv1): consecutive query heads share one K/V head, so repeat_interleave"
        error = contract_close(prop, "x (2, 7, 16), positions 0..6, no cache", result, want, hint, atol=1e-5, rtol=1e-5)

        class Recorder:
            """A cache for one layer: keeps every key and value appended, in order."""

            def __init__(self):
                self.keys = self.values = None
                self.length = 0

            def append(self, k, v, start):
                if start != self.length:
                    raise ContractViolation(
                        "cached calls append at their own first position", "x split 4 + 3 tokens, positions 0..3 then 4..6",
                        f"start={self.length}", f"start={start}", "pass int(positions[0]) as the start of the appended keys",
                    )
                self.keys = k if self.keys is None else torch.cat((self.keys, k), 2)
                self.values = v if self.values is None else torch.cat((self.values, v), 2)
                self.length += k.shape[2]
                return self.keys, self.values

        prop, cached = "with a cache, later queries read every cached key at their absolute positions", "x split 4 + 3 tokens, positions 0..3 then 4..6"
        cache = Recorder()
        parts = [contract_call(prop, cached, raised, attn, x[:, s], positions[s], cache) for s in (slice(0, 4), slice(4, 7))]
        hint = "append (k, v) to the cache, attend over all it returns, and mask with causal_allowed(T, T_k, query_offset=T_k - T)"
        if isinstance(parts[1], torch.Tensor) and parts[1].shape == (2, 3, 16):
            q_late = q[:, :, 4:]
            top_left = torch.ones(3, 7, dtype=torch.bool).tril()
            wrong = F.scaled_dot_product_attention(q_late, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=top_left)
            if torch.allclose(parts[1], wrong.transpose(1, 2).reshape(2, 3, 16) @ layers[3].weight.T, atol=1e-5):
                hint = ("the mask of the cached queries is top-left aligned (is_causal=True's rule): query r sits at position "
                        "query_offset + r, so pass query_offset=T_k - T_q to causal_allowed")
        contract_close(prop, cached, torch.cat(parts, 1), want, hint, atol=1e-5, rtol=1e-5)
    return {"max_error": error, "cache": "PASS"}
# builder:end sha256=f6b15799c324ab4f72ba31eb7c2cd6d8c09d0552f54cb99c3a2e787e9d6e98ef
check_exercise("Exercise 12", check_capstone_attention_contract, CapstoneAttention, globals())


# %% tags=["exercise"]
# Exercise 13: Assemble the model. CapstoneBlock holds attn_norm and ffn_norm (your RMSNorm, with
# config.norm_eps), attn (your CapstoneAttention) and ffn (your SwiGLU of width config.d_ff); its forward is
# pre-norm with a residual around each sublayer. CapstoneLM holds embed (nn.Embedding), blocks (an
# nn.ModuleList of config.n_layers blocks), norm and head (bias-free nn.Linear to config.vocab); its
# forward numbers the tokens from the cache's length (0 without a cache), gives block i the cache's
# layer i (cache.layers[i]), and returns head(norm(x)).
# The check requires: exactly these parts by name; the logits of a pre-norm Llama-style model with a
# final norm; and the same logits when the tokens arrive 5, then 1, 1 and 1 at a time through a cache.
class CapstoneBlock(nn.Module):
    """A pre-norm decoder block: x + attn(attn_norm(x)), then x + ffn(ffn_norm(x))."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
        # Your code here.
        raise NotImplementedError('Exercise 13: see the instructions above')

    def forward(self, x, positions, cache=None):
        """(B, T, d) -> (B, T, d)."""
        # Your code here.
        raise NotImplementedError('Exercise 13: see the instructions above')


class CapstoneLM(nn.Module):
    """Token embedding, n_layers pre-norm blocks with RoPE attention, a final RMSNorm and an output head."""

    def __init__(self, config):
        super().__init__()
        self.config = _capstone_config(config)
        # Your code here.
        raise NotImplementedError('Exercise 13: see the instructions above')

    def forward(self, tokens, cache=None):
        """tokens (B, T) -> logits (B, T, vocab); with a KVCache the tokens continue the ones it holds."""
        start = _capstone_tokens(tokens, self.config, cache)
        # Your code here.
        raise NotImplementedError('Exercise 13: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 13: the contract your classes must meet (open it to read the properties)
# builder:begin inline capstone_by_hand
def capstone_by_hand(model, tokens, *, pre_norm=True, final_norm=True):
    """The logits a Llama-style model must give, from its own state dict, with torch.nn.functional (float64)."""
    import torch
    import torch.nn.functional as F

    _capstone_tokens(tokens, _capstone_model(model).config, None)
    c, w = model.config, {name: t.detach().double() for name, t in model.state_dict().items()}
    B, T = tokens.shape
    positions = torch.arange(T)
    x = w["embed.weight"][tokens]                                                   # (B, T, d)

    def norm(h, name):
        return F.rms_norm(h, (c.d_model,), w[name], eps=c.norm_eps)

    for i in range(c.n_layers):
        at = f"blocks.{i}."
        h = norm(x, at + "attn_norm.weight") if pre_norm else x
        heads = [(h @ w[at + f"attn.w_{n}.weight"].T).view(B, T, -1, c.head_dim).transpose(1, 2) for n in "qkv"]
        q, k = (rope_by_complex(t, positions, c.rope_base) for t in heads[:2])      # (B, H, T, hd)
        group = c.n_heads // c.n_kv_heads
        out = F.scaled_dot_product_attention(q, k.repeat_interleave(group, 1), heads[2].repeat_interleave(group, 1), is_causal=True)
        x = x + out.transpose(1, 2).reshape(B, T, -1) @ w[at + "attn.w_o.weight"].T
        x = norm(x, at + "attn_norm.weight") if not pre_norm else x
        h = norm(x, at + "ffn_norm.weight") if pre_norm else x
        ffn = (F.silu(h @ w[at + "ffn.w_gate.weight"].T) * (h @ w[at + "ffn.w_up.weight"].T)) @ w[at + "ffn.w_down.weight"].T
        x = x + ffn if pre_norm else norm(x + ffn, at + "ffn_norm.weight")
    return (norm(x, "norm.weight") if final_norm else x) @ w["head.weight"].T      # (B, T, vocab)
# builder:end sha256=337903d9a484d851167acce6fe926a84d075ca28cfa72d8d4f78314993e2f550
# builder:begin inline check_capstone_model_contract
def check_capstone_model_contract(CapstoneLM):
    """Judge ``CapstoneLM(config)`` (and the ``CapstoneBlock`` it stacks): its parts by name, its logits, causality, the cache."""
    import torch
    raised = "the function raised on a valid input; the traceback above this message shows where"

    config = CapstoneConfig(vocab=11, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=24, max_len=12, rope_base=100.0)
    case = "CapstoneLM(config): vocab 11, d_model 16, 2 layers, 4 query heads, 2 K/V heads, d_ff 24"
    torch.manual_seed(10)
    prop = "the model holds embed, blocks.i.{attn_norm, attn, ffn_norm, ffn}, norm and head"
    model = contract_call(prop, case, raised, CapstoneLM, config)
    names = {name for name in getattr(model, "state_dict", dict)()}
    want_names = {"embed.weight", "norm.weight", "head.weight"} | {
        f"blocks.{i}.{part}.weight" for i in range(2) for part in (
            "attn_norm", "attn.w_q", "attn.w_k", "attn.w_v", "attn.w_o", "ffn_norm", "ffn.w_gate", "ffn.w_up", "ffn.w_down")}
    contract_assert(names == want_names, prop, case, "these weights and no others", f"missing {sorted(want_names - names)[:4]}, "
                    f"extra {sorted(names - want_names)[:4]}", "nn.Embedding, an nn.ModuleList of CapstoneBlock, RMSNorm and a bias-free nn.Linear head")
    with torch.no_grad():  # weights that are not at their initial values, so a skipped norm gain shows
        for name, tensor in model.state_dict().items():
            if name.endswith("norm.weight"):
                tensor.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(len(name)))
    tokens = torch.tensor([[1, 5, 2, 7, 1, 5, 9, 0], [3, 3, 10, 4, 8, 6, 2, 1]])
    prop, tcase = "logits = head(norm(blocks(embed(tokens)))) with pre-norm residual blocks", "tokens (2, 8)"
    with torch.no_grad():
        logits = contract_call(prop, tcase, raised, model, tokens)
        hint = "x = x + attn(attn_norm(x), positions, cache), then x = x + ffn(ffn_norm(x)); after the blocks, norm, then head"
        if isinstance(logits, torch.Tensor) and logits.shape == (2, 8, 11):
            for variant, why in ((dict(pre_norm=False), "post-norm: normalise each sublayer's input, not the residual sum"),
                                 (dict(final_norm=False), "the final norm is missing: head(norm(x))")):
                if torch.allclose(logits.double(), capstone_by_hand(model, tokens, **variant), atol=1e-4):
                    hint = why
        error = contract_close(prop, tcase, logits, capstone_by_hand(model, tokens), hint, atol=1e-4, rtol=1e-4)

        class Recorder:
            """A cache of one layer that keeps what is appended."""

            def __init__(self):
                self.keys = self.values = None
                self.length = 0

            def append(self, k, v, start):
                self.keys = k if self.keys is None else torch.cat((self.keys, k), 2)
                self.values = v if self.values is None else torch.cat((self.values, v), 2)
                self.length += k.shape[2]
                return self.keys, self.values

        class Cache:
            """A whole model's cache: one Recorder per layer."""

            def __init__(self):
                self.layers = [Recorder() for _ in range(2)]

            @property
            def length(self):
                return self.layers[0].length

        prop, ccase = "fed 5 tokens, then 1 at a time through a cache, the logits are those of one full pass", "tokens (2, 8) as 5 + 1 + 1 + 1"
        cache = Cache()
        steps = [contract_call(prop, ccase, raised, model, tokens[:, s], cache) for s in (slice(0, 5), slice(5, 6), slice(6, 7), slice(7, 8))]
        contract_close(prop, ccase, torch.cat(steps, 1), logits, "positions continue from cache.length, and each block gets cache.layers[i]",
                       atol=1e-4, rtol=1e-4)
    return {"max_error": error, "cache": "PASS"}
# builder:end sha256=6982c8594a0d06c593ea30c074ee67c4b999f3253855a62331efc946c4fd32bb
check_exercise("Exercise 13", check_capstone_model_contract, CapstoneLM, globals())


# %% [markdown]
# **A task that needs two layers.** Each sequence is $k$ distinct random tokens (from 16) repeated
# once, with $k$ drawn from 4 to 12 for each row, then random filler: `9 4 13 2 | 9 4 13 2 | 7 0 ...`.
# Only the repeat can be predicted, from its second token on: after `9` comes `4` because `4`
# followed `9` before. Since $k$ changes from row to row, no fixed offset finds it (section 12's
# positional copy fails here). An **induction head** does
# ([Olsson et al., 2022](https://arxiv.org/abs/2209.11895)): in layer 1 a *previous-token head*
# copies each token's predecessor into its position; in layer 2 a head matches the current token
# against those copies, lands on the token right after the earlier occurrence, and copies it.
# One layer has no earlier head to read from, so it should stay far below two
# ([Elhage et al., 2021](https://transformer-circuits.pub/2021/framework/index.html)). The loss is
# the NLL of section 12 over the predictable positions only.

# %% tags=["exercise"]
# Exercise 14: Write the task, the training step, the training loop and the score. induction_batch draws,
# from the generator only, for each row a k from k_min to k_max and k distinct tokens (the first k of a random
# order of the vocabulary), written twice and padded with random tokens to 2 * k_max; it returns inputs
# (all but the last token), targets (all but the first) and scored, True at targets k+1 .. 2k-1 (input
# positions k .. 2k-2). train_step computes the mean cross-entropy over the scored positions only, clears the
# old gradients, backpropagates, takes one optimizer step and returns the loss as a float. fit_induction makes
# one torch.Generator().manual_seed(seed + 1) and one AdamW (weight_decay=0), sets the rate at step t to
# lr * min(1, (t + 1) / warmup) * (1 - t / steps), runs step on a fresh batch each step in training mode, calls
# on_step(t + 1, loss) when given, and returns the losses. induction_accuracy scores argmax == target on the
# scored positions of a fresh batch, without gradients.
# The checks require: distinct tokens repeated, the scored positions, k drawn per row, the generator alone
# deciding; the scored loss and exactly one optimizer step; AdamW without decay, the warm-up and decay, fresh
# and seeded batches; and an accuracy over the scored positions only.
def induction_batch(batch, generator, *, vocab=16, k_min=4, k_max=12):
    """Rows of k distinct random tokens written twice (k drawn per row), padded to 2 k_max: (inputs, targets, scored)."""
    _induction_args(batch, generator, vocab, k_min, k_max)
    # Your code here.
    raise NotImplementedError('Exercise 14: see the instructions above')


def train_step(model, optimizer, inputs, targets, scored):
    """One optimizer step on the mean next-token cross-entropy over the scored positions; return the loss."""
    _train_step_args(model, optimizer, inputs, targets, scored)
    # Your code here.
    raise NotImplementedError('Exercise 14: see the instructions above')


def fit_induction(model, step, steps, seed, *, batch=64, lr=1e-2, warmup=20, k_min=4, k_max=12, on_step=None):
    """Train model on fresh induction batches with step(model, optimizer, inputs, targets, scored); return the losses."""
    _fit_args(model, step, steps, seed, batch, lr, warmup, k_min, k_max, on_step)
    # Your code here.
    raise NotImplementedError('Exercise 14: see the instructions above')


def induction_accuracy(model, *, batch=512, seed=12345, k_min=4, k_max=12):
    """Held-out greedy accuracy on the scored positions of a fresh induction batch."""
    _accuracy_args(model, seed)
    # Your code here.
    raise NotImplementedError('Exercise 14: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 14: the contracts your four functions must meet (open it to read the properties)
# builder:begin inline check_induction_batch_contract
def check_induction_batch_contract(induction_batch):
    """Judge ``induction_batch(batch, generator, *, vocab=16, k_min=4, k_max=12) -> (inputs, targets, scored)``."""
    import torch

    raised = "the function raised on a valid input; the traceback above this message shows where"
    prop, case = "rows of k distinct tokens written twice, k from k_min to k_max", "induction_batch(200, generator seeded 3, vocab=16, k_min=3, k_max=9)"
    parts = contract_call(prop, case, raised, induction_batch, 200, torch.Generator().manual_seed(3), vocab=16, k_min=3, k_max=9)
    contract_assert(isinstance(parts, tuple) and len(parts) == 3, prop, case, "a tuple (inputs, targets, scored)", f"{type(parts).__name__}",
                    "return inputs, targets and the scored mask together")
    inputs, targets, scored = parts
    shapes = [tuple(getattr(t, "shape", ())) for t in parts]
    contract_assert(shapes == [(200, 17)] * 3 and scored.dtype == torch.bool, prop, case, "three tensors of shape (200, 17), scored of dtype bool",
                    f"{shapes}, scored {getattr(scored, 'dtype', '')}", "sequences of 2 k_max tokens; inputs drop the last, targets the first")
    contract_assert(torch.equal(inputs[:, 1:], targets[:, :-1]), "targets are the inputs shifted by one", case, "targets[:, t] == inputs[:, t + 1]",
                    "they differ", "slice one sequence twice: inputs = seq[:, :-1], targets = seq[:, 1:]")
    sequences = torch.cat((inputs, targets[:, -1:]), 1)
    lengths = scored.sum(1) + 1
    for row, k in zip(sequences, lengths.tolist()):
        segment = row[:k].tolist()
        contract_assert(3 <= k <= 9 and len(set(segment)) == k and row[k:2 * k].tolist() == segment, prop, case,
                        "k distinct tokens, then the same k again", f"{row.tolist()} with {k - 1} scored positions",
                        "draw k distinct tokens (torch.randperm(vocab)[:k]) and write them twice; score the repeat's 2nd..k-th targets")
    position = torch.arange(17)[None, :]
    want = (position >= lengths[:, None]) & (position <= 2 * lengths[:, None] - 2)
    contract_assert(torch.equal(scored, want), "scored marks exactly the targets an induction head can find", case,
                    "targets k+1 .. 2k-1 of each row (input positions k .. 2k-2)", "another set of positions",
                    "the first token of the repeat cannot be predicted (nothing says where the repeat starts); the filler neither")
    contract_assert(len(set(lengths.tolist())) >= 5, "k is drawn for each row", case, "several lengths among 200 rows",
                    f"lengths {sorted(set(lengths.tolist()))}", "draw k for each row, not once for the batch")
    again = induction_batch(200, torch.Generator().manual_seed(3), vocab=16, k_min=3, k_max=9)[0]
    contract_assert(torch.equal(again, inputs), "the generator alone decides the batch", case, "the same batch from the same seed",
                    "a different batch", "draw every random number from the generator argument, not from torch's global state")
    return {"rows": 200, "scored": "PASS"}
# builder:end sha256=ec4d7ae3a086b905619d36653cd35379ba0c84fbcb81eb338bd5a093404f139e
# builder:begin inline check_train_step_contract
def check_train_step_contract(train_step):
    """Judge ``train_step(model, optimizer, inputs, targets, scored)``: one optimizer step on the scored positions' cross-entropy."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    def tiny():
        torch.manual_seed(12)
        return torch.nn.Sequential(torch.nn.Embedding(7, 5), torch.nn.Linear(5, 7))

    inputs = torch.tensor([[1, 2, 3, 4], [6, 5, 4, 3]])
    targets = torch.tensor([[2, 3, 4, 0], [5, 4, 3, 6]])
    scored = torch.tensor([[False, True, True, False], [False, False, True, True]])
    case = "an embedding + linear model on 2 rows of 4 tokens, 4 positions scored, SGD lr 0.1, stale gradients of 5 left in"
    model, mirror = tiny(), tiny()
    for p in model.parameters():
        p.grad = torch.full_like(p, 5.0)  # left over from an earlier step: the step must clear them
    prop = "the step returns the cross-entropy over the scored positions as a float"
    loss = contract_call(prop, case, raised, train_step, model, torch.optim.SGD(model.parameters(), lr=0.1), inputs, targets, scored)
    logits = mirror(inputs)
    want = F.cross_entropy(logits[scored], targets[scored])
    contract_assert(isinstance(loss, float), prop, case, "a Python float", f"{type(loss).__name__}",
                    "return loss.item(): a float, not the tensor with its whole graph")
    hint = "F.cross_entropy(logits[scored], targets[scored]): score only the positions the mask marks"
    if abs(loss - float(F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten()))) < 1e-6:
        hint = "every position was scored: index the logits and targets with the scored mask first"
    contract_close(prop, case, loss, float(want.detach()), hint, atol=1e-6, rtol=1e-6)
    want.backward()
    torch.optim.SGD(mirror.parameters(), lr=0.1).step()
    prop = "the weights move by exactly one optimizer step on this loss"
    for (name, p), q in zip(model.named_parameters(), mirror.parameters()):
        hint = "optimizer.zero_grad(), loss.backward(), optimizer.step(), in that order"
        if torch.allclose(p, q - 0.5, atol=1e-6):
            hint = "the stale gradients were kept: call optimizer.zero_grad() before loss.backward()"
        contract_close(prop + f" ({name})", case, p, q, hint, atol=1e-6, rtol=1e-6)
    return {"loss": loss}
# builder:end sha256=00a4c3e8338a916eab8f29c1f4c5834c4f2432f6717c404c2dc480339e5275e5
# builder:begin inline check_fit_induction_contract
def check_fit_induction_contract(fit_induction):
    """Judge ``fit_induction(model, step, steps, seed, *, batch, lr, warmup, ...)``: AdamW, warm-up then linear decay, fresh batches."""
    import torch

    raised = "the function raised on a valid input; the traceback above this message shows where"

    class Tiny(torch.nn.Module):
        """A stand-in model: one weight and the config that names the vocabulary."""

        def __init__(self):
            super().__init__()
            self.config = CapstoneConfig(vocab=16)
            self.weight = torch.nn.Parameter(torch.zeros(3))

    seen = []

    def step(model, optimizer, inputs, targets, scored):
        seen.append((optimizer, optimizer.param_groups[0]["lr"], inputs.clone(), model.training))
        optimizer.step()  # no gradients: moves nothing, but keeps the scheduler's order
        return float(len(seen))

    case = "steps=10, seed=4, batch=6, lr=0.5, warmup=4, a step that records the optimizer, its lr and the batch"
    prop = "the step runs once per step and the losses are what it returned"
    losses = contract_call(prop, case, raised, fit_induction, Tiny(), step, 10, 4, batch=6, lr=0.5, warmup=4)
    contract_assert(isinstance(losses, (list, tuple)) and list(losses) == [float(i) for i in range(1, 11)] and len(seen) == 10, prop, case,
                    "the floats 1, 2, ..., 10", f"{losses!r}"[:120], "call step(model, optimizer, inputs, targets, scored) once per step and collect what it returns")
    optimizer = seen[0][0]
    contract_assert(isinstance(optimizer, torch.optim.AdamW) and optimizer.param_groups[0]["weight_decay"] == 0.0 and all(s[0] is optimizer for s in seen),
                    "one AdamW optimizer without weight decay for the whole run", case, "torch.optim.AdamW(..., weight_decay=0), made once",
                    f"{type(optimizer).__name__}, weight_decay {optimizer.param_groups[0].get('weight_decay')}",
                    "AdamW's default weight_decay is 0.01: pass weight_decay=0, and build the optimizer before the loop")
    rates = [round(s[1], 9) for s in seen]
    want = [round(0.5 * min(1.0, (t + 1) / 4) * (1 - t / 10), 9) for t in range(10)]
    hint = "at step t = 0, 1, ...: lr * min(1, (t + 1) / warmup) * (1 - t / steps), set before the step (LambdaLR, then schedule.step() after)"
    if rates == [round(0.5 * (1 - t / 10), 9) for t in range(10)]:
        hint = "the warm-up is missing: the rate rises linearly over the first `warmup` steps"
    contract_assert(rates == want, "the rate rises over warmup steps, then falls linearly towards 0", case, f"{want}", f"{rates}", hint)
    batches = [s[2] for s in seen]
    contract_assert(all(b.shape == (6, 23) for b in batches) and not torch.equal(batches[0], batches[1]), "every step gets a fresh batch of `batch` rows",
                    case, "10 different batches of shape (6, 23)", f"shapes {[tuple(b.shape) for b in batches[:3]]} ...",
                    "draw induction_batch(batch, generator, ...) inside the loop, from one generator made before it")
    first = batches
    seen.clear()
    contract_call(prop, case, raised, fit_induction, Tiny(), step, 10, 4, batch=6, lr=0.5, warmup=4)
    contract_assert(all(torch.equal(a, s[2]) for a, s in zip(first, seen)), "the seed alone decides the batches", case,
                    "the same 10 batches from seed 4 twice", "different batches", "use torch.Generator().manual_seed(seed + 1), made once")
    contract_assert(all(s[3] for s in seen), "the model trains in training mode", case, "model.training True in every step", "False",
                    "call model.train() before the loop (and model.eval() after it)")
    return {"rates": "PASS", "batches": "PASS"}
# builder:end sha256=55ee4c2aa6d5feb3281cc326342f7528fefd225afe0736094eed80055ec6c8e6
# builder:begin inline check_induction_accuracy_contract
def check_induction_accuracy_contract(induction_accuracy):
    """Judge ``induction_accuracy(model, *, batch, seed, k_min, k_max)``: greedy accuracy on the scored positions only."""
    import torch

    raised = "the function raised on a valid input; the traceback above this message shows where"

    def repeat_length(row, k_min=2):
        """The k of a row: its first k tokens written again right after them (the shortest such k from k_min)."""
        return next(k for k in range(k_min, (len(row) + 1) // 2 + 1) if row[k:2 * k].tolist() == row[:min(k, len(row) - k)].tolist())

    class HalfRight(torch.nn.Module):
        """Predicts the repeat right at odd positions and wrong at even ones; token 0 outside the repeat."""

        def __init__(self):
            super().__init__()
            self.config = CapstoneConfig(vocab=16)
            self.hits = []

        def forward(self, tokens):
            guess = torch.zeros_like(tokens)
            for b, row in enumerate(tokens):
                k = repeat_length(row)
                for t in range(k, min(2 * k - 1, tokens.shape[1])):
                    right = int(row[t + 1 - k])
                    guess[b, t] = right if t % 2 else (right + 1) % 16
                    self.hits.append(t % 2 == 1)
            return torch.nn.functional.one_hot(guess, 16).float()

    model = HalfRight()
    prop, case = "accuracy counts the scored positions only", "a model right at odd positions of the repeat only, batch=64, seed=5"
    got = contract_call(prop, case, raised, induction_accuracy, model, batch=64, seed=5)
    contract_assert(bool(model.hits), prop, case, "a score of the model's own predictions", f"{got!r}, without calling the model",
                    "call the model on a fresh induction batch and compare its argmax with the targets")
    want = sum(model.hits) / len(model.hits)
    hint = "(argmax of the logits == targets)[scored].float().mean(): the first half and the filler do not count"
    contract_assert(isinstance(got, float) and abs(got - want) < 1e-6, prop, case, f"{want:.4f} as a float", f"{got!r}", hint)
    return {"accuracy": got}
# builder:end sha256=575f7a9e27743b15a4860e928266adae13c274f971ee1999f214ea6406be9df6
check_exercise("Exercise 14", check_induction_batch_contract, induction_batch, globals())
check_exercise("Exercise 14", check_train_step_contract, train_step, globals())
check_exercise("Exercise 14", check_fit_induction_contract, fit_induction, globals())
check_exercise("Exercise 14", check_induction_accuracy_contract, induction_accuracy, globals())

# %% tags=["training"]
# Training (about 2 s on a CPU): your CapstoneLM with 2 layers and with 1 layer, 150 AdamW steps each on
# fresh induction batches of 64 rows, then scored on 512 unseen rows.
induction = {key: REFERENCE.value(f"induction_task.{key}") for key in (
    "vocab", "seed", "steps", "batch", "learning_rate", "warmup", "k_min", "k_max", "eval_rows",
    "accuracy_two_layers_at_least", "accuracy_one_layer_at_most")}
task_sizes = {"k_min": induction["k_min"], "k_max": induction["k_max"]}
capstone_config = CapstoneConfig(vocab=induction["vocab"], d_model=32, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=64, max_len=64)
capstone_models, capstone_losses = {}, {}
for layers in (2, 1):
    torch.manual_seed(induction["seed"])
    capstone_models[layers] = CapstoneLM(capstone_config.replace(n_layers=layers))
    capstone_losses[layers] = fit_induction(
        capstone_models[layers], train_step, induction["steps"], induction["seed"], batch=induction["batch"],
        lr=induction["learning_rate"], warmup=induction["warmup"], **task_sizes,
        on_step=lambda step, loss, layers=layers: step % 50 == 0 and print(f"{layers} layer(s), step {step}: loss {loss:.3f}", flush=True),
    )
capstone_accuracy = {layers: induction_accuracy(model, batch=induction["eval_rows"], **task_sizes) for layers, model in capstone_models.items()}
print(f"held-out accuracy on the repeat: 2 layers {capstone_accuracy[2]:.3f}, 1 layer {capstone_accuracy[1]:.3f}")
expect("two layers learn the induction task", capstone_accuracy[2], ">=", induction["accuracy_two_layers_at_least"])
expect("one layer does not", capstone_accuracy[1], "<=", induction["accuracy_one_layer_at_most"])


# %% [markdown]
# **Where the heads look.** Take one sequence with $k = 8$ and read the attention weights of the
# trained 2-layer model. At a position in the repeat, a previous-token head of layer 1 puts its
# weight on the position just before; the induction head of layer 2 puts it on the token that
# followed the earlier occurrence of the current token, $k - 1$ places back. The figure marks those
# expected positions; the cell measures the mean weight each head puts there over the repeat.

# %% tags=["hide-input"]
# @title The figure code of the next cell: attention_by_layer, plot_induction_heads (open to read)
def attention_by_layer(model, tokens):
    """The attention weights (B, Hq, T, T) of each layer of a CapstoneLM on tokens (B, T), from its own qkv."""
    _capstone_tokens(tokens, _capstone_model(model).config, None)
    weights, positions = [], torch.arange(tokens.shape[1])
    with torch.no_grad():
        x = model.embed(tokens)
        for block in model.blocks:
            attn = block.attn
            q, k, v = attn.qkv(block.attn_norm(x), positions)
            group = attn.n_heads // attn.n_kv_heads
            result = scaled_dot_product_attention(q, repeat_kv_heads(k, group), repeat_kv_heads(v, group), causal_allowed(q.shape[-2], k.shape[-2]))
            weights.append(result.weights)
            x = x + attn.merge(result.output)
            x = x + block.ffn(block.ffn_norm(x))
    return weights


def plot_induction_heads(maps, k, language="en"):
    """Two heatmaps, queries down and keys across: the previous-token head of layer 1 and the induction head of layer 2."""
    require_choice("language", language, LANGUAGES)
    maps = [require_array(f"maps[{i}]", m, ndim=2) for i, m in enumerate(maps)] if isinstance(maps, (list, tuple)) else maps
    if not isinstance(maps, list) or len(maps) != 2 or any(m.shape[0] != m.shape[1] for m in maps):
        raise ValueError("maps must be a list of two square (T, T) weight maps, one head of layer 1 and one of layer 2")
    k = require_int("k", k, minimum=2, maximum=maps[0].shape[0] // 2)  # the repeat fills rows k .. 2k - 1
    apply_plot_style()
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.9))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.14, top=0.88, wspace=0.25)
    titles = (localized(language, "layer 1: previous-token head", "слой 1: голова «на шаг назад»"),
              localized(language, "layer 2: induction head", "слой 2: индукционная голова"))
    for ax, weights, back, title in zip(axes, maps, (1, k - 1), titles):
        ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
        rows = np.arange(k, 2 * k)
        ax.plot(rows - back, rows, ls="none", marker="o", mfc="none", mec=Palette.ORANGE, ms=7, mew=1.6,
                label=localized(language, f"expected key: {back} back", f"ожидаемый ключ: на {back} назад"))
        ax.set_title(title)
        ax.set_xlabel(localized(language, "key position", "позиция ключа"))
        ax.set_ylabel(localized(language, "query position", "позиция запроса"))
        ax.legend(loc="lower left")
    return fig


# %%
probe_tokens = torch.tensor([[9, 4, 13, 2, 11, 0, 6, 15] * 2 + [3, 8]])
k_probe = 8
maps = attention_by_layer(capstone_models[2], probe_tokens)
rows = torch.arange(k_probe, 2 * k_probe)
head_share = [[float(maps[layer][0, h, rows, rows - back].mean()) for h in range(capstone_config.n_heads)]
              for layer, back in ((0, 1), (1, k_probe - 1))]
previous_head, induction_head = (max(range(capstone_config.n_heads), key=shares.__getitem__) for shares in head_share)
print(f"mean weight on the expected key over the repeat: layer 1 heads {[round(s, 2) for s in head_share[0]]} (1 back), "
      f"layer 2 heads {[round(s, 2) for s in head_share[1]]} ({k_probe - 1} back)")
show_figure(
    plot_induction_heads((maps[0][0, previous_head].numpy(), maps[1][0, induction_head].numpy()), k_probe, LANGUAGE),
    "Each row is a query position, each column a key; darker is more weight, and rows sum to 1. The orange circles "
    "mark the expected keys for the repeat (rows 8 to 15): on the left, one place back; on the right, seven places "
    "back, the token that followed the earlier occurrence of the current one. The dark cells sit inside the circles.",
)
uniform_share = float((1 / (rows + 1.0)).mean())  # what a head that reads every key alike would put there
expect(f"layer 1 has a previous-token head and layer 2 an induction head (weight > 0.4; uniform: {uniform_share:.2f})",
       min(head_share[0][previous_head], head_share[1][induction_head]), ">", 0.4)


# %% [markdown]
# **Decoding through the cache.** Greedy decoding without a cache runs the whole sequence through
# the model for every new token: $O(n^2)$ token-passes for $n$ tokens. With a cache the prompt goes
# through once, and each step feeds one token, whose keys and values join the cache. The cache is
# two contiguous buffers per layer, (batch, K/V heads, max_len, head_dim), allocated once; its
# bytes are $2 \times \text{layers} \times \text{batch} \times \text{K/V heads} \times T \times
# \text{head width} \times \text{bytes per value}$, section 9's formula.

# %% tags=["exercise"]
# Exercise 15: Write the KV cache and greedy decoding through it. LayerKV.append(k, v, start) writes k
# and v (B, H_kv, T, hd) into the buffers at positions start .. start + T - 1 (refuse a start other
# than self.length), moves self.length on, and returns the keys and values of positions 0 .. start + T - 1.
# KVCache holds one LayerKV per layer; nbytes() counts the bytes of the keys and values held.
# generate(model, prompt, n_new, cache=True) appends n_new greedy tokens (argmax of the last logits):
# with cache=True it feeds the prompt once and then only the newest token through one KVCache; with
# cache=False the whole sequence every step. No gradients.
# The check requires: the model's tokens with and without a cache; the prompt fed once and then one
# token a step through the cache; the whole sequence a step without it; n_new=0 returns the prompt.
class LayerKV:
    """One layer's keys and values in two preallocated buffers (B, H_kv, max_len, hd)."""

    def __init__(self, batch, n_kv_heads, max_len, head_dim, dtype=torch.float32):
        _layer_kv_args(batch, n_kv_heads, max_len, head_dim, dtype)
        # Your code here.
        raise NotImplementedError('Exercise 15: see the instructions above')

    def append(self, k, v, start):
        """Write k, v (B, H_kv, T, hd) at positions start..; return the keys and values so far."""
        _kv_append_args(self.keys, k, v, start)
        # Your code here.
        raise NotImplementedError('Exercise 15: see the instructions above')


class KVCache:
    """The KV cache of a whole model: one LayerKV per layer."""

    def __init__(self, config, batch):
        _kv_cache_args(config, batch)
        # Your code here.
        raise NotImplementedError('Exercise 15: see the instructions above')

    @property
    def length(self):
        """How many positions the cache holds."""
        return self.layers[0].length

    def nbytes(self):
        """The bytes of the keys and values held."""
        # Your code here.
        raise NotImplementedError('Exercise 15: see the instructions above')


def generate(model, prompt, n_new, *, cache=True):
    """Greedy decoding of n_new tokens after prompt (B, T0); with cache=True each step feeds only the newest token."""
    n_new = _generation_length(model, prompt, n_new)
    # Your code here.
    raise NotImplementedError('Exercise 15: see the instructions above')


# %% tags=["hide-input"]
# @title The check of Exercise 15: the contract your functions must meet (open it to read the properties)
# builder:begin inline _check_layer_kv_refusals
def _check_layer_kv_refusals(layer_type):
    """A LayerKV holding 2 of 4 positions refuses, with ValueError, a write that skips back or runs past its end."""
    import torch
    prop = "the cache refuses a write that is not at its end or does not fit"
    writes = (("a LayerKV(1, 1, 4, 2) holding 2 positions, asked to write 1 position at start=1", 1, 1,
               "refuse unless start == self.length: a write elsewhere overwrites keys or leaves a gap"),
              ("a LayerKV(1, 1, 4, 2) holding 2 positions, asked to write 3 positions at start=2", 2, 3,
               "refuse unless start + T <= max_len: the buffers hold max_len positions"))
    for case, start, t, hint in writes:
        layer = contract_call(prop, case, "LayerKV(batch, n_kv_heads, max_len, head_dim) builds empty buffers",
                              layer_type, 1, 1, 4, 2)
        contract_call(prop, case, "a write at start=0 into an empty cache is valid", layer.append,
                      torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2), 0)
        try:
            layer.append(torch.ones(1, 1, t, 2), torch.ones(1, 1, t, 2), start)
        except ValueError:
            continue
        except Exception as exc:
            contract_assert(False, prop, case, "ValueError", f"{type(exc).__name__}: {exc}", hint)
        contract_assert(False, prop, case, "ValueError", "no error: the write went through", hint)
# builder:end sha256=fa3299bbce92134ce5f07ced9755080ea47103ec6b13abe5c096685c48cbc6b9
# builder:begin inline check_kv_generation_contract
def check_kv_generation_contract(generate):
    """Judge ``generate(model, prompt, n_new, *, cache=True)`` with a model whose next token depends on the whole past.

    The model (defined here) reads its past through the student's own ``KVCache`` when given one: its keys are the
    token ids, so a cache that forgets, repeats or misplaces a key changes the answer.
    """
    import torch
    raised = "the function raised on a valid input; the traceback above this message shows where"

    class Counter(torch.nn.Module):
        """Next token = (3 * sum of the past + length) mod 11; counts the tokens each call is fed."""

        def __init__(self):
            super().__init__()
            self.config = CapstoneConfig(vocab=11, d_model=4, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=4, max_len=16)
            self.fed = []
            self.layer_type = None

        def forward(self, tokens, cache=None):
            self.fed.append(tokens.shape[1])
            past = tokens.double()
            if cache is not None:
                start = cache.length
                k = tokens.double()[:, None, :, None].expand(-1, 1, -1, 2)       # (B, 1, T, head_dim 2)
                for layer in cache.layers:
                    keys, _ = layer.append(k, k, start)
                    self.layer_type = type(layer)
                past = keys[:, 0, :, 0]                                          # (B, start + T)
            t = torch.arange(1, past.shape[1] + 1, dtype=torch.float64)
            nxt = (3 * past.cumsum(1) + t).remainder(11).long()                  # (B, T): the next token after each position
            return torch.nn.functional.one_hot(nxt, 11).float() * 5.0

    def by_rule(prompt, n_new):
        tokens = prompt.tolist()
        for row in tokens:
            for _ in range(n_new):
                row.append((3 * sum(row) + len(row)) % 11)
        return torch.tensor(tokens)

    prompt = torch.tensor([[4, 1, 7], [0, 9, 2]])
    for cache in (False, True):
        model = Counter()
        prop = f"greedy decoding with cache={cache} gives the model's tokens"
        case = f"a model whose next token is (3 * sum of the past + length) mod 11, prompt (2, 3), 6 new tokens, cache={cache}"
        out = contract_call(prop, case, raised, generate, model, prompt, 6, cache=cache)
        hint = "append logits[:, -1].argmax(-1) each step; " + (
            "through the cache: feed the prompt once, then only the newest token, and let the model read the rest from the cache"
            if cache else "without a cache, feed the whole sequence every step")
        contract_assert(isinstance(out, torch.Tensor) and torch.equal(out, by_rule(prompt, 6)), prop, case,
                        f"{by_rule(prompt, 6).tolist()}", f"{out.tolist() if isinstance(out, torch.Tensor) else out!r}", hint)
        fed = [3] + [1] * 5 if cache else [3, 4, 5, 6, 7, 8]
        contract_assert(model.fed == fed, "with a cache each step feeds only the newest token" if cache else "without a cache each step feeds the whole sequence",
                        case, f"tokens fed per call {fed}", f"{model.fed}",
                        "the prompt goes in once; after that one token per step (its keys join the cache)" if cache else
                        "cache=False is the baseline: the whole sequence every step, no KVCache")
    _check_layer_kv_refusals(model.layer_type)
    out = contract_call("n_new=0 returns the prompt", "prompt (2, 3), n_new=0", raised, generate, Counter(), prompt, 0)
    contract_assert(isinstance(out, torch.Tensor) and torch.equal(out, prompt), "n_new=0 returns the prompt", "prompt (2, 3), n_new=0",
                    f"{prompt.tolist()}", f"{out!r}"[:120], "a loop of zero steps returns the prompt unchanged")
    return {"tokens": "PASS", "fed": "PASS"}
# builder:end sha256=a6ec9ea69f91204edfe433236881c23271979ecf2ae24ecbce26063a78c8e35d
check_exercise("Exercise 15", check_kv_generation_contract, generate, globals())

# %%
import time

decode_prompt = induction_batch(8, torch.Generator().manual_seed(SEED), vocab=induction["vocab"], **task_sizes)[0][:, :20]
decode_times = {}
for use_cache in (False, True):
    start_time = time.perf_counter()
    decoded = generate(capstone_models[2], decode_prompt, 40, cache=use_cache)
    decode_times[use_cache] = time.perf_counter() - start_time
    if use_cache:
        cached_decoded = decoded
    else:
        uncached_decoded = decoded
bytes_cache = KVCache(capstone_config, decode_prompt.shape[0])
with torch.no_grad():
    capstone_models[2](cached_decoded[:, :-1], bytes_cache)
expected_bytes = 2 * capstone_config.n_layers * 8 * capstone_config.n_kv_heads * 59 * capstone_config.head_dim * 4
print(f"time: 8 prompts of 20 tokens, 40 new tokens each: uncached {decode_times[False] * 1e3:.0f} ms, cached {decode_times[True] * 1e3:.0f} ms, "
      f"speed-up {decode_times[False] / decode_times[True]:.1f}x; the cache holds {bytes_cache.nbytes():,} bytes for 59 positions")
expect("cached and uncached decoding give the same tokens", torch.equal(cached_decoded, uncached_decoded))
expect("the cache holds 2 · layers · batch · K/V heads · T · head_dim · 4 bytes", bytes_cache.nbytes(), "==", expected_bytes)


# %% [markdown]
# **Checked against the library people use.** `transformers`' `LlamaForCausalLM` has the same
# parts: RoPE, RMSNorm, SwiGLU and grouped K/V heads, without biases. Built from a tiny config (no
# download), it loads your trained weights and must give your logits. One difference of layout:
# `transformers` turns coordinate $i$ with $i + d/2$ (the two halves of a head) where this course
# turns neighbours $2i$ and $2i + 1$, as the RoPE paper does. Permuting the rows of $W_q$ and $W_k$
# inside each head converts one into the other, which is what the `transformers` script that
# converts Meta's LLaMA checkpoints does
# ([`convert_llama_weights_to_hf.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/convert_llama_weights_to_hf.py), `permute`).

# %% tags=["hide-input"]
# @title to_transformers_llama: your model's weights in a LlamaForCausalLM (open to read)
# builder:begin inline to_transformers_llama
def to_transformers_llama(model):
    """The same network as a ``transformers`` LlamaForCausalLM (tiny config, no download, model's dtype), weights copied in.

    Llama in ``transformers`` rotates the two halves of each head (i, i + hd/2), this model interleaved pairs
    (2i, 2i + 1): the rows of w_q and w_k are permuted per head, as Meta's conversion script does.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    c = _capstone_model(model).config
    llama = LlamaForCausalLM(LlamaConfig(
        vocab_size=c.vocab, hidden_size=c.d_model, intermediate_size=c.d_ff, num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads, num_key_value_heads=c.n_kv_heads, head_dim=c.head_dim,
        max_position_embeddings=c.max_len, rope_theta=c.rope_base, rms_norm_eps=c.norm_eps, hidden_act="silu",
        attention_bias=False, mlp_bias=False, tie_word_embeddings=False, attn_implementation="eager",
    )).to(model.embed.weight.dtype)

    def halves(weight, heads):
        """Rows of each head from pairs (x0, x1), (x2, x3), ... to halves (x0, x2, ...; x1, x3, ...)."""
        return weight.view(heads, c.head_dim // 2, 2, -1).transpose(1, 2).reshape(weight.shape)

    state = {"model.embed_tokens.weight": model.embed.weight, "model.norm.weight": model.norm.weight,
             "lm_head.weight": model.head.weight}
    for i, block in enumerate(model.blocks):
        at = f"model.layers.{i}."
        state |= {
            at + "input_layernorm.weight": block.attn_norm.weight,
            at + "self_attn.q_proj.weight": halves(block.attn.w_q.weight, c.n_heads),
            at + "self_attn.k_proj.weight": halves(block.attn.w_k.weight, c.n_kv_heads),
            at + "self_attn.v_proj.weight": block.attn.w_v.weight,
            at + "self_attn.o_proj.weight": block.attn.w_o.weight,
            at + "post_attention_layernorm.weight": block.ffn_norm.weight,
            at + "mlp.gate_proj.weight": block.ffn.w_gate.weight,
            at + "mlp.up_proj.weight": block.ffn.w_up.weight,
            at + "mlp.down_proj.weight": block.ffn.w_down.weight,
        }
    with torch.no_grad():
        missing, unexpected = llama.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=False)
    if unexpected or [name for name in missing if "rotary" not in name]:
        raise ValueError(f"the weight names do not match this transformers version: missing {missing}, unexpected {unexpected}")
    return llama.eval()
# builder:end sha256=ce6c8d5256388ae01b9802ece41f783154af14686b81da7c1f8fff3efbbb1ec1


# %%
try:
    import transformers  # noqa: F401 - Colab ships it; the course's tests always run this comparison
except ImportError:
    print("transformers is not installed: the comparison with LlamaForCausalLM is skipped (pip install transformers runs it)")
else:
    llama = to_transformers_llama(capstone_models[2])
    with torch.no_grad():
        ours_logits, llama_logits = capstone_models[2](decode_prompt), llama(decode_prompt).logits
    llama_gap = float((llama_logits - ours_logits).abs().max() / ours_logits.abs().max())
    print(f"LlamaForCausalLM with your weights: largest logit difference {llama_gap:.1e} of the largest logit "
          f"({float(ours_logits.abs().max()):.1f}); float32 rounds each operation at about 6e-8")
    expect("your model and LlamaForCausalLM give the same logits (to 1e-5 of the largest)", llama_gap, "<", 1e-5)

# %% [markdown]
# ## In 20 seconds
#
# - **Attention:** each token makes a query, a key and a value. Query-key dot products, scaled by
#   $\sqrt{d_k}$ and softmaxed, decide how much each token listens to each other token; the output
#   is that blend of values.
# - **Positions:** attention alone is blind to order (it is permutation-equivariant), so position
#   vectors are added to the tokens; sinusoids turn an offset into a rotation.
# - **Masks:** `True` = may attend. Causal masks hide the future, which makes next-token training
#   honest and lets generation cache past keys and values; cached queries need their absolute
#   positions (a query offset), which PyTorch's `is_causal=True` does not give them.
# - **Why √d_k:** dot products spread with the width; large scores saturate softmax and starve the
#   gradient. Dividing by $\sqrt{d_k}$ keeps the spread at 1 at every width.
# - **Heads:** many narrow heads, glued back and mixed by $W_o$. GQA and MQA share K/V heads across
#   query heads and shrink the KV cache by the same factor.
# - **Cost:** $n^2$ scores per head and layer; counting four $d_{model} \times d_{model}$ projections, no
#   feed-forward network and the full (non-causal) square, that term outweighs the projections past
#   $n = 2 d_{model}$ (section 9 gives the crossings under the other conventions). At generation time
#   the KV cache also grows by a fixed number of bytes for every token (131,072 for Llama 3.1 8B).
# - **Block and model:** pre-norm residual blocks of attention and a feed-forward net; a tiny one
#   learns to copy a random segment in 45 steps, and fails at chance with its attention switched off;
#   decoding policies (greedy, temperature, top-k, top-p) turn its logits into tokens.
#
# ## Self-test
#
# Answer each question aloud or on paper first, then open its answer.
#
# **Explain attention to a non-engineer in 30 seconds.**
#
# <details><summary>Answer</summary>
#
# When the model reads a word, it asks which
# other words in the text help it understand this one, scores each for relevance, and rebuilds its
# idea of the word as a mix of the relevant ones. In "the animal didn't cross the street because it
# was tired", "it" takes most of its meaning from "animal". Every word does this, in parallel, in
# every layer.
#
# </details>
#
# **Now to an ML engineer in two minutes.**
#
# <details><summary>Answer</summary>
#
# Project $X$ to $Q$, $K$, $V$ with learned matrices;
# compute $Q K^\top / \sqrt{d_k}$, an $n \times n$ matrix of scaled similarities; set blocked entries
# (future, padding) to $-\infty$; softmax each row; multiply by $V$. Run $H$ heads on $d_{model}/H$-wide
# slices (GQA: fewer K/V heads, each shared by a group), concatenate and project with $W_o$. Wrap it in
# a pre-norm residual, follow it with a position-wise FFN, and stack. Compute is $O(n^2 d)$ and the
# score memory $O(n^2)$, which is why FlashAttention tiles the computation and GQA shrinks the cache.
#
# </details>
#
# **Why divide by √d_k, and what breaks without it?**
#
# <details><summary>Answer</summary>
#
# For unit-variance entries the variance of
# $q \cdot k$ is $d_k$. Unscaled, the scores spread out as heads widen, softmax tends to one-hot, its
# Jacobian $\operatorname{diag}(p) - p p^\top$ tends to zero. Section 7 measured $\partial L / \partial q$
# directly: at $d_k = 512$ the median query gets tens of times less gradient and about half get
# almost none, while a few get huge ones. Training becomes erratic, not just slow.
#
# </details>
#
# **Why is long context expensive? Name two remedies.**
#
# <details><summary>Answer</summary>
#
# The score matrix is $n \times n$ per head per
# layer, so compute grows quadratically, and the KV cache grows with every token held. FlashAttention
# computes exact attention without storing the $n \times n$ matrix in main memory; GQA or MQA shrink the
# cache. Others: sliding-window or sparse attention, prompt caching for stable prefixes, retrieval.
#
# </details>
#
# **What does the causal mask buy, besides honest training?**
#
# <details><summary>Answer</summary>
#
# Earlier outputs never depend on later
# tokens, so the keys and values of past tokens can be computed once and cached; each new token costs
# one row of attention, not a full recomputation. The mask for that row needs the query's absolute
# position (section 4).
#
# </details>
#
# **What does GQA give up, and for what?**
#
# <details><summary>Answer</summary>
#
# A little modelling capacity, because query heads share keys
# and values, for a KV cache several times smaller: more concurrent requests and longer contexts per GPU.
#
# </details>
#
# **A fully masked row: what does PyTorch return, and what does this notebook do?**
#
# <details><summary>Answer</summary>
#
# Recent PyTorch
# (2.5 and later) returns zeros; older versions returned NaN. This notebook raises a `ValueError` by
# default and returns zeros, with finite gradients, only when asked with `empty_row="zero"`.
#
# </details>
#
# **Why does top-p keep the token that crosses the threshold?**
#
# <details><summary>Answer</summary>
#
# Without it the kept mass would be
# *below* $p$. Worse, when the top token alone already reaches $p$, the crossing token *is* the top
# token, and dropping it would keep nothing at all. Keeping the crossing token guarantees at least
# $p$ of the mass and at least one token (the cell after the numeric questions checks both cases).
#
#
# </details>

# %% [markdown]
# ### Self-test with numbers
#
# Work each one out by hand; the cell below computes every answer and stops if one of them is wrong.
#
# 1. **Qwen2.5-7B** has 28 layers and 4 K/V heads of width 128, cached in 16 bits. How many bytes does
#    one token add to its KV cache?
#
#    <details><summary>Answer</summary>
#
#    $2 \cdot 28 \cdot 4 \cdot 128 \cdot 2 = 57{,}344$ bytes, 56 KiB: keys and values, every layer, every K/V head.
#
#    </details>
#
# 2. Four keys score $(1, 1, 1, 1 + \ln 3)$. What weight does the last key get?
#
#    <details><summary>Answer</summary>
#
#    $e^{\ln 3} = 3$ times each of the others, so $3 / (1 + 1 + 1 + 3) = 0.5$; the others get $1/6$ each.
#
#    </details>
#
# 3. A causal mask over 8 tokens: how many (query, key) pairs are allowed?
#
#    <details><summary>Answer</summary>
#
#    $1 + 2 + \dots + 8 = 36$ of the 64.
#
#    </details>
#
# 4. With $d_k = 256$ and unit-variance entries, what is the standard deviation of an unscaled score
#    $q \cdot k$, and of a scaled one?
#
#    <details><summary>Answer</summary>
#
#    $\sqrt{256} = 16$ unscaled, $16 / \sqrt{256} = 1$ scaled.
#
#    </details>
#
# 5. Logits $(3, 2, 1, 0)$ and top-p with $p = 0.5$: which tokens survive, and what would a rule that
#    drops the crossing token keep?
#
#    <details><summary>Answer</summary>
#
#    The top token alone has $0.644 \ge 0.5$, so it is the crossing token: top-p keeps only token 0,
#    with probability 1. Dropping the crossing token would keep nothing.
#
#    </details>

# %%
answers = {
    "Qwen2.5-7B bytes per token": kv_cache_bytes_per_token(28, 4, 128, 2),
    "weight of the last key": float(softmax(torch.tensor([1.0, 1.0, 1.0, 1.0 + math.log(3)], dtype=torch.float64))[-1]),
    "causal pairs over 8 tokens": int(causal_allowed(8, 8).sum()),
    "score std at d_k = 256, unscaled and scaled": (math.sqrt(256), math.sqrt(256) / math.sqrt(256)),
    "top-p 0.5 on (3, 2, 1, 0)": token_distribution([3.0, 2.0, 1.0, 0.0], top_p=0.5),
}
stated = {
    "Qwen2.5-7B bytes per token": 57_344,
    "weight of the last key": 0.5,
    "causal pairs over 8 tokens": 36,
    "score std at d_k = 256, unscaled and scaled": (16.0, 1.0),
    "top-p 0.5 on (3, 2, 1, 0)": [1.0, 0.0, 0.0, 0.0],
}
for question, answer in answers.items():
    close = (math.isclose(answer, stated[question], rel_tol=1e-12) if isinstance(answer, float)
             else answer == stated[question])
    if not close:
        raise AssertionError(f"self-test '{question}': the answer above says {stated[question]!r}, the cell computes {answer!r}")
    print(f"{question}: {answer}")
# Dropping the crossing token would leave nothing when the top token alone reaches p.
plain = token_distribution([3.0, 2.0, 1.0, 0.0])
running = list(itertools.accumulate(plain))
crossing = next(i for i, mass in enumerate(running) if mass >= 0.5)
if crossing != 0:
    raise AssertionError(f"the answer says the top token alone reaches p = 0.5; running mass {running}")
print(f"the top token alone holds {plain[0]:.3f} >= 0.5, so a rule that drops the crossing token would keep {crossing} tokens")

# %% [markdown]
# ## Appendix · Attention in practice: options, costs and failures
#
# Section 9's cost cell computed every number below.
#
# **Your options**, from the cheapest to the most committed. Some you choose in the prompt or
# the API call; the rest you choose by picking a model or a serving stack.
#
# | Option | What it does | What you gain | What it costs | Where you choose it |
# |---|---|---|---|---|
# | Short prompt plus retrieval | Puts only the relevant passages in the context | Cost that stays flat as the corpus grows | An index to maintain, and retrieval that can miss | Your own code |
# | Prompt caching | Reuses the keys and values of a prefix that repeats across calls | Cache reads billed at 0.1× the input price, and a faster first token ([Anthropic prompt caching](https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching)) | The prefix must match byte for byte; a cache write costs 1.25× the input price for the 5-minute lifetime and 2× for the 1-hour one (same page) | The API or the serving engine |
# | A long context window | Sends the whole document or history at once | Nothing to retrieve; exact cross-references across all of it | Quadratic compute, a cache that grows with every token, weaker recall in the middle | The model you pick |
# | A GQA or MQA model | Lets several query heads share one key/value head | A KV cache smaller by the ratio of query heads to K/V heads (4× for Llama 3.1 8B, computed in section 8) | A little modelling capacity, decided by the model's authors | The model card: `num_key_value_heads` |
# | FlashAttention kernels | Computes exactly the same attention in tiles that stay in fast on-chip memory | No n × n matrix in GPU main memory; the paper reports 3× faster GPT-2 training at 1K context and 15% over the MLPerf 1.1 BERT-large record ([Dao et al., 2022](https://arxiv.org/abs/2205.14135)) | A supported GPU | The serving stack (PyTorch, vLLM, ...) |
# | Sliding-window attention | Lets each layer look back a fixed number of tokens | A per-layer cache of fixed size and linear cost | Exact lookup beyond the window is gone; information hops layer by layer | The architecture, e.g. Mistral 7B **v0.1** with a 4,096-token window ([Jiang et al., 2023](https://arxiv.org/abs/2310.06825)); v0.2 and v0.3 dropped it ([v0.2 model card](https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.2)) |
# | A paged KV cache | Stores each request's cache in small blocks instead of one reserved strip | 2-4× the throughput of FasterTransformer and Orca at the same latency ([Kwon et al., 2023](https://arxiv.org/abs/2309.06180)) | An engine that supports it | vLLM and most engines since |
# | A linear-time architecture | Replaces attention by a recurrence with a fixed-size state | No n² term, a cache that does not grow; Mamba reports 5× the generation throughput of a transformer ([Gu and Dao, 2023](https://arxiv.org/abs/2312.00752)) | Different recall behaviour, fewer mature models | The architecture (state-space models) |
#
# **How to choose.** Start from what you control.
#
# - *A hosted API:* you control the prompt. Put the stable part first (system prompt, tool
#   definitions, reference documents) and keep it identical from call to call so that it
#   caches; put what changes last. Count tokens before sending: input beyond the window is
#   rejected, and input plus the answer's budget beyond it cuts the answer short.
# - *Long context or retrieval:* long context for one document the model must read exactly (a
#   contract, a code base); retrieval when the corpus outgrows any prompt or the relevant part
#   is small. Many production systems do both: retrieve, then hand over a generous window.
# - *An open model to host:* read `num_attention_heads`, `num_key_value_heads` and
#   `max_position_embeddings` in its `config.json`. The cache per token scales with the K/V
#   heads, and that number, more than the parameter count, decides how many conversations a GPU
#   carries.
# - *Serving it:* use an engine with FlashAttention and a paged cache, not a loop of your own.
# - *Training or fine-tuning:* keep the library's score scaling and causal mask exactly as they
#   are; section 7 measures what goes wrong without the scaling.
# - *Always:* measure quality against context length on your own task, with the key fact at the
#   start, in the middle and at the end of the prompt. A longer advertised window does not mean
#   the model uses its middle well.
#
# **What it costs**, in four currencies (the numbers come from section 9's cost cell):
#
# - *Compute.* The score-and-mix step is quadratic in the number of tokens and is paid in full
#   when a prompt is first read: that is the wait before the first output token. A 1,000-token
#   prompt builds 1,000,000 scores per head per layer, 2,000 tokens build 4,000,000 and 128,000
#   tokens about 16.4 billion: doubling the context quadruples this part. For a 4,096-wide model
#   with four 4,096 × 4,096 projections, no FFN and the full square, the quadratic part matches the
#   projections at 8,192 tokens and is 15.6 times larger at 128,000. Llama 3.1 8B's grouped K/V
#   projections are smaller, so its attention layer crosses already at 5,120; counting a 4d-wide
#   feed-forward layer too (the original transformer's shape), four d × d projections and the FFN
#   cross at 24,576; a causal kernel that skips the blocked half doubles each of these. Below a few thousand tokens the linear parts
#   dominate and you can ignore the n² term.
# - *Memory.* Every live conversation keeps the keys and values of all its tokens. With the shape
#   of Llama 3.1 8B (32 layers, 8 K/V heads of width 128, 16-bit numbers) that is 131,072 bytes
#   per token, 4.2 GB for a 32,000-token conversation, so an 80 GB GPU holding 16 GB of weights
#   carries 15 such conversations. One 128,000-token request would need 67 GB with 32 K/V heads
#   and 16.8 GB with the 8 it has.
# - *Money.* APIs bill per input token. At an illustrative USD 5 per million input tokens, a
#   100,000-token prompt costs USD 0.50 each time it is sent, USD 0.05 when all of it is a cache
#   read at 0.1×, and USD 0.625 the first time, when it is written to a 5-minute cache at 1.25×.
# - *Recall.* In *Lost in the Middle* ([Liu et al., 2023](https://arxiv.org/abs/2307.03172)),
#   GPT-3.5-Turbo answered 75.8% of the questions when the useful document came first of 20, 53.8%
#   when it came tenth (the paper's Table 6), and 56.1% with no documents at all (Table 1): worse in
#   the middle than blind.
#
# **What breaks.**
#
# - *The answer sits in the middle.* Accuracy drops for facts in the middle of a long prompt. Put
#   the most important material first or last, and keep prompts as short as the task allows.
# - *The cache never hits.* A timestamp or request id near the top of the prompt changes the
#   prefix on every call, so every call pays full price. If the usage report shows zero cache
#   reads across identical requests, something volatile sits before the stable part.
# - *Out of memory at long context.* On long requests it is the KV cache, not the weights, that
#   overflows the GPU. Prefer a GQA model, cap the context you accept, or use an engine that pages
#   the cache.
# - *The prompt does not fit.* Input beyond the window is an error; input plus the output budget
#   beyond it ends the answer early. Count first, and leave room for the answer.
# - *Training stalls on unscaled scores.* Without the division by the square root of the head
#   width, softmax collapses onto one token and passes back almost no gradient. Section 7
#   measures how much at widths from 2 to 1,024.
#
# **In the wild.** The *base* model of the original transformer ran 8 heads of width 64 on
# 512-wide vectors; the *big* one ran 16 heads on 1,024-wide vectors with a 4,096-wide
# feed-forward layer ([Vaswani et al., 2017](https://arxiv.org/abs/1706.03762), Table 3).
# Model configs on Hugging Face list `num_attention_heads`, `num_key_value_heads` and
# `max_position_embeddings`: Llama 3.1 8B pairs 32 query heads with 8 K/V heads and accepts
# 128K tokens ([its config](https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json)).
# Mistral 7B v0.1 uses the same 32-to-8 split plus a 4,096-token window, whose reach through its
# 32 layers is 131,072 tokens (section 9's cost cell; the paper rounds it to "approximately 131K"). That
# figure follows Mistral's convention, in which position i reads positions i − 4,096 … i, so each
# layer relays information 4,096 positions back; Module 5 sets it beside gpt-oss's convention.
# The GQA paper *uptrained* existing multi-head checkpoints (T5-XXL) into grouped-query ones with
# 5% of their original pre-training compute; that 5% is not the cost of training GQA from scratch
# ([Ainslie et al., 2023](https://arxiv.org/abs/2305.13245)). PyTorch's
# `F.scaled_dot_product_attention` picks a kernel by itself: FlashAttention, memory-efficient, a
# plain math one, and on NVIDIA GPUs a cuDNN one ([`SDPBackend`](https://docs.pytorch.org/docs/stable/generated/torch.nn.attention.SDPBackend.html));
# which it prefers depends on the release and the GPU: PyTorch's selector puts cuDNN first only when
# `check_prefer_cudnn_attention()` in
# [`sdp_utils.cpp`](https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp)
# holds, a condition on the GPU generation (Hopper and newer data-centre parts) and the cuDNN version
# that has changed from release to release, and otherwise tries FlashAttention first.
# Its `scale=` argument is keyword-only and exists from torch 2.1
# ([docs](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)),
# which is why this notebook installs `torch>=2.1`;
# and vLLM's paged cache was motivated by earlier engines that used only 20.4%-38.2% of their
# KV-cache memory for actual token states ([Kwon et al., 2023](https://arxiv.org/abs/2309.06180)).
#
# **Windows of a million tokens, and flat prices** (checked December 2026; these pages change
# often, so read them again before relying on a figure). Anthropic's documentation defines the
# context window as all the text the model can reference when it writes a response, the response
# itself included, and gives some of its models a 1M-token window and others 200K
# ([context windows](https://platform.claude.com/docs/en/build-with-claude/context-windows)). So
# everything in a request counts towards it: the system prompt, tool definitions and tool results,
# the conversation so far, attached documents, and the answer being written. Input is billed per
# token, at one price per model ([Anthropic pricing](https://platform.claude.com/docs/en/about-claude/pricing))
# or in two tiers split at 200,000 prompt tokens, as for Gemini 2.5 Pro
# ([Gemini pricing](https://ai.google.dev/gemini-api/docs/pricing)). Within a tier the millionth
# token costs what the first one does, although the score step it joins grows with the square of
# the length (section 9): the provider averages the n² term into one price per token.

# %% [markdown]
# ## The papers behind this module
#
# - Vaswani et al., *Attention Is All You Need* (2017): https://arxiv.org/abs/1706.03762. Scaled
#   dot-product attention, multi-head attention, sinusoidal positions and the transformer.
# - Ainslie et al., *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
#   Checkpoints* (2023): https://arxiv.org/abs/2305.13245. Grouped-query attention, and uptraining
#   multi-head checkpoints into it.
# - Shazeer, *Fast Transformer Decoding: One Write-Head is All You Need* (2019):
#   https://arxiv.org/abs/1911.02150. Multi-query attention.
# - Dao et al., *FlashAttention* (2022): https://arxiv.org/abs/2205.14135. Exact attention in tiles
#   sized for on-chip memory.
# - Liu et al., *Lost in the Middle* (2023): https://arxiv.org/abs/2307.03172. Recall by position in
#   the context.
# - Holtzman et al., *The Curious Case of Neural Text Degeneration* (2019):
#   https://arxiv.org/abs/1904.09751. Nucleus (top-p) sampling.
# - Xiong et al., *On Layer Normalization in the Transformer Architecture* (2020):
#   https://arxiv.org/abs/2002.04745. Why pre-norm trains more stably than post-norm.
#
# **Further reading.** The Annotated Transformer (https://nlp.seas.harvard.edu/annotated-transformer/),
# Jay Alammar's *The Illustrated Transformer* (https://jalammar.github.io/illustrated-transformer/),
# Andrej Karpathy's video *Let's build GPT: from scratch, in code, spelled out*
# (https://www.youtube.com/watch?v=kCc8FmEb1nY), which builds a small GPT and derives the causal mask
# as section 4 does, and his nanoGPT (https://github.com/karpathy/nanoGPT); 3Blue1Brown's *Attention in
# transformers, step-by-step*, chapter 6 of the deep-learning series
# (https://www.3blue1brown.com/lessons/attention), for the picture behind queries, keys and values; and the PyTorch documentation of
# `scaled_dot_product_attention`
# (https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html).

# %%
report_references(globals())
exercise_summary(globals())
report_section("Module 3", globals())
