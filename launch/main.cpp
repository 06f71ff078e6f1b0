// The `topotrain` binary: git-style subcommands. This is the only place where errors become exit
// codes (ErrorKind -> code, see core/error.h) and the message is printed once, naming what/where/hint.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/commands.h"

namespace {

const char* kUsage =
    "usage: topotrain <command> [options]   (topotrain <command> --help for details)\n"
    "\n"
    "commands:\n"
    "  train    train a model from a config (.pbtxt)\n"
    "  sample   generate text from a checkpoint (or any model: Hugging Face, llm.c)\n"
    "  eval     loss and perplexity of a model on token shards\n"
    "  export   weights for transformers (safetensors) or llm.c\n"
    "  bench    benchmarks (bench step, bench comm, bench tokenizer)\n"
    "  plot     loss curves of a run (or several together) as a PNG\n"
    "  compare  precision parity: loss gaps of runs against a baseline, fp8 trends (exit 6: outside tolerance)\n"
    "  report   one HTML page about a run: curves, throughput, memory, phases, prediction, config\n"
    "  probe    interconnect topology (GPUs, P2P, NVLink, all-reduce busbw) or a preset/file\n"
    "  plan     pick the gradient-communication strategy for a model on a topology\n"
    "  simulate predicted scaling (tokens/s vs GPUs) per strategy, CSV + PNG\n"
    "  data     data tools (synth, encode, inspect, tokenize, detokenize, train-tokenizer)\n"
    "\n"
    "  --version  version and build features\n"
    "  --help     this help\n"
    "\n"
    "exit codes: 0 ok, 1 runtime error, 2 usage/config error, 3 data error, 4 checkpoint error,\n"
    "            5 memory error, 6 compare: a run outside the parity tolerance, 70 internal error,\n"
    "            130 stopped by a signal (checkpoint written)\n";

int dispatch(const std::string& cmd, const tt::Args& rest) {
  if (cmd == "train") return tt::train_main(rest);
  if (cmd == "sample") return tt::sample_main(rest);
  if (cmd == "eval") return tt::eval_main(rest);
  if (cmd == "export") return tt::export_main(rest);
  if (cmd == "bench") return tt::bench_main(rest);
  if (cmd == "data") return tt::data_main(rest);
  if (cmd == "plot") return tt::plot_main(rest);
  if (cmd == "compare") return tt::compare_main(rest);
  if (cmd == "report") return tt::report_main(rest);
  if (cmd == "probe") return tt::probe_main(rest);
  if (cmd == "plan") return tt::plan_main(rest);
  if (cmd == "simulate") return tt::simulate_main(rest);
  if (cmd == "--version" || cmd == "version") return tt::version_main(rest);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  throw tt::Error(tt::ErrorKind::kUsage, "unknown command '" + cmd + "'", "topotrain", "see `topotrain --help`");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  const tt::Args rest(argv + 2, argv + argc);
  try {
    return dispatch(cmd, rest);
  } catch (const tt::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "topotrain %s: %s: %s\n", cmd.c_str(), tt::error_kind_name(e.kind()), e.what());
    return tt::exit_code_for(e.kind());
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "topotrain %s: memory error: out of host memory (an allocation failed) (hint: ask for less: smaller "
                 "sizes, batch or model)\n",
                 cmd.c_str());
    return tt::exit_code_for(tt::ErrorKind::kMemory);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "topotrain %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
