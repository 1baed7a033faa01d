# cmake -DMESSAGE=... -P Fail.cmake: print the message and fail (a CTest entry that
# stands in for tests that cannot run here, so that they do not pass silently).
message(FATAL_ERROR "${MESSAGE}")
