"""The facades' names shown where users import them: ``pybloom_async.lookup``, not
``pybloom_async.rows.api.lookup``, in reprs, tracebacks, pickles and the docs."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping


def publish(namespace: Mapping[str, object], names: Iterable[str], module: str) -> None:
    """Set the ``__module__`` of each class and function of ``names`` to ``module``.

    ``namespace`` is the facade's (``module``'s) own, which binds each name to its
    object: a pickle of the object names ``module`` and the object's ``__qualname__``,
    and unpickling finds it there. So an object whose qualified name is not the name it
    is exported under keeps its module, as does anything not defined in this package.

    What finds a class through its module finds the facade: ``typing.get_type_hints``
    of its string annotations needs the defining module's names (``vars(module)``), and
    ``inspect.getsource`` of the class fails (of its methods, it works).
    """
    for name in names:
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if obj.__qualname__ == name and obj.__module__.startswith("pybloom_async."):
            _move(obj, obj.__module__, module)


def _move(obj: object, old: str, new: str) -> None:
    """``obj`` and what its class body defines (methods, properties, nested classes) moved
    from ``old`` to ``new``: one module for a class and its members, as tools that read
    them (the API reference's inspector) expect."""
    obj.__module__ = new
    if not inspect.isclass(obj):
        return
    for member in vars(obj).values():
        inner = getattr(member, "fget", None) or getattr(member, "__func__", member)
        if (inspect.isclass(inner) or inspect.isfunction(inner)) and inner.__module__ == old:
            _move(inner, old, new)
