// cluster_demo/svg.cpp — the demo's timeline as an SVG: one lane per
// instance, each attempt a bar coloured by how it ended, the lease a killed
// runner left behind, frozen and down spans hatched, takeovers drawn as a
// dashed arrow from the attempt that stopped renewing to the one that took
// the run over, fenced runners marked with a cross; a slot grid and a legend.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <lease/schedule/every.hpp>

#include "demo.hpp"

namespace demo {
namespace {

const char* colour(const std::string& outcome) {
  if (outcome == "success") return "#2e9d4f";
  if (outcome == "failed") return "#d1342f";
  if (outcome == "lost") return "#f08c00";
  if (outcome == "handed_over") return "#3a78d6";
  if (outcome == "killed") return "#303030";
  if (outcome == "abandoned") return "#8e44ad";
  return "#95a5a6";  // still running when the demo ended
}

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

void write_svg(const history& h, const std::string& path) {
  const std::vector<attempt_bar> bars = attempts_of(h);
  std::vector<std::string> lanes;
  for (const life& l : h.lives)
    if (std::find(lanes.begin(), lanes.end(), l.instance) == lanes.end()) lanes.push_back(l.instance);
  std::sort(lanes.begin(), lanes.end());

  const double width = 1240, left = 70, right = 40, plot = width - left - right;
  const double lane_top = 112, lane_h = 64, bar_y = 24, bar_h = 22;
  const double axis_y = lane_top + lane_h * static_cast<double>(lanes.size());
  const double height = axis_y + 58;
  // One second of room after the end, for the labels of the last signals.
  const double span = std::max<double>(1.0, static_cast<double>((h.t_end - h.t0).count()) + 1000.0);
  auto x = [&](lease::time_point t) {
    return left + plot * std::clamp(static_cast<double>((t - h.t0).count()) / span, 0.0, 1.0);
  };
  auto lane_of = [&](const std::string& name) {
    const auto it = std::find(lanes.begin(), lanes.end(), name);
    return lane_top + lane_h * static_cast<double>(it - lanes.begin());
  };

  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
       "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  s += R"svg(<defs>
  <pattern id="down" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
    <rect width="8" height="8" fill="#eeeeee"/><line x1="0" y1="0" x2="0" y2="8" stroke="#c8c8c8" stroke-width="3"/></pattern>
  <pattern id="frozen" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)">
    <rect width="6" height="6" fill="#dbeaff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#7aa7e8" stroke-width="2"/></pattern>
  <pattern id="lease" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
    <rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#303030" stroke-width="1.5"/></pattern>
  <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
    <path d="M 0 0 L 10 5 L 0 10 z" fill="#b03a2e"/></marker>
</defs>
<rect width="100%" height="100%" fill="#ffffff"/>
)svg";
  s += "<text x=\"" + num(left) + "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">lease cluster demo: " +
       std::to_string(lanes.size()) + " instances, one SQLite file</text>\n";
  s += "<text x=\"" + num(left) + "\" y=\"43\" font-size=\"11\" fill=\"#555\">job \"" + std::string(job_name) +
       "\" every 2 s · lease 3 s · heartbeat 500 ms · handler 12 × 100 ms · bars are attempts, labelled slot #attempt</text>\n";

  // Legend.
  struct key {
    const char* fill;
    const char* label;
  };
  const key keys[] = {{"#2e9d4f", "success"},        {"#d1342f", "failed"},         {"#f08c00", "lost (fenced)"},
                      {"#3a78d6", "handed over"},    {"#303030", "killed (kill -9)"}, {"url(#lease)", "lease left behind"},
                      {"url(#frozen)", "frozen (SIGSTOP)"}, {"url(#down)", "process down"}};
  double lx = left;
  for (const key& k : keys) {
    s += "<rect x=\"" + num(lx) + "\" y=\"56\" width=\"14\" height=\"14\" rx=\"2\" fill=\"" + k.fill +
         "\" stroke=\"#888\" stroke-width=\"0.5\"/>";
    s += "<text x=\"" + num(lx + 19) + "\" y=\"67\" font-size=\"11\">" + k.label + "</text>\n";
    lx += 30 + 6.3 * static_cast<double>(std::string(k.label).size());
  }
  s += "<line x1=\"" + num(lx) + "\" y1=\"63\" x2=\"" + num(lx + 26) +
       "\" y2=\"63\" stroke=\"#b03a2e\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\" marker-end=\"url(#arrow)\"/>";
  s += "<text x=\"" + num(lx + 31) + "\" y=\"67\" font-size=\"11\">takeover</text>\n";
  lx += 95;
  s += "<text x=\"" + num(lx) + "\" y=\"68\" font-size=\"15\" fill=\"#b03a2e\" font-weight=\"bold\">✕</text>";
  s += "<text x=\"" + num(lx + 15) + "\" y=\"67\" font-size=\"11\">fenced: lost, finish refused</text>\n";
  s += "<text x=\"" + num(left) + "\" y=\"92\" font-size=\"11\" fill=\"#555\">▼ what the demo did to a process: " +
       "kill -9, SIGSTOP / SIGCONT, SIGTERM, start</text>\n";

  // Lanes: down (hatched) under everything, each process life on top, freezes over it.
  for (const std::string& name : lanes) {
    const double y = lane_of(name);
    s += "<rect x=\"" + num(left) + "\" y=\"" + num(y + 4) + "\" width=\"" + num(x(h.t_end) - left) +
         "\" height=\"" + num(lane_h - 8) + "\" fill=\"url(#down)\"/>\n";
    s += "<text x=\"" + num(left - 8) + "\" y=\"" + num(y + bar_y + 15) +
         "\" font-size=\"13\" font-weight=\"bold\" text-anchor=\"end\">" + esc(name) + "</text>\n";
  }
  for (const life& l : h.lives) {
    const double y = lane_of(l.instance);
    const double x0 = x(l.from), x1 = x(l.ended ? l.to : h.t_end);
    s += "<rect x=\"" + num(x0) + "\" y=\"" + num(y + 4) + "\" width=\"" + num(std::max(1.0, x1 - x0)) +
         "\" height=\"" + num(lane_h - 8) + "\" fill=\"#f6f8fa\" stroke=\"#d0d7de\" stroke-width=\"0.5\"/>\n";
  }
  for (const freeze& f : h.freezes) {
    const double y = lane_of(f.instance);
    const double x0 = x(f.from), x1 = x(f.to == lease::time_point{} ? h.t_end : f.to);
    s += "<rect x=\"" + num(x0) + "\" y=\"" + num(y + 4) + "\" width=\"" + num(x1 - x0) + "\" height=\"" +
         num(lane_h - 8) + "\" fill=\"url(#frozen)\" opacity=\"0.9\"/>\n";
    s += "<text x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(y + lane_h - 9) +
         "\" font-size=\"10\" text-anchor=\"middle\" fill=\"#1f4e8c\">frozen: no heartbeats</text>\n";
  }

  // Slot grid and time axis.
  const lease::every slots(interval);
  for (lease::time_point t = slots.next(h.t0); t <= h.t_end; t = slots.next(t)) {
    const double gx = x(t);
    s += "<line x1=\"" + num(gx) + "\" y1=\"" + num(lane_top) + "\" x2=\"" + num(gx) + "\" y2=\"" + num(axis_y) +
         "\" stroke=\"#b0b7bf\" stroke-width=\"0.6\" stroke-dasharray=\"2 3\"/>\n";
    if (gx - left >= 24)  // not under the "slots (UTC)" caption
      s += "<text x=\"" + num(gx) + "\" y=\"" + num(axis_y + 30) +
           "\" font-size=\"9.5\" fill=\"#555\" text-anchor=\"middle\">" + hms(t) + "</text>\n";
  }
  s += "<line x1=\"" + num(left) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(left + plot) + "\" y2=\"" + num(axis_y) +
       "\" stroke=\"#333\"/>\n";
  for (int sec = 0; sec * 1000.0 <= span; sec += 5) {
    const double tx = left + plot * sec * 1000.0 / span;
    s += "<line x1=\"" + num(tx) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(tx) + "\" y2=\"" + num(axis_y + 5) +
         "\" stroke=\"#333\"/>";
    s += "<text x=\"" + num(tx) + "\" y=\"" + num(axis_y + 16) + "\" font-size=\"10\" text-anchor=\"middle\">" +
         std::to_string(sec) + " s</text>\n";
  }
  s += "<text x=\"" + num(left - 8) + "\" y=\"" + num(axis_y + 30) +
       "\" font-size=\"9.5\" fill=\"#555\" text-anchor=\"end\">slots (UTC)</text>\n";

  // The attempts, and what a killed runner's lease did after it died.
  std::map<std::pair<lease::time_point, std::uint32_t>, std::pair<double, double>> ends;  // (slot, attempt) -> arrow start
  for (const attempt_bar& b : bars) {
    const double y = lane_of(b.instance) + bar_y;
    const double x0 = x(b.from), x1 = std::max(x(b.to), x0 + 4);
    double tail = x1;
    if (b.outcome == "killed") {
      const auto it = h.sampled.find({b.slot, b.attempt});
      if (it != h.sampled.end() && it->second.lease_end > b.to) {
        tail = x(it->second.lease_end);
        s += "<rect x=\"" + num(x1) + "\" y=\"" + num(y + 3) + "\" width=\"" + num(tail - x1) + "\" height=\"" +
             num(bar_h - 6) + "\" fill=\"url(#lease)\" stroke=\"#303030\" stroke-width=\"0.6\"/>\n";
        s += "<text x=\"" + num((x1 + tail) / 2) + "\" y=\"" + num(y + bar_h + 11) +
             "\" font-size=\"9.5\" text-anchor=\"middle\" fill=\"#303030\">its lease runs out</text>\n";
      }
    }
    s += "<rect x=\"" + num(x0) + "\" y=\"" + num(y) + "\" width=\"" + num(x1 - x0) + "\" height=\"" + num(bar_h) +
         "\" rx=\"3\" fill=\"" + colour(b.outcome) + "\"><title>" +
         esc(b.instance + " " + hms(b.slot) + " attempt " + std::to_string(b.attempt) + " (fence " +
             std::to_string(b.fence) + ", " + b.how + "): " + b.outcome) +
         "</title></rect>\n";
    // The slot and attempt; only the slot's seconds on a short bar (the grid has the full time).
    const std::string full = hms(b.slot) + " #" + std::to_string(b.attempt);
    const std::string label = x1 - x0 >= 72 ? full : x1 - x0 >= 38 ? ":" + full.substr(6) : std::string{};
    if (!label.empty())
      s += "<text x=\"" + num(x0 + 4) + "\" y=\"" + num(y + 15) + "\" font-size=\"10.5\" fill=\"#fff\">" + label +
           "</text>\n";
    if (b.how != "won")
      s += "<text x=\"" + num(x0) + "\" y=\"" + num(y + bar_h + 11) + "\" font-size=\"9.5\" fill=\"#b03a2e\">" +
           (b.how == "takeover" ? "takeover" : "catch-up") + "</text>\n";
    if (b.outcome == "lost") {
      s += "<text x=\"" + num(x1) + "\" y=\"" + num(y + 17) +
           "\" font-size=\"18\" font-weight=\"bold\" fill=\"#b03a2e\" text-anchor=\"middle\">✕</text>\n";
      s += "<text x=\"" + num(x1 + 9) + "\" y=\"" + num(y + bar_h + 11) +
           "\" font-size=\"9.5\" fill=\"#b03a2e\">lost (fenced)</text>\n";
    }
    if (b.outcome == "handed_over")
      s += "<text x=\"" + num(x1) + "\" y=\"" + num(y + bar_h + 11) +
           "\" font-size=\"9.5\" fill=\"#3a78d6\" text-anchor=\"middle\">released</text>\n";
    ends[{b.slot, b.attempt}] = {b.outcome == "lost" ? x(b.from) + 0 : tail, y + bar_h / 2};
  }
  // Takeover arrows: from where the previous attempt stopped renewing to the new attempt.
  for (const attempt_bar& b : bars) {
    if (b.how != "takeover") continue;
    const auto prev = ends.find({b.slot, b.attempt - 1});
    if (prev == ends.end()) continue;
    double px = prev->second.first;
    const double py = prev->second.second;
    // A lost (frozen) runner's lease ran out while it was frozen: start at its sampled lease end.
    const auto it = h.sampled.find({b.slot, b.attempt - 1});
    if (it != h.sampled.end()) px = std::max(px, x(std::min(it->second.lease_end, b.from)));
    const double tx = x(b.from), ty = lane_of(b.instance) + bar_y + (py < lane_of(b.instance) ? 2 : bar_h - 2);
    s += "<path d=\"M " + num(px) + " " + num(py) + " C " + num(px + 20) + " " + num(py) + ", " + num(tx - 20) + " " +
         num(ty) + ", " + num(tx) + " " + num(ty) + "\" fill=\"none\" stroke=\"#b03a2e\" stroke-width=\"1.5\" "
         "stroke-dasharray=\"4 3\" marker-end=\"url(#arrow)\"/>\n";
  }

  // What the demo did to the processes. A label that would run into the next
  // one in its lane (or off the right edge) is drawn to the left of its mark.
  auto label_of = [](const fault& f) -> std::string {
    if (f.kind == "kill") return "kill -9";
    if (f.kind == "stop") return "SIGSTOP";
    if (f.kind == "cont") return "SIGCONT";
    if (f.kind == "term") return "SIGTERM";
    if (f.kind == "start") return "start";
    return "exit";
  };
  auto text_width = [](const std::string& t) { return 6.0 * static_cast<double>(t.size()) + 8; };
  std::map<std::string, double> label_end;  // per lane: where the last label ends
  for (std::size_t i = 0; i < h.faults.size(); ++i) {
    const fault& f = h.faults[i];
    const double y = lane_of(f.instance);
    const double fx = x(f.at);
    const std::string label = label_of(f);
    double next_x = left + plot;
    for (std::size_t j = i + 1; j < h.faults.size(); ++j)
      if (h.faults[j].instance == f.instance) {
        next_x = x(h.faults[j].at);
        break;
      }
    const bool to_left = fx + text_width(label) > next_x && fx - text_width(label) >= label_end[f.instance];
    label_end[f.instance] = to_left ? fx : fx + text_width(label);
    const char* c = f.kind == "kill" ? "#b03a2e" : f.kind == "start" ? "#2e7d32" : "#1f4e8c";
    s += "<text x=\"" + num(fx) + "\" y=\"" + num(y + 13) + "\" font-size=\"9\" fill=\"" + c +
         "\" text-anchor=\"middle\">▼</text>";
    s += "<text x=\"" + num(to_left ? fx - 5 : fx + 5) + "\" y=\"" + num(y + 14) + "\" font-size=\"9.5\" fill=\"" + c +
         (to_left ? "\" text-anchor=\"end\">" : "\">") + label + "</text>\n";
  }
  s += "</svg>\n";

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot open " + path + " for writing");
  out << s;
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace demo
