"""Error types that the command line turns into one-line messages with exit code 2.

Every error a user can cause (a bad file, a bad argument, missing data) is raised as a subclass
of :class:`HsevalError`; anything else escaping the CLI is a bug in hseval.
"""

from __future__ import annotations


class HsevalError(Exception):
    """Base class for errors caused by user input; the message is one actionable line."""


class HierarchyError(HsevalError, ValueError):
    """A hierarchy file or tree is malformed (cycle, two parents, gaps, unknown names...)."""


class RunFormatError(HsevalError, ValueError):
    """A run folder does not follow the run format (missing/corrupt files, wrong schema, shapes)."""


class ConfigError(HsevalError, ValueError):
    """A configuration value or command-line option is invalid."""


class DataError(HsevalError, ValueError):
    """A dataset is missing, incomplete or corrupt."""


class HsevalWarning(UserWarning):
    """Something the user should know that does not stop the command (the CLI prints it as one
    line ``hseval: warning: ...``)."""
