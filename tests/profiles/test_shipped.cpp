// Shipped GPU profiles: one per cluster preset, each loads, every row names its source, devices
// match their presets, and the committed calibrations are what `mplan calibrate` produces from them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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
    for (const auto& k : *db->kernels(0)) {
      EXPECT_FALSE(k.source.empty()) << name << " kernel row " << k.id << " has no source";
      EXPECT_GT(k.median_us, 0);
    }
    for (const auto& c : *db->collectives(0)) {
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
      ADD_FAILURE() << "missing committed calibration " << path
                    << " (produce it with: mplan calibrate --shipped " << name << " --out " << path << ")";
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
