# The companion's tests: on a GPU, `python3 -m pytest -q triton/tests`; without one, the same under
# TRITON_INTERPRET=1 (Triton's interpreter runs each program of the grid on the CPU, with numpy, on small
# shapes). Without either, the kernel tests skip and say how to run them; without PyTorch or Triton,
# every test skips and says which is missing (the C++ ladder never needs them).
import os
import sys

import pytest

TRITON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TRITON_DIR not in sys.path:
    sys.path.insert(0, TRITON_DIR)  # softmax.py, matmul.py, attention.py, chosen.py
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its warning

import companion_env as env  # noqa: E402  (next to this file)


def pytest_report_header(config):
    return "triton companion: " + env.MODE


def pytest_collection_modifyitems(config, items):
    if env.KERNEL_SKIP:
        for item in items:
            if "no_device" not in item.keywords:
                item.add_marker(pytest.mark.skip(reason=env.KERNEL_SKIP))


def pytest_configure(config):
    config.addinivalue_line("markers", "no_device: runs without a GPU and without the interpreter")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped, with the reason, without one)")


def pytest_sessionfinish(session, exitstatus):
    # Without PyTorch or Triton every module skips before it has a test, and pytest would exit 5 ("no tests
    # collected"): a skip, said with its reason, is the expected outcome there, so exit 0.
    if exitstatus == 5 and (env.torch is None or env.triton is None):
        session.exitstatus = 0
