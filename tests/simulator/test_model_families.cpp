// The model-family table of leave-one-model-out cross-validation: spellings of one model map to one
// family, a model missing from the table is named, a set of one family is refused, and the folds hold
// out every row of a family (families with fewer than 5 rows together).
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "simulator/cross_validate.h"
#include "simulator/model_families.h"

namespace mplan {
namespace {

TEST(ModelFamilies, SpellingsOfOneModelShareAFamily) {
  EXPECT_EQ(model_family("DeepSeekV3"), std::optional<std::string>("deepseek-v3"));
  EXPECT_EQ(model_family("DeepSeek-V3 671B"), std::optional<std::string>("deepseek-v3"));
  EXPECT_EQ(model_family("Qwen3_235B_a22B"), model_family("Qwen3-235B-A22B"));
  EXPECT_EQ(model_family("LLAMA3_70B"), model_family("Llama 3.1 405B"));
  EXPECT_NE(model_family("LLAMA2-70B"), model_family("LLAMA3-70B"));
  EXPECT_FALSE(model_family("GPT New 9B").has_value());
  EXPECT_EQ(family_fold("llama-3", 5), "llama-3");
  EXPECT_EQ(family_fold("mixtral", 4), kSmallFamiliesFold);
}

std::vector<CsvRow> rows_of(const std::vector<std::string>& models) {
  std::ostringstream csv;
  csv << "row_id,source_id,framework,model,layers,hidden,ffn_hidden,heads,kv_heads,vocab,seq_len,gpu_type,num_gpus,gbs,mbs,"
         "tp,sp,pp,cp,precision,recompute,dist_optimizer,fsdp,tokens_per_sec_per_gpu\n";
  int i = 0;
  for (const auto& m : models)
    csv << "R-" << ++i << ",src,Megatron-Core," << m << ",24,4096,16384,32,32,51200,2048,H100,64,2048,4,1,,1,1,bf16,,yes,,1000\n";
  auto parsed = read_csv_text(csv.str(), "synthetic");
  EXPECT_TRUE(bool(parsed));
  return parsed ? *parsed : std::vector<CsvRow>{};
}

TEST(ModelFamilies, ModelCvNamesMissingModelsAndRefusesOneFamily) {
  std::string missing = model_cv_problem(rows_of({"LLAMA3_70B", "GPT New 9B"}));
  EXPECT_NE(missing.find("\"GPT New 9B\""), std::string::npos) << missing;
  EXPECT_NE(missing.find("data/model_families.csv"), std::string::npos) << missing;
  std::string one = model_cv_problem(rows_of({"LLAMA3_70B", "Llama 3 8B", "LLAMA3-405B"}));
  EXPECT_NE(one.find("at least two model families"), std::string::npos) << one;
  EXPECT_NE(one.find("llama-3"), std::string::npos) << one;
  EXPECT_EQ(model_cv_problem(rows_of({"LLAMA3_70B", "LLAMA2-70B"})), "");
}

TEST(ModelFamilies, EachFoldHoldsOutWholeFamilies) {
  // 5 Llama 3 rows (their own fold), 2 Llama 2 and 1 MPT row (together: families with < 5 rows)
  auto rows =
      rows_of({"LLAMA3_70B", "Llama 3 8B", "LLAMA3-405B", "Llama 3.1 70B", "LLAMA3_8B", "LLAMA2-70B", "LLAMA2-7B", "MPT-7b"});
  ASSERT_EQ(rows.size(), 8u);
  CvOptions opt;
  opt.mode = CvMode::model;
  opt.max_evals = 10;
  CvReport rep = cross_validate(rows, shipped_calibration(), {{"hopper/gemm_eff_max", 0.4, 1.0}}, opt);
  ASSERT_EQ(rep.rows.size(), 8u);
  std::set<std::string> folds;
  for (const CvRow& r : rep.rows) {
    folds.insert(r.fold);
    EXPECT_EQ(r.fold, r.model_family == "llama-3" ? "llama-3" : kSmallFamiliesFold) << r.row_id;
    EXPECT_GT(r.held_out, 0) << r.row_id;
  }
  EXPECT_EQ(folds.size(), 2u);
  EXPECT_TRUE(rep.by_model_family.count("llama-3"));
  EXPECT_EQ(rep.by_model_family["llama-3"].held_out.n, 5);
}

}  // namespace
}  // namespace mplan
