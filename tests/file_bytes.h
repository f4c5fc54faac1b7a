// The one reader of whole files in tests: a file's bytes as a string ("" when it cannot be read).
#pragma once
#include <fstream>
#include <sstream>
#include <string>

namespace mplan::test {

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace mplan::test
