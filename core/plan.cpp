// Plan file reading, writing and validation.
#include "core/plan.h"

#include "core/framework_profile.h"
#include "core/json_fields.h"
#include "core/strict_json.h"

namespace mplan {

using nlohmann::json;

json plan_to_json(const Plan& p) {
  return {{"schema", kPlanSchema},
          {"model", model_to_json(p.model)},
          {"cluster", cluster_to_json(p.cluster)},
          {"training", training_to_json(p.training)},
          {"parallel", parallel_to_json(p.parallel)},
          {"framework", to_string(p.training.framework)},
          {"meta", p.meta}};
}

Expected<Plan> plan_from_json(const json& j) {
  std::vector<std::string> problems;
  JsonFields f(j, "plan", problems);
  if (!problems.empty()) return Error(problems);
  f.reject_unknown({"schema", "model", "cluster", "training", "parallel", "framework", "meta"});
  auto schema = f.opt_string("schema");
  if (!schema)
    f.problem("schema", std::string("missing; expected \"") + kPlanSchema + "\"");
  else if (*schema != kPlanSchema)
    f.problem("schema", "'" + *schema + "' is not supported; this mplan reads \"" + kPlanSchema + "\"");
  Plan p;
  auto take = [&](const char* key) -> const json* {
    const json* o = f.object(key);
    if (!o && !f.has(key)) f.problem(key, "missing; expected an object");
    return o;
  };
  if (const json* m = take("model")) {
    auto r = model_from_json(*m);
    if (r)
      p.model = r.value();
    else
      for (auto& e : r.error().problems) problems.push_back("plan." + e);
  }
  if (const json* c = take("cluster")) {
    auto r = cluster_from_json(*c);
    if (r)
      p.cluster = r.value();
    else
      for (auto& e : r.error().problems) problems.push_back("plan." + e);
  }
  if (const json* t = take("training")) {
    auto r = training_from_json(*t);
    if (r)
      p.training = r.value();
    else
      for (auto& e : r.error().problems) problems.push_back("plan." + e);
  }
  if (const json* q = take("parallel")) {
    auto r = parallel_from_json(*q);
    if (r)
      p.parallel = r.value();
    else
      for (auto& e : r.error().problems) problems.push_back("plan." + e);
  }
  p.training.framework = *parse_framework(f.choice_or("framework", framework_choices(), "megatron"));
  // a plan that names no context-parallel exchange gets its framework's (default_cp_comm)
  if (const json* q = j.is_object() && j.contains("parallel") ? &j.at("parallel") : nullptr;
      q && q->is_object() && !q->contains("cp_comm_type"))
    p.parallel.cp_comm_type = default_cp_comm(p.training.framework);
  if (p.training.torch_compile && !framework_profile(p.training.framework).supports_torch_compile)
    f.problem("training.torch_compile",
              "applies only to framework " + frameworks_with(&FrameworkProfile::supports_torch_compile) +
                  " (torch.compile of its model); framework " + to_string(p.training.framework) + " takes false or no field");
  if (f.has("meta")) {
    if (const json* meta = f.object("meta")) p.meta = *meta;
  }
  if (!problems.empty()) return Error(problems);
  auto v = validate_layout(p.model, p.cluster, p.training, p.parallel);
  if (!v.empty()) {
    for (auto& e : v) e = "plan layout: " + e;
    return Error(v);
  }
  return p;
}

Expected<Plan> read_plan_file(const std::string& path) {
  std::vector<std::string> problems;
  auto text = read_text_file(path, problems);
  if (!text) return Error(problems);
  auto j = parse_json_text(*text, path, problems);
  if (!j) return Error(problems);
  auto r = plan_from_json(*j);
  if (!r) {
    std::vector<std::string> msgs;
    for (auto& e : r.error().problems) msgs.push_back(path + ": " + e);
    return Error(msgs);
  }
  return r;
}

Status write_plan_file(const std::string& path, const Plan& p) {
  std::string err = write_text_file_atomic(path, dump_json(plan_to_json(p), 2) + "\n");
  if (!err.empty()) return Error(err);
  return {};
}

}  // namespace mplan
