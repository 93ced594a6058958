"""Values as a column stores them: probe values encoded exactly, text literals parsed,
values placed in a column's order, dates and times.

Pure functions over Python values and a column's descriptor (:mod:`pybloom_async.parquet`
gives the descriptor): the pruner encodes each literal once per column type with
:func:`encode_value`; what an encoding gives is a :class:`Probe`, :class:`CannotMatch` or
:class:`NeverPrunes`.
"""

from __future__ import annotations

from .encode import encode_text as encode_text
from .encode import encode_value as encode_value
from .encoded import CannotMatch as CannotMatch
from .encoded import Encoded as Encoded
from .encoded import NeverPrunes as NeverPrunes
from .encoded import Probe as Probe
from .encoded import WithNanoseconds as WithNanoseconds
from .text import parse_text_value as parse_text_value
