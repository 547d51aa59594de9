"""Independent generators for the frozen reference metrics, one module per course notebook.

Nothing here imports notebook code or the contracts package: every value is closed-form
integer arithmetic or a float64 computation written for this purpose, with sums taken by
``math.fsum`` so that each result is the correctly rounded value of its formula.
"""

from . import module3, module5_1, module5_2

GENERATORS = {"module3": module3.generate, "module5_1": module5_1.generate, "module5_2": module5_2.generate}
