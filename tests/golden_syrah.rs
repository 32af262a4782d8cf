//! Golden conformance for this format: filled in by its issue.
