"""--gpu-bind, --tres-bind, --mincpus and --tmp values refused as sbatch/srun/salloc 22.05 refuse
them (src/common/slurm_opt.c and tres_bind.c of slurm-22-05-9-1; not yet recorded on the twin).
22.05 has no --tres-bind (it came in 23.11): minislurm checks it as 22.05 checks gpu:BIND."""

import pytest

from minislurm.core.options import OptionError, parse_options


def refusal(prog, *argv) -> tuple[str, int]:
    with pytest.raises(OptionError) as exc:
        parse_options(list(argv), prog=prog, now=0.0)
    return exc.value.text, exc.value.exit_code


@pytest.mark.parametrize("prog", ["sbatch", "srun", "salloc"])
def test_bad_values_are_refused(prog):
    assert refusal(prog, "--mincpus=0") == (f'{prog}: error: Invalid numeric value "0" for --mincpus.', 1)
    assert refusal(prog, "--mincpus", "4x") == (f'{prog}: error: Invalid numeric value "4x" for --mincpus.', 1)
    assert refusal(prog, "--tmp=10Q") == (f"{prog}: error: Invalid --tmp specification", 255)
    assert refusal(prog, "--gpu-bind=bogus") == (f"{prog}: error: Invalid --gpu-bind argument: gpu:bogus", 255)
    assert refusal(prog, "--tres-bind=gpu:bogus") == (f"{prog}: error: Invalid --tres-bind argument: gpu:bogus",
                                                      255)
    assert refusal(prog, "--tres-bind=cpu:closest") == (
        f"{prog}: error: Invalid --tres-bind argument: cpu:closest", 255)
    assert refusal(prog, "--gpu-bind=map_gpu:0,x") == (
        f"{prog}: error: Failed to validate x, offending character is x\n"
        f"{prog}: error: Invalid --gpu-bind argument: gpu:map_gpu:0,x", 255)


@pytest.mark.parametrize("argv", [["--mincpus=4"], ["--tmp=10G"], ["--tmp=500"], ["--gpu-bind=closest"],
                                  ["--gpu-bind=none"], ["--gpu-bind=verbose,map_gpu:0,1*2"],
                                  ["--gpu-bind=mask_gpu:0x3,0xc"], ["--gpu-bind=single:1"],
                                  ["--tres-bind=gpu:per_task:1"], ["--tres-bind=gpu:closest;gpu:none"]])
def test_good_values_are_kept(argv):
    spec, _ = parse_options(argv, prog="sbatch", now=0.0)
    name, _, value = argv[0][2:].partition("=")
    assert spec.extra[name] == value


@pytest.mark.parametrize("prog", ["sbatch", "srun", "salloc"])
def test_runtime_is_not_a_22_05_option(prog):
    """--runtime (the runtime plugins) came long after 22.05: getopt's refusal."""
    assert refusal(prog, "--runtime=oci") == (
        f"{prog}: unrecognized option '--runtime=oci'\nTry \"{prog} --help\" for more information", 255)
