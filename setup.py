"""Builds the compiled XOR-chunk decoder (``bot/metrics/xor_chunks.c``); everything else is in
``pyproject.toml``.

The extension is optional: without a C compiler the install still succeeds and the numpy
decoder of ``bot/metrics/xor_chunks.py`` runs instead (``tortoise-bot --version`` says which).
It is loaded with ``ctypes`` (``bot/metrics/xor_compiled.py``), not imported as a module.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "bot.metrics._xor_chunks",
            sources=["bot/metrics/xor_chunks.c"],
            extra_compile_args=["-O2", "-std=c99"],
            optional=True,
        )
    ]
)
