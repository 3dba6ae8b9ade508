"""How numba passes a :class:`~nertz_env.engine.state.TableState` between compiled functions: typed as a
:class:`PackedNamedTuple`, it crosses a call as one LLVM struct value, not flattened into some 400 scalar
arguments that cost compile time (docs/experiments/compile-notes.md). ``nertz_env.engine`` imports this module,
so the type is registered before any compiled function first sees a state.
"""

from __future__ import annotations

import hashlib
from typing import Any

from numba.core import types
from numba.core.datamodel import models, register_default
from numba.extending import typeof_impl

from nertz_env.engine.state import TableState


class PackedNamedTuple(types.NamedTuple):
    """numba's type of a ``TableState``: a named tuple passed to and from calls as one struct value."""

    def __init__(self, types: Any, cls: type) -> None:
        super().__init__(types, cls)
        # numba mangles a type's name into every symbol of every function taking it: a short name, unique per
        # field types, instead of one that lists all ~40 array types
        digest = hashlib.sha1(self.name.encode()).hexdigest()[:10]
        self.name = f"{cls.__name__}.{digest}"


@register_default(PackedNamedTuple)
class PackedModel(models.TupleModel):
    """A tuple's data model, except that a call takes the whole struct as one argument."""

    def get_argument_type(self) -> Any:
        return self.get_value_type()

    def as_argument(self, builder: Any, value: Any) -> Any:
        return value

    def from_argument(self, builder: Any, value: Any) -> Any:
        return value


_TYPES: dict[tuple, PackedNamedTuple] = {}


@typeof_impl.register(TableState)
def _typeof_table_state(val: TableState, c: Any) -> PackedNamedTuple | None:
    # batch.bound() and numba.typeof() come here every time: look the type up rather than build it
    fields = tuple([typeof_impl(v, c) for v in val])
    if any(f is None for f in fields):  # a field numba cannot type: numba's own "cannot determine" error
        return None
    typ = _TYPES.get(fields)
    if typ is None:
        typ = _TYPES[fields] = PackedNamedTuple(fields, TableState)
    return typ
