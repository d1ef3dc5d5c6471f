"""The guarded Jinja sandbox the renderer runs templates in: size and work bounds on all that grows.

Why each piece is here is written up in ``internal_docs/rendering.md``. Templates run in Jinja's
``ImmutableSandboxedEnvironment`` with ``StrictUndefined``, and every way a template can make a lot
of text or a lot of work (repetition, powers, concatenation, padding and joining methods and
filters, loops, calls, output) is checked against the bounds *before* it allocates. The renderer
(``scriptorium.prompt.jinja``) owns the budget of each render and translates the errors.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

__all__ = [
    "CURRENT_BUDGET",
    "MAX_CONTAINER_ITEMS",
    "MAX_INT_BITS",
    "BoundExceeded",
    "Budget",
    "FilterCheck",
    "Sandbox",
    "compile_template",
]

#: Integers past this many bits are refused: they cannot even be printed (Python limits int->str to
#: 4300 digits), and repeated squaring would otherwise eat memory without producing any text.
MAX_INT_BITS = 1 << 16
#: The most items a list, tuple or dict built by a template may hold, counted with every container
#: the template built inside it expanded: a value that appears twice counts twice. Without this a
#: template can build a structure of 2**64 items out of 64 shared references, cheap to make but
#: endless to compare, hash, count or print, in C code that no step budget sees.
MAX_CONTAINER_ITEMS = 100_000
_CONTAINERS = (list, tuple, dict, set, frozenset)
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


class BoundExceeded(Exception):
    """A render bound would be exceeded (raised by the guards, translated to PromptRenderError)."""


class Budget:
    """What one prompt render may still spend: output characters, steps, and characters (or
    items) built along the way."""

    __slots__ = (
        "built_left",
        "chars_left",
        "containers",
        "max_built",
        "max_chars",
        "max_steps",
        "steps_left",
    )

    def __init__(self, max_chars: int, max_steps: int, max_built: int) -> None:
        self.max_chars = self.chars_left = max_chars
        self.max_steps = self.steps_left = max_steps
        self.max_built = self.built_left = max_built
        # id -> container, for every container this render built (kept alive, so ids stay unique).
        self.containers: dict[int, Any] | None = None

    def spend_chars(self, count: int) -> None:
        self.chars_left -= count
        if self.chars_left < 0:
            raise BoundExceeded(f"rendered prompt exceeds {self.max_chars:,} characters")

    def spend_built(self, count: int) -> None:
        self.built_left -= count
        if self.built_left < 0:
            raise BoundExceeded(f"template builds more than {self.max_built:,} characters in all")

    def tick(self) -> None:
        self.steps_left -= 1
        if self.steps_left < 0:
            raise BoundExceeded(f"template exceeds {self.max_steps:,} loop iterations and calls")


# The budget of the render running in this thread (or task); templates run synchronously inside
# ``render``, so the hooks below find it here without threading it through Jinja's context.
CURRENT_BUDGET: ContextVar[Budget | None] = ContextVar("scriptorium_render_budget", default=None)


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


def _expanded_size(value: Any, built: Mapping[int, Any], limit: int) -> tuple[int, int]:
    """``(size, visited)`` of a container just built: its items, with the containers this render
    built expanded wherever they appear (others count as their length). Stops once past
    ``limit``, so the walk itself is bounded."""
    size = visited = 0
    stack = [value]
    root = True
    while stack and size <= limit:
        item = stack.pop()
        visited += 1
        size += 1
        if root or id(item) in built:
            root = False
            if isinstance(item, Namespace):
                item = _namespace_attrs(item)
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, _CONTAINERS):
                stack.extend(item)
        elif isinstance(item, _CONTAINERS):
            size += len(item)
    return size, visited


def _namespace_attrs(namespace: Namespace) -> dict[str, Any]:
    # Namespace keeps its attributes in a private dict and hides it from the template.
    attrs = object.__getattribute__(namespace, "_Namespace__attrs")
    return attrs if isinstance(attrs, dict) else {}


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
    """Compiles ``a ~ b`` to a size-checked join (Jinja's ``~`` is not an interceptable binop),
    and list, tuple and dict literals to size-checked containers."""

    def visit_List(self, node: nodes.List, frame: Frame) -> None:
        self.write("environment.checked_container(")
        super().visit_List(node, frame)
        self.write(")")

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:
        if node.ctx != "load":  # an assignment target, not a value
            super().visit_Tuple(node, frame)
            return
        self.write("environment.checked_container(")
        super().visit_Tuple(node, frame)
        self.write(")")

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if not isinstance(node.arg, nodes.Slice):
            super().visit_Getitem(node, frame)
            return
        self.write("environment.checked_slice(")
        super().visit_Getitem(node, frame)
        self.write(")")

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:
        self.write("environment.checked_container(")
        super().visit_Dict(node, frame)
        self.write(")")

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.checked_concat((")
        for part in node.nodes:
            self.visit(part, frame)
            self.write(", ")
        self.write("))")


class Sandbox(ImmutableSandboxedEnvironment):
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
            raise BoundExceeded(f"{what} would make {size:,} characters or items")

    def built(self, size: int, what: str) -> None:
        """Check and spend the size of a value about to be built."""
        self.require(size, what)
        budget = CURRENT_BUDGET.get()
        if budget is not None:
            budget.spend_built(size)

    def checked_container(self, value: Any) -> Any:
        """A list, tuple or dict the template built: refused past :data:`MAX_CONTAINER_ITEMS`
        items with the template's own containers expanded, and remembered as the template's."""
        budget = CURRENT_BUDGET.get()
        if budget is None:
            return value
        built = budget.containers
        if built is None:
            built = budget.containers = {}
        elif id(value) in built:
            return value  # measured when it was built
        size, visited = _expanded_size(value, built, MAX_CONTAINER_ITEMS)
        if size > MAX_CONTAINER_ITEMS:
            raise BoundExceeded(
                f"a container built by the template would hold more than {MAX_CONTAINER_ITEMS:,} "
                "items (shared parts counted each time they appear)"
            )
        budget.spend_built(visited)  # the walks of one render are bounded together
        built[id(value)] = value
        return value

    def check_result(self, value: Any, what: str, *, new: bool = True) -> Any:
        # Catches what no prediction covered after one step, so growth cannot compound. ``new``
        # is False where the result may be a reference to an existing value (not built here).
        if new and isinstance(value, _CONTAINERS):
            self.checked_container(value)
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
        budget = CURRENT_BUDGET.get()
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
            raise BoundExceeded(f"integer arithmetic would make a {bits:,}-bit number")

    def checked_slice(self, value: Any) -> Any:
        """``x[a:b]`` (compiled to bypass ``getitem``): a sliced container is a new one holding
        shared parts, measured like one the template wrote."""
        if isinstance(value, _CONTAINERS):
            self.checked_container(value)
        return value

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = CURRENT_BUDGET.get()
        if budget is not None:
            budget.tick()
        target = getattr(obj, "__wrapped__", obj)  # str.format comes wrapped by the sandbox
        owner, name = getattr(target, "__self__", None), getattr(target, "__name__", "")
        if isinstance(owner, str):
            args = self._check_str_method(owner, name, args, kwargs)
        elif isinstance(owner, int) and name == "to_bytes":
            self.require(_int_arg(args, kwargs, 0, "length"), "int.to_bytes")
        result = super().call(context, obj, *args, **kwargs)
        if target in _CONTAINERS:  # dict(a=x, b=x), list(...): a container the template built
            return self.check_result(result, f"{name}()")
        if isinstance(result, _CONTAINERS) and not isinstance(owner, str):
            # ns.a.copy(), d.get(k): maybe new, maybe not; measured (once) either way, so a copy
            # of shared parts cannot hide them from the bound.
            self.checked_container(result)
        if isinstance(result, Namespace) and target is Namespace:
            return self.checked_container(result)
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


#: A filter's size check (sandbox, value, other args, kwargs): returns the value to filter, as a
#: list where it had to be materialised to be measured.
FilterCheck = Callable[[Sandbox, Any, _Args, _Kw], Any]


def _stringified(env: Sandbox, value: Any, args: _Args, kwargs: _Kw) -> Any:
    """Filters that turn their value and arguments into text: measure them first."""
    for item in (value, *args, *kwargs.values()):
        if not isinstance(item, str):
            env.require(_text_size(item, env.max_chars), "a filter argument")
    return value


def _text(env: Sandbox, value: Any, args: _Args, kwargs: _Kw) -> str:
    """The value as text, for a prediction (measured first, so making it is bounded)."""
    _stringified(env, value, args, kwargs)
    return value if isinstance(value, str) else str(value)


def _check_center(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    env.require(_int_arg(args, kw, 0, "width"), "filter 'center'")
    return _stringified(env, value, args, kw)


def _check_indent(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, args, kw)
    width = _arg(args, kw, 0, "width", 4)
    step = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    env.require(len(text) + (text.count("\n") + 1) * step, "filter 'indent'")
    return value


def _check_format(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, (), {})
    env.require(_percent_size(text, kw or args, env.max_chars), "filter 'format'")
    return value


def _check_replace(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, args, kw)
    old, new = str(_arg(args, kw, 0, "old", "")), str(_arg(args, kw, 1, "new", ""))
    count = _arg(args, kw, 2, "count", None)
    count = count if isinstance(count, int) else -1
    env.require(_replace_size(text, old, new, count), "filter 'replace'")
    return value


def _check_wordwrap(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    text = _text(env, value, args, kw)
    width = max(1, _int_arg(args, kw, 0, "width"))
    wrap = _arg(args, kw, 2, "wrapstring", None)
    lines = len(text) // width + text.count("\n") + 1
    env.require(len(text) + lines * len(str(wrap or env.newline_sequence)), "filter 'wordwrap'")
    return value


def _check_join(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    items = list(value)
    sep = _arg(args, kw, 0, "d", "")
    size = sum(_text_size(i, env.max_chars) for i in items)
    env.require(size + _text_size(sep, env.max_chars) * len(items), "filter 'join'")
    return items


def _check_count(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    # batch(linecount) pads and slice(slices) makes that many lists.
    env.require(
        _int_arg(args, kw, 0, "linecount") or _int_arg(args, kw, 0, "slices"), "filter argument"
    )
    return value


def _check_sum(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    start = _arg(args, kw, 1, "start", 0)
    if not isinstance(start, _SEQUENCES):
        return value
    items = list(value)
    size = len(start) + sum(len(i) for i in items if isinstance(i, _SIZED))
    env.require(size, "filter 'sum'")
    return items


def _check_tojson(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
    indent = _int_arg(args, kw, 0, "indent")
    env.require(_text_size(value, env.max_chars) * (1 + max(0, indent)), "filter 'tojson'")
    return value


def _check_urlize(env: Sandbox, value: Any, args: _Args, kw: _Kw) -> Any:
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


def compile_template(env: Sandbox, source: str) -> Template:
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
    # A plain dict, not make_globals' ChainMap over the environment's globals: every render copies
    # the template's globals, and copying a ChainMap walks it in Python. The sandbox's globals are
    # fixed once built, so nothing is lost by taking them now.
    return env.template_class.from_code(env, code, dict(env.make_globals(None)), None)
