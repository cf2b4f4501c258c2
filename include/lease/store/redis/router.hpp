// lease/store/redis/router.hpp — where a command goes: one server, or the
// master owning the command's hash slot on a Redis Cluster.
//
// Standalone (the default) it is one `connection` and adds nothing. On a
// cluster it keeps the slot map (CLUSTER SLOTS, read from any reachable node
// or seed on a connection of its own: slot_map.hpp) and one connection per master, and
// runs a batch of commands as one pipeline per node, all written before any
// is read, so a batch spread over N masters costs one round trip in wall
// time, not N. Every redirection is an answer of a command that did not run,
// so it is simply sent again where the cluster says:
//   MOVED slot host:port   the slot's owner changed: send there; the map is
//                          read again before the next batch;
//   ASK slot host:port     the slot is migrating and this key has moved:
//                          send ASKING then the command there, map unchanged;
//   TRYAGAIN, CLUSTERDOWN  back off (10 ms, doubling) and send again, until
//                          the command timeout: then the error reply stands
//                          (unavailable); CLUSTERDOWN reads the map again;
//   NOSCRIPT               that node had not loaded the scripts (a new
//                          master, a flushed cache): load them, send once more.
// A broken connection fails the whole batch as a transport_error the store
// resolves by reading back (connection.hpp); the map is read again first.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lease/store/redis/connection.hpp"
#include "lease/store/redis/slot.hpp"
#include "lease/store/redis/slot_map.hpp"

namespace lease::detail::redis {

class router {
 public:
  /// Standalone: one connection to `base.where`. Cluster: `seeds` (the
  /// url's node first) are where the slot map is first read.
  router(connection_settings base, bool cluster, std::vector<endpoint> seeds = {})
      : base_(std::move(base)), cluster_(cluster), seeds_(std::move(seeds)) {
    if (!cluster_) nodes_.push_back(std::make_unique<connection>(base_));
    owner_.fill(none);
  }

  /// Runs `hook(node)` right after every connect to any node (connection.hpp on_connect).
  void on_connect(std::function<void(connection&)> hook) {
    hook_ = std::move(hook);
    for (auto& n : nodes_) attach(*n);
  }

  [[nodiscard]] bool clustered() const noexcept { return cluster_; }

  /// The replies of `cmds`, in order (error replies returned, not thrown).
  /// `where`, if given: the node each command ran on (wait_each's keys).
  std::vector<reply_ptr> exchange(std::span<const argv_t> cmds, std::vector<std::size_t>* where = nullptr) {
    if (!cluster_) {
      auto replies = nodes_.front()->exchange(cmds);
      if (std::any_of(cmds.begin(), cmds.end(), [](const argv_t& c) { return !c.empty() && c[0] == "EVALSHA"; }))
        note_write(0, nodes_.front()->generation());
      if (where != nullptr) where->assign(cmds.size(), 0);
      return replies;
    }
    return routed(cmds, nullptr, where);
  }

  /// exchange(), command by command: on a cluster a node that fails (down,
  /// its connection lost), or a slot with no master, fails only its own
  /// commands: their replies stay null, and `failed` holds the first such
  /// error. On one server every command shares its fate, and a failure is
  /// thrown.
  std::vector<reply_ptr> exchange_each(std::span<const argv_t> cmds, std::optional<store_error>& failed,
                                       std::vector<std::size_t>* where = nullptr) {
    if (!cluster_) return exchange(cmds, where);
    return routed(cmds, &failed, where);
  }

  /// EVALSHA of `which` for each element of `batch`, routed; error replies thrown.
  /// `where`, if given: the node each element ran on (wait_each's keys).
  template <class MakeArgs>
  std::vector<reply_ptr> eval_many(script which, std::size_t count, MakeArgs&& make_args,
                                   std::vector<std::size_t>* where = nullptr) {
    if (!cluster_) return standalone_eval(which, count, std::forward<MakeArgs>(make_args), where);
    open();
    std::vector<argv_t> cmds(count);
    for (std::size_t i = 0; i < count; ++i) {
      cmds[i] = {"EVALSHA", sha(which)};
      make_args(i, cmds[i]);
    }
    std::vector<reply_ptr> replies = routed(cmds, nullptr, where);
    for (auto& r : replies) connection::throw_if_error(r.get(), "script");
    return replies;
  }

  /// eval_many, element by element: on a cluster a master that fails (down,
  /// its connection lost, an error reply), or a slot with no master, fails
  /// only its own elements: their replies stay null, and `failed` holds the
  /// first such error. So one master down does not fail the renewals on the
  /// others. On one server every element shares its fate, and a failure is
  /// thrown. `where`, if given: the node each element ran on (wait_each's keys).
  template <class MakeArgs>
  std::vector<reply_ptr> eval_each(script which, std::size_t count, MakeArgs&& make_args,
                                   std::optional<store_error>& failed, std::vector<std::size_t>* where = nullptr) {
    if (!cluster_) return standalone_eval(which, count, std::forward<MakeArgs>(make_args), where);
    open();
    std::vector<argv_t> cmds(count);
    for (std::size_t i = 0; i < count; ++i) {
      cmds[i] = {"EVALSHA", sha(which)};
      make_args(i, cmds[i]);
    }
    std::vector<reply_ptr> replies = routed(cmds, &failed, where);
    for (auto& r : replies) {
      if (!r) continue;
      try {
        connection::throw_if_error(r.get(), "script");
      } catch (const store_error& e) {
        if (!failed) failed.emplace(e);
        r.reset();
      }
    }
    return replies;
  }

  /// One EVALSHA, routed (eval_many). `node`, if given: the node it ran on.
  /// Its write is noted as any script's, with the connection it was
  /// answered on, so a WAIT covers it (wait_each) unless that connection
  /// was replaced since the call's earlier writes to the node.
  template <class MakeArgs>
  reply_ptr eval(script which, MakeArgs&& make_args, std::size_t* node = nullptr) {
    std::vector<std::size_t> where;
    auto replies = eval_many(
        which, 1, [&](std::size_t, argv_t& a) { make_args(a); }, node != nullptr ? &where : nullptr);
    if (node != nullptr) *node = where.front();
    return std::move(replies.front());
  }

  /// Forgets where earlier scripts ran: the next WAIT covers what runs from
  /// here (a claim's or an operator call's scripts), not a heartbeat's
  /// master short of replicas. Every call that WAITs starts with it.
  void forget_writes() noexcept { written_.clear(); }

  /// `wait` (WAIT numreplicas timeout) on each node that ran scripts since
  /// forget_writes() or the last WAIT (one server: on it), all at once:
  /// node -> the replicas that acknowledged its writes, or -1 where that is
  /// unknown (the WAIT failed, or could not cover the writes: below). WAIT
  /// counts the replicas that have this connection's writes, so on a
  /// cluster it must go where the writes went, not to any node; and each
  /// node answers for its own writes only, so a caller can tell which
  /// elements of a batch are short of replicas (one master whose replica
  /// lags no longer voids the renewals of every master).
  ///
  /// A WAIT answers for the writes of the connection it is sent on, up to
  /// that connection's last write. A node whose connection was replaced
  /// since the writes (failed, then reconnected by a later round of the
  /// batch, a redirection, a connect hook's call, or the WAIT itself) would
  /// be asked on a connection that wrote none of them: WAIT then answers at
  /// once with every replica (a server that moves a connection's WAIT
  /// offset only with its writes, or another server now at the address: an
  /// endpoint moved to a new primary), though the writes made on the old
  /// connection (answered, so counted) may be on no replica, and a failover
  /// would forget a claim counted as replicated. So a node whose connection
  /// generation is not the one of its earliest write here is -1, with no
  /// WAIT, and no WAIT ever reconnects. (Simpler than forgetting the answers
  /// of a node whose connection failed mid-call, and it also holds across
  /// the several exchanges one store operation makes before its WAIT. The
  /// cost: a write made again on the new connection is not trusted either,
  /// until the next call.)
  std::map<std::size_t, std::int64_t> wait_each(const argv_t& wait) {
    std::map<std::size_t, std::uint64_t> written = std::move(written_);
    written_.clear();
    if (!cluster_ && written.empty()) written[0] = nodes_.front()->generation();  // as before: always asked
    std::map<std::size_t, std::int64_t> acked;
    std::map<std::size_t, std::vector<std::size_t>> by_node;
    std::vector<argv_t> cmds;
    for (const auto& [node, generation] : written) {
      acked[node] = -1;
      if (nodes_[node]->generation() != generation || !nodes_[node]->connected()) continue;
      by_node[node].push_back(cmds.size());
      cmds.push_back(wait);
    }
    if (cmds.empty()) return acked;
    std::vector<reply_ptr> replies(cmds.size());
    std::optional<store_error> failed;  // a node whose WAIT failed stays at -1
    exchange_round(cmds, by_node, std::vector<char>(cmds.size(), 0), replies, &failed);
    for (const auto& [node, idx] : by_node) {
      const redisReply* r = replies[idx.front()].get();
      if (r != nullptr && r->type == REDIS_REPLY_INTEGER) acked[node] = r->integer;
    }
    return acked;
  }

  /// wait_each, the fewest replicas any node acknowledged with (0 if no
  /// script ran on a cluster): for a call whose writes all count together.
  std::int64_t wait_replicas(const argv_t& wait) {
    const auto acked = wait_each(wait);
    if (acked.empty()) return 0;
    std::int64_t fewest = acked.begin()->second;
    for (const auto& [node, n] : acked) fewest = std::min(fewest, n);
    return fewest;
  }

  /// The nodes that serve slots now — every master of a cluster (the slot map
  /// read first if stale), or the one server — for a command each of them
  /// must answer about its own keys (SCAN). A slot without a master is
  /// CLUSTERDOWN (unavailable): an answer from the others would be partial.
  std::vector<std::size_t> masters() {
    if (!cluster_) return {0};
    if (stale_) refresh();
    std::vector<std::size_t> out;
    for (std::size_t slot = 0; slot < slot_count; ++slot) {
      const std::size_t o = owner_[slot];
      if (o == none) no_master(slot);
      if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
    }
    return out;
  }

  /// The replies of `cmds` from node `node` (an index masters() gave), not
  /// routed: no redirection is followed (error replies returned, not thrown).
  std::vector<reply_ptr> exchange_on(std::size_t node, std::span<const argv_t> cmds) {
    return nodes_.at(node)->exchange(cmds);
  }

  /// Connects (standalone) or reads the slot map and connects to a node.
  void open() {
    if (!cluster_) return nodes_.front()->open();
    if (stale_) refresh();
    default_node().open();
  }

  /// The SHA1 of a loaded script (the same on every node: it is the text's).
  [[nodiscard]] const std::string& sha(script which) const noexcept {
    for (const auto& n : nodes_)
      if (!n->sha(which).empty()) return n->sha(which);
    return nodes_.empty() ? empty_ : nodes_.front()->sha(which);
  }

  /// "host:port" (standalone) or "the cluster at host:port" (the first seed); never credentials.
  [[nodiscard]] std::string where() const {
    const std::string first = printable(base_.where.host, 100) + ":" + std::to_string(base_.where.port);
    return cluster_ ? "the cluster at " + first : first;
  }
  /// Round trips so far: a batch counts once per node it went to.
  [[nodiscard]] std::uint64_t round_trips() const noexcept {
    std::uint64_t n = refreshes_;
    for (const auto& c : nodes_) n += c->round_trips();
    return n;
  }
  [[nodiscard]] const connection_settings& settings() const noexcept { return base_; }
  /// Where the slot map is first read (cluster): the url's node, then the seeds.
  [[nodiscard]] const std::vector<endpoint>& seeds() const noexcept { return seeds_; }

  /// Redirections followed so far (cluster): for tests and metrics.
  [[nodiscard]] std::uint64_t moved() const noexcept { return moved_; }
  [[nodiscard]] std::uint64_t asked() const noexcept { return asked_; }
  /// Times the slot map was read.
  [[nodiscard]] std::uint64_t refreshes() const noexcept { return refreshes_; }
  /// Masters known (cluster), or 1.
  [[nodiscard]] std::size_t nodes() const noexcept { return nodes_.size(); }

 private:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  /// A script answered on `node`, on connection `generation`: the earliest
  /// generation is kept, so that a connection replaced since is noticed.
  void note_write(std::size_t node, std::uint64_t generation) {
    auto [it, fresh] = written_.try_emplace(node, generation);
    if (!fresh) it->second = std::min(it->second, generation);
  }

  template <class MakeArgs>
  std::vector<reply_ptr> standalone_eval(script which, std::size_t count, MakeArgs&& make_args,
                                         std::vector<std::size_t>* where) {
    auto replies = nodes_.front()->eval_many(which, count, std::forward<MakeArgs>(make_args));
    note_write(0, nodes_.front()->generation());
    if (where != nullptr) where->assign(count, 0);
    return replies;
  }

  void attach(connection& c) {
    if (hook_) c.on_connect([this, p = &c] { hook_(*p); });
  }

  /// The node at host:port, created (unconnected) if new.
  std::size_t node_at(std::string_view host, int port) {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i]->settings().where.host == host && nodes_[i]->settings().where.port == port) return i;
    connection_settings s = base_;
    s.where.host = std::string(host);
    s.where.port = port;
    nodes_.push_back(std::make_unique<connection>(s));
    attach(*nodes_.back());
    return nodes_.size() - 1;
  }

  connection& default_node() {
    for (auto& n : nodes_)
      if (n->connected()) return *n;
    const std::size_t o = owner_[0];
    if (o == none) no_master(0);
    return *nodes_[o];
  }

  std::size_t target_of(const argv_t& cmd) {
    const auto slot = command_slot(cmd);
    if (!slot) {
      connection& d = default_node();
      for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].get() == &d) return i;
    }
    const std::size_t o = owner_[*slot];
    if (o == none) no_master(*slot);
    return o;
  }

  /// A slot the map shows without a master: unavailable, and the map is read
  /// again at the next call, so that a master elected or assigned since is
  /// found (before, only a reply or a failed connection marked it stale, and a
  /// call that sent nothing kept failing on the cached gap).
  [[noreturn]] void no_master(std::size_t slot) {
    stale_ = true;
    raise(redis_errc::tryagain, where(), "slot " + std::to_string(slot) + " has no master (CLUSTERDOWN)");
  }

  /// Reads the slot map from the first node or seed that answers, on a
  /// connection of its own (no hooks: a node's connect may itself route).
  void refresh() {
    std::vector<endpoint> candidates;
    for (const auto& n : nodes_) candidates.push_back(n->settings().where);
    candidates.insert(candidates.end(), seeds_.begin(), seeds_.end());
    std::string last = "no node to ask";
    for (const endpoint& e : candidates) {
      try {
        read_map(e);
        stale_ = false;
        ++refreshes_;
        return;
      } catch (const store_error& err) {
        last = err.what();
      }
    }
    raise(redis_errc::other, "no node of " + where() + " answered CLUSTER SLOTS", last);
  }

  void read_map(const endpoint& e) {
    connection_settings s = base_;
    s.where.host = e.host;
    s.where.port = e.port;
    const slot_map m = read_slot_map(std::move(s));
    std::vector<std::size_t> node(m.masters.size());
    for (std::size_t i = 0; i < m.masters.size(); ++i) node[i] = node_at(m.masters[i].host, m.masters[i].port);
    for (std::size_t slot = 0; slot < slot_count; ++slot)
      owner_[slot] = m.owner[slot] == slot_map::none ? none : node[m.owner[slot]];
  }

  /// "MOVED 3999 127.0.0.1:6381" / "ASK ...": the slot and the node.
  std::optional<std::pair<unsigned, std::size_t>> redirection(std::string_view text) {
    auto to = parse_redirection(text, base_.where.host);
    if (!to) return std::nullopt;
    return std::pair{to->first, node_at(to->second.host, to->second.port)};
  }

  /// The replies of `cmds`, each sent to the master of its slot, following
  /// redirections. With `failed`, a node that cannot be reached or whose
  /// connection fails, or a slot that no master serves, leaves its elements'
  /// replies null (the first error in *failed) while the others are
  /// answered; without, it fails them all.
  std::vector<reply_ptr> routed(std::span<const argv_t> cmds, std::optional<store_error>* failed = nullptr,
                                std::vector<std::size_t>* where = nullptr) {
    if (stale_) refresh();
    const std::size_t n = cmds.size();
    std::vector<reply_ptr> out(n);
    std::vector<std::uint64_t> generation(n, 0);  // of the connection each reply came on
    std::vector<std::size_t> target(n);
    std::vector<char> asking(n, 0), reloaded(n, 0), moved_now(n, 0);
    std::vector<std::size_t> todo;
    todo.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      // A slot with no master (CLUSTERDOWN) fails its own commands only,
      // when the caller takes failures element by element: the other
      // masters' commands are still sent.
      try {
        target[i] = target_of(cmds[i]);
      } catch (const store_error& e) {
        if (failed == nullptr) throw;
        target[i] = none;
        if (!*failed) failed->emplace(e);
        continue;
      }
      todo.push_back(i);
    }
    auto pause = std::chrono::milliseconds{10};
    const auto give_up = std::chrono::steady_clock::now() + base_.command_timeout;
    while (!todo.empty()) {
      std::map<std::size_t, std::vector<std::size_t>> by_node;
      for (std::size_t i : todo) by_node[target[i]].push_back(i);
      // Connect first: a node's connect hook may route commands of its own.
      for (auto node = by_node.begin(); node != by_node.end();) {
        try {
          nodes_[node->first]->open();
          ++node;
        } catch (const store_error& e) {
          stale_ = true;  // a master down: its replica may take over
          if (failed == nullptr) throw;
          fail_node(node->second, e, *failed, out);
          node = by_node.erase(node);
        }
      }
      exchange_round(cmds, by_node, asking, out, failed, &generation);
      std::vector<std::size_t> again;
      bool wait = false;
      for (std::size_t i : todo) {
        moved_now[i] = 0;
        const redisReply* r = out[i].get();
        if (r == nullptr || r->type != REDIS_REPLY_ERROR) continue;  // answered, or its node failed
        const std::string_view text(r->str, r->len);
        const bool moved = text.rfind("MOVED ", 0) == 0, ask = text.rfind("ASK ", 0) == 0;
        if (moved || ask) {
          auto to = redirection(text);
          if (!to) continue;  // unreadable: the error stands
          target[i] = to->second;
          asking[i] = ask ? 1 : 0;
          if (moved) {
            owner_[to->first] = to->second;
            stale_ = true;
            moved_now[i] = 1;
            ++moved_;
          } else {
            ++asked_;
          }
          again.push_back(i);
        } else if (text.rfind("TRYAGAIN", 0) == 0 || text.rfind("CLUSTERDOWN", 0) == 0) {
          if (text.rfind("CLUSTERDOWN", 0) == 0) stale_ = true;
          wait = true;
          again.push_back(i);
        } else if (text.rfind("NOSCRIPT", 0) == 0 && cmds[i][0] == "EVALSHA" && reloaded[i] == 0) {
          reloaded[i] = 1;
          nodes_[target[i]]->reload_scripts();
          again.push_back(i);
        }
      }
      if (again.empty()) break;
      if (std::chrono::steady_clock::now() >= give_up) break;  // the error replies stand
      if (wait) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds{200});
      }
      if (stale_) {
        try {
          refresh();
          // A command just redirected by MOVED goes where the owner said: a
          // map read from another node may still show the old owner for a
          // moment while a migration settles, and would send it back there.
          for (std::size_t i : again) {
            if (asking[i] != 0 || moved_now[i] != 0) continue;
            try {
              target[i] = target_of(cmds[i]);
            } catch (const store_error&) {
              // Its slot has no master now: its last target, whose error reply stands if it fails again.
            }
          }
        } catch (const store_error&) {
          // Keep the redirections' targets; the next batch reads the map again.
        }
      }
      todo = std::move(again);
    }
    // Where scripts ran (the claims), not plain reads (the marker's HMGET),
    // kept since the last WAIT: a claim's exchange may be followed by the
    // marker's script on another master (a loss to verify or record) before
    // the WAIT, which must still reach the claims' masters (a review found
    // the WAIT sent to the marker's master only, and a claim counted as
    // replicated that was not).
    for (std::size_t i = 0; i < n; ++i)
      if (out[i] && !cmds[i].empty() && cmds[i][0] == "EVALSHA") note_write(target[i], generation[i]);
    if (where != nullptr) *where = std::move(target);
    return out;
  }

  /// The elements `idx` of a node that failed: no reply, and `e` kept if it is the first.
  static void fail_node(const std::vector<std::size_t>& idx, const store_error& e, std::optional<store_error>& failed,
                        std::vector<reply_ptr>& out) {
    if (!failed) failed.emplace(e);
    for (std::size_t i : idx) out[i].reset();
  }

  /// One pipeline per node, all written before any is read; replies land in
  /// `out`. With `failed`, a node whose connection fails fails only its own
  /// elements (routed()). `generation`: the connection each reply came on.
  void exchange_round(std::span<const argv_t> cmds, const std::map<std::size_t, std::vector<std::size_t>>& by_node,
                      const std::vector<char>& asking, std::vector<reply_ptr>& out,
                      std::optional<store_error>* failed = nullptr, std::vector<std::uint64_t>* generation = nullptr) {
    std::vector<std::vector<argv_t>> lists;
    lists.reserve(by_node.size());
    for (const auto& [node, idx] : by_node) {
      auto& l = lists.emplace_back();
      for (std::size_t i : idx) {
        if (asking[i] != 0) l.push_back({"ASKING"});
        l.push_back(cmds[i]);
      }
    }
    auto take = [&](std::size_t node, const std::vector<std::size_t>& idx, std::vector<reply_ptr> replies) {
      std::size_t r = 0;
      for (std::size_t i : idx) {
        if (asking[i] != 0) ++r;  // ASKING's +OK
        out[i] = std::move(replies[r++]);
        if (generation != nullptr) (*generation)[i] = nodes_[node]->generation();
      }
    };
    if (failed != nullptr) {
      // Each node on its own: a failed connection disconnects itself, and the
      // other nodes' replies are still read.
      std::vector<char> down(lists.size(), 0);
      auto it = by_node.begin();
      for (std::size_t k = 0; k < lists.size(); ++k, ++it) {
        try {
          nodes_[it->first]->send(lists[k]);
        } catch (const transport_error& e) {
          down[k] = 1;
          stale_ = true;
          fail_node(it->second, e, *failed, out);
        }
      }
      it = by_node.begin();
      for (std::size_t k = 0; k < lists.size(); ++k, ++it) {
        if (down[k] != 0) continue;
        try {
          take(it->first, it->second, nodes_[it->first]->receive(lists[k].size()));
        } catch (const transport_error& e) {
          stale_ = true;
          fail_node(it->second, e, *failed, out);
        }
      }
      return;
    }
    std::size_t sent = 0, received = 0;
    auto it = by_node.begin();
    try {
      for (std::size_t k = 0; k < lists.size(); ++k, ++it, ++sent) nodes_[it->first]->send(lists[k]);
      it = by_node.begin();
      for (std::size_t k = 0; k < lists.size(); ++k, ++it, ++received)
        take(it->first, it->second, nodes_[it->first]->receive(lists[k].size()));
    } catch (const transport_error& e) {
      // Nodes written to but not read from hold replies nobody will read.
      auto drop = by_node.begin();
      for (std::size_t k = 0; k < lists.size(); ++k, ++drop)
        if (k >= received && k < sent) nodes_[drop->first]->disconnect();
      stale_ = true;
      throw transport_error(e.code(), e.what(), sent > 0 || e.maybe_applied());
    }
  }

  connection_settings base_;
  bool cluster_;
  std::vector<endpoint> seeds_;
  std::function<void(connection&)> hook_;
  std::vector<std::unique_ptr<connection>> nodes_;  // stable addresses: hooks point at them
  std::array<std::size_t, slot_count> owner_{};      // slot -> index in nodes_ (cluster)
  bool stale_ = true;
  // The nodes that ran scripts since the last WAIT, each with the earliest
  // connection generation a script of it was answered on (wait_each).
  std::map<std::size_t, std::uint64_t> written_;
  std::uint64_t moved_ = 0, asked_ = 0, refreshes_ = 0;
  inline static const std::string empty_;
};

}  // namespace lease::detail::redis
