// OpenBLAS kernel selection, thread count and the GEMM peak measurement.
#include "executor/backend/blas_config.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace mplan::exec {

std::string preferred_openblas_coretype() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
#endif
  return "";
}

std::vector<std::string> blas_environment() {
  std::vector<std::string> env = {"OPENBLAS_NUM_THREADS=1"};
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  std::string want = preferred_openblas_coretype();
  if (user && *user)
    env.push_back(std::string("OPENBLAS_CORETYPE=") + user);
  else if (!want.empty())
    env.push_back("OPENBLAS_CORETYPE=" + want);
  return env;
}

void reexec_with_blas_environment(char** argv) {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (user && *user) return;  // the user (or our launcher) chose
  std::string want = preferred_openblas_coretype();
  if (want.empty() || std::getenv("MPLAN_BLAS_REEXEC")) return;
  setenv("OPENBLAS_CORETYPE", want.c_str(), 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  setenv("MPLAN_BLAS_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "mplan: warning: could not re-execute with OPENBLAS_CORETYPE=%s; GEMMs use %s kernels\n", want.c_str(),
               openblas_get_corename());
}

void set_blas_single_thread() { openblas_set_num_threads(1); }

std::string blas_corename() { return openblas_get_corename(); }
std::string blas_config() { return openblas_get_config(); }

std::string blas_description() {
  return "OpenBLAS (" + blas_config() + "), " + blas_corename() + " kernels, " + std::to_string(openblas_get_num_threads()) +
         " thread(s)";
}

double measure_gemm_gflops(int n, int reps) {
  std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = float(i % 7) * 0.1f;
    b[i] = float(i % 5) * 0.1f;
  }
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  // thread CPU time, not wall time: with one BLAS thread it is the core's compute time, so the peak
  // stays right when other processes share the core while it is measured
  auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  run();  // warm-up (buffers, page faults)
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    double t0 = cpu_now();
    run();
    double dt = cpu_now() - t0;
    if (dt < best) best = dt;
  }
  return 2.0 * double(n) * n * n / best / 1e9;
}

}  // namespace mplan::exec
