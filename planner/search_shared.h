// What the searches of one job at several GPU counts share (search_scaling): the caches whose entries
// do not depend on the GPU count — the simulation cache (schedule tables per (schedule, pp, vpp,
// micro-batches), op-list costs and group placements per grid), the per-layer probes per shape and the
// per-shape floors. Every entry is a deterministic function of its key and the job's model, cluster,
// training, runtime options and cost parameters, so a search gives the same result with a fresh or a
// shared one (tests/planner/test_sim_cache.cpp compares sweeps with single searches).
#pragma once
#include <memory>
#include <mutex>
#include <optional>

#include "core/plan.h"
#include "core/status.h"
#include "planner/constraints.h"
#include "planner/floor.h"
#include "planner/layer_costs.h"
#include "planner/planner.h"
#include "simulator/simulator.h"

namespace mplan::planner {

class SearchShared {
 public:
  SearchShared() = default;
  SearchShared(const SearchShared&) = delete;
  SearchShared& operator=(const SearchShared&) = delete;
  // The caches for `job` (model, cluster, training and runtime options as search() prepared them) and
  // `prm`: made by the first search; later ones must be of the same job at another GPU count.
  // Safe to call from concurrent searches (search_scaling runs GPU counts side by side): the first binds.
  void bind(const Plan& job, const CostParams& prm) {
    std::call_once(bound_, [&] {
      plan_.emplace(job);
      job_ = std::make_unique<Job>(*plan_);
      costs_ = std::make_unique<LayerCostCache>(*plan_, prm);
      floors_ = std::make_unique<FloorCache>(*job_, prm);
    });
  }
  SimCache& sim() { return sim_; }
  LayerCostCache& costs() { return *costs_; }
  FloorCache& floors() { return *floors_; }

 private:
  std::once_flag bound_;
  SimCache sim_;
  std::optional<Plan> plan_;
  std::unique_ptr<Job> job_;
  std::unique_ptr<LayerCostCache> costs_;
  std::unique_ptr<FloorCache> floors_;
};

// search() with caches shared with other searches of the same job (search_scaling).
Expected<SearchResult> search_shared(const Plan& job, const Calibration& cal, const SearchOptions& opt, SearchShared& shared);

}  // namespace mplan::planner
