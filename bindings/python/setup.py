"""The wheel's platform tag: a wheel that bundles libfastrl.so (build_wheel.sh copies
it into fastrl/) is tagged py3-none-<platform>, since ctypes needs no Python ABI; a
wheel without it is pure (py3-none-any) and finds the library as doc/python.md says.
Everything else is in pyproject.toml."""

import glob
import os

from setuptools import setup
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED = bool(glob.glob(os.path.join(HERE, "fastrl", "libfastrl.so*")))


class Dist(Distribution):
    def has_ext_modules(self):
        return BUNDLED


cmdclass = {}
try:
    try:
        from setuptools.command.bdist_wheel import bdist_wheel
    except ImportError:  # setuptools < 70.1
        from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = not BUNDLED

        def get_tag(self):
            python, abi, plat = super().get_tag()
            return ("py3", "none", plat) if BUNDLED else ("py3", "none", "any")

    cmdclass["bdist_wheel"] = PlatformWheel
except ImportError:
    pass

setup(distclass=Dist, cmdclass=cmdclass)
