"""What ``configure()`` reads: arguments and ``OTEL_*`` / ``HOOKSCOPE_*`` variables, validated.

Everything is checked here, before ``configure()`` builds anything, so a bad value is one
:class:`TelemetryConfigError` that names the setting and the fix, and never leaves a
half-built pipeline (an export thread) behind.

Per signal (traces, metrics, logs), as the OpenTelemetry SDK's own auto-configuration reads
them:

* ``OTEL_<SIGNAL>_EXPORTER``: a comma-separated list of ``otlp``, ``console``, ``files``
  (hookscope's embedded default), ``prometheus`` (metrics only: a scrape endpoint on
  ``OTEL_EXPORTER_PROMETHEUS_HOST``:``_PORT``, default ``localhost:9464``; the
  ``hookscope[prometheus]`` extra) or ``none``. Unset: ``otlp`` when an endpoint is configured
  for the signal, else ``files``.
* ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]PROTOCOL``: ``http/protobuf`` (default), ``http/json`` or
  ``grpc``.
* ``OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`` (a full URL, used as is), else
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL: ``/v1/<signal>`` is added for HTTP), else
  ``http://localhost:4318`` (HTTP) or ``http://localhost:4317`` (gRPC).
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from typing import Final, get_args
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_PROTOCOL,
)

from hookscope.redaction import mask_url
from hookscope.telemetry._endpoint import Signal
from hookscope.telemetry._exporters import OtlpProtocol
from hookscope.telemetry.files import DEFAULT_KEEP_FILES, DEFAULT_MAX_FILE_BYTES
from hookscope.types import HookscopeError

__all__ = [
    "DEFAULT_METRIC_CARDINALITY_LIMIT",
    "EXPORTER_NAMES",
    "SIGNALS",
    "FileLimits",
    "Route",
    "TelemetryConfigError",
    "cardinality_limit",
    "check_batch_variables",
    "file_limits",
    "prometheus_address",
    "routes",
    "sdk_disabled",
]

SIGNALS: Final[tuple[Signal, ...]] = ("traces", "metrics", "logs")
EXPORTER_NAMES: Final = ("otlp", "console", "files", "prometheus", "none")
#: Distinct attribute sets per metric stream; more go to one ``otel.metric.overflow=true``
#: point (the SDK's own default, made explicit and adjustable).
DEFAULT_METRIC_CARDINALITY_LIMIT: Final = 2000
#: The smallest file cap accepted: below it every batch would rotate a file.
MIN_FILE_BYTES: Final = 4096

MAX_FILE_BYTES_ENV: Final = "HOOKSCOPE_MAX_FILE_BYTES"
KEEP_FILES_ENV: Final = "HOOKSCOPE_KEEP_FILES"
CARDINALITY_ENV: Final = "HOOKSCOPE_METRIC_CARDINALITY_LIMIT"

_PROTOCOLS: Final[tuple[OtlpProtocol, ...]] = get_args(OtlpProtocol)
_HTTP_PATHS: Final = {"traces": "/v1/traces", "metrics": "/v1/metrics", "logs": "/v1/logs"}
_DEFAULT_BASES: Final = {"grpc": "http://localhost:4317", "http": "http://localhost:4318"}
# The SDK reads these when a processor or reader is built, and raises a bare ValueError (or
# logs a traceback and falls back) on a bad one; checked first instead.
_BATCH_VARIABLES: Final = (
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_BSP_EXPORT_TIMEOUT",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_BLRP_SCHEDULE_DELAY",
    "OTEL_BLRP_EXPORT_TIMEOUT",
    "OTEL_BLRP_MAX_QUEUE_SIZE",
    "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_METRIC_EXPORT_TIMEOUT",
)


class TelemetryConfigError(HookscopeError, ValueError):
    """``configure()`` was given (or found in the environment) settings it cannot use."""


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def sdk_disabled() -> tuple[bool, str | None]:
    """Whether ``OTEL_SDK_DISABLED`` is ``true``, and a warning for a value that is not boolean.

    The OpenTelemetry specification: anything but ``true`` is false (with a warning).
    """
    raw = (_env("OTEL_SDK_DISABLED") or "").lower()
    warning = None
    if raw not in ("", "true", "false"):
        warning = f"OTEL_SDK_DISABLED={raw!r} is not 'true' or 'false'; telemetry stays enabled"
    return raw == "true", warning


def _positive_int(name: str, raw: object, minimum: int = 1) -> int:
    if isinstance(raw, str) and name.isupper():  # a variable's text; arguments must be ints
        with contextlib.suppress(ValueError):
            raw = int(raw.strip().replace("_", ""))
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
        raise TelemetryConfigError(f"{name} must be an integer >= {minimum}, got {raw!r}")
    return raw


def check_batch_variables() -> None:
    """Refuse a batch-processor or metric-reader variable the SDK could not use."""
    for name in _BATCH_VARIABLES:
        raw = _env(name)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0) or (
            name.endswith(("QUEUE_SIZE", "BATCH_SIZE")) and not raw.isdigit()
        ):
            raise TelemetryConfigError(
                f"{name}={raw!r} must be a positive number; fix it or unset it for the default"
            )
    for prefix in ("OTEL_BSP", "OTEL_BLRP"):
        queue, batch = _env(f"{prefix}_MAX_QUEUE_SIZE"), _env(f"{prefix}_MAX_EXPORT_BATCH_SIZE")
        if queue and batch and int(batch) > int(queue):
            raise TelemetryConfigError(
                f"{prefix}_MAX_EXPORT_BATCH_SIZE={batch} is larger than "
                f"{prefix}_MAX_QUEUE_SIZE={queue}; make the batch at most the queue's size"
            )


@dataclass(frozen=True, slots=True)
class FileLimits:
    """The embedded default's bounds: rotate at ``max_file_bytes``, keep ``keep_files``."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    keep_files: int = DEFAULT_KEEP_FILES


def file_limits(max_file_bytes: int | None, keep_files: int | None) -> FileLimits:
    """The file bounds from the arguments, else ``HOOKSCOPE_MAX_FILE_BYTES`` / ``_KEEP_FILES``."""
    size: object = max_file_bytes
    size_name = "max_file_bytes"
    if size is None and _env(MAX_FILE_BYTES_ENV) is not None:
        size, size_name = _env(MAX_FILE_BYTES_ENV), MAX_FILE_BYTES_ENV
    keep: object = keep_files
    keep_name = "keep_files"
    if keep is None and _env(KEEP_FILES_ENV) is not None:
        keep, keep_name = _env(KEEP_FILES_ENV), KEEP_FILES_ENV
    return FileLimits(
        DEFAULT_MAX_FILE_BYTES if size is None else _positive_int(size_name, size, MIN_FILE_BYTES),
        DEFAULT_KEEP_FILES if keep is None else _positive_int(keep_name, keep, 0),
    )


def cardinality_limit(given: int | None) -> int:
    """The metric cardinality limit from the argument, else the variable, else the default."""
    if given is not None:
        return _positive_int("metric_cardinality_limit", given)
    raw = _env(CARDINALITY_ENV)
    if raw is None:
        return DEFAULT_METRIC_CARDINALITY_LIMIT
    return _positive_int(CARDINALITY_ENV, raw)


def prometheus_address() -> tuple[str, int]:
    """Where ``OTEL_METRICS_EXPORTER=prometheus`` serves: ``OTEL_EXPORTER_PROMETHEUS_HOST``
    (default ``localhost``) and ``_PORT`` (default 9464), as the SDK reads them."""
    host = _env("OTEL_EXPORTER_PROMETHEUS_HOST") or "localhost"
    raw = _env("OTEL_EXPORTER_PROMETHEUS_PORT") or "9464"
    port = int(raw) if raw.isdigit() else 0
    if not 1 <= port <= 65535:
        raise TelemetryConfigError(
            f"OTEL_EXPORTER_PROMETHEUS_PORT={raw!r} is not a port; give a number from 1 to 65535"
        )
    return host, port


@dataclass(frozen=True, slots=True)
class Route:
    """One exporter of one signal: ``kind`` is an :data:`EXPORTER_NAMES` entry but ``none``.

    ``url`` and ``protocol`` are set for ``otlp`` (``url`` the full signal URL).
    """

    signal: Signal
    kind: str
    protocol: OtlpProtocol = "http/protobuf"
    url: str | None = None


def _protocol(signal: Signal, given: str | None) -> OtlpProtocol:
    source, raw = "protocol", given
    if raw is None:
        for name in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", OTEL_EXPORTER_OTLP_PROTOCOL):
            if _env(name):
                source, raw = name, os.environ[name]
                break
        else:
            return "http/protobuf"
    value = raw.strip().lower()
    for protocol in _PROTOCOLS:
        if value == protocol:
            return protocol
    raise TelemetryConfigError(
        f"{source}={raw!r} is not supported; use 'http/protobuf' (the default), 'http/json' "
        "or 'grpc'"
    )


def _endpoint(signal: Signal, given: str | None) -> tuple[str, str, bool] | None:
    """(source, url, is_base) of the configured endpoint, or None when none is set."""
    if given is not None:
        return "endpoint", given.strip(), True
    signal_variable = f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
    if _env(signal_variable):
        return signal_variable, os.environ[signal_variable].strip(), False
    if _env(OTEL_EXPORTER_OTLP_ENDPOINT):
        return OTEL_EXPORTER_OTLP_ENDPOINT, os.environ[OTEL_EXPORTER_OTLP_ENDPOINT].strip(), True
    return None


def _checked_url(url: str, source: str, protocol: OtlpProtocol, base: bool) -> str:
    shown = mask_url(url)
    if not url:
        raise TelemetryConfigError(f"{source} is empty; give a URL or leave it unset")
    parsed = urlsplit(url if "://" in url or protocol != "grpc" else f"//{url}")
    if protocol != "grpc" and (parsed.scheme not in ("http", "https") or not parsed.netloc):
        raise TelemetryConfigError(
            f"{source}={shown!r} is not an http(s) URL; give one such as http://localhost:4318"
        )
    try:
        parsed.port  # noqa: B018 - urllib checks the port only when asked
    except ValueError:
        raise TelemetryConfigError(
            f"{source}={shown!r} has an invalid port; give a number from 1 to 65535"
        ) from None
    if (
        protocol != "grpc"
        and base
        and parsed.path.rstrip("/").endswith(tuple(_HTTP_PATHS.values()))
    ):
        raise TelemetryConfigError(
            f"{source}={shown!r} names a signal path; give the base URL "
            f"(e.g. {parsed.scheme}://{parsed.netloc.rpartition('@')[2]}): hookscope adds "
            "/v1/traces, /v1/metrics and /v1/logs"
        )
    return url


def _exporter_names(signal: Signal, endpoint_set: bool) -> tuple[str, ...]:
    variable = f"OTEL_{signal.upper()}_EXPORTER"
    raw = _env(variable)
    if raw is None:
        return ("otlp",) if endpoint_set else ("files",)
    names = tuple(dict.fromkeys(part.strip().lower() for part in raw.split(",") if part.strip()))
    unknown = [name for name in names if name not in EXPORTER_NAMES]
    if unknown or not names:
        raise TelemetryConfigError(
            f"{variable}={raw!r}: {', '.join(map(repr, unknown)) or 'nothing'} is not an "
            f"exporter hookscope builds; use a comma-separated list of "
            f"{', '.join(EXPORTER_NAMES)}"
        )
    if "none" in names and len(names) > 1:
        raise TelemetryConfigError(f"{variable}={raw!r}: 'none' cannot be combined with others")
    if "prometheus" in names and signal != "metrics":
        raise TelemetryConfigError(
            f"{variable}={raw!r}: 'prometheus' serves metrics only; use it in OTEL_METRICS_EXPORTER"
        )
    return () if names == ("none",) else names


def routes(signal: Signal, endpoint: str | None, protocol: str | None) -> tuple[Route, ...]:
    """Every exporter ``signal`` goes to (empty for ``none``), validated."""
    found = _endpoint(signal, endpoint)
    names = _exporter_names(signal, found is not None)
    chosen = _protocol(signal, protocol)  # checked even when unused: a typo is still an error
    result = []
    for name in names:
        if name != "otlp":
            result.append(Route(signal, name))
            continue
        if found is None:
            source, base = "default", True
            url = _DEFAULT_BASES["grpc" if chosen == "grpc" else "http"]
        else:
            source, url, base = found
            url = _checked_url(url, source, chosen, base)
        if chosen != "grpc" and base:  # a base URL: the signal's path goes after it
            parts = urlsplit(url)
            url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + _HTTP_PATHS[signal]))
        result.append(Route(signal, "otlp", chosen, url))
    return tuple(result)
