# cmake -DCOMMAND=exe -DARGS="a;b" -DEXPECT=regex -P ExpectRefusal.cmake (ladder_add_cli_test):
# passes when the command exits non-zero and prints something matching EXPECT.
execute_process(COMMAND ${COMMAND} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "accepted (exit 0) what it should refuse: ${COMMAND} ${ARGS}\n${all}")
endif()
if(NOT all MATCHES "${EXPECT}")
  message(FATAL_ERROR "refused (exit ${rc}) but without a message matching '${EXPECT}':\n${all}")
endif()
message(STATUS "refused as expected (exit ${rc}): ${all}")
