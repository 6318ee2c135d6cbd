"""What a step's tasks use on a node, per task (issue 26, item 5): a process counts for the task
whose session or tree it is in; a step's GPUs are read through NVML only when they are real."""

from __future__ import annotations

import asyncio
import sys
import types

import pytest

from minislurm.slurmd import nvml
from minislurm.slurmd.proc import ProcessSet
from minislurm.slurmd.usage import Meter

BURN = ("import time\nx = bytearray({mib} << 20)\nt = time.process_time()\n"
        "while time.process_time() - t < {cpu}: pass")


async def _run_tasks(commands: list[list[str]], tasks: tuple[int, ...], **meter_kw) -> dict:
    procs = ProcessSet()
    meter = Meter(procs, tasks=tasks, **meter_kw)
    for argv in commands:  # each task in its own session, as the agent starts them
        procs.procs.append(await asyncio.create_subprocess_exec(*argv, start_new_session=True))
    for p in procs.procs:
        await p.wait()
    return meter.stop()


def test_each_task_gets_the_cpu_and_memory_of_its_own_processes():
    burn = [sys.executable, "-c", BURN.format(mib=80, cpu=0.6)]
    # task 7 is a shell whose child does the work: a descendant counts for its task
    child = ["/bin/sh", "-c", f"{sys.executable} -c '{BURN.format(mib=20, cpu=0.3)}'; true"]
    view = asyncio.run(_run_tasks([burn, child], tasks=(4, 7)))
    four, seven = view["tasks"]["4"], view["tasks"]["7"]
    assert 0.45 <= four["cpu"] <= 0.8 and 0.15 <= seven["cpu"] <= 0.5, view  # less at most a sample each
    assert four["rss"] >= 80 << 10 and 20 << 10 <= seven["rss"] < 80 << 10, view
    assert view["ntasks"] == 2 and view["cpu"] == pytest.approx(four["cpu"] + seven["cpu"], abs=0.01)
    assert view["rss"] >= four["rss"] and "gpus" not in view and "gpu_note" not in view


class FakeNvml(types.ModuleType):
    """pynvml's calls that the probe makes, on ``count`` GPUs busy ``util`` percent."""

    class NVMLError(Exception):
        pass

    def __init__(self, count: int, util: list[int]):
        super().__init__("pynvml")
        self.count, self.util, self.asked = count, util, []

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUtilizationRates(self, h):
        self.asked.append(h)
        return types.SimpleNamespace(gpu=self.util[(len(self.asked) - 1) % len(self.util)])

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=(1 + len(self.asked)) << 30, total=80 << 30)


@pytest.fixture
def fake_nvml(monkeypatch):
    def install(module):
        monkeypatch.setitem(sys.modules, "pynvml", module)
        monkeypatch.setattr(nvml, "_lib", nvml._NOT_LOADED)  # loaded again, from the fake
        return module
    yield install


def test_real_gpus_are_sampled_through_nvml_about_once_a_second(fake_nvml):
    lib = fake_nvml(FakeNvml(count=2, util=[90, 70]))
    sleeper = [sys.executable, "-c", "import time; time.sleep(2.3)"]
    view = asyncio.run(_run_tasks([sleeper], tasks=(0,), gpus=(1,), node_gpus=2))
    gpu = view["gpus"]["1"]
    assert set(lib.asked) == {1} and gpu["samples"] == len(lib.asked) >= 2  # GPU 1 alone, each second
    assert gpu["util"] == 80.0 and gpu["total"] == 80 << 20 and gpu["mem"] == (1 + gpu["samples"]) << 20


def test_fake_gpus_are_not_measured_and_say_why(fake_nvml, monkeypatch):
    fake_nvml(FakeNvml(count=1, util=[50]))  # the host has one GPU, the node says four
    probe = nvml.GpuProbe((2,), node_gpus=4)
    probe.take()
    assert probe.view() == {"gpu_note": "no real GPU (this node has 4 GPUs, NVML finds 1)"}
    fake_nvml(None)  # ``import pynvml`` fails: not installed
    monkeypatch.setattr(nvml.os.path, "exists", lambda path: False)
    assert nvml.GpuProbe((0,), node_gpus=1).view() == {"gpu_note": "no real GPU"}
    monkeypatch.setattr(nvml, "_lib", nvml._NOT_LOADED)
    monkeypatch.setattr(nvml.os.path, "exists", lambda path: path == "/dev/nvidiactl")  # a driver, no module
    assert nvml.GpuProbe((0,), node_gpus=1).view() == {"gpu_note": "NVML is not installed (pip install nvidia-ml-py)"}
    assert nvml.GpuProbe((), node_gpus=1).view() == {}  # a step without GPUs says nothing of them


def test_the_meters_of_one_process_share_each_search_of_proc(monkeypatch):
    """An agent process hosting hundreds of virtual nodes has a meter per node: their searches
    for new processes share one scan of /proc a tick, not one each."""
    from minislurm.slurmd import proc, usage
    scans, searches = [], []
    scan, search = proc._scan, usage.families
    monkeypatch.setattr(proc, "_scan", lambda: scans.append(1) or scan())
    monkeypatch.setattr(usage, "families", lambda *args: searches.append(1) or search(*args))

    async def run() -> int:
        sleepers = [await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True) for _ in range(40)]
        meters = [Meter(ProcessSet([p]), tasks=(i,)) for i, p in enumerate(sleepers)]
        try:
            while len(searches) < len(meters):  # until each has searched once
                await asyncio.sleep(0.05)
            return len(scans)
        finally:
            for m in meters:
                m.stop()
            for p in sleepers:
                p.kill()
                await p.wait()

    assert 1 <= asyncio.run(run()) <= 3  # the meters started within a tick: one scan, two at a tick's edge
