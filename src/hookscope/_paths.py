"""Where a path really leads, and whether it stays inside a workspace.

One resolver (:func:`resolve_path`) serves both :func:`hookscope.policy.workspace_only` and
the ``paths`` of :class:`hookscope.matching.HookMatcher`, so a spelling that fools one
(``//etc/hosts``, ``/proc/self/root/etc/hosts``, ``../../etc/hosts``, a symlink into ``/etc``)
fools neither. A path is inside a root when, after the
operating system's view of it is reconstructed (``..`` and symlinks resolved), it equals the
root or lies below it by whole path components: ``/w/app2`` is not inside ``/w/app``.

A file tool may be asked to create a file, or a whole new directory chain, that does not exist
yet, so the path cannot simply be resolved strictly. Instead the longest *existing* prefix is
resolved strictly (the OS follows every symlink and ``..`` in it) and the part that does not
exist yet is appended as-is, provided it is made of plain names only: a ``..`` or a dangling
symlink in that part would be resolved differently once created, so it is rejected.

Cost is bounded: a path longer than the system's ``PATH_MAX`` (which no system call would
accept) or with a component longer than ``NAME_MAX`` is rejected before any disk access, and
the walk makes one ``lstat`` per component plus a ``realpath`` per symlink met, at most
:data:`MAX_SYMLINKS` of them (as the kernel allows), so a model-supplied path costs
microseconds to a few milliseconds, never seconds.

The check is a snapshot: a process that swaps a directory for a symlink between this check and
the tool's own ``open`` (a TOCTOU race) is out of its reach; sandbox the tool for that.
Rejection messages never quote the path: it is model-supplied and may carry secrets.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, final

from hookscope.types import HookscopeError

__all__ = [
    "MAX_SYMLINKS",
    "NAME_MAX",
    "PATH_MAX",
    "PathRejected",
    "WorkspaceGuard",
    "resolve_for_containment",
    "resolve_path",
]


def _limit(name: str, default: int) -> int:
    try:
        value = os.pathconf(os.sep, name)
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows) or no such limit
        return default
    return value if value > 0 else default


#: Bytes in the longest path the OS accepts, its terminating NUL included (4096 on Linux).
PATH_MAX: Final = _limit("PC_PATH_MAX", 4096)
#: Bytes in the longest single path component (255 on most file systems).
NAME_MAX: Final = _limit("PC_NAME_MAX", 255)
#: Symbolic links one path may go through; Linux's own limit (MAXSYMLINKS), beyond which the
#: kernel fails the lookup with ELOOP, so rejecting beyond it refuses nothing a tool could open.
MAX_SYMLINKS: Final = 40


class PathRejected(HookscopeError):
    """A path cannot be shown to stay inside the workspace; the message says why."""


def _check_text(value: object, base: str | None = None) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise PathRejected(f"is a {type(value).__name__}, not a path string")
    # Characters never outnumber bytes: a long string is rejected before it is encoded.
    if len(value) >= PATH_MAX:
        raise PathRejected(f"is longer than the system's PATH_MAX ({PATH_MAX - 1} bytes)")
    if "\x00" in value:
        raise PathRejected("contains a NUL byte")
    try:
        size = len(os.fsencode(value))
    except UnicodeError:
        raise PathRejected("cannot be encoded for the file system") from None
    if size >= PATH_MAX:
        raise PathRejected(f"is longer than the system's PATH_MAX ({PATH_MAX - 1} bytes)")
    if not value or not os.path.isabs(value):
        if base is None or not value:
            # The tool would resolve a relative path against its own working directory, which
            # this check cannot know; anchoring it anywhere else would check the wrong file.
            raise PathRejected("is not an absolute path")
        return _check_text(os.path.join(base, value))
    return value


def resolve_for_containment(value: object) -> str:
    """The real absolute path a file tool would touch for an absolute ``value``.

    :func:`resolve_path` without a base: a relative path is rejected.
    """
    return resolve_path(value)


def resolve_path(value: object, base: str | None = None) -> str:
    """Return the real absolute path a file tool would touch for ``value``.

    Args:
        value: The path as the tool was given it.
        base: The directory a relative ``value`` is taken from (an absolute path); a relative
            ``value`` is rejected when ``None``.

    The path is walked from the root, one component at a time, as the kernel does: ``.`` is
    skipped, ``..`` steps to the parent of the (already real) directory reached, a symlink is
    replaced by its resolved target, and the first missing component ends the walk (the rest
    must be plain names, the tail of something to be created).

    Raises:
        PathRejected: ``value`` is not a string path, contains a NUL byte, is relative, is
            longer than ``PATH_MAX``, has a component longer than ``NAME_MAX``, goes through
            more than :data:`MAX_SYMLINKS` symbolic links, or cannot be
            resolved (a symlink loop, a dangling symlink, a non-directory in the middle, a
            ``..`` below a directory that does not exist yet, no permission).
    """
    parts = _check_text(value, base).split(os.sep)
    current = os.sep  # real and existing at every step
    is_dir = True
    links = 0
    for index, part in enumerate(parts):
        if part == "":
            continue
        if not is_dir:
            raise PathRejected("goes through something that is not a directory")
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        # ASCII is one byte a character: encode only what may be longer than it looks.
        if len(part) > NAME_MAX or (not part.isascii() and len(os.fsencode(part)) > NAME_MAX):
            raise PathRejected(f"has a component longer than NAME_MAX ({NAME_MAX} bytes)")
        candidate = current + part if current == os.sep else current + os.sep + part
        try:
            mode = os.lstat(candidate).st_mode
        except FileNotFoundError:
            return _missing_tail(candidate, parts[index + 1 :])
        except OSError as error:  # ENOTDIR, EACCES, ENAMETOOLONG, ...
            raise PathRejected(f"cannot be resolved ({error.strerror or error})") from None
        if stat.S_ISLNK(mode):
            links += 1
            if links > MAX_SYMLINKS:
                raise PathRejected(f"goes through more than {MAX_SYMLINKS} symbolic links")
            try:
                current = os.path.realpath(candidate, strict=True)
                mode = os.stat(current).st_mode
            except FileNotFoundError:
                raise PathRejected("goes through a dangling symlink") from None
            except OSError as error:  # ELOOP, EACCES, ...
                raise PathRejected(f"cannot be resolved ({error.strerror or error})") from None
        else:
            current = candidate
        is_dir = stat.S_ISDIR(mode)
    return current


def _missing_tail(head: str, rest: Sequence[str]) -> str:
    """``head`` (missing) joined with ``rest``, which must be plain names to be created."""
    names = [part for part in rest if part != ""]
    for name in names:
        if name in (".", ".."):
            # Once created, the missing part could be anything the ".." would climb out of.
            raise PathRejected("uses '.' or '..' below a directory that does not exist yet")
        if len(os.fsencode(name)) > NAME_MAX:
            raise PathRejected(f"has a component longer than NAME_MAX ({NAME_MAX} bytes)")
    return os.path.join(head, *names) if names else head


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
            try:
                real = resolve_for_containment(args[key])
            except PathRejected as rejected:
                return f"path argument {key} {rejected}"
            if real not in self.roots and not real.startswith(self._prefixes):
                return (
                    f"path argument {key} resolves outside the workspace ({', '.join(self.roots)})"
                )
        if not found:
            return f"no path argument ({', '.join(self.path_args)}) to check against the workspace"
        return None

    def __call__(self, args: Mapping[str, Any]) -> bool:
        return self.violation(args) is not None

    def __repr__(self) -> str:
        return f"WorkspaceGuard(roots={self.roots!r}, path_args={self.path_args!r})"
