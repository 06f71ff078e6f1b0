// `topotrain data ...`: create and inspect token shards from the command line.
//   topotrain data synth --out DIR [--vocab 32] [--order 2] [--seed 1] [--concentration 8]
//                        [--train-tokens N] [--val-tokens N]
//   topotrain data inspect FILE|DIR|GLOB
// Design: a thin layer over data/ (synth.h, shard.h); all it adds is argument parsing and printing,
// so everything it shows is also reachable (and tested) through the library.
#pragma once

#include <string>
#include <vector>

namespace tt {

// `args` are the words after `topotrain data` (args[0] is the subcommand). Prints to stdout and
// returns 0 on success; throws tt::Error(kUsage) for a bad command line and lets data/ errors
// (kData, kConfig, kRuntime) propagate for launch/main.cpp to turn into exit codes.
int data_main(const std::vector<std::string>& args);

}  // namespace tt
