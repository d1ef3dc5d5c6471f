"""Rendering: messages, the renderer port and the Jinja adapter."""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr
from scriptorium.prompt.model import MediaPart, Message, RenderedPrompt, TextPart
from scriptorium.prompt.renderer import Renderer

if TYPE_CHECKING:
    from scriptorium.prompt.jinja import JinjaRenderer

__all__ = ["JinjaRenderer", "MediaPart", "Message", "RenderedPrompt", "Renderer", "TextPart"]

__getattr__ = lazy_getattr(__name__, {"JinjaRenderer": "jinja"})
