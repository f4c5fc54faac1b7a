// Reader of the configuration dump Megatron-Bridge prints (ConfigContainer.print_yaml():
// yaml.safe_dump(..., default_flow_style=False), keys sorted, starting with
// "_target_: megatron.bridge.training.config.ConfigContainer"). Only the subset that dump uses is
// read: nested block mappings, scalars (plain or quoted), and block sequences of scalars (PyYAML
// writes them without extra indentation under their key). Values come out as dotted paths:
// "model.num_layers" -> "32", "model.moe_layer_freq" -> "[0, 1, 1]", null -> "None".
#pragma once
#include <map>
#include <string>
#include <vector>

namespace mplan::runs {

// True for the first line of a Megatron-Bridge configuration dump (rank prefix already removed).
bool is_bridge_config_start(const std::string& line);

class ConfigYamlReader {
 public:
  // Feeds one line of the dump (rank prefix removed). Returns false when the line is not part of the
  // dump, which then ended before it; the line must then be parsed as an ordinary log line.
  bool add_line(const std::string& line);
  // Values read so far, by dotted path.
  std::map<std::string, std::string> values() const;

 private:
  struct Level {
    int indent;
    std::string key;
  };
  std::string path_of(const std::string& key) const;
  std::vector<Level> stack_;
  std::map<std::string, std::string> scalars_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::string list_key_;  // path of the key whose block sequence is being read
  int list_indent_ = -1;
};

}  // namespace mplan::runs
