// The descriptor table of CostParams' scalar parameters: one row per parameter with its name (as in
// calibration JSON), member, physical range and a one-line doc; its prior is CostParams{}'s value.
// From it: cost_param_ref (fitting, by_arch overrides, cross-validation's reset to the prior), the
// calibration JSON reader and writer with their range checks, and docs/cost_params.md.
#pragma once
#include <string>
#include <vector>

#include "simulator/cost_params.h"

namespace mplan {

struct CostParamRow {
  const char* name;
  double CostParams::*member;
  ParamRange range;  // calibration values outside it are refused naming the field
  bool global;       // in the calibration's "params" (false: only as a per-architecture override in by_arch)
  const char* doc;
};

// Every scalar parameter, in the order of the calibration JSON and the docs.
const std::vector<CostParamRow>& cost_param_table();
// A Markdown table of the parameters (docs/cost_params.md is this text; a test keeps them equal).
std::string cost_params_markdown();

}  // namespace mplan
