# Runs ladder_info, then each chapter executable with --summary, in ladder order.
# A chapter that fails its check (or crashes) makes the whole run fail.
string(REPLACE "|" ";" exes "${LADDER_EXES}")
set(failed "")
foreach(exe IN LISTS exes)
  execute_process(COMMAND ${exe} --summary RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    get_filename_component(chapter ${exe} NAME)
    list(APPEND failed "${chapter} (exit ${rc})")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "ladder: failed: ${failed}")
endif()
