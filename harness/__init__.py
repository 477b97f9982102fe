"""verifier-bench: the AIOps verifier system under test, and the harness that measures it."""

__version__ = "0.1.0"


class UsageError(ValueError):
    """Bad usage or bad input (a flag, case file, study file, run folder, prompt, price table, model spec, store
    URL): the user's to fix, not a harness fault. Every such error of every layer derives from this one base, and
    the command line maps it in one place (`harness.cli.main`) to exit code 2 and an `error: <message>` line; the
    message names the file and key path. A ValueError, so callers that catch ValueError keep doing so."""


class RunStopped(Exception):
    """A run stopped by a fault outside it (the breaker: an endpoint or the store down): the results written are
    kept and `--resume` finishes the run. The command line maps it, in one place, to exit code 2 and one line
    with the command that resumes the run."""
