// "Did you mean ...?" suggestions for misspelled names (Levenshtein distance).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace mplan {

size_t edit_distance(std::string_view a, std::string_view b);
// The closest candidate if it is close enough to be a plausible typo, else "".
std::string closest_match(std::string_view name, const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "", ready to append to a message.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);
// "a, b, c" for messages.
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace mplan
