"""The ``tmax`` command: parse, call one library function, print. Nothing in the library imports it.

``common`` holds the group and what every verb shares (options, progress bars, error lines); each
other module adds the verbs of one kind of work to the group when imported here."""

from tmax.cli import interop, reports, run, tasks  # noqa: F401 - importing a module registers its verbs
from tmax.cli.common import main

__all__ = ["main"]
