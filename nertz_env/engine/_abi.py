"""How numba passes a :class:`~nertz_env.engine.state.TableState` from one compiled function to another.

numba flattens a tuple argument into its scalars: each of the state's ~40 arrays becomes its pointers, sizes,
shapes and strides, some 400 arguments. Every call of a rules function then builds ~400 ``extractvalue``
instructions at the call site and ~400 ``insertvalue`` ones in the callee, in numba's Python IR builder, and LLVM
optimises them all away again once it inlines the call: about half the cost of a call site of a state-taking
helper, and 1.4 s of the first step's 14.2 s (``experiments/compile_notes.md``).

Here a ``TableState`` is typed as :class:`PackedNamedTuple`, the same named tuple to numba (fields, attribute
access, unboxing, everything else) except that it crosses a call as one LLVM struct value. Inlined calls compile
to the same code; the few calls that stay calls (``reset_table``, ``observe_table``, ...) pass the struct whole.
Steps/s measured within 5% of the flattened form, with no consistent sign. numba's other tuples are left alone.

Imported by ``nertz_env.engine`` itself, so the type is registered before any compiled function (the rules',
the agents' kernels or a user's own) first sees a state: numba's dispatcher remembers, once per process, how
it types a named tuple of a given class and fields.
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
        # numba mangles a type's name into every symbol of every function taking it: the tuple's own name lists
        # all ~40 array types (1.5 KB per symbol, 2 MB of IR text for the step). A short name, unique per field
        # types, names the same functions.
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
    # A dispatcher call types a state here once per layout (then numba's C cache answers); batch.bound() and
    # numba.typeof() come here every time, and looking the type up is ~40x cheaper than building it
    fields = tuple([typeof_impl(v, c) for v in val])
    if any(f is None for f in fields):  # a field numba cannot type: numba's own "cannot determine" error
        return None
    typ = _TYPES.get(fields)
    if typ is None:
        typ = _TYPES[fields] = PackedNamedTuple(fields, TableState)
    return typ
