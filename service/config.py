"""Settings of the API process: the shared :class:`workers.settings.Settings`."""

from __future__ import annotations

from workers.settings import Settings, get_settings

__all__ = ["Settings", "get_settings"]
