// mplan-gui: the desktop app (also `mplan gui`). Options preset the inputs; --screenshot DIR runs the
// search headless, writes one PNG per view and exits. Exit codes: 0 ok, 1 nothing found, 2 bad input.
#include <QApplication>
#include <QCommandLineParser>
#include <QFont>
#include <cstdio>
#include <cstring>
#include <utility>

#include "gui/app/inputs_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/screenshot.h"

namespace {

bool hasArg(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0 || std::strncmp(argv[i], (std::string(name) + "=").c_str(), std::strlen(name) + 1) == 0)
      return true;
  return false;
}

QtMessageHandler g_default_handler = nullptr;

// Headless runs: drop the offscreen platform's notes that are no problems.
void quietHandler(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
  if (msg.contains("propagateSizeHints") || msg.startsWith("QStandardPaths: XDG_RUNTIME_DIR not set")) return;
  if (g_default_handler) g_default_handler(type, ctx, msg);
}

}  // namespace

int main(int argc, char** argv) {
  // headless screenshots need no display
  if (hasArg(argc, argv, "--screenshot")) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    g_default_handler = qInstallMessageHandler(quietHandler);
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("mplan-gui");
  QApplication::setApplicationVersion("0.1");
  QApplication::setFont(QFont("DejaVu Sans", 9));

  QCommandLineParser cl;
  cl.setApplicationDescription("mplan-gui: search parallel layouts for LLM training, see bubbles, MFU, memory and runs.");
  cl.addHelpOption();
  cl.addVersionOption();
  cl.addOptions({
      {"screenshot", "Run the search headless, write one PNG per view to DIR, exit.", "DIR"},
      {"model", "Model preset name, mplan model JSON or HF config.json.", "NAME|FILE"},
      {"cluster", "Cluster preset name or mplan cluster JSON.", "NAME|FILE"},
      {"gpus", "Number of GPUs.", "N"},
      {"gbs", "Global batch size (sequences).", "N"},
      {"seq", "Sequence length (tokens).", "N"},
      {"precision", "bf16|fp16|fp8|mxfp8|nvfp4|fp32.", "P"},
      {"fix", "Fixed sizes, e.g. tp=8,pp=4.", "LIST"},
      {"max", "Upper bounds, e.g. tp=8,pp=32.", "LIST"},
      {"top", "Layouts to keep.", "K"},
      {"runs-db", "Runs database to open (screenshots: default a synthetic demo database).", "FILE"},
      {"plan", "Open a plan file (mplan.plan/1).", "FILE"},
      {"search", "Start the search at once."},
      {"size", "Window size for screenshots, e.g. 1600x1000.", "WxH"},
      {"prefix", "Screenshots: file name prefix (moe- writes moe-timeline.png ...).", "TEXT"},
      {"views",
       "Screenshots: only these views, e.g. timeline,timeline-zoom (default all: results, timeline, timeline-zoom, "
       "memory, breakdown, runs).",
       "LIST"},
  });
  cl.process(app);

  mplan::gui::JobInputs in;
  auto number = [&](const QString& name, auto& target) {
    if (!cl.isSet(name)) return true;
    bool ok = false;
    long long v = cl.value(name).toLongLong(&ok);
    if (!ok || v < 1) {
      std::fprintf(stderr, "mplan-gui: --%s expects a positive number, got '%s'\n", qPrintable(name), qPrintable(cl.value(name)));
      return false;
    }
    target = decltype(target + 0)(v);
    return true;
  };
  if (!number("gpus", in.gpus) || !number("gbs", in.global_batch) || !number("seq", in.seq_length) || !number("top", in.top_k))
    return 2;
  for (auto [name, field] : {std::pair{"model", &in.model},
                             {"cluster", &in.cluster},
                             {"precision", &in.precision},
                             {"fix", &in.fix},
                             {"max", &in.max}})
    if (cl.isSet(name)) *field = cl.value(name).toStdString();

  mplan::gui::MainWindow w;
  if (cl.isSet("screenshot")) {
    mplan::gui::ScreenshotOptions opt;
    opt.dir = cl.value("screenshot");
    opt.inputs = in;
    opt.runs_db = cl.value("runs-db");
    opt.plan_file = cl.value("plan");
    opt.prefix = cl.value("prefix");
    if (cl.isSet("views")) opt.views = cl.value("views").split(',', Qt::SkipEmptyParts);
    if (cl.isSet("size")) {
      QStringList wh = cl.value("size").split('x');
      if (wh.size() == 2 && wh[0].toInt() > 200 && wh[1].toInt() > 200) opt.size = QSize(wh[0].toInt(), wh[1].toInt());
    }
    auto r = mplan::gui::takeScreenshots(w, opt);
    if (!r.best.isEmpty()) std::printf("best plan: %s\n", qPrintable(r.best));
    for (const QString& f : r.files) std::printf("%s\n", qPrintable(f));
    if (!r.message.isEmpty()) std::fprintf(stderr, "mplan-gui: %s\n", qPrintable(r.message.trimmed()));
    return r.exit_code;
  }
  w.inputsPanel()->setInputs(in);
  if (cl.isSet("plan")) w.openPlanFile(cl.value("plan"));
  if (cl.isSet("runs-db")) w.openRunsDatabase(cl.value("runs-db"));
  w.show();
  if (cl.isSet("search")) w.startSearch();
  return app.exec();
}
