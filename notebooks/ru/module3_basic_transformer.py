# %% [markdown]
# <!-- builder:begin header -->
# # Модуль 3 · Базовый трансформер
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/ru/module3_basic_transformer.ipynb)
#
# *Происхождение: сборщик курса 0.1.0; эталонные значения `references/module3.json`, SHA-256 `227b5388a255b981441268d251018a22dbeba0f562a6852f03c5a652840ae79d`. Лицензия: текст и рисунки — CC BY-SA 4.0, код — MIT.*
# <!-- builder:end sha256=05d4f705aea8288248c979f196f1e53a4ab6226722745d2065ca7941af7be3d1 -->

# %% [markdown]
# ## Уровень 1 · Внимание для практиков
#
# **В одном предложении.** Внимание — это шаг, на котором каждый токен входа сравнивает себя со всеми
# остальными токенами, решает, какие из них для него важны, и пересобирает себя как взвешенную смесь
# этих токенов. Поскольку сравниваются все пары токенов, именно внимание определяет предельную длину
# контекста модели, цену длинного промпта и то, сколько памяти GPU занимает один диалог.
#
# **Когда это нужно знать.** Когда решение упирается в стоимость: выбрать модель по её контекстному окну
# или по числу KV-голов в карточке модели, выбрать между одним огромным промптом и поиском по базе
# (retrieval), подобрать GPU или объяснить, почему длинный чат задумывается перед первым токеном ответа.
# Характерный признак — задержка и стоимость, которые растут с длиной *диалога*, а не *ответа*.
#
# **Четыре факта, которые стоит запомнить**; каждый из них мы посчитаем дальше в этом ноутбуке:
#
# - Чтение промпта требует работы, растущей как *квадрат* его длины: удвойте промпт, и шаг вычисления
#   оценок сделает вчетверо больше работы (раздел 9).
# - Каждый активный диалог держит **KV-кэш**, который растёт на фиксированное число байт на токен:
#   131 072 для Llama 3.1 8B (раздел 9 и приложение *Внимание на практике*).
# - Модели, в которых запросы делят **KV-головы** (GQA, раздел 8), уменьшают этот кэш: в 4 раза для Llama 3.1 8B.
# - Длинные промпты читаются неравномерно: факты из середины воспроизводятся хуже всего (приложение *Внимание на практике*).
#
# **Термины, которые встретятся**, и где строится каждый из них:
#
# | Термин | Смысл | Где строится |
# |---|---|---|
# | токен | кусок текста (слово или часть слова), который модель читает как один вектор | здесь не строится (делить текст на токены — работа токенизатора); используется начиная с раздела 2 |
# | контекстное окно | наибольшее число токенов, которое модель принимает за раз, промпт вместе с ответом | раздел 9 |
# | запрос, ключ, значение | три вектора, которые строит каждый токен: что он ищет, что он предлагает, что он передаёт | раздел 2 |
# | голова | одно независимое внимание размерности $d_k$ (пишут также $d_{head}$: это то же число) | раздел 8 |
# | KV-головы | головы ключей и значений, из которых читают головы запросов; в GQA и MQA их меньше, чем голов запросов | раздел 8 |
# | KV-кэш | ключи и значения прошлых токенов, сохранённые, чтобы каждый новый токен стоил одну строку внимания | её размер считается в разделах 8 и 9 (маска — в разделе 4) |
# | FLOPs | операции с плавающей точкой; одно умножение со сложением считается за 2 | раздел 9 |
# | префикс | начало промпта; префикс, повторяющийся байт в байт, можно закэшировать | раздел 9 |
# | наты | единица измерения функции потерь, вычисленной с натуральным логарифмом; 1 нат ≈ 1,44 бита | раздел 12 |
#
# **Глубже.** Уровень 2 строит внимание из горстки чисел: softmax на оценках местоимения; запросы, ключи
# и значения; позиции; маски; полная формула, сверенная с PyTorch; масштабирование на √d_k, измеренное
# на разных размерностях; много голов, которые делят ключи и значения; кривая n²; остальная часть блока
# декодера; и крошечная языковая модель, которой для решения своей задачи приходится пользоваться
# вниманием. Варианты, затраты и типичные отказы, которые взвешивает практик, собраны в приложении.

# %% [markdown]
# **Как запускать этот ноутбук.** Выберите *Среда выполнения → Выполнить все* (в английском интерфейсе Colab *Runtime → Run all*, в JupyterLab *Run → Run All Cells*). Хватит
# среды выполнения с CPU. Первая ячейка с кодом устанавливает только то, чего не хватает, а в Colab
# не хватает ничего. Каждый раздел заканчивается проверкой, которая останавливает ноутбук явной ошибкой,
# если какое-то число неверно.
#
# **Когда проверка останавливает ноутбук.** После каждого упражнения ячейка проверки оценивает вашу
# функцию. Упражнение, которого вы ещё не касались, печатает «ещё не начато», и *Выполнить все* идёт
# дальше с эталонным решением на его месте. Упражнение, которое вы начали, но решили неверно,
# останавливает *Выполнить все* на своей проверке: она показывает нарушенное свойство, вход, ожидаемое и
# фактическое значения и обычную причину ошибки. Дальше ячейки используют эталон: чтобы продолжить,
# щёлкните по этой проверке и выберите в меню *Среда выполнения* выполнение ячеек после текущей (Colab; в английском интерфейсе *Runtime → Run after*) или выделите ячейку под ней и
# выберите *Run → Run Selected Cell and All Below* (JupyterLab). `show_reference("Exercise 3")`
# печатает решение; исправьте свою ячейку и запустите её и её проверку ещё раз. Последняя ячейка
# перечисляет все упражнения, которые всё ещё работают на эталонном решении.

# %% tags=["hide-input"]
# @title Подготовка 1 из 3: установить только недостающие пакеты из разрешённого списка (откройте, чтобы прочитать)
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
LANGUAGE = "ru"  # figure labels: "en" or "ru"
torch.manual_seed(SEED)
torch.set_num_threads(1)  # one thread: identical numbers on every run
# No torch.use_deterministic_algorithms(True): every op here runs on CPU kernels that are already deterministic,
# and in recent torch that call imports the compiler stack (torch._inductor), about a second of start-up.
ENVIRONMENT = report_environment()
gc.freeze()  # the objects imported so far (torch's are many) are never garbage: later collections skip them


# %% tags=["hide-input"]
# @title Подготовка 3 из 3: зафиксированные эталонные метрики, сверенные со своим SHA-256 до любого использования.
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
print(f"{REFERENCE_SOURCE} сверен: sha256 {REFERENCE_SHA256}")

# %% [markdown]
# ## Инструменты: проверка аргументов, проверка контрактов и единый стиль рисунков
#
# В следующей ячейке собраны небольшие вспомогательные функции, общие для всех ноутбуков курса. Они
# скопированы из единого источника курса, чтобы этот ноутбук работал сам по себе:
#
# - `require_int`, `require_real`, `require_choice`, `require_tensor` проверяют аргументы каждой
#   публичной функции. Некорректный ввод останавливает работу с `TypeError` или `ValueError`, где сказано,
#   что не так и что допустимо, и никогда — молчаливым NaN или broadcasting, которого вы не просили.
# - `expect_raises` вызывает функцию на некорректном вводе и сообщает об ошибке, если та не бросает нужное исключение.
# - `ContractViolation`, `contract_assert` и `contract_close` сообщают о нарушенном свойстве вашего кода:
#   какое свойство, на каком вводе, что ожидалось и что получилось, и какова обычная причина.
#   `check_exercise` запускает такой контракт после каждого упражнения.
# - `Palette`, `apply_plot_style`, `localized` и `show_figure` придают всем рисункам единый вид, дают
#   подписи на английском или русском (задайте `LANGUAGE = "ru"` в ячейке настройки) и пояснение под рисунком,
#   которое объясняет, как его читать.

# %% tags=["hide-input"]
# @title Инструменты: общие вспомогательные функции и контрактные проверки, скопированные из единого источника курса (откройте, чтобы прочитать)
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
print("инструменты готовы: проверки аргументов, контрактные проверки и стиль рисунков курса")

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
# @title Проверки аргументов функций урока: каждая функция вызывает свою одной строкой (откройте, чтобы прочитать)
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
# ## Уровень 2 · Как устроено внимание, с нуля
#
# Представьте совещание, на котором кто-то говорит: «Он опять сломался, можешь починить?». Чтобы понять,
# кто такой «он», вы оглядываетесь: на ноутбук на столе, на коллегу, который только что вошёл, на
# маркерную доску. Большая часть вашего внимания достаётся ноутбуку, немного — всему остальному, и «он»
# начинает означать в основном *ноутбук*. Внимание в трансформере — это такой взгляд по сторонам, который
# каждое слово бросает на каждое другое слово, в каждом слое. Тот же механизм позволяет слову «лук»
# означать оружие рядом со словом «стрелы» и овощ рядом со словом «суп»: слово одно и то же, а то, к чему
# оно прислушивается, разное.
#
# Каждый раздел ниже идёт по одной схеме: идея, формула с таблицей обозначений, числа, посчитанные
# вручную, код, рисунок с подписью, объясняющей, как его читать, и проверка, которая останавливает
# ноутбук, если что-то не так. Ячейки с кодом, помеченные как **exercises**, предлагают вам самим написать
# одну из ключевых функций; ячейка с контрактом после каждого упражнения оценивает вашу версию и называет
# свойство, которое нарушено.
#
# ## 1 · К чему относится «it»? Softmax вручную
#
# **Идея.** В предложении *«The animal didn't cross the street because it was tired»* («Животное не
# перешло улицу, потому что оно устало») слово «it» сравнивает себя с другими словами и получает по одной
# **оценке** релевантности на каждое слово (откуда берутся оценки, покажет раздел 2). Чтобы числа были
# небольшими, возьмём трёх кандидатов: у «animal» оценка 2,0, у «tired» 1,0, у «street» 0,5. Вниманию
# нужны *доли*: положительные и в сумме равные 1. Функция, которая превращает оценки в такие доли, — это
# **softmax**:
#
# $$\operatorname{softmax}(z)_i = \frac{e^{z_i}}{\sum_{j=1}^{n} e^{z_j}}$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $z$ | входные оценки, по одной на каждое слово-кандидат | $(2{,}0; 1{,}0; 0{,}5)$ |
# | $n$ | сколько всего оценок | $3$ |
# | $i$ | кандидат, чью долю мы вычисляем | $i = 1$ — это «animal» |
# | $e^{x}$ | экспонента, где $e \approx 2{,}718$; положительна при любом $x$ | $e^{2{,}0} \approx 7{,}39$ |
# | $\sum_{j=1}^{n}$ | сумма слагаемых по $j = 1, \dots, n$ | $e^{2{,}0} + e^{1{,}0} + e^{0{,}5}$ |
# | $\operatorname{softmax}(z)_i$ | доля внимания, которую получает кандидат $i$ | $0{,}63$ |
#
# **Вручную.** Возводим в экспоненту: $e^{2{,}0} = 7{,}39$, $e^{1{,}0} = 2{,}72$, $e^{0{,}5} = 1{,}65$. Складываем:
# $11{,}76$. Делим каждое на сумму: animal $7{,}39 / 11{,}76 = 0{,}63$, tired $0{,}23$, street $0{,}14$.
# Новый смысл «it» на 63% состоит из «animal». Никто не сообщал модели правил грамматики — всё сделали оценки.
#
# Почему экспонента, а не просто деление каждой оценки на сумму оценок? Три причины видны прямо по
# числам: экспонента положительна даже для отрицательных оценок, поэтому ни одна доля не бывает
# отрицательной; бо́льшая оценка всегда даёт бо́льшую долю; а прибавление 1 к оценке умножает её вес на
# $e \approx 2{,}72$, так что лучший кандидат заметно вырывается вперёд. Простое деление дало бы «animal»
# всего $2{,}0 / 3{,}5 = 0{,}57$, а на отрицательных оценках и вовсе не работает. Для кода важно ещё одно
# свойство: прибавление одной и той же константы ко всем оценкам ничего не меняет, потому что числитель
# и знаменатель умножаются на один и тот же множитель. Поэтому вычитание наибольшей оценки перед
# возведением в экспоненту сохраняет результат и не даёт $e^{1000}$ переполниться.

# %% tags=["hide-input"]
# @title Код рисунка следующей ячейки: plot_it_weights (откройте, чтобы прочитать)
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
    print(f"{number(word, '>6', 'ru')}: оценка {number(score, '.1f', 'ru')}   e^оценка {number(e, '5.2f', 'ru')}   доля {number(e, '5.2f', 'ru')} / {number(float(it_exps.sum()), '.2f', 'ru')} = {number(w, '.2f', 'ru')}")
print(f"простое деление дало бы animal {number(2.0 / 3.5, '.2f', 'ru')}")

# The numbers above, as the prose states them.
expect("[round(x, 2) for x in it_exps.tolist()] == [7.39, 2.72, 1.65]", [round(x, 2) for x in it_exps.tolist()], "==", [7.39, 2.72, 1.65])
expect("round(float(it_exps.sum()), 2) == 11.76", round(float(it_exps.sum()), 2), "==", 11.76)
expect("[round(x, 2) for x in it_weights.tolist()] == [0.63, 0.23, 0.14]", [round(x, 2) for x in it_weights.tolist()], "==", [0.63, 0.23, 0.14])
REFERENCE.check("it_example.weights", it_weights, atol=1e-15)
expect("adding a constant must not change softmax", torch.allclose(softmax(it_scores + 1000.0), it_weights, atol=1e-15))
expect("the max shift must prevent overflow", torch.isfinite(softmax(torch.tensor([1000.0, 999.0]))).all())


show_figure(
    plot_it_weights(IT_WORDS, it_scores.tolist(), it_weights.tolist(), language=LANGUAGE),
    "Для каждого слова-кандидата серый заштрихованный столбец\xa0— его доля в исходных оценках, синий без штриховки\xa0— "
    "его вес softmax. Оценка animal всего вдвое выше, чем у tired, но внимания это слово получает почти втрое "
    "больше: возведение в экспоненту растягивает разрывы, поэтому внимание выбирает лучшее совпадение, оставляя "
    "немного и остальным.",
)

# %% tags=["hide-input"]
# @title Крайние случаи softmax: экстремальные оценки, каждая ось, скаляр (проверено; откройте, чтобы прочитать)
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
# ## 2 · Запросы, ключи и значения: поиск в библиотеке
#
# **Идея.** Каждый токен превращает свой вектор в три новых вектора, умножая его на три обучаемые
# матрицы:
#
# - **запрос** (query) — то, что ищет этот токен («it» ищет существительное, которое может устать);
# - **ключ** (key) — то, что этот токен предлагает остальным («animal» предлагает: существительное, живое);
# - **значение** (value) — то, что этот токен передаёт, когда его выбирают.
#
# Представьте библиотеку. Запрос — это то, что вы набираете в строке поиска, ключи — карточки каталога, а
# значения — книги на полках. Поиск возвращает не одну книгу, а *смесь* книг, взвешенную по тому,
# насколько хорошо каждая карточка совпала с набранным.
#
# Оценка одного токена для другого — это **скалярное произведение** его запроса на ключ другого токена:
#
# $$q \cdot k = \sum_{m=1}^{d_k} q_m k_m$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $q$, $k$ | запрос и ключ, каждый — список из $d_k$ чисел | $(1, 2)$ и $(3; 0{,}5)$ |
# | $d_k$ | их длина, размерность головы | $2$ |
# | $q_m$, $k_m$ | их $m$-е элементы | $q_1 = 1$, $k_1 = 3$ |
#
# **Вручную.** $(1, 2) \cdot (3; 0{,}5) = 1 \cdot 3 + 2 \cdot 0{,}5 = 4$. Векторы, смотрящие в одну сторону,
# дают большие положительные оценки, перпендикулярные векторы дают 0, противоположные — отрицательные
# оценки; именно поэтому скалярное произведение годится как мера релевантности.
#
# Соберём запросы всех токенов в матрицу $Q$, по одному в строке, и так же — $K$ и $V$. Все оценки сразу,
# отмасштабированные, превращённые в доли и использованные для смешивания значений, и дают всё внимание
# целиком:
#
# $$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$
#
# | Обозначение | Смысл | Форма |
# |---|---|---|
# | $n$ | число токенов | |
# | $d_k$, $d_v$ | размерность каждого запроса и ключа; размерность каждого значения | |
# | $Q$, $K$ | запросы всех токенов, ключи всех токенов, по одному в строке | $n \times d_k$ |
# | $V$ | значения всех токенов, по одному в строке | $n \times d_v$ |
# | $K^\top$ | транспонированная $K$: каждый ключ становится столбцом | $d_k \times n$ |
# | $Q K^\top$ | элемент $(i, j)$ — скалярное произведение запроса $i$ на ключ $j$: все оценки сразу | $n \times n$ |
# | $\sqrt{d_k}$ | делит оценки, чтобы их разброс не рос с размерностью (раздел 7) | число |
# | $\operatorname{softmax}(\cdot)$ | применяется к каждой строке, так что доли каждого запроса в сумме дают 1 | $n \times n$ |
# | $(\cdot) V$ | каждая строка выхода — смесь строк значений, взвешенная долями | $n \times d_v$ |
#
# **Вручную, целиком.** Возьмём $d_k = 4$. Пусть запрос «it» равен $(2, 0, 1, 1)$, а ключи animal, tired
# и street — $(1, 1, 1, 1)$, $(1, 0, 0, 0)$ и $(0, 1, 1, 0)$. Скалярные произведения равны $4$, $2$ и $1$;
# деление на $\sqrt{4} = 2$ даёт в точности оценки из раздела 1, $(2{,}0; 1{,}0; 0{,}5)$, а значит, и доли
# $(0{,}63; 0{,}23; 0{,}14)$. При значениях $(2, 0)$, $(0, 1)$ и $(1, 1)$ новое «it» равно
# $0{,}63 \cdot (2, 0) + 0{,}23 \cdot (0, 1) + 0{,}14 \cdot (1, 1) = (1{,}40; 0{,}37)$.
#
# **Формы** для одной последовательности из $n$ токенов размерности $d_{model}$; именно здесь прячется
# большинство ошибок:
#
# | Тензор | Форма | Смысл |
# |---|---|---|
# | $X$ | $(n, d_{model})$ | входные векторы токенов |
# | $W_q$, $W_k$ | $(d_{model}, d_k)$ | обучаемые проекции в запросы и ключи |
# | $W_v$ | $(d_{model}, d_v)$ | обучаемая проекция в значения |
# | $Q$, $K$ | $(n, d_k)$ | запросы, ключи |
# | $V$ | $(n, d_v)$ | значения |
# | $Q K^\top$, веса | $(n, n)$ | каждый токен против каждого токена, отсюда $n^2$; каждая строка весов в сумме даёт 1 |
# | выход | $(n, d_v)$ | по одному вектору с учётом контекста на каждый токен |

# %% tags=["hide-input"]
# @title Код рисунка следующей ячейки: plot_attention_flow (откройте, чтобы прочитать)
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
print(f"исходные оценки {number(raw.tolist(), '', 'ru')} -> масштабированные {number(scaled.tolist(), '', 'ru')} -> доли "
      f"{number([round(s, 2) for s in shares.tolist()], '', 'ru')}")
print(f"новое 'it' = {number([round(b, 2) for b in blend.tolist()], '', 'ru')}")

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
# @title Числа и формы библиотечного поиска, проверено (откройте, чтобы прочитать)
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
    "Следуйте за стрелками слева направо. Векторы токенов расходятся на три пути, и каждый умножается на свою "
    "обучаемую матрицу (жёлтые метки: W_q, W_k, W_v\xa0— обучаемые веса этой одной головы; у многих голов есть "
    "четвёртая, W_o, раздел 8). Запросы и ключи (синие блоки, верхние пути) встречаются в блоке оценок, где "
    "решается, что важно; оценки масштабируются, маскируются и построчно превращаются в доли. Значения (оранжевый "
    "блок, нижний путь) ждут нетронутыми на нижнем пути, пока доли не решат, сколько каждого из них войдёт в выход.",
)


# %% [markdown]
# ## 3 · Где стоит каждый токен? Синусоидальные позиции
#
# **Идея.** Само по себе внимание не чувствует порядка. Перемешайте токены — и выходы перемешаются
# точно так же (раздел 6 доказывает это на нашем же коде): «собака кусает человека» и «человек
# кусает собаку» выглядели бы одинаково. Исходный трансформер решает это, *прибавляя* к эмбеддингу
# каждого токена вектор позиции перед первым слоем. Каждая пара координат этого вектора — стрелка часов,
# которая с ростом позиции вращается со своей скоростью: быстрые стрелки различают соседей, медленные —
# далёкие друг от друга позиции, а вместе они дают каждой позиции свой узнаваемый рисунок.
#
# $$PE_{p,\,2i} = \sin\left(\frac{p}{b^{2i/d}}\right), \qquad PE_{p,\,2i+1} = \cos\left(\frac{p}{b^{2i/d}}\right)$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $p$ | позиция токена, считая с 0 | $0, 1, \dots, 4$ |
# | $d$ | размерность модели, чётная, чтобы координаты шли парами (синус, косинус) | $4$ |
# | $i$ | номер пары: координаты $2i$ (синус) и $2i+1$ (косинус) | $0$ или $1$ |
# | $b$ | основание, задающее самую медленную скорость | $10000$ |
# | $b^{2i/d}$ | сколько позиций уходит на один радиан поворота пары $i$; растёт с $i$ | $1$ и $100$ |
#
# **Вручную**, для $d = 4$: пара 0 поворачивается на один радиан за позицию, а пара 1 — на
# $10000^{-2/4} = 0{,}01$ радиана за позицию. Позиция 0 — это $(\sin 0, \cos 0, \sin 0, \cos 0) =
# (0, 1, 0, 1)$. Позиция 1 — это $(\sin 1, \cos 1, \sin 0{,}01, \cos 0{,}01) = (0{,}8415; 0{,}5403; 0{,}0100;
# 0{,}99995)$. Первая пара уже сильно повернулась, вторая почти не сдвинулась.
#
# Полезное следствие: сдвиг всех позиций на $k$ поворачивает каждую пару (синус, косинус) на один и тот же
# угол, какой бы ни была позиция. Фиксированный сдвиг — это фиксированный поворот, то есть линейное
# отображение, которое слой может выучить один раз и применять везде.

# %% tags=["exercise"]
# Exercise 1 · Упражнение 1: постройте таблицу синусоидальных позиций. Верните тензор (length, d_model), строка p которого
# кодирует позицию p: в столбце 2i стоит sin(p / base**(2i / d_model)), в столбце 2i+1 — косинус того
# же угла. Работайте с целыми тензорами (внешнее произведение позиций и частот), без циклов.
# Проверка требует: форма (length, d_model); позиция 0 равна (0, 1, 0, 1, ...); таблица совпадает с sin/cos
# с чередующимися парами для нескольких размеров; аргумент base задаёт частоты.
def sinusoidal_encoding(length, d_model, *, base=10_000.0, dtype=torch.float64):
    """The sinusoidal position table: one row per position, sine on even columns, cosine on odd ones."""
    length, d_model, base = _position_table_args(length, d_model, base, dtype)
    ### BEGIN SOLUTION
    position = torch.arange(length, dtype=dtype)[:, None]                         # (L, 1)
    frequency = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)     # (d/2,)
    angle = position * frequency                                                  # (L, d/2)
    table = torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1)             # (L, d/2, 2)
    return table.reshape(length, d_model)                                         # (L, d): sin, cos, sin, cos, ...
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 1: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
# @title Код рисунка следующей ячейки: plot_positions (откройте, чтобы прочитать)
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
print(f"sinusoidal_encoding({number(pe_length, '', 'ru')}, {number(pe_width, '', 'ru')}):")
print(small_table.numpy().round(5))
REFERENCE.check("positional_encoding.table", small_table, atol=1e-12)
expect("small_table[0].tolist() == [0.0, 1.0, 0.0, 1.0]", small_table[0].tolist(), "==", [0.0, 1.0, 0.0, 1.0])

# %% tags=["hide-input"]
# @title sinusoidal_encoding на границах (проверено; откройте, чтобы прочитать)
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
print(f"сдвиг каждой позиции на {number(offset, '', 'ru')} поворачивает каждую пару (sin, cos) на постоянный угол: проверено для всех 4 "
      "пар")


show_figure(
    plot_positions(pe.numpy(), language=LANGUAGE),
    "Каждый маркер\xa0— одна координата вектора позиции в целой позиции, слева (позиция 0) направо (позиция 80): "
    "синие точки\xa0— синусная координата пары, оранжевые квадраты\xa0— её косинус; тонкая кривая за маркерами (сплошная "
    "для синуса, штриховая для косинуса)\xa0— волна, значения которой они берут. Верхняя пара поворачивается на один "
    "радиан за позицию, поэтому различает соседей, но повторяется каждые 2π ≈ 6,3 позиции; нижняя пара вращается в "
    "100 раз медленнее и мало меняется между соседями, зато отличает позицию 10 от позиции 70.",
)


# %% [markdown]
# ## 4 · Кому на кого можно смотреть: маски
#
# **Идея.** Маска — это булева таблица, в которой одна строка на каждый запрос и один столбец на каждый
# ключ. `True` означает *можно смотреть*; каждой оценке с `False` перед softmax присваивается $-\infty$,
# так что её вес получается ровно 0. (Таково соглашение булевой `attn_mask` в `F.scaled_dot_product_attention`.
# Осторожно: `nn.MultiheadAttention` для обеих своих булевых масок, `attn_mask` и `key_padding_mask`,
# использует противоположное: там `True` означает *запрещено*.) Четыре маски покрывают почти все случаи:
#
# - **паддинг** (padding): последовательности в батче дополняются до одной длины; ни один запрос не должен читать
#   ключ-заполнитель;
# - **каузальная**: декодер предсказывает следующий токен, поэтому позиция $p$ может читать позиции $0..p$ и
#   никогда — будущее, иначе она могла бы просто списать ответ;
# - **каузальная со сдвигом запросов**: при генерации ключи и значения предыдущих токенов хранятся в кэше,
#   а запросы строятся только для новых токенов. Эти запросы стоят на *абсолютных* позициях $o, o+1, \dots$,
#   а не на $0, 1, \dots$, поэтому треугольник нужно сдвинуть на $o$;
# - **перекрёстное внимание** (cross-attention): запросы одной последовательности (декодера) читают ключи
#   другой (энкодера); между ними нет никакого «будущего», поэтому маскируется только паддинг энкодера.
#
# $$\text{allowed}_{r,j} = \left[\, j \le o + r \,\right]$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $r$ | строка: $r$-й переданный запрос, считая с 0 | $0$ |
# | $j$ | столбец: ключ на абсолютной позиции $j$ | $0, \dots, 4$ |
# | $o$ | сдвиг запросов: сколько предыдущих токенов уже лежит в кэше | $4$ |
# | $o + r$ | абсолютная позиция запроса $r$ | $4$ |
# | $[\,\cdot\,]$ | 1 (разрешено), если условие выполнено, иначе 0 (запрещено) | |
#
# **Вручную.** При 5 токенах и без сдвига строка $p$ разрешает $p + 1$ ключей, так что в треугольнике
# $1 + 2 + 3 + 4 + 5 = 15$ разрешённых элементов. Теперь декодируем пятый токен с кэшем: один запрос
# против 5 ключей. С правильным сдвигом $o = 4$ он может читать все 5 ключей. Забудьте про сдвиг — и он
# будет считаться позицией 0: прочитает 1 ключ и не увидит собственного прошлого.
#
# `is_causal=True` в PyTorch выравнивает треугольник по левому верхнему углу, когда запросов меньше, чем
# ключей. Это его задокументированное соглашение (тот же треугольник строит
# `torch.nn.attention.bias.causal_upper_left`): оно верно для целой последовательности и неверно для
# декодирования с кэшем, где это ровно забытый сдвиг. Для запросов из кэша передавайте маску явно (со
# сдвигом, как ниже) или готовое решение библиотеки, `causal_lower_right(t_q, t_k)` из того же модуля: его
# треугольник кончается в правом нижнем углу, а это и есть сдвиг $o = t_k - t_q$. Ячейка после упражнения
# показывает оба варианта.

# %% tags=["exercise"]
# Exercise 2 · Упражнение 2: постройте каузальную маску для t_q запросов и t_k ключей. Строка запроса r стоит на абсолютной
# позиции query_offset + r и может читать ключ j ровно тогда, когда j <= query_offset + r. Верните
# булев тензор формы (t_q, t_k), True там, где внимание разрешено. Сравнивайте сетки позиций, без циклов.
# Проверка требует: булев тензор формы (t_q, t_k); токен видит себя и прошлое, но никогда не будущее;
# запросы из кэша сохраняют абсолютные позиции; пошаговое декодирование даёт строки полной маски.
def causal_allowed(t_q, t_k, *, query_offset=0):
    """Causal mask for t_q queries at absolute positions query_offset.. over t_k keys: True = may attend."""
    t_q, t_k, query_offset = _causal_mask_args(t_q, t_k, query_offset)
    ### BEGIN SOLUTION
    query_position = query_offset + torch.arange(t_q)[:, None]  # (t_q, 1) absolute positions
    key_position = torch.arange(t_k)[None, :]                   # (1, t_k)
    return key_position <= query_position                       # (t_q, t_k)
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 2: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
# @title Код рисунка следующей ячейки: plot_masks; causal_lower_right из PyTorch (откройте, чтобы прочитать)
try:  # torch.nn.attention.bias: causal_upper_left is is_causal=True's triangle, causal_lower_right the cached queries' one
    from torch.nn.attention.bias import causal_lower_right
except ImportError:  # an older torch: the same triangle, built from this section's offset mask
    print(f"в torch {number(torch.__version__, '', 'ru')} нет torch.nn.attention.bias; causal_lower_right ниже\xa0— это маска со сдвигом")
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
print(f"разрешённых элементов: каузальная {number(int(ordinary.sum()), '', 'ru')}, декодирование без сдвига "
      f"{number(int(local_decode_wrong.sum()), '', 'ru')}, декодирование со сдвигом {number(int(cached_decode.sum()), '', 'ru')}")
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
print(f"is_causal=True при 1 запросе и 5 ключах читает только ключ 0: {number(torch.allclose(top_left, v5[:, :1]), '', 'ru')}; "
      "causal_lower_right(1, 5) из библиотеки совпадает с маской со сдвигом (все 5 ключей): "
      f"{number(torch.allclose(lower_right, with_offset), '', 'ru')}")
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
    "Строки\xa0— запросы, столбцы\xa0— ключи; зелёные клетки можно читать. Маска заполнения скрывает целые столбцы, "
    "каузальная маска\xa0— всё правее диагонали, а их сочетание оставляет только то, что разрешают обе. Перекрёстное "
    "внимание скрывает лишь столбец заполнения кодировщика. В нижнем ряду два закэшированных запроса на позициях 3 "
    "и 4 сохраняют сдвинутый треугольник (в середине), а is_causal=True из PyTorch при той же форме выравнивает "
    "его по левому верхнему углу и скрывает большую часть прошлого (справа).",
)

# %% tags=["hide-input"]
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
expect_raises(ValueError, causal_allowed, 0, 5, match="t_q")
expect_raises(ValueError, causal_allowed, 5, 5, query_offset=1, match="t_k")
expect_raises(ValueError, causal_allowed, 1, 2**40, match=f"the causal mask of shape (1, 1099511627776) would take {2**40:,} bytes")
expect_raises(ValueError, causal_allowed, 1, 2**28, match=f"the key positions of shape (268435456,) would take {2**28 * 8:,} bytes")

# %% [markdown]
# **Откуда берётся треугольник.** В видео Андрея Карпатого *Let's build GPT* каузальная маска выводится
# в три шага ([видео](https://www.youtube.com/watch?v=kCc8FmEb1nY), от «version 1» до «version 3»).
# Простейший способ для токена $t$ использовать своё прошлое — *усреднить* токены $0..t$. Записанное сразу
# для всех токенов, это среднее — произведение матриц: нижнетреугольная матрица, строка $t$ которой
# содержит $1/(t+1)$ в столбцах $0..t$ и 0 правее, умножается на векторы токенов. Та же матрица получается
# из softmax: дайте каждому разрешённому ключу оценку 0, а каждому будущему — $-\infty$, и каждая строка
# softmax окажется ровно этим равномерным средним. Внимание лишь заменяет нули обученными оценками
# $q \cdot k / \sqrt{d_k}$, так что среднее становится взвешенным, а $-\infty$ над диагональю — это и
# есть каузальная маска этого раздела.

# %%
tokens_x = torch.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=torch.float64)  # (T=4, 1): four tokens, one feature
lower = causal_allowed(4, 4).double()                                       # (4, 4) 1 on and below the diagonal
average = lower / lower.sum(dim=-1, keepdim=True)                          # row t: 1/(t+1) on keys 0..t
uniform_scores = torch.zeros(4, 4, dtype=torch.float64).masked_fill(~causal_allowed(4, 4), float("-inf"))
print(f"текущие средние 1, 2, 3, 4: {number((average @ tokens_x).flatten().tolist(), '', 'ru')}")
expect("softmax of zero scores with the future at -inf is the running average", torch.allclose(torch.softmax(uniform_scores, dim=-1), average, atol=1e-15))


# %% [markdown]
# ## 5 · Внимание на масштабированном скалярном произведении, с нуля
#
# **Идея.** Соберём разделы 1–4 вместе: вычислим оценки каждого запроса против каждого ключа, отмасштабируем
# их, заблокируем то, что запрещает маска, превратим каждую строку в доли и смешаем значения. Наша версия
# возвращает всё, что вычислила (выход, веса, отмасштабированные оценки и флаг для каждой пустой строки),
# чтобы можно было заглянуть внутрь. Без проверок всё это — одна строка,
# `softmax(q @ k.T / math.sqrt(d_k)) @ v`, и эта строка выполняется в каждом слое внимания каждой модели
# этого курса, по разу на голову: в Llama 3.1 8B — 32 слоя по 32 головы на каждый токен.
#
# Один случай требует решения. У строки запроса, все ключи которой *заблокированы* (например, у запроса
# паддинга), нет распределения, которое можно было бы взять: её softmax равнялся бы $0/0$. В этом ноутбуке
# политика явная: `empty_row="error"` (по умолчанию) бросает `ValueError` с номерами таких строк, а
# `empty_row="zero"` возвращает для них нулевые веса и нулевой выход с конечными градиентами. PyTorch
# решает иначе и молча: начиная с torch 2.5, `F.scaled_dot_product_attention` возвращает нули для
# полностью замаскированной строки на CPU и CUDA; torch 2.4 и более старые версии возвращали NaN, и
# эталонный код на Python в
# [его документации](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)
# по-прежнему так делает. Ячейка после упражнения показывает, как ведёт себя установленная у вас версия torch.
#
# $$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V, \qquad M_{r,j} = 0 \text{, если разрешено; } -\infty \text{, если запрещено}$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $Q$, $K$, $V$ | запросы, ключи, значения, по одной строке на токен | $3 \times 2$ каждая |
# | $d_k$ | размерность запроса и ключа | $2$, так что $\sqrt{d_k} \approx 1{,}414$ |
# | $M$ | маска в виде чисел: 0 там, где разрешено, $-\infty$ там, где запрещено | каузальная |
# | $e^{-\infty} = 0$ | почему заблокированный ключ получает ровно нулевой вес | |
#
# **Вручную.** Три токена, каузальная маска: $Q = K = \begin{pmatrix} 1 & 0 \\ 0 & 1 \\ 1 & 1 \end{pmatrix}$,
# $V = \begin{pmatrix} 1 & 0 \\ 0 & 2 \\ 3 & 1 \end{pmatrix}$.
#
# - Строка 0 может читать только ключ 0: оценка $1/\sqrt{2} = 0{,}7071$, вес 1, выход $v_0 = (1, 0)$.
# - Строка 1 читает ключи 0 и 1 с оценками $(0; 0{,}7071)$. Веса равны $1 / (1 + e^{0{,}7071}) =
#   0{,}3302$ и $0{,}6698$, так что выход равен $0{,}3302 \cdot (1, 0) + 0{,}6698 \cdot (0, 2) = (0{,}3302; 1{,}3395)$.
# - Строка 2 читает все три ключа, оценки $(0{,}7071; 0{,}7071; 1{,}4142)$, веса $(0{,}2483; 0{,}2483; 0{,}5035)$,
#   выход $(0{,}2483 + 3 \cdot 0{,}5035,\; 2 \cdot 0{,}2483 + 0{,}5035) = (1{,}7587; 1{,}0000)$.
#
# Код повторяет эти шаги один за другим. Он считает в float64, если хотя бы один вход имеет тип float64
# (иначе в float32), распространяет (broadcasting) q, k и v по их ведущим осям (батч, голова), включая ось,
# которая есть только у `v`, и перед возведением в экспоненту вычитает из каждой строки её наибольшую
# разрешённую оценку.

# %%
@dataclass(frozen=True)
class AttentionResult:
    """Everything one attention call computed: output (..., T_q, d_v), weights and scores (..., T_q, T_k), empty rows (..., T_q)."""

    output: torch.Tensor
    weights: torch.Tensor
    scores: torch.Tensor
    empty_rows: torch.Tensor


# %% tags=["hide-input"]
# @title _attention_inputs: проверки аргументов, трансляция форм и политика для пустых строк упражнения 3 (откройте, чтобы прочитать)
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
# Exercise 3 · Упражнение 3: напишите сердце механизма внимания. Проверки аргументов, broadcasting и политика пустых строк уже
# сделаны за вас; `allowed` — уже булев тензор полной формы оценок. Вычислите масштабированные оценки
# q @ kᵀ / sqrt(d_k), поставьте -inf в заблокированные оценки, возьмите softmax по оси ключей, который
# остаётся конечным на пустых строках (их веса должны быть 0, а не NaN), и смешайте значения.
# Проверка требует: выходы и градиенты совпадают с F.scaled_dot_product_attention во float64; строки
# в сумме дают 1; заблокированные ключи получают вес ровно 0 (заполнение -1e9 проходит так же, как -inf);
# ось батча только у V транслируется (broadcast); пустые строки по умолчанию вызывают ValueError, а с
# empty_row='zero' дают нулевые веса и выход с конечными градиентами; перестановка токенов переставляет выходы.
def scaled_dot_product_attention(q, k, v, allowed=None, *, empty_row="error"):
    """softmax(q kᵀ / sqrt(d_k), blocked keys at -inf) v, with an explicit policy for fully masked rows."""
    q, k, v, allowed, empty_rows = _attention_inputs(q, k, v, allowed, empty_row)  # checked; allowed is (..., T_q, T_k)
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])            # (..., T_q, T_k)
    scores = scores.masked_fill(~allowed, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True).masked_fill(empty_rows[..., None], 0.0)  # 0 on empty rows: no -inf - -inf
    exps = torch.exp(scores - top)                                         # exactly 0 where blocked
    total = exps.sum(dim=-1, keepdim=True).masked_fill(empty_rows[..., None], 1.0)
    weights = exps / total                                                 # rows sum to 1; empty rows stay 0
    output = weights @ v                                                   # (..., T_q, d_v)
    ### END SOLUTION
    # Only q·kᵀ can overflow (the weights then mix v's rows convexly, never beyond v): name that cause, never return NaN.
    require_finite_result("attention scores", scores.masked_fill(~allowed, 0.0), "q·kᵀ/√d_k overflowed its dtype (entries of q and k too large); scale the inputs down or use float64")
    return AttentionResult(output=output, weights=weights, scores=scores, empty_rows=empty_rows)


# %% tags=["hide-input"]
# @title Проверка упражнения 3: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
# @title Код рисунка следующей ячейки: plot_scores_and_weights (откройте, чтобы прочитать)
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
# @title Политика нулей на пустой строке, проверено (откройте, чтобы прочитать)
expect_raises(ValueError, scaled_dot_product_attention, Q_ref, K_ref, V_ref, empty, match="fully masked")
expect("zeroed.empty_rows.tolist() == [False, True, False]", zeroed.empty_rows.tolist(), "==", [False, True, False])
expect("torch.all(zeroed.weights[1] == 0)", torch.all(zeroed.weights[1] == 0))
expect("torch.all(zeroed.output[1] == 0)", torch.all(zeroed.output[1] == 0))
expect("torch.isfinite(zeroed.weights).all()", torch.isfinite(zeroed.weights).all())
expect("other rows must not change", torch.equal(zeroed.output[[0, 2]], result.output[[0, 2]]))

# %%
print(f"политика по умолчанию: ValueError ({number(message[:46], '', 'ru')}...)")
torch_row = F.scaled_dot_product_attention(Q_ref, K_ref, V_ref, attn_mask=empty)[1]
if bool(torch.isnan(torch_row).any()):
    torch_says = "NaN"
elif bool((torch_row == 0).all()):
    torch_says = "zeros"
else:
    torch_says = f"{torch_row.tolist()}"
print(f"torch {number(torch.__version__.split('+')[0], '', 'ru')} возвращает {number(torch_says, '', 'ru')} для полностью замаскированной строки; наша "
      "функция возвращает нули только по запросу (empty_row='zero')")


show_figure(
    plot_scores_and_weights(result.scores.numpy(), result.weights.numpy(), language=LANGUAGE),
    "Слева\xa0— масштабированные оценки примера из 3 токенов; клетки с −∞ закрыты каузальной маской. Справа\xa0— веса: "
    "каждая строка\xa0— это бюджет одного запроса, равный 1 и потраченный только на разрешённые ключи. Оценки строки "
    "1, 0 и 0,707, становятся весами 0,330 и 0,670; в строке 2 наибольшая оценка (1,414) забирает около половины "
    "внимания.",
)


# %% [markdown]
# **Всё предложение целиком.** Та же формула на всех десяти словах *«The animal didn't cross the street
# because it was tired»*, с запросами и ключами размерности 4, подобранными вручную так,
# чтобы картина что-то значила: запрос «it» после деления на $\sqrt{4}$ даёт «animal» оценку 2,0, «tired» —
# 1,0 и «street» — 0,5, ровно как в разделе 1. Картину меняют два переключателя. **Каузальная маска**
# скрывает каждое следующее слово: «tired» стоит после «it», поэтому его вес падает ровно до 0, а «animal»
# получает большую долю. **Температура** $T$ делит оценки перед softmax (раздел 13 использует её при
# сэмплировании): ниже 1 каждая строка сосредотачивается на одном слове, выше 1 — выравнивается к равномерному
# распределению.

# %% tags=["hide-input"]
# @title Код рисунка следующей ячейки: plot_sentence_attention (откройте, чтобы прочитать)
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
print(f"оценки 'it' для animal, tired, street: {number(it_scores_here.tolist(), '', 'ru')}")
for (causal, temperature), row in it_row.items():
    print(f"маска {number('on ' if causal else 'off', '', 'ru')} T = {number(temperature, '', 'ru')}: 'it' даёт animal {number(float(row[animal]), '.3f', 'ru')}, tired "
          f"{number(float(row[tired]), '.3f', 'ru')}, street {number(float(row[street]), '.3f', 'ru')}; наибольший вес {number(float(row.max()), '.3f', 'ru')}")

# %% tags=["hide-input"]
# @title Утверждения текста об «it», маске и температуре, проверено (откройте, чтобы прочитать)
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
    "Шесть тепловых карт одного и того же предложения: строки\xa0— слово, которое смотрит, столбцы\xa0— слово, на "
    "которое смотрят, а более тёмные клетки несут большую часть бюджета строки, равного 1. Оранжевая рамка\xa0— "
    "строка «it». Верхний ряд, без маски: «it» распределяет вес по всему предложению, "
    f"{number(float(it_row[False, 1.0][animal]), '.2f', 'ru')} на «animal» при T = 1. Нижний ряд, каузальная маска: всё правее "
    "диагонали равно ровно 0, «tired» выпадает из строки «it», а «animal» поднимается до "
    f"{number(float(it_row[True, 1.0][animal]), '.2f', 'ru')}. Слева направо температура растёт от 0,5 до 2: строки из почти one-hot "
    "расплываются в равномерную заливку.",
)

# %% [markdown]
# ## 6 · Сверяемся с PyTorch
#
# **Идея.** Совпадение с PyTorch на одном примере мало что доказывает; контракт формулирует *свойства*,
# которыми обязано обладать любое корректное внимание, и проверяет каждое на входах, подобранных так,
# чтобы выявить типичные ошибки. `check_attention_contract`, который оценивал упражнение 3, проверяет
# пять таких свойств:
#
# | Свойство | Что сравнивается | Какую ошибку ловит |
# |---|---|---|
# | выходы и градиенты | наша реализация против `F.scaled_dot_product_attention` во float64, для батча × голов = 2 × 2 с каузальной маской для запросов при работе с кэшем; а также градиенты по q, k и v | масштабирование на $d_k$ вместо $\sqrt{d_k}$, softmax не по той оси, маскирование после softmax, `detach()` |
# | ось батча, которая есть только у V | q и k с батчем 1 против v и маски с батчем 2 | форма батча, взятая только из q и k |
# | градиенты на нулевых строках | при `empty_row="zero"` все градиенты остаются конечными, а пустой запрос не получает никакого | $e^{-\infty - (-\infty)} = $ NaN при обратном проходе |
# | геометрия запросов при работе с кэшем | запросы 3 и 4 отдельно против всех 5 ключей, со строками 3 и 4 каузальной маски, совпадают с двумя последними строками полного прогона; маска, выровненная по левому верхнему углу, — нет | построение маски декодирования по локальным позициям |
# | эквивариантность относительно перестановок | без маски перестановка токенов переставляет выходы точно так же | скрытая позиционная добавка внутри внимания |
#
# $$\operatorname{Attention}(P Q, P K, P V) = P \operatorname{Attention}(Q, K, V)$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $P$ | матрица перестановки: она переупорядочивает строки (токены) | порядок $[2, 0, 4, 1, 3]$ |
# | $PQ$, $PK$, $PV$ | те же токены, поданные в новом порядке | 5 токенов размерности 4 |
#
# **Вручную.** Смесь из раздела 2 не зависит от порядка: это взвешенная *сумма*, а сумме безразлично, в
# каком порядке идут слагаемые. Если переупорядочить ключи и значения согласованно, слагаемые каждой суммы
# переставятся, а сама сумма не изменится; если переупорядочить запросы, переставятся строки выхода. Вот
# почему к токенам нужно добавлять позиции (раздел 3): само по себе внимание порядка не видит.
#
# Ячейка ниже повторяет проверки в открытую, на свежих случайных входах, и печатает каждую измеренную
# ошибку в единицах шага округления float64: несколько единиц означают то же самое число, посчитанное в
# другом порядке, а неверная маска ошибается примерно на $10^{15}$ единиц.

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
# @title Перестановки, broadcasting, типы данных и переполнение, проверено (откройте, чтобы прочитать)
# Permutation equivariance, and a batch axis that only V has.
order = torch.tensor([2, 0, 4, 1, 3])
plain = scaled_dot_product_attention(tq, tk, tv).output
shuffled = scaled_dot_product_attention(tq[order], tk[order], tv[order]).output
permutation_error = float((shuffled - plain[order]).abs().max())
print(f"переставленные входы дают переставленные выходы: наибольшая разница {number(permutation_error, '.1e', 'ru')}")
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
print(f"{number('comparison', '<42', 'ru')} {number('largest |difference|', '>20', 'ru')} {number('in epsilons', '>12', 'ru')}   вердикт")
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
print("Читайте последний столбец: несколько эпсилон\xa0— это то же число, посчитанное в другом порядке; неверная маска "
      f"отличается примерно на {number(measured['wrong_cache_mask_max_error'] / EPSILON, '.0e', 'ru')} эпсилон\xa0— это другой ответ.")

# %% tags=["hide-input"]
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
expect_raises(ValueError, scaled_dot_product_attention, torch.zeros(2), q3, q3, match="dimensions")
expect_raises(TypeError, scaled_dot_product_attention, q3, q3, q3, torch.ones(3, 3, dtype=torch.bool, device="meta"), match="CPU")
expect_raises(ValueError, scaled_dot_product_attention, torch.zeros(6, 2), q3, q3, torch.zeros(6, 3, dtype=torch.bool),
              match="(first ones at [[0], [1], [2], [3]]);")  # the message lists the first four empty rows
expect_raises(FloatingPointError, scaled_dot_product_attention, torch.full((1, 2), 1e20), torch.full((2, 2), 1e20), torch.ones(2, 1), match="overflowed")


# %% [markdown]
# ## 7 · Зачем делить на √d_k?
#
# **Идея.** Бросьте один кубик — результат окажется между 1 и 6. Сложите сотню кубиков — и сумма уйдёт от
# своего среднего 350 гораздо дальше: её стандартное отклонение равно $\sqrt{100 \cdot 35/12} \approx 17$
# (дисперсия одного кубика равна $35/12$, а дисперсии независимых кубиков складываются), так что суммы,
# отстоящие от 350 на 17 и больше, — обычное дело. Скалярное произведение и есть такая сумма:
# по одному небольшому произведению на координату. Чем шире голова, тем больше слагаемых и тем сильнее
# размах оценок. Большой размах вредит softmax: оценки вроде $(16, 3, -9)$ отдают практически
# весь вес одному ключу, прав он или нет. Хуже того, softmax тогда перестаёт реагировать на свой вход. Его
# производная (якобиан — сигнал, который обучение посылает обратно к запросам и ключам) равна
# $\operatorname{diag}(p) - p p^\top$, и когда одна доля равна 1, а остальные 0, каждый элемент этой
# матрицы равен 0: softmax *насыщен*, и градиенту, который должен учить запросы и ключи, приходится
# проходить через этот ноль. Ячейка измеряет якобиан, а затем градиент, который на самом деле доходит до
# каждого запроса.
#
# $$\operatorname{Var}(q \cdot k) = d_k \quad \Longrightarrow \quad \operatorname{Var}\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = 1$$
#
# | Обозначение | Смысл |
# |---|---|
# | $\operatorname{Var}(x)$ | дисперсия: средний квадрат отклонения $x$ от среднего; корень из неё, стандартное отклонение, — типичный размах колебаний |
# | $q \cdot k$ | «сырая» оценка, для $q$ и $k$ с независимыми элементами со средним 0 и дисперсией 1 |
# | $d_k$ | число складываемых произведений: дисперсия каждого равна 1, а дисперсии независимых слагаемых складываются |
# | $\sqrt{d_k}$ | деление на $c$ делит дисперсию на $c^2$; здесь $c^2 = d_k$ |
# | $\operatorname{diag}(p) - p p^\top$ | якобиан softmax в точке долей $p$: элемент $(i, j)$ показывает, как меняется доля $i$, когда меняется оценка $j$ |
#
# **Вручную.** Возьмём $d_k = 4$ и элементы $\pm 1$. Каждое из четырёх произведений равно $+1$ или $-1$, и
# 16 равновероятных наборов знаков дают суммы $-4, -2, 0, 2, 4$ с частотами $1, 4, 6, 4, 1$.
# Их дисперсия равна $(16 + 4 \cdot 4 + 0 + 4 \cdot 4 + 16) / 16 = 4 = d_k$. Деление каждой суммы на
# $\sqrt{4} = 2$ делит дисперсию на 4, до 1. При $d_k = 128$ «сырое» стандартное отклонение равно
# $\sqrt{128} \approx 11{,}3$: типичная сырая оценка — около $\pm 11$, типичная отмасштабированная — около $\pm 1$.
#
# Ячейка проверяет это тремя способами: точно, перебирая все 16 наборов; методом Монте-Карло, с эталонным
# зерном генератора и допуском; и измеряя само насыщение на размерностях от 2 до 1024 (16 ключей, 400 случайных
# запросов на каждую размерность), с масштабированием и без него.

# %% tags=["hide-input"]
# @title Код рисунка и ручные проверки следующей ячейки: _saturation_by_hand, plot_saturation (откройте, чтобы прочитать)
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
# **Предскажите, потом запустите (1).** Прежде чем запускать следующую ячейку с кодом, которая измеряет
# насыщение: без деления на $\sqrt{d_k}$, при $d_k = 512$, какую долю своего внимания типичный запрос
# отдаёт лучшему ключу из 16 случайных? (a) около $1/16 \approx 0{,}06$, как будто ключи равны;
# (b) около половины; (c) почти всё, так что его строка тепловой карты — одна тёмная клетка. Впишите
# букву в ячейку ниже и запустите её; ячейка после рисунка её проверит.

# %%
PREDICTION_UNSCALED_512 = None  # your answer: "a", "b" or "c"


# %% tags=["hide-input"]
# @title judge_prediction: как прогноз сравнивается с измерением (откройте, чтобы прочитать)
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
    verdicts = [judge_prediction("проверочный пример", given, "c", "почему") for given in (" C", "a", None)]
expect("judge_prediction: a right, a wrong and a missing prediction", (verdicts, printed.getvalue().count("\n")), "==", ([True, False, None], 3))

# %%
# 1) Exactly: every sign pattern of four ±1 products.
sums = [sum(signs) for signs in itertools.product((-1, 1), repeat=4)]
exact = torch.tensor(sums, dtype=torch.float64)
print(f"d_k = 4: частоты сумм -4..4: {number([sums.count(s) for s in (-4, -2, 0, 2, 4)], '', 'ru')}, дисперсия "
      f"{number(float(exact.var(unbiased=False)), '.0f', 'ru')}, после масштабирования {number(float((exact / 2).var(unbiased=False)), '.0f', 'ru')}; "
      f"sqrt(128) = {number(math.sqrt(128), '.1f', 'ru')}")
expect("[sums.count(s) for s in (-4, -2, 0, 2, 4)] == [1, 4, 6, 4, 1]", [sums.count(s) for s in (-4, -2, 0, 2, 4)], "==", [1, 4, 6, 4, 1])
expect("float(exact.var(unbiased=False)) == 4.0", float(exact.var(unbiased=False)), "==", 4.0)
expect("float((exact / 2).var(unbiased=False)) == 1.0", float((exact / 2).var(unbiased=False)), "==", 1.0)
die = torch.arange(1, 7, dtype=torch.float64)
expect("a die's variance is 35/12, so 100 dice stray by sqrt(100 · 35/12) ≈ 17", (float(die.var(unbiased=False)), round(math.sqrt(100 * float(die.var(unbiased=False))))), "==", (35 / 12, 17))
spread = softmax(torch.tensor([16.0, 3.0, -9.0], dtype=torch.float64))
print(f"softmax(16, 3, -9) = {number([f'{p:.6f}' for p in spread.tolist()], '', 'ru')}: один ключ забирает практически всё")
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
print(f"d_k = {number(d_k, '', 'ru')}, {number(samples, ',', 'ru')} пар: Var(q·k) = {number(unscaled_variance, '.2f', 'ru')}, Var(q·k/√d_k) = {number(scaled_variance, '.3f', 'ru')}")
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
# @title softmax_jacobian и jacobian_norm против autograd и расчёта вручную (проверено; откройте, чтобы прочитать)
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
print(" d_k | без масштаба: наибольший вес, якобиан | с масштабом: наибольший вес, якобиан")
for width in WIDTHS:
    u, s = by_key[width, False], by_key[width, True]
    print(f"{width:>4} | {u['max_weight']:>19.3f}  {u['jacobian_norm']:.3f} | {s['max_weight']:>17.3f}  {s['jacobian_norm']:.3f}")
shrink_512 = by_key[512, True]["jacobian_norm"] / by_key[512, False]["jacobian_norm"]
shrink_1024 = by_key[1024, True]["jacobian_norm"] / by_key[1024, False]["jacobian_norm"]
scaled_tops = [by_key[w, True]["max_weight"] for w in WIDTHS]
print(f"при d_k = 512 без масштаба: наибольший вес {number(by_key[512, False]['max_weight'], '.2f', 'ru')}, градиент в\xa0{number(shrink_512, '.1f', 'ru')}"
      f"\xa0раза меньше, чем с масштабом; при 1024: {number(by_key[1024, False]['max_weight'], '.2f', 'ru')} и {number(shrink_1024, '.1f', 'ru')}x; "
      f"наибольший вес с масштабом остаётся в [{number(min(scaled_tops), '.2f', 'ru')}, {number(max(scaled_tops), '.2f', 'ru')}]")

# %% tags=["hide-input"]
# @title Числа из текста и наименьшие случаи против пересчёта (проверено; откройте, чтобы прочитать)
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
    "Размерность головы d_k отложена по обеим осям x в логарифмическом масштабе. Слева: средний наибольший вес "
    "внимания по 16 ключам, где 1,0 означает всё внимание на одном ключе. Справа: величина якобиана softmax "
    "∂p/∂s\xa0— насколько сильно доли откликаются на оценки. Немасштабированные оценки (красные кружки, сплошная "
    "линия) с ростом размерности головы приближаются к one-hot, и их якобиан сжимается; масштабированные (синие "
    "квадраты, штриховая линия) остаются ровными при любой размерности. При размерностях от 2 до 8 красная линия "
    "выше синей, потому что там немасштабированные оценки умеренно разбросаны\xa0— при таком разбросе softmax "
    "откликается сильнее всего,\xa0— а масштабированные почти равномерны.",
)

# %%
top_512 = by_key[512, False]["max_weight"]
answer_512 = "a" if top_512 < 0.2 else "b" if top_512 < 0.75 else "c"
judge_prediction("Предскажите, затем запустите (1)", PREDICTION_UNSCALED_512, answer_512,
                 f"без масштабирования лучший из 16 ключей забирает {number(top_512, '.0%', 'ru')} внимания запроса при d_k = 512 (с "
                 f"масштабированием: {number(by_key[512, True]['max_weight'], '.0%', 'ru')}); исходные оценки разбросаны примерно на √512 ≈ 23, "
                 "так что один ключ побеждает безоговорочно.")
expect("the measurement behind the answer: unscaled at 512, nearly all weight on one key", answer_512, "==", "c")

# %% tags=["hide-input"]
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
expect_raises(ValueError, jacobian_norm, torch.tensor(0.5), match="dimensions")
expect_raises(ValueError, softmax_jacobian, torch.zeros(1, 2**15).expand(8, 2**15), match=f"of shape (8, 32768, 32768) would take {8 * 2**30 * 4:,} bytes")
for outside in ([-0.5, 0.5], [1.5, 0.0]):
    expect_raises(ValueError, jacobian_norm, torch.tensor(outside), match="[0, 1]")
    expect_raises(ValueError, softmax_jacobian, torch.tensor(outside), match="[0, 1]")
for bad in ({"widths": (0,)}, {"widths": ()}, {"n_keys": 1}, {"trials": 0}, {"seed": -1}):
    expect_raises(ValueError, saturation_experiment, **{"widths": (4,), "n_keys": 2, "trials": 1, **bad})
expect_raises(ValueError, saturation_experiment, (1, 2**40), n_keys=2, trials=1, match=f"would take {2 * 2**40 * 12:,} bytes")


# %% [markdown]
# **Что говорят числа.** Без масштабирования наибольший вес растёт с 0,31 при размерности 2 до 0,94 при размерности
# 512 и 0,97 при 1024, а якобиан — чувствительность долей к оценкам $\partial p / \partial s$ —
# уменьшается до 1/3,7 от значения с масштабированием при 512 и до 1/7,4 при 1024. С
# масштабированием наибольший вес на любой размерности остаётся между 0,23 и 0,25. На размерностях от 2 до 8 красная
# кривая на правом графике лежит *выше* синей: неотмасштабированные оценки с дисперсией от 2 до 8 разбросаны
# как раз настолько, чтобы softmax реагировал сильнее всего, а отмасштабированные оценки с дисперсией 1 на 16
# ключах дают почти равномерные доли, у которых якобиан тоже мал. Якобиан максимален посередине: когда доли
# ни равномерны, ни сосредоточены в одной точке (one-hot).
#
# **Что на самом деле получают запросы.** Якобиан — лишь один множитель градиента. Обучению нужен
# $\partial L / \partial q$ — градиент, который доходит до каждого запроса через оценки, доли и значения.
# Следующая ячейка измеряет его напрямую: 400 запросов на каждую размерность, каждый против 16 случайных ключей и
# значений, с функцией потерь $L = \langle \text{output}, r \rangle$ для случайного направления $r$ (любая
# функция потерь доходит до выхода именно так), с масштабированием и без.

# %% tags=["hide-input"]
# @title Код рисунка и ручные проверки следующей ячейки: _query_gradients_by_hand, plot_query_gradients (откройте, чтобы прочитать)
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
# @title Глубже (по желанию): градиент, который получает каждый запрос, измеренный при разных размерностях (откройте, чтобы прочитать)
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
print(" d_k | медиана |dL/dq| без масштаба, с масштабом | запросы без масштаба ниже 1% медианы с масштабом")
for width in WIDTHS:
    print(f"{width:>4} | {float(query_gradients[width, False].median()):>10.3g} {float(query_gradients[width, True].median()):>8.3g} | "
          f"{almost_none[width]:.2f}")
print(f"при d_k = 512: медианный запрос без масштаба получает в {number(median_ratio_512, '.0f', 'ru')}x меньше градиента, чем с "
      f"масштабом, {number(almost_none[512], '.0%', 'ru')} получают почти ничего, а наибольший получает {number(largest_512[0], '.0f', 'ru')} против "
      f"{number(largest_512[1], '.0f', 'ru')} с масштабом")
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
print(f"пять зёрен при d_k = 512: доля ниже 1% медианы с масштабом {number([f'{s:.0%}' for s in starving], '', 'ru')}; медианный "
      f"множитель {number([f'{f:.0f}x' for f in factors], '', 'ru')}")
expect("in every seed between 40% and 50% of the unscaled queries starve", all(0.40 <= s <= 0.50 for s in starving))
per_root = [float(query_gradients[w, True].median()) / math.sqrt(w) for w in WIDTHS if w >= 32]
expect("the scaled median grows like sqrt(d_k) (the loss's direction r): within 10% of flat from width 32 on", max(per_root) / min(per_root), "<", 1.1)
if not max(almost_none[w] for w in WIDTHS if w <= 8) <= 0.01:
    raise AssertionError(f"at narrow widths no unscaled query should starve; measured {[almost_none[w] for w in WIDTHS if w <= 8]}")


show_figure(
    plot_query_gradients(query_gradients, WIDTHS, language=LANGUAGE),
    "Каждая линия\xa0— медианный градиент, который получает один запрос, закрашенная полоса\xa0— средние 80% из 400 "
    "запросов, обе оси логарифмические. С масштабированием (синие квадраты, штриховая линия) градиент плавно "
    "растёт с размерностью, а полоса остаётся узкой. Без масштабирования (красные кружки, сплошная линия) медиана "
    f"при d_k = 128 и 256 ещё {number(float(query_gradients[128, False].median()), '.2f', 'ru')} и "
    f"{number(float(query_gradients[256, False].median()), '.2f', 'ru')}, а обваливается лишь при 512, до "
    f"{number(float(query_gradients[512, False].median()), '.2f', 'ru')}; полоса шире на порядки: при d_k = 512 "
    f"{number(almost_none[512], '.0%', 'ru')} запросов получают почти ничего (softmax насыщен), а немногие, у которых две лучшие "
    "оценки близки, получают градиенты намного больше, чем любой масштабированный запрос. Обучение без "
    "масштабирования не везде медленное; оно непредсказуемое.",
)

# %% tags=["hide-input"]
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
for bad in ({"widths": (0,)}, {"widths": ()}, {"n_keys": 1}, {"trials": 0}, {"seed": -1}):
    expect_raises(ValueError, query_gradient_experiment, **{"widths": (4,), "n_keys": 2, "trials": 1, **bad})
expect_raises(ValueError, query_gradient_experiment, (1, 2**40), n_keys=2, trials=1, match=f"would take {2 * 2**40 * 20:,} bytes")


# %% [markdown]
# Коротко: скалярные произведения растут с размерностью, большие оценки насыщают softmax, и тогда градиент,
# доходящий до запросов, не просто становится меньше, а распределяется неравномерно. При $d_k = 512$ около половины
# запросов не получают почти ничего (меньше 1% от медианы с масштабированием; от 40% до 50% в каждом из
# пяти seed, которые берёт ячейка), а немногие получают обновления в десятки раз больше, чем любой запрос с
# масштабированием. Медианный запрос получает в десятки раз меньше, чем с масштабированием, но этот
# множитель сильно гуляет от выборки к выборке (ячейка печатает его для пяти seed), поэтому запоминать
# стоит долю голодающих запросов. Кривая с масштабированием плавно растёт с размерностью по причине самого
# измерения, а не внимания: функция потерь умножает выход скалярно на случайное направление $r$ из $d_k$
# элементов, длина которого растёт как $\sqrt{d_k}$; после деления на $\sqrt{d_k}$ медиана с
# масштабированием постоянна начиная с размерности 32 (ячейка это проверяет). Деление на $\sqrt{d_k}$ держит каждый запрос в области, где
# softmax гладок и обучаем.

# %% [markdown]
# ## 8 · Много голов: многоголовое внимание, внимание с группировкой запросов и внимание с одной KV-головой
#
# **Идея.** Одно внимание с запросами размерностью во всю модель может вычислить за слой только один вид
# смешивания. Вместо этого разобьём размерность на $H$ узких **голов**, у каждой из которых свои проекции и своё
# внимание. Общий объём работы остаётся примерно тем же, а каждая голова может специализироваться: одна
# следит за предыдущим токеном, другая связывает местоимение с его существительным. Выходы голов затем
# склеиваются бок о бок и смешиваются одной выходной матрицей $W_o$, так что выход блока снова имеет
# размерность модели и блоки можно ставить друг на друга.
#
# При генерации ключи и значения каждой головы кэшируются для каждого токена, поэтому кэш растёт с числом
# KV-голов. **Внимание с группировкой запросов (GQA)** позволяет группе голов запросов делить одну
# KV-голову; **внимание с одной KV-головой (multi-query attention, MQA)** — крайний случай, когда одна
# KV-голова общая для всех. Головы запросов по-прежнему задают свои собственные вопросы; они лишь читают
# из общего набора ключей и значений.
#
# $$\text{head}_h = \operatorname{Attention}\left(X W_q^{(h)},\; X W_k^{(g(h))},\; X W_v^{(g(h))}\right), \qquad g(h) = \left\lfloor \frac{h}{H / H_{kv}} \right\rfloor$$
#
# $$\operatorname{MHA}(X) = \left[\text{head}_0, \dots, \text{head}_{H-1}\right] W_o$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $H$ | число голов запросов | $8$ |
# | $H_{kv}$ | число KV-голов: $H$ для MHA, меньше для GQA, 1 для MQA; должно делить $H$ | $8$, $2$, $1$ |
# | $d_{head}$ | размерность каждой головы, $d_{model} / H$ | $64 / 8 = 8$ |
# | $W_q^{(h)}$, $W_k^{(g)}$, $W_v^{(g)}$ | проекции головы запросов $h$ и KV-головы $g$, каждая размера $d_{model} \times d_{head}$ | $64 \times 8$ |
# | $g(h)$ | KV-голова, из которой читает голова запросов $h$; соседние головы запросов делят одну | $g(5) = \lfloor 5 / 4 \rfloor = 1$ при $H_{kv} = 2$ |
# | $[\cdot, \dots, \cdot]$ | конкатенация по признакам | размерность $8 \cdot 8 = 64$ |
# | $W_o$ | выходная проекция, которая смешивает головы | $64 \times 64$ |
#
# **Вручную.** При $d_{model} = 64$ и $H = 8$ головах размерности 8 проекции ключей и значений содержат
# $2 \cdot 64 \cdot (8 \cdot H_{kv})$ весов: 8192 для MHA ($H_{kv} = 8$), 2048 для GQA с 2 KV-головами,
# 1024 для MQA. Кэш на токен уменьшается во столько же раз: в 4 и 8 раз. В Llama 3.1 8B на 32 головы
# запросов приходится 8 KV-голов: кэш в 4 раза меньше, чем при полном многоголовом внимании.
#
# Именно на изменениях формы (reshape) многоголовый код и ломается, поэтому они вынесены в упражнения.
# Держите в голове порядок осей `(batch, heads, tokens, width)`: именно его ожидает
# `scaled_dot_product_attention`, и головы для него — просто ещё одна ось батча.

# %% tags=["exercise"]
# Exercise 4 · Упражнение 4: Три перехода между раскладками голов, по одной-две строки каждый. split_heads принимает x формы
# (..., T, n_heads * d_head) и возвращает (..., n_heads, T, d_head), где голова h токена t содержит признаки
# h*d_head .. (h+1)*d_head - 1 этого токена; индексируйте оси с конца, чтобы ведущие оси проходили насквозь.
# merge_heads — в точности обратное к ней, (..., n_heads, T, d_head) -> (..., T, n_heads * d_head), сначала
# признаки головы 0. repeat_kv_heads принимает (..., H_kv, T, d) и возвращает (..., H_kv * group, T, d), где
# голова запросов h читает KV-голову h // group.
# Проверки требуют: голова h токена t содержит ровно свой блок признаков при любых ведущих осях;
# слияние непрерывного (contiguous) выхода внимания в точности отменяет split_heads; голова запросов h видит
# KV-голову h // group для нескольких форм и размеров групп; а group, не являющийся положительным целым,
# вызывает TypeError или ValueError.
def split_heads(x, n_heads):
    """(..., T, H·d) -> (..., H, T, d): one slab of features per head."""
    x, n_heads = _split_heads_args(x, n_heads)
    ### BEGIN SOLUTION
    heads = x.unflatten(-1, (n_heads, x.shape[-1] // n_heads))  # (..., T, H, d)
    return heads.transpose(-3, -2)                               # (..., H, T, d)
    ### END SOLUTION


def merge_heads(x):
    """(..., H, T, d) -> (..., T, H·d): the heads side by side again."""
    x = require_tensor("x", x, min_ndim=3, finite=False)
    ### BEGIN SOLUTION
    return x.transpose(-3, -2).flatten(-2)  # (..., T, H, d) -> (..., T, H·d)
    ### END SOLUTION


def repeat_kv_heads(x, group):
    """(..., H_kv, T, d) -> (..., H_kv·group, T, d): K/V head g serves query heads g·group .. (g+1)·group - 1."""
    x, group = _repeat_kv_args(x, group)
    ### BEGIN SOLUTION
    return x.repeat_interleave(group, dim=-3)  # (..., H_kv·group, T, d)
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 4: контракты, которым должны отвечать ваши три функции (откройте, чтобы прочитать свойства)
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
# @title Самые маленькие формы, которые принимают split_heads, merge_heads и repeat_kv_heads (проверено; откройте, чтобы прочитать)
# The smallest shapes each move accepts, NaN passing through untouched (a reshape cannot create it), and one too small.
nan_row = torch.tensor([[float("nan"), 1.0, 2.0, 3.0]])                     # (T=1, 4)
expect("split_heads of one token into 2 heads", split_heads(nan_row, 2).shape, "==", (2, 1, 2))
expect("split_heads with one head keeps the features", torch.allclose(split_heads(nan_row, 1)[0], nan_row, equal_nan=True))
expect("merge_heads of (H, T, d) = (2, 1, 2) undoes the split", torch.allclose(merge_heads(split_heads(nan_row, 2)), nan_row, equal_nan=True))
expect("repeat_kv_heads of (H_kv, T, d) = (2, 1, 2) by 2", repeat_kv_heads(split_heads(nan_row, 2), 2).shape, "==", (4, 1, 2))
expect("repeat_kv_heads by 1 changes nothing", torch.allclose(repeat_kv_heads(split_heads(nan_row, 2), 1), split_heads(nan_row, 2), equal_nan=True))

# %% tags=["hide-input"]
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
expect_raises(ValueError, split_heads, torch.zeros(4), 2, match="dimensions")
expect_raises(ValueError, repeat_kv_heads, torch.zeros(3, 4), 2, match="dimensions")
# The repeated copy is budgeted first: (2, 3·2**40, 4, 5) float32.
expect_raises(ValueError, repeat_kv_heads, torch.zeros(2, 3, 4, 5), 2**40, match=f"of shape (2, {3 * 2**40}, 4, 5) would take {2 * 3 * 2**40 * 20 * 4:,} bytes")


# %% tags=["exercise"]
# Exercise 5 · Упражнение 5: Напишите MultiHeadSelfAttention.forward из частей, собранных выше. Постройте булеву маску
# (паддинг из token_valid для ключей и для запросов; каузальный треугольник, если self.causal), спроецируйте
# x в запросы, ключи и значения, разбейте их на головы, дайте каждой группе голов запросов делить свою
# KV-голову, запустите scaled_dot_product_attention, передав empty_row дальше, слейте головы и
# примените out_proj. Проверка требует: выход равен независимому многоголовому вниманию, построенному из собственных
# весов слоя (float64, 4 головы запросов на 2 KV-головы, каузальное); return_weights=True возвращает
# (output, веса формы (B, H, T, T)); ключи паддинга никогда не читаются, а запросы паддинга дают нулевые строки.
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
        ### BEGIN SOLUTION
        allowed = torch.ones(batch, 1, length, length, dtype=torch.bool)          # (B, 1, T, T), broadcast over heads
        if token_valid is not None:
            allowed = allowed & token_valid[:, None, None, :] & token_valid[:, None, :, None]  # padding keys and padding queries
        if self.causal:
            allowed = allowed & causal_allowed(length, length)
        group = self.n_heads // self.n_kv_heads
        q = split_heads(self.q_proj(x), self.n_heads)                                  # (B, H, T, d)
        k = repeat_kv_heads(split_heads(self.k_proj(x), self.n_kv_heads), group)     # (B, H, T, d)
        v = repeat_kv_heads(split_heads(self.v_proj(x), self.n_kv_heads), group)     # (B, H, T, d)
        result = scaled_dot_product_attention(q, k, v, allowed, empty_row=empty_row)
        output = self.out_proj(merge_heads(result.output).to(x.dtype))                 # (B, T, d_model)
        return (output, result.weights) if return_weights else output
        ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 5: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
# @title Код рисунков следующей ячейки: plot_head_sharing, plot_split_merge (откройте, чтобы прочитать)
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
    print(f"{number(name, '', 'ru')}: KV-голов {number(layer.n_kv_heads, '', 'ru')}, выход {number(tuple(y.shape), '', 'ru')}, веса {number(tuple(w.shape), '', 'ru')}, веса K+V "
          f"{number(layer.kv_parameter_count(), ',', 'ru')}")
kv_counts = [layer.kv_parameter_count() for layer in layers.values()]
expect("kv_counts == [8192, 2048, 1024]", kv_counts, "==", [8192, 2048, 1024])
expect("kv_counts[0] // kv_counts[1] == 4", kv_counts[0] // kv_counts[1], "==", 4)
expect("kv_counts[0] // kv_counts[2] == 8", kv_counts[0] // kv_counts[2], "==", 8)
expect("Llama 3.1 8B: 32 query heads over 8 K/V heads", 32 // 8, "==", 4)
expect("a layer is causal by default: no weight above the diagonal", all(bool((layer(x_heads, return_weights=True)[1].triu(1) == 0).all()) for layer in layers.values()))

# %% tags=["hide-input"]
# @title MultiHeadSelfAttention на границах, против MHA, GQA из PyTorch и с паддингом (проверено; откройте, чтобы прочитать)
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
print(f"GQA против MHA с повторёнными KV-головами: наибольшая разница {number(gqa_error, '.1e', 'ru')}")
expect("gqa_error < 1e-6", gqa_error, "<", 1e-6)

# And against PyTorch's own grouped-query path (torch >= 2.5), head by head.
if ENVIRONMENT["torch_has_enable_gqa"]:
    with torch.no_grad():
        q = split_heads(gqa.q_proj(x_heads), 8).double()
        k, v = (split_heads(proj(x_heads), 2).double() for proj in (gqa.k_proj, gqa.v_proj))
        ours = scaled_dot_product_attention(q, repeat_kv_heads(k, 4), repeat_kv_heads(v, 4), causal_allowed(6, 6)).output
        theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_allowed(6, 6), enable_gqa=True)
    print("против F.scaled_dot_product_attention(enable_gqa=True): наибольшая разница "
          f"{number(float((ours - theirs).abs().max()), '.1e', 'ru')}")
    expect("torch.allclose(ours, theirs, atol=1e-12)", torch.allclose(ours, theirs, atol=1e-12))
else:
    print("в torch < 2,5 нет enable_gqa; сравнение с путём GQA из PyTorch пропущено")

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
print("заполнение: нулевые строки для заполненных запросов, веса настоящих в сумме дают 1, настоящие выходы "
      "заполнение не меняет")

# %%

show_figure(
    plot_head_sharing(language=LANGUAGE),
    "Синие квадраты\xa0— головы запросов, оранжевые\xa0— головы ключей и значений, которые они читают; каждая линия\xa0— "
    "одна голова запросов, читающая одну KV-голову. Сосчитайте оранжевые квадраты: именно их KV-кэш хранит на "
    "каждый токен и слой. MHA хранит 8, GQA позволяет каждой группе из 4 соседних голов запросов делить одну "
    "(всего 2), MQA делит одну-единственную на все 8.",
)


show_figure(
    plot_split_merge(language=LANGUAGE),
    "Читайте слева направо; каждый маленький квадрат\xa0— одно число, строки\xa0— токены, а цвет говорит, какой голове "
    "число принадлежит. Широкие проекции дают запросы, ключи и значения всех голов сразу (по одной сетке для "
    "каждой из Q, K и V); split_heads разрезает признаки на H пластов размерности d_head (= d_k) и складывает их в "
    "пакет голов; каждая голова вычисляет свои веса T × T (здесь каузальные: пустые квадраты над диагональю) и "
    "смешивает свои значения; merge_heads снова кладёт выходы рядом, начиная с головы 0; а W_o смешивает все "
    "головы в каждом выходном признаке (нарисованы одним бледным цветом), возвращая размерность модели.",
)

# %% tags=["hide-input"]
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
for bad_args in ((0, 1), (8, 0), (8, 2, 0)):
    expect_raises(ValueError, MultiHeadSelfAttention, *bad_args)
expect_raises(ValueError, MultiHeadSelfAttention, 2**31, 4, 2, match=f"of shape ({2 * 2**31 + 2 * 2 * 2**29}, {2**31}) would take {(2 * 2**31 + 2 * 2 * 2**29) * 2**31 * 4:,} bytes")
expect_raises(ValueError, layers["MQA"], torch.zeros(1, 2**16, 64), match=f"of shape (1, 8, 65536, 65536) would take {8 * 2**32 * 12:,} bytes")


# %% [markdown]
# ## 9 · Во что обходится внимание: член n²
#
# **Идея.** Каждая голова каждого слоя строит матрицу оценок $n \times n$, поэтому работа по вычислению
# оценок и смешиванию растёт как *квадрат* длины контекста. Проекции в запросы, ключи, значения и обратно
# растут по $n$ лишь линейно, зато квадратично по размерности. На коротких промптах доминируют проекции; после
# точки пересечения верх берёт член $n^2$, и там каждое удвоение контекста стоит вчетверо дороже.
#
# $$\text{FLOPs}_{\text{scores+mix}} = 2 \cdot 2\, n^2 d, \qquad \text{FLOPs}_{\text{projections}} = 2 \cdot 4\, n\, d^2, \qquad \frac{\text{FLOPs}_{\text{scores+mix}}}{\text{FLOPs}_{\text{projections}}} = \frac{n}{2d}$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $n$ | длина контекста в токенах | от $10^2$ до $10^6$ |
# | $d$ | размерность модели $d_{model}$ (все головы вместе) | $4096$ |
# | $2 n^2 d$ | умножения со сложением в $Q K^\top$ ($n^2 d$) и в умножении весов на $V$ ($n^2 d$) | |
# | $4 n d^2$ | умножения со сложением в четырёх проекциях $W_q, W_k, W_v, W_o$ | |
# | множитель 2 | одно умножение со сложением считается за 2 операции с плавающей точкой | |
#
# **Вручную.** Отношение $n / 2d$ равно 1 при $n = 2d$: для $d = 4096$ точка пересечения приходится
# на 8192 токена. При 128 000 токенов отношение равно $128000 / 8192 \approx 15{,}6$. **Важно, что именно
# считать**: здесь учтены четыре проекции $d \times d$, нет слоя FFN и берётся весь квадрат $n \times n$.
# У Llama 3.1 8B (32 головы запросов, 8 KV-голов) матрицы $W_k$ и $W_v$ имеют размерность $d/4$, поэтому её
# проекции обходятся в $2{,}5 d^2$ умножений со сложением на токен, и точка пересечения сдвигается к
# $n = 1{,}25 d = 5120$. Добавьте слой FFN размерности $4d$ (ещё $8 d^2$) — и для всего слоя пересечение
# наступает при $n = 6d =
# 24\,576$. Каузальное ядро вычисляет только разрешённую половину квадрата, и точка пересечения
# удваивается (16 384 при первом способе подсчёта). Следующая ячейка вычисляет все четыре варианта. Ни
# один из этих подсчётов не учитывает softmax и постоянные множители реальных ядер: они показывают форму
# кривой, а не время выполнения.

# %% tags=["hide-input"]
# @title first_crossing: бисекция, которая находит, где встречаются две стоимости (откройте, чтобы прочитать)
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
    print(f"{number(n, '>7,', 'ru')} токенов: {number(attention_cost(n, WIDE)['score_entries'], '>14,', 'ru')} элементов оценок на голову и слой")
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
    print(f"{number(key, '', 'ru')}: {number(n_cross, ',', 'ru')} токенов")
print(f"часть n² равна проекциям при n = {number(crossover, ',', 'ru')}; n² / линейная = {number(ratios[8000], '.2f', 'ru')} при 8000 токенов и "
      f"{number(ratios[128000], '.1f', 'ru')} при 128\xa0000")

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
print(f"KV-кэш: {number(per_token, ',', 'ru')} байт на токен; диалог из 32\xa0000 токенов занимает {number(conversation_gb, '.1f', 'ru')} ГБ; {number(fits, '', 'ru')} таких "
      "помещаются рядом с 16\xa0ГБ весов на GPU на 80\xa0ГБ")
print(f"один запрос на 128\xa0000 токенов: {number(all_heads_gb, '.0f', 'ru')} ГБ при 32 KV-головах, {number(gqa_gb, '.1f', 'ru')} ГБ при 8")

price_per_million = 5.0  # an illustrative price in USD per million input tokens
full_price = 100_000 * price_per_million / 1e6
cached_price = 0.1 * full_price  # cache reads billed at 0.1x the input price
write_price = 1.25 * full_price  # a write to the 5-minute cache: 1.25x (the 1-hour cache: 2x)
print(f"промпт на 100\xa0000 токенов по USD {number(price_per_million, '.0f', 'ru')}/M: USD {number(full_price, '.2f', 'ru')} каждый раз, USD "
      f"{number(cached_price, '.2f', 'ru')} как чтение из кэша, USD {number(write_price, '.3f', 'ru')} как запись в кэш на 5 минут")
mistral_reach = 4096 * 32  # Mistral 7B v0.1: 4,096-token window, 32 layers
print(f"охват Mistral\xa07B v0.1 через 32 слоя с окном: {number(mistral_reach, ',', 'ru')} токенов")

# %% tags=["hide-input"]
# @title Числа из текста ниже, проверено (откройте, чтобы прочитать)
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
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
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
# @title Код рисунка следующей ячейки: plot_cost (откройте, чтобы прочитать)
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
print(f"пересечение при n = 2·d_model = {number(cross_at, ',', 'ru')}; отношение при 128\xa0000 токенов: "
      f"{number(attention_cost(128000, WIDE)['quadratic_flops'] / attention_cost(128000, WIDE)['linear_flops'], '.1f', 'ru')}")
expect("below 2·d the projections must dominate", all(q < l for q, l, n in zip(quadratic, linear, lengths) if n < cross_at))
expect("above 2·d the n² term must dominate", all(q > l for q, l, n in zip(quadratic, linear, lengths) if n > cross_at))
doubled = attention_cost(2_000, WIDE)["quadratic_flops"] / attention_cost(1_000, WIDE)["quadratic_flops"]
expect("doubling the context must quadruple the n² term", doubled, "==", 4.0)


show_figure(
    plot_cost(lengths, quadratic, linear, WIDE, language=LANGUAGE),
    "Обе оси логарифмические, поэтому степенной закон\xa0— прямая, и чем круче прямая, тем быстрее рост. У проекций "
    "(синие квадраты, штриховая линия) наклон 1, у шага оценок и смешивания (красные кружки, сплошная линия)\xa0— "
    "наклон 2. Левее пунктирной линии n = 2·d дороже проекции; правее неё член n² преобладает и уходит вперёд: "
    "вчетверо больше работы на каждое удвоение контекста.",
)


# %% [markdown]
# **Что делают с членом n².** Есть четыре семейства ответов, и каждому посвящён модуль 5:
# вычислять то же точное внимание небольшими тайлами в памяти на кристалле, чтобы матрица $n \times n$
# никогда не хранилась целиком (FlashAttention, модуль 5.1); читать меньше пар — через скользящее окно или
# разреженный шаблон; уменьшать то, что каждый прошлый токен стоит в памяти, разделяя KV-головы (GQA, MQA)
# или сжимая их; или заменить матрицу оценок бегущим состоянием фиксированного размера, как делают
# линейное внимание и модели пространства состояний (модуль 5.2).

# %% [markdown]
# ## 10 · Остальная часть блока: сеть прямого распространения, LayerNorm, остаточные связи
#
# **Идея.** Внимание переносит информацию *между* токенами. Блок декодера добавляет вокруг него ещё три
# вещи. **Сеть прямого распространения** (feed-forward network, FFN) затем обрабатывает каждый токен по
# отдельности: расширить, применить нелинейность, снова сузить. **Остаточные связи** (residual connections)
# прибавляют выход каждого подслоя к его входу, так что блоку достаточно выучить лишь *поправку*, а у
# градиентов появляется прямой путь через глубокие стеки. **LayerNorm** перед тем, как подслой прочтёт
# признаки токена, приводит их к среднему 0 и дисперсии 1, чтобы масштаб ни одного токена не уходил
# вразнос. Исходный трансформер нормализовал *после* каждой остаточной суммы (post-norm); GPT-2 и
# большинство последующих моделей нормализуют *вход* каждого подслоя (pre-norm), и в глубоких стеках
# такие модели обучаются стабильнее ([Xiong и др., 2020](https://arxiv.org/abs/2002.04745)).
# Наш блок — pre-norm.
#
# $$\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta, \qquad \mu = \frac{1}{d} \sum_{m=1}^{d} x_m, \qquad \sigma^2 = \frac{1}{d} \sum_{m=1}^{d} (x_m - \mu)^2$$
#
# $$h = x + \operatorname{MHA}(\operatorname{LN}_1(x)), \qquad y = h + \operatorname{FFN}(\operatorname{LN}_2(h)), \qquad \operatorname{FFN}(z) = W_2 \operatorname{GELU}(W_1 z + b_1) + b_2$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $x$ | вектор признаков одного токена, размерности $d$ | $(1, 2, 3, 4)$ |
# | $\mu$, $\sigma^2$ | среднее и **смещённая** дисперсия его признаков (делим на $d$, а не на $d - 1$) | $2{,}5$, $1{,}25$ |
# | $\epsilon$ | малая константа, которая не даёт делению уйти в бесконечность, если все признаки токена одинаковы | $10^{-5}$; $0$ в примере |
# | $\gamma$, $\beta$ | обучаемые масштаб и сдвиг для каждого признака, инициализированные значениями 1 и 0 | $1$, $0$ |
# | $\odot$ | поэлементное произведение | |
# | $W_1$, $W_2$ | расширяющая ($d \to d_{ff}$) и сужающая ($d_{ff} \to d$) матрицы FFN | |
# | GELU | гладкий аналог ReLU: $z \, \Phi(z)$, где $\Phi$ — функция распределения стандартного нормального закона | |
#
# **Вручную.** Для $x = (1, 2, 3, 4)$: $\mu = 2{,}5$; квадраты отклонений равны $2{,}25; 0{,}25; 0{,}25;
# 2{,}25$, поэтому $\sigma^2 = 5 / 4 = 1{,}25$ (несмещённая оценка дала бы $5/3 \approx 1{,}67$ — частая
# ошибка). При $\epsilon = 0$: $(x - \mu) / \sqrt{1{,}25} = (-1{,}342, -0{,}447; 0{,}447; 1{,}342)$.

# %% tags=["exercise"]
# Exercise 6 · Упражнение 6: напишите LayerNorm по последней оси. Вычтите среднее каждого токена, разделите на квадратный корень
# из его смещённой дисперсии плюс eps (делите на d, а не на d - 1), затем умножьте на weight и
# прибавьте bias, если они заданы. Сохраняйте дифференцируемость: никаких .item(), NumPy и изменений x на месте.
# Проверка требует: среднее 0 и смещённая дисперсия 1 в каждой строке; eps под корнем; weight масштабирует,
# bias сдвигает; выходы и градиенты совпадают с F.layer_norm; постоянный токен переходит в нули.
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """LayerNorm over the last axis, by hand: (x − mean) / sqrt(biased variance + eps) · weight + bias."""
    x, eps = _layer_norm_args(x, weight, bias, eps)
    ### BEGIN SOLUTION
    mean = x.mean(dim=-1, keepdim=True)                                 # (..., 1)
    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)             # (..., 1), biased
    normalized = (x - mean) / torch.sqrt(variance + eps)                # (..., d)
    if weight is not None:
        normalized = normalized * weight
    if bias is not None:
        normalized = normalized + bias
    return normalized
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 6: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
print(f"x = {number(x_ln.tolist(), '', 'ru')}: среднее {number(float(mean_ln), '', 'ru')}, смещённая дисперсия {number(float(variance_ln), '', 'ru')}, несмещённая "
      f"{number(float(x_ln.var(unbiased=True)), '.2f', 'ru')}, нормированный "
      f"{number([round(v, 3) for v in layer_norm(x_ln, eps=0.0).tolist()], '', 'ru')}")
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
# @title Устройство блока декодера, каузальность и размеры, проверено (откройте, чтобы прочитать)
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
print(f"блок декодера: {number(tuple(block_input.shape), '', 'ru')} -> {number(tuple(block_output.shape), '', 'ru')}, "
      f"{number(sum((p.numel() for p in block.parameters())), ',', 'ru')} параметров")

# %% tags=["hide-input"]
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
expect_raises(ValueError, layer_norm, torch.tensor([[1.0, 2.0], [3.0, 3.0], [5.0, 7.0]]), eps=0.0, match="constant token")
expect_raises(ValueError, layer_norm, torch.tensor(1.0), match="dimensions")
expect_raises(ValueError, FeedForward, 0, 8, match="d_model")
expect_raises(ValueError, FeedForward, 2**31, 2**31, match=f"of shape (2, {2**31}, {2**31}) would take {2 * 2**62 * 4:,} bytes")


# %% [markdown]
# **Сколько это параметров?** Посчитаем только матрицы весов (без смещений и без нормализаций) в слоях
# исходного трансформера: у внимания четыре проекции $d \times d$, то есть $4 d^2$; у FFN две матрицы
# $d \times d_{ff}$, то есть $2 d\, d_{ff}$. В слое энкодера одно внимание и одна FFN; в слое декодера —
# самовнимание, перекрёстное внимание (cross-attention) и FFN. Для **базовой** (base) модели ($d = 512$,
# $d_{ff} = 2048$, 8 голов размерности 64): внимание $4 \cdot 512^2 = 1\,048\,576$, FFN
# $2 \cdot 512 \cdot 2048 = 2\,097\,152$, слой энкодера $3\,145\,728$, слой декодера
# $4\,194\,304$, и на FFN приходится две трети слоя энкодера. Ячейка считает и **большую** (big)
# модель ($d = 1024$, $d_{ff} = 4096$, 16 голов), у которой параметров на слой в четыре раза больше.

# %% tags=["hide-input"]
# @title Код рисунка следующей ячейки: plot_decoder_block (откройте, чтобы прочитать)
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
print(f"base: {number(base, '', 'ru')}")
print(f"big:  слой кодировщика {number(big.encoder_layer, ',', 'ru')}, слой декодера {number(big.decoder_layer, ',', 'ru')} ("
      f"{number(big.encoder_layer // base.encoder_layer, '', 'ru')}x base)")
for field in ("mha_weights", "ffn_weights", "encoder_layer", "decoder_layer", "ffn_share_encoder"):
    REFERENCE.check(f"parameter_floor.{field}", getattr(base, field))
expect("big.encoder_layer == 4 * base.encoder_layer", big.encoder_layer, "==", 4 * base.encoder_layer)
expect("transformer_parameter_floor(1, 1) by hand", transformer_parameter_floor(1, 1), "==", ParameterFloor(4, 2, 6, 10, 1 / 3))
expect_raises(ValueError, transformer_parameter_floor, 1, 0, match="d_ff")
# Our own attention module agrees with the 4·d² count.
expect("sum(p.numel() for p in MultiHeadSelfAttention(512, 8).parameters()) == base.mha_weights", sum(p.numel() for p in MultiHeadSelfAttention(512, 8).parameters()), "==", base.mha_weights)


show_figure(
    plot_decoder_block(language=LANGUAGE),
    "Читайте снизу вверх. Вход нормализуется, проходит через внимание (где токены обмениваются информацией) и "
    "прибавляется к самому себе в первом ⊕; результат снова нормализуется, проходит через сеть прямого "
    "распространения (каждый токен отдельно) и прибавляется во втором ⊕. Зелёные остаточные пути проносят вход "
    "мимо каждого подслоя без изменений, так что каждый подслой учит только поправку.",
)

# %% [markdown]
# **Dropout, и обучение против вывода.** Исходный трансформер применяет ещё и **dropout**: во время
# обучения он обнуляет каждый элемент с вероятностью $p$ и умножает оставшиеся на $1/(1 - p)$, чтобы
# среднее не изменилось. Он стоит на выходе каждого подслоя, перед тем как этот выход прибавляется к
# остаточному потоку, и на сумме эмбеддингов токенов и позиций, с $p = 0{,}1$ у базовой модели
# ([Vaswani и др., 2017](https://arxiv.org/abs/1706.03762), раздел 5.4); многие реализации также
# применяют dropout к весам внимания. В PyTorch `model.train()` его включает, а `model.eval()` выключает,
# и если забыть `eval()` при выводе, каждый ответ станет немного случайным. В блоках здесь dropout нет:
# TinyLM на каждом шаге видит свежие случайные последовательности, так что переобучаться ей не на чем,
# а её `generate` всё равно вызывает `eval()`.

# %%
torch.manual_seed(SEED)
dropout, ones = nn.Dropout(p=0.1), torch.ones(100_000)
kept = dropout.train()(ones)  # training mode: about 10% zeros, the rest 1 / 0.9
print(f"обучение: обнулено {number(float((kept == 0).double().mean()), '.3f', 'ru')} элементов, остальные {number(float(kept.max()), '.4f', 'ru')}, "
      f"среднее {number(float(kept.mean()), '.3f', 'ru')}; оценка: без изменений {number(torch.equal(dropout.eval()(ones), ones), '', 'ru')}")
expect("training-mode dropout zeroes about p and scales the rest by 1/(1 − p), keeping the mean near 1",
       abs(float(kept.mean()) - 1) < 0.01 and math.isclose(float(kept.max()), 1 / 0.9, rel_tol=1e-6))
expect("eval-mode dropout is the identity", torch.equal(dropout.eval()(ones), ones))


# %% [markdown]
# ## 11 · Держит ли маска? Детерминированная проверка на утечку из будущего
#
# **Идея.** Каузальная модель должна давать в позициях $0..p$ в точности одни и те же выходы, что бы ни
# стояло после $p$. Самый чистый тест меняет только *последний* токен и сравнивает всё, что стоит перед
# ним. Чтобы результат был точным, а не статистическим, построим зонд (probe), в котором единственный
# путь между токенами — внимание, а само внимание настолько простое, что его можно посчитать вручную:
# фиксированные эмбеддинги, нулевые проекции запросов и ключей (так что каждый разрешённый ключ получает
# одинаковый вес) и тождественные проекции значений и выхода. Тот же зонд без маски обязан давать
# утечку — иначе тест ничего не доказывает.
#
# $$y_p = x_p + \frac{1}{p + 1} \sum_{j=0}^{p} x_j \;\; \text{(каузальная маска)}, \qquad y_p = x_p + \frac{1}{n} \sum_{j=0}^{n-1} x_j \;\; \text{(без маски)}$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $x_j$ | фиксированный эмбеддинг токена в позиции $j$, размерности 8 | строка $t$ таблицы равна $(8t, \dots, 8t + 7) / 10$ |
# | $y_p$ | выход зонда в позиции $p$: остаточная связь плюс внимание | |
# | $n$ | длина последовательности | $5$ |
# | $\frac{1}{p + 1}$ | равные веса для $p + 1$ разрешённых ключей (все оценки равны 0) | |
#
# **Вручную.** Заменим последний токен с 5 на 9. Его эмбеддинг сдвигается на $(9 - 5) \cdot 8 / 10 = 3{,}2$
# по каждой координате. С каузальной маской позиции от 0 до 3 его никогда не читают: их выходы
# сдвигаются ровно на 0. Без маски каждая позиция усредняет все 5 токенов, поэтому позиции от 0 до 3
# сдвигаются на $3{,}2 / 5 = 0{,}64$.

# %% tags=["hide-input"]
# @title Код рисунка следующей ячейки: plot_leakage (откройте, чтобы прочитать)
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
# @title _require_token_ids: проверка аргументов моделей на номерах токенов ниже (откройте, чтобы прочитать)
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
    print(f"{number(name, '>8', 'ru')}: наибольшее изменение по позициям {number([round(v, 4) for v in shift.tolist()], '', 'ru')}")
expect("the causal mask leaks: earlier positions saw the last token", float(probe_shift["causal"][:4].max()), "<=", 1e-7)
expect("without a mask the probe must leak, or it tests nothing", float(probe_shift["no mask"][:4].min()), ">", 0.1)
with torch.no_grad():
    first = CausalityProbe(causal=True, vocab_size=11, width=8)
    expect("the probe adds attention to the embedding: position 0 reads only itself, so its output is twice its embedding",
           torch.allclose(first(original_ids)[0, 0], 2 * first.embedding.weight[int(original_ids[0, 0])], atol=1e-6))

# %% tags=["hide-input"]
# @title Значения по умолчанию CausalityProbe, наименьший размер и точный сдвиг (проверено; откройте, чтобы прочитать)
expect("the default probe reads token ids 0 to 10", CausalityProbe(causal=False)(torch.tensor([[10, 0]])).shape, "==", (1, 2, 8))
expect("the smallest probe (one token id, width 2) is valid", CausalityProbe(causal=True, vocab_size=1, width=2)(torch.zeros(1, 3, dtype=torch.long)).shape, "==", (1, 3, 2))
expect_raises(ValueError, CausalityProbe, causal=True, vocab_size=2**40, width=8, match=f"would take {2 * 2**40 * 8 * 4:,} bytes")
for shift in probe_shift["no mask"][:4].tolist():
    REFERENCE.check("leakage_probe.unmasked_shift", shift, atol=1e-5)  # float32 probe against the exact 0.64

# %%
show_figure(
    plot_leakage({k: v.numpy() for k, v in probe_shift.items()}, language=LANGUAGE),
    "Каждая пара столбцов\xa0— одна позиция; высота показывает, насколько сдвинулся выход этой позиции, когда "
    "изменился только последний токен. На закрашенных ранних позициях каузальные столбцы (синие, без штриховки) "
    "ровно нулевые, отмечено 0: оттуда будущее не видно. Без маски (красные, заштрихованные) каждая позиция "
    "сдвигается на одни и те же 0,64. На последней позиции сдвигаются обе, как и должно быть.",
)

# %% [markdown]
# ## 12 · Крошечная языковая модель: обучим её, а потом дадим ей писать
#
# **Идея.** Соберём части вместе: эмбеддинги токенов плюс обучаемые эмбеддинги позиций, один pre-norm
# блок декодера, финальный LayerNorm и выходной слой, который превращает вектор каждой позиции в один
# **логит** на каждый элемент словаря. Выходной слой повторно использует матрицу эмбеддингов
# (связывание весов, weight tying), так что эмбеддинг токена заодно оценивает, насколько вероятно, что
# этот токен окажется следующим.
#
# **Задача, которой нужно внимание.** Каждая обучающая последовательность — это случайный отрезок из 6
# токенов (из словаря размером 8), за которым снова идёт тот же отрезок: `3 7 0 0 5 2 | 3 7 0 0 5 2`.
# Первая половина непредсказуема, поэтому функция потерь учитывает только позиции, следующий токен
# которых принадлежит повтору. Там следующий токен — тот, что стоял на 6 позиций раньше, и единственный
# способ его достать — *посмотреть назад*: сеть прямого распространения, применяемая к каждой позиции
# отдельно, видит по одному токену за раз и на это не способна. Чтобы доказать, что работу делает
# внимание, ту же модель обучают второй раз с выключенным подслоем внимания (`use_attention=False`,
# *абляция*): она должна остаться на уровне случайного угадывания.
#
# **Чего эта задача не требует.** Каждый отрезок здесь длиной 6 токенов и начинается с позиции 0,
# поэтому токен, который нужно написать после позиции $p$, всегда стоит на позиции $p - 5$. Один слой
# с обучаемыми абсолютными позициями может выучить ровно это *позиционное копирование*: «прочитай
# ключ на 5 позиций назад», какими бы ни были токены. Копирование по *содержимому* — «найди более
# раннее вхождение моего токена и прочитай, что шло после него» ($[A][B] \dots [A] \to [B]$) — это
# то, что делает **индукционная голова** (induction head)
# ([Olsson и др., 2022](https://arxiv.org/abs/2209.11895)), и ей нужны два слоя: голова первого слоя
# копирует в позицию каждого токена его предшественника (*голова предыдущего токена*), а голова второго
# слоя сравнивает текущий токен с этими скопированными предшественниками. У однослойной модели нет
# более ранней головы, с выходом которой можно было бы сравнивать
# ([Elhage и др., 2021](https://transformer-circuits.pub/2021/framework/index.html)). Ячейка ниже
# показывает разницу: сдвиньте повтор на одну позицию, и копирование нашей модели падает до уровня
# случайного угадывания, тогда как индукционная голова продолжала бы копировать.
#
# Обучающий сигнал — **отрицательное логарифмическое правдоподобие следующего токена** (negative
# log-likelihood, NLL): насколько модель удивлена токеном, который на самом деле шёл следующим, в среднем
# по оцениваемым позициям — тем 6 позициям каждой последовательности, следующий токен которых
# принадлежит повтору. Именно это вычисляет из логитов `F.cross_entropy`.
#
# $$\text{NLL} = -\log p_\theta(x_{t+1} \mid x_{\le t}) = -\log \frac{e^{z_{y}}}{\sum_{v=1}^{V} e^{z_v}}$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $x_{\le t}$ | токены до позиции $t$ включительно — всё, что модели разрешено читать | |
# | $z$ | логиты, которые модель выдаёт в позиции $t$, по одному на каждый элемент словаря | $(1{,}2; 0{,}3, -0{,}4; 2{,}0)$ |
# | $y$ | id токена, который на самом деле идёт следующим | $3$ |
# | $V$ | размер словаря | $4$ в примере, $8$ у модели |
# | $p_\theta$ | вероятности модели, softmax логитов | |
#
# **Вручную.** Для логитов $(1{,}2; 0{,}3, -0{,}4; 2{,}0)$ softmax равен $(0{,}2608; 0{,}1060; 0{,}0527;
# 0{,}5805)$. Истинный следующий токен — 3, поэтому NLL равно $-\ln 0{,}5805 = 0{,}5439$ **ната** (функция
# потерь, вычисленная с натуральным логарифмом, измеряется в натах; 1 нат равен $1 / \ln 2 \approx 1{,}44$
# бита). Модель, которая ничего не знает, распределяет ставки поровну между 8 токенами и платит
# $\ln 8 \approx 2{,}08$ ната на токен: с этого начинается обучение, и здесь же обречена остаться модель,
# которая не может смотреть назад. Модель, копирующая отрезок, должна в итоге прийти почти к 0.

# %%
nll_logits = torch.tensor(REFERENCE.value("next_token_nll.logits"), dtype=torch.float64)
nll_target = REFERENCE.value("next_token_nll.target")
nll_probabilities = softmax(nll_logits)
nll = float(-torch.log(nll_probabilities[nll_target]))
print(f"вероятности {number([round(p, 4) for p in nll_probabilities.tolist()], '', 'ru')}, NLL токена {number(nll_target, '', 'ru')}: {number(nll, '.4f', 'ru')} ната = "
      f"{number(nll / math.log(2), '.3f', 'ru')} бита; равномерно по 8 токенам: {number(math.log(8), '.2f', 'ru')} ната")
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
# @title Значения TinyLM по умолчанию, её наименьший размер и устройство её прямого прохода (проверено; откройте, чтобы прочитать)
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
# **Оптимизатор.** Рецепт обучает модель с помощью AdamW ([Loshchilov and Hutter, 2019](https://arxiv.org/abs/1711.05101)).
# Каждый вес хранит скользящее среднее своих градиентов (момент) и их квадратов (свой масштаб) и
# шагает на их отношение, поэтому везде, где $|g|$ намного больше $\epsilon$, размер шага задаёт
# скорость обучения, а не величина градиента. На первом шаге каждый такой вес сдвигается ровно на
# скорость обучения. Позже отношение скользящих средних может вырасти.
# [Kingma and Ba (2015)](https://arxiv.org/abs/1412.6980), раздел 2.1, называют его границей
# $(1 - \beta_1)/\sqrt{1 - \beta_2} \approx 3{,}2$ при стандартных beta — это случай одного большого
# градиента после долгой серии нулей; но это не потолок: градиенты, растущие от шага к шагу, заходят
# дальше. Граница, которая выполняется всегда (неравенство Коши — Буняковского для двух скользящих
# средних, с поправками смещения), такова:
#
# $$\frac{\text{step}}{\eta} \le B_t = \frac{1 - \beta_1}{1 - \beta_1^t} \sqrt{\frac{1 - \beta_2^t}{1 - \beta_2} \sum_{k=0}^{t-1} \left(\frac{\beta_1^2}{\beta_2}\right)^k},$$
#
# она равна 1 при $t = 1$, 1,54 при $t = 45$ и стремится к 7,27 на длинных запусках. В обычных случаях
# отношение остаётся около 1 или ниже и уменьшается там, где градиенты постоянно меняют знак (ячейка
# измеряет его на каждом шаге и сверяет с $B_t$). Затухание весов (weight decay), когда оно включено,
# уменьшает веса напрямую («отвязанно» от градиента); рецепт его выключает. Всё это умещается в десяток
# строк, записанных ниже с тем же обновлением, что и в `torch.optim.AdamW` (тесты курса сравнивают их шаг
# за шагом).
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1)\, g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\, g^2, \qquad \theta \leftarrow \theta\, (1 - \eta \lambda) - \eta\, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}$$
#
# | Обозначение | Смысл | В рецепте |
# |---|---|---|
# | $g$ | градиент функции потерь по одному весу $\theta$ | |
# | $m$, $v$ | скользящие средние $g$ и $g^2$, оба начинаются с 0 | |
# | $\beta_1$, $\beta_2$ | насколько медленно эти средние забывают | $0{,}9$, $0{,}999$ |
# | $t$ | номер шага; деление на $1 - \beta^t$ отменяет старт с 0 | $1, \dots, 45$ |
# | $\eta$ | скорость обучения | $0{,}03$ на шаге 1, линейно снижается к 0 |
# | $\lambda$ | затухание весов | $0$ |
# | $\epsilon$ | не даёт делению стать бесконечным | $10^{-8}$ |
#
# **Вручную**, первый шаг: $m = 0{,}1\, g$ и $v = 0{,}001\, g^2$, поэтому скорректированные средние равны $g$
# и $g^2$, а шаг равен $\eta\, g / (|g| + \epsilon)$: каждый вес с ненулевым градиентом сдвигается на
# $\eta = 0{,}03$ вверх или вниз. Ячейка проверяет ровно это после первого шага и измеряет отношение
# (шаг / $\eta$) на каждом шаге.
#
# **Расписание.** При постоянной скорости 0,03 функция потерь этого рецепта опускалась почти до 0, а потом
# время от времени подскакивала обратно (ячейка печатает, на каких шагах): когда подгонка почти точна,
# шаг такой же величины, как в начале, проскакивает мимо на неудачном батче. Линейное снижение скорости до
# 0 за 45 шагов, $\eta_t = 0{,}03\,(1 - (t - 1)/45)$, убрало подскоки, и ячейка проверяет, что, опустившись
# ниже 0,05, функция потерь там и остаётся. Снижение даёт здесь именно эту устойчивость, а не меньшие
# потери: в этом запуске постоянная скорость между подскоками заканчивает ниже (рисунок ниже показывает оба
# запуска).

# %% tags=["hide-input"]
# @title Код рисунков и ручные проверки следующей ячейки: _adamw_by_hand, _adam_step_bound, plot_ablation, plot_copy_attention (откройте, чтобы прочитать)
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
# @title Задача копирования: её батчи, а также потеря и точность на повторе (откройте, чтобы прочитать)
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
print(f"{number(recipe['steps'], '', 'ru')} шагов AdamW на свежих пакетах из {number(recipe['batch'], '', 'ru')} последовательностей, lr "
      f"{number(recipe['learning_rate'], '', 'ru')}; оценка на {number(recipe['eval_sequences'], '', 'ru')} новых последовательностях, только повторённая "
      "половина")
print(f"с вниманием:      потери {number(losses[0], '.3f', 'ru')} -> {number(full_loss, '.4f', 'ru')} ната/токен, точность {number(full_accuracy, '.3f', 'ru')}")
print(f"без внимания:     потери {number(ablated_losses[0], '.3f', 'ru')} -> {number(ablated_loss, '.4f', 'ru')} ната/токен, точность "
      f"{number(ablated_accuracy, '.3f', 'ru')} (случайно: ln {number(recipe['vocab_size'], '', 'ru')} = {number(math.log(recipe['vocab_size']), '.3f', 'ru')}, точность "
      f"{number(1 / recipe['vocab_size'], '.3f', 'ru')})")
first_step, last_step, largest_ratio, adam_bound = step_ratios[0], step_ratios[-1], max(float(r.max()) for r in step_ratios), _adam_step_bound(recipe["steps"])
print(f"шаг AdamW / lr: первый шаг весь {number(float(first_step.min()), '.4f', 'ru')}..{number(float(first_step.max()), '.4f', 'ru')}; медиана "
      f"последнего шага {number(float(last_step.median()), '.4f', 'ru')}; наибольший по всем шагам {number(largest_ratio, '.3f', 'ru')} (граница на "
      f"шаге {number(recipe['steps'], '', 'ru')}: B = {number(adam_bound, '.2f', 'ru')})")

# %% tags=["hide-input"]
# @title Утверждения об обучении: абляция, размеры шагов, расписание (проверено; откройте, чтобы прочитать)
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
print(f"разрывы абляции: {number(loss_gap, '.2f', 'ru')} ната на токен, {number(accuracy_gap, '.3f', 'ru')} точности")
if not (loss_gap > 1.5 and accuracy_gap > 0.7):
    raise AssertionError(f"the ablation gaps are too small to say attention does the work: loss gap {loss_gap:.3f} (need > 1.5), "
                         f"accuracy gap {accuracy_gap:.3f} (need > 0.7)")
expect("the first AdamW step moves every weight with a gradient by exactly lr", torch.allclose(first_step, torch.ones_like(first_step), atol=1e-3))
expect("later steps are smaller than lr: last-step median of step / lr", float(last_step.median()), "<", 0.5)
threshold = REFERENCE.value("tiny_lm.loss_threshold")
first_pass = next(step for step, value in enumerate(losses) if value < threshold)
jumps = [step for step in range(1, recipe["steps"]) if constant_losses[step] > max(threshold, 1.5 * constant_losses[step - 1])]
print(f"с затуханием потери обучения впервые опускаются ниже {number(threshold, '', 'ru')} на шаге {number(first_pass, '', 'ru')} из {number(recipe['steps'], '', 'ru')} и "
      f"остаются там; при постоянном lr они подскакивают выше {number(threshold, '', 'ru')} на шагах {number(jumps, '', 'ru')}")
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
print(f"промпт {number(prompt[0].tolist(), '', 'ru')} -> продолжение {number(generated[segment_length:].tolist(), '', 'ru')} (точность "
      f"{number(continuation_accuracy, '.3f', 'ru')})")
if continuation_accuracy != 1.0:
    raise AssertionError(f"the model did not copy the unseen segment: {prompt[0].tolist()} -> {generated[segment_length:].tolist()}")


show_figure(
    plot_ablation(losses, ablated_losses, recipe["vocab_size"], language=LANGUAGE, constant_losses=constant_losses),
    "Потери обучения на оцениваемых позициях, по шагам, в логарифмическом масштабе. Каждый запуск начинается на "
    f"пунктирной линии ln {number(recipe['vocab_size'], '', 'ru')} — цене угадывания. Полная модель (синяя, штриховая линия с "
    f"квадратами) падает на порядки: она научилась смотреть на {number(segment_length - 1, '', 'ru')} позиций назад. Та же модель с "
    "выключенным вниманием (красная, пунктир с крестиками) видит по одному токену и остаётся на пунктирной линии: "
    f"на новых последовательностях она набирает {number(ablated_loss, '.2f', 'ru')} ната и точность {number(ablated_accuracy, '.0%', 'ru')} против "
    f"{number(full_loss, '.3f', 'ru')} ната и {number(full_accuracy, '.1%', 'ru')} с вниманием. Тонкий серый штриховой запуск с кружками держит "
    f"скорость обучения постоянной и подскакивает вверх на шагах {number(', '.join(map(str, jumps)), '', 'ru')}, но заканчивает в "
    f"{number(losses[-1] / constant_losses[-1], '.0f', 'ru')} раз ниже синего, который снижает её до 0 и не подскакивает: в этом "
    "запуске снижение даёт устойчивость, а не меньшие потери.",
)
copy_weights = model.attention_weights(generated[None, :-1])[0]   # (H, T, T) on the prompt and its copy
look_back = copy_weights[:, segment_length - 1:].amax(0).argmax(-1)       # the key each repeat query reads most, over heads
expected_keys = torch.arange(segment_length - 1, 2 * segment_length - 1) - (segment_length - 1)
print(f"повторные запросы на позициях {number(list(range(segment_length - 1, 2 * segment_length - 1)), '', 'ru')} больше всего читают "
      f"ключи {number(look_back.tolist(), '', 'ru')}")
expect(f"query p reads key p − {segment_length - 1}, by position", look_back.tolist(), "==", expected_keys.tolist())
expect("the caption's prompt holds a token twice, so reading by content would pick another key", len(set(prompt[0].tolist())), "<", segment_length)
# A positional copy, not an induction head: put one token in front of a 5-token segment written twice, and the
# token to write sits 5 places back. Content matching would still find it; a head that reads p − 5 cannot.
shifted = copy_task_batch(recipe["eval_sequences"], torch.Generator().manual_seed(recipe["seed"] + 2),
                          segment_length=segment_length - 1, vocab_size=recipe["vocab_size"])
shifted = tuple(torch.cat((torch.zeros(len(s), 1, dtype=torch.long), s), dim=1) for s in shifted)  # token 0 in front
with torch.no_grad():
    shifted_accuracy = copy_loss_and_accuracy(model, *shifted, segment_length)[1]
print(f"та же модель на повторе, сдвинутом на одну позицию: точность {number(shifted_accuracy, '.3f', 'ru')} (случайно "
      f"{number(1 / recipe['vocab_size'], '.3f', 'ru')})")
expect("shifted by one place, the positional copy falls to chance", shifted_accuracy, "<", REFERENCE.value("tiny_lm.ablated_accuracy_ceiling"))
show_figure(
    plot_copy_attention(copy_weights.numpy(), generated[:-1].tolist(), language=LANGUAGE),
    "Куда смотрит обученная модель на новом отрезке и на написанной ею копии. Строки\xa0— запросы, столбцы\xa0— ключи, "
    "каждый подписан позицией и, в скобках, токеном; вес несут тёмные клетки, а верхний треугольник пуст из-за "
    f"каузальной маски. Начиная с позиции {number(segment_length - 1, '', 'ru')}, тёмная диагональ лежит на {number(segment_length - 1, '', 'ru')} "
    f"столбцов левее главной: запрос на позиции p читает ключ на p − {number(segment_length - 1, '', 'ru')}, где в этой задаче всегда "
    "лежит следующий токен для записи. Этот ключ он находит по позиции, а не по содержимому: запрос, чей токен "
    f"дважды встречается в отрезке, всё равно читает p − {number(segment_length - 1, '', 'ru')}, а сдвиг повтора на одну позицию "
    f"роняет копирование до {number(shifted_accuracy, '.0%', 'ru')}. Первые {number(segment_length - 1, '', 'ru')} строк никогда не оцениваются, "
    "поэтому обучение не определяет, куда они смотрят.",
)

# %% [markdown]
# **Предскажите, потом запустите (2).** Модель выше находит ключ для копирования по его позиции.
# Обучим ту же модель ещё раз, на тех же данных и по тому же рецепту, но без эмбеддингов позиций: в блок
# входят только эмбеддинги токенов. Её функция потерь на повторе в конце окажется (a) около 0, как с
# позициями; (b) около уровня случайного угадывания, $\ln 8 \approx 2{,}08$; (c) примерно посередине, около 1.
# Впишите букву в следующую ячейку и запустите её, затем запустите ячейку после неё (она обучается
# за долю секунды).

# %%
PREDICTION_NO_POSITIONS = None  # your answer: "a", "b" or "c"

# %% tags=["training"]
no_positions, _, _ = train_copy_model(use_attention=True, use_positions=False)  # training: a fraction of a second
with torch.no_grad():
    no_position_loss, no_position_accuracy = (float(v) for v in copy_loss_and_accuracy(no_positions, *held_out, segment_length))
answer_no_positions = "a" if no_position_loss < 0.5 else "b" if no_position_loss > 1.5 else "c"
judge_prediction("Предскажите, затем запустите (2)", PREDICTION_NO_POSITIONS, answer_no_positions,
                 f"без позиций потери заканчиваются на {number(no_position_loss, '.2f', 'ru')} ната, а точность\xa0— на {number(no_position_accuracy, '.0%', 'ru')} "
                 f"(с позициями {number(full_loss, '.3f', 'ru')} и {number(full_accuracy, '.0%', 'ru')}): для запроса каждый ключ выглядит одинаково, кроме своего "
                 "токена, так что «ключ на 5 позиций назад» найти нельзя, а одна каузальная маска даёт лишь слабый намёк на "
                 "порядок.")
expect("the measurement behind the answer: without positions the copy stays near chance", answer_no_positions, "==", "b")

# %% tags=["hide-input"]
# @title AdamW против обновления, выписанного вручную; copy_task_batch на наименьшем входе (проверено; откройте, чтобы прочитать)
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
# @title Неверные входы, которые отвергают функции выше, каждый с сообщением, называющим проблему (проверено; откройте, чтобы прочитать)
for bad in ({"betas": (-0.1, 0.999)}, {"eps": 0.0}, {"betas": (0.9, 0.999, 0.5)}):
    expect_raises(ValueError, AdamW, [ours_w], lr=0.1, **bad)
for bad in ({"segment_length": 0, "vocab_size": 2}, {"segment_length": 1, "vocab_size": 1}):
    expect_raises(ValueError, copy_task_batch, 1, torch.Generator(), **bad)
expect_raises(ValueError, copy_task_batch, 2**40, torch.Generator(), segment_length=4, vocab_size=2, match=f"would take {2**40 * 8 * 8:,} bytes")
expect_raises(ValueError, copy_loss_and_accuracy, model, *held_out, 2 * segment_length, match="segment_length")
expect_raises(ValueError, copy_loss_and_accuracy, model, *held_out, 0, match="segment_length")
expect_raises(ValueError, copy_loss_and_accuracy, model, held_out[0], held_out[1][:, 1:], segment_length, match="targets")


# %% [markdown]
# ## 13 · От логитов к токенам: температура, top-k, top-p и жадное декодирование
#
# **Идея.** Модель выдаёт по одному логиту на каждый элемент словаря; **стратегия декодирования** решает,
# какой токен будет следующим. *Жадное* декодирование берёт самый вероятный — именно так только что
# поступила TinyLM. *Сэмплирование* выбирает токен случайно из распределения, форму которого задают три
# ручки. **Температура** $T$ делит логиты перед softmax: ниже 1 она делает распределение острее, выше 1 —
# сглаживает его. **Top-k** оставляет только $k$ самых вероятных токенов. **Top-p** (nucleus sampling,
# ядерное сэмплирование) оставляет наименьшее множество самых вероятных токенов, чья суммарная
# вероятность достигает $p$, *включая* токен, на котором порог пересекается. После фильтрации
# вероятности оставшихся перенормируются, чтобы в сумме давать 1. Этот ноутбук применяет их в таком
# порядке: температура, затем top-k, затем top-p, отсчитываемый по тому, что оставил top-k. Генерация
# останавливается, когда модель выдаёт токен конца последовательности (EOS), который остаётся в выходе,
# или когда достигнут предел длины.
#
# $$p_i(T) = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}, \qquad \text{top-}p\text{ оставляет } \{\pi_1, \dots, \pi_m\}, \quad m = \min\left\{ m : \sum_{r=1}^{m} p_{\pi_r} \ge p \right\}$$
#
# | Обозначение | Смысл | В примере |
# |---|---|---|
# | $z_i$ | логит токена $i$ | $(3, 2, 1, 0)$ |
# | $T$ | температура, $T > 0$ | $1$ или $2$ |
# | $\pi_1, \pi_2, \dots$ | id токенов, упорядоченные от самого вероятного к наименее вероятному (при равенстве первым идёт меньший id) | $0, 1, 2, 3$ |
# | $k$ | сколько токенов оставляет top-k | $2$ |
# | $p$ | вероятностная масса, которую должен набрать top-p | $0{,}9$ |
# | $m$ | сколько токенов оставляет top-p | $3$ |
#
# **Вручную**, для логитов $(3, 2, 1, 0)$:
#
# - $T = 1$: $(0{,}644; 0{,}237; 0{,}087; 0{,}032)$. $T = 2$ вдвое уменьшает разрывы: $(0{,}455; 0{,}276; 0{,}167; 0{,}102)$.
# - top-k с $k = 2$ оставляет токены 0 и 1 и перенормирует $0{,}644$ и $0{,}237$ на их сумму $0{,}881$:
#   $(0{,}731; 0{,}269; 0; 0)$.
# - top-p с $p = 0{,}9$: накопленная масса равна $0{,}644$, затем $0{,}881$ (всё ещё не дотягивает до $0{,}9$),
#   затем $0{,}968$. Порог пересекается на токене 2, поэтому он остаётся: $m = 3$, что даёт
#   $(0{,}665; 0{,}245; 0{,}090; 0)$.

# %% tags=["exercise"]
# Exercise 7 · Упражнение 7: превратите один вектор логитов в вероятности следующего токена. Разделите логиты на температуру;
# упорядочьте токены по логиту, от большего к меньшему, при равенстве — меньший id первым; оставьте
# top_k лучших (все, если None); из них оставьте кратчайший префикс, перенормированная масса которого
# достигает top_p, включая токен, который её пересекает (все, если None); верните список с
# перенормированной вероятностью каждого оставленного токена и 0,0 для всех остальных. Вычитайте
# наибольший логит перед exp() и складывайте через math.fsum.
# Проверка требует: по одной конечной вероятности на токен, в сумме 1; температура делит логиты;
# top_k и top_p оставляют нужные токены (пересекающий остаётся, при равенстве — меньший id); фильтры
# применяются в этом порядке; большие логиты не переполняются.
def token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    """Next-token probabilities of one logit vector after temperature, then top-k, then top-p."""
    logits, temperature, top_k, top_p = _sampling_args(logits, temperature, top_k, top_p)
    ### BEGIN SOLUTION
    largest = max(logits)
    weights = [math.exp((z - largest) / temperature) for z in logits]  # unnormalised, the largest is 1
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))  # most likely first, ties to the lower id
    if top_k is not None:
        order = order[:top_k]
    if top_p is not None:
        mass = math.fsum(weights[i] for i in order)
        reached = list(itertools.accumulate(weights[i] / mass for i in order))  # share of the first j + 1 tokens
        crossing = next((j for j, share in enumerate(reached) if share >= top_p), len(order) - 1)
        order = order[:crossing + 1]  # the token that crosses the threshold stays
    total = math.fsum(weights[i] for i in order)
    return [weights[i] / total if i in order else 0.0 for i in range(len(logits))]
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 7: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
# @title Код рисунка следующей ячейки: plot_policies (откройте, чтобы прочитать)
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
print(f"накопленная масса распределения при T = 1, сначала самые вероятные: {number([round(m, 3) for m in running_mass], '', 'ru')}")
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
# @title token_distribution при равенствах и на границах (проверено; откройте, чтобы прочитать)
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
print(f"20\xa0000 выборок из top-p = 0,9: частоты {number([round(f, 3) for f in frequencies], '', 'ru')}, наибольшее расхождение {number(gap, '.4f', 'ru')}")
expect("sampling must follow the distribution and never pick a filtered token", gap, "<", 0.015)
expect("sampling must follow the distribution and never pick a filtered token", frequencies[3], "==", 0.0)


show_figure(
    plot_policies(policies, SAMPLING_LOGITS, language=LANGUAGE),
    "Каждая группа столбцов\xa0— один токен, каждый цвет и узор\xa0— одна политика декодирования (T = 1\xa0— синие без "
    "узора). Температура 2 (оранжевые, //) переносит вероятность с токена 0 на остальные, но ничего не убирает. "
    "Top-k = 2 (зелёные, точки) и top-p = 0,9 (фиолетовые, крестики) обнуляют некоторые токены и отдают их "
    "вероятность выжившим; top-p сохраняет токен 2, потому что именно на нём сумма переходит 0,9.",
)


# %% tags=["exercise"]
# Exercise 8 · Упражнение 8: декодируйте жадно по готовым логитам. Для каждого вектора оценок по очереди добавляйте самый
# вероятный токен (при равенстве — меньший id); остановитесь сразу после EOS с причиной 'eos' (EOS
# остаётся в выходе) или когда выдано max_new_tokens токенов, с причиной 'length_limit' (если оба
# случаются одновременно, побеждает EOS). Верните (tokens, reason). Если векторы оценок закончились
# раньше, вызовите ValueError.
# Проверка требует: EOS останавливает трассу и сохраняется; ограничение длины её останавливает; EOS
# побеждает на последнем разрешённом шаге; трасса, которой не хватило логитов, вызывает ValueError.
def greedy_trace(prepared_logits, eos_id, max_new_tokens):
    """Greedy decoding over a prepared list of logit vectors: (tokens, 'eos' or 'length_limit')."""
    steps, eos_id, max_new_tokens = _greedy_args(prepared_logits, eos_id, max_new_tokens)
    ### BEGIN SOLUTION
    tokens = []
    for scores in steps:
        probabilities = token_distribution(scores)  # greedy is the temperature -> 0 limit of sampling
        tokens.append(max(range(len(probabilities)), key=probabilities.__getitem__))
        if tokens[-1] == eos_id:
            return tokens, "eos"
        if len(tokens) == max_new_tokens:
            return tokens, "length_limit"
    raise ValueError(f"the {len(steps)} prepared steps ran out before EOS or the limit of {max_new_tokens} tokens")
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 8: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
print(f"EOS на шаге 2: {number(eos_trace, '', 'ru')}; без EOS в пределах 3 токенов: {number(limit_trace, '', 'ru')}")
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
print(f"логиты TinyLM через greedy_trace с токеном {number(stop_token, '', 'ru')} в роли EOS: {number(model_trace, '', 'ru')}")
if model_trace != (expected_trace, "eos"):
    raise AssertionError(f"greedy_trace must agree with TinyLM.generate up to the first {stop_token}: "
                         f"got {model_trace}, expected {(expected_trace, 'eos')}")

# %% [markdown]
# ## 14 · На некорректном вводе — сразу явная ошибка
#
# **Идея.** Функция, которая на некорректном вводе молча возвращает NaN, растягивает (broadcasting) маску
# неверной формы или читает не тот id токена, прячет ошибку до тех пор, пока та не обойдётся дорого.
# Каждая публичная функция этого ноутбука проверяет свои аргументы и бросает `TypeError` (значение не
# того типа) или `ValueError` (тип правильный, значение неправильное) с сообщением, в котором названы
# аргумент и то, что допустимо; размер, которому понадобилось бы больше 1 ГиБ, отвергается до того,
# как что-либо выделено. Ячейка ниже показывает три таких отказа. Скрытая ячейка после неё запускает
# каждую публичную функцию на вводе, который та обязана отвергнуть; `expect_raises` проваливает ячейку, если функция такой ввод принимает, бросает не ту
# ошибку или пишет сообщение, в котором проблема не упомянута.

# %%
long_q = torch.zeros(20_000, 2)  # 20,000 tokens: the (T, T) scores, exponentials and weights would take 4.8 GB
for label, _bad_call in (("softmax of a list", lambda: softmax([1.0, 2.0])),
                         ("attention over 20,000 tokens", lambda: scaled_dot_product_attention(long_q, long_q, long_q)),
                         ("2**62 new tokens", lambda: model.generate(prompt, 2**62))):
    print(f"{label}:\n  {_refusal(_bad_call)}")

# %% tags=["hide-input"]
# @title Каждая открытая функция на входах, которые она обязана отвергнуть (проверено; откройте, чтобы прочитать)
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
print(f"{number(len(NEGATIVE_TESTS), '', 'ru')} неверных входов отвергнуто с сообщением, называющим проблему, в {number(len(tested), '', 'ru')} открытых "
      "функциях и классах")


# %% [markdown]
# ## 15 · Итоговый проект: современный GPT из ваших собственных деталей
#
# **Идея.** TinyLM (раздел 12) устроен как GPT-2: выученные позиции прибавляются к токенам,
# LayerNorm и сеть прямого распространения с GELU. LLaMA ([Touvron и др., 2023](https://arxiv.org/abs/2302.13971),
# раздел 2.2) и большинство открытых моделей после неё сохраняют блок декодера с pre-norm и меняют три детали:
# **вращательные позиционные эмбеддинги** (RoPE) вместо прибавляемых позиций, **RMSNorm** вместо
# LayerNorm и гейтированную сеть **SwiGLU** вместо GELU; крупнейшие модели Llama 2
# и все модели Llama 3 к тому же делят KV-головы (GQA, раздел 8). В этом разделе вы напишете каждую деталь, соберёте их вместе со своей маской
# (упражнение 2), своим вниманием (упражнение 3) и своими перестановками голов (упражнение 4) в модель, обучите её, пока не появится
# двухслойная схема под названием **индукционная голова** (induction head), и будете декодировать через собственный KV-кэш.
# В конце `LlamaForCausalLM` из `transformers` загрузит ваши веса и должен выдать ваши логиты.
#
# **RoPE** ([Su и др., 2021](https://arxiv.org/abs/2104.09864)). Раздел 3 показал, что сдвиг
# позиции на $k$ поворачивает каждую пару (синус, косинус) на постоянный угол. RoPE применяет этот поворот
# к самим запросам и ключам, а не прибавляет таблицу к токенам: пара
# $(x_{2i}, x_{2i+1})$ запроса или ключа на позиции $p$ поворачивается на угол $p\,\theta_i$.
#
# $$\begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} = \begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix} \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}, \qquad \theta_i = \text{base}^{-2i/d}$$
#
# | Обозначение | Значение | В примере |
# |---|---|---|
# | $x$ | запрос или ключ одной головы, размерности $d$ (размерность головы) | $(1, 0, 0, 1)$ |
# | $p$ | абсолютная позиция токена | $1$ |
# | $\theta_i$ | угол пары $i$ на одну позицию, те же частоты, что в таблице раздела 3 | $1$ и $0{,}01$ |
# | base | задаёт самую медленную частоту | $10000$ |
#
# Два поворота складываются: запрос на позиции $m$ и ключ на позиции $n$ дают оценку $q^\top R_{(n - m)\theta}\, k$,
# которая зависит от сдвига $n - m$, а не от того, где стоит пара. **Вручную**, $x = (1, 0, 0, 1)$
# на позиции 1: первая пара поворачивается на 1 радиан, в $(\cos 1, \sin 1) = (0{,}5403; 0{,}8415)$,
# вторая на 0,01 радиана, в $(-\sin 0{,}01, \cos 0{,}01) = (-0{,}0100; 0{,}99995)$.

# %% tags=["hide-input"]
# @title Размеры итоговой модели и проверки аргументов упражнений 9–15 (откройте, чтобы прочитать)
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
# Exercise 9 · Упражнение 9: напишите RoPE. x имеет форму (..., T, d) с чётным d, positions хранит абсолютную позицию
# каждого из T токенов. Поверните каждую пару (x[..., 2i], x[..., 2i+1]) токена на позиции p на
# угол p * base**(-2i/d): (a, b) -> (a cos - b sin, a sin + b cos). Работайте с целыми тензорами.
# Проверка требует: форму и dtype x; поворот каждой пары на её угол при двух значениях base; позицию 0
# без изменений; и q . k, зависящее только от сдвига между позициями запроса и ключа.
def apply_rope(x, positions, base=10_000.0):
    """Turn pair i of the token at position p by the angle p · base^(-2i/d)."""
    x, positions = _rope_inputs(x, positions, base)
    ### BEGIN SOLUTION
    half = x.shape[-1] // 2
    frequency = base ** (-2 * torch.arange(half, dtype=torch.float64) / x.shape[-1])  # (d/2,)
    angle = positions.to(torch.float64)[:, None] * frequency                         # (T, d/2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]                                           # (..., T, d/2) each
    turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)   # (..., T, d/2, 2)
    return turned.flatten(-2)                                                        # (..., T, d): pairs side by side
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 9: контракт, которому должна отвечать ваша функция (откройте, чтобы прочитать свойства)
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
print(f"(1, 0, 0, 1) на позиции 1 -> {number([round(v, 5) for v in rope_example[1].tolist()], '', 'ru')}")
REFERENCE.check("rope.rotated", rope_example[1], atol=1e-12)
q_probe, k_probe = torch.randn(2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))
offset_scores = [float(apply_rope(q_probe[None], torch.tensor([m + 3]))[0] @ apply_rope(k_probe[None], torch.tensor([m]))[0]) for m in (0, 7, 100)]
print(f"запрос на 3 позиции после ключа, при m = 0, 7, 100: оценки {number([round(s, 10) for s in offset_scores], '', 'ru')}")
expect("with RoPE a score depends only on the offset", max(offset_scores) - min(offset_scores), "<", 1e-9)


# %% [markdown]
# **RMSNorm** ([Zhang и Sennrich, 2019](https://arxiv.org/abs/1910.07467)) — это LayerNorm без
# центрирования: он делит каждый токен на корень из среднего квадрата его признаков и умножает на выученный
# коэффициент $\gamma$, не вычитая среднего и без сдвига. Он экономит одну редукцию на токен и, в
# экспериментах статьи, обучается не хуже.
#
# $$\operatorname{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\frac{1}{d}\sum_{m=1}^{d} x_m^2 + \epsilon}}$$
#
# **Вручную**, $x = (1, 2, 3, 4)$ при $\epsilon = 0$: средний квадрат равен $30 / 4 = 7{,}5$, корень из него
# $2{,}7386$, так что $x / 2{,}7386 = (0{,}3651; 0{,}7303; 1{,}0954; 1{,}4606)$. LayerNorm дал $(-1{,}342, -0{,}447;
# 0{,}447; 1{,}342)$ (раздел 10): RMSNorm сохраняет знак и среднее токена.
#
# **SwiGLU** ([Shazeer, 2020](https://arxiv.org/abs/2002.05202)) заменяет $W_2\,\operatorname{GELU}(W_1 z)$
# гейтированным произведением двух проекций; гейт — $\operatorname{SiLU}(u) = u\,\sigma(u)$.
#
# $$\operatorname{SwiGLU}(z) = W_{down}\big(\operatorname{SiLU}(W_{gate}\, z) \odot W_{up}\, z\big)$$
#
# В ней три матрицы вместо двух, поэтому при том же числе параметров её скрытая размерность составляет $2/3$
# от размерности сети с GELU (Shazeer, раздел 2): LLaMA берёт $\tfrac{2}{3} \cdot 4d$.

# %% tags=["exercise"]
# Exercise 10 · Упражнение 10: напишите RMSNorm как модуль. __init__ хранит eps и коэффициент self.weight — nn.Parameter из
# d_model единиц; forward возвращает x / sqrt(mean(x²) + eps) * weight по последней оси.
# Проверка требует: weight из d_model единиц; выход, равный F.rms_norm с коэффициентом; проходящие градиенты.
class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight over the last axis: LayerNorm without the mean and the bias."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        eps = _rms_norm_args(d_model, eps)
        ### BEGIN SOLUTION
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # the gain γ, one per feature
        ### END SOLUTION

    def forward(self, x):
        """(..., d) -> (..., d)."""
        x = _rms_norm_input(x, self.weight, self.eps)
        ### BEGIN SOLUTION
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
        ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 10: контракт, которому должен отвечать ваш класс (откройте, чтобы прочитать свойства)
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
# Exercise 11 · Упражнение 11: напишите сеть прямого распространения SwiGLU. __init__ создаёт три слоя nn.Linear без смещений:
# w_gate и w_up (d_model -> d_ff) и w_down (d_ff -> d_model); forward возвращает
# w_down(silu(w_gate x) * w_up x) (F.silu).
# Проверка требует: три слоя нужных форм без смещений; выход по формуле.
class SwiGLU(nn.Module):
    """The gated feed-forward network of LLaMA: w_down(silu(w_gate x) ⊙ w_up x)."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        _capstone_widths("SwiGLU's three weights", (3, d_model, d_ff), d_model=d_model, d_ff=d_ff)
        ### BEGIN SOLUTION
        self.w_gate = nn.Linear(d_model, d_ff, bias=False)
        self.w_up = nn.Linear(d_model, d_ff, bias=False)
        self.w_down = nn.Linear(d_ff, d_model, bias=False)
        ### END SOLUTION

    def forward(self, x):
        """(..., d_model) -> (..., d_model)."""
        x = _capstone_features(x, self.w_gate.in_features, self.w_gate.weight.dtype, squared=True)
        ### BEGIN SOLUTION
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))
        ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 11: контракт, которому должен отвечать ваш класс (откройте, чтобы прочитать свойства)
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
print(f"RMSNorm(1, 2, 3, 4) = {number([round(v, 4) for v in rms_example.tolist()], '', 'ru')}")
REFERENCE.check("rms_norm.normalized", rms_example, atol=1e-12)
gelu_weights, swiglu_weights = 2 * 32 * 128, sum(p.numel() for p in SwiGLU(32, 2 * 128 // 3).parameters())
print(f"размерность 32: у сети прямого распространения (FFN) с GELU размерности 128 {number(gelu_weights, ',', 'ru')} весов, у SwiGLU "
      f"размерности 85 {number(swiglu_weights, ',', 'ru')}")
expect("a SwiGLU of 2/3 the hidden width costs the same weights (within 1%)", abs(swiglu_weights / gelu_weights - 1), "<", 0.01)


# %% [markdown]
# **Модель.** Внимание с RoPE берёт ваши детали по порядку: проецирует $x$ в запросы, ключи и
# значения; разделяет головы (`split_heads`); поворачивает запросы и ключи функцией `apply_rope` на их абсолютных
# позициях (значения не поворачиваются: позицию несёт только оценка); даёт каждой KV-голове обслужить свою
# группу голов запросов (`repeat_kv_heads`); применяет внимание с вашей каузальной маской; склеивает головы и применяет
# $W_o$. Блок декодера устроен по схеме pre-norm: $h = x + \operatorname{Attn}(\operatorname{RMSNorm}_1(x))$,
# $y = h + \operatorname{SwiGLU}(\operatorname{RMSNorm}_2(h))$. Модель строит эмбеддинги токенов (без
# таблицы позиций: позиции несёт RoPE), прогоняет блоки, применяет финальный RMSNorm и
# выходной слой без смещения. Имена полей следуют интерфейсу итоговой модели курса
# (`w_q, w_k, w_v, w_o`, `attn_norm, attn, ffn_norm, ffn`, `embed, blocks, norm, head`), который
# используют модули 5.1 и 5.2.
#
# **KV-кэш в прямом проходе.** Генерация подаёт промпт один раз, а затем по одному токену.
# Каждый слой хранит ключи и значения всех токенов до сих пор, так что новый токен вычисляет только
# свои; его запрос затем читает все ключи из кэша. Этот запрос стоит на абсолютной позиции
# $T_k - T_q + r$ — это `query_offset` из упражнения 2. `forward(x, positions, cache)` получает кэш
# одного слоя; его `append(k, v, start)` записывает ключи и значения этого вызова на позиции
# `start, start + 1, ...` и возвращает все накопленные.

# %% tags=["exercise"]
# Exercise 12 · Упражнение 12: напишите внимание с RoPE и сгруппированными KV-головами. __init__ создаёт без смещений w_q (d_model ->
# n_heads * head_dim), w_k и w_v (d_model -> n_kv_heads * head_dim) и w_o (обратно в d_model).
# qkv(x, positions) возвращает q (B, n_heads, T, head_dim) и k, v (B, n_kv_heads, T, head_dim), с
# apply_rope на q и k. merge(out) склеивает головы и применяет w_o. forward(x, positions, cache=None)
# добавляет k, v в кэш, если он есть (cache.append(k, v, int(positions[0])) возвращает все ключи
# и значения до сих пор), повторяет каждую KV-голову для её группы голов запросов, маскирует через causal_allowed
# с правильным query_offset, применяет ваш scaled_dot_product_attention и склеивает головы.
# Проверка требует: четыре проекции; q, k и v с RoPE только на q и k; merge; выход
# каузального внимания, где голова запросов h читает KV-голову h // group; и тот же выход через кэш.
class CapstoneAttention(nn.Module):
    """Causal self-attention with RoPE on queries and keys and n_kv_heads K/V heads shared by groups of query heads."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
        self.n_heads, self.n_kv_heads, self.head_dim, self.rope_base = config.n_heads, config.n_kv_heads, config.head_dim, config.rope_base
        ### BEGIN SOLUTION
        self.w_q = nn.Linear(config.d_model, config.n_heads * config.head_dim, bias=False)
        self.w_k = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_v = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_o = nn.Linear(config.n_heads * config.head_dim, config.d_model, bias=False)
        ### END SOLUTION

    def qkv(self, x, positions):
        """x (B, T, d) at positions (T,) -> q (B, Hq, T, hd), k and v (B, Hkv, T, hd), RoPE on q and k."""
        x = _capstone_features(x, self.w_q.in_features, self.w_q.weight.dtype, ndim=3)
        ### BEGIN SOLUTION
        q = split_heads(self.w_q(x), self.n_heads)       # (B, Hq, T, hd)
        k = split_heads(self.w_k(x), self.n_kv_heads)    # (B, Hkv, T, hd)
        v = split_heads(self.w_v(x), self.n_kv_heads)    # (B, Hkv, T, hd)
        return apply_rope(q, positions, self.rope_base), apply_rope(k, positions, self.rope_base), v
        ### END SOLUTION

    def merge(self, out):
        """out (B, Hq, T, hd) -> (B, T, d): the heads side by side, then w_o."""
        out = _heads_input(out, self.n_heads, self.head_dim, self.w_o.weight.dtype)
        ### BEGIN SOLUTION
        return self.w_o(merge_heads(out))
        ### END SOLUTION

    def forward(self, x, positions, cache=None):
        """x (B, T, d) -> (B, T, d); with a cache this call's keys and values join it and the queries read all of them."""
        cache = _layer_cache(cache)
        ### BEGIN SOLUTION
        q, k, v = self.qkv(x, positions)
        if cache is not None:
            k, v = cache.append(k, v, int(positions[0]))                  # (B, Hkv, T_k, hd): every key so far
        group = self.n_heads // self.n_kv_heads
        t_q, t_k = q.shape[-2], k.shape[-2]
        allowed = causal_allowed(t_q, t_k, query_offset=t_k - t_q)          # (T_q, T_k): queries at their absolute positions
        out = scaled_dot_product_attention(q, repeat_kv_heads(k, group), repeat_kv_heads(v, group), allowed).output
        return self.merge(out)                                             # (B, T, d)
        ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 12: контракт, которому должен отвечать ваш класс (откройте, чтобы прочитать свойства)
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
# Exercise 13 · Упражнение 13: соберите модель. CapstoneBlock хранит attn_norm и ffn_norm (ваш RMSNorm с
# config.norm_eps), attn (ваш CapstoneAttention) и ffn (ваш SwiGLU размерности config.d_ff); его forward устроен
# по схеме pre-norm с остаточной связью вокруг каждого подслоя. CapstoneLM хранит embed (nn.Embedding), blocks
# (nn.ModuleList из config.n_layers блоков), norm и head (nn.Linear без смещения в config.vocab); его
# forward нумерует токены от длины кэша (0 без кэша), отдаёт блоку i слой i кэша
# (cache.layers[i]) и возвращает head(norm(x)).
# Проверка требует: ровно эти части по именам; логиты модели в стиле Llama с pre-norm и
# финальной нормировкой; и те же логиты, когда токены приходят через кэш по 5, затем по 1, 1 и 1.
class CapstoneBlock(nn.Module):
    """A pre-norm decoder block: x + attn(attn_norm(x)), then x + ffn(ffn_norm(x))."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
        ### BEGIN SOLUTION
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = CapstoneAttention(config)
        self.ffn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.ffn = SwiGLU(config.d_model, config.d_ff)
        ### END SOLUTION

    def forward(self, x, positions, cache=None):
        """(B, T, d) -> (B, T, d)."""
        ### BEGIN SOLUTION
        x = x + self.attn(self.attn_norm(x), positions, cache)
        return x + self.ffn(self.ffn_norm(x))
        ### END SOLUTION


class CapstoneLM(nn.Module):
    """Token embedding, n_layers pre-norm blocks with RoPE attention, a final RMSNorm and an output head."""

    def __init__(self, config):
        super().__init__()
        self.config = _capstone_config(config)
        ### BEGIN SOLUTION
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(CapstoneBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)
        ### END SOLUTION

    def forward(self, tokens, cache=None):
        """tokens (B, T) -> logits (B, T, vocab); with a KVCache the tokens continue the ones it holds."""
        start = _capstone_tokens(tokens, self.config, cache)
        ### BEGIN SOLUTION
        positions = torch.arange(start, start + tokens.shape[1])                 # absolute positions (T,)
        x = self.embed(tokens)                                                   # (B, T, d)
        for i, block in enumerate(self.blocks):
            x = block(x, positions, None if cache is None else cache.layers[i])
        return self.head(self.norm(x))                                           # (B, T, vocab)
        ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 13: контракт, которому должны отвечать ваши классы (откройте, чтобы прочитать свойства)
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
# **Задача, которой нужны два слоя.** Каждая последовательность — это $k$ различных случайных токенов (из 16), повторённых
# один раз, где $k$ для каждой строки выбирается от 4 до 12, а дальше идёт случайное заполнение: `9 4 13 2 | 9 4 13 2 | 7 0 ...`.
# Предсказать можно только повтор, начиная с его второго токена: после `9` идёт `4`, потому что `4`
# уже шёл за `9`. Так как $k$ меняется от строки к строке, никакой фиксированный сдвиг его не находит
# (позиционное копирование раздела 12 здесь не работает). Это делает **индукционная голова**
# ([Olsson и др., 2022](https://arxiv.org/abs/2209.11895)): в слое 1 *голова предыдущего токена*
# копирует в позицию каждого токена его предшественника; в слое 2 голова сравнивает текущий токен
# с этими копиями, попадает на токен сразу после прежнего вхождения и копирует его.
# У одного слоя нет более ранней головы, из которой можно читать, поэтому он должен остаться далеко позади двух
# ([Elhage и др., 2021](https://transformer-circuits.pub/2021/framework/index.html)). Функция потерь —
# NLL из раздела 12, только по предсказуемым позициям.

# %% tags=["exercise"]
# Exercise 14 · Упражнение 14: напишите задачу, шаг обучения, цикл обучения и оценку. induction_batch выбирает,
# только с помощью генератора, для каждой строки k от k_min до k_max и k различных токенов (первые k из случайного
# порядка словаря), записывает их дважды и дополняет случайными токенами до 2 * k_max; возвращает inputs
# (все токены, кроме последнего), targets (все, кроме первого) и scored, равный True на целях k+1 .. 2k-1 (позиции
# входа k .. 2k-2). train_step вычисляет среднюю кросс-энтропию только по отмеченным позициям, очищает
# старые градиенты, выполняет обратный проход, делает один шаг оптимизатора и возвращает потерю как float. fit_induction создаёт
# один torch.Generator().manual_seed(seed + 1) и один AdamW (weight_decay=0), задаёт скорость на шаге t равной
# lr * min(1, (t + 1) / warmup) * (1 - t / steps), на каждом шаге вызывает step на новом батче в режиме обучения,
# вызывает on_step(t + 1, loss), если он задан, и возвращает потери. induction_accuracy считает долю argmax == цель на
# отмеченных позициях нового батча, без градиентов.
# Проверки требуют: различные токены с повтором, отмеченные позиции, k для каждой строки, батч, зависящий только от
# генератора; потерю по отмеченным позициям и ровно один шаг оптимизатора; AdamW без weight decay, разогрев и спад,
# новые и воспроизводимые батчи; и точность только по отмеченным позициям.
def induction_batch(batch, generator, *, vocab=16, k_min=4, k_max=12):
    """Rows of k distinct random tokens written twice (k drawn per row), padded to 2 k_max: (inputs, targets, scored)."""
    _induction_args(batch, generator, vocab, k_min, k_max)
    ### BEGIN SOLUTION
    segments = torch.rand(batch, vocab, generator=generator).argsort(-1)[:, :k_max]   # (B, k_max) distinct tokens
    k = torch.randint(k_min, k_max + 1, (batch, 1), generator=generator)              # (B, 1) segment lengths
    position = torch.arange(2 * k_max)[None, :]                                        # (1, 2 k_max)
    repeated = segments.gather(1, torch.where(position < k, position, position - k).clamp(max=k_max - 1))
    padding = torch.randint(vocab, (batch, 2 * k_max), generator=generator)
    sequences = torch.where(position < 2 * k, repeated, padding)                      # (B, 2 k_max)
    scored = (position[:, :-1] >= k) & (position[:, :-1] <= 2 * k - 2)                # targets k+1 .. 2k-1
    return sequences[:, :-1], sequences[:, 1:], scored
    ### END SOLUTION


def train_step(model, optimizer, inputs, targets, scored):
    """One optimizer step on the mean next-token cross-entropy over the scored positions; return the loss."""
    _train_step_args(model, optimizer, inputs, targets, scored)
    ### BEGIN SOLUTION
    loss = F.cross_entropy(model(inputs)[scored], targets[scored])  # logits (B, T, V)[scored] -> (N, V)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
    ### END SOLUTION


def fit_induction(model, step, steps, seed, *, batch=64, lr=1e-2, warmup=20, k_min=4, k_max=12, on_step=None):
    """Train model on fresh induction batches with step(model, optimizer, inputs, targets, scored); return the losses."""
    _fit_args(model, step, steps, seed, batch, lr, warmup, k_min, k_max, on_step)
    ### BEGIN SOLUTION
    generator = torch.Generator().manual_seed(seed + 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: min(1.0, (t + 1) / warmup) * (1 - t / steps))
    losses = []
    model.train()
    for t in range(steps):
        losses.append(step(model, optimizer, *induction_batch(batch, generator, vocab=model.config.vocab, k_min=k_min, k_max=k_max)))
        schedule.step()                                                             # the rate of step t + 1
        if on_step is not None:
            on_step(t + 1, losses[-1])
    model.eval()
    return losses
    ### END SOLUTION


def induction_accuracy(model, *, batch=512, seed=12345, k_min=4, k_max=12):
    """Held-out greedy accuracy on the scored positions of a fresh induction batch."""
    _accuracy_args(model, seed)
    ### BEGIN SOLUTION
    inputs, targets, scored = induction_batch(batch, torch.Generator().manual_seed(seed), vocab=model.config.vocab, k_min=k_min, k_max=k_max)
    with torch.no_grad():
        hits = model(inputs).argmax(dim=-1) == targets                              # (B, T)
    return float(hits[scored].float().mean())
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 14: контракты, которым должны отвечать ваши четыре функции (откройте, чтобы прочитать свойства)
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
        on_step=lambda step, loss, layers=layers: step % 50 == 0 and print(f"слоёв: {number(layers, '', 'ru')}, шаг {number(step, '', 'ru')}: потеря {number(loss, '.3f', 'ru')}", flush=True),
    )
capstone_accuracy = {layers: induction_accuracy(model, batch=induction["eval_rows"], **task_sizes) for layers, model in capstone_models.items()}
print(f"точность на повторе на отложенных данных: 2 слоя {number(capstone_accuracy[2], '.3f', 'ru')}, 1 слой {number(capstone_accuracy[1], '.3f', 'ru')}")
expect("two layers learn the induction task", capstone_accuracy[2], ">=", induction["accuracy_two_layers_at_least"])
expect("one layer does not", capstone_accuracy[1], "<=", induction["accuracy_one_layer_at_most"])


# %% [markdown]
# **Куда смотрят головы.** Возьмём одну последовательность с $k = 8$ и прочитаем веса внимания
# обученной 2-слойной модели. На позиции внутри повтора голова предыдущего токена слоя 1 кладёт свой
# вес на позицию прямо перед ней; индукционная голова слоя 2 кладёт его на токен, который
# шёл за прежним вхождением текущего токена, на $k - 1$ позиций назад. Рисунок отмечает эти
# ожидаемые позиции; ячейка измеряет средний вес, который каждая голова кладёт туда на протяжении повтора.

# %% tags=["hide-input"]
# @title Код рисунка следующей ячейки: attention_by_layer, plot_induction_heads (откройте, чтобы прочитать)
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
print(f"средний вес на ожидаемом ключе на протяжении повтора: головы слоя 1 {number([round(s, 2) for s in head_share[0]], '', 'ru')} "
      f"(на 1 назад), головы слоя 2 {number([round(s, 2) for s in head_share[1]], '', 'ru')} (на {number(k_probe - 1, '', 'ru')} назад)")
show_figure(
    plot_induction_heads((maps[0][0, previous_head].numpy(), maps[1][0, induction_head].numpy()), k_probe, LANGUAGE),
    "Каждая строка\xa0— позиция запроса, каждый столбец\xa0— ключ; темнее\xa0— больше вес, и строки в сумме дают 1. "
    "Оранжевые кружки отмечают ожидаемые ключи для повтора (строки 8–15): слева на одну позицию назад; справа на "
    "семь позиций назад, токен, который шёл за прежним вхождением текущего. Тёмные клетки стоят внутри кружков.",
)
uniform_share = float((1 / (rows + 1.0)).mean())  # what a head that reads every key alike would put there
expect(f"layer 1 has a previous-token head and layer 2 an induction head (weight > 0.4; uniform: {uniform_share:.2f})",
       min(head_share[0][previous_head], head_share[1][induction_head]), ">", 0.4)


# %% [markdown]
# **Декодирование через кэш.** Жадное декодирование без кэша прогоняет через модель всю
# последовательность ради каждого нового токена: $O(n^2)$ проходов токенов для $n$ токенов. С кэшем промпт проходит
# один раз, а каждый шаг подаёт один токен, чьи ключи и значения добавляются в кэш. Кэш —
# два непрерывных буфера на слой, (batch, KV-головы, max_len, head_dim), выделенные один раз; его
# размер в байтах равен $2 \times \text{layers} \times \text{batch} \times \text{K/V heads} \times T \times
# \text{head width} \times \text{bytes per value}$, формуле раздела 9.

# %% tags=["exercise"]
# Exercise 15 · Упражнение 15: напишите KV-кэш и жадное декодирование через него. LayerKV.append(k, v, start) записывает k
# и v (B, H_kv, T, hd) в буферы на позиции start .. start + T - 1 (отказывайте, если start не равен
# self.length), сдвигает self.length и возвращает ключи и значения позиций 0 .. start + T - 1.
# KVCache хранит по одному LayerKV на слой; nbytes() считает байты хранимых ключей и значений.
# generate(model, prompt, n_new, cache=True) дописывает n_new жадных токенов (argmax последних логитов):
# при cache=True подаёт промпт один раз, а затем только самый новый токен через один KVCache; при
# cache=False — всю последовательность на каждом шаге. Без градиентов.
# Проверка требует: токены модели с кэшем и без; промпт, поданный один раз, а затем по одному
# токену на шаг через кэш; всю последовательность на шаг без кэша; n_new=0 возвращает промпт.
class LayerKV:
    """One layer's keys and values in two preallocated buffers (B, H_kv, max_len, hd)."""

    def __init__(self, batch, n_kv_heads, max_len, head_dim, dtype=torch.float32):
        _layer_kv_args(batch, n_kv_heads, max_len, head_dim, dtype)
        ### BEGIN SOLUTION
        self.keys = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.values = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.length = 0
        ### END SOLUTION

    def append(self, k, v, start):
        """Write k, v (B, H_kv, T, hd) at positions start..; return the keys and values so far."""
        _kv_append_args(self.keys, k, v, start)
        ### BEGIN SOLUTION
        end = start + k.shape[2]
        if start != self.length or end > self.keys.shape[2]:
            raise ValueError(f"the cache holds {self.length} of {self.keys.shape[2]} positions; cannot write {start}..{end - 1}")
        self.keys[:, :, start:end], self.values[:, :, start:end] = k, v
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]                 # views, no copy
        ### END SOLUTION


class KVCache:
    """The KV cache of a whole model: one LayerKV per layer."""

    def __init__(self, config, batch):
        _kv_cache_args(config, batch)
        ### BEGIN SOLUTION
        self.layers = [LayerKV(batch, config.n_kv_heads, config.max_len, config.head_dim) for _ in range(config.n_layers)]
        ### END SOLUTION

    @property
    def length(self):
        """How many positions the cache holds."""
        return self.layers[0].length

    def nbytes(self):
        """The bytes of the keys and values held."""
        ### BEGIN SOLUTION
        return sum(t[:, :, :layer.length].numel() * t.element_size() for layer in self.layers for t in (layer.keys, layer.values))
        ### END SOLUTION


def generate(model, prompt, n_new, *, cache=True):
    """Greedy decoding of n_new tokens after prompt (B, T0); with cache=True each step feeds only the newest token."""
    n_new = _generation_length(model, prompt, n_new)
    ### BEGIN SOLUTION
    tokens, feed = prompt, prompt
    store = KVCache(model.config, prompt.shape[0]) if cache else None
    with torch.no_grad():
        for _ in range(n_new):
            logits = model(feed if cache else tokens, store)[:, -1]   # (B, vocab) at the newest position
            newest = logits.argmax(dim=-1, keepdim=True)              # (B, 1)
            tokens = torch.cat((tokens, newest), dim=1)
            feed = newest
    return tokens
    ### END SOLUTION


# %% tags=["hide-input"]
# @title Проверка упражнения 15: контракт, которому должны отвечать ваши функции (откройте, чтобы прочитать свойства)
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
print(f"время: 8 промптов по 20 токенов, по 40 новых токенов: без кэша {number(decode_times[False] * 1000.0, '.0f', 'ru')} мс, с кэшем "
      f"{number(decode_times[True] * 1000.0, '.0f', 'ru')} мс, ускорение {number(decode_times[False] / decode_times[True], '.1f', 'ru')}x; кэш хранит "
      f"{number(bytes_cache.nbytes(), ',', 'ru')} байт для 59 позиций")
expect("cached and uncached decoding give the same tokens", torch.equal(cached_decoded, uncached_decoded))
expect("the cache holds 2 · layers · batch · K/V heads · T · head_dim · 4 bytes", bytes_cache.nbytes(), "==", expected_bytes)


# %% [markdown]
# **Сверка с библиотекой, которой пользуются.** У `LlamaForCausalLM` из `transformers` те же
# детали: RoPE, RMSNorm, SwiGLU и сгруппированные KV-головы, без смещений. Построенная по крошечной конфигурации (без
# загрузки), она загружает ваши обученные веса и должна выдать ваши логиты. Одно различие в раскладке:
# `transformers` поворачивает координату $i$ вместе с $i + d/2$ (две половины головы), а этот курс
# поворачивает соседей $2i$ и $2i + 1$, как в статье о RoPE. Перестановка строк $W_q$ и $W_k$
# внутри каждой головы переводит одну раскладку в другую; именно это делает скрипт `transformers`,
# конвертирующий чекпойнты LLaMA от Meta
# ([`convert_llama_weights_to_hf.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/convert_llama_weights_to_hf.py), `permute`).

# %% tags=["hide-input"]
# @title to_transformers_llama: веса вашей модели в LlamaForCausalLM (откройте, чтобы прочитать)
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
    print("transformers не установлен: сравнение с LlamaForCausalLM пропущено (pip install transformers его включит)")
else:
    llama = to_transformers_llama(capstone_models[2])
    with torch.no_grad():
        ours_logits, llama_logits = capstone_models[2](decode_prompt), llama(decode_prompt).logits
    llama_gap = float((llama_logits - ours_logits).abs().max() / ours_logits.abs().max())
    print(f"LlamaForCausalLM с вашими весами: наибольшая разница логитов {number(llama_gap, '.1e', 'ru')} от наибольшего логита ("
          f"{number(float(ours_logits.abs().max()), '.1f', 'ru')}); float32 округляет каждую операцию примерно на 6e-8")
    expect("your model and LlamaForCausalLM give the same logits (to 1e-5 of the largest)", llama_gap, "<", 1e-5)

# %% [markdown]
# ## За 20 секунд
#
# - **Внимание:** каждый токен строит запрос, ключ и значение. Скалярные произведения запросов и
#   ключей, масштабированные на $\sqrt{d_k}$ и пропущенные через softmax, решают, насколько каждый
#   токен слушает каждый другой; выход — эта смесь значений.
# - **Позиции:** само по себе внимание не видит порядка (оно перестановочно-эквивариантно), поэтому
#   к токенам прибавляют векторы позиций; синусоиды превращают сдвиг в поворот.
# - **Маски:** `True` = можно смотреть. Каузальные маски прячут будущее: это делает обучение на
#   следующем токене честным и позволяет при генерации хранить прошлые ключи и значения в кэше; запросам
#   из кэша нужны их абсолютные позиции (сдвиг запросов), которых `is_causal=True` в PyTorch им не даёт.
# - **Зачем √d_k:** разброс скалярных произведений растёт с размерностью; большие оценки насыщают softmax и
#   лишают модель градиента. Деление на $\sqrt{d_k}$ держит разброс равным 1 при любой размерности.
# - **Головы:** много узких голов, склеенных обратно и перемешанных матрицей $W_o$. GQA и MQA делят
#   KV-головы между головами запросов и во столько же раз уменьшают KV-кэш.
# - **Стоимость:** $n^2$ оценок на голову и слой; если считать четыре проекции $d_{model} \times d_{model}$,
#   без сети прямого распространения и с полным (не каузальным) квадратом, этот член перевешивает
#   проекции после $n = 2 d_{model}$ (раздел 9 даёт точки пересечения при других соглашениях). При генерации
#   KV-кэш к тому же растёт на фиксированное число байт с каждым токеном (131 072 для Llama 3.1 8B).
# - **Блок и модель:** pre-norm блоки с остаточными связями из внимания и сети прямого распространения;
#   крошечная модель за 45 шагов учится копировать случайный отрезок и остаётся на уровне случайного
#   угадывания, если выключить внимание; политики декодирования (жадная, температура, top-k, top-p)
#   превращают её логиты в токены.
#
# ## Самопроверка
#
# Сначала ответьте на каждый вопрос вслух или на бумаге, а потом откройте ответ.
#
# **Объясните внимание неинженеру за 30 секунд.**
#
# <details><summary>Ответ</summary>
#
# Когда модель читает слово, она спрашивает себя, какие ещё
# слова текста помогают понять это слово, оценивает каждое по релевантности и пересобирает своё
# представление о слове как смесь релевантных слов. В предложении «the animal didn't cross the street
# because it was tired» слово «it» берёт большую часть своего смысла от «animal». Так поступает каждое
# слово, параллельно со всеми, в каждом слое.
#
# </details>
#
# **Теперь — ML-инженеру за две минуты.**
#
# <details><summary>Ответ</summary>
#
# Спроецируйте $X$ в $Q$, $K$, $V$ обучаемыми матрицами;
# вычислите $Q K^\top / \sqrt{d_k}$ — матрицу $n \times n$ масштабированных сходств; запрещённым элементам
# (будущее, паддинг) присвойте $-\infty$; примените softmax к каждой строке; умножьте на $V$. Запустите $H$
# голов на срезах размерности $d_{model}/H$ (GQA: меньше KV-голов, каждая общая для своей группы),
# конкатенируйте и спроецируйте матрицей $W_o$. Оберните это в pre-norm остаточную связь, поставьте после
# неё FFN, применяемую к каждой позиции отдельно, и ставьте такие блоки друг на друга. Вычисления
# занимают $O(n^2 d)$, память под оценки — $O(n^2)$, поэтому FlashAttention разбивает вычисление на
# тайлы, а GQA уменьшает кэш.
#
# </details>
#
# **Зачем делить на √d_k и что ломается без этого?**
#
# <details><summary>Ответ</summary>
#
# Для элементов с единичной дисперсией дисперсия
# $q \cdot k$ равна $d_k$. Без масштабирования оценки расползаются по мере расширения голов, softmax
# стремится к one-hot, а его якобиан $\operatorname{diag}(p) - p p^\top$ — к нулю. Раздел 7 измерил
# $\partial L / \partial q$ напрямую: при $d_k = 512$ медианный запрос получает градиент в десятки раз
# меньше, около половины запросов не получают почти ничего, а немногие получают огромный. Обучение
# становится неустойчивым, а не просто медленным.
#
# </details>
#
# **Почему длинный контекст стоит дорого? Назовите два средства.**
#
# <details><summary>Ответ</summary>
#
# Матрица оценок имеет размер $n \times n$ на каждую голову
# каждого слоя, поэтому вычисления растут квадратично, а KV-кэш растёт с каждым удерживаемым токеном.
# FlashAttention вычисляет точное внимание, не храня матрицу $n \times n$ в основной памяти; GQA или MQA
# уменьшают кэш. Другие средства: внимание со скользящим окном или разреженное внимание, кэширование
# промпта для стабильных префиксов, поиск (retrieval).
#
# </details>
#
# **Что даёт каузальная маска, кроме честного обучения?**
#
# <details><summary>Ответ</summary>
#
# Ранние выходы никогда не зависят от более поздних
# токенов, поэтому ключи и значения прошлых токенов можно вычислить один раз и закэшировать; каждый новый
# токен стоит одну строку внимания, а не полный пересчёт. Маске для этой строки нужна абсолютная позиция
# запроса (раздел 4).
#
# </details>
#
# **От чего отказывается GQA и ради чего?**
#
# <details><summary>Ответ</summary>
#
# От небольшой доли выразительной способности модели, потому что головы
# запросов делят ключи и значения, — ради KV-кэша, который в несколько раз меньше: больше одновременных
# запросов и более длинные контексты на один GPU.
#
# </details>
#
# **Полностью замаскированная строка: что возвращает PyTorch и что делает этот ноутбук?**
#
# <details><summary>Ответ</summary>
#
# Свежие версии PyTorch
# (2.5 и новее) возвращают нули; более старые возвращали NaN. Этот ноутбук по умолчанию бросает
# `ValueError`, а нули с конечными градиентами возвращает, только если об этом попросить через
# `empty_row="zero"`.
#
# </details>
#
# **Почему top-p оставляет токен, на котором пересекается порог?**
#
# <details><summary>Ответ</summary>
#
# Без него оставленная масса была бы *меньше* $p$. Хуже
# того, когда самый вероятный токен в одиночку уже набирает $p$, порог пересекается *именно* на нём, и
# если его отбросить, не осталось бы вообще ничего. Сохранение токена, на котором пересекается порог,
# гарантирует не меньше $p$ массы и хотя бы один токен (ячейка после числовых вопросов проверяет оба
# случая).
#
# </details>

# %% [markdown]
# ### Самопроверка с числами
#
# Решите каждую задачу вручную; ячейка ниже вычисляет все ответы и останавливается, если хотя бы один из них неверен.
#
# 1. У **Qwen2.5-7B** 28 слоёв и 4 KV-головы размерности 128, которые кэшируются в 16 битах. Сколько байт
#    добавляет один токен в её KV-кэш?
#
#    <details><summary>Ответ</summary>
#
#    $2 \cdot 28 \cdot 4 \cdot 128 \cdot 2 = 57\,344$ байта, то есть 56 КиБ: ключи и значения, в каждом слое, для каждой KV-головы.
#
#    </details>
#
# 2. Четыре ключа получают оценки $(1, 1, 1, 1 + \ln 3)$. Какой вес достаётся последнему ключу?
#
#    <details><summary>Ответ</summary>
#
#    В $e^{\ln 3} = 3$ раза больше, чем каждому из остальных, поэтому $3 / (1 + 1 + 1 + 3) = 0{,}5$; остальные получают по $1/6$.
#
#    </details>
#
# 3. Каузальная маска на 8 токенах: сколько пар (запрос, ключ) разрешено?
#
#    <details><summary>Ответ</summary>
#
#    $1 + 2 + \dots + 8 = 36$ из 64.
#
#    </details>
#
# 4. Каково при $d_k = 256$ и элементах с единичной дисперсией стандартное отклонение немасштабированной
#    оценки $q \cdot k$, а каково — масштабированной?
#
#    <details><summary>Ответ</summary>
#
#    $\sqrt{256} = 16$ без масштабирования, $16 / \sqrt{256} = 1$ с масштабированием.
#
#    </details>
#
# 5. Логиты $(3, 2, 1, 0)$ и top-p с $p = 0{,}5$: какие токены выживут и что оставило бы правило, которое
#    отбрасывает токен, пересекающий порог?
#
#    <details><summary>Ответ</summary>
#
#    У самого вероятного токена в одиночку $0{,}644 \ge 0{,}5$, так что порог пересекается на нём: top-p
#    оставляет только токен 0 с вероятностью 1. Правило, отбрасывающее этот токен, не оставило бы ничего.
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
print(f"один верхний токен держит {number(plain[0], '.3f', 'ru')} >= 0,5, так что правило, отбрасывающее токен перехода порога, "
      f"оставило бы токенов: {number(crossing, '', 'ru')}")

# %% [markdown]
# ## Приложение · Внимание на практике: варианты, затраты и сбои
#
# Все числа ниже вычислила ячейка стоимости из раздела 9.
#
# **Ваши варианты** — от самого дешёвого до самого обязывающего. Одни выбираются в промпте или в вызове
# API; остальные — выбором модели или стека для инференса (serving stack).
#
# | Вариант | Что он делает | Что вы выигрываете | Чего это стоит | Где это выбирается |
# |---|---|---|---|---|
# | Короткий промпт плюс поиск (retrieval) | Помещает в контекст только релевантные фрагменты | Стоимость, которая не растёт вместе с корпусом | Индекс, который нужно поддерживать, и поиск, который может промахнуться | Ваш собственный код |
# | Кэширование промпта | Повторно использует ключи и значения префикса, который повторяется от вызова к вызову | Чтение из кэша стоит 0,1 цены входа, а первый токен приходит быстрее ([Anthropic prompt caching](https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching)) | Префикс должен совпадать байт в байт; запись в кэш стоит 1,25 цены входа при времени жизни 5 минут и в 2 раза больше при времени жизни 1 час (та же страница) | API или движок инференса |
# | Длинное контекстное окно | Отправляет весь документ или всю историю сразу | Ничего не нужно искать; точные перекрёстные ссылки по всему тексту | Квадратичные вычисления, кэш, растущий с каждым токеном, и худшее воспроизведение середины | Выбранная вами модель |
# | Модель с GQA или MQA | Позволяет нескольким головам запросов делить одну голову ключей и значений | KV-кэш меньше во столько раз, во сколько голов запросов больше, чем KV-голов (в 4 раза для Llama 3.1 8B, посчитано в разделе 8) | Немного выразительной способности модели; решение принимают её авторы | Карточка модели: `num_key_value_heads` |
# | Ядра FlashAttention | Вычисляют в точности то же внимание по тайлам, которые остаются в быстрой памяти на кристалле | Никакой матрицы n × n в основной памяти GPU; статья сообщает об ускорении обучения GPT-2 в 3 раза при контексте 1K и о результате на 15% лучше рекорда MLPerf 1.1 для BERT-large ([Dao и др., 2022](https://arxiv.org/abs/2205.14135)) | Поддерживаемый GPU | Стек инференса (PyTorch, vLLM, ...) |
# | Внимание со скользящим окном | Позволяет каждому слою смотреть назад лишь на фиксированное число токенов | Кэш фиксированного размера в каждом слое и линейная стоимость | Точный поиск за пределами окна пропадает; информация передаётся от слоя к слою скачками | Архитектура, например Mistral 7B **v0.1** с окном в 4096 токенов ([Jiang и др., 2023](https://arxiv.org/abs/2310.06825)); в v0.2 и v0.3 от него отказались ([карточка модели v0.2](https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.2)) |
# | Страничный (paged) KV-кэш | Хранит кэш каждого запроса небольшими блоками, а не одной заранее зарезервированной полосой | Пропускная способность в 2–4 раза выше, чем у FasterTransformer и Orca, при той же задержке ([Kwon и др., 2023](https://arxiv.org/abs/2309.06180)) | Движок, который это поддерживает | vLLM, а с тех пор и большинство движков |
# | Архитектура с линейным временем | Заменяет внимание рекуррентностью с состоянием фиксированного размера | Нет члена n², кэш не растёт; авторы Mamba сообщают о пропускной способности генерации в 5 раз выше, чем у трансформера ([Gu and Dao, 2023](https://arxiv.org/abs/2312.00752)) | Иное поведение при воспроизведении, меньше зрелых моделей | Архитектура (модели пространства состояний) |
#
# **Как выбирать.** Начните с того, что находится под вашим контролем.
#
# - *API у провайдера:* вы управляете промптом. Ставьте стабильную часть в начало (системный промпт,
#   описания инструментов, справочные документы) и держите её неизменной от вызова к вызову, чтобы она
#   кэшировалась; то, что меняется, ставьте в конец. Считайте токены до отправки: вход, не помещающийся
#   в окно, отклоняется, а если в окно не помещаются вход вместе с бюджетом ответа, ответ обрывается.
# - *Длинный контекст или поиск:* длинный контекст — для одного документа, который модель должна прочитать
#   точно (контракт, кодовая база); поиск — когда корпус перерастает любой промпт или релевантная часть
#   мала. Многие промышленные системы делают и то и другое: сначала ищут, потом отдают модели щедрое окно.
# - *Открытая модель на своих серверах:* посмотрите `num_attention_heads`, `num_key_value_heads` и
#   `max_position_embeddings` в её `config.json`. Кэш на токен пропорционален числу KV-голов, и именно
#   это число в большей степени, чем число параметров, определяет, сколько диалогов выдержит один GPU.
# - *Инференс:* используйте движок с FlashAttention и страничным кэшем, а не собственный цикл.
# - *Обучение или дообучение:* оставьте масштабирование оценок и каузальную маску библиотеки в точности
#   такими, как есть; раздел 7 измеряет, что ломается без масштабирования.
# - *Всегда:* измеряйте качество в зависимости от длины контекста на своей задаче, помещая ключевой факт
#   в начало, в середину и в конец промпта. Больший заявленный размер окна не означает, что модель хорошо
#   использует его середину.
#
# **Чего это стоит** — в четырёх валютах (числа взяты из ячейки стоимости раздела 9):
#
# - *Вычисления.* Шаг вычисления оценок и смешивания квадратичен по числу токенов и оплачивается
#   полностью, когда промпт читается впервые: это и есть ожидание перед первым токеном ответа. Промпт из
#   1000 токенов строит 1 000 000 оценок на голову на слой, из 2000 токенов — 4 000 000, а из 128 000
#   токенов — около 16,4 миллиарда: удвоение контекста учетверяет эту часть. Для модели размерности 4096 с
#   четырьмя проекциями 4096 × 4096, без FFN и с полным квадратом квадратичная часть сравнивается с
#   проекциями на 8192 токенах и в 15,6 раза больше их на 128 000. Сгруппированные KV-проекции
#   Llama 3.1 8B меньше, поэтому её слой внимания пересекает этот порог уже на 5120; если учесть ещё и
#   слой FFN размерности 4d (форма исходного трансформера), то четыре проекции d × d вместе с FFN пересекаются
#   с квадратичной частью на 24 576; каузальное ядро, пропускающее заблокированную половину, удваивает
#   каждое из этих значений. Ниже нескольких тысяч токенов доминируют линейные части, и членом n² можно
#   пренебречь.
# - *Память.* Каждый активный диалог хранит ключи и значения всех своих токенов. При форме Llama 3.1 8B
#   (32 слоя, 8 KV-голов размерности 128, 16-битные числа) это 131 072 байта на токен, или 4,2 ГБ на диалог
#   из 32 000 токенов, так что GPU на 80 ГБ, в котором 16 ГБ занимают веса, вмещает 15 таких диалогов.
#   Одному запросу на 128 000 токенов понадобилось бы 67 ГБ при 32 KV-головах и 16,8 ГБ при тех 8, что у
#   модели есть на самом деле.
# - *Деньги.* API берут плату за каждый входной токен. При условной цене USD 5 за миллион входных токенов
#   промпт из 100 000 токенов стоит USD 0,50 при каждой отправке, USD 0,05, если весь он читается из кэша
#   по цене 0,1 от входной, и USD 0,625 в первый раз, когда он записывается в 5-минутный кэш по цене 1,25 от входной.
# - *Воспроизведение.* В работе *Lost in the Middle* ([Liu и др., 2023](https://arxiv.org/abs/2307.03172))
#   GPT-3.5-Turbo правильно ответила на 75,8% вопросов, когда полезный документ стоял первым из 20, на
#   53,8%, когда он стоял десятым (таблица 6 статьи), и на 56,1% вообще без документов (таблица 1): в
#   середине хуже, чем вслепую.
#
# **Что ломается.**
#
# - *Ответ находится в середине.* Точность падает для фактов из середины длинного промпта. Ставьте самое
#   важное в начало или в конец и делайте промпты настолько короткими, насколько позволяет задача.
# - *Кэш никогда не срабатывает.* Метка времени или идентификатор запроса в начале промпта меняет префикс
#   при каждом вызове, поэтому каждый вызов оплачивается по полной цене. Если отчёт об использовании
#   показывает ноль чтений из кэша для одинаковых запросов, значит, перед стабильной частью стоит что-то
#   изменчивое.
# - *Нехватка памяти на длинном контексте.* На длинных запросах GPU переполняют не веса, а KV-кэш.
#   Выбирайте модель с GQA, ограничьте принимаемый контекст или используйте движок со страничным кэшем.
# - *Промпт не помещается.* Вход, не помещающийся в окно, — это ошибка; если же в окно не помещаются вход
#   вместе с бюджетом вывода, ответ обрывается раньше времени. Сначала посчитайте и оставьте место для
#   ответа.
# - *Обучение застревает на немасштабированных оценках.* Без деления на квадратный корень из размерности
#   головы softmax схлопывается на один токен и почти не пропускает градиент обратно. Раздел 7 измеряет,
#   насколько сильно, на размерностях от 2 до 1024.
#
# **В реальных системах.** *Базовая* (base) модель исходного трансформера использовала 8 голов размерности 64
# на векторах размерности 512; *большая* (big) — 16 голов на векторах размерности 1024 со слоем FFN размерности 4096
# ([Vaswani и др., 2017](https://arxiv.org/abs/1706.03762), таблица 3).
# Конфигурации моделей на Hugging Face указывают `num_attention_heads`, `num_key_value_heads` и
# `max_position_embeddings`: в Llama 3.1 8B на 32 головы запросов приходится 8 KV-голов, и модель
# принимает 128K токенов ([её конфигурация](https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json)).
# Mistral 7B v0.1 использует то же соотношение 32 к 8 плюс окно в 4096 токенов, охват которого через все
# 32 слоя составляет 131 072 токена (ячейка стоимости раздела 9; в статье это округлено до «approximately 131K», то есть
# «примерно 131K»). Это число следует соглашению Mistral: позиция i читает позиции i − 4096 … i, так что каждый
# слой передаёт информацию на 4096 позиций назад; в модуле 5 оно стоит рядом с соглашением gpt-oss. Авторы статьи о GQA *дообучили* (uptraining) существующие многоголовые чекпойнты
# (T5-XXL) в модели с группировкой запросов, потратив 5% исходного вычислительного бюджета предобучения;
# эти 5% — не стоимость обучения GQA с нуля ([Ainslie и др., 2023](https://arxiv.org/abs/2305.13245)).
# `F.scaled_dot_product_attention` в PyTorch сам выбирает ядро: FlashAttention, экономное по памяти
# (memory-efficient), простое математическое, а на GPU NVIDIA — ещё и ядро cuDNN ([`SDPBackend`](https://docs.pytorch.org/docs/stable/generated/torch.nn.attention.SDPBackend.html));
# какое из них он предпочтёт, зависит от версии и от GPU: селектор PyTorch ставит cuDNN первым, только
# когда выполняется `check_prefer_cudnn_attention()` в
# [`sdp_utils.cpp`](https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp) —
# условие на поколение GPU (Hopper и более новые GPU для дата-центров) и версию cuDNN, которое менялось от
# версии к версии; иначе он первым пробует FlashAttention.
# Его аргумент `scale=` передаётся только по имени (keyword-only) и появился в torch 2.1
# ([документация](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)),
# поэтому этот ноутбук устанавливает `torch>=2.1`;
# а страничный кэш vLLM придумали потому, что прежние движки использовали под реальные состояния токенов
# лишь 20,4%–38,2% своей памяти KV-кэша ([Kwon и др., 2023](https://arxiv.org/abs/2309.06180)).
#
# **Окна в миллион токенов и единые цены** (проверено в декабре 2026; эти страницы часто меняются, так
# что перечитайте их, прежде чем полагаться на какое-либо число). Документация Anthropic определяет
# контекстное окно как весь текст, на который модель может опираться, когда пишет ответ, включая сам
# ответ, и даёт одним своим моделям окно в 1M токенов, а другим — 200K
# ([контекстные окна](https://platform.claude.com/docs/en/build-with-claude/context-windows)). Поэтому в
# окно идёт всё, что есть в запросе: системный промпт, описания инструментов и их результаты, диалог до
# этого момента, приложенные документы и пишущийся ответ. Входные токены оплачиваются поштучно — по
# одной цене на модель ([цены Anthropic](https://platform.claude.com/docs/en/about-claude/pricing))
# или в двух уровнях с границей в 200 000 токенов промпта, как у Gemini 2.5 Pro
# ([цены Gemini](https://ai.google.dev/gemini-api/docs/pricing)). Внутри уровня миллионный токен стоит
# столько же, сколько первый, хотя шаг вычисления оценок, в который он попадает, растёт как квадрат
# длины (раздел 9): поставщик усредняет член n² в одну цену за токен.

# %% [markdown]
# ## Статьи, на которых основан этот модуль
#
# - Vaswani и др., *Attention Is All You Need* (2017):
#   https://arxiv.org/abs/1706.03762. Внимание на масштабированном скалярном произведении, многоголовое
#   внимание, синусоидальные позиции и сам трансформер.
# - Ainslie и др., *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
#   Checkpoints* (2023): https://arxiv.org/abs/2305.13245. Внимание с группировкой запросов и дообучение
#   (uptraining) многоголовых чекпойнтов в такие модели.
# - Shazeer, *Fast Transformer Decoding: One Write-Head is All You Need* (2019):
#   https://arxiv.org/abs/1911.02150. Внимание с одной KV-головой (multi-query attention).
# - Dao и др., *FlashAttention* (2022): https://arxiv.org/abs/2205.14135. Точное внимание по тайлам,
#   размер которых подобран под быструю память на кристалле.
# - Liu и др., *Lost in the Middle* (2023): https://arxiv.org/abs/2307.03172.
#   Как воспроизведение фактов зависит от их позиции в контексте.
# - Holtzman и др., *The Curious Case of Neural Text Degeneration* (2019):
#   https://arxiv.org/abs/1904.09751. Ядерное (top-p) сэмплирование.
# - Xiong и др., *On Layer Normalization in the Transformer Architecture* (2020):
#   https://arxiv.org/abs/2002.04745. Почему pre-norm обучается стабильнее, чем post-norm.
#
# **Для дальнейшего чтения.** The Annotated Transformer (https://nlp.seas.harvard.edu/annotated-transformer/),
# *The Illustrated Transformer* Джея Аламмара (https://jalammar.github.io/illustrated-transformer/),
# видео Андрея Карпатого *Let's build GPT: from scratch, in code, spelled out*
# (https://www.youtube.com/watch?v=kCc8FmEb1nY), где строится маленький GPT и каузальная маска выводится
# так же, как в разделе 4, и его nanoGPT (https://github.com/karpathy/nanoGPT); *Attention in
# transformers, step-by-step* от 3Blue1Brown, глава 6 серии о глубоком обучении
# (https://www.3blue1brown.com/lessons/attention) — картинка, стоящая за запросами, ключами и
# значениями; и документация PyTorch по функции `scaled_dot_product_attention`
# (https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html).

# %%
report_references(globals())
exercise_summary(globals())
report_section("Модуль 3", globals())

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
