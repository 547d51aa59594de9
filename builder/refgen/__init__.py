"""Independent generators for the frozen reference metrics, one module per course module.

Nothing here imports notebook code or the contracts package: every value is closed-form
integer arithmetic or a float64 computation written for this purpose, with sums taken by
``math.fsum`` so that each result is the correctly rounded value of its formula.
"""

from . import module3, module5

GENERATORS = {"module3": module3.generate, "module5": module5.generate}
