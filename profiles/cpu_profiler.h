// `mplan profile --backend cpu`: times on this machine the kernels of the executor's CPU backend
// (GEMMs over a grid of transformer shapes via OpenBLAS, attention forward/backward, norms,
// activations, rope, residuals, embedding, cross-entropy, AdamW) and the MPI collectives (all-reduce,
// all-gather, reduce-scatter, all-to-all, send/recv; 2..N ranks; 1 KiB to 256 MiB). Warm-up and
// repetitions, median/p10/p90; one core, one BLAS thread per rank, ranks pinned. Every batch is one
// transaction, so Ctrl-C keeps what was measured.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "profiles/profile_db.h"
#include "profiles/progress.h"

namespace mplan::profiles {

struct CpuProfileOptions {
  std::string db;
  bool quick = false;
  bool kernels = true;
  bool collectives = true;
  int max_ranks = 0;  // collectives over 2..max_ranks ranks; 0 = the usable cores
  bool progress = true;
  std::string command;  // recorded with the session
};

struct CpuProfileResult {
  int64_t device_id = 0;
  int kernel_rows = 0;
  int collective_rows = 0;
  bool interrupted = false;
  double peak_gflops = 0;  // best measured GEMM rate (one core)
  double memory_gbps = 0;  // one core's streaming bandwidth (triad)
  std::vector<std::string> notes;
};

// The grid of kernel measurements: each batch (one op at one shape set) is committed on its own.
struct KernelCase {
  KernelRow row;              // op, pass, dtype, shape, flops, bytes filled in
  std::function<void()> run;  // one execution
};
struct KernelBatch {
  std::string name;
  int cases = 0;                                  // for the progress bar
  std::function<std::vector<KernelCase>()> make;  // allocates the batch's buffers
};
std::vector<KernelBatch> cpu_kernel_plan(bool quick);

struct RepPolicy {
  int warmup = 1;
  int min_reps = 3;
  int max_reps = 50;
  double min_time_s = 0.05;  // keep repeating until this much time was measured
  double min_rep_s = 50e-6;  // fast kernels run several times per timed repetition
};
RepPolicy cpu_rep_policy(bool quick);
// Times `run` (median/p10/p90 seconds per execution) and the repetitions made.
struct Timing {
  double median_s = 0, p10_s = 0, p90_s = 0;
  int reps = 0;
};
Timing time_kernel(const std::function<void()>& run, const RepPolicy& p);

// One core's streaming memory bandwidth (STREAM triad, best of a few), GB/s.
double measure_memory_gbps(bool quick);

// Creates the CPU device row of this host (peak and bandwidth filled in by the kernel part).
Device cpu_device_row();

// The kernel part: measures into `db` for device `dev` (updating its peak and bandwidth).
Expected<CpuProfileResult> profile_cpu_kernels(ProfileDb& db, Device& dev, const CpuProfileOptions& o);

// The whole command: device row, kernel part in this process, collective part under mpirun (or in
// this MPI job when already launched by mpirun).
Expected<CpuProfileResult> run_cpu_profile(const CpuProfileOptions& o);

// Collective part, run by every rank of an MPI job (MPLAN_PROFILES_HAVE_MPI builds). With
// device_id/session_id 0 the job runs the kernel part first on rank 0. Returns the exit code.
int mpi_profile_main(const CpuProfileOptions& o, int64_t device_id, int64_t session_id);

}  // namespace mplan::profiles
