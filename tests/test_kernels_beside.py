"""The kernel modules compile beside a worker's first task (nodeqc.backends.kernels.compile_beside),
exercised with a stand-in for CuPy that records each compilation: which module, for which device, in
which thread, and how long it takes. On a real GPU the same path runs in tests/test_gpu_real.py."""

from __future__ import annotations

import sys
import threading
import time
import types
from typing import Any

import pytest

from nodeqc.backends import kernels
from nodeqc.work.workers import Task, open_device


class _Cupy(types.ModuleType):
    """What kernels.module touches of CuPy: Device (a context manager) and RawModule.compile()."""

    def __init__(self, compile_s: float = 0.0, fail: set[str] | None = None):
        super().__init__("cupy")
        self.compiled: list[tuple[str, int, str]] = []  # (first line of the source, device, thread)
        self.current = threading.local()
        fake = self

        class Device:
            def __init__(self, device: int):
                self.device = device

            def __enter__(self) -> None:
                fake.current.device = self.device

            def __exit__(self, *exc: Any) -> None:
                fake.current.device = None

        class RawModule:
            def __init__(self, code: str, options: tuple[str, ...], name_expressions: Any):
                self.code = code

            def compile(self) -> None:
                name = next(n for n in kernels.KERNELS if kernels.source(n) == self.code)
                time.sleep(compile_s)
                if name in (fail or set()):
                    raise RuntimeError(f"NVRTC_ERROR_COMPILATION in {name}.cu")
                fake.compiled.append((name, fake.current.device, threading.current_thread().name))

        self.cuda = types.SimpleNamespace(Device=Device)
        self.RawModule = RawModule


@pytest.fixture
def cupy(monkeypatch: pytest.MonkeyPatch):
    """A fresh process's state: no module compiled, no compiling thread; the stand-in as `cupy`."""
    monkeypatch.setattr(kernels, "_modules", {})
    monkeypatch.setattr(kernels, "_building", {})
    monkeypatch.setattr(kernels, "_compiling", {})

    def install(**kwargs: Any) -> _Cupy:
        fake = _Cupy(**kwargs)
        monkeypatch.setitem(sys.modules, "cupy", fake)
        return fake
    return install


def test_every_module_compiles_once_for_its_device_in_a_thread_beside_the_caller(cupy):
    fake = cupy()
    assert not any(kernels.compiled(name, 3) for name in kernels.KERNELS)
    thread = kernels.compile_beside(3)
    assert kernels.compile_beside(3) is thread  # once a process, however many tasks open the GPU
    thread.join(5)
    assert sorted(n for n, _, _ in fake.compiled) == sorted(kernels.KERNELS)
    assert {(d, t) for _, d, t in fake.compiled} == {(3, "nodeqc-kernels-gpu3")}
    assert threading.current_thread().name != "nodeqc-kernels-gpu3"
    assert all(kernels.compiled(name, 3) for name in kernels.KERNELS) and not kernels.compiled("stream", 0)
    for name in kernels.KERNELS:  # a step's later ask compiles nothing more
        kernels.module(name, 3)
    assert len(fake.compiled) == len(kernels.KERNELS)


def test_a_step_that_asks_while_its_module_compiles_waits_for_that_compilation(cupy):
    fake = cupy(compile_s=0.3)
    first = next(iter(kernels.KERNELS))
    kernels.compile_beside(0)
    time.sleep(0.1)  # the thread is inside the first module's compilation
    start = time.monotonic()
    mod = kernels.module(first, 0)
    waited = time.monotonic() - start
    assert 0.1 < waited < 0.3 + 0.25  # it waited for the thread's compilation, and did not start its own
    assert mod is kernels.module(first, 0)
    kernels.compile_beside(0).join(5)
    assert [n for n, _, _ in fake.compiled].count(first) == 1
    assert {t for n, _, t in fake.compiled if n == first} == {"nodeqc-kernels-gpu0"}


def test_a_module_that_fails_beside_is_compiled_again_by_its_step_which_reports_the_error(cupy):
    fake = cupy(fail={"memtest"})
    kernels.compile_beside(1).join(5)  # no exception leaves the thread
    assert sorted(n for n, _, _ in fake.compiled) == sorted(set(kernels.KERNELS) - {"memtest"})
    with pytest.raises(RuntimeError, match="NVRTC_ERROR_COMPILATION in memtest.cu"):
        kernels.function("memtest", "mt_write", 1)


def test_modules_are_per_device(cupy):
    fake = cupy()
    kernels.compile_beside(0).join(5)
    kernels.compile_beside(1).join(5)
    assert sorted((d, n) for n, d, _ in fake.compiled) == sorted((d, n) for d in (0, 1) for n in kernels.KERNELS)


def test_a_real_gpus_worker_starts_the_compilation_when_it_opens_its_gpu_and_a_gpu_to_gpu_task_does_not(monkeypatch):
    import nodeqc.backends.cupy_compute as cupy_compute
    import nodeqc.backends.cupy_node as cupy_node

    beside: list[int] = []

    class Device:
        def __init__(self, index: int, bus_id: str | None = None, origin: float | None = None):
            self.index = index

        def compile_kernels_beside(self) -> None:
            beside.append(self.index)

    class Node:
        def __init__(self, gpus: list[int], bus_ids: dict[int, str], origin: float | None):
            self.gpus = gpus

    monkeypatch.setattr(cupy_compute, "CupyDevice", Device)
    monkeypatch.setattr(cupy_node, "CupyNodeDevices", Node)
    spec = {"kind": "cupy", "clock": (1.0, None)}
    assert open_device(spec, Task("matmul_burn", 2, {}, 30.0)).index == 2
    assert beside == [2]
    # A GPU-to-GPU task runs in a process of its own for one short measurement: nothing beside it.
    assert open_device(spec, Task("p2p_bandwidth", 0, {}, 5.0, gpus=(0, 1))).gpus == [0, 1]
    assert beside == [2]
