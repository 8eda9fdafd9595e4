"""Hot reload: load and warm a new artifact beside the old one, then swap atomically.

Requests already holding the old model finish on it. ``load_predictor`` is the one way the
service opens a model, at start-up and on reload alike: an artifact whose checksums do not
verify, or whose metadata records no passed parity check, is refused (on reload the old one
keeps serving, whatever opening the new one raised). A registry pointer that cannot be read
(truncated JSON, not an object, a bad or missing version) is refused the same way, with the
reason.

The model served is its directory and what its metadata.json records (every file's sha256):
another artifact copied into the served directory (``--model /models/current``, no registry)
is a new model to load, and the same directory as it was is no change (nothing is loaded).

Several workers (``absa serve --workers N``) are separate processes, each with its own
model. ``/admin/reload`` reaches one of them; after it has swapped, it writes the model it
now serves to ``<run_dir>/reload.json`` (``Settings.run_dir``, a directory ``absa serve``
makes for its workers), and every worker checks that file every ``SYNC_INTERVAL_S`` (one
``stat``) and loads the same model: every worker follows, within a fraction of a second.
With a registry each worker also polls its pointer itself (every ``ABSA_RELOAD_INTERVAL_S``,
30 s by default; 0: only on ``/admin/reload``); a version a poll refused is not tried again
(nor logged, nor counted) until the pointer or the version's files change (but one refused
for want of memory or file descriptors, or for a read error of the volume a retry may not
meet, ``absa.errors.TRANSIENT``, is tried again after a wait, ``TRANSIENT_WAIT_S``, as a
signal refused so is followed again), and a pointer that is gone while one of the
registry's versions is served is refused (not read as "serve the fallback model"), and a
worker that starts leaves alone a signal written before it started (the registry it has
just loaded from says what to serve now).

Metrics: ``absa_model_info`` follows every swap; ``absa_reloads{result}`` counts swapped,
and refused reloads; ``absa_model_files_changed`` is 1 while a file of the model served no
longer has its recorded sha256 (looked at every ``ABSA_RELOAD_INTERVAL_S``, registry or not).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from absa.errors import TRANSIENT, ArtifactError, RegistryError, TransientRefusal, chain, transient
from absa.model.artifact import METADATA, verify_files
from absa.model.categories import CATEGORY
from absa.model.category_predictor import CategoryPredictor
from absa.model.predictor import Limits, Predictor
from absa.model.registry import POINTER, Registry, atomic_write_json
from absa.model.runtime import Runtime, first_prediction
from absa.service.engine import BatchEngine
from absa.service.tasks import cancel_all
from absa.settings import Settings

log = logging.getLogger(__name__)

SIGNAL = "reload.json"
#: in the run dir: the model the server's workers serve (each writes it as it loads one), for
#: a worker started in place of one that died whose settings name a model it cannot load
SERVING = "serving.json"
SYNC_INTERVAL_S = 0.25
#: after a refusal for want of memory, or for the volume's read error: the wait (s) before
#: that model is tried again, the first and the longest (it doubles at each such refusal in
#: a row): one that never fits is not verified and loaded again at every poll, nor at every
#: look at the signal
TRANSIENT_WAIT_S = (5.0, 300.0)
#: what onnxruntime says when its allocator finds no memory for a buffer
ORT_ALLOCATION_FAILED = "Failed to allocate memory"
#: OSError numbers of a machine short of a resource, not of a bad artifact: a later try may load
RESOURCE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOMEM", "EMFILE", "ENFILE", "EAGAIN", "ENOBUFS")
    if hasattr(errno, name)
)


def _for_want_of_a_resource(e: BaseException) -> bool:
    """Whether ``e``, or an error it was raised from (the loader wraps what onnxruntime and
    the warm-up raise in an ArtifactError), is a MemoryError, an OSError in RESOURCE_ERRNOS,
    or onnxruntime's own allocation failure (a RuntimeException, ``ORT_ALLOCATION_FAILED``;
    its std::bad_alloc comes as a MemoryError)."""
    return any(
        isinstance(c, MemoryError)
        or ORT_ALLOCATION_FAILED in str(c)
        or (isinstance(c, OSError) and c.errno in RESOURCE_ERRNOS)
        for c in chain(e, implicit=True)
    )


def _a_read_error(e: BaseException) -> bool:
    """Whether ``e``, or an error it was raised from or while handling (the loader names the
    file in an ArtifactError ``from None``), is an OSError of ``TRANSIENT``: the volume's
    (an NFS server's I/O error, a stale handle, a timeout), not the artifact's."""
    return any(isinstance(c, OSError) and c.errno in TRANSIENT for c in chain(e, implicit=True))


def load_predictor(settings: Settings, path: Path) -> Predictor:
    """Open, verify (absa.model.artifact.load) and warm the artifact at ``path``: an
    aspect-term model (a category model is refused, with the reason)."""
    s = settings
    runtime = Runtime.load(path, s.device, s.threads, s.max_batch_size)
    extractor_dir = s.extractor_path()
    extractor = None
    if extractor_dir is not None:
        from absa.model.extractor import Extractor

        extractor = Extractor.load(extractor_dir, s.device, s.threads)
    predictor = Predictor(runtime, _limits(s), extractor)
    first_prediction(predictor, path)  # one that opens but cannot run is refused here
    return predictor


def load_category_predictor(settings: Settings, path: Path) -> CategoryPredictor:
    """The aspect-category model (``ABSA_CATEGORY_MODEL``), verified and warmed the same way;
    an aspect-term model is refused. Loaded once at start-up (no hot reload)."""
    s = settings
    runtime = Runtime.load(path, s.device, s.threads, s.max_batch_size, task=CATEGORY)
    predictor = CategoryPredictor(runtime, _limits(s))
    first_prediction(predictor, path)  # one that opens but cannot run is refused here
    return predictor


def load_at_start(settings: Settings) -> tuple[Path, Predictor]:
    """What a worker serves as it starts: what the settings name (``model_path``). Where that
    cannot be loaded (a bad pointer, a version corrupted since it was promoted) while the
    other workers of this server serve a model (``SERVING``: a worker uvicorn starts in place
    of one that died), that model, said at WARNING: the running workers refused the pointer
    and kept serving, and a replacement that failed to start took the whole server down
    with it. A server starting afresh (another parent process) refuses as before."""
    try:
        path = Path(settings.model_path())
        return path, load_predictor(settings, path)
    except (ArtifactError, RegistryError, OSError, ValueError) as e:
        served = _served_by_this_server(settings)
        if served is None or _for_want_of_a_resource(e):
            raise
        log.warning(
            "cannot load what the settings name (%s); serving what this server's other "
            "workers serve: %s",
            e,
            served,
        )
        return served, load_predictor(settings, served)


def _served_by_this_server(settings: Settings) -> Path | None:
    """The model dir ``SERVING`` names, where a worker of this server (the same parent
    process) wrote it; else None."""
    if settings.run_dir is None:
        return None
    try:
        record = json.loads((Path(settings.run_dir) / SERVING).read_text(encoding="utf-8"))
        server, model_dir = record["server"], Path(record["model_dir"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return model_dir if server == os.getppid() else None


def note_serving(settings: Settings, model_dir: Path) -> None:
    """Record in the run dir (several workers) the model this worker now serves; a write
    that fails is said, never fatal."""
    if settings.run_dir is None:
        return
    record = {"server": os.getppid(), "model_dir": str(Path(model_dir).resolve())}
    try:
        atomic_write_json(Path(settings.run_dir) / SERVING, record)
    except OSError as e:
        log.warning("%s: cannot record the model served: %s", settings.run_dir, e)


def _limits(s: Settings) -> Limits:
    return Limits(max_text_chars=s.max_text_chars, max_aspects=s.max_aspects)


class Reloader:
    def __init__(
        self,
        settings: Settings,
        engine: BatchEngine,
        after_reload: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``after_reload``: what else a reload asked for looks at (the held shadow), after
        this worker's /admin/reload and after each signal of another worker's it follows."""
        self.settings = settings
        self.engine = engine
        self.after_reload = after_reload
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []
        self._seen: tuple[int, ...] | None = None  # the signal file's stat, last read
        self._signal_id: str | None = None
        self._refused: tuple | None = None  # what a poll found and refused (_poll_key)
        # the target the last reload went for, as _poll_key names it (None: none could be read)
        self._tried: Path | None = None
        self._wait_s = 0.0  # after the last refusal for want of memory (0: none since a swap)
        self._retry_at = 0.0  # time.monotonic() before which it is not tried again
        self._transient_key: tuple | None = None  # the poll key it was refused at
        self._signal_retry = False  # the last signal's reload was refused so: follow it again
        self.failures = 0
        # the served model's files as last verified: (id of its runtime, their stats)
        self._files_seen: tuple | None = None
        self._files_said = False  # a change of them was logged (again only once mended)

    @property
    def signal_path(self) -> Path | None:
        rd = self.settings.run_dir
        return None if rd is None else Path(rd) / SIGNAL

    def load(self, path: Path) -> Predictor:
        return load_predictor(self.settings, path)

    def _count(self, result: str) -> None:
        self.engine.metrics.reloads.labels(result).inc()  # swapped | refused

    async def reload(self, path: Path | None = None, publish: bool = False) -> dict:
        """Swap to ``path`` (default: what the settings point at now) if it is another model.
        ``publish`` (``/admin/reload``): tell the other workers to serve the same model.
        A refusal of what the settings point at is remembered, whoever asked (a poll, or
        /admin/reload): the poll leaves it be until the pointer or its files change."""
        try:
            if path is not None or self.settings.registry is None:
                return await self._reload(path, publish)
            return await self._reload_current(self._poll_key(), publish)
        finally:  # refused or not: the shadow is no part of the model served
            await self._after()

    async def _after(self) -> None:
        if self.after_reload is not None:
            try:
                await self.after_reload()
            except Exception:  # noqa: BLE001 - the reload's answer stands
                log.exception("after a reload")

    async def _reload_current(self, key: tuple, publish: bool) -> dict:
        """``reload`` of what the registry names, ``key`` (``_poll_key``) read before: a
        refusal is remembered as the registry then stands."""
        try:
            out = await self._reload(None, publish)
        except TransientRefusal:  # logged and counted; not the model's fault: tried again
            self._refused, self._transient_key = None, key
            self._transient_refused()
            self.engine.metrics.behind.set(1)
            raise
        except (ArtifactError, RegistryError):  # _reload logged why
            # the registry as it stands now, where it still names what was refused: ``key``
            # alone, read before the load, kept a pointer moved meanwhile as the refused one,
            # and what that named was loaded (and counted) again at the next poll
            after = self._poll_key()
            self._refused = after if after[1] == self._tried else key
            self.engine.metrics.behind.set(1)  # until CURRENT, or its files, change
            raise
        self._refused = self._transient_key = None
        self.engine.metrics.behind.set(0)  # serves what CURRENT names
        return out

    async def _reload(self, path: Path | None, publish: bool, signal: str | None = None) -> dict:
        """``signal``: the id of another worker's signal this reload follows; passed over
        where this worker signalled since (its own /admin/reload, which held the lock
        meanwhile: the other workers follow that newer one, and so must this one)."""
        async with self._lock:
            current = self.engine.model.runtime.model_dir
            if signal is not None and signal != self._signal_id:
                log.info("passed over a signal to serve %s: this worker signalled since", path)
                served = self.engine.model.runtime.metadata.get("version")
                return {"changed": False, "model_dir": str(current), "version": served}
            self._tried = None
            try:
                if path is None:
                    self._check_pointer_kept(current)
                target = Path(path or self.settings.model_path())
                self._tried = target
            except (RegistryError, OSError) as e:  # OSError: a registry it may not read
                self.failures += 1
                self._count("refused")
                log.error("reload refused, still serving %s: %s", current, e)
                # CURRENT unread for want of descriptors, or for the volume's read error
                if _for_want_of_a_resource(e) or transient(e):
                    raise TransientRefusal(f"refused: {e}") from None
                raise RegistryError(f"refused: {e}") from None
            if self._serves(target):
                if publish:
                    self._publish(target)  # a worker that is behind catches up
                served = self.engine.model.runtime.metadata.get("version")
                return {"changed": False, "model_dir": str(target), "version": served}
            loop = asyncio.get_running_loop()
            try:
                rt = await loop.run_in_executor(None, self.load, target)
            # whatever opening it raises, the new model is refused and the old one serves: a
            # metadata field of the wrong type (no checksum covers metadata.json) was a 500,
            # uncounted, and a poll loaded it again every interval
            except Exception as e:  # noqa: BLE001
                self.failures += 1
                self._count("refused")
                named = isinstance(e, ArtifactError | OSError | ValueError | KeyError)
                starved = _for_want_of_a_resource(e)
                unread = not starved and _a_read_error(e)  # the files may be fine: retried
                expected = named or starved  # a MemoryError needs no traceback either
                reason = str(e) if named else f"{type(e).__name__}: {e}"
                if not str(e):  # a MemoryError's message is often empty: its name says it
                    reason = repr(e)
                if starved:
                    reason += " (for want of a resource: a later reload may load it)"
                elif unread:
                    reason += " (a read error of the volume: a later reload may load it)"
                log.error(
                    "reload of %s refused, still serving %s: %s",
                    target,
                    current,
                    reason,
                    exc_info=not expected,  # a loader's bug, or a case it should name
                )
                refusal = TransientRefusal if starved or unread else ArtifactError
                raise refusal(f"refused {target}: {reason}") from None
            old = self.engine.swap(rt)
            note_serving(self.settings, target)
            self._wait_s = self._retry_at = 0.0
            self.engine.metrics.swapped(old.runtime, rt.runtime)
            self._count("swapped")
            if publish:
                self._publish(target)
            log.info(
                "now serving %s from %s (was %s from %s)",
                _named(rt.metadata),
                target,
                _named(old.metadata),
                old.runtime.model_dir,
            )
            return {
                "changed": True,
                "model_dir": str(target),
                "version": rt.metadata.get("version"),
            }

    def _serves(self, target: Path) -> bool:
        """Whether ``target`` is the model served now: the same directory, whose metadata.json
        records what the served model's did (its version, every file's sha256). Another
        artifact copied over the served directory is another model, and so is a metadata.json
        that is not JSON (loading it says what is wrong). One that cannot be read at all (the
        volume's I/O error, a file copied over it gone a moment) says nothing: the served
        model stays, where a load would have refused it as broken."""
        runtime = self.engine.model.runtime
        if target.resolve() != Path(runtime.model_dir).resolve():
            return False
        try:
            raw = (target / METADATA).read_bytes()
        except OSError as e:
            log.debug("%s: cannot read it (%s): taken as the model served", target / METADATA, e)
            return True
        try:
            recorded = json.loads(raw)
        except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError)
            return False
        return bool(recorded == runtime.metadata)

    def _check_pointer_kept(self, current: Path) -> None:
        """RegistryError when the registry's pointer is gone while a version of it is served:
        an empty registry serves the fallback model, but one that had a champion has lost
        its pointer (an operator's mistake, a volume mounted empty), not chosen the fallback."""
        if self.settings.registry is None:
            return
        reg = Registry(self.settings.registry)
        if reg.current() is None and Path(current).resolve().is_relative_to(reg.root.resolve()):
            raise RegistryError(
                f"{reg.root} has no {POINTER} any more, and {current} is one of its versions: "
                "promote a version (absa models promote) to serve another"
            )

    def _poll_key(self) -> tuple:
        """What a poll would load, as it stands on disk: the pointer's stat, the target and
        its files' stats. A refused one is not loaded (or logged, or counted) again until
        one of them changes."""
        assert self.settings.registry is not None
        pointer = _stat(Path(self.settings.registry) / POINTER)
        try:
            target: Path | None = Path(self.settings.model_path())
        except (RegistryError, OSError):  # refused by the reload, which says why
            target = None
        files: tuple | None = None
        try:
            if target is not None and target.is_dir():
                files = tuple(sorted((f.name, _stat(f)) for f in target.iterdir()))
        except OSError as e:  # a version's directory the server may not list
            files = (e.errno or 0,)
        return (pointer, target, files)

    # ------------------------------------------------------------------ several workers

    def _publish(self, target: Path) -> None:
        sig = self.signal_path
        if sig is None:
            return
        self._signal_id = uuid.uuid4().hex
        atomic_write_json(sig, {"id": self._signal_id, "model_dir": str(target.resolve())})
        self._seen = _stat(sig)
        log.info("signalled the other workers: serve %s", target)

    async def sync(self) -> None:
        """Follow the signal file if another worker wrote it since the last look."""
        sig = self.signal_path
        if sig is None:
            return
        st = _stat(sig)
        if st is None:
            return
        # the signal already followed: again only where it was refused for want of memory
        # and the wait has passed (a newer signal is followed at once, waiting or not)
        if st == self._seen and (not self._signal_retry or self._waiting()):
            return
        self._seen = st
        try:
            signal = json.loads(sig.read_text(encoding="utf-8"))
            sid, target = signal["id"], Path(signal["model_dir"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("%s: unreadable reload signal: %s", sig, e)
            return
        if sid == self._signal_id:
            return
        self._signal_id = sid
        try:
            await self._reload(target, publish=False, signal=sid)
            self._signal_retry = False
        except TransientRefusal as e:  # the same signal again once the wait has passed
            log.error("reload signalled by another worker refused: %s", e)
            self._transient_refused()
            self._signal_retry, self._signal_id = True, None
        except (ArtifactError, RegistryError) as e:
            self._signal_retry = False
            log.error("reload signalled by another worker refused: %s", e)
        await self._after()

    def _transient_refused(self) -> None:
        """A refusal for want of memory or for a read error: wait (TRANSIENT_WAIT_S) before
        trying it again."""
        first, longest = TRANSIENT_WAIT_S
        self._wait_s = min(max(2 * self._wait_s, first), longest)
        self._retry_at = time.monotonic() + self._wait_s

    def _waiting(self) -> bool:
        return time.monotonic() < self._retry_at

    async def check_files(self) -> None:
        """The served model's files against the sha256 its metadata records, where their
        stats changed since the last look: a file changed on disk after the model loaded
        (a copy over it, a damaged volume) is served on from memory, but a worker started
        now refuses it, and a restart would take the service down. Logged once (and once
        mended), and ``absa_model_files_changed``."""
        rt = self.engine.model.runtime
        directory = Path(rt.model_dir)
        files = rt.metadata.get("files")
        names = sorted(files) if isinstance(files, dict) else []
        seen = (id(rt), tuple(_stat(directory / name) for name in names))
        if seen == self._files_seen:
            return
        self._files_seen = seen
        try:
            await asyncio.to_thread(verify_files, rt.metadata, directory)
            changed = ""
        except ArtifactError as e:
            changed = str(e)
        if changed and not self._files_said:
            log.error(
                "the files of the model served (%s) changed on disk after it loaded: %s; it "
                "serves on from memory, but a worker started now refuses them: restore them, "
                "or serve a model that verifies",
                _named(rt.metadata),
                changed,
            )
        elif not changed and self._files_said:
            log.info("the files of the model served (%s) verify again", _named(rt.metadata))
        self._files_said = bool(changed)
        self.engine.metrics.files_changed.set(int(bool(changed)))

    def start_polling(self) -> None:
        polls = self.settings.registry is not None and self.settings.reload_interval_s > 0
        if self.settings.reload_interval_s > 0:  # the registry, if any, and the files served
            self._tasks.append(asyncio.create_task(self._poll(), name="absa-reload-poll"))
        if self.signal_path is not None:
            if polls:
                # the registry says what to serve, and start-up has just loaded what it says:
                # a signal written before this worker started (one that replaces a worker
                # that died) is no news, and may name a version the registry has left since
                self._seen = _stat(self.signal_path)
            self._tasks.append(asyncio.create_task(self._follow(), name="absa-reload-sync"))

    async def stop(self) -> None:
        await cancel_all(*self._tasks)
        self._tasks = []

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reload_interval_s)
            try:
                if self.settings.registry is not None:
                    await self.poll_once()
                await self.check_files()
            except Exception as e:  # noqa: BLE001 - keep serving, keep polling
                log.warning("poll (the registry, the model's files): %s", e)

    async def poll_once(self) -> None:
        """One look at the registry: load what it names unless that was refused as it stands."""
        key = self._poll_key()
        if key == self._refused:
            return  # refused as it stands: logged and counted once
        if key == self._transient_key and self._waiting():
            return  # refused for want of memory a moment ago: tried once the wait has passed
        with contextlib.suppress(ArtifactError, RegistryError):  # logged and remembered
            await self._reload_current(key, publish=False)

    async def _follow(self) -> None:
        while True:
            try:
                await self.sync()
            except Exception as e:  # noqa: BLE001 - keep serving, keep following
                log.warning("reload signal: %s", e)
            await asyncio.sleep(SYNC_INTERVAL_S)


def _named(metadata: dict) -> str:
    """A model as its metadata names it, ``name:version``: the directory alone said nothing
    of a model copied over the one served (``--model /models/current``)."""
    return f"{metadata.get('name') or 'unnamed'}:{metadata.get('version') or 'unversioned'}"


def _stat(path: Path) -> tuple[int, ...] | None:
    """(inode, mtime, size) of ``path``, None where it is not there, and (errno,) where it
    cannot be looked at (a directory the server may not read): a state like any other."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return (e.errno or 0,)
    return (st.st_ino, st.st_mtime_ns, st.st_size)
