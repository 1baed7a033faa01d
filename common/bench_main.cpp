// main() of every chapter benchmark: Google Benchmark's, plus the GPU and the
// commit in the JSON context, so every published number says where it came from.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "device.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("gpu", ladder::describe_device());
  if (const char* commit = std::getenv("LADDER_COMMIT")) benchmark::AddCustomContext("git_commit", commit);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
