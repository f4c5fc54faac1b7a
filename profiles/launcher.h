// Launching the collective part of the CPU profile: detecting an MPI job, and starting this binary
// again under mpirun (--oversubscribe; --allow-run-as-root when root) as ranks of a worker job.
#pragma once
#include <string>
#include <vector>

namespace mplan::profiles {

// True when this process is a rank of an MPI job started by mpirun/mpiexec/srun.
bool under_mpi();

// The mpirun command line that runs `args` (after the executable) on `np` ranks of this host.
std::vector<std::string> mpirun_command(int np, const std::vector<std::string>& args);

// Runs `argv` as a child process and waits; returns its exit code (128 + signal when killed,
// -1 when it could not start). SIGINT/SIGTERM reach the child through the process group.
int run_child(const std::vector<std::string>& argv);

// Absolute path of the running executable.
std::string self_executable();

}  // namespace mplan::profiles
