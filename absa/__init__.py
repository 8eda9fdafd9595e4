"""absa: aspect-level sentiment classification.

    from absa import load
    clf = load()                       # the shipped model (or load("path/or/registry"))
    clf("The fries were soggy but the burger was great", aspects=["burger", "fries"])

``import absa`` is light: the classifier (onnxruntime) is imported on first use, and
nothing here imports torch.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

# onnxruntime (1.32 on PyPI) otherwise writes a device-id database under $HOME/.cache and sends
# usage events to Microsoft's collector from every serving process: a service that promises
# nothing leaves the machine must not, and a read-only $HOME (the Deployment's) logs a warning
# per process. Set before anything in absa imports onnxruntime; ORT_DISABLE_TELEMETRY=0 in the
# environment opts back in.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def _beside(here: str) -> list[str]:
    """Run from a checkout (Python started in the repository's root, where ``absa`` is this
    folder ahead of the installed package): model/, training/ and service/ are beside it, as
    the install maps them in (pyproject.toml's package-dir), and ``absa.model`` was not found.
    Returns the folder to look in too; none for an installed package, which holds them."""
    root = os.path.dirname(here)
    parts = ("model", "training", "service")
    if os.path.isdir(os.path.join(here, "model")) or not os.path.isfile(
        os.path.join(root, "pyproject.toml")
    ):
        return []
    if all(os.path.isfile(os.path.join(root, part, "__init__.py")) for part in parts):
        return [root]
    return []


__path__ += _beside(os.path.dirname(os.path.abspath(__file__)))

if TYPE_CHECKING:
    from absa.api import AspectPrediction, CategoryPrediction, Classifier, load

try:
    __version__ = version("absa")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["AspectPrediction", "CategoryPrediction", "Classifier", "__version__", "load"]
_API = ("load", "Classifier", "AspectPrediction", "CategoryPrediction")


def __getattr__(name: str) -> Any:
    if name in _API:
        from absa import api

        return getattr(api, name)
    raise AttributeError(f"module 'absa' has no attribute {name!r}")
