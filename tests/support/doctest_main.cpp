// The shared main() of every doctest executable, and a listener that remembers which test case
// runs, so that a skip (harness.hpp, MYR_SKIP) can name it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>

namespace myr::test {

namespace {

std::string current_case;

struct CurrentCase : doctest::IReporter {
    explicit CurrentCase(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData& in) override { current_case = in.m_name; }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

const std::string& current_test_case() {
    return current_case;
}

}  // namespace myr::test

REGISTER_LISTENER("myr-current-case", 1, myr::test::CurrentCase);
