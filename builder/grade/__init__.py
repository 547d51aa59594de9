"""``python -m builder grade``: score submitted notebooks with the course's own contract checks.

Only the functions and classes a student defined in the exercise cells are taken from a
submission; the setup cells, references, contracts and check cells come from the current build.
``runner`` executes the solution edition once per module and forks one short-lived process per
exercise and submission, so each exercise is judged alone, in an empty folder, with a time limit,
on the reference solutions of the exercises before it.
"""
