"""Text from tasks, imports, verifiers, endpoints and agents, made safe to show on the operator's
terminal.

``safe`` shows every character a terminal would act on as an escape instead of sending it: C0
controls (ESC, BEL, backspace, carriage return, ...; newline and tab are kept unless ``oneline``),
DEL, C1 controls (0x80-0x9f, the 8-bit CSI/OSC/DCS introducers), and the invisible format and
separator characters (bidi overrides and isolates such as U+202E, zero-width characters, U+2028/9)
and lone surrogates. So ``\\x1b]0;title\\x07``, ``\\x1b[2J`` or an OSC 52 clipboard write arrive as
the text ``\\x1b]0;title\\x07`` and do nothing. ``markup`` also escapes rich markup, for text put in
a markup string; ``text`` makes a rich ``Text``, which is never parsed as markup.

Only what is printed goes through here: files written to disk keep their bytes.
"""

from __future__ import annotations

import re
import unicodedata

from rich.markup import escape as _escape_markup
from rich.text import Text

# Anything outside printable ASCII, newline and tab: looked at one by one (most text never matches).
_SUSPECT = re.compile(r"[^\x20-\x7e\n\t]")
_SUSPECT_ONELINE = re.compile(r"[^\x20-\x7e]")
_INVISIBLE = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))  # controls, format (bidi, zero-width), surrogates, separators


def _escape(ch: str) -> str:
    o = ord(ch)
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def _replace(m: re.Match) -> str:
    ch = m.group()
    if ord(ch) < 0xa0 or unicodedata.category(ch) in _INVISIBLE:
        return _escape(ch)
    return ch


def safe(text: object, oneline: bool = False) -> str:
    """``text`` (str, bytes, an exception, anything ``str()`` takes) with what a terminal would act on
    shown escaped. ``oneline``: newline and tab too (for names and paths)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "backslashreplace")
    elif not isinstance(text, str):
        text = str(text)
    return (_SUSPECT_ONELINE if oneline else _SUSPECT).sub(_replace, text)


def markup(text: object, oneline: bool = False) -> str:
    """``safe(text)`` with rich markup escaped, for interpolating into a markup string."""
    return _escape_markup(safe(text, oneline))


def text(s: object, style: str = "", oneline: bool = False) -> Text:
    """A rich ``Text`` of ``safe(s)``: printed literally, never parsed as markup."""
    return Text(safe(s, oneline), style=style)
