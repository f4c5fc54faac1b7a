// --model/--cluster/--plan resolution with user-facing errors.
#include "cli/resolve.h"

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

}  // namespace mplan::cli
