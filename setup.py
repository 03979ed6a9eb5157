"""Builds the compiled kernels (``bot/native``); everything else is in ``pyproject.toml``.

The extension is optional: without a C compiler the install still succeeds and the kernels'
Python twins run instead (``bot/native/__init__.py``). ``-ffp-contract=off`` keeps every
floating-point operation the one the Python twin does (no fused multiply-add).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "bot.native._kernels",
            sources=[
                "bot/native/hpa_replay.c",
                "bot/native/xor_chunks.c",
                "bot/native/replica_slots.c",
                "bot/native/step_rates.c",
                "bot/native/order_pair.c",
            ],
            extra_compile_args=["-O2", "-std=c99", "-ffp-contract=off"],
            libraries=["m"],
            optional=True,
        )
    ]
)
