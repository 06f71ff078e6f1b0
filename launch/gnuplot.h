// Drawing with gnuplot (a Debian package launch/install_deps.sh installs): `plot`, `simulate` and
// `report` write a script and gnuplot renders it. One place starts it and turns its failures into
// errors that say what to install.
#pragma once

#include <string>

namespace tt {

// True when a `gnuplot` executable is on PATH.
bool gnuplot_available();

// Runs `script` through gnuplot. Throws tt::Error(kRuntime) naming `who` (the command drawing) when
// gnuplot cannot be started or fails, with gnuplot's own messages and an install hint.
void run_gnuplot(const std::string& script, const std::string& who);

}  // namespace tt
