# GoogleTest, Google Benchmark and Eigen 3.4: the installed packages when present,
# otherwise downloaded once (needs network). Without both, configure stops at once with
# the packages to install, rather than after minutes of download retries.
include(FetchContent)

set(LADDER_INSTALL_HINT
    "Debian/Ubuntu: apt-get install cmake ninja-build g++ libeigen3-dev libgtest-dev libbenchmark-dev")
option(LADDER_DOWNLOAD_DEPENDENCIES "Download GoogleTest, Google Benchmark or Eigen when not installed" ON)

set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
set(BENCHMARK_ENABLE_GTEST_TESTS OFF CACHE BOOL "" FORCE)
set(BENCHMARK_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(EIGEN_BUILD_DOC OFF CACHE BOOL "" FORCE)
set(EIGEN_BUILD_TESTING OFF CACHE BOOL "" FORCE)
set(EIGEN_BUILD_PKGCONFIG OFF CACHE BOOL "" FORCE)

# ladder_dependency(<package> <what it is> <URL>): find_package(<package>), else download
# the archive with a short timeout and no retries, then build it with the project.
# (-DCMAKE_DISABLE_FIND_PACKAGE_<package>=ON pretends it is not installed.)
function(ladder_dependency package what url)
  find_package(${package} ${ARGN} QUIET)
  if(${package}_FOUND)
    return()
  endif()
  set(why "${what} is not installed")
  get_filename_component(archive ${url} NAME)
  set(archive ${FETCHCONTENT_BASE_DIR}/${package}-${archive})
  if(LADDER_DOWNLOAD_DEPENDENCIES)
    if(NOT EXISTS ${archive})
      message(STATUS "${what} is not installed: downloading ${url}")
      file(DOWNLOAD ${url} ${archive}.part TIMEOUT 120 INACTIVITY_TIMEOUT 15 STATUS status)
      list(GET status 0 code)
      if(code EQUAL 0)
        file(RENAME ${archive}.part ${archive})
      else()
        list(GET status 1 reason)
        file(REMOVE ${archive}.part)
        set(why "${why}, and downloading it failed (${reason}: ${url})")
      endif()
    endif()
  elseif(NOT EXISTS ${archive})
    set(why "${why} (and LADDER_DOWNLOAD_DEPENDENCIES is OFF)")
  endif()
  if(NOT EXISTS ${archive})
    message(FATAL_ERROR "${why}.\nInstall the packages the ladder builds with:\n  ${LADDER_INSTALL_HINT}\n"
                        "then configure again.")
  endif()
  FetchContent_Declare(${package} URL ${archive} DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
  FetchContent_MakeAvailable(${package})
endfunction()

ladder_dependency(GTest "GoogleTest" https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz)
ladder_dependency(benchmark "Google Benchmark" https://github.com/google/benchmark/archive/refs/tags/v1.8.3.tar.gz)
ladder_dependency(Eigen3 "Eigen 3.4" https://gitlab.com/libeigen/eigen/-/archive/3.4.0/eigen-3.4.0.tar.gz 3.4 NO_MODULE)

find_program(LADDER_COMPUTE_SANITIZER compute-sanitizer
  HINTS ${CUDAToolkit_BIN_DIR} ${CUDAToolkit_BIN_DIR}/../compute-sanitizer)
