"""Export destinations: how they are named in messages, and the probe that checks one is up.

A :class:`Target` is where one signal goes, as log messages show it: credentials in an
endpoint URL (``https://user:secret@host``, ``?api_key=…``) never reach a log line, an error
message or ``repr(Telemetry)`` (:func:`hookscope.redaction.mask_url`).

The probe: before the first export to an OTLP endpoint, and after a failure, a TCP connect to
its host and port (at most :data:`PROBE_TIMEOUT_S`) must succeed before a batch is encoded
(see :mod:`hookscope.telemetry._guard`).
"""

from __future__ import annotations

import socket
import urllib.request
import weakref
from dataclasses import dataclass
from typing import Any, Final, Literal, final
from urllib.parse import urlsplit

from hookscope.redaction import mask_url
from hookscope.types import HookscopeError

__all__ = [
    "PROBE_TIMEOUT_S",
    "Signal",
    "Target",
    "probe",
    "probe_address",
]

Signal = Literal["traces", "metrics", "logs"]

#: A loopback or LAN connect answers in well under a millisecond; a remote one in tens.
PROBE_TIMEOUT_S: Final = 0.2

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Target:
    """Where one signal is exported, as log messages name it, and what to check if it fails.

    ``address`` is the TCP host and port probed before encoding for a destination not yet
    known to work (see :func:`probe_address`); None skips the probe (files, the console,
    non-TCP endpoints).
    """

    signal: Signal
    text: str
    hint: str
    address: tuple[str, int] | None = None

    @classmethod
    def file(cls, signal: Signal, path: str) -> Target:
        """A file the embedded default writes."""
        return cls(signal, path, "Check the disk: free space and permissions")

    @classmethod
    def console(cls, signal: Signal) -> Target:
        """Standard output (``OTEL_<SIGNAL>_EXPORTER=console``)."""
        return cls(signal, "the console", "Check that standard output can be written")

    @classmethod
    def otlp(cls, signal: Signal, url: str, protocol: str) -> Target:
        """An OTLP endpoint; probed when :func:`probe_address` finds a TCP address for it."""
        return cls(
            signal,
            f"{mask_url(url)} (OTLP {protocol})",
            "Check that the endpoint is up and reachable (OTEL_EXPORTER_OTLP_ENDPOINT)",
            probe_address(url, protocol),
        )


def probe_address(url: str, protocol: str) -> tuple[str, int] | None:
    """The host and port a TCP connect can check before exporting to ``url``, if any.

    Args:
        url: The OTLP endpoint: an http(s) URL, or for gRPC also ``host:port``.
        protocol: ``"http/protobuf"``, ``"http/json"`` or ``"grpc"``.

    Returns:
        None where a direct connect would not test what the exporter does: a non-TCP gRPC
        target (``unix:``, ``dns:``), a gRPC target without a port, or a destination reached
        through a proxy from the environment (the exporter connects to the proxy instead).
    """
    if protocol == "grpc":
        parsed = urlsplit(url if "://" in url else f"//{url}")
        if parsed.scheme not in ("", "http", "https"):
            return None
        schemes: tuple[str, ...] = ("grpc", "https", "http")  # grpc reads grpc_proxy first
    else:
        parsed = urlsplit(url)
        schemes = (parsed.scheme,)
    try:
        port = parsed.port
    except ValueError:  # configure() rejects these before building anything
        return None
    if port is None and protocol != "grpc":
        port = _DEFAULT_PORTS.get(parsed.scheme)
    host = parsed.hostname
    if not host or port is None:
        return None
    proxies = urllib.request.getproxies()
    if any(proxies.get(scheme) for scheme in schemes) and not urllib.request.proxy_bypass(host):
        return None
    return host, port


def probe(address: tuple[str, int], timeout_s: float = PROBE_TIMEOUT_S) -> OSError | None:
    """Connect to ``address`` and hang up; the error when nothing accepted the connection."""
    # The timeout does not bound the name lookup; like the exporter's own, it runs in the
    # export thread, not the agent's.
    try:
        socket.create_connection(address, timeout=timeout_s).close()
    except OSError as error:  # refused, timed out, no route, unknown host
        return error
    return None


#: Answers of an endpoint that is up but has no route for a signal: Not Found, Method Not
#: Allowed, Not Implemented (Phoenix answers 405 on /v1/metrics, Jaeger 404).
NO_SIGNAL_STATUSES: Final = frozenset({404, 405, 501})


@final
class HttpStatus:
    """The HTTP status of an OTLP/HTTP exporter's latest response (``None`` before one).

    A ``requests`` response hook (:meth:`record`) for the protobuf exporters' session, and
    written directly by hookscope's OTLP/JSON poster.
    """

    __slots__ = ("__weakref__", "code")

    def __init__(self) -> None:
        self.code: int | None = None

    def record(self, response: Any, *args: Any, **kwargs: Any) -> None:
        self.code = int(response.status_code)


#: The status holder of each OTLP/HTTP exporter configure() built.
_STATUSES: weakref.WeakKeyDictionary[object, HttpStatus] = weakref.WeakKeyDictionary()


def watch_status(exporter: object, status: HttpStatus) -> None:
    """Remember that ``status`` holds ``exporter``'s latest HTTP status."""
    _STATUSES[exporter] = status


def status_of(exporter: object) -> HttpStatus | None:
    """The holder of ``exporter``'s latest HTTP status, if it is an OTLP/HTTP exporter."""
    return _STATUSES.get(exporter)


class EndpointRefused(HookscopeError):
    """An OTLP/HTTP endpoint answered a batch with an error status."""

    def __init__(self, code: int) -> None:
        super().__init__(f"HTTP {code}")
        self.code = code

    @property
    def takes_no_signal(self) -> bool:
        """The endpoint is up but has no route for this signal."""
        return self.code in NO_SIGNAL_STATUSES
