"""What the CLI's commands share: the user-facing error and the model a command opens."""

from __future__ import annotations

from pathlib import Path


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def model_dir(model: str | None) -> Path:
    """``--model`` if given, else what the settings point at (``ABSA_REGISTRY``'s current
    version, ``ABSA_MODEL_DIR``), else the shipped model."""
    if model:
        return Path(model)
    from absa.settings import Settings

    return Settings().model_path()
