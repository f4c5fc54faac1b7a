// Time zones: --tz forms, zones stated in logs (date(1) output, ISO offsets, ambiguous abbreviations),
// IANA zones of the system's database (DST changes, gaps and overlaps, the zone file's rule after its
// last transition), civil dates, and started_at of imports. No tzdata installed fails (setup-deps).
#include <gtest/gtest.h>

#include <sstream>

#include "log_gen.h"
#include "runs/import.h"
#include "runs/log_jobs.h"
#include "runs/time_zone.h"
#include "runs_test_util.h"

using namespace mplan::runs;

namespace {

int64_t wall(const std::string& t) { return parse_wall_clock(t).value(); }

}  // namespace

TEST(TimeZone, FixedOffsetsAndBadSpecs) {
  EXPECT_EQ(TimeZone::parse("UTC")->offset_at_utc(0), 0);
  EXPECT_EQ(TimeZone::parse("+02:00")->offset_at_utc(0), 7200);
  EXPECT_EQ(TimeZone::parse("-0530")->offset_at_utc(0), -19800);
  EXPECT_EQ(TimeZone::parse("UTC+8")->offset_at_utc(0), 28800);
  EXPECT_EQ(TimeZone::parse("GMT-03:30")->offset_at_utc(0), -12600);
  for (const char* bad : {"", "+25:00", "UTC+", "../../etc/passwd", "/etc/localtime", "No/Such_Zone"}) {
    auto z = TimeZone::parse(bad);
    ASSERT_FALSE(z.ok()) << bad;
    EXPECT_NE(z.error().message().find("--tz"), std::string::npos);
  }
  EXPECT_EQ(format_utc_iso(wall("2024-02-29 23:59:59") + 1), "2024-03-01T00:00:00Z");
  EXPECT_EQ(format_utc_iso(wall("1969-12-31 23:00:00")), "1969-12-31T23:00:00Z");
  EXPECT_FALSE(parse_wall_clock("2024-13-01 00:00:00"));
}

TEST(TimeZone, ZonesStatedInLogLines) {
  auto z = zone_in_line("START TIME: Wed Jun 12 10:10:58 CEST 2024");
  ASSERT_TRUE(z);
  EXPECT_EQ(z->zone, "CEST");
  EXPECT_EQ(*z->offset_s, 7200);
  EXPECT_EQ(z->local_time, "2024-06-12 10:10:58");
  auto pm = zone_in_line("Job ended: Wed Jun 12 02:10:58 PM EDT 2024");
  ASSERT_TRUE(pm);
  EXPECT_EQ(*pm->offset_s, -14400);
  EXPECT_EQ(pm->local_time, "2024-06-12 14:10:58");
  auto iso = zone_in_line("started at 2024-06-12T10:10:58.123+05:30 on node");
  ASSERT_TRUE(iso);
  EXPECT_EQ(*iso->offset_s, 19800);
  EXPECT_EQ(iso->local_time, "2024-06-12 10:10:58");
  auto cst = zone_in_line("START TIME: Wed Jun 12 10:10:58 CST 2024");  // US Central or China?
  ASSERT_TRUE(cst);
  EXPECT_FALSE(cst->offset_s);
  EXPECT_FALSE(zone_in_line(" [2024-06-12 10:10:58] iteration 10/ 100 | elapsed time per iteration (ms): 1.0 |"));
  EXPECT_FALSE(zone_in_line("Wed Jun 12 10:10:58 XYZT 2024"));
}

TEST(TimeZone, IanaZonesFromTheSystemDatabase) {
  auto berlin = TimeZone::parse("Europe/Berlin");
  ASSERT_TRUE(berlin.ok()) << berlin.error().message() << " (Debian package tzdata)";
  EXPECT_EQ(format_utc_iso(berlin->local_to_utc(wall("2024-06-12 10:00:00"))), "2024-06-12T08:00:00Z");
  EXPECT_EQ(format_utc_iso(berlin->local_to_utc(wall("2024-01-12 10:00:00"))), "2024-01-12T09:00:00Z");
  // DST starts 2024-03-31 at 01:00 UTC and ends 2024-10-27 at 01:00 UTC.
  EXPECT_EQ(berlin->offset_at_utc(wall("2024-03-31 00:59:59")), 3600);
  EXPECT_EQ(berlin->offset_at_utc(wall("2024-03-31 01:00:00")), 7200);
  EXPECT_EQ(berlin->offset_at_utc(wall("2024-10-27 00:59:59")), 7200);
  EXPECT_EQ(berlin->offset_at_utc(wall("2024-10-27 01:00:00")), 3600);
  // 02:30 on 2024-03-31 never showed on a Berlin clock (the instant of the change); 02:30 on
  // 2024-10-27 showed twice (the earlier, still in summer time).
  EXPECT_EQ(format_utc_iso(berlin->local_to_utc(wall("2024-03-31 02:30:00"))), "2024-03-31T01:00:00Z");
  EXPECT_EQ(format_utc_iso(berlin->local_to_utc(wall("2024-10-27 02:30:00"))), "2024-10-27T00:30:00Z");
  auto ny = TimeZone::parse("America/New_York");
  ASSERT_TRUE(ny.ok());
  EXPECT_EQ(format_utc_iso(ny->local_to_utc(wall("2024-12-01 09:00:00"))), "2024-12-01T14:00:00Z");
  EXPECT_EQ(ny->offset_at_utc(wall("2024-03-10 06:59:59")), -18000);  // second Sunday of March, 02:00 EST
  EXPECT_EQ(ny->offset_at_utc(wall("2024-03-10 07:00:00")), -14400);
  auto kolkata = TimeZone::parse("Asia/Kolkata");  // no DST since 1945: a fixed +05:30 rule
  ASSERT_TRUE(kolkata.ok());
  EXPECT_EQ(kolkata->offset_at_utc(wall("2024-06-12 00:00:00")), 19800);
}

// After a zone file's last transition (2037 in Debian's tzdata) the file's POSIX TZ rule decides:
// CET-1CEST,M3.5.0,M10.5.0/3 and EST5EDT,M3.2.0,M11.1.0 in 2090 as in 2024.
TEST(TimeZone, RuleOfTheZoneFileAfterItsLastTransition) {
  auto berlin = TimeZone::parse("Europe/Berlin");
  ASSERT_TRUE(berlin.ok());
  EXPECT_EQ(berlin->offset_at_utc(wall("2090-07-01 00:00:00")), 7200);
  EXPECT_EQ(berlin->offset_at_utc(wall("2090-01-01 00:00:00")), 3600);
  EXPECT_EQ(berlin->offset_at_utc(wall("2090-03-26 00:59:59")), 3600);  // last Sunday of March 2090: the 26th
  EXPECT_EQ(berlin->offset_at_utc(wall("2090-03-26 01:00:00")), 7200);
  EXPECT_EQ(format_utc_iso(berlin->local_to_utc(wall("2090-07-01 12:00:00"))), "2090-07-01T10:00:00Z");
  auto ny = TimeZone::parse("America/New_York");
  ASSERT_TRUE(ny.ok());
  EXPECT_EQ(ny->offset_at_utc(wall("2090-07-01 00:00:00")), -14400);
  EXPECT_EQ(ny->offset_at_utc(wall("2090-12-01 00:00:00")), -18000);
  auto sydney = TimeZone::parse("Australia/Sydney");  // southern hemisphere: DST over the new year
  ASSERT_TRUE(sydney.ok());
  EXPECT_EQ(sydney->offset_at_utc(wall("2090-01-01 00:00:00")), 39600);
  EXPECT_EQ(sydney->offset_at_utc(wall("2090-07-01 00:00:00")), 36000);
}

TEST(TimeZone, CivilDates) {
  EXPECT_EQ(wall("1970-01-01 00:00:00"), 0);
  EXPECT_EQ(wall("2000-03-01 00:00:00") - wall("2000-02-28 00:00:00"), 2 * 86400);  // 2000 is a leap year
  EXPECT_EQ(wall("2100-03-01 00:00:00") - wall("2100-02-28 00:00:00"), 86400);      // 2100 is not
  EXPECT_FALSE(parse_wall_clock("2023-02-29 00:00:00"));
  EXPECT_FALSE(parse_wall_clock("2024-04-31 00:00:00"));
  EXPECT_TRUE(parse_wall_clock("2024-02-29T12:00:00.250"));
  EXPECT_EQ(format_utc_iso(-1), "1969-12-31T23:59:59Z");
}

TEST(TimeZone, ImportUsesTheStatedZoneElseTz) {
  mplan::Plan plan = runs_test::load_plan("llama3_8b_h100_dp8.plan.json");
  log_gen::LaunchSpec s;
  s.args = log_gen::megatron_args(plan);
  auto import = [&](const std::string& head, const ImportOptions& opt) {
    LogSet set = runs_test::read_log_text(head + log_gen::megatron_launch(plan, s), "slurm.out");
    auto r = import_log_job(set.jobs.front(), plan, opt);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.value();
  };
  // The log's local times (10:00:00) in the zone its Slurm header states.
  ImportResult cest = import("START TIME: Wed Jun 12 09:59:50 CEST 2024\n", {});
  EXPECT_EQ(cest.run.started_at, "2024-06-12T08:00:00Z");
  EXPECT_FALSE(runs_test::has_warning(cest.run, "time zone"));
  // No zone in the log: --tz, else UTC with a warning.
  ImportOptions tz;
  tz.tz = TimeZone::parse("-05:00").value();
  EXPECT_EQ(import("", tz).run.started_at, "2024-06-12T15:00:00Z");
  ImportResult none = import("", {});
  EXPECT_EQ(none.run.started_at, "2024-06-12T10:00:00Z");
  EXPECT_TRUE(runs_test::has_warning(none.run, "carry no time zone"));
  // The log's zone wins over a different --tz (with a note); an ambiguous one needs --tz.
  ImportResult both = import("START TIME: Wed Jun 12 09:59:50 CEST 2024\n", tz);
  EXPECT_EQ(both.run.started_at, "2024-06-12T08:00:00Z");
  EXPECT_TRUE(runs_test::has_warning(both.run, "instead of --tz"));
  ImportResult cst = import("START TIME: Wed Jun 12 09:59:50 CST 2024\n", {});
  EXPECT_TRUE(runs_test::has_warning(cst.run, "names several zones"));
  ImportOptions shanghai;
  shanghai.tz = TimeZone::parse("+08:00").value();
  EXPECT_EQ(import("START TIME: Wed Jun 12 09:59:50 CST 2024\n", shanghai).run.started_at, "2024-06-12T02:00:00Z");
}
