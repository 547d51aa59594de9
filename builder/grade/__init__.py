"""``python -m builder grade``: score submitted notebooks with the course's own contract checks.

``batch`` deals submissions to ``--jobs`` judge processes (``runner``). A judge runs the solution
edition once and, at each exercise, judges every submission of its group: the check cell runs in
a judge process forked for that one check, and the student's code runs in a separate student
process (``sandbox``) that the judge reaches only through a data channel (``wire``, ``remote``,
``worker``). Earlier exercises run on their reference solutions, so one mistake costs one exercise.
"""
