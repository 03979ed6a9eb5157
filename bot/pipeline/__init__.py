"""The product as code.

For each repository: load config -> discover manifests -> fetch history -> recommend -> apply
thresholds and policy -> edit -> open/update pull request -> update dashboard.

- ``plan``: one checkout, planned: the history each workload needs, the decision per workload
  (recommend, thresholds, policy) and the edit of each change set (``repository_outcome``);
- ``proposals``: what a plan proposes: one pull request per change set, the dashboard's rows,
  the cost of the changes;
- ``serve``: serving a forge: each repository on a fresh checkout, its pull requests and
  dashboard brought in line with its plan (``serve_repository``, ``run_repositories``);
- ``failures``: the time a repository may take (``Budget``) and how a failure reads;
- ``timings``: where one plan's time goes, logged at INFO (``benchmarks.prometheus --plan``).

Failures are isolated: a ``ConfigError``, ``MetricsError`` or ``ForgeError`` (or any other
exception, reported as an internal error) fails one repository, shown on its dashboard, and the
others still run; a workload whose history is missing, whose engine input is incomplete, whose
edit fails verification or whose decision raised gets status ``error`` and nothing is written
for it (and the run exits 1).
"""
