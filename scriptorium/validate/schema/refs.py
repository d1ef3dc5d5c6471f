"""``$ref`` resolution confined to the prompts root, walked once when a schema is loaded.

Every schema gets a URI under :data:`BASE`, a reserved ``.invalid`` host that never resolves, so
relative references are joined by the URI rules the validator itself uses (``$id`` included), and
any reference landing outside ``BASE`` — ``http(s)://``, ``file://``, ``../`` past the root — is
refused. The walk follows every ``$ref``/``$dynamicRef`` in schema positions (never inside
``enum``/``const`` data), loads each referenced file once, and checks that each reference lands on
something (a missing file, JSON Pointer or anchor fails at load time, not mid-validation). The
registry it returns holds every document, so validation never reads a file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urldefrag, urljoin

from jsonschema_specifications import REGISTRY as METASCHEMAS  # type: ignore[import-untyped]
from referencing import Registry, Resource, Specification
from referencing.exceptions import Unresolvable

from scriptorium.errors import ValidationError

__all__ = ["BASE", "Bundle", "bundle", "relative_of", "uri_of"]

#: The URI the prompts root stands at. ``.invalid`` is reserved (RFC 2606): never on the network.
BASE = "https://scriptorium.invalid/prompts/"


def uri_of(relative: str) -> str:
    """The URI of a root-relative path."""
    return BASE + quote(relative)


def relative_of(uri: str) -> str | None:
    """The root-relative path a URI stands for, or ``None`` when it is not under the root."""
    return unquote(uri[len(BASE) :]) if uri.startswith(BASE) else None


@dataclass(frozen=True, slots=True)
class Bundle:
    """A schema with everything it references: the registry to validate with, and the referenced
    files (root-relative path -> document)."""

    registry: Registry[Any]
    referenced: dict[str, Any]


def bundle(
    document: Any, uri: str, specification: Specification[Any], load: Callable[[str], Any]
) -> Bundle:
    """Walk ``document`` (at ``uri``) and the files it references; ValidationError if any
    reference leaves the root or lands nowhere. ``load`` reads a root-relative file."""
    resources: dict[str, Resource[Any]] = {
        uri: Resource.from_contents(document, default_specification=specification)
    }
    referenced: dict[str, Any] = {}
    known: set[str] = {uri}
    refs: list[tuple[str, str]] = []
    pending = [uri]
    while pending:
        found: list[tuple[str, str]] = []
        for current in pending:
            found.extend(_walk(resources[current], current, known))
        refs.extend(found)
        pending = []
        for base, ref in found:
            target = urldefrag(urljoin(base, ref))[0]
            if target in known or target in resources or target in METASCHEMAS:
                continue
            relative = relative_of(target)
            if relative is None:
                raise ValidationError(
                    f"$ref {ref!r} points outside the prompts directory ({target}); only files "
                    "under it can be referenced",
                    path=relative_of(base),
                )
            loaded = load(relative)
            referenced[relative] = loaded
            resources[target] = Resource.from_contents(loaded, default_specification=specification)
            known.add(target)
            pending.append(target)

    registry: Registry[Any] = Registry(retrieve=_confined(load, specification))  # type: ignore[call-arg]
    registry = registry.with_resources(resources.items()).combine(METASCHEMAS).crawl()
    for base, ref in refs:
        try:
            registry.resolver(base).lookup(ref)
        except Unresolvable as err:
            raise ValidationError(
                f"$ref {ref!r} cannot be resolved: {type(err).__name__}", path=relative_of(base)
            ) from err
    return Bundle(registry, referenced)


def _walk(resource: Resource[Any], base: str, known: set[str]) -> Iterator[tuple[str, str]]:
    """(base URI, reference) for every reference in schema positions, recording embedded ids."""
    stack = [(resource, base)]
    while stack:
        current, scope = stack.pop()
        identifier = current.id()
        if identifier:
            scope = urljoin(scope, identifier)
            known.add(urldefrag(scope)[0])
        contents = current.contents
        if isinstance(contents, dict):
            for keyword in ("$ref", "$dynamicRef"):
                ref = contents.get(keyword)
                if isinstance(ref, str):
                    yield scope, ref
        stack.extend((sub, scope) for sub in current.subresources())


def _confined(
    load: Callable[[str], Any], specification: Specification[Any]
) -> Callable[[str], Resource[Any]]:
    """The registry's ``retrieve``: files under the root only; everything else is refused."""

    def retrieve(uri: str) -> Resource[Any]:
        relative = relative_of(uri)
        if relative is None:
            raise ValidationError(f"refusing to retrieve {uri!r}: not under the prompts directory")
        return Resource.from_contents(load(relative), default_specification=specification)

    return retrieve
