# Finds the project's dependencies (all from Debian packages; see scripts/setup-deps). No network.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)  # header-only Boost.Graph
# Eigen's Levenberg-Marquardt for the calibration fit (header-only; libeigen3-dev)
find_package(Eigen3 3.3 CONFIG REQUIRED)
# Howard Hinnant's date/tz over the system tzdata (libhowardhinnant-date-dev: libdate-tz, USE_OS_TZDB)
find_package(date CONFIG REQUIRED)

# NLopt (C++ API) for the joint fit of the cost model's parameters
find_path(MPLAN_NLOPT_INCLUDE nlopt.hpp)
find_library(MPLAN_NLOPT_CXX_LIB NAMES nlopt_cxx)
if(NOT MPLAN_NLOPT_INCLUDE OR NOT MPLAN_NLOPT_CXX_LIB)
  message(FATAL_ERROR "NLopt not found: run scripts/setup-deps (package libnlopt-cxx-dev)")
endif()
add_library(mplan_nlopt INTERFACE)
target_include_directories(mplan_nlopt INTERFACE ${MPLAN_NLOPT_INCLUDE})
target_link_libraries(mplan_nlopt INTERFACE ${MPLAN_NLOPT_CXX_LIB})

# OpenBLAS (cblas) for CPU GEMMs
find_path(MPLAN_CBLAS_INCLUDE cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include)
find_library(MPLAN_OPENBLAS_LIB NAMES openblas PATHS /usr/lib/x86_64-linux-gnu/openblas-pthread)
if(NOT MPLAN_CBLAS_INCLUDE OR NOT MPLAN_OPENBLAS_LIB)
  message(FATAL_ERROR "OpenBLAS not found: run scripts/setup-deps (package libopenblas-dev)")
endif()
add_library(mplan_openblas INTERFACE)
target_include_directories(mplan_openblas INTERFACE ${MPLAN_CBLAS_INCLUDE})
target_link_libraries(mplan_openblas INTERFACE ${MPLAN_OPENBLAS_LIB})

# An ON / OFF / AUTO option, once its dependency was looked for (`found`: true when it was): ON when
# found, an error naming what is missing when ON was asked, else OFF.
macro(mplan_resolve_auto var found missing)
  if(${found})
    set(${var} ON)
  elseif(${var} STREQUAL "ON")
    message(FATAL_ERROR "${var}=ON but ${missing}")
  else()
    set(${var} OFF)
  endif()
endmacro()

# MPI
if(NOT MPLAN_ENABLE_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C)
  mplan_resolve_auto(MPLAN_ENABLE_MPI MPI_C_FOUND "MPI was not found (package libopenmpi-dev)")
endif()

# CUDA (compile + link only on machines without a GPU)
if(NOT MPLAN_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
  endif()
  mplan_resolve_auto(MPLAN_ENABLE_CUDA CMAKE_CUDA_COMPILER "nvcc was not found")
endif()

# Qt6 for the GUI
if(NOT MPLAN_BUILD_GUI STREQUAL "OFF")
  find_package(Qt6 COMPONENTS Widgets Charts Concurrent Test QUIET)
  set(_mplan_qt_found FALSE)
  if(Qt6_FOUND AND Qt6Charts_FOUND)
    set(_mplan_qt_found TRUE)
  endif()
  mplan_resolve_auto(MPLAN_BUILD_GUI _mplan_qt_found "Qt6 Widgets/Charts were not found (qt6-base-dev qt6-charts-dev)")
endif()

if(MPLAN_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
# No Google Benchmark: the speed benchmarks are `mplan bench` (a subcommand of the shipped binary,
# with its own table, --repeat and p10/p90) and plain programs (bench_planner, bench_gpt2_step) that
# measure wall and CPU time per run; see docs/architecture.md.

# mimalloc (libmimalloc-dev) as the programs' allocator: a search allocates and frees millions of small
# vectors on its worker threads, and glibc's malloc took a sixth of the DeepSeek-V3 search's instructions
# (docs/planner.md, seventh round). `mplan_allocator` is linked into the executables only (never into a
# library); its one object routes operator new/delete to mimalloc, and linking libmimalloc (loaded ahead
# of libc) makes it the process's malloc. Sanitizer and fuzzer builds keep the sanitizers' allocator.
if(MPLAN_SANITIZE OR MPLAN_FUZZ)
  if(MPLAN_MIMALLOC STREQUAL "ON")
    message(FATAL_ERROR "MPLAN_MIMALLOC=ON cannot be combined with MPLAN_SANITIZE or MPLAN_FUZZ (the sanitizers replace malloc); use OFF or AUTO")
  endif()
  set(MPLAN_MIMALLOC OFF)
elseif(NOT MPLAN_MIMALLOC STREQUAL "OFF")
  find_package(mimalloc 2 CONFIG QUIET)
  mplan_resolve_auto(MPLAN_MIMALLOC mimalloc_FOUND "mimalloc was not found: run scripts/setup-deps (package libmimalloc-dev)")
endif()
if(MPLAN_MIMALLOC)
  add_library(mplan_allocator OBJECT ${PROJECT_SOURCE_DIR}/core/allocator.cpp)
  target_link_libraries(mplan_allocator PUBLIC mimalloc)
  target_compile_definitions(mplan_allocator PUBLIC MPLAN_ALLOCATOR_STATE="mimalloc")
else()
  add_library(mplan_allocator INTERFACE)
  target_compile_definitions(mplan_allocator INTERFACE MPLAN_ALLOCATOR_STATE="the C library's malloc")
endif()
