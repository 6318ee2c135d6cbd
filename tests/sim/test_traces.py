"""Trace readers in general against the real traces (data/traces and ../shared/traces): the
shipped copies, gzip, streams, format detection, and mangled lines."""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import re
import shutil

import pytest
from tracekit import DATA, DAY, HPC2N, LESSON, OPENB, PHILLY, ROOT, SHARED, needs_shared

from minislurm.sim.traces import (USER_LADDER, detect_format, read_native, read_openb, read_philly, read_swf,
                                  read_trace)


# --- shipped data ---------------------------------------------------------------------------

def test_provenance_checksums_match_files():
    text = (ROOT / "data" / "PROVENANCE.md").read_text()
    rows = re.findall(r"^\| `(traces/[^`]+)` \|.*\| `([0-9a-f]{64})` \| (\d+) \|$", text, re.M)
    assert {name for name, _, _ in rows} == {
        "traces/alea_hpc2n.swf", "traces/alea_hpc2n.swf.machines", "traces/rfold_philly_trace.csv",
        "traces/alea_wagap-2013.swf", "traces/alea_wagap-2013.swf.machines",
        "traces/NASA-iPSC-1993-3.1-cln.swf.gz", "traces/lublin_256.swf", "traces/lesson_small.csv"}
    for name, digest, size in rows:
        blob = (ROOT / "data" / name).read_bytes()
        assert hashlib.sha256(blob).hexdigest() == digest, name
        assert len(blob) == int(size), name


@needs_shared
@pytest.mark.parametrize("name, shared", [
    ("alea_hpc2n.swf", "pwa/alea_hpc2n.swf"),
    ("alea_hpc2n.swf.machines", "pwa/alea_hpc2n.swf.machines"),
    ("rfold_philly_trace.csv", "philly/rfold_philly_trace.csv"),
    ("alea_wagap-2013.swf", "pwa/alea_wagap-2013.swf"),
    ("NASA-iPSC-1993-3.1-cln.swf.gz", "pwa/NASA-iPSC-1993-3.1-cln.swf.gz"),
    ("lublin_256.swf", "synthetic/lublin_256.swf"),
])
def test_shipped_copies_are_byte_identical(name, shared):
    assert (DATA / name).read_bytes() == (SHARED / shared).read_bytes()


# --- gzip, streams, detection ---------------------------------------------------------------

def test_gzip_inputs(tmp_path):
    gz = tmp_path / "hpc2n.swf.gz"
    gz.write_bytes(gzip.compress(HPC2N.read_bytes()))
    plain = read_swf(HPC2N, cores_per_node=2)
    packed = read_trace(gz, cores_per_node=2)
    assert packed.fmt == "swf" and packed.jobs == plain.jobs
    # gzip is sniffed from the bytes, not the name
    odd = tmp_path / "lesson.csv"
    odd.write_bytes(gzip.compress(LESSON.read_bytes()))
    assert read_trace(odd, cores_per_node=32, gpus_per_node=8).jobs == \
        read_trace(LESSON, cores_per_node=32, gpus_per_node=8).jobs
    pg = tmp_path / "philly.csv.gz"
    with gzip.open(pg, "wb") as out, open(PHILLY, "rb") as src:
        shutil.copyfileobj(src, out)
    r = read_trace(pg, cores_per_node=32, gpus_per_node=8, limit=1000)
    assert r.fmt == "philly" and len(r.jobs) == 1000


def test_nasa_gzip_swf_without_requested_times():
    r = read_trace(DATA / "NASA-iPSC-1993-3.1-cln.swf.gz", cores_per_node=1)
    assert (len(r.jobs), r.skipped, r.clamped) == (18066, 173, 0)
    assert all(j.time_limit in USER_LADDER or j.time_limit % DAY == 0 for j in r.jobs)
    assert all(j.time_limit >= 2 * j.runtime for j in r.jobs)


def test_detect_format_on_shipped_files():
    assert detect_format(HPC2N) == "swf"
    assert detect_format(PHILLY) == "philly"
    assert detect_format(LESSON) == "native"
    assert read_trace(PHILLY, cores_per_node=32, gpus_per_node=8, limit=5).fmt == "philly"


@needs_shared
@pytest.mark.parametrize("rel, fmt", [
    ("alibaba-openb/openb_pod_list_default.csv", "openb"),
    ("alibaba-openb/openb_pod_list_gpuspec33.csv", "openb"),
    ("alibaba-openb/rfold_alibaba_v2023.csv", "philly"),
    ("synthetic/lublin_256.swf", "swf"),
    ("pwa/NASA-iPSC-1993-3.1-cln.swf.gz", "swf"),
])
def test_detect_format_on_shared_files(rel, fmt):
    assert detect_format(SHARED / rel) == fmt


def test_detect_from_streams_and_headerless_swf():
    swf = "1 0 -1 100 2 -1 -1 2 600 -1 1 1 1 -1 -1 1 -1 -1\n"
    assert detect_format(io.StringIO(swf)) == "swf"
    r = read_trace(io.StringIO(swf), cores_per_node=1)
    assert r.fmt == "swf" and (r.jobs[0].nodes, r.jobs[0].time_limit) == (2, 600.0)
    native = "# lesson\nid,submit,runtime,limit,nodes,gpus_per_node\n1,0,60,5,1,1\n"
    r = read_trace(io.StringIO(native), cores_per_node=4, gpus_per_node=1)
    assert r.fmt == "native" and r.jobs[0].time_limit == 300.0
    with pytest.raises(ValueError, match="cannot tell"):
        read_trace(io.StringIO("hello,world\n1,2\n"), cores_per_node=1, gpus_per_node=0)
    with pytest.raises(ValueError, match="unknown trace format"):
        read_trace(LESSON, fmt="pbs", cores_per_node=1, gpus_per_node=0)


def test_explicit_format_overrides_detection(tmp_path):
    path = tmp_path / "trace.txt"
    path.write_text(LESSON.read_text())
    r = read_trace(path, fmt="native", cores_per_node=32, gpus_per_node=8)
    assert len(r.jobs) == 12


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        read_swf(HPC2N, cores_per_node=0)
    with pytest.raises(ValueError):
        read_swf(HPC2N, cores_per_node=2, limit=-1)


def test_empty_inputs():
    assert read_swf(io.StringIO(""), cores_per_node=1).jobs == []
    assert read_native(io.StringIO("# nothing\n"), cores_per_node=1, gpus_per_node=0).jobs == []
    assert read_openb(io.StringIO(""), cores_per_node=1, gpus_per_node=0).jobs == []


def _mangle(rng: random.Random, line: str, sep: str) -> str:
    fields = line.rstrip("\n").split(sep)
    action = rng.randrange(6)
    if action == 0 and len(fields) > 1:
        del fields[rng.randrange(len(fields))]
    elif action == 1:
        junk = ["x", "", "-1", "nan", "1e999", "\x00", "'"]
        fields[rng.randrange(len(fields))] = rng.choice(junk)
    elif action == 2:
        fields.insert(rng.randrange(len(fields)), "7")
    elif action == 3:
        fields[rng.randrange(len(fields))] = "-" + fields[rng.randrange(len(fields))]
    elif action == 4:
        return line[: rng.randrange(len(line))] + "\n"
    return sep.join(fields) + "\n"


@pytest.mark.parametrize("path, reader, sep, header_lines, kw", [
    (HPC2N, read_swf, " ", 0, dict(cores_per_node=2)),
    (PHILLY, read_philly, ",", 1, dict(cores_per_node=32, gpus_per_node=8)),
    (OPENB, read_openb, ",", 1, dict(cores_per_node=128, gpus_per_node=8)),
])
def test_mangled_real_lines_never_raise_and_every_line_is_accounted_for(path, reader, sep,
                                                                         header_lines, kw):
    if not path.exists():
        pytest.skip("trace not present")
    rng = random.Random(1)
    with open(path) as fh:
        lines = [next(fh) for _ in range(2000)]
    head, body = lines[:header_lines], lines[header_lines:]
    if sep == " ":
        body = [ln for ln in body if not ln.startswith(";")]
        body = [" ".join(ln.split()) + "\n" for ln in body]
    mangled = [(_mangle(rng, ln, sep) if rng.random() < 0.5 else ln) for ln in body]
    data = [ln for ln in mangled if ln.strip() and not ln.lstrip().startswith((";", "#"))]
    r = reader(io.StringIO("".join(head + mangled)), **kw)
    assert len(r.jobs) + r.skipped == len(data)
    assert r.skipped > 100 and len(r.jobs) > 500
    assert all(j.runtime > 0 and j.nodes >= 1 and j.cpus_per_node >= 1 for j in r.jobs)
