// mpirun launching and the `mplan profile --backend cpu` driver (see launcher.h, cpu_profiler.h).
#include "profiles/launcher.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "core/process.h"
#include "profiles/cpu_profiler.h"
#include "profiles/host_info.h"

#ifndef MPLAN_MPIEXEC
#define MPLAN_MPIEXEC "mpirun"
#endif

namespace mplan::profiles {

bool under_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

std::vector<std::string> mpirun_command(int np, const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {MPLAN_MPIEXEC, "--oversubscribe"};
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  // ranks pin themselves (sched_setaffinity to their own core), so mpirun must not bind them
  for (const char* a : {"--bind-to", "none", "-np"}) cmd.push_back(a);
  cmd.push_back(std::to_string(np));
  cmd.push_back(self_executable());
  for (const auto& a : args) cmd.push_back(a);
  return cmd;
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "mplan";
  return std::string(buf, size_t(n));
}

int run_child(const std::vector<std::string>& argv) {
  ProcessOptions o;
  o.exec_hint = "; install openmpi-bin, or pass --no-collectives";
  return run_process(argv, o);
}

Expected<CpuProfileResult> run_cpu_profile(const CpuProfileOptions& o) {
  install_stop_handlers();
  auto opened = ProfileDb::open(o.db);
  if (!opened) return opened.error();
  ProfileDb* db = &opened.value();
  Device dev = cpu_device_row();
  auto id = db->add_device(dev);
  if (!id) return id.error();
  dev.id = *id;

  CpuProfileResult res;
  res.device_id = dev.id;
  if (o.kernels) {
    auto k = profile_cpu_kernels(*db, dev, o);
    if (!k) return k.error();
    res = *k;
  }
  if (!o.collectives || res.interrupted) return res;

  HostInfo h = host_info();
  int np = o.max_ranks > 0 ? o.max_ranks : int(h.cpus.size());
#ifndef MPLAN_PROFILES_HAVE_MPI
  res.notes.push_back("this mplan was built without MPI: no collectives measured");
  return res;
#endif
  if (np < 2) {
    res.notes.push_back("only one usable core: no collectives measured (give --ranks N to oversubscribe)");
    return res;
  }
  auto sess = db->begin_session(dev.id, "collectives", o.command);
  if (!sess) return sess.error();
  std::vector<std::string> args = {
      "profile", "--backend", "cpu", "--db", o.db, "--mpi-worker", std::to_string(dev.id) + ":" + std::to_string(*sess)};
  if (o.quick) args.push_back("--quick");
  if (!o.progress) args.push_back("--no-progress");
  int rc = run_child(mpirun_command(np, args));
  // The worker marks its session; a worker that died leaves it 'running'.
  auto sessions = db->sessions();
  if (sessions)
    for (const auto& s : *sessions)
      if (s.id == *sess && s.status == "running") (void)db->finish_session(*sess, stop_requested() ? "interrupted" : "failed");
  auto rows = db->collectives(dev.id);
  if (rows) res.collective_rows = int(rows->size());
  if (stop_requested()) res.interrupted = true;
  if (rc != 0 && !res.interrupted)
    return Error("the collective part (mpirun, " + std::to_string(np) + " ranks) failed with exit code " + std::to_string(rc) +
                 "; kernel rows and " + std::to_string(res.collective_rows) + " collective rows were kept in " + o.db +
                 ". Check that mpirun works here (`mpirun --oversubscribe -np 2 true`), or pass --no-collectives.");
  return res;
}

}  // namespace mplan::profiles
