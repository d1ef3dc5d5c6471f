"""The Jinja renderer: role sections rendered one by one in a bounded, immutable sandbox.

Why each piece is here is written up in ``internal_docs/rendering.md``. In short: the body was
split into sections before rendering, so rendered text can never create a message; templates run in
Jinja's ``ImmutableSandboxedEnvironment`` with ``StrictUndefined``; and every way a template can
make a lot of text or a lot of work (repetition, powers, concatenation, padding and joining methods
and filters, loops, calls, output) is checked against the renderer's bounds *before* it allocates.
"""

from __future__ import annotations

import functools
import re
import string
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, UndefinedError, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.meta import find_undeclared_variables
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from scriptorium.artifact.model import Artifact
from scriptorium.errors import PromptRenderError, describe
from scriptorium.hashing import hash_json
from scriptorium.prompt.model import Message, RenderedPrompt
from scriptorium.promptdef.model import PromptDefinition

__all__ = [
    "BUILT_CHARS_FACTOR",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "DEFAULT_MAX_STEPS",
    "MAX_SESSION_ID_CHARS",
    "CacheInfo",
    "JinjaRenderer",
    "check_syntax",
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
#: Integers past this many bits are refused: they cannot even be printed (Python limits int->str to
#: 4300 digits), and repeated squaring would otherwise eat memory without producing any text.
MAX_INT_BITS = 1 << 16
#: A message quoting a foreign error is cut here, so it cannot carry an input value wholesale.
_MAX_DETAIL = 200
_TEMPLATE_FILENAME = "<template>"
_RESERVED = "artifacts"
_SEQUENCES = (str, bytes, list, tuple)
_SIZED = (str, bytes, list, tuple, dict, set, frozenset)
_Args = tuple[Any, ...]
_Kw = dict[str, Any]
_LOADING_NODES = {
    nodes.Extends: "extends",
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "from ... import",
}


class _BoundExceeded(Exception):
    """A render bound would be exceeded (raised by the guards, translated to PromptRenderError)."""


class _Budget:
    """What one prompt render may still spend: output characters, steps, and characters (or
    items) built along the way."""

    __slots__ = ("built_left", "chars_left", "max_built", "max_chars", "max_steps", "steps_left")

    def __init__(self, max_chars: int, max_steps: int, max_built: int) -> None:
        self.max_chars = self.chars_left = max_chars
        self.max_steps = self.steps_left = max_steps
        self.max_built = self.built_left = max_built

    def spend_chars(self, count: int) -> None:
        self.chars_left -= count
        if self.chars_left < 0:
            raise _BoundExceeded(f"rendered prompt exceeds {self.max_chars:,} characters")

    def spend_built(self, count: int) -> None:
        self.built_left -= count
        if self.built_left < 0:
            raise _BoundExceeded(f"template builds more than {self.max_built:,} characters in all")

    def tick(self) -> None:
        self.steps_left -= 1
        if self.steps_left < 0:
            raise _BoundExceeded(f"template exceeds {self.max_steps:,} loop iterations and calls")


# The budget of the render running in this thread (or task); templates run synchronously inside
# ``render``, so the hooks below find it here without threading it through Jinja's context.
_BUDGET: ContextVar[_Budget | None] = ContextVar("scriptorium_render_budget", default=None)


# --- size predictions: each says how big a result would be, stopping early once past ``budget`` ---


def _text_size(value: Any, budget: int) -> int:
    """About ``len(str(value))``, computed without building the string."""
    total, stack = 0, [value]
    while stack and total <= budget:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, bytes):
            total += 4 * len(item) + 3
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 2
        elif isinstance(item, Mapping):
            total += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + 2 * len(item)
            stack.extend(item)
        else:  # floats, None, helpers: short reprs (other objects' reprs are not ours to predict)
            total += 32
    return total


def _largest(values: Iterable[Any], budget: int) -> int:
    return max((_text_size(v, budget) for v in values), default=0)


_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+)?)?[hlL]?(.)", re.DOTALL)


def _percent_size(fmt: str, args: Any, budget: int) -> int:
    """The size of ``fmt % args``: literal text plus, per field, its width and the largest value."""
    values = list(
        args.values() if isinstance(args, Mapping) else args if isinstance(args, tuple) else [args]
    )
    widest = _largest(values, budget)
    star = max((abs(v) for v in values if isinstance(v, int)), default=0)
    total = len(fmt)
    for match in _PERCENT_FIELD.finditer(fmt):
        if match.group(3) == "%":
            continue
        for number in match.group(1, 2):
            total += star if number == "*" else int(number or 0)
        total += widest
    return total


def _brace_size(fmt: str, values: list[Any], budget: int) -> int:
    """The size of ``fmt.format(...)``: literal text plus, per field, its spec numbers and the
    largest value (a nested ``{}`` in a spec may take any integer argument)."""
    widest = _largest(values, budget)
    star = max((abs(v) for v in values if isinstance(v, int)), default=0)
    total = 0
    for literal, field, spec, _conversion in string.Formatter().parse(fmt):
        total += len(literal)
        if field is not None:
            total += widest + sum(int(n) for n in re.findall(r"\d+", spec or ""))
            total += star if spec and "{" in spec else 0
    return total


def _replace_size(text: str, old: str, new: str, count: int) -> int:
    hits = len(text) + 1 if not old else text.count(old)
    if count >= 0:
        hits = min(hits, count)
    return len(text) + hits * (len(new) - len(old))


def _arg(args: _Args, kwargs: Mapping[str, Any], index: int, name: str, default: Any) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _int_arg(args: _Args, kwargs: Mapping[str, Any], index: int, name: str) -> int:
    value = _arg(args, kwargs, index, name, 0)
    return value if isinstance(value, int) else 0


class _GuardedCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a size-checked join (Jinja's ``~`` is not an interceptable binop)."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.checked_concat((")
        for part in node.nodes:
            self.visit(part, frame)
            self.write(", ")
        self.write("))")


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox with size and work bounds on everything that can grow."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    # Unary + and - cannot allocate beyond their operand, so they are not intercepted.
    code_generator_class = _GuardedCodeGenerator

    def __init__(self, max_chars: int) -> None:
        super().__init__(
            undefined=StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            finalize=self.checked_output,
            cache_size=0,
        )
        self.max_chars = max_chars
        # Lorem ipsum has no place in a prompt, and its size arguments are unbounded.
        self.globals.pop("lipsum", None)
        self.filters = {name: self._guard_filter(name, f) for name, f in self.filters.items()}

    # -- checks ----------------------------------------------------------------------------------

    def require(self, size: int, what: str) -> None:
        """Refuse an operation whose predicted result size passes the bound."""
        if size > self.max_chars:
            raise _BoundExceeded(f"{what} would make {size:,} characters or items")

    def built(self, size: int, what: str) -> None:
        """Check and spend the size of a value about to be built."""
        self.require(size, what)
        budget = _BUDGET.get()
        if budget is not None:
            budget.spend_built(size)

    def check_result(self, value: Any, what: str, *, new: bool = True) -> Any:
        # Catches what no prediction covered after one step, so growth cannot compound. ``new``
        # is False where the result may be a reference to an existing value (not built here).
        if isinstance(value, _SIZED):
            if new:
                self.built(len(value), what)
            else:
                self.require(len(value), what)
        return value

    def checked_output(self, value: Any) -> Any:
        """``finalize``: a ``{{ value }}`` is measured before it is turned into text."""
        if type(value) is str:
            self.require(len(value), "an output expression")
        else:
            self.built(_text_size(value, self.max_chars), "an output expression")
        return value

    def checked_concat(self, parts: _Args) -> str:
        """``a ~ b``: measured before it is joined."""
        self.built(sum(_text_size(p, self.max_chars) for p in parts), "'~'")
        return "".join(str(p) for p in parts)

    def concat(self, parts: Iterable[str]) -> str:
        # Buffered output (macros, {% set %} and {% filter %} blocks) is joined here.
        pieces = list(parts)
        self.built(sum(len(p) for p in pieces), "a captured block")
        return "".join(pieces)

    def guarded_iter(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """Every ``{% for %}`` iterates through this, one step per item."""
        budget = _BUDGET.get()
        for item in iterable:
            if budget is not None:
                budget.tick()
            yield item

    # -- operators, calls, filters -----------------------------------------------------------------

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        limit = self.max_chars
        if operator == "*":
            seq, times = (right, left) if isinstance(left, int) else (left, right)
            if isinstance(seq, _SEQUENCES) and isinstance(times, int):
                self.require(len(seq) * times, "'*'")
            elif isinstance(left, int) and isinstance(right, int):
                self._require_bits(abs(left).bit_length() + abs(right).bit_length())
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
                self._require_bits(abs(left).bit_length() * right)
        elif operator == "+":
            if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
                self.require(len(left) + len(right), "'+'")
        elif operator == "%" and isinstance(left, str):
            self.require(_percent_size(left, right, limit), "'%' formatting")
        return self.check_result(super().call_binop(context, operator, left, right), operator)

    def _require_bits(self, bits: int) -> None:
        if bits > MAX_INT_BITS:
            raise _BoundExceeded(f"integer arithmetic would make a {bits:,}-bit number")

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = _BUDGET.get()
        if budget is not None:
            budget.tick()
        target = getattr(obj, "__wrapped__", obj)  # str.format comes wrapped by the sandbox
        owner, name = getattr(target, "__self__", None), getattr(target, "__name__", "")
        if isinstance(owner, str):
            args = self._check_str_method(owner, name, args, kwargs)
        elif isinstance(owner, int) and name == "to_bytes":
            self.require(_int_arg(args, kwargs, 0, "length"), "int.to_bytes")
        result = super().call(context, obj, *args, **kwargs)
        # Only str methods surely build their result; others (dict.get, macros) may return
        # existing values, and a macro's text was already counted when its block was joined.
        return self.check_result(result, f"{name}()", new=isinstance(owner, str))

    def _check_str_method(self, text: str, name: str, args: _Args, kwargs: _Kw) -> _Args:
        limit = self.max_chars
        if name in ("center", "ljust", "rjust", "zfill"):
            self.require(_int_arg(args, kwargs, 0, "width"), f"str.{name}")
        elif name == "expandtabs":
            tabsize = _arg(args, kwargs, 0, "tabsize", 8)
            if isinstance(tabsize, int):
                self.require(len(text) + text.count("\t") * tabsize, "str.expandtabs")
        elif name == "replace" and len(args) >= 2 and isinstance(args[0], str):
            if isinstance(args[1], str):
                count = _int_arg(args, kwargs, 2, "count") if len(args) > 2 else -1
                self.require(_replace_size(text, args[0], args[1], count), "str.replace")
        elif name == "join" and args:
            items = list(args[0])  # materialised once, so the prediction sees what join gets
            size = sum(_text_size(i, limit) for i in items) + len(text) * len(items)
            self.require(size, "str.join")
            return (items, *args[1:])
        elif name == "translate" and args and isinstance(args[0], Mapping):
            longest = _largest(args[0].values(), limit)
            self.require(len(text) * max(1, longest), "str.translate")
        elif name == "format":
            self.require(_brace_size(text, [*args, *kwargs.values()], limit), "str.format")
        elif name == "format_map" and args and isinstance(args[0], Mapping):
            self.require(_brace_size(text, list(args[0].values()), limit), "str.format_map")
        return args

    def _guard_filter(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        check = _FILTER_CHECKS.get(name)
        new = name not in _PICKING
        # Filters marked pass_context/pass_environment/... get that object first.
        offset = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

        @functools.wraps(func)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if check is not None and len(args) > offset:
                value = check(self, args[offset], args[offset + 1 :], kwargs)
                args = (*args[:offset], value, *args[offset + 1 :])
            return self.check_result(func(*args, **kwargs), f"filter {name!r}", new=new)

        return guarded


FilterCheck = Callable[[_Sandbox, Any, _Args, _Kw], Any]


def _stringified(env: _Sandbox, value: Any, args: _Args, kwargs: _Kw) -> Any:
    """Filters that turn their value and arguments into text: measure them first."""
    for item in (value, *args, *kwargs.values()):
        if not isinstance(item, str):
            env.require(_text_size(item, env.max_chars), "a filter argument")
    return value


def _text(env: _Sandbox, value: Any, args: _Args, kwargs: _Kw) -> str:
    """The value as text, for a prediction (measured first, so making it is bounded)."""
    _stringified(env, value, args, kwargs)
    return value if isinstance(value, str) else str(value)


def _check_center(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    env.require(_int_arg(args, kw, 0, "width"), "filter 'center'")
    return _stringified(env, value, args, kw)


def _check_indent(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, args, kw)
    width = _arg(args, kw, 0, "width", 4)
    step = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    env.require(len(text) + (text.count("\n") + 1) * step, "filter 'indent'")
    return value


def _check_format(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, (), {})
    env.require(_percent_size(text, kw or args, env.max_chars), "filter 'format'")
    return value


def _check_replace(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, args, kw)
    old, new = str(_arg(args, kw, 0, "old", "")), str(_arg(args, kw, 1, "new", ""))
    count = _arg(args, kw, 2, "count", None)
    count = count if isinstance(count, int) else -1
    env.require(_replace_size(text, old, new, count), "filter 'replace'")
    return value


def _check_wordwrap(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, args, kw)
    width = max(1, _int_arg(args, kw, 0, "width"))
    wrap = _arg(args, kw, 2, "wrapstring", None)
    lines = len(text) // width + text.count("\n") + 1
    env.require(len(text) + lines * len(str(wrap or env.newline_sequence)), "filter 'wordwrap'")
    return value


def _check_join(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    items = list(value)
    sep = _arg(args, kw, 0, "d", "")
    size = sum(_text_size(i, env.max_chars) for i in items)
    env.require(size + _text_size(sep, env.max_chars) * len(items), "filter 'join'")
    return items


def _check_count(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    # batch(linecount) pads and slice(slices) makes that many lists.
    env.require(
        _int_arg(args, kw, 0, "linecount") or _int_arg(args, kw, 0, "slices"), "filter argument"
    )
    return value


def _check_sum(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    start = _arg(args, kw, 1, "start", 0)
    if not isinstance(start, _SEQUENCES):
        return value
    items = list(value)
    size = len(start) + sum(len(i) for i in items if isinstance(i, _SIZED))
    env.require(size, "filter 'sum'")
    return items


def _check_tojson(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    indent = _int_arg(args, kw, 0, "indent")
    env.require(_text_size(value, env.max_chars) * (1 + max(0, indent)), "filter 'tojson'")
    return value


def _check_urlize(env: _Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, args, kw)
    extra = sum(len(str(kw.get(k) or "")) for k in ("target", "rel"))
    env.require(len(text) * (1 + extra), "filter 'urlize'")
    return value


# Filters that return one of their inputs rather than build something.
_PICKING = frozenset(["attr", "d", "default", "first", "last", "max", "min", "random"])
# Filters that only stringify: their growth is a small factor, caught by the result check.
_STRINGIFYING = """capitalize e escape forceescape lower pprint safe string striptags title trim
    truncate upper urlencode wordcount xmlattr"""
_FILTER_CHECKS: dict[str, FilterCheck] = {
    **dict.fromkeys(_STRINGIFYING.split(), _stringified),
    "batch": _check_count,
    "center": _check_center,
    "format": _check_format,
    "indent": _check_indent,
    "join": _check_join,
    "replace": _check_replace,
    "slice": _check_count,
    "sum": _check_sum,
    "tojson": _check_tojson,
    "urlize": _check_urlize,
    "wordwrap": _check_wordwrap,
}


# --- compiling -----------------------------------------------------------------------------------


def _compile(env: _Sandbox, source: str) -> Template:
    """Parse, refuse template loading, route loops through the step budget, and compile."""
    tree = env.parse(source)
    for node_type, tag in _LOADING_NODES.items():
        for node in tree.find_all(node_type):
            raise TemplateSyntaxError(
                f"'{{% {tag} %}}' is not supported: a prompt template cannot load other templates",
                node.lineno,
            )
    for loop in list(tree.find_all(nodes.For)):
        guard = nodes.EnvironmentAttribute("guarded_iter", lineno=loop.lineno)
        loop.iter = nodes.Call(guard, [loop.iter], [], None, None, lineno=loop.lineno)
    code = env.compile(tree)
    return env.template_class.from_code(env, code, env.make_globals(None), None)


class _Place(NamedTuple):
    """Where a template sits in a definition: ``label`` for error fields, ``where`` for people."""

    label: str
    where: str


def _places(definition: PromptDefinition) -> list[tuple[_Place, str | None]]:
    """Every template of a definition (sections in order, then the session id) with its place."""
    places: list[tuple[_Place, str | None]] = [
        (_Place(f"{s.role}[{i}]", f"section {i} ({s.role})"), s.template)
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
    elif isinstance(err, _BoundExceeded):
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


@contextmanager
def _translating(prompt_id: str | None, place: _Place) -> Iterator[None]:
    try:
        yield
    except PromptRenderError:
        raise
    except Exception as err:
        raise _render_error(err, prompt_id, place) from err


# --- the renderer ---------------------------------------------------------------------------------


class CacheInfo(NamedTuple):
    """Compiled-template cache counters: a miss is one definition compiled."""

    hits: int
    misses: int
    size: int
    maxsize: int


class _Compiled(NamedTuple):
    sources: tuple[str | None, ...]
    templates: tuple[Template | None, ...]


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
        self._env = _Sandbox(max_output_chars)
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
        views = {name: artifact.template_view() for name, artifact in artifacts.items()}
        context = {**inputs, _RESERVED: views}
        budget = _Budget(self._env.max_chars, self._max_steps, self._max_built)
        token = _BUDGET.set(budget)
        try:
            texts = [
                None
                if template is None
                else self._run(template, context, budget, definition.id, place)
                for (place, _), template in zip(
                    _places(definition), compiled.templates, strict=True
                )
            ]
        finally:
            _BUDGET.reset(token)
        *section_texts, session_id = texts
        system: list[str] = []
        messages: list[Message] = []
        for section, text in zip(definition.sections, section_texts, strict=True):
            if not text:
                continue  # a section that renders empty (say, a false {% if %}) is left out
            if section.role == "system":
                system.append(text)
            else:
                messages.append(Message(role=section.role, content=text))
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
        )

    def cache_info(self) -> CacheInfo:
        """How the compiled-template cache has been used."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._cache), self._cache_size)

    def _run(
        self,
        template: Template,
        context: _Kw,
        budget: _Budget,
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

    def _compiled(self, definition: PromptDefinition, cache_key: str | None) -> _Compiled:
        places = _places(definition)
        sources = tuple(source for _, source in places)
        key = cache_key if cache_key is not None else hash_json(list(sources))
        with self._lock:
            entry = self._cache.get(key)
            # Comparing sources makes a wrong cache_key cost a recompile, never a wrong prompt.
            if entry is not None and entry.sources == sources:
                self._cache.move_to_end(key)
                self._hits += 1
                return entry
            self._misses += 1
        templates: list[Template | None] = []
        for place, source in places:
            with _translating(definition.id, place):
                templates.append(None if source is None else _compile(self._env, source))
        entry = _Compiled(sources, tuple(templates))
        if self._cache_size:
            with self._lock:
                self._cache[key] = entry
                self._cache.move_to_end(key)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return entry


# --- helpers for `scriptorium check` --------------------------------------------------------------


@functools.cache
def _lint_environment() -> _Sandbox:
    return _Sandbox(DEFAULT_MAX_OUTPUT_CHARS)


def check_syntax(definition: PromptDefinition) -> list[str]:
    """One message per template of ``definition`` that does not compile (syntax errors, unknown
    filters or tests, ``include``/``import``/``extends``); empty when all compile."""
    env, problems = _lint_environment(), []
    for place, source in _places(definition):
        if source is None:
            continue
        try:
            with _translating(definition.id, place):
                _compile(env, source)
        except PromptRenderError as err:
            problems.append(err.message)
    return problems


def template_variables(definition: PromptDefinition) -> dict[str, set[str]]:
    """Per template (label ``"<role>[<index>]"`` or ``"session_id"``), the variables it reads
    from its inputs: names it uses without setting them, minus ``artifacts`` and Jinja's globals.

    Raises ``PromptRenderError`` for a template that does not parse (see :func:`check_syntax`).
    """
    env = _lint_environment()
    provided = {_RESERVED, *env.globals}
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
