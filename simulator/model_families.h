// Model families for leave-one-model-out cross-validation: the committed table
// data/model_families.csv maps a model name as a published CSV spells it ("DeepSeekV3",
// "DeepSeek-V3 671B") to one family ("deepseek-v3"), embedded in the binary.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mplan {

// The family of a published model name; nullopt when the table does not list it.
std::optional<std::string> model_family(const std::string& published_name);

// Families with fewer rows than this are held out together in one fold ("families with < 5 rows").
inline constexpr int kMinFamilyRows = 5;
inline constexpr const char* kSmallFamiliesFold = "families with < 5 rows";

// The fold of each family given its row count: the family itself, or kSmallFamiliesFold.
std::string family_fold(const std::string& family, int rows);

}  // namespace mplan
