#!/usr/bin/env bash
# Puts cuobjdump and nvdisasm on PATH: the CUDA Toolkit's when it has them (its bin/ next to nvcc),
# else NVIDIA's wheels from PyPI (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm), installed once into
# ${LADDER_TOOLS:-~/.cache/flash-ladder/sass-tools}. Source it (`source scripts/sass_tools.sh`) so that the
# PATH it sets stays; .ci/run does. Fails, naming what to install, when neither is possible.
ladder_sass_tools() {
  local nvcc_bin tools=${LADDER_TOOLS:-${HOME:-/tmp}/.cache/flash-ladder/sass-tools}
  if command -v cuobjdump >/dev/null && command -v nvdisasm >/dev/null; then return 0; fi
  nvcc_bin=$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")
  if [[ -x $nvcc_bin/cuobjdump && -x $nvcc_bin/nvdisasm ]]; then
    export PATH=$nvcc_bin:$PATH
    return 0
  fi
  if [[ ! -x $tools/nvidia/cu13/bin/cuobjdump || ! -x $tools/nvidia/cu13/bin/nvdisasm ]]; then
    echo "sass_tools: cuobjdump/nvdisasm not found: installing NVIDIA's wheels into $tools" >&2
    python3 -m pip install -q --disable-pip-version-check --target "$tools" \
      'nvidia-cuda-cuobjdump>=13.2,<14' 'nvidia-cuda-nvdisasm>=13.2,<14' || {
      echo "sass_tools: could not install them; install the CUDA Toolkit's cuobjdump and nvdisasm" \
        "(apt: cuda-cuobjdump-13-0 cuda-nvdisasm-13-0) or: python3 -m pip install nvidia-cuda-cuobjdump" \
        "nvidia-cuda-nvdisasm" >&2
      return 1
    }
  fi
  export PATH=$tools/nvidia/cu13/bin:$PATH
  command -v cuobjdump >/dev/null && command -v nvdisasm >/dev/null
}
ladder_sass_tools
