// The descriptor table of CostParams' scalar parameters: one row per parameter with its name (as in
// calibration JSON), member, physical range, a one-line doc and the bounds a fit searches it within;
// its prior is CostParams{}'s value. From it: cost_param_ref (fitting, by_arch overrides,
// cross-validation's reset to the prior), the calibration JSON reader and writer with their range
// checks, the fitted parameters and their bounds (default_fit_params), and docs/cost_params.md.
#pragma once
#include <string>
#include <vector>

#include "simulator/cost_params.h"

namespace mplan {

// The interval a fit searches a parameter within (lo < hi; none: not fitted), globally or as one
// by_arch override per architecture named in `archs` ("ampere,hopper,blackwell").
struct FitBounds {
  double lo = 0, hi = 0;
  const char* archs = "";
  bool fitted() const { return lo < hi; }
};

struct CostParamRow {
  const char* name;
  double CostParams::*member;  // nullptr: an entry of a keyed map (precision_eff.<precision>, framework_eff.<framework>)
  ParamRange range;            // calibration values outside it are refused naming the field
  bool global;                 // a scalar of the calibration's "params" (false: a by_arch override or a map entry)
  const char* doc;
  FitBounds fit = {};
};

// Every scalar parameter (and the fitted map entries), in the order of the docs and of the fit (per
// architecture ones first, default_fit_params).
const std::vector<CostParamRow>& cost_param_table();

}  // namespace mplan
