"""``scontrol show config``: the settings the controller runs with, named as Slurm names them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from minislurm.core.cluster import MAX_SCRIPT_SIZE
from minislurm.core.timefmt import format_elapsed

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def _secs(x: float) -> str:
    return "UNLIMITED" if x == math.inf else f"{int(x)} sec"


def config_view(ctl: "Controller") -> dict:
    c = ctl.config
    s, p = c.sched, c.priority
    params = (f"bf_interval={int(s.bf_interval)},bf_window={int(s.bf_window // 60)},"
              f"bf_resolution={int(s.bf_resolution)},bf_max_job_test={s.bf_max_job_test},"
              f"requeue_delay={int(s.requeue_delay)}"
              + (f",max_script_size={s.max_script_size}" if s.max_script_size != MAX_SCRIPT_SIZE else ""))
    items = {
        "ClusterName": c.cluster_name,
        "SchedulerType": s.scheduler_type,
        "SchedulerParameters": params,
        "minislurm BackfillPolicy": s.policy,
        "SelectType": "select/cons_tres",
        "PriorityType": p.type,
        "PriorityDecayHalfLife": format_elapsed(p.decay_half_life) if p.decay_half_life != math.inf else "00:00:00",
        "PriorityMaxAge": format_elapsed(p.max_age),
        "PriorityCalcPeriod": f"{int(p.calc_period // 60)} min" if p.calc_period >= 60 else f"{int(p.calc_period)} sec",
        "PriorityWeightAge": p.weight_age, "PriorityWeightFairShare": p.weight_fairshare,
        "PriorityWeightJobSize": p.weight_jobsize, "PriorityWeightPartition": p.weight_partition,
        "PriorityWeightQOS": p.weight_qos, "PriorityFavorSmall": "Yes" if p.favor_small else "No",
        "SlurmdTimeout": _secs(c.slurmd_timeout),
        "ReturnToService": c.return_to_service,
        "JobRequeue": int(c.job_requeue),
        "KillWait": _secs(c.kill_wait),
        "InactiveLimit": _secs(c.inactive_limit),
        "DefMemPerCPU": c.def_mem_per_cpu if c.def_mem_per_cpu else "UNLIMITED",
        "GresTypes": ",".join(sorted(c.gres_types)) or "(null)",
        "StateSaveLocation": str(ctl.store.path.parent),
        "AuthAltTypes": "auth/jwt",
        "MinJobAge": "300 sec",
    }
    return {"config": items}
