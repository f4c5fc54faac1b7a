// Helpers of the GUI tests: plans and candidates built from presets and simulated, temp files.
#pragma once
#include <QFile>
#include <QString>
#include <QtTest/QtTest>

#include "core/presets.h"
#include "planner/planner.h"
#include "simulator/cost_params.h"

namespace gui_test {

inline mplan::Plan llamaJob(int gpus = 64, int64_t gbs = 256, int64_t seq = 4096) {
  mplan::Plan p;
  p.model = mplan::model_preset("llama3-8b").value();
  p.cluster = mplan::cluster_preset("dgx-h100").value();
  p.training.global_batch_size = gbs;
  p.training.seq_length = seq;
  p.parallel.world_size = gpus;
  return p;
}

// A simulated candidate of llama3-8b on 64 H100 with the given layout; fails the test when invalid.
inline mplan::Candidate candidate(int tp, int pp, int mbs, mplan::Recompute rc = mplan::Recompute::none) {
  mplan::Plan p = llamaJob();
  p.parallel.tp = tp;
  p.parallel.sp = tp > 1;
  p.parallel.pp = pp;
  p.parallel.micro_batch_size = mbs;
  p.parallel.recompute = rc;
  auto r = mplan::simulate(p, mplan::default_cost_params(p.cluster));
  if (!r) qFatal("candidate: %s", r.error().message().c_str());
  return {p, r.value()};
}

// A simulated candidate of `job` with the given layout (the job's model, cluster, GPUs and batch).
inline mplan::Candidate candidateOf(mplan::Plan job, int tp, int pp, int mbs = 1) {
  job.parallel.tp = tp;
  job.parallel.sp = tp > 1;
  job.parallel.pp = pp;
  job.parallel.micro_batch_size = mbs;
  auto r = mplan::simulate(job, mplan::default_cost_params(job.cluster));
  if (!r) qFatal("candidateOf: %s", r.error().message().c_str());
  return {job, r.value()};
}

inline void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) qFatal("cannot write %s", qPrintable(path));
  f.write(bytes);
}

}  // namespace gui_test
