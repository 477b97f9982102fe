"""Adapters that turn external, third-party data sets into cases of the CASE_FORMAT contract."""

from __future__ import annotations

from typing import Any

from harness.corpus.adapters.base import Adapter, RecordError
from harness.corpus.adapters.halueval import HaluEvalQA

ADAPTERS: dict[str, Adapter[Any]] = {a.name: a for a in (HaluEvalQA(),)}

__all__ = ["ADAPTERS", "Adapter", "RecordError"]
