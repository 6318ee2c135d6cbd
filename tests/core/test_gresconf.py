"""gres.conf read with slurm.conf: per-node lines, device files, count checks, warnings and
errors with their exact messages."""

from __future__ import annotations

import pytest

from minislurm.core.slurmconf import ConfigError, load
from minislurm.core.slurmconf import parse_slurm_conf as parse

GPU_FILES = [f"/dev/nvidia{i}" for i in range(8)]
NODES = "GresTypes=gpu,mps\nNodeName=gpu[01-04] Gres=gpu:a100:4,mps:400\n"


def test_gres_conf_nodename_restricts_lines_and_files_accumulate():
    cfg = parse(NODES, "AutoDetect=off\n"
                       "NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
                       "NodeName=gpu03 Name=gpu File=/dev/nvidia0 Cores=0-7\n"
                       "NodeName=gpu03 Name=gpu File=/dev/nvidia1,/dev/nvidia[2-3]\n"
                       "Name=mps Count=400 File=/dev/nvidia[0-3]\n")
    files = [n.gpu_files for n in cfg.nodes]
    assert files == [GPU_FILES[:4]] * 3 + [[]]
    assert cfg.warnings == [
        "gres.conf line 3: gres.conf key 'cores' is not modelled by minislurm (ignored)"]


def test_gres_conf_count_mismatch_is_a_warning():
    cfg = parse(NODES, "NodeName=gpu[01-02] Name=gpu File=/dev/nvidia[0-1]\n"
                       "NodeName=gpu03 Name=gpu Count=6 File=/dev/nvidia[0-5]\n"
                       "NodeName=gpu04 Name=mps Count=400\n")
    assert cfg.nodes[0].gpus == 4 and cfg.nodes[0].gpu_files == GPU_FILES[:2]
    assert cfg.warnings == [
        "gres.conf: gpu[01-02]: gres.conf gives 2 gpu but slurm.conf Gres gives 4 "
        "(real Slurm drains a node that reports fewer)",
        "gres.conf: gpu03: gres.conf gives 6 gpu but slurm.conf Gres gives 4"]


def test_gres_conf_other_warnings():
    cfg = parse(NODES, "AutoDetect=nvml\n"
                       "NodeName=gpu[04-05] Name=gpu Type=h100 File=/dev/nvidia[0-3]\n")
    assert cfg.nodes[3].gpu_files == GPU_FILES[:4]
    assert cfg.warnings == [
        "gres.conf line 1: AutoDetect=nvml is not emulated by minislurm; File= lines and "
        "slurm.conf Gres counts are used",
        "gres.conf line 2: nodes not in slurm.conf are ignored: gpu05",
        "gres.conf line 2: Type=h100 but slurm.conf gives gpu04 gpu type 'a100'"]


@pytest.mark.parametrize("gres, message", [
    ("Name=gpu Fiel=/dev/nvidia0", "gres.conf line 1: unknown gres.conf key 'Fiel'"),
    ("Name=shard Count=8", "gres.conf line 1: GRES 'shard' is not declared in GresTypes"),
    ("Name=gpu Count=2 File=/dev/nvidia[0-3]", "gres.conf line 1: Count=2 but File= names 4 device(s)"),
    ("Name=gpu File=/dev/nvidia[0-", "gres.conf line 1: File=/dev/nvidia[0- is not a valid hostlist"),
    ("NodeName=gpu[1-0] Name=gpu", "gres.conf line 1: NodeName=gpu[1-0] is not a valid hostlist"),
    ("Name=mps Count=lots", "gres.conf line 1: Count=lots is not a GRES count"),
    ("File=/dev/nvidia0", "gres.conf line 1: a gres.conf line needs Name="),
    ("AutoDetect=magic", "gres.conf line 1: AutoDetect=magic is not one of full, nrt, nvidia, "
     "nvml, off, oneapi, rsmi"),
    ("\n# comment\nName gpu", "gres.conf line 3: expected Key=Value, found 'Name'"),
])
def test_gres_conf_errors(gres, message):
    with pytest.raises(ConfigError) as err:
        parse(NODES, gres)
    assert str(err.value) == message


def test_load_without_gres_conf(tmp_path):
    (tmp_path / "slurm.conf").write_text("GresTypes=gpu\nNodeName=a Gres=gpu:2\nBad\n")
    with pytest.raises(ConfigError, match=f"^{tmp_path / 'slurm.conf'} line 3: "):
        load(tmp_path / "slurm.conf")
    (tmp_path / "slurm.conf").write_text("GresTypes=gpu\nNodeName=a Gres=gpu:2\n")
    assert load(tmp_path / "slurm.conf").nodes[0].gpu_files == []
