# The package is imported from the build tree (PYTHONPATH=<build>/python, where CMake puts the
# module next to the Python files) or an installed wheel, and only failing those from the source
# tree, which has no module: then the tests that need the kernels skip, and say why. `python3 -m
# pytest` run in this chapter puts the source tree first on sys.path: it goes last.
import os
import sys

CHAPTER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != CHAPTER] + [CHAPTER]
