// The GUI's item models (each checked by QAbstractItemModelTester), the results filter, job inputs,
// and the runs snapshot over a synthetic runs database (regressions, per-op timings, bad files).
#include <QAbstractItemModelTester>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "gui/models/breakdown_models.h"
#include "gui/models/demo_runs.h"
#include "gui/models/job_inputs.h"
#include "gui/models/results_model.h"
#include "gui/models/runs_models.h"
#include "gui/models/scaling_model.h"
#include "gui_test_util.h"

using namespace mplan;
using namespace mplan::gui;
using gui_test::candidate;

class TestModels : public QObject {
  Q_OBJECT

  std::vector<Candidate> cands_;

 private slots:
  void initTestCase() {
    cands_ = {candidate(1, 1, 1, Recompute::selective), candidate(2, 1, 1), candidate(1, 2, 1), candidate(2, 2, 2),
              candidate(4, 1, 1, Recompute::full)};
  }

  void resultsModel() {
    ResultsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    m.setCandidates(cands_);
    QCOMPARE(m.rowCount(), 5);
    QCOMPARE(m.columnCount(), int(ResultsModel::ColumnCount));
    QCOMPARE(m.index(1, ResultsModel::Tp).data().toInt(), 2);
    QCOMPARE(m.index(0, ResultsModel::Rank).data().toInt(), 1);
    QCOMPARE(m.index(0, ResultsModel::RecomputeCol).data().toString(), QString("selective"));
    QCOMPARE(m.index(4, ResultsModel::RecomputeCol).data().toString(), QString("full"));
    QCOMPARE(m.index(2, ResultsModel::Dp).data().toInt(), 32);
    QVERIFY(m.index(0, ResultsModel::Mfu).data().toString().endsWith('%'));
    QCOMPARE(m.index(0, ResultsModel::Mfu).data(ResultsModel::SortRole).toDouble(), cands_[0].report.mfu * 100);
    QVERIFY(m.index(0, ResultsModel::Memory).data().toString().contains("/ 80 GiB"));
    QVERIFY(m.index(0, ResultsModel::Memory).data(Qt::ToolTipRole).toString().contains("activations"));
    QCOMPARE(m.headerData(ResultsModel::StepTime, Qt::Horizontal).toString(), QString("Step time"));
    QCOMPARE(m.index(3, 0).data(ResultsModel::CandidateRole).toInt(), 3);
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  // A search result's groups: each best with the number folded into it, and with expand its members.
  void resultsModelGroups() {
    ResultsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    SearchResult r;
    r.top = {cands_[0], cands_[1]};
    r.folded = {{cands_[2], cands_[3]}, {}};
    m.setResult(r, false);
    QCOMPARE(m.rowCount(), 2);
    QCOMPARE(m.index(0, ResultsModel::Folded).data().toString(), QString("+2"));
    QCOMPARE(m.index(1, ResultsModel::Folded).data().toString(), QString());
    QCOMPARE(m.index(1, ResultsModel::Rank).data().toString(), QString("2"));
    m.setResult(r, true);
    QCOMPARE(m.rowCount(), 4);
    QCOMPARE(m.rankLabel(1), QString("1.2"));
    QCOMPARE(m.rankLabel(2), QString("1.3"));
    QCOMPARE(m.rankLabel(3), QString("2"));
    QCOMPARE(m.index(2, ResultsModel::Tp).data().toInt(), cands_[3].plan.parallel.tp);
    QCOMPARE(m.index(0, ResultsModel::Folded).data(ResultsModel::SortRole).toInt(), 2);
  }

  // A sweep's rows: the best of each count, throughput over all GPUs, efficiency and the time to train.
  void scalingModel() {
    ScalingModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    Plan job = gui_test::llamaJob();
    std::vector<ScalePoint> pts(3);
    pts[0].gpus = 32;
    pts[1].gpus = 64;
    pts[2].gpus = 128;  // nothing fits
    Plan j32 = job;
    j32.parallel.world_size = 32;
    pts[0].result.top = {gui_test::candidateOf(j32, 2, 1)};
    pts[1].result.top = {gui_test::candidateOf(job, 2, 1)};
    m.setSweep(pts, job, 15e12);
    QCOMPARE(m.rowCount(), 3);
    QCOMPARE(m.index(1, ScalingModel::Gpus).data().toInt(), 64);
    const double t64 = pts[1].result.top[0].report.tokens_per_s_per_gpu;
    QCOMPARE(m.index(1, ScalingModel::TokensPerS).data(ScalingModel::ValueRole).toDouble(), t64 * 64);
    QCOMPARE(m.index(0, ScalingModel::Efficiency).data(ScalingModel::ValueRole).toDouble(), 1.0);
    QVERIFY(m.index(1, ScalingModel::ExpectedDays).data(ScalingModel::ValueRole).toDouble() >
            m.index(1, ScalingModel::IdealDays).data(ScalingModel::ValueRole).toDouble());
    QVERIFY(m.index(1, ScalingModel::Goodput).data(ScalingModel::ValueRole).toDouble() < 1.0);
    QCOMPARE(m.index(2, ScalingModel::Layout).data().toString(), QString("no layout fits"));
    QVERIFY(!m.index(2, ScalingModel::StepTime).data(ScalingModel::ValueRole).isValid());
    QVERIFY(m.best(2) == nullptr);
    QCOMPARE(m.jobAt(2).parallel.world_size, 128);
    m.setSweep(pts, job, 0);  // no token budget: no days
    QVERIFY(!m.index(0, ScalingModel::IdealDays).data(ScalingModel::ValueRole).isValid());
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  void filterAndSort() {
    ResultsModel m;
    m.setCandidates(cands_);
    ResultsFilterModel f;
    QAbstractItemModelTester tester(&f, QAbstractItemModelTester::FailureReportingMode::QtTest);
    f.setSourceModel(&m);
    QCOMPARE(f.rowCount(), 5);
    f.setFilterText("tp=2");
    QCOMPARE(f.rowCount(), 2);
    for (int r = 0; r < f.rowCount(); ++r) QCOMPARE(f.index(r, ResultsModel::Tp).data().toInt(), 2);
    f.setFilterText("tp=2 pp>=2");
    QCOMPARE(f.rowCount(), 1);
    f.setFilterText("selective");  // free text
    QCOMPARE(f.rowCount(), 1);
    f.setFilterText("recompute!=none");
    QCOMPARE(f.rowCount(), 2);
    f.setFilterText("recompute=full");
    QCOMPARE(f.rowCount(), 1);
    f.setFilterText("mfu>0, memory<1000");
    QCOMPARE(f.rowCount(), 5);
    QVERIFY(f.filterError().isEmpty());
    f.setFilterText("bogus=3 tp<2");
    QVERIFY(f.filterError().contains("bogus=3"));
    QCOMPARE(f.rowCount(), 2);  // the bad term is ignored, tp<2 holds
    f.setFilterText("mfu>abc");
    QVERIFY(!f.filterError().isEmpty());
    f.setFilterText({});
    f.sort(ResultsModel::Mfu, Qt::DescendingOrder);
    for (int r = 1; r < f.rowCount(); ++r)
      QVERIFY(f.index(r - 1, ResultsModel::Mfu).data(ResultsModel::SortRole).toDouble() >=
              f.index(r, ResultsModel::Mfu).data(ResultsModel::SortRole).toDouble());
    f.sort(ResultsModel::Tp, Qt::AscendingOrder);
    QCOMPARE(f.index(4, ResultsModel::Tp).data().toInt(), 4);
    // the candidate behind a proxy row stays reachable
    int src = f.index(4, 0).data(ResultsModel::CandidateRole).toInt();
    QCOMPARE(m.candidate(src).plan.parallel.tp, 4);
    m.setCandidates({cands_[0]});  // reset through the proxy
    QCOMPARE(f.rowCount(), 1);
  }

  void breakdownModels() {
    TimeBreakdownModel t;
    QAbstractItemModelTester tt(&t, QAbstractItemModelTester::FailureReportingMode::QtTest);
    std::vector<TimeBreakdownModel::Entry> e;
    for (const auto& c : cands_) e.push_back({"x", c.report});
    t.setPlans(e);
    QCOMPARE(t.rowCount(), 5);
    QCOMPARE(t.columnCount(), int(TimeBreakdownModel::ColumnCount));
    for (int r = 0; r < t.rowCount(); ++r) {
      double sum = 0;
      for (int k = 0; k < TimeBreakdownModel::kComponents; ++k)
        sum += t.index(r, TimeBreakdownModel::FirstComponentColumn + k).data(TimeBreakdownModel::ValueRole).toDouble();
      double step = t.index(r, TimeBreakdownModel::StepTimeColumn).data(TimeBreakdownModel::ValueRole).toDouble();
      QVERIFY2(qAbs(sum - step) < 1e-6 * step, "time components sum to the step time");
    }
    QCOMPARE(t.headerData(TimeBreakdownModel::FirstComponentColumn + 7, Qt::Horizontal).toString(), QString("fill/drain"));
    QCOMPARE(t.headerData(TimeBreakdownModel::FirstComponentColumn + 8, Qt::Horizontal).toString(), QString("stage imbalance"));
    // the two bubble columns split the simulator's bubble
    for (int r = 0; r < t.rowCount(); ++r) {
      double fill = t.index(r, TimeBreakdownModel::FirstComponentColumn + 7).data(TimeBreakdownModel::ValueRole).toDouble();
      double imb = t.index(r, TimeBreakdownModel::FirstComponentColumn + 8).data(TimeBreakdownModel::ValueRole).toDouble();
      QVERIFY(qAbs(fill + imb - cands_[size_t(r)].report.time.bubble) < 1e-9);
    }
    QVERIFY(t.index(0, TimeBreakdownModel::MfuColumn).data().toString().endsWith('%'));

    MemoryModel m;
    QAbstractItemModelTester mt(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setReport("pp2", cands_[2].report);
    QCOMPARE(m.rowCount(), 2);
    QCOMPARE(m.capacityGiB(), 80.0);
    for (int r = 0; r < 2; ++r) {
      double sum = 0;
      for (int k = 0; k < MemoryModel::kKinds; ++k)
        sum += m.index(r, MemoryModel::FirstKindColumn + k).data(MemoryModel::ValueRole).toDouble();
      QVERIFY(qAbs(sum - m.index(r, MemoryModel::TotalColumn).data(MemoryModel::ValueRole).toDouble()) < 1e-9);
      QCOMPARE(m.index(r, 1).data().toInt(), 16);  // 32 layers over 2 stages
    }
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  void constraintsAndJob() {
    auto c = parseConstraints(" tp=8, pp = 4 ,", "Fix");
    QVERIFY(c.ok());
    QCOMPARE(c->at("tp"), 8);
    QCOMPARE(c->at("pp"), 4);
    QVERIFY(parseConstraints("", "Fix").ok());
    auto bad = parseConstraints("tp=8,foo=2,pp", "Max");
    QVERIFY(!bad.ok());
    QCOMPARE(int(bad.error().problems.size()), 2);
    QVERIFY(QString::fromStdString(bad.error().message()).contains("'foo=2'"));

    JobInputs in;
    auto job = buildJob(in);
    QVERIFY(job.ok());
    QCOMPARE(job->parallel.world_size, 64);
    QCOMPARE(job->model.num_layers, 32);

    in.model = "/nonexistent/dir/config.json";
    in.precision = "int3";
    in.gpus = 0;
    auto e = buildJob(in);
    QVERIFY(!e.ok());
    QString msg = QString::fromStdString(e.error().message());
    QVERIFY(msg.contains("Model '/nonexistent/dir/config.json'"));
    QVERIFY(msg.contains("Precision 'int3'"));
    QVERIFY(msg.contains("GPUs"));

    QTemporaryDir dir;
    const QString hf = dir.filePath("config.json");
    gui_test::writeFile(hf, R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2048,
      "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
      "vocab_size": 128256, "hidden_act": "silu", "tie_word_embeddings": true, "max_position_embeddings": 131072})");
    JobInputs ok;
    ok.model = hf.toStdString();
    auto j2 = buildJob(ok);
    QVERIFY2(j2.ok(), j2.ok() ? "" : j2.error().message().c_str());
    QCOMPARE(j2->model.num_layers, 16);
    gui_test::writeFile(hf, "{ this is not json");
    QVERIFY(!buildJob(ok).ok());
  }

  void runsSnapshotAndModels() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.db").toStdString();
    Status st = writeDemoRuns(db);
    QVERIFY2(st.ok(), st.ok() ? "" : st.error().message().c_str());
    auto snap = openRunsSnapshot(db);
    QVERIFY2(snap.ok(), snap.ok() ? "" : snap.error().message().c_str());
    QCOMPARE(int(snap->runs.size()), 27);
    QCOMPARE(int(snap->regress.plans.size()), 3);
    QCOMPARE(snap->regress.regressions(), 1);   // the latest run of one plan
    QVERIFY(snap->regression_ids.size() >= 2);  // plus the recovered dip of another
    QVERIFY(singleModel(snap.value()));
    QCOMPARE(runPlanLabel(snap->runs.front().plan, false).left(3), QString("tp1"));

    RunsListModel list;
    QAbstractItemModelTester lt(&list, QAbstractItemModelTester::FailureReportingMode::QtTest);
    list.setSnapshot(snap.value());
    QCOMPARE(list.rowCount(), 27);
    int regressed = 0;
    for (int r = 0; r < list.rowCount(); ++r) regressed += list.status(r) == "regression";
    QCOMPARE(regressed, int(snap->regression_ids.size()));
    QVERIFY(list.index(0, RunsListModel::Mfu).data().toString().endsWith('%'));
    QVERIFY(list.index(0, RunsListModel::PredictedMfu).data(RunsListModel::SortRole).toDouble() > 0);
    QCOMPARE(list.rowOfRun(list.run(3).id), 3);
    QCOMPARE(list.rowOfRun(-5), -1);

    auto opened = runs::RunsDb::open_existing(db);
    QVERIFY(opened.ok());
    auto run = opened.value()->get_run(snap->runs.front().id);
    QVERIFY(run.ok());
    OpTimingModel ops;
    QAbstractItemModelTester ot(&ops, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ops.setRun(run.value());
    QVERIFY(ops.rowCount() > 5);
    for (int r = 1; r < ops.rowCount(); ++r)
      QVERIFY(ops.index(r - 1, OpTimingModel::Measured).data(OpTimingModel::ValueRole).toDouble() >=
              ops.index(r, OpTimingModel::Measured).data(OpTimingModel::ValueRole).toDouble());
    QVERIFY(ops.index(0, OpTimingModel::Predicted).data(OpTimingModel::ValueRole).toDouble() > 0);
    ops.clear();
    list.clear();
    QCOMPARE(list.rowCount(), 0);
  }

  void runsBadFiles() {
    QTemporaryDir dir;
    auto missing = openRunsSnapshot(dir.filePath("nope.db").toStdString());
    QVERIFY(!missing.ok());
    QVERIFY(QString::fromStdString(missing.error().message()).contains("nope.db"));
    const QString junk = dir.filePath("junk.db");
    gui_test::writeFile(junk, QByteArray("definitely not a database, just some text").repeated(40));
    auto bad = openRunsSnapshot(junk.toStdString());
    QVERIFY(!bad.ok());
    QVERIFY(!bad.error().message().empty());
    // an empty (new) database is no error: nothing to show
    auto fresh = runs::RunsDb::open(dir.filePath("empty.db").toStdString());
    QVERIFY(fresh.ok());
    auto empty = loadRunsSnapshot(*fresh.value());
    QVERIFY(empty.ok());
    QVERIFY(empty->runs.empty());
  }
};

QTEST_GUILESS_MAIN(TestModels)
#include "test_models.moc"
