"""``GET /metrics``: Prometheus text format, through ``prometheus-client``.

Two kinds of figures:

- the platform's, read from the database at scrape time (so every API process and every restart agrees): queue
  depth per device, jobs by device and status, live workers, job wait and run time histograms;
- this API's own: request counts and latencies by route, open event streams. With several uvicorn workers each
  process counts its own; ``kernelcup serve --workers N`` sets ``PROMETHEUS_MULTIPROC_DIR`` so that a scrape of any
  worker sums them all (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leaderboards.results import JobStatus
from leaderboards.service import LeaderboardService
from leaderboards.stats import Distribution

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""The method label's values; any other method a client makes up is counted as ``other`` (each value is a series
kept for the process's life, so labels never come from what a client chose)."""


class PlatformCollector(Collector):
    """Queue, workers and job times from the database, at each scrape (blocking: the route runs in a thread)."""

    def __init__(self, service: LeaderboardService) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        stats = self.service.queue_stats()
        depth = GaugeMetricFamily("kernelcup_queue_depth", "Jobs waiting to be claimed, per device.", labels=["device"])
        by_status = GaugeMetricFamily("kernelcup_jobs", "Jobs per device and status.", labels=["device", "status"])
        for device, counts in sorted(stats.jobs.items()):
            depth.add_metric([device], counts.get(JobStatus.QUEUED.value, 0))
            for status in JobStatus:
                by_status.add_metric([device, status.value], counts.get(status.value, 0))
        yield depth
        yield by_status
        workers = GaugeMetricFamily("kernelcup_workers_alive", "Workers that heartbeated within a minute.")
        workers.add_metric([], len(stats.workers))
        yield workers
        oldest = GaugeMetricFamily("kernelcup_oldest_queued_job_age_seconds", "Age of the oldest queued job.")
        age = 0.0
        if stats.oldest_queued_at is not None:
            age = max(0.0, (self.service.clock() - stats.oldest_queued_at).total_seconds())
        oldest.add_metric([], age)
        yield oldest
        times = self.service.job_times()
        yield _histogram("kernelcup_job_wait_seconds", "From submission to the job's first claim.", times.wait)
        yield _histogram("kernelcup_job_run_seconds", "From a job's first claim to its end.", times.run)


def _histogram(name: str, doc: str, by_device: dict[str, Distribution]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=["device"])
    for device, d in sorted(by_device.items()):
        buckets = [(_le(b), float(c)) for b, c in zip(d.buckets, d.counts, strict=True)]
        buckets.append(("+Inf", float(d.count)))
        family.add_metric([device], buckets, d.total)
    return family


def _le(bound: float) -> str:
    return f"{bound:g}" if bound != int(bound) else f"{bound:.1f}"


class ApiMetrics:
    """This process's request counters and latency histograms, and the scrape that joins them with the
    platform's figures."""

    def __init__(self, service: LeaderboardService) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None
        self.requests = Counter(
            "kernelcup_api_requests",
            "API requests by method, route and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kernelcup_api_request_seconds",
            "API request latency by method and route (until the response has been sent).",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.streams = Gauge(
            "kernelcup_api_event_streams",
            "Open Server-Sent Events streams.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.platform = PlatformCollector(service)
        self.sse_open = 0
        """Open event streams of this process (the gauge's value, readable in tests)."""

    def stream_opened(self) -> None:
        self.sse_open += 1
        self.streams.inc()

    def stream_closed(self) -> None:
        self.sse_open -= 1
        self.streams.dec()

    def scrape(self) -> tuple[bytes, str]:
        if self.multiprocess_dir:
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)
        else:
            registry = CollectorRegistry()
            registry.register(_Forward(self.registry))
        registry.register(self.platform)
        return generate_latest(registry), CONTENT_TYPE_LATEST


class _Forward(Collector):
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        yield from self.registry.collect()


class MetricsMiddleware:
    """Counts every HTTP request by method, route template (never the raw path: ids would explode the series)
    and status, and observes its latency."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def tracking_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        finally:
            route = getattr(scope.get("route"), "path", None) or scope.get("kernelcup.route") or "unmatched"
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - start)
