"""The package version and the distribution's name, in a module of their own so the CLI, the HTTP
API, the observer and every install hint can read them without importing the ``scriptorium``
package (which names them back).

The import package is ``scriptorium``; the distribution that installs it is ``scriptorium-llm``
(the name ``scriptorium`` on the public package index belongs to an unrelated project). Every
"pip install" message is built by :func:`install_hint`, so none can name the other project.
"""

from __future__ import annotations

#: The distribution name: what ``pip install`` and ``importlib.metadata`` know this project by.
DISTRIBUTION = "scriptorium-llm"

#: This source tree's version (the build reads it from here, so the two never differ).
__version__ = "0.1.0"


def installed_version() -> str:
    """The version of the installed distribution, as its metadata says; this tree's version when
    it is not installed (run from a checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return __version__


def install_hint(extra: str | None = None) -> str:
    """The command that installs this distribution, with ``extra`` when given:
    ``pip install 'scriptorium-llm[http]'``."""
    requirement = DISTRIBUTION if not extra else f"{DISTRIBUTION}[{extra}]"
    return f"pip install '{requirement}'"
