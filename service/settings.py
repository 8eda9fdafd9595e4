"""Service settings: environment variables with the ``ABSA_`` prefix, or CLI flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from model.runtime import default_model_dir


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ABSA_", extra="ignore", protected_namespaces=())

    model_dir: Path = Field(default_factory=default_model_dir, description="artifact directory")
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    workers: int = Field(1, ge=1, description="uvicorn worker processes")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    threads: int = Field(0, ge=0, description="onnxruntime intra-op threads; 0 = its default")
    # micro-batching
    max_batch_size: int = Field(64, ge=1, description="aspects per onnxruntime call")
    max_wait_ms: float = Field(2.0, ge=0.0, description="how long a batch waits to fill")
    max_queue: int = Field(2048, ge=1, description="aspects waiting; beyond it: 503 + Retry-After")
    # request limits
    max_text_chars: int = Field(2000, ge=1)
    max_aspects: int = Field(32, ge=1, description="aspects (after expanding repeats) per item")
    max_items: int = Field(64, ge=1, description="items per /v1/predict/batch request")
    max_body_bytes: int = Field(1_000_000, ge=1)
    log_level: str = "info"

    @field_validator("model_dir")
    @classmethod
    def _model_dir_exists(cls, v: Path) -> Path:
        if not (v / "metadata.json").is_file():
            raise ValueError(f"{v} is not a model artifact directory (no metadata.json)")
        return v
