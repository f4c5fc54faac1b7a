// A published-runs row whose count columns (layers, hidden, heads, vocab, num_gpus, gbs, seq_len) lie
// outside 1..their bound in core/limits.h is refused naming the column, before any integer cast (a
// fuzzed row with seq_len 1.2e44 once overflowed int64: tests/fuzz/crashes/published_csv/).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "simulator/published.h"

namespace mplan {
namespace {

std::string refusal(const std::string& column, const std::string& value) {
  std::ostringstream csv;
  csv << "row_id,source_id,framework,model,layers,hidden,ffn_hidden,heads,kv_heads,vocab,seq_len,gpu_type,num_gpus,gbs,mbs,"
         "tp,sp,pp,cp,precision,recompute,dist_optimizer,fsdp,tokens_per_sec_per_gpu\n";
  std::string row = "R-1,src,Megatron-Core,GPT New 9B,24,4096,16384,32,32,51200,2048,H100,64,2048,4,1,,1,1,bf16,,yes,,1000";
  const std::string header = "layers:4 hidden:5 heads:7 seq_len:10 num_gpus:12 gbs:13";
  // replace the column's field (fields counted from 0)
  auto at = header.find(column + ":");
  if (at == std::string::npos) return "bad column in test";
  int index = std::stoi(header.substr(at + column.size() + 1));
  size_t start = 0;
  for (int i = 0; i < index; ++i) start = row.find(',', start) + 1;
  row.replace(start, row.find(',', start) - start, value);
  csv << row << "\n";
  auto rows = read_csv_text(csv.str(), "synthetic");
  if (!rows || rows->size() != 1) return "csv not read";
  auto run = published_run_from_row(rows->front());
  return run ? std::string() : run.error().message();
}

TEST(PublishedRowBounds, ACountOutsideItsBoundIsRefusedNamingTheColumn) {
  EXPECT_EQ(refusal("seq_len", "2048"), "");
  for (const char* column : {"seq_len", "gbs", "num_gpus", "layers", "hidden", "heads"}) {
    for (const char* value : {"1.2e44", "0", "-5"}) {
      std::string why = refusal(column, value);
      EXPECT_NE(why.find(column), std::string::npos) << column << "=" << value << ": " << why;
    }
  }
}

}  // namespace
}  // namespace mplan
