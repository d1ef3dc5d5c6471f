"""What ``scriptorium check`` reports: :class:`Problem`, every kind it can have, and which kinds are
warnings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["KINDS", "WARNINGS", "Problem"]

#: Every ``Problem.kind``, with what it means.
KINDS: Mapping[str, str] = {
    "no_prompts_dir": "the project has no prompts/ directory",
    "prompt_name": "a .prompt.md file whose path is not a valid prompt id (it cannot be run)",
    "prompt_invalid": "the prompt does not load: front matter or body structure",
    "template_syntax": "a template does not compile",
    "undeclared_variable": "a template uses a variable that inputs does not declare",
    "unused_input": "inputs declares a variable no template uses",
    "undeclared_artifact": "a template reads artifacts.<name> that the prompt does not declare",
    "unused_artifact": "the prompt declares an artifact no template reads",
    "media_text": "a template reads .text of an image or PDF artifact, which has no text",
    "media_block": "a template places .block of an artifact that is not declared as media",
    "schema_invalid": "the output schema is missing, unreadable, unparsable or invalid",
    "schema_unused": "an output schema is given but the output format does not use it",
    "inputs_schema_invalid": "the inputs schema is not a valid JSON Schema",
    "profile_missing": "the prompt names a profile that does not exist",
    "link_outside": "a prompt or profile file (or a folder of prompts) is a symlink that leads "
    "outside its directory, or nowhere; it is never loaded",
    "profile_name": "a profile file whose name is not a valid profile name",
    "profile_invalid": "the profile does not load",
    "secret_in_profile": "a profile holds something that looks like a pasted API key",
    "secret_in_prompt": "a prompt file holds something that looks like a pasted API key",
    "cache_breakpoints": "more cache breakpoints than a request can carry (4): the first are dropped",
    "cache_after_input": "a cache breakpoint follows text that depends on the request's inputs",
    "cache_too_short": "the cached prefix is shorter than the model's minimum: nothing is cached",
    "schema_not_enforced": "a json_schema prompt runs on a server that its quirks table lists as "
    "not enforcing a schema (the answer is still validated)",
    "provider_plugin": "an installed provider plugin (an entry point of scriptorium.providers) "
    "does not load; only profiles naming its provider are affected",
    "provider_not_installed": "a profile's provider (or its cloud platform) needs a package that "
    "is not installed; runs of it would fail until the extra named is installed",
    "insecure_endpoint": "a profile allows plain http to a host that is not loopback "
    "(allow_insecure_http): keys and prompts travel unencrypted",
    "tests_invalid": "a tests file (prompts/<id>.tests.yaml) does not load: YAML, an unknown key, "
    "a value out of range, an unsafe regex",
    "tests_orphan": "a tests file whose prompt does not exist (or whose name is no prompt id)",
    "tests_profile": "a tests file names a profile that does not exist",
    "tests_input": "a test case gives inputs the prompt does not declare, or its inputs schema "
    "refuses them",
    "tests_artifact": "a test case gives an artifact the prompt does not declare, leaves out a "
    "required one, or names a file that is not in the project",
    "tests_pointer": "a value or pointer expectation the prompt's output can never hold (a text "
    "output, or a place or value its schema forbids)",
    "tests_judge": "a test case's judge names a profile that does not exist",
    "secret_in_tests": "a tests file holds something that looks like a pasted API key",
}

#: Kinds that are warnings: printed, but ``check`` still succeeds.
WARNINGS = frozenset(
    {
        "cache_breakpoints",
        "cache_after_input",
        "cache_too_short",
        "provider_plugin",
        "insecure_endpoint",
        "schema_not_enforced",
        "provider_not_installed",
    }
)


@dataclass(frozen=True)
class Problem:
    """One finding: the file (relative to the project root), its kind (see :data:`KINDS`), a
    message for people, and the line when known."""

    file: str
    kind: str
    message: str
    line: int | None = None

    @property
    def severity(self) -> str:
        """``warning`` for the kinds in :data:`WARNINGS`, else ``error``."""
        return "warning" if self.kind in WARNINGS else "error"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        label = f"{self.kind} (warning)" if self.kind in WARNINGS else self.kind
        return f"{where}: {label}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``scriptorium check --format json``); warnings say so."""
        data = asdict(self)
        if self.kind in WARNINGS:
            data["severity"] = "warning"
        return data
