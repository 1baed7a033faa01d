#!/bin/bash
# usage: build.sh BUILD_DIR V  (a configured and built tree with 12_fa3_hopper)
set -e
B=$1; V=$2; R=$(cd "$(dirname "$0")/../.." && pwd); T=$R/.run/exp
nvcc -I$T -I$R/12_fa3_hopper -I$R/common -I$R -I$R/09_tensor_core_matmul -O3 -DNDEBUG -DEXP_V=$V \
  --generate-code=arch=compute_90a,code=[sm_90a] -lineinfo -std=c++17 -x cu -c $T/exp.cu -o $B/exp$V.o
[ -f $B/expdriver.o ] || c++ -I$R/12_fa3_hopper -I$R/common -I$R -I$R/09_tensor_core_matmul -I$R/10_fa2_tensor_cores -isystem /usr/local/cuda/include \
  -O3 -std=gnu++17 -c $T/driver.cpp -o $B/expdriver.o
link=$(cd $B && ninja -t commands 12_fa3_hopper | grep -- "-o bin/12_fa3_hopper " | tail -1)
link=${link/12_fa3_hopper\/CMakeFiles\/12_fa3_hopper.dir\/main.cpp.o/exp$V.o expdriver.o}
link=${link/12_fa3_hopper\/lib12_fa3_hopper_sm90a.a/}
link=${link/-o bin\/12_fa3_hopper /-o bin\/fa3_exp$V }
(cd $B && eval "$link")
