# CMAKE_CUDA_ARCHITECTURES when the user set none:
#   a GPU is visible -> "native" (exactly the card in this machine);
#   no GPU           -> 90 (the H200 this ladder is measured on), so a CPU-only
#                       machine still compiles every kernel.
if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
  return()
endif()
execute_process(
  COMMAND nvidia-smi --query-gpu=compute_cap --format=csv,noheader
  RESULT_VARIABLE _ladder_smi_rc
  OUTPUT_VARIABLE _ladder_smi_out
  ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(_ladder_smi_rc EQUAL 0 AND _ladder_smi_out MATCHES "^[0-9]+\\.[0-9]+")
  set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING "CUDA architectures")
  message(STATUS "flash-ladder: GPU found (compute capability ${_ladder_smi_out}): building for native")
else()
  set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures")
  message(STATUS "flash-ladder: no GPU visible: building for sm_90 (H200)")
endif()
