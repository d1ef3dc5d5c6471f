"""``scriptorium check``: every problem in a project's prompts, templates, schemas and profiles.

The checks load everything the way a run would, through a read-only
:class:`~scriptorium.check.view.ProjectView` the engine builds (``Engine.project_view()``: its
repositories, validator, template helpers and providers), and add what a run only finds later or
never: variables a template uses that ``inputs`` does not declare (and declared ones no template
uses), ``artifacts.<name>`` references to undeclared artifacts, schemas that would fail at prepare
time, profiles that do not load or are named but missing, provider plugins that do not load, and
anything that looks like a pasted key. A problem names the file and, where it is known, the line;
it never quotes a secret-looking value.

Modules: ``problems`` (:class:`Problem`, the kinds), ``view`` (the project view), ``files``
(bounded reads, links), ``secrets``, ``profiles``, ``prompts`` (prompts and templates), ``cache``
(caching warnings), ``project`` (:func:`check_project`). Names load on first use.
"""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr

if TYPE_CHECKING:
    from scriptorium.check.problems import KINDS, WARNINGS, Problem
    from scriptorium.check.project import check_project
    from scriptorium.check.view import ProjectView, TemplateHelpers

__all__ = ["KINDS", "WARNINGS", "Problem", "ProjectView", "TemplateHelpers", "check_project"]

__getattr__ = lazy_getattr(
    __name__,
    {
        "KINDS": "problems",
        "WARNINGS": "problems",
        "Problem": "problems",
        "ProjectView": "view",
        "TemplateHelpers": "view",
        "check_project": "project",
    },
)
