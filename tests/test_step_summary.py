"""The run's ``$GITHUB_STEP_SUMMARY`` table: per repository, the replayed requests and cost."""

from __future__ import annotations

from bot.commands.run import summary_markdown
from bot.pipeline.serve import RepositoryReport, RunSummary
from bot.report.replay import CostTotals


def _row(text: str, repository: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {repository} |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_step_summary_sums_the_replays_with_replicas():
    priced = CostTotals("$", True, 126.06, 184.1, 4.757, 7.013, 3.96, 5.26, 1)
    unpriced = CostTotals("$", False, 0.0, 0.0, 1.0, 0.5, 2.0, 2.0, 2, ("Deployment/ns/api",))
    summary = RunSummary(
        (
            RepositoryReport(
                "octo/shop", ok=True, opened=("u",), counts={"changes": 1}, cost=priced
            ),
            RepositoryReport("octo/lab", ok=True, counts={"changes": 3}, cost=unpriced),
            RepositoryReport("octo/idle", ok=True, counts={"no-change": 2}),
            RepositoryReport("octo/bad", ok=False, message="boom|"),
        )
    )
    text = summary_markdown(summary)
    assert "| requested with replicas (means, replayed) | monthly cost (replayed) |" in text
    shop = _row(text, "octo/shop")
    assert shop[6] == "CPU 4.757 cores → 7.013 cores, memory 3.96 GiB → 5.26 GiB"
    assert shop[7] == "\\$126.06 → \\$184.10/month \\(+\\$58.04\\)"
    lab = _row(text, "octo/lab")
    assert lab[6] == "CPU 1 core → 0.5 cores, memory 2.00 GiB → 2.00 GiB"
    assert lab[7] == "not priced; no replay for Deployment/ns/api"
    assert _row(text, "octo/idle")[6:8] == ["—", "—"]
    assert _row(text, "octo/bad")[-1] == "boom\\|"


def test_step_summary_lists_the_verdicts_on_merged_pull_requests():
    line = "[#4](http://gh/4) **prod/shop/Deployment/pay**: regressed: app\\: CPU above request"
    summary = RunSummary(
        (
            RepositoryReport("octo/shop", ok=True, verification=(line,)),
            RepositoryReport("octo/lab", ok=True),
        )
    )
    text = summary_markdown(summary)
    assert "### Verification of merged pull requests" in text
    assert f"- octo/shop: {line}" in text and "octo/lab:" not in text
    assert "### Verification" not in summary_markdown(RunSummary((RepositoryReport("a/b", True),)))
