// lease/prometheus.hpp — the optional component lease::prometheus in one
// include: metrics from events (prometheus_metrics) and an HTTP endpoint
// that serves them (prometheus_endpoint). Link lease::prometheus.
#pragma once

#include "lease/prometheus/endpoint.hpp"
#include "lease/prometheus/metrics.hpp"
