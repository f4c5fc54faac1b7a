// --model/--cluster/--plan resolution with user-facing errors.
#include "cli/resolve.h"

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
  auto r = read_plan_file(path);
  if (!r) throw InputError{r.error().message()};
  return r.value();
}

}  // namespace mplan::cli
