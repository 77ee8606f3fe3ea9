"""Ray: the demo field's games/s on a local two-node Ray cluster against a local run on
the same cores, and the driver's own CPU cost per game.

- **Local**: ``python -m arena tournament FILE --fresh --out DIR`` (the demo file with
  :data:`DEALS` deals, the Node.js sample left out where it cannot run), default
  concurrency (the usable cores).
- **Ray**: the same file with ``--ray ADDRESS``, against a ``ray.cluster_utils.Cluster``
  of two nodes of one CPU each, on the same machine. Everything Ray runs (the cluster and
  the driver) runs in a network namespace this benchmark makes, where only loopback
  exists (``unshare --net --map-root-user``, then ``ip link set lo up``): outside one Ray
  binds to the machine's non-loopback address. Cluster start-up is not timed: games/s
  come from the arena's ``played N games in X s`` line (``ray.init`` to the last game).
- **Driver cost per game**: the driver process's CPU time (user + system, from
  ``getrusage`` of its children) in a run of :data:`DEALS` deals minus one of
  :data:`SMALL_DEALS`, divided by the difference in games: start-up and the leaderboard
  cancel out. One driver on one core then keeps up with ``1 / cost`` games/s, so at
  ``G`` games/s per CPU of the cluster it saturates at ``1 / (cost x G)`` CPUs.

Each round runs local, ray and the small ray run once, in rotated order; medians over
:data:`ROUNDS` rounds at the default ``--repeat`` (in proportion otherwise). The bar:
ray / local games/s >= :data:`BAR` (the goal :data:`GOAL`). Run alone as
``python -m benchmarks.ray [--repeat N] [--json FILE]``.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any, TextIO

from arena.proc.tasks import usable_cores
from benchmarks import DEFAULT_REPEAT, Settings
from benchmarks.grpc import ROOT
from benchmarks.isolation import PLAYED, run_arena
from benchmarks.tournament import demo_without_node

TITLE = ("ray: demo games/s on a local two-node Ray cluster vs a local run on the same "
         "cores; the driver's CPU cost per game")

DEALS = 4
SMALL_DEALS = 1
ROUNDS = 2
BAR = 0.8
GOAL = 0.9
RUN_TIMEOUT_S = 600.0


def demo_file(folder: Path, deals: int) -> Path:
    text, _ = demo_without_node()
    text, count = re.subn(r"(?m)^deals\s*=\s*\d+", f"deals = {deals}", text)
    if count != 1:
        raise RuntimeError("the demo file: expected one 'deals = N' line")
    path = folder / f"demo-{deals}.toml"
    path.write_text(text)
    return path


def inside(file: Path, out: Path) -> dict[str, Any]:
    """In the namespace: a two-node cluster, one driver run to its end; its figures."""
    from ray.cluster_utils import Cluster

    cluster: Any = Cluster(initialize_head=True,
                           head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [sys.executable, "-m", "arena", "tournament", str(file), "--fresh", "--out",
             str(out), "--resamples", "100", "--ray", cluster.address],
            cwd=ROOT, text=True, capture_output=True, timeout=RUN_TIMEOUT_S, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        cluster.shutdown()
    found = PLAYED.search(done.stdout.replace("\n", " "))
    if done.returncode != 0 or found is None:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"arena tournament --ray exited with {done.returncode}: "
                           + " | ".join(tail))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"games": int(found[1]), "seconds": float(found[2]), "driver_cpu_s": cpu}


def run_ray(file: Path, work: Path, tag: str) -> dict[str, Any]:
    out = work / f"{tag}-out"
    script = (f"ip link set lo up && exec {sys.executable} -m benchmarks.ray --inside "
              f"{file} {out}")
    done = subprocess.run(["unshare", "--net", "--map-root-user", "sh", "-c", script],
                          cwd=ROOT, text=True, capture_output=True, timeout=RUN_TIMEOUT_S,
                          check=False)  # Ray's own TMPDIR: its socket paths are long
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        raise RuntimeError("the Ray run in a network namespace failed: " + " | ".join(tail))
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def run(settings: Settings, out: TextIO) -> dict[str, Any]:
    """Measure, print the table to ``out``, return the figures."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise RuntimeError("ray is not installed: pip install 'trick-arena[ray]'") from None
    rounds = max(1, round(settings.repeat * ROUNDS / DEFAULT_REPEAT))
    local: list[float] = []
    on_ray: list[float] = []
    costs: list[float] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-ray-") as tmp:
        work = Path(tmp)
        big, small = demo_file(work, DEALS), demo_file(work, SMALL_DEALS)
        for r in range(rounds):
            order = ["local", "ray", "small"]
            order = order[r % 3:] + order[:r % 3]
            results: dict[str, Any] = {}
            for kind in order:
                tag = f"{kind}-{r}"
                if kind == "local":
                    results[kind] = run_arena(big, work, tag).games_per_s
                else:
                    results[kind] = run_ray(big if kind == "ray" else small, work, tag)
            local.append(results["local"])
            ray_run, small_run = results["ray"], results["small"]
            on_ray.append(ray_run["games"] / ray_run["seconds"])
            costs.append((ray_run["driver_cpu_s"] - small_run["driver_cpu_s"])
                         / max(1, ray_run["games"] - small_run["games"]))
            print(f"round {r + 1}/{rounds}: local {local[-1]:.2f} games/s, ray "
                  f"{on_ray[-1]:.2f} games/s, driver {1000 * costs[-1]:.1f} ms CPU/game",
                  file=out, flush=True)
    cores = usable_cores()
    ratio = median(on_ray) / median(local) if median(local) else 0.0
    cost = median(costs)
    per_cpu = median(local) / cores
    saturation = 1 / (cost * per_cpu) if cost > 0 and per_cpu > 0 else float("inf")
    verdict = "meets the goal" if ratio >= GOAL else "meets the bar" if ratio >= BAR \
        else "BELOW THE BAR"
    print(f"demo field, {DEALS} deals: local {median(local):.2f} games/s, two-node Ray "
          f"cluster {median(on_ray):.2f} games/s on the same {cores} cores: ratio "
          f"{ratio:.2f} (bar {BAR}, goal {GOAL}): {verdict}", file=out)
    print(f"driver: {1000 * cost:.1f} ms CPU per game: one core keeps up with "
          f"{1 / cost if cost > 0 else float('inf'):.0f} games/s, i.e. a cluster of about "
          f"{saturation:.0f} CPUs at {per_cpu:.2f} games/s per CPU; this benchmark took "
          f"{time.perf_counter() - began:.0f} s", file=out)
    return {"rounds": rounds, "deals": DEALS, "local_games_per_s": local,
            "ray_games_per_s": on_ray, "ratio": round(ratio, 3), "bar": BAR, "goal": GOAL,
            "driver_cpu_ms_per_game": [round(1000 * c, 2) for c in costs],
            "saturation_cpus": round(saturation, 1), "cores": cores}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.ray [--repeat N] [--json FILE]``: this benchmark alone."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--inside"]:
        print(json.dumps(inside(Path(args[1]), Path(args[2]))))
        return 0
    from benchmarks.__main__ import main as bench_main

    return bench_main(["--only", "ray", *args])


if __name__ == "__main__":
    sys.exit(main())
