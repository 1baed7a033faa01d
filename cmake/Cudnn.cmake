# cuDNN (v9) and its frontend's C++ graph API: the in-process anchor chapters 10 and 12 time
# their attention against (common/cudnn_attention.h). Optional: without it everything else
# builds and runs, and the anchor says why it is missing.
#
# Found from, in this order:
#   -DCUDNN_ROOT=<dir> (or $CUDNN_ROOT)          a cuDNN with include/ and lib/
#   PyTorch's nvidia-cudnn-cu* wheel             python3 -c "import nvidia.cudnn": its include/ and lib/
#   the CUDA toolkit                             include/cudnn.h, lib/ or lib64/libcudnn.so
#   -DCUDNN_FRONTEND_INCLUDE_DIR=<dir>           cudnn_frontend.h; default .deps/cudnn_frontend/include,
#                                                where scripts/fetch_cudnn_frontend.sh puts it
# PyTorch's before the toolkit's: the chapters' "cuDNN two ways" tables set this anchor beside
# PyTorch's SDPA, and the two builds can differ (a toolkit's 9.14 beside PyTorch's 9.19 on the same
# machine): with PyTorch's cuDNN both routes run one library, and the tables compare routes only.
# Gives the target ladder_cudnn (headers, libcudnn, LADDER_HAVE_CUDNN) when all is found.

set(CUDNN_ROOT "$ENV{CUDNN_ROOT}" CACHE PATH "A cuDNN 9 installation (include/, lib/)")
set(CUDNN_FRONTEND_INCLUDE_DIR "${PROJECT_SOURCE_DIR}/.deps/cudnn_frontend/include"
    CACHE PATH "The cuDNN frontend's headers (scripts/fetch_cudnn_frontend.sh)")

# The pip wheel's folder, when the python3 on PATH (PyTorch's) has it: a namespace package,
# hence list(__path__).
set(ladder_cudnn_wheel "")
find_program(LADDER_PYTHON3 python3)
if(LADDER_PYTHON3)
  execute_process(
    COMMAND ${LADDER_PYTHON3} -c "import nvidia.cudnn as c; print(list(c.__path__)[0])"
    OUTPUT_VARIABLE ladder_cudnn_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()

set(ladder_cudnn_wheel_include "")
if(ladder_cudnn_wheel)
  set(ladder_cudnn_wheel_include ${ladder_cudnn_wheel}/include)
endif()
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDNN_ROOT}/include ${ladder_cudnn_wheel_include} ${CUDAToolkit_INCLUDE_DIRS})
# The wheel ships libcudnn.so.9 without the unversioned link.
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 NAMES_PER_DIR
  HINTS ${CUDNN_ROOT} ${ladder_cudnn_wheel} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64)

set(ladder_cudnn_missing "")
if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
  set(ladder_cudnn_missing "cuDNN 9 (cudnn.h and libcudnn.so.9: install it with the CUDA toolkit or \
pip install nvidia-cudnn-cu13, or pass -DCUDNN_ROOT=<dir>)")
else()
  file(STRINGS ${CUDNN_INCLUDE_DIR}/cudnn_version.h ladder_cudnn_version REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) [0-9]+")
  string(REGEX REPLACE "[^;]* ([0-9]+)" "\\1" ladder_cudnn_version "${ladder_cudnn_version}")
  string(REPLACE ";" "." ladder_cudnn_version "${ladder_cudnn_version}")
  string(REGEX REPLACE "\\..*" "" ladder_cudnn_major "${ladder_cudnn_version}")
  if(NOT ladder_cudnn_major OR ladder_cudnn_major LESS 9)
    set(ladder_cudnn_missing "cuDNN 9 (${CUDNN_INCLUDE_DIR}/cudnn.h is version ${ladder_cudnn_version}: \
pass -DCUDNN_ROOT=<a cuDNN 9>)")
  endif()
endif()
if(NOT ladder_cudnn_missing AND NOT TARGET CUDA::nvrtc)
  # The frontend's graph API compiles some of its engines at run time.
  set(ladder_cudnn_missing "NVRTC (libnvrtc, part of the CUDA toolkit), which the cuDNN frontend links")
endif()
if(NOT ladder_cudnn_missing AND NOT EXISTS ${CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h)
  set(ladder_cudnn_missing "the cuDNN frontend headers (not in ${CUDNN_FRONTEND_INCLUDE_DIR}: \
run scripts/fetch_cudnn_frontend.sh, or pass -DCUDNN_FRONTEND_INCLUDE_DIR=<dir>)")
endif()

add_library(ladder_cudnn INTERFACE)
if(ladder_cudnn_missing)
  message(STATUS "cuDNN anchor off (chapters 10, 12): missing ${ladder_cudnn_missing}")
else()
  # SYSTEM: the frontend's headers are not held to the ladder's -Wall -Wextra.
  target_include_directories(ladder_cudnn SYSTEM INTERFACE ${CUDNN_FRONTEND_INCLUDE_DIR} ${CUDNN_INCLUDE_DIR})
  target_link_libraries(ladder_cudnn INTERFACE ${CUDNN_LIBRARY} CUDA::nvrtc CUDA::cudart)
  target_compile_definitions(ladder_cudnn INTERFACE LADDER_HAVE_CUDNN)
  message(STATUS "cuDNN anchor on: cuDNN ${ladder_cudnn_version} (${CUDNN_LIBRARY}), frontend ${CUDNN_FRONTEND_INCLUDE_DIR}")
endif()
