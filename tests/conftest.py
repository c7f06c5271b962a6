"""Shared fixtures: the shipped catalog, paths, and a tiny catalog of round numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizer.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = sorted((ROOT / "workloads").glob("*.yaml"))


@pytest.fixture(scope="session", autouse=True)
def _residual_cache(tmp_path_factory):
    """Residuals computed for catalogs other than the shipped one (sizer/evidence.py) are cached
    in a directory of the session's, not the user's ~/.cache (subprocesses inherit it)."""
    import os

    before = os.environ.get("SIZER_CACHE_DIR")
    os.environ["SIZER_CACHE_DIR"] = str(tmp_path_factory.mktemp("sizer-cache"))
    yield
    if before is None:
        os.environ.pop("SIZER_CACHE_DIR", None)
    else:
        os.environ["SIZER_CACHE_DIR"] = before


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(ROOT / "catalogs")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
