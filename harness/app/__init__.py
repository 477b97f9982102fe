"""What a command does end to end, between the kit and the CLI: the one `finish` of a run, and the phases a bench
times (`harness.app.phases`)."""
