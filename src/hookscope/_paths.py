"""Workspace containment for file tools: does a path a tool will touch stay inside a root?

Used by :func:`hookscope.policy.workspace_only`. A path is inside a root when, after the
operating system's view of it is reconstructed (``..`` and symlinks resolved), it equals the
root or lies below it by whole path components: ``/w/app2`` is not inside ``/w/app``.

A file tool may be asked to create a file, or a whole new directory chain, that does not exist
yet, so the path cannot simply be resolved strictly. Instead the longest *existing* prefix is
resolved strictly (the OS follows every symlink and ``..`` in it) and the part that does not
exist yet is appended as-is, provided it is made of plain names only: a ``..`` or a dangling
symlink in that part would be resolved differently once created, so it is rejected.

The check is a snapshot: a process that swaps a directory for a symlink between this check and
the tool's own ``open`` (a TOCTOU race) is out of its reach; sandbox the tool for that.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, final

__all__ = ["PathRejected", "WorkspaceGuard", "resolve_for_containment"]


class PathRejected(Exception):
    """A path cannot be shown to stay inside the workspace; the message says why."""


def resolve_for_containment(value: object) -> str:
    """Return the real absolute path a file tool would touch for ``value``.

    Raises:
        PathRejected: ``value`` is not a string path, contains a NUL byte, is relative, or
            cannot be resolved (a symlink loop, a dangling symlink, a non-directory in the
            middle, a ``..`` below a directory that does not exist yet, no permission).
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise PathRejected(f"is a {type(value).__name__}, not a path string")
    if "\x00" in value:
        raise PathRejected("contains a NUL byte")
    if not value or not os.path.isabs(value):
        # The tool would resolve a relative path against its own working directory, which
        # this check cannot know; anchoring it anywhere else would check the wrong file.
        raise PathRejected("is not an absolute path")
    head = value.rstrip(os.sep) or os.sep
    missing: list[str] = []
    while True:
        try:
            real = os.path.realpath(head, strict=True)
            break
        except FileNotFoundError:
            if os.path.lexists(head):
                raise PathRejected(f"goes through a dangling symlink ({head})") from None
            head, name = os.path.split(head)
            if name in ("", ".", ".."):
                raise PathRejected(
                    "uses '.' or '..' below a directory that does not exist yet"
                ) from None
            missing.append(name)
        except OSError as error:  # ELOOP, ENOTDIR, EACCES, ENAMETOOLONG, ...
            raise PathRejected(f"cannot be resolved ({error.strerror or error})") from None
    return os.path.join(real, *reversed(missing)) if missing else real


@final
class WorkspaceGuard:
    """A ``when`` predicate that holds when a file tool's path leaves the workspace.

    Used as the condition of ``workspace_only``'s deny rules: ``True`` means deny.

    Args:
        roots: Absolute workspace directories; resolved once, here.
        path_args: Argument names that carry the path a tool touches.
    """

    __slots__ = ("_prefixes", "path_args", "roots")

    def __init__(self, roots: Iterable[str | os.PathLike[str]], path_args: Sequence[str]) -> None:
        resolved: list[str] = []
        for root in roots:
            text = os.fspath(root)
            if not isinstance(text, str) or "\x00" in text or not os.path.isabs(text):
                raise ValueError(
                    f"workspace_only() needs absolute directory paths, got {root!r}; "
                    "pass e.g. Path(root).resolve()"
                )
            resolved.append(os.path.realpath(text))
        if not resolved:
            raise ValueError("workspace_only() needs at least one workspace directory")
        if (
            isinstance(path_args, str)
            or not path_args
            or not all(isinstance(arg, str) and arg for arg in path_args)
        ):
            raise ValueError(
                f"workspace_only(path_args=...) takes a non-empty list of argument names, "
                f"got {path_args!r}"
            )
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(resolved))
        self.path_args: tuple[str, ...] = tuple(path_args)
        # A trailing separator makes the prefix test compare whole components.
        self._prefixes = tuple(r if r.endswith(os.sep) else r + os.sep for r in self.roots)

    def violation(self, args: Mapping[str, Any]) -> str | None:
        """Why the call must be denied, or ``None`` when every path it names is inside."""
        found = False
        for key in self.path_args:
            if key not in args:
                continue
            found = True
            value = args[key]
            try:
                real = resolve_for_containment(value)
            except PathRejected as rejected:
                return f"path argument {key}={value!r} {rejected}"
            if real not in self.roots and not real.startswith(self._prefixes):
                return (
                    f"path argument {key}={value!r} resolves to {real!r}, outside the "
                    f"workspace ({', '.join(self.roots)})"
                )
        if not found:
            return f"no path argument ({', '.join(self.path_args)}) to check against the workspace"
        return None

    def __call__(self, args: Mapping[str, Any]) -> bool:
        return self.violation(args) is not None

    def __repr__(self) -> str:
        return f"WorkspaceGuard(roots={self.roots!r}, path_args={self.path_args!r})"
