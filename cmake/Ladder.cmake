# ladder_add_chapter(): one call per chapter gives it
#   <chapter>_lib    its kernels and host helpers (static library)
#   <chapter>        the standalone executable (also run by the `ladder` target)
#   <chapter>_test   GoogleTest binary, registered with CTest as
#                      <chapter>.cpu        label cpu: suites named Cpu*, always run
#                      <chapter>.gpu        label gpu: suites named Gpu*, skip without a GPU
#                      <chapter>.memcheck   label sanitizer: Gpu* under compute-sanitizer, small sizes
#                                           (but GpuExerciseWrongAnswers*)
#                      <chapter>.racecheck  (RACECHECK chapters) the same with --tool racecheck
#                      <chapter>.synccheck  (SYNCCHECK chapters: mbarrier/TMA pipelines) --tool synccheck
#                      <chapter>.exercise   (with -DLADDER_EXERCISES=ON: the `exercises` preset, in
#                                           build-exercises/) <chapter>_exercise --gtest_filter=Exercise*:
#                                           the learner's code, label exercise, in no default test run
#   <chapter>_exercise  (chapters with EXERCISES) GoogleTest binary of every EXERCISES source, the
#                    learner's mine.cpp / mine.cu included, compiled with LADDER_EXERCISE_MINE=1 (the
#                    tests of mine.* are inside #if LADDER_EXERCISE_MINE). Built by `all` only with
#                    LADDER_EXERCISES=ON; in any build directory by name or by the target `exercises`.
#   <chapter>_bench  Google Benchmark binary
#   exercises        (target) every chapter's <chapter>_exercise
#
# The EXERCISES sources named mine.* are the learner's, half-written at times: they go into
# <chapter>_exercise only, so that the default build never compiles them. The others (the
# exercise tests, the solutions, the committed wrong answers) also go into <chapter>_test, where
# CpuExercise* / GpuExercise* check them in every test run.
#
#   ladder_add_chapter(01_vector_add
#     LIBRARY vector_add.cu  MAIN main.cpp  TEST test_vector_add.cpp  BENCH bench_vector_add.cpp
#     [LINK other_targets...] [RACECHECK] [SYNCCHECK] [EXERCISES exercises/*.cpp exercises/*.cu ...])

# ladder_select_chapters(OUT "<LADDER_ONLY>" <all chapters...>): the chapters to build,
# in ladder order: all of them, or those named plus, transitively, the chapters they
# need (LADDER_NEEDS_<chapter>). A name that is not a chapter stops the configure.
function(ladder_select_chapters out only)
  set(all ${ARGN})
  if(NOT only)
    set(${out} ${all} PARENT_SCOPE)
    return()
  endif()
  set(wanted "")
  set(todo ${only})
  while(todo)
    list(POP_FRONT todo chapter)
    if(NOT chapter IN_LIST all)
      message(FATAL_ERROR "LADDER_ONLY: '${chapter}' is not a chapter; the chapters are: ${all}")
    endif()
    if(chapter IN_LIST wanted)
      continue()
    endif()
    list(APPEND wanted ${chapter})
    foreach(need IN LISTS LADDER_NEEDS_${chapter})
      if(NOT need IN_LIST wanted AND NOT need IN_LIST only)
        message(STATUS "LADDER_ONLY: ${chapter} needs ${need}: building it too")
      endif()
      list(APPEND todo ${need})
    endforeach()
  endwhile()
  set(selected "")
  foreach(chapter IN LISTS all)
    if(chapter IN_LIST wanted)
      list(APPEND selected ${chapter})
    endif()
  endforeach()
  # Said on every configure: a build directory holding part of the ladder should never pass
  # for the whole of it.
  list(LENGTH selected n)
  list(LENGTH all total)
  list(JOIN selected " " names)
  message(STATUS "LADDER_ONLY: ${CMAKE_BINARY_DIR} builds ${n} of the ${total} chapters: ${names}")
  set(${out} ${selected} PARENT_SCOPE)
endfunction()

function(ladder_warnings target)
  # -Wall -Wextra for host code, also the host code nvcc hands to g++.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -lineinfo>)
endfunction()

function(ladder_add_chapter name)
  cmake_parse_arguments(PARSE_ARGV 1 CH "RACECHECK;SYNCCHECK" "MAIN" "LIBRARY;TEST;BENCH;LINK;EXERCISES")

  add_library(${name}_lib STATIC ${CH_LIBRARY})
  target_include_directories(${name}_lib PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${name}_lib PUBLIC ladder_common ${CH_LINK})
  ladder_warnings(${name}_lib)

  add_executable(${name} ${CH_MAIN})
  target_link_libraries(${name} PRIVATE ${name}_lib)
  ladder_warnings(${name})
  set_property(GLOBAL APPEND PROPERTY LADDER_EXECUTABLES ${name})

  set(exercises_checked "")  # the EXERCISES sources that are not the learner's
  foreach(src IN LISTS CH_EXERCISES)
    get_filename_component(stem ${src} NAME_WE)
    if(NOT stem STREQUAL "mine")
      list(APPEND exercises_checked ${src})
    endif()
  endforeach()
  add_executable(${name}_test ${CH_TEST} ${exercises_checked})
  target_link_libraries(${name}_test PRIVATE ${name}_lib ladder_gtest)
  ladder_warnings(${name}_test)
  add_test(NAME ${name}.cpu COMMAND ${name}_test --gtest_filter=Cpu*:*/Cpu*)
  add_test(NAME ${name}.gpu COMMAND ${name}_test --gtest_filter=Gpu*:*/Gpu*)
  set_tests_properties(${name}.cpu PROPERTIES LABELS cpu TIMEOUT 1800)
  # Without a GPU every Gpu* test calls GTEST_SKIP with its reason; CTest then
  # reports the entry as skipped rather than passed.
  set_tests_properties(${name}.gpu PROPERTIES LABELS gpu TIMEOUT 1800
    SKIP_REGULAR_EXPRESSION "GPU test skipped: no CUDA device")

  if(CH_EXERCISES)
    if(LADDER_EXERCISES)
      add_executable(${name}_exercise ${CH_EXERCISES})
    else()
      add_executable(${name}_exercise EXCLUDE_FROM_ALL ${CH_EXERCISES})
    endif()
    target_compile_definitions(${name}_exercise PRIVATE LADDER_EXERCISE_MINE=1)
    target_link_libraries(${name}_exercise PRIVATE ${name}_lib ladder_gtest)
    ladder_warnings(${name}_exercise)
    if(NOT TARGET exercises)
      add_custom_target(exercises)
    endif()
    add_dependencies(exercises ${name}_exercise)
    if(LADDER_EXERCISES)
      add_test(NAME ${name}.exercise COMMAND ${name}_exercise --gtest_filter=Exercise*)
      set_tests_properties(${name}.exercise PROPERTIES LABELS exercise TIMEOUT 1800)
    endif()
  endif()

  if(LADDER_COMPUTE_SANITIZER)
    set(tools memcheck)
    if(CH_RACECHECK)
      list(APPEND tools racecheck)
    endif()
    if(CH_SYNCCHECK)
      list(APPEND tools synccheck)
    endif()
    # The exercises' wrong answers are left out: they are wrong on purpose, and what makes
    # them wrong may be what a sanitizer reports.
    foreach(tool IN LISTS tools)
      add_test(NAME ${name}.${tool}
        COMMAND ${LADDER_COMPUTE_SANITIZER} --tool ${tool} --error-exitcode 1
                $<TARGET_FILE:${name}_test> --gtest_filter=Gpu*:*/Gpu*:-GpuExerciseWrongAnswers*)
      set_tests_properties(${name}.${tool} PROPERTIES LABELS sanitizer TIMEOUT 1800
        ENVIRONMENT LADDER_SMALL=1)
    endforeach()
  endif()

  add_executable(${name}_bench ${CH_BENCH})
  target_link_libraries(${name}_bench PRIVATE ${name}_lib ladder_bench)
  ladder_warnings(${name}_bench)
endfunction()

# `cmake --build <dir> --target ladder`: every chapter's executable in order, one
# summary line each (cmake/RunLadder.cmake).
function(ladder_add_ladder_target)
  get_property(exes GLOBAL PROPERTY LADDER_EXECUTABLES)
  set(files $<TARGET_FILE:ladder_info>)
  foreach(exe IN LISTS exes)
    list(APPEND files $<TARGET_FILE:${exe}>)
  endforeach()
  add_custom_target(ladder
    COMMAND ${CMAKE_COMMAND} "-DLADDER_EXES=$<JOIN:${files},|>"
            -P ${PROJECT_SOURCE_DIR}/cmake/RunLadder.cmake
    DEPENDS ladder_info ${exes}
    USES_TERMINAL VERBATIM)
endfunction()

# Without compute-sanitizer, `ctest --preset sanitizer` would find no test and pass:
# one test that fails and says what is missing instead.
function(ladder_add_sanitizer_placeholder)
  if(NOT LADDER_COMPUTE_SANITIZER)
    add_test(NAME sanitizer.unavailable
      COMMAND ${CMAKE_COMMAND} "-DMESSAGE=compute-sanitizer was not found next to nvcc (${CUDAToolkit_BIN_DIR}): \
the sanitizer tests need it (it ships with the CUDA Toolkit; put it on PATH and reconfigure)"
              -P ${PROJECT_SOURCE_DIR}/cmake/Fail.cmake)
    set_tests_properties(sanitizer.unavailable PROPERTIES LABELS sanitizer
      SKIP_REGULAR_EXPRESSION "sanitizer tests skipped")
  endif()
endfunction()

# ladder_add_cli_test(<chapter> <name> EXPECT <regex> ARGS <args...>): a CPU test (label cpu)
# that runs the chapter's executable with ARGS and passes when it exits with a non-zero code
# and its output matches EXPECT: bad input is refused with a message, on any machine.
function(ladder_add_cli_test chapter name)
  cmake_parse_arguments(PARSE_ARGV 2 T "" "EXPECT" "ARGS")
  add_test(NAME ${chapter}.cli.${name}
    COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:${chapter}>" "-DARGS=${T_ARGS}" "-DEXPECT=${T_EXPECT}"
            -P ${PROJECT_SOURCE_DIR}/cmake/ExpectRefusal.cmake)
  set_tests_properties(${chapter}.cli.${name} PROPERTIES LABELS cpu TIMEOUT 120)
endfunction()

# ladder_add_attention_cli_tests(<chapter>): the refusals every attention executable that
# takes --B/--H/--N/--d and --check-N shares (chapters 10 and 12): sizes past the device's
# memory, past the grid, past an int, and a check size out of range.
function(ladder_add_attention_cli_tests chapter)
  ladder_add_cli_test(${chapter} n_past_memory EXPECT "needs [0-9.]+ GB of device memory" ARGS --N 2147483647)
  ladder_add_cli_test(${chapter} b_past_memory EXPECT "needs [0-9.]+ GB of device memory" ARGS --B 100000)
  ladder_add_cli_test(${chapter} h_past_memory EXPECT "needs [0-9.]+ GB of device memory" ARGS --H 100000)
  ladder_add_cli_test(${chapter} n_2_million EXPECT "needs [0-9.]+ GB of device memory" ARGS --N 2000000)
  ladder_add_cli_test(${chapter} heads_past_grid EXPECT "along y. CUDA allows 1 to 65535"
    ARGS --B 4096 --H 16 --N 64 --d 64)
  ladder_add_cli_test(${chapter} head_past_int EXPECT "N.d and N_kv.d must fit in an int"
    ARGS --B 1 --H 1 --N 16777217 --d 128)
  ladder_add_cli_test(${chapter} check_n EXPECT "--check-N must be between 1 and 16384" ARGS --check-N 999999)
endfunction()

# ladder_add_sm90a_library(<name> <sources...>): the kernels that use wgmma and setmaxnreg,
# which exist only on sm_90a (not in plain sm_90, nor in any other GPU's code), as a static
# library compiled for that one target whatever CMAKE_CUDA_ARCHITECTURES says. The chapter
# launches them only on a compute capability 9.0 device (tc::compiled_for_sm90a and its own
# unavailable_reason).
function(ladder_add_sm90a_library name)
  add_library(${name} STATIC ${ARGN})
  set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES 90a-real)
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ladder_common)
  ladder_warnings(${name})
endfunction()
