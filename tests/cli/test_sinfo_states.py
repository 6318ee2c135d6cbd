"""sinfo -t/--states and --noconvert as sinfo 22.05 reads them (src/sinfo/opts.c,
_filter_out in src/sinfo/sinfo.c of slurm-22-05-9-1; not yet recorded on the twin)."""

import pytest

from minislurm.cli import sinfo
from minislurm.cli.fmt.sinfo import exact_units

NODES = [
    {"name": "n1", "state": "idle", "flags": [], "cpus": 8, "alloc_cpus": 0},
    {"name": "n2", "state": "drain", "flags": ["DRAIN"], "cpus": 8, "alloc_cpus": 0, "reason": "fix"},
    {"name": "n3", "state": "mix", "flags": [], "cpus": 8, "alloc_cpus": 2, "jobs": [7]},
    {"name": "n4", "state": "drng", "flags": ["DRAIN"], "cpus": 8, "alloc_cpus": 2, "jobs": [8], "reason": "x"},
    {"name": "n5", "state": "alloc", "flags": [], "cpus": 8, "alloc_cpus": 8, "jobs": [9]},
    {"name": "n6", "state": "down", "flags": ["NOT_RESPONDING"], "cpus": 8, "alloc_cpus": 0, "reason": "gone"},
]
PART = {"name": "gpu", "default": True, "state": "UP", "max_time": None, "nodes": "n[1-6]"}


class FakeClient:
    asked = 0

    def __init__(self, *a, **k):
        pass

    def call(self, method, path, *a, **k):
        FakeClient.asked += 1
        return {"/partitions": {"partitions": [PART]}, "/nodes": {"nodes": NODES}}[path]


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    FakeClient.asked = 0
    monkeypatch.setattr(sinfo, "Client", FakeClient)


def listed(capsys, *argv) -> str:
    assert sinfo.main(["-h", "-N", "-o", "%N", *argv]) == 0
    return capsys.readouterr().out.split()


@pytest.mark.parametrize("states, names", [
    ("idle", ["n1", "n2"]),            # a drained idle node is IDLE (its base state)
    ("drain", ["n2", "n4"]),           # the flag: drained and draining
    ("drained", ["n2"]), ("draining", ["n4"]), ("drng", ["n4"]),
    ("idle,drain", ["n1", "n2", "n4"]),
    ("idle&drain", ["n2"]),            # both
    ("alloc", ["n3", "n4", "n5"]),     # any CPU allocated
    ("mix", ["n3"]), ("mixed", ["n3"]), ("allocated", ["n3", "n4", "n5"]),
    ("DOWN", ["n6"]), ("d", ["n6"]),   # a leading part, in Slurm's order: d is DOWN
    ("no_respond", ["n6"]), ("all", ["n1", "n2", "n3", "n4", "n5", "n6"]),
])
def test_states_select_nodes_as_sinfo_does(capsys, states, names):
    assert listed(capsys, "-t", states) == names


def test_a_drained_node_is_listed_by_idle_and_drain(capsys):
    """The issue's case: the drained node was left out."""
    assert "n2" in listed(capsys, "--states=idle,drain")
    assert listed(capsys, "--states=idle&drain") == ["n2"]


@pytest.mark.parametrize("word", ["NOTASTATE", "idle+drain", "idlex"])
def test_an_unknown_state_is_refused_before_any_request(capsys, word):
    assert sinfo.main(["-t", word]) == 1
    out, err = capsys.readouterr()
    bad = "idle+drain" if word == "idle+drain" else word
    assert out == "" and err == (
        f'sinfo: error: Bad state string: "{bad}"\n'
        "sinfo: error: valid states: unknown,down,idle,allocated,?,mixed,future,drain,drained,draining,"
        "no_respond,reserved,perfctrs,cloud,completing,powering_down,powered_down,power_down,powering_up,"
        "fail,maint,reboot,reboot^,unknown\n")
    assert FakeClient.asked == 0


def test_helpstate_is_not_a_22_05_option(capsys):
    """--helpstate came after 22.05: refused as getopt refuses any unknown option."""
    with pytest.raises(SystemExit) as stop:
        sinfo.main(["--helpstate"])
    assert stop.value.code == 1
    assert capsys.readouterr().err == "sinfo: unrecognized option '--helpstate'\nTry \"sinfo --help\" for more information\n"


def test_exact_units():
    assert [exact_units(n) for n in (0, 8, 1000, 1024, 1536, 1025, 2048, 1024 ** 2)] == \
        ["0", "8", "1000", "1K", "1.50K", "1025", "2K", "1M"]


def test_noconvert_prints_counts_as_they_are(capsys, monkeypatch):
    monkeypatch.setattr(sinfo, "Client", type("Big", (FakeClient,), {"call": lambda self, m, path, *a, **k: {
        "/partitions": {"partitions": [PART]}, "/nodes": {"nodes": [dict(NODES[0], cpus=2048)]}}[path]}))
    assert sinfo.main(["-h", "-o", "%c"]) == 0
    assert capsys.readouterr().out == "2K\n"
    assert sinfo.main(["-h", "-o", "%c", "--noconvert"]) == 0
    assert capsys.readouterr().out == "2048\n"
