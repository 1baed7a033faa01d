// Chapter 04 exercise (README, "Exercises", 3): the online softmax's two rules, written
// by you. The tests compare every step of your running (m, l) with the chapter's own
// trace (softmax_cpu.h: osm::update, osm::merge) on random rows with -inf and huge logits:
//   build/bin/04_online_softmax_exercise --gtest_filter='Exercise*'          yours
//   build/bin/04_online_softmax_test --gtest_filter='CpuExercise*'       the reference
#pragma once

#include "softmax_cpu.h"

namespace mine {
// One element x joins the running pair s = (m, l): the max of everything seen, and
// l = sum of e^(x_j - m) over everything seen. The empty row is (-inf, 0).
osm::MaxSum<double> update(osm::MaxSum<double> s, double x);
// Two blocks' pairs combine into the pair of both blocks together.
osm::MaxSum<double> merge(osm::MaxSum<double> a, osm::MaxSum<double> b);
}  // namespace mine

namespace solution {
osm::MaxSum<double> update(osm::MaxSum<double> s, double x);
osm::MaxSum<double> merge(osm::MaxSum<double> a, osm::MaxSum<double> b);
}  // namespace solution
