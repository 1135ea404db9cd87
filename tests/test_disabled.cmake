# Compile tests/test_disabled.c with -DRTPROF_DISABLE, link it WITHOUT
# librtprof, run it, and check no rtprof symbol is referenced.
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -Werror -O2 -DRTPROF_DISABLE
  -I${SRC}/rt ${SRC}/tests/test_disabled.c -o ${OUT}/test_disabled
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling with RTPROF_DISABLE failed")
endif()
execute_process(COMMAND ${CXX} -x c++ -Wall -Wextra -Werror -O2 -DRTPROF_DISABLE
  -I${SRC}/rt ${SRC}/tests/test_disabled.c -o ${OUT}/test_disabled_cxx
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling as C++ with RTPROF_DISABLE failed")
endif()
execute_process(COMMAND ${OUT}/test_disabled RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "disabled build did not run")
endif()
execute_process(COMMAND nm ${OUT}/test_disabled OUTPUT_VARIABLE syms)
if(syms MATCHES "rtprof")
  message(FATAL_ERROR "RTPROF_DISABLE left rtprof symbols:\n${syms}")
endif()
message(STATUS "test_disabled: no rtprof symbol in the binary")
