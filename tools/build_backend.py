"""setuptools' build backend, with what building a wheel's kernel cache needs (setup.py):
numpy, numba and lark, for wheels only, so an editable install (``make test``) does not
install them into its build environment too."""

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (every hook, as setuptools defines it)

_KERNEL_CACHE_REQUIRES = ["numpy>=1.24", "numba>=0.59", "lark>=1.1.9,<2"]


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _KERNEL_CACHE_REQUIRES
