"""The paths the layers in front of the router treat apart, and the path as the router
matches it (``route_path``)."""

from __future__ import annotations

from starlette.types import Scope

JSON_PATHS = frozenset({"/v1/predict", "/v1/predict/batch"})
#: the API's routes: the requests that take a slot, or are shed while none is free (another
#: /v1/ path is the router's 404 or redirect, no work: shed, it was a 503 the alerts'
#: arithmetic subtracted from the API routes' 5xx without its being among them)
API_PATHS = JSON_PATHS | {"/v1/model"}
ADMIN_RELOAD = "/admin/reload"  # its body (optional) is JSON too
#: the web page's files, a mount: the router sets no route for what a mount serves
STATIC_PATH = "/static"
#: the API's paths, which ApiGate may answer before the router sees them (a 401 on any)
GATED_PATHS = API_PATHS | {ADMIN_RELOAD}
OPENAPI_PATH = "/openapi.json"


def route_path(scope: Scope) -> str:
    """The path the router matches: ``scope["path"]`` less the ``root_path`` a server puts in
    front of it (uvicorn --root-path /absa gives "/absa/v1/predict"), as Starlette's router
    strips it; the layers in front of the router must see the same path, or a prefix would
    take a request past them."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :] or "/"
    return path
