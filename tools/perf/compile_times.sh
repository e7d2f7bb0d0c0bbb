#!/usr/bin/env bash
# Compile-time figures of docs/performance.md: for each composite, RUNS cold runs (fresh cache,
# default 11) each followed by a warm run (same cache, must be a hit); prints medians of the
# --debug 1 figures, and the quartiles of the cold total (the machine's speed drifts).
# Usage: [RUNS=N] tools/perf/compile_times.sh (after tools/setup.sh)
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
runs=${RUNS:-11}
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
quartiles() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+3)/4)] "-" a[int((3*NR+1)/4)]}'; }
run() { # runtime target args...
  rt=$1; shift; tgt=$1; shift
  : > $tmp/m_cold; : > $tmp/m_warm; : > $tmp/m_sched; : > $tmp/m_comp; : > $tmp/m_load; : > $tmp/m_wload; : > $tmp/m_wcomp
  for i in $(seq "$runs"); do
    d=$(mktemp -d)
    out=$(KILN_CACHE=$d ./build/kiln run $tgt --runtime $rt "$@" --debug 1)
    echo "$out" | grep -oP 'schedule \K[0-9.]+' >> $tmp/m_sched
    echo "$out" | grep -oP 'compile \K[0-9.]+' >> $tmp/m_comp
    echo "$out" | grep -oP 'load \K[0-9.]+' >> $tmp/m_load
    echo "$out" | grep -oP 'total \K[0-9.]+' >> $tmp/m_cold
    out=$(KILN_CACHE=$d ./build/kiln run $tgt --runtime $rt "$@" --debug 1)
    echo "$out" | grep -q "cache hit" || echo "NOT A HIT"
    echo "$out" | grep -oP 'compile \K[0-9.]+' >> $tmp/m_wcomp
    echo "$out" | grep -oP 'load \K[0-9.]+' >> $tmp/m_wload
    echo "$out" | grep -oP 'total \K[0-9.]+' >> $tmp/m_warm
    rm -rf $d
  done
  echo "$rt $tgt $* | cold: schedule $(med <$tmp/m_sched) compile $(med <$tmp/m_comp) load $(med <$tmp/m_load) total $(med <$tmp/m_cold) (q1-q3 $(quartiles <$tmp/m_cold)) | warm: lookup $(med <$tmp/m_wcomp) load $(med <$tmp/m_wload) total $(med <$tmp/m_warm)"
}
cat /proc/loadavg
run clang ops/nn.toml:softmax --test N=1000 --batch 4
run cc ops/nn.toml:softmax --test N=1000 --batch 4
run clang ops/nn.toml:layernorm --batch 4
run clang ops/nn.toml:matmul
run clang ops/nn.toml:conv2d
cat /proc/loadavg
