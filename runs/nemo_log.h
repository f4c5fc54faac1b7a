// Line parsers of NeMo 2.0 / PyTorch Lightning training logs, whose step time is the metric
// "train_step_timing in s" (NeMo's TimingCallback). Three printed forms are read:
//   progress-printer  NeMo 2.0 ProgressPrinter (nemo/lightning/pytorch/callbacks/progress_printer.py):
//                     "Training epoch 0, iteration 9/99 | lr: 1.5e-05 | global_step: 9 | reduced_train_loss:
//                     10.65 | train_step_timing in s: 12.03 | consumed_samples: 1280"  (averages over the
//                     log interval; the printed iteration is 0-based)
//   progress-bar      Lightning/tqdm progress bar postfix: "Epoch 0: : 100%|...| 50/50 [31:51<00:00,
//                     reduced_train_loss=6.130, global_step=50.0, ..., train_step_timing in s=5.900]"
//                     (the latest step's values; one physical line holds many '\r'-separated updates)
//   delta-timing      NeMo's DeltaTimingCallback: "[NeMo I 2024-06-12 10:11:02 exp_manager:453] Step 10:
//                     train_step_timing in s=12.03" (every step, 0-based)
#pragma once
#include <optional>
#include <string>

#include "runs/megatron_log.h"

namespace mplan::runs {

// One NeMo/Lightning step line (nullopt when the line is not one). `iteration` is the number of steps
// completed (the printed 0-based index + 1, or global_step).
std::optional<LogIteration> parse_nemo_iteration_line(const std::string& line);
// "[NeMo I 2024-06-12 10:11:02 module:123] ..." -> "2024-06-12 10:11:02" ("" when not such a line).
std::string nemo_datetime_line(const std::string& line);

}  // namespace mplan::runs
