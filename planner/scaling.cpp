// search_scaling(): the search over several GPU counts (see scaling.h).
#include "planner/scaling.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "core/parallel_for.h"
#include "planner/search_shared.h"

namespace mplan {

Expected<std::vector<ScalePoint>> search_scaling(const Plan& job, const std::vector<int>& gpus, const Calibration& cal,
                                                 const SearchOptions& opt) {
  for (int n : gpus)
    if (n < 1 || n > job.cluster.max_gpus())
      return Error("GPU count " + std::to_string(n) + ": cluster '" + job.cluster.name + "' holds 1 to " +
                   std::to_string(job.cluster.max_gpus()) + " GPUs");
  const size_t n = gpus.size();
  const int hw = int(std::max(1U, std::thread::hardware_concurrency()));
  const int threads = opt.threads > 0 ? opt.threads : hw;
  // Several counts run side by side, one thread each, the smallest count (the most micro-batches to
  // simulate, the longest search) first; one count, or one thread, uses the threads inside its search.
  // Every cache entry is a deterministic function of its key (search_shared.h), so each count's result
  // is the same in any order and on any thread.
  const size_t workers = std::min(n, size_t(std::max(1, threads)));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gpus[a] < gpus[b]; });
  planner::SearchShared shared;  // the caches that do not depend on the GPU count
  std::vector<std::optional<Expected<SearchResult>>> results(n);
  std::vector<double> done(n, 0.0);
  std::mutex progress_mu;
  // the counts in `order`, handed to the threads in small ranges (one count each for a sweep of 8 on 2)
  parallel_for(n, int(workers), [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      const size_t i = order[k];
      if (opt.cancel && opt.cancel->load()) return;
      Plan j = job;
      j.parallel.world_size = gpus[i];
      SearchOptions o = opt;
      if (workers > 1) o.threads = 1;
      if (opt.progress)
        o.progress = [&, i](double f) {
          std::lock_guard<std::mutex> lock(progress_mu);
          done[i] = f;
          opt.progress(std::accumulate(done.begin(), done.end(), 0.0) / double(n));
        };
      results[i] = planner::search_shared(j, cal, o, shared);
    }
  });
  std::vector<ScalePoint> out;
  for (size_t i = 0; i < n; ++i) {
    if (!results[i]) break;  // cancelled before this count started: the sweep so far
    if (!*results[i]) {
      std::vector<std::string> problems;
      for (const auto& p : results[i]->error().problems) problems.push_back(std::to_string(gpus[i]) + " GPUs: " + p);
      return Error(problems);
    }
    out.push_back({gpus[i], std::move(*results[i]).value()});
  }
  return out;
}

}  // namespace mplan
