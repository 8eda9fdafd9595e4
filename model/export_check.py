"""Checks of an artifact's recorded export parity (no torch)."""

from __future__ import annotations

from pathlib import Path

from model.runtime import ArtifactError

PARITY_ATOL = 1e-4


def verify_parity_metadata(metadata: dict, where: Path | str) -> None:
    """Refuse an artifact whose metadata does not record a passed torch/onnxruntime parity check."""
    par = metadata.get("parity")
    if not isinstance(par, dict):
        raise ArtifactError(f"{where}: metadata records no parity check")
    if par.get("prediction_mismatches", 1) != 0 or par.get("max_abs_diff", 1.0) > PARITY_ATOL:
        raise ArtifactError(f"{where}: metadata records a failed parity check: {par}")
