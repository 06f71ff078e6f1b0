// SIGKILL campaign: one 2-rank ZeRO-1 run is killed again and again at seeded random moments and
// resumed each time with `train --resume` until it completes; it must end bit-identical to the
// uninterrupted reference (every step's metrics record, the final weights and optimizer state).
//
// Design: the kill moments are stratified over the run (kill i targets a step drawn from the i-th
// of kKills equal slices of it), so the campaign moves through the whole run, validation and the
// final checkpoint included, instead of dying near the start again and again. Each kill picks a
// moment kind — during start-up (MPI init, checkpoint loading, metrics truncation), in the middle
// of a step, while rank 0 writes a checkpoint (its "<ckpt>.tmp.<pid>" exists) or right after a
// checkpoint is logged — and a victim: rank 0, rank 1 or the whole job at once. Triggers are the
// run's own output (progress lines, the temp file), never sleeps, except the start-up kind's delay.
// The seed is printed; TT_FAULT_SEED=<n> replays a campaign's choices (not its timing).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/checkpoint_io.h"
#include "tests/faults/fault_run.h"
#include "tests/process_util.h"

namespace tt::test {
namespace {

namespace fs = std::filesystem;

enum class Moment { kStartup, kMidStep, kCheckpointWrite, kAfterCheckpoint };
enum class Victim { kRank0, kRank1, kJob };
const char* moment_name(Moment m) {
  const char* names[] = {"start-up", "mid-step", "checkpoint write", "after checkpoint"};
  return names[int(m)];
}
const char* victim_name(Victim v) {
  const char* names[] = {"rank 0", "rank 1", "whole job"};
  return names[int(v)];
}

// What happened to one attempt of the campaign.
struct Attempt {
  Moment moment = Moment::kStartup;
  Victim victim = Victim::kJob;
  int target = 0;             // the step the kill aimed at
  int64_t resumed_from = 0;   // checkpoint step the attempt started from (0: fresh)
  int last_logged = 0;        // last progress line before the kill
  bool killed = false;        // the signal reached a running job
  bool partial_ckpt = false;  // rank 0's temp checkpoint was left behind: the kill cut a write
  int exit_code = -1;
};

uint64_t campaign_seed() {
  if (const char* s = std::getenv("TT_FAULT_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

// Highest step N of the lines matching `re` (its group 1) in text, or 0.
int last_match(const std::string& text, const std::regex& re) {
  int last = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
    last = std::max(last, std::stoi((*it)[1]));
  return last;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

class SigkillCampaign : public FaultRunTest {};

TEST_F(SigkillCampaign, RunKilledAtRandomMomentsResumesToTheReferenceBitForBit) {
  FaultRunSpec spec;
  spec.steps = 32;
  constexpr int kKills = 24;
  const uint64_t seed = campaign_seed();
  std::printf("[ campaign ] seed %llu (replay the choices with TT_FAULT_SEED=%llu)\n", (unsigned long long)seed,
              (unsigned long long)seed);
  RecordProperty("seed", std::to_string(seed));
  std::fflush(stdout);
  std::mt19937_64 rng(seed);
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  // Every moment kind and every victim in equal shares, in a seeded order.
  std::vector<Moment> moments;
  std::vector<Victim> victims;
  for (int i = 0; i < kKills; ++i) {
    moments.push_back(Moment(i % 4));
    victims.push_back(Victim(i % 3));
  }
  std::shuffle(moments.begin(), moments.end(), rng);
  std::shuffle(victims.begin(), victims.end(), rng);

  const std::string reference = run_reference(spec);
  ASSERT_FALSE(HasFailure());

  const std::string run = dir_.file("run"), ckpt_dir = run + "/checkpoints";
  const std::regex step_re("step +(\\d+)/" + std::to_string(spec.steps) + " \\|");
  const std::regex ckpt_re("checkpoint \\S*step_(\\d+)\\.ckpt \\(");
  std::vector<Attempt> attempts;
  int kills = 0;
  bool completed = false;
  const auto t_campaign = Clock::now();
  for (int a = 0; !completed; ++a) {
    ASSERT_LT(a, kKills + 10) << "the campaign does not converge";
    Attempt at;
    at.resumed_from = newest_checkpoint_step(run);
    const bool resume = at.resumed_from >= 0;
    if (!resume) {  // killed before its first checkpoint: nothing to resume, start over
      std::error_code ec;
      fs::remove_all(run, ec);
      at.resumed_from = 0;
    }
    const std::string log = dir_.file("attempt" + std::to_string(a) + ".log");
    BackgroundJob job(train_command(run, spec, resume), log);
    ASSERT_TRUE(job.started());

    if (kills == kKills) {  // the last attempt runs to the end
      at.exit_code = job.wait(180);
      ASSERT_EQ(at.exit_code, 0) << job.output();
      attempts.push_back(at);
      completed = true;
      break;
    }
    // This kill's moment: a step in the kills-th slice of the run, a kind and a victim.
    at.target = 1 + int((kills + uniform(0, 1)) * (spec.steps - 1) / kKills);
    at.moment = moments[size_t(kills)];
    at.victim = victims[size_t(kills)];
    const double startup_delay = uniform(0.05, 1.5);
    // At most the last step: a mid-step kill aimed past it would find the job gone.
    const int target = std::min(std::max<int>(at.target, int(at.resumed_from) + 1), spec.steps - 1);
    // The checkpoint the write/after kinds wait for: the first at or after the target.
    const int ckpt_step =
        std::min(spec.steps, (target + spec.checkpoint_every - 1) / spec.checkpoint_every * spec.checkpoint_every);
    // Killed right after the final checkpoint, the run is complete: only the last kill may do that
    // (earlier ones would end the campaign early); others cut that checkpoint's write short instead.
    if (at.moment == Moment::kAfterCheckpoint && ckpt_step == spec.steps && kills < kKills - 1)
      at.moment = Moment::kCheckpointWrite;
    const std::string ckpt = checkpoint_path(ckpt_dir, ckpt_step);
    std::string tmp;  // "<ckpt>.tmp.<rank 0's pid>", once rank 0 is known

    const auto t0 = Clock::now();
    bool fire = false;
    switch (at.moment) {
      case Moment::kStartup:  // or in the first step, should start-up be over before the delay
        fire = job.wait_until(
            [&] { return seconds_since(t0) >= startup_delay || last_match(job.output(), step_re) > 0; }, 60);
        break;
      case Moment::kMidStep:
        fire = job.wait_until([&] { return last_match(job.output(), step_re) >= target; }, 60, 0.002);
        break;
      case Moment::kCheckpointWrite:
        fire = job.wait_until(
            [&] {
              if (tmp.empty()) {
                const pid_t rank0 = find_rank_pid(job.pid(), 0);
                if (rank0 > 0) tmp = ckpt + ".tmp." + std::to_string(rank0);
                return false;
              }
              return exists(tmp) || exists(ckpt);  // the latter: the write was over before we looked
            },
            60, 0.0001);
        break;
      case Moment::kAfterCheckpoint:
        fire = job.wait_until([&] { return last_match(job.output(), ckpt_re) >= ckpt_step; }, 60, 0.002);
        break;
    }
    if (fire) {
      if (at.victim == Victim::kJob) {
        job.kill_all();
      } else {
        const pid_t victim = find_rank_pid(job.pid(), at.victim == Victim::kRank0 ? 0 : 1);
        if (victim > 0)
          kill(victim, SIGKILL);
        else  // not started yet (an early start-up kill): take the whole job
          job.kill_all(), at.victim = Victim::kJob;
      }
      at.killed = true;
      ++kills;
    }
    at.exit_code = job.ended_early() ? job.early_exit_code() : job.wait(60);
    const std::string out = job.output();
    at.last_logged = last_match(out, step_re);
    at.partial_ckpt = !tmp.empty() && exists(tmp);
    ASSERT_NE(at.exit_code, -1) << "the job did not end within 60 s of the kill (" << victim_name(at.victim) << ", "
                                << moment_name(at.moment) << "):\n"
                                << out;
    if (resume)
      EXPECT_TRUE(out.find("resumed from " + checkpoint_path(ckpt_dir, at.resumed_from) + " at step " +
                           std::to_string(at.resumed_from)) != std::string::npos ||
                  (at.killed && at.moment == Moment::kStartup))
          << "attempt " << a << " did not resume from the newest complete checkpoint:\n"
          << out;
    if (at.killed && at.exit_code == 0) {  // the victim had finished: a kill at the very end came too late
      at.killed = false;
      --kills;
    }
    if (!at.killed) {
      // The job ended before its moment came: it must have completed the run.
      ASSERT_EQ(at.exit_code, 0) << "attempt " << a << " ended by itself:\n" << out;
      completed = true;
    }
    attempts.push_back(at);
    // Nothing of the job may outlive it: a leftover rank would hold the run directory's lock.
    const auto t_end = Clock::now();
    const std::string run_arg = "logging.run_dir=" + run;
    while (!processes_with_arg(run_arg).empty() && seconds_since(t_end) < 10)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(processes_with_arg(run_arg).empty()) << "processes of attempt " << a << " outlived mpirun";
  }
  const double campaign_s = seconds_since(t_campaign);

  // What the campaign did, for the log and for the expectations below.
  int by_moment[4] = {}, by_victim[3] = {}, partial = 0;
  std::string table;
  for (size_t i = 0; i < attempts.size(); ++i) {
    const Attempt& at = attempts[i];
    char line[200];
    std::snprintf(line, sizeof line, "  #%-2zu from step %3lld  %-17s %-9s target %2d  last logged %2d  exit %3d%s\n",
                  i, (long long)at.resumed_from, at.killed ? moment_name(at.moment) : "(ran to the end)",
                  at.killed ? victim_name(at.victim) : "", at.target, at.last_logged, at.exit_code,
                  at.partial_ckpt ? "  partial checkpoint left" : "");
    table += line;
    if (!at.killed) continue;
    ++by_moment[int(at.moment)];
    ++by_victim[int(at.victim)];
    partial += at.partial_ckpt;
  }
  std::printf("[ campaign ] %d kills in %.1f s (seed %llu):\n%s", kills, campaign_s, (unsigned long long)seed,
              table.c_str());
  std::printf(
      "[ campaign ] moments: %d start-up, %d mid-step, %d checkpoint write (%d cut one short), %d after "
      "checkpoint; victims: %d rank 0, %d rank 1, %d whole job\n",
      by_moment[0], by_moment[1], by_moment[2], partial, by_moment[3], by_victim[0], by_victim[1], by_victim[2]);

  // Kills are planned for kKills slices of the run; only one that races the run's very end may
  // find it complete. Kills meant to cut a checkpoint write short must do so (else the campaign
  // never tests a partial checkpoint).
  EXPECT_GE(kills, kKills - 1) << table;
  EXPECT_GE(partial, 2) << "of " << by_moment[int(Moment::kCheckpointWrite)] << " kills aimed at checkpoint writes\n"
                        << table;
  expect_same_metrics(reference, run, spec.steps);
  expect_same_final_state(reference, run, spec.steps);
  // Interrupted writes leave no complete-looking checkpoint behind, and the retention holds.
  const auto ckpts = list_checkpoints(ckpt_dir);
  EXPECT_LE(ckpts.size(), size_t(spec.checkpoint_keep));
  for (const auto& [step, path] : ckpts) EXPECT_NO_THROW(verify_checkpoint(path)) << path;
  // The cut writes' temp files are removed by the next checkpoint written (the last attempt wrote
  // the final one unless an earlier attempt had).
  if (attempts.back().resumed_from < spec.steps)
    for (const auto& e : fs::directory_iterator(ckpt_dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos)
          << "an interrupted write's temp file outlived the run: " << e.path();
}

}  // namespace
}  // namespace tt::test
