"""How the policy compares tool and server names.

Private; used by :mod:`hookscope.policy`. Two comparisons exist:

* :func:`fold_server` — always applied to MCP server names, in rules, in ``mcp_servers`` and in
  calls: surrounding whitespace stripped, case folded (``str.casefold``). ``" GitHub"`` and
  ``"github"`` are one server.
* :func:`skeleton` — applied to tool and server names for deny and ask_user rules when the
  enforcer is built with ``normalize=True``. Two names with the same skeleton look alike to a
  reader, so a call whose name merely *looks* like a denied tool is denied too. Steps:

  1. Unicode NFKC (fullwidth letters and solidus, ligatures, mathematical alphanumerics);
  2. invisible characters removed (categories Cf and Cc: zero-width space and joiners, the
     BOM, soft hyphens, bidirectional controls, NUL and other control characters);
  3. capital Cyrillic and Greek letters that look like Latin capitals mapped to them;
  4. case folding;
  5. accents and other combining marks dropped (canonical decomposition, category Mn removed);
  6. lower-case look-alikes mapped by :data:`CONFUSABLES` (Cyrillic a, Greek omicron, digit
     ``0`` → ``o``, ``1`` → ``l``, dashes → ``-``, slashes → ``/``; ``rn`` → ``m``, ``vv`` →
     ``w``);
  7. surrounding whitespace stripped.

  The table is deliberately small and written down here: no confusables package is
  available to this project's package index, and a skeleton only has to be stricter, never
  looser — two names that collide by mistake are both denied, which is the safe direction.
  Skeletons are never shown to users (they mix scripts by design).
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Final

__all__ = ["CONFUSABLES", "fold_server", "skeleton"]

# Capitals checked before case folding: once folded, Greek capital eta (looks like H)
# and small eta (looks like n) would be indistinguishable. Cyrillic and Greek.
_CAPITALS: Final = str.maketrans(
    {
        ch: latin
        for chars, latin in (
            ("\u0410\u0391", "A"),
            ("\u0412\u0392", "B"),
            ("\u0421", "C"),
            ("\u0415\u0395", "E"),
            ("\u041d\u0397", "H"),
            ("\u0406\u0399", "I"),
            ("\u0408", "J"),
            ("\u041a\u039a", "K"),
            ("\u041c\u039c", "M"),
            ("\u039d", "N"),
            ("\u041e\u039f", "O"),
            ("\u0420\u03a1", "P"),
            ("\u051a", "Q"),
            ("\u0405", "S"),
            ("\u0422\u03a4", "T"),
            ("\u051c", "W"),
            ("\u0425\u03a7", "X"),
            ("\u0423\u04ae\u03a5", "Y"),
            ("\u0396", "Z"),
            ("\u04c0", "l"),
        )
        for ch in chars
    }
)

#: Lower-case look-alikes (after NFKC and case folding) and what they read as: Cyrillic,
#: Greek and Latin variants, digits, dashes, slashes.
CONFUSABLES: Final[dict[str, str]] = {
    ch: latin
    for chars, latin in (
        ("\u201a", ","),
        ("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58", "-"),
        ("\u02d9\u00b7\u0660", "."),
        ("\u2215\u2044\u29f8\u2571\u27cb", "/"),
        ("\u0430\u03b1\u0251", "a"),
        ("\u0432\u044c\u03b2", "b"),
        ("\u0441", "c"),
        ("\u0501", "d"),
        ("\u0435\u0451\u03b5", "e"),
        ("\u0261", "g"),
        ("\u04bb\u043d", "h"),
        ("\u0456\u0457\u03b9\u0131\u0269", "i"),
        ("\u0458", "j"),
        ("\u043a\u03ba", "k"),
        ("\u04cf\u01c0|1", "l"),
        ("\u043c", "m"),
        ("\u03b7", "n"),
        ("\u043e\u03bf0", "o"),
        ("\u0440\u03c1", "p"),
        ("\u051b", "q"),
        ("\u0455", "s"),
        ("\u0442\u03c4", "t"),
        ("\u03c5\u03bc", "u"),
        ("\u03bd", "v"),
        ("\u051d\u03c9", "w"),
        ("\u0445\u03c7", "x"),
        ("\u0443\u04af\u03b3", "y"),
    )
    for ch in chars
}
_SINGLE: Final = str.maketrans(CONFUSABLES)
_PAIRS: Final = (("rn", "m"), ("vv", "w"))


def fold_server(name: str) -> str:
    """An MCP server name as the policy compares it: stripped and case-folded."""
    return name.strip().casefold()


def skeleton(name: str) -> str:
    """The look-alike-insensitive form of ``name`` (see the module docstring for the steps).

    Cached for names of up to 256 characters: tool names repeat, and a bounded cache of short
    keys keeps the names a model invents from piling up.
    """
    return _cached_skeleton(name) if len(name) <= 256 else _skeleton(name)


@functools.lru_cache(maxsize=4096)
def _cached_skeleton(name: str) -> str:
    return _skeleton(name)


def _skeleton(name: str) -> str:
    text = unicodedata.normalize("NFKC", name)
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cc"))
    text = text.translate(_CAPITALS).casefold()
    text = unicodedata.normalize("NFD", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    text = text.translate(_SINGLE)
    for pair, single in _PAIRS:
        text = text.replace(pair, single)
    return text.strip()
