//! The test runner's verdict, read from its own output: pytest, `node --test`, `go test -v`,
//! Maven Surefire and Gradle.

use serde::Serialize;

/// Counts a test runner reported.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TestSummary {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub errors: u64,
    /// Which runner's output the counts were read from (`none` when none was recognised).
    pub runner: &'static str,
}

/// The number right before `word` in `line` (`"3 passed"` -> 3).
fn count_before(line: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ',' || c == '=')
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .find(|pair| pair[1].trim_end_matches([',', '.', ')']) == word)
        .and_then(|pair| pair[0].parse().ok())
}

/// The number right after `label` in `line` (`"# pass 3"`, `"Tests run: 3"`).
fn count_after(line: &str, label: &str) -> Option<u64> {
    let rest = line.split(label).nth(1)?;
    rest.trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn pytest(output: &str) -> Option<TestSummary> {
    // The final line: "==== 2 failed, 3 passed, 1 skipped, 1 error in 0.12s ====".
    let line = output.lines().rev().find(|l| {
        l.starts_with('=')
            && l.contains(" in ")
            && (l.contains("passed")
                || l.contains("failed")
                || l.contains("error")
                || l.contains("skipped")
                || l.contains("no tests ran"))
    })?;
    Some(TestSummary {
        passed: count_before(line, "passed").unwrap_or(0),
        failed: count_before(line, "failed").unwrap_or(0),
        skipped: count_before(line, "skipped").unwrap_or(0),
        errors: count_before(line, "error")
            .or_else(|| count_before(line, "errors"))
            .unwrap_or(0),
        runner: "pytest",
    })
}

fn node_test(output: &str) -> Option<TestSummary> {
    let find = |label: &str| {
        output.lines().rev().find_map(|l| {
            l.trim_start_matches(['#', 'ℹ', ' '])
                .strip_prefix(label)
                .and_then(|_| count_after(l, label))
        })
    };
    let passed = find("pass ")?;
    Some(TestSummary {
        passed,
        failed: find("fail ").unwrap_or(0),
        skipped: find("skipped ").unwrap_or(0) + find("todo ").unwrap_or(0),
        errors: find("cancelled ").unwrap_or(0),
        runner: "node --test",
    })
}

fn go_test(output: &str) -> Option<TestSummary> {
    let count = |prefix: &str| {
        output
            .lines()
            .filter(|l| l.trim_start().starts_with(prefix))
            .count() as u64
    };
    let (passed, failed, skipped) = (count("--- PASS"), count("--- FAIL"), count("--- SKIP"));
    let build_failed = output
        .lines()
        .filter(|l| l.starts_with("FAIL\t") && l.contains("[build failed]"))
        .count() as u64;
    (passed + failed + skipped + build_failed > 0).then_some(TestSummary {
        passed,
        failed,
        skipped,
        errors: build_failed,
        runner: "go test",
    })
}

fn surefire(output: &str) -> Option<TestSummary> {
    // Maven's total: "Tests run: 4, Failures: 1, Errors: 0, Skipped: 1" (the last one printed).
    let line = output
        .lines()
        .rev()
        .find(|l| l.contains("Tests run:") && l.contains("Failures:") && !l.contains(" in "))?;
    let run = count_after(line, "Tests run:")?;
    let failed = count_after(line, "Failures:").unwrap_or(0);
    let errors = count_after(line, "Errors:").unwrap_or(0);
    let skipped = count_after(line, "Skipped:").unwrap_or(0);
    Some(TestSummary {
        passed: run.saturating_sub(failed + errors + skipped),
        failed,
        skipped,
        errors,
        runner: "maven",
    })
}

fn gradle(output: &str) -> Option<TestSummary> {
    // "3 tests completed, 1 failed, 1 skipped" (Gradle prints nothing more when all pass).
    let line = output
        .lines()
        .rev()
        .find(|l| l.contains("tests completed"))?;
    let run = count_before(line, "tests")?;
    let failed = count_before(line, "failed").unwrap_or(0);
    let skipped = count_before(line, "skipped").unwrap_or(0);
    Some(TestSummary {
        passed: run.saturating_sub(failed + skipped),
        failed,
        skipped,
        errors: 0,
        runner: "gradle",
    })
}

/// What the runner's output says, trying each known format.
pub(crate) fn parse(output: &str) -> TestSummary {
    pytest(output)
        .or_else(|| surefire(output))
        .or_else(|| gradle(output))
        .or_else(|| go_test(output))
        .or_else(|| node_test(output))
        .unwrap_or(TestSummary {
            runner: "none",
            ..TestSummary::default()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(s: &TestSummary) -> (u64, u64, u64, u64, &'static str) {
        (s.passed, s.failed, s.skipped, s.errors, s.runner)
    }

    #[test]
    fn each_runner_is_read() {
        let pytest_out = "test_app.py::test_ok PASSED\n=== 1 failed, 3 passed, 1 skipped, 2 errors in 0.31s ===\n";
        assert_eq!(counts(&parse(pytest_out)), (3, 1, 1, 2, "pytest"));
        assert_eq!(
            counts(&parse("======= 5 passed in 0.02s =======\n")),
            (5, 0, 0, 0, "pytest")
        );
        let node =
            "# tests 4\n# suites 0\n# pass 3\n# fail 1\n# cancelled 0\n# skipped 0\n# todo 0\n";
        assert_eq!(counts(&parse(node)), (3, 1, 0, 0, "node --test"));
        let node22 = "ℹ tests 2\nℹ pass 2\nℹ fail 0\n";
        assert_eq!(counts(&parse(node22)), (2, 0, 0, 0, "node --test"));
        let go = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\n    --- SKIP: TestB/sub (0.00s)\nFAIL\n";
        assert_eq!(counts(&parse(go)), (1, 1, 1, 0, "go test"));
        let maven = "[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 s - in AppTest\n[ERROR] Tests run: 5, Failures: 1, Errors: 1, Skipped: 1\n";
        assert_eq!(counts(&parse(maven)), (2, 1, 1, 1, "maven"));
        assert_eq!(
            counts(&parse("5 tests completed, 2 failed, 1 skipped\n")),
            (2, 2, 1, 0, "gradle")
        );
        assert_eq!(parse("hello\n").runner, "none");
    }
}
