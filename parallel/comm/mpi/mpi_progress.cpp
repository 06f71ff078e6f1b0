// MPI backend, progress side: the progress thread (posting and completing collectives, the
// fingerprint check), the control channel that asks peers which collective they reached, and the
// watchdog (design in mpi_communicator.h; threading rules at the top of mpi_communicator.cpp).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "core/error.h"
#include "parallel/comm/mpi/mpi_check.h"
#include "parallel/comm/mpi/mpi_internal.h"
#include "parallel/comm/pending_note.h"

namespace tt::parallel::mpi_detail {

// ---- progress thread -----------------------------------------------------------------------------
void MpiCommunicator::post_data(MpiWork& w) {
  const CollectiveKind kind = w.fp.kind;
  const int n = size_;
  const size_t esize = dtype_size(w.dtype);
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      const int count = int(w.count);
      if (needs_staging(w.dtype)) {
        w.stage_send.resize(size_t(count));
        to_f32(w.buf, w.stage_send.data(), count, w.dtype);
        TT_MPI_CHECK(
            MPI_Iallreduce(MPI_IN_PLACE, w.stage_send.data(), count, MPI_FLOAT, mpi_op(w.op), data_comm_, w.request()));
      } else {
        TT_MPI_CHECK(
            MPI_Iallreduce(MPI_IN_PLACE, w.buf, count, wire_type(w.dtype), mpi_op(w.op), data_comm_, w.request()));
      }
      break;
    }
    case CollectiveKind::kReduceScatter: {
      // One MPI_Ireduce per rank (root r receives the reduction of block r), all in flight at once:
      // every block crosses the network once and both directions of each link are busy. libnbc's
      // MPI_Ireduce_scatter ran at a third of that here (16 MiB over 1 Gbit/s between two hosts:
      // 213 ms against 70 ms; 16 MiB in shared memory at 4 ranks: 34 ms against 16 ms).
      if (!w.vector_variant) w.set_vector_blocks(std::vector<int64_t>(size_t(n), w.count));
      const bool staged = needs_staging(w.dtype);
      if (staged) {
        const int64_t total = int64_t(w.displs[n - 1]) + w.counts[n - 1];
        w.stage_send.resize(size_t(total));
        w.stage_recv.resize(size_t(w.counts[rank_]));
        to_f32(w.send, w.stage_send.data(), total, w.dtype);
      }
      const MPI_Datatype t = staged ? MPI_FLOAT : wire_type(w.dtype);
      const size_t wire_esize = staged ? sizeof(float) : esize;
      const char* send = staged ? reinterpret_cast<const char*>(w.stage_send.data()) : static_cast<const char*>(w.send);
      void* recv = staged ? static_cast<void*>(w.stage_recv.data()) : w.buf;
      w.reqs.assign(size_t(n), MPI_REQUEST_NULL);
      for (int root = 0; root < n; ++root)
        TT_MPI_CHECK(MPI_Ireduce(send + size_t(w.displs[root]) * wire_esize, root == rank_ ? recv : nullptr,
                                 w.counts[root], t, mpi_op(w.op), root, data_comm_, &w.reqs[size_t(root)]));
      break;
    }
    case CollectiveKind::kAllGather: {
      // One MPI_Ibcast per root, all in flight together, in place: libnbc's MPI_Iallgatherv
      // alternated between line rate and half of it (16 MiB over 1 Gbit/s between two hosts: 70 ms,
      // then 124-156 ms), the broadcasts held 70 ms every time.
      if (!w.vector_variant) w.set_vector_blocks(std::vector<int64_t>(size_t(n), w.count));
      char* buf = static_cast<char*>(w.buf);
      char* mine = buf + size_t(w.displs[rank_]) * esize;
      if (w.send != mine) std::memmove(mine, w.send, size_t(w.counts[rank_]) * esize);
      w.reqs.assign(size_t(n), MPI_REQUEST_NULL);
      for (int root = 0; root < n; ++root)
        TT_MPI_CHECK(MPI_Ibcast(buf + size_t(w.displs[root]) * esize, w.counts[root], raw_type(w.dtype), root,
                                data_comm_, &w.reqs[size_t(root)]));
      break;
    }
    case CollectiveKind::kBroadcast:
      TT_MPI_CHECK(MPI_Ibcast(w.buf, int(w.count), raw_type(w.dtype), w.fp.op_or_root, data_comm_, w.request()));
      break;
    case CollectiveKind::kBarrier:
      TT_MPI_CHECK(MPI_Ibarrier(data_comm_, w.request()));
      break;
    case CollectiveKind::kAllToAll: {
      const MPI_Datatype t = raw_type(w.dtype);  // data movement: any dtype of 1, 2 or 4 bytes
      TT_MPI_CHECK(MPI_Ialltoall(w.send, int(w.count), t, w.buf, int(w.count), t, data_comm_, w.request()));
      break;
    }
  }
  w.stage = Stage::kPosted;
}

void MpiCommunicator::finish_data(MpiWork& w) {
  const bool reduction = w.fp.kind == CollectiveKind::kAllReduce || w.fp.kind == CollectiveKind::kReduceScatter;
  if (reduction) {
    const int64_t n =
        w.fp.kind == CollectiveKind::kAllReduce ? w.count : (w.vector_variant ? w.counts[rank_] : w.count);
    if (needs_staging(w.dtype)) {
      const float* src = w.fp.kind == CollectiveKind::kAllReduce ? w.stage_send.data() : w.stage_recv.data();
      from_f32(src, w.buf, n, w.dtype, w.op == ReduceOp::kAvg ? float(size_) : 1.0f);
    } else if (w.op == ReduceOp::kAvg) {
      divide_in_place(w.buf, n, w.dtype, size_);
    }
  }
  w.stage_send = {};
  w.stage_recv = {};
  w.stage = Stage::kDone;
}

bool MpiCommunicator::advance_posting(MpiWork& w) {
  if (w.stage == Stage::kPosted || w.stage == Stage::kDone) return true;
  if (!opts_.check_collectives) {
    post_data(w);
    return true;
  }
  if (w.stage == Stage::kQueued) {
    const int64_t words[kFingerprintWords] = {int64_t(w.fp.kind), w.fp.count, int64_t(w.fp.dtype), w.fp.seq,
                                              w.fp.op_or_root};
    std::copy(words, words + kFingerprintWords, w.fp_send);
    w.fp_recv.assign(size_t(kFingerprintWords) * size_, 0);
    TT_MPI_CHECK(MPI_Iallgather(w.fp_send, kFingerprintWords, MPI_INT64_T, w.fp_recv.data(), kFingerprintWords,
                                MPI_INT64_T, fp_comm_, &w.fp_req));
    w.stage = Stage::kFingerprint;
  }
  int flag = 0;
  TT_MPI_CHECK(MPI_Test(&w.fp_req, &flag, MPI_STATUS_IGNORE));
  if (!flag) return false;
  std::vector<CollectiveFingerprint> all(size_);
  for (int r = 0; r < size_; ++r) {
    const int64_t* f = &w.fp_recv[size_t(r) * kFingerprintWords];
    all[r] = CollectiveFingerprint{CollectiveKind(f[0]), f[1], DType(f[2]), f[3], int32_t(f[4])};
  }
  const std::string mismatch = describe_fingerprint_mismatch(all);
  if (!mismatch.empty())
    throw Error(ErrorKind::kRuntime, "mismatched collectives: " + mismatch, "",
                "every rank must issue the same collectives in the same order with the same sizes");
  post_data(w);
  return true;
}

void MpiCommunicator::start_round() {
  ++round_;
  round_active_ = true;
  round_deadline_ns_ = monotonic_ns() + (long long)(query_window_s_ * 1e9);
  for (int p = 0; p < size_; ++p) {
    peers_[p] = PeerPosition{};
    if (p == rank_) continue;
    // Errors here (a dead peer on some transports) leave that peer silent, which is the diagnosis.
    if (reply_req_[p] == MPI_REQUEST_NULL &&
        MPI_Irecv(reply_in_[p].data(), 3, MPI_INT64_T, p, kReplyTag, ctl_comm_, &reply_req_[p]) != MPI_SUCCESS)
      reply_req_[p] = MPI_REQUEST_NULL;
    sends_.emplace_back(std::array<int64_t, 3>{round_, 0, 0}, MPI_REQUEST_NULL);
    if (MPI_Isend(sends_.back().first.data(), 3, MPI_INT64_T, p, kQueryTag, ctl_comm_, &sends_.back().second) !=
        MPI_SUCCESS)
      sends_.pop_back();
  }
  peers_[rank_] = PeerPosition{true, issued_.load(), completed_.load()};
}

std::string MpiCommunicator::describe_missing(int64_t seq) const {
  std::string ranks, detail;
  for (int p = 0; p < size_; ++p) {
    const PeerPosition& pp = peers_[p];
    std::string why;
    const int who = world_of(p);
    if (!pp.replied)
      why = str("rank ", who, " not responding: exited, crashed or blocked");
    else if (pp.issued < seq)
      why = pp.issued == 0 ? str("rank ", who, " issued no collective yet")
                           : str("rank ", who, " last issued #", pp.issued);
    if (why.empty()) continue;
    ranks += str(ranks.empty() ? "" : ", ", who);
    detail += str(detail.empty() ? "" : "; ", why);
  }
  if (ranks.empty())
    return str("no rank: every rank issued #", seq,
               " (mismatched arguments or a stalled transport; rerun with check_collectives)");
  return str("rank(s) ", ranks, " (", detail, ")");
}

void MpiCommunicator::finish_round() {
  round_active_ = false;
  std::vector<DiagnosisRequest*> served;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    served.swap(diag_requests_);
    for (DiagnosisRequest* d : served) {
      d->result = describe_missing(d->seq);
      d->done = true;
    }
  }
  diag_cv_.notify_all();
  if (round_for_abort_ && abort_work_) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", abort_work_->timeout_s);
    die(str("collective ", abort_work_->desc, " timed out after ", secs, " s waiting for ",
            describe_missing(abort_work_->fp.seq)));
  }
}

void MpiCommunicator::service_control() {
  int flag = 0;
  MPI_Status st;
  // Queries from peers: answer with our position.
  if (query_req_ == MPI_REQUEST_NULL)
    TT_MPI_CHECK(MPI_Irecv(query_in_.data(), 3, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, ctl_comm_, &query_req_));
  for (;;) {
    TT_MPI_CHECK(MPI_Test(&query_req_, &flag, &st));
    if (!flag) break;
    sends_.emplace_back(std::array<int64_t, 3>{query_in_[0], issued_.load(), completed_.load()}, MPI_REQUEST_NULL);
    TT_MPI_CHECK(MPI_Isend(sends_.back().first.data(), 3, MPI_INT64_T, st.MPI_SOURCE, kReplyTag, ctl_comm_,
                           &sends_.back().second));
    TT_MPI_CHECK(MPI_Irecv(query_in_.data(), 3, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, ctl_comm_, &query_req_));
  }
  for (auto it = sends_.begin(); it != sends_.end();) {
    flag = 0;
    if (MPI_Test(&it->second, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 1;  // a dead peer: drop it
    it = flag ? sends_.erase(it) : std::next(it);
  }
  // Replies to our queries.
  for (int p = 0; p < size_; ++p) {
    if (reply_req_[p] == MPI_REQUEST_NULL) continue;
    flag = 0;
    if (MPI_Test(&reply_req_[p], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      reply_req_[p] = MPI_REQUEST_NULL;
      continue;
    }
    if (!flag) continue;
    if (round_active_ && reply_in_[p][0] == round_) peers_[p] = PeerPosition{true, reply_in_[p][1], reply_in_[p][2]};
    if (MPI_Irecv(reply_in_[p].data(), 3, MPI_INT64_T, p, kReplyTag, ctl_comm_, &reply_req_[p]) != MPI_SUCCESS)
      reply_req_[p] = MPI_REQUEST_NULL;
  }
  // Rounds: start one for waiting consumers, finish when all answered or the window closed.
  bool wanted = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wanted = !diag_requests_.empty();
  }
  if (!round_active_ && (wanted || round_for_abort_)) start_round();
  if (round_active_) {
    bool all = true;
    for (const PeerPosition& pp : peers_) all = all && pp.replied;
    if (all || monotonic_ns() > round_deadline_ns_) finish_round();
  }
}

void MpiCommunicator::check_deadline(const std::deque<std::shared_ptr<MpiWork>>& active) {
  if (active.empty() || round_for_abort_) return;
  const auto& oldest = active.front();
  if (monotonic_ns() < oldest->deadline_ns) return;
  round_for_abort_ = true;  // the next service_control() starts (or reuses) a round, then dies
  abort_work_ = oldest;
}

void MpiCommunicator::progress_loop() {
  std::deque<std::shared_ptr<MpiWork>> active;  // submission order
  int64_t published_seq = -1;
  int idle_polls = 0;
  for (;;) {
    bool progressed = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (active.empty() && queued_.empty() && diag_requests_.empty() && !round_active_) {
        if (stop_) break;
        cv_.wait_for(lock, std::chrono::milliseconds(5));
      }
      while (!queued_.empty()) {
        active.push_back(std::move(queued_.front()));
        queued_.pop_front();
        progressed = true;
      }
    }
    try {
      for (auto& w : active) {
        if (w->stage == Stage::kPosted) continue;
        if (!advance_posting(*w)) break;
        progressed = true;
      }
      for (auto it = active.begin(); it != active.end();) {
        MpiWork& w = **it;
        int flag = 0;
        if (w.stage == Stage::kPosted)
          TT_MPI_CHECK(MPI_Testall(int(w.reqs.size()), w.reqs.data(), &flag, MPI_STATUSES_IGNORE));
        if (flag && opts_.inject_delay_s > 0) {
          w.stage = Stage::kDone;  // the request is freed; hold the result back for the simulated link
          w.release_ns = std::max(monotonic_ns(), delayed_link_free_ns_) + (long long)(opts_.inject_delay_s * 1e9);
          delayed_link_free_ns_ = w.release_ns;
        }
        if (w.stage == Stage::kDone && w.release_ns) flag = monotonic_ns() >= w.release_ns;
        if (!flag) {
          ++it;
          continue;
        }
        finish_data(w);
        int64_t c = completed_.load();
        while (c < w.fp.seq && !completed_.compare_exchange_weak(c, w.fp.seq)) {
        }
        w.complete();
        it = active.erase(it);
        progressed = true;
      }
      check_deadline(active);
      service_control();
    } catch (const Error& e) {
      // A failed MPI call or a fingerprint mismatch: this communicator cannot continue.
      std::lock_guard<std::mutex> lock(mutex_);
      poisoned_ = e.what();
      for (auto& w : active) w->fail(str("collective ", w->desc, " failed: ", poisoned_));
      for (auto& w : queued_) w->fail(str("collective ", w->desc, " failed: ", poisoned_));
      active.clear();
      queued_.clear();
    }
    // Publish the oldest pending collective for the watchdog and for signal handlers.
    const int64_t front_seq = active.empty() ? 0 : active.front()->fp.seq;
    if (front_seq != published_seq) {
      published_seq = front_seq;
      if (active.empty()) {
        oldest_deadline_ns_.store(0);
        clear_pending_collective(this);
      } else {
        const MpiWork& w = *active.front();
        {
          std::lock_guard<std::mutex> lock(oldest_mutex_);
          oldest_desc_ = w.desc;
          oldest_timeout_s_ = w.timeout_s;
        }
        oldest_deadline_ns_.store(w.deadline_ns);
        set_pending_collective(world_rank_, w.desc, w.submit_ns, this);
      }
    }
    if (progressed) {
      idle_polls = 0;
    } else if (!active.empty() || round_active_) {
      // Poll MPI hard while a collective runs, backing off so that oversubscribed ranks still compute.
      if (++idle_polls < 256)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(idle_polls < 4096 ? 20 : 200));
    }
  }
  // Shutdown: withdraw the control-channel receives; sends in flight are released to MPI.
  for (MPI_Request* r : {&query_req_}) {
    if (*r != MPI_REQUEST_NULL) {
      MPI_Cancel(r);
      MPI_Wait(r, MPI_STATUS_IGNORE);
    }
  }
  for (MPI_Request& r : reply_req_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  for (auto& s : sends_)
    if (s.second != MPI_REQUEST_NULL) MPI_Request_free(&s.second);
  clear_pending_collective(this);
}

std::string MpiCommunicator::diagnose(int64_t seq) {
  DiagnosisRequest req;
  req.seq = seq;
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopped_) return "unknown rank(s) (communicator shut down)";
  diag_requests_.push_back(&req);
  cv_.notify_all();
  const bool ok =
      diag_cv_.wait_for(lock, std::chrono::duration<double>(query_window_s_ + 2.0), [&] { return req.done; });
  if (!ok) {
    diag_requests_.erase(std::remove(diag_requests_.begin(), diag_requests_.end(), &req), diag_requests_.end());
    return "unknown rank(s) (the communication thread did not answer)";
  }
  return req.result;
}

// ---- watchdog ------------------------------------------------------------------------------------
void MpiCommunicator::watchdog_loop() {
  // Backstop only: the progress thread names the missing ranks and aborts at the deadline. If it has
  // not done so well after the deadline, it is stuck inside an MPI call; abort from here.
  const double grace_s = query_window_s_ + 5.0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_ && oldest_deadline_ns_.load() == 0; }))
        return;
    }
    const long long deadline = oldest_deadline_ns_.load();
    if (deadline == 0 || monotonic_ns() < deadline + (long long)(grace_s * 1e9)) continue;
    std::string desc;
    double t = 0;
    {
      std::lock_guard<std::mutex> lock(oldest_mutex_);
      desc = oldest_desc_;
      t = oldest_timeout_s_;
    }
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", t);
    die(str("collective ", desc, " timed out after ", secs,
            " s waiting for unknown rank(s) (the communication thread is blocked inside MPI)"));
  }
}

}  // namespace tt::parallel::mpi_detail
