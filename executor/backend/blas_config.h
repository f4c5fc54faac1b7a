// OpenBLAS configuration for the CPU backend: which GEMM kernels run (OpenBLAS picks slow generic
// kernels on some CPUs unless OPENBLAS_CORETYPE is set before the library loads), one BLAS thread
// per rank, and a measurement of the single-core fp32 GEMM peak used for MFU.
#pragma once
#include <string>
#include <vector>

namespace mplan::exec {

// The OPENBLAS_CORETYPE this CPU should use ("SkylakeX" when AVX-512 F/BW/DQ/VL/CD are present),
// or "" to keep OpenBLAS's own detection.
std::string preferred_openblas_coretype();

// Environment a training process needs before OpenBLAS loads: OPENBLAS_NUM_THREADS=1 and, when
// preferred and not set by the user, OPENBLAS_CORETYPE. Returns the "NAME=value" pairs to export.
std::vector<std::string> blas_environment();

// If the running process loaded OpenBLAS without the preferred core type (the variable must be set
// before the library initialises), re-executes /proc/self/exe with it set. Returns only when no
// re-exec is needed (or it failed; then the slower kernels are used and a warning is printed).
void reexec_with_blas_environment(char** argv);

// Limits OpenBLAS to one thread (ranks are the parallelism).
void set_blas_single_thread();

std::string blas_corename();     // e.g. "Haswell", "SkylakeX", "Prescott"
std::string blas_config();       // openblas_get_config()
std::string blas_description();  // "OpenBLAS (<config>), <core> kernels, 1 thread"

// Measured single-thread sgemm speed, GFLOP/s, of an n x n x n product (best of `reps`, on the
// thread's CPU time so that a busy machine does not lower it).
double measure_gemm_gflops(int n = 1024, int reps = 3);

}  // namespace mplan::exec
