// Enumeration of the search space (see space.h).
#include "planner/space.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/framework_profile.h"
#include "core/megatron_rules.h"

namespace mplan::planner {

namespace {

std::vector<int> divisors(int64_t n) {
  std::vector<int> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(int(i));
      if (i * i != n) d.push_back(int(n / i));
    }
  std::sort(d.begin(), d.end());
  return d;
}

struct Counter {
  Space& sp;
  std::map<const char*, int64_t> by_rule;
  void reject(const char* rule) {
    ++sp.rejected;
    ++by_rule[rule];
  }
};

using PipeKey = std::tuple<int, int, int, int, int>;  // pp, vpp, pipe, first, last

int pipe_index(Space& sp, std::map<PipeKey, int>& ids, const ModelSpec& m, int pp, int vpp, PipeLayout pipe, int first,
               int last) {
  auto key = std::make_tuple(pp, vpp, int(pipe), first, last);
  auto it = ids.find(key);
  if (it != ids.end()) return it->second;
  int id = int(sp.pipes.size());
  sp.pipes.push_back(make_pipe_shape(m, pp, vpp, pipe, first, last));
  ids.emplace(key, id);
  return id;
}

}  // namespace

std::vector<std::pair<int, int>> uneven_stage_splits(const ModelSpec& m, int pp) {
  std::vector<std::pair<int, int>> out;
  const int L = m.num_layers;
  if (pp < 2) return out;
  std::vector<int> balanced;
  for (const auto& row : balanced_pipeline_layout(m, pp, 1)) balanced.push_back(row[0]);
  for (int k = 1; k <= 3; ++k)
    for (int j = -2; j <= 2; ++j) {
      if ((L + j + k) % pp != 0) continue;
      int n = (L + j + k) / pp, first = n - j, last = n - k;
      if (first < 1 || last < 1 || n < 1) continue;
      std::vector<int> st(size_t(pp), n);
      st.front() = first;
      st.back() = last;
      if (st == balanced) continue;
      out.emplace_back(first, last);
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<uint32_t> recompute_module_sets(const Job& job) {
  const ModelSpec& m = job.model();
  if (!framework_memory(job.plan->training.framework).supports_recompute_modules) return {0};
  auto set = [](std::initializer_list<RecomputeModule> mods) {
    uint32_t b = 0;
    for (RecomputeModule r : mods) b |= uint32_t(r);
    return b;
  };
  using R = RecomputeModule;
  std::vector<uint32_t> out = {0};  // Megatron's default: core_attn
  // 'moe_act' needs Megatron's grouped GEMM (core/megatron_rules.h)
  const bool moe_act = !framework_profile(job.plan->training.framework).megatron_core_rules ||
                       megatron_moe_grouped_gemm(job.plan->training.precision);
  if (!m.moe) {
    out.push_back(set({R::core_attn, R::layernorm}));
    out.push_back(set({R::core_attn, R::layernorm, R::mlp}));
  } else {
    if (moe_act) out.push_back(set({R::layernorm, R::moe_act}));
    out.push_back(set({R::layernorm, R::moe}));
    if (job.mla && moe_act) out.push_back(set({R::mla_up_proj, R::layernorm, R::moe_act}));
  }
  return out;
}

std::vector<uint32_t> offload_module_sets(const Job& job) {
  if (!framework_memory(job.plan->training.framework).supports_activation_offload) return {0};
  if (job.moe) return {0, uint32_t(OffloadModule::expert_fc1) | uint32_t(OffloadModule::moe_act)};
  return {0, uint32_t(OffloadModule::core_attn) | uint32_t(OffloadModule::attn_proj)};
}

std::vector<int> zero_levels(const Limits& lim) {
  std::vector<int> z;
  for (int v = 0; v <= 3; ++v)
    if (lim.allows("zero", v)) z.push_back(v);
  return z;
}

Space enumerate_structures(const Job& job, const Limits& lim, bool allow_tp_nvlink) {
  Space space;
  Counter cnt{space, {}};
  const ModelSpec& m = job.model();
  const int world = job.world;
  // what the job's framework runs (core/framework.h) and, for Megatron, Transformer Engine's own rules
  const Framework fw = job.plan->training.framework;
  const FrameworkRuns runs = framework_runs(fw);
  const bool megatron = framework_profile(fw).megatron_core_rules;
  const Precision prec = job.plan->training.precision;
  std::map<PipeKey, int> pipe_ids;
  // what depends only on (pp, vpp), on pp or on dp, asked again for every tp, cp, ep and etp: made once
  std::map<std::pair<int, int>, bool> balanced_differs;  // the balanced split is not the even one
  std::map<int, std::vector<std::pair<int, int>>> splits;
  std::map<int, std::vector<int>> mbs_options;
  Layout l;
  for (int tp : divisors(world)) {
    if (!lim.allows("tp", tp)) continue;
    l = Layout{};
    l.tp = tp;
    l.sp = tp > 1;
    if (!allow_tp_nvlink && tp > job.domain) {
      cnt.reject(rule::tp_nvlink);
      continue;
    }
    if (m.num_attention_heads % tp != 0) {
      cnt.reject(rule::tp_heads);
      continue;
    }
    if (!job.mla && m.num_query_groups % tp != 0) {
      cnt.reject(rule::tp_groups);
      continue;
    }
    if (m.ffn_hidden_size % tp != 0) {
      cnt.reject(rule::tp_ffn);
      continue;
    }
    if (tp > 1 && !runs.tensor_parallel) {
      cnt.reject(rule::framework);
      continue;
    }
    if (megatron && !megatron_fp8_tp_problem(m, prec, tp).empty()) {
      cnt.reject(rule::fp8_shape);
      continue;
    }
    for (int pp : divisors(world / tp)) {
      if (!lim.allows("pp", pp)) continue;
      if (pp > job.units) {
        cnt.reject(rule::chunks);
        continue;
      }
      if (pp > 1 && !runs.pipeline_parallel) {
        cnt.reject(rule::framework);
        continue;
      }
      for (int cp : divisors(world / tp / pp)) {
        if (!lim.allows("cp", cp)) continue;
        if (cp > 1 && !lim.max.count("cp") && !lim.fix.count("cp") && job.seq() / cp < 1024) continue;
        if (cp > 1 && job.seq() % (2 * int64_t(cp)) != 0) {
          cnt.reject(rule::cp_seq);
          continue;
        }
        if (cp > 1 && runs.cp_comm == 0) {
          cnt.reject(rule::framework);
          continue;
        }
        if (cp > 1 && megatron && job.plan->parallel.attention_backend == AttentionBackend::unfused) {
          cnt.reject(rule::cp_unfused);
          continue;
        }
        int dp = world / tp / pp / cp;
        if (!lim.allows("dp", dp)) continue;
        if (job.gbs() % dp != 0) {
          cnt.reject(rule::gbs_dp);
          continue;
        }
        std::vector<int> eps = {1}, etps = {1};
        if (job.moe) eps = divisors(m.moe->num_experts);
        for (int ep : eps) {
          if (!lim.allows("ep", ep)) continue;
          if (job.moe) etps = divisors(tp);
          for (int etp : etps) {
            if (!lim.allows("etp", etp)) continue;
            if (job.moe && (int64_t(tp) * cp * dp) % (int64_t(ep) * etp) != 0) {
              cnt.reject(rule::ep_tiling);
              continue;
            }
            if (job.moe && m.moe->moe_ffn_hidden_size % etp != 0) {
              cnt.reject(rule::etp_ffn);
              continue;
            }
            if (job.moe && m.add_bias_linear && etp > 1) {
              cnt.reject(rule::etp_bias);
              continue;
            }
            if (job.moe && megatron && !megatron_fp8_etp_problem(m, prec, etp).empty()) {
              cnt.reject(rule::fp8_shape);
              continue;
            }
            // vpp beyond kMaxSearchedVpp shortens the bubble by under 1/kMaxSearchedVpp of its 1F1B size,
            // while every vpp value costs a pipeline shape of pp*vpp chunks: trying all of 1 .. layers/pp
            // made search time and memory grow with the square of the layers. --fix/--max vpp lift the cap.
            int vmax = pp == 1 ? 1 : std::max(1, job.units / pp);
            if (!lim.fix.count("vpp") && !lim.max.count("vpp")) vmax = std::min(vmax, kMaxSearchedVpp);
            for (int vpp = 1; vpp <= vmax; ++vpp) {
              if (!lim.allows("vpp", vpp)) continue;
              if (pp > 1 && !runs_pipeline(fw, pp, vpp)) {
                cnt.reject(rule::framework);
                continue;
              }
              bool even = m.num_layers % pp == 0 && (m.num_layers / pp) % vpp == 0 && pp * vpp <= m.num_layers;
              bool balanced = pp > 1 && pp * vpp <= job.units;
              struct Pipe {
                PipeLayout kind;
                int first = 0, last = 0;
              };
              std::vector<Pipe> pipes;
              if (even) pipes.push_back({PipeLayout::even});
              if (balanced) {
                auto [known, fresh] = balanced_differs.try_emplace({pp, vpp}, false);
                if (fresh) {
                  auto b = balanced_pipeline_layout(m, pp, vpp);
                  bool same = even;
                  if (even)
                    for (const auto& row : b)
                      for (int v : row) same = same && v == m.num_layers / (pp * vpp);
                  known->second = !same;
                }
                if (known->second) pipes.push_back({PipeLayout::balanced});
              }
              if (vpp == 1) {
                auto sp = splits.find(pp);
                if (sp == splits.end()) sp = splits.emplace(pp, uneven_stage_splits(m, pp)).first;
                for (auto [first, last] : sp->second) pipes.push_back({PipeLayout::first_last, first, last});
              }
              if (pipes.empty()) {
                cnt.reject(pp * vpp > job.units ? rule::chunks : rule::layers_split);
                continue;
              }
              if (pp > 1 && !runs.uneven_pipeline) {  // the framework splits the layers evenly only
                pipes.erase(std::remove_if(pipes.begin(), pipes.end(), [](const Pipe& q) { return q.kind != PipeLayout::even; }),
                            pipes.end());
                if (pipes.empty()) {
                  cnt.reject(rule::framework);
                  continue;
                }
              }
              for (const Pipe& pipe : pipes) {
                int pid = -1;
                auto mo = mbs_options.find(dp);
                if (mo == mbs_options.end()) mo = mbs_options.emplace(dp, divisors(job.gbs() / dp)).first;
                for (int mbs : mo->second) {
                  if (!lim.allows("mbs", mbs)) continue;
                  int64_t micro = job.gbs() / (int64_t(mbs) * dp);
                  if (vpp > 1 && micro % pp != 0) {
                    cnt.reject(rule::interleaved_m);
                    continue;
                  }
                  if (pp > 1 && runs.microbatches_multiple_of_pp && micro % pp != 0) {
                    cnt.reject(rule::framework);
                    continue;
                  }
                  if (pid < 0) pid = pipe_index(space, pipe_ids, m, pp, vpp, pipe.kind, pipe.first, pipe.last);
                  Structure st;
                  st.base = l;
                  st.base.pp = pp;
                  st.base.vpp = vpp;
                  st.base.pipe = pipe.kind;
                  st.base.first_layers = int16_t(pipe.first);
                  st.base.last_layers = int16_t(pipe.last);
                  st.base.cp = cp;
                  st.base.dp = dp;
                  st.base.ep = ep;
                  st.base.etp = etp;
                  st.base.mbs = mbs;
                  st.base.schedule = vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
                  if (!runs_schedule(fw, st.base.schedule, pp, vpp)) st.base.schedule = Schedule::gpipe;
                  st.pipe_id = pid;
                  space.structures.push_back(st);
                }
              }
            }
          }
        }
      }
    }
  }
  for (const auto& [r, n] : cnt.by_rule) space.rejected_by_rule.emplace_back(r, n);
  return space;
}

int64_t structure_variants(const Job& job, const Limits& lim, const Structure& st, const PipeShape& ps, std::vector<Layout>* out,
                           Space* space) {
  const ModelSpec& m = job.model();
  auto reject = [&](const char* r) {
    if (!space) return;
    ++space->rejected;
    for (auto& [name, n] : space->rejected_by_rule)
      if (name == r) {
        ++n;
        return;
      }
    space->rejected_by_rule.emplace_back(r, 1);
  };
  Layout l = st.base;
  // sequence parallel / TP-comm overlap
  // the choice lists are per-thread buffers: this runs for every structure of the space
  thread_local std::vector<std::pair<uint8_t, uint8_t>> tpv;
  tpv.clear();
  if (l.tp == 1) {
    tpv = {{0, 0}};
  } else {
    if (!job.moe) tpv.emplace_back(0, 0);
    tpv.emplace_back(1, 0);
    tpv.emplace_back(1, 1);
  }
  // only the CP exchanges and schedules the job's framework runs (core/framework.h)
  const Framework fw = job.plan->training.framework;
  const bool megatron = framework_profile(fw).megatron_core_rules;
  thread_local std::vector<CpCommType> cps;
  cps.assign(1, CpCommType::p2p);
  if (l.cp > 1) {
    cps.clear();
    for (CpCommType c : {CpCommType::p2p, CpCommType::a2a, CpCommType::allgather})
      if (runs_cp_comm(fw, c)) cps.push_back(c);
  }
  thread_local std::vector<Schedule> scheds;
  scheds.clear();
  if (l.vpp > 1)
    scheds = {Schedule::interleaved};
  else if (l.pp > 1)
    scheds = {Schedule::one_f_one_b, Schedule::zero_bubble};
  else
    scheds = {Schedule::one_f_one_b};
  scheds.erase(std::remove_if(scheds.begin(), scheds.end(), [&](Schedule s) { return !runs_schedule(fw, s, l.pp, l.vpp); }),
               scheds.end());
  // GPipe has 1F1B's bubble and keeps every micro-batch's activations: tried where it is the
  // framework's only schedule for this pipeline, or when fixed
  if (scheds.empty() && l.pp > 1 && runs_schedule(fw, Schedule::gpipe, l.pp, l.vpp)) scheds = {Schedule::gpipe};
  if (lim.fixed("schedule")) {
    Schedule f = Schedule(lim.fix.at("schedule"));
    if (f == Schedule::gpipe && l.vpp == 1 && (l.pp == 1 || runs_schedule(fw, f, l.pp, l.vpp)))
      scheds = {Schedule::gpipe};
    else
      scheds.erase(std::remove_if(scheds.begin(), scheds.end(), [&](Schedule s) { return s != f; }), scheds.end());
  }
  // recompute modes: (mode, layers, selective modules, offloaded modules)
  struct Rc {
    Recompute mode;
    int layers;
    uint32_t rmods, offload;
  };
  thread_local std::vector<Rc> rcs;
  rcs.clear();
  // the module sets depend on the framework, the precision and the model's kind only: made once per
  // thread and such job
  struct Sets {
    std::tuple<int, int, bool, bool> key{-1, -1, false, false};
    std::vector<uint32_t> offloads, rmods;
  };
  thread_local Sets sets;
  const auto key = std::make_tuple(int(fw), int(job.plan->training.precision), job.moe, job.mla);
  if (sets.key != key) sets = {key, offload_module_sets(job), recompute_module_sets(job)};
  const std::vector<uint32_t>& offloads = sets.offloads;
  if (lim.allows("recompute", 0) && lim.allows("recompute_layers", 0))
    for (uint32_t off : offloads) rcs.push_back({Recompute::none, 0, 0, off});
  if (lim.allows("recompute", 1) && lim.allows("recompute_layers", 0))
    for (uint32_t mods : sets.rmods)
      for (uint32_t off : offloads) {
        const bool moe_rc = (mods & uint32_t(RecomputeModule::moe)) != 0;
        const bool moe_off = (off & (uint32_t(OffloadModule::expert_fc1) | uint32_t(OffloadModule::moe_act))) != 0;
        if (moe_rc && moe_off) continue;  // Megatron rejects offloading what the moe module recomputes
        rcs.push_back({Recompute::selective, 0, mods, off});
      }
  if (lim.allows("recompute", 2)) {
    if (lim.allows("recompute_layers", 0)) rcs.push_back({Recompute::full, 0, 0, 0});
    for (int k : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128})
      if (k < ps.min_chunk && lim.allows("recompute_layers", k)) rcs.push_back({Recompute::full, k, 0, 0});
    if (lim.fixed("recompute_layers")) {
      int k = lim.fix.at("recompute_layers");
      bool have = false;
      for (auto& rc : rcs) have = have || (rc.mode == Recompute::full && rc.layers == k);
      if (!have && k > 0 && k <= ps.min_chunk) rcs.push_back({Recompute::full, k, 0, 0});
    }
  }
  // MoE all-to-all overlap (Megatron's --overlap-moe-expert-parallel-comm): with expert parallelism,
  // pp = 1 or interleaving, and neither full recompute nor the 'moe' recompute module
  thread_local std::vector<uint8_t> a2as;
  a2as.clear();
  for (uint8_t a : {uint8_t(0), uint8_t(1)})
    if ((a == 0 || (job.moe && l.ep > 1 && (l.pp == 1 || l.vpp > 1))) && lim.allows("moe_a2a_overlap", a)) a2as.push_back(a);
  // the (recompute mode, all-to-all overlap) pairs: the same for every sp / overlap / CP exchange
  auto pair_ok = [](const Rc& rc, uint8_t a2a) {
    return !a2a || (rc.mode != Recompute::full && (rc.rmods & uint32_t(RecomputeModule::moe)) == 0);
  };
  int64_t pairs = 0;
  for (const Rc& rc : rcs)
    for (uint8_t a2a : a2as) pairs += pair_ok(rc, a2a) ? 1 : 0;
  int64_t count = 0;
  for (auto [sp, ov] : tpv) {
    if (!lim.allows("sp", sp) || !lim.allows("tp_comm_overlap", ov)) continue;
    if (sp && job.seq() % (int64_t(l.tp) * l.cp) != 0) {
      reject(rule::sp_seq);
      continue;
    }
    if (megatron && !megatron_fp8_tokens_ok(job.plan->training.precision, l.mbs, job.seq(), l.cp, l.tp, sp)) {
      reject(rule::fp8_shape);
      continue;
    }
    for (CpCommType cc : cps) {
      if (!lim.allows("cp_comm", int(cc))) continue;
      if (cc == CpCommType::a2a &&
          ((m.num_attention_heads / l.tp) % l.cp != 0 || (!job.mla && (m.num_query_groups / l.tp) % l.cp != 0))) {
        reject(rule::cp_a2a);
        continue;
      }
      if (l.cp > 1 && megatron && !megatron_cp_comm_ok(m, cc)) {
        reject(rule::cp_attention);
        continue;
      }
      count += pairs * int64_t(scheds.size());
      if (!out) continue;
      for (const Rc& rc : rcs)
        for (uint8_t a2a : a2as) {
          if (!pair_ok(rc, a2a)) continue;
          for (Schedule s : scheds) {
            Layout v = l;
            v.sp = sp;
            v.overlap = ov;
            v.cp_comm = cc;
            v.recompute = rc.mode;
            v.recompute_layers = rc.layers;
            v.rmods = rc.rmods;
            v.offload = rc.offload;
            v.schedule = s;
            v.a2a = a2a;
            out->push_back(v);
          }
        }
    }
  }
  return count;
}

int64_t VariantCounter::count(const Job& job, const Limits& lim, const Structure& st, const PipeShape& ps, Space* space) {
  const Layout& l = st.base;
  const std::array<int, 7> key{l.tp, l.cp, l.pp, l.vpp, l.ep, l.mbs, ps.min_chunk};
  auto it = memo_.find(key);
  if (it == memo_.end()) {
    Space own;
    Counted c;
    c.variants = structure_variants(job, lim, st, ps, nullptr, &own);
    c.rejected = std::move(own.rejected_by_rule);
    it = memo_.emplace(key, std::move(c)).first;
  }
  if (space)
    for (const auto& [rule_name, n] : it->second.rejected) {
      space->rejected += n;
      bool found = false;
      for (auto& [name, m] : space->rejected_by_rule)
        if (name == rule_name) {
          m += n;
          found = true;
          break;
        }
      if (!found) space->rejected_by_rule.emplace_back(rule_name, n);
    }
  return it->second.variants;
}

}  // namespace mplan::planner
