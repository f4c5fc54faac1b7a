// Megatron-Bridge configuration dump reader (see config_yaml.h).
#include "runs/config_yaml.h"

#include <cctype>

#include "runs/log_text.h"

namespace mplan::runs {

namespace {

int indent_of(const std::string& s) {
  int n = 0;
  while (n < static_cast<int>(s.size()) && s[n] == ' ') ++n;
  return n;
}

// "key:" or "key: value" at the start of `s` (no indentation); the key is an identifier.
bool mapping_line(const std::string& s, std::string& key, std::string& value) {
  size_t i = 0;
  if (i >= s.size() || !(std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_')) return false;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '-' || s[i] == '.')) ++i;
  if (i >= s.size() || s[i] != ':') return false;
  if (i + 1 < s.size() && s[i + 1] != ' ') return false;
  key = s.substr(0, i);
  value = trim(s.substr(i + 1));
  return true;
}

// YAML scalar as Python would print it: quotes removed, null -> None, true/false -> True/False.
std::string scalar(const std::string& v) {
  if (v.size() >= 2 && ((v.front() == '\'' && v.back() == '\'') || (v.front() == '"' && v.back() == '"')))
    return v.substr(1, v.size() - 2);
  if (v == "null" || v == "~") return "None";
  if (v == "true") return "True";
  if (v == "false") return "False";
  return v;
}

}  // namespace

bool is_bridge_config_start(const std::string& line) {
  std::string t = trim(line);
  return t.rfind("_target_:", 0) == 0 && t.find("megatron.bridge") != std::string::npos &&
         t.find("ConfigContainer") != std::string::npos && line.size() > 0 && line[0] == '_';
}

std::string ConfigYamlReader::path_of(const std::string& key) const {
  std::string p;
  for (const auto& l : stack_) p += l.key + ".";
  return p + key;
}

bool ConfigYamlReader::add_line(const std::string& raw) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (trim(line).empty()) return true;
  int ind = indent_of(line);
  std::string body = line.substr(static_cast<size_t>(ind));
  if (ind == 0 && body.rfind("- ", 0) != 0 && body != "-") {
    std::string k, v;
    if (!mapping_line(body, k, v)) return false;  // the dump ended before this line
  }
  if (body.rfind("- ", 0) == 0 || body == "-") {
    // Block sequence item of the most recent key at this or a smaller indentation.
    while (!stack_.empty() && stack_.back().indent > ind) stack_.pop_back();
    std::string item = trim(body.substr(1));
    if (!list_key_.empty() && (ind == list_indent_ || ind == list_indent_ + 2)) {
      std::string k, v;
      if (mapping_line(item, k, v) || item.rfind('-', 0) == 0)
        lists_.erase(list_key_), list_key_.clear();  // a list of mappings or of lists: not read
      else
        lists_[list_key_].push_back(scalar(item));
    }
    return true;
  }
  std::string key, value;
  if (!mapping_line(body, key, value)) return true;  // continuation of a long scalar
  while (!stack_.empty() && stack_.back().indent >= ind) stack_.pop_back();
  list_key_.clear();
  if (value.empty()) {
    // A nested mapping or a block sequence follows; sequences sit at the key's own indentation.
    list_key_ = path_of(key);
    list_indent_ = ind;
    lists_[list_key_];
    stack_.push_back({ind, key});
    return true;
  }
  if (value == "[]")
    lists_[path_of(key)];
  else if (value == "{}")
    scalars_[path_of(key)] = "{}";
  else
    scalars_[path_of(key)] = scalar(value);
  return true;
}

std::map<std::string, std::string> ConfigYamlReader::values() const {
  std::map<std::string, std::string> out = scalars_;
  for (const auto& [k, items] : lists_) {
    if (items.empty()) continue;
    std::string s = "[";
    for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
    out[k] = s + "]";
  }
  return out;
}

}  // namespace mplan::runs
