"""``single``: k independent samples per problem (best-of-k; pass@k and fast_p@k estimated from
n >= k samples by :mod:`kbench_lib.reports.search_metrics`)."""
from __future__ import annotations

from .search import Request, Search


def run(search: Search, samples: int = 1) -> None:
    search.ask([Request("sample", 0, (), i) for i in range(samples)])
