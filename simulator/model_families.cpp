// The model-family table (see model_families.h), read once from the embedded CSV.
#include "simulator/model_families.h"

#include <map>
#include <string_view>
#include <utility>

#include "simulator/published.h"

namespace mplan {

// Defined in the generated embedded_model_families.cpp (simulator/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_model_families();

namespace {
const std::map<std::string, std::string>& family_table() {
  static const std::map<std::string, std::string> table = [] {
    std::map<std::string, std::string> t;
    for (const auto& [path, text] : embedded_model_families()) {
      auto rows = read_csv_text(std::string(text), std::string(path));
      if (!rows) continue;  // the committed table parses (tests/simulator/test_model_families.cpp)
      for (const CsvRow& r : *rows) t[r.get("model")] = r.get("family");
    }
    return t;
  }();
  return table;
}
}  // namespace

std::optional<std::string> model_family(const std::string& published_name) {
  const auto& t = family_table();
  auto it = t.find(published_name);
  if (it == t.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string family_fold(const std::string& family, int rows) { return rows >= kMinFamilyRows ? family : kSmallFamiliesFold; }

}  // namespace mplan
