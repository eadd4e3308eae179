"""A wheel brings numba kernels compiled for a generic CPU of the build machine's
architecture (gramalign/kernel_cache.py), so that a fresh environment compiles none of the
kernels it ships. The metadata is in pyproject.toml; this file only adds that build step.

Set GRAMALIGN_SKIP_KERNEL_CACHE=1 to build a wheel without it (kernels then compile on first
use, as in an editable install, which never builds it).
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithKernelCache(build_py):
    def run(self):
        super().run()
        if self.editable_mode or os.environ.get("GRAMALIGN_SKIP_KERNEL_CACHE"):
            return
        folder = Path(self.build_lib) / "gramalign" / "_kernel_cache"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([self.build_lib, os.environ.get("PYTHONPATH", "")]))
        subprocess.run([sys.executable, "-m", "gramalign.masking.kernel_cache_build", "--folder", str(folder)],
                       env=env, check=True)


setup(cmdclass={"build_py": BuildPyWithKernelCache})
