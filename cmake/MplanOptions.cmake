# Build options (all prefixed MPLAN_) and the common warning/sanitizer flags.
set(MPLAN_BUILD_GUI "AUTO" CACHE STRING "Build the Qt6 GUI: ON, OFF or AUTO (on when Qt6 Widgets+Charts are found)")
set(MPLAN_ENABLE_CUDA "AUTO" CACHE STRING "Build the CUDA backend: ON, OFF or AUTO (on when the CUDA toolkit is found)")
set(MPLAN_ENABLE_MPI "AUTO" CACHE STRING "Build the MPI communicator: ON, OFF or AUTO (on when MPI is found)")
set(MPLAN_MIMALLOC "AUTO" CACHE STRING
  "Link the programs (mplan, mplan-gui, bench_planner) with mimalloc: ON, OFF or AUTO (on when found; off with sanitizers)")
option(MPLAN_BUILD_PROFILES "Build the profiles part (profile DB, profilers, calibrate)" ON)
option(MPLAN_BUILD_EXECUTOR "Build the executor part (trainer, mplan train/verify)" ON)
option(MPLAN_BUILD_RUNS "Build the runs part (runs DB, mplan runs/regress)" ON)
option(MPLAN_BUILD_TESTS "Build the GoogleTest suites" ON)
option(MPLAN_BUILD_BENCH "Build the speed benchmark programs bench_planner and bench_gpt2_step (not run by ctest)" ON)
option(MPLAN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(MPLAN_WERROR "Treat warnings as errors" OFF)
option(MPLAN_FUZZ "Build the libFuzzer targets (clang; scripts/fuzz sets the sanitizer flags)" OFF)

# The parts that options switch off, in dependency order (profiles, executor, runs, gui): called from
# the top-level CMakeLists.txt for the libraries and from tests/ for their suites.
macro(mplan_add_optional_parts)
  foreach(part profiles executor runs)
    string(TOUPPER ${part} PART)
    if(MPLAN_BUILD_${PART})
      add_subdirectory(${part})
    endif()
  endforeach()
  if(MPLAN_BUILD_GUI)
    add_subdirectory(gui)
  endif()
endmacro()

add_library(mplan_warnings INTERFACE)
target_compile_options(mplan_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
  # GCC 12 reports false -Wrestrict positives inside std::string at -O3 (GCC bug 105329)
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${MPLAN_WERROR}>>:-Werror>)

if(MPLAN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
