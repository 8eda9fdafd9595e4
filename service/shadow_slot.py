"""The shadow a worker runs (ABSA_SHADOW_MODEL), and with ``held`` the one it follows: the
registry's newest version a retraining job held (``promote = false``), looked for every
``ABSA_RELOAD_INTERVAL_S`` as the served model's pointer is, so that the job's next held
version is watched without a restart, and a held version promoted since (or one a newer
served version has passed) stops being scored. A shadow is a challenger only: one that
cannot be loaded is said once (as its files then stand, again after ``RETRY_S``) and the
worker goes on with the shadow it had, or none; nothing here ever stops the service."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from absa.errors import AbsaError, RegistryError
from absa.service.metrics import Metrics
from absa.service.sampling import AnswerSample
from absa.service.shadow import Shadow, load_shadow
from absa.service.tasks import cancel_all
from absa.settings import Settings

log = logging.getLogger(__name__)

#: a held version refused as its files stand is tried again after this long (s): a read
#: error of the volume, or a copy still being made, does not last
RETRY_S = 300.0


class ShadowSlot:
    """The shadow of one worker: ``shadow`` (None: none), read by the routes at each request;
    a swap replaces it whole, and the old one scores what it holds as it closes."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        served_digest: Callable[[], str],
        sample: AnswerSample | None,
    ) -> None:
        self.settings, self.metrics = settings, metrics
        self._served_digest, self._sample = served_digest, sample
        self.shadow: Shadow | None = None
        self._path: Path | None = None  # what ``shadow`` was loaded from
        # (path, its files' stats) refused, and when: said once, tried again after RETRY_S
        self._refused: tuple | None = None
        self._refused_at = 0.0
        self._task: asyncio.Task | None = None
        self._unread: str | None = None  # why the registry could not be read: said once
        self._checking = asyncio.Lock()  # a reload's look and the poll's: one at a time
        self._closed = False  # closed: no look swaps a shadow in any more

    @property
    def follows(self) -> bool:
        """Whether it follows the registry's held versions (``held``, polled)."""
        s = self.settings
        return s.shadow_model == "held" and s.reload_interval_s > 0

    def load_at_start(self) -> None:
        """The shadow the settings name, loaded and started, or none (said why): never an
        error that stops the worker."""
        try:
            path = self.settings.shadow_path()
        except Exception as e:  # noqa: BLE001 - a challenger only: the worker serves on
            log.error("shadow: serving without one: %s", e, exc_info=not _named(e))
            return
        if path is None:
            if self.settings.shadow_model == "held":
                log.info(
                    "shadow: the registry holds no challenger yet%s",
                    ": the next version a job holds is scored" if self.follows else "",
                )
            return
        shadow = self._open(path)
        if shadow is not None:
            shadow.start()
            self.shadow, self._path = shadow, path

    def start_following(self) -> None:
        if self.follows:
            self._task = asyncio.create_task(self._follow(), name="absa-shadow-follow")

    async def check(self) -> None:
        """One look at the registry's held versions: the newest scored, none where the
        registry says there is none. One it cannot read (or a volume mounted empty for a
        while) says nothing: the shadow it had stays."""
        async with self._checking:
            if not self._closed:
                await self._check()

    async def after_reload(self) -> None:
        """A reload asked for (/admin/reload, or another worker's signal of one): with
        ``held``, the registry's held versions looked at too, polled or not (with
        ``ABSA_RELOAD_INTERVAL_S=0`` this is the only look after start-up)."""
        if self.settings.shadow_model == "held":
            await self.check()

    async def _check(self) -> None:
        try:
            path = await asyncio.to_thread(self._held_path)
        except Exception as e:  # noqa: BLE001 - said once, until it reads again
            if str(e) != self._unread:
                log.warning("shadow: cannot look at the registry's held versions: %s", e)
            self._unread = str(e)
            return
        self._unread = None
        if path == self._path:
            return
        if path is None:
            log.info(
                "shadow: %s is no challenger any more (promoted, a newer version served, or "
                "it left the registry): none is scored until a job holds another",
                self.shadow.model_id if self.shadow is not None else self._path,
            )
            await self._swap(None, None)
            return
        shadow = await asyncio.to_thread(self._open, path)
        if shadow is not None:  # not started: cancelled meanwhile, it is dropped unstarted
            await self._swap(shadow, path)

    def _held_path(self) -> Path | None:
        """``shadow_path``; while a shadow is scored, a RegistryError where the registry is
        no registry now (a volume not mounted, or gone a while), which is no "none held".
        Without one, an empty folder is a registry before its first job: nothing to say."""
        from absa.model import artifact
        from absa.model.registry import Registry

        path = self.settings.shadow_path()
        root = self.settings.registry
        if path is None and self.shadow is not None and root is not None:
            if not Registry.looks_like(root):
                raise RegistryError(f"{root} is no registry now (a volume not mounted?)")
        scored = self._path
        if path != scored and scored is not None and scored.is_dir():
            # the version scored, still there, unreadable now (a metadata.json torn): its
            # place in the registry is unknown, and the newest held one it reads may be older
            artifact.read_metadata(scored)
        return path

    async def stop_following(self) -> None:
        """No more looks at the registry (a load under way is dropped unstarted)."""
        await cancel_all(self._task)
        self._task = None

    async def close(self) -> None:
        await self.stop_following()
        async with self._checking:  # a reload's look under way ends first, and none follows
            self._closed = True
            await self._swap(None, None)  # what it holds is scored (a few seconds at most)

    def _open(self, path: Path) -> Shadow | None:
        """``path`` loaded as the shadow, not yet started; one that cannot be loaded is said
        once as its files stand (None), again after ``RETRY_S``, and what the slot holds
        stays."""
        key = (path, _stats(path))
        if key == self._refused and time.monotonic() - self._refused_at < RETRY_S:
            return None
        try:
            shadow = load_shadow(self.settings, self.metrics, path)
        except Exception as e:  # noqa: BLE001 - a challenger only: the worker serves on
            self._refused, self._refused_at = key, time.monotonic()
            kept = f"still scoring {self.shadow.model_id}" if self.shadow else "serving without one"
            log.error("shadow: %s: %s cannot be loaded: %s", kept, path, e, exc_info=not _named(e))
            return None
        self._refused = None
        if shadow.digest == self._served_digest():
            log.warning(
                "shadow: %s is the model served: nothing to compare until another serves",
                shadow.model_id,
            )
        # the answers it labels otherwise go to the term model's sample, where one is kept
        shadow.sample = self._sample
        return shadow

    async def _swap(self, shadow: Shadow | None, path: Path | None) -> None:
        if shadow is not None:
            shadow.start()
        old, self.shadow, self._path = self.shadow, shadow, path
        if old is not None:
            if shadow is not None:
                log.info("shadow: now %s (was %s)", shadow.model_id, old.model_id)
            await asyncio.to_thread(old.close)  # what it holds is scored (seconds at most)

    async def _follow(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reload_interval_s)
            try:
                await self.check()
            except Exception:  # noqa: BLE001 - a challenger only: the worker serves on
                log.exception("shadow: following the registry's held versions")


def shadow_now(app: Any) -> Shadow | None:
    """The shadow ``app``'s worker runs now (None: none, or before start-up)."""
    slot: ShadowSlot | None = app.state.shadow_slot
    return None if slot is None else slot.shadow


def _named(e: BaseException) -> bool:
    """Whether ``e`` is an error whose message says it all (no traceback wanted)."""
    return isinstance(e, AbsaError | OSError | ValueError)


def _stats(directory: Path) -> tuple:
    """(name, inode, mtime, size) of each file in ``directory``; (errno,) where it cannot be
    listed: a version refused as it stands is tried again once one of them changes."""
    try:
        out = []
        for f in sorted(directory.iterdir()):
            st = f.stat()
            out.append((f.name, st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)
    except OSError as e:
        return (e.errno or 0,)
