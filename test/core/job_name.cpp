// validate_job_name: which names a scheduler accepts, and error messages that
// stay readable whatever bytes the rejected name holds.
// Replay a property failure with RC_PARAMS="seed=…".
#include <cstring>
#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "lease/scheduler/job_name.hpp"
#include "printable_utf8.hpp"

using Catch::Matchers::Contains;
using lease::validate_job_name;
using test::is_printable_utf8;

namespace {

/// The message validate_job_name throws for `name`, or "" if it accepts it.
std::string error_for(std::string_view name) {
  try {
    validate_job_name(name);
    return "";
  } catch (const std::invalid_argument& e) { return e.what(); }
}

}  // namespace

TEST_CASE("Job names of UTF-8 text up to 200 bytes are accepted") {
  CHECK_NOTHROW(validate_job_name("report"));
  CHECK_NOTHROW(validate_job_name("rapport-journalier: Zürich → 東京 🙂"));
  CHECK_NOTHROW(validate_job_name(std::string(200, 'x')));
  CHECK_NOTHROW(validate_job_name("quote \" and \\ backslash"));
}

TEST_CASE("A control character in a job name is rejected, named escaped with its offset") {
  CHECK_THAT(error_for("bad\nname"), Contains("control character (\\n at offset 3)"));
  CHECK_THAT(error_for("tab\there"), Contains("control character (\\t at offset 3)"));
  CHECK_THAT(error_for("del\x7f"), Contains("control character (\\x7f at offset 3)"));
  CHECK_THAT(error_for("c1 \xc2\x9b" "31m"), Contains("control character (\\u009b at offset 3)"));
  // The message is all there: a NUL in the name does not end it.
  const std::string nul("before\0after", 12);
  CHECK(error_for(nul) == "lease: job name \"before\\x00after\" is invalid: it contains a control character "
                          "(\\x00 at offset 6); use printable characters only");
}

TEST_CASE("A job name that is not valid UTF-8 is rejected with the offending byte and its offset") {
  CHECK_THAT(error_for("caf\xe9"), Contains("job name \"caf\\xe9\" is invalid: it is not valid UTF-8 (byte \\xe9 at "
                                            "offset 3 does not begin a valid character)"));
  CHECK_THAT(error_for("\xed\xa0\x80 surrogate"), Contains("byte \\xed at offset 0"));
  CHECK_THAT(error_for("overlong \xc0\xaf"), Contains("byte \\xc0 at offset 9"));
}

TEST_CASE("A long job name is quoted cut between characters, never inside one") {
  const std::string name(101 * 2, 'x');  // over the limit
  CHECK_THAT(error_for(name),
             Contains("\"" + std::string(40, 'x') + "…\" is invalid: it is 202 bytes long; the limit is 200"));
  std::string accents;
  for (int i = 0; i < 101; ++i) accents += "é";  // 202 bytes, 2 per character
  CHECK_THAT(error_for(accents), Contains("job name \"éééééééééééééééééééé…\" is invalid"));
  CHECK_THAT(error_for(""), Contains("it is empty"));
}

TEST_CASE("Every job name is accepted or rejected with a message of valid, printable UTF-8") {
  rc::prop("validate_job_name on any bytes", [] {
    // Any byte, NUL included (RapidCheck's own strings have none); sometimes long.
    const auto byte = rc::gen::map(rc::gen::inRange(0, 256), [](int b) { return static_cast<char>(b); });
    std::string name = *rc::gen::container<std::string>(byte);
    if (*rc::gen::inRange(0, 8) == 0) name = std::string(*rc::gen::inRange(150, 250), 'x') + name;
    const std::string message = error_for(name);
    if (message.empty()) {
      RC_ASSERT(!name.empty() && name.size() <= lease::max_job_name_bytes);
      RC_ASSERT(is_printable_utf8(name));
    } else {
      RC_ASSERT(is_printable_utf8(message));
      RC_ASSERT(message.rfind("lease: job name \"", 0) == 0);
    }
  });
}
