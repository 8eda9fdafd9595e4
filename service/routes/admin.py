"""Admin endpoints, mounted only when ABSA_ADMIN_TOKEN is set; ``Authorization: Bearer
<token>`` required (the bare token, or any other scheme, is refused)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from fastapi import APIRouter, Depends, HTTPException, Request, Security
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, field_validator

from absa.errors import RegistryError
from absa.service.auth import bearer_accepted
from absa.service.deps import SettingsDep
from absa.service.schemas import ErrorResponse
from absa.service.twice import OneValuePerKey

log = logging.getLogger(__name__)
router = APIRouter(prefix="/admin", tags=["admin"], route_class=OneValuePerKey)
NEED_TOKEN = "a valid admin token is required"
#: the admin token's security scheme in the OpenAPI schema (Swagger UI's Authorize button
#: sends it); the check itself is ``require_token``'s, on the raw header
ADMIN_TOKEN = HTTPBearer(
    scheme_name="adminToken",
    description="the admin token, ABSA_ADMIN_TOKEN (sent as Authorization: Bearer TOKEN)",
    auto_error=False,
)


async def require_token(request: Request, settings: SettingsDep) -> None:
    expected = settings.admin_token.get_secret_value() if settings.admin_token else ""
    authorization = request.headers.get("authorization", "")
    if not bearer_accepted(authorization.encode(), [expected.encode()]):
        raise HTTPException(401, NEED_TOKEN, headers={"WWW-Authenticate": "Bearer"})


class ReloadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    model_dir: str | None = None  # default: the registry's current version / ABSA_MODEL_DIR

    @field_validator("model_dir")
    @classmethod
    def _a_path(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:  # no file system takes it (was a 500)
            raise ValueError("model_dir must not contain a NUL character")
        if value is not None and any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            # a newline went raw into the text log's lines: a line of the asker's making
            raise ValueError("model_dir must not contain a control character (a newline, a tab)")
        if value is not None:
            try:
                os.fsencode(value)  # a lone surrogate JSON can carry: resolving it was a 500
            except UnicodeEncodeError:
                raise ValueError("model_dir holds a lone surrogate: not a file name") from None
        return value


class ReloadResponse(BaseModel):
    """What is served after a reload, changed or not."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    changed: bool = Field(description="a new model was swapped in (false: it was served already)")
    model_dir: str = Field(description="the directory of the model served")
    version: str | None = Field(description="its version (its metadata's), null if it has none")


@router.post(
    "/reload",
    response_model=ReloadResponse,
    dependencies=[Security(ADMIN_TOKEN), Depends(require_token)],
    responses={
        401: {"model": ErrorResponse, "description": "no or wrong token"},
        409: {"model": ErrorResponse, "description": "refused: the old model keeps serving"},
        415: {"model": ErrorResponse, "description": "a body not sent as application/json"},
        422: {"model": ErrorResponse, "description": "a body that does not fit the schema"},
        503: {
            "model": ErrorResponse,
            "description": "refused for want of memory or file descriptors: retry (Retry-After)",
        },
    },
)
async def reload(request: Request, body: ReloadRequest | None = None) -> ReloadResponse:
    """Load the current registry version (or ``model_dir``), warm it, swap it in, in every
    worker (the others follow within a second). A version or pointer that does not verify
    is refused (409, with the reason) and the old model keeps serving; one that could not be
    loaded for want of memory or file descriptors is a 503 to retry. ``model_dir`` is
    refused (409) where the service polls its registry, whose next poll would undo it."""
    target = Path(body.model_dir) if body and body.model_dir else None
    rid = getattr(request.state, "request_id", "-")
    what = f"model_dir {target}" if target is not None else "what the settings name"
    log.info("reload asked by request %s: %s", rid, what)  # the swap's line names it too
    settings = request.app.state.reloader.settings
    if target is not None and settings.registry is not None and settings.reload_interval_s > 0:
        # the next poll would put the registry's version back, each worker on its own clock
        raise RegistryError(
            f"this service follows its registry (every {settings.reload_interval_s:g} s, "
            "ABSA_RELOAD_INTERVAL_S; 0 turns that off): another model_dir would be undone at "
            "the next poll; add it to the registry and promote it instead (absa models promote)"
        )
    done = await request.app.state.reloader.reload(target, publish=True)
    version = done["version"]
    return ReloadResponse(
        changed=done["changed"],
        model_dir=done["model_dir"],
        version=None if version is None else str(version),
    )
