"""The graded edition's cell guard: a cell that needs an unfinished exercise prints one line instead of failing."""

from .messages import say, shown_label

__all__ = ["wait_for_exercises"]


def wait_for_exercises(namespace):
    """From now on, a cell that needs a name in ``namespace["EXERCISES_WAITING"]`` prints which exercise it waits for.

    ``check_exercise`` files the name of an exercise that is untouched or fails, when no reference
    solution can stand in, and takes it out when its check passes. An IPython input transformer
    reads each cell before it runs. A cell that needs a waiting name (itself, or through a notebook
    function, class or object whose code names it) keeps only its definitions (``def``, ``class``,
    ``import``) and prints one line; the names its other statements would have bound wait for the
    same exercise. In a cell of definitions only, function bodies do not count: nothing calls them
    yet. A cell that calls ``check_exercise`` or defines an exercise's waiting name runs as written;
    ``check_exercise`` asks ``namespace["EXERCISE_NEEDS"]`` whether the implementation it judges
    needs another exercise that waits, and then says so instead of judging it.
    IPython may transform a cell more than once before it runs; the answer does not change.
    ``report_references`` then counts the values of the waiting cells instead of failing.
    Outside IPython (a plain script) nothing changes.
    """
    import ast
    import dis

    waiting = namespace.setdefault("EXERCISES_WAITING", {})  # an exercise's name -> its label, kept by check_exercise
    skipped = {}  # a name a skipped cell would have bound -> the label it waits for, while that label waits

    def waits(name):
        """The label ``name`` waits for, or None."""
        return waiting.get(name) or (skipped[name] if skipped.get(name) in waiting.values() else None)

    def codes(code):
        """A code object and every code object nested in it."""
        yield code
        for const in code.co_consts:
            if hasattr(const, "co_names"):
                yield from codes(const)

    def needs(value, seen, own=None):
        """The label of the exercise (other than ``own``) that ``value`` needs through the global names its code uses, or None."""
        if id(value) in seen:
            return None
        seen.add(id(value))
        held = next((label for name, label in waiting.items() if label != own and namespace.get(name) is value), None)
        if held:
            return held  # the exercise's own function or class, by another name or inside a table
        value = getattr(value, "__func__", getattr(value, "fget", value))  # methods, classmethods, properties
        if getattr(value, "__globals__", None) is namespace:
            globals_used = {i.argval for code in codes(value.__code__) for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
            for name in globals_used:
                found = (waits(name) if waits(name) != own else None) or (needs(namespace[name], seen, own) if name in namespace else None)
                if found:
                    return found
            return None
        if isinstance(value, (list, tuple, set, frozenset, dict)):  # a table of functions or objects, such as a battery
            items = list(value.items() if isinstance(value, dict) else value)[:200]
            return next((found for item in items if (found := needs(item, seen, own))), None)
        kind = value if isinstance(value, type) else type(value)
        if kind.__module__ != namespace.get("__name__"):
            return None
        return next((found for member in vars(kind).values() if (found := needs(member, seen, own))), None)

    def top_level(tree):
        """Every node of a cell that runs when the cell runs: function and lambda bodies left out."""
        stack = list(tree.body)
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.extend(ast.iter_child_nodes(node))

    def bound(node):
        """The names one node binds."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            return [node.id]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return [(a.asname or a.name).split(".")[0] for a in node.names]
        return []

    def wait_for_exercises_transform(lines):
        """The cell as written, or one print naming the exercise it waits for (the same answer when called again)."""
        try:
            tree = ast.parse("".join(lines)) if waiting else None
        except SyntaxError:
            tree = None
        if tree is None:
            return lines
        nodes = list(top_level(tree))
        calls = {n.func.id for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        binds = {name for n in nodes for name in bound(n)}
        if "check_exercise" in calls or {n.name for n in tree.body if hasattr(n, "name")} & set(waiting):
            return lines
        definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
        if not all(isinstance(n, definitions) for n in tree.body):
            nodes = list(ast.walk(tree))  # the cell may call what it defines: their bodies run too
        used = [n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        for name in dict.fromkeys(used):
            label = waits(name) or (needs(namespace[name], set()) if name in namespace else None)
            if label:
                kept = [n for n in tree.body if isinstance(n, definitions)]
                skipped.update(dict.fromkeys(binds - set(waiting) - {b for n in kept for b in bound(n)}, label))
                lines = "".join(lines).splitlines(keepends=True)
                spans = [(min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])]), n.end_lineno) for n in kept]
                return [line for first, last in spans for line in lines[first - 1:last]] + [
                    f"\nprint({say('cell waits', label=shown_label(label))!r})\n"]
        return lines

    namespace["EXERCISE_NEEDS"] = lambda implementation, label: needs(implementation, set(), label)  # for check_exercise
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        kept = [t for t in shell.input_transformers_post if getattr(t, "__name__", "") != wait_for_exercises_transform.__name__]
        shell.input_transformers_post[:] = kept + [wait_for_exercises_transform]
