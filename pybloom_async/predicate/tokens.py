"""The predicate text form's tokens: the tokenizer and literals kept as typed text."""

from __future__ import annotations

import datetime
import decimal
import math
import re
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import PredicateError

TEXT_FORMS = (
    "supported: =, <=>, != (<>), <, <=, >, >=, [NOT] IN (...), [NOT] BETWEEN ... AND ..., "
    "IS [NOT] NULL, combined with NOT, AND, OR and parentheses"
)


@dataclass(frozen=True)
class TextLiteral:
    """A quoted literal from the text form, converted by the column's type later.

    ``'2024-01-31'`` is a string for a STRING column and a date for a DATE
    column; the parser cannot know which, so it keeps the text.
    """

    text: str


# ---- text form -----------------------------------------------------------------

#: One token after any whitespace (``end``: only whitespace is left). The alternatives an
#: ``IN`` list is made of come first; ``hexnum`` before the numbers (``0x1F`` is not ``0``),
#: ``op`` before ``badop`` (``!=`` is not ``!``), ``hexstr`` before ``word``.
_TOKEN = re.compile(
    r"""
    \s*(?:
    (?P<comma>,)
  | (?P<hexnum>0[xX](?P<hexdigits>[0-9A-Fa-f]*))
  | (?P<integer>[-+]?\d+)(?![.\deE])
  | (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<string>'(?P<sbody>(?:[^']|'')*)')
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<op><=>|==|=|!=|<>|<=|>=|<|>)
  | (?P<badop>&&|\|\||&|\||!|~)
  | (?P<hexstr>[xX]'(?P<hexbody>[0-9A-Fa-f]*)')
  | (?P<signedinf>[-+](?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)(?![\w.]))
  | (?P<qident>`(?P<qbody>(?:[^`]|``)+)`|"(?P<dqbody>(?:[^"]|"")+)")
  | (?P<word>[A-Za-z_][\w.]*)
  | (?P<end>$)
    )
    """,
    re.VERBOSE,
)

#: A comma and an integer after an integer (an IN list's next value), as :data:`_TOKEN` reads
#: them: two tokens one match makes. Not before ``x``: ``0x1F`` is binary (and ``10x`` is
#: left to :data:`_TOKEN` too, which reads it as it reads any text).
_NEXT_INTEGER = re.compile(r"\s*(,)\s*([-+]?\d+)(?![.\deExX])")

#: Words the text form reads as keywords, never as column names (quote such a column).
KEYWORDS = {"AND", "OR", "IN", "NULL", "TRUE", "FALSE", "NAN", "INF", "INFINITY"}
#: Words that are keywords only where a keyword fits (``not = 1`` compares a column named
#: ``not``); the text form quotes columns named so all the same, for the reader's sake.
CONTEXT_WORDS = {"NOT", "IS", "BETWEEN", "LIKE"}

#: Operators of other SQL dialects, and what to write instead.
_INSTEAD = {
    "&&": "write AND",
    "&": "write AND",
    "||": "write OR",
    "|": "write OR",
    "!": "write NOT",
    "~": "write NOT",
}


class Token(NamedTuple):  # a tuple: made once per token, cheaply (an IN list's thousands)
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
    match = _TOKEN.match
    next_integer = _NEXT_INTEGER.match
    while True:
        m = match(text, pos)
        if m is None:
            pos = len(text) - len(text[pos:].lstrip())  # past the whitespace before it
            hint = ": a 'string' that is never closed?" if text[pos] == "'" else ""
            raise PredicateError(
                f"unexpected character {text[pos]!r} at position {pos} in {text!r}{hint}"
            )
        # The alternative that matched: the last group to close is the outer one, never a
        # group nested in it (sbody, hexbody, ...).
        kind = m.lastgroup
        assert kind is not None
        if kind == "end":
            return toks
        raw = m.group(kind)
        pos = m.start(kind)
        if kind == "integer":
            toks.append(Token("literal", _integer(raw), pos, raw))
            # The rest of an IN list of integers: a comma and an integer a match, tokens
            # the loop would make of them (see _NEXT_INTEGER).
            end = m.end()
            while (more := next_integer(text, end)) is not None:
                raw = more.group(2)
                toks.append(Token("comma", ",", more.start(1), ","))
                toks.append(Token("literal", _integer(raw), more.start(2), raw))
                end = more.end()
            pos = end
            continue
        elif kind == "number":
            toks.append(Token("literal", _number(raw), pos, raw))
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


_INTEGER = re.compile(r"[-+]?\d+")


def _integer(text: str) -> int | decimal.Decimal:
    try:
        return int(text)
    except ValueError:  # more digits than Python converts to an int
        return decimal.Decimal(text)


def _number(text: str) -> int | decimal.Decimal:
    # Integers stay ints; anything with a point or exponent is an exact
    # Decimal, so 0.1 is 1/10 and not the double nearest to it.
    return _integer(text) if _INTEGER.fullmatch(text) else decimal.Decimal(text)


# ---- writing the text form -------------------------------------------------------


def quote_column(path: str) -> str:
    """The column as the text form writes it: quoted unless a bare word reads back as it."""
    upper = path.upper()
    bare = (
        re.fullmatch(r"[A-Za-z_][\w.]*", path)
        and upper not in KEYWORDS
        and upper not in CONTEXT_WORDS
    )
    return path if bare else "`" + path.replace("`", "``") + "`"


#: Above this many bits Python may refuse to write an int as decimal text (its default limit
#: is 4300 digits); Decimal writes it exactly.
_STR_DIGITS_BITS = 4000


def literal_text(v: Any) -> str:
    """A literal value as the text form writes it (``'text'``, ``X'00ff'``, ``42``, ``NULL``)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, TextLiteral):
        return "'" + v.text.replace("'", "''") + "'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (bytes, bytearray)):
        return "X'" + bytes(v).hex() + "'"
    if isinstance(v, (datetime.date, datetime.time)):
        return "'" + v.isoformat() + "'"  # datetime is a date: ISO 8601 with its offset
    if isinstance(v, uuid.UUID):
        return "'" + str(v) + "'"
    if isinstance(v, float) and math.isinf(v):
        return "INF" if v > 0 else "-INF"
    if isinstance(v, decimal.Decimal) and not v.is_finite():
        if v.is_nan():
            return "NAN"  # NaN, -NaN and sNaN: the text form has one NaN
        return "-INF" if v.is_signed() else "INF"
    if isinstance(v, int) and v.bit_length() > _STR_DIGITS_BITS:
        return str(decimal.Decimal(v))  # exact, without the int-to-text digit limit
    return str(v)
