"""Bulk scoring of tables: Parquet files in one process (``files``), and many files on a Ray
cluster (``ray_engine``). Both score through ``columns.score_table``, so a row gets the same
prediction columns whichever engine scored it.

    from absa.bulk import score_with_ray

    score_with_ray("reviews/*.parquet", "scored/", workers=8)  # RAY_ADDRESS: join a cluster

pyarrow comes with the ``parquet`` extra, Ray with the ``ray`` extra; neither is needed to
serve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["BulkStats", "score_with_ray"]

if TYPE_CHECKING:
    from absa.bulk.ray_engine import BulkStats, score_with_ray


def __getattr__(name: str) -> Any:  # imported on first use: ray loads slowly
    if name in __all__:
        from absa.bulk import ray_engine

        return getattr(ray_engine, name)
    raise AttributeError(name)
