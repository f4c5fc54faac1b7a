// Shipped GPU profiles: one per cluster preset, each loads, every row names its source, devices
// match their presets, and the committed calibrations are what `mplan calibrate` produces from them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/json_fields.h"
#include "core/presets.h"
#include "profiles/calibrate.h"
#include "profiles/shipped.h"

using namespace mplan;
using namespace mplan::profiles;

TEST(Shipped, OneProfilePerClusterPreset) {
  auto names = shipped_profile_names();
  for (const auto& c : cluster_preset_names()) EXPECT_NE(std::find(names.begin(), names.end(), c), names.end()) << c;
  EXPECT_FALSE(shipped_profile_sql("dgx-h999"));
}

TEST(Shipped, EveryProfileLoadsWithSources) {
  for (const auto& name : shipped_profile_names()) {
    auto sql = shipped_profile_sql(name);
    ASSERT_TRUE(sql);
    auto db = load_profile_sql(*sql, name);
    ASSERT_TRUE(db) << name << ": " << db.error().message();
    auto devs = db->devices();
    ASSERT_TRUE(devs);
    ASSERT_EQ(devs->size(), 1u) << name;
    const Device& d = devs->front();
    auto preset = cluster_preset(name);
    ASSERT_TRUE(preset);
    EXPECT_EQ(d.name, preset->gpu.name) << name;
    EXPECT_EQ(d.cluster, name);
    EXPECT_FALSE(d.source.empty());
    EXPECT_EQ(d.sm_count, preset->gpu.sm_count);
    EXPECT_DOUBLE_EQ(d.peak_tflops.at("bf16"), *preset->gpu.peak(Precision::bf16)) << name;
    auto kernels = db->kernels(0);  // held: `*db->kernels(0)` in the for would dangle (ASan)
    ASSERT_TRUE(kernels) << name;
    for (const auto& k : *kernels) {
      EXPECT_FALSE(k.source.empty()) << name << " kernel row " << k.id << " has no source";
      EXPECT_GT(k.median_us, 0);
    }
    auto collectives = db->collectives(0);
    ASSERT_TRUE(collectives) << name;
    for (const auto& c : *collectives) {
      EXPECT_FALSE(c.source.empty()) << name << " collective row " << c.id << " has no source";
      // rows state busbw as published; the time must agree with it (within the rounding of printed tables)
      double busbw = double(c.bytes) / (c.median_us * 1e-6) / 1e9 * (c.busbw_gbps / c.algbw_gbps);
      EXPECT_NEAR(busbw / c.busbw_gbps, 1.0, 0.01) << name << " row " << c.id;
    }
  }
}

TEST(Shipped, CommittedCalibrationsAreReproducible) {
  for (const auto& name : shipped_profile_names()) {
    std::string path = std::string(MPLAN_SOURCE_DIR) + "/data/calibration/" + name + ".json";
    std::ifstream in(path);
    if (!in) {
      ADD_FAILURE() << "missing committed calibration " << path << " (produce it with: mplan calibrate --shipped " << name
                    << " --out " << path << ")";
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    auto committed = nlohmann::json::parse(ss.str());
    CalibrateOptions o;
    o.shipped = name;
    // the same starting values as when the file was produced (the documented defaults may move)
    auto then = calibration_from_json(committed, CostParams{});
    ASSERT_TRUE(then) << path << ": " << then.error().message();
    o.base = then->params;
    auto r = calibrate(o);
    ASSERT_TRUE(r) << name << ": " << r.error().message();
    // The parameters this profile determines must be reproduced; the others are the documented
    // defaults of the simulator and may move with it.
    int compared = 0;
    for (const auto& cls : r->fit.classes)
      for (const auto& [pname, value] : cls.params) {
        const auto& want = committed["fit"]["classes"][cls.name]["fitted"];
        ASSERT_TRUE(want.contains(pname)) << pname << " " << cls.name << ": " << path << " is stale; regenerate it";
        double b = want[pname].get<double>();
        EXPECT_NEAR(value, b, 1e-6 * std::max(1.0, std::abs(b))) << name << " " << pname;
        ++compared;
      }
    EXPECT_EQ(committed["fit"]["classes"].size(), r->fit.classes.size()) << name;
    if (!r->fit.kernel_ids.empty() || !r->fit.collective_ids.empty()) EXPECT_GT(compared, 0) << name;
  }
}

TEST(Shipped, CommittedLocalCpuCalibrationIsReproducible) {
  std::string dir = std::string(MPLAN_SOURCE_DIR) + "/data/calibration/local-cpu/";
  std::vector<std::string> problems;
  auto sql = read_text_file(dir + "profile.sql", problems);
  auto cal_text = read_text_file(dir + "calibration.json", problems);
  ASSERT_TRUE(sql && cal_text) << problems.front();
  std::string db = ::testing::TempDir() + "/mplan_local_cpu_" + std::to_string(::getpid()) + ".db";
  std::remove(db.c_str());
  {
    auto d = ProfileDb::open(db);
    ASSERT_TRUE(d);
    ASSERT_TRUE(import_profile_sql(d.value(), *sql, "local-cpu/profile.sql"));
  }
  auto committed = nlohmann::json::parse(*cal_text);
  auto then = calibration_from_json(committed, CostParams{});
  ASSERT_TRUE(then) << then.error().message();
  CalibrateOptions o;
  o.db = db;
  o.base = then->params;
  o.store = false;
  auto r = calibrate(o);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->cluster.name, "local-cpu");
  for (const auto& cls : r->fit.classes)
    for (const auto& [pname, value] : cls.params) {
      double want = committed["fit"]["classes"][cls.name]["fitted"][pname].get<double>();
      EXPECT_NEAR(value, want, 1e-6 * std::max(1.0, std::abs(want))) << cls.name << " " << pname;
    }
  // the committed cluster is the one this profile generates
  auto cl_text = read_text_file(dir + "local-cpu.json", problems);
  ASSERT_TRUE(cl_text);
  auto cl = cluster_from_json(nlohmann::json::parse(*cl_text));
  ASSERT_TRUE(cl) << cl.error().message();
  EXPECT_TRUE(unsourced_cluster_fields(*cl).empty());
  EXPECT_DOUBLE_EQ(cl->scale_up_bw_gbps, r->cluster.scale_up_bw_gbps);
  EXPECT_NEAR(cl->scale_up_latency_us, r->cluster.scale_up_latency_us, 1e-6);
  EXPECT_DOUBLE_EQ(*cl->gpu.peak(Precision::fp32), *r->cluster.gpu.peak(Precision::fp32));
}
