"""The bash parser: a command line to pipelines of words, with `cd` and redirections; it reads and runs nothing."""
