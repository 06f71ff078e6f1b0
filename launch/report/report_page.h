// The HTML page of `topotrain report`: one self-contained file (styles inline, charts as SVG data
// URIs, no network access or files beside it needed to view it) with a summary, the charts by
// section, the planner's prediction against the measured medians, per-rank phases when the run was
// traced, and the run's config.
#pragma once

#include <string>
#include <vector>

#include "launch/report/report_charts.h"
#include "launch/report/run_report.h"

namespace tt {

// Section ids, in page order; a section without data says so instead of showing a chart.
const std::vector<std::string>& report_section_ids();

// The page. `generated_at` is printed in its footer.
std::string report_html(const RunReport& report, const std::vector<Chart>& charts, const std::string& generated_at);

}  // namespace tt
