"""``scriptorium check``: every problem in a project, over its read-only view."""

from __future__ import annotations

from scriptorium.check.files import ProjectFiles
from scriptorium.check.problems import Problem
from scriptorium.check.profiles import plugin_problems, profile_problems
from scriptorium.check.prompts import prompt_problems
from scriptorium.check.tests import tests_problems
from scriptorium.check.view import ProjectView, ViewSource

__all__ = ["check_project"]


def check_project(project: ProjectView | ViewSource) -> list[Problem]:
    """Every problem in the project (a view, or something that builds one, such as an
    ``Engine``), sorted by file (then in the order found)."""
    view = project if isinstance(project, ProjectView) else project.project_view()
    files = ProjectFiles(view)
    profile_names = set(view.profiles.list())
    problems = [
        *profile_problems(view, files, profile_names),
        *prompt_problems(view, files, profile_names),
        *tests_problems(view, files, profile_names),
        *plugin_problems(view),
    ]
    # Stable: within a file, problems keep the order they were found in.
    return sorted(problems, key=lambda p: p.file)
