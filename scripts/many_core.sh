#!/usr/bin/env bash
# The many-core synchronisation comparison in one prepared run: the four shapes of
# `benches/many_core_sync.rs` at the sizes first measured on 16 cores, at 16, 8 and 4 workers,
# each beside its OS-thread peers in the same process; the 64-rank stencil alone with its
# per-phase counters (`examples/pipeline_probe`); and the scaling suite. Every step has its own
# time limit, so a stall shows as `rc=124` and the run goes on (about 5 minutes on 16 cores).
#
#   scripts/many_core.sh build [DIR]   # here: build the three binaries, copy them into DIR
#   scripts/many_core.sh run [DIR]     # there: run them (DIR default: many-core-bins)
#
# `build` needs this checkout and a Rust toolchain; `run` needs only DIR (no Cargo on the
# measuring machine). The log goes to stdout and, when `$OUT` is set, to `$OUT/log.txt` (the
# scaling suite's tables, CSV and SVG to `$OUT/scaling`, else to DIR/scaling).
# `MANY_CORE_WORKERS` (default "16 8 4") picks the worker counts of the bench's steps; the
# scaling suite runs `--workers 1,2,4,8,16` unless `MANY_CORE_SCALING` names others.
set -u
mode=${1:-}
dir=${2:-many-core-bins}

case "$mode" in
build)
    set -e
    cd "$(dirname "$0")/.."
    target=${CARGO_TARGET_DIR:-target}
    cargo build --release --example scaling --example pipeline_probe
    bench=$(cargo bench --bench many_core_sync --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "many_core_sync" and m.get("executable"):
        print(m["executable"])')
    mkdir -p "$dir"
    cp "$target/release/examples/scaling" "$target/release/examples/pipeline_probe" "$dir/"
    cp "$bench" "$dir/many_core_sync"
    echo "built into $dir: $(ls "$dir" | tr '\n' ' ')(commit $(git rev-parse --short HEAD))"
    ;;
run)
    for b in many_core_sync pipeline_probe scaling; do
        if [ ! -x "$dir/$b" ]; then
            echo "many_core.sh: $dir/$b is missing: run \`scripts/many_core.sh build $dir\` first" >&2
            exit 2
        fi
    done
    out=${OUT:-$dir}
    mkdir -p "$out"
    exec > >(tee -a "$out/log.txt") 2>&1
    echo "== $(date -u) on $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    step() { # limit-seconds label command...
        local limit=$1 label=$2
        shift 2
        echo "== $label"
        timeout "$limit" "$@"
        echo "rc=$? t=${SECONDS}s"
    }
    export FOOTPRINT_MANY_CORE_SIZES=issue
    for w in ${MANY_CORE_WORKERS:-16 8 4}; do
        # The mutex loop and the tour took 1-3 s per run at 16 workers (seven mutex variants and
        # six tour variants per run); the others < 0.3 s.
        for group in stencil:20 pipeline:20 mutex:60 tsp:60; do
            FOOTPRINT_MANY_CORE_WORKERS=$w FOOTPRINT_MANY_CORE_ONLY=${group%:*} \
                FOOTPRINT_MANY_CORE_PROBE=3 step "${group#*:}" "W=$w ${group%:*}" \
                "$dir/many_core_sync"
        done
    done
    # 64 green ranks on 16 workers, 100 sweeps, with the workers' parks, steals and sleeps per
    # rank and sweep; a run that lasts 2 s prints the runtime's state.
    FOOTPRINT_PROBE_DUMP_MS=2000 step 30 "64-rank stencil, counters" \
        "$dir/pipeline_probe" stencil 16 4 0 100 3
    # The pipeline whose summer sets the pace (0.5 µs of work per message): whether its
    # senders wait on the full channel without the summer waking them.
    step 20 "bottleneck pipeline, counters" "$dir/pipeline_probe" bottleneck 16 16 32 50000 3
    step 20 "bottleneck pipeline, crossbeam" "$dir/pipeline_probe" crossbeam_bottleneck 16 16 32 50000 3
    step 120 "scaling suite" "$dir/scaling" --workers "${MANY_CORE_SCALING:-1,2,4,8,16}" \
        --quick --out "$out/scaling"
    echo "== end t=${SECONDS}s"
    ;;
*)
    echo "usage: scripts/many_core.sh build|run [DIR]   (see the comment at the top)" >&2
    exit 2
    ;;
esac
