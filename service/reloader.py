"""Hot reload: load and warm a new artifact beside the old one, then swap atomically.

Requests already holding the old model finish on it. ``load_predictor`` is the one way the
service opens a model, at start-up and on reload alike: an artifact whose checksum does not
verify, or whose metadata records no passed parity check, is refused (on reload the old one
keeps serving).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from absa.errors import ArtifactError
from absa.model.predictor import Limits, Predictor
from absa.model.runtime import Runtime
from absa.service.engine import BatchEngine
from absa.settings import Settings

log = logging.getLogger(__name__)


def load_predictor(settings: Settings, path: Path) -> Predictor:
    """Open, verify (absa.model.artifact.load) and warm the artifact at ``path``."""
    s = settings
    runtime = Runtime.load(path, s.device, s.threads, s.max_batch_size)
    limits = Limits(max_text_chars=s.max_text_chars, max_aspects=s.max_aspects)
    predictor = Predictor(runtime, limits)
    predictor.warmup()
    return predictor


class Reloader:
    def __init__(self, settings: Settings, engine: BatchEngine) -> None:
        self.settings = settings
        self.engine = engine
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        self.failures = 0

    def load(self, path: Path) -> Predictor:
        return load_predictor(self.settings, path)

    async def reload(self, path: Path | None = None) -> dict:
        """Swap to ``path`` (default: what the settings point at now) if it is another model."""
        async with self._lock:
            target = Path(path or self.settings.model_path())
            current = self.engine.model.runtime.model_dir
            if target.resolve() == Path(current).resolve():
                return {"changed": False, "model_dir": str(target)}
            loop = asyncio.get_running_loop()
            try:
                rt = await loop.run_in_executor(None, self.load, target)
            except (ArtifactError, OSError, ValueError, KeyError) as e:
                self.failures += 1
                log.error("reload of %s refused, still serving %s: %s", target, current, e)
                raise ArtifactError(f"refused {target}: {e}") from None
            old = self.engine.swap(rt)
            log.info("now serving %s (was %s)", target, old.runtime.model_dir)
            return {
                "changed": True,
                "model_dir": str(target),
                "version": rt.metadata.get("version"),
            }

    def start_polling(self) -> None:
        if self.settings.registry is not None and self.settings.reload_interval_s > 0:
            self._task = asyncio.create_task(self._poll(), name="absa-reload-poll")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reload_interval_s)
            try:
                await self.reload()
            except Exception as e:  # noqa: BLE001 - keep serving, keep polling
                log.warning("registry poll: %s", e)
