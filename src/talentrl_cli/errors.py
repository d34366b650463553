"""The one error class for mistakes a user can cause.

The CLI renders a `TalentRLError` as one message (no traceback unless `-v`) and exits 1.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class TalentRLError(Exception):
    """A user-caused error: bad file, bad config, missing or corrupt artifact, bad ref."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class ConfigError(TalentRLError):
    """A config key, group option or override that does not compose."""


class ArtifactError(TalentRLError):
    """A missing, malformed or corrupt artifact, or a ref that does not resolve."""


class DataError(TalentRLError):
    """A bad input data file; the message names the file and line."""
