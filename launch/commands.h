// The subcommands of the `topotrain` binary. Each takes the arguments after its name, returns the
// process exit code, and reports user errors by throwing tt::Error (main.cpp maps them to exit codes).
#pragma once

#include <string>
#include <vector>

namespace tt {

using Args = std::vector<std::string>;

int train_main(const Args& args);
int sample_main(const Args& args);
int eval_main(const Args& args);    // launch/eval_command.cpp
int export_main(const Args& args);  // launch/export_command.cpp
int bench_main(const Args& args);
int data_main(const Args& args);  // launch/data_command.cpp
int plot_main(const Args& args);
int compare_main(const Args& args);   // launch/compare_command.cpp
int report_main(const Args& args);    // launch/report_command.cpp
int probe_main(const Args& args);     // launch/probe_command.cpp
int plan_main(const Args& args);      // launch/plan_command.cpp
int simulate_main(const Args& args);  // launch/simulate_command.cpp
int version_main(const Args& args);

}  // namespace tt
