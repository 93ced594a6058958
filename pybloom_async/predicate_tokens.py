"""The predicate text form's tokens: the tokenizer and literals kept as typed text."""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass
from typing import Any

from .errors import PredicateError

__all__ = [
    "TextLiteral",
]
TEXT_FORMS = "supported: =, <=> and IN (...), combined with AND, OR and parentheses"


@dataclass(frozen=True)
class TextLiteral:
    """A quoted literal from the text form, converted by the column's type later.

    ``'2024-01-31'`` is a string for a STRING column and a date for a DATE
    column; the parser cannot know which, so it keeps the text.
    """

    text: str


# ---- text form -----------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<comma>,)
  | (?P<op><=>|==|=)
  | (?P<badop>!=|<>|<=|>=|<|>|&&|\|\||&|\||!|~)
  | (?P<hexstr>[xX]'(?P<hexbody>[0-9A-Fa-f]*)')
  | (?P<hexnum>0[xX](?P<hexdigits>[0-9A-Fa-f]*))
  | (?P<string>'(?P<sbody>(?:[^']|'')*)')
  | (?P<signedinf>[-+](?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)(?![\w.]))
  | (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<qident>`(?P<qbody>(?:[^`]|``)+)`|"(?P<dqbody>(?:[^"]|"")+)")
  | (?P<word>[A-Za-z_][\w.]*)
    """,
    re.VERBOSE,
)

#: Words the text form reads as keywords, never as column names (quote such a column).
KEYWORDS = {"AND", "OR", "IN", "NULL", "TRUE", "FALSE", "NAN", "INF", "INFINITY"}

#: Operators of other SQL dialects, and what to write instead.
_INSTEAD = {
    "&&": "write AND",
    "&": "write AND",
    "||": "write OR",
    "|": "write OR",
    "!": "NOT is not supported",
    "~": "NOT is not supported",
}


@dataclass(frozen=True)
class Token:
    kind: str
    value: Any
    pos: int
    text: str  # as written, for messages

    @property
    def bare_word(self) -> str | None:
        """The upper-cased word, for an unquoted name (NOT, IS, LIKE, ...)."""
        return self.text.upper() if self.kind == "ident" and self.text[0] not in '`"' else None


def quoted_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def tokenize(text: str) -> list[Token]:
    toks: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            hint = ": a 'string' that is never closed?" if text[pos] == "'" else ""
            raise PredicateError(
                f"unexpected character {text[pos]!r} at position {pos} in {text!r}{hint}"
            )
        kind = m.lastgroup
        assert kind is not None
        # lastgroup names the innermost group for nested ones; map back.
        for outer in ("hexstr", "hexnum", "string", "qident"):
            if m.group(outer) is not None:
                kind = outer
                break
        raw = m.group(0)
        if kind == "ws":
            pass
        elif kind == "badop":
            instead = _INSTEAD.get(raw, TEXT_FORMS)
            raise PredicateError(
                f"unsupported operator {raw!r} at position {pos} in {text!r}; {instead}"
            )
        elif kind == "string":
            value = TextLiteral(m.group("sbody").replace("''", "'"))
            toks.append(Token("literal", value, pos, raw))
        elif kind == "hexstr":
            body = m.group("hexbody")
            if len(body) % 2:
                raise PredicateError(f"binary literal X'{body}' has an odd number of digits")
            toks.append(Token("literal", bytes.fromhex(body), pos, raw))
        elif kind == "hexnum":
            digits = m.group("hexdigits")
            if not digits or len(digits) % 2:
                raise PredicateError(f"binary literal 0x{digits} needs an even number of digits")
            toks.append(Token("literal", bytes.fromhex(digits), pos, raw))
        elif kind == "signedinf":
            toks.append(Token("literal", float(raw), pos, raw))
        elif kind == "number":
            toks.append(Token("literal", _number(raw), pos, raw))
        elif kind == "qident":
            body = m.group("qbody")
            name = (
                body.replace("``", "`")
                if body is not None
                else m.group("dqbody").replace('""', '"')
            )
            toks.append(Token("ident", name, pos, raw))
        elif kind == "word":
            upper = raw.upper()
            toks.append(Token(upper if upper in KEYWORDS else "ident", raw, pos, raw))
        else:
            toks.append(Token(kind, raw, pos, raw))
        pos = m.end()
    return toks


def _number(text: str) -> int | decimal.Decimal:
    # Integers stay ints; anything with a point or exponent is an exact
    # Decimal, so 0.1 is 1/10 and not the double nearest to it.
    if re.fullmatch(r"[-+]?\d+", text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts to an int
            pass
    return decimal.Decimal(text)
