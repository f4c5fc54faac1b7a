// Published-run facts: loading data/run_facts (embedded), matching rows, applying facts to plans.
#include "simulator/run_facts.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "core/counting.h"

namespace mplan {

// Defined in the generated embedded_run_facts.cpp (simulator/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_run_facts();

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Condition {
  std::string column, value;
  bool contains = false;
};

struct FactRun {
  std::vector<Condition> conditions;
  std::vector<RunFact> facts;
};

std::vector<Condition> parse_match(const std::string& m) {
  std::vector<Condition> out;
  size_t start = 0;
  while (start <= m.size()) {
    size_t end = m.find(';', start);
    if (end == std::string::npos) end = m.size();
    std::string part = m.substr(start, end - start);
    size_t eq = part.find('=');
    if (eq != std::string::npos) {
      Condition c;
      c.contains = eq > 0 && part[eq - 1] == '~';
      c.column = part.substr(0, c.contains ? eq - 1 : eq);
      c.value = part.substr(eq + 1);
      if (c.contains) c.value = lower(c.value);
      out.push_back(c);
    }
    start = end + 1;
  }
  return out;
}

std::string_view embedded(const char* path) {
  for (const auto& [p, text] : embedded_run_facts())
    if (p == path) return text;
  return {};
}

const std::vector<FactRun>& fact_runs() {
  static const std::vector<FactRun> runs = [] {
    std::vector<FactRun> out;
    auto runs_csv = read_csv_text(std::string(embedded("data/run_facts/runs.csv")), "runs.csv");
    auto facts_csv = read_csv_text(std::string(embedded("data/run_facts/facts.csv")), "facts.csv");
    if (!runs_csv || !facts_csv) return out;  // tests check the embedded files parse
    std::vector<std::string> ids;
    for (const CsvRow& r : *runs_csv) {
      ids.push_back(r.get("run"));
      out.push_back({parse_match(r.get("match")), {}});
    }
    for (const CsvRow& f : *facts_csv) {
      auto it = std::find(ids.begin(), ids.end(), f.get("run"));
      if (it == ids.end()) continue;
      out[size_t(it - ids.begin())].facts.push_back({f.get("fact"), f.get("value"), f.get("note"), f.get("citation")});
    }
    return out;
  }();
  return runs;
}

bool matches(const FactRun& run, const CsvRow& row) {
  for (const Condition& c : run.conditions) {
    const std::string& v = row.get(c.column);
    if (c.contains ? lower(v).find(c.value) == std::string::npos : v != c.value) return false;
  }
  return !run.conditions.empty();
}

}  // namespace

std::vector<RunFact> run_facts_for(const CsvRow& row) {
  std::vector<std::pair<size_t, const FactRun*>> hit;
  for (const FactRun& r : fact_runs())
    if (matches(r, row)) hit.emplace_back(r.conditions.size(), &r);
  std::stable_sort(hit.begin(), hit.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<RunFact> out;
  for (const auto& [n, r] : hit) out.insert(out.end(), r->facts.begin(), r->facts.end());
  return out;
}

}  // namespace mplan
