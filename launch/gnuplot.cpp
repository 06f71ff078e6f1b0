// Drawing with gnuplot (see gnuplot.h).
#include "launch/gnuplot.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/fs.h"

namespace tt {

bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

void run_gnuplot(const std::string& script, const std::string& who) {
  if (!gnuplot_available())
    throw Error(ErrorKind::kRuntime, "gnuplot is not installed", who, "apt-get install gnuplot-nox");
  // gnuplot's messages go to a file, so they can be quoted in the error.
  char messages[] = "/tmp/topotrain-gnuplot-XXXXXX";
  const int fd = mkstemp(messages);
  if (fd < 0) throw Error(ErrorKind::kRuntime, "cannot create a temporary file for gnuplot's messages", who);
  ::close(fd);
  FILE* gp = popen(str("gnuplot >'", messages, "' 2>&1").c_str(), "w");
  if (!gp) {
    std::remove(messages);
    throw Error(ErrorKind::kRuntime, "cannot start gnuplot", who, "apt-get install gnuplot-nox");
  }
  std::fputs(script.c_str(), gp);
  const int status = pclose(gp);
  std::string said;
  try {
    said = read_file_to_string(messages);
  } catch (const Error&) {
  }
  std::remove(messages);
  if (status != 0)
    throw Error(ErrorKind::kRuntime, str("gnuplot failed (status ", status, "): ", said), who,
                "check that gnuplot has the pngcairo and svg terminals (apt-get install gnuplot-nox)");
}

}  // namespace tt
