"""The test suite's support code: data and helpers the tests import, no tests of their own."""
