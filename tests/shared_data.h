// The one policy of tests for data outside the repository: the published measurements in ../shared
// (beside the source tree on every development machine and CI runner, see ../shared/README.md). A test
// that needs them fails, with a message that says so, when they are absent; it never passes having run
// nothing. Data a test can carry itself belongs in tests/data/ instead.
#pragma once
#include <filesystem>
#include <string>

namespace shared_data {

// ../shared/<rel> beside the source tree.
inline std::string path(const std::string& rel) {
  return (std::filesystem::path(MPLAN_SOURCE_DIR).parent_path() / "shared" / rel).string();
}

// "" when ../shared/<rel> is there, else the failure message naming what is missing and why.
inline std::string missing(const std::string& rel) {
  if (std::filesystem::exists(path(rel))) return "";
  return "this test needs " + path(rel) +
         " (the published rows in ../shared, beside the source tree on every development machine and CI runner; "
         "see ../shared/README.md): place the shared folder there, this test does not pass without it";
}

}  // namespace shared_data
