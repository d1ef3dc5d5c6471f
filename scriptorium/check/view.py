"""The read-only view of a project that ``check`` works over. The engine builds it
(``Engine.project_view()``) from its own collaborators, so ``check`` loads everything the way a
run would; a test builds one from in-memory or file adapters directly."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from scriptorium.evals.suite import SuiteFiles
    from scriptorium.llm.registry import ProviderSpec
    from scriptorium.profile.repository import Repository as ProfileRepository
    from scriptorium.promptdef.model import PromptDefinition
    from scriptorium.promptdef.repository import Repository as PromptRepository
    from scriptorium.validate.validator import Validator

__all__ = ["ProjectView", "ProviderCatalog", "TemplateHelpers", "ViewSource"]


class ProviderCatalog(Protocol):
    """The providers a project can name (``scriptorium.llm.registry.Registry`` is one)."""

    def find(self, name: str) -> ProviderSpec | None:
        """The spec of ``name``, or None."""
        ...

    @property
    def problems(self) -> tuple[str, ...]:
        """Provider plugins that could not be loaded, one message each."""
        ...


@dataclass(frozen=True)
class TemplateHelpers:
    """What ``check`` asks the renderer about a definition's templates (the Jinja adapter's
    ``check_syntax``, ``template_variables``, ``template_artifacts``,
    ``template_artifact_fields``); the last three raise ``PromptRenderError`` for a template
    that does not parse."""

    #: One message per template that does not compile.
    syntax: Callable[[PromptDefinition], list[str]]
    #: Per template label, the input variables it reads.
    variables: Callable[[PromptDefinition], Mapping[str, set[str]]]
    #: The artifact names the templates read.
    artifacts: Callable[[PromptDefinition], set[str]]
    #: ``(name, field)`` for every ``artifacts.<name>.<field>`` read.
    artifact_fields: Callable[[PromptDefinition], set[tuple[str, str]]]


@dataclass(frozen=True)
class ProjectView:
    """A project as ``check`` sees it: where its files are, the repositories and validator that
    load them, the template helpers, and the providers.

    ``known_providers`` is the provider names a profile may use, or None when any name goes (an
    injected client serves every profile, whatever its provider). ``tests`` reads the tests
    files beside the prompts (None: they are not checked).
    """

    root: Path
    prompts_dir: Path
    profiles_dir: Path
    prompts: PromptRepository
    profiles: ProfileRepository
    validator: Validator
    templates: TemplateHelpers
    providers: ProviderCatalog
    known_providers: tuple[str, ...] | None = None
    tests: SuiteFiles | None = None


class ViewSource(Protocol):
    """Something that builds a project view (``Engine`` does)."""

    def project_view(self) -> ProjectView:
        """The project's read-only view."""
        ...
