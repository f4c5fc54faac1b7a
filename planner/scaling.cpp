// search_scaling(): the search over several GPU counts (see scaling.h).
#include "planner/scaling.h"

#include "planner/search_shared.h"

namespace mplan {

Expected<std::vector<ScalePoint>> search_scaling(const Plan& job, const std::vector<int>& gpus, const Calibration& cal,
                                                 const SearchOptions& opt) {
  for (int n : gpus)
    if (n < 1 || n > job.cluster.max_gpus())
      return Error("GPU count " + std::to_string(n) + ": cluster '" + job.cluster.name + "' holds 1 to " +
                   std::to_string(job.cluster.max_gpus()) + " GPUs");
  std::vector<ScalePoint> out;
  planner::SearchShared shared;  // the caches that do not depend on the GPU count
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (opt.cancel && opt.cancel->load()) break;
    Plan j = job;
    j.parallel.world_size = gpus[i];
    SearchOptions o = opt;
    if (opt.progress) {
      const double n = double(gpus.size());
      o.progress = [&opt, i, n](double f) { opt.progress((double(i) + f) / n); };
    }
    auto r = planner::search_shared(j, cal, o, shared);
    if (!r) {
      std::vector<std::string> problems;
      for (const auto& p : r.error().problems) problems.push_back(std::to_string(gpus[i]) + " GPUs: " + p);
      return Error(problems);
    }
    out.push_back({gpus[i], std::move(r).value()});
  }
  return out;
}

}  // namespace mplan
