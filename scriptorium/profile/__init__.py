"""Profiles (``profiles/<name>.yaml``): the model, the repository port and its adapters."""

from typing import TYPE_CHECKING

from scriptorium._lazy import lazy_getattr
from scriptorium.profile.model import (
    DEFAULT_SETTINGS,
    PROFILE_NAME_PATTERN,
    ExecutionSettings,
    Pricing,
    Profile,
    RateLimits,
    SettingsPatch,
    is_valid_profile_name,
    validate_endpoint,
)
from scriptorium.profile.repository import Repository

if TYPE_CHECKING:
    from scriptorium.profile.files import FileRepository
    from scriptorium.profile.memory import MemoryRepository

__all__ = [
    "DEFAULT_SETTINGS",
    "PROFILE_NAME_PATTERN",
    "ExecutionSettings",
    "FileRepository",
    "MemoryRepository",
    "Pricing",
    "Profile",
    "RateLimits",
    "Repository",
    "SettingsPatch",
    "is_valid_profile_name",
    "validate_endpoint",
]

__getattr__ = lazy_getattr(__name__, {"FileRepository": "files", "MemoryRepository": "memory"})
