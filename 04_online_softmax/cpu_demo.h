// The CPU parts of the chapter executable, printed on every run (GPU or not):
// the (m, l) trace a learner checks a hand computation against, and the fp16
// overflow that makes the max shift necessary.
#pragma once

#include <ostream>
#include <vector>

#include "cli.h"

namespace osm {

// The (m, l) table of x element by element, then in blocks of B; the final
// pair next to the safe softmax's max and denominator; the softmax itself.
// Returns that softmax (from the online form).
std::vector<double> print_trace(std::ostream& out, const std::vector<double>& x, int B);

// Naive, safe and online softmax of x in fp16 next to the fp64 reference. The
// naive form is expected to overflow (reported, not a failure); the safe and
// online forms are checked against the reference with ladder::kFp16.
void overflow_demo(ladder::Report& report, const std::vector<float>& x);

}  // namespace osm
