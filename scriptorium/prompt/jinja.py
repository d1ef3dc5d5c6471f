"""The Jinja renderer: role sections rendered one by one in a bounded, immutable sandbox.

Why each piece is here is written up in ``internal_docs/rendering.md``. In short: the body was
split into sections before rendering, so rendered text can never create a message; templates run in
the guarded sandbox of :mod:`scriptorium.prompt._sandbox` (Jinja's ``ImmutableSandboxedEnvironment``
with ``StrictUndefined`` and every way to make a lot of text or work checked before it allocates);
this module holds the renderer, its compiled-template cache, the one translation of foreign errors,
and the lint helpers ``scriptorium check`` uses.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

from jinja2 import Template, TemplateSyntaxError, UndefinedError, nodes
from jinja2.exceptions import SecurityError
from jinja2.meta import find_undeclared_variables

import scriptorium.prompt.cache_marks as cache_marks
from scriptorium.artifact.model import Artifact, BinaryTextError
from scriptorium.errors import ErrorBoundary, PromptLoadError, PromptRenderError, describe
from scriptorium.hashing import hash_json
from scriptorium.prompt._sandbox import (
    CURRENT_BUDGET,
    BoundExceeded,
    Budget,
    Sandbox,
    compile_template,
)

# Re-exported: these were always importable from here.
from scriptorium.prompt._sandbox import MAX_INT_BITS as MAX_INT_BITS
from scriptorium.prompt._sandbox import FilterCheck as FilterCheck
from scriptorium.prompt.model import Content, Message, RenderedPrompt
from scriptorium.prompt.placement import MediaPlacement
from scriptorium.promptdef.model import PromptDefinition

__all__ = [
    "BUILT_CHARS_FACTOR",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "DEFAULT_MAX_STEPS",
    "MAX_SESSION_ID_CHARS",
    "CacheInfo",
    "JinjaRenderer",
    "check_syntax",
    "template_artifact_fields",
    "template_artifacts",
    "template_variables",
]

DEFAULT_MAX_OUTPUT_CHARS = 2_000_000
#: Loop iterations plus calls (macros, methods) one prompt may take, so a template that prints
#: nothing still cannot spin for ever.
DEFAULT_MAX_STEPS = 1_000_000
#: The default ``max_built_chars`` as a multiple of ``max_output_chars``.
BUILT_CHARS_FACTOR = 32
MAX_SESSION_ID_CHARS = 256
#: A message quoting a foreign error is cut here, so it cannot carry an input value wholesale.
_MAX_DETAIL = 200
_TEMPLATE_FILENAME = "<template>"
_RESERVED = "artifacts"


class _Place(NamedTuple):
    """Where a template sits in a definition: ``label`` for error fields, ``where`` for people."""

    label: str
    where: str


def _places(definition: PromptDefinition) -> list[tuple[_Place, str | None]]:
    """Every template of a definition (sections in order, then the session id) with its place.
    In ``explicit`` cache mode a section's breakpoints are marks in its template."""
    explicit = definition.cache.mode == "explicit"
    places: list[tuple[_Place, str | None]] = [
        (
            _Place(f"{s.role}[{i}]", f"section {i} ({s.role})"),
            cache_marks.marked_template(s) if explicit and s.cache_marks else s.template,
        )
        for i, s in enumerate(definition.sections)
    ]
    places.append((_Place("session_id", "the session id"), definition.session_id))
    return places


# --- the one translation of foreign errors --------------------------------------------------------


def _template_line(err: BaseException) -> int | None:
    """The template line an error happened on (Jinja rewrites tracebacks to point at it)."""
    if isinstance(err, TemplateSyntaxError):
        return err.lineno
    line, tb = None, err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _TEMPLATE_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _render_error(err: Exception, prompt_id: str | None, place: _Place) -> PromptRenderError:
    """The PromptRenderError for any failure while compiling or rendering one template."""
    if isinstance(err, TemplateSyntaxError):
        kind, detail = "template syntax error", str(err.message)
    elif isinstance(err, UndefinedError):
        kind, detail = "undefined value", str(err)
    elif isinstance(err, SecurityError):
        kind, detail = "sandbox violation", str(err)
    elif isinstance(err, BinaryTextError):
        kind, detail = "binary artifact", str(err)
    elif isinstance(err, BoundExceeded):
        kind, detail = "render bound exceeded", str(err)
    elif isinstance(err, RecursionError):
        kind, detail = "render bound exceeded", "templates call each other too deeply"
    else:
        kind, detail = "template error", describe(err)
    if len(detail) > _MAX_DETAIL:
        detail = detail[: _MAX_DETAIL - 3] + "..."
    line = _template_line(err)
    at = f", line {line}" if line is not None else ""
    return PromptRenderError(
        f"{kind} in {place.where}{at}: {detail}", prompt_id=prompt_id, section=place.label
    )


class _translating(ErrorBoundary):
    """Any failure inside becomes ``PromptRenderError`` for ``place`` (it wraps every section of
    every render)."""

    __slots__ = ("_place", "_prompt_id")
    passes = (PromptRenderError,)

    def __init__(self, prompt_id: str | None, place: _Place) -> None:
        self._prompt_id = prompt_id
        self._place = place

    def rewrap(self, err: Exception) -> None:
        raise _render_error(err, self._prompt_id, self._place) from err


# --- the renderer ---------------------------------------------------------------------------------


class CacheInfo(NamedTuple):
    """Compiled-template cache counters: a miss is one definition compiled."""

    hits: int
    misses: int
    size: int
    maxsize: int


class _Compiled(NamedTuple):
    places: tuple[_Place, ...]
    sources: tuple[str | None, ...]
    templates: tuple[Template | None, ...]
    #: The text of each template made of plain text alone (no expression, tag or comment),
    #: rendered once at compile time; ``None`` for the others.
    constants: tuple[str | None, ...]
    #: The definition object last served from this entry: the same frozen object again (the
    #: repositories hand it out while its file is unchanged) skips comparing the sources.
    definition: PromptDefinition


class JinjaRenderer:
    """The :class:`~scriptorium.prompt.renderer.Renderer` over Jinja's immutable sandbox.

    ``max_output_chars`` bounds the whole rendered prompt and any single value a template builds;
    ``max_steps`` bounds loop iterations plus calls per prompt; ``max_built_chars`` (default
    ``BUILT_CHARS_FACTOR * max_output_chars``) bounds the characters (or list items) the templates
    build in all, intermediate values included, so memory stays bounded even when a template
    piles values up instead of printing them; ``cache_size`` is how many
    definitions' compiled templates are kept (least recently used dropped first). Safe to share
    between threads.
    """

    def __init__(
        self,
        *,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_built_chars: int | None = None,
        cache_size: int = 256,
    ) -> None:
        if max_built_chars is None:
            max_built_chars = BUILT_CHARS_FACTOR * max_output_chars
        if min(max_output_chars, max_steps, max_built_chars) < 1 or cache_size < 0:
            raise ValueError("the bounds must be positive and cache_size >= 0")
        self._env = Sandbox(max_output_chars)
        self._max_steps = max_steps
        self._max_built = max_built_chars
        self._cache_size = cache_size
        self._cache: OrderedDict[str, _Compiled] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = 0

    def render(
        self,
        definition: PromptDefinition,
        *,
        inputs: Mapping[str, Any],
        artifacts: Mapping[str, Artifact],
        cache_key: str | None = None,
    ) -> RenderedPrompt:
        """Render each section on its own, then the session id (``internal_docs/rendering.md``)."""
        if _RESERVED in inputs:
            raise PromptRenderError(
                "the input name 'artifacts' is reserved: templates see the artifacts under it",
                prompt_id=definition.id,
            )
        compiled = self._compiled(definition, cache_key)
        placement = MediaPlacement.for_artifacts(artifacts, definition.id)
        if placement is None:
            views = {name: artifact.template_view() for name, artifact in artifacts.items()}
        else:
            views = {name: placement.view(artifact) for name, artifact in artifacts.items()}
        context = {**inputs, _RESERVED: views}
        mode = definition.cache.mode
        nonce = None
        if mode == "explicit":
            nonce = cache_marks.new_nonce()
            context[cache_marks.MARK_VARIABLE] = nonce
        budget = Budget(self._env.max_chars, self._max_steps, self._max_built)
        token = CURRENT_BUDGET.set(budget)
        try:
            texts = [
                None
                if template is None
                else self._run(template, context, budget, definition.id, place)
                if constant is None
                else self._spent(constant, budget, definition.id, place)
                for place, template, constant in zip(
                    compiled.places, compiled.templates, compiled.constants, strict=True
                )
            ]
        finally:
            CURRENT_BUDGET.reset(token)
        *section_texts, session_id = texts
        system: list[str] = []
        messages: list[Message] = []
        marks: list[tuple[int, cache_marks.Mark]] = []  # (message index or -1 for system, mark)
        for place, section, text in zip(
            compiled.places, definition.sections, section_texts, strict=False
        ):
            if not text:
                continue  # a section that renders empty (say, a false {% if %}) is left out
            if placement is not None and section.role != "user":
                text = placement.text_only(text, place.where, place.label)
            content: Content = text
            if placement is not None and section.role == "user":
                content = placement.content(text, place.where, place.label)
            found: list[cache_marks.Mark] = []
            if nonce is not None:
                content, found = cache_marks.take_content_marks(content, nonce)
            if not content:
                continue
            at = -1 if section.role == "system" else len(messages)
            for mark in found:
                ttl = section.cache_marks[mark.number].ttl or definition.cache.ttl
                marks.append((at, mark._replace(ttl=ttl)))
            if section.role == "system":
                system.append(content if isinstance(content, str) else text)
            else:
                messages.append(Message(role=section.role, content=content))
        if placement is not None:
            before = list(messages)
            messages = placement.complete(messages)
            if session_id is not None:
                session_id = placement.text_only(session_id, "the session id", "session_id")
            marks = cache_marks.follow_completion(marks, before, messages)
        points = cache_marks.points_for(definition, marks, messages, bool(system))
        if session_id is not None and len(session_id) > MAX_SESSION_ID_CHARS:
            raise PromptRenderError(
                f"the session id renders to {len(session_id):,} characters "
                f"(at most {MAX_SESSION_ID_CHARS})",
                prompt_id=definition.id,
                section="session_id",
            )
        return RenderedPrompt(
            system="\n\n".join(system) or None,
            messages=tuple(messages),
            session_id=session_id or None,
            cache_points=cache_marks.normalize(points) if points else (),
        )

    def cache_info(self) -> CacheInfo:
        """How the compiled-template cache has been used."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._cache), self._cache_size)

    def _run(
        self,
        template: Template,
        context: dict[str, Any],
        budget: Budget,
        prompt_id: str,
        place: _Place,
    ) -> str:
        # Streamed, so a loop printing without end is stopped at the bound, not after it.
        chunks: list[str] = []
        with _translating(prompt_id, place):
            stream = template.generate(context)
            try:
                for chunk in stream:
                    budget.spend_chars(len(chunk))
                    chunks.append(chunk)
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        return "".join(chunks).strip()

    def _spent(self, text: str, budget: Budget, prompt_id: str, place: _Place) -> str:
        # A plain-text section renders the same every run: only its size is counted again.
        with _translating(prompt_id, place):
            budget.spend_chars(len(text))
        return text

    def _compiled(self, definition: PromptDefinition, cache_key: str | None) -> _Compiled:
        if cache_key is not None:
            entry = self._cache.get(cache_key)
            if entry is not None and entry.definition is definition:
                with self._lock:
                    self._hits += 1
                return entry
        places = _places(definition)
        sources = tuple(source for _, source in places)
        key = cache_key if cache_key is not None else hash_json(list(sources))
        with self._lock:
            entry = self._cache.get(key)
            # Comparing sources makes a wrong cache_key cost a recompile, never a wrong prompt.
            if entry is not None and entry.sources == sources:
                self._cache.move_to_end(key)
                self._hits += 1
                if entry.definition is not definition:
                    entry = entry._replace(definition=definition)
                    self._cache[key] = entry
                return entry
            self._misses += 1
        templates: list[Template | None] = []
        constants: list[str | None] = []
        for place, source in places:
            try:
                with _translating(definition.id, place):
                    compiled = None if source is None else compile_template(self._env, source)
            except PromptRenderError as err:
                # A template that does not compile is a broken file, whatever the inputs: a load
                # failure, not a render failure (which depends on the inputs).
                raise PromptLoadError(
                    err.message, prompt_id=definition.id, path=definition.source, reason="invalid"
                ) from (err.__cause__ or err)
            templates.append(compiled)
            constant = None
            if compiled is not None and source is not None and _is_plain_text(self._env, source):
                with _translating(definition.id, place):
                    constant = "".join(compiled.generate({})).strip()
            constants.append(constant)
        entry = _Compiled(
            tuple(place for place, _ in places),
            sources,
            tuple(templates),
            tuple(constants),
            definition,
        )
        if self._cache_size:
            with self._lock:
                self._cache[key] = entry
                self._cache.move_to_end(key)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return entry


def _is_plain_text(env: Sandbox, source: str) -> bool:
    """Whether ``source`` is text alone: every node of its template is literal output."""
    if "{" not in source:  # no delimiter at all: the common static system prompt
        return True
    return all(
        isinstance(node, nodes.Output)
        and all(isinstance(child, nodes.TemplateData) for child in node.nodes)
        for node in env.parse(source).body
    )


# --- helpers for `scriptorium check` --------------------------------------------------------------


@functools.cache
def _lint_environment() -> Sandbox:
    return Sandbox(DEFAULT_MAX_OUTPUT_CHARS)


def check_syntax(definition: PromptDefinition) -> list[str]:
    """One message per template of ``definition`` that does not compile (syntax errors, unknown
    filters or tests, ``include``/``import``/``extends``); empty when all compile."""
    env, problems = _lint_environment(), []
    for place, source in _places(definition):
        if source is None:
            continue
        try:
            with _translating(definition.id, place):
                compile_template(env, source)
        except PromptRenderError as err:
            problems.append(err.message)
    return problems


def template_variables(definition: PromptDefinition) -> dict[str, set[str]]:
    """Per template (label ``"<role>[<index>]"`` or ``"session_id"``), the variables it reads
    from its inputs: names it uses without setting them, minus ``artifacts`` and Jinja's globals.

    Raises ``PromptRenderError`` for a template that does not parse (see :func:`check_syntax`).
    """
    env = _lint_environment()
    provided = {_RESERVED, cache_marks.MARK_VARIABLE, *env.globals}
    found: dict[str, set[str]] = {}
    for place, source in _places(definition):
        if source is not None:
            with _translating(definition.id, place):
                tree = env.parse(source)
            found[place.label] = set(find_undeclared_variables(tree)) - provided
    return found


def template_artifacts(definition: PromptDefinition) -> set[str]:
    """The artifact names the templates refer to as ``artifacts.<name>`` or ``artifacts["<name>"]``.

    Raises ``PromptRenderError`` for a template that does not parse.
    """
    env, names = _lint_environment(), set()
    for place, source in _places(definition):
        if source is None:
            continue
        with _translating(definition.id, place):
            tree = env.parse(source)
        for attr in tree.find_all(nodes.Getattr):
            if isinstance(attr.node, nodes.Name) and attr.node.name == _RESERVED:
                names.add(attr.attr)
        for item in tree.find_all(nodes.Getitem):
            named = isinstance(item.node, nodes.Name) and item.node.name == _RESERVED
            if named and isinstance(item.arg, nodes.Const) and isinstance(item.arg.value, str):
                names.add(item.arg.value)
    return names


def template_artifact_fields(definition: PromptDefinition) -> set[tuple[str, str]]:
    """``(name, field)`` for every ``artifacts.<name>.<field>`` the templates read (attribute or
    constant subscript, in any mix), so ``check`` can tell ``.text`` reads from ``.block``s.

    Raises ``PromptRenderError`` for a template that does not parse.
    """
    env, found = _lint_environment(), set()
    for place, source in _places(definition):
        if source is None:
            continue
        with _translating(definition.id, place):
            tree = env.parse(source)
        for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
            assert isinstance(node, nodes.Getattr | nodes.Getitem)
            field = _constant_key(node)
            name = None if field is None else _artifact_name(node.node)
            if name is not None and field is not None:
                found.add((name, field))
    return found


def _constant_key(node: nodes.Getattr | nodes.Getitem) -> str | None:
    if isinstance(node, nodes.Getattr):
        return node.attr
    arg = node.arg
    return arg.value if isinstance(arg, nodes.Const) and isinstance(arg.value, str) else None


def _artifact_name(node: nodes.Node) -> str | None:
    """``<name>`` when ``node`` is ``artifacts.<name>`` or ``artifacts["<name>"]``."""
    if isinstance(node, nodes.Getattr | nodes.Getitem):
        base = node.node
        if isinstance(base, nodes.Name) and base.name == _RESERVED:
            return _constant_key(node)
    return None
