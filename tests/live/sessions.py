"""Shell sessions a learner might type, run on minislurm and on the real-Slurm twin (issue 12).

Each session is a bash script whose output (stdout and stderr together, job ids masked as A,
B, C) must be the same on both.  ``sessions/NAME.out`` holds what Slurm 22.05 printed on the
twin (docker/slurm): tests/live/test_slurm_conformance.py replays each script on a minislurm
cluster built from the twin's slurm.conf and compares with that recording (no twin needed), and
tests/docker/test_real_slurm.py runs it on the twin and checks the recording is still true.
Re-record after changing a script: ``python tests/live/sessions.py`` (needs the twin up).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONF = HERE.parents[1] / "docker" / "slurm" / "slurm.conf"

# upto: wait for a condition (30 s at most); gone/running/ended: a job left the queue (and, on
# the twin, a second more for slurmctld to finish it), N of its tasks run, N of its tasks have
# an end in sacct; idle/nodes_idle: no job left, every node idle;
# ids: mask job ids as A, B, C.
HELPERS = r"""upto() { local i; for i in $(seq 150); do eval "$1" && return; sleep 0.2; done; echo "timed out: $1"; }
gone() { upto '[ -z "$(squeue -h -j '$1' -o %i 2>/dev/null)" ]'; [ -z "$TWIN" ] || sleep 1; }
running() { upto '[ "$(squeue -h -r -t R -j '$1' -o %i | wc -l)" = '$2' ]'; }
ended() { upto '[ "$(sacct -X -n -P -j '$1' -o End | grep -vc Unknown)" = '$2' ]'; }  # slurmdbd lags
idle() { upto '[ -z "$(squeue -h -o %i)" ]'; }  # no job left, not even one still COMPLETING
nodes_idle() { upto '[ "$(sinfo -h -o %T | sort -u)" = idle ]'; }  # (a loaded twin once queued an srun after idle)
ids() {
    local e="" n
    for n in A B C; do [ -n "$1" ] && e="$e s/(^|[^0-9a-z])$1([^0-9]|$)/\\1$n\\2/g;"; shift || break; done
    sed -E "$e"
}
exec 2>&1
[ -z "$TWIN" ] || idle  # the twin is shared: an earlier session's job may still be completing
"""

SESSIONS: dict[str, tuple[bool, str]] = {  # name: (as the operator?, script)
    "arrays_and_sacct": (False, r"""a=$(sbatch --parsable -a 1-4 --wrap 'sleep 30'); running $a 4
squeue -h -o '%i %j %T' -j ${a}_2 | ids $a; squeue -h -r -o %i -j ${a}_2,${a}_3 | sort | ids $a
squeue -j ${a}_9; echo "rc=$?"; scancel $a
b=$(sbatch --parsable -a 1-3 --wrap true); gone $b; ended $b 3
sacct -j ${b}_3 -P -o JobID,JobName,State | ids $b
for s in CD cd F,CD F; do sacct -X -P -o JobID,State -s $s -j ${b}_1 | ids $b; done
sacct -X -P -s bogus; echo "rc=$?"
sacct -X -n -P -o JobID -S now-5minutes | grep -c "^${b}_1$"
sacct -X -S bogus; echo "rc=$?"
"""),
    "jobs": (True, r"""
x=$(sbatch --parsable -d afterok:99999 --wrap true); echo "rc=$?"; gone $x
scontrol show job $x | grep -o -E '(JobState|Dependency)=[^ ]*'
f=$(sbatch --parsable --wrap false); gone $f
k=$(sbatch --parsable --kill-on-invalid-dep=yes -d afterok:$f --wrap true); gone $k; ended $k 1
squeue -h -t all -j $k -o '%i %T %r' | ids $k; sacct -X -n -P -j $k -o State,ExitCode
n=$(sbatch --parsable -d afterok:$f --wrap true); upto '[ "$(squeue -h -j '$n' -o %r)" = DependencyNeverSatisfied ]'
squeue -h -j $n -o '%i %T %r' | ids $n; scancel $n
sbatch --test-only --wrap true 2>&1 | sed -E 's/[0-9T:-]{19}/T/' | ids $((n+1)); echo "rc=$?"
sbatch --test-only -N2 -n4 -t 5 --wrap true 2>&1 | sed -E 's/[0-9T:-]{19}/T/' | ids $((n+2))
sbatch --test-only -N3 --wrap true; echo "rc=$?"
h=$(sbatch --parsable --begin=now+1hour --wrap true); echo "next id: $((h-n))"
scontrol hold $h; echo "rc=$?"; squeue -h -j $h -o '%i %T %r' | ids $h
scontrol release $h; echo "rc=$?"; upto '[ "$(squeue -h -j '$h' -o %r)" = BeginTime ]'
scontrol uhold $h; echo "rc=$?"; squeue -h -j $h -o '%i %T %r' | ids $h; scancel $h
r=$(sbatch --parsable --wrap 'sleep 30'); running $r 1
scontrol hold $r; echo "rc=$?"; squeue -h -j $r -o '%i %T %r' | ids $r
scontrol show job $r | grep -o -E '(Priority|JobState)=[^ ]*'; scontrol release $r; echo "rc=$?"; scancel $r
scancel 99999; echo "rc=$?"; scancel $f; echo "rc=$?"; scancel 99999_3; echo "rc=$?"
scancel -v 99999; echo "rc=$?"
scancel -v $f 2>&1 | ids $f; echo "rc=$?"
scancel --signal=USR1 99999; echo "rc=$?"
scancel 1.batch; echo "rc=$?"
"""),
    "hetjob": (False, r"""rm -f go het2.out
n=0; while [ "$n" -lt 20 ]; do n=$(sbatch --test-only --wrap true 2>&1 | grep -o 'Job [0-9]*' | cut -c5-); done
cat > het.sh <<"X"
#!/bin/bash
#SBATCH -J first -c 2 --ntasks-per-node=1
#SBATCH hetjob
#SBATCH -J second -c 2 --ntasks-per-node=1
env | grep -E "HET|^SLURM_JOB_ID=|^SLURM_JOB_NODELIST=|^SLURM_NNODES=|^SLURM_NTASKS=" | sort
while [ ! -e go ]; do sleep 0.2; done
srun -l bash -c 'echo P=$SLURM_PROCID N=$SLURM_NTASKS NN=$SLURM_NNODES J=$SLURM_JOB_ID S=$SLURM_STEP_ID H=$SLURM_HET_SIZE $SLURMD_NODENAME NL=$SLURM_JOB_NODELIST' : -o het2.out bash -c 'echo P=$SLURM_PROCID ID=$SLURM_NODEID J=$SLURM_JOB_ID N=$SLURM_JOB_NAME $SLURMD_NODENAME NL=$SLURM_STEP_NODELIST'
echo "rc=$?"
srun --het-group=1 bash -c 'echo group1 P=$SLURM_PROCID J=$SLURM_JOB_ID $SLURMD_NODENAME NL=$SLURM_JOB_NODELIST'
srun bash -c 'echo default P=$SLURM_PROCID $SLURMD_NODENAME'
srun --het-group=2 true; echo "rc=$?"
X
j=$(sbatch --parsable het.sh); running $j 2
squeue -h -j $j -o '%i %j %T %N' | sort | ids $j
squeue -h -j $((j+1)) -o '%i %j' | ids $j
scontrol show job $j | grep -o -E '(JobId|HetJobId|HetJobOffset|HetJobIdSet|JobName)=[^ ]*' | ids $j $((j+1))
touch go; gone $j; ended $j 2
cat slurm-$j.out | ids $j $((j+1)); cat het2.out | ids $j
sacct -j $j -P -o JobID,JobName,State,ExitCode,NodeList | ids $j
sacct -j $((j+1)) -X -n -P -o JobID,JobIDRaw | ids $j $((j+1))
cat > het3.sh <<"X"
#!/bin/bash
#SBATCH -c 1
#SBATCH hetjob
#SBATCH -c 1
#SBATCH hetjob
#SBATCH -c 1
true
X
p=$(sbatch --parsable het3.sh); upto '[ "$(squeue -h -j '$p' -o %r | sort -u)" = Resources ]'
squeue -h -j $p -o '%i %T %r' | sort | ids $p
scancel $((p+1)) 2>&1 | ids $p $((p+1)); echo "rc=${PIPESTATUS[0]}"
scancel $p; echo "rc=$?"; gone $p; ended $p 3
sacct -j $p -X -P -o JobID,State | sed 's/ by [0-9]*$//' | ids $p
"""),
    "hetjob_requeue": (False, r"""# A heterogeneous job is requeued whole, by its leader; srun --het-group lists and ranges.
rm -f hq-go hq-*.txt hg-*.out
n=0; while [ "$n" -lt 20 ]; do n=$(sbatch --test-only --wrap true 2>&1 | grep -o "Job [0-9]*" | cut -c5-); done
cat > hq.sh <<"X2"
#!/bin/bash
#SBATCH -J first -c 1 -w c1 -o /dev/null
#SBATCH hetjob
#SBATCH -J second -c 1 -w c2
log=hq-$SLURM_JOB_ID.txt
echo "run ${SLURM_RESTART_COUNT:-0}" >> $log  # 22.05 leaves it unset on a first run
srun --het-group=0,1 bash -c 'echo "task $SLURM_PROCID $SLURMD_NODENAME restart=${SLURM_RESTART_COUNT:-0}"' | sort >> $log
while [ ! -e hq-go ]; do sleep 0.2; done
X2
j=$(sbatch --parsable hq.sh); running $j 2; upto '[ "$(grep -sc ^task hq-'$j'.txt)" = 2 ]'
scontrol requeue $((j+1)) 2>&1 | ids $j $((j+1)); echo "rc=${PIPESTATUS[0]}"
scontrol requeue $j; echo "rc=$?"
upto '[ "$(squeue -h -j '$j' -t PD -o %i | wc -l)" = 2 ]'
squeue -h -j $j -o '%i %T %r' | sort | ids $j
scontrol requeue $j 2>&1 | ids $j; echo "rc=${PIPESTATUS[0]}"
scontrol show job $j | grep -o -E '(JobId|JobState|Restarts)=[^ ]*' | ids $j $((j+1))
running $j 2; upto '[ "$(grep -sc ^task hq-'$j'.txt)" = 4 ]'
scontrol requeuehold $j; echo "rc=$?"
upto '[ "$(squeue -h -j '$j' -t PD -o %i | wc -l)" = 2 ]'
squeue -h -j $j -o '%i %T %Q' | sort | ids $j
scontrol release $j; echo "rc=$?"
running $j 2; upto '[ "$(grep -sc ^task hq-'$j'.txt)" = 6 ]'
touch hq-go; gone $j; ended $j 2
ids $j < hq-$j.txt
# -D lists every run; the twin does not keep one order between the components' runs, so the
# records are grouped by JobID (a stable sort keeps each one's runs in order)
sacct -D -j $j -P -o JobID,State,ExitCode | ids $j | { read -r h; echo "$h"; LC_ALL=C sort -s -t'|' -k1,1; }
cat > hg.sh <<"X2"
#!/bin/bash
#SBATCH -c 2 --ntasks-per-node=1
#SBATCH hetjob
#SBATCH -c 2 --ntasks-per-node=1
t='echo P=$SLURM_PROCID N=$SLURM_NTASKS S=$SLURM_STEP_ID $SLURMD_NODENAME NL=$SLURM_STEP_NODELIST'
for g in 0,1 0-1 1,0 0,0 1-1 1-0 x "0 ,1" 0,3 0-5 3,3 3; do
    echo "--- $g"; srun -l --het-group="$g" bash -c "$t" | sort; echo "rc=${PIPESTATUS[0]}"
done
srun -l --het-group=1 bash -c "echo A; $t" : --het-group=0 bash -c "echo B; $t" | sort
srun --het-group=0,1 true : true; echo "rc=$?"
srun --het-group=1 true : --het-group=3 true; echo "rc=$?"
X2
h=$(sbatch --parsable -o hg-%j.out hg.sh); gone $h; ended $h 2
ids $h < hg-$h.out
"""),
    "hetjob_limits": (False, r"""# Each component has its own time limit: the second's ends it alone, the leader's ends the job.
n=0; while [ "$n" -lt 20 ]; do n=$(sbatch --test-only --wrap true 2>&1 | grep -o "Job [0-9]*" | cut -c5-); done
long() { local i; for i in $(seq 750); do eval "$1" && return; sleep 0.2; done; echo "timed out: $1"; }  # 150 s
printf '#!/bin/bash\n#SBATCH -c 1 -t 2 -o /dev/null\n#SBATCH hetjob\n#SBATCH -c 1 -t 1\nsrun sleep 300 : sleep 300\n' > hl2.sh
sed 's/-t 1/-t 3/; s/-t 2/-t 1/' hl2.sh > hl1.sh
a=$(sbatch --parsable hl2.sh); b=$(sbatch --parsable hl1.sh); running $a 2; running $b 2
scontrol show job $a | grep -o -E '(JobId|TimeLimit)=[^ ]*' | ids $a $((a+1))
scontrol show job $b | grep -o -E '(JobId|TimeLimit)=[^ ]*' | ids $b $((b+1))
long '[ -z "$(squeue -h -j '$b' -o %i)" ]'; long '[ "$(squeue -h -j '$a' -o %i)" = '$a'+0 ]'
squeue -h -j $a -o '%i %T' | ids $a
scancel $a; gone $a; ended $a 2; ended $b 2
sacct -X -j $a -P -o JobID,State,ExitCode | sed 's/ by [0-9]*|/|/' | ids $a
sacct -X -j $b -P -o JobID,State,ExitCode | ids $b
"""),
    "tasks": (False, r"""
srun nosuchcommand 2>&1 | sort; echo "rc=${PIPESTATUS[0]}"; idle
srun -N2 -l nosuchcommand 2>&1 | sort; echo "rc=${PIPESTATUS[0]}"
cat > shell.sh <<"X"
#!/bin/bash
trap "echo shell got TERM" TERM
(trap "echo child got TERM; exit 0" TERM; sleep 3 & wait; echo child done) &
sleep 3 & wait $!
echo shell after wait
wait
X
for how in "-b" "-b -s TERM"; do
    j=$(sbatch --parsable -o shell-%j.out shell.sh); running $j 1; sleep 1
    scancel $how $j; echo "rc=$?"; gone $j; ended $j 1
    sed -E 's/[0-9T:-]{19}/T/' shell-$j.out | ids $j; sacct -X -n -P -j $j -o State,ExitCode
done
"""),
    "commands": (True, r"""
j=$(sbatch --parsable --hold --wrap true); scontrol update JobId=$j NumNodes=2; echo "rc=$?"
scontrol show job $j | grep -o -E "NumCPUs=[^ ]*|TRES=[^ ]*"
scontrol update JobId=$j NumNodes=0 2>&1 | ids $j; echo "rc=${PIPESTATUS[0]}"
scontrol release $j; gone $j; squeue -h -t all -j $j -o "%T %D %N"
scontrol update JobId=$j NumNodes=2 2>&1 | ids $j; echo "rc=${PIPESTATUS[0]}"
r=$(sbatch --parsable --wrap "sleep 20"); running $r 1
scontrol update JobId=$r NumNodes=2 2>&1 | ids $r; echo "rc=${PIPESTATUS[0]}"; scancel $r; gone $r
scontrol update PartitionName=gpu MaxTime=2:00:00; echo "rc=$?"
scontrol show partition gpu | grep -o "MaxTime=[^ ]*"; sinfo -h -o %l
scontrol update PartitionName=gpu MaxTime=bogus; echo "rc=$?"
scontrol update PartitionName=nosuch MaxTime=1:00:00; echo "rc=$?"
scontrol update PartitionName=gpu MaxTime=1-00:00:00; sinfo -h -o %l
k=$(sbatch --parsable -N2 --gres=gpu:2 --ntasks-per-node=2 -J myname --wrap "srun sleep 20"); running $k 1
scontrol show job -d $k | grep -E "DerivedExitCode|JOB_GRES"; scontrol show job -d $k | grep -o "GRES=gpu:2(IDX:0-1)" | sort -u
scontrol -o show job $k | wc -l; scontrol -o show partition | cut -c1-40
upto "[ -n \"\$(squeue -n myname -h -o %j)\" ]"; squeue -n myname -h -o "%j"; squeue -n nosuch
upto "[ -n \"\$(sacct -X -n -P --name=myname -o JobName)\" ]"; sacct -X -n -P --name=myname -o JobName | tail -1
upto "[ -n \"\$(sacct -n -X -o ReqTRES -j $k | tr -d ' ')\" ]"
upto "[ -n \"\$(sacct -j $k -n -o JobID | grep $k.0)\" ]"; scancel $k; gone $k; ended $k 1
sacct -j $k -P -o JobID,NTasks,ReqTRES,DerivedExitCode | ids $k
"""),
    "time_limits": (False, r"""
j=$(sbatch --parsable -t 2-00:00:00 -J too-long --wrap true)
upto '[ "$(squeue -h -j '$j' -o %r)" = PartitionTimeLimit ]'; squeue -h -j $j -o '%i %j %l %T %r' | ids $j
scontrol update JobId=$j TimeLimit=1-00:00:00; echo "rc=$?"
gone $j; upto '[ "$(sacct -X -n -P -j '$j' --name=too-long -o State)" = COMPLETED ]'  # the twin's slurmdbd may
sacct -X -n -P -j $j --name=too-long -o JobName,Timelimit,State                     # hold an older job $j
"""),
    "reservations": (True, r"""# Only this session's reservations: the twin is shared.
drop() { for r in r1 r2 r3 r4 r5 r6 r7 n1 n2 i1 i2; do scontrol delete ReservationName=$r >/dev/null 2>&1; done; }
masked() { sed -E 's/(Start|End)Time=[^ ]+/\1Time=T/g'; }
drop
scontrol create reservation ReservationName=r1 Nodes=c1 StartTime=now Duration=3-00:00:00 Users=root; echo "rc=$?"
scontrol show res r1 | masked
scontrol create reservation ReservationName=r2 Nodes=c1 StartTime=now Duration=60 Users=root; echo "rc=$?"
scontrol create reservation ReservationName=r3 Nodes=c9 StartTime=now Duration=60 Users=root; echo "rc=$?"
scontrol create reservation ReservationName=r4 Nodes=c2 StartTime=now Duration=60; echo "rc=$?"
scontrol create reservation ReservationName=r5 Nodes=c2 StartTime=now Duration=60 Users=root Flags=BOGUS; echo "rc=$?"
scontrol create reservation ReservationName=r6 Nodes=c2 StartTime=now Duration=bogus Users=root; echo "rc=$?"
scontrol create reservation ReservationName=r7 Nodes=c2 StartTime=now Duration=60 Users=nosuchuser; echo "rc=$?"
upto '[ "$(sinfo -h -n c1 -o %t)" = resv ]'; sinfo
a=$(sbatch --parsable -N2 --wrap 'sleep 60'); b=$(sbatch --parsable --wrap 'sleep 60')
c=$(sbatch --parsable -w c1 --wrap 'sleep 60'); running $b 1
upto '[ "$(squeue -h -j '$a,$c' -o %r | grep -c None)" = 0 ]'
squeue -S i -o '%i %T %N %r' | ids $a $b $c; scontrol show job $c | grep -o 'Reason=[^ ]*'
scancel $a $b $c; gone $b
d=$(sbatch --parsable --reservation=r1 --wrap 'sleep 60'); running $d 1
scontrol delete ReservationName=r1; echo "rc=$?"
scancel $d; gone $d; scontrol delete reservation r1; echo "rc=$?"
scontrol delete ReservationName=r1; echo "rc=$?"
e=$(sbatch --parsable -w c2 --wrap 'sleep 60'); running $e 1
scontrol create reservation ReservationName=n2 NodeCnt=2 StartTime=now Duration=60 Users=root; echo "rc=$?"
scontrol create reservation ReservationName=n1 NodeCnt=1 StartTime=now Duration=60 Accounts=default Flags=MAINT
upto '[ "$(sinfo -h -n c1 -o %t)" = maint ]'; sinfo
scontrol show res n1 | masked
scontrol create reservation ReservationName=i1 Nodes=c2 StartTime=now+1day Duration=21-00:00:00 Users=root
scontrol create reservation ReservationName=i2 Nodes=c2 StartTime=now Duration=60 Users=root Flags=IGNORE_JOBS
for r in n1 i1 i2; do scontrol show res $r -o; done | masked; scancel $e; drop
"""),
    "divergences": (False, r"""# Issue 22 item 7: a pending job's record, squeue's %b and %L, srun's lines, a node's record.
fields() { scontrol show job $1 | grep -o -E '(NumNodes|NumCPUs|NumTasks|MinCPUsNode|MinMemory[A-Za-z]*|TresPer[A-Za-z]*|Command)=[^ ]*' | sed "s|$PWD|PWD|" | paste -sd' '; }
for args in "" "-N2" "-N1-2" "-n4" "-N2 --mem=2G" "--mem-per-cpu=500" "--gres=gpu:2" "--gpus-per-node=1" "--gpus=3" "-n2 --gpus-per-task=1"; do
    j=$(sbatch --parsable --hold $args --wrap true); echo "[$args] $(fields $j)"; scancel $j
done
printf '#!/bin/bash\ntrue\n' > job.sh; j=$(sbatch --parsable --hold job.sh a b); fields $j
scontrol show job $j | grep -o 'AllocNode:Sid=[^ ]*' | sed -E 's/=[a-z0-9.-]+:[0-9]+$/=HOST:SID/'; scancel $j
j=$(sbatch --parsable --hold -t 10 --gres=gpu:2 --wrap true); k=$(sbatch --parsable --hold -t 1-0 --wrap true)
m=$(sbatch --parsable --hold --gpus-per-node=1 --wrap true); squeue -S i -j $j,$k,$m -o '%b %L %l'; scancel $j $k $m
r=$(sbatch --parsable -t 10 --gres=gpu:1 --wrap 'sleep 30'); running $r 1
squeue -h -j $r -o '%b|%L' | sed -E 's/\|(10:00|9:5[0-9])$/|10:00 or less/'; scancel $r; gone $r; idle; nodes_idle
srun -N2 --ntasks-per-node=2 -l bash -c 'sleep $((3 - SLURM_PROCID)); exit $((SLURM_PROCID + 1))'; echo "rc=$?"
srun -N2 --ntasks-per-node=2 bash -c 'sleep $(((SLURM_PROCID + 1) % 4)); exit 1'; echo "rc=$?"
srun -N2 --ntasks-per-node=2 bash -c 'exit 3' 2>&1 | sort; idle
b=$(sbatch --parsable -N2 --exclusive --wrap 'sleep 60'); running $b 1
srun -J waiting true > pending.txt 2>&1 & p=$!
upto '[ -n "$(squeue -h -n waiting -o %i)" ]'; j=$(squeue -h -n waiting -o %i); upto 'grep -q queued pending.txt'
scancel $j; wait $p; echo "rc=$?"; ids $j < pending.txt; scancel $b; idle
scontrol show node c1 | sed -E 's/(BootTime|SlurmdStartTime|LastBusyTime)=[^ ]+/\1=T/g; s/CPULoad=[0-9.]+/CPULoad=L/; s/NodeAddr=[^ ]+/NodeAddr=A/; s/FreeMem=[0-9]+/FreeMem=M/; s/OS=Linux .*/OS=Linux K/'
"""),
    # Array tasks take job ids as they start; the last one keeps the array's (issue 22 item 3).
    "array_ids": (False, r"""a=$(sbatch --parsable --array=0-3%1 --wrap 'sleep 4'); running $a 1
mask() { perl -pe "s/(?<![0-9_=])$a(?![0-9])/A/g; s/(?<![0-9_=])$((a + 1))(?![0-9])/B/g; s/(?<![0-9_=])$((a + 2))(?![0-9])/C/g; s/Id=$a /Id=A /g"; }
squeue -h -r -o '%A %i %T' | sort | mask
scontrol show job ${a}_2 | grep -o 'JobId=[^ ]* ArrayJobId=[^ ]* ArrayTaskId=[^ ]*' | mask
scancel ${a}_2; upto '[ "$(squeue -h -r -o %i | wc -l)" = 3 ]'; squeue -h -r -o '%A %i %T' | sort | mask
scontrol uhold ${a}_3; squeue -h -r -o '%A %i %T %r' | sort | mask; scontrol release ${a}_3
gone $a; upto '[ "$(sacct -X -n -P -j '$a' -o End | grep -vc Unknown)" -ge 3 ]'; sacct -X -n -P -j $a -o JobID,JobIDRaw,State | mask
"""),
    # srun's --task-prolog/--task-epilog and --propagate (issue 22 item 4).
    "task_scripts": (False, r"""W=$PWD; rm -f epi-*.txt hang.txt ran.txt
cat > prolog.sh <<'E'
#!/bin/bash
echo "export GREETING = hi from $SLURM_TASK_PID"
echo "unset DROPME"
echo "print   prolog of task $SLURM_PROCID on $SLURMD_NODENAME"
echo "anything else is ignored"
echo "to stderr" >&2
E
printf '#!/bin/bash\nexit 3\n' > refuse.sh; printf '#!/bin/bash\nkill -9 $$\n' > killed.sh
printf '#!/bin/bash\necho "$SLURM_SCRIPT_CONTEXT $SLURMD_NODENAME $SLURM_PROCID" > epi-$SLURM_PROCID.txt\necho no\n' > epilog.sh
printf '#!/bin/bash\nexit 4\n' > four.sh; printf '#!/bin/bash\necho started > hang.txt; sleep 60; echo finished > hang.txt\n' > hang.sh
chmod +x *.sh
DROPME=here srun -N2 -n2 -l --task-prolog=$W/prolog.sh bash -c 'echo "[$GREETING]|${DROPME-gone}|$SLURM_SCRIPT_CONTEXT|$(($$ == ${GREETING##* }))"' | sed -E 's/from [0-9]+/from PID/' | sort
srun -n1 --task-prolog $W/refuse.sh touch ran.txt 2>&1 | sort; echo "rc=${PIPESTATUS[0]}"; ls ran.txt
for p in prolog.sh /nonexistent $W/killed.sh; do srun -n1 --task-prolog=$p true 2>&1 | sort; echo "rc=${PIPESTATUS[0]}"; done
SLURM_TASK_PROLOG=$W/prolog.sh srun -n1 bash -c 'echo "[$GREETING]"' | sed -E 's/[0-9]+]/PID]/'
srun -N2 -n2 --task-epilog=$W/epilog.sh true; echo "rc=$?"; cat epi-*.txt
for e in $W/four.sh $W/epilog.sh /nonexistent; do srun -n1 -l --task-epilog=$e true; echo "rc=$?"; done
s=$SECONDS; srun -n1 --task-epilog=$W/hang.sh true; echo "rc=$? $((SECONDS - s >= 5 && SECONDS - s < 15))"; sleep 1; cat hang.txt
(ulimit -S -n 333; ulimit -S -c 0
 srun -n1 bash -c 'echo "nofile=$(ulimit -S -n) core=$(ulimit -S -c) vars=${!SLURM_RLIMIT_*}"'
 srun -n1 --propagate=NONE bash -c '[ "$(ulimit -S -n)" = 333 ] && echo sent || echo "the node'"'"'s"'
 srun -n1 --propagate=CORE bash -c 'echo "nofile sent: $([ "$(ulimit -S -n)" = 333 ] && echo yes || echo no), core=$(ulimit -S -c)"'
 srun --propagate=NOFILE,BOGUS true; echo "rc=$?"; sbatch --propagate=FOO --wrap true; echo "rc=$?"
 sbatch --wait -o lim.out --wrap 'echo "nofile=$(ulimit -S -n)"; srun bash -c "ulimit -S -n"' > /dev/null; cat lim.out)
"""),
    # srun -v: its options, the allocation, the launch and the tasks' ends (issue 22 item 4).
    "srun_verbose": (False, r"""j=$(sbatch --parsable --hold --wrap true); scancel $j
srun -v -n1 true 2>&1 | ids $((j + 1))
srun -v -N2 -n2 -l -t 5 -J nm --gres=gpu:1 -o none --open-mode=append -K --cpu-bind=none --begin=now true 2>&1 \
    | sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}/T/' | ids $((j + 2)) | sort
idle  # --exclusive waits while the last step's job is still COMPLETING (and says so)
srun -v -n2 -t 1-0 --exclusive -D /tmp -i none --export=ALL --mem=1G bash -c 'exit $SLURM_PROCID' 2>&1 | ids $((j + 3)) | sort
(ulimit -S -c 0; SLURM_JOB_NAME=fromenv srun -vv -n1 -w c2 --propagate=NOFILE,CORE true 2>&1) \
    | grep -v -E 'debug: +(propagating RLIMIT_NOFILE|propagating SLURM_PRIO|[A-Z][a-z]|port |initialized|auth|hash|mpi|requesting|cpus |launch returned|task 0 done|IO thread|Leaving|Started)' | ids $((j + 4))
b=$(sbatch --parsable -N2 -o inside.out --wrap 'srun -v -n2 true 2>&1 | sort'); gone $b; ids $b < inside.out
"""),
    "step_cancel": (False, r"""# Cancelled steps: slurmstepd's JOB line in a batch job's output, its STEP line from srun's own job.
# (The batch job's inner srun may be killed before its step's STEP line reaches it: on Slurm that line
# comes or not, by a race, so only the JOB line is compared there.  srun's own job prints it as a rule,
# but a loaded twin once lost it too, so it is not compared there either: tests/live/test_srun.py
# checks that minislurm's srun prints it.)
rm -f batch.out; b=$(sbatch --parsable -o batch.out --wrap 'srun bash -c "echo started; sleep 60"'); upto 'grep -qs started batch.out'
scancel $b; gone $b; upto 'grep -qs "JOB $b" batch.out'; grep "JOB $b" batch.out | sed -E 's/[0-9T:-]{19}/T/' | ids $b
upto '[ "$(sacct -n -P -j '$b' -o End | grep -vc Unknown)" = 3 ]'; sacct -n -P -j $b -o JobID,State,ExitCode,DerivedExitCode | sed 's/ by [0-9]*//' | ids $b
srun -J own sleep 60 > own.txt 2>&1 & p=$!
upto '[ "$(squeue -h -n own -t R -o %i)" != "" ]'; j=$(squeue -h -n own -o %i); sleep 1
scancel $j; wait $p; echo "rc=$?"; grep -v "STEP $j.0 ON .* CANCELLED AT" own.txt | ids $j
"""),
    # Issue 25 item 2: a reservation by count swaps a lost node for a free one, flag or not.
    "reservation_spares": (True, r"""for r in sp1 sp2 sp3; do scontrol delete ReservationName=$r >/dev/null 2>&1; done
nodes() { scontrol show res $1 | grep -o -E "Nodes=[^ ]*"; }
scontrol create reservation ReservationName=sp1 NodeCnt=1 StartTime=now Duration=10 Users=root Flags=REPLACE_DOWN; echo "rc=$?"
scontrol show res sp1 | grep -o -E "(Nodes|Flags)=[^ ]*"
j=$(sbatch --parsable --reservation=sp1 --requeue -o /dev/null --wrap 'sleep 60'); running $j 1; squeue -h -j $j -o '%T %N'
scontrol update NodeName=c1 State=DRAIN Reason=failing; echo "rc=$?"
upto '[ "$(nodes sp1)" = Nodes=c2 ]'; nodes sp1; squeue -h -j $j -o '%T %N'
scontrol requeue $j; upto '[ "$(squeue -h -j '$j' -o %T)" = RUNNING ]'; squeue -h -j $j -o '%T %N'
scancel $j; gone $j; scontrol update NodeName=c1 State=RESUME; scontrol delete ReservationName=sp1; idle
scontrol create reservation ReservationName=sp2 NodeCnt=1 StartTime=now Duration=10 Users=root; echo "rc=$?"
n=$(nodes sp2 | cut -d= -f2); scontrol update NodeName=$n State=DRAIN Reason=flaky
upto '[ "$(nodes sp2)" != "Nodes=$n" ]'; [ "$(nodes sp2)" != "Nodes=$n" ] && echo "replaced without the flag"
scontrol update NodeName=$n State=RESUME; scontrol delete ReservationName=sp2
scontrol create reservation ReservationName=sp3 Nodes=c1 StartTime=now Duration=10 Users=root Flags=REPLACE_DOWN; echo "rc=$?"
"""),
    # sdiag after a reset: its layout (numbers, dates and the RPC lines masked: which RPCs a
    # command sends differs), with a job waiting so that both schedulers have cycles to report.
    "sdiag": (True, r"""sdiag -r
b=$(sbatch --parsable --exclusive -N2 -o /dev/null --wrap 'sleep 30'); running $b 1
w=$(sbatch --parsable -N2 -o /dev/null --wrap true); sleep 5; squeue -h -j $w -o '%T %r'
sdiag | sed -E 's/[A-Z][a-z]{2} [A-Z][a-z]{2} [0-9]{2} [0-9:]{8} [0-9]{4}/DATE/; s/[0-9]+/N/g' | grep -v ') count:N'
scancel $b $w; gone $b; gone $w
sdiag -M nosuch; echo "rc=$?"
sdiag --usage
"""),
    # squeue -s: the running steps, a batch job's own steps included.
    "squeue_steps": (False, r"""b=$(sbatch --parsable -J stepper -o /dev/null --wrap 'srun -J inner sleep 30')
upto '[ -n "$(squeue -h -s | grep "$b\.0 ")" ]'; sleep 1
mask() { sed -E 's/ [0-9]:[0-9]{2} / X:XX /; s/ +(student|root) / U /' | ids $b | sed -E '/STEPID/! s/^ +//'; }  # ids differ in length
squeue -s | mask; squeue -h -s $b.0 | mask; squeue --steps=$b.5 | mask
scancel $b; gone $b; squeue -s
"""),
    # Steps share their job's GPUs and CPUs (several srun & in one allocation): each step gets its
    # own GPUs and CPUs, a step that finds them taken waits (a minute or two on 22.05, which has
    # no wake-up: SLOW), a step without a GPU option wants all of the job's, --overlap shares.
    "step_gpus": (False, r"""rm -rf steps && mkdir steps && cd steps
n=0; while [ "$n" -lt 20 ]; do n=$(sbatch --test-only --wrap true 2>&1 | grep -o 'Job [0-9]*' | cut -c5-); done
cat > show.sh <<"X"
#!/bin/bash
echo "$1: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS=$SLURM_STEP_GPUS GPU_DEVICE_ORDINAL=$GPU_DEVICE_ORDINAL SLURM_GPUS_ON_NODE=$SLURM_GPUS_ON_NODE SLURM_CPUS_ON_NODE=$SLURM_CPUS_ON_NODE"
X
cat > run.sh <<"X"
#!/bin/bash
echo "run $1 on GPU $CUDA_VISIBLE_DEVICES with $SLURM_CPUS_ON_NODE CPU"; touch started-$1
while [ ! -e stop-$1 ]; do sleep 0.2; done
X
cat > gpus.sh <<"X"
#!/bin/bash
#SBATCH -N1 -n8 --gres=gpu:4
upto() { local i; for i in $(seq 300); do eval "$1" && return; sleep 0.2; done; echo "timed out: $1"; }
srun -n1 --gres=gpu:1 ./show.sh gres=gpu:1
srun -n1 --gpus=1 ./show.sh gpus=1
srun -n2 --gpus-per-task=1 -l ./show.sh gpus-per-task=1 | sort
srun -n1 ./show.sh no-gpu-option
srun -n1 --gres=gpu:0 ./show.sh gres=gpu:0
srun --gres=gpu:5 true; echo "rc=$?"
srun --gpus=5 true; echo "rc=$?"
srun -n2 --gpus-per-task=3 true; echo "rc=$?"
for i in 0 1 2 3; do srun -n1 --exact --gres=gpu:1 ./run.sh $i & upto "[ -e started-$i ]"; done
scontrol show step $SLURM_JOB_ID.6 | grep -o -E "(CPUs|Tasks|TRES)=[^ ]*"
srun -I5 -n1 --exact --gres=gpu:1 true; echo "rc=$?"
srun -I5 -n1 --exact true; echo "rc=$?"
srun -I5 -n1 --gres=gpu:0 true; echo "rc=$?"
srun -n1 --exact --gres=gpu:0 ./show.sh exact-gres=gpu:0
srun -n1 --overlap ./show.sh overlap
srun -n1 --exact --gres=gpu:1 ./show.sh fifth & upto "scontrol show step | grep -q State=PENDING"
touch stop-0; wait $!; touch stop-1 stop-2 stop-3; wait
X
cat > cpus.sh <<"X"
#!/bin/bash
upto() { local i; for i in $(seq 300); do eval "$1" && return; sleep 0.2; done; echo "timed out: $1"; }
srun -n1 $1 ./run.sh a & upto "[ -e started-a ]"
srun -I5 -n1 $2 ./show.sh b; echo "rc=$?"; touch stop-a; wait
X
chmod +x *.sh
# A loaded twin may keep a step's resources a moment after its srun returns, so that the next
# srun waits ("step creation temporarily disabled"); before the fifth, no step is meant to wait.
j=$(sbatch --parsable --wait -o gpus.out gpus.sh)
ids $j < gpus.out | sed '/^overlap:/,$!{/step creation temporarily disabled/d;/Step created for job/d}'
upto '[ "$(sacct -n -P -j '$j' -o End | grep -vc Unknown)" = 14 ]'; sacct -j $j -P -o JobID,JobName,AllocTRES | ids $j
for how in "-c4|-c2|-c2" "-n2||" "-n2||--exact" "-n2|--exact|--exact" "-n2|--exact|"; do
    IFS='|' read -r job first second <<< "$how"; rm -f started-* stop-*
    k=$(sbatch --parsable --wait -N1 $job -o cpus.out cpus.sh "$first" "$second"); echo "[$how]"; ids $k < cpus.out
done
"""),
    # What minislurm does not do as 22.05 yet (test_slurm_conformance.OPEN says why).
    "divergences_open": (True, r"""# Issue 22 item 7, still open: tasks per node, sshare's root user, srun on drained nodes and cancelled steps.
for n in 3 4 5 10; do
    echo "-N2 -n$n: $(srun -N2 -n$n -l printenv SLURMD_NODENAME | sort -n | cut -d' ' -f2 | uniq -c | paste -sd' ')"
    idle; srun -N2 -n$n bash -c 'echo "$SLURM_NODEID $SLURM_TASKS_PER_NODE $SLURM_JOB_CPUS_PER_NODE $SLURM_CPUS_ON_NODE"' | sort -u
    idle
done
sshare -a | cut -c1-55 | grep -E '^(Account|-|root| root)'
scontrol update NodeName=c2 State=DRAIN Reason=revoked; echo "rc=$?"
srun -N2 -J waiting true > waiting.txt 2>&1 & p=$!
upto '[ -n "$(squeue -h -n waiting -o %i)" ]'; j=$(squeue -h -n waiting -o %i); upto 'grep -q queued waiting.txt'
squeue -h -j $j -o '%T %r'; scancel $j; wait $p; echo "rc=$?"; ids $j < waiting.txt
scontrol update NodeName=c2 State=RESUME; echo "rc=$?"; idle
srun -J running sleep 60 > running.txt 2>&1 & p=$!
upto '[ "$(squeue -h -n running -t R -o %i)" != "" ]'; j=$(squeue -h -n running -o %i); sleep 1
scancel $j; wait $p; echo "rc=$?"; grep -v "STEP $j.0 ON .* CANCELLED AT" running.txt | ids $j
"""),
}


def script(name: str) -> str:
    return HELPERS + SESSIONS[name][1]


def recorded(name: str) -> str:
    return (HERE / "sessions" / f"{name}.out").read_text()


# Sessions that take longer than two minutes on the twin (22.05's srun retries a waiting step
# only after SlurmctldTimeout, 120 s there; its slurmctld looks for time limits every 30 s).
SLOW = {"step_gpus": 300, "hetjob_limits": 240}


def run_mini(live, name: str, timeout: float | None = None) -> str:
    """The session on minislurm's cluster ``live`` (livekit.Live), its commands first on the PATH."""
    env = live.c.env()
    env["PATH"] = f"{live.c.dir / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    return subprocess.run(["bash", "-c", script(name)], text=True, capture_output=True, env=env,
                          cwd=str(live.work), timeout=timeout or SLOW.get(name, 120)).stdout


def run_twin(name: str, timeout: float | None = None) -> str:
    """The session on the twin's login node: as root for operator sessions, else as student."""
    user = "root" if SESSIONS[name][0] else "student"
    return subprocess.run(["docker", "exec", "-i", "-u", user, "-e", "TWIN=1", "-w", "/shared/work", "minislurm-login",
                           "bash", "-c", script(name)], text=True, capture_output=True,
                          timeout=timeout or SLOW.get(name, 120)).stdout


if __name__ == "__main__":
    for name in sys.argv[1:] or SESSIONS:
        (HERE / "sessions" / f"{name}.out").write_text(run_twin(name))
        print(f"recorded {name}")
