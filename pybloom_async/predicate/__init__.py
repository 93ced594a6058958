"""Predicates: comparisons of columns with literals, combined with AND, OR and NOT.

Build them in Python::

    from pybloom_async import col
    where = (col("id") == 42) & col("email").isin(["a@x", "b@x"])
    where = (col("user") == 7) & (col("day") >= date(2024, 5, 1))

or parse the same thing from text, as the command line takes it::

    parse_predicate("id = 42 AND email IN ('a@x', 'b@x')")
    parse_predicate("user = 7 AND day >= '2024-05-01'")

The comparisons: ``=``, null-safe ``<=>``, ``!=``, ``<``, ``<=``, ``>``, ``>=``,
``[NOT] IN``, ``[NOT] BETWEEN`` (inclusive) and ``IS [NOT] NULL``.

Literal values keep the form they were written in (an integer, an exact
decimal, a string, ...) and are converted to each column's physical type only
when a file is pruned, because the same name can have different types in
different files. There the rule is:

* a literal that is not a value of the column's type at all (text that does
  not read as the type, ``'2024/01/05'`` for a DATE; a Python value of the
  wrong kind, bytes or ``0x10`` for an integer column) is the user's mistake:
  :class:`~pybloom_async.errors.PredicateError`, naming the file, the column,
  the value and the forms the column takes, with or without ``strict``;
* a well-formed value that the column cannot hold (300 for an INT(8) column,
  1e39 for a FLOAT, 10 characters for a FIXED_LEN_BYTE_ARRAY(4), more decimal
  places than the column's scale, a finer time than the column's unit) equals
  no row, and orders by its exact value: ``int8_col < 300`` holds for every
  non-null row, ``int8_col > 300`` for none, ``ts_ms < '2024-01-01T00:00:00.0005'``
  for the rows up to ``00:00:00.000``.

Numbers are taken exactly, except in FLOAT, DOUBLE and FLOAT16 columns, where
a number means the nearest value of the type, as SQL reads a literal (``0.1``
is the float nearest to one tenth; beyond the type's range, a number above
every finite value and below infinity). A Python value means what the text
form writes for it, so that ``p`` and ``parse_predicate(p.to_text())`` always
agree: a ``float`` is the number it prints as (``0.1`` is one tenth, also in a
DECIMAL column), and a ``str``, ``date``, ``time``, ``datetime`` or ``UUID`` is
the quoted text of it, read by the column's type: ``col("d") == "2024-01-05"``
probes that date in a DATE column, ``col("s") == date(2024, 1, 5)`` the text
``'2024-01-05'`` in a STRING one.

SQL's three-valued logic holds everywhere: a comparison with NULL (a NULL row,
or a NULL literal) is unknown, never true; NOT of unknown is unknown; a row is
returned only where the predicate is TRUE. So ``x != 1`` never matches a NULL
``x`` and ``x NOT IN (1, NULL)`` matches nothing. ``x IS NULL`` (also written
``x <=> NULL``) and ``x IS NOT NULL`` are true or false, never unknown.

Floats compare as IEEE 754 numbers: ``-0.0 = 0.0``; NaN equals nothing, is
neither below nor above anything (no ``=``, ``<``, ``BETWEEN``, ... matches a
NaN row or a NaN literal) and is unequal to everything (``x != 1`` and
``NOT (x < 1)`` match a NaN row).

Predicates are not booleans: combine them with ``&`` (AND), ``|`` (OR) and
``~`` (NOT), never with ``and``, ``or`` or ``not``, and parenthesise each
comparison (``(col("a") == 1) | (col("b") < 2)``), as in numpy, pandas and polars.

The package's modules import downward only: ``tokens`` (the text form's tokens and
literals), ``model`` (the predicates), ``normal`` (the normal form) and ``parse`` (the
text form's parser); this module gathers the names the other layers use.
"""

from .model import COMPARISONS as COMPARISONS
from .model import And as And
from .model import Between as Between
from .model import Compare as Compare
from .model import Comparison as Comparison
from .model import Eq as Eq
from .model import In as In
from .model import IsNotNull as IsNotNull
from .model import IsNull as IsNull
from .model import Not as Not
from .model import NotIn as NotIn
from .model import Or as Or
from .model import Predicate as Predicate
from .model import col as col
from .model import iter_leaves as iter_leaves
from .normal import normal_form as normal_form
from .parse import as_predicate as as_predicate
from .parse import parse_predicate as parse_predicate
from .tokens import TextLiteral as TextLiteral
from .tokens import literal_text as literal_text
