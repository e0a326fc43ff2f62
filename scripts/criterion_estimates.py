#!/usr/bin/env python3
"""Criterion's own results, read from the files it writes (not from its printed output).

Criterion writes one directory per benchmark under its home (`$CRITERION_HOME`, else
`$CARGO_TARGET_DIR/criterion`, else `target/criterion`): `<group>/<bench>/new/benchmark.json`
names the benchmark (`full_id`, the id criterion prints) and `new/estimates.json` holds the
estimates of the last run, in ns per iteration. The measuring scripts give every bench process a
home of its own (`CRITERION_HOME`, see `run_env`), so that what they read is that process's run
and nothing older.

    python3 scripts/criterion_estimates.py target/criterion      # id and median of each
"""

import json
import os
import sys


def medians(home):
    """Benchmark id → median time per iteration in ns (`median.point_estimate` of each
    `new/estimates.json` under `home`). Criterion's printed `time:` middle value is its mean or
    slope estimate, not this median."""
    out = {}
    for root, _, files in os.walk(home):
        if os.path.basename(root) != "new" or "estimates.json" not in files:
            continue
        with open(os.path.join(root, "benchmark.json"), encoding="utf-8") as f:
            bench_id = json.load(f)["full_id"]
        with open(os.path.join(root, "estimates.json"), encoding="utf-8") as f:
            out[bench_id] = float(json.load(f)["median"]["point_estimate"])
    return out


def fresh_home(path):
    """An empty directory for one process's criterion results (an older run's are removed)."""
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path, topdown=False):
            for name in files:
                os.remove(os.path.join(root, name))
            for name in dirs:
                os.rmdir(os.path.join(root, name))
    os.makedirs(path, exist_ok=True)
    return path


def run_env(home):
    """The environment of a bench process whose criterion results go to `home`."""
    env = dict(os.environ)
    env["CRITERION_HOME"] = os.path.abspath(home)
    return env


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: criterion_estimates.py CRITERION_HOME")
    found = medians(sys.argv[1])
    if not found:
        sys.exit(f"criterion_estimates: no new/estimates.json under {sys.argv[1]}")
    for bench_id, ns in sorted(found.items()):
        print(f"{bench_id}\t{ns:.3f} ns (median)")
