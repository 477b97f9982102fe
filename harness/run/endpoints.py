"""A run's endpoints: checked before the first case, watched during the run.

Before: every model's key variable is set, and every endpoint answers one free request
(`harness.llm.reach`), so a missing key, a wrong host or a closed port stops the run in seconds, before any
case, naming the variable or the URL. During: the breaker stops the run when one endpoint fails
`max_connection_failures` requests in a row with connection errors, instead of recording a connection error
for every remaining case. What finished stays in the run folder; `--resume` continues from there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness import RunStopped
from harness.llm.modes import public_url
from harness.llm.reach import unreachable
from harness.run.log import STORE_UNAVAILABLE, ResultRecord, VariantInfo, error_reason
from harness.run.providers import Endpoint, endpoint_of
from harness.run.study import Study
from harness.system.verifiers.factory import ModelSpecError


class EndpointError(ModelSpecError):
    """A model's endpoint cannot be used: no key, or no answer (exit 2, before the first case)."""


class EndpointDown(RunStopped):
    """The breaker tripped: an endpoint failed too many requests in a row with connection errors (exit 2)."""

    def __init__(self, url: str, failures: int, last: str) -> None:
        super().__init__(
            f"stopped: {public_url(url)} failed {failures} requests in a row with connection errors "
            f"(last: {last[:300]})"
        )
        self.url = url


class StoreDown(RunStopped):
    """The breaker tripped on the store: `STORE_FAILURES` cases in a row found it unreachable or unwritable (exit 2)."""

    def __init__(self, url: str, failures: int, last: str) -> None:
        super().__init__(f"stopped: {failures} cases in a row could not use the store ({last[:300]})")
        self.url = url


STORE_FAILURES = 3
"""Cases in a row the store may fail before the run stops: a blip costs a case or two (each redone by
`--resume`), a store that went down stops the run instead of failing every remaining case."""


def study_endpoints(study: Study) -> dict[str, Endpoint]:
    """Each model of the study that calls an endpoint -> that endpoint."""
    found: dict[str, Endpoint] = {}
    for model in study.models:
        endpoint = endpoint_of(model, study.model_settings.get(model))
        if endpoint is not None:
            found[model] = endpoint
    return found


def check_endpoints(study: Study, probe: Callable[[str], str | None] = unreachable) -> None:
    """Every model's key is set and every endpoint answers (`EndpointError` says which and why, else None)."""
    endpoints = study_endpoints(study)
    for model, endpoint in endpoints.items():
        if not os.environ.get(endpoint.key_env):
            raise EndpointError(
                f"{model} needs an API key in {endpoint.key_env}, which is not set (a local server that takes "
                f"no key accepts any value, e.g. {endpoint.key_env}=unused)"
            )
    for url in dict.fromkeys(e.url for e in endpoints.values()):
        reason = probe(url)
        if reason is not None:
            raise EndpointError(f"cannot reach {public_url(url)}: {reason}")


@dataclass
class Breaker:
    """Counts each endpoint's connection errors in a row (a result or any other error resets it)."""

    limits: dict[str, Endpoint]
    """Variant name -> its model's endpoint."""
    in_a_row: dict[str, int] = field(default_factory=dict)
    store: str | None = None
    """The run's shared store (None: a private in-memory one per worker, which cannot go down)."""
    store_in_a_row: int = 0

    @classmethod
    def for_run(cls, study: Study, variants: Sequence[VariantInfo]) -> Breaker | None:
        """The breaker of a run's variants and store; None when no variant calls an endpoint and the store is
        private."""
        endpoints = study_endpoints(study)
        limits = {v.name: endpoints[v.model] for v in variants if v.model in endpoints}
        return cls(limits, store=study.store) if limits or study.store else None

    def observe(self, record: ResultRecord) -> None:
        """Count `record`; raise `EndpointDown` when its endpoint reached its limit, `StoreDown` when the store
        failed `STORE_FAILURES` cases in a row."""
        if self.store is not None:
            failed = record.error is not None and error_reason(record.error) == STORE_UNAVAILABLE
            self.store_in_a_row = self.store_in_a_row + 1 if failed else 0
            if failed and self.store_in_a_row >= STORE_FAILURES:
                raise StoreDown(self.store, self.store_in_a_row, record.error or "")
        endpoint = self.limits.get(record.variant)
        if endpoint is None:
            return
        if record.error is None or error_reason(record.error) != "connection":
            self.in_a_row[endpoint.url] = 0
            return
        count = self.in_a_row.get(endpoint.url, 0) + 1
        self.in_a_row[endpoint.url] = count
        if count >= endpoint.max_connection_failures:
            raise EndpointDown(endpoint.url, count, record.error)
