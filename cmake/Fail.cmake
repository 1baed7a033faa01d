# Stands in for the compute-sanitizer tests where compute-sanitizer is missing:
#   cmake -DMESSAGE=... -P Fail.cmake
# Under `ctest --preset sanitizer` (which sets LADDER_SANITIZER_RUN) it fails with the
# message, so the missing tool cannot pass for a clean run; in any other ctest run it
# reports itself skipped, so that a plain `ctest` stays green on a machine without it.
if(DEFINED ENV{LADDER_SANITIZER_RUN})
  message(FATAL_ERROR "${MESSAGE}")
else()
  message("sanitizer tests skipped: ${MESSAGE}")
endif()
