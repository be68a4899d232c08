"""The shapes and rules every layer shares, importing nothing else of nodeqc: errors, the N/A value,
verdicts and results (model), failure codes with their remediation, the SKU table, time stamps,
safe file writing, TOML schema checking, names, untrusted tool output, known-answer arithmetic,
the command-line parser, and where shipped data lives."""
