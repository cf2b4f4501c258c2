// lease/prometheus/endpoint.hpp — lease::prometheus_endpoint, an HTTP server
// (prometheus-cpp's Exposer) that serves a prometheus_metrics for scraping.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <prometheus/exposer.h>

#include "lease/prometheus/metrics.hpp"

namespace lease {

/// Serves `metrics` as the Prometheus text format at http://<bind>/metrics
/// (`uri`) until destroyed, on the HTTP server's own threads.
///
///     lease::prometheus_endpoint http(metrics, "0.0.0.0:9464");
///
/// `bind` is "address:port" (civetweb syntax; port 0 picks a free port, see
/// port()). Throws std::runtime_error naming the address when it cannot
/// listen there (port taken, bad address). The metrics need not outlive it.
class prometheus_endpoint {
 public:
  prometheus_endpoint(const prometheus_metrics& metrics, const std::string& bind, const std::string& uri = "/metrics")
      : exposer_(open(bind)) {
    exposer_->RegisterCollectable(metrics.collectable(), uri);
    collectable_ = metrics.collectable();  // the Exposer only holds a weak_ptr
  }

  /// The port it listens on (the one chosen, when `bind` asked for port 0).
  [[nodiscard]] int port() const {
    const std::vector<int> ports = exposer_->GetListeningPorts();
    return ports.empty() ? 0 : ports.front();
  }

 private:
  static std::unique_ptr<::prometheus::Exposer> open(const std::string& bind) {
    try {
      return std::make_unique<::prometheus::Exposer>(bind);
    } catch (const std::exception& e) {
      throw std::runtime_error("lease::prometheus_endpoint: cannot listen on \"" + bind + "\" (" + e.what() +
                               "); give a free address:port, e.g. 127.0.0.1:9464, or port 0 for any free port");
    }
  }

  std::unique_ptr<::prometheus::Exposer> exposer_;
  std::shared_ptr<::prometheus::Collectable> collectable_;
};

}  // namespace lease
