"""Shared fixtures of the binding's pytest suite.

Run by tests/meson.build through run_pytest.sh, which sets FASTRL_LIBRARY to the
build's library and PYTHONPATH to bindings/python. By hand:

    FASTRL_LIBRARY=build/lib/libfastrl.so.0 PYTHONPATH=bindings/python \
        build-venv/bin/python -m pytest bindings/python/tests

FRL_PY_SANITIZER=asan or tsan (set by run_pytest.sh, which preloads the sanitizer's
runtime) skips the tests marked ``slow``, each with its reason; tsan also skips those
marked ``threadless``: they check arithmetic (exports against the library) or library
lookups, not threads, and run 5 to 50 times slower under TSan; the threads they pass
through (training a policy to export) are the other tests' under TSan too, and ASan and
the plain builds run them whole.
"""

import ctypes
import gc
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
if PKG_ROOT not in sys.path:
    sys.path.insert(0, PKG_ROOT)

SANITIZER = os.environ.get("FRL_PY_SANITIZER", "")
ASAN = SANITIZER == "asan"
TSAN = SANITIZER == "tsan"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running (skipped under sanitizers)")
    config.addinivalue_line("markers", "threadless: checks arithmetic or lookups, not "
                            "threads (skipped under ThreadSanitizer)")


def pytest_collection_modifyitems(config, items):
    if not SANITIZER:
        return
    skip = pytest.mark.skip(reason=f"slow under {SANITIZER}; runs in the plain builds' "
                            "python test")
    threadless = pytest.mark.skip(reason="checks arithmetic or lookups, not threads; "
                                  "runs under ASan and in the plain builds")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
        elif TSAN and "threadless" in item.keywords:
            item.add_marker(threadless)


def pytest_report_header(config):
    import fastrl
    return [f"libfastrl: {fastrl.library_path()} ({fastrl.library_version()})",
            f"sanitizer: {SANITIZER or 'none'}"]


def touch(array):
    """Read every byte of an array through libc's memmove, which AddressSanitizer
    intercepts: under ASan, reading freed library memory aborts the process here
    (numpy's own loops are not instrumented, so reading through numpy would not)."""
    buf = ctypes.create_string_buffer(max(array.nbytes, 1))
    ctypes.memmove(buf, array.ctypes.data, array.nbytes)
    return buf.raw


def collect():
    for _ in range(3):
        gc.collect()


@pytest.fixture
def rt():
    import fastrl
    r = fastrl.Runtime(threads=2, seed=3)
    yield r
    r.close()


@pytest.fixture
def rt1():
    import fastrl
    r = fastrl.Runtime(threads=1)
    yield r
    r.close()


def random_actions(space, n, seed=0):
    rng = np.random.default_rng(seed)
    if hasattr(space, "n"):
        return rng.integers(0, int(space.n), n).astype(np.int32)
    return rng.uniform(space.low, space.high, (n,) + space.shape).astype(np.float32)
