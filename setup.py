"""The build of the compiled core (``sharp_cer.engine._core``, Cython in C++
mode). Where it cannot be built (no compiler, no Cython), the install goes
on without it and the pure-Python engine runs: ``sharp-cer --version`` says
which engine runs, and why."""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the extension is optional."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:
            _warn(error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            _warn(error)


def _warn(error: BaseException) -> None:
    print(
        f"warning: sharp-cer's compiled core was not built ({error}); the pure-Python engine will run",
        file=sys.stderr,
    )


def _extensions() -> list[Extension]:
    try:
        import numpy
        from Cython.Build import cythonize
    except ImportError as error:
        _warn(error)
        return []
    extensions = [
        Extension(
            f"sharp_cer.engine.{name}",
            [f"sharp_cer/engine/{name}.pyx"],
            language="c++",
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
        # the core, and the JSON lines of its matches (native.py runs without the second)
        for name in ("_core", "_lines")
    ]
    try:
        return list(cythonize(extensions, quiet=True))
    except Exception as error:
        _warn(error)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
