# Stub for the cffi-generated module (built from csrc/ by csrc/build_native.py).
from typing import Any

ffi: Any
lib: Any
