// A doc file generated from a table (docs/plan_fields.md, docs/cost_params.md): the test checks that
// the file holds the table's text; MPLAN_UPDATE_GOLDEN=1 rewrites it as `intro` + the table first.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/json_fields.h"

namespace mplan {

inline void expect_generated_doc(const std::string& relative_path, const std::string& intro, const std::string& table) {
  const std::string path = std::string(MPLAN_SOURCE_DIR) + "/" + relative_path;
  if (std::getenv("MPLAN_UPDATE_GOLDEN")) {
    ASSERT_EQ(write_text_file_atomic(path, intro + table), "");
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find(table), std::string::npos) << path << " differs from the table: rerun with MPLAN_UPDATE_GOLDEN=1";
}

}  // namespace mplan
