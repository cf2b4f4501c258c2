// lease/scheduler/detail/pending_claims.hpp — the claims an instance has made
// and not yet had answered, by id, with a count of them per job.
//
// Why the count: every new claim of a slot first drops the job's older
// pending claims ("latest only", claims.hpp). Scanning every pending claim
// for them made each claim cost O(pending claims). In a healthy sweep that
// is small (perf put the scan at about 4 % of the loop thread at 10,000
// fires a second), but claims pile up exactly when the store is in trouble:
// while it is unreachable every claim is retried until its deadline, so
// with 10,000 jobs each new claim would walk 10,000 others, and the loop
// would fall behind just as it should be catching up. A job almost never
// has an older claim pending, so the count makes the common case one array
// read.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace lease::detail {

/// A map of id → Claim (which has a `job` index) that knows how many claims
/// each job has. Only add() inserts, so the count cannot miss a claim; a
/// claim may be changed in place (tries, its request) but never moved to
/// another job.
template <class Claim>
class pending_claims {
  using map = std::map<std::uint64_t, Claim>;

 public:
  using iterator = typename map::iterator;
  using const_iterator = typename map::const_iterator;

  /// Adds claim `c` under `id` (not in use) and returns it.
  Claim& add(std::uint64_t id, Claim c) {
    const std::uint32_t j = c.job;
    if (per_job_.size() <= j) per_job_.resize(j + 1, 0);
    ++per_job_[j];
    return by_id_.try_emplace(id, std::move(c)).first->second;
  }
  /// The claim `id`, or end().
  [[nodiscard]] iterator find(std::uint64_t id) { return by_id_.find(id); }
  [[nodiscard]] bool contains(std::uint64_t id) const { return by_id_.contains(id); }
  [[nodiscard]] Claim& at(std::uint64_t id) { return by_id_.at(id); }
  [[nodiscard]] iterator begin() { return by_id_.begin(); }
  [[nodiscard]] iterator end() { return by_id_.end(); }
  [[nodiscard]] const_iterator begin() const { return by_id_.begin(); }
  [[nodiscard]] const_iterator end() const { return by_id_.end(); }

  /// Whether job `j` has a pending claim.
  [[nodiscard]] bool has_job(std::uint32_t j) const { return j < per_job_.size() && per_job_[j] > 0; }

  /// Removes the claim at `it`; returns the next one.
  iterator erase(iterator it) {
    --per_job_[it->second.job];
    return by_id_.erase(it);
  }
  /// Removes every claim of job `j`.
  void erase_job(std::uint32_t j) {
    if (!has_job(j)) return;
    std::erase_if(by_id_, [&](const auto& p) { return p.second.job == j; });
    per_job_[j] = 0;
  }
  void clear() {
    by_id_.clear();
    per_job_.assign(per_job_.size(), 0);
  }

 private:
  map by_id_;
  std::vector<std::uint32_t> per_job_;  // claims in by_id_, by job index
};

}  // namespace lease::detail
