"""What every provider reached through cloud platforms shares about its ``options``: whether a
profile takes a platform at all, what is wrong with the platform it names, and the errors of
options that cannot be used (at prepare, and for a request built by hand). Each provider package
declares its platforms once (:class:`PlatformOptions`) and checks the options of each platform
itself."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scriptorium._suggest import did_you_mean
from scriptorium.errors import InvalidRequestError, LLMGenerateError
from scriptorium.llm.model import LLMRequest

__all__ = ["PlatformOptions"]

_OPTION = re.compile(r"options\.(\w+)")


@dataclass(frozen=True)
class PlatformOptions:
    """The cloud platforms of ``provider`` (``options.platform``) and the options only a
    platform reads (``only``)."""

    provider: str
    platforms: tuple[str, ...]
    only: tuple[str, ...]

    def chosen(self, options: Mapping[str, Any]) -> bool:
        """Whether a profile with ``options`` takes a platform: it names one, or gives an option
        only a platform reads (then its problems say which platform is missing)."""
        return options.get("platform") is not None or any(n in options for n in self.only)

    def choice_problems(self, options: Mapping[str, Any]) -> list[str] | None:
        """What is wrong with the choice of platform itself: platform options without a platform,
        or a platform this provider does not know (with the closest one). None: a known platform
        is chosen, and its own options are the provider's to check."""
        platform = options.get("platform")
        if platform is None:
            stray = [name for name in self.only if name in options]
            return [f"options.{name} is used only with options.platform" for name in stray]
        if platform not in self.platforms:
            hint = did_you_mean(str(platform), self.platforms)
            return [
                f"options.platform {str(platform)[:40]!r} is not one the {self.provider} provider "
                f"knows ({', '.join(self.platforms)}){hint}"
            ]
        return None

    def chosen_platform(
        self,
        options: Mapping[str, Any],
        problems: Callable[[Mapping[str, Any]], list[str]],
        profile: str | None = None,
    ) -> str | None:
        """The platform a profile with ``options`` takes (None: the provider's own API), its
        options checked by the provider's ``problems``: ``InvalidRequestError`` naming the
        first when there are any (:meth:`refused`)."""
        if not self.chosen(options):
            return None
        found = problems(options)
        if found:
            raise self.refused(found, profile)
        return str(options["platform"])

    def request_platform(
        self,
        request: LLMRequest,
        problems: Callable[[Mapping[str, Any]], list[str]],
        credential: Callable[[LLMRequest], str | None],
    ) -> str | None:
        """:meth:`chosen_platform` for a request built by hand, its ``credential`` checked too: what
        prepare would have refused is ``LLMGenerateError(reason="config")`` (:meth:`unusable`)."""
        if not self.chosen(request.options):
            return None
        found = problems(request.options)
        problem = found[0] if found else credential(request)
        if problem is not None:
            raise self.unusable(request, problem)
        return str(request.options["platform"])

    @staticmethod
    def refused(problems: list[str], profile: str | None) -> InvalidRequestError:
        """The error of a profile whose options cannot be used: every problem, the field the
        first one names (``options.platform`` when it names none)."""
        found = _OPTION.match(problems[0])
        field = f"options.{found.group(1) if found else 'platform'}"
        return InvalidRequestError("; ".join(problems), profile=profile, field=field)

    def unusable(self, request: LLMRequest, problem: str) -> LLMGenerateError:
        """The error of a request built by hand whose options or credential its platform cannot
        use: what prepare would have said, as ``reason="config"``."""
        return LLMGenerateError(
            f"{self.provider}: {problem}",
            reason="config",
            provider=self.provider,
            model=request.target.model,
        )
