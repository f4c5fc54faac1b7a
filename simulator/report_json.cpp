// StepReport -> the JSON of `mplan simulate --format json`, and the Chrome-trace export.
#include <map>

#include "simulator/simulator.h"

namespace mplan {

using nlohmann::json;

json critical_path_json(const StepReport& r);

static json memory_json(const MemoryBreakdown& m) {
  return {{"weights", m.weights},         {"gradients", m.gradients},       {"optimizer", m.optimizer},
          {"activations", m.activations}, {"comm_buffers", m.comm_buffers}, {"other", m.other}};
}

json report_to_json(const StepReport& r) {
  json stages = json::array();
  for (const auto& s : r.per_stage)
    stages.push_back(
        {{"stage", s.stage},
         {"layers", s.layers},
         {"memory_gib", s.memory_gib},
         {"busy_s", s.busy_s},
         {"max_microbatches_in_flight", s.max_microbatches_in_flight},
         {"memory_breakdown_gib", memory_json(s.memory)},
         {"work_per_microbatch_s", s.work_per_microbatch_s},
         {"idle_s", {{"fill_drain", s.idle_fill_drain_s}, {"stage_imbalance", s.idle_imbalance_s}, {"p2p", s.idle_p2p_s}}}});
  json ops = json::array();
  for (const auto& o : r.ops) ops.push_back({{"op", o.name}, {"time_s", o.time_s}, {"calls", o.calls}});
  const TimeBreakdown& t = r.time;
  json out = {{"step_time_s", r.step_time_s},
              {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
              {"tokens_per_s_per_gpu_interval",
               nlohmann::json::array({r.tokens_per_s_per_gpu_interval.first, r.tokens_per_s_per_gpu_interval.second})},
              {"step_time_s_interval", nlohmann::json::array({r.step_time_s_interval.first, r.step_time_s_interval.second})},
              {"model_tflops_per_gpu", r.model_tflops_per_gpu},
              {"mfu", r.mfu},
              {"mfu_full_attention", r.mfu_full_attention},
              {"peak_memory_gib", r.peak_memory_gib},
              {"capacity_gib", r.capacity_gib},
              {"fits", r.fits},
              {"bubble_fraction", r.bubble_fraction},
              {"num_microbatches", r.num_microbatches},
              {"time_breakdown_s",
               {{"compute", t.compute},
                {"recompute", t.recompute},
                {"tp_comm_exposed", t.tp_comm_exposed},
                {"cp_comm_exposed", t.cp_comm_exposed},
                {"ep_comm_exposed", t.ep_comm_exposed},
                {"dp_comm_exposed", t.dp_comm_exposed},
                {"pp_p2p_exposed", t.pp_p2p_exposed},
                {"offload_exposed", t.offload_exposed},
                {"bubble", t.bubble},
                {"optimizer", t.optimizer}}},
              {"memory_breakdown_gib", memory_json(r.memory)},
              {"per_stage", stages},
              {"ops", ops},
              {"warnings", r.warnings},
              {"critical_stage", r.critical_stage},
              {"bottleneck_stage", r.bottleneck_stage},
              {"bubble_s", {{"fill_drain", r.bubble_fill_drain_s}, {"stage_imbalance", r.bubble_imbalance_s}}}};
  if (!r.critical_path.empty()) out["critical_path"] = critical_path_json(r);
  return out;
}

json critical_path_json(const StepReport& r) {
  json events = json::array(), by = json::array();
  for (const CriticalEvent& e : r.critical_path)
    events.push_back({{"kind", e.kind},
                      {"stage", e.stage},
                      {"microbatch", e.microbatch},
                      {"chunk", e.chunk},
                      {"start_s", e.start_s},
                      {"duration_s", e.duration_s}});
  for (const CriticalKindShare& k : r.critical_by_kind)
    by.push_back({{"kind", k.kind}, {"time_s", k.time_s}, {"share", k.share}});
  return {{"length_s", r.critical_path_s}, {"events", events}, {"by_kind", by}};
}

namespace {

// Chrome-trace threads of a stage: one per stream; the pipeline's sends of activations, of gradients
// and its waits for a transfer get their own so that slices on a thread nest.
const std::pair<const char*, int> kThreads[] = {{"compute", 0}, {"tp", 1},  {"cp", 2},           {"ep", 3},
                                                {"dp", 4},      {"p2p", 5}, {"p2p backward", 6}, {"p2p wait", 7}};

// The process of the "critical path" track (above every stage's pid).
constexpr int kCriticalPid = 1000000;

int thread_of(const TraceEvent& e) {
  if (e.stream == "p2p") return e.name.rfind("wait", 0) == 0 ? 7 : e.name.rfind("send B", 0) == 0 ? 6 : 5;
  for (const auto& [name, id] : kThreads)
    if (e.stream == name) return id;
  return 0;
}

}  // namespace

json trace_to_json(const StepReport& r, const Plan& plan) {
  json ev = json::array();
  for (int s = 0; s < plan.parallel.pp; ++s) {
    ev.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", s}, {"args", {{"name", "pipeline stage " + std::to_string(s)}}}});
    ev.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", s}, {"args", {{"sort_index", s}}}});
    for (const auto& [name, id] : kThreads)
      ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", s}, {"tid", id}, {"args", {{"name", name}}}});
  }
  json critical = json::array();
  if (!r.critical_path.empty()) {
    ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", kCriticalPid}, {"args", {{"name", "critical path"}}}});
    ev.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", kCriticalPid}, {"args", {{"sort_index", -1}}}});
    ev.push_back(
        {{"ph", "M"}, {"name", "thread_name"}, {"pid", kCriticalPid}, {"tid", 0}, {"args", {{"name", "critical path"}}}});
  }
  int64_t flow = 0;
  for (const auto& e : r.trace) {
    const int tid = thread_of(e);
    json x = {{"ph", "X"},           {"name", e.name}, {"cat", std::string(1, e.phase)},
              {"pid", e.stage},      {"tid", tid},     {"ts", e.start_s * 1e6},
              {"dur", e.dur_s * 1e6}};
    json args = json::object();
    if (e.microbatch >= 0) args["microbatch"] = e.microbatch, args["chunk"] = e.chunk;
    if (e.phase == 'C') args["exposed_us"] = e.exposed_s * 1e6;
    if (e.critical) args["critical"] = true;
    if (!args.empty()) x["args"] = std::move(args);
    if (e.critical) {  // a copy on the "critical path" track (its own process, below the stages)
      json c = x;
      c["pid"] = kCriticalPid;
      c["tid"] = 0;
      c["name"] = "stage " + std::to_string(e.stage) + " " + e.name;
      critical.push_back(std::move(c));
    }
    ev.push_back(std::move(x));
    if (e.exposed_s > 0 && e.exposed_s < e.dur_s)  // the exposed part as a slice inside the event
      ev.push_back({{"ph", "X"},
                    {"name", "exposed"},
                    {"cat", "exposed"},
                    {"pid", e.stage},
                    {"tid", tid},
                    {"ts", (e.start_s + e.dur_s - e.exposed_s) * 1e6},
                    {"dur", e.exposed_s * 1e6}});
    if (e.peer_stage >= 0) {  // a flow arrow from the send to the action that consumes it
      ++flow;
      ev.push_back(
          {{"ph", "s"}, {"name", "p2p"}, {"cat", "p2p"}, {"id", flow}, {"pid", e.stage}, {"tid", tid}, {"ts", e.start_s * 1e6}});
      ev.push_back({{"ph", "f"},
                    {"bp", "e"},
                    {"name", "p2p"},
                    {"cat", "p2p"},
                    {"id", flow},
                    {"pid", e.peer_stage},
                    {"tid", 0},
                    {"ts", e.peer_start_s * 1e6}});
    }
  }
  for (auto& c : critical) ev.push_back(std::move(c));
  for (const auto& m : r.memory_trace)
    ev.push_back(
        {{"ph", "C"}, {"name", "activation memory (GiB)"}, {"pid", m.stage}, {"ts", m.time_s * 1e6}, {"args", {{"GiB", m.gib}}}});
  return {{"traceEvents", ev},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"model", plan.model.name}, {"step_time_s", r.step_time_s}, {"mfu", r.mfu}}}};
}

}  // namespace mplan
