// MPI collectives of the CPU profile, nccl-tests style: for each group size 2..N, each collective and
// each size (1 KiB to 256 MiB, x4 steps), warm-up, an iteration count that makes one timed
// repetition a few milliseconds, and repetitions whose time is the slowest rank's. Rank 0 writes one
// transaction per (group size, collective); a stop request on any rank ends the job after the batch.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/ops.h"
#include "core/stats.h"
#include "profiles/cost_eval.h"
#include "profiles/cpu_profiler.h"
#include "profiles/host_info.h"
#include "profiles/profile_grid.h"

namespace mplan::profiles {

namespace {

std::vector<int64_t> sizes(bool quick) {
  std::vector<int64_t> s;
  for (int64_t b = 1024; b <= (quick ? (int64_t(16) << 20) : (int64_t(256) << 20)); b *= 4) s.push_back(b);
  return s;
}

std::string mpi_library() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, size_t(len));
  auto nl = s.find_first_of("\n,");
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// One execution of `c` with nccl-tests size `bytes` on `comm` (g ranks).
void run_once(Collective c, int64_t bytes, MPI_Comm comm, int g, int rank, std::vector<float>& a, std::vector<float>& b) {
  int64_t n = bytes / 4;
  switch (c) {
    case Collective::all_reduce:
      MPI_Allreduce(a.data(), b.data(), int(n), MPI_FLOAT, MPI_SUM, comm);
      break;
    case Collective::all_gather:
      MPI_Allgather(a.data(), int(n / g), MPI_FLOAT, b.data(), int(n / g), MPI_FLOAT, comm);
      break;
    case Collective::reduce_scatter:
      MPI_Reduce_scatter_block(a.data(), b.data(), int(n / g), MPI_FLOAT, MPI_SUM, comm);
      break;
    case Collective::all_to_all:
      MPI_Alltoall(a.data(), int(n / g), MPI_FLOAT, b.data(), int(n / g), MPI_FLOAT, comm);
      break;
    default:  // send_recv: ring exchange, each rank sends to the next and receives from the previous
      MPI_Sendrecv(a.data(), int(n), MPI_FLOAT, (rank + 1) % g, 7, b.data(), int(n), MPI_FLOAT, (rank + g - 1) % g, 7, comm,
                   MPI_STATUS_IGNORE);
      break;
  }
}

double max_over(MPI_Comm comm, double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, comm);
  return out;
}

bool any_stop(MPI_Comm comm) {
  int mine = stop_requested() ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  return any != 0;
}

// Ranks other than 0 wait here without spinning while rank 0 measures kernels on its core.
void quiet_barrier(MPI_Comm comm) {
  MPI_Request req;
  MPI_Ibarrier(comm, &req);
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

CollectiveRow measure(Collective c, int64_t bytes, MPI_Comm comm, int g, int rank, bool quick) {
  std::vector<float> a(size_t(bytes / 4), 1.0f), b(size_t(bytes / 4), 0.0f);
  for (int w = 0; w < (quick ? 1 : 2); ++w) run_once(c, bytes, comm, g, rank, a, b);
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  run_once(c, bytes, comm, g, rank, a, b);
  double one = max_over(comm, MPI_Wtime() - t0);
  const double target = quick ? 2e-3 : 10e-3;  // seconds per timed repetition
  int iters = int(std::clamp(std::ceil(target / std::max(one, 1e-7)), 1.0, 1000.0));
  int reps = quick ? 5 : 10;
  if (one * iters * reps > (quick ? 0.3 : 3.0)) reps = quick ? 3 : 5;
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(comm);
    double s = MPI_Wtime();
    for (int i = 0; i < iters; ++i) run_once(c, bytes, comm, g, rank, a, b);
    samples.push_back(max_over(comm, (MPI_Wtime() - s) / iters));
  }
  stats::Summary st = stats::summarize(samples);
  CollectiveRow row = one_domain_collective(c, g, bytes);
  row.reps = reps;
  row.median_us = st.median * 1e6, row.p10_us = st.p10 * 1e6, row.p90_us = st.p90 * 1e6;
  row.algbw_gbps = double(bytes) / st.median / 1e9;
  row.busbw_gbps = row.algbw_gbps * collective_busbw_factor(c, g);
  row.transport = "shm";
  return row;
}

}  // namespace

int mpi_profile_main(const CpuProfileOptions& o, int64_t device_id, int64_t session_id) {
  install_stop_handlers();
  MPI_Init(nullptr, nullptr);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  HostInfo h = host_info();
  pin_to_cpu(h.cpus[size_t(rank) % h.cpus.size()]);

  // Rank 0 owns the database; its status reaches every rank so all stop together on an error.
  std::optional<ProfileDb> db;
  std::string error;
  int64_t ids[2] = {device_id, session_id};
  if (rank == 0) {
    auto d = ProfileDb::open(o.db);
    if (!d) {
      error = d.error().message();
    } else {
      db.emplace(std::move(d).value());
      if (device_id == 0) {  // launched by the user under mpirun: kernels first, on rank 0's core
        Device dev = cpu_device_row();
        auto id = db->add_device(dev);
        if (!id) {
          error = id.error().message();
        } else {
          dev.id = *id;
          ids[0] = *id;
          if (o.kernels) {
            auto k = profile_cpu_kernels(*db, dev, o);
            if (!k) error = k.error().message();
          }
          if (error.empty()) {
            auto s = db->begin_session(dev.id, "collectives", o.command);
            if (!s)
              error = s.error().message();
            else
              ids[1] = *s;
          }
        }
      }
    }
  } else if (device_id == 0) {
    quiet_barrier(MPI_COMM_WORLD);
  }
  if (rank == 0 && device_id == 0) quiet_barrier(MPI_COMM_WORLD);
  int failed = error.empty() ? 0 : 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(ids, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (failed) {
    if (rank == 0) std::fprintf(stderr, "mplan: %s\n", error.c_str());
    MPI_Finalize();
    return 2;
  }

  const std::vector<Collective> colls = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                         Collective::all_to_all, Collective::send_recv};
  const std::vector<int64_t> szs = sizes(o.quick);
  const int groups = std::max(0, world - 1);
  Progress bar("profile collectives", groups * int(colls.size() * szs.size()), o.progress && rank == 0);
  const std::string impl = mpi_library();
  int rows_written = 0;
  bool stopped = false;
  for (int g = 2; g <= world && !stopped; ++g) {
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, rank < g ? 0 : MPI_UNDEFINED, rank, &comm);
    for (Collective c : colls) {
      if (any_stop(MPI_COMM_WORLD)) {
        stopped = true;
        break;
      }
      std::vector<CollectiveRow> rows;
      if (comm != MPI_COMM_NULL) {
        for (int64_t s : szs) {
          int64_t bytes = std::max<int64_t>(4 * g, s / (4 * g) * (4 * g));
          if (rank == 0) bar.step(to_string(c) + " g=" + std::to_string(g) + " " + std::to_string(bytes) + " B", 0);
          CollectiveRow r = measure(c, bytes, comm, g, rank, o.quick);
          r.device_id = ids[0];
          r.session_id = ids[1];
          r.impl = impl;
          rows.push_back(r);
          if (rank == 0) bar.step(to_string(c) + " g=" + std::to_string(g));
        }
      }
      int ok = 1;
      if (rank == 0) {
        if (auto st = db->insert_collectives(rows); !st) {
          std::fprintf(stderr, "\nmplan: %s\n", st.error().message().c_str());
          ok = 0;
        } else {
          rows_written += int(rows.size());
        }
      }
      MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (!ok) {
        stopped = true;
        failed = 1;
        break;
      }
    }
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  bool interrupted = stopped && !failed;
  if (rank == 0) {
    bar.finish(std::to_string(rows_written) + " collective rows" + (interrupted ? " (interrupted)" : ""));
    (void)db->finish_session(ids[1], failed ? "failed" : interrupted ? "interrupted" : "complete");
  }
  MPI_Finalize();
  return failed ? 1 : interrupted ? 130 : 0;
}

}  // namespace mplan::profiles
