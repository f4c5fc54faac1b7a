// `mplan simulate`: predict one plan (flags or --plan FILE) — table or JSON, optional Chrome trace; a
// layout that does not fit names the memory option that makes it fit (fits_with).
// `mplan validate` and `mplan bench` are registered from cmd_validate.cpp / cmd_bench.cpp.
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/plan_args.h"
#include "cli/resolve.h"
#include "cli/simulate_output.h"
#include "core/json_fields.h"
#include "core/strict_json.h"
#include "simulator/simulator.h"

namespace mplan::cli {

namespace {

struct SimulateOptions {
  JobArgs job;
  LayoutArgs layout;
  std::string plan_file, format = "table", trace_file;
};

int run_simulate(const SimulateOptions& o) {
  Plan plan = o.plan_file.empty() ? plan_from_args(o.job, o.layout) : require_plan(o.plan_file);
  CostParams params = cost_params_for(plan, o.job.calibration, o.job.force);
  SimOptions so;
  so.trace = !o.trace_file.empty();
  so.critical_path = true;
  auto r = simulate(plan, params, so);
  if (!r) throw InputError{r.error().message()};
  // a layout that does not fit: the memory option that makes it fit at the least predicted step time
  std::optional<FitsWith> fits;
  if (!r->fits) fits = fits_with(plan, params);
  if (so.trace) {
    std::string err = write_text_file_atomic(o.trace_file, dump_json(trace_to_json(*r, plan)) + "\n");
    if (!err.empty()) throw InputError{"--trace: " + err};
  }
  if (o.format == "json") {
    nlohmann::json j = report_to_json(*r);
    if (!r->fits) j["fits_with"] = fits_with_json(fits);
    j["plan"] = plan_to_json(plan);
    std::cout << dump_json(j, 2) << "\n";
  } else {
    std::cout << render_report_table(plan, *r, &fits);
    if (so.trace) std::cout << "\ntrace written to " << o.trace_file << " (open in https://ui.perfetto.dev)\n";
  }
  return kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, Runner& run);
void add_bench_command(CLI::App& app, Runner& run);

void add_simulate_commands(CLI::App& app, Runner& run) {
  auto o = std::make_shared<SimulateOptions>();
  auto* sub = app.add_subcommand("simulate", "Predict one training step of a layout: time, MFU, memory, bubbles");
  add_job_options(sub, o->job, false);
  add_layout_options(sub, o->layout);
  sub->add_option("--plan", o->plan_file, "mplan.plan/1 file instead of the job and layout flags");
  sub->add_option("--format", o->format, "table|json")->check(format_choice({"table", "json"}));
  sub->add_option("--trace", o->trace_file, "write a Chrome-trace JSON timeline (Perfetto)");
  sub->callback([&run, o, sub] {
    run = [o, sub] {
      refuse_flags_beside_plan(*sub, {"--calibration", "--force", "--format", "--trace"});
      return run_simulate(*o);
    };
  });
  add_validate_command(app, run);
  add_bench_command(app, run);
}

}  // namespace mplan::cli
