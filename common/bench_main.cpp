// main() of every chapter benchmark: Google Benchmark's, plus the GPU, the commit and the
// timing method in the JSON context, so every published number says where it came from
// and how it was measured.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "device.h"
#include "timing.h"

namespace {

// Every benchmark runs one iteration (gpu_benchmark sets Iterations(1): the repeats are
// time_gpu's), and Google Benchmark appends "/iterations:1" to the name of such a run. The
// reports leave it out, so names stay <variant>/<key>=<value>/... (CONTRIBUTING.md) for the
// scripts that read them.
class PlainNames : public benchmark::BenchmarkReporter {
 public:
  explicit PlainNames(benchmark::BenchmarkReporter* inner) : inner_(inner) {}
  bool ReportContext(const Context& context) override {
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> plain(runs);
    for (Run& r : plain) r.run_name.iterations.clear();
    inner_->ReportRuns(plain);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  benchmark::BenchmarkReporter* inner_;
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

int main(int argc, char** argv) {
  // Read before Initialize, which removes the flags it knows from argv.
  bool json_file = false;
  std::string out_format = "json";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (starts_with(a, "--benchmark_out=")) json_file = a.size() > std::string("--benchmark_out=").size();
    if (starts_with(a, "--benchmark_out_format=")) out_format = a.substr(std::string("--benchmark_out_format=").size());
  }
  json_file = json_file && out_format == "json";

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("gpu", ladder::describe_device());
  try {  // a bad LADDER_WARMUP_MS stops the run here, before any benchmark
    benchmark::AddCustomContext("timing", ladder::timing_method());
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (const char* commit = std::getenv("LADDER_COMMIT")) benchmark::AddCustomContext("git_commit", commit);

  PlainNames display(benchmark::CreateDefaultDisplayReporter());
  benchmark::JSONReporter json;
  PlainNames file(&json);
  benchmark::RunSpecifiedBenchmarks(&display, json_file ? &file : nullptr);
  benchmark::Shutdown();
  return 0;
}
