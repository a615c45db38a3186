//! Nothing here: the test is in tests/ddi.rs (scripts/test-fleet runs it).
