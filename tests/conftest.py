"""Shared fixtures: the shipped catalog, paths, and a tiny catalog of round numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizer.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = sorted((ROOT / "workloads").glob("*.yaml"))


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(ROOT / "catalogs")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
