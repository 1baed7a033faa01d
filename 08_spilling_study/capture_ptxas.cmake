# Build step: what ptxas says about every kernel in SOURCE, kept for the chapter's table.
#   cmake -DNVCC=... -DSOURCE=... "-DFLAGS=a|b|c" -DCUBIN=... -DLOG=... -DINC=... -P capture_ptxas.cmake
# Compiles SOURCE's device code once more, with the library's flags plus -Xptxas -v, to a throwaway cubin, and
# writes ptxas's report to LOG (to read) and to INC (a C++ raw string literal that ptxas_report.cpp embeds).
string(REPLACE "|" ";" flags "${FLAGS}")
execute_process(
  COMMAND ${NVCC} ${flags} -cubin -Xptxas -v ${SOURCE} -o ${CUBIN}
  OUTPUT_VARIABLE report
  ERROR_VARIABLE report
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture_ptxas: nvcc failed (exit ${rc}):\n${report}")
endif()
if(NOT report MATCHES "Compiling entry function")
  message(FATAL_ERROR "capture_ptxas: nvcc printed no ptxas report:\n${report}")
endif()
file(WRITE ${LOG} "${report}")
file(WRITE ${INC} "R\"ptxas(${report})ptxas\"\n")
