// --model/--cluster/--plan resolution with user-facing errors.
#include "cli/resolve.h"

#include <algorithm>

#include "core/bounded_input.h"

namespace mplan::cli {

ModelSpec require_model(const std::string& s) {
  auto r = resolve_model(s);
  if (!r) throw InputError{r.error().message()};
  return r.value();
}

ClusterSpec require_cluster(const std::string& s) {
  auto r = resolve_cluster(s);
  if (!r) throw InputError{r.error().message()};
  return r.value();
}

Plan require_plan(const std::string& path) {
  std::string bad = check_input_file(path);  // before reading: a device or FIFO is refused, not read
  if (!bad.empty()) throw InputError{"--plan " + bad};
  auto r = read_plan_file(path);
  if (!r) throw InputError{r.error().message()};
  return r.value();
}

void refuse_flags_beside_plan(const CLI::App& sub, const std::vector<std::string>& keep) {
  const CLI::Option* plan = sub.get_option_no_throw("--plan");
  if (plan == nullptr || plan->count() == 0) return;
  std::vector<std::string> refused;
  for (const CLI::Option* opt : sub.get_options()) {
    const std::string name = opt->get_lnames().empty() ? opt->get_single_name() : "--" + opt->get_lnames().front();
    if (opt == plan || opt->count() == 0 || opt == sub.get_help_ptr() || opt == sub.get_help_all_ptr()) continue;
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) refused.push_back(name);
  }
  if (refused.empty()) return;
  std::string names;
  for (const std::string& n : refused) names += (names.empty() ? "" : ", ") + n;
  throw InputError{names + ": given beside --plan " + plan->as<std::string>() + ", which already fixes the model, " +
                   "cluster, batch, framework and layout (a flag would be silently ignored); edit the plan file, " +
                   "or drop --plan and give the job and layout flags (mplan simulate --model ... --tp ...), or write " +
                   "new plans with mplan search --out DIR"};
}

}  // namespace mplan::cli
