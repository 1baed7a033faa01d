#!/usr/bin/env bash
set -u
O=$1; R=$O/r; mkdir -p $R
WORK_DIR=/tmp/p2b STAGES="build" LADDER_ONLY="12_fa3_hopper" timeout 240 scripts/gpu_check.sh $R/c_build > $R/c_build.log 2>&1
echo "build done at $SECONDS s"; tail -1 $R/c_build/summary.md; rm -rf $R/c_build
for v in 0 1 2 3; do bash .run/exp/build.sh build-gpu $v > $R/exp_build$v.log 2>&1 || echo "build $v failed"; done
echo "exp builds at $SECONDS s"
for rep in 1 2; do for v in 0 1 2 3; do timeout 90 build-gpu/bin/fa3_exp$v v$v >> $R/exp_times.txt 2>&1; done; done
echo "timed at $SECONDS s"
python3 - <<'PY' $R/exp_times.txt
import sys,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    p=l.split()
    if len(p)>=4 and p[0].startswith('v'): d[(p[1],p[2])].append((p[0],float(p[3])))
for k in sorted(d):
    by=collections.defaultdict(list)
    for v,x in d[k]: by[v].append(x)
    print(k[0],k[1],'  '.join(f"{v}: {' '.join(f'{x:.1f}' for x in xs)}" for v,xs in sorted(by.items())))
PY
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $R/exp_times.txt 2>&1
tar -czf $O/p2.tgz -C $O r && rm -rf $R
