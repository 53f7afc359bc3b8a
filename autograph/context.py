"""State shared by the passes of one conversion."""

from __future__ import annotations

import dataclasses

from autograph.directive_calls import Resolver
from autograph.naming import Namer, Role


@dataclasses.dataclass
class Context:
    """What a pass may know about the conversion it is part of.

    Attributes:
      namer: hands out fresh, deterministic names.
      filename: the user's file, for error locations.
      recursive: whether calls to user functions are converted too.
      super_args: the explicit arguments for a zero-argument ``super()``.
      class_name: the class whose body the function is written in, whose
        name Python mangles private names (``__x``) with.
      directives: tells which calls are autograph's directives, by what their
        names refer to.
    """

    namer: Namer
    filename: str = "<unknown>"
    recursive: bool = True
    # For methods that use zero-argument `super()`: `("__class__", "self")`.
    super_args: tuple[str, str] | None = None
    class_name: str | None = None
    directives: Resolver = dataclasses.field(default_factory=Resolver)
    # Names a converted `if` or loop may leave unassigned (it got ag__.Undefined):
    # the user's later reads of them are checked, as Python checks every read.
    maybe_undefined: set = dataclasses.field(default_factory=set)

    def role(self, name: str) -> Role | None:
        """The role the namer recorded for a generated name, or None (a user's name)."""
        return self.namer.roles.get(name)

    def is_jump_flag(self, name: str) -> bool:
        """Whether ``name`` is a flag set by a lowered jump (``did_break``, ...): a
        value left unassigned on a path where it is set is never read, since the
        rest is guarded."""
        role = self.namer.roles.get(name)
        return role is not None and role.jump is not None
