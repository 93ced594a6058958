from setuptools import setup

# All metadata lives in pyproject.toml; this file only wires in the cffi build.
setup(cffi_modules=["csrc/build_native.py:ffi"])
