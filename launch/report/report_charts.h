// The pictures of `topotrain report`: each chart is a gnuplot script over a small data table, drawn
// as SVG in a temporary directory and returned as text for the page to embed (the page then needs no
// files beside it). Charts whose data the run does not have are left out.
#pragma once

#include <string>
#include <vector>

#include "launch/report/run_report.h"

namespace tt {

struct Chart {
  std::string id;       // the page section it belongs to: "loss", "throughput", "memory", "phases",
                        // "prediction", "ranks"
  std::string caption;  // one line under the picture
  std::string svg;      // the SVG document gnuplot wrote
};

// Draws the charts of `report` with gnuplot (launch/gnuplot.h; throws as run_gnuplot does).
std::vector<Chart> draw_report_charts(const RunReport& report);

}  // namespace tt
