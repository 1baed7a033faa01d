#!/usr/bin/env bash
# Nsight Compute on the three kernels of one backward (pre-processing, main kernel, post-processing) at 10% of the
# tiles and dense: where the 10% backward's time goes, and how close the two passes run to the DRAM's bandwidth.
set -u
O=$1; R=$O/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DLADDER_ONLY=14_fa3_backward;15_attention_variants;16_attention_in_a_model" -DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.deps/cudnn_frontend/include > $R/build_e4.log 2>&1
timeout 260 cmake --build build-gpu -j 16 --target 15_attention_variants_bench >> $R/build_e4.log 2>&1
echo "build rc=$? at $SECONDS s"
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
for row in bwd:tiles10 bwd:dense bwd:window; do
  echo "== ncu $row" | tee -a $R/ncu_parts.log
  timeout 90 ncu --clock-control none --metrics "$M" --kernel-name regex:"preprocess_kernel|fa3_bwd_kernel|postprocess_kernel" \
    --launch-count 3 build-gpu/bin/15_attention_variants_bench --benchmark_filter="^$row/" 2>&1 |
    grep -E "preprocess_kernel|fa3_bwd_kernel|postprocess_kernel|duration|dram__|ERR|rror" | sed -E 's/ +/ /g' | tee -a $R/ncu_parts.log
done
echo "all done at $SECONDS s"
