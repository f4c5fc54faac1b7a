# Issue 17, item 9: what every C++ user types first, `cmake -S . -B build && cmake --build build`,
# must work with CMake's default generator (Unix Makefiles here), not only with the Ninja presets.
# Configures the source tree into OUT with the default generator (CMAKE_GENERATOR unset), which is
# where the CUDA dialect used to fail, then builds one library to show the generated files work.
# Usage: cmake -DSRC=... -DOUT=... -P build_default_generator.cmake
unset(ENV{CMAKE_GENERATOR})
file(REMOVE_RECURSE "${OUT}")
set(launch "")
find_program(CCACHE ccache)
if(CCACHE)
  set(launch -DCMAKE_C_COMPILER_LAUNCHER=${CCACHE} -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE} -DCMAKE_CUDA_COMPILER_LAUNCHER=${CCACHE})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SRC}" -B "${OUT}" -DMPLAN_BUILD_TESTS=OFF -DMPLAN_BUILD_BENCH=OFF ${launch}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure with the default generator failed (${rc}):\n${out}\n${err}")
endif()
if(NOT EXISTS "${OUT}/Makefile" AND NOT EXISTS "${OUT}/build.ninja")
  message(FATAL_ERROR "no build files in ${OUT}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${OUT}" --target mplan_core RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building mplan_core with the default generator failed (${rc}):\n${out}\n${err}")
endif()
file(REMOVE_RECURSE "${OUT}")
message(STATUS "default generator: configured, generated and built mplan_core")
