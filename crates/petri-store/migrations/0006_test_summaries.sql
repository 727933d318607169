-- Test mode: what the test runner reported (JSON: passed, failed, skipped, errors, runner).
ALTER TABLE runs ADD COLUMN test_summary TEXT;
